#!/usr/bin/env bash
# bench/load/test_load.sh — smoke test of slotlane-load (about 15 s):
#   1. against a standalone redis-server (ci/redis-plain.sh), plain mode, 1 s, ratio 1:1, with
#      the async engine (the default) and with --sync;
#   2. reply checking: a GET that returns a value the tool did not write, or an error reply
#      (WRONGTYPE), fails the run (exit 1, the message names the key); --no-verify accepts
#      the foreign value;
#   3. against slotlane-server with 2 shards in per-shard mode, --cluster, 1 s, ratio 1:10: the
#      async engine's per-node batches (the default: K x D outstanding on every connection, the
#      key lists covering every key of the range, a node that owns no key of the range left
#      idle and named, and it is the shard that does not hold the key), --mixed-batches, --inflight 3, --sync; by --requests (exact counts, per-node,
#      --eager-send, mixed and sync); the server killed mid-run (per-node and mixed);
#   4. bad flags exit 2 with a message; a dead server exits 1 with a message, no crash; a key
#      range too large for per-node key lists exits 1 naming --mixed-batches.
# Each run's JSON must have ops > 0, zero errors, and GET hits (every GET found the value the
# tool wrote) when the ratio has GETs. Every server started here is stopped by PID on exit,
# failure or Ctrl-C. Ports 26300-26309 (or SL_LOAD_PORT_BASE and the nine after it).
#
#   bench/load/test_load.sh            (SL_BUILD_DIR: the build to test, default build/)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${SL_BUILD_DIR:-$ROOT/build}
LOAD=$BUILD/bench/slotlane-load
SERVER=$BUILD/server/slotlane-server
# SL_LOAD_PORT_BASE: ci/test.sh runs the release and the ASan build's runs at once, on
# 26300-26309 and 26350-26359
BASE=${SL_LOAD_PORT_BASE:-26300}
PLAIN_PORT=$BASE
SHARD_PORT=$((BASE + 2))  # and BASE + 3
DEAD_PORT=$((BASE + 9))   # nothing listens there

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

# check_json FILE ENGINE: ops > 0, zero errors, ok true, GETs hit, the engine as asked
check_json() {
  python3 - "$1" "$2" <<'EOF' || fail "bad result in $1: $(cat "$1")"
import json, sys
j = json.load(open(sys.argv[1]))
r = j["results"]
assert j["schema"] == "slotlane.bench.load/1", j["schema"]
assert j["ok"] is True, "ok is not true"
assert j["config"]["engine"] == sys.argv[2], j["config"]["engine"]
assert r["requests"] > 0 and r["ops_per_s"] > 0, "no requests"
assert r["errors"] == 0 and r["batch_failures"] == 0, f"errors: {r['first_error']}"
assert r["requests"] == r["sets"] + r["gets"] and r["gets"] == r["get_hits"] + r["get_misses"], r
# the fill wrote every key first, so every GET returned the tool's own (checked) value
assert r["gets"] == 0 or (r["get_hits"] == r["gets"] and r["get_misses"] == 0), "GET misses after the fill"
assert r["connections"] == r["nodes"] * j["config"]["threads"] * j["config"]["conns_per_thread"], r
assert r["latency_ms"]["p50"] is not None and r["latency_ms"]["p50"] <= r["latency_ms"]["p99"] <= r["latency_ms"]["p99_9"]
print(f"  ok: {r['ops_per_s']:.0f} ops/s, {r['requests']} requests, p50 {r['latency_ms']['p50']:.3f} ms, "
      f"{r['connections']} connections")
EOF
}

echo "slotlane-load: standalone redis-server"
bash "$ROOT/ci/redis-plain.sh" start "$TMP/redis" "$PLAIN_PORT" >/dev/null
"$LOAD" --port "$PLAIN_PORT" --threads 2 --conns 2 --pipeline 8 --ratio 1:1 --key-range 1000 \
  --test-time 1 --quiet --json "$TMP/plain.json" >/dev/null || fail "run against redis-server"
check_json "$TMP/plain.json" async
"$LOAD" --port "$PLAIN_PORT" --sync --threads 2 --conns 2 --pipeline 8 --ratio 1:1 --key-range 1000 \
  --test-time 1 --quiet --json "$TMP/plain-sync.json" >/dev/null || fail "--sync run against redis-server"
check_json "$TMP/plain-sync.json" sync

echo "slotlane-load: wrong replies fail the run"
cli() { redis-cli -h 127.0.0.1 -p "$PLAIN_PORT" "$@" >/dev/null; }
# expect_wrong WHAT ARGS...: exit 1, a message matching WHAT, the JSON not ok with errors
expect_wrong() {
  local what=$1 out rc=0
  shift
  out=$("$LOAD" --port "$PLAIN_PORT" --threads 1 --conns 2 --pipeline 4 --ratio 0:1 --no-fill \
        --key-range 3 --requests 40 --quiet --json "$TMP/wrong.json" "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 1 ] || fail "a run with wrong replies ($what, $*) exited $rc, not 1"
  grep -qi -- "$what" <<<"$out" || fail "no '$what' in the message: $out"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j['results']; assert j['ok'] is False and r['errors'] == 40, r" \
    "$TMP/wrong.json" || fail "the JSON of a run with wrong replies ($what) does not say so"
  echo "  ok: ${out%%$'\n'*}"
}
# values the tool never writes: right type, wrong bytes (one the tool's length, one not)
cli SET foreign:0 "$(printf 'x%.0s' $(seq 32))"
cli SET foreign:1 "$(printf 'x%.0s' $(seq 32))"
cli SET foreign:2 short
expect_wrong "wrong value" --key-prefix foreign:
# the tool's own value for a key, stored under another key: the value check is per key
"$LOAD" --port "$PLAIN_PORT" --key-prefix own: --key-range 3 --fill-only --quiet || fail "--fill-only"
for k in 0 1 2; do cli SET "moved:$k" "$(redis-cli -h 127.0.0.1 -p "$PLAIN_PORT" GET "own:$(( (k + 1) % 3 ))")"; done
expect_wrong "wrong value" --key-prefix moved:
# an error reply
for k in 0 1 2; do cli RPUSH "list:$k" x; done
expect_wrong "WRONGTYPE" --key-prefix list:
# the tool's own values pass, with the same flags
"$LOAD" --port "$PLAIN_PORT" --threads 1 --conns 2 --pipeline 4 --ratio 0:1 --no-fill --key-range 3 \
  --requests 40 --key-prefix own: --quiet --json "$TMP/own.json" >/dev/null || fail "GETs of the tool's own values failed"
check_json "$TMP/own.json" async
# --no-verify checks reply types only
"$LOAD" --port "$PLAIN_PORT" --threads 1 --pipeline 4 --ratio 0:1 --no-fill --key-range 3 --requests 40 \
  --key-prefix foreign: --no-verify --quiet >/dev/null || fail "--no-verify rejected a foreign value"
echo "  ok: --no-verify accepts foreign values"

echo "slotlane-load: --multi-incr (MULTI, 10 x INCR, EXEC per request)"
"$LOAD" --port "$PLAIN_PORT" --threads 2 --conns 2 --pipeline 3 --multi-incr 10 --key-prefix tx: --key-range 5 \
  --requests 300 --quiet --json "$TMP/tx.json" >/dev/null || fail "--multi-incr run against redis-server"
python3 - "$TMP/tx.json" <<'EOF2' || fail "bad --multi-incr result: $(cat "$TMP/tx.json")"
import json, sys
j = json.load(open(sys.argv[1]))
r = j["results"]
assert j["ok"] is True and j["config"]["multi_incr"] == 10, j["config"]
assert r["requests"] == 300 and r["errors"] == 0 and r["sets"] == 0 and r["gets"] == 0, r
EOF2
sum=0
for k in 0 1 2 3 4; do v=$(redis-cli -h 127.0.0.1 -p "$PLAIN_PORT" GET "tx:$k"); sum=$((sum + ${v:-0})); done
[ "$sum" = 3000 ] || fail "--multi-incr: 300 transactions of 10 INCRs left the keys summing to $sum, not 3000"
echo "  ok: 300 transactions, every reply checked, the keys sum to 3000"
# an INCR that fails inside EXEC (a key holding a list) fails the run
cli RPUSH txbad:0 x
rc=0
out=$("$LOAD" --port "$PLAIN_PORT" --threads 1 --conns 1 --pipeline 1 --multi-incr 10 --key-prefix txbad: \
      --key-range 1 --requests 5 --quiet 2>&1 >/dev/null) || rc=$?
[ "$rc" = 1 ] && grep -q "did not answer an integer" <<<"$out" || fail "--multi-incr on a list key: rc $rc, $out"
echo "  ok: a failed INCR inside EXEC is an error"

echo "slotlane-load: --stream-pairs (XREADGROUP COUNT 1, its XACK in the next pipeline)"
for i in $(seq 1 500); do printf 'XADD pairs:s %d-1 f v\n' "$i"; done | redis-cli -h 127.0.0.1 -p "$PLAIN_PORT" >/dev/null
cli XGROUP CREATE pairs:s g 0
"$LOAD" --port "$PLAIN_PORT" --threads 2 --conns 2 --pipeline 4 --stream-pairs pairs:s --requests 400 --quiet \
  --json "$TMP/pairs.json" >/dev/null || fail "--stream-pairs run against redis-server"
python3 - "$TMP/pairs.json" <<'EOF2' || fail "bad --stream-pairs result: $(cat "$TMP/pairs.json")"
import json, sys
r = json.load(open(sys.argv[1]))["results"]
assert r["requests"] == 400 and r["errors"] == 0 and r["get_hits"] == 400, r
EOF2
pending=$(redis-cli -h 127.0.0.1 -p "$PLAIN_PORT" XPENDING pairs:s g | head -1)
# every read entry acknowledged but those of each handle's last pipeline (4 handles x 4)
[ "$pending" -le 16 ] || fail "--stream-pairs: $pending entries left pending, more than the last pipelines"
[ "$(redis-cli -h 127.0.0.1 -p "$PLAIN_PORT" XINFO GROUPS pairs:s | sed -n 8p)" = "400-1" ] || fail "--stream-pairs: the group did not read 400 entries"
echo "  ok: 400 pairs, every reply checked, $pending pending (the last pipelines)"
echo "slotlane-load --mode blpop|publish (msg_modes.c): every reply and message checked"
"$LOAD" --mode blpop --port "$PLAIN_PORT" --pairs 2 --test-time 0.5 --json "$TMP/blpop.json" >/dev/null ||
  fail "--mode blpop failed: $(cat "$TMP/blpop.json" 2>/dev/null)"
"$LOAD" --mode publish --port "$PLAIN_PORT" --subscribers 3 --publishers 2 --pipeline 8 --test-time 0.5 \
  --json "$TMP/publish.json" >/dev/null || fail "--mode publish failed: $(cat "$TMP/publish.json" 2>/dev/null)"
python3 - "$TMP/blpop.json" "$TMP/publish.json" <<'PY' || fail "message mode records wrong"
import json, sys
b, p = (json.load(open(f)) for f in sys.argv[1:])
assert b["errors"] == 0 and b["ops"] > 0, b
assert p["errors"] == 0 and p["ops"] > 0 and p["deliveries"] == 3 * p["ops"], p
PY
rc=0
out=$("$LOAD" --mode publish --port "$DEAD_PORT" --test-time 0.2 2>&1 >/dev/null) || rc=$?
[ "$rc" = 1 ] && grep -q "cannot connect" <<<"$out" || fail "--mode on a dead port: rc $rc ($out)"
echo "  ok: blpop $(python3 -c "import json;print(json.load(open('$TMP/blpop.json'))['ops'])") ops, publish $(python3 -c "import json;print(json.load(open('$TMP/publish.json'))['ops'])") ops to 3 subscribers"

echo "slotlane-load: slotlane-server, 2 shards per-shard, --cluster"
start_server() {
  "$SERVER" --shards 2 --port "$SHARD_PORT" --loglevel warning >"$TMP/server.log" 2>&1 &
  SV_PID=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$((SHARD_PORT + 1))") 2>/dev/null && return 0
    kill -0 "$SV_PID" 2>/dev/null || fail "slotlane-server exited: $(cat "$TMP/server.log")"
    sleep 0.05
  done
  fail "slotlane-server did not listen on $((SHARD_PORT + 1))"
}
start_server
"$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --threads 2 --conns 2 --pipeline 16 --ratio 1:10 \
  --key-range 5000 --test-time 1 --quiet --json "$TMP/cluster.json" >/dev/null || fail "run against slotlane-server"
check_json "$TMP/cluster.json" async
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j['results']; assert j['config']['batches']=='per-node' and r['nodes']==2 and r['moved']==0 and r['connections']==8 and r['outstanding_per_conn']==16, (j['config'], r)" \
  "$TMP/cluster.json" || fail "cluster run: expected per-node batches, 2 nodes, 8 connections, 16 outstanding per connection and no MOVED"
# per-node batches draw from one key list per node: together the lists hold every key of the
# range, each on the shard that owns it (a shard only stores keys of its slots), so 20,000 SETs
# over 200 keys (about 100 draws per key) leave all 200 keys, found by KEYS on the two shards
"$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --threads 1 --conns 2 --pipeline 7 --ratio 1:0 --key-prefix pn: \
  --key-range 200 --requests 20000 --quiet --json "$TMP/pn.json" >/dev/null || fail "per-node SET run"
n0=$(redis-cli -h 127.0.0.1 -p "$SHARD_PORT" KEYS 'pn:*' | grep -c '^pn:') || true
n1=$(redis-cli -h 127.0.0.1 -p "$((SHARD_PORT + 1))" KEYS 'pn:*' | grep -c '^pn:') || true
[ "$((n0 + n1))" = 200 ] && [ "$n0" -gt 0 ] && [ "$n1" -gt 0 ] || fail "per-node batches wrote $n0 + $n1 of the 200 keys"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; assert r['requests']==20000 and r['errors']==0 and r['moved']==0, r" \
  "$TMP/pn.json" || fail "per-node SET run: expected 20000 requests, no errors, no MOVED"
echo "  ok: per-node batches covered every key ($n0 + $n1 on the two shards), no MOVED"
# one key: one shard owns it, the other shard's connections have nothing to do and stay idle;
# the run still completes its exact count, and the GETs find the key's value
out=$("$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --threads 2 --conns 2 --pipeline 5 --ratio 1:1 --key-range 1 \
  --key-prefix one: --requests 1001 --json "$TMP/one.json" 2>&1 >/dev/null) || fail "per-node run with one key: $out"
# the idle node the tool names must be the shard that does not hold one:0 (its grouping agrees
# with the server's ownership; the core would route the key right even if it did not)
if [ "$(redis-cli -h 127.0.0.1 -p "$SHARD_PORT" KEYS 'one:*')" = "one:0" ]; then idle=$((SHARD_PORT + 1)); else idle=$SHARD_PORT; fi
grep -q "no key of the range is on 127.0.0.1:$idle;" <<<"$out" || fail "per-node run with one key: no note of the idle node $idle ($out)"
check_json "$TMP/one.json" async
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; assert r['requests']==1001 and r['get_hits']==500, r" \
  "$TMP/one.json" || fail "per-node run with one key: expected 1001 requests and 500 GET hits"
"$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --mixed-batches --pipeline-per-node --threads 1 --conns 2 --pipeline 8 \
  --ratio 1:10 --key-range 5000 --no-fill --test-time 1 --quiet --json "$TMP/mixed.json" >/dev/null || fail "--mixed-batches run"
check_json "$TMP/mixed.json" async
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j['results']; assert j['config']['batches']=='mixed' and j['config']['batch']==16 and r['outstanding_per_conn']==8, (j['config'], r)" \
  "$TMP/mixed.json" || fail "--mixed-batches --pipeline-per-node --pipeline 8: expected mixed batches of 16, 8 outstanding"
"$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --threads 1 --conns 3 --inflight 3 --pipeline 8 \
  --pipeline-per-node --ratio 1:10 --key-range 5000 --no-fill --test-time 1 --quiet --json "$TMP/inflight.json" \
  >/dev/null || fail "--inflight 3 run against slotlane-server"
check_json "$TMP/inflight.json" async
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; assert r['connections_per_node']==3 and r['outstanding_per_conn']==24, r" \
  "$TMP/inflight.json" || fail "--inflight 3 --pipeline 8: expected 3 connections per node, 24 outstanding"
"$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --sync --threads 2 --conns 2 --pipeline 16 --ratio 1:10 \
  --key-range 5000 --no-fill --test-time 1 --quiet --json "$TMP/cluster-sync.json" >/dev/null || fail "--sync run against slotlane-server"
check_json "$TMP/cluster-sync.json" sync
for mode in per-node eager mixed sync; do
  flag=; [ $mode = sync ] && flag=--sync; [ $mode = mixed ] && flag=--mixed-batches; [ $mode = eager ] && flag=--eager-send
  "$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster $flag --threads 3 --conns 2 --pipeline 7 --pipeline-per-node \
    --ratio 1:0 --requests 1000 --quiet --json "$TMP/req.json" >/dev/null || fail "run by --requests ($mode)"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; assert r['requests']==1000 and r['sets']==1000 and r['errors']==0, r" \
    "$TMP/req.json" || fail "--requests 1000 did not run exactly 1000 SETs ($mode)"
  echo "  ok: --requests 1000 ran 1000 SETs ($mode)"
done

echo "slotlane-load: the server dies mid-run: errors (exit 1), no crash, no hang"
for mode in per-node mixed; do
  flag=; [ $mode = mixed ] && flag=--mixed-batches
  [ -n "$SV_PID" ] || start_server
  "$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster $flag --threads 2 --conns 2 --inflight 2 --pipeline 8 --ratio 1:1 \
    --key-range 1000 --test-time 2 --timeout-ms 1000 --quiet --json "$TMP/dies.json" >/dev/null 2>"$TMP/dies.err" &
  LOAD_PID=$!
  sleep 0.7
  kill -TERM "$SV_PID"
  wait "$SV_PID" 2>/dev/null || true
  SV_PID=
  rc=0
  t0=$SECONDS
  wait "$LOAD_PID" || rc=$?
  [ "$rc" = 1 ] || fail "server died mid-run ($mode): slotlane-load exited $rc, not 1 ($(cat "$TMP/dies.err"))"
  [ $((SECONDS - t0)) -le 10 ] || fail "server died mid-run ($mode): slotlane-load took $((SECONDS - t0)) s to stop"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j['results']; assert j['ok'] is False and r['requests'] > 0 and r['errors'] > 0 and r['error_kinds']['io'] > 0 and j['config']['batches'] == sys.argv[2], (j['config'], r)" \
    "$TMP/dies.json" "$mode" || fail "server died mid-run ($mode): the JSON does not show the I/O errors"
  # libuv reports a socket error (POLLERR) as UV_EBADF; the core must say what it was instead
  # (a reset, a close, a refused connect), not "bad file descriptor" (core/README.md)
  ! grep -qi "bad file descriptor" "$TMP/dies.err" "$TMP/dies.json" || fail "server died mid-run ($mode): $(grep -hi -m1 "bad file descriptor" "$TMP/dies.err" "$TMP/dies.json")"
  echo "  ok ($mode): $(head -c 200 "$TMP/dies.err")"
done

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
expect2 --inflight 0
expect2 --sync --inflight 2
expect2 --mixed-batches
expect2 --cluster --sync --mixed-batches
expect2 --eager-send=1
# the whole text first: grep -q stops reading at the first match, and under pipefail the
# SIGPIPE that --help's writer then gets would fail the test on a long enough text
help=$("$LOAD" --help) || fail "--help failed"
for f in --inflight --mixed-batches --eager-send --pipeline-per-node; do
  grep -q -- "$f" <<<"$help" || fail "--help does not document $f"
done
echo "  ok"

echo "slotlane-load: a dead server is an error (exit 1), not a crash"
rc=0
out=$("$LOAD" --port "$DEAD_PORT" --test-time 1 --quiet 2>&1 >/dev/null) || rc=$?
[ "$rc" = 1 ] || fail "dead server: exit $rc, not 1 ($out)"
grep -q "cannot connect" <<<"$out" || fail "dead server: no clear message ($out)"
echo "  ok: $out"

echo "slotlane-load: a key range too large for per-node key lists is refused (exit 1)"
start_server
rc=0
out=$("$LOAD" --url "127.0.0.1:$SHARD_PORT" --cluster --key-range 60000000 --no-fill --test-time 1 --quiet 2>&1 >/dev/null) || rc=$?
[ "$rc" = 1 ] && grep -q -- "--mixed-batches" <<<"$out" || fail "--key-range 60000000 per-node: exit $rc ($out)"
echo "  ok: $out"

echo "test_load.sh: all passed"
