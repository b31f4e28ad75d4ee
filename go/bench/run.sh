#!/usr/bin/env bash
# go/bench/run.sh — the Go binding's cluster-cost benchmark (DESIGN.md, "The benchmarks"),
# with go-redis v9 and the C tool (sl-cluster-cost) in the same run, against the same
# servers, one JSON record in bench/records/.
#
#   go/bench/run.sh [--quick] [--slotlane-server] [cluster-cost flags...]
#   go/bench/run.sh --plain URL --cluster URL [--c-record FILE] [--json DEST] [flags...]
#
# With --plain and --cluster (bench/run.py, `make bench`) it starts no server: it runs
# against those URLs, the C tool only when no --c-record FILE is given, and writes its
# record to --json DEST (a FILE or DIR/; default bench/records/).
#
# Servers (stopped by PID at the end, also on failure and Ctrl-C), pinned to CPU 1; the
# tools pinned to CPU 0:
#   plain rows:              a standalone redis-server (Debian's 7.0) — slotlane-server has
#                            no `--misrouted forward` yet, so it cannot serve the plain row;
#   cluster, one-node rows:  a 3-primary Redis Cluster (default), or with --slotlane-server
#                            the bundled slotlane-server, 4 shards, per-shard ports.
# The C tool runs first (its slotlane rows only) and writes its record to a temporary
# file; the Go tool then runs slotlane-go and go-redis rows and copies the C rows into
# its record, so every target compares figures of one run.
#
# Environment: SL_GO_BENCH_PORT (base, default 23400; uses BASE..BASE+19, inside the Go
# binding's 23000-23499), SL_BENCH_SERVER_CPU (1), SL_BENCH_CLIENT_CPU (0).
set -euo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
ROOT=$(cd ../.. && pwd)
BASE=${SL_GO_BENCH_PORT:-23400}
SERVER_CPU=${SL_BENCH_SERVER_CPU:-1}
CLIENT_CPU=${SL_BENCH_CLIENT_CPU:-0}
HOST=127.0.0.1
CTOOL=$ROOT/build/bench/sl-cluster-cost
SLSERVER=$ROOT/build/server/slotlane-server
say() { echo "go/bench/run.sh: $*" >&2; }
die() { say "$*"; exit 1; }

quick=0; use_sl=0; pass=(); PLAIN_URL=""; CLUSTER_URL=""; CREC=""; JSON_DEST=$ROOT/bench/records/
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --slotlane-server) use_sl=1 ;;
    --plain|--cluster|--c-record|--json)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --plain) PLAIN_URL=$2 ;; --cluster) CLUSTER_URL=$2 ;; --c-record) CREC=$2 ;; --json) JSON_DEST=$2 ;;
      esac
      shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) pass+=("$1") ;;
  esac
  shift
done
set -- "${args[@]}"
if [ -n "$PLAIN_URL" ] || [ -n "$CLUSTER_URL" ]; then
  [ -n "$PLAIN_URL" ] && [ -n "$CLUSTER_URL" ] || die "give both --plain URL and --cluster URL"
fi
if [ $quick = 1 ]; then
  timing=(--seconds 1 --warmup 0.3 --rounds 1)
else
  timing=(--seconds 3 --warmup 0.5 --rounds 3)
fi

WORK=$(mktemp -d /tmp/slgo-bench.XXXXXX)
SLPID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SLPID" ] && kill -0 "$SLPID" 2>/dev/null; then
    kill -TERM "$SLPID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$SLPID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$SLPID" 2>/dev/null || true
  fi
  bash "$ROOT/ci/redis-plain.sh" stop "$WORK/plain" >/dev/null 2>&1 || true
  bash "$ROOT/ci/redis-cluster.sh" stop "$WORK/cluster" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'say interrupted; exit 130' INT
trap 'say terminated; exit 143' TERM

pin() { taskset -a -p -c "$SERVER_CPU" "$1" >/dev/null || die "taskset of pid $1 failed"; }

[ -x "$CTOOL" ] || { say "building sl-cluster-cost"; cmake -S "$ROOT" -B "$ROOT/build" >/dev/null; cmake --build "$ROOT/build" -j2 --target sl-cluster-cost; }
say "building the Go tool"
go build -o "$WORK/cluster-cost" ./cmd/cluster-cost

if [ -n "$PLAIN_URL" ]; then
  DESC="the servers given by --plain $PLAIN_URL --cluster $CLUSTER_URL (started by the caller); the tools pinned to CPU $CLIENT_CPU"
else
PPORT=$BASE
bash "$ROOT/ci/redis-plain.sh" start "$WORK/plain" "$PPORT" >&2
pin "$(cat "$WORK/plain/pid")"
PLAIN_URL=redis://$HOST:$PPORT
if [ $use_sl = 1 ]; then
  [ -x "$SLSERVER" ] || die "$SLSERVER is not built"
  CPORT=$((BASE + 10))
  taskset -c "$SERVER_CPU" "$SLSERVER" --shards 4 --port-mode per-shard --bind $HOST --port "$CPORT" \
    >"$WORK/slotlane-server.log" 2>&1 &
  SLPID=$!
  for i in 0 1 2 3; do
    for _ in $(seq 200); do [ "$(redis-cli -p $((CPORT + i)) ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
  done
  pin "$SLPID"
  CDESC="slotlane-server $("$SLSERVER" --version 2>/dev/null | head -n1): 4 shards, per-shard ports $CPORT-$((CPORT + 3)), memory durability"
else
  CPORT=$((BASE + 10))
  bash "$ROOT/ci/redis-cluster.sh" start "$WORK/cluster" "$CPORT" 3 >&2
  while read -r pid; do [ -n "$pid" ] && pin "$pid"; done < "$WORK/cluster/pids"
  CDESC="a 3-primary Redis Cluster ($(redis-server --version | awk '{print $3}')) on ports $CPORT-$((CPORT + 2)), no persistence"
fi
CLUSTER_URL=redis://$HOST:$CPORT
DESC="plain rows: a standalone $(redis-server --version | awk '{print $1, $2, $3}') on port $PPORT (slotlane-server has no misrouted=forward yet); cluster and one-node rows: $CDESC; every server pinned to CPU $SERVER_CPU, the tools to CPU $CLIENT_CPU, one after the other"
fi

if [ -z "$CREC" ]; then
  say "C tool (slotlane rows) on CPU $CLIENT_CPU"
  taskset -c "$CLIENT_CPU" "$CTOOL" --plain "$PLAIN_URL" --cluster "$CLUSTER_URL" --clients slotlane \
    "${timing[@]}" --json "$WORK/c.json" --server-desc "$DESC" --invocation "go/bench/run.sh $*" >&2
  CREC=$WORK/c.json
fi
say "Go tool (slotlane-go and go-redis rows) on CPU $CLIENT_CPU"
mkdir -p "$ROOT/bench/records"
taskset -c "$CLIENT_CPU" "$WORK/cluster-cost" --plain "$PLAIN_URL" --cluster "$CLUSTER_URL" "${timing[@]}" \
  --c-record "$CREC" --json "$JSON_DEST" --server-desc "$DESC" \
  --invocation "go/bench/run.sh${*:+ $*}" "${pass[@]}"
