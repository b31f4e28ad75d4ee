#!/usr/bin/env python3
"""bench/tls/run.py — what TLS costs each client: the cluster-cost runners' plain and cluster
rows over TLS beside the same rows without TLS, against the same servers, in one run — the C
tool (slotlane's C client; Debian's hiredis 0.14 has no TLS), the Python runner (slotlane
and redis-py with hiredis, both with ssl=True and the test CA), the Node runner (slotlane and
ioredis, both with tls: { ca }), the Go tool (slotlane-go with TLSConfig{CAFile}, go-redis
with a tls.Config of the same CA), the Java runner (java/run-bench.sh --tls-ca:
RoutingCostBench's slotlane, Jedis with ssl(true), Lettuce with withSsl(true)), the Rust tool
(rust/bench/examples/cluster_cost.rs --tls-ca: slotlane-rs with ConnectOptions::tls(TlsConfig
ca_file), redis-rs with rediss:// and TlsCertificates { root_cert }, its tokio-rustls-comp
feature: rustls with ring, where every slotlane binding uses the core's OpenSSL) and the C#
tool (Slotlane.Client.Benchmarks --tls-ca: TlsOptions { CaFile }; figures only, no
comparison client, as in bench/run.py).

  python3 bench/tls/run.py [--langs c,python,node,go,java,rust,csharp] [--rounds 3] [--seconds 1] [--warmup 0.3]
                           [--depths 16,64] [--ops GET,SET] [--records bench/records]
                           [--port-base 24720]

Servers (Debian's redis-server 7.0, every one pinned to CPU 1; the client to CPU 0): a
standalone server and a 3-primary Redis Cluster (ci/redis-plain.sh, ci/redis-cluster.sh)
that each serve TLS (certificates of ci/tls-certs.sh, made now; tls-cluster yes) and
plaintext (SL_REDIS_TLS_PLAIN_OFFSET=10): the same processes both ways, so the only
difference between a TLS row and its plaintext row is the client's TLS (and the server's).
Ports BASE..BASE+19 (default 24720-24739, the bench range of ci/lib.sh). Hold the bench
lock: `flock /tmp/suite-bench.lock python3 bench/tls/run.py`.

Rounds are interleaved: round r runs the tool once without TLS and once with (the order
alternates by round), each with --rounds 1, so a ratio is measured under the same load.
The headline is total CPU (user + system) per request of the client process; a row's ratio
is the median of its per-round ratios TLS / plaintext. Target (issue 19): <= 1.3 at depth
16, and slotlane's ratio to the ecosystem's client over TLS no worse than without TLS (the
"vs comparison" columns: per round, slotlane's total over the comparison client's, TLS and
plaintext, medians). One record in bench/records/: `<host>-<date>-<time>-cluster-cost-tls.json` (schema
slotlane.bench.cluster-cost-tls/2: every round of both tools' records, the medians, the
ratios, the load averages before and after), and a table on stdout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import run as bench_run  # noqa: E402  (bench/run.py: records, clocks, load averages)

HOST = "127.0.0.1"
LANGS = ("c", "python", "node", "go", "java", "rust", "csharp")
RUST_TOOL = os.path.join(ROOT, "rust", "target", "release", "examples", "cluster_cost")
CS_TOOL = os.path.join(ROOT, "csharp", "out", "bin", "Slotlane.Client.Benchmarks.exe")
CLIENT_CPU, SERVER_CPU = "0", "1"


def harness(kind, action, d, *args, env):
    subprocess.run(["bash", os.path.join(ROOT, "ci", "redis-%s.sh" % kind), action, d] + list(args), env=env,
                   check=True, stdout=subprocess.DEVNULL, timeout=180)


def pin(pid):
    subprocess.run(["taskset", "-a", "-p", "-c", SERVER_CPU, str(pid)], check=True, stdout=subprocess.DEVNULL)


def per_request(rnd):
    n = rnd["requests"]
    return (rnd["user_ns"] + rnd["sys_ns"]) / n, rnd["user_ns"] / n, rnd["sys_ns"] / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=0.3)
    ap.add_argument("--depths", default="16,64")
    ap.add_argument("--ops", default="GET,SET")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--records", default=os.path.join(ROOT, "bench", "records"))
    ap.add_argument("--port-base", type=int, default=24720)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--langs", default=",".join(LANGS), help="of " + ", ".join(LANGS))
    a = ap.parse_args()
    a.quick = False
    langs = [x for x in a.langs.split(",") if x]
    for x in langs:
        if x not in LANGS:
            raise SystemExit("bench/tls/run.py: --langs: one of %s, not %r" % (", ".join(LANGS), x))
    tool = os.path.join(a.build, "bench", "sl-cluster-cost")
    if "c" in langs and not os.access(tool, os.X_OK):
        raise SystemExit("bench/tls/run.py: %s is not built (cmake --build build --target sl-cluster-cost)" % tool)
    work = tempfile.mkdtemp(prefix="sl-bench-tls.")
    gotool = os.path.join(work, "go-cluster-cost")
    if "go" in langs:  # (go/bench/run.sh builds it the same way)
        subprocess.run(["go", "build", "-o", gotool, "./cmd/cluster-cost"], cwd=os.path.join(ROOT, "go", "bench"), check=True)
    for x in langs:  # what bench/run.py builds for the runner (the Python venv, node's addon and bench deps,
        # the Rust example with cargo --release, the C# tool with csharp/mono-build.sh bench-build)
        if x not in ("c", "go", "java"):  # (java/run-bench.sh compiles with Maven itself)
            err = bench_run.prepare(bench_run.Procs(), x, a, os.path.join(tempfile.gettempdir(), "sl-bench-tls-prepare.log"))
            if err:
                raise SystemExit("bench/tls/run.py: " + err)
    base = a.port_base
    certs = os.path.join(work, "certs")
    subprocess.run(["bash", os.path.join(ROOT, "ci", "tls-certs.sh"), certs], check=True)
    env = dict(os.environ, SL_REDIS_TLS_DIR=certs, SL_REDIS_TLS_PLAIN_OFFSET="10")
    plain_dir, cluster_dir = os.path.join(work, "plain"), os.path.join(work, "cluster")
    started = []
    load_before = bench_run.load1()
    t0 = bench_run.utcnow()
    runs = []
    try:
        harness("plain", "start", plain_dir, str(base), env=env)
        started.append(("plain", plain_dir))
        harness("cluster", "start", cluster_dir, str(base + 2), "3", env=env)
        started.append(("cluster", cluster_dir))
        pin(open(os.path.join(plain_dir, "pid")).read().strip())
        for pid in open(os.path.join(cluster_dir, "pids")).read().split():
            pin(pid)
        urls = {False: ("redis://%s:%d" % (HOST, base + 10), "redis://%s:%d" % (HOST, base + 12)),
                # TLS by --tls-ca (sl_client_options.tls), on the servers' TLS ports; the tool
                # parses redis:// URLs itself
                True: ("redis://%s:%d" % (HOST, base), "redis://%s:%d" % (HOST, base + 2))}
        for r in range(a.rounds):
            for tls in ((False, True) if r % 2 == 0 else (True, False)):
                for lang in langs:
                    out = os.path.join(work, "r%d-%s-%s.json" % (r, lang, "tls" if tls else "plain"))
                    common = ["--plain", urls[tls][0], "--cluster", urls[tls][1], "--rows", "plain,cluster",
                              "--ops", a.ops, "--depths", a.depths, "--rounds", "1", "--seconds", str(a.seconds),
                              "--warmup", str(a.warmup), "--json", out,
                              "--server-desc", "redis-server 7.0 standalone + 3-primary cluster, TLS and plaintext "
                              "on the same processes, pinned to CPU %s" % SERVER_CPU]
                    if lang != "rust":  # (the Rust tool reads it from SL_BENCH_INVOCATION)
                        common += ["--invocation", "bench/tls/run.py"]
                    if lang == "c":
                        cmd = ["taskset", "-c", CLIENT_CPU, tool] + common + ["--workers", str(a.workers),
                                                                              "--clients", "slotlane"]
                        if tls:  # (every runner fills the keys with its own values first)
                            cmd += ["--tls-ca", os.path.join(certs, "ca.crt")]
                    elif lang == "go":
                        cmd = ["taskset", "-c", CLIENT_CPU, gotool] + [x.replace("--", "-", 1) if x.startswith("--") else x
                                                                       for x in common] + [
                            "-workers", str(a.workers), "-clients", "slotlane-go,go-redis"]
                        if tls:
                            cmd += ["-tls-ca", os.path.join(certs, "ca.crt")]
                    elif lang == "java":  # (it pins its JVM to CPU 0 itself; --json DIR/ names the file)
                        d = out[:-5]
                        os.makedirs(d)
                        cmd = ["bash", os.path.join(ROOT, "java", "run-bench.sh"), "--plain", urls[tls][0],
                               "--cluster", urls[tls][1], "--json", d + "/", "--rows", "plain,cluster", "--ops", a.ops,
                               "--depths", a.depths, "--rounds", "1", "--seconds", str(a.seconds), "--warmup",
                               str(a.warmup), "--workers", str(a.workers), "--clients", "slotlane,jedis,lettuce"]
                        if tls:
                            cmd += ["--tls-ca", os.path.join(certs, "ca.crt")]
                    elif lang == "rust":  # (the example built by prepare(); its invocation from the environment)
                        cmd = ["taskset", "-c", CLIENT_CPU, RUST_TOOL] + common + [
                            "--workers", str(a.workers), "--clients", "slotlane-rs,redis-rs"]
                        if tls:
                            cmd += ["--tls-ca", os.path.join(certs, "ca.crt")]
                    elif lang == "csharp":  # (under Mono, from its output directory as csharp/bench.sh runs it)
                        cmd = ["taskset", "-c", CLIENT_CPU, "mono", CS_TOOL, "--cluster-cost"] + common + [
                            "--workers", str(a.workers)]
                        if tls:
                            cmd += ["--tls-ca", os.path.join(certs, "ca.crt")]
                    elif lang == "node":  # (it pins its own children to CPU 0; --json DIR names the file)
                        d = out[:-5]
                        os.makedirs(d)
                        cmd = ["node", os.path.join(ROOT, "node", "bench", "cluster-cost.js"), "--plain", urls[tls][0],
                               "--cluster", urls[tls][1], "--rows", "plain,cluster", "--ops", a.ops, "--depths",
                               a.depths, "--rounds", "1", "--seconds", str(a.seconds), "--warmup", str(a.warmup),
                               "--workers", str(a.workers), "--clients", "slotlane,ioredis", "--json", d]
                        if tls:
                            cmd += ["--tls-ca", os.path.join(certs, "ca.crt")]
                    else:
                        py = os.path.join(a.build, "python-venv", "bin", "python")
                        cmd = ["taskset", "-c", CLIENT_CPU, py, os.path.join(ROOT, "python", "bench", "cluster_cost.py"),
                               "--cluster-cost", "--clients", "slotlane-python,redis-py", "--json-only"] + common
                        if tls:
                            cmd += ["--tls-ca", os.path.join(certs, "ca.crt")]
                    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
                                       cwd=os.path.dirname(CS_TOOL) if lang == "csharp" else None,
                                       env=dict(os.environ, SL_BENCH_INVOCATION="bench/tls/run.py"))
                    if p.returncode != 0:
                        raise SystemExit("bench/tls/run.py: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode,
                                                                                    p.stdout[-3000:]))
                    if lang in ("node", "java"):
                        out = bench_run.find_record(out[:-5])[-1]
                    with open(out) as f:
                        runs.append({"round": r, "tls": tls, "lang": lang, "record": json.load(f)})
    finally:
        for kind, d in reversed(started):
            harness(kind, "stop", d, env=env)
    t1 = bench_run.utcnow()
    load_after = bench_run.load1()

    # (lang, client, row, op, depth) -> {tls: {round: (total, user, sys)}}
    cells = {}
    for run in runs:
        for row in run["record"]["rows"]:
            if not row["ok"]:
                raise SystemExit("bench/tls/run.py: %s %s row %s %s d%d failed: %s" % (
                    run["lang"], row.get("client"), row["row"], row["op"], row["depth"], row.get("error")))
            key = (run["lang"], row.get("client", "slotlane"), row["row"], row["op"], row["depth"])
            for rnd in row["rounds"]:
                cells.setdefault(key, {False: {}, True: {}})[run["tls"]][run["round"]] = per_request(rnd)
    comparison = {"python": ("slotlane-python", "redis-py"), "node": ("slotlane", "ioredis"),
                  "go": ("slotlane-go", "go-redis"), "java": ("slotlane", "jedis"), "rust": ("slotlane-rs", "redis-rs")}
    table = []
    for key, v in sorted(cells.items()):
        lang, client, rowname, op, depth = key
        rounds = sorted(set(v[False]) & set(v[True]))
        ratios = [v[True][r][0] / v[False][r][0] for r in rounds]
        med = {k: [statistics.median(v[k][r][i] for r in rounds) for i in range(3)] for k in (False, True)}
        entry = {"lang": lang, "client": client, "row": rowname, "op": op, "depth": depth,
                 "plaintext": {"total_ns": med[False][0], "user_ns": med[False][1], "sys_ns": med[False][2]},
                 "tls": {"total_ns": med[True][0], "user_ns": med[True][1], "sys_ns": med[True][2]},
                 "ratio_rounds": ratios, "ratio_median": statistics.median(ratios),
                 "target": "<= 1.3 at depth 16" if depth == 16 else None,
                 "target_met": (statistics.median(ratios) <= 1.3) if depth == 16 else None,
                 "vs_comparison": None}
        sl, other = comparison.get(lang, (None, None))
        ck = (lang, other, rowname, op, depth)
        if client == sl and ck in cells:
            c = cells[ck]
            vs = {}
            for t in (False, True):
                rr = sorted(set(v[t]) & set(c[t]))
                vs[t] = statistics.median(v[t][r][0] / c[t][r][0] for r in rr)
            entry["vs_comparison"] = {"comparison": other, "plaintext": vs[False], "tls": vs[True],
                                      "target": "tls <= plaintext", "target_met": vs[True] <= vs[False]}
        table.append(entry)
    rec = {
        "schema": "slotlane.bench.cluster-cost-tls/2",
        "benchmark": "cluster-cost-tls",
        "tool": "bench/tls/run.py over sl-cluster-cost (bench/cluster-cost/cluster_cost.c)",
        "started_at": bench_run.iso(t0), "finished_at": bench_run.iso(t1),
        "load_average_1min": {"before": load_before, "after": load_after,
                              "note": "shared 2-vCPU VM, other engineers' builds and tests running"},
        "command": sys.argv,
        "git": {"commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                                         text=True).stdout.strip()},
        "config": {"langs": langs, "rounds": a.rounds, "seconds": a.seconds, "warmup": a.warmup, "depths": a.depths,
                   "ops": a.ops, "workers": a.workers, "client_cpu": CLIENT_CPU, "server_cpu": SERVER_CPU,
                   "order": "interleaved: each round runs the plaintext and the TLS tool once, order alternating"},
        "rows": table,
        "runs": runs,
    }
    name = bench_run.write_record(rec, a.records, "cluster-cost-tls")
    print("| lang | client | row | op | depth | plaintext ns/req (user+sys) | TLS ns/req (user+sys) "
          "| TLS/plain (median of rounds) | ÷ comparison plaintext → TLS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t in table:
        vs = t["vs_comparison"]
        print("| %s | %s | %s | %s | %d | %.0f (%.0f+%.0f) | %.0f (%.0f+%.0f) | %.2f | %s |" % (
            t["lang"], t["client"], t["row"], t["op"], t["depth"], t["plaintext"]["total_ns"],
            t["plaintext"]["user_ns"], t["plaintext"]["sys_ns"], t["tls"]["total_ns"], t["tls"]["user_ns"],
            t["tls"]["sys_ns"], t["ratio_median"],
            "%.2f× → %.2f×" % (vs["plaintext"], vs["tls"]) if vs else "—"))
    print("load average: %s -> %s; record: %s" % (load_before, load_after, os.path.relpath(name, ROOT)))


if __name__ == "__main__":
    main()
