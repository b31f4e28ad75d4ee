#!/usr/bin/env python3
"""bench/test_run.py — the test of `make bench`'s orchestrator (bench/run.py) and of bench/report.py.

    python3 bench/test_run.py            (ci/test.sh runs it; about 30 s)

1. A real run: bench/run.py --quick --langs c with tiny rows against a real slotlane-server.
   The combined record must hold the schema's fields, all 16 rows of the C tool ok with
   their round, medians equal to the C tool's own record embedded in it, x_plain and
   x_comparison computed from those medians; the table must show every figure; the chart
   must be SVG that parses and has one bar per measured cell with that cell's figure.
2. A failing runner: a stand-in for sl-cluster-cost that writes a record with one good row
   and one row that failed its reply check (and leaves the rest out). Every row but the
   good one must be FAILED with its error in the table and the record, with no figure and
   no bar; the exit status must be 1. The same record with the good row's total CPU left
   out breaks the one record schema (bench/cluster_cost_schema.py): every row fails.
3. Ctrl-C: SIGINT to bench/run.py while the C tool runs (started with SIGINT ignored, as
   `cmd &` in a script does); it must exit 130 within seconds,
   with the server and the runner it started gone (by their pids) and no record written.
4. The server chart: bench/report.py server on a bench/server/run record.
5. The async phase (bench/async/run.py, make bench's async rows): bench/async/test_run.py —
   its arguments, each runner's command line, fake runner records normalised into rows,
   the per-round ratios, failed/missing rows, broken and crashed runners, the table.
Servers use ports of their own in 24760-24799 (bench/run.py's range is 24700-24799).
"""
import glob
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.abspath(os.environ.get("SL_BUILD_DIR", os.path.join(ROOT, "build")))
RUN = [sys.executable, os.path.join(HERE, "run.py")]
sys.path.insert(0, HERE)
import cluster_cost_schema  # noqa: E402
import report  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: %s" % what, file=sys.stderr)


def free_base():
    for _ in range(50):
        base = random.randrange(24760, 24796)
        ok = True
        for p in range(base, base + 4):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
        if ok:
            return base
    raise SystemExit("test_run.py: no free ports in 24760-24799")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def svg_bars(path):
    root = ET.parse(path).getroot()  # raises on anything that is not well-formed XML
    check(root.tag == SVG_NS + "svg", "%s: the root element is <svg>" % path)
    bars = []
    for rect in root.iter(SVG_NS + "rect"):
        t = rect.find(SVG_NS + "title")
        if t is not None:
            bars.append((t.text, float(rect.get("height"))))
    crosses = [g.find(SVG_NS + "title").text for g in root.iter(SVG_NS + "g") if g.get("class") == "failed"]
    return bars, crosses


def test_real_run(tmp):
    recs = os.path.join(tmp, "records")
    charts = os.path.join(tmp, "charts")
    base = free_base()
    cmd = RUN + ["--quick", "--langs", "c", "--seconds", "0.5", "--warmup", "0.05", "--no-lock",
                 "--port-base", str(base), "--records", recs, "--charts", charts, "--build", BUILD]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    check(p.returncode == 0, "real run exits 0 (got %d): %s" % (p.returncode, p.stderr[-2000:]))
    files = glob.glob(os.path.join(recs, "*-cluster-cost.json"))
    check(len(files) == 1, "one combined record written (%s)" % files)
    if not files:
        return
    name = os.path.basename(files[0])
    check(re.fullmatch(r".+-\d{4}-\d\d-\d\d-\d{6}-cluster-cost\.json", name) is not None,
          "record name follows bench/records/README.md: %s" % name)
    check(not glob.glob(os.path.join(recs, "*.tmp")) and not glob.glob(os.path.join(recs, ".*.tmp")),
          "no temporary file left")
    rec = json.load(open(files[0]))
    check(rec["schema"] == "slotlane.bench.cluster-cost-report/1", "schema")
    for k in ("benchmark", "tool", "ok", "started_at", "finished_at", "machine", "versions", "git", "command",
              "server", "config", "runs", "rows", "table_markdown"):
        check(k in rec, "record has %s" % k)
    check(rec["ok"] is True, "record ok")
    check(re.fullmatch(r"[0-9a-f]{40}|unknown", rec["git"]["commit"]) is not None, "git commit")
    for k in ("hostname", "cpu_model", "cores", "kernel", "client_cpus", "server_cpus"):
        check(k in rec["machine"], "machine.%s" % k)
    check(rec["server"]["port_mode"] == "per-shard" and rec["server"]["misrouted"] == "forward"
          and rec["server"]["shards"] == 4 and rec["server"]["ports"] == list(range(base, base + 4)),
          "server: 4 shards per-shard forward on the given ports")
    check(not alive(rec["server"]["pid"]), "the server (pid %d) is stopped after the run" % rec["server"]["pid"])
    check("c" in rec["versions"]["languages"] and rec["versions"]["languages"]["c"].get("hiredis"),
          "versions of the C tool's clients kept")
    check(rec["config"]["rounds"] == 1 and rec["config"]["seconds"] == 0.5, "config holds the flags")
    runs = [r for r in rec["runs"] if r["lang"] == "c"]
    check(len(runs) == 1 and runs[0]["ok"] and runs[0]["record"]["schema"] == "slotlane.bench.cluster-cost/1",
          "the C tool's record is embedded")
    check(runs and "record" in runs[0] and cluster_cost_schema.validate(runs[0]["record"]) == [],
          "the C tool's record passes bench/cluster_cost_schema.py: %s" % (
              cluster_cost_schema.validate(runs[0]["record"]) if runs and "record" in runs[0] else "no record"))
    if not runs or "record" not in runs[0]:
        return
    src = {(r["client"], r["row"], r["op"], r["depth"]): r for r in runs[0]["record"]["rows"]}
    rows = rec["rows"]
    check(len(rows) == 16, "16 rows: slotlane 3 rows x 4 cells, hiredis plain x 4 (got %d)" % len(rows))
    by = {}
    for r in rows:
        k = (r["client"], r["row"], r["op"], r["depth"])
        by[k] = r
        s = src.get(k)
        check(s is not None, "row %s comes from the C tool's record" % (k,))
        check(r["ok"] and r["error"] is None, "row %s ok" % (k,))
        check(len(r["rounds"]) == 1 and r["rounds"][0]["requests"] > 0, "row %s keeps its round" % (k,))
        u = r["median"]["user_ns_per_req"]
        # (0 is possible: a short row on a busy machine may get no user-time tick)
        check(u is not None and u >= 0 and s is not None and u == s["median"]["user_ns_per_req"],
              "row %s median = the tool's median" % (k,))
        check(r["median"]["bytes_per_req"] and r["median"]["bytes_per_req"] > 0, "row %s bytes/req" % (k,))
        c = r["median"]["cpu_ns_per_req"]
        check(c is not None and s is not None and c == s["median"]["cpu_ns_per_req"] and c >= u,
              "row %s total CPU median = the tool's, at least its user CPU" % (k,))
        check(r["role"] == ("slotlane" if r["client"] == "slotlane" else "comparison"), "row %s role" % (k,))
    for (client, row, op, depth), r in by.items():
        for suffix, field in (("", "cpu_ns_per_req"), ("_user", "user_ns_per_req")):  # total, the headline; user
            pu = by[(client, "plain", op, depth)]["median"][field]
            want = round(r["median"][field] / pu, 3) if pu else None
            check(r["x_plain" + suffix] == want, "x_plain%s of %s %s %s %d = %s (got %s)" % (
                suffix, client, row, op, depth, want, r["x_plain" + suffix]))
            if client == "slotlane" and row == "plain":
                h = by[("hiredis", "plain", op, depth)]["median"][field]
                want = round(r["median"][field] / h, 3) if h else None
                check(r["x_comparison" + suffix] == want, "x_comparison%s %s %d" % (suffix, op, depth))
    table = rec["table_markdown"]
    check(table in p.stdout, "the table is printed")
    for r in rows:
        m = r["median"]
        cell = "%.0f (%.0f / %.0f)" % (m["cpu_ns_per_req"], m["user_ns_per_req"], m["sys_ns_per_req"])
        check(cell in table, "table shows %s %s %s %d as total (user / sys): %s" % (
            r["client"], r["row"], r["op"], r["depth"], cell))
    check("FAILED" not in table, "no FAILED in a good run's table")
    svg = files[0][:-5] + ".svg"
    check(os.path.exists(svg) and os.path.exists(os.path.join(charts, "cluster-cost.svg")),
          "chart next to the record and the stable copy")
    if os.path.exists(svg):
        bars, crosses = svg_bars(svg)
        drawn = [r for r in rows if r["median"]["cpu_ns_per_req"] > 0]
        check(len(bars) == len(drawn), "one bar per measured cell (%d, got %d)" % (len(drawn), len(bars)))
        check(all(h > 0 for _, h in bars), "bars have height")
        for r in drawn:
            label = "%s %s" % ("slotlane" if r["client"] == "slotlane" else "comparison client", r["row"])
            want = "C, %s: %.0f total CPU ns / request" % (label, r["median"]["cpu_ns_per_req"])
            check(any(t == want for t, _ in bars), "the chart has the bar '%s'" % want)
        check(not crosses, "no failure marks in a good run's chart")


FAKE_TOOL = r'''#!/usr/bin/env python3
# a stand-in for sl-cluster-cost. FAKE_MODE=badrow: one good row, one row that failed its reply
# check, the rest missing, exit 1 (as the tool does). FAKE_MODE=badschema: the same, the good row's
# median without its total CPU (the record breaks bench/cluster_cost_schema.py, so no row stands).
# FAKE_MODE=crash: a record whose rows are
# all ok, then a crash (exit 134): nothing it wrote may be trusted.
import json, os, sys
a = sys.argv
out = a[a.index("--json") + 1]
fig = {"cpu_ns_per_req": 132.0, "user_ns_per_req": 123.0, "sys_ns_per_req": 9.0, "bytes_per_req": 26.7,
       "req_per_s": 5.0}
good = {"client": "slotlane", "api": "resp", "row": "plain", "op": "GET", "depth": 16, "ok": True,
        "rounds": [dict(fig, requests=1000, wall_s=200.0, user_ns=123000, sys_ns=9000, load1=1.5)],
        "median": dict(fig)}
if os.environ.get("FAKE_MODE") == "badschema":  # no total CPU: the record breaks the schema
    del good["median"]["cpu_ns_per_req"]
bad = {"client": "slotlane", "api": "resp", "row": "cluster", "op": "GET", "depth": 16, "ok": False,
       "error": "GET key:7 returned a wrong value", "rounds": [{"requests": 1000, "user_ns_per_req": 77.0}],
       "median": {"user_ns_per_req": 77.0}}
crash = os.environ.get("FAKE_MODE") == "crash"
rows = [good] if crash else [good, bad]
json.dump({"schema": "slotlane.bench.cluster-cost/1", "benchmark": "cluster-cost", "tool": "fake", "ok": crash,
           "started_at": "x", "finished_at": "x", "machine": {}, "versions": {"slotlane": "x"}, "git": {},
           "command": a, "config": {"rounds": 1}, "rows": rows}, open(out, "w"))
print("fake tool: " + ("crashed" if crash else "one row failed"))
sys.exit(134 if crash else 1)
'''


def run_fake(tmp, mode):
    fake = os.path.join(tmp, "fakebuild")
    if not os.path.isdir(fake):
        os.makedirs(os.path.join(fake, "bench"))
        os.makedirs(os.path.join(fake, "server"))
        os.symlink(os.path.join(BUILD, "server", "slotlane-server"), os.path.join(fake, "server", "slotlane-server"))
        tool = os.path.join(fake, "bench", "sl-cluster-cost")
        with open(tool, "w") as f:
            f.write(FAKE_TOOL)
        os.chmod(tool, 0o755)
    recs = os.path.join(tmp, "records-" + mode)
    p = subprocess.run(RUN + ["--quick", "--langs", "c", "--no-lock", "--port-base", str(free_base()),
                              "--records", recs, "--charts", "", "--build", fake],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                       env=dict(os.environ, FAKE_MODE=mode))
    check(p.returncode == 1, "%s: exit status 1 (got %d): %s" % (mode, p.returncode, p.stderr[-1500:]))
    files = glob.glob(os.path.join(recs, "*-cluster-cost.json"))
    check(len(files) == 1, "%s: the failed run still writes its record" % mode)
    if not files:
        return None, None, None
    rec = json.load(open(files[0]))
    check(rec["ok"] is False, "%s: record ok = false" % mode)
    check(len(rec["rows"]) == 16, "%s: every expected row is in the record, measured or not (got %d)" % (
        mode, len(rec["rows"])))
    body = [ln for ln in rec["table_markdown"].splitlines() if ln.startswith("| C |")]
    check(len(body) == 8, "%s: 8 table lines (got %s)" % (mode, body))
    check("FAILED" in p.stdout, "%s: the printed table shows FAILED" % mode)
    return rec, body, files[0][:-5] + ".svg"


def test_failed_rows(tmp):
    rec, body, svg = run_fake(tmp, "badrow")
    if rec:
        rows = rec["rows"]
        key = lambda r: (r["client"], r["row"], r["op"], r["depth"])  # noqa: E731
        by = {key(r): r for r in rows}
        good = [r for r in rows if r["ok"]]
        check([key(r) for r in good] == [("slotlane", "plain", "GET", 16)] and
              good[0]["median"]["user_ns_per_req"] == 123.0, "the good row keeps its figure")
        bad = by[("slotlane", "cluster", "GET", 16)]
        check(not bad["ok"] and "wrong value" in bad["error"] and bad["median"]["user_ns_per_req"] is None,
              "the failed row keeps its error and has no figure")
        missing = [r for r in rows if r["error"] == "the runner's record has no such row"]
        check(len(missing) == 14, "rows missing from the runner's record are failed rows (got %d)" % len(missing))
        check(all(r["median"]["user_ns_per_req"] is None for r in rows if not r["ok"]), "no failed row has a figure")
        check("| C | slotlane | GET 16 | 132 (123 / 9) | FAILED: GET key:7 returned a wrong value | FAILED: the runner's "
              "record has no such row |" in "\n".join(body), "the table: the figure, the row's error: %s" % body)
        check(not any(re.search(r"\b77\b", ln) for ln in body), "the failed row's figure is nowhere in the table")
        bars, crosses = svg_bars(svg)
        check([t for t, _ in bars] == ["C, slotlane plain: 132 total CPU ns / request"], "one bar, the good row's: %s" % bars)
        check(any("wrong value" in c for c in crosses), "the chart marks the failed row")
    rec, body, svg = run_fake(tmp, "badschema")
    if rec:
        problems = rec["runs"][0].get("schema_problems") or []
        check(problems and "median.cpu_ns_per_req" in problems[0], "badschema: the problem is named: %s" % problems)
        check(not any(r["ok"] for r in rec["rows"]), "badschema: a record that breaks the schema fails every row")
        check("breaks the cluster-cost schema" in (rec["runs"][0]["error"] or ""), "badschema: the run's error")
    rec, body, svg = run_fake(tmp, "crash")
    if rec:
        check(not any(r["ok"] for r in rec["rows"]), "crash: no row of a crashed runner is ok")
        check(all(r["median"]["user_ns_per_req"] is None for r in rec["rows"]), "crash: no figure")
        check(not any(re.search(r"\b123\b", ln) for ln in body), "crash: no figure in the table")
        check("exited with status 134" in rec["runs"][0]["error"], "crash: the runner's error is kept")
        bars, _ = svg_bars(svg)
        check(not bars, "crash: no bar")


def test_sigint(tmp):
    recs = os.path.join(tmp, "records-int")
    p = subprocess.Popen(RUN + ["--langs", "c", "--rounds", "3", "--seconds", "5", "--no-lock",
                                "--port-base", str(free_base()), "--records", recs, "--charts", "", "--build", BUILD],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         # as `bench/run.py &` from a script: started with SIGINT ignored
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    server = runner = None
    err = []
    deadline = time.time() + 60
    while time.time() < deadline and (server is None or runner is None):
        ln = p.stderr.readline()
        if not ln:
            break
        err.append(ln)
        m = re.search(r"slotlane-server pid (\d+)", ln)
        server = int(m.group(1)) if m else server
        m = re.search(r"c runner pid (\d+)", ln)
        runner = int(m.group(1)) if m else runner
    check(server and runner, "the run started a server and a runner: %s" % "".join(err[-5:]))
    if not (server and runner):
        os.killpg(p.pid, signal.SIGKILL)
        return
    time.sleep(1.5)  # inside the C tool's rows
    check(alive(server) and alive(runner), "server and runner alive before SIGINT")
    t = time.time()
    os.kill(p.pid, signal.SIGINT)
    try:
        rest = p.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rest = p.communicate()[1]
    check(p.returncode == 130, "SIGINT: exit status 130 (got %s): %s" % (p.returncode, rest[-1000:]))
    check(time.time() - t < 20, "SIGINT: stopped within 20 s")
    check(not alive(server), "SIGINT: slotlane-server pid %d stopped" % server)
    check(not alive(runner), "SIGINT: runner pid %d stopped" % runner)
    for pid in (runner, server):  # a failed check must not leave them running
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    check(not glob.glob(os.path.join(recs, "*.json")), "SIGINT: no record written")


def test_server_chart(tmp):
    recs = sorted(glob.glob(os.path.join(ROOT, "bench", "records", "*-server.json")))
    recs = [r for r in recs if json.load(open(r)).get("schema") == "slotlane.bench.server/1"]
    check(recs, "a bench/server/run record exists to render")
    if not recs:
        return
    rec = json.load(open(recs[-1]))
    out = os.path.join(tmp, "server.svg")
    p = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), "server", recs[-1], "--svg", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "report.py server exits 0: %s" % p.stderr)
    bars, crosses = svg_bars(out)
    measured = [r for r in rec["rows"] if r.get("ok") and not r.get("skipped")]
    check(len(bars) == 2 * len(measured), "two bars (CPU, req/s) per measured server row (%d vs %d)" % (
        len(bars), 2 * len(measured)))
    for r in measured:
        v = r["median"]["server_cpu_ns_per_req"]
        check(any(t.endswith(": %.0f server CPU ns / request" % v) for t, _ in bars),
              "server chart has %s %s %s" % (r["server_id"], r["loader"], r["op"]))
    # bad input is refused with a message, not a traceback
    p = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), "cluster-cost", recs[-1]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and "schema" in p.stderr and "Traceback" not in p.stderr, "wrong schema refused")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("{not json")
    p = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), "cluster-cost", bad],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and "cannot read" in p.stderr and "Traceback" not in p.stderr,
          "bad input: a clear error, no traceback")


def test_async_phase(tmp):
    p = subprocess.run([sys.executable, os.path.join(HERE, "async", "test_run.py")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    sys.stdout.write("".join("  " + ln + "\n" for ln in p.stdout.splitlines()))
    check(p.returncode == 0, "bench/async/test_run.py passes (exit %d)" % p.returncode)


def main():
    if not os.access(os.path.join(BUILD, "server", "slotlane-server"), os.X_OK) or \
            not os.access(os.path.join(BUILD, "bench", "sl-cluster-cost"), os.X_OK):
        print("test_run.py: build first (make build): %s/server/slotlane-server, %s/bench/sl-cluster-cost" % (
            BUILD, BUILD), file=sys.stderr)
        return 1
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="sl-test-run.") as tmp:
        for name, fn in (("real run", test_real_run), ("failed rows", test_failed_rows),
                         ("SIGINT", test_sigint), ("server chart", test_server_chart),
                         ("async phase", test_async_phase)):
            n = len(failures)
            fn(tmp)
            print("%-12s %s" % (name, "ok" if len(failures) == n else "FAILED (%d)" % (len(failures) - n)))
    print("bench/test_run.py: %d failure(s), %.0f s" % (len(failures), time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
