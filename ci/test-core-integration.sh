#!/usr/bin/env bash
# Integration tests of the core against real Redis: starts a 3-primary Redis Cluster and a
# standalone redis-server with ci/redis-cluster.sh / ci/redis-plain.sh and runs
# core/itests' programs (itest_cluster random-plain, random-cluster, scan, scripts, migrate, kill) from the release (build/)
# and the ASan+UBSan (build-asan/) builds. The cluster is started afresh for each build,
# since the kill test restarts a node and a failed migration may leave a slot half-moved.
# Then the same over TLS (certificates made by ci/tls-certs.sh now): a TLS-only
# redis-server requiring client certificates, one serving an expired certificate and a
# 3-primary cluster with tls-cluster yes, running random-plain, random-cluster, migrate (a
# live reshard over TLS) and tls-errors.
# Then replica reads and failover against a 3 primaries x 1 replica cluster
# (cluster-node-timeout 2 s), started once per build: replica-reads, replica-kill (kill -9
# of a primary under load), replica-failover (CLUSTER FAILOVER under load).
# Last a TLS cluster whose nodes announce host names and serve certificates naming only
# them (tls-hostnames: verification by the announced name).
# Ports: 33 free consecutive ones from $SL_ITEST_PORT (default: the first free block of
# the suite's range in ci/lib.sh): plain BASE, cluster BASE+1..+6, TLS plain BASE+7,
# expired BASE+8, TLS cluster BASE+9..+14, replica cluster BASE+15..+26, host-name TLS
# cluster BASE+27..+32. SL_ITEST_SEED sets the PRNG seed of the random pipelines (default 1).
# SL_BUILDS: the build directories to test (default "build build-asan").
SL_SUITE=core-integration
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT

BASE=${SL_ITEST_PORT:-$(sl_free_block core-integration 33)}
WORK=$(mktemp -d /tmp/sl-itest.XXXXXX)
sl_on_exit "rm -rf '$WORK'"
sl_on_exit "ci/redis-plain.sh stop '$WORK/plain'"
sl_on_exit "ci/redis-cluster.sh stop '$WORK/cluster'"
sl_on_exit "ci/redis-cluster.sh stop '$WORK/replicas'"
sl_on_exit "SL_REDIS_TLS_DIR='$WORK/certs' ci/redis-plain.sh stop '$WORK/tls-plain'"
sl_on_exit "SL_REDIS_TLS_DIR='$WORK/certs' ci/redis-plain.sh stop '$WORK/tls-expired'"
sl_on_exit "SL_REDIS_TLS_DIR='$WORK/certs' ci/redis-cluster.sh stop '$WORK/tls-cluster'"
sl_on_exit "SL_REDIS_TLS_DIR='$WORK/certs' SL_REDIS_TLS_HOSTNAMES=1 ci/redis-cluster.sh stop '$WORK/tls-hosts'"

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
plain_s=$SECONDS

# Replica reads and failover: one 3 x 1 cluster per build (a kill leaves the old primary a
# replica and a graceful failover swaps roles back and forth, both healthy after).
for build in ${SL_BUILDS:-build build-asan}; do
  bin=$build/core/itests/itest_cluster
  [ -x "$bin" ] || continue
  ci/redis-cluster.sh stop "$WORK/replicas" >/dev/null
  SL_CLUSTER_NODE_TIMEOUT=2000 ci/redis-cluster.sh start "$WORK/replicas" $((BASE + 15)) 3 1
  for t in replica-reads replica-kill replica-failover; do
    echo "--- $build: itest_cluster $t"
    if ! SL_ITEST_REPLICA_PORT=$((BASE + 15)) SL_ITEST_REPLICA_DIR="$WORK/replicas" timeout 120 "$bin" "$t"; then
      echo "test-core-integration.sh: FAILED: $build itest_cluster $t" >&2
      status=1
    fi
  done
done
replica_s=$((SECONDS - plain_s))
plain_s=$SECONDS

# The same over TLS.
HOSTS_PORT=$((BASE + 27))
ci/tls-certs.sh "$WORK/certs" node-$HOSTS_PORT.slotlane.test node-$((HOSTS_PORT + 1)).slotlane.test \
  node-$((HOSTS_PORT + 2)).slotlane.test
TLS_ENV=(SL_REDIS_TLS_DIR="$WORK/certs")
env "${TLS_ENV[@]}" SL_REDIS_TLS_AUTH_CLIENTS=yes ci/redis-plain.sh start "$WORK/tls-plain" $((BASE + 7))
env "${TLS_ENV[@]}" SL_REDIS_TLS_CERT=expired ci/redis-plain.sh start "$WORK/tls-expired" $((BASE + 8))
for build in ${SL_BUILDS:-build build-asan}; do
  bin=$build/core/itests/itest_cluster
  [ -x "$bin" ] || continue
  env "${TLS_ENV[@]}" ci/redis-cluster.sh stop "$WORK/tls-cluster" >/dev/null
  env "${TLS_ENV[@]}" ci/redis-cluster.sh start "$WORK/tls-cluster" $((BASE + 9)) 3
  for t in random-plain random-cluster migrate tls-errors; do
    echo "--- $build: itest_cluster $t (TLS)"
    if ! env "${TLS_ENV[@]}" SL_ITEST_TLS_DIR="$WORK/certs" SL_ITEST_PLAIN_PORT=$((BASE + 7)) \
         SL_ITEST_CLUSTER_PORT=$((BASE + 9)) SL_ITEST_CLUSTER_DIR="$WORK/tls-cluster" \
         SL_ITEST_TLS_PORT=$((BASE + 7)) SL_ITEST_TLS_EXPIRED_PORT=$((BASE + 8)) SL_ITEST_NOTLS_PORT=$BASE \
         timeout 120 "$bin" "$t"; then
      echo "test-core-integration.sh: FAILED: $build itest_cluster $t (TLS)" >&2
      status=1
    fi
  done
done
env "${TLS_ENV[@]}" SL_REDIS_TLS_HOSTNAMES=1 ci/redis-cluster.sh start "$WORK/tls-hosts" "$HOSTS_PORT" 3
for build in ${SL_BUILDS:-build build-asan}; do
  bin=$build/core/itests/itest_cluster
  [ -x "$bin" ] || continue
  echo "--- $build: itest_cluster tls-hostnames"
  if ! env SL_ITEST_TLS_DIR="$WORK/certs" SL_ITEST_CLUSTER_PORT=$HOSTS_PORT timeout 120 "$bin" tls-hostnames; then
    echo "test-core-integration.sh: FAILED: $build itest_cluster tls-hostnames" >&2
    status=1
  fi
done
echo "core integration: plaintext part $((plain_s - replica_s)) s, replicas part $replica_s s, TLS part $((SECONDS - plain_s)) s"
[ $status = 0 ] && echo "core integration: all passed"
exit $status
