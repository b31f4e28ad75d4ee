#!/usr/bin/env bash
# async_syscalls.sh: syscalls and CPU per request of slotlane-load's async engine, two builds
# side by side (e.g. before and after a change to core/src/uv/async.c).
#
#   bash bench/load/async_syscalls.sh BEFORE_BIN AFTER_BIN [ROUNDS]
#
# Starts a 2-shard slotlane-server (build/server/slotlane-server, or $SL_SERVER) on a free
# port in 26800-26899, runs each binary once under `strace -f -c` (syscall counts), then
# ROUNDS (default 5) interleaved rounds without strace (before, after, before, ...) and
# writes bench/records/<host>-<date>-<time>-async-syscalls.json: the strace tables, every
# run's slotlane-load JSON and the per-round CPU ratios (after / before of
# load_cpu_ns_per_req, user+sys), with the load average around each round.
set -euo pipefail
cd "$(dirname "$0")/../.."
BEFORE=${1:?before binary}
AFTER=${2:?after binary}
ROUNDS=${3:-5}
SERVER=${SL_SERVER:-build/server/slotlane-server}
command -v strace >/dev/null || { echo "async_syscalls.sh: strace is not installed" >&2; exit 2; }
for b in "$BEFORE" "$AFTER" "$SERVER"; do [ -x "$b" ] || { echo "async_syscalls.sh: $b is not an executable" >&2; exit 2; }; done
TMP=$(mktemp -d)
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
# Ports: the server's base port and base+1 (2 shards); a free pair in 26800-26899.
PORT=
for p in $(shuf -i 26800-26898 -n 40); do
    if ! ss -ltn | awk '{print $4}' | grep -qE ":($p|$((p + 1)))\$"; then PORT=$p; break; fi
done
[ -n "$PORT" ] || { echo "async_syscalls.sh: no free port pair in 26800-26899" >&2; exit 1; }
"$SERVER" --shards 2 --port "$PORT" >"$TMP/server.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do ss -ltn | grep -q ":$PORT " && break; sleep 0.05; done
ARGS=(--url "127.0.0.1:$PORT" --cluster --threads 1 --conns 25 --pipeline 16 --ratio 1:0 --requests 400000 --key-range 100000)
strace -f -c -o "$TMP/strace-before.txt" "$BEFORE" "${ARGS[@]}" >/dev/null
strace -f -c -o "$TMP/strace-after.txt" "$AFTER" "${ARGS[@]}" >/dev/null
for r in $(seq "$ROUNDS"); do
    cut -d' ' -f1 /proc/loadavg >"$TMP/load-$r"
    "$BEFORE" "${ARGS[@]}" --json "$TMP/before-$r.json" >/dev/null
    "$AFTER" "${ARGS[@]}" --json "$TMP/after-$r.json" >/dev/null
    cut -d' ' -f1 /proc/loadavg >>"$TMP/load-$r"
done
python3 - "$TMP" "$ROUNDS" "$BEFORE" "$AFTER" "$*" <<'EOF'
import datetime, json, os, socket, statistics, subprocess, sys, time
tmp, rounds, before, after, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

def strace_table(path):
    calls = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[-1] != 'total':
            calls[f[-1]] = {'calls': int(f[3]), 'errors': int(f[4]) if len(f) == 6 else 0}
    return calls

rows = []
for r in range(1, rounds + 1):
    b = json.load(open(f'{tmp}/before-{r}.json'))
    a = json.load(open(f'{tmp}/after-{r}.json'))
    la = [float(x) for x in open(f'{tmp}/load-{r}').read().split()]
    rows.append({'round': r, 'loadavg_1m': la, 'before': b, 'after': a,
                 'cpu_ratio': a['results']['load_cpu_ns_per_req'] / b['results']['load_cpu_ns_per_req']})
med = lambda xs: statistics.median(xs)
res = lambda side, k: [row[side]['results'][k] for row in rows]
try:
    commit = subprocess.check_output(['git', 'rev-parse', 'HEAD'], text=True).strip()
    dirty = bool(subprocess.check_output(['git', 'status', '--porcelain'], text=True).strip())
except Exception:
    commit, dirty = 'unknown', None
sb, sa = strace_table(f'{tmp}/strace-before.txt'), strace_table(f'{tmp}/strace-after.txt')
summary = {
    'cpu_ratio_median': med([row['cpu_ratio'] for row in rows]),
    'rounds_after_cheaper': sum(row['cpu_ratio'] < 1 for row in rows),
    'cpu_ns_per_req_median': {'before': med(res('before', 'load_cpu_ns_per_req')), 'after': med(res('after', 'load_cpu_ns_per_req'))},
    'user_s_median': {'before': med(res('before', 'load_user_s')), 'after': med(res('after', 'load_user_s'))},
    'sys_s_median': {'before': med(res('before', 'load_sys_s')), 'after': med(res('after', 'load_sys_s'))},
    'strace_calls': {s: {'before': sb.get(s, {}).get('calls', 0), 'after': sa.get(s, {}).get('calls', 0)}
                     for s in ('epoll_ctl', 'epoll_wait', 'sendto', 'recvfrom', 'writev', 'readv')},
}
host = socket.gethostname()
rec = {'schema': 'slotlane.bench.async-syscalls/1', 'benchmark': 'async-syscalls',
       'tool': 'bench/load/async_syscalls.sh', 'ok': all(row[s]['ok'] for row in rows for s in ('before', 'after')),
       'finished_at': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
       'machine': rows[0]['after']['machine'], 'git': {'commit': commit, 'dirty': dirty},
       'command': ['bash', 'bench/load/async_syscalls.sh'] + argv.split(),
       'binaries': {'before': before, 'after': after},
       'strace': {'before': sb, 'after': sa}, 'rounds': rows, 'summary': summary}
os.makedirs('bench/records', exist_ok=True)
while True:
    name = 'bench/records/%s-%s-async-syscalls.json' % (host, time.strftime('%Y-%m-%d-%H%M%S', time.gmtime()))
    part = name + '.tmp'
    with open(part, 'w') as f:
        json.dump(rec, f, indent=1)
    try:
        os.link(part, name)
        os.unlink(part)
        break
    except FileExistsError:
        os.unlink(part)
        time.sleep(1)
print(name)
print(json.dumps(summary, indent=1))
EOF
