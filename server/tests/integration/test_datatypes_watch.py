"""WATCH against the commands of issue 24: a second connection runs one of them
between the first one's WATCH and EXEC; EXEC must be broken (null) exactly when
Redis 7.0's is — the destination of the STORE forms, COPY, SORT ... STORE, BITOP and
PFMERGE, the key ZMPOP/LMPOP popped from, SETBIT/BITFIELD/GEOADD/PFADD when they
changed the value, PFCOUNT when it wrote its cached cardinality — and not broken by
what only reads a key (COPY's source, SORT without STORE, ZUNION's inputs, PFADD of
elements already counted). Compared with redis-server, RESP2 and RESP3, at 1 shard and
4 shards with forwarding (every session's keys under one hash tag)."""
import pytest

from resp import Server
from test_transactions import Pair


def sessions(t):
    a, b = "a", "b"
    K = lambda n: f"{{{t}}}{n}"

    def watched(setup, key, cmd):
        return setup + [(a, ["WATCH", K(key)]), (b, cmd), (a, ["MULTI"]), (a, ["PING"]), (a, ["EXEC"])]

    z = [(a, ["ZADD", K("z1"), "1", "a", "2", "b"]), (a, ["ZADD", K("z2"), "3", "b"])]
    hll = [(a, ["PFADD", K("h"), "x", "y"])]
    return {
        "setbit": watched([], "bm", ["SETBIT", K("bm"), "7", "1"]),
        "bitfield": watched([], "bm", ["BITFIELD", K("bm"), "SET", "u8", "0", "3"]),
        "bitop_dst": watched([(a, ["SET", K("s"), "ab"])], "d", ["BITOP", "NOT", K("d"), K("s")]),
        "bitop_src": watched([(a, ["SET", K("s"), "ab"])], "s", ["BITOP", "NOT", K("d"), K("s")]),
        "pfadd_new": watched(hll, "h", ["PFADD", K("h"), "z"]),
        "pfadd_same": watched(hll, "h", ["PFADD", K("h"), "x"]),
        "pfcount_cache": watched(hll, "h", ["PFCOUNT", K("h")]),
        "pfmerge_dst": watched(hll, "m", ["PFMERGE", K("m"), K("h")]),
        "pfmerge_src": watched(hll, "h", ["PFMERGE", K("m"), K("h")]),
        "geoadd": watched([], "g", ["GEOADD", K("g"), "13.36", "38.11", "p"]),
        "copy_dst": watched(z, "c", ["COPY", K("z1"), K("c")]),
        "copy_src": watched(z, "z1", ["COPY", K("z1"), K("c")]),
        "sort_store": watched([(a, ["RPUSH", K("l"), "3", "1"])], "o", ["SORT", K("l"), "STORE", K("o")]),
        "sort_read": watched([(a, ["RPUSH", K("l"), "3", "1"])], "l", ["SORT", K("l")]),
        "zunionstore_dst": watched(z, "u", ["ZUNIONSTORE", K("u"), "2", K("z1"), K("z2")]),
        "zunionstore_src": watched(z, "z1", ["ZUNIONSTORE", K("u"), "2", K("z1"), K("z2")]),
        "zunion_read": watched(z, "z1", ["ZUNION", "2", K("z1"), K("z2")]),
        "zrangestore_dst": watched(z, "r", ["ZRANGESTORE", K("r"), K("z1"), "0", "-1"]),
        "zmpop": watched(z, "z2", ["ZMPOP", "2", K("nokey"), K("z2"), "MIN"]),
        "zmpop_other": watched(z, "z1", ["ZMPOP", "2", K("z2"), K("z1"), "MIN"]),
        "lmpop": watched([(a, ["RPUSH", K("l"), "x"])], "l", ["LMPOP", "1", K("l"), "LEFT"]),
        "geosearchstore": watched([(a, ["GEOADD", K("g"), "13.36", "38.11", "p"])], "gs",
                                  ["GEOSEARCHSTORE", K("gs"), K("g"), "FROMLONLAT", "13", "38", "BYRADIUS", "100", "km"]),
        "georadius_store": watched([(a, ["GEOADD", K("g"), "13.36", "38.11", "p"])], "gs",
                                   ["GEORADIUS", K("g"), "13", "38", "100", "km", "STORE", K("gs")]),
        "georadius_read": watched([(a, ["GEOADD", K("g"), "13.36", "38.11", "p"])], "g",
                                  ["GEORADIUS", K("g"), "13", "38", "100", "km"]),
    }


def run(shards, proto, extra=()):
    ours = Server(shards=shards, extra=extra)
    ref = Server(redis=True)
    failures = []
    try:
        for n, name in enumerate(sessions("x")):
            steps = sessions(f"w{n}")[name]
            pair = Pair(ours, ref, proto, bool(extra))
            key = next(x for _, argv in steps for x in argv[1:] if x.startswith("{"))
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
def test_watch_one_shard(proto):
    run(1, proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_watch_forward(proto):
    run(4, proto, ["--misrouted", "forward"])
