#!/usr/bin/env python3
"""python/bench/callgrind_cost.py — instructions (callgrind Ir) per pipelined command of the
Python binding, for comparing two builds of it where CPU seconds are too noisy (a shared
machine) to show a 5 % difference.

    python3 python/bench/callgrind_cost.py --url redis://127.0.0.1:7000 \\
        --before /tmp/venvA/bin/python --after build/python-venv/bin/python \\
        [--rows cluster:GET:16,cluster:SET:16] [--n 400] [--write] [--label TEXT]

Each interpreter must have `slotlane` installed. For every row (cluster or plain, GET or SET,
depth) the same worker script runs twice under valgrind --tool=callgrind: once with 0
measured pipelines and once with N; (Ir(N) - Ir(0)) / (N * depth) is the cost of one queued,
executed and checked command, start-up and the key fill excluded. The client process is
measured whole (interpreter, the CFFI extension, the core); the server is another process.
With --write the figures go to bench/records/<host>-<date>-<time>-callgrind-cost-python.json
(schema slotlane.bench.callgrind-cost/1, bench/records/README.md). Standard library only."""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = os.path.join(HERE, "..", "..", "bench", "records")

# The worker: the same loop as cluster_cost.py's SlotlaneRunner (one pipeline object reused,
# every reply compared with what was written), for a fixed number of pipelines.
WORKER = r'''
import sys, slotlane
url, row, op, depth, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
c = slotlane.Client(url, cluster=(row != "plain"), socket_timeout=10)
keys = ["cg:%d" % i for i in range(1024)]
vals = [b"v%06d" % i for i in range(1024)]
with c.pipeline() as p:
    for k, v in zip(keys, vals):
        p.set(k, v)
    p.execute(raise_on_error=True)
batches = [(keys[i:i + depth], vals[i:i + depth]) for i in range(0, 1024, depth)]
p = c.pipeline()
ok = [True] * depth
nb = len(batches)
for j in range(n):
    ks, vs = batches[j % nb]
    if op == "GET":
        for k in ks:
            p.get(k)
        if p.execute() != vs:
            raise SystemExit("GET replies differ")
    else:
        for k, v in zip(ks, vs):
            p.set(k, v)
        if p.execute() != ok:
            raise SystemExit("SET replies differ")
c.close()
'''


def instructions(python, worker, url, row, op, depth, n):
    """Ir of one worker run (callgrind's 'Collected'); raises on a failed run."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                            python, worker, url, row, op, str(depth), str(n)],
                           capture_output=True, text=True)
        m = re.search(r"Collected : (\d+)", r.stderr)
        if r.returncode != 0 or not m:
            raise SystemExit("callgrind_cost: %s %s %s %d failed (exit %d): %s"
                             % (python, row, op, depth, r.returncode, r.stderr[-800:]))
        return int(m.group(1))


def per_command(python, worker, url, row, op, depth, n):
    base = instructions(python, worker, url, row, op, depth, 0)
    full = instructions(python, worker, url, row, op, depth, n)
    return (full - base) / (n * depth)


def version_of(python):
    r = subprocess.run([python, "-c", "import slotlane, sys; print(slotlane.__file__); print(sys.version.split()[0])"],
                       capture_output=True, text=True, check=True)
    path, ver = r.stdout.split("\n")[:2]
    return {"python": python, "slotlane": path, "python_version": ver}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--before", required=True, help="the interpreter of the build compared against")
    ap.add_argument("--after", required=True, help="the interpreter of the build measured")
    ap.add_argument("--rows", default="cluster:GET:16,cluster:SET:16,cluster:GET:64,cluster:SET:64")
    ap.add_argument("--n", type=int, default=400, help="measured pipelines per run")
    ap.add_argument("--label", default="")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rows = []
    for spec in args.rows.split(","):
        row, op, depth = spec.split(":")
        rows.append((row, op.upper(), int(depth)))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(WORKER)
        worker = f.name
    try:
        out = []
        print("%s (callgrind Ir per command, %d pipelines per run)" % (args.label or "before vs after", args.n))
        print("| row | op | depth | before | after | after/before |")
        print("|---|---|---:|---:|---:|---:|")
        for row, op, depth in rows:
            b = per_command(args.before, worker, args.url, row, op, depth, args.n)
            a = per_command(args.after, worker, args.url, row, op, depth, args.n)
            out.append({"row": row, "op": op, "depth": depth, "before_ir_per_cmd": round(b, 1),
                        "after_ir_per_cmd": round(a, 1), "ratio": round(a / b, 4)})
            print("| %s | %s | %d | %.0f | %.0f | %.3f |" % (row, op, depth, b, a, a / b))
    finally:
        os.unlink(worker)
    if args.write:
        rec = {"schema": "slotlane.bench.callgrind-cost/1", "benchmark": "callgrind-cost", "lang": "python",
               "label": args.label, "n_pipelines": args.n, "url": args.url,
               "before": version_of(args.before), "after": version_of(args.after),
               "load_average": os.getloadavg(), "rows": out}
        host = socket.gethostname().split(".")[0]
        while True:
            name = "%s-%s-callgrind-cost-python.json" % (host, time.strftime("%Y-%m-%d-%H%M%S", time.gmtime()))
            path = os.path.join(RECORDS, name)
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(rec, f, indent=1)
                f.write("\n")
            try:
                os.link(tmp, path)
                os.unlink(tmp)
                break
            except FileExistsError:
                os.unlink(tmp)
                time.sleep(1)
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    sys.exit(main())
