#!/usr/bin/env python3
"""What a cross-shard multi-key command costs the server (fwd_multi.c).

slotlane-server runs with 4 shards, --misrouted forward, all shards pinned to one
CPU (--cpus 0, taskset); the client (Python, pre-encoded pipelines of --depth
commands, every reply checked) runs on another CPU and always talks to shard 0's
port. Each op is measured in three placements of its keys:

  local      every key on shard 0 (the receiving shard): runs in place
  forwarded  every key on shard 1 (one slot each, different slots): one message
  cross      the keys on shards 1, 2, 3 (none on shard 0): coordinated steps

The figure is the server's CPU time (user + system, /proc/<pid>/stat, all threads)
per command; rounds alternate the placements; medians. `x_local` is the median over
the local placement's median of the same op, within this one run. Ops keep the
keyspace steady so every round does the same work: RENAME a->b then b->a, LMOVE
and SMOVE back and forth, SUNIONSTORE of two 10-member sets, SINTER of them, MSETNX
on existing keys (the existence check answers 0); RENAME16 renames 16 independent
key pairs there and back, so consecutive commands share no key (a coordinated
command makes only the later commands that use its keys wait).

Usage: server/bench/multikey.py [--rounds 3] [--requests 30000] [--depth 32]
Writes bench/records/<host>-<date>-<HHMMSS>-server-multikey.json.
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

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "server", "tests", "integration"))
from resp import Conn, encode, key_slot  # noqa: E402

SERVER = os.path.join(ROOT, "build", "server", "slotlane-server")
SHARDS = 4
CLK_TCK = os.sysconf("SC_CLK_TCK")


def owner(k):
    return key_slot(k) * SHARDS // 16384


def key_on(shard, prefix, taken):
    n = 0
    while True:
        k = f"{prefix}:{n}"
        n += 1
        if owner(k) == shard and k not in taken:
            taken.add(k)
            return k


def cpu_ns(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) * 1_000_000_000 // CLK_TCK, int(fields[12]) * 1_000_000_000 // CLK_TCK


def free_port():
    for p in range(21100, 21990, 7):
        ok = True
        for i in range(SHARDS):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p + i))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return p
    raise RuntimeError("no free ports")


def placements(op):
    """Per placement: (setup commands, the repeating cycle of commands, expected replies)."""
    out = {}
    for place, shards in (("local", [0, 0, 0]), ("forwarded", [1, 1, 1]), ("cross", [1, 2, 3])):
        taken = set()
        if op == "RENAME16":  # 16 independent pairs: consecutive commands share no key
            pairs = [(key_on(shards[0], f"{op}-{place}-a{i}", taken), key_on(shards[1], f"{op}-{place}-b{i}", taken))
                     for i in range(16)]
            out[place] = ([["SET", a, "v"] for a, _ in pairs],
                          [["RENAME", a, b] for a, b in pairs] + [["RENAME", b, a] for a, b in pairs], ["OK"] * 32)
            continue
        a, b, d = (key_on(s, f"{op}-{place}-{i}", taken) for i, s in enumerate(shards))
        if op == "GET":
            setup, pair, want = [["SET", a, "v"]], [["GET", a], ["GET", a]], [b"v", b"v"]
        elif op == "RENAME":
            setup, pair, want = [["SET", a, "v"]], [["RENAME", a, b], ["RENAME", b, a]], ["OK", "OK"]
        elif op == "LMOVE":
            setup = [["RPUSH", a] + [str(i) for i in range(100)]]
            pair, want = [["LMOVE", a, b, "LEFT", "RIGHT"], ["LMOVE", b, a, "LEFT", "RIGHT"]], None
        elif op == "SMOVE":
            setup, pair, want = [["SADD", a, "m", "x"]], [["SMOVE", a, b, "m"], ["SMOVE", b, a, "m"]], [1, 1]
        elif op == "SUNIONSTORE":
            setup = [["SADD", a] + [f"m{i}" for i in range(10)], ["SADD", b] + [f"m{i}" for i in range(5, 15)]]
            pair, want = [["SUNIONSTORE", d, a, b]] * 2, [15, 15]
        elif op == "SINTER":
            setup = [["SADD", a] + [f"m{i}" for i in range(10)], ["SADD", b] + [f"m{i}" for i in range(5, 15)]]
            pair, want = [["SINTER", a, b]] * 2, None
        elif op == "MSETNX":
            setup, pair, want = [["SET", a, "1"]], [["MSETNX", a, "2", b, "2", d, "2"]] * 2, [0, 0]
        out[place] = (setup, pair, want)
    return out


OPS = ["GET", "RENAME", "RENAME16", "LMOVE", "SMOVE", "SUNIONSTORE", "SINTER", "MSETNX"]


def run_row(conn, pid, cycle, want, requests, depth):
    # the cycle continues across batch boundaries: batch j starts at j * depth
    L = len(cycle)
    batches = [[cycle[(j * depth + i) % L] for i in range(depth)] for j in range(L)]
    payloads = [b"".join(encode(a) for a in b) for b in batches]
    nb = max(L, requests // depth // L * L)
    load1 = os.getloadavg()[0]
    u0, s0 = cpu_ns(pid)
    t0 = time.monotonic()
    for j in range(nb):
        batch = batches[j % L]
        conn.send_raw(payloads[j % L])
        for i in range(depth):
            r = conn.read()
            w = want[((j % L) * depth + i) % L] if want is not None else None
            if want is not None and r != w:
                raise RuntimeError(f"{batch[i]!r}: {r!r}, expected {w!r}")
            if want is None and (r is None or isinstance(r, str)):
                raise RuntimeError(f"{batch[i]!r}: {r!r}")
    wall = time.monotonic() - t0
    u1, s1 = cpu_ns(pid)
    n = nb * depth
    return {"requests": n, "wall_s": round(wall, 4), "req_per_s": round(n / wall),
            "server_user_ns": u1 - u0, "server_sys_ns": s1 - s0,
            "server_cpu_ns_per_req": round((u1 - u0 + s1 - s0) / n), "server_user_ns_per_req": round((u1 - u0) / n),
            "load1": load1}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=30000)
    ap.add_argument("--depth", type=int, default=32)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    args = ap.parse_args()
    os.sched_setaffinity(0, {int(args.client_cpu)})
    started = datetime.datetime.now(datetime.timezone.utc)
    port = free_port()
    cmd = ["taskset", "-c", args.server_cpu, SERVER, "--shards", str(SHARDS), "--port", str(port),
           "--misrouted", "forward", "--cpus", args.server_cpu, "--loglevel", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port + SHARDS - 1), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        conn = Conn(port, timeout=30)
        plans = {op: placements(op) for op in OPS}
        for op in OPS:
            for place, (setup, _, _) in plans[op].items():
                for c in setup:
                    conn.call(*c)
        results = {(op, place): [] for op in OPS for place in ("local", "forwarded", "cross")}
        for r in range(args.rounds):
            for op in OPS:
                order = ["local", "forwarded", "cross"]
                if r % 2:
                    order.reverse()
                for place in order:
                    _, pair, want = plans[op][place]
                    results[(op, place)].append(run_row(conn, proc.pid, pair, want, args.requests, args.depth))
        for op in OPS:
            base = None
            for place in ("local", "forwarded", "cross"):
                rs = results[(op, place)]
                med = {k: statistics.median(x[k] for x in rs)
                       for k in ("server_cpu_ns_per_req", "server_user_ns_per_req", "req_per_s")}
                if place == "local":
                    base = med["server_cpu_ns_per_req"]
                rows.append({"op": op, "placement": place, "command": plans[op][place][1][0], "rounds": rs,
                             "median": med, "x_local": round(med["server_cpu_ns_per_req"] / base, 2) if base else None})
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    finished = datetime.datetime.now(datetime.timezone.utc)
    host = socket.gethostname()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "server"], capture_output=True,
                                text=True).stdout.strip())
    table = ["| op | placement | server CPU ns/cmd | x local | user ns/cmd | cmd/s |", "|---|---|---|---|---|---|"]
    for row in rows:
        m = row["median"]
        table.append(f"| {row['op']} | {row['placement']} | {m['server_cpu_ns_per_req']:.0f} | {row['x_local']} | "
                     f"{m['server_user_ns_per_req']:.0f} | {m['req_per_s']:.0f} |")
    record = {
        "schema": "slotlane.bench.server-multikey/1", "benchmark": "server-multikey", "tool": "server/bench/multikey.py",
        "ok": True, "started_at": started.isoformat(), "finished_at": finished.isoformat(),
        "machine": {"hostname": host, "cpus": os.cpu_count(), "platform": platform.platform(),
                    "server_cpus": args.server_cpu, "client_cpus": args.client_cpu},
        "git": {"commit": commit if len(commit) == 40 else "unknown", "dirty": dirty},
        "command": sys.argv, "server_command": cmd,
        "config": {"rounds": args.rounds, "requests": args.requests, "depth": args.depth, "shards": SHARDS},
        "method": __doc__.split("Usage:")[0].strip(),
        "rows": rows, "table_markdown": "\n".join(table),
    }
    records = os.path.join(ROOT, "bench", "records")
    tmp = os.path.join(records, f".{host}-{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    t = finished
    try:
        for _ in range(120):
            name = os.path.join(records, f"{host}-{t.strftime('%Y-%m-%d-%H%M%S')}-server-multikey.json")
            try:
                os.link(tmp, name)
                break
            except FileExistsError:
                t += datetime.timedelta(seconds=1)
    finally:
        os.unlink(tmp)
    print("\n".join(table))
    print(f"load average {os.getloadavg()}; record {name}")


if __name__ == "__main__":
    main()
