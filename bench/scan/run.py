#!/usr/bin/env python3
"""bench/scan/run.py — the cluster-wide SCAN benchmark: keys per second and client CPU per
key (user + system, the headline, with both beside it) for a full SCAN of a 3-primary
Redis Cluster, slotlane against each ecosystem's client, rounds interleaved, medians and
per-round ratios, one JSON record in bench/records/ (<host>-<date>-<time>-scan.json).

    build/python-venv/bin/python bench/scan/run.py [--keys 1000000] [--rounds 3] [--count 1000]
                                                   [--langs python,go] [--out bench/records/]

Rows: python — slotlane Client.scan_iter against redis-py's RedisCluster.scan_iter (both in
this process, measured with getrusage around the loop); go — slotlane ScanIter against
go-redis's ForEachMaster + Scan iterator (go/bench/cmd/scan-cost, one process per round,
measuring itself). Every round checks that the client saw exactly the keys the cluster
holds (a full scan on a steady cluster returns each key once); a wrong count fails the row.

Servers: a 3-primary Redis Cluster (ci/redis-cluster.sh) on ports of bench-scan's range in
ci/lib.sh, every node pinned to CPU --server-cpu (1); the clients pinned to --client-cpu (0).
The cluster is stopped at the end, also on failure. The machine is shared: the record keeps
the load average of every round."""
import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python", "bench"))
from cluster_cost import git_info, machine, write_record  # noqa: E402  (the records' shared helpers)

import slotlane  # noqa: E402


def sh(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, text=True, **kw).stdout


def free_block(n):
    out = sh("bash", "-c", ". ci/lib.sh; sl_free_block bench-scan %d" % n, cwd=ROOT)
    return int(out.strip())


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def fill(c, keys, value):
    if c.dbsize() == keys:
        return
    c.flushall()
    for i in range(0, keys, 2000):
        with c.pipeline() as p:
            for k in range(i, min(i + 2000, keys)):
                p.set("sk:%d" % k, value)
            p.execute()
    if c.dbsize() != keys:
        raise RuntimeError("filled %d keys, DBSIZE says %d" % (keys, c.dbsize()))


def timed(fn):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    n = fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return {"keys": n, "wall_s": wall, "user_ns": int((r1.ru_utime - r0.ru_utime) * 1e9),
            "sys_ns": int((r1.ru_stime - r0.ru_stime) * 1e9)}


def python_rows(seed, count):
    import redis
    from redis.cluster import RedisCluster
    host, port = seed.rsplit(":", 1)
    sl = slotlane.Client("redis://" + seed)
    rp = RedisCluster(host=host, port=int(port))
    rows = {
        "slotlane": lambda: sum(1 for _ in sl.scan_iter(count=count)),
        "redis-py": lambda: sum(1 for _ in rp.scan_iter(count=count)),
    }
    versions = {"slotlane": slotlane.__version__, "redis-py": redis.__version__}
    return rows, versions


def go_rows(seed, count, keys, client_cpu):
    exe = os.path.join(tempfile.mkdtemp(prefix="sl-scan-bench-"), "scan-cost")
    subprocess.run(["go", "build", "-o", exe, "./cmd/scan-cost"], cwd=os.path.join(ROOT, "go", "bench"), check=True)

    def one(client):
        def run():
            out = sh("taskset", "-c", str(client_cpu), exe, "-client", client, "-cluster", seed,
                     "-count", str(count), "-want", str(keys))
            return json.loads(out)
        return run
    gomod = open(os.path.join(ROOT, "go", "bench", "go.mod")).read()
    ver = next((ln.split()[-1] for ln in gomod.splitlines() if "go-redis/v9 " in ln), None)
    return {"slotlane-go": one("slotlane"), "go-redis": one("go-redis")}, {"go-redis": ver, "go": sh("go", "version").strip()}


def per_key(r):
    k = max(r["keys"], 1)
    return {"user_ns_per_key": r["user_ns"] / k, "sys_ns_per_key": r["sys_ns"] / k,
            "cpu_ns_per_key": (r["user_ns"] + r["sys_ns"]) / k, "keys_per_s": r["keys"] / r["wall_s"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--value-bytes", type=int, default=16)
    ap.add_argument("--langs", default="python,go")
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "records") + "/")
    args = ap.parse_args()
    langs = [x for x in args.langs.split(",") if x]
    started = datetime.datetime.now(datetime.timezone.utc).isoformat()
    base = free_block(7)
    d = tempfile.mkdtemp(prefix="sl-scan-cluster-")
    seed = "127.0.0.1:%d" % base
    try:
        sh("bash", "ci/redis-cluster.sh", "start", d, str(base), "3", cwd=ROOT)
        pids = [open(os.path.join(d, p.strip(), "pid")).read().strip() for p in open(os.path.join(d, "ports"))]
        for pid in pids:
            sh("taskset", "-a", "-p", "-c", str(args.server_cpu), pid)
        os.sched_setaffinity(0, {args.client_cpu})
        with slotlane.Client("redis://" + seed) as c:
            fill(c, args.keys, b"v" * args.value_bytes)
            info = c.execute_command("INFO", "server", target="127.0.0.1:%d" % base)
            info = info.decode() if isinstance(info, bytes) else str(info)
            server_version = next((ln.split(":", 1)[1].strip() for ln in info.splitlines()
                                   if ln.startswith("redis_version:")), None)
        rows, versions = {}, {}
        pairs = []
        if "python" in langs:
            r, v = python_rows(seed, args.count)
            rows.update(r)
            versions.update(v)
            pairs.append(("python", "slotlane", "redis-py"))
        if "go" in langs:
            r, v = go_rows(seed, args.count, args.keys, args.client_cpu)
            rows.update(r)
            versions.update(v)
            pairs.append(("go", "slotlane-go", "go-redis"))
        rounds = {name: [] for name in rows}
        for rnd in range(args.rounds):
            order = list(rows) if rnd % 2 == 0 else list(reversed(list(rows)))
            for name in order:
                la = load1()
                fn = rows[name]
                r = fn() if name in ("slotlane-go", "go-redis") else timed(fn)
                if r["keys"] != args.keys:
                    raise RuntimeError("%s round %d saw %d keys, the cluster holds %d" % (name, rnd, r["keys"], args.keys))
                r.update(per_key(r))
                r["load1"] = la
                r["round"] = rnd
                rounds[name].append(r)
                print("%-12s round %d: %8.0f keys/s, %7.1f ns CPU/key (user %.1f, sys %.1f), load %.2f"
                      % (name, rnd, r["keys_per_s"], r["cpu_ns_per_key"], r["user_ns_per_key"], r["sys_ns_per_key"], la),
                      flush=True)
        out_rows = []
        for name, rs in rounds.items():
            med = {f: statistics.median(r[f] for r in rs) for f in ("cpu_ns_per_key", "user_ns_per_key", "sys_ns_per_key", "keys_per_s")}
            out_rows.append({"client": name, "rounds": rs, "median": med})
        targets = []
        for lang, ours, theirs in pairs:
            ratios = [a["cpu_ns_per_key"] / b["cpu_ns_per_key"] for a, b in zip(rounds[ours], rounds[theirs])]
            value = statistics.median(ratios)
            targets.append({"name": "%s: %s CPU per key <= 0.5 x %s" % (lang, ours, theirs), "per_round": ratios,
                            "value": value, "limit": 0.5, "met": value <= 0.5})
        rec = {
            "schema": "slotlane.bench.scan/1", "benchmark": "scan", "tool": "bench/scan/run.py", "ok": True,
            "started_at": started, "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "machine": machine(str(args.client_cpu)), "git": git_info(ROOT),
            "versions": dict(versions, server_cluster=server_version),
            "command": [sys.executable] + sys.argv,
            "note": "shared 2-vCPU VM (other engineers' builds and tests run too): see load1 per round",
            "servers": {"description": "3-primary Redis Cluster (ci/redis-cluster.sh), every node pinned to CPU %d"
                        % args.server_cpu, "seed": seed},
            "config": {"keys": args.keys, "value_bytes": args.value_bytes, "count": args.count, "rounds": args.rounds,
                       "client_cpu": args.client_cpu, "order": "interleaved, reversed every other round"},
            "rows": out_rows, "targets": targets,
        }
        path = write_record(rec, args.out, "scan")
        for t in targets:
            print("%s: %.3f (per round %s) %s" % (t["name"], t["value"], ", ".join("%.3f" % x for x in t["per_round"]),
                                                 "met" if t["met"] else "NOT met"))
        print("record:", os.path.relpath(path, ROOT))
    finally:
        subprocess.run(["bash", "ci/redis-cluster.sh", "stop", d], cwd=ROOT, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
