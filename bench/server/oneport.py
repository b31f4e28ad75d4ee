#!/usr/bin/env python3
"""bench/server/oneport.py — what one-port mode costs the server (DESIGN.md, "The benchmarks": server).

slotlane-server at 2 and 4 shards, twice: (a) per-shard mode loaded by a cluster-aware client
(`redis-benchmark --cluster`: every connection talks to the shard that owns its keys, nothing is
forwarded) and (b) one-port mode loaded by the same tool without --cluster on the one port (the
kernel spreads the connections over the shards; a command whose key another shard owns is
forwarded to it and its reply comes back in order). Same connection count, pipeline depth,
value size and random keys over all slots; SET and GET each on their own.

Figures, per round: server CPU time (utime + stime of the server process, all threads, from
/proc/<pid>/stat around the load generator's run; clock-tick resolution) per request, the
server's context switches per request (voluntary + involuntary, every thread, from
/proc/<pid>/task/*/status), and for one-port the INFO stats deltas: forwarded commands per
request and cross-thread wakeups (uv_async_send calls) per forwarded command. Rounds are
round-major (every row once per round, so the drift of a shared machine spreads over all rows);
the ratio one-port / per-shard CPU per request is taken within each round (the two rows run
back to back) and its median reported next to the ratio of the medians.

Pinning: every shard thread on --server-cpus (default CPU 1, i.e. N shards share one CPU, as a
server given one core would), the load generator on --load-cpus (default CPU 0). With 4 shards
on one CPU the shard threads take turns on it: a forwarded command costs a thread switch
unless the target already has work queued, which is what the wakeup figure shows.

With --baseline-build DIR (a build directory of another commit, e.g. the one before an
optimization), every row also runs against DIR/server/slotlane-server in the same rounds, so
before and after are measured under the same conditions; the record then also gives the ratio
current / baseline one-port CPU per request within each round.

Writes bench/records/<host>-<date>-<time>-server-oneport.json (bench/records/README.md) and
prints a markdown table. Holds the benchmark lock of ci/bench.sh ($SL_BENCH_LOCK). Every server
it starts is stopped by its PID, also on failure and Ctrl-C.

    bench/server/oneport.py [--rounds 3] [--shards 2,4] [--requests 1000000] [--quick]
"""
import argparse
import copy
import datetime as dt
import fcntl
import glob
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serverbench as sb  # noqa: E402  (the shared engine: Server, measure, records)

PROG = "oneport"
LIMIT_CPU = 1.5        # one-port CPU per request <= 1.5 x per-shard
LIMIT_WAKEUPS = 0.1    # cross-thread wakeups per forwarded command at depth 16


def say(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def info_stats(port):
    """INFO stats of the server as a dict."""
    r = sb.resp_cmd(port, "INFO", "stats", timeout=5)
    if not isinstance(r, bytes):
        raise sb.Failure(f"INFO on {port}: {r!r}")
    out = {}
    for line in r.decode().splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = int(v) if re.fullmatch(r"-?[0-9]+", v) else v
    return out


def ctx_switches(pid):
    """Voluntary + involuntary context switches of every thread of the process."""
    total = 0
    for st in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(st) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split(":")[1])
        except OSError:
            pass  # a thread that just exited
    return total


class Server(sb.Server):
    """serverbench's server with a build tag in its label (current or baseline binary)."""

    def __init__(self, build, *args):
        super().__init__(*args)
        self.build = build

    @property
    def label(self):
        return super().label + ("" if self.build == "current" else f"@{self.build}")


def measure_row(row, srv, a, workdir):
    port = srv.ports[0]
    s0 = info_stats(port)
    cs0 = ctx_switches(srv.pids[0])
    x = sb.measure(a.loader, srv, row["op"], a, workdir)
    cs1 = ctx_switches(srv.pids[0])
    s1 = info_stats(port)
    d = {k: s1.get(k, 0) - s0.get(k, 0) for k in ("forwarded_commands", "forward_wakeups", "forwarded_executed")}
    x.update(d)
    req = x["requests"]
    x["forwarded_per_req"] = d["forwarded_commands"] / req if req else None
    x["wakeups_per_forwarded"] = d["forward_wakeups"] / d["forwarded_commands"] if d["forwarded_commands"] else None
    x["ctx_switches"] = cs1 - cs0
    x["ctx_switches_per_req"] = (cs1 - cs0) / req if req else None
    return x


def main():
    ap = argparse.ArgumentParser(prog="bench/server/oneport.py", formatter_class=argparse.RawDescriptionHelpFormatter,
                                 description=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--rounds", type=int, default=3, help="rounds; medians over them (default 3)")
    ap.add_argument("--quick", action="store_true", help="one round of 100,000 requests per row")
    ap.add_argument("--shards", default="2,4", help="shard counts (default 2,4)")
    ap.add_argument("--loader", default="redis-benchmark", choices=["redis-benchmark", "slotlane-load"],
                    help="load generator (default redis-benchmark: --cluster for per-shard, plain for one-port)")
    ap.add_argument("--server-cpus", default="1", help="CPUs of the server (default 1)")
    ap.add_argument("--load-cpus", default="0", help="CPUs of the load generator (default 0)")
    ap.add_argument("--connections", type=int, default=50, help="connections in all (default 50)")
    ap.add_argument("--pipeline", type=int, default=16, help="pipeline depth per connection (default 16)")
    ap.add_argument("--data-size", type=int, default=32)
    ap.add_argument("--key-range", type=int, default=100000)
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per redis-benchmark run (default 1,000,000; --quick 100,000)")
    ap.add_argument("--seconds", type=float, default=None, help="slotlane-load run length (default 5; --quick 1)")
    ap.add_argument("--base-port", type=int, default=26400, help="first port (default 26400)")
    ap.add_argument("--out", default=os.path.join(sb.ROOT, "bench", "records"), help="record directory")
    ap.add_argument("--build", default=os.environ.get("SL_BUILD_DIR", os.path.join(sb.ROOT, "build")))
    ap.add_argument("--baseline-build", default=None,
                    help="build directory of another commit: its server runs every row too, in the same rounds")
    ap.add_argument("--baseline-desc", default=None, help="what the baseline is (e.g. its commit), for the record")
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    ap.add_argument("--no-lock", action="store_true", help="do not take the benchmark lock")
    ap.add_argument("--invocation", default=os.environ.get("SL_BENCH_INVOCATION"))
    a = ap.parse_args()
    if a.quick:
        a.rounds = 1
    a.requests = a.requests or (100000 if a.quick else 1000000)
    a.seconds = a.seconds or (1.0 if a.quick else 5.0)
    a.sl_threads, a.sl_per_batch = 0, False  # serverbench's slotlane-load defaults
    try:
        shard_list = [int(x) for x in a.shards.split(",")]
        assert all(2 <= n <= 16 for n in shard_list) and 1 <= a.rounds <= 50
        assert a.requests > 0 and a.connections > 0 and a.pipeline > 0
        assert 26000 <= a.base_port and a.base_port + 120 <= 27000
    except (ValueError, AssertionError):
        ap.error("bad --shards (2..16), --rounds (1..50), --requests, --connections, --pipeline or --base-port")
    for cpus in (a.server_cpus, a.load_cpus):
        if not re.fullmatch(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*", cpus):
            ap.error(f"bad CPU list {cpus!r}")
    a.slotlane_server = os.path.join(a.build, "server", "slotlane-server")
    a.slotlane_load = os.path.join(a.build, "bench", "slotlane-load")
    builds = {"current": a}
    if a.baseline_build:
        b = copy.copy(a)
        b.slotlane_server = os.path.join(os.path.abspath(a.baseline_build), "server", "slotlane-server")
        builds["baseline"] = b
    for exe in [x.slotlane_server for x in builds.values()] + ([a.slotlane_load] if a.loader == "slotlane-load" else []):
        if not os.access(exe, os.X_OK):
            ap.error(f"{exe} is missing: run `make build` first")
    for tool in ("taskset", "redis-benchmark"):
        if not shutil.which(tool):
            ap.error(f"{tool} is not on PATH")

    signal.signal(signal.SIGINT, sb.on_signal)
    signal.signal(signal.SIGTERM, sb.on_signal)

    if not a.no_lock:
        lock_path = os.environ.get("SL_BENCH_LOCK", "/tmp/slotlane-bench.lock")
        lock = open(lock_path, "a")
        deadline = time.time() + float(os.environ.get("SL_BENCH_LOCK_WAIT", "1800"))
        said = False
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said:
                    say(f"another benchmark holds {lock_path}; waiting")
                    said = True
                if time.time() > deadline:
                    say(f"gave up waiting for {lock_path}")
                    return 1
                time.sleep(1)

    workdir = tempfile.mkdtemp(prefix="sl-oneport.")
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    servers, rows = [], []
    port = a.base_port
    for n in shard_list:
        for build, args in builds.items():
            for mode in ("per-shard", "one-port"):
                srv = Server(build, "slotlane", n, mode, port, a.server_cpus, args, workdir)
                port += n + 2
                servers.append(srv)
                for op in ("SET", "GET"):
                    rows.append({"server_id": srv.label, "build": build, "shards": n, "port_mode": mode,
                                 "cluster_mode_load": srv.cluster, "loader": a.loader, "op": op,
                                 "ok": True, "error": None, "rounds": [], "_srv": srv})
    status = 0
    try:
        for srv in servers:
            try:
                srv.start()
            except sb.Failure as e:
                srv.error = str(e)
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
                        srv.flushall()
                    x = measure_row(r, srv, a, workdir)
                    x["round"] = rd
                    r["rounds"].append(x)
                    w = x["wakeups_per_forwarded"]
                    say(f"[{done}/{total}] round {rd} {srv.label:22s} {r['op']}: {x['req_per_s']:9.0f} req/s  "
                        f"server CPU {x['server_cpu_ns_per_req']:6.0f} ns/req  fwd/req {x['forwarded_per_req']:.2f}  "
                        f"wakeups/fwd {'-' if w is None else f'{w:.3f}'}  (load {x['load1']})")
                except sb.Failure as e:
                    r["ok"], r["error"] = False, f"round {rd}: {e}"
                    r["rounds"].append({"round": rd, "error": str(e)})
                    say(f"[{done}/{total}] round {rd} {srv.label} {r['op']}: FAILED: {e}")
    except sb.Interrupted as e:
        say(f"interrupted ({e}): stopping the servers")
        status = 130
    finally:
        descs = [srv.describe() for srv in servers if srv.pids or srv.error]
        for srv in servers:
            srv.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if status:
        return status

    med = sb.median
    for r in rows:
        srv = r.pop("_srv")
        r["server_command"] = srv.command
        good = [x for x in r["rounds"] if "server_cpu_ns_per_req" in x]
        if r["ok"] and good:
            r["median"] = {
                "req_per_s": med([x["req_per_s"] for x in good]),
                "server_cpu_ns_per_req": med([x["server_cpu_ns_per_req"] for x in good]),
                "server_user_ns_per_req": med([x["server_user_ns"] / x["requests"] for x in good]),
                "server_sys_ns_per_req": med([x["server_sys_ns"] / x["requests"] for x in good]),
                "ctx_switches_per_req": med([x["ctx_switches_per_req"] for x in good]),
                "forwarded_per_req": med([x["forwarded_per_req"] for x in good]),
                "wakeups_per_forwarded": med([x["wakeups_per_forwarded"] for x in good]),
            }
        else:
            r["median"] = None
            status = 1

    # one-port against per-shard, same shards and op: per round and of the medians
    def find(build, n, op, mode):
        return next(r for r in rows if r["build"] == build and r["shards"] == n and r["op"] == op
                    and r["port_mode"] == mode)

    def round_ratios(num, den, key="server_cpu_ns_per_req"):
        return [y[key] / x[key] for x, y in zip(den["rounds"], num["rounds"]) if x.get(key) and y.get(key)]

    comparisons, targets, before_after = [], [], []
    for build in builds:
        for n in shard_list:
            for op in ("SET", "GET"):
                ps, op1 = find(build, n, op, "per-shard"), find(build, n, op, "one-port")
                if not (ps["median"] and op1["median"]):
                    continue
                per_round = [y["server_cpu_ns_per_req"] / x["server_cpu_ns_per_req"]
                             for x, y in zip(ps["rounds"], op1["rounds"])
                             if x.get("server_cpu_ns_per_req") and y.get("server_cpu_ns_per_req")]
                per_round_user = [(y["server_user_ns"] / y["requests"]) / (x["server_user_ns"] / x["requests"])
                                  for x, y in zip(ps["rounds"], op1["rounds"])
                                  if x.get("server_user_ns") and y.get("server_user_ns") is not None]
                c = {"build": build, "shards": n, "op": op,
                     "cpu_ratio_per_round": per_round, "cpu_ratio_median_of_rounds": med(per_round),
                     "cpu_ratio_of_medians": op1["median"]["server_cpu_ns_per_req"] / ps["median"]["server_cpu_ns_per_req"],
                     "user_ratio_median_of_rounds": med(per_round_user),
                     "wakeups_per_forwarded": op1["median"]["wakeups_per_forwarded"]}
                comparisons.append(c)
                if build != "current":
                    continue
                targets.append({"name": f"one-port CPU/req <= {LIMIT_CPU} x per-shard", "shards": n, "op": op,
                                "value": c["cpu_ratio_median_of_rounds"], "limit": LIMIT_CPU,
                                "met": c["cpu_ratio_median_of_rounds"] <= LIMIT_CPU})
                if a.pipeline == 16 and c["wakeups_per_forwarded"] is not None:
                    targets.append({"name": f"wakeups per forwarded command <= {LIMIT_WAKEUPS} at depth 16",
                                    "shards": n, "op": op, "value": c["wakeups_per_forwarded"],
                                    "limit": LIMIT_WAKEUPS, "met": c["wakeups_per_forwarded"] <= LIMIT_WAKEUPS})

    if "baseline" in builds:
        for n in shard_list:
            for op in ("SET", "GET"):
                cur, base = find("current", n, op, "one-port"), find("baseline", n, op, "one-port")
                if cur["median"] and base["median"]:
                    rr = round_ratios(cur, base)
                    before_after.append({"shards": n, "op": op, "baseline_cpu_ns_per_req": base["median"]["server_cpu_ns_per_req"],
                                         "current_cpu_ns_per_req": cur["median"]["server_cpu_ns_per_req"],
                                         "current_over_baseline_per_round": rr,
                                         "current_over_baseline_median_of_rounds": med(rr)})

    f0 = lambda v, fmt: "-" if v is None else format(v, fmt)
    lines = [f"One-port against per-shard, slotlane-server, {a.loader}, {a.connections} connections x depth "
             f"{a.pipeline}, server on CPU {a.server_cpus}, load on CPU {a.load_cpus} (medians of {a.rounds} "
             "round(s); CPU = user+system of the server per request)", "",
             "| build | shards | op | per-shard CPU ns/req | one-port CPU ns/req | one-port / per-shard (median of rounds; "
             "rounds) | user-only ratio | ctx sw/req (per-shard, one-port) | fwd/req | wakeups/fwd | "
             "req/s (per-shard, one-port) |",
             "|---|---:|---|---:|---:|---|---:|---|---:|---:|---|"]
    for c in comparisons:
        pm = find(c["build"], c["shards"], c["op"], "per-shard")["median"]
        om = find(c["build"], c["shards"], c["op"], "one-port")["median"]
        lines.append(
            f"| {c['build']} | {c['shards']} | {c['op']} | {pm['server_cpu_ns_per_req']:.0f} | {om['server_cpu_ns_per_req']:.0f} | "
            f"{c['cpu_ratio_median_of_rounds']:.2f}x ({' '.join(f'{v:.2f}' for v in c['cpu_ratio_per_round'])}) | "
            f"{f0(c['user_ratio_median_of_rounds'], '.2f')}x | {pm['ctx_switches_per_req']:.3f}, "
            f"{om['ctx_switches_per_req']:.3f} | {om['forwarded_per_req']:.2f} | "
            f"{f0(c['wakeups_per_forwarded'], '.3f')} | {sb.fmt_rate(pm['req_per_s'])}, {sb.fmt_rate(om['req_per_s'])} |")
    for r in rows:
        if not r["ok"]:
            lines.append(f"FAILED {r['server_id']} {r['op']}: {r['error']}")
    if before_after:
        lines += ["", f"One-port CPU per request, current against baseline ({a.baseline_desc or a.baseline_build}), "
                      "same rounds:", "", "| shards | op | baseline ns/req | current ns/req | current / baseline "
                      "(median of rounds; rounds) |", "|---:|---|---:|---:|---|"]
        for x in before_after:
            lines.append(f"| {x['shards']} | {x['op']} | {x['baseline_cpu_ns_per_req']:.0f} | "
                         f"{x['current_cpu_ns_per_req']:.0f} | {x['current_over_baseline_median_of_rounds']:.2f}x "
                         f"({' '.join(f'{v:.2f}' for v in x['current_over_baseline_per_round'])}) |")
    lines += [""] + [f"target {t['name']} ({t['shards']} shards, {t['op']}): {t['value']:.3f} "
                     f"{'met' if t['met'] else 'NOT met'}" for t in targets]
    table = "\n".join(lines)

    rec = {
        "schema": "slotlane.bench.server-oneport/1",
        "benchmark": "server-oneport",
        "tool": "bench/server/oneport.py",
        "ok": status == 0,
        "started_at": started,
        "finished_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": dict(sb.machine(), server_cpus=a.server_cpus, load_cpus=a.load_cpus),
        "versions": sb.versions(a),
        "git": sb.git_info(),
        "command": sys.argv,
        "invocation": a.invocation,
        "config": {"rounds": a.rounds, "quick": a.quick, "shards": shard_list, "loader": a.loader,
                   "connections": a.connections, "pipeline": a.pipeline, "data_size": a.data_size,
                   "key_range": a.key_range, "redis_benchmark_requests": a.requests, "seconds": a.seconds,
                   "builds": {k: v.slotlane_server for k, v in builds.items()}, "baseline_desc": a.baseline_desc,
                   "order": "round-major: per-shard SET, GET, one-port SET, GET per shard count (and build), every round; "
                            "FLUSHALL before each SET row; GET rows read the keys the SET row wrote"},
        "method": "server CPU = utime+stime from /proc/<pid>/stat of the server (all threads) around one "
                  "load-generator run, divided by its requests; ratio one-port / per-shard within each round, "
                  "median of those; wakeups per forwarded command = INFO stats forward_wakeups delta over "
                  "forwarded_commands delta; context switches from /proc/<pid>/task/*/status",
        "servers": descs,
        "rows": rows,
        "comparisons": comparisons,
        "before_after": before_after,
        "targets": targets,
        "table_markdown": table,
    }
    print()
    print(table)
    if not a.no_record:
        try:
            path = sb.save_record(a.out, "server-oneport", rec)
            say(f"record: {os.path.relpath(path, sb.ROOT)}")
        except OSError as e:
            say(f"cannot write the record: {e}")
            return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
