#!/usr/bin/env bash
# csharp/build-native.sh OUTDIR — builds libslotlane.so from core/src/*.c (-O2, shared, hidden
# internals) into OUTDIR, only when a source or header is newer than the library.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=${1:-$HERE/out/native}
mkdir -p "$OUT"
LIB=$OUT/libslotlane.so
if [ -f "$LIB" ] && [ -z "$(find "$ROOT/core/src" "$ROOT/core/include" "$ROOT/VERSION" -newer "$LIB" -print -quit)" ]; then
  exit 0
fi
echo "build-native: compiling core/src/*.c into $LIB" >&2
OBJ=$(mktemp -d /tmp/sl-cs-native.XXXXXX)
trap 'rm -rf "$OBJ"' EXIT
VER=$(cat "$ROOT/VERSION")
ls "$ROOT"/core/src/*.c "$ROOT"/core/src/uv/*.c | xargs -P 2 -I{} sh -c 'gcc -std=c11 -O2 -g -fPIC -fvisibility=hidden -DSL_VERSION_STRING="\"'"$VER"'\"" -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"'"$ROOT"'/core/include" -I"'"$ROOT"'/core/src" -c {} -o "'"$OBJ"'/$(basename {} .c).o"'
gcc -shared -o "$LIB.tmp" "$OBJ"/*.o -luv -lpthread
mv "$LIB.tmp" "$LIB"
