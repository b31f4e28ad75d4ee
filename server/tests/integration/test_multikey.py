"""Cross-shard multi-key commands in forwarding mode (fwd_multi.c): MSETNX RENAME
RENAMENX LMOVE RPOPLPUSH SMOVE SINTER SUNION SDIFF *STORE SINTERCARD with keys on
different shards, coordinated by the receiving shard.

Checked here: the values every type carries through RENAME (with its TTL), the
error and edge replies (WRONGTYPE without popping, no such key, NX), the set
algebra against a Python model, the internal slotlane.take/restore (hidden from
COMMAND, malformed argv rejected), reply and execution order at pipeline depths
1..256 with local, forwarded and coordinated commands mixed, a client that
disconnects mid-command (the command still completes), and backpressure: a tiny
--forward-queue under a heavy pipelined load from several clients on one port (the
INFO counter rises, every reply is right, nothing hangs). The differential stream
with these commands across shards is test_differential.py (test_one_port,
test_four_shards_forward_one_port)."""
import random
import socket
import subprocess
import threading
import time

import pytest
import redis

import resp
from resp import Conn, Err, Server, Status, encode

SHARDS = 4


def owner(key):
    return resp.shard_of(key, SHARDS)


def keys_per_shard(prefix, per_shard):
    return resp.keys_per_shard(prefix, per_shard, SHARDS)


def on(shard, prefix, n=1):
    return [k for k in keys_per_shard(prefix, n) if owner(k) == shard]


@pytest.fixture(scope="module")
def server():
    s = Server(shards=SHARDS, extra=["--misrouted", "forward"])
    yield s
    code, err = s.stop()
    assert code == 0, err


def dump(c, key):
    """The type, content and TTL presence of a key, through any port."""
    t = c.call("TYPE", key)
    content = {
        "string": lambda: c.call("GET", key),
        "list": lambda: c.call("LRANGE", key, "0", "-1"),
        "hash": lambda: sorted(zip(*[iter(c.call("HGETALL", key))] * 2)),
        "set": lambda: sorted(c.call("SMEMBERS", key)),
        "zset": lambda: c.call("ZRANGE", key, "0", "-1", "WITHSCORES"),
        "none": lambda: None,
    }[str(t)]()
    return str(t), content


@pytest.mark.parametrize("via", ["third", "src", "dst"])
def test_rename_every_type(server, via):
    """RENAME between shards moves every type whole, with its TTL, through a port of
    a third shard, of the source's or of the destination's owner."""
    src, dst = on(1, f"rs{via}")[0], on(2, f"rd{via}")[0]
    port = server.port + {"third": 0, "src": 1, "dst": 2}[via]
    c = Conn(port)
    builders = [
        ["SET", src, "\x00bin\xffvalue"],
        ["RPUSH", src, "a", "", "b", "a"],
        ["HSET", src, "f1", "v1", "f2", "", "", "empty-field"],
        ["SADD", src, "m1", "m2", "", "3"],
        ["ZADD", src, "0.1", "a", "-0", "b", "1e-300", "c", "inf", "d", "-inf", "e", "0.3333333333333333", "f"],
    ]
    for build in builders:
        c.call("DEL", src, dst)
        assert not isinstance(c.call(*build), Err)
        before = dump(c, src)
        assert c.call("PEXPIRE", src, "100000") == 1
        c.call("SET", dst, "to be replaced")
        assert c.call("RENAME", src, dst) == "OK"
        assert dump(c, dst) == before, build[0]
        assert c.call("EXISTS", src) == 0
        assert 90000 < c.call("PTTL", dst) <= 100000
        # RENAMENX onto an existing key: 0, nothing moves; back to the free name: 1
        c.call("SET", src, "other")
        assert c.call("RENAMENX", dst, src) == 0
        assert dump(c, dst) == before and c.call("GET", src) == b"other"
        c.call("DEL", src)
        assert c.call("RENAMENX", dst, src) == 1
        assert dump(c, src) == before and c.call("EXISTS", dst) == 0
        assert c.call("PTTL", src) > 0
        assert c.call("PERSIST", src) == 1
        assert c.call("RENAME", src, dst) == "OK" and c.call("PTTL", dst) == -1
    c.call("DEL", src, dst)
    assert c.call("RENAME", src, dst) == Err("ERR no such key")
    assert c.call("RENAMENX", src, dst) == Err("ERR no such key")
    c.close()


def test_lmove_and_smove(server):
    a, b = on(1, "lm")[0], on(3, "lm")[0]
    c = Conn(server.port)
    c.call("DEL", a, b)
    assert c.call("LMOVE", a, b, "LEFT", "RIGHT") is None  # missing source
    assert c.call("RPUSH", a, "1", "2", "3") == 3
    assert c.call("LMOVE", a, b, "LEFT", "RIGHT") == b"1"
    assert c.call("LMOVE", a, b, "RIGHT", "LEFT") == b"3"
    assert c.call("RPOPLPUSH", a, b) == b"2"
    assert c.call("EXISTS", a) == 0  # emptied: deleted
    assert c.call("LRANGE", b, "0", "-1") == [b"2", b"3", b"1"]
    assert c.call("LMOVE", b, a, "UP", "LEFT") == Err("ERR syntax error")
    # destination of another type: WRONGTYPE and nothing popped
    c.call("SET", a, "str")
    assert c.call("LMOVE", b, a, "LEFT", "LEFT").startswith("WRONGTYPE")
    assert c.call("RPOPLPUSH", b, a).startswith("WRONGTYPE")
    assert c.call("LRANGE", b, "0", "-1") == [b"2", b"3", b"1"]
    assert c.call("LMOVE", a, b, "LEFT", "LEFT").startswith("WRONGTYPE")  # source of another type
    # SMOVE
    s, t = on(2, "sm")[0], on(0, "sm")[0]
    c.call("DEL", s, t)
    assert c.call("SMOVE", s, t, "m") == 0
    c.call("SET", t, "str")
    assert c.call("SMOVE", s, t, "m") == 0  # a missing source answers 0 before any type check
    c.call("SADD", s, "m", "n")
    assert c.call("SMOVE", s, t, "m").startswith("WRONGTYPE")
    assert sorted(c.call("SMEMBERS", s)) == [b"m", b"n"]
    c.call("DEL", t)
    assert c.call("SMOVE", s, t, "x") == 0
    assert c.call("SMOVE", s, t, "m") == 1
    assert c.call("SMOVE", s, t, "n") == 1
    assert c.call("EXISTS", s) == 0 and sorted(c.call("SMEMBERS", t)) == [b"m", b"n"]
    c.call("SET", s, "str")
    assert c.call("SMOVE", s, t, "m").startswith("WRONGTYPE")
    c.close()


def test_set_operations_model(server):
    """SINTER SUNION SDIFF, their STORE forms and SINTERCARD over keys of every shard
    (some missing) against Python's set algebra."""
    keys = keys_per_shard("so", 2)  # 8 keys, 2 per shard
    rng = random.Random(7)
    c = Conn(server.port + 1)
    for it in range(150):
        model = {}
        c.call("DEL", *keys)
        for k in keys:
            if rng.random() < 0.8:
                ms = {str(rng.randrange(12)) for _ in range(rng.randrange(1, 8))}
                model[k] = ms
                c.call("SADD", k, *ms)
        srcs = rng.sample(keys, rng.randrange(2, 5))

        def expect(cmd):
            sets = [model.get(k, set()) for k in srcs]
            return {"SINTER": set.intersection, "SUNION": set.union,
                    "SDIFF": lambda a, *r: a.difference(*r)}[cmd](*sets)

        for cmd in ("SINTER", "SUNION", "SDIFF"):
            want = expect(cmd)
            got = c.call(cmd, *srcs)
            assert sorted(got) == sorted(x.encode() for x in want), (cmd, srcs)
            assert len(set(got)) == len(got)
            dst = rng.choice(keys)
            assert c.call(cmd + "STORE", dst, *srcs) == len(want)
            if want:
                assert sorted(c.call("SMEMBERS", dst)) == sorted(x.encode() for x in want)
                assert c.call("TTL", dst) == -1
            else:
                assert c.call("EXISTS", dst) == 0
            c.call("DEL", dst)  # and the model follows
            model.pop(dst, None)
        inter = expect("SINTER")
        assert c.call("SINTERCARD", len(srcs), *srcs) == len(inter)
        assert c.call("SINTERCARD", len(srcs), *srcs, "LIMIT", "1") == min(1, len(inter))
        assert c.call("SINTERCARD", len(srcs), *srcs, "LIMIT", "0") == len(inter)
    a, b = keys[0], keys[1]
    assert owner(a) != owner(b)
    assert c.call("SINTERCARD", "2", a, b, "LIMIT", "-1") == Err("ERR LIMIT can't be negative")
    assert c.call("SINTERCARD", "2", a, b, "BAD") == Err("ERR syntax error")
    c.call("DEL", *keys)
    c.call("SET", b, "str")
    c.call("SADD", a, "x")
    for argv in (["SINTER", a, b], ["SUNION", a, b], ["SDIFF", a, b], ["SINTERSTORE", keys[2], a, b],
                 ["SINTERCARD", "2", a, b]):
        assert c.call(*argv).startswith("WRONGTYPE"), argv
    # a missing key before the wrong-typed one: still WRONGTYPE (Redis checks every key)
    c.call("DEL", keys[3])
    assert c.call("SINTER", keys[3], b).startswith("WRONGTYPE")
    # the store replaces a destination of another type
    c.call("SET", keys[2], "str")
    assert c.call("SUNIONSTORE", keys[2], a, keys[3]) == 1
    assert c.call("TYPE", keys[2]) == "set"
    c.close()


def test_move_races_lose_nothing(server):
    """LMOVE and SMOVE while another client keeps turning the destination into a
    string and deleting it: an element is either moved (reply: the element / 1) or
    still in the source (WRONGTYPE, pushed back when the type changed between the
    steps) - never lost, never doubled."""
    src, dst = on(1, "race-s")[0], on(2, "race-d")[0]
    ssrc, sdst = on(3, "race-ss")[0], on(1, "race-sd")[0]
    n = 300
    c = Conn(server.port)
    c.call("DEL", src, dst, ssrc, sdst)
    c.call("RPUSH", src, *[f"e{i}" for i in range(n)])
    c.call("SADD", ssrc, *[f"e{i}" for i in range(n)])
    stop = threading.Event()

    def spoiler():
        x = Conn(server.port + 3)
        # a batch runs in one go on the owner: it ends with the string in place
        batch = b"".join(encode(["DEL", k]) + encode(["SET", k, "x"]) for k in (dst, sdst)) * 8
        while not stop.is_set():
            x.send_raw(batch)
            for _ in range(32):
                x.read()
        x.close()

    t = threading.Thread(target=spoiler)
    t.start()
    moved, smoved, wrong = [], [], 0
    try:
        for i in range(n):
            r = c.call("LMOVE", src, dst, "LEFT", "RIGHT")
            if isinstance(r, bytes):
                moved.append(r)
            else:
                assert r.startswith("WRONGTYPE"), r
                wrong += 1
            r = c.call("SMOVE", ssrc, sdst, f"e{i}")
            if r == 1:
                smoved.append(f"e{i}".encode())
            else:
                assert isinstance(r, str) and r.startswith("WRONGTYPE"), r
    finally:
        stop.set()
        t.join(timeout=30)
    left = c.call("LRANGE", src, "0", "-1")
    assert sorted(left + moved) == sorted(f"e{i}".encode() for i in range(n)), (len(left), len(moved))
    sleft = c.call("SMEMBERS", ssrc)
    assert sorted(sleft + smoved) == sorted(f"e{i}".encode() for i in range(n))
    assert wrong > 0  # the destination was a string some of the time
    c.close()


def test_msetnx(server):
    keys = keys_per_shard("mx", 2)
    c = Conn(server.port)
    c.call("DEL", *keys)
    args = sum([[k, f"v{k}"] for k in keys], [])
    assert c.call("MSETNX", *args) == 1
    assert c.call("MGET", *keys) == [f"v{k}".encode() for k in keys]
    c.call("DEL", *keys[:-1])
    assert c.call("MSETNX", *sum([[k, "new"] for k in keys], [])) == 0  # the last one exists
    assert c.call("EXISTS", *keys) == 1
    assert c.call("MSETNX", keys[0], "x", keys[1]) == Err("ERR wrong number of arguments for 'msetnx' command")
    c.close()


def test_internal_commands(server):
    c = Conn(server.port)
    names = c.call("COMMAND", "LIST")
    assert not [n for n in names if n.startswith(b"slotlane")]
    assert c.call("COMMAND", "COUNT") == len(names)
    assert c.call("COMMAND", "INFO", "slotlane.take", "get")[0] is None
    assert c.call("COMMAND", "GETKEYS", "slotlane.take", "k") == Err("ERR Invalid command specified")
    k = on(3, "int")[0]
    bad = [
        (["slotlane.restore", k, "nosuchtype", "0", "x"], "ERR slotlane.restore: unknown type"),
        (["slotlane.restore", k, "string", "-1", "x"], "ERR slotlane.restore: invalid expire time"),
        (["slotlane.restore", k, "string", "soon", "x"], "ERR slotlane.restore: invalid expire time"),
        (["slotlane.restore", k, "string", "0", "x", "y"], "ERR slotlane.restore: wrong number of elements for the type"),
        (["slotlane.restore", k, "hash", "0", "f"], "ERR slotlane.restore: wrong number of elements for the type"),
        (["slotlane.restore", k, "zset", "0", "1", "m", "2"], "ERR slotlane.restore: wrong number of elements for the type"),
        (["slotlane.restore", k, "zset", "0", "nan", "m"], "ERR value is not a valid float"),
        (["slotlane.restore", k, "zset", "0", "x", "m"], "ERR value is not a valid float"),
        (["slotlane.restore", k, "set"], "ERR wrong number of arguments for 'slotlane.restore' command"),
        (["slotlane.take"], "ERR wrong number of arguments for 'slotlane.take' command"),
        (["slotlane.take", k, "extra"], "ERR wrong number of arguments for 'slotlane.take' command"),
    ]
    c.call("SET", k, "keep")
    for argv, err in bad:
        assert c.call(*argv) == Err(err), argv
    assert c.call("GET", k) == b"keep"  # a rejected restore changes nothing
    # a client may use them: take returns the value and deletes it; restore rebuilds it
    pxat = int(time.time() * 1000) + 100000
    assert c.call("slotlane.restore", k, "zset", str(pxat), "1.5", "m", "-2", "n") == "OK"
    assert c.call("ZRANGE", k, "0", "-1", "WITHSCORES") == [b"n", b"-2", b"m", b"1.5"]
    assert c.call("PEXPIRETIME", k) == pxat
    assert c.call("slotlane.take", k) == [b"zset", str(pxat).encode(), b"-2", b"n", b"1.5", b"m"]
    assert c.call("EXISTS", k) == 0 and c.call("slotlane.take", k) is None
    # an expiry already past: the key ends up absent; no element: deleted
    assert c.call("slotlane.restore", k, "string", "1", "v") == "OK" and c.call("EXISTS", k) == 0
    c.call("SET", k, "v")
    assert c.call("slotlane.restore", k, "list", "0") == "OK" and c.call("EXISTS", k) == 0
    c.close()


class Model:
    """The expected replies of the ordering test's commands (RESP2, Conn's types)."""

    def __init__(self, prefix, rng):
        self.rng = rng
        self.ctr = keys_per_shard(f"{prefix}c", 2)
        self.lists = keys_per_shard(f"{prefix}l", 1)
        self.sets = keys_per_shard(f"{prefix}s", 1)
        self.names = keys_per_shard(f"{prefix}n", 1)
        self.v = {}

    def all_keys(self):
        return self.ctr + self.lists + self.sets + self.names

    def next(self):
        rng, v = self.rng, self.v
        c = rng.random()
        if c < 0.35:
            k = rng.choice(self.ctr)
            v[k] = v.get(k, 0) + 1
            return ["INCR", k], v[k]
        if c < 0.45:
            k = rng.choice(self.ctr)
            return ["GET", k], (str(v[k]).encode() if k in v else None)
        if c < 0.52:
            ks = rng.sample(self.ctr, 3)
            return ["MGET", *ks], [str(v[k]).encode() if k in v else None for k in ks]
        if c < 0.58:
            k = rng.choice(self.lists)
            x = str(rng.randrange(100))
            v.setdefault(k, []).append(x)
            return ["RPUSH", k, x], len(v[k])
        if c < 0.66:
            a, b = rng.sample(self.lists, 2)
            if not v.get(a):
                return ["LMOVE", a, b, "LEFT", "RIGHT"], None
            x = v[a].pop(0)
            if not v[a]:
                del v[a]
            v.setdefault(b, []).append(x)
            return ["LMOVE", a, b, "LEFT", "RIGHT"], x.encode()
        if c < 0.69:
            k = rng.choice(self.lists)
            return ["LRANGE", k, "0", "-1"], [x.encode() for x in v.get(k, [])]
        if c < 0.74:
            k = rng.choice(self.sets)
            m = str(rng.randrange(6))
            s = v.setdefault(k, set())
            added = m not in s
            s.add(m)
            return ["SADD", k, m], int(added)
        if c < 0.79:
            a, b = rng.sample(self.sets, 2)
            m = str(rng.randrange(6))
            if m not in v.get(a, set()):
                return ["SMOVE", a, b, m], 0
            v[a].discard(m)
            if not v[a]:
                del v[a]
            v.setdefault(b, set()).add(m)
            return ["SMOVE", a, b, m], 1
        if c < 0.84:
            d, a, b = rng.sample(self.sets, 3)
            u = v.get(a, set()) | v.get(b, set())
            if u:
                v[d] = set(u)
            else:
                v.pop(d, None)
            return ["SUNIONSTORE", d, a, b], len(u)
        if c < 0.88:
            a, b = rng.sample(self.sets, 2)
            return ["SINTER", a, b], ("sorted", sorted(x.encode() for x in v.get(a, set()) & v.get(b, set())))
        if c < 0.91:
            a, b = rng.sample(self.names, 2)
            if a not in v:
                return ["RENAME", a, b], Err("ERR no such key")
            v[b] = v.pop(a)
            return ["RENAME", a, b], Status("OK")
        if c < 0.95:  # a split read of keys coordinated commands write
            ks = rng.sample(self.names, 3)
            return ["EXISTS", *ks], sum(k in v for k in ks)
        a, b = rng.sample(self.names, 2)
        if a in v or b in v:
            return ["MSETNX", a, "x", b, "y"], 0
        v[a], v[b] = "x", "y"
        return ["MSETNX", a, "x", b, "y"], 1


def check_batch(conn, batch):
    conn.send_raw(b"".join(encode(argv) for argv, _ in batch))
    for argv, want in batch:
        got = conn.read()
        if isinstance(want, tuple):
            got = sorted(got)
            want = want[1]
        assert got == want and type(got) == type(want), (argv, got, want)


@pytest.mark.parametrize("depth", [1, 2, 3, 7, 16, 64, 256])
def test_pipeline_order_multikey(server, depth):
    """Local, forwarded and coordinated cross-shard commands mixed in pipelines: every
    reply in order and right, and each command sees the effects of the ones before
    it (a RENAME's destination read right after it, an LMOVE after an RPUSH)."""
    rng = random.Random(1000 + depth)
    m = Model(f"po{depth}", rng)
    c = Conn(server.port)
    c.call("DEL", *m.all_keys())
    for _ in range(max(2, 768 // depth)):
        check_batch(c, [m.next() for _ in range(depth)])
    c.close()


def test_client_gone_mid_command(server):
    """A client that disconnects right after sending cross-shard commands: each
    still completes (a RENAME's value is not lost between take and restore)."""
    srcs = keys_per_shard("gone-s", 10)
    dsts = keys_per_shard("gone-d", 10)
    c = Conn(server.port)
    for s in srcs:
        c.call("RPUSH", s, "a", "b")
    for i, (s, d) in enumerate(zip(srcs, dsts[1:] + dsts[:1])):
        x = socket.create_connection(("127.0.0.1", server.port + i % SHARDS), timeout=5)
        x.sendall(encode(["RENAME", s, d]))
        x.close()
    deadline = time.time() + 10
    while time.time() < deadline and c.call("EXISTS", *dsts) < len(dsts):
        time.sleep(0.05)
    assert c.call("EXISTS", *dsts) == len(dsts) and c.call("EXISTS", *srcs) == 0
    for d in dsts:
        assert c.call("LRANGE", d, "0", "-1") == [b"a", b"b"]
    c.close()


def test_backpressure_tiny_queue():
    """One port, 4 shards, --forward-queue 2 (two requests in flight per pair of
    shards): 8 clients with pipelines of 200 mixed commands (local, forwarded, split,
    coordinated) at once. The queue fills (INFO forward_queue_full > 0), every reply
    is right and in order, the final state matches, and nothing hangs (socket
    timeouts and a deadline)."""
    s = Server(shards=SHARDS, extra=["--port-mode", "one-port", "--forward-queue", "2"])
    errors = []

    def client(i):
        try:
            rng = random.Random(500 + i)
            m = Model(f"bp{i}", rng)
            c = Conn(s.port, timeout=20)
            for _ in range(12):
                check_batch(c, [m.next() for _ in range(200)])
            for k in m.ctr:  # nothing lost
                want = m.v.get(k)
                assert c.call("GET", k) == (str(want).encode() if want is not None else None), k
            for k in m.lists:
                assert c.call("LRANGE", k, "0", "-1") == [x.encode() for x in m.v.get(k, [])], k
            c.close()
        except Exception as e:  # reported by the main thread
            errors.append(f"client {i}: {e!r}")

    try:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a client hung (deadlock?)"
        assert not errors, errors
        full = redis.Redis(port=s.port).info("stats")["forward_queue_full"]
        print(f"\nforward_queue_full={full}")
        assert full > 0
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_forward_queue_flag():
    for bad in ("0", "-1", "x", "1048577"):
        r = subprocess.run([resp.SERVER, "--forward-queue", bad], capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and "forward-queue" in r.stderr, (bad, r.stderr)
    out = subprocess.run([resp.SERVER, "--help"], capture_output=True, text=True, timeout=10).stdout
    assert "--forward-queue" in out
