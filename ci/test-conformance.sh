#!/usr/bin/env bash
# Runs the conformance cases (bindings/conformance/cases/*.json) through the core's C
# runner, sl_conformance, against a standalone redis-server and a 3-primary Redis
# Cluster started with ci/redis-plain.sh and ci/redis-cluster.sh, in the release
# (build/) and the ASan+UBSan (build-asan/) builds. Cases of mode "cluster" run only
# against the cluster. First, record.py --check verifies that the recorded replies are
# still exactly what these servers answer. Ports: 7 free consecutive ones from $SL_CONFORMANCE_PORT
# (default: the first free block from 20300).
# SL_BUILDS: the build directories to test (default "build build-asan").
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

free_block() {  # free_block FROM COUNT: the first base >= FROM with COUNT free ports
  local b=$1 n=$2 i ok
  while [ "$b" -le $((20899 - n)) ]; do
    ok=1
    for ((i = 0; i < n; i++)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$((b + i))") 2>/dev/null; then ok=0; break; fi
    done
    [ $ok = 1 ] && { echo "$b"; return 0; }
    b=$((b + n))
  done
  echo "test-conformance.sh: no free port block" >&2; return 1
}

BASE=${SL_CONFORMANCE_PORT:-$(free_block 20300 7)}
PLAIN_PORT=$BASE
CLUSTER_PORT=$((BASE + 1))   # uses BASE+1 .. BASE+6 (3 client ports, 3 bus ports)
WORK=$(mktemp -d /tmp/sl-conformance.XXXXXX)
cleanup() {
  ci/redis-cluster.sh stop "$WORK/cluster" >/dev/null 2>&1 || true
  ci/redis-plain.sh stop "$WORK/plain" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ci/redis-plain.sh start "$WORK/plain" "$PLAIN_PORT"
ci/redis-cluster.sh start "$WORK/cluster" "$CLUSTER_PORT" 3

CASES=(bindings/conformance/cases/*.json bindings/conformance/commands/*.json)  # commands/: the spec's cases (README there)
# The recorded replies are still what these servers answer (nothing drifted, no hand edits).
echo "--- record.py --check against redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
status=0
if ! python3 bindings/conformance/record.py --check --plain "127.0.0.1:$PLAIN_PORT" --cluster "127.0.0.1:$CLUSTER_PORT"; then
  echo "test-conformance.sh: FAILED: the expected replies differ from the servers' (re-record?)" >&2
  status=1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ran=0
for build in ${SL_BUILDS:-build build-asan}; do
  bin=$build/bindings/conformance/sl_conformance
  if [ ! -x "$bin" ]; then
    echo "test-conformance.sh: $bin is missing (build with cmake first)" >&2
    status=1; continue
  fi
  for target in "plain redis://127.0.0.1:$PLAIN_PORT" "cluster redis://127.0.0.1:$CLUSTER_PORT"; do
    set -- $target
    echo "--- $build, $1 ($2)"
    ran=$((ran + 1))
    if ! timeout 120 "$bin" "$2" "${CASES[@]}"; then
      echo "test-conformance.sh: FAILED: $build against the $1 server" >&2
      status=1
    fi
  done
done
[ $ran -gt 0 ] || status=1
[ $status = 0 ] && echo "conformance: all runs passed"
exit $status
