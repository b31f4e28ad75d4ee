#!/usr/bin/env bash
# Runs the conformance cases (bindings/conformance/cases/*.json) through the core's C
# runner, sl_conformance, against a standalone redis-server and a 3-primary Redis
# Cluster started with ci/redis-plain.sh and ci/redis-cluster.sh, in the release
# (build/) and the ASan+UBSan (build-asan/) builds. Cases of mode "cluster" run only
# against the cluster. First, record.py --check verifies that the recorded replies are
# still exactly what these servers answer. Ports: 7 free consecutive ones from $SL_CONFORMANCE_PORT
# (default: the first free block of the suite's range in ci/lib.sh).
# SL_BUILDS: the build directories to test (default "build build-asan").
SL_SUITE=conformance
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT

BASE=${SL_CONFORMANCE_PORT:-$(sl_free_block conformance 7)}
PLAIN_PORT=$BASE
CLUSTER_PORT=$((BASE + 1))   # uses BASE+1 .. BASE+6 (3 client ports, 3 bus ports)
WORK=$(mktemp -d /tmp/sl-conformance.XXXXXX)
sl_on_exit "rm -rf '$WORK'"
sl_on_exit "ci/redis-plain.sh stop '$WORK/plain'"
sl_on_exit "ci/redis-cluster.sh stop '$WORK/cluster'"

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
