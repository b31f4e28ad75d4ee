"""python python/bench/async_cost.py: the async rows of the Python binding — N concurrent
callers (asyncio tasks, N = 64 and 512) each awaiting one GET or SET at a time, plain and
cluster, against one slotlane-server (4 shards, per-shard ports, misrouted forward: the
cluster-cost setup), with redis.asyncio (redis.asyncio.Redis for plain,
redis.asyncio.cluster.RedisCluster for cluster) and, when it is installed, valkey-glide's
async client measured in the same run, interleaved per round. The same process also runs
the blocking slotlane pipeline at depth 16 (one thread) for the "async user CPU <= 1.5 x
the sync pipeline's" comparison.

Every reply is checked (GET: the value the key was filled with; SET: True / OK); a row with
a wrong or error reply fails instead of reporting a figure. Keys key:0..4095 (the
cluster-cost keys), 32-byte values, filled first.

Figures per request: total CPU (user + system, getrusage of this whole process — the
core's loop thread, redis-py's and GLIDE's threads included), user and system beside it,
requests per second, and latency p50/p99 of the awaits (perf_counter around each one).
Each row runs a fixed number of requests per round; rounds with medians.

    python python/bench/async_cost.py --start-slotlane-server build/server/slotlane-server \\
        --port 24710 --server-cpu 0 --client-cpu 1 --json bench/records/
    python python/bench/async_cost.py --url redis://127.0.0.1:24704 --json DIR/   (a server already
        running, as bench/async/run.py starts it: `make bench`'s async rows)

The JSON record: schema slotlane.bench.async-cost/1 (bench/records/README.md), file
<host>-<date>-<time>-async-cost-python.json.
"""
import argparse
import asyncio
import datetime
import os
import resource
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_cost import OwnSlotlaneServer, find_root, git_info, machine, value_of, write_record  # noqa: E402

import slotlane  # noqa: E402
import slotlane.asyncio as sla  # noqa: E402

SCHEMA = "slotlane.bench.async-cost/1"
TOOL = "python/bench/async_cost.py"
KEYS = 4096


def cpu() -> Tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def fill(url: str) -> None:
    with slotlane.Client(url, cluster=True) as c:
        p = c.pipeline()
        for i in range(KEYS):
            p.set("key:%d" % i, value_of(i))
        assert all(r is True for r in p.execute())


# ------------------------------------------------------------------ the clients
# Each client: an async factory returning (get, set, close); get(key) -> bytes, set(key, v) -> ok.

async def slotlane_client(url: str, cluster: bool) -> Any:
    r = sla.Client(url, cluster=cluster)
    await r.connect()

    async def close() -> None:
        await r.close()
    return r.get, r.set, close, lambda v: v is True


async def redis_py_client(url: str, cluster: bool) -> Any:
    import redis.asyncio as ra
    from redis.asyncio.cluster import RedisCluster
    r = RedisCluster.from_url(url, max_connections=2048) if cluster else ra.Redis.from_url(url, max_connections=2048)
    if cluster:
        await r.initialize()

    async def close() -> None:
        await r.aclose()
    return r.get, r.set, close, lambda v: v is True


async def glide_client(url: str, cluster: bool) -> Any:
    import glide
    host, port = url.rsplit("/", 1)[-1].rsplit(":", 1)
    addr = [glide.NodeAddress(host, int(port))]
    if cluster:
        r = await glide.GlideClusterClient.create(glide.GlideClusterClientConfiguration(addr))
    else:
        r = await glide.GlideClient.create(glide.GlideClientConfiguration(addr))

    async def close() -> None:
        await r.close()
    return r.get, r.set, close, lambda v: v == "OK" or v == b"OK"


CLIENTS: Dict[str, Callable[[str, bool], Any]] = {
    "slotlane-python-asyncio": slotlane_client,
    "redis-py-asyncio": redis_py_client,
    "valkey-glide-asyncio": glide_client,
}


# ------------------------------------------------------------------ one round

async def run_round(factory: Any, url: str, cluster: bool, op: str, n: int, requests: int) -> Dict[str, Any]:
    get, set_, close, set_ok = await factory(url, cluster)
    per_task = requests // n
    lat: List[float] = []
    bad: List[str] = []

    async def caller(t: int) -> None:
        pc = time.perf_counter
        for j in range(per_task):
            i = (t * per_task + j) % KEYS
            key = "key:%d" % i
            t0 = pc()
            if op == "GET":
                v = await get(key)
                ok = v == value_of(i)
            else:
                v = await set_(key, value_of(i))
                ok = set_ok(v)
            lat.append(pc() - t0)
            if not ok and len(bad) < 3:
                bad.append("%s %s -> %r" % (op, key, v))

    try:
        # warm-up: every connection made, every slot known
        await asyncio.gather(*(caller(t) for t in range(min(n, 8))))
        lat.clear()
        u0, s0 = cpu()
        w0 = time.perf_counter()
        load1 = os.getloadavg()[0]
        await asyncio.gather(*(caller(t) for t in range(n)))
        wall = time.perf_counter() - w0
        u1, s1 = cpu()
    finally:
        await close()
    done = per_task * n
    lat.sort()
    return {"requests": done, "wall_s": wall, "user_ns": (u1 - u0) * 1e9, "sys_ns": (s1 - s0) * 1e9,
            "user_ns_per_req": (u1 - u0) * 1e9 / done, "sys_ns_per_req": (s1 - s0) * 1e9 / done,
            "cpu_ns_per_req": ((u1 - u0) + (s1 - s0)) * 1e9 / done, "req_per_s": done / wall,
            "p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6,
            "load1": load1, "errors": bad}


def sync_round(url: str, op: str, requests: int) -> Dict[str, Any]:
    """The blocking slotlane pipeline at depth 16, cluster mode, one thread."""
    with slotlane.Client(url, cluster=True) as c:
        depth = 16
        bad: List[str] = []
        u0, s0 = cpu()
        w0 = time.perf_counter()
        for b in range(requests // depth):
            p = c.pipeline()
            idx = [(b * depth + k) % KEYS for k in range(depth)]
            for i in idx:
                if op == "GET":
                    p.get("key:%d" % i)
                else:
                    p.set("key:%d" % i, value_of(i))
            res = p.execute()
            for i, v in zip(idx, res):
                if (v != value_of(i) if op == "GET" else v is not True) and len(bad) < 3:
                    bad.append("%s key:%d -> %r" % (op, i, v))
        wall = time.perf_counter() - w0
        u1, s1 = cpu()
    done = (requests // depth) * depth
    return {"requests": done, "wall_s": wall, "user_ns_per_req": (u1 - u0) * 1e9 / done,
            "sys_ns_per_req": (s1 - s0) * 1e9 / done, "cpu_ns_per_req": ((u1 - u0) + (s1 - s0)) * 1e9 / done,
            "req_per_s": done / wall, "load1": os.getloadavg()[0], "errors": bad}


def med(rounds: List[Dict[str, Any]], k: str) -> Optional[float]:
    xs = [r[k] for r in rounds if r.get(k) is not None]
    return statistics.median(xs) if xs else None


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start-slotlane-server", metavar="PATH",
                    help="start this slotlane-server (4 shards, per-shard, misrouted forward) on --port")
    ap.add_argument("--url", default=None, help="instead: a slotlane-server the caller started (4 shards, "
                    "per-shard ports, misrouted forward; bench/async/run.py): its first port's URL")
    ap.add_argument("--server-desc", default=None, help="with --url: the server's description for the record")
    ap.add_argument("--port", type=int, default=24710, help="first of the server's 4 ports (bench range 24700-24799)")
    ap.add_argument("--server-cpu", type=int, default=None)
    ap.add_argument("--client-cpu", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=20480, help="requests per row and round")
    ap.add_argument("--callers", default="64,512")
    ap.add_argument("--ops", default="GET,SET")
    ap.add_argument("--rows", default="plain,cluster")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--json", default=None, help="a file, or a directory (bench/records/)")
    args = ap.parse_args(argv)
    if (args.url is None) == (args.start_slotlane_server is None):
        ap.error("give one of --start-slotlane-server PATH and --url URL")
    if args.client_cpu is not None:
        os.sched_setaffinity(0, {args.client_cpu})
    clients = [c for c in args.clients.split(",") if c]
    missing = []
    if "valkey-glide-asyncio" in clients:
        try:
            import glide  # noqa: F401
        except ImportError:
            clients.remove("valkey-glide-asyncio")
            missing.append("valkey-glide-asyncio (pip install valkey-glide)")
    server = OwnSlotlaneServer(args.start_slotlane_server, args.port, args.server_cpu) if args.url is None else None
    if server is None:
        url, desc = args.url, args.server_desc or "the slotlane-server at %s (started by the caller)" % args.url
    else:
        url, _, desc = server.start()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows: Dict[Tuple[str, str, str, int], List[Dict[str, Any]]] = {}
    sync: Dict[str, List[Dict[str, Any]]] = {}
    errors: Dict[Any, str] = {}
    try:
        fill(url)
        for rnd in range(args.rounds):
            for op in args.ops.split(","):
                sync.setdefault(op, []).append(sync_round(url, op, args.requests))
                for row in args.rows.split(","):
                    for n in [int(x) for x in args.callers.split(",")]:
                        order = clients if rnd % 2 == 0 else list(reversed(clients))
                        for cl in order:
                            try:
                                r = asyncio.run(run_round(CLIENTS[cl], url, row == "cluster", op, n, args.requests))
                            except Exception as e:  # a client that fails its row reports no figure
                                errors[(cl, row, op, n)] = "%s: %s" % (type(e).__name__, e)
                                continue
                            if r["errors"]:
                                errors[(cl, row, op, n)] = "wrong replies: %s" % "; ".join(r["errors"])
                            rows.setdefault((cl, row, op, n), []).append(r)
                            print("round %d %-26s %-7s %s N=%-4d cpu %7.0f ns/req (user %6.0f) %8.0f req/s p50 %6.0f us p99 %7.0f us"
                                  % (rnd, cl, row, op, n, r["cpu_ns_per_req"], r["user_ns_per_req"], r["req_per_s"],
                                     r["p50_us"], r["p99_us"]), flush=True)
    finally:
        if server is not None:
            server.stop()
    out_rows = []
    for (cl, row, op, n), rounds in rows.items():
        err = errors.get((cl, row, op, n))
        m = {k: med(rounds, k) for k in ("cpu_ns_per_req", "user_ns_per_req", "sys_ns_per_req", "req_per_s", "p50_us", "p99_us")}
        out_rows.append({"client": cl, "row": row, "op": op, "callers": n, "ok": err is None, "error": err,
                         "rounds": rounds, "median": None if err else m})
    for (cl, row, op, n), err in errors.items():
        if (cl, row, op, n) not in rows:
            out_rows.append({"client": cl, "row": row, "op": op, "callers": n, "ok": False, "error": err,
                             "rounds": [], "median": None})
    sync_rows = [{"client": "slotlane-python-sync-pipeline", "row": "cluster", "op": op, "depth": 16,
                  "ok": not any(r["errors"] for r in rs), "rounds": rs,
                  "median": {k: med(rs, k) for k in ("cpu_ns_per_req", "user_ns_per_req", "sys_ns_per_req", "req_per_s")}}
                 for op, rs in sync.items()]

    def m_of(cl: str, row: str, op: str, n: int, k: str) -> Optional[float]:
        for r in out_rows:
            if (r["client"], r["row"], r["op"], r["callers"]) == (cl, row, op, n) and r["median"]:
                return r["median"][k]
        return None
    targets = []
    for r in out_rows:
        if r["client"] != "slotlane-python-asyncio" or not r["median"]:
            continue
        for other in ("redis-py-asyncio", "valkey-glide-asyncio"):
            o = m_of(other, r["row"], r["op"], r["callers"], "cpu_ns_per_req")
            if o:
                v = r["median"]["cpu_ns_per_req"] / o
                targets.append({"name": "total CPU/req <= 0.5 x %s" % other, "row": r["row"], "op": r["op"],
                                "callers": r["callers"], "value": v, "limit": 0.5, "met": v <= 0.5})
        s = next((x for x in sync_rows if x["op"] == r["op"]), None)
        if s and s["median"]["user_ns_per_req"]:
            v = r["median"]["user_ns_per_req"] / s["median"]["user_ns_per_req"]
            targets.append({"name": "user CPU/req <= 1.5 x the sync pipeline at depth 16", "row": r["row"],
                            "op": r["op"], "callers": r["callers"], "value": v, "limit": 1.5, "met": v <= 1.5})
    root = find_root()
    rec = {"schema": SCHEMA, "benchmark": "async-cost", "tool": TOOL, "ok": not errors,
           "started_at": started.isoformat(), "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "machine": machine(str(args.client_cpu) if args.client_cpu is not None else "any"),
           "load_note": "a shared 2-core machine (other engineers' builds and tests run on it): see rounds[].load1",
           "versions": {"slotlane": slotlane.__version__, "python": sys.version.split()[0],
                        "redis_py": _version("redis"), "valkey_glide": _version("valkey-glide")},
           "git": git_info(root), "command": [sys.executable] + sys.argv, "servers": {"description": desc},
           "config": {"requests_per_round": args.requests, "rounds": args.rounds, "keys": KEYS, "value_bytes": 32,
                      "callers": args.callers, "loop": "asyncio default", "not_run": missing},
           "rows": out_rows, "sync_rows": sync_rows, "targets": targets}
    if args.json:
        print("record:", write_record(rec, args.json, kind="async-cost-python"))
    for t in targets:
        print("%-52s %-7s %s N=%-4d %.2f (limit %.1f) %s" % (t["name"], t["row"], t["op"], t["callers"], t["value"],
                                                           t["limit"], "met" if t["met"] else "MISSED"))
    return 0 if not errors else 1


def _version(dist: str) -> Optional[str]:
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
