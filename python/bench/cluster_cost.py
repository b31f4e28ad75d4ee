"""python python/bench/cluster_cost.py --cluster-cost (outside the installed package): the project's cluster-cost benchmark for the
Python binding, with redis-py (and hiredis) measured in the same run.

Rows (DESIGN.md, "The benchmarks"): plain (one node, no discovery), cluster (keys
key:0..N-1 over every primary), one-node (the cluster client, every key in the hash tag
{t}). Ops GET and SET with 32-byte values (the keys filled first), depths 16 and 64,
one worker, rounds with medians. Clients: slotlane (Client.pipeline) and redis-py with
hiredis (redis.Redis pipeline for plain, redis.RedisCluster pipeline for cluster and
one-node), interleaved in every round so that their ratio is measured under the same
conditions. Every pipeline's replies are checked (the values read back, SET -> True);
a row with a wrong or error reply fails instead of reporting a figure.

Figures per request: user and system CPU of this process (getrusage over the timed loop),
bytes written by the client (slotlane: the core's counter; every client: the servers'
total_net_input_bytes), requests per second. With --c-tool the core's own tool
(build/bench/sl-cluster-cost, one worker, pre-encoded RESP) runs one round of the same
rows at the start of each round and the medians of its rounds go in the record, for the
"within 5x of the C tool" comparison.

    python python/bench/cluster_cost.py --cluster-cost --plain redis://127.0.0.1:22100 \\
        --cluster redis://127.0.0.1:22110 --json bench/records/
    python python/bench/cluster_cost.py --cluster-cost --start-servers --json bench/records/   # own Redis servers
    python python/bench/cluster_cost.py --cluster-cost --start-slotlane-server build/server/slotlane-server ...

The JSON record follows bench/records/README.md (schema slotlane.bench.cluster-cost/1)
with "tool": "python/bench/cluster_cost.py" and clients slotlane-python and redis-py.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import slotlane

SCHEMA = "slotlane.bench.cluster-cost/1"
TOOL = "python/bench/cluster_cost.py"

# --tls-ca FILE: every client (both clients, and the runner's own INFO/CLUSTER SLOTS calls)
# speaks TLS with that CA, with the options each client's users would pass (redis-py's names).
TLS: Dict[str, Any] = {}


# ------------------------------------------------------------------ helpers

def rusage() -> Tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def value_of(i: int) -> bytes:
    return b"%032d" % i


def node_command(host: str, port: int, *args: str, timeout: float = 5.0) -> Any:
    """One command to one node with the package's own plain client (as a user would; the
    runner speaks no RESP of its own). A node that cannot be reached raises OSError."""
    try:
        with slotlane.Client(host, port, cluster=False, socket_connect_timeout=timeout, **TLS) as c:
            return c.execute_command(*args)
    except (slotlane.ConnectionError, slotlane.TimeoutError) as e:
        raise OSError(str(e)) from e


def info(host: str, port: int) -> Dict[str, str]:
    raw = node_command(host, port, "INFO")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def parse_addr(url: str) -> Tuple[str, int]:
    u = url.split("://", 1)[-1].split("/", 1)[0].split("@")[-1]
    host, port = u.rsplit(":", 1)
    return host.strip("[]"), int(port)


def cluster_nodes(url: str) -> List[Tuple[str, int]]:
    """The primaries, from slotlane's own view (CLUSTER SLOTS through the client)."""
    with slotlane.Client(url, **TLS) as c:
        if c.mode != "cluster":
            return [parse_addr(url)]
        nodes = []
        for entry in c.execute_command("CLUSTER", "SLOTS"):
            host, port = entry[2][0], entry[2][1]
            host = host.decode() if isinstance(host, bytes) else host
            if (host, int(port)) not in nodes:
                nodes.append((host, int(port)))
        return nodes


def server_input_bytes(nodes: List[Tuple[str, int]]) -> Optional[int]:
    try:
        return sum(int(info(h, p).get("total_net_input_bytes", "0")) for h, p in nodes)
    except (OSError, ValueError):
        return None


def node_desc(nodes: List[Tuple[str, int]]) -> List[Dict[str, Any]]:
    out = []
    for h, p in nodes:
        try:
            i = info(h, p)
        except OSError:
            i = {}
        pid = int(i["process_id"]) if i.get("process_id", "").isdigit() else None
        cpus = None
        if pid:
            try:
                cpus = sorted(os.sched_getaffinity(pid))
            except OSError:
                pass
        out.append({"addr": "%s:%d" % (h, p), "version": i.get("redis_version"), "redis_mode": i.get("redis_mode"),
                    "server_name": i.get("server_name", "redis"), "pid": pid, "cpus": cpus})
    return out


# ------------------------------------------------------------------ the clients

class Runner:
    """One client on one row: prepare() fills the keys; loop(op, depth, seconds) runs
    pipelines for that long and returns (requests, pipelines, error or None)."""

    name = ""

    def __init__(self, url: str, row: str, nkeys: int) -> None:
        self.url = url
        self.row = row
        fmt = "{t}:key:%d" if row == "one-node" else "key:%d"
        self.keys = [fmt % i for i in range(nkeys)]
        self.values = [value_of(i) for i in range(nkeys)]

    def batches(self, depth: int) -> List[Tuple[List[str], List[bytes]]]:
        n = len(self.keys) - len(self.keys) % depth
        return [(self.keys[i:i + depth], self.values[i:i + depth]) for i in range(0, n, depth)]

    def bytes_written(self) -> Optional[int]:
        return None

    def stats(self) -> Dict[str, int]:
        return {}

    def loop(self, op: str, depth: int, seconds: float) -> Tuple[int, int, Optional[str]]:
        raise NotImplementedError

    def fill(self) -> None:
        """SET every key to its value (again after the C tool wrote its own)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class SlotlaneRunner(Runner):
    name = "slotlane-python"

    def __init__(self, url: str, row: str, nkeys: int) -> None:
        super().__init__(url, row, nkeys)
        self.c = slotlane.Client(url, cluster=(row != "plain"), socket_timeout=10, **TLS)
        self.fill()

    def fill(self) -> None:
        with self.c.pipeline() as p:
            for k, v in zip(self.keys, self.values):
                p.set(k, v)
            p.execute(raise_on_error=True)

    def loop(self, op: str, depth: int, seconds: float) -> Tuple[int, int, Optional[str]]:
        batches = self.batches(depth)
        ok_set = [True] * depth
        p = self.c.pipeline()
        clock = time.perf_counter
        end = clock() + seconds
        n = 0
        nb = len(batches)
        i = 0
        if op == "GET":
            while True:
                keys, vals = batches[i]
                for k in keys:
                    p.get(k)
                if p.execute() != vals:
                    return n * depth, n, self._explain(keys, vals)
                n += 1
                i += 1
                if i == nb:
                    i = 0
                if clock() >= end:
                    break
        else:
            while True:
                keys, vals = batches[i]
                for k, v in zip(keys, vals):
                    p.set(k, v)
                r = p.execute()
                if r != ok_set:
                    return n * depth, n, "SET replies: %r" % [x for x in r if x is not True][:3]
                n += 1
                i += 1
                if i == nb:
                    i = 0
                if clock() >= end:
                    break
        return n * depth, n, None

    def _explain(self, keys: List[str], vals: List[bytes]) -> str:
        r = self.c.mget(keys)
        bad = [(k, v, w) for k, v, w in zip(keys, r, vals) if v != w][:3]
        return "GET replies differ: %r" % bad

    def bytes_written(self) -> Optional[int]:
        return self.c.stats()["bytes_written"]

    def stats(self) -> Dict[str, int]:
        return self.c.stats()

    def close(self) -> None:
        self.c.close()


class RedisPyRunner(Runner):
    name = "redis-py"

    def __init__(self, url: str, row: str, nkeys: int) -> None:
        super().__init__(url, row, nkeys)
        import redis
        from redis.utils import HIREDIS_AVAILABLE
        if not HIREDIS_AVAILABLE:
            raise RuntimeError("redis-py runs without hiredis: pip install hiredis")
        host, port = parse_addr(url)
        self.c: Any
        if row == "plain":
            self.c = redis.Redis(host=host, port=port, socket_timeout=10, **TLS)
            self.pipe: Callable[[], Any] = lambda: self.c.pipeline(transaction=False)
        else:
            from redis.cluster import RedisCluster
            self.c = RedisCluster(host=host, port=port, socket_timeout=10, **TLS)
            self.pipe = lambda: self.c.pipeline()
        self.fill()

    def fill(self) -> None:
        p = self.pipe()
        for k, v in zip(self.keys, self.values):
            p.set(k, v)
        p.execute()

    def loop(self, op: str, depth: int, seconds: float) -> Tuple[int, int, Optional[str]]:
        batches = self.batches(depth)
        ok_set = [True] * depth
        pipe = self.pipe
        clock = time.perf_counter
        end = clock() + seconds
        n = 0
        nb = len(batches)
        i = 0
        while True:
            keys, vals = batches[i]
            p = pipe()
            if op == "GET":
                for k in keys:
                    p.get(k)
                r = p.execute(raise_on_error=False)
                if r != vals:
                    return n * depth, n, "GET replies differ: %r" % [x for x, w in zip(r, vals) if x != w][:3]
            else:
                for k, v in zip(keys, vals):
                    p.set(k, v)
                r = p.execute(raise_on_error=False)
                if r != ok_set:
                    return n * depth, n, "SET replies: %r" % [x for x in r if x is not True][:3]
            n += 1
            i += 1
            if i == nb:
                i = 0
            if clock() >= end:
                break
        return n * depth, n, None

    def close(self) -> None:
        self.c.close()


CLIENTS: Dict[str, Callable[[str, str, int], Runner]] = {"slotlane-python": SlotlaneRunner, "redis-py": RedisPyRunner}


# ------------------------------------------------------------------ servers of our own

class OwnServers:
    """--start-servers: a standalone redis-server (plain rows) and a 3-primary Redis
    Cluster (cluster and one-node rows) from ci/, pinned to --server-cpu."""

    def __init__(self, root: str, base: int, cpu: Optional[int]) -> None:
        self.root = root
        self.base = base
        self.cpu = cpu
        self.dir = tempfile.mkdtemp(prefix="slotlane-pybench.")
        self.started: List[Tuple[str, str]] = []

    def script(self, name: str, *args: str) -> None:
        subprocess.run(["bash", os.path.join(self.root, "ci", name)] + list(args), check=True,
                       stdout=subprocess.DEVNULL)

    def start(self) -> Tuple[str, str, str]:
        plain = os.path.join(self.dir, "plain")
        cluster = os.path.join(self.dir, "cluster")
        self.started.append(("redis-plain.sh", plain))
        self.script("redis-plain.sh", "start", plain, str(self.base))
        self.started.append(("redis-cluster.sh", cluster))
        self.script("redis-cluster.sh", "start", cluster, str(self.base + 10), "3")
        pids = [open(os.path.join(plain, "pid")).read().strip()]
        pids += [p for p in open(os.path.join(cluster, "pids")).read().split() if p]
        if self.cpu is not None:
            for pid in pids:
                subprocess.run(["taskset", "-a", "-p", "-c", str(self.cpu), pid], check=True, stdout=subprocess.DEVNULL)
        desc = ("%s: a standalone server on port %d (plain rows) and a 3-primary Redis Cluster on ports "
                "%d-%d (cluster and one-node rows), no persistence%s; started by --start-servers with "
                "ci/redis-plain.sh and ci/redis-cluster.sh. The plain row and the cluster rows run against "
                "different processes of the same binary (slotlane-server with misrouted forward not available)"
                % (redis_version_line(), self.base, self.base + 10, self.base + 12,
                   ", every server pinned to CPU %d" % self.cpu if self.cpu is not None else ""))
        return "redis://127.0.0.1:%d" % self.base, "redis://127.0.0.1:%d" % (self.base + 10), desc

    def stop(self) -> None:
        for name, d in reversed(self.started):
            try:
                self.script(name, "stop", d)
            except subprocess.CalledProcessError:
                pass
        self.started.clear()
        shutil.rmtree(self.dir, ignore_errors=True)


class OwnSlotlaneServer:
    """--start-slotlane-server PATH: one slotlane-server, 4 shards, per-shard ports with
    misrouted = forward (DESIGN.md's cluster-cost setup): the plain rows use its first port
    (the server forwards), the cluster and one-node rows discover it."""

    def __init__(self, path: str, base: int, cpu: Optional[int]) -> None:
        self.path = path
        self.base = base
        self.cpu = cpu
        self.proc: Optional["subprocess.Popen[bytes]"] = None

    def start(self) -> Tuple[str, str, str]:
        try:
            help_text = subprocess.run([self.path, "--help"], capture_output=True, text=True, timeout=10).stdout
        except OSError as e:
            raise SystemExit("bench: cannot run %s: %s" % (self.path, e))
        if "--misrouted" not in help_text:
            raise SystemExit("bench: %s has no --misrouted forward yet; use --start-servers (Redis)" % self.path)
        cmd = [self.path, "--shards", "4", "--port-mode", "per-shard", "--misrouted", "forward",
               "--bind", "127.0.0.1", "--port", str(self.base), "--durability", "memory"]
        if self.cpu is not None:
            cmd = ["taskset", "-c", str(self.cpu)] + cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 15
        for i in range(4):
            while True:
                try:
                    if node_command("127.0.0.1", self.base + i, "PING", timeout=0.5) in (True, b"PONG", "PONG"):
                        break
                except OSError:
                    pass
                if self.proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise SystemExit("bench: slotlane-server did not come up on port %d" % (self.base + i))
                time.sleep(0.05)
        if self.cpu is not None:
            subprocess.run(["taskset", "-a", "-p", "-c", str(self.cpu), str(self.proc.pid)], check=True,
                           stdout=subprocess.DEVNULL)
        url = "redis://127.0.0.1:%d" % self.base
        desc = ("slotlane-server (%s): 4 shards, port_mode per-shard, misrouted forward, durability memory, "
                "ports %d-%d%s; plain rows on port %d (forwarding), cluster and one-node rows discover the "
                "same process" % (self.path, self.base, self.base + 3,
                                  ", pinned to CPU %d" % self.cpu if self.cpu is not None else "", self.base))
        return url, url, desc

    def stop(self) -> None:
        p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.proc = None


def redis_version_line() -> str:
    try:
        return subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "redis-server"


# ------------------------------------------------------------------ the C tool

def run_c_tool(path: str, plain: str, cluster: str, rows: List[str], ops: List[str], depths: List[int],
               seconds: float, rounds: int, nkeys: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        cmd = [path, "--workers", "1", "--clients", "slotlane", "--rows", ",".join(rows), "--ops", ",".join(ops),
               "--depths", ",".join(map(str, depths)), "--seconds", str(seconds), "--rounds", str(rounds),
               "--keys", str(nkeys), "--json", out]
        if "plain" in rows:
            cmd += ["--plain", plain]
        if "cluster" in rows or "one-node" in rows:
            cmd += ["--cluster", cluster]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0 or not os.path.exists(out):
            return {"command": cmd, "error": (p.stderr or p.stdout)[-2000:], "rows": []}
        with open(out) as f:
            rec = json.load(f)
        rec_rows = [{k: r.get(k) for k in ("client", "api", "row", "op", "depth", "ok", "error", "median")}
                    for r in rec.get("rows", [])]
        return {"command": cmd, "versions": rec.get("versions"), "config": rec.get("config"), "rows": rec_rows}


# ------------------------------------------------------------------ the run

def machine(client_cpus: str) -> Dict[str, Any]:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu_model": model, "cores": os.cpu_count(),
            "kernel": " ".join(platform.uname()[2:4]), "client_cpus": client_cpus}


def git_info(root: Optional[str]) -> Dict[str, Any]:
    if not root:
        return {"commit": "unknown", "dirty": None}
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        st = subprocess.run(["git", "-C", root, "status", "--porcelain"], capture_output=True, text=True)
        return {"commit": commit or "unknown", "dirty": bool(st.stdout.strip()) if st.returncode == 0 else None}
    except OSError:
        return {"commit": "unknown", "dirty": None}


def find_root() -> Optional[str]:
    d = os.getcwd()
    while True:
        if os.path.isfile(os.path.join(d, "core", "include", "slotlane.h")) and os.path.isdir(os.path.join(d, "ci")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def write_record(rec: Dict[str, Any], dest: str, kind: str = "cluster-cost-python") -> str:
    """DIR/ -> <hostname>-<YYYY-MM-DD>-<HHMMSS>-<kind>.json, created by a hard link of a
    finished .tmp file, never replacing a record (bench/records/README.md)."""
    if not (dest.endswith("/") or os.path.isdir(dest)):
        with open(dest, "w") as f:
            json.dump(rec, f, indent=1)
            f.write("\n")
        return dest
    os.makedirs(dest, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=dest)
    with os.fdopen(fd, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    try:
        while True:
            now = datetime.datetime.now(datetime.timezone.utc)
            name = os.path.join(dest, "%s-%s-%s.json" % (socket.gethostname(), now.strftime("%Y-%m-%d-%H%M%S"), kind))
            try:
                os.link(tmp, name)
                return name
            except FileExistsError:
                time.sleep(1.0 - now.microsecond / 1e6 + 0.01)
    finally:
        os.unlink(tmp)


def median(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cluster_cost(args: argparse.Namespace) -> int:
    root = find_root()
    if args.client_cpu is not None:
        os.sched_setaffinity(0, {args.client_cpu})
    own: Any = None
    desc = args.server_desc
    plain, cluster = args.plain, args.cluster
    if args.start_slotlane_server:
        own = OwnSlotlaneServer(args.start_slotlane_server, args.base_port, args.server_cpu)
    elif args.start_servers:
        if not root:
            print("bench: --start-servers needs the repository (ci/redis-*.sh); run it from inside it", file=sys.stderr)
            return 2
        own = OwnServers(root, args.base_port, args.server_cpu)
    try:
        if own:
            plain, cluster, desc = own.start()
        rows = [r for r in args.rows.split(",") if r]
        for r in rows:
            if r not in ("plain", "cluster", "one-node"):
                print("bench: unknown row %r" % r, file=sys.stderr)
                return 2
        if "plain" in rows and not plain:
            print("bench: the plain row needs --plain URL (or --start-servers)", file=sys.stderr)
            return 2
        if ("cluster" in rows or "one-node" in rows) and not cluster:
            print("bench: the cluster rows need --cluster URL (or --start-servers)", file=sys.stderr)
            return 2
        ops = [o.upper() for o in args.ops.split(",") if o]
        depths = [int(d) for d in args.depths.split(",") if d]
        clients = [c for c in args.clients.split(",") if c]
        for c in clients:
            if c not in CLIENTS:
                print("bench: unknown client %r (slotlane-python, redis-py)" % c, file=sys.stderr)
                return 2
        seconds = 1.0 if args.quick and args.seconds is None else (args.seconds or 3.0)
        warmup = 0.2 if args.quick else args.warmup
        started = datetime.datetime.now(datetime.timezone.utc)

        # The C tool runs one round of its own at the start of each of our rounds, so that
        # both are measured over the same stretch of time (this machine's load varies).
        c_tool: Optional[Dict[str, Any]] = None
        if args.c_tool:
            c_tool = {"rounds": [], "rows": []}

        url_of = {"plain": plain, "cluster": cluster, "one-node": cluster}
        nodes_of = {"plain": [parse_addr(plain)] if plain else [],
                    "cluster": cluster_nodes(cluster) if cluster else []}
        nodes_of["one-node"] = nodes_of["cluster"]
        # Clients are created (and the keys filled) once per row and client.
        runners: Dict[Tuple[str, str], Runner] = {}
        for row in rows:
            for cl in clients:
                runners[(row, cl)] = CLIENTS[cl](url_of[row], row, args.keys)
        results: Dict[Tuple[str, str, str, int], Dict[str, Any]] = {}
        for row in rows:
            for op in ops:
                for depth in depths:
                    for cl in clients:
                        results[(cl, row, op, depth)] = {
                            "client": cl, "api": "pipeline", "row": row, "op": op, "depth": depth,
                            "ok": True, "error": None,
                            "bytes_source": ("sl_stats.bytes_written deltas" if cl == "slotlane-python"
                                             else "servers' total_net_input_bytes deltas"),
                            "rounds": []}
        for rnd in range(args.rounds):
            if c_tool is not None:
                print("bench: round %d: the C tool %s (one worker)" % (rnd + 1, args.c_tool), file=sys.stderr)
                c_tool["rounds"].append(run_c_tool(args.c_tool, plain, cluster, rows, ops, depths, seconds, 1, args.keys))
                for rn in runners.values():
                    rn.fill()  # the C tool filled the same keys with its own values
            for row in rows:
                for op in ops:
                    for depth in depths:
                        for cl in clients:
                            res = results[(cl, row, op, depth)]
                            if not res["ok"]:
                                continue
                            rn = runners[(row, cl)]
                            if warmup > 0:
                                _, _, err = rn.loop(op, depth, warmup)
                                if err:
                                    res["ok"], res["error"] = False, err
                                    continue
                            sib0 = server_input_bytes(nodes_of[row])
                            st0 = rn.stats()
                            u0, s0 = rusage()
                            load_1m = os.getloadavg()[0]  # the machine is shared: say how busy it was
                            t0 = time.perf_counter()
                            reqs, pipes, err = rn.loop(op, depth, seconds)
                            t1 = time.perf_counter()
                            u1, s1 = rusage()
                            st1 = rn.stats()
                            sib1 = server_input_bytes(nodes_of[row])
                            if err:
                                res["ok"], res["error"] = False, err
                                res["rounds"].append({"requests": reqs, "error": err})
                                continue
                            rr: Dict[str, Any] = {
                                "requests": reqs, "pipelines": pipes, "wall_s": t1 - t0,
                                "user_ns": int((u1 - u0) * 1e9), "sys_ns": int((s1 - s0) * 1e9),
                                "bytes_written": (st1["bytes_written"] - st0["bytes_written"]) if st0 else None,
                                "payload_bytes": None,
                                "server_input_bytes": (sib1 - sib0) if sib0 is not None and sib1 is not None else None,
                            }
                            for k in ("moved", "ask", "tryagain", "refreshes", "connects", "reconnects"):
                                rr[k] = (st1[k] - st0[k]) if st0 else None
                            rr["load1"] = load_1m
                            rr["cpu_ns_per_req"] = (rr["user_ns"] + rr["sys_ns"]) / reqs
                            rr["user_ns_per_req"] = rr["user_ns"] / reqs
                            rr["sys_ns_per_req"] = rr["sys_ns"] / reqs
                            rr["bytes_per_req"] = rr["bytes_written"] / reqs if rr["bytes_written"] is not None else None
                            rr["server_input_bytes_per_req"] = (rr["server_input_bytes"] / reqs
                                                               if rr["server_input_bytes"] is not None else None)
                            rr["req_per_s"] = reqs / rr["wall_s"]
                            res["rounds"].append(rr)
                            if not args.json_only:
                                print("round %d %-15s %-8s %s d%-3d user %7.0f ns/req  sys %7.0f  %8.0f req/s"
                                      % (rnd + 1, cl, row, op, depth, rr["user_ns_per_req"], rr["sys_ns_per_req"],
                                         rr["req_per_s"]), file=sys.stderr)
        for rn in runners.values():
            rn.close()

        rows_out = []
        for res in results.values():
            rs = [r for r in res["rounds"] if "user_ns_per_req" in r]
            if res["ok"]:
                res["median"] = {k: median([r[k] for r in rs]) for k in
                                 ("cpu_ns_per_req", "user_ns_per_req", "sys_ns_per_req", "bytes_per_req",
                                  "server_input_bytes_per_req", "req_per_s")}
            else:
                res["median"] = None
            rows_out.append(res)

        def med(cl: str, row: str, op: str, depth: int) -> Optional[float]:
            r = results.get((cl, row, op, depth))
            return r["median"]["user_ns_per_req"] if r and r["median"] else None

        for res in rows_out:
            base = med("slotlane-python", "plain", res["op"], res["depth"])
            m = res["median"]["user_ns_per_req"] if res["median"] else None
            res["x_plain"] = (m / base) if m and base else None
            other = med("redis-py", res["row"], res["op"], res["depth"])
            res["x_redis_py"] = (m / other) if (res["client"] == "slotlane-python" and m and other) else None

        targets = []

        def target(name: str, op: str, depth: int, value: Optional[float], limit: float) -> None:
            targets.append({"name": name, "op": op, "depth": depth, "value": value, "limit": limit,
                            "met": (value is not None and value <= limit)})

        c_med: Dict[Tuple[str, str, int], float] = {}
        if c_tool:
            per: Dict[Tuple[str, str, int], List[float]] = {}
            for rd in c_tool["rounds"]:
                for r in rd.get("rows", []):
                    if r.get("client") == "slotlane" and r.get("median"):
                        per.setdefault((r["row"], r["op"], r["depth"]), []).append(r["median"]["user_ns_per_req"])
            for key, xs in per.items():
                m = median(xs)
                if m is not None:
                    c_med[key] = m
                    c_tool["rows"].append({"client": "slotlane", "api": "resp", "row": key[0], "op": key[1],
                                           "depth": key[2], "user_ns_per_req_rounds": xs,
                                           "median": {"user_ns_per_req": m}})
        for op in ops:
            for depth in depths:
                for row in rows:
                    a, b = med("slotlane-python", row, op, depth), med("redis-py", row, op, depth)
                    if "redis-py" in clients:
                        target("%s: user CPU <= 0.25 x redis-py (hiredis)" % row, op, depth,
                               a / b if a and b else None, 0.25)
                    cm = c_med.get((row, op, depth))
                    if c_tool:
                        target("%s: user CPU <= 5 x the C tool (one worker)" % row, op, depth,
                               a / cm if a and cm else None, 5.0)
                p = med("slotlane-python", "plain", op, depth)
                if p:
                    if "one-node" in rows:
                        o = med("slotlane-python", "one-node", op, depth)
                        target("one-node user CPU <= 1.1 x plain", op, depth, o / p if o else None, 1.1)
                    if "cluster" in rows:
                        c = med("slotlane-python", "cluster", op, depth)
                        target("cluster user CPU <= 1.5 x plain", op, depth, c / p if c else None, 1.5)

        try:
            import redis as redis_mod
            redis_py_version = redis_mod.__version__
        except ImportError:
            redis_py_version = None
        try:
            import hiredis
            hiredis_version = getattr(hiredis, "__version__", None)
        except ImportError:
            hiredis_version = None
        finished = datetime.datetime.now(datetime.timezone.utc)
        pv = {}
        for name, url in (("server_plain", plain), ("server_cluster", cluster)):
            if url:
                try:
                    pv[name] = info(*parse_addr(url)).get("redis_version")
                except OSError:
                    pv[name] = None
        rec = {
            "schema": SCHEMA,
            "benchmark": "cluster-cost",
            "tool": TOOL,
            "ok": all(r["ok"] for r in rows_out),
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": finished.isoformat(timespec="seconds"),
            "machine": machine(",".join(map(str, sorted(os.sched_getaffinity(0))))),
            "versions": dict({"slotlane": slotlane.__version__, "python": platform.python_version(),
                              "python_implementation": platform.python_implementation(),
                              "redis_py": redis_py_version, "hiredis": hiredis_version,
                              "cffi": __import__("cffi").__version__}, **pv),
            "git": git_info(root),
            "command": [sys.executable, "python/bench/cluster_cost.py"] + sys.argv[1:],
            "invocation": args.invocation,
            "servers": {"description": desc,
                        "plain": {"url": plain, "nodes": node_desc(nodes_of["plain"])} if plain else None,
                        "cluster": {"url": cluster, "nodes": node_desc(nodes_of["cluster"])} if cluster else None},
            "config": {"workers": 1, "seconds": seconds, "warmup_seconds": warmup, "rounds": args.rounds,
                       "keys": args.keys, "value_bytes": 32, "api": "pipeline", "quick": bool(args.quick),
                       "order": "every round: rows x ops x depths, the clients interleaved",
                       "clients": clients,
                       "tls": ({"ca_file": args.tls_ca, "options": "ssl=True, ssl_ca_certs (both clients)"}
                               if args.tls_ca else None),
                       "redis_py_classes": {"plain": "redis.Redis pipeline(transaction=False)",
                                            "cluster": "redis.cluster.RedisCluster pipeline()",
                                            "one-node": "redis.cluster.RedisCluster pipeline()"}},
            "rows": rows_out,
            "c_tool": c_tool,
            "targets": targets,
        }
        print_table(rec)
        if args.json:
            path = write_record(rec, args.json)
            print("bench: record written to %s" % path, file=sys.stderr)
        return 0 if rec["ok"] else 1
    finally:
        if own:
            own.stop()


def print_table(rec: Dict[str, Any]) -> None:
    print("| client | row | op | depth | user ns/req | sys ns/req | req/s | x plain | x redis-py | bytes/req (client) | server input bytes/req |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rec["rows"]:
        m = r["median"]
        if not m:
            print("| %s | %s | %s | %d | FAILED: %s |" % (r["client"], r["row"], r["op"], r["depth"], r["error"]))
            continue

        def f(v: Optional[float], fmt: str = "%.0f") -> str:
            return fmt % v if v is not None else "-"
        print("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["client"], r["row"], r["op"], r["depth"], f(m["user_ns_per_req"]), f(m["sys_ns_per_req"]),
            f(m["req_per_s"]), f(r["x_plain"], "%.2f"), f(r["x_redis_py"], "%.3f"), f(m["bytes_per_req"], "%.1f"),
            f(m["server_input_bytes_per_req"], "%.1f")))
    if rec.get("c_tool") and rec["c_tool"].get("rows"):
        print("\nC tool (sl-cluster-cost, one worker), median user ns/req:")
        for r in rec["c_tool"]["rows"]:
            if r.get("median"):
                print("  %-8s %s d%-3d %7.0f" % (r["row"], r["op"], r["depth"], r["median"]["user_ns_per_req"]))
    print("\ntargets:")
    for t in rec["targets"]:
        print("  %-4s %-50s %s d%-3d %s (limit %s)" % ("ok" if t["met"] else "MISS", t["name"], t["op"], t["depth"],
                                                     "%.3f" % t["value"] if t["value"] is not None else "-", t["limit"]))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python/bench/cluster_cost.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster-cost", action="store_true", help="run the cluster-cost benchmark (the only one)")
    ap.add_argument("--plain", help="redis://HOST:PORT of one node for the plain rows")
    ap.add_argument("--cluster", help="redis://HOST:PORT of a cluster seed for the cluster and one-node rows")
    ap.add_argument("--start-servers", action="store_true",
                    help="start a redis-server and a 3-primary Redis Cluster (ci/ scripts) and stop them at the end")
    ap.add_argument("--start-slotlane-server", metavar="PATH", default=None,
                    help="start PATH (slotlane-server) with 4 shards, per-shard, misrouted forward, and use it "
                         "for every row (the setup of DESIGN.md)")
    ap.add_argument("--base-port", type=int, default=22100, help="with --start-servers: plain on BASE, cluster on BASE+10.. (default 22100)")
    ap.add_argument("--server-cpu", type=int, default=None, help="with --start-servers: pin the servers to this CPU")
    ap.add_argument("--client-cpu", type=int, default=None, help="pin this process to this CPU")
    ap.add_argument("--rows", default="plain,cluster,one-node")
    ap.add_argument("--ops", default="GET,SET")
    ap.add_argument("--depths", default="16,64")
    ap.add_argument("--clients", default="slotlane-python,redis-py")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=None, help="timed loop per row, client and round (default 3; --quick 1)")
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--keys", type=int, default=4096)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--c-tool", default=None, help="path of build/bench/sl-cluster-cost: run it first with one worker")
    ap.add_argument("--json", default=None, help="write the record: a FILE, or DIR/ for an auto-named one")
    ap.add_argument("--server-desc", default=None)
    ap.add_argument("--invocation", default=None)
    ap.add_argument("--json-only", action="store_true", help="no per-round lines on stderr")
    ap.add_argument("--tls-ca", metavar="FILE", default=None,
                    help="every client speaks TLS, trusting this CA (ssl=True, ssl_ca_certs=FILE); the record says tls")
    args = ap.parse_args(argv)
    if args.tls_ca:
        TLS.update(ssl=True, ssl_ca_certs=args.tls_ca)
    if not args.cluster_cost:
        ap.error("choose a benchmark: --cluster-cost")
    if args.rounds < 1 or args.keys < 64:
        ap.error("--rounds must be >= 1 and --keys >= 64")
    return cluster_cost(args)


if __name__ == "__main__":
    sys.exit(main())
