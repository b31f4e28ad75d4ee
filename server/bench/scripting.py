#!/usr/bin/env python3
"""Scripting benchmark: slotlane-server (1 shard) against redis-server 7.0 running the
same 5-command Lua script, as EVALSHA and as FCALL of the same function.

The script: SET k v, GET k, INCR c, HSET h f v, HGET h f (keys from redis-benchmark's
__rand_int__ over 100,000). redis-benchmark -c 50 with a fixed command line
(`EVALSHA <sha> 3 k:__rand_int__ c:__rand_int__ h:__rand_int__ v`, resp. `FCALL
bench5 3 ...`) at -P 16 and -P 1, one run per op. Each server is pinned to the same
CPU (one at a time), redis-benchmark to the other; the figure is the server's CPU time
(user + system, /proc/<pid>/stat) per request (one request = one script = five
commands), user and system beside it; requests per second secondary. A fresh server
per round and pipeline; three rounds; medians. Every run is checked: the script's
reply on both servers before the load and the keyspace after (every run must have
written keys; a server that errored on the script writes none).

Writes bench/records/<host>-<date>-<HHMMSS>-server-scripting.json and prints the
table for server/README.md.

    make build && python3 server/bench/scripting.py --rounds 3
"""
import argparse
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import benchlib as rb  # noqa: E402
from resp import Conn  # noqa: E402  (the repository's one RESP test client)

SCRIPT = ("redis.call('set', KEYS[1], ARGV[1]) "
          "local v = redis.call('get', KEYS[1]) "
          "redis.call('incr', KEYS[2]) "
          "redis.call('hset', KEYS[3], 'f', v) "
          "return redis.call('hget', KEYS[3], 'f')")
LIBRARY = ("#!lua name=benchlib\n"
           "redis.register_function('bench5', function(KEYS, ARGV) " + SCRIPT + " end)\n")
KEYS = ["k:__rand_int__", "c:__rand_int__", "h:__rand_int__", "v" * 32]


def call(port, *args):
    """One command on a fresh connection: a bulk reply as bytes, a status or error as text."""
    c = Conn(port)
    try:
        return c.call(*args)
    finally:
        c.close()


def run(port, pipeline, argv, n, load_cpu):
    return rb.redis_benchmark(port, load_cpu, ["-P", str(pipeline), "-c", "50", "-r", "100000", "-n", str(n), *argv])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--load-cpu", default="1")
    ap.add_argument("--requests-p16", type=int, default=300_000)
    ap.add_argument("--requests-p1", type=int, default=60_000)
    ap.add_argument("--ops", default="EVALSHA,FCALL", help="comma-separated: EVALSHA, FCALL")
    ap.add_argument("--pipelines", default="16,1", help="comma-separated pipeline depths")
    args = ap.parse_args()
    ops = [o for o in args.ops.upper().split(",") if o in ("EVALSHA", "FCALL")]
    pipelines = [int(p) for p in args.pipelines.split(",")]
    loadavg_at_start = open("/proc/loadavg").read().split()[:3]
    host = socket.gethostname()
    started = datetime.datetime.now(datetime.timezone.utc)
    redis_version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()
    rows = []
    for rnd in range(args.rounds):
        for pipeline in pipelines:
            n = args.requests_p16 if pipeline == 16 else args.requests_p1
            # the servers alternate which runs first, round by round (the machine's load drifts)
            for kind in (("slotlane", "redis") if rnd % 2 == 0 else ("redis", "slotlane")):
                port = rb.free_port()
                proc, server_cmd = rb.start(kind, port, args.server_cpu)
                try:
                    sha = call(port, "SCRIPT", "LOAD", SCRIPT).decode()
                    assert call(port, "FUNCTION", "LOAD", LIBRARY) == b"benchlib"
                    cmds = {"EVALSHA": ["EVALSHA", sha, "3", *KEYS], "FCALL": ["FCALL", "bench5", "3", *KEYS]}
                    for op, argv in ((o, cmds[o]) for o in ops):
                        probe = [a.replace("__rand_int__", "probe") for a in argv]
                        got = call(port, *probe)
                        if got != b"v" * 32:
                            raise SystemExit(f"{kind} {op}: wrong reply {got!r}")
                        call(port, "FLUSHALL")
                        before = rb.cpu_ns(proc.pid)
                        rps, bench_cmd = run(port, pipeline, argv, n, args.load_cpu)
                        after = rb.cpu_ns(proc.pid)
                        keys = call(port, "DBSIZE")
                        if keys < 1000:
                            raise SystemExit(f"{kind} {op}: only {keys} keys after the run (errors?)")
                        user, system = after[0] - before[0], after[1] - before[1]
                        row = {"round": rnd + 1, "server": kind, "op": op, "pipeline": pipeline, "requests": n,
                               "rps": rps, "keys_after": keys, "server_cpu_ns": user + system,
                               "server_cpu_ns_per_req": (user + system) / n, "server_user_ns_per_req": user / n,
                               "server_sys_ns_per_req": system / n,
                               "load1": rb.load1(),
                               "server_command": " ".join(server_cmd), "bench_command": " ".join(bench_cmd)}
                        rows.append(row)
                        print(f"round {rnd + 1} {kind:8} {op:7} P={pipeline:<2} {rps:>9.0f} rps "
                              f"{row['server_cpu_ns_per_req']:8.0f} ns/req (user {row['server_user_ns_per_req']:.0f} "
                              f"sys {row['server_sys_ns_per_req']:.0f}) load {row['load1']}", flush=True)
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
    medians = []
    for pipeline in pipelines:
        for op in ops:
            m = {}
            for kind in ("slotlane", "redis"):
                rs = [r for r in rows if r["server"] == kind and r["op"] == op and r["pipeline"] == pipeline]
                m[kind] = {k: statistics.median(r[k] for r in rs) for k in
                           ("server_cpu_ns_per_req", "server_user_ns_per_req", "server_sys_ns_per_req", "rps")}
            per_round = []
            for rnd in range(args.rounds):
                a = [r for r in rows if r["server"] == "slotlane" and r["op"] == op and r["pipeline"] == pipeline
                     and r["round"] == rnd + 1]
                b = [r for r in rows if r["server"] == "redis" and r["op"] == op and r["pipeline"] == pipeline
                     and r["round"] == rnd + 1]
                if a and b:
                    per_round.append(a[0]["server_cpu_ns_per_req"] / b[0]["server_cpu_ns_per_req"])
            medians.append({"op": op, "pipeline": pipeline, "slotlane": m["slotlane"], "redis": m["redis"],
                            "round_ratios": per_round, "median_round_ratio": statistics.median(per_round),
                            "cpu_ratio": m["slotlane"]["server_cpu_ns_per_req"] / m["redis"]["server_cpu_ns_per_req"],
                            "user_ratio": m["slotlane"]["server_user_ns_per_req"] / m["redis"]["server_user_ns_per_req"],
                            "rps_ratio": m["slotlane"]["rps"] / m["redis"]["rps"]})
    finished = datetime.datetime.now(datetime.timezone.utc)
    record = {
        "schema": "slotlane.bench.server-scripting/1",
        "benchmark": "server-scripting",
        "tool": "server/bench/scripting.py",
        "command": sys.argv,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"),
        "git": rb.git_state(),
        "machine": {"hostname": host, "cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_start": loadavg_at_start,
                    "loadavg_at_end": open("/proc/loadavg").read().split()[:3]},
        "versions": {"redis_server": redis_version,
                     "slotlane_server": subprocess.run([rb.SERVER, "--version"], capture_output=True,
                                                       text=True).stdout.strip()},
        "script": SCRIPT,
        "library": LIBRARY,
        "method": "both servers pinned to CPU %s (one at a time), redis-benchmark -c 50 -r 100000 to CPU %s; server "
                  "CPU (utime+stime, /proc/<pid>/stat) around each run; one request = one script of 5 commands; "
                  "fresh server per round and pipeline; the servers alternate which runs first round by round; "
                  "medians of %d rounds and of the per-round ratios" % (args.server_cpu, args.load_cpu, args.rounds),
        "load_note": "shared machine: see load1 per row; CPU per request is robust to it, requests per second is not",
        "rows": rows,
        "medians": medians,
        "target": "server CPU per request <= 0.9x Redis's",
    }
    name = rb.write_record(record, "server-scripting", host, finished)
    print("\n| op | pipeline | slotlane CPU ns/req (user/sys) | redis CPU ns/req (user/sys) | ratio | user ratio | "
          "slotlane rps | redis rps | per-round ratios (median) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in medians:
        a, b = s["slotlane"], s["redis"]
        print(f"| {s['op']} | {s['pipeline']} | {a['server_cpu_ns_per_req']:.0f} ({a['server_user_ns_per_req']:.0f}/"
              f"{a['server_sys_ns_per_req']:.0f}) | {b['server_cpu_ns_per_req']:.0f} ({b['server_user_ns_per_req']:.0f}/"
              f"{b['server_sys_ns_per_req']:.0f}) | {s['cpu_ratio']:.2f} | {s['user_ratio']:.2f} | {a['rps']:.0f} | "
              f"{b['rps']:.0f} | {' '.join(f'{x:.2f}' for x in s['round_ratios'])} ({s['median_round_ratio']:.2f}) |")
    print(f"\nrecord: {name}")


if __name__ == "__main__":
    main()
