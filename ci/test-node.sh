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
# 3. node --test node/test: against slotlane-server (the package's slotlane/testing, inside
#    the test process or a child of it), a standalone redis-server and Redis Clusters; every test starts and stops
#    its own servers (ports 25000-25299).
# 4. Only with SL_NODE_ASAN=1 (about 2 more minutes): the addon built again with
#    -fsanitize=address,undefined in a copy of node/, and the tests run again with it
#    (libasan preloaded into node; leak detection off, node itself is not instrumented).
# About two minutes on 2 cores once the server is built.
SL_SUITE=node
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT
export npm_config_nodedir=${npm_config_nodedir:-/usr}
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

command -v node >/dev/null || die "node is not installed (Node >= 18 and npm are needed)"
command -v npm >/dev/null || die "npm is not installed"
[ -f "$npm_config_nodedir/include/node/node_api.h" ] || die "no Node headers in $npm_config_nodedir/include/node"

WORK=$(mktemp -d /tmp/slotlane-node.XXXXXX)
sl_on_exit "rm -rf '$WORK'"

say "npm install ./node (offline; node-gyp against $npm_config_nodedir/include/node)"
rm -rf node/build
mkdir -p "$WORK/app"
( cd "$WORK/app" && npm init -y >/dev/null && npm install --offline --loglevel=error "$ROOT/node" )
ADDON=$ROOT/node/build/Release/slotlane.node
[ -f "$ADDON" ] || die "the addon was not built"
# (outputs captured first: grep -q closing a pipe early would fail the pipeline under pipefail)
deps=$(ldd "$ADDON")
if grep -q libuv <<<"$deps"; then die "the addon links a libuv of its own"; fi
undef=$(nm -D --undefined-only "$ADDON")
grep -q ' uv_poll_start$' <<<"$undef" || die "the addon does not use the node binary's libuv"
if nm -D --defined-only "$ADDON" | grep ' uv_' >/dev/null; then die "the addon defines uv_* symbols"; fi
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
  bash ci/vendor-core.sh --server "$WORK/asan/node/vendor/server"   # and the embedded server's (slotlane/testing)
  ( cd "$WORK/asan/node" && CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" \
      LDFLAGS="-fsanitize=address,undefined" npm run --silent install >/dev/null )
  preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  ( cd "$WORK/asan/node" && LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 node --test "$@" test/ )
fi
