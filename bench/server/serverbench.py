#!/usr/bin/env python3
"""serverbench.py — the engine of bench/server/run and bench/server/load_vs_redis_benchmark.sh
(DESIGN.md, "The benchmarks": server, load generator).

Two benchmarks share it:

  server                    slotlane-server against redis-server at 1, 2 and 4 shards: one
                            redis-server process at 1 shard, a Redis Cluster of N primaries at
                            N > 1; slotlane-server in per-shard mode (and one-port mode when the
                            binary supports it). Loads: redis-benchmark (--cluster at N > 1),
                            slotlane-load (--cluster at N > 1), memtier_benchmark when on PATH.
  load-vs-redis-benchmark   one slotlane-server with 2 shards (per-shard), driven by
                            redis-benchmark --cluster and by slotlane-load --cluster at the same
                            connection count and pipeline depth: the same TCP connections to each
                            shard (counted with ss during every run) and the same requests
                            outstanding per connection (redis-benchmark -P; slotlane-load's
                            per-node batches, --inflight 1: one batch of P keys of that shard per
                            handle and shard, each connection moving on its own);
                            SET, GET (each tool's keys filled first) and a slotlane-load-only
                            1:10 SET:GET row. Both tools' own CPU per request is recorded too.

Method (the peer's shard-scaling write-up, seeds/000): servers pinned to --server-cpus, every
load generator to --load-cpus; SET and GET each measured on its own (one load-generator run per
op), 32-byte values, 100,000 random keys, pipeline 16, 50 connections in all; keys filled before
a GET row (outside the measurement); three rounds, round-major (every row once per round, so
drift in a shared machine spreads over all rows), medians of each figure, every round kept.

Figures: requests per second as the load generator reports it, and server CPU time per request:
user + system time of every server process (/proc/PID/stat utime + stime, all threads) over the
load generator's run, divided by the requests it completed. CPU time per request holds even when
the load generator is the limit; requests per second on a shared 2-CPU VM does not.

Every server started here is stopped by its PID, on success, failure, SIGINT and SIGTERM. Runs
hold the flock of ci/bench.sh ($SL_BENCH_LOCK, /tmp/slotlane-bench.lock) because benchmarks here
pin to the same CPUs and would measure each other.
"""
import argparse
import resource
import threading
import datetime as dt
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "server", "tests", "integration"))
import resp  # noqa: E402  (the repository's one RESP test client)

HOST = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PROG = "serverbench"


def say(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


class Failure(Exception):
    """A row or a server that failed: recorded with its message, the run goes on."""


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


# ------------------------------------------------------------------ small helpers

def run_cmd(cmd, timeout, check=True, env=None):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
    except OSError as e:
        raise Failure(f"cannot run {cmd[0]}: {e}")
    if check and p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
        raise Failure(f"exit {p.returncode}: {' '.join(cmd)}: {' | '.join(tail)}")
    return p


def resp_cmd(port, *args, timeout=2.0):
    """One command on a fresh connection (the repository's RESP test client), its reply:
    a status or error as text, a bulk as bytes, an integer as int."""
    c = resp.Conn(port, host=HOST, timeout=timeout)
    try:
        return c.call(*args)
    finally:
        c.close()


def wait_ping(port, proc=None, secs=20):
    deadline = time.time() + secs
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise Failure(f"server on port {port} exited during startup (status {proc.returncode})")
        try:
            if resp_cmd(port, "PING", timeout=0.5) == "PONG":
                return
        except (OSError, ConnectionError):
            pass
        time.sleep(0.05)
    raise Failure(f"port {port} did not answer PING within {secs} s")


def port_free(port):
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return False
    except OSError:
        return True


def proc_cpu_ticks(pid):
    """utime + stime (all threads) of a process, in clock ticks; None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return None
    fields = st[st.rindex(")") + 2:].split()
    return int(fields[11]), int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def cpu_snapshot(pids):
    out = {}
    for p in pids:
        t = proc_cpu_ticks(p)
        if t is None:
            raise Failure(f"server process {p} is gone")
        out[p] = t
    return out


def load1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return None


def pin(pids, cpus):
    """Pins every thread of each process (redis has background threads) to cpus."""
    for p in pids:
        run_cmd(["taskset", "-a", "-p", "-c", cpus, str(p)], 10)


def allowed_cpus(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def first_line(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10)
        return p.stdout.strip().splitlines()[0] if p.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


# ------------------------------------------------------------------ servers

class Server:
    """One server configuration: kind slotlane|redis, shards, port mode; started once."""

    def __init__(self, kind, shards, port_mode, base, cpus, args, workdir):
        self.kind, self.shards, self.port_mode = kind, shards, port_mode
        self.base, self.cpus, self.args, self.workdir = base, cpus, args, workdir
        self.proc = None
        self.pids = []
        self.command = None
        self.error = None
        self.dir = None

    @property
    def label(self):
        if self.kind == "redis":
            return "redis-server" if self.shards == 1 else f"redis-cluster-{self.shards}"
        return f"slotlane-{self.port_mode}-{self.shards}"

    @property
    def cluster(self):
        """Whether load generators run in cluster mode against it."""
        if self.kind == "redis":
            return self.shards > 1
        return self.port_mode == "per-shard" and self.shards > 1

    @property
    def ports(self):
        if self.kind == "slotlane" and self.port_mode == "per-shard":
            return list(range(self.base, self.base + self.shards))
        if self.kind == "redis" and self.shards > 1:
            return list(range(self.base, self.base + self.shards))
        return [self.base]

    def start(self):
        need = self.ports + ([p + self.shards for p in self.ports] if self.kind == "redis" and self.shards > 1 else [])
        busy = [p for p in need if not port_free(p)]
        if busy:
            raise Failure(f"ports in use: {busy}")
        if self.kind == "slotlane":
            cmd = ["taskset", "-c", self.cpus, self.args.slotlane_server, "--shards", str(self.shards),
                   "--port", str(self.base), "--cpus", self.cpus, "--loglevel", "warning"]
            if self.port_mode == "one-port":
                cmd += ["--port-mode", "one-port"]
            self.command = cmd
            self.log = open(os.path.join(self.workdir, f"{self.label}.log"), "w")
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
            self.pids = [self.proc.pid]  # taskset execs the server: same pid
            for p in self.ports:
                wait_ping(p, self.proc)
        else:
            self.dir = os.path.join(self.workdir, self.label)
            if self.shards == 1:
                cmd = ["bash", os.path.join(ROOT, "ci/redis-plain.sh"), "start", self.dir, str(self.base)]
                self.command = cmd
                run_cmd(cmd, 60)
                with open(os.path.join(self.dir, "pid")) as f:
                    self.pids = [int(f.read().strip())]
            else:
                cmd = ["bash", os.path.join(ROOT, "ci/redis-cluster.sh"), "start", self.dir, str(self.base),
                       str(self.shards)]
                self.command = cmd
                run_cmd(cmd, 120)
                with open(os.path.join(self.dir, "pids")) as f:
                    self.pids = [int(x) for x in f.read().split()]
            pin(self.pids, self.cpus)
        say(f"{self.label}: up on ports {self.ports[0]}..{self.ports[-1]}, pids {self.pids}, cpus {self.cpus}")

    def alive(self):
        return all(proc_cpu_ticks(p) is not None for p in self.pids)

    def flushall(self):
        for p in self.ports if self.cluster or self.kind == "redis" else self.ports[:1]:
            r = resp_cmd(p, "FLUSHALL", timeout=10)
            if r != "OK":
                raise Failure(f"FLUSHALL on {p}: {r}")

    def stop(self):
        if self.kind == "slotlane":
            if self.proc and self.proc.poll() is None:
                self.proc.terminate()  # by PID (Popen keeps it)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            if getattr(self, "log", None):
                self.log.close()
        elif self.dir:
            script = "redis-plain.sh" if self.shards == 1 else "redis-cluster.sh"
            try:
                run_cmd(["bash", os.path.join(ROOT, "ci", script), "stop", self.dir], 60, check=False)
            except Failure as e:
                say(f"stopping {self.label}: {e}")

    def describe(self):
        return {"id": self.label, "server": self.kind, "shards": self.shards, "port_mode": self.port_mode,
                "ports": self.ports, "pids": self.pids, "cpus": self.cpus,
                "allowed_cpus": [allowed_cpus(p) for p in self.pids],
                "command": self.command, "ok": self.error is None, "error": self.error}


# ------------------------------------------------------------------ load generators

def loader_commands(loader, srv, op, a, tmpjson):
    """The command of one measured run; (cmd, fill_cmd or None)."""
    port = str(srv.ports[0])
    conns = a.connections
    lc = ["taskset", "-c", a.load_cpus]
    if loader == "redis-benchmark":
        cmd = lc + ["redis-benchmark", "-h", HOST, "-p", port, "-c", str(conns), "-P", str(a.pipeline),
                    "-d", str(a.data_size), "-r", str(a.key_range), "-t", op.lower(), "-n", str(a.requests), "--csv"]
        if srv.cluster:
            cmd.insert(len(lc) + 5, "--cluster")
        fill = None
        if op == "GET":
            # its GETs then hit (32-byte replies, as slotlane-load's GETs after its fill): the
            # same key pattern by a SET run of as many random keys as the GET run asks for
            fill = [x if x != "get" else "set" for x in cmd]
        return cmd, fill
    nodes = srv.shards if srv.cluster else 1
    if loader == "slotlane-load":
        handles = max(1, round(conns / nodes))  # each handle keeps one connection per node
        # the async engine: one thread (one libuv loop) drives every handle, as redis-benchmark's
        # one event loop drives every connection; more threads on the one load CPU only add
        # context switches. --sl-threads T splits the handles over T loops (a divisor of handles).
        threads = 1
        if a.sl_threads:
            threads = max(d for d in range(1, min(handles, a.sl_threads) + 1) if handles % d == 0)
        conns_per_thread = max(1, handles // threads)
        base = [a.slotlane_load, "--host", HOST, "--port", port, "--pipeline", str(a.pipeline),
                "--data-size", str(a.data_size), "--key-range", str(a.key_range), "--quiet"]
        if srv.cluster and a.sl_per_batch:
            base.append("--mixed-batches")  # P split over the nodes, the handle's connections in lockstep
        # else per-node batches (slotlane-load's cluster default): P per connection, each
        # connection on its own, as redis-benchmark -P and memtier --pipeline
        if srv.cluster:
            base.append("--cluster")
        ratio = {"SET": "1:0", "GET": "0:1", "MIXED": "1:10"}[op]
        cmd = lc + base + ["--threads", str(threads), "--conns", str(conns_per_thread), "--inflight", "1",
                           "--ratio", ratio, "--test-time", str(a.seconds), "--no-fill", "--json", tmpjson]
        fill = lc + base + ["--threads", "1", "--fill-only"] if op in ("GET", "MIXED") else None
        return cmd, fill
    if loader == "memtier":
        per_thread = max(1, round(conns / nodes))  # memtier's -c is per thread and node
        cmd = lc + ["memtier_benchmark", "-s", HOST, "-p", port, "--protocol=redis", "-t", "1",
                    "-c", str(per_thread), "--pipeline", str(a.pipeline), "-d", str(a.data_size),
                    "--key-minimum", "0", "--key-maximum", str(a.key_range - 1), "--key-pattern", "R:R",
                    "--ratio", "1:0" if op == "SET" else "0:1", "--test-time", str(max(1, int(a.seconds))),
                    "--hide-histogram", "--json-out-file", tmpjson]
        if srv.cluster:
            cmd.append("--cluster-mode")
        fill = None
        if op == "GET":
            fill = lc + ["memtier_benchmark", "-s", HOST, "-p", port, "--protocol=redis", "-t", "1", "-c", "1",
                         "--pipeline", "64", "-d", str(a.data_size), "--key-minimum", "0",
                         "--key-maximum", str(a.key_range - 1), "--key-pattern", "P:P", "--ratio", "1:0",
                         "--requests", "allkeys", "--hide-histogram"] + (["--cluster-mode"] if srv.cluster else [])
        return cmd, fill
    raise Failure(f"unknown loader {loader}")


def parse_result(loader, op, proc, tmpjson, wall):
    """(requests, req_per_s, extra) from the load generator's own report."""
    if loader == "redis-benchmark":
        for line in proc.stdout.splitlines():
            cols = [c.strip('"') for c in line.split('","')]
            if len(cols) >= 2 and cols[0].strip('"').upper().startswith(op):
                rps = float(cols[1].strip('"'))
                extra = {}
                names = ["avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms",
                         "p99_latency_ms", "max_latency_ms"]
                for n, v in zip(names, cols[2:]):
                    try:
                        extra[n] = float(v.strip('"'))
                    except ValueError:
                        pass
                return None, rps, extra
        raise Failure(f"no {op} line in redis-benchmark's CSV: {proc.stdout.strip()[-300:]!r}")
    with open(tmpjson) as f:
        j = json.load(f)
    if loader == "slotlane-load":
        r = j["results"]
        if r["errors"]:
            raise Failure(f"slotlane-load: {r['errors']} errors, first: {r['first_error']}")
        if op in ("GET", "MIXED") and r["get_misses"]:
            raise Failure(f"slotlane-load: {r['get_misses']} GET misses after the fill")
        extra = {"latency_ms": r["latency_ms"], "connections": r["connections"], "threads": j["config"]["threads"],
                 "conns_per_thread": j["config"]["conns_per_thread"], "wall_s": r["wall_s"],
                 "load_cpu_ns_per_req": r["load_cpu_ns_per_req"], "engine": j["config"].get("engine"),
                 "inflight": j["config"].get("inflight"), "batch": j["config"].get("batch"),
                 "outstanding_per_conn": r.get("outstanding_per_conn"), "sets": r["sets"], "gets": r["gets"],
                 "get_hits": r["get_hits"]}
        return r["requests"], r["ops_per_s"], extra
    tot = j["ALL STATS"]["Totals"]
    return int(tot.get("Count", 0)) or None, float(tot["Ops/sec"]), {"latency_ms": {
        k: tot.get(k) for k in ("Latency", "Average Latency", "p50.00", "p99.00", "p99.90") if k in tot}}


def established(ports):
    """TCP connections established to each port (client side: dport), from ss."""
    try:
        out = subprocess.run(["ss", "-Htn", "state", "established"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    counts = {p: 0 for p in ports}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4:
            peer = cols[3].rsplit(":", 1)
            if len(peer) == 2 and peer[0] in (HOST, f"[::ffff:{HOST}]") and peer[1].isdigit() \
                    and int(peer[1]) in counts:
                counts[int(peer[1])] += 1
    return counts


class ConnSampler(threading.Thread):
    """Counts the connections to each shard port a few times during a load run; keeps the
    sample with the most connections (the run's steady state: every connection is open)."""

    def __init__(self, ports):
        super().__init__(daemon=True)
        self.ports, self.best, self.stop = ports, None, threading.Event()

    def run(self):
        for delay in (0.15, 0.15, 0.2, 0.3, 0.4, 0.8):
            if self.stop.wait(delay):
                return
            c = established(self.ports)
            if c and (self.best is None or sum(c.values()) > sum(self.best.values())):
                self.best = c


def measure(loader, srv, op, a, tmpdir):
    tmpjson = os.path.join(tmpdir, "load.json")
    if os.path.exists(tmpjson):
        os.unlink(tmpjson)
    cmd, fill = loader_commands(loader, srv, op, a, tmpjson)
    timeout = max(120.0, a.requests / 5000.0, a.seconds * 5 + 60)
    if fill:
        run_cmd(fill, 300)  # keys exist before a GET row; not part of the measurement
    if not srv.alive():
        raise Failure(f"{srv.label} is not running")
    l1 = load1()
    sampler = ConnSampler(srv.ports) if srv.cluster else None
    if sampler:
        sampler.start()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0 = cpu_snapshot(srv.pids)
    t0 = time.monotonic()
    proc = run_cmd(cmd, timeout)
    wall = time.monotonic() - t0
    c1 = cpu_snapshot(srv.pids)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if sampler:
        sampler.stop.set()
        sampler.join()
    requests, rps, extra = parse_result(loader, op, proc, tmpjson, wall)
    if requests is None:
        requests = a.requests
    ut = sum(c1[p][0] - c0[p][0] for p in srv.pids) * 1e9 / CLK_TCK
    stt = sum(c1[p][1] - c0[p][1] for p in srv.pids) * 1e9 / CLK_TCK
    # the load generator's own CPU: getrusage of the children reaped by run_cmd, i.e. this run
    lu = (ru1.ru_utime - ru0.ru_utime) * 1e9
    ls = (ru1.ru_stime - ru0.ru_stime) * 1e9
    x = {"requests": requests, "req_per_s": rps, "wall_s": round(wall, 3),
         "server_user_ns": ut, "server_sys_ns": stt, "server_cpu_ns": ut + stt,
         "server_cpu_ns_per_req": (ut + stt) / requests if requests else None,
         "load_user_ns_per_req": lu / requests if requests else None,
         "load_sys_ns_per_req": ls / requests if requests else None,
         "load_cpu_ns_per_req": (lu + ls) / requests if requests else None,
         "load1": l1, "command": cmd, "fill_command": fill, "loader_report": extra}
    if sampler:
        x["connections_by_port"] = {str(p): n for p, n in (sampler.best or {}).items()} if sampler.best else None
    if loader == "redis-benchmark":
        x["outstanding_per_conn"] = a.pipeline  # -P: every connection keeps P requests in flight
    elif loader == "slotlane-load":
        x["outstanding_per_conn"] = extra.get("outstanding_per_conn")
    return x


# ------------------------------------------------------------------ record

def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu_model": cpu, "cores": os.cpu_count(),
            "kernel": " ".join(platform.uname()[i] for i in (0, 2, 4))}


def git_info():
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # read-only queries
    def q(*args):
        try:
            return subprocess.run(["git", "-C", ROOT] + list(args), stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env, timeout=20).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    commit = q("rev-parse", "HEAD")
    status = q("status", "--porcelain")
    return {"commit": commit if len(commit) == 40 else "unknown", "dirty": bool(status) if commit else None}


def versions(a):
    v = {"slotlane_server": first_line([a.slotlane_server, "--version"]),
         "redis_server": first_line(["redis-server", "--version"]),
         "redis_benchmark": first_line(["redis-benchmark", "--version"]),
         "slotlane_load": first_line([a.slotlane_load, "--help"]) and "built from this commit",
         "memtier_benchmark": first_line(["memtier_benchmark", "--version"]) if shutil.which("memtier_benchmark") else None}
    try:
        with open(os.path.join(ROOT, "VERSION")) as f:
            v["slotlane"] = f.read().strip()
    except OSError:
        v["slotlane"] = None
    return v


def save_record(outdir, name, rec):
    """<host>-<date>-<HHMMSS>-<name>.json via a hard link of a finished temp file: never a half
    record, never a replaced one (the next second's name when taken)."""
    os.makedirs(outdir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=outdir)
    with os.fdopen(fd, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    try:
        for _ in range(120):
            stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
            path = os.path.join(outdir, f"{socket.gethostname()}-{stamp}-{name}.json")
            try:
                os.link(tmp, path)
                return path
            except FileExistsError:
                time.sleep(1)
        raise OSError(f"no free record name in {outdir}")
    finally:
        os.unlink(tmp)


def fmt_rate(x):
    if x is None:
        return "-"
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}K"


def fmt_ns(x):
    return "-" if x is None else f"{x:.0f}"


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def table_server(rows, rounds):
    def find(server_id, loader, op):
        for r in rows:
            if r["server_id"] == server_id and r["loader"] == loader and r["op"] == op:
                return r
        return None
    out = [f"Server comparison (medians of {rounds} round(s); server CPU = user+system of every server process "
           f"per request)", "",
           "| shards | load | op | slotlane req/s | redis req/s | ratio | slotlane CPU ns/req | redis CPU ns/req | "
           "redis/slotlane CPU |",
           "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    shards = sorted({r["shards"] for r in rows})
    loaders = []
    for r in rows:
        if r["loader"] not in loaders:
            loaders.append(r["loader"])
    notes = []
    for n in shards:
        for ld in loaders:
            for op in ("SET", "GET"):
                s = find(f"slotlane-per-shard-{n}", ld, op)
                rd = find("redis-server" if n == 1 else f"redis-cluster-{n}", ld, op)
                if not s and not rd:
                    continue
                sm = (s or {}).get("median") or {}
                rm = (rd or {}).get("median") or {}
                cell = lambda r, v: ("FAILED" if r and not r["ok"] else v)
                out.append(f"| {n} | {ld} | {op} | {cell(s, fmt_rate(sm.get('req_per_s')))} | "
                           f"{cell(rd, fmt_rate(rm.get('req_per_s')))} | {ratio(sm.get('req_per_s'), rm.get('req_per_s'))} | "
                           f"{cell(s, fmt_ns(sm.get('server_cpu_ns_per_req')))} | "
                           f"{cell(rd, fmt_ns(rm.get('server_cpu_ns_per_req')))} | "
                           f"{ratio(rm.get('server_cpu_ns_per_req'), sm.get('server_cpu_ns_per_req'))} |")
                for r in (s, rd):
                    if r and not r["ok"]:
                        notes.append(f"FAILED {r['server_id']} {ld} {op}: {r['error']}")
    op_rows = [r for r in rows if r["port_mode"] == "one-port"]
    if op_rows:
        out += ["", "One-port path (every connection on one port; the server forwards):", "",
                "| shards | load | op | req/s | CPU ns/req | note |", "|---:|---|---|---:|---:|---|"]
        for r in op_rows:
            m = r.get("median") or {}
            note = r.get("skipped") or r.get("error") or ""
            out.append(f"| {r['shards']} | {r['loader']} | {r['op']} | {fmt_rate(m.get('req_per_s'))} | "
                       f"{fmt_ns(m.get('server_cpu_ns_per_req'))} | {note} |")
    for r in rows:
        if r.get("skipped") and r["port_mode"] != "one-port":
            notes.append(f"skipped {r['server_id']} {r['loader']} {r['op']}: {r['skipped']}")
    if notes:
        out += [""] + notes
    return "\n".join(out)


def table_loaders(rows, rounds):
    out = [f"Load generators against slotlane-server, 2 shards per-shard (medians of {rounds} round(s); "
           "connections = TCP connections to each shard counted with ss during the run; outstanding = "
           "requests in flight per connection; load CPU = the tool's user+sys per request)", "",
           "| op | redis-benchmark --cluster req/s | slotlane-load --cluster req/s | slotlane-load / redis-benchmark | "
           "per-round ratio (median) | connections per shard (rb / sl) | outstanding per conn (rb / sl) | "
           "load CPU ns/req (rb / sl) | server CPU ns/req (rb / sl) | slotlane-load p50 / p99 / p99.9 ms | "
           "by round (rb; sl) |",
           "|---|---:|---:|---:|---:|---|---|---|---|---|---|"]

    def conns(r):
        xs = [x.get("connections_by_port") for x in (r or {}).get("rounds", []) if x.get("connections_by_port")]
        if not xs:
            return "-"
        seen = sorted({"+".join(str(v) for _, v in sorted(c.items())) for c in xs})
        return ",".join(seen)

    def outstanding(r):
        xs = sorted({x.get("outstanding_per_conn") for x in (r or {}).get("rounds", [])
                     if x.get("outstanding_per_conn") is not None})
        return ",".join(f"{v:g}" for v in xs) or "-"

    for op in ("SET", "GET", "MIXED"):
        rb = next((r for r in rows if r["loader"] == "redis-benchmark" and r["op"] == op), None)
        sl = next((r for r in rows if r["loader"] == "slotlane-load" and r["op"] == op), None)
        if not rb and not sl:
            continue
        rbm = (rb or {}).get("median") or {}
        slm = (sl or {}).get("median") or {}
        lat = "-"
        if sl and sl.get("median"):
            lat = f"{slm.get('p50_ms', 0):.3f} / {slm.get('p99_ms', 0):.3f} / {slm.get('p99_9_ms', 0):.3f}"
        by = lambda r: " ".join(fmt_rate(x.get("req_per_s")) for x in (r or {}).get("rounds", []) if "req_per_s" in x)
        # rounds run the two load generators back to back, so the ratio within a round is less
        # exposed to the drift of a shared machine than the ratio of medians
        prr = []
        if rb and sl:
            for x, y in zip(rb.get("rounds", []), sl.get("rounds", [])):
                if x.get("req_per_s") and y.get("req_per_s"):
                    prr.append(y["req_per_s"] / x["req_per_s"])
        pr = f"{median(prr):.2f}x ({' '.join(f'{v:.2f}' for v in prr)})" if prr else "-"
        cell = lambda r, v: "n/a" if not r else ("FAILED" if not r["ok"] else v)
        name = "SET:GET 1:10" if op == "MIXED" else op
        out.append(f"| {name} | {cell(rb, fmt_rate(rbm.get('req_per_s')))} | "
                   f"{cell(sl, fmt_rate(slm.get('req_per_s')))} | "
                   f"{ratio(slm.get('req_per_s'), rbm.get('req_per_s'))} | {pr} | "
                   f"{conns(rb)} / {conns(sl)} | {outstanding(rb)} / {outstanding(sl)} | "
                   f"{fmt_ns(rbm.get('load_cpu_ns_per_req'))} / {fmt_ns(slm.get('load_cpu_ns_per_req'))} | "
                   f"{fmt_ns(rbm.get('server_cpu_ns_per_req'))} / {fmt_ns(slm.get('server_cpu_ns_per_req'))} | {lat} | "
                   f"{by(rb)}; {by(sl)} |")
        for r in (rb, sl):
            if r and not r["ok"]:
                out.append(f"FAILED {r['loader']} {op}: {r['error']}")
    return "\n".join(out)


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(prog="bench/server/run", formatter_class=argparse.RawDescriptionHelpFormatter,
                                 description=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--benchmark", choices=["server", "load-vs-redis-benchmark"], default="server")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; medians over them (default 3)")
    ap.add_argument("--quick", action="store_true",
                    help="one round, 100,000 requests per redis-benchmark run, 1 s slotlane-load runs")
    ap.add_argument("--shards", default=None, help="shard counts (default 1,2,4; load-vs-redis-benchmark: 2)")
    ap.add_argument("--servers", default="slotlane,redis", help="slotlane,redis (default both)")
    ap.add_argument("--loaders", default=None,
                    help="redis-benchmark,slotlane-load,memtier (default: all; memtier only when on PATH)")
    ap.add_argument("--server-cpus", default="1", help="CPUs of the servers (default 1)")
    ap.add_argument("--load-cpus", default="0", help="CPUs of the load generators (default 0)")
    ap.add_argument("--connections", type=int, default=50, help="connections in all (default 50)")
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--data-size", type=int, default=32)
    ap.add_argument("--key-range", type=int, default=100000)
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per redis-benchmark run (default 1,000,000; --quick 100,000)")
    ap.add_argument("--seconds", type=float, default=None,
                    help="length of a slotlane-load / memtier run (default 5; --quick 1)")
    ap.add_argument("--sl-threads", type=int, default=0,
                    help="slotlane-load threads, each one libuv loop (default 1; else the largest divisor of "
                         "its handles, connections / nodes, up to this)")
    ap.add_argument("--sl-per-batch", action="store_true",
                    help="slotlane-load: --mixed-batches (one batch of --pipeline random keys per handle, "
                         "split over the nodes) instead of per-node batches of --pipeline keys")
    ap.add_argument("--base-port", type=int, default=None, help="first port (default 26100; load-vs: 26200)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "records"), help="record directory")
    ap.add_argument("--build", default=os.environ.get("SL_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    ap.add_argument("--no-lock", action="store_true", help="do not take the benchmark lock")
    ap.add_argument("--invocation", default=os.environ.get("SL_BENCH_INVOCATION"))
    a = ap.parse_args()

    lv = a.benchmark == "load-vs-redis-benchmark"
    if a.quick:
        a.rounds = 1
    a.requests = a.requests or (100000 if a.quick else 1000000)
    a.seconds = a.seconds or (1.0 if a.quick else 5.0)
    a.base_port = a.base_port or (26200 if lv else 26100)
    a.shards = a.shards or ("2" if lv else "1,2,4")
    if a.loaders is None:
        a.loaders = "redis-benchmark,slotlane-load" if lv else "redis-benchmark,slotlane-load,memtier"
    if lv:
        a.servers = "slotlane"
    try:
        shard_list = [int(x) for x in a.shards.split(",")]
        assert all(1 <= n <= 16 for n in shard_list) and 1 <= a.rounds <= 50
        assert 26000 <= a.base_port and a.base_port + 100 <= 27000
    except (ValueError, AssertionError):
        ap.error("bad --shards, --rounds (1..50) or --base-port (26000..26899)")
    servers_sel = a.servers.split(",")
    loaders = [x for x in a.loaders.split(",") if x]
    if set(servers_sel) - {"slotlane", "redis"} or set(loaders) - {"redis-benchmark", "slotlane-load", "memtier"}:
        ap.error("bad --servers or --loaders")
    for cpus in (a.server_cpus, a.load_cpus):
        if not re.fullmatch(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*", cpus):
            ap.error(f"bad CPU list {cpus!r}")
    a.slotlane_server = os.path.join(a.build, "server", "slotlane-server")
    a.slotlane_load = os.path.join(a.build, "bench", "slotlane-load")
    for exe in ([a.slotlane_server] if "slotlane" in servers_sel else []) + \
               ([a.slotlane_load] if "slotlane-load" in loaders else []):
        if not os.access(exe, os.X_OK):
            ap.error(f"{exe} is missing: run `make build` first")
    for tool in ["taskset", "redis-benchmark"] + (["redis-server", "redis-cli"] if "redis" in servers_sel else []):
        if not shutil.which(tool):
            ap.error(f"{tool} is not on PATH")

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    notes = []
    if "memtier" in loaders and not shutil.which("memtier_benchmark"):
        loaders.remove("memtier")
        notes.append("memtier_benchmark is not on PATH: no memtier rows (Debian 12 has no package)")

    # what the server binary supports, from its --help
    sv_help = ""
    if "slotlane" in servers_sel:
        sv_help = run_cmd([a.slotlane_server, "--help"], 10, check=False).stdout
    one_port_ok = bool(re.search(r"one-port", sv_help)) and not re.search(r"one-port \(not implemented", sv_help)
    one_port_reason = None if one_port_ok else \
        "slotlane-server --help says one-port mode is not implemented yet (build/server/slotlane-server)"

    lock = None
    if not a.no_lock:
        lock_path = os.environ.get("SL_BENCH_LOCK", "/tmp/slotlane-bench.lock")
        lock = open(lock_path, "a")
        wait = float(os.environ.get("SL_BENCH_LOCK_WAIT", "1800"))
        deadline = time.time() + wait
        first = True
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if first:
                    say(f"another benchmark holds {lock_path}; waiting (at most {wait:.0f} s)")
                    first = False
                if time.time() > deadline:
                    say(f"gave up waiting for {lock_path}")
                    return 1
                time.sleep(1)

    workdir = tempfile.mkdtemp(prefix="sl-serverbench.")
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    servers = []
    port = a.base_port
    for n in shard_list:
        if "slotlane" in servers_sel:
            servers.append(Server("slotlane", n, "per-shard", port, a.server_cpus, a, workdir))
            port += n + 2
            if not lv:
                servers.append(Server("slotlane", n, "one-port", port, a.server_cpus, a, workdir))
                port += 2
        if "redis" in servers_sel:
            servers.append(Server("redis", n, "per-shard" if n > 1 else "standalone", port, a.server_cpus, a,
                                  workdir))
            port += 2 * n + 2
    if port > a.base_port + 100:
        say("too many servers for the port range")
        return 2

    rows = []
    for srv in servers:
        for ld in loaders:
            # the mixed 1:10 SET:GET row: slotlane-load only (redis-benchmark runs one command per test)
            for op in ("SET", "GET") + (("MIXED",) if lv and ld == "slotlane-load" else ()):
                rows.append({"server_id": srv.label, "server": srv.kind, "shards": srv.shards,
                             "port_mode": srv.port_mode, "cluster_mode_load": srv.cluster, "loader": ld, "op": op,
                             "ok": True, "error": None, "skipped": None, "rounds": [], "_srv": srv})
    if lv:
        # op-major: the two tools' runs of one op back to back in every round, so that the
        # per-round ratio compares runs a few seconds apart on this shared machine
        order = {"SET": 0, "GET": 1, "MIXED": 2}
        rows.sort(key=lambda r: order[r["op"]])
    status = 0
    try:
        for srv in servers:
            if srv.kind == "slotlane" and srv.port_mode == "one-port" and not one_port_ok:
                srv.error = "skipped: " + one_port_reason
                for r in rows:
                    if r["_srv"] is srv:
                        r["skipped"] = one_port_reason
                        r["ok"] = None
                continue
            try:
                srv.start()
            except Failure as e:
                srv.error = str(e)
                say(f"{srv.label}: FAILED to start: {e}")
                for r in rows:
                    if r["_srv"] is srv:
                        r["ok"], r["error"] = False, f"server did not start: {e}"
        total = sum(1 for r in rows if r["ok"]) * a.rounds
        done = 0
        for rd in range(1, a.rounds + 1):
            for r in rows:
                if not r["ok"]:
                    continue
                srv = r["_srv"]
                done += 1
                try:
                    if r["op"] == "SET":
                        srv.flushall()  # every load starts from the same empty keyspace
                    x = measure(r["loader"], srv, r["op"], a, workdir)
                    x["round"] = rd
                    r["rounds"].append(x)
                    say(f"[{done}/{total}] round {rd} {srv.label:24s} {r['loader']:15s} {r['op']}: "
                        f"{x['req_per_s']:10.0f} req/s  server CPU {x['server_cpu_ns_per_req']:6.0f} ns/req  "
                        f"(load {x['load1']})")
                except Failure as e:
                    r["ok"], r["error"] = False, f"round {rd}: {e}"
                    r["rounds"].append({"round": rd, "error": str(e)})
                    say(f"[{done}/{total}] round {rd} {srv.label} {r['loader']} {r['op']}: FAILED: {e}")
    except Interrupted as e:
        say(f"interrupted ({e}): stopping the servers")
        status = 130
    finally:
        descs = []
        for srv in servers:
            if srv.pids or srv.error:
                descs.append(srv.describe())
            srv.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if status:
        return status

    for r in rows:
        srv = r.pop("_srv")
        good = [x for x in r["rounds"] if "req_per_s" in x]
        if r["ok"] and good:
            m = {"req_per_s": median([x["req_per_s"] for x in good]),
                 "server_cpu_ns_per_req": median([x["server_cpu_ns_per_req"] for x in good]),
                 "server_user_ns_per_req": median([x["server_user_ns"] / x["requests"] for x in good]),
                 "server_sys_ns_per_req": median([x["server_sys_ns"] / x["requests"] for x in good]),
                 "load_cpu_ns_per_req": median([x.get("load_cpu_ns_per_req") for x in good]),
                 "load_user_ns_per_req": median([x.get("load_user_ns_per_req") for x in good]),
                 "load_sys_ns_per_req": median([x.get("load_sys_ns_per_req") for x in good])}
            if r["loader"] == "slotlane-load":
                for k, name in (("p50", "p50_ms"), ("p99", "p99_ms"), ("p99_9", "p99_9_ms")):
                    m[name] = median([x["loader_report"]["latency_ms"][k] for x in good])
            r["median"] = m
        else:
            r["median"] = None
        if r["ok"] is False:
            status = 1
        r["server_command"] = srv.command

    table = table_loaders(rows, a.rounds) if lv else table_server(rows, a.rounds)
    if notes:
        table += "\n\n" + "\n".join(notes)
    finished = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rec = {
        "schema": f"slotlane.bench.{a.benchmark}/1",
        "benchmark": a.benchmark,
        "tool": "bench/server/serverbench.py (" + ("bench/server/load_vs_redis_benchmark.sh" if lv else "bench/server/run") + ")",
        "ok": status == 0,
        "started_at": started, "finished_at": finished,
        "machine": dict(machine(), server_cpus=a.server_cpus, load_cpus=a.load_cpus),
        "versions": versions(a),
        "git": git_info(),
        "command": sys.argv,
        "invocation": a.invocation,
        "config": {"rounds": a.rounds, "quick": a.quick, "shards": shard_list, "connections": a.connections,
                   "pipeline": a.pipeline, "data_size": a.data_size, "key_range": a.key_range,
                   "redis_benchmark_requests": a.requests, "seconds": a.seconds, "sl_threads": a.sl_threads or None,
                   "sl_pipeline": "per batch (--mixed-batches)" if a.sl_per_batch else
                                  "per connection (per-node batches, the cluster default)",
                   "sl_engine": "async (one libuv loop per thread, --inflight 1: " + (
                       "one batch of pipeline random keys per handle, split over the shards" if a.sl_per_batch else
                       "one batch of pipeline keys of that shard per handle and shard") +
                       ", each handle one connection per shard)",
                   "loaders": loaders, "servers": servers_sel,
                   "order": "round-major: every row once per round" + (" (op-major within a round: both tools' SET, "
                            "then both GET, then the mixed row)" if lv else "") + "; FLUSHALL before each SET row; "
                            "keys filled before each GET row (outside the measurement)",
                   "one_port": "measured" if one_port_ok else f"skipped: {one_port_reason}"},
        "method": "server CPU = utime+stime from /proc/<pid>/stat of every server process (all threads) around "
                  "one load-generator run, divided by the requests the run completed (redis-benchmark: -n; "
                  "slotlane-load and memtier: their own counts); req/s as the load generator reports it; "
                  "load CPU = getrusage(RUSAGE_CHILDREN) user+sys of the load generator's whole process (start-up "
                  "included) divided by the same requests; connections_by_port = TCP connections established to "
                  "each shard port (ss), the largest of a few samples during the run",
        "notes": notes,
        "servers": descs,
        "rows": rows,
        "table_markdown": table,
    }
    print()
    print(table)
    if not a.no_record:
        try:
            path = save_record(a.out, a.benchmark, rec)
            print(f"\nrecord: {os.path.relpath(path, os.getcwd())}")
        except OSError as e:
            say(f"cannot write the record: {e}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
