"""Keyspace notifications against redis-server 7.0: the same commands on both with
notify-keyspace-events set, every message a pattern subscriber receives compared in
order (1 shard) or as a multiset (4 shards: events of different shards interleave),
plus CONFIG GET/SET of the setting. A sentinel PUBLISH after the commands marks the
end of the messages (it is delivered after everything the commands fired)."""
import pytest

from resp import Conn, Err, Server, keys_per_shard, shard_of

CMDS = [
    ["SET", "{k}s", "v"], ["SET", "{k}s", "w", "EX", "100"], ["SET", "{k}s", "x", "NX"], ["SETNX", "{k}n", "1"],
    ["SETNX", "{k}n", "2"], ["SETEX", "{k}e", "100", "v"], ["PSETEX", "{k}e", "100000", "v"], ["GETSET", "{k}s", "y"],
    ["APPEND", "{k}s", "z"], ["SETRANGE", "{k}s", "1", "ab"], ["INCR", "{k}i"], ["DECRBY", "{k}i", "3"],
    ["INCRBYFLOAT", "{k}i", "1.5"], ["MSET", "{k}m1", "a", "{k}m2", "b"], ["MSETNX", "{k}m1", "a", "{k}m3", "b"],
    ["GETDEL", "{k}m2"], ["GETDEL", "{k}m2"], ["GETEX", "{k}m1", "EX", "100"], ["GETEX", "{k}m1", "PERSIST"],
    ["EXPIRE", "{k}m1", "100"], ["PEXPIRE", "{k}none", "100"], ["PERSIST", "{k}m1"], ["PERSIST", "{k}m1"],
    ["EXPIRE", "{k}m1", "-1"], ["RENAME", "{k}s", "{k}s2"], ["RENAMENX", "{k}s2", "{k}n"], ["DEL", "{k}s2", "{k}x", "{k}n"],
    ["LPUSH", "{k}l", "a", "b", "c"], ["RPUSH", "{k}l", "d"], ["LPUSHX", "{k}nol", "a"], ["RPUSHX", "{k}l", "e"],
    ["LPOP", "{k}l"], ["RPOP", "{k}l", "2"], ["LINSERT", "{k}l", "BEFORE", "a", "x"], ["LINSERT", "{k}l", "BEFORE", "q", "x"],
    ["LSET", "{k}l", "0", "y"], ["LREM", "{k}l", "0", "y"], ["LTRIM", "{k}l", "0", "-1"], ["RPUSH", "{k}l", "p", "q"],
    ["LMOVE", "{k}l", "{k}l2", "LEFT", "RIGHT"], ["RPOPLPUSH", "{k}l", "{k}l2"], ["BLPOP", "{k}l2", "0"],
    ["BRPOP", "{k}l2", "{k}l", "0"], ["BLMOVE", "{k}l", "{k}l3", "RIGHT", "LEFT", "0"],
    ["BLMPOP", "0", "2", "{k}none", "{k}l3", "LEFT", "COUNT", "5"],
    ["HSET", "{k}h", "f", "v", "g", "w"], ["HSETNX", "{k}h", "f", "x"], ["HSETNX", "{k}h", "n", "x"],
    ["HDEL", "{k}h", "f", "nope"], ["HINCRBY", "{k}h", "c", "2"], ["HINCRBYFLOAT", "{k}h", "c", "0.5"],
    ["HDEL", "{k}h", "g", "n", "c"],
    ["SADD", "{k}st", "a", "b", "c"], ["SADD", "{k}st", "a"], ["SREM", "{k}st", "a", "z"], ["SMOVE", "{k}st", "{k}st2", "b"],
    ["SINTERSTORE", "{k}st3", "{k}st", "{k}st2"], ["SUNIONSTORE", "{k}st3", "{k}st", "{k}st2"], ["SPOP", "{k}st3", "5"],
    ["ZADD", "{k}z", "1", "a", "2", "b", "3", "c"], ["ZADD", "{k}z", "NX", "5", "a"], ["ZADD", "{k}z", "INCR", "2", "a"],
    ["ZINCRBY", "{k}z", "1", "b"], ["ZREM", "{k}z", "b", "q"], ["ZPOPMIN", "{k}z"], ["ZADD", "{k}z", "1", "x", "2", "y", "3", "w"],
    ["ZREMRANGEBYSCORE", "{k}z", "0", "1"], ["ZREMRANGEBYRANK", "{k}z", "0", "0"], ["BZPOPMAX", "{k}z", "0"],
    ["ZADD", "{k}z", "1", "x", "2", "y"], ["BZMPOP", "0", "1", "{k}z", "MIN", "COUNT", "1"], ["ZPOPMAX", "{k}z", "3"],
    ["ZADD", "{k}lz", "0", "a", "0", "b"], ["ZREMRANGEBYLEX", "{k}lz", "[a", "[b"],
    ["MULTI"], ["RPUSH", "{k}tx", "a"], ["LPOP", "{k}tx"], ["SET", "{k}txs", "1", "EX", "100"], ["DEL", "{k}txs"],
    ["EXEC"],
    ["SET", "{k}t", "1", "PX", "1"],
]


def collect(conn):
    """Messages until the sentinel."""
    out = []
    while True:
        m = conn.read()
        if m[0] == b"message" and m[1] == b"sentinel":
            return out
        out.append(tuple(m[2:]) if m[0] == b"pmessage" else tuple(m))


def run(ours_port, ref_port, flags):
    res = []
    for port in (ours_port, ref_port):
        ctl = Conn(port)
        assert ctl.call("CONFIG", "SET", "notify-keyspace-events", flags) == "OK"
        sub = Conn(port)
        sub.send("PSUBSCRIBE", "__key*__:*")
        sub.read()
        sub.send("SUBSCRIBE", "sentinel")
        sub.read()
        for c in CMDS:
            ctl.call(*c)
        ctl.call("PUBLISH", "sentinel", "end")
        res.append(collect(sub))
        ctl.call("CONFIG", "SET", "notify-keyspace-events", "")
        ctl.call("FLUSHALL")
    return res


@pytest.mark.parametrize("flags", ["KEA", "Kl", "E$g", "KEAn", "Eh"])
def test_same_events_as_redis_in_order(flags):
    ours, ref = Server(shards=1), Server(redis=True)
    try:
        a, b = run(ours.port, ref.port, flags)
        assert a == b
        if flags == "KEA":
            assert len(a) > 100
    finally:
        ref.stop()
        code, err = ours.stop()
    assert code == 0, err


def test_events_reach_subscribers_of_every_shard():
    """4 shards: the commands run on their key's shard, the subscriber sits on another;
    the same events as Redis's (as a multiset: shards interleave)."""
    ours, ref = Server(shards=4, extra=("--port-mode", "one-port")), Server(redis=True)
    try:
        a, b = run(ours.port, ref.port, "KEA")
        assert sorted(a) == sorted(b) and len(a) > 100
    finally:
        ref.stop()
        code, err = ours.stop()
    assert code == 0, err


def test_config_get_set():
    s, ref = Server(shards=1), Server(redis=True)
    try:
        for v in ["KEA", "An", "Kx", "", "gE", "AKEm", "n", "Kq", "g$lshzxetdKEmn"]:
            ra = Conn(s.port).call("CONFIG", "SET", "notify-keyspace-events", v)
            rb = Conn(ref.port).call("CONFIG", "SET", "notify-keyspace-events", v)
            assert ra == rb
            assert Conn(s.port).call("CONFIG", "GET", "notify-keyspace-events") == \
                Conn(ref.port).call("CONFIG", "GET", "notify-keyspace-events")
    finally:
        ref.stop()
        code, err = s.stop()
    assert code == 0, err
