#!/usr/bin/env bash
# server/build-shared.sh OUT.so [EXTRA.c ...] [-- CFLAGS ...] — the embeddable slotlane-server
# (slotlane_server.h) as one shared library, for the bindings whose native build is a script
# (java/build-native.sh: with its JNI file; csharp/build-native.sh: alone): the sources,
# include folders, definitions and system libraries (libuv, Lua 5.1 with cjson and bit, through
# pkg-config) that server/build.cfg describes, read by core/describe.py; EXTRA.c compiled with
# the same flags plus CFLAGS. gcc -O2 -fPIC, hidden symbols but slotlane_server.h's, two jobs.
# Env: CC (gcc), SL_NATIVE_JOBS (2).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: build-shared.sh OUT.so [EXTRA.c ...] [-- CFLAGS ...]}
shift
EXTRA=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do EXTRA+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
CC=${CC:-gcc}
export CC
describe() { python3 "$HERE/../core/describe.py" --core "$HERE" "$@"; }
mapfile -t SRCS < <(describe sources server)
mapfile -t FLAGS < <(describe cflags server)
mapfile -t MODULES < <(describe modules server)
read -r -a DEP_CFLAGS <<<"$(pkg-config --cflags "${MODULES[@]}")"
read -r -a DEP_LIBS <<<"$(pkg-config --libs "${MODULES[@]}")"
echo "build-shared: compiling ${#SRCS[@]} server sources and ${#EXTRA[@]} more into $OUT" >&2
OBJ=$(mktemp -d /tmp/sl-server-obj.XXXXXX)
trap 'rm -rf "$OBJ"' EXIT
# one object per source, by its name (unique in server/build.cfg's list)
printf '%s\n' "${SRCS[@]}" "${EXTRA[@]}" | xargs -P "${SL_NATIVE_JOBS:-2}" -I{} sh -c \
  'f=$1; shift; exec "$CC" "$@" -c "$f" -o "'"$OBJ"'/$(basename "$f" .c).o"' _ {} \
  -O2 -g -fPIC -fvisibility=hidden "${FLAGS[@]}" "${DEP_CFLAGS[@]}" "$@"
[ "$(ls "$OBJ"/*.o | wc -l)" -eq $(( ${#SRCS[@]} + ${#EXTRA[@]} )) ] || { echo "build-shared: a compilation failed" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
"$CC" -shared -o "$OUT.tmp" "$OBJ"/*.o "${DEP_LIBS[@]}" -lpthread -lm -Wl,--no-undefined
mv -f "$OUT.tmp" "$OUT"
