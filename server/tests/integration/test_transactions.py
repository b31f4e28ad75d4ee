"""Transactions: MULTI EXEC DISCARD WATCH UNWATCH.

* Scripted sessions (two connections, "a" and "b", b writing between a's WATCH and
  EXEC) sent to slotlane-server and to redis-server 7.0: every reply must be equal,
  RESP2 and RESP3, at 1 shard, 4 shards per-shard (each session's keys under one
  hash tag, sent to its owner), 4 shards --misrouted forward and one-port at 2 and
  4 shards (through one port; the keys' owner is any shard).
* Redis Cluster's rules in per-shard mode: MOVED and CROSSSLOT of a queued command
  fail the transaction (EXECABORT), EXEC of keys in several slots is CROSSSLOT; in
  forwarding modes a transaction whose keys live on several shards is CROSSSLOT,
  one on another shard runs there as a unit.
* WATCH races: clients increment one counter with WATCH/GET/MULTI/SET/EXEC and retry
  on a null EXEC; the model — successful transactions are serializable — says the
  values they read are exactly 0..n-1, once each, and the counter ends at n.
* Durability: an EXEC is logged as one unit (replayed after kill -9); with the
  test-only fault point SLOTLANE_TEST_TORN_EXEC=N the shard exits after writing
  half of its N-th unit, and the restart replays the earlier transaction whole and
  none of the torn one.
Expiry is decided from the server's clock (TIME), not by sleeping.
"""
import os
import shutil
import signal
import time
import tempfile
import threading

import pytest

from resp import Conn, Err, Map, NullArray, Server, Status, key_slot, shard_of


def k(tag, name):
    return f"{{{tag}}}{name}"


def sessions(t):
    """Scripted sessions over keys of tag t: lists of (connection, argv)."""
    a, b = "a", "b"
    K = lambda n: k(t, n)
    return {
        "basic": [(a, ["MULTI"]), (a, ["SET", K("x"), "1"]), (a, ["INCR", K("x")]), (a, ["LPUSH", K("l"), "p", "q"]),
                  (a, ["GET", K("x")]), (a, ["LRANGE", K("l"), "0", "-1"]), (a, ["EXEC"])],
        "empty": [(a, ["MULTI"]), (a, ["EXEC"])],
        "runtime_error": [(a, ["SET", K("s"), "str"]), (a, ["MULTI"]), (a, ["INCR", K("s")]), (a, ["LPUSH", K("s"), "x"]),
                          (a, ["SET", K("s"), "7"]), (a, ["INCR", K("s")]), (a, ["EXEC"]), (a, ["GET", K("s")])],
        "execabort_unknown": [(a, ["MULTI"]), (a, ["SET", K("u"), "1"]), (a, ["NOSUCHCMD", "x"]), (a, ["EXEC"]),
                              (a, ["GET", K("u")])],
        "execabort_arity": [(a, ["MULTI"]), (a, ["SET", K("u")]), (a, ["INCR", K("u")]), (a, ["EXEC"]), (a, ["EXISTS", K("u")])],
        "nested": [(a, ["MULTI"]), (a, ["MULTI"]), (a, ["SET", K("n"), "1"]), (a, ["EXEC"]), (a, ["GET", K("n")])],
        "without_multi": [(a, ["EXEC"]), (a, ["DISCARD"]), (a, ["UNWATCH"])],
        "discard": [(a, ["MULTI"]), (a, ["SET", K("d"), "1"]), (a, ["DISCARD"]), (a, ["GET", K("d")]), (a, ["EXEC"])],
        "watch_inside": [(a, ["MULTI"]), (a, ["WATCH", K("w")]), (a, ["SET", K("w"), "1"]), (a, ["EXEC"])],
        "watch_ok": [(a, ["SET", K("w"), "0"]), (a, ["WATCH", K("w"), K("w2")]), (a, ["GET", K("w")]), (a, ["MULTI"]),
                     (a, ["INCR", K("w")]), (a, ["EXEC"])],
        "watch_broken": [(a, ["SET", K("w"), "0"]), (a, ["WATCH", K("w")]), (b, ["INCR", K("w")]), (a, ["MULTI"]),
                         (a, ["INCR", K("w")]), (a, ["EXEC"]), (a, ["GET", K("w")])],
        "watch_missing_created": [(a, ["DEL", K("m")]), (a, ["WATCH", K("m")]), (b, ["SET", K("m"), "1"]), (a, ["MULTI"]),
                                  (a, ["SET", K("m"), "2"]), (a, ["EXEC"]), (a, ["GET", K("m")])],
        "watch_noop_write": [(a, ["SADD", K("set"), "m"]), (a, ["WATCH", K("set")]), (b, ["SADD", K("set"), "m"]),
                             (b, ["SREM", K("set"), "zz"]), (a, ["MULTI"]), (a, ["SCARD", K("set")]), (a, ["EXEC"])],
        "watch_del_missing": [(a, ["WATCH", K("gone")]), (b, ["DEL", K("gone")]), (a, ["MULTI"]), (a, ["PING"]), (a, ["EXEC"])],
        "watch_expire": [(a, ["SET", K("e"), "v"]), (a, ["WATCH", K("e")]), (b, ["EXPIRE", K("e"), "100"]), (a, ["MULTI"]),
                         (a, ["TTL", K("e")]), (a, ["EXEC"])],
        "unwatch": [(a, ["SET", K("w"), "0"]), (a, ["WATCH", K("w")]), (a, ["UNWATCH"]), (b, ["INCR", K("w")]),
                    (a, ["MULTI"]), (a, ["INCR", K("w")]), (a, ["EXEC"])],
        "discard_unwatches": [(a, ["SET", K("w"), "0"]), (a, ["WATCH", K("w")]), (a, ["MULTI"]), (a, ["DISCARD"]),
                              (b, ["INCR", K("w")]), (a, ["MULTI"]), (a, ["INCR", K("w")]), (a, ["EXEC"])],
        "exec_unwatches": [(a, ["WATCH", K("w")]), (a, ["MULTI"]), (a, ["EXEC"]), (b, ["INCR", K("w")]), (a, ["MULTI"]),
                           (a, ["GET", K("w")]), (a, ["EXEC"])],
        "unwatch_queued": [(a, ["WATCH", K("w")]), (a, ["MULTI"]), (a, ["UNWATCH"]), (a, ["EXEC"])],
        "rename_in_tx": [(a, ["SET", K("r1"), "v"]), (a, ["WATCH", K("r2")]), (b, ["RENAME", K("r1"), K("r2")]),
                         (a, ["MULTI"]), (a, ["GET", K("r2")]), (a, ["EXEC"])],
        "getex_read": [(a, ["SET", K("g"), "v"]), (a, ["WATCH", K("g")]), (b, ["GETEX", K("g")]), (b, ["GET", K("g")]),
                       (a, ["MULTI"]), (a, ["GET", K("g")]), (a, ["EXEC"])],
        "reset": [(a, ["WATCH", K("w")]), (a, ["MULTI"]), (a, ["SET", K("w"), "r"]), (a, ["RESET"]), (a, ["EXEC"]),
                  (a, ["GET", K("w")])],
        "types": [(a, ["MULTI"]), (a, ["HSET", K("h"), "f", "v"]), (a, ["HGETALL", K("h")]), (a, ["ZADD", K("z"), "1.5", "m"]),
                  (a, ["ZSCORE", K("z"), "m"]), (a, ["ZRANGE", K("z"), "0", "-1", "WITHSCORES"]), (a, ["SET", K("t"), "1", "GET"]),
                  (a, ["INCRBYFLOAT", K("t"), "0.5"]), (a, ["EXEC"])],
    }


class Pair:
    def __init__(self, ours, ref, proto, one_port):
        self.ours, self.ref, self.proto, self.one_port = ours, ref, proto, one_port
        self.conns = {}

    def port_for(self, key):
        if self.one_port or self.ours.shards == 1:
            return self.ours.port
        return self.ours.port + shard_of(key, self.ours.shards)

    def conn(self, name, key):
        if name not in self.conns:
            ours, ref = Conn(self.port_for(key)), Conn(self.ref.port)
            if self.proto == 3:
                assert isinstance(ours.call("HELLO", "3"), Map)
                ref.call("HELLO", "3")
            self.conns[name] = (ours, ref)
        return self.conns[name]

    def close(self):
        for o, r in self.conns.values():
            o.close()
            r.close()
        self.conns = {}


def run_sessions(shards, proto, extra=()):
    ours = Server(shards=shards, extra=extra)
    ref = Server(redis=True)
    failures = []
    try:
        one_port = bool(extra)
        for n, name in enumerate(sessions("x")):
            steps = sessions(f"s{n}")[name]  # a tag of its own per session
            pair = Pair(ours, ref, proto, one_port)
            key = next((x for _, argv in steps for x in argv[1:] if x.startswith("{")), "x")
            for i, (who, argv) in enumerate(steps):
                o, r = pair.conn(who, key)
                got, want = o.call(*argv), r.call(*argv)
                if got != want or type(got) != type(want):
                    failures.append(f"{name} step {i} {argv!r}: ours={got!r} redis={want!r}")
            pair.close()
    finally:
        code, err = ours.stop()
        ref.stop()
    assert not failures, "\n".join(failures)
    assert code == 0, err


@pytest.mark.parametrize("proto", [2, 3])
def test_sessions_one_shard(proto):
    run_sessions(1, proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_sessions_four_shards(proto):
    run_sessions(4, proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_sessions_forward(proto):
    run_sessions(4, proto, ["--misrouted", "forward"])


@pytest.mark.parametrize("shards,proto", [(2, 2), (4, 3)])
def test_sessions_one_port(shards, proto):
    run_sessions(shards, proto, ["--port-mode", "one-port"])


def keys_on(shard, shards, prefix, n=1):
    out, i = [], 0
    while len(out) < n:
        key = f"{prefix}:{i}"
        i += 1
        if shard_of(key, shards) == shard:
            out.append(key)
    return out


def test_cluster_rules_per_shard():
    srv = Server(shards=4)
    try:
        here = Conn(srv.port)  # shard 0
        mine = keys_on(0, 4, "mine", 3)
        other = keys_on(2, 4, "other")[0]
        # a queued command with another shard's key: MOVED, and EXEC fails
        assert here.call("MULTI") == Status("OK")
        assert here.call("SET", mine[0], "1") == Status("QUEUED")
        moved = here.call("SET", other, "1")
        assert isinstance(moved, Err) and moved.startswith("MOVED ")
        assert here.call("EXEC").startswith("EXECABORT")
        assert here.call("EXISTS", mine[0]) == 0
        # keys of one shard in different slots: queued, then EXEC is CROSSSLOT (discarded)
        a, b = next((x, y) for x in mine for y in mine if key_slot(x) != key_slot(y))
        assert here.call("MULTI") == Status("OK")
        assert here.call("SET", a, "1") == Status("QUEUED")
        assert here.call("SET", b, "1") == Status("QUEUED")
        assert here.call("EXEC") == Err("CROSSSLOT Keys in request don't hash to the same slot")
        assert here.call("EXEC") == Err("ERR EXEC without MULTI")
        assert here.call("EXISTS", a) == 0 and here.call("EXISTS", b) == 0
        # a queued multi-key command across slots: CROSSSLOT, the transaction fails
        assert here.call("MULTI") == Status("OK")
        assert here.call("MSET", a, "1", b, "2") == Err("CROSSSLOT Keys in request don't hash to the same slot")
        assert here.call("EXEC").startswith("EXECABORT")
        # WATCH of another shard's key: MOVED
        assert here.call("WATCH", other).startswith("MOVED ")
        # one slot: runs
        assert here.call("MULTI") == Status("OK")
        assert here.call("SET", a, "x") == Status("QUEUED")
        assert here.call("GET", a) == Status("QUEUED")
        assert here.call("EXEC") == [Status("OK"), b"x"]
        assert "multi=-1" in str(here.call("CLIENT", "LIST"))
        here.call("MULTI")
        here.call("GET", a)
        other = Conn(srv.port)
        assert b"multi=1 " in other.call("CLIENT", "LIST")  # CLIENT LIST: one command queued
        other.close()
        assert here.call("DISCARD") == Status("OK")
        here.close()
    finally:
        code, err = srv.stop()
    assert code == 0, err


@pytest.mark.parametrize("extra", [["--port-mode", "one-port"], ["--misrouted", "forward"]])
def test_forwarding_rules(extra):
    srv = Server(shards=4, extra=extra)
    try:
        c, w = Conn(srv.port), Conn(srv.port)
        s1, s2 = keys_on(1, 4, "f", 2), keys_on(2, 4, "g")
        # keys on several shards: CROSSSLOT, discarded
        assert c.call("MULTI") == Status("OK")
        assert c.call("SET", s1[0], "1") == Status("QUEUED")
        assert c.call("SET", s2[0], "1") == Status("QUEUED")
        assert c.call("EXEC") == Err("CROSSSLOT Keys in request don't hash to the same slot")
        assert c.call("EXISTS", s1[0]) == 0 and c.call("EXISTS", s2[0]) == 0
        # keys of one shard (any slots, any receiving shard): runs there, in order
        c.call("SET", s1[0], "10")
        assert c.call("WATCH", s1[0], s1[1]) == Status("OK")
        assert c.call("MULTI") == Status("OK")
        for argv in (["INCR", s1[0]], ["MSET", s1[0], "a", s1[1], "b"], ["MGET", s1[0], s1[1]], ["PING"]):
            assert c.call(*argv) == Status("QUEUED")
        assert c.call("EXEC") == [11, Status("OK"), [b"a", b"b"], Status("PONG")]
        # WATCH of another shard's key is broken by a write there
        assert c.call("WATCH", s1[0]) == Status("OK")
        assert w.call("SET", s1[0], "changed") == Status("OK")
        c.call("MULTI")
        c.call("SET", s1[0], "mine")
        assert c.call("EXEC") == NullArray()
        assert c.call("GET", s1[0]) == b"changed"
        # ... and released by UNWATCH (the owner forgets it: INFO-free check by behaviour)
        assert c.call("WATCH", s1[0]) == Status("OK")
        assert c.call("UNWATCH") == Status("OK")
        w.call("SET", s1[0], "again")
        c.call("MULTI")
        c.call("GET", s1[0])
        assert c.call("EXEC") == [b"again"]
        # watched keys on a shard other than the transaction's: CROSSSLOT
        assert c.call("WATCH", s2[0]) == Status("OK")
        c.call("MULTI")
        c.call("SET", s1[0], "z")
        assert c.call("EXEC") == Err("CROSSSLOT Keys in request don't hash to the same slot")
        assert c.call("GET", s1[0]) == b"again"
        c.close()
        w.close()
    finally:
        code, err = srv.stop()
    assert code == 0, err


def test_internal_exec_checks_its_arguments():
    """slotlane.exec (any client can send it): a malformed unit is an error, nothing runs."""
    srv = Server(shards=1)
    try:
        c = Conn(srv.port)
        bad = [["slotlane.exec", "x", "0"], ["slotlane.exec", "0", "x"], ["slotlane.exec", "0", "2", "2", "SET", "a", "1"],
               ["slotlane.exec", "0", "1", "3", "SET", "a"], ["slotlane.exec", "0", "1", "1", "NOSUCH"],
               ["slotlane.exec", "0", "1", "2", "GET"], ["slotlane.exec", "0", "1", "1", "MULTI"],
               ["slotlane.exec", "0", "1", "2", "slotlane.exec", "0"], ["slotlane.exec", "5", "k", "1"],
               ["slotlane.exec", "1", "k", "v", "0"], ["slotlane.exec", "0", "-1"], ["slotlane.exec", "0", "1", "0"],
               ["slotlane.exec", "0", "1", "99999999999999999999", "SET"]]
        for argv in bad:
            r = c.call(*argv)
            assert isinstance(r, Err), (argv, r)
        assert c.call("EXISTS", "a") == 0
        assert c.call("slotlane.exec", "0", "2", "3", "SET", "a", "1", "2", "INCR", "a") == [Status("OK"), 2]
        assert c.call("slotlane.watch", "a") == [b"0"]
        assert c.call("slotlane.exec", "1", "a", "0", "1", "2", "GET", "a") == [b"2"]
        assert c.call("MULTI") == Status("OK")
        assert c.call("slotlane.exec", "0", "0") == Err("ERR Command not allowed inside a transaction")
        assert c.call("EXEC").startswith("EXECABORT")
        c.close()
    finally:
        code, err = srv.stop()
    assert code == 0, err


def watched_keys(conn):
    for line in bytes(conn.call("INFO", "clients")).split(b"\r\n"):
        if line.startswith(b"total_watched_keys:"):
            return int(line.split(b":")[1])
    raise AssertionError("no total_watched_keys in INFO clients")


def wait_watched(conn, n, what):
    """Polls the shard's INFO until it keeps n watched keys (an event, not a sleep)."""
    for _ in range(2000):
        if watched_keys(conn) == n:
            return
    raise AssertionError(f"{what}: the shard keeps {watched_keys(conn)} watched keys, not {n}")


def test_remote_watches_are_released():
    """--misrouted forward, 4 shards: a client on shard 0 watching shard 2's keys. The
    watch lives on shard 2 (INFO total_watched_keys there) and goes with UNWATCH,
    DISCARD, RESET, an EXEC run there, an EXEC refused with CROSSSLOT, and a disconnect."""
    srv = Server(shards=4, extra=["--misrouted", "forward"])
    try:
        c, owner = Conn(srv.port), Conn(srv.port + 2)
        ks = keys_on(2, 4, "rw", 2)
        other = keys_on(3, 4, "rx")[0]
        assert watched_keys(owner) == 0
        cases = [[["UNWATCH"]], [["MULTI"], ["DISCARD"]], [["RESET"]], [["MULTI"], ["GET", ks[0]], ["EXEC"]],
                 [["MULTI"], ["GET", other], ["EXEC"]]]
        for steps in cases:
            assert c.call("WATCH", *ks) == Status("OK")
            assert c.call("WATCH", ks[0]) == Status("OK")  # already watched: once
            wait_watched(owner, 2, f"after WATCH, before {steps}")
            for argv in steps:
                c.call(*argv)
            wait_watched(owner, 0, f"after {steps}")
        assert c.call("WATCH", ks[0]) == Status("OK")
        wait_watched(owner, 1, "after WATCH")
        c.close()
        wait_watched(owner, 0, "after the watching client disconnected")
        # a client that closes while its WATCH is still being taken on shard 2 (either
        # order of the close and the owner's answer): nothing stays behind
        for _ in range(20):
            q = Conn(srv.port)
            q.send("WATCH", *ks)
            q.close()
        wait_watched(owner, 0, "after clients closed during their WATCH")
        # a local watch is released the same way (shard 0's own key)
        c = Conn(srv.port)
        mine = keys_on(0, 4, "rl")[0]
        c.call("WATCH", mine)
        assert watched_keys(c) == 1
        c.close()
        wait_watched(Conn(srv.port), 0, "shard 0 after the disconnect")
        owner.close()
    finally:
        code, err = srv.stop()
    assert code == 0, err


def server_time_ms(conn):
    s, us = conn.call("TIME")
    return int(s) * 1000 + int(us) // 1000


@pytest.mark.parametrize("lazy", [False, True])
def test_watch_expiry(lazy):
    """A watched key whose TTL passes before EXEC fails the transaction, whether or
    not anything expired it (lazy: another client's access deleted it first)."""
    for server in (Server(shards=1), Server(redis=True)):
        try:
            a, b = Conn(server.port), Conn(server.port)
            ttl = 30
            while True:  # WATCH must see the key alive: on a slow machine, retry longer
                a.call("SET", "ek", "v", "PX", str(ttl))
                deadline = server_time_ms(a) + ttl
                assert a.call("WATCH", "ek") == Status("OK")
                if a.call("PTTL", "ek") > 0:
                    break
                a.call("UNWATCH")
                ttl *= 2
            while server_time_ms(b) <= deadline + 1:  # the server's clock passes the TTL
                pass
            if lazy:
                assert b.call("EXISTS", "ek") == 0
            a.call("MULTI")
            a.call("SET", "ek", "new")
            assert a.call("EXEC") == NullArray(), "redis" if server.proc.args[0] == "redis-server" else "ours"
            # a key already expired when WATCH ran: its deletion is no modification
            a.call("SET", "ek2", "v", "PX", "1")
            d2 = server_time_ms(a) + 1
            while server_time_ms(b) <= d2 + 1:
                pass
            assert a.call("WATCH", "ek2") == Status("OK")
            assert b.call("EXISTS", "ek2") == 0
            a.call("MULTI")
            a.call("SET", "ek2", "x")
            assert a.call("EXEC") == [Status("OK")]
            a.close()
            b.close()
        finally:
            server.stop()


def test_watch_flush():
    for server in (Server(shards=1), Server(redis=True), Server(shards=4, extra=["--port-mode", "one-port"])):
        try:
            a, b = Conn(server.port), Conn(server.port)
            for flush in ("FLUSHALL", "FLUSHDB"):
                a.call("SET", "fk", "v")
                a.call("WATCH", "fk", "absent")
                assert b.call(flush) == Status("OK")
                a.call("MULTI")
                a.call("SET", "fk", "x")
                assert a.call("EXEC") == NullArray(), flush
                # a watched key that did not exist is not touched by the flush (Redis 7.0)
                a.call("WATCH", "absent")
                assert b.call(flush) == Status("OK")
                a.call("MULTI")
                a.call("SET", "absent", "x")
                assert a.call("EXEC") == [Status("OK")], flush
            a.close()
            b.close()
        finally:
            server.stop()


def race(port_of_client, key, clients, per_client, proto=2):
    """Each client adds 1 to key per_client times with WATCH/GET/MULTI/SET/EXEC."""
    seen, errors = [], []
    lock = threading.Lock()

    def worker(i):
        try:
            c = Conn(port_of_client(i))
            if proto == 3:
                c.call("HELLO", "3")
            done = 0
            while done < per_client:
                assert c.call("WATCH", key) == Status("OK")
                v = c.call("GET", key)
                v = int(v) if v is not None else 0
                assert c.call("MULTI") == Status("OK")
                assert c.call("SET", key, str(v + 1)) == Status("QUEUED")
                r = c.call("EXEC")
                if r == NullArray():  # the watch was broken: again
                    continue
                assert r == [Status("OK")], r
                with lock:
                    seen.append(v)
                done += 1
            c.close()
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    n = clients * per_client
    # the model: successful transactions are serializable — each read a value no
    # other successful one read, and together they read 0..n-1
    assert sorted(seen) == list(range(n))
    return n


@pytest.mark.parametrize("mode", ["one-shard", "per-shard", "one-port"])
def test_watch_race(mode):
    shards = 1 if mode == "one-shard" else 4
    extra = ["--port-mode", "one-port"] if mode == "one-port" else []
    srv = Server(shards=shards, extra=extra)
    try:
        key = keys_on(3, 4, "race")[0] if shards > 1 else "race"
        port = (lambda i: srv.port + shard_of(key, 4)) if mode == "per-shard" else (lambda i: srv.port)
        n = race(port, key, clients=8, per_client=40)
        assert Conn(port(0)).call("GET", key) == str(n).encode()
    finally:
        code, err = srv.stop()
    assert code == 0, err


# ---- durability ----

def aof_server(d, shards=1, env=None, extra=()):
    return Server(shards=shards, extra=["--durability", "always", "--dir", d, *extra], env=env)


def test_exec_logged_as_unit():
    d = tempfile.mkdtemp(prefix="sv-tx-")
    try:
        srv = aof_server(d)
        c = Conn(srv.port)
        c.call("MULTI")
        for i in range(5):
            c.call("INCR", "u")
        c.call("RPUSH", "ul", "a", "b")
        c.call("SPOP", "nosuch")
        assert c.call("EXEC") == [1, 2, 3, 4, 5, 2, None]
        c.call("MULTI")
        c.call("INCR", "single")  # one record: logged without a frame
        c.call("EXEC")
        srv.stop(sig=signal.SIGKILL)
        data = open(os.path.join(d, "shard-0-of-1.aof"), "rb").read()
        assert data.count(b"*1\r\n$5\r\nMULTI\r\n") == 1 and data.count(b"*1\r\n$4\r\nEXEC\r\n") == 1
        srv = aof_server(d)
        c = Conn(srv.port)
        assert c.call("GET", "u") == b"5" and c.call("LRANGE", "ul", "0", "-1") == [b"a", b"b"]
        assert c.call("GET", "single") == b"1"
        code, err = srv.stop()
        assert code == 0, err
    finally:
        shutil.rmtree(d)


def info_field(conn, section, name):
    for line in bytes(conn.call("INFO", section)).split(b"\r\n"):
        if line.startswith(name.encode() + b":"):
            return line.split(b":", 1)[1].decode()
    raise AssertionError(f"no {name} in INFO {section}")


def test_bgrewriteaof_inside_exec_is_scheduled():
    """As Redis: BGREWRITEAOF inside EXEC is scheduled (the unit is never split between
    the old log and the rewrite); the rewrite follows, and a restart has everything."""
    d = tempfile.mkdtemp(prefix="sv-tx-")
    try:
        srv = aof_server(d)
        c = Conn(srv.port)
        c.call("SET", "before", "1")
        c.call("MULTI")
        c.call("SET", "a", "1")
        c.call("BGREWRITEAOF")
        c.call("INCR", "a")
        assert c.call("EXEC") == [Status("OK"), Status("Background append only file rewriting scheduled"), 2]
        # the cron starts it, the child finishes: INFO says so. Decided by INFO, however
        # long a loaded machine takes; the bound only keeps a broken server from hanging.
        limit = time.monotonic() + 300
        while not (info_field(c, "persistence", "aof_rewrites") == "1" and
                   info_field(c, "persistence", "aof_rewrite_in_progress") == "0"):
            if time.monotonic() > limit:
                raise AssertionError("the scheduled rewrite did not happen")
            time.sleep(0.005)
        c.call("SET", "after", "1")
        srv.stop(sig=signal.SIGKILL)
        srv = aof_server(d)
        c = Conn(srv.port)
        assert [c.call("GET", k) for k in ("before", "a", "after")] == [b"1", b"2", b"1"]
        code, err = srv.stop()
        assert code == 0, err
    finally:
        shutil.rmtree(d)


@pytest.mark.parametrize("shards,extra", [(1, []), (4, ["--port-mode", "one-port"])])
def test_torn_exec_replays_all_or_nothing(shards, extra):
    d = tempfile.mkdtemp(prefix="sv-tx-")
    try:
        env = dict(os.environ, SLOTLANE_TEST_TORN_EXEC="2")
        srv = aof_server(d, shards, env, extra)
        c = Conn(srv.port)
        # every key of one shard, so each transaction is one shard's unit (the counter
        # of the fault point is per shard)
        keys = keys_on(shards - 1, shards, "torn", 4) if shards > 1 else ["torn:0", "torn:1", "torn:2", "torn:3"]
        keys, counter = keys[:3], keys[3]
        c.call("MULTI")
        for key in keys:
            c.call("SET", key, "first")
        assert c.call("EXEC") == [Status("OK")] * 3  # unit 1: complete
        c.call("MULTI")
        for key in keys:
            c.call("APPEND", key, "-second")
        c.call("INCR", counter)
        c.send("EXEC")  # unit 2: the shard writes half of it and exits
        with pytest.raises(OSError):  # ConnectionError: closed, no reply
            c.read()
        srv.proc.wait(30)
        assert srv.proc.returncode == 70, srv.stop()
        _, err = srv.stop()
        assert "SLOTLANE_TEST_TORN_EXEC" in err
        srv = aof_server(d, shards, None, extra)
        c = Conn(srv.port)
        assert [c.call("GET", key) for key in keys] == [b"first"] * 3
        assert c.call("EXISTS", counter) == 0
        code, err = srv.stop()
        assert code == 0, err
        assert "torn" in err  # the dropped unit is logged
    finally:
        shutil.rmtree(d)
