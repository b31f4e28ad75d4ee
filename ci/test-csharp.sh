#!/usr/bin/env bash
# ci/test-csharp.sh — the C# binding (csharp/): build and test with Mono (this machine has no .NET SDK).
#
#   ci/test-csharp.sh [nunit-console options, e.g. -run:Slotlane.Tests.PipelineTests]
#
# csharp/mono-build.sh test: libslotlane.so from core/src (gcc -O2), Slotlane.Client.dll, the tests
# (NUnit 2.6, -define:NUNIT2) and the benchmark with mcs -langversion:7.2, then nunit-console.
# The tests start their own servers on a free block of 50 ports in 24500-24599 (Servers.cs,
# PortBlocks.cs; SL_CSHARP_TEST_PORT pins it: the bundled slotlane-server embedded in the test
# process through Slotlane.Testing.SlotlaneServer (libslotlane_server.so), a standalone
# redis-server, two 3-primary Redis Clusters, one of 3 primaries x 1 replica) and stop them by PID; whatever an interrupted run
# left behind is stopped here on exit. Needs no slotlane-server executable.
SL_SUITE=csharp
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT
export SL_CSHARP_WORK=$ROOT/csharp/out/test-work

sl_on_exit 'for d in cluster chaos replicas; do [ -d "$SL_CSHARP_WORK/$d" ] && bash ci/redis-cluster.sh stop "$SL_CSHARP_WORK/$d"; done'
sl_on_exit '[ -d "$SL_CSHARP_WORK/plain" ] && bash ci/redis-plain.sh stop "$SL_CSHARP_WORK/plain"'
# TlsTests' servers (stopped by the fixture; these only catch an interrupted run)
sl_on_exit 'for d in tls mtls wrong-name expired; do [ -d "$SL_CSHARP_WORK/tls/$d" ] && bash ci/redis-plain.sh stop "$SL_CSHARP_WORK/tls/$d"; done; [ -d "$SL_CSHARP_WORK/tls/cluster" ] && bash ci/redis-cluster.sh stop "$SL_CSHARP_WORK/tls/cluster"; true'

for t in mcs mono nunit-console; do
  command -v $t >/dev/null || die "$t is missing: run ci/deps.sh (mono-complete nunit-console libnunit-cil-dev)"
done

bash csharp/mono-build.sh test "$@"
