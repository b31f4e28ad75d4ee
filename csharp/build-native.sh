#!/usr/bin/env bash
# csharp/build-native.sh [OUTDIR] — builds libslotlane.so (-O2, shared, hidden internals) into
# OUTDIR as the core's one build description says (core/build.cfg, read through
# core/describe.py): the "core" and "uv" parts (the Task methods use the libuv driver) and "tls"
# (OpenSSL 3) when pkg-config finds openssl and the core has its sources (SLOTLANE_TLS=0 leaves it
# out, SLOTLANE_TLS=1 fails without it), their include folders, definitions, standard and version;
# the system libraries through pkg-config (core/README.md, "one linkage rule"). Only when an input
# is newer than the library.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CORE=$ROOT/core
OUT=${1:-$HERE/out/native}
mkdir -p "$OUT"
LIB=$OUT/libslotlane.so
if [ -f "$LIB" ] && [ -f "$OUT/libslotlane_server.so" ] && \
   [ -z "$(find "$CORE" "$ROOT/server/src" "$ROOT/server/include" "$ROOT/VERSION" "$0" -newer "$LIB" -print -quit)" ]; then
  exit 0
fi
describe() { python3 "$CORE/describe.py" --core "$CORE" "$@"; }
PARTS=(core uv)
if [ "${SLOTLANE_TLS:-}" != 0 ] && [ -n "$(describe sources tls)" ] && pkg-config --exists "$(describe modules tls)"; then
  PARTS+=(tls)
elif [ "${SLOTLANE_TLS:-}" = 1 ]; then
  echo "build-native: SLOTLANE_TLS=1 but pkg-config finds no openssl (Debian: apt install libssl-dev)" >&2; exit 1
fi
mapfile -t SRCS < <(describe sources "${PARTS[@]}")
mapfile -t FLAGS < <(describe cflags "${PARTS[@]}")
mapfile -t MODULES < <(describe modules "${PARTS[@]}")
read -r -a DEP_CFLAGS <<<"$(pkg-config --cflags "${MODULES[@]}")"
read -r -a DEP_LIBS <<<"$(pkg-config --libs "${MODULES[@]}")"
echo "build-native: compiling ${#SRCS[@]} core sources (parts ${PARTS[*]}) into $LIB" >&2
OBJ=$(mktemp -d /tmp/sl-cs-native.XXXXXX)
trap 'rm -rf "$OBJ"' EXIT
export OBJ CORE
# one object per source, named by its path under the core (src/uv/x.c: src_uv_x.o)
printf '%s\n' "${SRCS[@]}" | xargs -P 2 -I{} sh -c \
  'f=$1; shift; o=$(echo "${f#"$CORE"/}" | tr / _); exec gcc "$@" -c "$f" -o "$OBJ/${o%.c}.o"' _ {} \
  -O2 -g -fPIC -fvisibility=hidden "${FLAGS[@]}" "${DEP_CFLAGS[@]}"
[ "$(ls "$OBJ"/*.o | wc -l)" -eq ${#SRCS[@]} ] || { echo "build-native: a compilation failed" >&2; exit 1; }
gcc -shared -o "$LIB.tmp" "$OBJ"/*.o "${DEP_LIBS[@]}" -lpthread -Wl,--no-undefined
mv "$LIB.tmp" "$LIB"

# libslotlane_server.so: the embedded slotlane-server of Slotlane.Testing.SlotlaneServer, as
# server/build.cfg describes it (server/build-shared.sh)
if [ -f "$ROOT/server/build.cfg" ]; then
  bash "$ROOT/server/build-shared.sh" "$OUT/libslotlane_server.so"
fi
