#!/usr/bin/env bash
# java/bench/async-cost.sh — the Java async rows (AsyncCostBench: N concurrent callers each
# awaiting one GET/SET, slotlane AsyncClient beside Lettuce's async API) with their server.
#
#   java/bench/async-cost.sh [--rounds 3] [--requests 40960] [--callers 64,512] [--ops GET,SET] [--json DIR/]
#
# Starts one slotlane-server (build/server/slotlane-server, built by ci/server-bin.sh when
# missing): 4 shards, per-shard ports, misrouted forward (the cluster-cost setup: the plain
# rows use its first port, the cluster rows discover the same process), pinned to CPU
# $SL_BENCH_SERVER_CPU (1); runs the benchmark through Maven's `bench` profile pinned to CPU
# $SL_BENCH_CLIENT_CPU (0); the record goes to bench/records/ (or --json DIR/); stops the
# server by PID, also on failure. Ports $SL_JAVA_ASYNC_BENCH_PORT (24740) .. +3, in the bench
# range of ci/lib.sh's port map. Hold the bench lock: flock /tmp/suite-bench.lock java/bench/async-cost.sh
#
#   java/bench/async-cost.sh --plain URL --cluster URL [--server-desc TEXT] [options...]
# runs against a server the caller started (bench/async/run.py, `make bench`'s async rows):
# no server is started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(cd .. && pwd)
BASE=${SL_JAVA_ASYNC_BENCH_PORT:-24740}
SERVER_CPU=${SL_BENCH_SERVER_CPU:-1}
CLIENT_CPU=${SL_BENCH_CLIENT_CPU:-0}
JSON=$ROOT/bench/records/
PLAIN=""; CLUSTER=""; desc=""
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --json|--plain|--cluster|--server-desc)
      [ $# -ge 2 ] || { echo "async-cost.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in --json) JSON=$2 ;; --plain) PLAIN=$2 ;; --cluster) CLUSTER=$2 ;; --server-desc) desc=$2 ;; esac
      shift 2 ;;
    *) pass+=("$1"); shift ;;
  esac
done
if [ -n "$PLAIN$CLUSTER" ]; then
  [ -n "$PLAIN" ] && [ -n "$CLUSTER" ] || { echo "async-cost.sh: give both --plain URL and --cluster URL" >&2; exit 2; }
  desc=${desc:-"the slotlane-server given by --plain $PLAIN --cluster $CLUSTER (started by the caller); the benchmark JVM pinned to CPU $CLIENT_CPU"}
  args="--plain $PLAIN --cluster $CLUSTER --json $JSON --invocation java/bench/async-cost.sh"
  for a in "${pass[@]}"; do args="$args $a"; done
  exec taskset -c "$CLIENT_CPU" mvn -q -B -o -Dstyle.color=never -DskipTests -Pbench verify \
    -Dbench.main=io.slotlane.bench.AsyncCostBench "-Dbench.args=$args --server-desc \"$desc\""
fi
BIN=$(bash "$ROOT/ci/server-bin.sh")
for p in $(seq "$BASE" $((BASE + 3))); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "async-cost.sh: port $p is in use: set SL_JAVA_ASYNC_BENCH_PORT to a free base" >&2; exit 1
  fi
done
taskset -c "$SERVER_CPU" "$BIN" --shards 4 --port-mode per-shard --misrouted forward --bind 127.0.0.1 \
  --port "$BASE" --durability memory >/dev/null 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true' EXIT
for p in $(seq "$BASE" $((BASE + 3))); do
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "async-cost.sh: slotlane-server exited" >&2; exit 1; }
    sleep 0.05  # the poll interval of a wait for the port (bounded: a hang becomes a failure)
  done
done
taskset -a -p -c "$SERVER_CPU" "$SERVER_PID" >/dev/null
desc="slotlane-server ($BIN): 4 shards, port_mode per-shard, misrouted forward, durability memory, ports $BASE-$((BASE + 3)), pinned to CPU $SERVER_CPU; plain rows on port $BASE (forwarding), cluster rows discover the same process; the benchmark JVM pinned to CPU $CLIENT_CPU"
args="--plain redis://127.0.0.1:$BASE --cluster redis://127.0.0.1:$BASE --json $JSON --invocation java/bench/async-cost.sh"
for a in "${pass[@]}"; do args="$args $a"; done
taskset -c "$CLIENT_CPU" mvn -q -B -o -Dstyle.color=never -DskipTests -Pbench verify \
  -Dbench.main=io.slotlane.bench.AsyncCostBench "-Dbench.args=$args --server-desc \"$desc\""
