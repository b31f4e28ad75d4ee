#!/usr/bin/env python3
"""bench/run.py — `make bench`: the cluster-cost benchmark of every language against one server.

    python3 bench/run.py [--quick] [--langs c,python,rust,go,node,java,csharp]
                         [--rounds R] [--seconds S] [--warmup S] [--all-clients]
    make bench BENCH_ARGS="--quick --langs c,go"

What it does, in order (DESIGN.md, "The benchmarks"):
  1. starts ONE slotlane-server (build/server/slotlane-server): 4 shards, port mode
     per-shard, --misrouted forward, memory durability, on 127.0.0.1:BASE..BASE+3 (BASE =
     --port-base, default 24700; every port this uses is in 24700-24799), pinned to the
     server CPU (1);
  2. runs each present language's cluster-cost runner against that server, one after
     another, alone, pinned to the client CPU (0): the plain rows on port BASE (the server
     forwards keys of other shards), the cluster and one-node rows by discovery from the
     same port. Each runner also measures its ecosystem's usual client (the comparison:
     hiredis, redis-py, redis-rs, go-redis, ioredis, Jedis; C# has none here: the runner
     has only slotlane, StackExchange.Redis needs NuGet);
  3. reads every runner's JSON record, and writes ONE combined record,
     bench/records/<host>-<date>-<time>-cluster-cost.json (schema
     slotlane.bench.cluster-cost-report/1, bench/records/README.md), which embeds every
     runner's record whole (every round, its versions) and adds normalized rows;
  4. prints the table (bench/report.py) and renders the chart next to the record
     (<same stem>.svg) and to bench/charts/cluster-cost.svg.

Every runner checks every reply: a wrong or error reply fails its row (FAILED with the
error in the table and the record, never a figure); a runner that fails or writes no
record fails its language. The exit status is 1 when any row or runner failed; 130 after
Ctrl-C or SIGTERM (every process stopped, no record written).

Timing: default 3 rounds of (--warmup 0.3 s + --seconds 1 s) per row, 11.5 minutes for the
seven languages on the loaded 2-vCPU VM (builds cached); --quick one round of 0.2 + 0.5 s,
3 minutes. A first run adds the builds (the Rust runner's release build: 2-3 minutes). Progress goes to stderr (language, its elapsed time, the whole run's elapsed
time and an estimate of what remains). Every process this starts runs in its own process
group and is stopped (SIGTERM, then SIGKILL) at the end, on failure, on Ctrl-C and on
SIGTERM. Only one benchmark of the repository runs at a time (flock on
/tmp/slotlane-bench.lock, as ci/bench.sh).

Python 3 standard library only.
"""
import argparse
import datetime
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "server", "tests", "integration"))
import cluster_cost_schema  # noqa: E402  (the one check of every runner's record)
import report  # noqa: E402  (bench/report.py: table and charts from a record)
import resp  # noqa: E402  (the repository's one RESP test client)

HOST = "127.0.0.1"
ALL_LANGS = ["c", "python", "rust", "go", "node", "java", "csharp"]


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def load1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return None


def sh(cmd, cwd=None):
    """First line of a command's output, or None (for version strings)."""
    try:
        out = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=60).stdout.strip()
        return out.splitlines()[0] if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def fmt_s(s):
    s = int(max(0, s))
    return "%d:%02d" % (s // 60, s % 60)


# ------------------------------------------------------------------ processes
class Procs:
    """Every process group this run started, so that each can be stopped by its id."""

    def __init__(self):
        self.groups = []

    def popen(self, cmd, **kw):
        p = subprocess.Popen(cmd, start_new_session=True, **kw)  # own process group
        self.groups.append(p)
        return p

    @staticmethod
    def stop(p, grace=5.0):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # the group may outlive its leader (a runner's children): kill what is left
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass

    def stop_all(self):
        for p in reversed(self.groups):
            self.stop(p)
        self.groups = []


def ping(port, timeout=0.5):
    try:
        c = resp.Conn(port, host=HOST, timeout=timeout)
        try:
            return c.call("PING") == "PONG"
        finally:
            c.close()
    except (OSError, ConnectionError):
        return False


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
            return True
        except OSError:
            return False


def start_server(procs, args, work):
    exe = os.path.join(args.build, "server", "slotlane-server")
    if not os.access(exe, os.X_OK):
        raise SystemExit("bench: %s is not built (make build)" % exe)
    base = args.port_base
    for p in range(base, base + 4):
        if not port_free(p):
            raise SystemExit("bench: port %d is in use; give --port-base (the run uses BASE..BASE+3)" % p)
    cmd = ["taskset", "-c", str(args.server_cpu), exe, "--shards", "4", "--port-mode", "per-shard",
           "--misrouted", "forward", "--bind", HOST, "--port", str(base), "--cpus", str(args.server_cpu),
           "--durability", "memory", "--dir", work, "--loglevel", "warning"]
    logf = open(os.path.join(work, "slotlane-server.log"), "w")
    p = procs.popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.time() + 15
    while not all(ping(base + i) for i in range(4)):
        if p.poll() is not None:
            with open(os.path.join(work, "slotlane-server.log")) as f:
                tail = f.read()[-2000:]
            raise SystemExit("bench: slotlane-server exited (%s):\n%s" % (p.returncode, tail))
        if time.time() > deadline:
            raise SystemExit("bench: slotlane-server does not answer PING on ports %d-%d" % (base, base + 3))
        time.sleep(0.05)
    # every thread of the server on the server CPU (taskset -c covers the first one only)
    subprocess.run(["taskset", "-a", "-p", "-c", str(args.server_cpu), str(p.pid)],
                   stdout=subprocess.DEVNULL, check=True)
    version = sh([exe, "--version"])
    return {
        "pid": p.pid, "command": cmd[3:], "version": version, "ports": list(range(base, base + 4)),
        "cpus": str(args.server_cpu), "shards": 4, "port_mode": "per-shard", "misrouted": "forward",
        "durability": "memory",
        "plain_url": "redis://%s:%d" % (HOST, base), "cluster_url": "redis://%s:%d" % (HOST, base),
        "description": "%s: 4 shards, port_mode per-shard, misrouted forward, durability "
                       "memory, ports %d-%d, pinned to CPU %s; plain rows on port %d (forwarding), cluster "
                       "and one-node rows discover the same process; clients pinned to CPU %s, one runner at "
                       "a time" % (version or "slotlane-server", base, base + 3, args.server_cpu, base, args.client_cpu),
    }


# ------------------------------------------------------------------ languages
class Lang:
    """One language's runner: how to tell it is present, prepare (build) it, run it."""

    def __init__(self, name, title, slotlane, comparison, tools, cells_clients, note=None,
                 exclude=(), startup=10):
        self.name, self.title = name, title
        self.slotlane = slotlane          # the client name of slotlane's rows in its record
        self.comparison = comparison      # the ecosystem's usual client (or None)
        self.tools = tools                # commands that must be on PATH
        self.cells_clients = cells_clients  # (client, api) runs per cell, for the estimate
        self.note = note
        self.exclude = set(exclude)       # rows of other tools a record copies in
        self.startup = startup            # seconds of start-up, fill and the like, for the estimate

    def present(self):
        d = ROOT if self.name == "c" else os.path.join(ROOT, self.name)
        if not os.path.isdir(d):
            return "no %s/ here" % self.name
        missing = [t for t in self.tools if shutil.which(t) is None]
        return ("%s not on PATH" % ", ".join(missing)) if missing else None


LANGS = {
    "c": Lang("c", "C", "slotlane", "hiredis", [], 1.5, startup=3),
    "python": Lang("python", "Python", "slotlane-python", "redis-py", ["python3"], 2, startup=8),
    "rust": Lang("rust", "Rust", "slotlane-rs", "redis-rs", ["cargo"], 2, exclude=["c"], startup=5),
    "go": Lang("go", "Go", "slotlane-go", "go-redis", ["go"], 2, exclude=["slotlane-c", "hiredis"], startup=10),
    "node": Lang("node", "Node", "slotlane", "ioredis", ["node", "npm"], 3, startup=25),
    "java": Lang("java", "Java", "slotlane", "jedis", ["mvn", "java"], 2, startup=40),
    "csharp": Lang("csharp", "C#", "slotlane-csharp", None, ["mono"], 1,
                   note="no comparison client: StackExchange.Redis is not installable here without NuGet",
                   startup=10),
}


def newest_mtime(top):
    """The newest modification time of the sources under top (build outputs left out)."""
    t = 0.0
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in ("build", "dist", "__pycache__", ".pytest_cache") and
                   not x.endswith(".egg-info")]
        for f in files:
            try:
                t = max(t, os.path.getmtime(os.path.join(d, f)))
            except OSError:
                pass
    return t


def prepare(procs, lang, args, log_path):
    """Build what the runner needs, unpinned and before its timed run. Returns an error or None."""
    cmds = []
    if lang == "c":
        if os.path.exists(os.path.join(args.build, "CMakeCache.txt")):  # (a build tree, not just a tool)
            cmds.append((["cmake", "--build", args.build, "-j2", "--target", "sl-cluster-cost"], ROOT))
    elif lang == "python":
        venv = os.path.join(args.build, "python-venv")
        py = os.path.join(venv, "bin", "python")
        ok = os.access(py, os.X_OK) and subprocess.run(
            [py, "-c", "import slotlane, redis, hiredis"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode == 0
        if not ok:
            cmds.append(([sys.executable, "-m", "venv", venv], ROOT))
            cmds.append(([os.path.join(venv, "bin", "pip"), "install", "-q", os.path.join(ROOT, "python"),
                          "redis", "hiredis"], ROOT))
        elif newest_mtime(os.path.join(ROOT, "python")) > os.path.getmtime(os.path.join(venv, "pyvenv.cfg")):
            # the binding changed since it was installed: measure this tree's, not a stale copy
            cmds.append(([os.path.join(venv, "bin", "pip"), "install", "-q", "--force-reinstall", "--no-deps",
                          os.path.join(ROOT, "python")], ROOT))
            cmds.append((["touch", os.path.join(venv, "pyvenv.cfg")], ROOT))
    elif lang == "rust":
        cmds.append((["cargo", "build", "-q", "--release", "--example", "cluster_cost"], os.path.join(ROOT, "rust", "bench")))
    elif lang == "go":
        pass  # go/bench/run.sh builds its tool (seconds when cached)
    elif lang == "node":
        nd = os.path.join(ROOT, "node")
        if not os.path.exists(os.path.join(nd, "build", "Release", "slotlane.node")):
            cmds.append((["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], nd))
        cmds.append((["npm", "install", "--prefix", "bench", "--no-audit", "--no-fund", "--loglevel=error"], nd))
    elif lang == "java":
        pass  # java/run-bench.sh runs Maven's bench profile, which compiles
    elif lang == "csharp":
        cmds.append((["bash", os.path.join(ROOT, "csharp", "mono-build.sh"), "bench-build"], ROOT))
    return run_prepare(procs, lang, cmds, log_path)


def run_prepare(procs, lang, cmds, log_path):
    """Runs build commands [(argv, cwd)] one after another, unpinned, their output to log_path.
    Returns an error or None (bench/async/run.py prepares its runners with it too)."""
    env = dict(os.environ, npm_config_nodedir="/usr")
    with open(log_path, "a") as lf:
        for cmd, cwd in cmds:
            lf.write("$ %s\n" % " ".join(cmd))
            lf.flush()
            p = procs.popen(cmd, cwd=cwd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
            t0 = time.time()
            while True:  # a first build can take minutes: say so now and then
                try:
                    rc = p.wait(30)
                    break
                except subprocess.TimeoutExpired:
                    log("  %s: still running `%s` (%s, load %s)" % (lang, " ".join(cmd[:3]), fmt_s(time.time() - t0),
                                                                   load1()))
            procs.groups.remove(p)
            if rc != 0:
                with open(log_path) as f:
                    tail = " | ".join(f.read().strip().splitlines()[-3:])
                return "preparing %s failed: `%s` exited %d: %s" % (lang, " ".join(cmd), rc, tail)
    return None


def runner_command(lang, args, srv, outdir, c_record):
    """The runner's argv and working directory, against the server this run started."""
    P, C = srv["plain_url"], srv["cluster_url"]
    timing = ["--rounds", str(args.rounds), "--seconds", str(args.seconds), "--warmup", str(args.warmup)]
    desc = ["--server-desc", srv["description"]]
    inv = ["--invocation", "bench/run.py"]
    q = ["--quick"] if args.quick else []
    out = outdir + "/"
    if lang == "c":
        return [os.path.join(args.build, "bench", "sl-cluster-cost"), "--plain", P, "--cluster", C] + q + timing + \
            ["--json", os.path.join(outdir, "c.json")] + desc + inv, ROOT
    if lang == "python":
        return [os.path.join(args.build, "python-venv", "bin", "python"), os.path.join(ROOT, "python", "bench", "cluster_cost.py"), "--cluster-cost",
                "--plain", P, "--cluster", C] + q + timing + ["--json", out] + desc + inv, ROOT
    if lang == "rust":
        clients = [] if args.all_clients else ["--clients", "slotlane-rs,redis-rs"]
        return ["cargo", "run", "-q", "--release", "--example", "cluster_cost", "--", "--plain", P, "--cluster", C] + \
            q + timing + clients + ["--json", out] + desc, os.path.join(ROOT, "rust", "bench")
    if lang == "go":
        crec = ["--c-record", c_record] if c_record else []
        return ["bash", os.path.join(ROOT, "go", "bench", "run.sh"), "--plain", P, "--cluster", C] + q + crec + \
            timing + ["--json", out], ROOT
    if lang == "node":
        clients = [] if args.all_clients else ["--clients", "slotlane,ioredis"]
        return ["node", "bench/cluster-cost.js", "--plain", P, "--cluster", C] + q + timing + clients + \
            ["--json", outdir], os.path.join(ROOT, "node")
    if lang == "java":
        clients = [] if args.all_clients else ["--clients", "slotlane,jedis"]
        return ["bash", os.path.join(ROOT, "java", "run-bench.sh"), "--plain", P, "--cluster", C, "--json", out] + \
            q + timing + clients, ROOT
    if lang == "csharp":
        crec = ["--compare", c_record] if c_record else []
        return ["bash", os.path.join(ROOT, "csharp", "bench.sh"), "--plain", P, "--cluster", C] + crec + \
            ["--json", out] + q + timing, ROOT
    raise ValueError(lang)


def estimate(lang, args):
    """Seconds a runner should take: cells x client runs x rounds x (warmup + seconds), plus start-up."""
    L = LANGS[lang]
    cells = 12  # 3 rows x 2 ops x 2 depths
    clients = L.cells_clients + (1 if args.all_clients and lang in ("rust", "node", "java") else 0)
    return L.startup + cells * clients * args.rounds * (args.warmup + args.seconds + 0.15)


class Progress:
    """Prints a runner's output with a prefix, and a progress line every few seconds."""

    def __init__(self, lang, idx, n, t0, lang_est, rest_est):
        self.lang, self.idx, self.n, self.t0 = lang, idx, n, t0
        self.lang_est, self.rest_est = lang_est, rest_est
        self.started = time.time()
        self.last = 0.0
        self.lock = threading.Lock()

    def line(self, text):
        with self.lock:
            sys.stderr.write("  [%s %s] %s\n" % (self.lang, fmt_s(time.time() - self.started), text.rstrip()))
            sys.stderr.flush()

    def tick(self, force=False):
        now = time.time()
        if not force and now - self.last < 15:
            return
        self.last = now
        el = now - self.started
        left = max(self.lang_est - el, 0) + self.rest_est
        with self.lock:
            sys.stderr.write("bench: [%d/%d %s] %s of ~%s; run %s, ~%s to go (load %s)\n" % (
                self.idx, self.n, self.lang, fmt_s(el), fmt_s(self.lang_est), fmt_s(now - self.t0),
                fmt_s(left), load1()))
            sys.stderr.flush()


def run_runner(procs, cmd, cwd, env, prog, log_path, timeout):
    with open(log_path, "a") as lf:
        lf.write("$ %s\n" % " ".join(cmd))
        p = procs.popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, text=True, errors="replace", bufsize=1)
        tail = []
        log("%s runner pid %d" % (prog.lang, p.pid))

        def pump():
            try:
                for ln in p.stdout:
                    lf.write(ln)
                    tail.append(ln.rstrip())
                    del tail[:-30]
                    prog.line(ln)
            except (ValueError, OSError):  # the run was interrupted: the log is closed
                pass
        t = threading.Thread(target=pump, daemon=True)
        t.start()
        deadline = time.time() + timeout
        while p.poll() is None:
            prog.tick()
            if time.time() > deadline:
                Procs.stop(p)
                t.join(5)
                return None, tail, "timed out after %d s" % timeout
            time.sleep(0.2)
        t.join(10)
        Procs.stop(p)  # whatever it left in its group
        procs.groups.remove(p)
        return p.returncode, tail, None


def find_record(outdir):
    names = sorted(n for n in os.listdir(outdir) if n.endswith(".json") and not n.startswith("."))
    return [os.path.join(outdir, n) for n in names]


# ------------------------------------------------------------------ combining
def versions_of(lang, rec):
    v = dict(rec.get("versions") or {})
    return {k: v[k] for k in sorted(v)}


# The medians a combined row carries: total CPU (user + system, the headline), user, system.
MEDIAN_FIELDS = ("cpu_ns_per_req", "user_ns_per_req", "sys_ns_per_req", "bytes_per_req",
                 "server_input_bytes_per_req", "req_per_s")


def normalize(lang, rec, run_error):
    """The runner's rows as rows of the combined record (every round kept)."""
    L = LANGS[lang]
    rows = []
    for r in rec.get("rows") or []:
        if r.get("client") in L.exclude:
            continue
        client = r.get("client")
        role = "slotlane" if client == L.slotlane else ("comparison" if client == L.comparison else "other")
        med = r.get("median") or {}
        ok = bool(r.get("ok", True)) and not r.get("error")
        rows.append({
            "lang": lang, "client": client, "api": r.get("api"), "role": role,
            "row": r.get("row"), "op": r.get("op"), "depth": r.get("depth"),
            "ok": ok, "error": r.get("error") if not ok else None,
            "bytes_source": r.get("bytes_source"),
            "median": {k: (med.get(k) if ok else None) for k in MEDIAN_FIELDS},
            "rounds": r.get("rounds") or [],
        })
    return rows


def check_rows(lang, rows, args):
    """Every cell the runner was asked for must be there: a missing row is a failed row."""
    L = LANGS[lang]
    want = [L.slotlane] + ([L.comparison] if L.comparison else [])
    have = {(r["client"], r["row"], r["op"], r["depth"]) for r in rows}
    out = []
    for client in want:
        for row in ("plain", "cluster", "one-node"):
            if lang == "c" and client == "hiredis" and row != "plain":
                continue  # sl-cluster-cost's hiredis rows are the plain ones only
            for op in ("GET", "SET"):
                for depth in (16, 64):
                    if (client, row, op, depth) not in have:
                        out.append({"lang": lang, "client": client, "api": None, "role":
                                    "slotlane" if client == L.slotlane else "comparison", "row": row, "op": op,
                                    "depth": depth, "ok": False,
                                    "error": "the runner's record has no such row", "bytes_source": None,
                                    "median": {k: None for k in MEDIAN_FIELDS},
                                    "rounds": []})
    return out


def add_ratios(rows):
    """x_plain (same language and client, op, depth) and x_comparison (slotlane / comparison, same
    cell) on total CPU per request (user + system, the headline); x_plain_user and
    x_comparison_user the same on user CPU alone."""
    def total(r):
        return r["median"]["cpu_ns_per_req"] if r["ok"] else None

    def user(r):
        return r["median"]["user_ns_per_req"] if r["ok"] else None

    for suffix, f in (("", total), ("_user", user)):
        best = {}
        for r in rows:
            k = (r["lang"], r["client"], r["row"], r["op"], r["depth"])
            if f(r) is not None and (k not in best or f(r) < f(best[k])):
                best[k] = r  # a client measured through several APIs: its cheapest one
        for r in rows:
            p = best.get((r["lang"], r["client"], "plain", r["op"], r["depth"]))
            r["x_plain" + suffix] = round(f(r) / f(p), 3) if f(r) is not None and p is not None and f(p) else None
            r["x_comparison" + suffix] = None
            if r["role"] == "slotlane":
                comp = LANGS[r["lang"]].comparison
                c = best.get((r["lang"], comp, r["row"], r["op"], r["depth"])) if comp else None
                if f(r) is not None and c is not None and f(c):
                    r["x_comparison" + suffix] = round(f(r) / f(c), 3)


def rc_explained(run, rows):
    """Whether a runner's non-zero exit is its failed rows (and nothing else went wrong)."""
    rec = run.get("record")
    return (rec is not None and run.get("exit_code") == 1 and rec.get("ok") is False
            and any(not r["ok"] and r["error"] != "the runner's record has no such row" for r in rows))


def write_record(rec, outdir, stem_suffix):
    """bench/records/README.md: a hard link of a finished temporary file, never a replaced name."""
    os.makedirs(outdir, exist_ok=True)
    host = socket.gethostname()
    tmp = os.path.join(outdir, ".%s-%d.tmp" % (stem_suffix, os.getpid()))
    with open(tmp, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    try:
        while True:
            name = os.path.join(outdir, "%s-%s-%s.json" % (host, utcnow().strftime("%Y-%m-%d-%H%M%S"), stem_suffix))
            try:
                os.link(tmp, name)
                return name
            except FileExistsError:
                time.sleep(1.0 - (time.time() % 1.0) + 0.01)
    finally:
        os.unlink(tmp)


def machine_info(args):
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    cpu = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu_model": cpu, "cores": os.cpu_count(),
            "kernel": platform.release(), "client_cpus": str(args.client_cpu), "server_cpus": str(args.server_cpu)}


def git_info():
    commit = sh(["git", "-C", ROOT, "rev-parse", "HEAD"])
    st = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
    return {"commit": commit if commit and re.fullmatch(r"[0-9a-f]{40}", commit) else "unknown",
            "dirty": bool(st.stdout.strip()) if st.returncode == 0 else None}


def toolchain_versions(langs):
    v = {"python3": platform.python_version(), "redis_cli": sh(["redis-cli", "--version"])}
    probes = {"c": ["cc", "--version"], "rust": ["rustc", "--version"], "go": ["go", "version"],
              "node": ["node", "--version"], "java": ["java", "-version"], "csharp": ["mono", "--version"]}
    for lang in langs:
        if lang in probes:
            v[lang] = sh(probes[lang])
    return v


def take_lock():
    """Waits for the repository's one benchmark lock (SL_BENCH_LOCK, /tmp/slotlane-bench.lock, as
    ci/bench.sh); returns its open file (held while it stays open), or None after Ctrl-C."""
    path = os.environ.get("SL_BENCH_LOCK", "/tmp/slotlane-bench.lock")
    wait = float(os.environ.get("SL_BENCH_LOCK_WAIT", "1800"))
    lockf = open(path, "a")
    t = time.time()
    try:
        while True:
            try:
                fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return lockf
            except OSError:
                if time.time() - t > wait:
                    raise SystemExit("bench: gave up waiting for %s after %d s" % (path, wait))
                if int(time.time() - t) % 30 == 0:
                    log("another benchmark holds %s; waiting (%s of at most %s)" % (
                        path, fmt_s(time.time() - t), fmt_s(wait)))
                time.sleep(1)
    except KeyboardInterrupt:
        log("interrupted while waiting for %s; nothing was started" % path)
        lockf.close()
        return None


def install_signals():
    """Ctrl-C, SIGTERM and SIGHUP raise KeyboardInterrupt (so every started process is stopped),
    even when started with SIGINT ignored (`cmd &` in a script)."""
    def on_term(signum, frame):
        raise KeyboardInterrupt("SIGTERM")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)


# ------------------------------------------------------------------ main
def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one round of 0.2 + 0.5 s per row (whole run < 5 min)")
    ap.add_argument("--langs", default=",".join(ALL_LANGS),
                    help="languages to run, in this order (default: every present one: %(default)s)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per row (default 3; --quick 1)")
    ap.add_argument("--seconds", type=float, default=None, help="timed loop per row and round (default 1; --quick 0.5)")
    ap.add_argument("--warmup", type=float, default=None, help="warmup per row and round (default 0.3; --quick 0.2)")
    ap.add_argument("--all-clients", action="store_true",
                    help="every client each runner has (rust: slotlane-rs-prebuilt, node: node-redis, java: "
                         "lettuce), not only slotlane and the comparison client")
    ap.add_argument("--port-base", type=int, default=int(os.environ.get("SL_BENCH_PORT", "24700")),
                    help="the server's first port (uses BASE..BASE+3; default 24700)")
    ap.add_argument("--server-cpu", type=int, default=int(os.environ.get("SL_BENCH_SERVER_CPU", "1")))
    ap.add_argument("--client-cpu", type=int, default=int(os.environ.get("SL_BENCH_CLIENT_CPU", "0")))
    ap.add_argument("--build", default=os.environ.get("SL_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--records", default=os.path.join(ROOT, "bench", "records"), help="where the record goes")
    ap.add_argument("--charts", default=os.path.join(ROOT, "bench", "charts"),
                    help="where the stable chart copy goes (cluster-cost.svg); '' for none")
    ap.add_argument("--runner-timeout", type=float, default=None, help="seconds before a runner is stopped "
                    "(default: 4 x its estimate + 300)")
    ap.add_argument("--no-lock", action="store_true", help="do not wait for /tmp/slotlane-bench.lock")
    a = ap.parse_args(argv)
    a.rounds = a.rounds if a.rounds is not None else (1 if a.quick else 3)
    a.seconds = a.seconds if a.seconds is not None else (0.5 if a.quick else 1.0)
    a.warmup = a.warmup if a.warmup is not None else (0.2 if a.quick else 0.3)
    if a.rounds < 1 or a.seconds <= 0 or a.warmup < 0:
        ap.error("--rounds must be >= 1, --seconds > 0, --warmup >= 0")
    if not 24700 <= a.port_base <= 24796:
        ap.error("--port-base must leave BASE..BASE+3 inside 24700-24799")
    langs = [s.strip() for s in a.langs.split(",") if s.strip()]
    bad = [s for s in langs if s not in LANGS]
    if bad or not langs:
        ap.error("--langs: unknown %s (known: %s)" % (",".join(bad) or "(empty)", ",".join(ALL_LANGS)))
    a.langs = langs
    a.build = os.path.abspath(a.build)
    return a


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    procs = Procs()

    install_signals()

    git = git_info()  # the code that runs, before anyone edits the tree during the run
    lockf = None
    if not args.no_lock:
        lockf = take_lock()
        if lockf is None:
            return 130

    work = tempfile.mkdtemp(prefix="sl-bench-run.")
    t0 = time.time()
    started = utcnow()
    runs, rows = [], []
    interrupted = False
    srv = None
    try:
        langs = []
        for lang in args.langs:
            why = LANGS[lang].present()
            if why:
                log("%s skipped: %s" % (lang, why))
                runs.append({"lang": lang, "ok": None, "skipped": why})
            else:
                langs.append(lang)
        log("languages: %s; %d round(s) of %.1f + %.1f s per row; estimate ~%s after the builds" % (
            ",".join(langs), args.rounds, args.warmup, args.seconds, fmt_s(sum(estimate(x, args) for x in langs))))
        srv = start_server(procs, args, work)
        log("slotlane-server pid %d on %s:%d-%d, CPU %s" % (srv["pid"], HOST, args.port_base, args.port_base + 3,
                                                          args.server_cpu))
        env = dict(os.environ, SL_BENCH_CLIENT_CPU=str(args.client_cpu), SL_BENCH_SERVER_CPU=str(args.server_cpu),
                   npm_config_nodedir="/usr")
        c_record = None
        for i, lang in enumerate(langs):
            outdir = os.path.join(work, lang)
            os.makedirs(outdir)
            log_path = os.path.join(work, lang + ".log")
            run = {"lang": lang, "ok": False, "error": None, "command": None, "started_at": iso(utcnow()),
                   "load1_start": load1()}
            runs.append(run)
            run_t0 = time.time()
            log("[%d/%d %s] preparing (build)" % (i + 1, len(langs), lang))
            err = prepare(procs, lang, args, log_path)
            if err is None:
                cmd, cwd = runner_command(lang, args, srv, outdir, c_record)
                run["command"] = ["taskset", "-c", str(args.client_cpu)] + cmd
                est = estimate(lang, args)
                prog = Progress(lang, i + 1, len(langs), t0, est, sum(estimate(x, args) for x in langs[i + 1:]))
                prog.tick(force=True)
                timeout = args.runner_timeout or (4 * est + 300)
                rc, tail, err = run_runner(procs, run["command"], cwd, env, prog, log_path, timeout)
                run["exit_code"] = rc
                if err is None and rc != 0:
                    err = "exited with status %s: %s" % (rc, " / ".join(x.strip() for x in tail[-3:] if x.strip()))
                recs = find_record(outdir)
                if recs:
                    with open(recs[-1]) as f:
                        try:
                            run["record"] = json.load(f)
                        except ValueError as e:
                            err = err or "its record is not JSON: %s" % e
                    if "record" in run:
                        problems = cluster_cost_schema.validate(run["record"])
                        if problems:  # its figures are not trusted: every row fails
                            run["schema_problems"] = problems
                            err = (err + "; " if err else "") + "its record breaks the cluster-cost schema (%d problems): %s" % (
                                len(problems), "; ".join(problems[:3]))
                    if lang == "c" and "record" in run:
                        c_record = recs[-1]
                elif err is None:
                    err = "it wrote no record"
            run["finished_at"] = iso(utcnow())
            run["load1_end"] = load1()
            run["elapsed_s"] = round(time.time() - run_t0, 1)
            mine = normalize(lang, run["record"], err) if "record" in run else []
            mine += check_rows(lang, mine, args)
            # A runner exits non-zero when a row failed its checks: its other rows stand. A failure
            # its record does not explain (a crash, a timeout, a record where every row is ok)
            # leaves none of its figures trusted.
            explained = rc_explained(run, mine) and not run.get("schema_problems")
            for r in mine:
                if not r["ok"] and not r["error"]:
                    r["error"] = err or "failed"
                if r["ok"] and err and not explained:
                    r["ok"], r["error"] = False, err
                    r["median"] = {k: None for k in r["median"]}
            rows.extend(mine)
            run["error"] = err
            run["ok"] = err is None and all(r["ok"] for r in mine)
            nf = sum(1 for r in mine if not r["ok"])
            log("[%d/%d %s] %s (%d rows, %d failed); run %s" % (
                i + 1, len(langs), lang, "done" if err is None else "FAILED: " + err, len(mine), nf,
                fmt_s(time.time() - t0)))
    except KeyboardInterrupt as e:
        interrupted = True
        log("interrupted (%s); stopping every process this run started" % (e or "SIGINT"))
    finally:
        procs.stop_all()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # nothing may stop the clean-up now
        if interrupted:
            shutil.rmtree(work, ignore_errors=True)
            log("stopped; no record written")
            return 130
    add_ratios(rows)
    finished = utcnow()
    rec = {
        "schema": "slotlane.bench.cluster-cost-report/1",
        "benchmark": "cluster-cost-report",
        "tool": "bench/run.py",
        "ok": all(r["ok"] for r in rows) and all(x.get("ok") is not False for x in runs) and bool(rows),
        "started_at": iso(started), "finished_at": iso(finished),
        "elapsed_s": round(time.time() - t0, 1),
        "machine": machine_info(args),
        "versions": {"slotlane": open(os.path.join(ROOT, "VERSION")).read().strip(),
                     "slotlane_server": srv["version"] if srv else None,
                     "toolchains": toolchain_versions([x for x in args.langs]),
                     "languages": {x["lang"]: versions_of(x["lang"], x["record"]) for x in runs if "record" in x}},
        "git": git,
        "command": ["bench/run.py"] + argv,
        "invocation": os.environ.get("SL_BENCH_INVOCATION"),
        "server": srv,
        "config": {"rounds": args.rounds, "seconds": args.seconds, "warmup_seconds": args.warmup,
                   "quick": args.quick, "langs": args.langs, "all_clients": args.all_clients,
                   "comparison": {k: LANGS[k].comparison for k in args.langs},
                   "comparison_notes": {k: LANGS[k].note for k in args.langs if LANGS[k].note},
                   "order": "one runner after another, alone; each runner's own order inside"},
        "runs": runs,
        "rows": rows,
    }
    rec["table_markdown"] = report.cluster_table(rec)
    path = write_record(rec, args.records, "cluster-cost")
    shutil.rmtree(work, ignore_errors=True)
    print(rec["table_markdown"])
    svg = report.cluster_svg(rec)
    svg_path = path[:-len(".json")] + ".svg"
    with open(svg_path, "w") as f:
        f.write(svg)
    if args.charts:
        os.makedirs(args.charts, exist_ok=True)
        with open(os.path.join(args.charts, "cluster-cost.svg"), "w") as f:
            f.write(svg)
    def show(p):  # relative to the repository when inside it
        r = os.path.relpath(p, ROOT)
        return p if r.startswith("..") else r
    print("\nrecord: %s\nchart:  %s%s" % (show(path), show(svg_path), ("\n        " + show(
        os.path.join(args.charts, "cluster-cost.svg"))) if args.charts else ""))
    log("finished in %s (load %s)" % (fmt_s(time.time() - t0), load1()))
    if not rec["ok"]:
        log("some rows FAILED (see the table)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
