#!/usr/bin/env bash
# ci/test-packages.sh [PACKAGE...] — every artifact slotlane ships, installed and run where
# no monorepo is (issue 15): each package is built from the checkout, then installed into a
# scratch folder under /tmp and used there by an example that talks to the bundled
# slotlane-server (build/server/slotlane-server, 3 shards, started here on free ports from
# 26000-26099, stopped by PID on exit). The examples run with a clean environment: PATH
# holds only the system folders and the toolchains' own (cargo, go), never the checkout.
#
#   PACKAGE: c python node rust java csharp (default: all of them; Go's module-cache build
#   is in ci/test-go.sh, which the Go suite runs anyway)
#
#   c       cmake --install of build/ into a prefix: include/, lib/libslotlane.{a,so},
#           lib/pkgconfig/slotlane.pc, lib/cmake/slotlane/; one example program built with
#           pkg-config (shared and --static) and with find_package(slotlane)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${SL_BUILD_DIR:-$ROOT/build}
SERVER=$BUILD/server/slotlane-server
say() { echo "test-packages: $*" >&2; }
die() { say "$*"; exit 1; }
step() { printf '\n--- packages: %s\n' "$*"; }

ALL=(c python node rust java csharp)
[ $# -gt 0 ] && WANT=("$@") || WANT=("${ALL[@]}")

SCRATCH=$(mktemp -d /tmp/slotlane-packages.XXXXXX)
SERVER_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  [ "${SL_KEEP_SCRATCH:-0}" = 1 ] && say "scratch kept: $SCRATCH" || rm -rf "$SCRATCH"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A clean environment for everything that runs in the scratch folders: the system's PATH
# plus the folders of the toolchains this machine keeps in the home directory, HOME (for
# their caches: ~/.cargo, ~/go, ~/.m2, ~/.npm), nothing of the checkout.
TOOL_PATH=/usr/local/bin:/usr/bin:/bin
for t in cargo go node mvn; do
  d=$(dirname "$(command -v "$t" 2>/dev/null || echo /usr/bin/x)")
  case ":$TOOL_PATH:" in *":$d:"*) ;; *) TOOL_PATH=$TOOL_PATH:$d ;; esac
done
case ":$TOOL_PATH:" in *":$ROOT"*) die "a toolchain lies inside the checkout: $TOOL_PATH" ;; esac
clean() { env -i PATH="$TOOL_PATH" HOME="$HOME" LANG=C.UTF-8 TMPDIR=/tmp "$@"; }

# ------------------------------------------------------------------ the server
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
start_server() {
  [ -x "$SERVER" ] || die "no $SERVER (make build)"
  local p
  for p in $(seq 26000 4 26096); do
    if port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)); then PORT=$p; break; fi
  done
  [ -n "${PORT:-}" ] || die "no 3 free ports in 26000-26099"
  "$SERVER" --shards 3 --port "$PORT" >"$SCRATCH/server.log" 2>&1 &
  SERVER_PID=$!
  for i in 0 1 2; do
    for _ in $(seq 200); do
      [ "$(redis-cli -p $((PORT + i)) ping 2>/dev/null)" = PONG ] && break
      kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SCRATCH/server.log" >&2; die "slotlane-server exited"; }
      sleep 0.05
    done
    [ "$(redis-cli -p $((PORT + i)) ping 2>/dev/null)" = PONG ] || die "slotlane-server port $((PORT + i)) does not answer"
  done
  URL=redis://127.0.0.1:$PORT
  say "slotlane-server (3 shards) at $URL"
}

expect_ok() {  # expect_ok NAME FILE: the example printed "NAME ok"
  grep -q "^$1 ok" "$2" || { cat "$2" >&2; die "the $1 example did not print '$1 ok'"; }
  grep "^$1 ok" "$2"
}

# ------------------------------------------------------------------ C
pkg_c() {
  step "C: cmake --install, then pkg-config and find_package(slotlane) from $SCRATCH/c"
  local P=$SCRATCH/c/prefix
  cmake --install "$BUILD" --prefix "$P" >/dev/null
  for f in include/slotlane.h include/slotlane_uv.h lib/libslotlane.a lib/libslotlane.so \
           lib/pkgconfig/slotlane.pc lib/cmake/slotlane/slotlaneConfig.cmake; do
    [ -e "$P/$f" ] || die "cmake --install did not install $f"
  done
  mkdir -p "$SCRATCH/c/pc" "$SCRATCH/c/cm"
  cp ci/packages/example.c "$SCRATCH/c/pc/example.c"
  cp ci/packages/example.c "$SCRATCH/c/cm/example.c"
  ( cd "$SCRATCH/c/pc" && clean PKG_CONFIG_PATH="$P/lib/pkgconfig" sh -c '
      cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags slotlane) example.c -o example-shared $(pkg-config --libs slotlane) &&
      cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags --static slotlane) example.c -o example-static \
         -Wl,-Bstatic -lslotlane -Wl,-Bdynamic $(pkg-config --libs-only-L --static slotlane) \
         $(pkg-config --libs --static slotlane | sed "s/-lslotlane//")' )
  local deps
  deps=$(clean LD_LIBRARY_PATH="$P/lib" ldd "$SCRATCH/c/pc/example-shared")
  grep -q "$P/lib/libslotlane.so" <<<"$deps" || die "example-shared does not link the installed libslotlane.so"
  deps=$(ldd "$SCRATCH/c/pc/example-static")
  if grep -q libslotlane <<<"$deps"; then die "example-static links libslotlane.so"; fi
  clean LD_LIBRARY_PATH="$P/lib" "$SCRATCH/c/pc/example-shared" "$URL" > "$SCRATCH/c/pc.out" 2>&1 || { cat "$SCRATCH/c/pc.out" >&2; die "the pkg-config example failed"; }
  expect_ok c "$SCRATCH/c/pc.out"
  clean "$SCRATCH/c/pc/example-static" "$URL" > "$SCRATCH/c/pc-static.out" 2>&1 || { cat "$SCRATCH/c/pc-static.out" >&2; die "the static pkg-config example failed"; }
  expect_ok c "$SCRATCH/c/pc-static.out"
  cat > "$SCRATCH/c/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(slotlane_example C)
find_package(slotlane 0.1 REQUIRED)
add_executable(example example.c)
target_link_libraries(example PRIVATE slotlane::slotlane)
CM
  ( cd "$SCRATCH/c/cm" && clean cmake -S . -B build -DCMAKE_PREFIX_PATH="$P" >/dev/null && clean cmake --build build >/dev/null ) \
    || die "the find_package(slotlane) example did not build"
  clean "$SCRATCH/c/cm/build/example" "$URL" > "$SCRATCH/c/cm.out" 2>&1 || { cat "$SCRATCH/c/cm.out" >&2; die "the find_package example failed"; }
  expect_ok c "$SCRATCH/c/cm.out"
}

start_server
for p in "${WANT[@]}"; do
  case " ${ALL[*]} " in *" $p "*) ;; *) die "no package '$p' (one of: ${ALL[*]})" ;; esac
  declare -F "pkg_$p" >/dev/null || die "pkg_$p is not written yet"
  "pkg_$p"
done
echo
echo "packages: ${WANT[*]}: all installed and ran outside the checkout"
