#!/usr/bin/env python3
"""Streams: how the cost of XADD and XRANGE scales with the stream's length, and
slotlane-server (1 shard) against redis-server 7.0.

Part "scale" (slotlane only): a stream filled with N entries (IDs 1-1 .. N-1, one
field, through `redis-cli --pipe`), N = 10,000 and 10,000,000; then per round
`redis-benchmark XADD {s}bench * f v` (appends at the end) and
`redis-benchmark -r N XRANGE {s}bench __rand_int__ + COUNT 10` (10 entries from a
random place). The target: CPU per request at 10 M <= 2x at 10 k.

Part "redis" (both servers, fresh per round): `redis-benchmark XADD {s}bench * f v` at
-P 16 and -P 1, and XREADGROUP + XACK pairs: a stream of entries, one group; `slotlane-load
--stream-pairs` (4 connections, pipelines of 16: each pipeline carries the XACKs of the
IDs the previous one read and 16 `XREADGROUP GROUP g c COUNT 1 STREAMS key >`; every
reply checked). Server CPU per request (per pair for the pairs) is the headline.

The server is pinned to --server-cpu and the load to --load-cpu (taskset); server CPU
is utime + stime of the process from /proc/<pid>/stat around each run; medians of the
rounds; every round is kept in the record (bench/records/<host>-<date>-<time>-server-streams.json).

Usage: server/bench/streams.py [--rounds 3] [--quick]
"""
import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from redis_benchmark import CLK_TCK, ROOT, SERVER, cpu_ns, free_port, git_state, start  # noqa: E402

KEY = "{s}bench"


def load1():
    return float(open("/proc/loadavg").read().split()[0])


def fill(port, n, load_cpu):
    """n entries 1-1 .. n-1 through redis-cli --pipe (the protocol generated here)."""
    p = subprocess.Popen(["taskset", "-c", load_cpu, "redis-cli", "-p", str(port), "--pipe"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    k = KEY.encode()
    head = b"*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n" % (len(k), k)
    chunk = []
    for i in range(1, n + 1):
        idb = b"%d-1" % i
        chunk.append(head + b"$%d\r\n%s\r\n$1\r\nf\r\n$1\r\nv\r\n" % (len(idb), idb))
        if len(chunk) == 100000:
            p.stdin.write(b"".join(chunk))
            chunk = []
    p.stdin.write(b"".join(chunk))
    p.stdin.close()
    out = p.stdout.read().decode()
    p.wait()
    assert "errors: 0" in out, out


def rb(port, args, n, pipeline, load_cpu):
    cmd = ["taskset", "-c", load_cpu, "redis-benchmark", "-p", str(port), "-P", str(pipeline), "-c", "50", "-n", str(n),
           "--csv"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=True)
    rows = [l for l in out.stdout.splitlines() if l.startswith('"') and not l.startswith('"test"')]
    return float(rows[0].split(",")[1].strip('"')), cmd


def measure(pid, fn):
    before = cpu_ns(pid)
    t0 = time.time()
    extra = fn()
    wall = time.time() - t0
    after = cpu_ns(pid)
    return after[0] - before[0], after[1] - before[1], wall, extra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--load-cpu", default="1")
    ap.add_argument("--quick", action="store_true", help="1 round, small sizes (a check that it runs)")
    ap.add_argument("--parts", default="scale,redis")
    args = ap.parse_args()
    if args.quick:
        args.rounds = 1
    sizes = [10_000, 100_000] if args.quick else [10_000, 10_000_000]
    nreq = 20_000 if args.quick else 300_000
    npairs = 5_000 if args.quick else 300_000
    host = socket.gethostname()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []

    def row(**kw):
        user, system = kw.pop("user"), kw.pop("system")
        n = kw["requests"]
        r = dict(kw, load1=load1(), server_cpu_ns_per_req=(user + system) / n, server_user_ns_per_req=user / n,
                 server_sys_ns_per_req=system / n)
        rows.append(r)
        print(f"{r['part']:5} {r.get('server', 'slotlane'):8} {r['op']:22} {r.get('entries', ''):>9} P={r['pipeline']:<2} "
              f"round {r['round']}: {r['server_cpu_ns_per_req']:8.0f} ns/req (user {r['server_user_ns_per_req']:.0f}, "
              f"sys {r['server_sys_ns_per_req']:.0f}) load {r['load1']}", flush=True)

    if "scale" in args.parts:
        for n in sizes:
            port = free_port()
            proc, server_cmd = start("slotlane", port, args.server_cpu)
            try:
                fill(port, n, args.load_cpu)
                for rnd in range(args.rounds):
                    u, s, wall, got = measure(proc.pid, lambda: rb(port, ["XADD", KEY, "*", "f", "v"], nreq, 16, args.load_cpu))
                    row(part="scale", op="XADD", entries=n, pipeline=16, round=rnd + 1, requests=nreq, user=u, system=s,
                        rps=got[0], bench_command=" ".join(got[1]), server_command=" ".join(server_cmd))
                    u, s, wall, got = measure(proc.pid, lambda: rb(
                        port, ["-r", str(n), "XRANGE", KEY, "__rand_int__", "+", "COUNT", "10"], nreq, 16, args.load_cpu))
                    row(part="scale", op="XRANGE COUNT 10", entries=n, pipeline=16, round=rnd + 1, requests=nreq, user=u,
                        system=s, rps=got[0], bench_command=" ".join(got[1]), server_command=" ".join(server_cmd))
            finally:
                proc.terminate()
                proc.wait(timeout=60)

    if "redis" in args.parts:
        for rnd in range(args.rounds):
            for kind in ("slotlane", "redis"):
                for pipeline, n in ((16, nreq), (1, nreq // 6)):
                    port = free_port()
                    proc, server_cmd = start(kind, port, args.server_cpu)
                    try:
                        u, s, wall, got = measure(proc.pid, lambda: rb(port, ["XADD", KEY, "*", "f", "v"], n, pipeline,
                                                                        args.load_cpu))
                        row(part="redis", server=kind, op="XADD", pipeline=pipeline, round=rnd + 1, requests=n, user=u,
                            system=s, rps=got[0], bench_command=" ".join(got[1]), server_command=" ".join(server_cmd))
                    finally:
                        proc.terminate()
                        proc.wait(timeout=60)
                port = free_port()
                proc, server_cmd = start(kind, port, args.server_cpu)
                try:
                    rb(port, ["XADD", KEY, "*", "f", "v"], npairs + 200, 16, args.load_cpu)
                    subprocess.run(["redis-cli", "-p", str(port), "XGROUP", "CREATE", KEY, "g", "0"], check=True,
                                   capture_output=True)
                    load = os.path.join(ROOT, "build", "bench", "slotlane-load")
                    out_json = os.path.join("/tmp", f"streams-pairs-{os.getpid()}.json")
                    drv = ["taskset", "-c", args.load_cpu, load, "--port", str(port), "--threads", "1", "--conns", "4",
                           "--pipeline", "16", "--stream-pairs", KEY, "--requests", str(npairs), "--quiet",
                           "--json", out_json]
                    u, s, wall, _ = measure(proc.pid, lambda: subprocess.run(drv, check=True, stdout=subprocess.DEVNULL))
                    res = json.load(open(out_json))["results"]
                    os.unlink(out_json)
                    assert res["errors"] == 0 and res["get_hits"] == npairs, res
                    row(part="redis", server=kind, op="XREADGROUP+XACK pair", pipeline=16, round=rnd + 1, requests=npairs,
                        user=u, system=s, rps=npairs / wall, bench_command=" ".join(drv), server_command=" ".join(server_cmd))
                    # every entry read was acknowledged but those of each connection's last pipeline
                    pend = subprocess.run(["redis-cli", "-p", str(port), "XPENDING", KEY, "g"], capture_output=True,
                                          text=True).stdout.split()[0]
                    assert int(pend) <= 4 * 16, pend
                finally:
                    proc.terminate()
                    proc.wait(timeout=60)

    def med(sel, field="server_cpu_ns_per_req"):
        vals = [r[field] for r in rows if all(r.get(k) == v for k, v in sel.items())]
        return statistics.median(vals) if vals else None

    summary = {"scale": [], "redis": []}
    for op in ("XADD", "XRANGE COUNT 10"):
        small, big = med({"part": "scale", "op": op, "entries": sizes[0]}), med({"part": "scale", "op": op, "entries": sizes[1]})
        if small:
            summary["scale"].append({"op": op, "entries_small": sizes[0], "entries_big": sizes[1],
                                     "cpu_ns_per_req_small": small, "cpu_ns_per_req_big": big, "ratio": big / small,
                                     "target": "<= 2"})
    for op, pl in (("XADD", 16), ("XADD", 1), ("XREADGROUP+XACK pair", 16)):
        a = {f: med({"part": "redis", "server": "slotlane", "op": op, "pipeline": pl}, f)
             for f in ("server_cpu_ns_per_req", "server_user_ns_per_req", "server_sys_ns_per_req")}
        b = {f: med({"part": "redis", "server": "redis", "op": op, "pipeline": pl}, f)
             for f in ("server_cpu_ns_per_req", "server_user_ns_per_req", "server_sys_ns_per_req")}
        if a["server_cpu_ns_per_req"]:
            summary["redis"].append({"op": op, "pipeline": pl, "slotlane": a, "redis": b,
                                     "cpu_ratio": a["server_cpu_ns_per_req"] / b["server_cpu_ns_per_req"],
                                     "target": "<= 0.9"})
    finished = datetime.datetime.now(datetime.timezone.utc)
    record = {
        "schema": "slotlane.bench.server-streams/1", "benchmark": "server-streams", "tool": "server/bench/streams.py",
        "command": sys.argv, "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"), "git": git_state(),
        "machine": {"hostname": host, "cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_end": open("/proc/loadavg").read().split()[:3]},
        "versions": {"redis_server": subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip(),
                     "slotlane_server": subprocess.run([SERVER, "--version"], capture_output=True, text=True).stdout.strip()},
        "method": __doc__, "rounds": rows, "medians": summary,
    }
    records = os.path.join(ROOT, "bench", "records")
    tmp = os.path.join(records, f".{host}-{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    t = finished
    while True:
        name = os.path.join(records, f"{host}-{t.strftime('%Y-%m-%d-%H%M%S')}-server-streams.json")
        try:
            os.link(tmp, name)
            break
        except FileExistsError:
            t += datetime.timedelta(seconds=1)
    os.unlink(tmp)
    print(json.dumps(summary, indent=1))
    print(f"record: {name}")


if __name__ == "__main__":
    main()
