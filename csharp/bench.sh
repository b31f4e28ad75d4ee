#!/usr/bin/env bash
# csharp/bench.sh [--redis | --slotlane-server] [--quick] [tool options...] — the C# cluster-cost rows.
#
# Builds (mono-build.sh bench-build, and sl-cluster-cost with cmake if missing), starts the servers
# like ci/bench.sh (slotlane-server with 4 shards, per-shard, `--misrouted forward` when its --help
# offers it; otherwise a standalone redis-server for the plain rows and a 3-primary Redis Cluster
# for the cluster and one-node rows), pins the servers to CPU 1 and the clients to CPU 0, and runs,
# against the same servers one after the other:
#   1. the C tool, build/bench/sl-cluster-cost --clients slotlane  -> bench/records/*-cluster-cost.json
#   2. the C# tool under Mono, --compare <that record>             -> bench/records/*-cluster-cost-csharp.json
# so every C# row carries x_c_tool (its user CPU over the C tool's, medians of one run) and the targets.
# Stops every server it started (by PID), also on failure and Ctrl-C.
#
# csharp/bench.sh --plain URL --cluster URL [--compare C-RECORD] [--json DEST] [options...]: against
# servers the caller started (bench/run.py, `make bench`): no server is started, the C tool runs only
# when no --compare record is given, the C# record goes to --json DEST (default bench/records/).
#
# csharp/bench.sh --async-cost [--rounds R] [--requests N] [--callers 64,512] [--quick]: the async-cost rows
# instead (Slotlane.Client.Benchmarks --async-cost: N concurrent callers awaiting GetAsync/SetAsync, plain and
# cluster, beside the blocking pipeline at depth 16) on the same servers; no C tool; record
# bench/records/*-async-cost-csharp.json (or --json DEST). Run it under the bench lock.
#
# Environment: SL_CS_BENCH_PORT (base port, default 24940; uses BASE..BASE+19), SL_BENCH_SERVER_CPU (1),
# SL_BENCH_CLIENT_CPU (0). Options not listed above go to both tools (--seconds, --rounds, --depths, --ops,
# --rows, --workers, --quick).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${SL_BUILD_DIR:-$ROOT/build}
TOOL=$BUILD/bench/sl-cluster-cost
SLSERVER=$BUILD/server/slotlane-server
BASE=${SL_CS_BENCH_PORT:-24940}
SERVER_CPU=${SL_BENCH_SERVER_CPU:-1}
CLIENT_CPU=${SL_BENCH_CLIENT_CPU:-0}
HOST=127.0.0.1
say() { echo "csharp/bench.sh: $*" >&2; }
die() { say "$*"; exit 1; }

want=auto
async=0
pass=(); PLAIN_URL=""; CLUSTER_URL=""; CREC=""; JSON_DEST=$ROOT/bench/records/
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --redis) want=redis ;;
    --slotlane-server) want=slotlane ;;
    --async-cost) async=1 ;;
    --plain|--cluster|--compare|--json)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --plain) PLAIN_URL=$2 ;; --cluster) CLUSTER_URL=$2 ;; --compare) CREC=$2 ;; --json) JSON_DEST=$2 ;;
      esac
      shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) pass+=("$1") ;;
  esac
  shift
done
set -- "${args[@]}"
given=0
if [ -n "$PLAIN_URL$CLUSTER_URL" ]; then
  [ -n "$PLAIN_URL" ] && [ -n "$CLUSTER_URL" ] || die "give both --plain URL and --cluster URL"
  given=1
fi

bash "$HERE/mono-build.sh" bench-build
if [ $async = 0 ] && [ -z "$CREC" ] && [ ! -x "$TOOL" ]; then
  say "building sl-cluster-cost"
  cmake -S "$ROOT" -B "$BUILD" >/dev/null
  cmake --build "$BUILD" -j2 --target sl-cluster-cost
fi

WORK=$(mktemp -d /tmp/sl-cs-bench.XXXXXX)
STARTED_PLAIN=""; STARTED_CLUSTER=""; SLSERVER_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SLSERVER_PID" ] && kill -0 "$SLSERVER_PID" 2>/dev/null; then
    kill -TERM "$SLSERVER_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$SLSERVER_PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$SLSERVER_PID" 2>/dev/null || true
  fi
  [ -n "$STARTED_PLAIN" ] && bash "$ROOT/ci/redis-plain.sh" stop "$WORK/plain" >/dev/null 2>&1 || true
  [ -n "$STARTED_CLUSTER" ] && bash "$ROOT/ci/redis-cluster.sh" stop "$WORK/cluster" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
ping_ok() { [ "$(redis-cli -h "$HOST" -p "$1" ping 2>/dev/null)" = "PONG" ]; }
pin() { taskset -a -p -c "$SERVER_CPU" "$1" >/dev/null || die "taskset of pid $1 failed"; }
for p in $(seq "$BASE" $((BASE + 19))); do
  [ $given = 1 ] && break
  port_in_use "$p" && die "port $p is in use: set SL_CS_BENCH_PORT to a free range of 20 ports in 24500-24999"
done

use_slotlane=0
if [ $given = 1 ]; then
  DESC="the servers given by --plain $PLAIN_URL --cluster $CLUSTER_URL (started by the caller); clients pinned to CPU $CLIENT_CPU"
elif [ "$want" != redis ] && [ -x "$SLSERVER" ] && "$SLSERVER" --help 2>&1 | grep -q -- '--misrouted'; then
  use_slotlane=1
elif [ "$want" = slotlane ]; then
  die "$SLSERVER is missing or has no --misrouted forward"
fi

if [ $given = 1 ]; then
  :
elif [ $use_slotlane = 1 ]; then
  taskset -c "$SERVER_CPU" "$SLSERVER" --shards 4 --port-mode per-shard --misrouted forward \
      --bind "$HOST" --port "$BASE" --cpus "$SERVER_CPU" --durability memory --dir "$WORK" \
      --loglevel warning >"$WORK/slotlane-server.log" 2>&1 &
  SLSERVER_PID=$!
  for i in 0 1 2 3; do
    for _ in $(seq 200); do ping_ok $((BASE + i)) && break; sleep 0.05; done
    ping_ok $((BASE + i)) || die "slotlane-server port $((BASE + i)) does not answer"
  done
  pin "$SLSERVER_PID"
  PLAIN_URL=redis://$HOST:$BASE; CLUSTER_URL=redis://$HOST:$BASE
  DESC="slotlane-server: 4 shards, per-shard, misrouted forward, ports $BASE-$((BASE + 3)), pinned to CPU $SERVER_CPU; plain rows on port $BASE (forwarding); clients pinned to CPU $CLIENT_CPU"
else
  PPORT=$BASE; CPORT=$((BASE + 10))
  STARTED_PLAIN=1
  bash "$ROOT/ci/redis-plain.sh" start "$WORK/plain" "$PPORT" >&2
  pin "$(cat "$WORK/plain/pid")"
  STARTED_CLUSTER=1
  bash "$ROOT/ci/redis-cluster.sh" start "$WORK/cluster" "$CPORT" 3 >&2
  while read -r pid; do [ -n "$pid" ] && pin "$pid"; done < "$WORK/cluster/pids"
  PLAIN_URL=redis://$HOST:$PPORT; CLUSTER_URL=redis://$HOST:$CPORT
  DESC="$(redis-server --version | head -n1): a standalone server on port $PPORT (plain rows) and a 3-primary Redis Cluster on ports $CPORT-$((CPORT + 2)) (cluster and one-node rows), no persistence, every server pinned to CPU $SERVER_CPU; clients pinned to CPU $CLIENT_CPU; the C tool and the C# tool ran one after the other against these same servers (bundled slotlane-server has no --misrouted forward yet)"
fi

mkdir -p "$ROOT/bench/records"
if [ $async = 1 ]; then
  q=()
  for a in "${pass[@]}"; do if [ "$a" = --quick ]; then q+=(--rounds 1 --requests 8192); else q+=("$a"); fi; done
  say "C# tool (Mono), --async-cost"
  cd "$HERE/out/bin"
  exec taskset -c "$CLIENT_CPU" mono Slotlane.Client.Benchmarks.exe --async-cost --plain "$PLAIN_URL" --cluster "$CLUSTER_URL" \
      --json "$JSON_DEST" --server-desc "$DESC" --invocation "csharp/bench.sh${*:+ $*}" "${q[@]}"
fi
fill=()  # the C tool fills the keys with the values the C# tool expects; a given record's run may have been followed by other tools'
if [ -z "$CREC" ]; then
  fill=(--no-fill)
  say "C tool (sl-cluster-cost --clients slotlane)"
  taskset -c "$CLIENT_CPU" "$TOOL" --plain "$PLAIN_URL" --cluster "$CLUSTER_URL" --clients slotlane \
      --json "$WORK/c-record.json" --server-desc "$DESC" --invocation "csharp/bench.sh${*:+ $*}" "${pass[@]}"
  if [ $given = 1 ]; then
    CREC=$WORK/c-record.json  # the caller keeps the records (bench/run.py: the C tool's own run)
  else
    CREC=$ROOT/bench/records/$(hostname)-$(date -u +%Y-%m-%d-%H%M%S)-cluster-cost.json
    while ! ln "$WORK/c-record.json" "$CREC" 2>/dev/null; do sleep 1; CREC=$ROOT/bench/records/$(hostname)-$(date -u +%Y-%m-%d-%H%M%S)-cluster-cost.json; done
    say "C record: $CREC"
  fi
fi

say "C# tool (Mono)"
cd "$HERE/out/bin"
taskset -c "$CLIENT_CPU" mono Slotlane.Client.Benchmarks.exe --cluster-cost --plain "$PLAIN_URL" --cluster "$CLUSTER_URL" \
    "${fill[@]}" --compare "$CREC" --json "$JSON_DEST" --server-desc "$DESC" \
    --invocation "csharp/bench.sh${*:+ $*}" "${pass[@]}"
