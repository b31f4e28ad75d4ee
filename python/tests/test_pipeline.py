"""Pipelines: results in order, errors as values, all slots, context manager."""
import pytest

import slotlane
from conftest import keys_for_every_slot


def test_results_in_order(client):
    with client.pipeline() as p:
        r = p.set("a", 1).incr("a").get("a").get("nope").lpush("a", "x").execute_command("PING").execute()
    assert r[:4] == [True, 2, b"2", None]
    assert isinstance(r[4], slotlane.ResponseError) and r[4].code == "WRONGTYPE"
    assert r[5] == "PONG"


def test_raise_on_error(client):
    p = client.pipeline()
    p.set("a", "x")
    p.incr("a")
    p.get("a")
    with pytest.raises(slotlane.ResponseError, match="not an integer"):
        p.execute(raise_on_error=True)
    assert len(p) == 0  # the queue is empty afterwards either way
    assert client.get("a") == b"x"


def test_empty_and_reuse(client):
    p = client.pipeline()
    assert p.execute() == []
    p.set("k", 1)
    assert len(p) == 1 and "1 queued" in repr(p)
    assert p.execute() == [True]
    p.get("k")
    assert p.execute() == [b"1"]


def test_context_manager_discards(client):
    with client.pipeline() as p:
        p.set("never", 1)
    assert len(p) == 0
    assert client.get("never") is None


def test_every_slot(client):
    keys = keys_for_every_slot()
    assert len({slotlane.key_slot(k) for k in keys}) == 16384
    with client.pipeline() as p:
        for k in keys:
            p.set(k, k + b":v")
        assert p.execute() == [True] * 16384
    with client.pipeline() as p:
        for k in keys:
            p.get(k)
        assert p.execute() == [k + b":v" for k in keys]
    assert client.dbsize() == 16384
    with client.pipeline() as p:
        for i in range(0, 16384, 512):
            p.mget(keys[i:i + 512])
            p.delete(*keys[i:i + 256])
        r = p.execute()
    for j, i in enumerate(range(0, 16384, 512)):
        assert r[2 * j] == [k + b":v" for k in keys[i:i + 512]]
        assert r[2 * j + 1] == 256
    assert client.dbsize() == 8192


def test_typed_methods_in_pipeline(client):
    with client.pipeline() as p:
        p.hset("h", {"a": 1}).hgetall("h").sadd("s", "x").smembers("s")
        p.zadd("z", {"m": 2}).zrange_withscores("z", 0, -1).zscore("z", "m")
        p.expire("h", 100).ttl("h").exists("h", "s", "z", "no").mset({"x": 1, "y": 2}).mget("x", "y")
        r = p.execute()
    assert r == [1, {b"a": b"1"}, 1, {b"x"}, 1, [(b"m", 2.0)], 2.0, True, 100, 3, True, [b"1", b"2"]]


def test_bad_argument_keeps_pipeline_whole(client):
    p = client.pipeline()
    p.set("a", 1)
    with pytest.raises(TypeError):
        p.execute_command("SET", "b", None)
    with pytest.raises(TypeError):
        p.get(None)
    p.get("a")
    assert p.execute() == [True, b"1"]


def test_text_pipeline(text_client):
    with text_client.pipeline() as p:
        r = p.set("k", "ü").get("k").mget("k", "no").execute()
    assert r == [True, "ü", ["ü", None]]


def test_deep_pipeline_large_values(client):
    val = b"v" * 10000
    with client.pipeline() as p:
        for i in range(2000):
            p.set("big:%d" % i, val)
        p.execute(raise_on_error=True)
        for i in range(2000):
            p.get("big:%d" % i)
        assert p.execute() == [val] * 2000
