#!/usr/bin/env bash
# run-bench.sh — the Java cluster-cost benchmark (RoutingCostBench) with its servers.
#
#   java/run-bench.sh [--quick] [RoutingCostBench options...]
#
# Starts Debian's redis-server standalone (the plain row: slotlane-server has no
# `--misrouted forward` yet) and a 3-primary Redis Cluster (the cluster and one-node rows),
# pinned to CPU $SL_BENCH_SERVER_CPU (1); runs the benchmark through Maven's `bench` profile
# pinned to CPU $SL_BENCH_CLIENT_CPU (0); writes one JSON record to bench/records/; prints
# the table; stops every server it started, by PID, also on failure and on Ctrl-C.
# Ports: $SL_JAVA_BENCH_PORT (23800): +0 plain, +10..+15 the cluster (all in 23500-23999).
#
#   java/run-bench.sh --plain URL --cluster URL [--json DIR/] [options...]
# runs against servers the caller started (bench/run.py, `make bench`): no server is
# started; the record goes to --json DIR/ (default bench/records/).
set -euo pipefail
cd "$(dirname "$0")"
JAVA_DIR=$PWD
ROOT=$(cd .. && pwd)
BASE=${SL_JAVA_BENCH_PORT:-23800}
SERVER_CPU=${SL_BENCH_SERVER_CPU:-1}
CLIENT_CPU=${SL_BENCH_CLIENT_CPU:-0}
PLAIN_URL=""; CLUSTER_URL=""; JSON_DIR=$ROOT/bench/records/; pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --plain|--cluster|--json)
      [ $# -ge 2 ] || { echo "run-bench.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in --plain) PLAIN_URL=$2 ;; --cluster) CLUSTER_URL=$2 ;; --json) JSON_DIR=$2 ;; esac
      shift ;;
    *) pass+=("$1") ;;
  esac
  shift
done
if [ -n "$PLAIN_URL$CLUSTER_URL" ] && { [ -z "$PLAIN_URL" ] || [ -z "$CLUSTER_URL" ]; }; then
  echo "run-bench.sh: give both --plain URL and --cluster URL" >&2; exit 2
fi
WORK=$(mktemp -d /tmp/sl-java-bench.XXXXXX)
started_plain=""; started_cluster=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "$started_plain" ] && bash "$ROOT/ci/redis-plain.sh" stop "$WORK/plain" >/dev/null 2>&1 || true
  [ -n "$started_cluster" ] && bash "$ROOT/ci/redis-cluster.sh" stop "$WORK/cluster" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "$PLAIN_URL" ]; then
desc="the servers given by --plain $PLAIN_URL --cluster $CLUSTER_URL (started by the caller); the benchmark JVM pinned to CPU $CLIENT_CPU"
else
for p in $BASE $(seq $((BASE + 10)) $((BASE + 15))); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "run-bench.sh: port $p is in use: set SL_JAVA_BENCH_PORT to a free base" >&2; exit 1
  fi
done

started_plain=1
bash "$ROOT/ci/redis-plain.sh" start "$WORK/plain" "$BASE" >/dev/null
started_cluster=1
bash "$ROOT/ci/redis-cluster.sh" start "$WORK/cluster" $((BASE + 10)) 3 >/dev/null
for pid in $(cat "$WORK/plain/pid" "$WORK/cluster/pids"); do taskset -a -p -c "$SERVER_CPU" "$pid" >/dev/null; done

desc="Debian redis-server $(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2): plain row = one standalone server (127.0.0.1:$BASE); cluster and one-node rows = a 3-primary Redis Cluster (127.0.0.1:$((BASE + 10))..$((BASE + 12))), no replicas; every server pinned to CPU $SERVER_CPU, the benchmark JVM to CPU $CLIENT_CPU"
PLAIN_URL=redis://127.0.0.1:$BASE; CLUSTER_URL=redis://127.0.0.1:$((BASE + 10))
fi
commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
dirty=$( [ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ] && echo true || echo false)
args="--plain $PLAIN_URL --cluster $CLUSTER_URL --json $JSON_DIR"
args="$args --invocation java/run-bench.sh"
for a in "${pass[@]}"; do args="$args $a"; done
SL_BENCH_CLIENT_CPUS=$CLIENT_CPU SL_GIT_COMMIT=$commit SL_GIT_DIRTY=$dirty \
  taskset -c "$CLIENT_CPU" mvn -q -B -Dstyle.color=never -DskipTests -Pbench verify "-Dbench.args=$args --server-desc \"$desc\""
