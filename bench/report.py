#!/usr/bin/env python3
"""bench/report.py — tables and SVG charts rendered from benchmark records (never from anything else).

    python3 bench/report.py cluster-cost RECORD [--svg OUT.svg] [--markdown]
    python3 bench/report.py server RECORD [--svg OUT.svg]

cluster-cost: a combined record of bench/run.py (schema slotlane.bench.cluster-cost-report/1):
prints its table (language x client x op x depth: plain, cluster and one-node total CPU ns
per request — user + system, the headline — with user and system beside it and the x plain
ratios, bytes per request, slotlane over the ecosystem's comparison client on total CPU)
and with --svg writes the chart: one panel per op and depth, grouped bars of total CPU ns
per request (log scale) per language, slotlane's three rows and the comparison client's.

server: a record of bench/server/run (schema slotlane.bench.server/1): with --svg writes its
chart: server CPU ns per request and requests per second, per op, for slotlane-server
per-shard, slotlane-server one-port and Redis (redis-server at 1 shard, Redis Cluster
above), at each shard count and load generator. bench/server/run calls this at the end.

A row that failed is drawn as a red cross at the baseline and printed as FAILED with its
error: it never becomes a bar or a figure. Python 3 standard library only; the SVG is
plain SVG 1.1 text (any browser, GitHub's README view).
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

LANG_TITLES = {"c": "C", "python": "Python", "rust": "Rust", "go": "Go", "node": "Node", "java": "Java",
               "csharp": "C#"}
ROWS = ("plain", "cluster", "one-node")
CELLS = (("GET", 16), ("GET", 64), ("SET", 16), ("SET", 64))


def _f0(v):
    return "—" if v is None else "%.0f" % v


def _f1(v):
    return "—" if v is None else "%.1f" % v


def _x(v):
    return "" if v is None else " (%.2f×)" % v


def _short(err, n=70):
    err = " ".join(str(err or "failed").split()).replace("|", "/")  # (a table cell)
    return err if len(err) <= n else err[:n - 1] + "…"


def _index(rec):
    """{(lang, client label, op, depth, row): row}, the client labels per language in order, and
    notes on clients measured through several APIs. A client is one line of the table when each
    of its cells has one API (e.g. ioredis: pipeline() for plain, auto-pipelining for cluster);
    it gets a line per API only when two APIs measured the same cell."""
    idx, labels, notes = {}, {}, []
    per_cell, apis = {}, {}
    for r in rec["rows"]:
        if r.get("api"):  # (a row missing from a runner's record has no api)
            per_cell.setdefault((r["lang"], r["client"], r["row"], r["op"], r["depth"]), set()).add(r["api"])
            apis.setdefault((r["lang"], r["client"]), {}).setdefault(r["row"], set()).add(r["api"])
    split = {(k[0], k[1]) for k, v in per_cell.items() if len(v) > 1}
    for (lang, client), by_row in sorted(apis.items()):
        if (lang, client) not in split and len(set().union(*by_row.values())) > 1:
            notes.append("%s %s: %s" % (LANG_TITLES.get(lang, lang), client, "; ".join(
                "%s %s" % (row, ", ".join(sorted(by_row[row]))) for row in ROWS if row in by_row)))
    for r in rec["rows"]:
        label = r["client"]
        if (r["lang"], r["client"]) in split and r.get("api"):
            label = "%s (%s)" % (r["client"], r["api"])
        idx[(r["lang"], label, r["op"], r["depth"], r["row"])] = r
        order = {"slotlane": 0, "comparison": 1}.get(r.get("role"), 2)
        labels.setdefault(r["lang"], {})
        labels[r["lang"]].setdefault(label, order)
    return idx, {k: sorted(v, key=lambda c: (v[c], c)) for k, v in labels.items()}, notes


def _bytes(r):
    """Bytes per request: the client's own count, else the servers' input counter (marked *)."""
    b = r["median"].get("bytes_per_req")
    if b is not None:
        return _f1(b)
    b = r["median"].get("server_input_bytes_per_req")
    return "—" if b is None else _f1(b) + "*"


def cluster_table(rec):
    """The markdown table of a combined cluster-cost record (the layout of the project's reports)."""
    idx, labels, api_notes = _index(rec)
    m = rec.get("machine") or {}
    cfg = rec.get("config") or {}
    out = ["Cluster cost per client: total CPU ns per request of the client process, user + system "
           "(user / system beside it; medians of %s round(s) of %s s), × its own plain row on total; bytes "
           "the client wrote per request; slotlane ÷ the ecosystem's usual client in the same cell, on total "
           "CPU." % (cfg.get("rounds"), cfg.get("seconds")),
           "Machine: %s, %s, %s cores; server: %s. Commit %s%s. Command: `%s`." % (
               m.get("hostname"), m.get("cpu_model"), m.get("cores"),
               (rec.get("server") or {}).get("description", "?"), (rec.get("git") or {}).get("commit", "?")[:12],
               " (dirty)" if (rec.get("git") or {}).get("dirty") else "", " ".join(rec.get("command") or [])),
           "",
           "| language | client | op, depth | plain total (user / sys) | cluster total (user / sys) × plain "
           "| one-node total (user / sys) × plain "
           "| bytes/req plain · cluster · one-node | ÷ comparison plain · cluster · one-node |",
           "|---|---|---|---:|---:|---:|---:|---:|"]
    order = [x for x in (cfg.get("langs") or []) if x in labels] + sorted(set(labels) - set(cfg.get("langs") or []))
    for lang in order:
        for label in labels[lang]:
            for op, depth in CELLS:
                cells = [idx.get((lang, label, op, depth, row)) for row in ROWS]
                if not any(cells):
                    continue
                figs, bytes_, comp = [], [], []
                for r in cells:
                    if r is None:
                        figs.append("—")
                        bytes_.append("—")
                        comp.append("—")
                    elif not r["ok"]:
                        figs.append("FAILED: %s" % _short(r.get("error")))
                        bytes_.append("—")
                        comp.append("—")
                    else:
                        m = r["median"]
                        figs.append("%s (%s / %s)%s" % (_f0(m["cpu_ns_per_req"]), _f0(m["user_ns_per_req"]),
                                                         _f0(m["sys_ns_per_req"]),
                                                         "" if r["row"] == "plain" else _x(r.get("x_plain"))))
                        bytes_.append(_bytes(r))
                        comp.append("%.2f×" % r["x_comparison"] if r.get("x_comparison") is not None else "—")
                role = next((r.get("role") for r in cells if r), None)
                comp_s = " · ".join(comp) if role == "slotlane" else "—"
                out.append("| %s | %s | %s %d | %s | %s | %s | %s | %s |" % (
                    LANG_TITLES.get(lang, lang), label, op, depth, figs[0], figs[1], figs[2],
                    " · ".join(bytes_), comp_s))
    out.append("")
    out.append("Bytes marked * are the servers' input byte counters (the client has no count of its own).")
    if api_notes:
        out.append("")
        out.append("Clients with an API per row: %s." % "; ".join(api_notes))
    notes = (rec.get("config") or {}).get("comparison_notes") or {}
    for lang, note in sorted(notes.items()):
        out.append("")
        out.append("%s: %s." % (LANG_TITLES.get(lang, lang), note))
    for run in rec.get("runs") or []:
        if run.get("skipped"):
            out.append("")
            out.append("%s: not run (%s)." % (LANG_TITLES.get(run["lang"], run["lang"]), run["skipped"]))
        elif run.get("error"):
            out.append("")
            out.append("%s runner FAILED: %s" % (LANG_TITLES.get(run["lang"], run["lang"]), _short(run["error"], 300)))
    loads = [x for run in rec.get("runs") or [] for x in (run.get("load1_start"), run.get("load1_end"))
             if x is not None]
    if loads:
        out.append("")
        out.append("Load average (1 min) at the start and end of the runners: %.2f–%.2f." % (min(loads), max(loads)))
    return "\n".join(out)


# ------------------------------------------------------------------ SVG
class Svg:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=11, anchor="start", weight="normal", fill="#222", rotate=None):
        tr = ' transform="rotate(%d %.1f %.1f)"' % (rotate, x, y) if rotate else ""
        self.add('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" font-weight="%s" fill="%s"%s>%s</text>' % (
            x, y, size, anchor, weight, fill, tr, escape(str(s))))

    def rect(self, x, y, w, h, fill, title=None):
        t = "<title>%s</title>" % escape(title) if title else ""
        self.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">%s</rect>' % (
            x, y, max(w, 0.5), max(h, 0), fill, t))

    def line(self, x1, y1, x2, y2, stroke="#ccc", width=1):
        self.add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"/>' % (
            x1, y1, x2, y2, stroke, width))

    def render(self):
        return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
                'font-family="Helvetica, Arial, sans-serif">\n<rect width="100%%" height="100%%" fill="white"/>\n%s\n'
                '</svg>\n' % (self.w, self.h, self.w, self.h, "\n".join(self.parts)))


def _nice_max(v):
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


def bar_panel(svg, x, y, w, h, title, groups, series, log=False, unit=""):
    """groups: [(label, [value per series])]; a value is a number, None (not measured) or
    ("FAILED", error) (a red cross). series: [(name, colour)]."""
    svg.text(x + w / 2, y + 14, title, size=13, anchor="middle", weight="bold")
    px, py, pw, ph = x + 56, y + 26, w - 66, h - 26 - 42
    vals = [v for _, vs in groups for v in vs if isinstance(v, (int, float)) and v > 0]
    if log:
        lo = 10 ** math.floor(math.log10(min(vals) * 0.5)) if vals else 1  # (the smallest bar stays visible)
        hi = 10 ** math.ceil(math.log10(max(vals))) if vals else 10
        if hi <= lo:
            hi = lo * 10

        def ypos(v):
            return py + ph - ph * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        ticks, t = [], lo
        while t <= hi * 1.0001:
            ticks.append(t)
            t *= 10
    else:
        lo, hi = 0.0, _nice_max(max(vals) if vals else 1)

        def ypos(v):
            return py + ph - ph * (v - lo) / (hi - lo)
        ticks = [hi * i / 5 for i in range(6)]
    for t in ticks:
        ty = ypos(t)
        svg.line(px, ty, px + pw, ty, stroke="#e4e4e4")
        lab = ("%g" % t) if t < 1e4 else ("%gK" % (t / 1e3) if t < 1e6 else "%gM" % (t / 1e6))
        svg.text(px - 4, ty + 4, lab, size=10, anchor="end", fill="#555")
    svg.line(px, py + ph, px + pw, py + ph, stroke="#888")
    svg.line(px, py, px, py + ph, stroke="#888")
    if unit:
        svg.text(x + 12, py + ph / 2, unit, size=10, anchor="middle", fill="#555", rotate=-90)
    n = max(len(groups), 1)
    gw = pw / n
    ns = max(len(series), 1)
    bw = gw * 0.8 / ns
    for gi, (label, vs) in enumerate(groups):
        gx = px + gi * gw + gw * 0.1
        for si, v in enumerate(vs):
            bx = gx + si * bw
            name = series[si][0]
            if isinstance(v, tuple):  # failed: a cross, never a bar
                cx, cy = bx + bw / 2, py + ph - 6
                svg.add('<g class="failed"><title>%s, %s: FAILED %s</title>' % (
                    escape(label), escape(name), escape(str(v[1]))))
                svg.line(cx - 4, cy - 4, cx + 4, cy + 4, stroke="#d00", width=2)
                svg.line(cx - 4, cy + 4, cx + 4, cy - 4, stroke="#d00", width=2)
                svg.add('</g>')
            elif isinstance(v, (int, float)) and v > 0:
                top = ypos(v)
                svg.rect(bx, top, bw * 0.92, py + ph - top, series[si][1],
                         title="%s, %s: %.0f %s" % (label, name, v, unit))
        svg.text(px + gi * gw + gw / 2, py + ph + 14, label, size=11, anchor="middle")


def legend(svg, x, y, series, per_row=6):
    for i, (name, colour) in enumerate(series):
        lx = x + (i % per_row) * 190
        ly = y + (i // per_row) * 16
        svg.rect(lx, ly - 9, 11, 11, colour)
        svg.text(lx + 15, ly, name, size=11)


SL_COLOURS = {"plain": "#1f4e9c", "cluster": "#4f86d9", "one-node": "#a9c6f0"}
CMP_COLOURS = {"plain": "#b85c00", "cluster": "#f08c2e", "one-node": "#f8c690"}


def cluster_svg(rec):
    """The chart of a combined cluster-cost record: a panel per op and depth, bars per language."""
    rows = rec["rows"]
    langs = [x for x in (rec.get("config") or {}).get("langs") or [] if any(r["lang"] == x for r in rows)]
    series = [("slotlane %s" % r, SL_COLOURS[r]) for r in ROWS] + \
             [("comparison client %s" % r, CMP_COLOURS[r]) for r in ROWS]

    def value(lang, role, op, depth, row):
        cands = [r for r in rows if r["lang"] == lang and r.get("role") == role and r["op"] == op
                 and r["depth"] == depth and r["row"] == row]
        if not cands:
            return None
        good = [r["median"]["cpu_ns_per_req"] for r in cands
                if r["ok"] and r["median"]["cpu_ns_per_req"] is not None]
        if good:
            return min(good)  # a client with several APIs: its cheapest (0 draws no bar: below the log axis)
        return ("FAILED", cands[0].get("error"))
    pw, ph = 620, 330
    svg = Svg(2 * pw + 30, 2 * ph + 150)
    m = rec.get("machine") or {}
    svg.text(20, 24, "Cluster cost: client total CPU ns per request, user + system (log scale), medians of %s round(s)" % (
        (rec.get("config") or {}).get("rounds")), size=16, weight="bold")
    svg.text(20, 42, "%s · %s · %s · commit %s · %s" % (
        m.get("hostname"), m.get("cpu_model"), rec.get("finished_at"), (rec.get("git") or {}).get("commit", "?")[:12],
        " ".join(rec.get("command") or [])), size=11, fill="#555")
    cmp_names = ", ".join("%s: %s" % (LANG_TITLES.get(k, k), v or "none")
                          for k, v in ((rec.get("config") or {}).get("comparison") or {}).items())
    svg.text(20, 58, "comparison clients — %s; red × = row FAILED its reply checks" % cmp_names, size=11,
             fill="#555")
    legend(svg, 20, 78, series)
    for i, (op, depth) in enumerate(CELLS):
        groups = [(LANG_TITLES.get(lang, lang),
                   [value(lang, "slotlane", op, depth, r) for r in ROWS] +
                   [value(lang, "comparison", op, depth, r) for r in ROWS]) for lang in langs]
        bar_panel(svg, 15 + (i % 2) * (pw + 10), 100 + (i // 2) * ph, pw, ph, "%s, depth %d" % (op, depth),
                  groups, series, log=True, unit="total CPU ns / request")
    return svg.render()


def _server_kind(r):
    if str(r.get("server_id", "")).startswith("slotlane-one-port"):
        return "slotlane-server one-port"
    if str(r.get("server_id", "")).startswith("slotlane"):
        return "slotlane-server per-shard"
    return "Redis (redis-server; Redis Cluster > 1 shard)"


def server_svg(rec):
    """The chart of a bench/server/run record: server CPU ns/req and req/s per op, shards and load generator."""
    kinds = ["slotlane-server per-shard", "slotlane-server one-port", "Redis (redis-server; Redis Cluster > 1 shard)"]
    colours = ["#1f4e9c", "#7fb0ea", "#c0392b"]
    rows = rec.get("rows") or []
    shards = sorted({r.get("shards") for r in rows if r.get("shards") is not None})
    loaders = []
    for r in rows:
        if r.get("loader") not in loaders:
            loaders.append(r.get("loader"))
    ops = [o for o in ("SET", "GET") if any(r.get("op") == o for r in rows)]

    def value(kind, n, loader, op, key):
        for r in rows:
            if _server_kind(r) == kind and r.get("shards") == n and r.get("loader") == loader and r.get("op") == op:
                if r.get("skipped"):
                    return None
                if not r.get("ok"):
                    return ("FAILED", r.get("error"))
                return (r.get("median") or {}).get(key)
        return None
    pw, ph = 620, 330
    svg = Svg(2 * pw + 30, 2 * ph + 130)
    m = rec.get("machine") or {}
    cfg = rec.get("config") or {}
    svg.text(20, 24, "Server comparison: medians of %s round(s), %s connections, pipeline %s, %s-byte values" % (
        cfg.get("rounds"), cfg.get("connections"), cfg.get("pipeline"), cfg.get("data_size")), size=16, weight="bold")
    svg.text(20, 42, "%s · %s · servers on CPU %s, load on CPU %s · %s · commit %s" % (
        m.get("hostname"), m.get("cpu_model"), m.get("server_cpus"), m.get("load_cpus"), rec.get("finished_at"),
        (rec.get("git") or {}).get("commit", "?")[:12]), size=11, fill="#555")
    svg.text(20, 58, "x axis: shards · load generator (rb = redis-benchmark, sl = slotlane-load); red × = row failed",
             size=11, fill="#555")
    series = list(zip(kinds, colours))
    legend(svg, 20, 78, series, per_row=3)
    short = {"redis-benchmark": "rb", "slotlane-load": "sl", "memtier": "mt"}
    panels = [(op, "server_cpu_ns_per_req", "server CPU ns / request") for op in ops] + \
             [(op, "req_per_s", "requests / s") for op in ops]
    for i, (op, key, unit) in enumerate(panels):
        groups = [("%s·%s" % (n, short.get(ld, ld)), [value(k, n, ld, op, key) for k in kinds])
                  for n in shards for ld in loaders]
        bar_panel(svg, 15 + (i % 2) * (pw + 10), 96 + (i // 2) * ph, pw, ph, "%s: %s" % (op, unit), groups, series,
                  unit=unit)
    return svg.render()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench/report.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["cluster-cost", "server"])
    ap.add_argument("record")
    ap.add_argument("--svg", help="write the chart here")
    a = ap.parse_args(argv)
    try:
        with open(a.record) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        print("report.py: cannot read %s: %s" % (a.record, e), file=sys.stderr)
        return 2
    want = {"cluster-cost": "slotlane.bench.cluster-cost-report/", "server": "slotlane.bench.server/"}[a.kind]
    if not str(rec.get("schema", "")).startswith(want):
        print("report.py: %s has schema %r, not %s*" % (a.record, rec.get("schema"), want), file=sys.stderr)
        return 2
    if a.kind == "cluster-cost":
        print(cluster_table(rec))
        svg = cluster_svg(rec)
    else:
        svg = server_svg(rec)
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg)
        print("chart: %s" % a.svg, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
