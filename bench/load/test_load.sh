#!/usr/bin/env bash
# bench/load/test_load.sh — smoke test of slotlane-load (about 10 s):
#   1. against a standalone redis-server (ci/redis-plain.sh), plain mode, 1 s, ratio 1:1;
#   2. against slotlane-server with 2 shards in per-shard mode, --cluster, 1 s, ratio 1:10,
#      and once by --requests;
#   3. bad flags exit 2 with a message; a dead server exits 1 with a message, no crash.
# Each run's JSON must have ops > 0 and zero errors. Every server started here is stopped by
# PID on exit, failure or Ctrl-C. Ports 26300-26309.
#
#   bench/load/test_load.sh            (SL_BUILD_DIR: the build to test, default build/)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${SL_BUILD_DIR:-$ROOT/build}
LOAD=$BUILD/bench/slotlane-load
SERVER=$BUILD/server/slotlane-server
PLAIN_PORT=26300
SHARD_PORT=26302          # and 26303
DEAD_PORT=26309           # nothing listens there

fail() { echo "test_load.sh: FAIL: $*" >&2; exit 1; }
[ -x "$LOAD" ] || fail "$LOAD is missing (make build)"
[ -x "$SERVER" ] || fail "$SERVER is missing (make build)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

TMP=$(mktemp -d /tmp/sl-test-load.XXXXXX)
SV_PID=
cleanup() {
  if [ -n "$SV_PID" ] && kill -0 "$SV_PID" 2>/dev/null; then
    kill -TERM "$SV_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SV_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SV_PID" 2>/dev/null || true
  fi
  bash "$ROOT/ci/redis-plain.sh" stop "$TMP/redis" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# check_json FILE: ops > 0, zero errors, ok true
check_json() {
  python3 - "$1" <<'EOF' || fail "bad result in $1: $(cat "$1")"
import json, sys
j = json.load(open(sys.argv[1]))
r = j["results"]
assert j["schema"] == "slotlane.bench.load/1", j["schema"]
assert j["ok"] is True, "ok is not true"
assert r["requests"] > 0 and r["ops_per_s"] > 0, "no requests"
assert r["errors"] == 0 and r["batch_failures"] == 0, f"errors: {r['first_error']}"
assert r["latency_ms"]["p50"] is not None and r["latency_ms"]["p50"] <= r["latency_ms"]["p99"] <= r["latency_ms"]["p99_9"]
print(f"  ok: {r['ops_per_s']:.0f} ops/s, {r['requests']} requests, p50 {r['latency_ms']['p50']:.3f} ms, "
      f"{r['connections']} connections")
EOF
}

echo "slotlane-load: standalone redis-server"
bash "$ROOT/ci/redis-plain.sh" start "$TMP/redis" "$PLAIN_PORT" >/dev/null
"$LOAD" --port "$PLAIN_PORT" --threads 2 --conns 2 --pipeline 8 --ratio 1:1 --key-range 1000 \
  --test-time 1 --quiet --json "$TMP/plain.json" >/dev/null || fail "run against redis-server"
check_json "$TMP/plain.json"

echo "slotlane-load: slotlane-server, 2 shards per-shard, --cluster"
"$SERVER" --shards 2 --port "$SHARD_PORT" --loglevel warning >"$TMP/server.log" 2>&1 &
SV_PID=$!
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$((SHARD_PORT + 1))") 2>/dev/null && break
  kill -0 "$SV_PID" 2>/dev/null || fail "slotlane-server exited: $(cat "$TMP/server.log")"
  sleep 0.05
done
"$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --threads 2 --conns 2 --pipeline 16 --ratio 1:10 \
  --key-range 5000 --test-time 1 --quiet --json "$TMP/cluster.json" >/dev/null || fail "run against slotlane-server"
check_json "$TMP/cluster.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; assert r['nodes']==2 and r['moved']==0, r" \
  "$TMP/cluster.json" || fail "cluster run: expected 2 nodes and no MOVED"
"$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --threads 3 --pipeline 7 --pipeline-per-node --ratio 1:0 \
  --requests 1000 --quiet --json "$TMP/req.json" >/dev/null || fail "run by --requests"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; assert r['requests']==1000 and r['sets']==1000 and r['errors']==0, r" \
  "$TMP/req.json" || fail "--requests 1000 did not run exactly 1000 SETs"
echo "  ok: --requests 1000 ran 1000 SETs"

echo "slotlane-load: bad flags exit 2 with a message"
expect2() {
  local out rc=0
  out=$("$LOAD" "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] || fail "'$*' exited $rc, not 2"
  [ -n "$out" ] || fail "'$*' printed no message"
}
expect2 --bogus
expect2 --threads 0
expect2 --threads abc
expect2 --pipeline
expect2 --ratio 1-10
expect2 --ratio 0:0
expect2 --data-size -5
expect2 --test-time 1 --requests 5
expect2 --url 127.0.0.1:1 --port 2
expect2 --cluster=yes
"$LOAD" --help | grep -q -- "--pipeline-per-node" || fail "--help does not document the flags"
echo "  ok"

echo "slotlane-load: a dead server is an error (exit 1), not a crash"
rc=0
out=$("$LOAD" --port "$DEAD_PORT" --test-time 1 --quiet 2>&1 >/dev/null) || rc=$?
[ "$rc" = 1 ] || fail "dead server: exit $rc, not 1 ($out)"
grep -q "cannot connect" <<<"$out" || fail "dead server: no clear message ($out)"
echo "  ok: $out"

echo "test_load.sh: all passed"
