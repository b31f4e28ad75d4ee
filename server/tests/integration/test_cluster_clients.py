"""Per-shard port mode driven by real cluster clients: redis-py's RedisCluster
(RESP2 and RESP3), Debian's redis-cli -c (following MOVED across shards) and
redis-benchmark --cluster; plus the CLUSTER replies and MOVED/CROSSSLOT."""
import re
import subprocess

import pytest
import redis
from redis.cluster import RedisCluster

from resp import Conn, Err, Server, key_slot

SHARDS = 4


@pytest.fixture(scope="module")
def server():
    s = Server(shards=SHARDS)
    yield s
    code, err = s.stop()
    assert code == 0, err


def owner_port(server, key):
    slot = key_slot(key)
    return server.port + slot * SHARDS // 16384


def test_cluster_slots_shards_nodes(server):
    c = Conn(server.port + 1)
    slots = c.call("CLUSTER", "SLOTS")
    assert len(slots) == SHARDS
    covered = []
    for i, (lo, hi, node) in enumerate(sorted(slots, key=lambda x: x[0])):
        covered.append((lo, hi))
        assert node[0] == b"127.0.0.1" and node[1] == server.port + i and len(node[2]) == 40
    assert covered[0][0] == 0 and covered[-1][1] == 16383
    assert all(covered[i][1] + 1 == covered[i + 1][0] for i in range(SHARDS - 1))
    myid = c.call("CLUSTER", "MYID")
    nodes = c.call("CLUSTER", "NODES").decode()
    lines = nodes.strip().split("\n")
    assert len(lines) == SHARDS
    for line in lines:
        # <id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slots>
        assert re.fullmatch(r"[0-9a-f]{40} 127\.0\.0\.1:\d+@\d+ (myself,)?master - 0 \d+ \d+ connected \d+-\d+", line), line
    mine = [l for l in lines if "myself" in l]
    assert len(mine) == 1 and mine[0].startswith(myid.decode()) and f":{server.port + 1}@" in mine[0]
    info = c.call("CLUSTER", "INFO").decode()
    assert "cluster_state:ok" in info and f"cluster_known_nodes:{SHARDS}" in info
    shards = c.call("CLUSTER", "SHARDS")
    assert len(shards) == SHARDS
    d = dict(zip(shards[0][::2], shards[0][1::2]))
    assert d[b"slots"] == [0, 4095]
    node = dict(zip(d[b"nodes"][0][::2], d[b"nodes"][0][1::2]))
    assert node[b"port"] == server.port and node[b"ip"] == b"127.0.0.1" and node[b"role"] == b"master"
    for cmd in ("READONLY", "READWRITE", "ASKING"):
        assert c.call(cmd) == "OK"
    info = c.call("INFO").decode()
    assert "redis_version:7.0" in info and "cluster_enabled:1" in info


def test_moved_and_crossslot(server):
    c = Conn(server.port)
    key = next(k for k in (f"k{i}" for i in range(1000)) if owner_port(server, k) != server.port)
    r = c.call("GET", key)
    assert r == f"MOVED {key_slot(key)} 127.0.0.1:{owner_port(server, key)}"
    assert isinstance(r, Err)
    r = c.call("MSET", "{a}1", "x", "{b}2", "y")
    assert r == "CROSSSLOT Keys in request don't hash to the same slot"
    # same tag, owning shard: runs
    c2 = Conn(owner_port(server, "{a}"))
    assert c2.call("MSET", "{a}1", "x", "{a}2", "y") == "OK"
    assert c2.call("MGET", "{a}1", "{a}2") == [b"x", b"y"]
    assert c2.call("CLUSTER", "COUNTKEYSINSLOT", str(key_slot("{a}"))) == 2
    assert sorted(c2.call("CLUSTER", "GETKEYSINSLOT", str(key_slot("{a}")), "10")) == [b"{a}1", b"{a}2"]
    assert c.call("CLUSTER", "KEYSLOT", "{a}zzz") == key_slot("{a}")


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_cluster(server, protocol):
    rc = RedisCluster(host="127.0.0.1", port=server.port + 2, protocol=protocol, decode_responses=True)
    try:
        nodes = rc.get_nodes()
        assert sorted(n.port for n in nodes) == [server.port + i for i in range(SHARDS)]
        pfx = f"p{protocol}:"
        for i in range(400):
            assert rc.set(f"{pfx}key:{i}", f"v{i}") is True
        for i in range(400):
            assert rc.get(f"{pfx}key:{i}") == f"v{i}"
        # the keys really spread over every shard
        counts = [Conn(server.port + i).call("DBSIZE") for i in range(SHARDS)]
        assert all(n > 0 for n in counts), counts
        assert rc.mget_nonatomic([f"{pfx}key:{i}" for i in range(50)]) == [f"v{i}" for i in range(50)]
        assert rc.incr(f"{pfx}ctr") == 1 and rc.incrby(f"{pfx}ctr", 41) == 42
        assert rc.hset(f"{pfx}h", mapping={"a": "1", "b": "2"}) == 2
        assert rc.hgetall(f"{pfx}h") == {"a": "1", "b": "2"}
        assert rc.rpush(f"{pfx}l", "a", "b", "c") == 3 and rc.lrange(f"{pfx}l", 0, -1) == ["a", "b", "c"]
        assert rc.sadd(f"{pfx}s", "x", "y") == 2 and rc.smembers(f"{pfx}s") == {"x", "y"}
        assert rc.zadd(f"{pfx}z", {"a": 1, "b": 2.5}) == 2
        # (redis-py gives pairs as lists in RESP3, tuples in RESP2, against Redis too)
        assert [tuple(p) for p in rc.zrange(f"{pfx}z", 0, -1, withscores=True)] == [("a", 1.0), ("b", 2.5)]
        assert rc.zscore(f"{pfx}z", "b") == 2.5
        assert rc.expire(f"{pfx}key:1", 100) is True and 0 < rc.ttl(f"{pfx}key:1") <= 100
        pipe = rc.pipeline()
        for i in range(100):
            pipe.set(f"{pfx}pipe:{i}", i)
            pipe.get(f"{pfx}pipe:{i}")
        res = pipe.execute()
        assert res[1::2] == [str(i) for i in range(100)]
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            rc.get(f"{pfx}l")
        assert rc.delete(*[f"{pfx}key:{i}" for i in range(10)]) == 10
        assert rc.exists(f"{pfx}key:0") == 0
        assert rc.ping() is True
    finally:
        rc.close()


def test_redis_cli_follows_moved(server):
    cli = ["redis-cli", "-c", "-p", str(server.port)]
    keys = [f"cli:{i}" for i in range(40)]
    owners = {owner_port(server, k) for k in keys}
    assert len(owners) == SHARDS  # the keys need redirects to every shard
    for k in keys:
        out = subprocess.run(cli + ["SET", k, k.upper()], capture_output=True, text=True, timeout=10)
        assert out.stdout.strip() == "OK", out
    for k in keys:
        out = subprocess.run(cli + ["GET", k], capture_output=True, text=True, timeout=10)
        assert out.stdout.strip() == k.upper(), out
    # without -c the redirect is shown, not followed
    k = next(k for k in keys if owner_port(server, k) != server.port)
    out = subprocess.run(["redis-cli", "-p", str(server.port), "GET", k], capture_output=True, text=True, timeout=10)
    assert out.stdout.strip() == f"MOVED {key_slot(k)} 127.0.0.1:{owner_port(server, k)}"
    # a pipeline piped through redis-cli to the shard owning the tag
    owner = owner_port(server, "{t}")
    script = "".join(f"SET {{t}}pipe:{i} {i}\n" for i in range(100)) + "GET {t}pipe:42\n"
    out = subprocess.run(["redis-cli", "-p", str(owner)], input=script, capture_output=True, text=True, timeout=10)
    assert out.stdout.split() == ["OK"] * 100 + ["42"], out


def test_redis_benchmark_cluster(server):
    for i in range(SHARDS):
        Conn(server.port + i).call("FLUSHALL")
    out = subprocess.run(["redis-benchmark", "--cluster", "-p", str(server.port), "-n", "20000", "-c", "10", "-P", "8",
                          "-r", "10000", "-d", "16", "-t", "set,get,incr,lpush,lpop", "--csv"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [l for l in out.stdout.splitlines() if l.startswith('"')]
    tests = {r.split(",")[0].strip('"'): float(r.split(",")[1].strip('"')) for r in rows[1:]}
    for t in ("SET", "GET", "INCR", "LPUSH", "LPOP"):
        assert any(k.startswith(t) for k in tests), (t, out.stdout)
    assert all(v > 0 for v in tests.values()), tests
    # the load really reached every shard and wrote keys there
    sizes = [Conn(server.port + i).call("DBSIZE") for i in range(SHARDS)]
    assert all(n > 0 for n in sizes), sizes
    # no command failed on any shard: errors would show as error replies counted by redis-benchmark
    assert "error" not in out.stderr.lower(), out.stderr
