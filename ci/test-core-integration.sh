#!/usr/bin/env bash
# Integration tests of the core against real Redis: starts a 3-primary Redis Cluster and a
# standalone redis-server with ci/redis-cluster.sh / ci/redis-plain.sh and runs
# core/itests' programs (itest_cluster random-plain, random-cluster, scan, scripts, migrate, kill) from the release (build/)
# and the ASan+UBSan (build-asan/) builds. The cluster is started afresh for each build,
# since the kill test restarts a node and a failed migration may leave a slot half-moved.
# Ports: 7 free consecutive ones from $SL_ITEST_PORT (default: the first free block of
# the suite's range in ci/lib.sh). SL_ITEST_SEED sets the PRNG seed of the random pipelines (default 1).
# SL_BUILDS: the build directories to test (default "build build-asan").
SL_SUITE=core-integration
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT

BASE=${SL_ITEST_PORT:-$(sl_free_block core-integration 7)}
WORK=$(mktemp -d /tmp/sl-itest.XXXXXX)
sl_on_exit "rm -rf '$WORK'"
sl_on_exit "ci/redis-plain.sh stop '$WORK/plain'"
sl_on_exit "ci/redis-cluster.sh stop '$WORK/cluster'"

export SL_ITEST_PLAIN_PORT=$BASE
export SL_ITEST_CLUSTER_PORT=$((BASE + 1))   # the cluster uses BASE+1 .. BASE+6
export SL_ITEST_CLUSTER_DIR=$WORK/cluster
export SL_ITEST_SEED=${SL_ITEST_SEED:-1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

ci/redis-plain.sh start "$WORK/plain" "$SL_ITEST_PLAIN_PORT"
status=0
for build in ${SL_BUILDS:-build build-asan}; do
  bin=$build/core/itests/itest_cluster
  if [ ! -x "$bin" ]; then
    echo "test-core-integration.sh: $bin is missing: core/CMakeLists.txt needs add_subdirectory(itests), then build" >&2
    status=1; continue
  fi
  ci/redis-cluster.sh stop "$SL_ITEST_CLUSTER_DIR" >/dev/null
  ci/redis-cluster.sh start "$SL_ITEST_CLUSTER_DIR" "$SL_ITEST_CLUSTER_PORT" 3
  for t in random-plain random-cluster scan scripts migrate kill; do
    echo "--- $build: itest_cluster $t"
    if ! timeout 120 "$bin" "$t"; then
      echo "test-core-integration.sh: FAILED: $build itest_cluster $t" >&2
      status=1
    fi
  done
done
[ $status = 0 ] && echo "core integration: all passed"
exit $status
