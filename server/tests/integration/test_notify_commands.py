"""Keyspace notifications of every command family against redis-server 7.0, compared
per step: `notify-keyspace-events KEAm` (every class and key misses) on both servers, a
pattern subscriber on `__key*__:*`, and after each step a sentinel write (`SET
{k}~end n`) on the step's own shard, whose keyevent message closes the step: what
arrives before it is what the step fired, in order. At 1 shard, at 4 shards in
per-shard mode (the commands sent to the keys' shard, the subscriber on another
shard's port) and in one-port mode (the kernel picks the shards).

The cross-shard steps (RENAME, LMOVE, SMOVE with keys on different shards in one-port
mode) fire on two shards, whose messages may interleave in either order: those are
compared as multisets, after a sentinel on each shard involved."""
import pytest

from resp import Conn, Server, keys_per_shard, shard_of

# A step is one command or a list of commands whose events are compared together.
STEPS = [
    # bitmaps
    ["SETBIT", "{k}b", "7", "1"], ["SETBIT", "{k}b", "100", "0"], ["GETBIT", "{k}nob", "0"],
    ["BITCOUNT", "{k}nob"], ["BITPOS", "{k}nob", "1"],
    ["BITFIELD", "{k}bf", "SET", "u8", "0", "255", "GET", "u8", "0"], ["BITFIELD", "{k}bf", "GET", "u8", "0"],
    ["BITFIELD", "{k}bf", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "10"], ["BITFIELD", "{k}bf", "INCRBY", "u8", "0", "0"],
    ["BITFIELD", "{k}nobf", "GET", "u8", "0"], ["BITFIELD_RO", "{k}nobf", "GET", "u8", "0"],
    ["BITOP", "AND", "{k}bo", "{k}b", "{k}bf"], ["BITOP", "NOT", "{k}bo2", "{k}b"],
    ["BITOP", "OR", "{k}bo", "{k}nob1", "{k}nob2"], ["BITOP", "OR", "{k}bo3", "{k}nob1"],
    # HyperLogLog
    ["PFADD", "{k}h1", "a", "b", "c"], ["PFADD", "{k}h1", "a"], ["PFADD", "{k}h2"], ["PFADD", "{k}h2"],
    ["PFMERGE", "{k}h3", "{k}h1", "{k}h2"], ["PFMERGE", "{k}h3"], ["PFCOUNT", "{k}h1", "{k}noh"],
    ["PFCOUNT", "{k}noh"],
    # geo
    ["GEOADD", "{k}g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"],
    ["GEOADD", "{k}g", "NX", "13.361389", "38.115556", "Palermo"], ["GEOADD", "{k}g", "XX", "CH", "13.4", "38.1", "Palermo"],
    ["GEOSEARCHSTORE", "{k}gs", "{k}g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"],
    ["GEOSEARCHSTORE", "{k}gs", "{k}g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST"],
    ["GEOSEARCHSTORE", "{k}gs", "{k}g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "{k}gs", "{k}nog", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
    ["GEORADIUS", "{k}g", "15", "37", "200", "km", "STORE", "{k}gr"],
    ["GEORADIUS", "{k}g", "15", "37", "200", "km", "STOREDIST", "{k}gr2"],
    ["GEORADIUSBYMEMBER", "{k}g", "Palermo", "300", "km", "STORE", "{k}gr3"],
    ["GEORADIUS", "{k}g", "0", "0", "1", "km", "STORE", "{k}gr"], ["GEORADIUS", "{k}nog", "0", "0", "1", "km", "STORE", "{k}gr2"],
    ["GEOPOS", "{k}nog", "a"], ["GEODIST", "{k}nog", "a", "b"], ["GEOSEARCH", "{k}nog", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
    # SORT
    ["RPUSH", "{k}sl", "3", "1", "2"], ["SORT", "{k}sl", "STORE", "{k}sd"], ["SORT", "{k}sl"],
    ["SORT", "{k}nol", "STORE", "{k}sd"], ["SORT", "{k}nol", "STORE", "{k}sd"], ["SORT_RO", "{k}nol"],
    # COPY
    ["COPY", "{k}sl", "{k}cp"], ["COPY", "{k}sl", "{k}cp"], ["COPY", "{k}sl", "{k}cp", "REPLACE"], ["COPY", "{k}nocp", "{k}cp2"],
    # LMPOP / ZMPOP
    ["RPUSH", "{k}lm", "a", "b", "c"], ["LMPOP", "2", "{k}nol", "{k}lm", "LEFT", "COUNT", "2"],
    ["LMPOP", "1", "{k}lm", "RIGHT", "COUNT", "5"], ["LMPOP", "1", "{k}nol", "LEFT"],
    ["ZADD", "{k}zm", "1", "a", "2", "b", "3", "c"], ["ZMPOP", "1", "{k}zm", "MIN", "COUNT", "2"],
    ["ZMPOP", "2", "{k}noz", "{k}zm", "MAX"], ["ZMPOP", "1", "{k}zm", "MAX"],
    # sorted-set stores
    ["ZADD", "{k}za", "1", "a", "2", "b"], ["ZADD", "{k}zb", "2", "b", "3", "c"],
    ["ZUNIONSTORE", "{k}zu", "2", "{k}za", "{k}zb"], ["ZINTERSTORE", "{k}zi", "2", "{k}za", "{k}zb", "WEIGHTS", "1", "2"],
    ["ZDIFFSTORE", "{k}zd", "2", "{k}za", "{k}zb"], ["ZINTERSTORE", "{k}zu", "2", "{k}za", "{k}noz"],
    ["ZINTERSTORE", "{k}zu", "2", "{k}za", "{k}noz"], ["ZRANGESTORE", "{k}zr", "{k}za", "0", "-1"],
    ["ZRANGESTORE", "{k}zr", "{k}za", "5", "10"], ["ZRANGESTORE", "{k}zr", "{k}za", "5", "10"],
    ["ZDIFFSTORE", "{k}zd", "1", "{k}noz"], ["ZUNION", "2", "{k}noz", "{k}za"], ["ZSCORE", "{k}noz", "a"],
    ["ZRANGE", "{k}noz", "0", "-1"], ["ZCARD", "{k}noz"], ["ZRANK", "{k}noz", "a"],
    # set stores
    ["SADD", "{k}sa", "a", "b"], ["SADD", "{k}sb", "c"], ["SINTERSTORE", "{k}si", "{k}sa", "{k}sb"],
    ["SUNIONSTORE", "{k}si", "{k}sa", "{k}sb"], ["SINTERSTORE", "{k}si", "{k}sa", "{k}sb"],
    ["SDIFFSTORE", "{k}si", "{k}sa", "{k}sb"], ["SDIFFSTORE", "{k}si", "{k}nos", "{k}sa"],
    ["SUNIONSTORE", "{k}si", "{k}sa"], ["SINTERSTORE", "{k}si", "{k}sa", "{k}nos"],
    ["SMEMBERS", "{k}nos"], ["SISMEMBER", "{k}nos", "a"], ["SCARD", "{k}nos"], ["SINTER", "{k}nos", "{k}sa"],
    ["SMOVE", "{k}sa", "{k}sm", "a"], ["SMOVE", "{k}sa", "{k}sm", "b"], ["SMOVE", "{k}sa", "{k}sm", "b"],
    # strings and keys: reads of missing keys, and the writes test_notify.py does not cover
    ["GET", "{k}nokey"], ["MGET", "{k}nokey", "{k}b"], ["STRLEN", "{k}nokey"], ["GETRANGE", "{k}nokey", "0", "1"],
    ["EXISTS", "{k}nokey"], ["TYPE", "{k}nokey"], ["TTL", "{k}nokey"], ["PTTL", "{k}nokey"],
    ["EXPIRETIME", "{k}nokey"], ["OBJECT", "ENCODING", "{k}nokey"], ["LCS", "{k}nokey", "{k}b"],
    ["SET", "{k}x", "1", "KEEPTTL"], ["SET", "{k}x", "2", "GET"], ["SET", "{k}x", "3", "XX", "GET"],
    ["SET", "{k}nox", "3", "XX"], ["SET", "{k}nox", "3", "GET"], ["GETDEL", "{k}nokey"], ["GETEX", "{k}x"], ["GETEX", "{k}x", "PX", "100000"], ["GETEX", "{k}nokey", "PX", "10"],
    ["INCRBY", "{k}x", "5"], ["DECR", "{k}x"], ["GETDEL", "{k}x"], ["GETSET", "{k}gs1", "v"],
    ["RENAME", "{k}gs1", "{k}gs2"], ["RENAME", "{k}gs2", "{k}gs2"], ["RENAMENX", "{k}gs2", "{k}b"],
    ["EXPIRE", "{k}gs2", "100", "NX"], ["EXPIRE", "{k}gs2", "100", "NX"], ["PEXPIREAT", "{k}gs2", "1"],
    ["TOUCH", "{k}nokey", "{k}b"], ["UNLINK", "{k}b", "{k}nokey"],
    # hashes and lists: reads of missing keys
    ["HGET", "{k}noh", "f"], ["HGETALL", "{k}noh"], ["HLEN", "{k}noh"], ["HEXISTS", "{k}noh", "f"],
    ["HMGET", "{k}noh", "f"], ["HRANDFIELD", "{k}noh"], ["HSTRLEN", "{k}noh", "f"],
    ["HSET", "{k}hh", "f", "1"], ["HGET", "{k}hh", "nof"], ["HINCRBYFLOAT", "{k}hh", "f", "1.5"],
    ["LRANGE", "{k}nol", "0", "-1"], ["LLEN", "{k}nol"], ["LINDEX", "{k}nol", "0"], ["LPOS", "{k}nol", "a"],
    ["RPUSH", "{k}ll", "a", "b"], ["LMOVE", "{k}ll", "{k}ll", "LEFT", "RIGHT"], ["LMOVE", "{k}ll", "{k}ll2", "RIGHT", "RIGHT"],
    ["LMOVE", "{k}ll", "{k}ll2", "LEFT", "LEFT"], ["LMOVE", "{k}ll", "{k}ll2", "LEFT", "LEFT"], ["RPOPLPUSH", "{k}ll2", "{k}ll2"],
    ["LPOP", "{k}nol"], ["RPOP", "{k}nol", "2"], ["LTRIM", "{k}ll2", "5", "10"],
    # streams
    ["XADD", "{k}xs", "1-1", "f", "v"], ["XADD", "{k}xs", "2-1", "f", "v"],
    ["XGROUP", "CREATE", "{k}xs", "g", "0"], ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "{k}xs", ">"],
    ["XCLAIM", "{k}xs", "g", "c2", "0", "1-1"], ["XAUTOCLAIM", "{k}xs", "g", "c3", "0", "0"],
    ["XACK", "{k}xs", "g", "1-1"], ["XDEL", "{k}xs", "2-1"], ["XSETID", "{k}xs", "5-0"],
    ["XRANGE", "{k}nox", "-", "+"], ["XLEN", "{k}nox"], ["XINFO", "STREAM", "{k}nox"],
    ["XREAD", "STREAMS", "{k}nox", "0"], ["XPENDING", "{k}nox", "g"],
    # a missing key: XREAD looks it up twice (two "keymiss"), XREADGROUP once before NOGROUP
    ["XREAD", "STREAMS", "{k}nox", "{k}nox2", "0", "0"], ["XREAD", "COUNT", "1", "BLOCK", "1", "STREAMS", "{k}nox", "$"],
    ["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{k}nox", ">"],
    ["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{k}xs", "{k}nox", ">", ">"],
    ["XTRIM", "{k}xs", "MAXLEN", "0"], ["XGROUP", "DESTROY", "{k}xs", "g"],
    # an expiry seen by a read: the BLPOP's timeout is the server's own clock passing
    [["SET", "{k}ex", "v", "PX", "1"], ["BLPOP", "{k}never", "0.05"], ["GET", "{k}ex"]],
    # inside a transaction: published after EXEC, in order
    [["MULTI"], ["SETBIT", "{k}tb", "1", "1"], ["GET", "{k}notx"], ["PFADD", "{k}th", "a"], ["EXEC"]],
]

FLAGS = "KEAm"
END = "{k}~end"


def read_step(sub, end_keys):
    """The messages until the keyevent sentinel of every key in end_keys."""
    out, waiting = [], set(end_keys)
    while waiting:
        m = sub.read()
        assert m[0] == b"pmessage", m
        ch, data = m[2], m[3]
        if ch == b"__keyevent@0__:set" and data.decode() in waiting:
            waiting.discard(data.decode())
            continue
        if ch.startswith(b"__keyspace@0__:") and ch[15:].decode() in end_keys:
            continue
        out.append((ch, data))
    return out


def run(ctl_port, sub_port, steps, end_keys=(END,), flags=FLAGS):
    ctl = Conn(ctl_port)
    assert ctl.call("CONFIG", "SET", "notify-keyspace-events", flags) == "OK"
    sub = Conn(sub_port)
    sub.send("PSUBSCRIBE", "__key*__:*")
    assert sub.read()[0] == b"psubscribe"
    res = []
    for i, step in enumerate(steps):
        cmds = step if isinstance(step[0], list) else [step]
        for c in cmds:
            ctl.call(*c)
        for k in end_keys:
            ctl.call("SET", k, str(i))
        res.append(read_step(sub, end_keys))
    ctl.call("CONFIG", "SET", "notify-keyspace-events", "")
    return res


def redis_events(steps, end_keys=(END,), flags=FLAGS):
    ref = Server(redis=True)
    try:
        return run(ref.port, ref.port, steps, end_keys, flags)
    finally:
        ref.stop()


def diff(steps, ours, theirs, ordered=True):
    bad = []
    for step, a, b in zip(steps, ours, theirs):
        if (a != b) if ordered else (sorted(a) != sorted(b)):
            bad.append(f"{step}:\n  slotlane {a}\n  redis    {b}")
    return bad


@pytest.fixture(scope="module")
def reference():
    return redis_events(STEPS)


@pytest.mark.parametrize("mode", ["1 shard", "4 shards per-shard", "4 shards one-port"])
def test_every_command_fires_what_redis_fires(reference, mode):
    if mode == "1 shard":
        s = Server(shards=1)
        ctl_port = sub_port = s.port
    elif mode == "4 shards per-shard":
        s = Server(shards=4)
        ctl_port = s.port + shard_of("{k}", 4)
        sub_port = s.port + (shard_of("{k}", 4) + 1) % 4
    else:
        s = Server(shards=4, extra=("--port-mode", "one-port"))
        ctl_port = sub_port = s.port
    try:
        ours = run(ctl_port, sub_port, STEPS)
        bad = diff(STEPS, ours, reference)
        assert not bad, f"{len(bad)} steps differ:\n" + "\n".join(bad)
        assert sum(len(e) for e in reference) > 250  # the stream fires plenty: the test is not empty
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_cross_shard_steps_fire_what_redis_fires():
    """One-port mode, keys on different shards: RENAME (rename_from on the source's
    shard, rename_to on the destination's), RENAMENX, LMOVE, RPOPLPUSH, SMOVE, MSET;
    each step's messages compared with Redis's as a multiset (two shards publish
    them), with a sentinel on every shard; and the gathered ones (ZUNIONSTORE
    ZINTERSTORE SUNIONSTORE LMPOP COPY BITOP PFMERGE with keys on several shards).
    Under KEAm: the probes of the coordinated ones (slotlane.exists, slotlane.type)
    fire no "keymiss", as Redis's single command reads nothing."""
    a, b, c, _ = keys_per_shard("x", 1, 4)  # on shards 0, 1, 2
    g0, g1, g2, g3 = keys_per_shard("g", 1, 4)  # the gathered commands' keys, one per shard
    ends = keys_per_shard("~end", 1, 4)
    steps = [
        ["SET", a, "v", "PX", "100000"], ["RENAME", a, b], ["RENAME", b, b], ["RENAME", a, c],
        ["SET", c, "old"], ["RENAME", b, c], ["RENAMENX", c, a], ["RENAMENX", a, a + "x"],
        ["RPUSH", a, "1", "2"], ["LMOVE", a, b, "LEFT", "RIGHT"], ["RPOPLPUSH", a, c],
        ["SADD", b + "s", "m"], ["SMOVE", b + "s", c + "s", "m"], ["MSET", a, "1", b, "2"], ["DEL", a, b, c],
        # gathered (the command runs on copies at the receiving shard, which fires its events)
        ["ZADD", g0, "1", "x"], ["ZADD", g1, "2", "y"], ["ZUNIONSTORE", g2, "2", g0, g1],
        ["ZINTERSTORE", g2, "2", g0, g1], ["SADD", g0 + "s", "m"], ["SUNIONSTORE", g3, g0 + "s"],
        ["SINTERSTORE", g3, g0 + "s", g1], ["LMPOP", "2", g0 + "l", g1, "LEFT"], ["RPUSH", g2 + "l", "a"],
        ["LMPOP", "2", g3, g2 + "l", "RIGHT"], ["COPY", g0, g3, "REPLACE"], ["SET", g1 + "b", "ab"],
        ["BITOP", "OR", g2 + "b", g0 + "q", g1 + "b"], ["PFADD", g0 + "h", "a"], ["PFMERGE", g3 + "h", g0 + "h"],
        # an empty result deletes an existing destination and fires "del"; a missing one: nothing
        ["SADD", g0 + "s2", "n"], ["SADD", g2 + "d", "old"], ["SINTERSTORE", g2 + "d", g0 + "s", g0 + "s2"],
        ["SINTERSTORE", g2 + "d", g0 + "s", g0 + "s2"], ["SADD", g3 + "d", "old"],
        ["SUNIONSTORE", g3 + "d", g1 + "none", g2 + "none"], ["SUNIONSTORE", g3 + "d", g1 + "none", g2 + "none"],
        ["SADD", g1 + "d", "old"], ["SDIFFSTORE", g1 + "d", g0 + "s", g3 + "s"], ["SDIFFSTORE", g1 + "d", g0 + "s", g3 + "s"],
        ["SADD", g1 + "d", "old"], ["SINTERSTORE", g1 + "d", g0 + "s", g2 + "none"],
        ["ZADD", g2 + "z", "1", "a"], ["ZINTERSTORE", g2 + "z", "2", g0, g1], ["ZADD", g3 + "z", "1", "a"],
        ["ZDIFFSTORE", g3 + "z", "2", g0, g0], ["ZADD", g1 + "z", "1", "a"], ["ZRANGESTORE", g1 + "z", g0, "5", "9"],
        ["ZADD", g3 + "z", "1", "a"], ["ZUNIONSTORE", g3 + "z", "2", g1 + "none", g2 + "none"],
        ["SET", g3 + "b", "x"], ["BITOP", "AND", g3 + "b", g1 + "none", g2 + "none"],
        ["RPUSH", g3 + "l2", "a"], ["SORT", g1 + "none", "STORE", g3 + "l2"],
        # XREADGROUP with keys on two shards, the second missing: its "keymiss", then NOGROUP
        ["XADD", g0 + "x", "1-1", "f", "v"], ["XGROUP", "CREATE", g0 + "x", "g", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", g0 + "x", g1 + "x", ">", ">"],
        ["XREAD", "STREAMS", g2 + "x", g1 + "x", "0", "0"],
    ]
    theirs = redis_events(steps, ends)
    s = Server(shards=4, extra=("--port-mode", "one-port"))
    try:
        ours = run(s.port, s.port, steps, ends)
        bad = diff(steps, ours, theirs, ordered=False)
        assert not bad, f"{len(bad)} steps differ:\n" + "\n".join(bad)
        assert any(e[1] == b"rename_to" for step in ours for e in step)
    finally:
        code, err = s.stop()
    assert code == 0, err
