#!/usr/bin/env bash
# ci/bench.sh — the C tool's cluster-cost benchmark of DESIGN.md on its own (with --ir, or
# against Redis). `make bench` runs bench/run.py, which runs this tool and every binding's.
#
#   ci/bench.sh [--redis | --slotlane-server] [--ir] [sl-cluster-cost options...]
#
# Starts the servers, runs build/bench/sl-cluster-cost (client pinned to CPU 0, servers
# to CPU 1), writes one JSON record to bench/records/ (bench/records/README.md), prints
# the table, and stops every server it started — also on failure and on Ctrl-C.
#
# Servers: when build/server/slotlane-server exists and its --help offers
# `--misrouted forward`, one slotlane-server with 4 shards in per-shard mode with
# misrouted = forward: the plain rows use one port of it (the server forwards), the
# cluster and one-node rows discover it. Otherwise (or with --redis) Redis 7:
# a standalone redis-server for the plain rows and a 3-primary Redis Cluster for the
# cluster and one-node rows (ci/redis-plain.sh, ci/redis-cluster.sh).
#
# --ir: afterwards, against the same servers, count instructions per request of every row
# under callgrind (bench/cluster-cost/irprofile.py: one worker, deterministic, immune to the
# noise of a shared VM; adds about 2 minutes) and print where they go.
#
# Every option not listed above goes to sl-cluster-cost (--quick, --rounds, --seconds,
# --rows, --ops, --depths, --workers, --argv, --clients ...; see its --help).
# Default run: about 8 minutes (16 rows x 3 rounds x (1 s warmup + 8 s)); --quick (1 s per
# row): about 1.5 minutes.
#
# Benchmarks of this repository pin clients to CPU 0 and servers to CPU 1, so two at once
# measure each other: the run holds an exclusive flock on $SL_BENCH_LOCK
# (/tmp/slotlane-bench.lock) and waits for it (at most $SL_BENCH_LOCK_WAIT s, default 1800).
# Other runners should take the same lock (`flock /tmp/slotlane-bench.lock CMD`).
#
# Environment: SL_BENCH_PORT (base port, default 24700; the run uses BASE..BASE+19, all
# in 24000-24999), SL_BENCH_SERVER_CPU (1), SL_BENCH_CLIENT_CPU (0), SL_BUILD_DIR (build).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${SL_BUILD_DIR:-$ROOT/build}
TOOL=$BUILD/bench/sl-cluster-cost
SLSERVER=$BUILD/server/slotlane-server
BASE=${SL_BENCH_PORT:-24700}
SERVER_CPU=${SL_BENCH_SERVER_CPU:-1}
CLIENT_CPU=${SL_BENCH_CLIENT_CPU:-0}
HOST=127.0.0.1

say() { echo "bench.sh: $*" >&2; }
die() { say "$*"; exit 1; }

want=auto
ir=0
pass=()
for a in "$@"; do
  case "$a" in
    --redis) want=redis ;;
    --slotlane-server) want=slotlane ;;
    --ir) ir=1 ;;
    -h|--help)
      sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; echo
      [ -x "$TOOL" ] && "$TOOL" --help
      exit 0 ;;
    *) pass+=("$a") ;;
  esac
done

# ------------------------------------------------------------------ build
# (`make bench` has built everything already; run directly, bring the tool up to date)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then cmake -S "$ROOT" -B "$BUILD" >/dev/null; fi
if ! cmake --build "$BUILD" -j2 --target sl-cluster-cost >"${TMPDIR:-/tmp}/sl-bench-build.$$.log" 2>&1; then
  cat "${TMPDIR:-/tmp}/sl-bench-build.$$.log" >&2
  [ -x "$TOOL" ] || { rm -f "${TMPDIR:-/tmp}/sl-bench-build.$$.log"; die "building sl-cluster-cost failed"; }
  say "building sl-cluster-cost failed; running the existing $TOOL"
fi
rm -f "${TMPDIR:-/tmp}/sl-bench-build.$$.log"
[ -x "$TOOL" ] || die "$TOOL was not built"

# ------------------------------------------------------------------ one benchmark at a time
LOCK=${SL_BENCH_LOCK:-/tmp/slotlane-bench.lock}
exec 9>>"$LOCK"
if ! flock -n 9; then
  say "another benchmark holds $LOCK; waiting (at most ${SL_BENCH_LOCK_WAIT:-1800} s)"
  flock -w "${SL_BENCH_LOCK_WAIT:-1800}" 9 || die "gave up waiting for $LOCK"
fi

# ------------------------------------------------------------------ cleanup
WORK=$(mktemp -d /tmp/sl-bench.XXXXXX)
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
pin() { # pin every thread of a server process to SERVER_CPU
  taskset -a -p -c "$SERVER_CPU" "$1" >/dev/null || die "taskset of pid $1 failed"
}

for p in $(seq "$BASE" $((BASE + 19))); do
  port_in_use "$p" && die "port $p is in use: set SL_BENCH_PORT to a free range of 20 ports in 24000-24999"
done

# ------------------------------------------------------------------ servers
use_slotlane=0
if [ "$want" != redis ] && [ -x "$SLSERVER" ]; then
  help=$("$SLSERVER" --help 2>&1 || true)
  if grep -q -- '--misrouted' <<<"$help" && grep -q 'forward' <<<"$help"; then
    use_slotlane=1
  elif [ "$want" = slotlane ]; then
    die "$SLSERVER has no --misrouted forward"
  fi
elif [ "$want" = slotlane ]; then
  die "$SLSERVER is not built"
fi

if [ $use_slotlane = 1 ]; then
  # 4 shards, per-shard ports BASE..BASE+3, keys of other shards forwarded to their owner.
  # (flags as in slotlane-server --help; --misrouted is the one still to come)
  taskset -c "$SERVER_CPU" "$SLSERVER" --shards 4 --port-mode per-shard --misrouted forward \
      --bind "$HOST" --port "$BASE" --cpus "$SERVER_CPU" --durability memory --dir "$WORK" \
      --loglevel warning >"$WORK/slotlane-server.log" 2>&1 9>&- &
  SLSERVER_PID=$!
  for i in 0 1 2 3; do
    for _ in $(seq 200); do ping_ok $((BASE + i)) && break
      kill -0 "$SLSERVER_PID" 2>/dev/null || { tail -n 20 "$WORK/slotlane-server.log" >&2; die "slotlane-server exited"; }
      sleep 0.05; done
    ping_ok $((BASE + i)) || die "slotlane-server shard port $((BASE + i)) does not answer PING"
  done
  pin "$SLSERVER_PID"
  PLAIN_URL=redis://$HOST:$BASE
  CLUSTER_URL=redis://$HOST:$BASE
  DESC="slotlane-server $("$SLSERVER" --version 2>/dev/null | head -n1 || true): 4 shards, port_mode per-shard, misrouted forward, durability memory, ports $BASE-$((BASE + 3)), pinned to CPU $SERVER_CPU; plain rows on port $BASE (forwarding), cluster and one-node rows discover the same process; client pinned to CPU $CLIENT_CPU"
else
  [ -f "$ROOT/ci/redis-plain.sh" ] && [ -f "$ROOT/ci/redis-cluster.sh" ] || die "ci/redis-plain.sh and ci/redis-cluster.sh are needed"
  PPORT=$BASE
  CPORT=$((BASE + 10))
  STARTED_PLAIN=1
  bash "$ROOT/ci/redis-plain.sh" start "$WORK/plain" "$PPORT" >&2 9>&-  # servers must not inherit the lock
  pin "$(cat "$WORK/plain/pid")"
  STARTED_CLUSTER=1
  bash "$ROOT/ci/redis-cluster.sh" start "$WORK/cluster" "$CPORT" 3 >&2 9>&-
  while read -r pid; do [ -n "$pid" ] && pin "$pid"; done < "$WORK/cluster/pids"
  PLAIN_URL=redis://$HOST:$PPORT
  CLUSTER_URL=redis://$HOST:$CPORT
  DESC="$(redis-server --version | head -n1): a standalone server on port $PPORT (plain and hiredis rows) and a 3-primary Redis Cluster on ports $CPORT-$((CPORT + 2)) (cluster and one-node rows), no persistence, every server pinned to CPU $SERVER_CPU; client pinned to CPU $CLIENT_CPU. Plain and one-node rows run against different processes of the same binary (bundled slotlane-server with misrouted forward not available)"
fi

# ------------------------------------------------------------------ run
mkdir -p "$ROOT/bench/records"
say "servers up; running sl-cluster-cost (client on CPU $CLIENT_CPU)"
set +e
taskset -c "$CLIENT_CPU" "$TOOL" --plain "$PLAIN_URL" --cluster "$CLUSTER_URL" \
    --json "$ROOT/bench/records/" --server-desc "$DESC" \
    --invocation "ci/bench.sh${*:+ $*}" "${pass[@]}"
rc=$?
set -e
[ $rc = 0 ] || say "sl-cluster-cost failed (exit $rc)"
if [ $rc = 0 ] && [ $ir = 1 ]; then
  say "instructions per request under callgrind (bench/cluster-cost/irprofile.py)"
  # the same selection of rows as the run (--rows, --ops, --depths, --clients, --argv)
  irargs=()
  for ((i = 0; i < ${#pass[@]}; i++)); do
    case "${pass[$i]}" in
      --rows|--ops|--depths|--clients) irargs+=("${pass[$i]}" "${pass[$((i + 1))]:-}"); i=$((i + 1)) ;;
      --argv) irargs+=(--argv) ;;
    esac
  done
  taskset -c "$CLIENT_CPU" python3 "$ROOT/bench/cluster-cost/irprofile.py" --tool "$TOOL" \
      --plain "$PLAIN_URL" --cluster "$CLUSTER_URL" "${irargs[@]}" || rc=$?
fi
exit $rc
