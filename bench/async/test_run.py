#!/usr/bin/env python3
"""bench/async/test_run.py — the test of `make bench`'s async phase (bench/async/run.py) without
running the bench: its argument handling, each runner's command line, the normalisation of
runner records into the one record's rows (fake runner records), the ratios (the median of
per-round ratios), failures (a failed row, a missing row, a record that breaks the row format,
a crashed runner) and the table. bench/test_run.py runs it (make test's `bench` suite).

    python3 bench/async/test_run.py        (a second or two; no server, no runner)
"""
import importlib.util
import io
import os
import subprocess
import sys
from contextlib import redirect_stderr

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run.py")
spec = importlib.util.spec_from_file_location("bench_async_run", RUN)
ar = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ar)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: %s" % what, file=sys.stderr)


def refused(argv, words):
    """parse_args refuses argv (exit status 2) with a message naming words."""
    err = io.StringIO()
    try:
        with redirect_stderr(err):
            ar.parse_args(argv)
    except SystemExit as e:
        check(e.code == 2 and all(w in err.getvalue() for w in words),
              "%s refused with status 2 naming %s: %r" % (argv, words, err.getvalue()[-300:]))
        return
    check(False, "%s refused" % argv)


def test_args():
    a = ar.parse_args([])
    check(a.rounds == 3 and a.requests is None and not a.quick, "defaults: 3 rounds, each runner's own requests")
    check(a.langs == ar.ALL_LANGS and a.port_base == 24704, "default: every language, ports 24704..")
    check(ar.requests_of("node", a) == 40960 and ar.requests_of("python", a) == 20480, "runners' own request counts")
    q = ar.parse_args(["--quick"])
    check(q.rounds == 1 and q.requests == ar.QUICK_REQUESTS, "--quick: 1 round of %d requests" % ar.QUICK_REQUESTS)
    q = ar.parse_args(["--quick", "--rounds", "2", "--requests", "4096", "--langs", "go, python"])
    check(q.rounds == 2 and q.requests == 4096 and q.langs == ["go", "python"], "explicit values beat --quick")
    check(all(ar.estimate(x, ar.parse_args(["--quick"])) < ar.estimate(x, a) for x in ar.ALL_LANGS),
          "--quick estimates less than the default for every language")
    refused(["--langs", "c"], ["--langs", "c", "no async runner"])
    refused(["--langs", ","], ["--langs", "(empty)"])
    refused(["--rounds", "0"], ["--rounds"])
    refused(["--requests", "100"], ["--requests", "512"])
    refused(["--port-base", "24798"], ["--port-base"])
    refused(["--rounds", "x"], ["--rounds"])
    p = subprocess.run([sys.executable, RUN, "--langs", "cobol"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    check(p.returncode == 2 and "unknown cobol" in p.stderr and "Traceback" not in p.stderr,
          "the script refuses a bad --langs without a traceback: %s" % p.stderr[-300:])


def test_commands():
    srv = {"plain_url": "redis://127.0.0.1:24704", "cluster_url": "redis://127.0.0.1:24704",
           "description": 'slotlane-server "x": 4 shards'}
    for argv, rounds, requests in ((["--quick"], "1", "8192"), ([], "3", None)):
        a = ar.parse_args(argv + ["--build", "/b"])
        for lang in ar.ALL_LANGS:
            cmd, cwd = ar.runner_command(lang, a, srv, "/w/" + lang, "/w")
            s = " ".join(cmd)
            check(os.path.isdir(cwd), "%s: the runner's directory exists (%s)" % (lang, cwd))
            check("redis://127.0.0.1:24704" in cmd, "%s: the runner is given the server's URL: %s" % (lang, s))
            flag = "-" if lang == "go" else "--"
            i = cmd.index(flag + "rounds") if flag + "rounds" in cmd else -1
            check(i > 0 and cmd[i + 1] == rounds, "%s %s: rounds %s: %s" % (lang, argv, rounds, s))
            if requests:
                i = cmd.index(flag + "requests") if flag + "requests" in cmd else -1
                check(i > 0 and cmd[i + 1] == requests, "%s %s: requests %s: %s" % (lang, argv, requests, s))
            else:
                check(flag + "requests" not in cmd, "%s: no --requests by default (the runner's own): %s" % (lang, s))
            j = cmd.index(flag + "json")
            check(cmd[j + 1].rstrip("/") == "/w/" + lang, "%s: the record goes to its own directory: %s" % (lang, s))
            check(("--url" in cmd or "-url" in cmd) if lang in ("python", "rust", "go", "node") else
                  ("--plain" in cmd and "--cluster" in cmd), "%s: no server of its own: %s" % (lang, s))
        cmd, _ = ar.runner_command("java", a, srv, "/w/java", "/w")
        check('"' not in " ".join(cmd), "java: no double quote inside Maven's one bench.args string")
        check(cmd[cmd.index("--clients") + 1] == "slotlane-java-async,lettuce-async", "java: slotlane and Lettuce")
        cmd, _ = ar.runner_command("java", ar.parse_args(argv + ["--all-clients"]), srv, "/w/java", "/w")
        check("--clients" not in cmd, "java --all-clients: every client the runner has")
        check(ar.runner_command("csharp", a, srv, "/w/cs", "/w")[0][2] == "--async-cost", "csharp: --async-cost")


def rnd(cpu, user=None):
    user = cpu * 0.9 if user is None else user
    return {"requests": 8192, "wall_s": 0.5, "cpu_ns_per_req": cpu, "user_ns_per_req": user,
            "sys_ns_per_req": cpu - user, "req_per_s": 16384.0, "p50_us": 900.0, "p99_us": 2500.0, "load1": 1.0}


def row(client, r, op, n, cpus, ok=True, error=None):
    rounds = [rnd(c) for c in cpus]
    med = {k: sorted(x[k] for x in rounds)[len(rounds) // 2] for k in ar.FIELDS} if ok else None
    return {"client": client, "row": r, "op": op, "callers": n, "ok": ok, "error": error, "rounds": rounds if ok else [],
            "median": med}


def python_record(bad=False):
    """A fake python/bench/async_cost.py record: every cell of slotlane, redis.asyncio and GLIDE."""
    rows = []
    for r in ar.ROWS:
        for op in ar.OPS:
            for n in ar.CALLERS:
                rows.append(row("slotlane-python-asyncio", r, op, n, [10.0, 20.0, 30.0]))
                rows.append(row("redis-py-asyncio", r, op, n, [100.0, 50.0, 60.0]))
                rows.append(row("valkey-glide-asyncio", r, op, n, [40.0, 40.0, 40.0]))
    if bad:  # one wrong reply, one cell missing
        rows = [x for x in rows if (x["client"], x["row"], x["op"], x["callers"]) !=
                ("redis-py-asyncio", "cluster", "SET", 512)]
        for x in rows:
            if (x["client"], x["row"], x["op"], x["callers"]) == ("slotlane-python-asyncio", "cluster", "GET", 64):
                x.update(ok=False, error="wrong replies: GET key:7 -> b'x'", median=None)
    return {"schema": ar.RUNNER_SCHEMA, "benchmark": "async-cost", "ok": not bad, "rows": rows,
            "versions": {"slotlane": "0.1", "redis_py": "5"},
            "sync_rows": [{"client": "slotlane-python-sync-pipeline", "row": "cluster", "op": op, "depth": 16,
                           "ok": True, "median": {"user_ns_per_req": 8.0}} for op in ar.OPS]}


def csharp_record():
    rows = [row("slotlane-csharp-async", r, op, n, [70.0, 50.0]) for r in ar.ROWS for op in ar.OPS for n in ar.CALLERS]
    return {"schema": ar.RUNNER_SCHEMA, "ok": True, "rows": rows, "sync_rows": []}


def key(r):
    return (r["client"], r["row"], r["op"], r["callers"])


def test_normalize():
    run = {"lang": "python", "record": python_record(), "exit_code": 0}
    rows = ar.combine_run("python", run, None)
    ar.add_ratios(rows, {"python": run["record"]})
    check(run["ok"] is True and run["error"] is None and len(rows) == 24, "a good record: 24 ok rows (%d)" % len(rows))
    by = {key(r): r for r in rows}
    s = by[("slotlane-python-asyncio", "plain", "GET", 64)]
    check(s["role"] == "slotlane" and by[("redis-py-asyncio", "plain", "GET", 64)]["role"] == "comparison"
          and by[("valkey-glide-asyncio", "plain", "GET", 64)]["role"] == "comparison", "roles")
    check(s["median"] == {"cpu_ns_per_req": 20.0, "user_ns_per_req": 18.0, "sys_ns_per_req": 2.0,
                          "req_per_s": 16384.0, "p50_us": 900.0, "p99_us": 2500.0}, "the medians kept: %s" % s["median"])
    check(len(s["rounds"]) == 3, "every round kept")
    # per round 10/100, 20/50, 30/60 -> 0.1, 0.4, 0.5: the median 0.4 (the ratio of medians would be 20/60)
    check(s["x_comparison"] == 0.4, "x_comparison = the median of per-round ratios (got %s)" % s["x_comparison"])
    check(s["comparison"] == "redis-py-asyncio" and s["x_others"] == {"valkey-glide-asyncio": 0.5},
          "the other comparison client's ratio (GLIDE): %s" % s["x_others"])
    check(s["x_sync_user"] == round(18.0 / 8.0, 3), "x_sync_user: user CPU over the sync pipeline's (%s)" % s["x_sync_user"])
    check(by[("redis-py-asyncio", "plain", "GET", 64)]["x_comparison"] is None, "no ratio on a comparison row")
    run["record"]["config"] = {"not_run": ["valkey-glide-asyncio (pip install valkey-glide)"]}
    rec = {"rows": rows, "runs": [run], "config": {"comparison_notes": {}}}
    t = ar.table(rec)
    check("python: not run: valkey-glide-asyncio (pip install valkey-glide)" in t, "the table names a client not run")
    check("| Python | slotlane-python-asyncio | plain | GET | 64 | 20 (18 / 2) | 16384 | 900 / 2500 | "
          "0.40; 0.50 vs valkey-glide-asyncio | 2.25 |" in t, "the table line of a slotlane row:\n%s" % t)
    check("| Python | redis-py-asyncio | plain | GET | 64 | 55 " not in t and
          "| Python | redis-py-asyncio | plain | GET | 64 | 60 (54 / 6) |" in t, "the comparison row's medians")
    check("FAILED" not in t, "no FAILED in a good table")

    run = {"lang": "python", "record": python_record(bad=True), "exit_code": 1}
    rows = ar.combine_run("python", run, "exited with status 1: wrong replies")
    ar.add_ratios(rows, {"python": run["record"]})
    by = {key(r): r for r in rows}
    bad = by[("slotlane-python-asyncio", "cluster", "GET", 64)]
    check(not bad["ok"] and "wrong replies" in bad["error"] and all(v is None for v in bad["median"].values()),
          "a failed row keeps its error and no figure")
    miss = by.get(("redis-py-asyncio", "cluster", "SET", 512))
    check(miss is not None and not miss["ok"] and miss["error"] == "the runner's record has no such row",
          "a missing row is a failed row")
    check(by[("slotlane-python-asyncio", "cluster", "SET", 512)]["x_comparison"] is None,
          "no ratio against a missing comparison row")
    check(by[("slotlane-python-asyncio", "plain", "GET", 64)]["ok"], "the runner's exit 1 is its failed row: the rest stand")
    check(run["ok"] is False, "the run is not ok")
    t = ar.table({"rows": rows, "runs": [run], "config": {}})
    check("| Python | slotlane-python-asyncio | cluster | GET | 64 | FAILED: wrong replies: GET key:7" in t,
          "the table shows the failed row")
    check("| Python | redis-py-asyncio | cluster | SET | 512 | FAILED: the runner's record has no such row" in t,
          "the table shows the missing row")

    rec = python_record()
    del rec["rows"][0]["median"]["cpu_ns_per_req"]
    rec["rows"][1]["callers"] = "64"
    run = {"lang": "python", "record": rec, "exit_code": 0}
    rows = ar.combine_run("python", run, None)
    check(run.get("schema_problems") and "median.cpu_ns_per_req" in run["schema_problems"][0],
          "the broken field is named: %s" % run.get("schema_problems"))
    check(not any(r["ok"] for r in rows) and "breaks the async-cost row format" in run["error"],
          "a record that breaks the row format fails every row")
    check(ar.validate(python_record()) == [] and ar.validate([]) != [] and
          ar.validate(dict(python_record(), schema="x")) != [], "validate: good, not an object, wrong schema")

    run = {"lang": "python", "record": python_record(), "exit_code": 134}
    rows = ar.combine_run("python", run, "exited with status 134: Aborted")
    check(not any(r["ok"] for r in rows) and all(r["error"] == "exited with status 134: Aborted" for r in rows),
          "a crashed runner: no row stands, its error on each")
    run = {"lang": "go", "exit_code": 0}
    rows = ar.combine_run("go", run, None)
    check(run["error"] == "it wrote no record" and len(rows) == 16 and not any(r["ok"] for r in rows),
          "no record: every expected row (16) fails")

    run = {"lang": "csharp", "record": csharp_record(), "exit_code": 0}
    rows = ar.combine_run("csharp", run, None)
    ar.add_ratios(rows, {"csharp": run["record"]})
    check(run["ok"] and len(rows) == 8, "C#: 8 slotlane rows, no comparison expected")
    t = ar.table({"rows": rows, "runs": [run], "config": {"comparison_notes": {"csharp": ar.LANGS["csharp"].note}}})
    check("| C# | slotlane-csharp-async | plain | GET | 64 | 70 (63 / 7) | 16384 | 900 / 2500 | none | — |" in t,
          "C#: figures only, no comparison:\n%s" % t)
    check("NuGet" in t, "the table says why C# has no comparison")


def main():
    for name, fn in (("arguments", test_args), ("commands", test_commands), ("normalise", test_normalize)):
        n = len(failures)
        fn()
        print("%-10s %s" % (name, "ok" if len(failures) == n else "FAILED (%d)" % (len(failures) - n)))
    print("bench/async/test_run.py: %d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
