#!/usr/bin/env python3
"""The data types of issue 24 under load: slotlane-server (1 shard) against
redis-server 7.0 on the same CPU.

Three parts, one record (bench/records/<host>-<date>-<HHMMSS>-server-datatypes.json):

  rows      redis-benchmark -P 16 -c 50 rows of SETBIT, PFADD, GEOADD, and ZADD into a
            sorted set prefilled with 1,000,000 members (random members over 1,000,000,
            so most ZADDs update a member's score: a delete and an insert in the
            skiplist). Server CPU time (user + system from /proc/<pid>/stat) per
            request is the headline, user and system beside it; requests/s secondary.
            A fresh server per round; medians of the rounds.
  scaling   CPU per ZADD into a set of 10,000 members and into one of 1,000,000
            (random members over the set's own size), the ratio of the medians
            (target <= 2), for both servers.
  memory    RSS growth (VmRSS of /proc/<pid>/status) of each server for a 1,000,000-
            member sorted set (members "member:<12 digits>", score i, ZADDs of 1000
            pairs) and
            for a 512 MB bitmap (SETBIT bm 4294967295 1), each from an empty server;
            the ratio slotlane / redis (target 0.7 .. 1.3).

The servers are pinned to --server-cpu, the load to --load-cpu (taskset); the load
average is recorded with every row (the machine is shared). Within a round the servers
run one after another, in the opposite order in every other round (alternated).

  --only zadd   the ZADD-1M row and the scaling part only (no other rows, no memory)
  --baseline B  also runs the slotlane-server binary B (an older build) in the same
                rounds, as server "baseline": before/after under the same conditions
  --callgrind N instructions (Ir) and simulated cache misses per ZADD at 10,000 and
                1,000,000 members, counted by valgrind's callgrind inside sv_cmd_zadd
                (inclusive) over N ZADDs of a fixed random sequence: repeatable where
                seconds are not (within a few %: the skiplist's levels come from a
                time-seeded generator). Instrumentation is switched on after the fill.
  --callgrind-only  only those counts, of this build and of --baseline (a
                server-callgrind-zadd record)

Usage: server/bench/datatypes.py [--rounds 3] [--requests 400000] [--quick] [--only zadd]
                                 [--baseline BIN] [--callgrind 50000]
"""
import argparse
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "server", "tests", "integration"))
from resp import Conn, encode  # noqa: E402
import benchlib  # noqa: E402
from benchlib import cpu_ns, free_port, git_state, load1, stop  # noqa: E402

SERVER = os.environ.get("SV_SERVER_BIN", os.path.join(ROOT, "build", "server", "slotlane-server"))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


BINARIES = {"slotlane": SERVER}


def start(kind, cpu):
    """benchlib.start on a free port: (proc, port, command)."""
    port = benchlib.free_port(21200)
    proc, cmd = benchlib.start(kind, port, cpu, binary=BINARIES.get("baseline"))
    return proc, port, cmd


def fill_zset(port, key, n, batch=1000):
    """ZADD key i member:<i as 12 digits> for i < n (the members redis-benchmark's
    __rand_int__ names), batches of `batch` pairs, pipelined 16 deep."""
    c = Conn(port, timeout=120)
    sent = 0
    pending = 0
    for lo in range(0, n, batch):
        args = ["ZADD", key]
        for i in range(lo, min(n, lo + batch)):
            args += [str(i), f"member:{i:012d}"]  # redis-benchmark's __rand_int__ form
        c.send_raw(encode(args))
        pending += 1
        sent += 1
        if pending == 16:
            for _ in range(pending):
                c.read()
            pending = 0
    for _ in range(pending):
        c.read()
    assert c.call("ZCARD", key) == n
    c.close()


def redis_benchmark(port, cpu, n, args, r):
    cmd = ["taskset", "-c", cpu, "redis-benchmark", "-p", str(port), "-P", "16", "-c", "50", "-n", str(n), "-r", str(r),
           "--csv"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=True)
    rows = [l for l in out.stdout.splitlines() if l.startswith('"') and not l.startswith('"test"')]
    return float(rows[0].split(",")[1].strip('"')), cmd


ROWS = [
    # name, redis-benchmark command, -r, prefill (zset members)
    # __rand_int__ is 12 digits with leading zeros, which no bit offset parser takes:
    # one offset (a bitmap of 125 kB)
    ("SETBIT", ["SETBIT", "bm", "1000000", "1"], 1_000_000, 0),
    ("PFADD", ["PFADD", "hll", "el:__rand_int__"], 1_000_000, 0),
    ("GEOADD", ["GEOADD", "geo", "13.361389", "38.115556", "m:__rand_int__"], 1_000_000, 0),
    ("ZADD-1M", ["ZADD", "z", "__rand_int__", "member:__rand_int__"], 1_000_000, 1_000_000),
]


def measure(kind, cpu, load_cpu, n, bench_args, r, prefill):
    proc, port, server_cmd = start(kind, cpu)
    try:
        if prefill:
            fill_zset(port, "z", prefill)
        before = cpu_ns(proc.pid)
        rps, bench_cmd = redis_benchmark(port, load_cpu, n, bench_args, r)
        after = cpu_ns(proc.pid)
    finally:
        stop(proc)
    user, system = after[0] - before[0], after[1] - before[1]
    return {"server": kind, "requests": n, "rps": rps, "server_cpu_ns_per_req": (user + system) / n,
            "server_user_ns_per_req": user / n, "server_sys_ns_per_req": system / n, "load1": load1(),
            "server_command": " ".join(server_cmd), "bench_command": " ".join(bench_cmd), "prefill": prefill}


def memory(kind, cpu):
    out = {}
    for what in ("zset-1M", "bitmap-512MB"):
        proc, port, _ = start(kind, cpu)
        try:
            c = Conn(port, timeout=120)
            c.call("PING")
            base = rss_kb(proc.pid)
            if what == "zset-1M":
                fill_zset(port, "z", 1_000_000)
            else:
                assert c.call("SETBIT", "bm", "4294967295", "1") == 0
                assert c.call("STRLEN", "bm") == 512 * 1024 * 1024
            time.sleep(0.2)  # let the allocator settle (RSS, not a verdict)
            grown = rss_kb(proc.pid) - base
            c.close()
        finally:
            stop(proc)
        out[what] = {"rss_base_kb": base, "rss_growth_kb": grown}
    return out


def callgrind_zadd(size, n):
    """Ir, D1 and LL data-read misses per ZADD (inside sv_cmd_zadd) into a set of `size`
    members, over n ZADDs of random members and scores from a fixed seed."""
    import random
    port = free_port()
    out = f"/tmp/sv-callgrind-{os.getpid()}-{size}.out"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--cache-sim=yes", "--toggle-collect=sv_cmd_zadd",
           f"--callgrind-out-file={out}", SERVER, "--shards", "1", "--port", str(port), "--loglevel", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1500):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        fill_zset(port, "z", size)
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
        rng = random.Random(24)
        c = Conn(port, timeout=600)
        for lo in range(0, n, 1000):
            batch = b"".join(encode(["ZADD", "z", str(rng.randrange(size)), f"member:{rng.randrange(size):012d}"])
                             for _ in range(min(1000, n - lo)))
            c.send_raw(batch)
            for _ in range(min(1000, n - lo)):
                assert isinstance(c.read(), int)
        c.close()
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
    finally:
        stop(proc)
    events, totals = None, None
    for path in sorted(p for p in os.listdir("/tmp") if p.startswith(os.path.basename(out))):
        with open(os.path.join("/tmp", path)) as f:
            for line in f:
                if line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith("totals:") or line.startswith("summary:"):
                    vals = [int(v) for v in line.split()[1:]]
                    if events and sum(vals) and (totals is None or vals[0] > totals[0]):
                        totals = vals
        os.unlink(os.path.join("/tmp", path))
    per = {e: v / n for e, v in zip(events, totals)}
    return {"members": size, "zadds": n, "ir_per_zadd": per.get("Ir"), "d1_read_misses_per_zadd": per.get("D1mr"),
            "ll_read_misses_per_zadd": per.get("DLmr"), "events_per_zadd": per}


def write_record(record, host, suffix="server-datatypes"):
    return benchlib.write_record(record, suffix, host, datetime.datetime.now(datetime.timezone.utc))


def callgrind_only(args):
    """Instruction and cache-miss counts per ZADD of this build and of --baseline, one
    record (schema slotlane.bench.server-callgrind-zadd/1)."""
    global SERVER
    host = socket.gethostname()
    started = datetime.datetime.now(datetime.timezone.utc)
    n = args.callgrind or 50_000
    builds = {"slotlane": SERVER}
    if args.baseline:
        builds["baseline"] = os.path.abspath(args.baseline)
    counts = {}
    for kind, binary in builds.items():
        SERVER = binary
        counts[kind] = [callgrind_zadd(size, n) for size in (10_000, 1_000_000)]
        for x in counts[kind]:
            print(f"callgrind {kind:8} {x['members']:>7} members: {x['ir_per_zadd']:.0f} Ir/ZADD, "
                  f"D1 read misses {x['d1_read_misses_per_zadd']:.1f}, LL read misses {x['ll_read_misses_per_zadd']:.1f}")
    SERVER = builds["slotlane"]
    record = {
        "schema": "slotlane.bench.server-callgrind-zadd/1", "benchmark": "server-callgrind-zadd",
        "tool": "server/bench/datatypes.py", "command": sys.argv, "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "git": git_state(),
        "machine": {"hostname": host, "cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_end": open("/proc/loadavg").read().split()[:3]},
        "builds": {k: {"binary": v} for k, v in builds.items()}, "baseline_desc": args.baseline_desc,
        "method": callgrind_zadd.__doc__.strip(), "callgrind_zadd": counts,
    }
    print(f"record: {write_record(record, host, 'server-callgrind-zadd')}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=400_000)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--load-cpu", default="1")
    ap.add_argument("--quick", action="store_true", help="one round, 100k requests")
    ap.add_argument("--only", choices=["zadd"], help="zadd: the ZADD-1M row and the scaling part only")
    ap.add_argument("--baseline", help="another slotlane-server binary run in the same rounds (server 'baseline')")
    ap.add_argument("--baseline-desc", default="", help="what the baseline build is (recorded)")
    ap.add_argument("--callgrind", type=int, default=0, metavar="N", help="callgrind counts per ZADD over N ZADDs")
    ap.add_argument("--callgrind-only", action="store_true",
                    help="only the callgrind counts (of the server and of --baseline): a server-callgrind-zadd record")
    args = ap.parse_args()
    if args.callgrind_only:
        callgrind_only(args)
        return
    if args.quick:
        args.rounds, args.requests = 1, 100_000
    kinds = ["slotlane", "redis"]
    if args.baseline:
        BINARIES["baseline"] = os.path.abspath(args.baseline)
        kinds.insert(1, "baseline")
    table = [row for row in ROWS if not args.only or row[0] == "ZADD-1M"]
    host = socket.gethostname()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    for rnd in range(args.rounds):
        order = kinds if rnd % 2 == 0 else kinds[::-1]
        for name, bench_args, r, prefill in table:
            for kind in order:
                row = measure(kind, args.server_cpu, args.load_cpu, args.requests, bench_args, r, prefill)
                row.update(round=rnd + 1, test=name)
                rows.append(row)
                print(f"round {rnd + 1} {kind:8} {name:8} {row['rps']:>10.0f} rps {row['server_cpu_ns_per_req']:7.0f} "
                      f"ns/req (user {row['server_user_ns_per_req']:.0f} sys {row['server_sys_ns_per_req']:.0f}) "
                      f"load {row['load1']}", flush=True)
        for kind in order:
            for size in (10_000, 1_000_000):
                if kind == "redis" and size == 1_000_000:
                    continue  # the ZADD-1M row above
                row = measure(kind, args.server_cpu, args.load_cpu, args.requests,
                              ["ZADD", "z", "__rand_int__", "member:__rand_int__"], size, size)
                row.update(round=rnd + 1, test=f"ZADD-scaling-{size}")
                rows.append(row)
                print(f"round {rnd + 1} {kind} ZADD into {size:>7} members: {row['server_cpu_ns_per_req']:.0f} ns/req", flush=True)
    medians = []
    for name, _, _, _ in table:
        m = {}
        for kind in kinds:
            rs = [r for r in rows if r["test"] == name and r["server"] == kind]
            m[kind] = {k: statistics.median(r[k] for r in rs)
                       for k in ("server_cpu_ns_per_req", "server_user_ns_per_req", "server_sys_ns_per_req", "rps")}
        medians.append({"test": name, "slotlane": m["slotlane"], "redis": m["redis"],
                        "cpu_ratio": m["slotlane"]["server_cpu_ns_per_req"] / m["redis"]["server_cpu_ns_per_req"],
                        "user_ratio": m["slotlane"]["server_user_ns_per_req"] / m["redis"]["server_user_ns_per_req"],
                        "rps_ratio": m["slotlane"]["rps"] / m["redis"]["rps"]})
        if args.baseline:
            medians[-1]["baseline"] = m["baseline"]
            medians[-1]["cpu_ratio_over_baseline"] = (m["slotlane"]["server_cpu_ns_per_req"] /
                                                      m["baseline"]["server_cpu_ns_per_req"])
            per_round = []
            for rnd in range(1, args.rounds + 1):
                got = {r["server"]: r["server_cpu_ns_per_req"] for r in rows if r["test"] == name and r["round"] == rnd}
                per_round.append({"round": rnd, "slotlane_over_redis": got["slotlane"] / got["redis"],
                                  "slotlane_over_baseline": got["slotlane"] / got["baseline"]})
            medians[-1]["per_round_ratios"] = per_round
    scal = {size: statistics.median(r["server_cpu_ns_per_req"] for r in rows
                                    if r["test"] == f"ZADD-scaling-{size}" and r["server"] == "slotlane")
            for size in (10_000, 1_000_000)}
    redis_10k = statistics.median(r["server_cpu_ns_per_req"] for r in rows
                                  if r["test"] == "ZADD-scaling-10000" and r["server"] == "redis")
    redis_1m = statistics.median(r["server_cpu_ns_per_req"] for r in rows if r["test"] == "ZADD-1M" and r["server"] == "redis")
    base_scal = None
    if args.baseline:
        base_scal = {size: statistics.median(r["server_cpu_ns_per_req"] for r in rows
                                             if r["test"] == f"ZADD-scaling-{size}" and r["server"] == "baseline")
                     for size in (10_000, 1_000_000)}
    mem, mem_ratio = {}, {}
    if not args.only:
        mem = {kind: memory(kind, args.server_cpu) for kind in ("slotlane", "redis")}
        mem_ratio = {w: mem["slotlane"][w]["rss_growth_kb"] / mem["redis"][w]["rss_growth_kb"] for w in mem["slotlane"]}
    cg = [callgrind_zadd(size, args.callgrind) for size in (10_000, 1_000_000)] if args.callgrind else []
    record = {
        "schema": "slotlane.bench.server-datatypes/1", "benchmark": "server-datatypes", "tool": "server/bench/datatypes.py",
        "command": sys.argv, "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git": git_state(),
        "machine": {"hostname": host, "cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_end": open("/proc/loadavg").read().split()[:3]},
        "versions": {"redis_server": subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip(),
                     "slotlane_server": subprocess.run([SERVER, "--version"], capture_output=True, text=True).stdout.strip()},
        "method": __doc__.strip(), "rounds": rows, "medians": medians,
        "zadd_scaling": {"cpu_ns_per_req_10k": scal[10_000], "cpu_ns_per_req_1M": scal[1_000_000],
                         "ratio_1M_over_10k": scal[1_000_000] / scal[10_000],
                         "redis_cpu_ns_per_req_10k": redis_10k, "redis_cpu_ns_per_req_1M": redis_1m,
                         "redis_ratio_1M_over_10k": redis_1m / redis_10k},
        "memory": mem, "memory_ratio_slotlane_over_redis": mem_ratio,
    }
    if args.baseline:
        record["baseline"] = {"binary": BINARIES["baseline"], "desc": args.baseline_desc,
                              "zadd_scaling": {"cpu_ns_per_req_10k": base_scal[10_000], "cpu_ns_per_req_1M": base_scal[1_000_000],
                                               "ratio_1M_over_10k": base_scal[1_000_000] / base_scal[10_000]}}
    if cg:
        record["callgrind_zadd"] = cg
    out = write_record(record, host)
    print("\n| op | slotlane CPU ns/req (user / sys) | redis CPU ns/req (user / sys) | CPU ratio | user ratio | slotlane rps | redis rps |")
    print("|---|---|---|---|---|---|---|")
    for m in medians:
        s, r = m["slotlane"], m["redis"]
        print(f"| {m['test']} | {s['server_cpu_ns_per_req']:.0f} ({s['server_user_ns_per_req']:.0f} / {s['server_sys_ns_per_req']:.0f}) "
              f"| {r['server_cpu_ns_per_req']:.0f} ({r['server_user_ns_per_req']:.0f} / {r['server_sys_ns_per_req']:.0f}) "
              f"| {m['cpu_ratio']:.2f} | {m['user_ratio']:.2f} | {s['rps']:.0f} | {r['rps']:.0f} |")
    print(f"\nZADD CPU/req: 10k members {scal[10_000]:.0f} ns, 1M members {scal[1_000_000]:.0f} ns, "
          f"ratio {scal[1_000_000] / scal[10_000]:.2f}; redis {redis_10k:.0f} / {redis_1m:.0f} ns, ratio {redis_1m / redis_10k:.2f}")
    if base_scal:
        print(f"baseline ZADD CPU/req: 10k {base_scal[10_000]:.0f} ns, 1M {base_scal[1_000_000]:.0f} ns, "
              f"ratio {base_scal[1_000_000] / base_scal[10_000]:.2f}")
    for m in medians:
        if "per_round_ratios" in m:
            print(f"{m['test']}: slotlane / baseline {m['cpu_ratio_over_baseline']:.2f}; per round " +
                  " ".join(f"{x['slotlane_over_redis']:.2f}/{x['slotlane_over_baseline']:.2f}" for x in m["per_round_ratios"]))
    for x in cg:
        print(f"callgrind {x['members']:>7} members: {x['ir_per_zadd']:.0f} Ir/ZADD, D1 read misses {x['d1_read_misses_per_zadd']:.1f}, "
              f"LL read misses {x['ll_read_misses_per_zadd']:.1f}")
    for w in mem_ratio:
        print(f"RSS growth {w}: slotlane {mem['slotlane'][w]['rss_growth_kb']} kB, redis {mem['redis'][w]['rss_growth_kb']} kB, "
              f"ratio {mem_ratio[w]:.2f}")
    print(f"record: {out}")


if __name__ == "__main__":
    main()
