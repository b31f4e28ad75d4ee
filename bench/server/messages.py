#!/usr/bin/env python3
"""messages.py — slotlane-server (1 shard) against redis-server on the same CPU for the
message rows of issue 17, driven by slotlane-load's message modes (bench/load/msg_modes.c):

  blpop        BLPOP/LPUSH ping-pong: 8 queues (--pairs), each a parked BLPOP served by an LPUSH
               of the element the waiter expects next (one op = one element handed over)
  publish-1    PUBLISH to 1 subscriber: 4 publishers x 16 PUBLISHes in flight
  publish-16   PUBLISH to 16 subscribers, the same publishers (one op = one PUBLISH, 16
               deliveries)
  publish-1-c50, publish-16-c50   the same with 50 publishers x 16 in flight (the connection
               count and depth of the other server rows)

Method: each server pinned to --server-cpus, slotlane-load to --load-cpus (taskset); a fresh
server per row and round; rounds round-major (every row once per round); per run the
server's CPU time (all threads: /proc/PID/task/*/schedstat, exact; split into user and system
by the ratio of /proc/PID/stat's ticks, which have 10 ms resolution) over the load's run divided by
the ops the load completed (it checks every reply and every delivered message); medians over
the rounds, every round kept. Load average at the start and the end of each run in the
record. Holds the lock of ci/bench.sh ($SL_BENCH_LOCK). Writes
bench/records/<host>-<date>-<time>-server-messages.json.

    make build && python3 bench/server/messages.py --rounds 3 --seconds 5

--baseline-build DIR runs DIR/server/slotlane-server (another commit's build) in the same
rounds as a third server ("baseline"); the order of the servers rotates from round to
round, and the record keeps each round's slotlane/redis and slotlane/baseline ratios and
their medians beside the ratio of the medians.
"""
import argparse
import fcntl
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serverbench as sb  # noqa: E402

ROWS = {
    "blpop": ["--mode", "blpop", "--pairs", "8"],
    "publish-1": ["--mode", "publish", "--subscribers", "1", "--publishers", "4", "--pipeline", "16"],
    "publish-16": ["--mode", "publish", "--subscribers", "16", "--publishers", "4", "--pipeline", "16"],
    # the project's standard load of the other server rows: 50 connections x pipeline 16
    "publish-1-c50": ["--mode", "publish", "--subscribers", "1", "--publishers", "50", "--pipeline", "16"],
    "publish-16-c50": ["--mode", "publish", "--subscribers", "16", "--publishers", "50", "--pipeline", "16"],
}


def cpu_ns(pid):
    """CPU time of every thread of pid in ns (/proc/PID/task/*/schedstat, exact), and the
    user and system ticks (/proc/PID/stat, 10 ms resolution: used only to split it)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total, sb.proc_cpu_ticks(pid)


def start_server(kind, port, cpus, build):
    if kind in ("slotlane", "baseline"):
        cmd = [os.path.join(build, "server", "slotlane-server"), "--shards", "1", "--port", str(port),
               "--loglevel", "warning"]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
               "--daemonize", "no", "--logfile", "/dev/null"]
    proc = subprocess.Popen(["taskset", "-c", cpus] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sb.wait_ping(port, proc)
    return proc


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_one(kind, row, a, port):
    proc = start_server(kind, port, a.server_cpus, a.baseline_build if kind == "baseline" else a.build)
    try:
        out = os.path.join(a.tmpdir, f"{kind}-{row}.json")
        load = ["taskset", "-c", a.load_cpus, os.path.join(a.build, "bench", "slotlane-load"), "--port", str(port),
                "--test-time", str(a.seconds), "--json", out] + ROWS[row]
        la0 = os.getloadavg()[0]
        before = cpu_ns(proc.pid)
        t0 = time.time()
        r = subprocess.run(load, capture_output=True, text=True, timeout=a.seconds + 60)
        wall = time.time() - t0
        after = cpu_ns(proc.pid)
        la1 = os.getloadavg()[0]
        with open(out) as f:
            res = json.load(f)
        if r.returncode != 0 or res["errors"]:
            raise RuntimeError(f"{kind} {row}: slotlane-load failed: {res.get('first_error')} {r.stderr[-500:]}")
        total = after[0] - before[0]
        ut, st = after[1][0] - before[1][0], after[1][1] - before[1][1]
        share = ut / (ut + st) if ut + st else 0.5  # the split from the ticks, the total exact
        user, sys_ = total * share, total * (1 - share)
        ops = res["ops"]
        return {"ops": ops, "deliveries": res["deliveries"], "load_seconds": res["seconds"], "wall_s": round(wall, 3),
                "ops_per_sec": res["ops_per_sec"], "server_user_ns_per_op": user / ops,
                "server_sys_ns_per_op": sys_ / ops, "server_cpu_ns_per_op": (user + sys_) / ops,
                "loadavg_start": la0, "loadavg_end": la1}
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--server-cpus", default="1")
    ap.add_argument("--load-cpus", default="0")
    ap.add_argument("--build", default=os.path.join(sb.ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(sb.ROOT, "bench", "records"))
    ap.add_argument("--baseline-build", help="another build directory run in the same rounds (before/after)")
    ap.add_argument("--baseline-desc", default="")
    a = ap.parse_args()
    a.tmpdir = sb.tempfile.mkdtemp(prefix="sl-messages-")
    rows = a.rows.split(",")
    lock = open(os.environ.get("SL_BENCH_LOCK", "/tmp/slotlane-bench.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    started = sb.dt.datetime.now(sb.dt.timezone.utc).isoformat()
    kinds = ["slotlane", "redis"] + (["baseline"] if a.baseline_build else [])
    results = {(k, r): [] for k in kinds for r in rows}
    port = 26600
    for rnd in range(a.rounds):
        for row in rows:
            for kind in kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]:  # who runs first rotates
                while not sb.port_free(port):
                    port += 1
                res = run_one(kind, row, a, port)
                results[(kind, row)].append(res)
                print(f"round {rnd + 1} {row:10s} {kind:8s} server CPU {res['server_cpu_ns_per_op']:8.0f} ns/op "
                      f"(user {res['server_user_ns_per_op']:.0f}, sys {res['server_sys_ns_per_op']:.0f}), "
                      f"{res['ops_per_sec']:.0f} ops/s, load {res['loadavg_start']:.1f}", flush=True)
    out_rows = []
    for row in rows:
        med = {}
        for kind in kinds:
            rs = results[(kind, row)]
            med[kind] = {f: sb.median([x[f] for x in rs]) for f in
                         ("server_cpu_ns_per_op", "server_user_ns_per_op", "server_sys_ns_per_op", "ops_per_sec")}
        ratio = med["slotlane"]["server_cpu_ns_per_op"] / med["redis"]["server_cpu_ns_per_op"]
        target = 1.0 if row == "blpop" else 0.9
        per_round = [s["server_cpu_ns_per_op"] / d["server_cpu_ns_per_op"]
                     for s, d in zip(results[("slotlane", row)], results[("redis", row)])]
        out = {"row": row, "load_args": ROWS[row], "slotlane": {"rounds": results[("slotlane", row)],
               "median": med["slotlane"]}, "redis": {"rounds": results[("redis", row)], "median": med["redis"]},
               "cpu_ratio": ratio, "round_ratios": per_round, "round_ratio_median": sb.median(per_round),
               "target": target, "target_met": ratio <= target}
        if a.baseline_build:
            after_before = [s["server_cpu_ns_per_op"] / b["server_cpu_ns_per_op"]
                            for s, b in zip(results[("slotlane", row)], results[("baseline", row)])]
            out["baseline"] = {"rounds": results[("baseline", row)], "median": med["baseline"]}
            out["after_over_baseline_round_ratios"] = after_before
            out["after_over_baseline_median"] = sb.median(after_before)
            out["baseline_over_redis_ratio"] = med["baseline"]["server_cpu_ns_per_op"] / med["redis"]["server_cpu_ns_per_op"]
        out_rows.append(out)
    rec = {"schema": "slotlane.bench.server-messages/1", "benchmark": "server-messages", "tool": "bench/server/messages.py",
           "started_at": started, "finished_at": sb.dt.datetime.now(sb.dt.timezone.utc).isoformat(),
           "machine": sb.machine(), "git": sb.git_info(), "command": sys.argv,
           "versions": {"redis": sb.first_line(["redis-server", "--version"])},
           "config": {"rounds": a.rounds, "seconds": a.seconds, "server_cpus": a.server_cpus, "load_cpus": a.load_cpus,
                      "slotlane_shards": 1, "baseline_build": a.baseline_build, "baseline_desc": a.baseline_desc},
           "rows": out_rows}
    path = sb.save_record(a.out, "server-messages", rec)
    print(f"\n| row | slotlane CPU ns/op (user / sys) | redis CPU ns/op (user / sys) | ratio | target | slotlane ops/s | redis ops/s |")
    print("|---|---|---|---|---|---|---|")
    for r in out_rows:
        s, d = r["slotlane"]["median"], r["redis"]["median"]
        print(f"| {r['row']} | {s['server_cpu_ns_per_op']:.0f} ({s['server_user_ns_per_op']:.0f} / {s['server_sys_ns_per_op']:.0f}) "
              f"| {d['server_cpu_ns_per_op']:.0f} ({d['server_user_ns_per_op']:.0f} / {d['server_sys_ns_per_op']:.0f}) "
              f"| {r['cpu_ratio']:.2f} | <= {r['target']} | {s['ops_per_sec']:.0f} | {d['ops_per_sec']:.0f} |")
        print(f"  {r['row']}: round ratios {' '.join(f'{x:.2f}' for x in r['round_ratios'])}"
              + (f"; after/baseline {' '.join(f'{x:.2f}' for x in r['after_over_baseline_round_ratios'])}"
                 f" (median {r['after_over_baseline_median']:.2f}), baseline/redis {r['baseline_over_redis_ratio']:.2f}"
                 if a.baseline_build else ""))
    print(f"record: {path}")


if __name__ == "__main__":
    main()
