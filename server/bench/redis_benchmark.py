#!/usr/bin/env python3
"""slotlane-server (1 shard) against redis-server 7.0 under redis-benchmark.

The server under test is pinned to one CPU (taskset) and redis-benchmark to another.
For every test of `redis-benchmark -P {16,1} -c 50 -d 32 -r 100000 -t
set,get,incr,lpush,lpop` (run one test at a time, so each gets its own CPU figure),
the server's CPU time (user + system, from /proc/<pid>/stat) is read before and after:
CPU nanoseconds per request is the primary figure (robust when the load generator is
the limit), requests per second the secondary one. Each server is started fresh for
each round; three rounds; medians. All rounds are kept in the JSON record.

Usage: server/bench/redis_benchmark.py [--rounds 3] [--out bench/records/NAME.json]
"""
import argparse
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import CLK_TCK, ROOT, SERVER, cpu_ns, free_port, git_state, start  # noqa: E402,F401  (durability.py, streams.py)

TESTS = ["set", "get", "incr", "lpush", "lpop"]


def bench_one(port, pipeline, test, requests, load_cpu):
    return benchlib.redis_benchmark(port, load_cpu, ["-P", str(pipeline), "-c", "50", "-d", "32", "-r", "100000",
                                                     "-t", test, "-n", str(requests)], timeout=600)


def write_record(record, out, host, finished):
    """The name the issue asks for, <host>-<date>-server-redis-benchmark.json, or when
    that exists the records convention with the time (benchlib.write_record)."""
    first = out or os.path.join(ROOT, "bench", "records", f"{host}-{finished.date().isoformat()}-server-redis-benchmark.json")
    return benchlib.write_record(record, "server-redis-benchmark", host, finished, first=first)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--load-cpu", default="1")
    ap.add_argument("--requests-p16", type=int, default=2_000_000)
    ap.add_argument("--requests-p1", type=int, default=300_000)
    ap.add_argument("--out")
    ap.add_argument("--baseline", help="another slotlane-server binary (e.g. an older commit's) run in the same "
                    "rounds: before/after under the same conditions")
    ap.add_argument("--tests", default=",".join(TESTS), help="comma-separated subset of " + ",".join(TESTS))
    ap.add_argument("--pipelines", default="16,1", help="comma-separated pipeline depths (default 16,1)")
    ap.add_argument("--server", help="the slotlane-server binary under test (default: build/server/slotlane-server)")
    ap.add_argument("--baseline-desc", default="", help="what the baseline binary is (recorded)")
    args = ap.parse_args()
    kinds = ("slotlane", "redis") + (("baseline",) if args.baseline else ())
    tests = [t for t in args.tests.split(",") if t in TESTS]
    pipelines = [int(p) for p in args.pipelines.split(",")]
    if args.server:
        benchlib.SERVER = os.path.abspath(args.server)
    host = socket.gethostname()
    started = datetime.datetime.now(datetime.timezone.utc)
    redis_version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()
    rounds = []
    for rnd in range(args.rounds):
        for pipeline in pipelines:
            n = args.requests_p16 if pipeline == 16 else args.requests_p1
            for kind in kinds:
                port = free_port()
                proc, server_cmd = start(kind, port, args.server_cpu, args.baseline)
                try:
                    for test in tests:
                        before = cpu_ns(proc.pid)
                        rps, bench_cmd = bench_one(port, pipeline, test, n, args.load_cpu)
                        after = cpu_ns(proc.pid)
                        user, system = after[0] - before[0], after[1] - before[1]
                        row = {"load1": float(open("/proc/loadavg").read().split()[0]),
                               "round": rnd + 1, "server": kind, "pipeline": pipeline, "test": test.upper(),
                               "requests": n, "rps": rps, "server_cpu_ns": user + system,
                               "server_cpu_ns_per_req": (user + system) / n,
                               "server_user_ns_per_req": user / n, "server_sys_ns_per_req": system / n,
                               "server_command": " ".join(server_cmd), "bench_command": " ".join(bench_cmd)}
                        rounds.append(row)
                        print(f"round {rnd + 1} {kind:8} P={pipeline:<2} {test.upper():5} {rps:>10.0f} rps "
                              f"{row['server_cpu_ns_per_req']:8.0f} ns/req", flush=True)
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
    summary = []
    for pipeline in pipelines:
        for test in tests:
            med = {}
            for kind in kinds:
                rs = [r for r in rounds if r["server"] == kind and r["pipeline"] == pipeline and r["test"] == test.upper()]
                med[kind] = {"cpu_ns_per_req": statistics.median(r["server_cpu_ns_per_req"] for r in rs),
                             "user_ns_per_req": statistics.median(r["server_user_ns_per_req"] for r in rs),
                             "rps": statistics.median(r["rps"] for r in rs)}
            summary.append({"test": test.upper(), "pipeline": pipeline,
                            "slotlane_cpu_ns_per_req": med["slotlane"]["cpu_ns_per_req"],
                            "redis_cpu_ns_per_req": med["redis"]["cpu_ns_per_req"],
                            "cpu_ratio": med["slotlane"]["cpu_ns_per_req"] / med["redis"]["cpu_ns_per_req"],
                            "slotlane_user_ns_per_req": med["slotlane"]["user_ns_per_req"],
                            "redis_user_ns_per_req": med["redis"]["user_ns_per_req"],
                            "user_ratio": med["slotlane"]["user_ns_per_req"] / med["redis"]["user_ns_per_req"],
                            "slotlane_rps": med["slotlane"]["rps"], "redis_rps": med["redis"]["rps"],
                            "rps_ratio": med["slotlane"]["rps"] / med["redis"]["rps"]})
            if args.baseline:
                summary[-1].update({"baseline_cpu_ns_per_req": med["baseline"]["cpu_ns_per_req"],
                                    "baseline_user_ns_per_req": med["baseline"]["user_ns_per_req"],
                                    "baseline_rps": med["baseline"]["rps"],
                                    "after_before_cpu_ratio": med["slotlane"]["cpu_ns_per_req"] /
                                    med["baseline"]["cpu_ns_per_req"]})
    finished = datetime.datetime.now(datetime.timezone.utc)
    record = {
        "schema": "slotlane.bench.server-redis-benchmark/1",
        "benchmark": "server-redis-benchmark",
        "tool": "server/bench/redis_benchmark.py",
        "command": sys.argv,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"),
        "git": git_state(),
        "machine": {"hostname": host, "cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_end": open("/proc/loadavg").read().split()[:3]},
        "date": finished.date().isoformat(),
        "versions": {"redis_server": redis_version,
                     "slotlane_server": subprocess.run([benchlib.SERVER, "--version"], capture_output=True, text=True).stdout.strip()},
        "method": "server pinned to CPU %s, redis-benchmark to CPU %s; one test per redis-benchmark run; CPU time "
                  "(utime+stime) of the server from /proc/<pid>/stat around each run; fresh server per round; medians "
                  "of %d rounds" % (args.server_cpu, args.load_cpu, args.rounds),
        "load_note": "the machine is shared: other jobs ran during the measurement (see loadavg); CPU time per "
                     "request is robust to that, requests per second is not",
        "baseline": {"binary": args.baseline, "desc": args.baseline_desc} if args.baseline else None,
        "rounds": rounds,
        "medians": summary,
    }
    out = write_record(record, args.out, host, finished)
    print("\n| op | pipeline | slotlane CPU ns/req | redis CPU ns/req | ratio | user-only ratio | slotlane rps | redis rps | rps ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in summary:
        print(f"| {s['test']} | {s['pipeline']} | {s['slotlane_cpu_ns_per_req']:.0f} | {s['redis_cpu_ns_per_req']:.0f} | "
              f"{s['cpu_ratio']:.2f} | {s['user_ratio']:.2f} | {s['slotlane_rps']:.0f} | {s['redis_rps']:.0f} | "
              f"{s['rps_ratio']:.2f} |")
    if args.baseline:
        print("\n| op | pipeline | baseline CPU ns/req | slotlane CPU ns/req | after / before |")
        print("|---|---|---|---|---|")
        for s in summary:
            print(f"| {s['test']} | {s['pipeline']} | {s['baseline_cpu_ns_per_req']:.0f} | "
                  f"{s['slotlane_cpu_ns_per_req']:.0f} | {s['after_before_cpu_ratio']:.2f} |")
    print(f"\nrecord: {out}")


if __name__ == "__main__":
    sys.exit(main())
