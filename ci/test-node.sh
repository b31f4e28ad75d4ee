#!/usr/bin/env bash
# ci/test-node.sh — the Node binding (node/): build, package and test.
#
#   ci/test-node.sh [node --test args...]
#
# 1. `npm install ./node` into a throwaway project, offline: node-gyp builds the addon from
#    ../core against Node's own headers (npm_config_nodedir=/usr) — and it links no libuv.
#    (`npm pack` of node/ installed into a scratch project and used there:
#    ci/test-packages.sh node.)
# 2. TypeScript: lib/index.d.ts type-checks a usage file under --strict (typescript and
#    @types/node from npm into node/test/types/node_modules, once).
# 3. node --test node/test: against slotlane-server (build/server/slotlane-server, built here
#    when missing), a standalone redis-server and Redis Clusters; every test starts and stops
#    its own servers (ports 25000-25299).
# 4. Only with SL_NODE_ASAN=1 (about 2 more minutes): the addon built again with
#    -fsanitize=address,undefined in a copy of node/, and the tests run again with it
#    (libasan preloaded into node; leak detection off, node itself is not instrumented).
# About two minutes on 2 cores once the server is built.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export SL_ROOT=$ROOT
export npm_config_nodedir=${npm_config_nodedir:-/usr}
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
say() { echo "test-node: $*" >&2; }

command -v node >/dev/null || { say "node is not installed (Node >= 18 and npm are needed)"; exit 1; }
command -v npm >/dev/null || { say "npm is not installed"; exit 1; }
[ -f "$npm_config_nodedir/include/node/node_api.h" ] || { say "no Node headers in $npm_config_nodedir/include/node"; exit 1; }

WORK=$(mktemp -d /tmp/slotlane-node.XXXXXX)
cleanup() { local rc=$?; rm -rf "$WORK"; exit $rc; }
trap cleanup EXIT

if [ ! -x build/server/slotlane-server ]; then
  say "building slotlane-server"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j2 --target slotlane-server
fi

say "npm install ./node (offline; node-gyp against $npm_config_nodedir/include/node)"
rm -rf node/build
mkdir -p "$WORK/app"
( cd "$WORK/app" && npm init -y >/dev/null && npm install --offline --loglevel=error "$ROOT/node" )
ADDON=$ROOT/node/build/Release/slotlane.node
[ -f "$ADDON" ] || { say "the addon was not built"; exit 1; }
# (outputs captured first: grep -q closing a pipe early would fail the pipeline under pipefail)
deps=$(ldd "$ADDON")
if grep -q libuv <<<"$deps"; then say "the addon links a libuv of its own"; exit 1; fi
undef=$(nm -D --undefined-only "$ADDON")
grep -q ' uv_poll_start$' <<<"$undef" || { say "the addon does not use the node binary's libuv"; exit 1; }
if nm -D --defined-only "$ADDON" | grep ' uv_' >/dev/null; then say "the addon defines uv_* symbols"; exit 1; fi
( cd "$WORK/app" && node -e '
const sl = require("slotlane");
if (sl.keySlot("foo") !== 12182) throw new Error("keySlot");
console.log("test-node: npm install ./node OK, slotlane", sl.version);' )

say "TypeScript declarations (tsc --strict)"
if [ ! -x node/test/types/node_modules/.bin/tsc ]; then
  ( cd node/test/types && npm install --loglevel=error )
fi
( cd node/test/types && node_modules/.bin/tsc -p tsconfig.json )

say "node --test"
( cd node && node --test "$@" test/ )

if [ "${SL_NODE_ASAN:-0}" = 1 ]; then
  say "again with the addon under ASan + UBSan"
  mkdir -p "$WORK/asan"
  cp -r node "$WORK/asan/node"
  rm -rf "$WORK/asan/node/build" "$WORK"/asan/node/bench/node_modules "$WORK"/asan/node/test/types/node_modules
  bash ci/vendor-core.sh "$WORK/asan/node/vendor/core"   # the copy a packed install builds from
  ( cd "$WORK/asan/node" && CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" \
      LDFLAGS="-fsanitize=address,undefined" npm run --silent install >/dev/null )
  preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  ( cd "$WORK/asan/node" && LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 node --test "$@" test/ )
fi
