#!/usr/bin/env bash
# Integration tests of slotlane-server (server/). Builds nothing: uses the binaries
# `make build` (and `make build-asan`, for the bad-input test) produced. Every server
# runs on free loopback ports in 21000-21999 and is stopped by PID, also on failure.
SL_SUITE=server
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
BIN=$SL_ROOT/build/server/slotlane-server
export SV_SERVER_BIN=$BIN

[ -x "$BIN" ] || die "$BIN is missing (run make build first)"
for tool in redis-server redis-cli redis-benchmark python3; do
  command -v "$tool" >/dev/null || { echo "test-server: $tool is required" >&2; exit 1; }
done
python3 -c 'import redis, pytest' || { echo "test-server: python3 needs redis and pytest" >&2; exit 1; }

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    # the pytest run is its own process group: stop it and every server it started
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
sl_on_exit cleanup

port_free() { sl_port_free "$1"; }

# --- smoke test in shell: 3 shards, redis-cli -c follows MOVED across them ---
echo "--- smoke: redis-cli -c against 3 shards"
for attempt in $(seq 1 50); do
  base=$((21000 + RANDOM % 990))
  port_free $base && port_free $((base + 1)) && port_free $((base + 2)) || continue
  "$BIN" --shards 3 --port "$base" --loglevel warning &
  SMOKE_PID=$!
  PIDS+=("$SMOKE_PID")
  for i in $(seq 1 100); do
    redis-cli -p $((base + 2)) PING >/dev/null 2>&1 && break
    kill -0 "$SMOKE_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$SMOKE_PID" 2>/dev/null && break
done
kill -0 "$SMOKE_PID"
for k in alpha beta gamma delta epsilon zeta eta theta; do
  [ "$(redis-cli -c -p "$base" SET "$k" "v-$k")" = OK ]
done
for k in alpha beta gamma delta epsilon zeta eta theta; do
  got=$(redis-cli -c -p "$base" GET "$k")
  [ "$got" = "v-$k" ] || { echo "smoke: GET $k gave '$got'" >&2; exit 1; }
done
total=0
for i in 0 1 2; do
  n=$(redis-cli -p $((base + i)) DBSIZE)
  [ "$n" -gt 0 ] || { echo "smoke: shard $i holds no key" >&2; exit 1; }
  total=$((total + n))
done
[ "$total" -eq 8 ] || { echo "smoke: $total keys instead of 8" >&2; exit 1; }
kill -TERM "$SMOKE_PID"
wait "$SMOKE_PID"   # exits 0 after a clean shutdown (set -e fails otherwise)
echo "smoke: ok"

# --- the pytest suites: cluster clients, protocol, process, differential, bad input ---
echo "--- pytest server/tests/integration"
setsid timeout 900 python3 -m pytest -q -p no:cacheprovider server/tests/integration &
PYTEST_PID=$!
PIDS+=("$PYTEST_PID")
wait "$PYTEST_PID"
