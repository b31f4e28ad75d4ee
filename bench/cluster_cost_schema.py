#!/usr/bin/env python3
"""bench/cluster_cost_schema.py — the one check of a cluster-cost record (schema
"slotlane.bench.cluster-cost/1", bench/records/README.md), whichever language's runner
wrote it. bench/run.py runs it on every runner's record (a record that fails it fails its
language) and bench/test_run.py on the C tool's and on broken ones.

    python3 bench/cluster_cost_schema.py RECORD.json...   # exit 1 and the problems, or "ok"

What it checks (the fields every runner writes; a runner may add its own, e.g. x_redis_py):
  - top level: schema, benchmark "cluster-cost", tool, ok, started_at, finished_at, machine,
    versions, git, command, config (rounds), rows;
  - every row: client, row (plain, cluster, one-node), op (GET, SET), depth, ok, rounds; a
    row that passed has one round per config.rounds and a median;
  - every round of a passed row: requests > 0, wall_s > 0, user_ns, sys_ns, load1 (the
    machine's 1-minute load average: it is shared), and per request cpu_ns_per_req (user +
    system: the headline), user_ns_per_req, sys_ns_per_req, req_per_s — equal to the totals
    divided by requests — and bytes_per_req (null for a client whose bytes are not counted);
  - the median of a passed row: cpu_ns_per_req, user_ns_per_req, sys_ns_per_req, req_per_s,
    each the median of that figure over the rounds, and bytes_per_req (or null).
"""
import json
import statistics
import sys

SCHEMA = "slotlane.bench.cluster-cost/1"
TOP = ("schema", "benchmark", "tool", "ok", "started_at", "finished_at", "machine", "versions", "git",
       "command", "config", "rows")
ROW = ("client", "row", "op", "depth", "ok", "rounds")
ROUND_TOTALS = ("requests", "wall_s", "user_ns", "sys_ns", "load1")
PER_REQ = ("cpu_ns_per_req", "user_ns_per_req", "sys_ns_per_req", "req_per_s")
NULLABLE = ("bytes_per_req",)  # null for a client whose written bytes cannot be counted
ROWS = ("plain", "cluster", "one-node")
OPS = ("GET", "SET")


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _close(a, b):
    # Records print figures rounded (wall_s to the millisecond, per-request figures to 3 digits).
    return abs(a - b) <= 1e-3 * max(abs(a), abs(b)) + 0.01


def validate(rec):
    """The problems of a cluster-cost record, as messages ([] when it is well-formed)."""
    if not isinstance(rec, dict):
        return ["the record is not a JSON object"]
    out = ["missing top-level field %r" % k for k in TOP if k not in rec]
    if out:
        return out
    if rec["schema"] != SCHEMA:
        out.append("schema is %r, not %r" % (rec["schema"], SCHEMA))
    if rec["benchmark"] != "cluster-cost":
        out.append("benchmark is %r, not 'cluster-cost'" % (rec["benchmark"],))
    rounds = rec["config"].get("rounds") if isinstance(rec["config"], dict) else None
    if not isinstance(rounds, int) or rounds < 1:
        out.append("config.rounds is %r, not a positive integer" % (rounds,))
    if not isinstance(rec["rows"], list) or not rec["rows"]:
        return out + ["rows is empty or not a list"]
    for i, row in enumerate(rec["rows"]):
        out += _row(i, row, rounds)
    if rec["ok"] is True and any(isinstance(r, dict) and r.get("ok") is not True for r in rec["rows"]):
        out.append("ok is true but a row failed")
    return out


def _row(i, row, rounds):
    if not isinstance(row, dict):
        return ["rows[%d] is not an object" % i]
    name = "rows[%d] (%s %s %s %s)" % (i, row.get("client"), row.get("row"), row.get("op"), row.get("depth"))
    out = ["%s: missing %r" % (name, k) for k in ROW if k not in row]
    if out:
        return out
    if row["row"] not in ROWS:
        out.append("%s: row %r is not one of %s" % (name, row["row"], ", ".join(ROWS)))
    if row["op"] not in OPS:
        out.append("%s: op %r is not GET or SET" % (name, row["op"]))
    if not isinstance(row["depth"], int) or row["depth"] < 1:
        out.append("%s: depth %r" % (name, row["depth"]))
    if row["ok"] is not True:
        if not row.get("error"):
            out.append("%s: failed without an error message" % name)
        return out
    rs = row["rounds"]
    if not isinstance(rs, list) or (isinstance(rounds, int) and len(rs) != rounds):
        return out + ["%s: %s rounds, config.rounds is %s" % (name, len(rs) if isinstance(rs, list) else rs, rounds)]
    for k, r in enumerate(rs):
        out += _round("%s round %d" % (name, k), r)
    med = row.get("median")
    if not isinstance(med, dict):
        return out + ["%s: passed without a median" % name]
    if out:
        return out
    out += ["%s: median.%s is %r" % (name, f, med.get(f)) for f in NULLABLE
            if f not in med or not (med[f] is None or _num(med[f]))]
    for f in PER_REQ:
        if not _num(med.get(f)):
            out.append("%s: median.%s is %r" % (name, f, med.get(f)))
            continue
        want = statistics.median(r[f] for r in rs)
        if not _close(med[f], want):
            out.append("%s: median.%s is %r, the median of its rounds is %r" % (name, f, med[f], want))
    return out


def _round(name, r):
    if not isinstance(r, dict):
        return ["%s is not an object" % name]
    out = ["%s: %s is %r" % (name, f, r.get(f)) for f in ROUND_TOTALS + PER_REQ if not _num(r.get(f))]
    out += ["%s: %s is %r" % (name, f, r.get(f)) for f in NULLABLE if f not in r or not (r[f] is None or _num(r[f]))]
    if out:
        return out
    q = r["requests"]
    if q <= 0 or r["wall_s"] <= 0:
        return ["%s: requests %r, wall_s %r" % (name, q, r["wall_s"])]
    want = {"cpu_ns_per_req": (r["user_ns"] + r["sys_ns"]) / q, "user_ns_per_req": r["user_ns"] / q,
            "sys_ns_per_req": r["sys_ns"] / q, "req_per_s": q / r["wall_s"]}
    for f, v in want.items():
        if not _close(r[f], v):
            out.append("%s: %s is %r, the totals give %r" % (name, f, r[f], v))
    return out


def main(argv):
    bad = 0
    for path in argv:
        try:
            with open(path) as f:
                problems = validate(json.load(f))
        except (OSError, ValueError) as e:
            problems = [str(e)]
        for p in problems:
            print("%s: %s" % (path, p))
        bad += bool(problems)
    if not argv:
        print("usage: bench/cluster_cost_schema.py RECORD.json...", file=sys.stderr)
        return 2
    if not bad:
        print("ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
