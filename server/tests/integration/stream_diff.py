"""Streams in the differential test: a seeded random sequence of stream commands
(every command and option, errors included) and scripted consumer-group edge cases,
sent to slotlane-server and redis-server 7.0; replies must match.

Weaker rules, instead of skipping:
  * times (XPENDING's idle, XINFO CONSUMERS idle, XINFO STREAM FULL's delivery and
    seen times) are compared by shape (an integer) - the two servers run a command
    a few milliseconds apart;
  * radix-tree-nodes (XINFO STREAM) is an integer: slotlane keeps blocks in a sorted
    array, not a radix tree (radix-tree-keys, the number of blocks, is compared);
  * XADD with `*`: the ID depends on the clock -> compared by shape on one key
    (`auto`) that the other commands do not use; everything else uses explicit or
    `ms-*` IDs, so the whole state stays comparable.
Idle thresholds are 0 or hours (and TIME values far in the past), so which entries
XCLAIM/XAUTOCLAIM/XPENDING IDLE pick does not depend on the milliseconds between
the two servers.
"""
import re

from resp import Map

KEYS = ["{s}a", "{s}b", "{s}c"]
STR_KEY = "{s}str"
MISSING = "{s}none"
GROUPS = ["g1", "g2", "g3"]
CONSUMERS = ["alice", "bob", "carol", ""]
FIELDS = ["f", "g", "h", "1", "x" * 30]
VALUES = ["v", "1", "-5", "", "hello", "9223372036854775807", "y" * 20]
BAD_IDS = ["x", "1-x", "-1", "1-2-3", "18446744073709551616", "", "+", "-", "1-", "-1-1"]
HOUR = 3600 * 1000


def _pairs(m):
    """A RESP3 map or a RESP2 flat list as (key, value) pairs."""
    if isinstance(m, Map):
        return list(m)
    return [(m[i], m[i + 1]) for i in range(0, len(m), 2)]


def _remap(m, pairs):
    if isinstance(m, Map):
        return Map(pairs)
    out = []
    for k, v in pairs:
        out += [k, v]
    return out


def _time(v):
    return "T" if isinstance(v, int) else v


def norm(argv, r):
    """Replaces the time-dependent fields of a reply by their shape."""
    cmd = argv[0].upper()
    if not isinstance(r, list):
        return r
    if cmd == "XPENDING" and len(argv) > 3:
        return [[e[0], e[1], _time(e[2]), e[3]] if isinstance(e, list) and len(e) == 4 else e for e in r]
    if cmd == "XINFO" and argv[1].upper() == "CONSUMERS":
        return [_remap(c, [(k, _time(v) if k == b"idle" else v) for k, v in _pairs(c)]) for c in r]
    if cmd == "XINFO" and argv[1].upper() == "STREAM":
        out = []
        for k, v in _pairs(r):
            if k == b"radix-tree-nodes":
                v = _time(v)
            if k == b"groups" and isinstance(v, list):
                v = [_norm_group(g) for g in v]
            out.append((k, v))
        return _remap(r, out)
    return r


def _norm_group(g):
    out = []
    for k, v in _pairs(g):
        if k == b"pending":
            v = [[e[0], e[1], "T", e[3]] for e in v]
        if k == b"consumers":
            v = [_norm_consumer(c) for c in v]
        out.append((k, v))
    return _remap(g, out)


def _norm_consumer(c):
    out = []
    for k, v in _pairs(c):
        if k == b"seen-time":
            v = _time(v)
        if k == b"pending":
            v = [[e[0], "T", e[2]] for e in v]
        out.append((k, v))
    return _remap(c, out)


SPREAD_KEYS = ["sa", "sb", "sc", "sd"]  # no hash tag: one-port mode puts them on several shards


class StreamGen:
    def __init__(self, rng, keys=KEYS):
        self.rng = rng
        self.ms = 1  # the explicit IDs grow with the sequence
        self.keys = keys
        # XREADGROUP across shards is refused (CROSSSLOT): one key when spread
        self.group_keys = 1 if keys is SPREAD_KEYS else 2

    def key(self):
        r = self.rng.random()
        if r < 0.05:
            return STR_KEY
        if r < 0.08:
            return MISSING
        return self.rng.choice(self.keys)

    def new_id(self):
        rng = self.rng
        c = rng.random()
        if c < 0.05:
            return rng.choice(BAD_IDS)
        if c < 0.12:
            return f"{max(0, self.ms - rng.randrange(0, 5))}-{rng.randrange(3)}"  # often too small
        if c < 0.25:
            self.ms += rng.randrange(0, 2)
            return f"{self.ms}-*"
        if c < 0.3:
            return "0-0"
        self.ms += rng.randrange(1, 4)
        return f"{self.ms}-{rng.randrange(0, 3)}" if rng.random() < 0.7 else str(self.ms)

    def some_id(self):
        """An ID near the ones in use, for ranges, XDEL, XACK, XCLAIM."""
        rng = self.rng
        c = rng.random()
        if c < 0.04:
            return rng.choice(BAD_IDS)
        ms = rng.randrange(0, self.ms + 3)
        if c < 0.3:
            return str(ms)
        return f"{ms}-{rng.randrange(0, 3)}"

    def bound(self, lo):
        rng = self.rng
        c = rng.random()
        if c < 0.15:
            return "-" if lo else "+"
        if c < 0.25:
            return "(" + self.some_id()
        if c < 0.28:
            return rng.choice(["(-", "(+", "(0-0", "(18446744073709551615-18446744073709551615"])
        return self.some_id()

    def trim_opts(self, xtrim=False):
        rng = self.rng
        if not xtrim and rng.random() < 0.6:
            return []
        strat = rng.choice(["MAXLEN", "MINID", "maxlen"])
        opts = [strat]
        op = rng.choice(["", "=", "~", "~"])
        if op:
            opts.append(op)
        if strat.upper() == "MAXLEN":
            opts.append(rng.choice(["0", "1", "3", "5", "50", "150", "-1", "x"]))
        else:
            opts.append(self.some_id() if rng.random() < 0.8 else "+")
        if rng.random() < 0.15:
            opts += ["LIMIT", rng.choice(["0", "1", "100", "-1", "x"])]
        if rng.random() < 0.02:
            opts += ["MINID", "1"]
        return opts

    def fields(self):
        rng = self.rng
        n = rng.choice([1, 1, 1, 2, 3])
        out = []
        same = rng.random() < 0.6
        for i in range(n):
            out += [FIELDS[i] if same else rng.choice(FIELDS), rng.choice(VALUES)]
        if rng.random() < 0.02:
            out = out[:-1]
        return out

    def next(self):
        rng = self.rng
        c = rng.choices(range(17), [18, 3, 8, 2, 3, 3, 4, 5, 8, 5, 4, 4, 3, 3, 1, 1, 2])[0]
        k = self.key()
        g = rng.choice(GROUPS)
        who = rng.choice(CONSUMERS)
        if c == 0:
            opts = self.trim_opts()
            if rng.random() < 0.05:
                opts.append("NOMKSTREAM")
            return ["XADD", k] + opts + [self.new_id()] + self.fields()
        if c == 1:
            return ["XLEN", k]
        if c == 2:
            cmd = rng.choice(["XRANGE", "XREVRANGE"])
            a, b = self.bound(True), self.bound(False)
            if cmd == "XREVRANGE":
                a, b = b, a
            opts = []
            if rng.random() < 0.4:
                opts = ["COUNT", rng.choice(["0", "1", "2", "5", "-1", "x"])]
            return [cmd, k, a, b] + opts
        if c == 3:
            return ["XDEL", k] + [self.some_id() for _ in range(rng.randrange(1, 4))]
        if c == 4:
            return ["XTRIM", k] + self.trim_opts(xtrim=True)
        if c == 5:
            ks = rng.sample(self.keys + [MISSING], rng.randrange(1, 4))
            opts = []
            if rng.random() < 0.5:
                opts += ["COUNT", rng.choice(["1", "2", "10", "0", "-1"])]
            ids = [rng.choice(["$", "0", self.some_id(), "0-0"]) for _ in ks]
            if rng.random() < 0.03:
                ids = ids[:-1]
            return ["XREAD"] + opts + ["STREAMS"] + ks + ids
        if c == 6:
            sub = rng.choice(["CREATE", "CREATE", "SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"])
            if sub == "CREATE":
                argv = ["XGROUP", "CREATE", k, g, rng.choice(["$", "0", self.some_id()])]
                if rng.random() < 0.3:
                    argv.append("MKSTREAM")
                if rng.random() < 0.15:
                    argv += ["ENTRIESREAD", rng.choice(["0", "1", "5", "-1", "-2", "x"])]
                return argv
            if sub == "SETID":
                argv = ["XGROUP", "SETID", k, g, rng.choice(["$", "0", self.some_id()])]
                if rng.random() < 0.3:
                    argv += ["ENTRIESREAD", rng.choice(["0", "2", "-1", "-3"])]
                return argv
            if sub == "DESTROY":
                return ["XGROUP", "DESTROY", k, g]
            return ["XGROUP", sub, k, g, who]
        if c == 7:
            argv = ["XREADGROUP", "GROUP", g, who]
            if rng.random() < 0.5:
                argv += ["COUNT", rng.choice(["1", "2", "3", "10"])]
            if rng.random() < 0.15:
                argv.append("NOACK")
            ks = rng.sample(self.keys, rng.randrange(1, self.group_keys + 1))
            ids = [rng.choice([">", ">", ">", "0", self.some_id()]) for _ in ks]
            return argv + ["STREAMS"] + ks + ids
        if c == 8:
            return ["XACK", k, g] + [self.some_id() for _ in range(rng.randrange(1, 4))]
        if c == 9:
            if rng.random() < 0.4:
                return ["XPENDING", k, g]
            argv = ["XPENDING", k, g]
            if rng.random() < 0.3:
                argv += ["IDLE", rng.choice(["0", str(HOUR), "x"])]
            argv += [self.bound(True), self.bound(False), rng.choice(["10", "1", "0", "-1"])]
            if rng.random() < 0.4:
                argv.append(who)
            return argv
        if c == 10:
            argv = ["XCLAIM", k, g, who, rng.choice(["0", "0", str(HOUR), "-5", "x"])]
            argv += [self.some_id() for _ in range(rng.randrange(1, 4))]
            for opt in rng.sample(["IDLE", "TIME", "RETRYCOUNT", "FORCE", "JUSTID", "LASTID"], rng.randrange(0, 3)):
                if opt == "IDLE":
                    argv += ["IDLE", rng.choice(["0", str(2 * HOUR)])]
                elif opt == "TIME":
                    argv += ["TIME", rng.choice(["1000", "99999999999999"])]
                elif opt == "RETRYCOUNT":
                    argv += ["RETRYCOUNT", rng.choice(["0", "5", "x"])]
                elif opt == "LASTID":
                    argv += ["LASTID", self.some_id()]
                else:
                    argv.append(opt)
            if rng.random() < 0.03:
                argv.append("BOGUS")
            return argv
        if c == 11:
            argv = ["XAUTOCLAIM", k, g, who, rng.choice(["0", "0", str(HOUR)]),
                    rng.choice(["0", "0-0", "-", self.some_id(), "(" + self.some_id()])]
            if rng.random() < 0.6:
                argv += ["COUNT", rng.choice(["1", "2", "3", "100", "0", "x"])]
            if rng.random() < 0.3:
                argv.append("JUSTID")
            return argv
        if c == 12:
            sub = rng.choice(["STREAM", "STREAM", "GROUPS", "CONSUMERS"])
            if sub == "STREAM":
                opts = rng.choice([[], ["FULL"], ["FULL", "COUNT", rng.choice(["0", "2", "-1"])], ["full", "x"]])
                return ["XINFO", "STREAM", k] + opts
            if sub == "GROUPS":
                return ["XINFO", "GROUPS", k]
            return ["XINFO", "CONSUMERS", k, g]
        if c == 13:
            argv = ["XSETID", k, rng.choice([self.some_id(), f"{self.ms + 5}-0", "0-0"])]
            if rng.random() < 0.4:
                argv += ["ENTRIESADDED", rng.choice(["0", "5", "1000", "-1"])]
            if rng.random() < 0.3:
                argv += ["MAXDELETEDID", self.some_id()]
            return argv
        if c == 14:
            return rng.choice([["XGROUP", "HELP"], ["XINFO", "HELP"], ["XGROUP", "BOGUS"], ["XINFO", "BOGUS", k],
                               ["XGROUP", "CREATE", k], ["XINFO", "STREAM"], ["XGROUP", "CREATE", k, g, "$", "BOGUS"],
                               ["XGROUP", "SETID", k, g, "0", "MKSTREAM"], ["XREAD", "STREAMS"],
                               ["XREADGROUP", "STREAMS", k, ">"], ["XREAD", "GROUP", "g", "c", "STREAMS", k, "0"],
                               ["XREAD", "NOACK", "STREAMS", k, "0"], ["XREADGROUP", "GROUP", g, who, "STREAMS", k, "$"],
                               ["XREAD", "STREAMS", k, ">"], ["XPENDING", k, g, "-", "+"],
                               ["XADD", k, "MAXLEN", "1"], ["XTRIM", k], ["XTRIM", k, "LIMIT", "5"],
                               ["XADD", k, "1-1"], ["XREAD", "BOGUS", "STREAMS", k, "0"]])
        if c == 15:
            return ["DEL", k]
        # a bulk of entries into one key, so that blocks fill and `~` has whole blocks to trim
        n = rng.randrange(50, 260)
        return ("bulk", k, n)


def run(pair, rng, ops, spread=False):
    """Runs ops generated commands on both servers; returns a list of failures.
    spread: keys without a hash tag (one-port mode: XREAD across shards)."""
    gen = StreamGen(rng, SPREAD_KEYS if spread else KEYS)
    failures = []
    c = pair.ours[0]
    for i in range(ops):
        argv = gen.next()
        if argv[0] == "bulk":
            _, k, n = argv
            batch = []
            for _ in range(n):
                gen.ms += 1
                batch.append(["XADD", k, f"{gen.ms}-0", "f", str(gen.ms)])
            for conn in (c, pair.ref):
                for a in batch:
                    conn.send(*a)
            got = [[conn.read() for _ in batch] for conn in (c, pair.ref)]
            if got[0] != got[1]:
                failures.append(f"op {i} bulk into {k}: ours={got[0][:3]!r}... ref={got[1][:3]!r}...")
            continue
        ra, rb = c.call(*argv), pair.ref.call(*argv)
        na, nb = norm(argv, ra), norm(argv, rb)
        if na != nb or type(ra) != type(rb):
            failures.append(f"op {i} {argv!r}:\n ours={ra!r}\n ref ={rb!r}")
            if len(failures) >= 15:
                break
    # the final state of every key, through the reads
    for k in gen.keys:
        for argv in (["XRANGE", k, "-", "+"], ["XINFO", "STREAM", k, "FULL"], ["XINFO", "GROUPS", k]):
            ra, rb = c.call(*argv), pair.ref.call(*argv)
            if norm(argv, ra) != norm(argv, rb):
                failures.append(f"final {argv!r}:\n ours={ra!r}\n ref ={rb!r}")
    return failures


ID_RE = re.compile(rb"^\d+-\d+$")


def scripted(pair):
    """Consumer-group edge cases, in order; returns a list of failures."""
    c = pair.ours[0]
    steps = [
        # pending entries of a deleted consumer go with it
        ["XADD", "{s}q", "1-1", "a", "1"], ["XADD", "{s}q", "2-1", "b", "2"], ["XADD", "{s}q", "3-1", "c", "3"],
        ["XGROUP", "CREATE", "{s}q", "grp", "0"],
        ["XREADGROUP", "GROUP", "grp", "w1", "COUNT", "2", "STREAMS", "{s}q", ">"],
        ["XREADGROUP", "GROUP", "grp", "w2", "STREAMS", "{s}q", ">"],
        ["XPENDING", "{s}q", "grp"], ["XGROUP", "DELCONSUMER", "{s}q", "grp", "w1"], ["XPENDING", "{s}q", "grp"],
        ["XPENDING", "{s}q", "grp", "-", "+", "10"], ["XINFO", "GROUPS", "{s}q"],
        # XAUTOCLAIM: cursors, and entries deleted from the stream while pending
        ["XREADGROUP", "GROUP", "grp", "w3", "STREAMS", "{s}q", "0"],
        ["XGROUP", "SETID", "{s}q", "grp", "0"],
        ["XREADGROUP", "GROUP", "grp", "w3", "STREAMS", "{s}q", ">"],
        ["XDEL", "{s}q", "2-1"],
        ["XAUTOCLAIM", "{s}q", "grp", "w4", "0", "0", "COUNT", "1"],
        ["XAUTOCLAIM", "{s}q", "grp", "w4", "0", "2-0", "COUNT", "1"],
        ["XAUTOCLAIM", "{s}q", "grp", "w4", "0", "0", "COUNT", "5", "JUSTID"],
        ["XPENDING", "{s}q", "grp", "-", "+", "10", "w4"],
        ["XREADGROUP", "GROUP", "grp", "w4", "STREAMS", "{s}q", "0"],
        # XCLAIM: JUSTID keeps the counter, RETRYCOUNT sets it, FORCE creates the entry
        ["XADD", "{s}q", "4-1", "d", "4"], ["XADD", "{s}q", "5-1", "e", "5"],
        ["XCLAIM", "{s}q", "grp", "w5", "0", "3-1", "JUSTID"],
        ["XCLAIM", "{s}q", "grp", "w5", "0", "3-1", "RETRYCOUNT", "7"],
        ["XCLAIM", "{s}q", "grp", "w5", "0", "4-1"],
        ["XCLAIM", "{s}q", "grp", "w5", "0", "4-1", "FORCE"],
        ["XCLAIM", "{s}q", "grp", "w5", "0", "5-1", "FORCE", "JUSTID", "TIME", "1000"],
        ["XPENDING", "{s}q", "grp", "IDLE", str(HOUR), "-", "+", "10"],
        ["XCLAIM", "{s}q", "grp", "w6", str(HOUR), "5-1", "3-1"],
        ["XCLAIM", "{s}q", "grp", "w6", "0", "2-1", "FORCE"],
        ["XCLAIM", "{s}q", "grp", "w6", "0", "9-9", "LASTID", "9-0", "JUSTID"],
        ["XINFO", "GROUPS", "{s}q"], ["XINFO", "CONSUMERS", "{s}q", "grp"],
        ["XINFO", "STREAM", "{s}q", "FULL"], ["XINFO", "STREAM", "{s}q", "FULL", "COUNT", "1"],
        # trimming with groups: lag and entries-read as 7.0 computes them
        ["XGROUP", "CREATE", "{s}q", "late", "0"], ["XGROUP", "CREATE", "{s}q", "mid", "3-1", "ENTRIESREAD", "2"],
        ["XINFO", "GROUPS", "{s}q"], ["XTRIM", "{s}q", "MAXLEN", "1"], ["XINFO", "GROUPS", "{s}q"],
        ["XREADGROUP", "GROUP", "late", "x", "STREAMS", "{s}q", ">"], ["XINFO", "GROUPS", "{s}q"],
        ["XADD", "{s}q", "6-1", "f", "6"], ["XINFO", "GROUPS", "{s}q"], ["XINFO", "STREAM", "{s}q"],
        ["XSETID", "{s}q", "10-0", "ENTRIESADDED", "20", "MAXDELETEDID", "7-0"], ["XINFO", "GROUPS", "{s}q"],
        ["XSETID", "{s}q", "1-0"], ["XSETID", "{s}q", "10-0", "ENTRIESADDED", "0"],
        ["XINFO", "STREAM", "{s}q"],
        # NOACK, history of a consumer, MKSTREAM, empty streams
        ["XREADGROUP", "GROUP", "mid", "n", "NOACK", "STREAMS", "{s}q", ">"], ["XINFO", "GROUPS", "{s}q"],
        ["XGROUP", "CREATE", "{s}e", "g", "$", "MKSTREAM"], ["XINFO", "STREAM", "{s}e"], ["XLEN", "{s}e"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "{s}e", ">"], ["XREAD", "STREAMS", "{s}e", "0"],
        ["XADD", "{s}e", "NOMKSTREAM", "5-5", "a", "b"], ["XADD", "{s}nomk", "NOMKSTREAM", "5-5", "a", "b"],
        ["EXISTS", "{s}nomk"], ["XDEL", "{s}e", "5-5"], ["XINFO", "STREAM", "{s}e"],
        ["XADD", "{s}e", "5-5", "a", "b"], ["XADD", "{s}e", "5-*", "a", "b"],
        ["XADD", "{s}e", "18446744073709551615-18446744073709551615", "a", "b"], ["XADD", "{s}e", "*", "a", "b"],
        ["XADD", "{s}e", "18446744073709551615-*", "a", "b"],
        ["TYPE", "{s}e"],
        # XSETID below a deleted last entry (Redis checks the last live one), then an XADD between
        ["XADD", "{s}t", "1-1", "a", "b"], ["XADD", "{s}t", "5-1", "a", "b"], ["XDEL", "{s}t", "5-1"],
        ["XSETID", "{s}t", "3-0"], ["XADD", "{s}t", "4-0", "a", "b"], ["XRANGE", "{s}t", "-", "+"],
        ["XREVRANGE", "{s}t", "+", "-"], ["XINFO", "STREAM", "{s}t"], ["XADD", "{s}t", "4-*", "c", "d"],
    ]
    failures = []
    for argv in steps:
        ra, rb = c.call(*argv), pair.ref.call(*argv)
        if norm(argv, ra) != norm(argv, rb) or type(ra) != type(rb):
            failures.append(f"{argv!r}:\n ours={ra!r}\n ref ={rb!r}")
    # `*` IDs: by shape, increasing, and the next smaller explicit ID refused on both
    last = b"0-0"
    for _ in range(5):
        ra, rb = c.call("XADD", "{s}auto", "*", "f", "v"), pair.ref.call("XADD", "{s}auto", "*", "f", "v")
        for r in (ra, rb):
            if not (isinstance(r, bytes) and ID_RE.match(r)):
                failures.append(f"XADD * gave {r!r}")
        if isinstance(ra, bytes) and tuple(map(int, ra.split(b"-"))) <= tuple(map(int, last.split(b"-"))):
            failures.append(f"XADD * not increasing: {last!r} then {ra!r}")
        last = ra if isinstance(ra, bytes) else last
    ra, rb = c.call("XADD", "{s}auto", "1-1", "f", "v"), pair.ref.call("XADD", "{s}auto", "1-1", "f", "v")
    if ra != rb:
        failures.append(f"XADD smaller than top: ours={ra!r} ref={rb!r}")
    return failures
