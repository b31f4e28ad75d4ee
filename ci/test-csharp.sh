#!/usr/bin/env bash
# ci/test-csharp.sh — the C# binding (csharp/): build and test with Mono (this machine has no .NET SDK).
#
#   ci/test-csharp.sh [nunit-console options, e.g. -run:Slotlane.Tests.PipelineTests]
#
# csharp/mono-build.sh test: libslotlane.so from core/src (gcc -O2), Slotlane.Client.dll, the tests
# (NUnit 2.6, -define:NUNIT2) and the benchmark with mcs -langversion:7.2, then nunit-console.
# The tests start their own servers on ports 24500-24599 (bundled slotlane-server, a standalone
# redis-server, two 3-primary Redis Clusters) and stop them by PID; whatever an interrupted run
# left behind is stopped here on exit. Needs build/server/slotlane-server (built here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export SL_ROOT=$ROOT
export SL_CSHARP_WORK=$ROOT/csharp/out/test-work
say() { echo "test-csharp: $*" >&2; }

cleanup() {
  local rc=$?
  if [ -f "$SL_CSHARP_WORK/bundled.pid" ]; then
    pid=$(cat "$SL_CSHARP_WORK/bundled.pid")
    if kill -0 "$pid" 2>/dev/null && grep -q slotlane-server "/proc/$pid/cmdline" 2>/dev/null; then kill "$pid" 2>/dev/null || true; fi
    rm -f "$SL_CSHARP_WORK/bundled.pid"
  fi
  for d in cluster chaos; do
    [ -d "$SL_CSHARP_WORK/$d" ] && bash ci/redis-cluster.sh stop "$SL_CSHARP_WORK/$d" >/dev/null 2>&1 || true
  done
  [ -d "$SL_CSHARP_WORK/plain" ] && bash ci/redis-plain.sh stop "$SL_CSHARP_WORK/plain" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT

for t in mcs mono nunit-console; do
  command -v $t >/dev/null || { say "$t is missing: run ci/deps.sh (mono-complete nunit-console libnunit-cil-dev)"; exit 1; }
done
if [ ! -x build/server/slotlane-server ]; then
  say "building slotlane-server"
  cmake -S . -B build >/dev/null
  cmake --build build -j2 --target slotlane-server
fi
export SL_SERVER=$ROOT/build/server/slotlane-server

bash csharp/mono-build.sh test "$@"
