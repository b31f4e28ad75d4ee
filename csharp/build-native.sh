#!/usr/bin/env bash
# csharp/build-native.sh [OUTDIR] — builds libslotlane.so (-O2, shared, hidden internals) into
# OUTDIR as the core's one build description says (core/build.cfg, read through
# core/describe.py): the "core" and "uv" parts (the Task methods use the libuv driver), their
# include folders, definitions, standard and version; libuv from the system through
# pkg-config (core/README.md, "one linkage rule"). Only when an input is newer than the library.
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
# server/build.cfg describes it (read by the same describe.py), with its system libraries
# (libuv, Lua 5.1 with cjson and bit) through pkg-config
SERVER=$ROOT/server
SLIB=$OUT/libslotlane_server.so
if [ -f "$SERVER/build.cfg" ]; then
  sdescribe() { python3 "$CORE/describe.py" --core "$SERVER" "$@"; }
  mapfile -t SSRCS < <(sdescribe sources server)
  mapfile -t SFLAGS < <(sdescribe cflags server)
  mapfile -t SMODULES < <(sdescribe modules server)
  read -r -a SDEP_CFLAGS <<<"$(pkg-config --cflags "${SMODULES[@]}")"
  read -r -a SDEP_LIBS <<<"$(pkg-config --libs "${SMODULES[@]}")"
  echo "build-native: compiling ${#SSRCS[@]} server sources into $SLIB" >&2
  mkdir -p "$OBJ/server"   # one object per source, by its name (unique in server/build.cfg's list)
  printf '%s\n' "${SSRCS[@]}" | xargs -P 2 -I{} sh -c \
    'f=$1; shift; exec gcc "$@" -c "$f" -o "$OBJ/server/$(basename "$f" .c).o"' _ {} \
    -O2 -g -fPIC -fvisibility=hidden "${SFLAGS[@]}" "${SDEP_CFLAGS[@]}"
  [ "$(ls "$OBJ"/server/*.o | wc -l)" -eq ${#SSRCS[@]} ] || { echo "build-native: a server compilation failed" >&2; exit 1; }
  gcc -shared -o "$SLIB.tmp" "$OBJ"/server/*.o "${SDEP_LIBS[@]}" -lpthread -lm -Wl,--no-undefined
  mv "$SLIB.tmp" "$SLIB"
fi
