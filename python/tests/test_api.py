"""Every public method of Client, against every deployment (conftest.DEPLOYMENTS)."""
import datetime
import time

import pytest

import slotlane


def test_mode_and_repr(client, deployment):
    # One-port mode answers CLUSTER SLOTS with one node owning every slot, so a client that
    # detects its mode sees a cluster (of one node) there.
    assert client.mode == ("plain" if deployment == "redis-plain" else "cluster")
    assert "slotlane.Client" in repr(client) and client.mode in repr(client)
    assert not client.closed


def test_ping_echo(client):
    assert client.ping() == "PONG"  # the spec: PING -> status
    assert client.echo("hi") == b"hi"
    assert client.execute_command("PING") == "PONG"


def test_get_set(client):
    assert client.get("k") is None
    assert client.set("k", "v") is True
    assert client.get("k") == b"v"
    assert client.get(b"k") == b"v"
    assert client.set("n", 42) is True and client.get("n") == b"42"
    assert client.set("f", 1.5) is True and client.get("f") == b"1.5"
    assert client.set(b"\x00bin\xff", b"\r\n$3\r\n\x00") is True
    assert client.get(b"\x00bin\xff") == b"\r\n$3\r\n\x00"
    assert client.set(bytearray(b"ba"), memoryview(b"mv")) is True and client.get("ba") == b"mv"
    big = b"x" * 100000
    assert client.set("big", big) is True and client.get("big") == big


def test_set_options(client):
    # The spec: SET -> bool (true when set, false when NX/XX prevented it); SET ... GET is
    # its own method, set_get -> the old value. Expiry parameters are ints (seconds, ms).
    assert client.set("k", "1", nx=True) is True
    assert client.set("k", "2", nx=True) is False
    assert client.get("k") == b"1"
    assert client.set("other", "2", xx=True) is False
    assert client.set("k", "3", xx=True) is True
    assert client.set_get("k", "4") == b"3"
    assert client.set("k", "5", ex=100) is True and 90 < client.ttl("k") <= 100
    assert client.set("k", "5", px=100000) is True and 90000 < client.pttl("k") <= 100000
    assert client.set("k", "5", ex=50) is True and 40 < client.ttl("k") <= 50
    assert client.set("k", "6", keepttl=True) is True and 40 < client.ttl("k") <= 50
    at = int(time.time()) + 200
    assert client.set("k", "7", exat=at) is True and 150 < client.ttl("k") <= 200
    assert client.set("k", "8", pxat=at * 1000) is True and 150 < client.ttl("k") <= 200
    assert client.set("k", "9", exat=int(datetime.datetime.fromtimestamp(at).timestamp())) is True
    assert client.setex("k", 30, "10") is True and 20 < client.ttl("k") <= 30
    assert client.setnx("k", "x") is False and client.setnx("new", "x") is True
    assert client.getset("k", "11") == b"10"
    assert client.getdel("k") == b"11" and client.get("k") is None


def test_append_strlen(client):
    assert client.append("s", "ab") == 2
    assert client.append("s", "cd") == 4
    assert client.strlen("s") == 4


def test_mget_mset_across_slots(client):
    data = {"k:%d" % i: "v%d" % i for i in range(200)}
    assert client.mset(data) is True
    keys = list(data) + ["missing"]
    assert client.mget(keys) == [v.encode() for v in data.values()] + [None]
    assert client.mget(*keys[:3]) == [b"v0", b"v1", b"v2"]
    assert client.mget("k:5") == [b"v5"]


def test_delete_exists_unlink(client):
    client.mset({"a%d" % i: i for i in range(50)})
    assert client.exists("a1", "a2", "nope") == 2
    assert client.exists(["a1", "a1"]) == 2
    assert client.delete(*["a%d" % i for i in range(25)], "nope") == 25
    assert client.exists(["a%d" % i for i in range(50)]) == 25
    assert client.unlink(["a%d" % i for i in range(25, 50)]) == 25
    assert client.dbsize() == 0


def test_expiry(client):
    client.set("e", "1")
    assert client.ttl("e") == -1 and client.pttl("e") == -1
    assert client.ttl("nope") == -2
    assert client.expire("e", 100) is True
    assert 90 < client.ttl("e") <= 100
    assert client.expire("e", 50, gt=True) is False
    assert client.expire("e", 50, lt=True) is True
    assert client.expire("nope", 10) is False
    assert client.pexpire("e", 70000) is True and 60000 < client.pttl("e") <= 70000
    assert client.expire("e", 120, xx=True) is True and client.ttl("e") > 100
    assert client.persist("e") is True and client.ttl("e") == -1
    assert client.expireat("e", int(time.time()) + 100) is True and 50 < client.ttl("e") <= 100
    assert client.pexpireat("e", (int(time.time()) + 300) * 1000) is True and 250 < client.ttl("e") <= 300
    assert client.expire("e", 10, nx=True) is False


def test_incr_family(client):
    assert client.incr("c") == 1
    assert client.incrby("c", 5) == 6
    assert client.incrby("c", 10) == 16
    assert client.decr("c") == 15
    assert client.decrby("c", 5) == 10
    assert client.decrby("c", 3) == 7
    assert client.incrbyfloat("c", 0.5) == 7.5
    assert client.incrbyfloat("c", 1) == 8.5
    assert client.type("c") == "string"
    with pytest.raises(slotlane.ResponseError, match="not an integer"):
        client.incr("c")


def test_lists(client):
    assert client.rpush("l", "a", "b", "c") == 3
    assert client.lpush("l", "z") == 4
    assert client.lrange("l", 0, -1) == [b"z", b"a", b"b", b"c"]
    assert client.llen("l") == 4
    assert client.lindex("l", 1) == b"a"
    assert client.lset("l", 1, "A") is True
    assert client.lrem("l", 0, "A") == 1
    assert client.ltrim("l", 0, 1) is True and client.lrange("l", 0, -1) == [b"z", b"b"]
    assert client.lpop("l") == b"z" and client.rpop("l") == b"b" and client.lpop("l") is None
    client.rpush("l", 1, 2, 3, 4)
    assert client.lpop_count("l", 2) == [b"1", b"2"] and client.rpop_count("l", 5) == [b"4", b"3"]
    assert client.type("nol") == "none"


def test_hashes(client):
    assert client.hset("h", {"f": "v"}) == 1
    assert client.hset("h", {"a": 1, "b": 2}) == 2
    assert client.hset("h", [("c", 3), ("d", 4)]) == 2
    assert client.hget("h", "f") == b"v" and client.hget("h", "no") is None
    assert client.hmget("h", "a", "no", "b") == [b"1", None, b"2"]
    assert client.hmget("h", ["a"]) == [b"1"]
    assert client.hgetall("h") == {b"f": b"v", b"a": b"1", b"b": b"2", b"c": b"3", b"d": b"4"}
    assert client.hgetall("noh") == {}
    assert client.hexists("h", "a") is True and client.hexists("h", "zz") is False
    assert client.hlen("h") == 5
    assert sorted(client.hkeys("h")) == [b"a", b"b", b"c", b"d", b"f"]
    assert sorted(client.hvals("h")) == [b"1", b"2", b"3", b"4", b"v"]
    assert client.hdel("h", "a", "b", "zz") == 2
    assert client.hincrby("h", "c", 5) == 8
    assert client.hincrbyfloat("h", "c", 0.25) == 8.25
    assert client.hsetnx("h", "c", 1) is False and client.hsetnx("h", "n", 1) is True


def test_sets(client):
    assert client.sadd("s", "a", "b", "c") == 3
    assert client.sadd("s", "a") == 0
    assert client.smembers("s") == {b"a", b"b", b"c"}
    assert client.smembers("nos") == set()
    assert client.sismember("s", "a") is True and client.sismember("s", "z") is False
    assert client.smismember("s", "a", "z") == [True, False]
    assert client.scard("s") == 3
    assert client.srem("s", "a", "z") == 1
    assert client.srandmember("s") in (b"b", b"c")
    assert sorted(client.srandmember_count("s", 5)) == [b"b", b"c"]
    assert client.spop("s") in (b"b", b"c")
    assert len(client.spop_count("s", 5)) == 1 and client.scard("s") == 0


def test_sorted_sets(client):
    # ZADD's tuples are (score, member) as Redis takes them; a mapping is {member: score}.
    assert client.zadd("z", {"a": 1, "b": 2.5, "c": -3}) == 3
    assert client.zadd("z", [(5, "a")], nx=True) == 0
    assert client.zadd("z", {"a": 5}, xx=True, ch=True) == 1
    assert client.zadd("z", {"a": 4}, gt=True, ch=True) == 0
    assert client.zadd_incr("z", {"a": 2}) == 7.0
    assert client.zadd_incr("z", {"q": 2}, xx=True) is None
    assert client.zscore("z", "a") == 7.0 and client.zscore("z", "no") is None
    assert client.zmscore("z", "a", "no") == [7.0, None]
    assert client.zincrby("z", 1.5, "b") == 4.0
    assert client.zcard("z") == 3
    assert client.zcount("z", 0, "+inf") == 2
    assert client.zrange("z", 0, -1) == [b"c", b"b", b"a"]
    assert client.zrange_withscores("z", 0, -1) == [(b"c", -3.0), (b"b", 4.0), (b"a", 7.0)]
    assert client.zrange("z", 0, 0, rev=True) == [b"a"]
    assert client.zrevrange_withscores("z", 0, 1) == [(b"a", 7.0), (b"b", 4.0)]
    assert client.zrangebyscore("z", 0, 10) == [b"b", b"a"]
    assert client.zrangebyscore_withscores("z", "-inf", "+inf", offset=1, count=1) == [(b"b", 4.0)]
    assert client.zrank("z", "a") == 2 and client.zrevrank("z", "a") == 0 and client.zrank("z", "no") is None
    assert client.zrem("z", "c", "no") == 1
    assert client.zpopmin("z") == [(b"b", 4.0)]
    assert client.zpopmax("z", count=5) == [(b"a", 7.0)]
    assert client.zpopmin("z") == []


def test_keyspace_all_primaries(client):
    # DBSIZE, KEYS, FLUSHALL, FLUSHDB go to every primary by the core's default routing
    client.mset({"k%d" % i: i for i in range(100)})
    assert client.dbsize() == 100
    assert sorted(client.keys("k1*")) == sorted(b"k1%s" % s for s in [b""] + [b"%d" % i for i in range(10)])
    assert client.flushall() is True and client.dbsize() == 0
    assert client.execute_command("DBSIZE", target=slotlane.ALL_PRIMARIES) == 0
    assert client.execute_command("PING", target=slotlane.RANDOM) == "PONG"


def test_execute_command_targets(client):
    client.set("tk", "v")
    slot = slotlane.key_slot("tk")
    assert client.execute_command("GET", "tk", target=slot) == b"v"
    with pytest.raises(ValueError, match="0..16383"):
        client.execute_command("PING", target=20000)
    with pytest.raises(ValueError, match="target must be"):
        client.execute_command("PING", target="nonsense")
    with pytest.raises(TypeError, match="target must be"):
        client.execute_command("PING", target=1.5)


def test_execute_command_types(client):
    assert client.execute_command("SET", "x", "1") == "OK"
    assert client.execute_command("GET", "x") == b"1"
    assert client.execute_command("INCR", "x") == 2
    assert client.execute_command("RPUSH", "lst", "a", "b") == 2
    assert client.execute_command("LRANGE", "lst", 0, -1) == [b"a", b"b"]
    assert client.execute_command("GET", "nope") is None
    with pytest.raises(slotlane.ResponseError) as ei:
        client.execute_command("GET", "lst")
    assert ei.value.code == "WRONGTYPE" and ei.value.kind == "server"
    assert "WRONGTYPE" in str(ei.value) and ei.value.message.startswith("WRONGTYPE")
    with pytest.raises(slotlane.ResponseError, match="unknown command"):
        client.execute_command("NOSUCHCOMMAND", "k")


def test_decode_responses(text_client):
    c = text_client
    assert c.set("k", "välue") is True
    assert c.get("k") == "välue"
    c.hset("h", {"f": "v"})
    assert c.hgetall("h") == {"f": "v"}
    assert c.mget("k", "no") == ["välue", None]
    c.zadd("z", {"m": 1})
    assert c.zrange_withscores("z", 0, -1) == [("m", 1.0)]
    assert c.smembers("nos") == set()


def test_encoding_option(url):
    with slotlane.Client(url, decode_responses=True, encoding="latin-1") as c:
        c.set("lat", "é")
        assert c.get("lat") == "é"
    with slotlane.Client(url) as c:
        assert c.get("lat") == b"\xe9"


def test_resp3(url, deployment):
    if deployment.startswith("slotlane"):
        pass  # the bundled server answers HELLO as well
    with slotlane.Client(url, protocol=3) as c:
        c.flushall()
        c.hset("h", {"a": 1})
        assert c.hgetall("h") == {b"a": b"1"}
        c.sadd("s", "x")
        assert c.smembers("s") == {b"x"}
        c.zadd("z", {"m": 1.5})
        assert c.zscore("z", "m") == 1.5
        assert c.zrange_withscores("z", 0, -1) == [(b"m", 1.5)]
        assert c.execute_command("HGETALL", "h") == {b"a": b"1"}


def test_close_and_context_manager(url):
    with slotlane.Client(url) as c:
        assert c.ping()
    assert c.closed
    with pytest.raises(slotlane.Error, match="closed"):
        c.get("k")
    c.close()  # twice is fine


def test_stats(client):
    before = client.stats()
    client.set("s", 1)
    client.get("s")
    after = client.stats()
    assert after["commands"] >= before["commands"] + 2
    assert after["bytes_written"] > before["bytes_written"]
    assert after["nodes"] >= 1 and after["connects"] >= 1
    client.refresh()


def test_version_and_key_slot():
    assert slotlane.__version__.count(".") == 2
    assert slotlane.key_slot("foo") == 12182
    assert slotlane.key_slot(b"{user1000}.following") == slotlane.key_slot("{user1000}.followers")
    with pytest.raises(TypeError):
        slotlane.key_slot(5)  # type: ignore[arg-type]
