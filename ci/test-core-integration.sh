#!/usr/bin/env bash
# Integration tests of the core against real Redis: starts a 3-primary Redis Cluster and a
# standalone redis-server with ci/redis-cluster.sh / ci/redis-plain.sh and runs
# core/itests' programs (itest_cluster random-plain, random-cluster, migrate, kill) from the release (build/)
# and the ASan+UBSan (build-asan/) builds. The cluster is started afresh for each build,
# since the kill test restarts a node and a failed migration may leave a slot half-moved.
# Ports: 7 free consecutive ones from $SL_ITEST_PORT (default: the first free block from
# 20400). SL_ITEST_SEED sets the PRNG seed of the random pipelines (default 1).
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
  echo "test-core-integration.sh: no free port block" >&2; return 1
}

BASE=${SL_ITEST_PORT:-$(free_block 20400 7)}
WORK=$(mktemp -d /tmp/sl-itest.XXXXXX)
cleanup() {
  ci/redis-cluster.sh stop "$WORK/cluster" >/dev/null 2>&1 || true
  ci/redis-plain.sh stop "$WORK/plain" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
  for t in random-plain random-cluster migrate kill; do
    echo "--- $build: itest_cluster $t"
    if ! timeout 120 "$bin" "$t"; then
      echo "test-core-integration.sh: FAILED: $build itest_cluster $t" >&2
      status=1
    fi
  done
done
[ $status = 0 ] && echo "core integration: all passed"
exit $status
