#!/usr/bin/env python3
"""bench/async/run.py — `make bench`'s async rows: every language's async-cost runner against one server.

    python3 bench/async/run.py [--quick] [--langs python,rust,go,node,java,csharp]
                               [--rounds R] [--requests N] [--all-clients] [--port-base BASE]
    make bench                      (after bench/run.py; BENCH_ASYNC=0 leaves this out)
    make bench BENCH_ASYNC_ARGS="--langs python,go"

Issue 18's benchmark: N concurrent callers (N = 64 and 512) each awaiting one GET or SET at a
time, rows plain (the server's first port, misrouted forward) and cluster (the cluster client
discovering the same process), keys key:0..4095 with 32-byte values as the cluster-cost rows,
every reply checked by the runner; in the same runner, interleaved per round, the ecosystem's
async client does the same: redis.asyncio (Redis / RedisCluster; and valkey-glide's async
client when it is installed), redis-rs async on tokio (MultiplexedConnection / async
ClusterClient), go-redis (Client / ClusterClient), ioredis (auto-pipelining; Redis.Cluster),
Lettuce's async API; C# has no comparison client here (no NuGet): its rows report figures only.

What it does, in order, with bench/run.py's functions (not copies of them):
  1. starts ONE slotlane-server as bench/run.py does (4 shards, per-shard, --misrouted forward,
     memory durability, 127.0.0.1:BASE..BASE+3, default BASE 24704, pinned to the server CPU 1);
  2. prepares (builds) and runs each present language's async-cost runner against it, one
     after another, alone, pinned to the client CPU (0): python/bench/async_cost.py --url,
     rust/bench/examples/async_cost.rs --url, go/bench/cmd/async-cost -url,
     node/bench/async-cost.js --url, java/bench/async-cost.sh --plain/--cluster
     (AsyncCostBench), csharp/bench.sh --async-cost --plain/--cluster (AsyncCost.cs);
  3. reads every runner's record (schema slotlane.bench.async-cost/1), checks it, and writes ONE
     record, bench/records/<host>-<date>-<time>-async-cost.json (schema
     slotlane.bench.async-cost-report/1, bench/records/README.md): every runner's record whole,
     and one normalised row per (language, client, row, op, callers) with the medians of total
     CPU per request (user + system of the runner's whole process), user, system, requests per
     second, p50/p99 latency of the awaits, and x_comparison: the median over rounds of
     (slotlane's total CPU per request / the comparison client's) in the same round;
  4. prints the table (the same text is the record's table_markdown).

A wrong or error reply fails its row (FAILED with the error, never a figure); a row a runner
was asked for and did not report fails; a runner that crashes, times out or writes a record
that breaks the row format fails every row of its language. Exit status 1 when any row or
runner failed, 130 after Ctrl-C or SIGTERM (every process stopped, no record written).

Timing: default 3 rounds of each runner's own request count per row (Python, Go, Rust 20480;
Node, Java 40960; C# 65536), 7 minutes on the 2-vCPU VM at load average ~10 (builds
cached); --quick: 1 round of 8192 requests per row, 3 minutes. Only one benchmark of the
repository runs at a time (flock on /tmp/slotlane-bench.lock, as bench/run.py).

Python 3 standard library only.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import run as bench_run  # noqa: E402  (bench/run.py: the server, processes, builds, records)

SCHEMA = "slotlane.bench.async-cost-report/1"
RUNNER_SCHEMA = "slotlane.bench.async-cost/1"
ALL_LANGS = ["python", "rust", "go", "node", "java", "csharp"]
ROWS, OPS, CALLERS = ("plain", "cluster"), ("GET", "SET"), (64, 512)
FIELDS = ("cpu_ns_per_req", "user_ns_per_req", "sys_ns_per_req", "req_per_s", "p50_us", "p99_us")
QUICK_REQUESTS = 8192


class AsyncLang:
    """One language's async runner: its clients, by the names its record gives them."""

    def __init__(self, slotlane, comparison, variants=(), others=(), requests=20480, us_per_req=30,
                 startup=10, note=None, default_clients=None):
        self.slotlane = slotlane              # slotlane's async client (every cell expected)
        self.comparison = comparison          # the ecosystem's async client (every cell expected), or None
        self.variants = tuple(variants)       # other slotlane clients a runner may report (role slotlane)
        self.others = tuple(others)           # other comparison clients (role comparison, not required)
        self.requests = requests              # the runner's own default requests per row and round
        self.us_per_req = us_per_req          # wall per request of its clients, for the estimate
        self.startup = startup
        self.note = note
        self.default_clients = default_clients  # --clients unless --all-clients (None: the runner's own)

    def role(self, client):
        if client == self.slotlane or client in self.variants:
            return "slotlane"
        if client == self.comparison or client in self.others:
            return "comparison"
        return "other"

    def clients(self, all_clients):
        n = 1 + (1 if self.comparison else 0) + len(self.others)
        return n + (len(self.variants) if all_clients or self.default_clients is None else 0)


LANGS = {
    "python": AsyncLang("slotlane-python-asyncio", "redis-py-asyncio", others=["valkey-glide-asyncio"],
                        us_per_req=250, startup=8,
                        note="valkey-glide's async client is measured when it is installed in the venv"),
    "rust": AsyncLang("slotlane-rs-aio", "redis-rs-async", us_per_req=15, startup=5),
    "go": AsyncLang("slotlane-go", "go-redis", us_per_req=100, startup=10),
    "node": AsyncLang("slotlane-node", "ioredis", requests=40960, us_per_req=15, startup=10),
    "java": AsyncLang("slotlane-java-async", "lettuce-async", variants=["slotlane-java-async-direct"],
                      requests=40960, us_per_req=20, startup=60,
                      default_clients="slotlane-java-async,lettuce-async"),
    "csharp": AsyncLang("slotlane-csharp-async", None, requests=65536, us_per_req=15, startup=15,
                        note="no comparison client: StackExchange.Redis is not installable here without NuGet"),
}


# ------------------------------------------------------------------ arguments
def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench/async/run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 round of %d requests per row" % QUICK_REQUESTS)
    ap.add_argument("--langs", default=",".join(ALL_LANGS),
                    help="languages to run, in this order (default: every present one: %(default)s)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per row (default 3; --quick 1)")
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per row and round (default: each runner's own; --quick %d)" % QUICK_REQUESTS)
    ap.add_argument("--all-clients", action="store_true",
                    help="every client each runner has (java: slotlane-java-async-direct too)")
    ap.add_argument("--port-base", type=int, default=int(os.environ.get("SL_BENCH_ASYNC_PORT", "24704")),
                    help="the server's first port (uses BASE..BASE+3; default 24704)")
    ap.add_argument("--server-cpu", type=int, default=int(os.environ.get("SL_BENCH_SERVER_CPU", "1")))
    ap.add_argument("--client-cpu", type=int, default=int(os.environ.get("SL_BENCH_CLIENT_CPU", "0")))
    ap.add_argument("--build", default=os.environ.get("SL_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--records", default=os.path.join(ROOT, "bench", "records"), help="where the record goes")
    ap.add_argument("--runner-timeout", type=float, default=None,
                    help="seconds before a runner is stopped (default: 4 x its estimate + 300)")
    ap.add_argument("--no-lock", action="store_true", help="do not wait for /tmp/slotlane-bench.lock")
    a = ap.parse_args(argv)
    a.rounds = a.rounds if a.rounds is not None else (1 if a.quick else 3)
    if a.requests is None and a.quick:
        a.requests = QUICK_REQUESTS
    if a.rounds < 1:
        ap.error("--rounds must be >= 1")
    if a.requests is not None and a.requests < max(CALLERS):
        ap.error("--requests must be >= %d (every one of the %d callers makes at least one)" % (
            max(CALLERS), max(CALLERS)))
    if not 24700 <= a.port_base <= 24796:
        ap.error("--port-base must leave BASE..BASE+3 inside 24700-24799")
    langs = [s.strip() for s in a.langs.split(",") if s.strip()]
    bad = [s for s in langs if s not in LANGS]
    if bad or not langs:
        ap.error("--langs: unknown %s (known: %s; C has no async runner)" % (
            ",".join(bad) or "(empty)", ",".join(ALL_LANGS)))
    a.langs = langs
    a.build = os.path.abspath(a.build)
    return a


def requests_of(lang, args):
    return args.requests if args.requests is not None else LANGS[lang].requests


def estimate(lang, args):
    """Seconds a runner should take: cells x clients x rounds x requests x wall per request, plus start-up."""
    L = LANGS[lang]
    cells = len(ROWS) * len(OPS) * len(CALLERS)
    return L.startup + cells * L.clients(args.all_clients) * args.rounds * requests_of(lang, args) * L.us_per_req / 1e6


# ------------------------------------------------------------------ runners
def prepare_commands(lang, args, work):
    """What a runner needs built beyond bench/run.py's prepare (which covers Python's venv,
    Node's addon and bench deps, the C# build): [(argv, cwd)]."""
    if lang == "rust":
        return [(["cargo", "build", "-q", "--release", "--example", "async_cost"], os.path.join(ROOT, "rust", "bench"))]
    if lang == "go":
        return [(["go", "build", "-o", os.path.join(work, "go-async-cost"), "./cmd/async-cost"],
                 os.path.join(ROOT, "go", "bench"))]
    return []


def prepare(procs, lang, args, work, log_path):
    if lang in ("python", "node", "csharp"):
        err = bench_run.prepare(procs, lang, args, log_path)
        if err:
            return err
    return bench_run.run_prepare(procs, lang, prepare_commands(lang, args, work), log_path)


def runner_command(lang, args, srv, outdir, work):
    """The runner's argv and working directory, against the server this run started."""
    url = srv["plain_url"]
    desc = srv["description"]
    n = ["--rounds", str(args.rounds)]
    if args.requests is not None:
        n += ["--requests", str(args.requests)]
    out = outdir + "/"
    L = LANGS[lang]
    clients = ["--clients", L.default_clients] if L.default_clients and not args.all_clients else []
    if lang == "python":
        return [os.path.join(args.build, "python-venv", "bin", "python"),
                os.path.join(ROOT, "python", "bench", "async_cost.py"), "--url", url, "--server-desc", desc] + \
            n + ["--json", out], ROOT
    if lang == "rust":
        return ["cargo", "run", "-q", "--release", "--example", "async_cost", "--", "--url", url,
                "--server-desc", desc] + n + ["--json", outdir], os.path.join(ROOT, "rust", "bench")
    if lang == "go":
        return [os.path.join(work, "go-async-cost"), "-url", url, "-server-desc", desc] + \
            [x.replace("--", "-", 1) if x.startswith("--") else x for x in n] + ["-json", out], \
            os.path.join(ROOT, "go", "bench")
    if lang == "node":
        return ["node", "bench/async-cost.js", "--url", url, "--server-desc", desc] + n + ["--json", outdir], \
            os.path.join(ROOT, "node")
    if lang == "java":
        # (AsyncCostBench's -Dbench.args is one string Maven splits: a description without quotes)
        return ["bash", os.path.join(ROOT, "java", "bench", "async-cost.sh"), "--plain", url, "--cluster",
                srv["cluster_url"], "--server-desc", desc.replace('"', "'"), "--json", out] + n + clients, ROOT
    if lang == "csharp":
        return ["bash", os.path.join(ROOT, "csharp", "bench.sh"), "--async-cost", "--plain", url,
                "--cluster", srv["cluster_url"], "--json", out] + n, ROOT
    raise ValueError(lang)


# ------------------------------------------------------------------ records
def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and x >= 0


def validate(rec):
    """The problems of a runner's record (slotlane.bench.async-cost/1), [] when it is usable:
    every row names its client, row, op and callers; an ok row has every median figure and its
    rounds with their total CPU per request."""
    if not isinstance(rec, dict):
        return ["the record is not a JSON object"]
    p = []
    if rec.get("schema") != RUNNER_SCHEMA:
        p.append("schema is %r, not %s" % (rec.get("schema"), RUNNER_SCHEMA))
    rows = rec.get("rows")
    if not isinstance(rows, list):
        return p + ["rows is not a list"]
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            p.append("rows[%d] is not an object" % i)
            continue
        where = "rows[%d] (%s %s %s %s)" % (i, r.get("client"), r.get("row"), r.get("op"), r.get("callers"))
        if not isinstance(r.get("client"), str) or r.get("row") not in ROWS or r.get("op") not in OPS \
                or not isinstance(r.get("callers"), int):
            p.append("%s: client, row (plain|cluster), op (GET|SET) and callers (an integer) expected" % where)
            continue
        if not isinstance(r.get("ok"), bool):
            p.append("%s: ok is not true or false" % where)
        if r.get("ok") is True:
            med = r.get("median")
            if not isinstance(med, dict):
                p.append("%s: an ok row without a median" % where)
            else:
                for k in FIELDS:
                    if not _num(med.get(k)):
                        p.append("%s: median.%s is not a number >= 0" % (where, k))
            rounds = r.get("rounds")
            if not isinstance(rounds, list) or not rounds or not all(
                    isinstance(x, dict) and _num(x.get("cpu_ns_per_req")) for x in rounds):
                p.append("%s: an ok row without its rounds' cpu_ns_per_req" % where)
    return p


def normalize(lang, rec):
    """The runner's rows as rows of the combined record (every round kept)."""
    L = LANGS[lang]
    rows = []
    for r in rec.get("rows") or []:
        ok = r.get("ok") is True and not r.get("error")
        med = r.get("median") if ok and isinstance(r.get("median"), dict) else {}
        rows.append({
            "lang": lang, "client": r["client"], "role": L.role(r["client"]),
            "row": r["row"], "op": r["op"], "callers": r["callers"],
            "ok": ok, "error": None if ok else (r.get("error") or "the runner marked the row failed"),
            "median": {k: (med.get(k) if ok else None) for k in FIELDS},
            "rounds": r.get("rounds") if isinstance(r.get("rounds"), list) else [],
        })
    return rows


def check_rows(lang, rows):
    """Every cell the runner was asked for must be there: a missing row is a failed row."""
    L = LANGS[lang]
    have = {(r["client"], r["row"], r["op"], r["callers"]) for r in rows}
    out = []
    for client in [L.slotlane] + ([L.comparison] if L.comparison else []):
        for row in ROWS:
            for op in OPS:
                for n in CALLERS:
                    if (client, row, op, n) not in have:
                        out.append({"lang": lang, "client": client, "role": L.role(client), "row": row, "op": op,
                                    "callers": n, "ok": False, "error": "the runner's record has no such row",
                                    "median": {k: None for k in FIELDS}, "rounds": []})
    return out


def sync_user(lang, rec, row, op):
    """The user CPU per request of the runner's blocking pipeline at depth 16 (same op; same row
    when it has one), for issue 18's "async user CPU <= 1.5 x the sync pipeline at depth 16"."""
    cands = [s for s in (rec.get("sync_rows") or []) if isinstance(s, dict) and s.get("op") == op
             and s.get("ok", True) is not False and isinstance(s.get("median"), dict)
             and _num(s["median"].get("user_ns_per_req")) and s["median"]["user_ns_per_req"] > 0]
    same = [s for s in cands if s.get("row") == row]
    s = (same or cands or [None])[0]
    return (s["client"], s.get("row"), s["median"]["user_ns_per_req"]) if s else None


def round_ratio(a, b, field="cpu_ns_per_req"):
    """The median over rounds of a's figure / b's figure in the same round (rounds paired by
    index: every runner interleaves its clients inside each round), or None."""
    xs = []
    for ra, rb in zip(a["rounds"], b["rounds"]):
        fa, fb = ra.get(field), rb.get(field)
        if _num(fa) and _num(fb) and fb > 0:
            xs.append(fa / fb)
    return round(statistics.median(xs), 3) if xs else None


def add_ratios(rows, records=None):
    """On every ok slotlane row: x_comparison (total CPU per request over the language's
    comparison client's, the median of per-round ratios), x_comparison_user (the same on user
    CPU), x_others ({client: ratio} for its other comparison clients), x_sync_user (its median
    user CPU over the sync pipeline's at depth 16, when the runner measured one)."""
    records = records or {}
    by = {(r["lang"], r["client"], r["row"], r["op"], r["callers"]): r for r in rows if r["ok"]}
    for r in rows:
        L = LANGS[r["lang"]]
        r["comparison"] = L.comparison if r["role"] == "slotlane" else None
        r["x_comparison"] = r["x_comparison_user"] = r["x_sync_user"] = None
        r["x_others"] = {}
        if r["role"] != "slotlane" or not r["ok"]:
            continue
        c = by.get((r["lang"], L.comparison, r["row"], r["op"], r["callers"])) if L.comparison else None
        if c is not None:
            r["x_comparison"] = round_ratio(r, c)
            r["x_comparison_user"] = round_ratio(r, c, "user_ns_per_req")
        for o in L.others:
            c = by.get((r["lang"], o, r["row"], r["op"], r["callers"]))
            if c is not None:
                r["x_others"][o] = round_ratio(r, c)
        s = sync_user(r["lang"], records.get(r["lang"]) or {}, r["row"], r["op"])
        if s and r["median"]["user_ns_per_req"] is not None:
            r["x_sync_user"] = round(r["median"]["user_ns_per_req"] / s[2], 3)
            r["sync_pipeline"] = {"client": s[0], "row": s[1], "depth": 16, "user_ns_per_req": s[2]}


def combine_run(lang, run, err):
    """The rows of one runner's run (run["record"] when it wrote one), with err (the runner's
    failure, or None) applied: a failure its record does not explain fails every row."""
    rows = []
    if "record" in run:
        problems = validate(run["record"])
        if problems:  # its figures are not trusted: every row fails
            run["schema_problems"] = problems
            err = (err + "; " if err else "") + "its record breaks the async-cost row format (%d problems): %s" % (
                len(problems), "; ".join(problems[:3]))
            named = [x for x in (run["record"].get("rows") if isinstance(run["record"], dict) else None) or []
                     if isinstance(x, dict) and isinstance(x.get("client"), str) and x.get("row") in ROWS
                     and x.get("op") in OPS and isinstance(x.get("callers"), int)]
            rows = normalize(lang, {"rows": named})  # (each fails below: err is set)
        else:
            rows = normalize(lang, run["record"])
    elif err is None:
        err = "it wrote no record"
    rows += check_rows(lang, rows)
    explained = bench_run.rc_explained(run, rows) and not run.get("schema_problems")
    for r in rows:
        if r["ok"] and err and not explained:
            r["ok"], r["error"] = False, err
            r["median"] = {k: None for k in FIELDS}
    run["error"] = err
    run["ok"] = err is None and all(r["ok"] for r in rows)
    return rows


# ------------------------------------------------------------------ the table
def _f(x, fmt="%.0f"):
    return "—" if x is None else fmt % x


def table(rec):
    order = {k: i for i, k in enumerate(ALL_LANGS)}
    role = {"slotlane": 0, "comparison": 1, "other": 2}
    rows = sorted(rec["rows"], key=lambda r: (order.get(r["lang"], 99), ROWS.index(r["row"]), OPS.index(r["op"]),
                                              r["callers"], role.get(r["role"], 3), r["client"]))
    out = ["Async rows (issue 18): N callers each awaiting one GET or SET; total CPU per request = user + system "
           "of the runner's whole process. x comparison: slotlane's total CPU per request over the ecosystem "
           "client's, the median of per-round ratios (target <= 0.5). x sync: slotlane's user CPU over its "
           "blocking pipeline at depth 16 (target <= 1.5).", "",
           "| Language | client | row | op | N | total CPU ns/req (user / sys) | req/s | p50 / p99 µs | x comparison | x sync (user) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lang = bench_run.LANGS[r["lang"]].title if r["lang"] in bench_run.LANGS else r["lang"]
        head = "| %s | %s | %s | %s | %d |" % (lang, r["client"], r["row"], r["op"], r["callers"])
        if not r["ok"]:
            out.append("%s FAILED: %s | | | | |" % (head, (r["error"] or "failed").replace("|", "/")[:200]))
            continue
        m = r["median"]
        xc = "—"
        if r["role"] == "slotlane":
            parts = []
            if r.get("x_comparison") is not None:
                parts.append("%.2f" % r["x_comparison"])
            elif r.get("comparison") is None:
                parts.append("none")
            for o, v in sorted((r.get("x_others") or {}).items()):
                if v is not None:
                    parts.append("%.2f vs %s" % (v, o))
            xc = "; ".join(parts) or "—"
        out.append("%s %s (%s / %s) | %s | %s / %s | %s | %s |" % (
            head, _f(m["cpu_ns_per_req"]), _f(m["user_ns_per_req"]), _f(m["sys_ns_per_req"]), _f(m["req_per_s"]),
            _f(m["p50_us"]), _f(m["p99_us"]), xc, _f(r.get("x_sync_user"), "%.2f")))
    for run in rec.get("runs") or []:
        nr = ((run.get("record") or {}).get("config") or {}).get("not_run") if isinstance(run.get("record"), dict) else None
        if nr:
            out.append("\n%s: not run: %s" % (run["lang"], ", ".join(map(str, nr))))
        if run.get("skipped"):
            out.append("\n%s: skipped (%s)" % (run["lang"], run["skipped"]))
        elif run.get("error"):
            out.append("\n%s: FAILED: %s" % (run["lang"], run["error"]))
    notes = (rec.get("config") or {}).get("comparison_notes") or {}
    for k in sorted(notes):
        out.append("\n%s: %s" % (k, notes[k]))
    return "\n".join(out)


# ------------------------------------------------------------------ main
def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    procs = bench_run.Procs()
    bench_run.install_signals()
    git = bench_run.git_info()
    lockf = None
    if not args.no_lock:
        lockf = bench_run.take_lock()
        if lockf is None:
            return 130
    work = tempfile.mkdtemp(prefix="sl-bench-async.")
    t0 = time.time()
    started = bench_run.utcnow()
    runs, rows, records = [], [], {}
    srv = None
    interrupted = False
    try:
        langs = []
        for lang in args.langs:
            why = bench_run.LANGS[lang].present()
            if why:
                bench_run.log("async %s skipped: %s" % (lang, why))
                runs.append({"lang": lang, "ok": None, "skipped": why})
            else:
                langs.append(lang)
        bench_run.log("async rows: %s; %d round(s); estimate ~%s after the builds" % (
            ",".join(langs), args.rounds, bench_run.fmt_s(sum(estimate(x, args) for x in langs))))
        srv = bench_run.start_server(procs, args, work)
        bench_run.log("slotlane-server pid %d on %s:%d-%d, CPU %s" % (
            srv["pid"], bench_run.HOST, args.port_base, args.port_base + 3, args.server_cpu))
        env = dict(os.environ, SL_BENCH_CLIENT_CPU=str(args.client_cpu), SL_BENCH_SERVER_CPU=str(args.server_cpu),
                   npm_config_nodedir="/usr")
        for i, lang in enumerate(langs):
            outdir = os.path.join(work, lang)
            os.makedirs(outdir)
            log_path = os.path.join(work, lang + ".log")
            run = {"lang": lang, "ok": False, "error": None, "command": None, "started_at": bench_run.iso(bench_run.utcnow()),
                   "load1_start": bench_run.load1(), "requests": requests_of(lang, args)}
            runs.append(run)
            run_t0 = time.time()
            bench_run.log("[%d/%d async %s] preparing (build)" % (i + 1, len(langs), lang))
            err = prepare(procs, lang, args, work, log_path)
            if err is None:
                cmd, cwd = runner_command(lang, args, srv, outdir, work)
                run["command"] = ["taskset", "-c", str(args.client_cpu)] + cmd
                est = estimate(lang, args)
                prog = bench_run.Progress("async " + lang, i + 1, len(langs), t0, est,
                                          sum(estimate(x, args) for x in langs[i + 1:]))
                prog.tick(force=True)
                timeout = args.runner_timeout or (4 * est + 300)
                rc, tail, err = bench_run.run_runner(procs, run["command"], cwd, env, prog, log_path, timeout)
                run["exit_code"] = rc
                if err is None and rc != 0:
                    err = "exited with status %s: %s" % (rc, " / ".join(x.strip() for x in tail[-3:] if x.strip()))
                recs = bench_run.find_record(outdir)
                if recs:
                    with open(recs[-1]) as f:
                        try:
                            run["record"] = json.load(f)
                            records[lang] = run["record"]
                        except ValueError as e:
                            err = err or "its record is not JSON: %s" % e
            run["finished_at"] = bench_run.iso(bench_run.utcnow())
            run["load1_end"] = bench_run.load1()
            run["elapsed_s"] = round(time.time() - run_t0, 1)
            mine = combine_run(lang, run, err)
            rows.extend(mine)
            nf = sum(1 for r in mine if not r["ok"])
            bench_run.log("[%d/%d async %s] %s (%d rows, %d failed); run %s" % (
                i + 1, len(langs), lang, "done" if run["error"] is None else "FAILED: " + run["error"], len(mine), nf,
                bench_run.fmt_s(time.time() - t0)))
    except KeyboardInterrupt as e:
        interrupted = True
        bench_run.log("interrupted (%s); stopping every process this run started" % (e or "SIGINT"))
    finally:
        procs.stop_all()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # nothing may stop the clean-up now
        if interrupted:
            shutil.rmtree(work, ignore_errors=True)
            bench_run.log("stopped; no record written")
            return 130
    add_ratios(rows, records)
    rec = build_record(args, argv, git, started, t0, srv, runs, rows)
    path = bench_run.write_record(rec, args.records, "async-cost")
    shutil.rmtree(work, ignore_errors=True)
    print(rec["table_markdown"])
    r = os.path.relpath(path, ROOT)
    print("\nrecord: %s" % (path if r.startswith("..") else r))
    bench_run.log("async rows finished in %s (load %s)" % (bench_run.fmt_s(time.time() - t0), bench_run.load1()))
    if not rec["ok"]:
        bench_run.log("some async rows FAILED (see the table)")
        return 1
    return 0


def build_record(args, argv, git, started, t0, srv, runs, rows):
    rec = {
        "schema": SCHEMA,
        "benchmark": "async-cost-report",
        "tool": "bench/async/run.py",
        "ok": all(r["ok"] for r in rows) and all(x.get("ok") is not False for x in runs) and bool(rows),
        "started_at": bench_run.iso(started), "finished_at": bench_run.iso(bench_run.utcnow()),
        "elapsed_s": round(time.time() - t0, 1),
        "machine": bench_run.machine_info(args),
        "versions": {"slotlane": open(os.path.join(ROOT, "VERSION")).read().strip(),
                     "slotlane_server": srv["version"] if srv else None,
                     "toolchains": bench_run.toolchain_versions(args.langs),
                     "languages": {x["lang"]: bench_run.versions_of(x["lang"], x["record"]) for x in runs if "record" in x}},
        "git": git,
        "command": ["bench/async/run.py"] + list(argv),
        "invocation": os.environ.get("SL_BENCH_INVOCATION"),
        "server": srv,
        "config": {"rounds": args.rounds, "requests_per_round": {k: requests_of(k, args) for k in args.langs},
                   "quick": args.quick, "langs": args.langs, "all_clients": args.all_clients,
                   "rows": list(ROWS), "ops": list(OPS), "callers": list(CALLERS), "keys": 4096, "value_bytes": 32,
                   "comparison": {k: [c for c in [LANGS[k].comparison] + list(LANGS[k].others) if c] for k in args.langs},
                   "comparison_notes": {k: LANGS[k].note for k in args.langs if LANGS[k].note},
                   "ratio": "x_comparison: median over rounds of slotlane's cpu_ns_per_req / the comparison "
                            "client's in the same round",
                   "order": "one runner after another, alone; each runner interleaves its clients in every round"},
        "runs": runs,
        "rows": rows,
    }
    rec["table_markdown"] = table(rec)
    return rec


if __name__ == "__main__":
    sys.exit(main())
