#!/usr/bin/env python3
"""bench/server/tx.py — what a transaction costs the server (issue 17: MULTI/EXEC of 10 INCRs).

slotlane-server with one shard against redis-server 7.0 on the same CPU, both loaded by
slotlane-load (the core's async engine) with `--multi-incr 10`: every request is MULTI, 10 x
INCR of one random key of --key-range, EXEC, and slotlane-load checks each reply (+OK, 10 x
+QUEUED, an array of 10 consecutive integers: the INCRs ran as one unit). Same connections
(--conns), transactions in flight per connection (--pipeline), keys, request count.

Figures, per round: server CPU time (utime + stime of the server process, all threads, from
/proc/<pid>/stat around the load generator's run) per transaction — the headline, with user
and system beside it — and per command (12 commands a transaction); transactions per second
as slotlane-load reports them. Rounds are round-major (both servers once per round, back to
back, in alternating order), a fresh server per round; the ratio slotlane / redis of CPU per
transaction is taken within each round and its median reported next to the ratio of the
medians. The load average is recorded per run.

Pinning: the server on --server-cpus (default 1), slotlane-load on --load-cpus (default 0).
Writes bench/records/<host>-<date>-<time>-server-tx.json (bench/records/README.md) and prints
a markdown table. Holds the benchmark lock of ci/bench.sh ($SL_BENCH_LOCK). Every server it
starts is stopped by its PID, also on failure and Ctrl-C.

    bench/server/tx.py [--rounds 3] [--requests 200000] [--incrs 10]
"""
import argparse
import datetime as dt
import fcntl
import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serverbench as sb  # noqa: E402  (Server, CPU snapshots, records)

PROG = "tx"
TARGET = 0.9  # slotlane server CPU per transaction <= 0.9 x redis's


def say(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def run_load(a, port, tmpjson):
    cmd = ["taskset", "-c", a.load_cpus, a.slotlane_load, "--host", sb.HOST, "--port", str(port),
           "--threads", "1", "--conns", str(a.conns), "--pipeline", str(a.pipeline), "--multi-incr", str(a.incrs),
           "--key-prefix", "tx:", "--key-range", str(a.key_range), "--requests", str(a.requests), "--quiet",
           "--json", tmpjson]
    return cmd, sb.run_cmd(cmd, 600)


def measure(a, srv, tmpdir):
    tmpjson = os.path.join(tmpdir, "load.json")
    if os.path.exists(tmpjson):
        os.unlink(tmpjson)
    load0 = sb.load1()
    before = sb.cpu_snapshot(srv.pids)
    t0 = time.monotonic()
    cmd, _ = run_load(a, srv.ports[0], tmpjson)
    wall = time.monotonic() - t0
    after = sb.cpu_snapshot(srv.pids)
    with open(tmpjson) as f:
        res = json.load(f)["results"]
    if res.get("errors") or res.get("batch_failures") or res.get("requests") != a.requests:
        raise sb.Failure(f"slotlane-load reported errors: {res.get('first_error')}")
    ut = sum(after[p][0] - before[p][0] for p in srv.pids) / sb.CLK_TCK
    st = sum(after[p][1] - before[p][1] for p in srv.pids) / sb.CLK_TCK
    n = res["requests"]
    per = a.incrs + 2
    return {"transactions": n, "commands": n * per, "wall_s": wall,
            "tx_per_s": res["ops_per_s"],
            "server_user_s": ut, "server_sys_s": st,
            "server_cpu_ns_per_tx": (ut + st) * 1e9 / n,
            "server_user_ns_per_tx": ut * 1e9 / n, "server_sys_ns_per_tx": st * 1e9 / n,
            "server_cpu_ns_per_command": (ut + st) * 1e9 / (n * per),
            "load_avg_1m_before": load0, "load_avg_1m_after": sb.load1(),
            "latency_ms": res.get("latency_ms"), "load_command": cmd}


class Args:
    pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=200000, help="transactions per run")
    p.add_argument("--incrs", type=int, default=10, help="INCRs per transaction")
    p.add_argument("--conns", type=int, default=50)
    p.add_argument("--pipeline", type=int, default=4, help="transactions in flight per connection")
    p.add_argument("--key-range", type=int, default=100000)
    p.add_argument("--server-cpus", default="1")
    p.add_argument("--load-cpus", default="0")
    p.add_argument("--base-port", type=int, default=23400)
    p.add_argument("--outdir", default=os.path.join(sb.ROOT, "bench", "records"))
    p.add_argument("--slotlane-server", default=os.path.join(sb.ROOT, "build", "server", "slotlane-server"))
    p.add_argument("--slotlane-load", default=os.path.join(sb.ROOT, "build", "bench", "slotlane-load"))
    a = p.parse_args()
    signal.signal(signal.SIGTERM, sb.on_signal)
    signal.signal(signal.SIGINT, sb.on_signal)
    lock_path = os.environ.get("SL_BENCH_LOCK", "/tmp/slotlane-bench.lock")
    lock = open(lock_path, "a")
    deadline = time.time() + float(os.environ.get("SL_BENCH_LOCK_WAIT", "1800"))
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.time() > deadline:
                say(f"the benchmark lock {lock_path} stays taken")
                return 1
            time.sleep(2)
    started = dt.datetime.now(dt.timezone.utc).isoformat()
    sargs = Args()
    sargs.slotlane_server = a.slotlane_server
    rows = {"slotlane": [], "redis": []}
    ok = True
    err = None
    with tempfile.TemporaryDirectory(prefix="sl-bench-tx-") as tmpdir:
        for r in range(a.rounds):
            order = ["slotlane", "redis"] if r % 2 == 0 else ["redis", "slotlane"]
            for kind in order:
                srv = sb.Server(kind, 1, "per-shard", a.base_port + 10 * r + (0 if kind == "slotlane" else 5),
                                a.server_cpus, sargs, tmpdir)
                try:
                    srv.start()
                    m = measure(a, srv, tmpdir)
                    m["round"] = r
                    m["server"] = srv.describe()
                    rows[kind].append(m)
                    say(f"round {r} {kind}: {m['server_cpu_ns_per_tx']:.0f} ns CPU/tx "
                        f"({m['server_user_ns_per_tx']:.0f} user, {m['server_sys_ns_per_tx']:.0f} sys), "
                        f"{m['tx_per_s']:.0f} tx/s, load {m['load_avg_1m_before']}")
                except (sb.Failure, sb.Interrupted) as e:
                    ok, err = False, f"round {r} {kind}: {e}"
                    say(err)
                finally:
                    srv.stop()
                if not ok:
                    break
            if not ok:
                break

    def med(kind, field):
        return sb.median([m[field] for m in rows[kind]])

    per_round = [s["server_cpu_ns_per_tx"] / rr["server_cpu_ns_per_tx"]
                 for s, rr in zip(rows["slotlane"], rows["redis"]) if rr["server_cpu_ns_per_tx"]]
    summary = {}
    for kind in rows:
        summary[kind] = {f: med(kind, f) for f in ("server_cpu_ns_per_tx", "server_user_ns_per_tx",
                                                   "server_sys_ns_per_tx", "server_cpu_ns_per_command", "tx_per_s")}
    ratio_med = sb.median(per_round)
    rec = {"schema": "slotlane.bench.server-tx/1", "benchmark": "server-tx", "tool": "bench/server/tx.py",
           "ok": ok and bool(per_round), "error": err, "started_at": started,
           "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
           "machine": dict(sb.machine(), server_cpus=a.server_cpus, load_cpus=a.load_cpus),
           "versions": {"slotlane_server": sb.first_line([a.slotlane_server, "--version"]),
                        "redis_server": sb.first_line(["redis-server", "--version"])},
           "git": sb.git_info(), "command": sys.argv,
           "invocation": os.environ.get("SL_BENCH_INVOCATION"),
           "config": {"rounds": a.rounds, "transactions_per_run": a.requests, "incrs_per_transaction": a.incrs,
                      "commands_per_transaction": a.incrs + 2, "connections": a.conns,
                      "transactions_in_flight_per_connection": a.pipeline, "key_range": a.key_range,
                      "order": "round-major, alternating which server runs first; a fresh server per run"},
           "rows": rows, "summary": summary,
           "ratio_cpu_per_tx_per_round": per_round, "ratio_cpu_per_tx_median_of_rounds": ratio_med,
           "targets": {"server_cpu_per_tx_vs_redis": {"limit": TARGET, "value": ratio_med,
                                                       "met": ratio_med is not None and ratio_med <= TARGET}}}
    path = sb.save_record(a.outdir, "server-tx", rec)
    say(f"record: {path}")
    s, r_ = summary["slotlane"], summary["redis"]
    print("| server | CPU ns/tx (user / sys) | CPU ns/command | tx/s |")
    print("|---|---|---|---|")
    for kind, x in (("slotlane", s), ("redis", r_)):
        if x["server_cpu_ns_per_tx"] is None:
            continue
        print(f"| {kind} | {x['server_cpu_ns_per_tx']:.0f} ({x['server_user_ns_per_tx']:.0f} / "
              f"{x['server_sys_ns_per_tx']:.0f}) | {x['server_cpu_ns_per_command']:.0f} | {x['tx_per_s']:.0f} |")
    print(f"ratio slotlane / redis, CPU per transaction: median of rounds {ratio_med} (rounds {per_round})")
    return 0 if rec["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
