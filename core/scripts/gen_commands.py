#!/usr/bin/env python3
"""Generates the command table of core/src/commands.c and its test vectors.

    python3 core/scripts/gen_commands.py

Starts a throwaway redis-server (the reference: Debian's 7.0) on a free loopback port in
20900-20999, reads COMMAND INFO for every command and subcommand, and writes:

  core/src/commands_table.inc         sorted sl__cmdinfo tables with the key specs exactly
                                      as Redis reports them (begin_search index/keyword,
                                      find_keys range/keynum) and the flags the client uses
  core/tests/data/getkeys_vectors.inc argument lists and the keys COMMAND GETKEYS of the
                                      same server returns for them, for test_commands.c

Both outputs are checked in; rerun the script when the reference server changes. The
argument lists are generated deterministically (fixed seed) from every command's arity,
plus hand-written cases for the movable-key commands. Needs redis-server on PATH."""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from redis_tmp import ReplyError, Server, c_string  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "..", "src", "commands_table.inc")
VECTORS = os.path.join(HERE, "..", "tests", "data", "getkeys_vectors.inc")

MAX_ARGS = 16  # the vectors' fixed argv array size

# Keyless commands a cluster client sends to every primary by default (SL_ROUTE_KEY):
# one node's answer would be wrong or incomplete (slotlane.h, "all-primaries replies").
DEFAULT_FANOUT = {"DBSIZE", "KEYS", "FLUSHALL", "FLUSHDB", "SCRIPT|FLUSH", "SCRIPT|LOAD",
                  "SCRIPT|EXISTS", "FUNCTION|LOAD", "FUNCTION|DELETE", "FUNCTION|FLUSH",
                  "FUNCTION|RESTORE"}

# Redis's response_policy tips the core merges (others give an array of per-node replies).
RESPONSE_POLICY = {"agg_sum": "SL__RESP_SUM", "all_succeeded": "SL__RESP_ALL_SUCCEEDED",
                   "agg_logical_and": "SL__RESP_AND", "agg_logical_or": "SL__RESP_OR"}


def pairs(lst):
    return dict(zip(lst[::2], lst[1::2]))


class Spec:
    def __init__(self, raw):
        d = pairs(raw)
        self.flags = [f.decode().lower() for f in d[b"flags"]]
        bs, fk = pairs(d[b"begin_search"]), pairs(d[b"find_keys"])
        self.bs_type, self.fk_type = bs[b"type"].decode(), fk[b"type"].decode()
        bsspec, fkspec = pairs(bs[b"spec"]), pairs(fk[b"spec"])
        self.bs_pos, self.keyword = 0, None
        if self.bs_type == "index":
            self.bs_pos = bsspec[b"index"]
        elif self.bs_type == "keyword":
            self.keyword = bsspec[b"keyword"].decode().upper()
            self.bs_pos = bsspec[b"startfrom"]
        self.fk = (0, 0, 0)
        if self.fk_type == "range":
            self.fk = (fkspec[b"lastkey"], fkspec[b"keystep"], fkspec[b"limit"])
        elif self.fk_type == "keynum":
            self.fk = (fkspec[b"keynumidx"], fkspec[b"firstkey"], fkspec[b"keystep"])

    def usable(self):
        return (self.bs_type in ("index", "keyword") and self.fk_type in ("range", "keynum")
                and "not_key" not in self.flags)

    def incomplete(self):
        """Redis resorts to a getkeys procedure (SORT's STORE, MIGRATE's KEYS). A not_key
        spec (SPUBLISH's shard channel) is simply not a key; variable_flags specs still
        give exact positions."""
        unknown = self.bs_type not in ("index", "keyword") or self.fk_type not in ("range", "keynum")
        return unknown or "incomplete" in self.flags


class Cmd:
    def __init__(self, raw):
        self.name = raw[0].decode().upper()
        self.arity = raw[1]
        self.rflags = [f.decode() for f in raw[2]]
        self.tips = [t.decode() for t in raw[7]]
        self.specs = [Spec(s) for s in raw[8]]
        self.subs = sorted((Cmd(s) for s in raw[9]), key=lambda c: c.name.encode())

    def flags(self):
        f = []
        if "write" in self.rflags:
            f.append("SL__CMD_WRITE")
        if "readonly" in self.rflags:
            f.append("SL__CMD_READONLY")
        if "movablekeys" in self.rflags:
            f.append("SL__CMD_MOVABLE")
        if not self.specs:
            f.append("SL__CMD_NOKEYS")
        if "blocking" in self.rflags:
            f.append("SL__CMD_BLOCKING")
        if self.subs:
            f.append("SL__CMD_CONTAINER")
        if any(s.incomplete() for s in self.specs):
            f.append("SL__CMD_INCOMPLETE")
        if self.name in DEFAULT_FANOUT:
            f.append("SL__CMD_FANOUT")
        return " | ".join(f) or "0"

    def merge(self):
        """How the replies of a fan-out to every primary are merged: Redis's
        response_policy tip (COMMAND DOCS "tips"), for commands whose request_policy sends
        them to every shard or node. KEYS has no response tip; its replies concatenate."""
        if self.name == "KEYS":
            return "SL__RESP_CONCAT"
        if not any(t in ("request_policy:all_shards", "request_policy:all_nodes") for t in self.tips):
            return "SL__RESP_NONE"
        for t in self.tips:
            if t.startswith("response_policy:"):
                return RESPONSE_POLICY.get(t.split(":", 1)[1], "SL__RESP_NONE")
        return "SL__RESP_NONE"

    def ident(self):
        return "".join(c if c.isalnum() else "_" for c in self.name.lower())


def write_table(cmds, version):
    out = ["/* Generated by core/scripts/gen_commands.py from COMMAND INFO of redis-server %s."
           % version,
           " * Do not edit: rerun the script. Included once, by commands.c. */", ""]

    def specs_of(c):
        if not c.specs:
            return "NULL"
        rows = []
        for s in c.specs:
            if s.usable():
                bs = "SL__BS_INDEX" if s.bs_type == "index" else "SL__BS_KEYWORD"
                fk = "SL__FK_RANGE" if s.fk_type == "range" else "SL__FK_KEYNUM"
            else:  # unknown/not-key specs are kept (so nspecs matches Redis) but inert
                bs, fk = "SL__BS_INVALID", "SL__FK_INVALID"
            kw = c_string(s.keyword) if s.keyword else "NULL"
            rows.append("    { %s, %s, %d, %s, %d, %d, %d }, /* %s */"
                        % (bs, fk, s.bs_pos, kw, s.fk[0], s.fk[1], s.fk[2], " ".join(s.flags)))
        out.append("static const sl__keyspec ks_%s[] = {" % c.ident())
        out.extend(rows)
        out.append("};")
        return "ks_" + c.ident()

    def entry(c, subs_ident):
        ks = specs_of(c)
        return ("    { %s, %d, %s, %d, %s, %d, %s, %s },"
                % (c_string(c.name), c.arity, c.flags(), len(c.specs), ks,
                   len(c.subs), subs_ident, c.merge()))

    top = []
    for c in cmds:
        subs_ident = "NULL"
        if c.subs:
            rows = [entry(s, "NULL") for s in c.subs]
            subs_ident = "subs_" + c.ident()
            out.append("static const sl__cmdinfo %s[] = {" % subs_ident)
            out.extend(rows)
            out.append("};")
        top.append(entry(c, subs_ident))
    out.append("")
    out.append("/* Sorted by name (bytes of the upper-case names), for binary search. */")
    out.append("static const sl__cmdinfo sl__cmd_table[] = {")
    out.extend(top)
    out.append("};")
    with open(TABLE, "w") as f:
        f.write("\n".join(out) + "\n")


def arg_lists(cmds):
    """Deterministic argument lists: per command, lengths from its arity with unique key-ish
    tokens, variants with small numbers (numkeys) in random places, and hand-written cases."""
    rng = random.Random(7001)
    lists = []
    for c in cmds:
        for sub in (c.subs or [c]):
            if not sub.specs:
                continue
            words = sub.name.split("|")
            base = len(words)
            lengths = [sub.arity] if sub.arity > 0 else list(range(-sub.arity, -sub.arity + 5))
            for n in lengths:
                if n < base or n > MAX_ARGS:
                    continue
                rest = n - base
                lists.append(words + ["k%d" % i for i in range(rest)])
                if sub.arity < 0 or "SL__CMD_MOVABLE" in sub.flags():
                    for _ in range(3):
                        args = ["k%d" % i for i in range(rest)]
                        for i in range(rest):
                            if rng.random() < 0.35:
                                args[i] = str(rng.randrange(0, 4))
                        lists.append(words + args)
    manual = """GET foo
SET foo bar
SET foo bar EX 10 GET
MSET a 1 b 2 c 3
MSET a 1 b
MGET a b c d
DEL a b c
EVAL s 0
EVAL s 2 a b c d
EVAL s 3 a b
EVAL s -1 a
EVAL s x a
EVALSHA abc 1 k1 arg
EVAL_RO s 2 a b
FCALL f 2 a b x
FCALL_RO f 1 a
ZUNIONSTORE dst 2 a b WEIGHTS 1 2
ZINTERSTORE dst 3 a b c AGGREGATE MAX
ZINTERSTORE dst 5 a b
ZUNION 2 a b WITHSCORES
ZDIFFSTORE dst 2 a b
ZINTERCARD 2 a b LIMIT 1
SINTERCARD 3 a b c
XREAD STREAMS s1 s2 0 0
XREAD COUNT 2 BLOCK 0 STREAMS s1 0
XREAD STREAMS s1 s2 s3 0 0
XREADGROUP GROUP g c STREAMS s1 s2 > >
XREADGROUP GROUP g c COUNT 1 STREAMS s1 >
SORT src
SORT src STORE dst
SORT src BY w_* GET # GET h_* LIMIT 0 10 STORE dst
SORT src STORE d1 STORE d2
SORT src LIMIT 0 STORE x
SORT_RO src BY x
MIGRATE h 6379 key 0 1000
MIGRATE h 6379 key 0 1000 COPY REPLACE
MIGRATE h 6379 "" 0 1000 KEYS a b c
MIGRATE h 6379 "" 0 1000 COPY AUTH pw KEYS a b
MIGRATE h 6379 "" 0 1000 AUTH2 u keys KEYS x
LMPOP 2 a b LEFT
LMPOP 1 a RIGHT COUNT 2
LMPOP 3 a b LEFT
BLMPOP 0 2 a b LEFT
ZMPOP 2 a b MIN
BZMPOP 1 2 a b MAX COUNT 3
BLPOP a b c 0
BRPOPLPUSH a b 0
OBJECT ENCODING k
OBJECT FREQ k
XINFO STREAM s FULL
XINFO GROUPS s
MEMORY USAGE k SAMPLES 5
GEORADIUS g 0 0 1 km STORE d
GEORADIUS g 0 0 1 km STOREDIST d
GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km
LCS a b
SMOVE a b m
RENAME a b
COPY a b DB 1
BITOP AND d a b c
PFCOUNT a b
PFMERGE d a b
WATCH a b
SINTERSTORE d a b
XGROUP CREATE s g $
XCLAIM s g c 0 id
SUBSCRIBE ch
GEORADIUSBYMEMBER g m 1 km STORE d
BITFIELD k GET u8 0
BITFIELD_RO k GET u8 0
SPUBLISH ch msg
"""
    # Not recorded on purpose: a numkeys with leading zeros ("EVAL s 02 a b"). COMMAND
    # GETKEYS falls back to atoi() and lists keys, but the server refuses to run the
    # command ("value is not an integer"), so sl__cmd_keys gives none.
    for line in manual.splitlines():
        args = []
        for w in line.split(" "):
            args.append("" if w == '""' else w)
        lists.append(args)
    seen, out = set(), []
    for a in lists:
        t = tuple(a)
        if t not in seen:
            seen.add(t)
            out.append(a)
    return out


def write_vectors(srv, cmds, version):
    rows = []
    for args in arg_lists(cmds):
        r = srv.client.call("COMMAND", "GETKEYS", *args, raise_errors=False)
        if isinstance(r, ReplyError):
            msg = str(r)
            if "Invalid command specified" in msg:
                continue  # unknown to this server: nothing to compare
            keys = []  # "no key arguments", "Invalid arguments", arity errors: no keys
        else:
            keys = r
        if len(keys) > MAX_ARGS:
            continue
        rows.append((args, keys))
    with open(VECTORS, "w") as f:
        f.write("/* Generated by core/scripts/gen_commands.py from COMMAND GETKEYS of\n"
                " * redis-server %s. Do not edit: rerun the script.\n"
                " * SL_GETKEYS(argc, {argv}, nkeys, {keys}): the keys as the server listed\n"
                " * them (key-spec order); an error reply is recorded as no keys. */\n" % version)
        for args, keys in rows:
            f.write("SL_GETKEYS(%d, SL_ARGS(%s), %d, SL_ARGS(%s))\n"
                    % (len(args), ", ".join(c_string(a) for a in args), len(keys),
                       ", ".join(c_string(k) for k in keys) or "NULL"))
    return len(rows)


def main():
    with Server() as srv:
        version = srv.version()
        cmds = sorted((Cmd(raw) for raw in srv.client.call("COMMAND", "INFO")),
                      key=lambda c: c.name.encode())
        write_table(cmds, version)
        n = write_vectors(srv, cmds, version)
    print("wrote %d commands to %s and %d vectors to %s"
          % (len(cmds), os.path.normpath(TABLE), n, os.path.normpath(VECTORS)))
    for c in cmds:
        for s in [c] + c.subs:
            if "SL__CMD_INCOMPLETE" in s.flags():
                print("incomplete key specs:", s.name)


if __name__ == "__main__":
    main()
