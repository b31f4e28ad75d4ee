#!/usr/bin/env python3
"""irprofile.py — instructions per request of sl-cluster-cost's rows under callgrind.

CPU time on a shared 2-core VM moves by ±25% between runs; instruction counts do not.
This runs each row of sl-cluster-cost once under `valgrind --tool=callgrind` with one
worker, collecting only inside the per-pipeline function (run_slotlane_pipe /
run_hiredis_pipe: the client's whole work for a pipeline plus the same reply checks for
every client), and prints instructions (Ir) per request per row, the ratio to the plain
row, and the functions where the instructions go (self Ir per request).

  bench/cluster-cost/irprofile.py --tool build/bench/sl-cluster-cost \
      --plain redis://127.0.0.1:24700 --cluster redis://127.0.0.1:24710 \
      [--rows plain,one-node,cluster] [--ops GET,SET] [--depths 16,64] [--clients slotlane,hiredis]
      [--argv] [--top 15] [--keep DIR] [--json FILE]

The keys must be filled (run sl-cluster-cost once first, or pass --fill).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def annotate(path, *extra):
    # run from / : inside the source tree callgrind_annotate shortens paths and drops
    # caller lines of the tree
    return subprocess.run(["callgrind_annotate", "--threshold=100", *extra, os.path.abspath(path)], capture_output=True, text=True,
                          check=True, cwd="/").stdout


def calls_into(tree, fn):
    """Total calls into fn and their inclusive Ir, from `callgrind_annotate --tree=caller`."""
    calls = incl = 0
    for block in tree.split("\n\n"):
        lines = block.strip("\n").split("\n")
        if not any(re.search(r"\*\s+\S+:%s \[" % re.escape(fn), l) for l in lines):
            continue
        for l in lines:
            m = re.match(r"^\s*([\d,]+) .*<\s+\S+ \(([\d,]+)x\)", l)
            if m:
                incl += int(m.group(1).replace(",", ""))
                calls += int(m.group(2).replace(",", ""))
    return calls, incl


def self_costs(flat):
    out = []
    for l in flat.split("\n"):
        m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+):(\S+)", l)
        if m and "PROGRAM TOTALS" not in l:
            out.append((int(m.group(1).replace(",", "")), m.group(3), os.path.basename(m.group(2))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="build/bench/sl-cluster-cost")
    ap.add_argument("--plain")
    ap.add_argument("--cluster")
    ap.add_argument("--rows", default="plain,one-node,cluster")
    ap.add_argument("--ops", default="GET,SET")
    ap.add_argument("--depths", default="16,64")
    ap.add_argument("--clients", default="slotlane,hiredis")
    ap.add_argument("--argv", action="store_true")
    ap.add_argument("--seconds", default="2")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--keep", help="keep the callgrind files in this directory")
    ap.add_argument("--json", help="write the figures as JSON to this file")
    ap.add_argument("--fill", action="store_true", help="let the first run fill the keys")
    a = ap.parse_args()

    outdir = a.keep or tempfile.mkdtemp(prefix="sl-irprofile.")
    os.makedirs(outdir, exist_ok=True)
    rows = [r for r in a.rows.split(",") if r]
    clients = [c for c in a.clients.split(",") if c]
    results = []
    first = True
    for op in a.ops.split(","):
        for depth in [int(d) for d in a.depths.split(",")]:
            plan = [("slotlane", r) for r in rows if "slotlane" in clients]
            if "hiredis" in clients and "plain" in rows:
                plan.append(("hiredis", "plain"))
            for client, row in plan:
                entry = "run_hiredis_pipe" if client == "hiredis" else "run_slotlane_pipe"
                core = None if client == "hiredis" else ("sl_batch_exec" if a.argv else "sl_batch_run")
                out = os.path.join(outdir, f"cg.{client}.{row}.{op}.{depth}.out")
                cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={entry}",
                       f"--callgrind-out-file={out}", a.tool, "--rows", row, "--clients", client, "--ops", op,
                       "--depths", str(depth), "--workers", "1", "--rounds", "1", "--seconds", a.seconds,
                       "--warmup", "0.2"]
                if a.plain:
                    cmd += ["--plain", a.plain]
                if a.cluster:
                    cmd += ["--cluster", a.cluster]
                if a.argv:
                    cmd += ["--argv"]
                if not (a.fill and first):
                    cmd += ["--no-fill"]
                first = False
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    sys.stderr.write(p.stderr[-2000:])
                    sys.exit(f"irprofile: {client} {row} {op} d{depth} failed")
                tree = annotate(out, "--tree=caller")
                calls, incl = calls_into(tree, entry)
                reqs = calls * depth
                core_ir = None
                if core:
                    c2, i2 = calls_into(tree, core)
                    core_ir = i2 / reqs if reqs else None
                if a.argv and client == "slotlane":
                    c3, i3 = calls_into(tree, "sl_batch_append_argv")
                    core_ir = (core_ir or 0) + (i3 / reqs if reqs else 0)
                tops = [(ir / reqs, fn, f) for ir, fn, f in self_costs(annotate(out))[:a.top]] if reqs else []
                results.append({"client": client if not (a.argv and client == "slotlane") else "slotlane-argv",
                                "row": row, "op": op, "depth": depth, "pipelines": calls,
                                "ir_per_req": incl / reqs if reqs else None, "core_ir_per_req": core_ir,
                                "top_self": [{"fn": fn, "file": f, "ir_per_req": round(v, 1)} for v, fn, f in tops]})
                sys.stderr.write(f"  {client} {row} {op} d{depth}: {incl / max(reqs, 1):.0f} Ir/req\n")

    def plain_of(r):
        for x in results:
            if x["client"].startswith("slotlane") and x["row"] == "plain" and x["op"] == r["op"] and x["depth"] == r["depth"]:
                return x
        return None

    print("\n| client | op | depth | row | Ir/req (pipeline + checks) | x plain | Ir/req in the core call |")
    print("|---|---|---:|---|---:|---:|---:|")
    for r in results:
        p = plain_of(r)
        xp = f"{r['ir_per_req'] / p['ir_per_req']:.2f}" if p else "-"
        core = f"{r['core_ir_per_req']:.0f}" if r["core_ir_per_req"] is not None else "-"
        print(f"| {r['client']} | {r['op']} | {r['depth']} | {r['row']} | {r['ir_per_req']:.0f} | {xp} | {core} |")
    print("\nwhere the instructions go (self Ir per request, top functions):")
    for r in results:
        print(f"\n{r['client']} {r['row']} {r['op']} d{r['depth']}:")
        for t in r["top_self"]:
            print(f"  {t['ir_per_req']:8.1f}  {t['fn']}  ({t['file']})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"tool": "irprofile.py", "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True,
                                                                         text=True).stdout.strip(),
                       "command": sys.argv, "rows": results}, f, indent=1)
    if not a.keep:
        for n in os.listdir(outdir):
            os.unlink(os.path.join(outdir, n))
        os.rmdir(outdir)


if __name__ == "__main__":
    main()
