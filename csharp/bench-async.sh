#!/usr/bin/env bash
# csharp/bench-async.sh [--quick] [tool options...] — the C# async-cost rows (bench/records/README.md,
# "async-cost records"): 64 and 512 concurrent callers each awaiting one GetAsync/SetAsync at a time,
# plain and cluster, beside the blocking Pipeline at depth 16, every reply checked.
#
# Builds the tool (mono-build.sh bench-build), starts one slotlane-server (4 shards, per-shard ports,
# misrouted forward: the plain rows use its first port, the cluster rows the cluster client over all four)
# pinned to CPU $SL_BENCH_SERVER_CPU (0), runs the tool pinned to CPU $SL_BENCH_CLIENT_CPU (1), writes
# bench/records/<host>-<date>-<time>-async-cost-csharp.json and stops the server by PID (also on failure).
# Run it under the bench suite's lock: flock /tmp/suite-bench.lock csharp/bench-async.sh
# Environment: SL_CS_ASYNC_BENCH_PORT (first of 4 ports, default 24730: the bench range 24700-24799).
# Tool options: --rounds R (3), --requests N per row and round (65536; --quick: 1 round of 8192), --callers 64,512.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SLSERVER=${SL_SERVER:-$ROOT/build/server/slotlane-server}
BASE=${SL_CS_ASYNC_BENCH_PORT:-24730}
SERVER_CPU=${SL_BENCH_SERVER_CPU:-0}
CLIENT_CPU=${SL_BENCH_CLIENT_CPU:-1}
HOST=127.0.0.1
say() { echo "csharp/bench-async.sh: $*" >&2; }
die() { say "$*"; exit 1; }

pass=()
for a in "$@"; do
  case "$a" in
    --quick) pass+=(--rounds 1 --requests 8192) ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) pass+=("$a") ;;
  esac
done

bash "$HERE/mono-build.sh" bench-build
[ -x "$SLSERVER" ] || bash "$ROOT/ci/server-bin.sh" >&2
[ -x "$SLSERVER" ] || die "no slotlane-server at $SLSERVER"

WORK=$(mktemp -d /tmp/sl-cs-async-bench.XXXXXX)
PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
ping_ok() { [ "$(redis-cli -h "$HOST" -p "$1" ping 2>/dev/null)" = "PONG" ]; }
for p in $(seq "$BASE" $((BASE + 3))); do
  port_in_use "$p" && die "port $p is in use: set SL_CS_ASYNC_BENCH_PORT to 4 free ports of 24700-24799"
done
taskset -c "$SERVER_CPU" "$SLSERVER" --shards 4 --port-mode per-shard --misrouted forward \
    --bind "$HOST" --port "$BASE" --cpus "$SERVER_CPU" --durability memory --dir "$WORK" \
    --loglevel warning >"$WORK/slotlane-server.log" 2>&1 &
PID=$!
for i in 0 1 2 3; do
  for _ in $(seq 200); do ping_ok $((BASE + i)) && break; kill -0 "$PID" 2>/dev/null || die "slotlane-server exited"; sleep 0.05; done
  ping_ok $((BASE + i)) || die "slotlane-server port $((BASE + i)) does not answer"
done
DESC="slotlane-server ($SLSERVER): 4 shards, per-shard, misrouted forward, ports $BASE-$((BASE + 3)), pinned to CPU $SERVER_CPU; plain rows on port $BASE (forwarding); the client (Mono) pinned to CPU $CLIENT_CPU"

mkdir -p "$ROOT/bench/records"
cd "$HERE/out/bin"
taskset -c "$CLIENT_CPU" mono Slotlane.Client.Benchmarks.exe --async-cost --url "redis://$HOST:$BASE" \
    --json "$ROOT/bench/records/" --server-desc "$DESC" --invocation "csharp/bench-async.sh${*:+ $*}" "${pass[@]}"
