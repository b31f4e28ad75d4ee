#!/usr/bin/env python3
"""bench/tls/run.py — what TLS costs the C client: sl-cluster-cost's plain and cluster rows
over TLS beside the same rows without TLS, against the same servers, in one run.

  python3 bench/tls/run.py [--rounds 3] [--seconds 1] [--warmup 0.3] [--depths 16,64]
                           [--ops GET,SET] [--records bench/records] [--port-base 24720] [--langs c,java]

--langs java adds the Java rows: java/run-bench.sh (RoutingCostBench --tls-ca) with slotlane, Jedis
(ssl, a trust store of the CA) and Lettuce (withSsl, SslOptions.trustManager) over TLS beside the same
clients without TLS, against the same servers, interleaved the same way; each table row then names
its lang and client, and slotlane's rows carry x_jedis / x_lettuce (total CPU over the other client's,
plaintext and TLS: issue 19 asks the TLS ratio to be no worse).

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
16. One record in bench/records/: `<host>-<date>-<time>-cluster-cost-tls.json` (schema
slotlane.bench.cluster-cost-tls/1: every round of both tools' records, the medians, the
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
CLIENT_CPU, SERVER_CPU = "0", "1"


def harness(kind, action, d, *args, env):
    subprocess.run(["bash", os.path.join(ROOT, "ci", "redis-%s.sh" % kind), action, d] + list(args), env=env,
                   check=True, stdout=subprocess.DEVNULL, timeout=180)


def pin(pid):
    subprocess.run(["taskset", "-a", "-p", "-c", SERVER_CPU, str(pid)], check=True, stdout=subprocess.DEVNULL)


def java_run(a, r, tls, urls, certs, work):
    """One run of java/run-bench.sh (RoutingCostBench: slotlane, Jedis, Lettuce) over TLS or not, against
    the same servers; the runner pins its JVM to CPU 0 itself."""
    out = os.path.join(work, "java-r%d-%s" % (r, "tls" if tls else "plain"))
    os.makedirs(out)
    cmd = ["bash", os.path.join(ROOT, "java", "run-bench.sh"), "--plain", urls[tls][0], "--cluster", urls[tls][1],
           "--json", out + "/", "--rows", "plain,cluster", "--ops", a.ops, "--depths", a.depths, "--rounds", "1",
           "--seconds", str(a.seconds), "--warmup", str(a.warmup), "--workers", str(a.workers),
           "--clients", "slotlane,jedis,lettuce"]
    if tls:
        cmd += ["--tls-ca", os.path.join(certs, "ca.crt")]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800,
                       env=dict(os.environ, SL_BENCH_CLIENT_CPU=CLIENT_CPU))
    files = [f for f in os.listdir(out) if f.endswith(".json")]
    if p.returncode != 0 or len(files) != 1:
        raise SystemExit("bench/tls/run.py: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stdout[-4000:]))
    with open(os.path.join(out, files[0])) as f:
        return {"round": r, "tls": tls, "lang": "java", "record": json.load(f)}


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
    ap.add_argument("--langs", default="c", help="c (sl-cluster-cost) and/or java (java/run-bench.sh: slotlane, "
                    "Jedis and Lettuce over TLS beside plaintext)")
    a = ap.parse_args()
    langs = a.langs.split(",")
    tool = os.path.join(a.build, "bench", "sl-cluster-cost")
    if "c" in langs and not os.access(tool, os.X_OK):
        raise SystemExit("bench/tls/run.py: %s is not built (cmake --build build --target sl-cluster-cost)" % tool)
    base = a.port_base
    work = tempfile.mkdtemp(prefix="sl-bench-tls.")
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
                if "java" in langs:
                    runs.append(java_run(a, r, tls, urls, certs, work))
                if "c" not in langs:
                    continue
                out = os.path.join(work, "r%d-%s.json" % (r, "tls" if tls else "plain"))
                cmd = ["taskset", "-c", CLIENT_CPU, tool, "--plain", urls[tls][0], "--cluster", urls[tls][1],
                       "--rows", "plain,cluster", "--ops", a.ops, "--depths", a.depths, "--rounds", "1",
                       "--seconds", str(a.seconds), "--warmup", str(a.warmup), "--workers", str(a.workers),
                       "--clients", "slotlane", "--json", out,
                       "--server-desc", "redis-server 7.0 standalone + 3-primary cluster, TLS and plaintext on "
                       "the same processes, pinned to CPU %s" % SERVER_CPU,
                       "--invocation", "bench/tls/run.py"]
                if tls:  # the tool fills keys with hiredis (no TLS): the plaintext run of round 0 did
                    cmd += ["--tls-ca", os.path.join(certs, "ca.crt"), "--no-fill"]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
                if p.returncode != 0:
                    raise SystemExit("bench/tls/run.py: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stdout))
                with open(out) as f:
                    runs.append({"round": r, "tls": tls, "lang": "c", "record": json.load(f)})
    finally:
        for kind, d in reversed(started):
            harness(kind, "stop", d, env=env)
    t1 = bench_run.utcnow()
    load_after = bench_run.load1()

    # (lang, client, row, op, depth) -> {tls: [per-round (total, user, sys)]}
    cells = {}
    for run in runs:
        for row in run["record"]["rows"]:
            if not row["ok"]:
                raise SystemExit("bench/tls/run.py: %s row %s %s d%d failed: %s" % (
                    run["lang"], row["row"], row["op"], row["depth"], row.get("error")))
            key = (run["lang"], row.get("client", "slotlane"), row["row"], row["op"], row["depth"])
            for rnd in row["rounds"]:
                cells.setdefault(key, {False: [], True: []})[run["tls"]].append(per_request(rnd))
    table = []
    for (lang, client, rowname, op, depth), v in sorted(cells.items()):
        ratios = [t[0] / p[0] for p, t in zip(v[False], v[True])]
        med = {k: [statistics.median(x[i] for x in v[k]) for i in range(3)] for k in (False, True)}
        table.append({"lang": lang, "client": client, "row": rowname, "op": op, "depth": depth,
                      "plaintext": {"total_ns": med[False][0], "user_ns": med[False][1], "sys_ns": med[False][2]},
                      "tls": {"total_ns": med[True][0], "user_ns": med[True][1], "sys_ns": med[True][2]},
                      "ratio_rounds": ratios, "ratio_median": statistics.median(ratios),
                      "target": "<= 1.3 at depth 16" if depth == 16 else None,
                      "target_met": (statistics.median(ratios) <= 1.3) if depth == 16 and client == "slotlane" else None})
    # slotlane over the ecosystem client, with and without TLS (issue 19: over TLS no worse)
    by = {(t["lang"], t["client"], t["row"], t["op"], t["depth"]): t for t in table}
    for t in table:
        if t["client"] != "slotlane":
            continue
        for other in ("jedis", "lettuce"):
            o = by.get((t["lang"], other, t["row"], t["op"], t["depth"]))
            if o:
                t["x_" + other] = {"plaintext": t["plaintext"]["total_ns"] / o["plaintext"]["total_ns"],
                                   "tls": t["tls"]["total_ns"] / o["tls"]["total_ns"]}
                t["x_" + other]["tls_no_worse"] = t["x_" + other]["tls"] <= t["x_" + other]["plaintext"]
    rec = {
        "schema": "slotlane.bench.cluster-cost-tls/1",
        "benchmark": "cluster-cost-tls",
        "tool": "bench/tls/run.py over sl-cluster-cost (bench/cluster-cost/cluster_cost.c) and java/run-bench.sh "
                "(RoutingCostBench --tls-ca: slotlane, Jedis, Lettuce)",
        "langs": langs,
        "started_at": bench_run.iso(t0), "finished_at": bench_run.iso(t1),
        "load_average_1min": {"before": load_before, "after": load_after,
                              "note": "shared 2-vCPU VM, other engineers' builds and tests running"},
        "command": sys.argv,
        "git": {"commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                                         text=True).stdout.strip()},
        "config": {"rounds": a.rounds, "seconds": a.seconds, "warmup": a.warmup, "depths": a.depths,
                   "ops": a.ops, "workers": a.workers, "client_cpu": CLIENT_CPU, "server_cpu": SERVER_CPU,
                   "order": "interleaved: each round runs the plaintext and the TLS tool once, order alternating"},
        "rows": table,
        "runs": runs,
    }
    name = bench_run.write_record(rec, a.records, "cluster-cost-tls")
    print("| lang | client | row | op | depth | plaintext ns/req (user+sys) | TLS ns/req (user+sys) | TLS/plain (median of rounds) |")
    print("|---|---|---|---|---|---|---|---|")
    for t in table:
        print("| %s | %s | %s | %s | %d | %.0f (%.0f+%.0f) | %.0f (%.0f+%.0f) | %.2f |" % (
            t["lang"], t["client"], t["row"], t["op"], t["depth"], t["plaintext"]["total_ns"], t["plaintext"]["user_ns"],
            t["plaintext"]["sys_ns"], t["tls"]["total_ns"], t["tls"]["user_ns"], t["tls"]["sys_ns"],
            t["ratio_median"]))
    print("load average: %s -> %s; record: %s" % (load_before, load_after, os.path.relpath(name, ROOT)))


if __name__ == "__main__":
    main()
