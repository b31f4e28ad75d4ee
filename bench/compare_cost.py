#!/usr/bin/env python3
"""bench/compare_cost.py — before/after ratios of one language's cluster-cost rows, from
alternated bench/run.py records (bench/records/README.md, "cost comparisons").

    python3 bench/compare_cost.py --lang java --label "pre-spec 2fc1096 vs spec2" \
        --before R1.json R3.json R5.json --after R2.json R4.json R6.json [--write]

Each record is a cluster-cost report of one round (bench/run.py --rounds 1) of the same
language, or a language tool's own cluster-cost record (csharp/bench.sh --json FILE: rows of
client "slotlane-<lang>"); the i-th before and the i-th after ran one after the other (alternated), so the
i-th pair's ratio is measured in one stretch of machine load. Per row (plain, cluster,
one-node x GET, SET x depth 16, 64) of the slotlane client: the median over the records of
total CPU per request (user + system), before and after, their ratio, and the spread: the
lowest and highest of the per-pair ratios. With --write the comparison is written to
bench/records/<host>-<date>-<time>-cost-compare-<lang>.json (schema
slotlane.bench.cost-compare/1). Standard library only."""
import argparse
import json
import os
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rows_of(path, lang):
    """{(row, op, depth): (total, user, sys) ns per request} of the slotlane client, and the record's load."""
    with open(path) as f:
        d = json.load(f)
    out = {}
    for r in d["rows"]:
        # a bench/run.py report's row (lang, role), or a language tool's own record (client "slotlane-<lang>")
        if r.get("lang", (r.get("client") or "").replace("slotlane-", "", 1)) != lang or r.get("role", "slotlane") != "slotlane" \
                or not r.get("ok"):
            continue
        m = r["median"]
        out[(r["row"], r["op"], r["depth"])] = (m["user_ns_per_req"] + m["sys_ns_per_req"], m["user_ns_per_req"], m["sys_ns_per_req"])
    load = None
    for run in d.get("runs", []):
        load = run.get("load_before") or run.get("load") or load
    return out, d.get("git", {}), load


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--before", nargs="+", required=True)
    ap.add_argument("--after", nargs="+", required=True)
    ap.add_argument("--loads", nargs="*", default=[], help="the load averages seen during the run (text)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    if len(args.before) != len(args.after):
        raise SystemExit("compare_cost: as many before records as after records (alternated pairs)")
    before = [rows_of(p, args.lang) for p in args.before]
    after = [rows_of(p, args.lang) for p in args.after]
    keys = sorted(set.intersection(*[set(b[0]) for b in before + after]),
                  key=lambda k: (["plain", "cluster", "one-node"].index(k[0]) if k[0] in ("plain", "cluster", "one-node") else 9, k[1], k[2]))
    rows = []
    print("%s: %s (%d alternated pairs; total CPU ns per request, medians)" % (args.lang, args.label, len(before)))
    print("| row | op | depth | before total (user, sys) | after total (user, sys) | after/before | pair ratios min..max |")
    print("|---|---|---|---|---|---|---|")
    for k in keys:
        bt = [b[0][k] for b in before]
        at = [a[0][k] for a in after]
        med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
        pair = [a[0] / b[0] for a, b in zip(at, bt)]
        ratio = med(at, 0) / med(bt, 0)
        rows.append({"row": k[0], "op": k[1], "depth": k[2],
                     "before": {"total_ns_per_req": med(bt, 0), "user_ns_per_req": med(bt, 1), "sys_ns_per_req": med(bt, 2),
                                "rounds_total_ns_per_req": [x[0] for x in bt]},
                     "after": {"total_ns_per_req": med(at, 0), "user_ns_per_req": med(at, 1), "sys_ns_per_req": med(at, 2),
                               "rounds_total_ns_per_req": [x[0] for x in at]},
                     "ratio": ratio, "pair_ratios": pair})
        print("| %s | %s | %d | %.0f (%.0f, %.0f) | %.0f (%.0f, %.0f) | %.2fx | %.2f..%.2f |" % (
            k[0], k[1], k[2], med(bt, 0), med(bt, 1), med(bt, 2), med(at, 0), med(at, 1), med(at, 2), ratio, min(pair), max(pair)))
    ratios = [r["ratio"] for r in rows]
    if ratios:
        print("rows at or below 1.05x: %d of %d; ratio median %.2fx, min %.2fx, max %.2fx" % (
            sum(1 for x in ratios if x <= 1.05), len(ratios), statistics.median(ratios), min(ratios), max(ratios)))
    if args.write:
        stamp = time.strftime("%Y-%m-%d-%H%M%S", time.gmtime())
        host = socket.gethostname().split(".")[0]
        doc = {"schema": "slotlane.bench.cost-compare/1", "benchmark": "cost-compare", "tool": "bench/compare_cost.py",
               "lang": args.lang, "label": args.label, "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "before_records": [os.path.basename(p) for p in args.before],
               "after_records": [os.path.basename(p) for p in args.after],
               "before_git": before[0][1], "after_git": after[0][1], "loads": args.loads,
               "metric": "total CPU (user + system) ns per request of the client process, median over the records",
               "rows": rows}
        name = os.path.join(HERE, "records", "%s-%s-cost-compare-%s.json" % (host, stamp, args.lang))
        tmp = name + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        while True:
            try:
                os.link(tmp, name)
                break
            except FileExistsError:
                time.sleep(1)
                stamp = time.strftime("%Y-%m-%d-%H%M%S", time.gmtime())
                name = os.path.join(HERE, "records", "%s-%s-cost-compare-%s.json" % (host, stamp, args.lang))
        os.unlink(tmp)
        print("wrote %s" % os.path.relpath(name, os.path.dirname(HERE)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
