#!/usr/bin/env python3
"""Durability benchmark of slotlane-server (--durability memory|everysec|always).

Part 1, the cost of the log: redis-benchmark SET (-c 50 -d 32 -r 100000) at -P 16 and
-P 1 against slotlane-server with one shard in each durability mode, and against
redis-server 7.0 with appendonly no / appendfsync everysec / always, a fresh server
and an empty directory per run, server pinned to one CPU and the load to the other.
The figure is the server's CPU time (user + system, /proc/<pid>/stat) per request;
ratios are taken within this run (medians over the rounds).

Part 2, the stall of a rewrite: 200,000 keys in one shard (everysec), one client doing
PING in a loop, BGREWRITEAOF; the longest PING round trip during the rewrite against
the longest before it, and the server's own fork and switch times (INFO persistence).

Writes bench/records/<host>-<date>-<HHMMSS>-server-durability.json (schema in
bench/records/README.md) and prints the tables for server/README.md.

    make build && python3 server/bench/durability.py --rounds 3
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import redis_benchmark as rb  # noqa: E402  (free_port, cpu_ns, bench_one, git_state)
from resp import Conn, encode  # noqa: E402  (the repository's one RESP test client)

SERVER = rb.SERVER
MODES = ["memory", "everysec", "always"]


def start(kind, mode, port, cpu, d):
    if kind == "slotlane":
        cmd = [SERVER, "--shards", "1", "--port", str(port), "--cpus", cpu, "--loglevel", "warning",
               "--durability", mode, "--dir", d]
    else:
        aof = ["--appendonly", "no"] if mode == "memory" else ["--appendonly", "yes", "--appendfsync", mode,
                                                               "--auto-aof-rewrite-percentage", "100"]
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", d,
               "--logfile", "/dev/null", *aof]
    cmd = ["taskset", "-c", cpu, *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, cmd
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"{cmd} exited with {proc.returncode}")
            time.sleep(0.02)
    proc.kill()
    raise RuntimeError(f"{kind} did not start")


def info(c):
    raw = c.call("INFO", "persistence").decode()
    return dict(l.split(":", 1) for l in raw.splitlines() if ":" in l)


def stall_round(port, keys):
    c = Conn(port)
    batch = 5000
    for b in range(0, keys, batch):
        c.send_raw(b"".join(encode([b"SET", b"key:%d" % i, b"x" * 32]) for i in range(b, min(keys, b + batch))))
        for _ in range(min(keys, b + batch) - b):
            c.read()
    lat, stop = [], threading.Event()

    def pinger():
        p = Conn(port)
        while not stop.is_set():
            t0 = time.perf_counter()
            p.call("PING")
            lat.append((time.perf_counter(), time.perf_counter() - t0))

    th = threading.Thread(target=pinger, daemon=True)
    th.start()
    time.sleep(1.0)
    t_start = time.perf_counter()
    n0 = int(info(c)["aof_rewrites"])
    assert c.call("BGREWRITEAOF").startswith("Background")
    while True:
        i = info(c)
        if int(i["aof_rewrites"]) > n0 and i["aof_rewrite_in_progress"] == "0":
            break
        time.sleep(0.01)
    t_end = time.perf_counter()
    time.sleep(0.3)
    stop.set()
    th.join(5)
    before = [l for t, l in lat if t < t_start]
    during = [l for t, l in lat if t_start <= t <= t_end + 0.05]
    return {"keys": keys, "rewrite_s": t_end - t_start, "pings_before": len(before), "pings_during": len(during),
            "ping_max_ms_before": max(before) * 1000, "ping_max_ms_during": max(during) * 1000,
            "ping_p99_ms_before": sorted(before)[int(len(before) * 0.99)] * 1000,
            "ping_p99_ms_during": sorted(during)[int(len(during) * 0.99)] * 1000 if during else None,
            "fork_us": int(i["aof_last_fork_usec"]), "switch_us": int(i["aof_last_switch_usec"]),
            "aof_bytes_after": int(i["aof_current_size"]),
            "load1": float(open("/proc/loadavg").read().split()[0])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--load-cpu", default="1")
    ap.add_argument("--requests-p16", type=int, default=400_000)
    ap.add_argument("--requests-p1", type=int, default=60_000)
    ap.add_argument("--stall-keys", type=int, default=200_000)
    args = ap.parse_args()
    host = socket.gethostname()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows, stalls = [], []
    for rnd in range(args.rounds):
        for pipeline in (16, 1):
            n = args.requests_p16 if pipeline == 16 else args.requests_p1
            for kind in ("slotlane", "redis"):
                for mode in MODES:
                    d = tempfile.mkdtemp(prefix="sl-dur-bench-")
                    port = rb.free_port()
                    proc, server_cmd = start(kind, mode, port, args.server_cpu, d)
                    try:
                        before = rb.cpu_ns(proc.pid)
                        rps, bench_cmd = rb.bench_one(port, pipeline, "set", n, args.load_cpu)
                        after = rb.cpu_ns(proc.pid)
                    finally:
                        proc.terminate()
                        proc.wait(timeout=60)
                        shutil.rmtree(d, ignore_errors=True)
                    user, system = after[0] - before[0], after[1] - before[1]
                    row = {"round": rnd + 1, "server": kind, "durability": mode, "pipeline": pipeline, "test": "SET",
                           "requests": n, "rps": rps, "server_cpu_ns_per_req": (user + system) / n,
                           "server_user_ns_per_req": user / n, "server_sys_ns_per_req": system / n,
                           "load1": float(open("/proc/loadavg").read().split()[0]),
                           "server_command": " ".join(server_cmd), "bench_command": " ".join(bench_cmd)}
                    rows.append(row)
                    print(f"round {rnd + 1} {kind:8} {mode:8} P={pipeline:<2} {rps:>9.0f} rps "
                          f"{row['server_cpu_ns_per_req']:7.0f} ns/req", flush=True)
        d = tempfile.mkdtemp(prefix="sl-dur-bench-")
        port = rb.free_port()
        proc, _ = start("slotlane", "everysec", port, args.server_cpu, d)
        try:
            s = stall_round(port, args.stall_keys)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            shutil.rmtree(d, ignore_errors=True)
        s["round"] = rnd + 1
        stalls.append(s)
        print(f"round {rnd + 1} rewrite of {s['keys']} keys: {s['rewrite_s']:.2f} s, PING max "
              f"{s['ping_max_ms_during']:.1f} ms during / {s['ping_max_ms_before']:.1f} ms before, fork "
              f"{s['fork_us']} us, switch {s['switch_us']} us", flush=True)
    medians = []
    for pipeline in (16, 1):
        for kind in ("slotlane", "redis"):
            base = None
            for mode in MODES:
                rs = [r for r in rows if r["server"] == kind and r["durability"] == mode and r["pipeline"] == pipeline]
                m = {"server": kind, "durability": mode, "pipeline": pipeline,
                     "cpu_ns_per_req": statistics.median(r["server_cpu_ns_per_req"] for r in rs),
                     "user_ns_per_req": statistics.median(r["server_user_ns_per_req"] for r in rs),
                     "rps": statistics.median(r["rps"] for r in rs)}
                base = base or m
                m["cpu_x_memory"] = m["cpu_ns_per_req"] / base["cpu_ns_per_req"]
                medians.append(m)
    for m in medians:
        if m["server"] == "slotlane":
            r = next(x for x in medians if x["server"] == "redis" and x["durability"] == m["durability"]
                     and x["pipeline"] == m["pipeline"])
            m["cpu_x_redis_same_policy"] = m["cpu_ns_per_req"] / r["cpu_ns_per_req"]
    stall_median = {k: statistics.median(s[k] for s in stalls) for k in
                    ("ping_max_ms_during", "ping_max_ms_before", "fork_us", "switch_us", "rewrite_s")}
    finished = datetime.datetime.now(datetime.timezone.utc)
    record = {
        "schema": "slotlane.bench.server-durability/1",
        "benchmark": "server-durability",
        "tool": "server/bench/durability.py",
        "command": sys.argv,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"),
        "git": rb.git_state(),
        "machine": {"hostname": host, "cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_end": open("/proc/loadavg").read().split()[:3]},
        "versions": {"redis_server": subprocess.run(["redis-server", "--version"], capture_output=True,
                                                    text=True).stdout.strip()},
        "method": "SET -c 50 -d 32 -r 100000 with redis-benchmark on CPU %s, the server (one shard) on CPU %s; a "
                  "fresh server and empty --dir per run; server CPU (utime+stime) from /proc/<pid>/stat around the "
                  "run; medians of %d rounds. Rewrite stall: %d keys, a PING loop, BGREWRITEAOF."
                  % (args.load_cpu, args.server_cpu, args.rounds, args.stall_keys),
        "load_note": "the machine is shared with other jobs (see load1 per row): compare ratios within this record",
        "rows": rows,
        "medians": medians,
        "stall_rounds": stalls,
        "stall_median": stall_median,
    }
    records = os.path.join(rb.ROOT, "bench", "records")
    tmp = os.path.join(records, f".{host}-{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    t = finished
    out = None
    try:
        for _ in range(120):
            name = os.path.join(records, f"{host}-{t.strftime('%Y-%m-%d-%H%M%S')}-server-durability.json")
            try:
                os.link(tmp, name)
                out = name
                break
            except FileExistsError:
                t += datetime.timedelta(seconds=1)
    finally:
        os.unlink(tmp)
    print("\n| server | durability | pipeline | CPU ns/req | × memory | × redis same policy | rps |")
    print("|---|---|---|---|---|---|---|")
    for m in medians:
        xr = f"{m['cpu_x_redis_same_policy']:.2f}" if "cpu_x_redis_same_policy" in m else ""
        print(f"| {m['server']} | {m['durability']} | {m['pipeline']} | {m['cpu_ns_per_req']:.0f} | "
              f"{m['cpu_x_memory']:.2f} | {xr} | {m['rps']:.0f} |")
    print(f"\nrewrite stall (medians): {stall_median}")
    print(f"record: {out}")


if __name__ == "__main__":
    sys.exit(main())
