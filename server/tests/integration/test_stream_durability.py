"""Streams and the log: kill -9 with --durability always while 4 producers XADD and
4 consumers XREADGROUP/XACK (after the restart every acknowledged XADD is there with
its fields, every acknowledged XACK is acknowledged, every delivered and unacknowledged
entry is pending); the log of every stream command replays to the same XINFO STREAM
FULL (times included: the log holds absolute times), and so does a rewritten log
(BGREWRITEAOF), which is written compactly as one XADD per entry plus the counters,
groups and pending entries (slotlane.xmeta, XGROUP CREATE, slotlane.xpel)."""
import os
import shutil
import threading

import pytest

from resp import Conn, Err, Server
from test_durability import wait_rewrites

KEY = "{q}jobs"


@pytest.fixture
def d(tmp_path):
    p = tmp_path / "aof"
    yield str(p)
    shutil.rmtree(str(tmp_path), ignore_errors=True)


def start(dirpath, mode="always", shards=1):
    return Server(shards=shards, extra=["--durability", mode, "--dir", dirpath, "--misrouted", "forward"])


class Producer(threading.Thread):
    def __init__(self, port, tid, goal):
        super().__init__(daemon=True)
        self.port, self.tid, self.goal = port, tid, goal
        self.acked = {}  # id -> value, replies received
        self.reached = threading.Event()

    def run(self):
        c = Conn(self.port, timeout=5)
        i = 0
        try:
            while True:
                batch = []
                for _ in range(8):
                    i += 1
                    batch.append(f"p{self.tid}-{i}")
                for v in batch:
                    c.send("XADD", KEY, "*", "v", v)
                for v in batch:
                    r = c.read()
                    assert isinstance(r, bytes), r
                    self.acked[r] = v.encode()
                if len(self.acked) >= self.goal:
                    self.reached.set()
        except (ConnectionError, OSError):
            pass
        finally:
            c.close()


class Consumer(threading.Thread):
    def __init__(self, port, tid, goal):
        super().__init__(daemon=True)
        self.port, self.tid, self.goal = port, tid, goal
        self.delivered = set()  # ids whose XREADGROUP reply arrived
        self.acked = set()      # ids whose XACK reply arrived
        self.ack_sent = set()   # ids in an XACK sent (applied or not when the server died)
        self.reached = threading.Event()

    def run(self):
        c = Conn(self.port, timeout=5)
        try:
            while True:
                r = c.call("XREADGROUP", "GROUP", "workers", f"c{self.tid}", "COUNT", "10", "STREAMS", KEY, ">")
                if r is None or not isinstance(r, list):
                    continue
                ids = [e[0] for e in r[0][1]]
                self.delivered.update(ids)
                if ids:
                    self.ack_sent.update(ids)
                    n = c.call("XACK", KEY, "workers", *ids)
                    assert n == len(ids), n
                    self.acked.update(ids)
                if len(self.acked) >= self.goal:
                    self.reached.set()
        except (ConnectionError, OSError):
            pass
        finally:
            c.close()


def test_kill9_always_keeps_acknowledged_xadd_and_xack(d):
    s = start(d)
    try:
        c = Conn(s.port)
        assert c.call("XGROUP", "CREATE", KEY, "workers", "$", "MKSTREAM") == "OK"
        prods = [Producer(s.port, t, 300) for t in range(4)]
        cons = [Consumer(s.port, t, 100) for t in range(4)]
        for t in prods + cons:
            t.start()
        # kill once every producer and consumer has had that many replies (events, not time)
        for t in prods + cons:
            assert t.reached.wait(60), "the load did not get going"
        s.stop(sig=9)
        for t in prods + cons:
            t.join(10)
    finally:
        s.stop(sig=9)
    s2 = start(d)
    try:
        c = Conn(s2.port)
        entries = {e[0]: e[1] for e in c.call("XRANGE", KEY, "-", "+")}
        added = {}
        for p in prods:
            added.update(p.acked)
        missing = [i for i in added if i not in entries]
        assert not missing, f"{len(missing)} of {len(added)} acknowledged XADDs lost, e.g. {missing[:3]}"
        wrong = [i for i, v in added.items() if entries[i] != [b"v", v]]
        assert not wrong, f"fields differ for {wrong[:3]}"
        pending = {e[0] for e in c.call("XPENDING", KEY, "workers", "-", "+", "1000000000")}
        acked = set().union(*(t.acked for t in cons))
        delivered = set().union(*(t.delivered for t in cons))
        assert not (acked & pending), f"acknowledged but pending again: {sorted(acked & pending)[:3]}"
        sent = set().union(*(t.ack_sent for t in cons))
        lost = delivered - sent - pending
        assert not lost, f"delivered, no XACK sent, not pending: {sorted(lost)[:3]}"
        groups = c.call("XINFO", "GROUPS", KEY)
        g = dict(zip(groups[0][::2], groups[0][1::2]))
        assert g[b"pending"] == len(pending)
        print(f"\n{len(added)} acknowledged XADDs, {len(acked)} XACKs, {len(pending)} pending after kill -9")
    finally:
        code, err = s2.stop()
    assert code == 0, err


def build_streams(c):
    """Every kind of state a stream can hold: tombstones, trims, groups with pending
    entries of live and deleted entries, consumers without any, counters set by XSETID."""
    for i in range(1, 260):
        c.call("XADD", "{x}full", f"{i}-1", "f", str(i), *(["g", "x" * (i % 7)] if i % 3 else []))
    c.call("XDEL", "{x}full", "5-1", "150-1", "201-1")
    c.call("XTRIM", "{x}full", "MAXLEN", "~", "200")
    c.call("XTRIM", "{x}full", "MINID", "120-1")
    c.call("XGROUP", "CREATE", "{x}full", "ga", "0")
    c.call("XGROUP", "CREATE", "{x}full", "gb", "$", "ENTRIESREAD", "3")
    c.call("XREADGROUP", "GROUP", "ga", "alice", "COUNT", "30", "STREAMS", "{x}full", ">")
    c.call("XREADGROUP", "GROUP", "ga", "bob", "COUNT", "5", "STREAMS", "{x}full", ">")
    c.call("XREADGROUP", "GROUP", "ga", "bob", "STREAMS", "{x}full", "0")
    c.call("XREADGROUP", "GROUP", "ga", "nack", "NOACK", "COUNT", "3", "STREAMS", "{x}full", ">")
    c.call("XACK", "{x}full", "ga", "121-1", "122-1")
    c.call("XDEL", "{x}full", "130-1")
    c.call("XCLAIM", "{x}full", "ga", "carol", "0", "123-1", "124-1", "RETRYCOUNT", "9", "TIME", "1000")
    c.call("XCLAIM", "{x}full", "ga", "carol", "0", "240-1", "FORCE", "JUSTID")
    c.call("XAUTOCLAIM", "{x}full", "ga", "dave", "0", "125-0", "COUNT", "4")
    c.call("XGROUP", "CREATECONSUMER", "{x}full", "gb", "idle")
    c.call("XGROUP", "CREATE", "{x}full", "gc", "0")
    c.call("XGROUP", "SETID", "{x}full", "gc", "140-1", "ENTRIESREAD", "-1")
    c.call("XADD", "{x}full", "MAXLEN", "=", "150", "*", "auto", "1")
    c.call("XSETID", "{x}full", "99999999999999-5", "ENTRIESADDED", "5000", "MAXDELETEDID", "201-1")
    # empty streams: with a group, and with none (created by MKSTREAM, group destroyed)
    c.call("XGROUP", "CREATE", "{x}empty", "g", "$", "MKSTREAM")
    c.call("XGROUP", "CREATE", "{x}bare", "g", "$", "MKSTREAM")
    c.call("XGROUP", "DESTROY", "{x}bare", "g")
    c.call("XADD", "{x}gone", "1-1", "a", "b")
    c.call("XDEL", "{x}gone", "1-1")
    c.call("XADD", "{x}small", "MAXLEN", "2", "*", "a", "1")
    c.call("XADD", "{x}small", "MAXLEN", "2", "*", "a", "2")
    c.call("XADD", "{x}small", "MAXLEN", "2", "*", "a", "3")


STREAMS = ["{x}full", "{x}empty", "{x}bare", "{x}gone", "{x}small"]


def snapshot(c):
    out = {}
    for k in STREAMS:
        out[k] = (c.call("XINFO", "STREAM", k, "FULL", "COUNT", "0"), c.call("XRANGE", k, "-", "+"),
                  c.call("XINFO", "GROUPS", k))
    return out


def aof_text(d):
    data = b""
    for name in sorted(os.listdir(d)):
        if name.endswith(".aof"):
            with open(os.path.join(d, name), "rb") as f:
                data += f.read()
    return data


@pytest.mark.parametrize("rewrite", [False, True])
def test_log_and_rewrite_replay_to_the_same_xinfo_full(d, rewrite):
    s = start(d, mode="everysec")
    try:
        c = Conn(s.port)
        build_streams(c)
        want = snapshot(c)
        for k in STREAMS:
            assert not isinstance(want[k][0], Err), want[k]
        if rewrite:
            before = len(aof_text(d))
            assert c.call("BGREWRITEAOF").startswith("Background")
            wait_rewrites(s.port, 1)
            text = aof_text(d)
            assert b"slotlane.xmeta" in text and b"slotlane.xpel" in text
            assert b"XREADGROUP" not in text and b"XCLAIM" not in text
            assert len(text) < before, (len(text), before)
    finally:
        code, err = s.stop(sig=9 if not rewrite else 15)
    s2 = start(d, mode="everysec")
    try:
        got = snapshot(Conn(s2.port))
        for k in STREAMS:
            assert got[k] == want[k], f"{k}:\n after ={got[k]!r}\n before={want[k]!r}"
    finally:
        code, err = s2.stop()
    assert code == 0, err
