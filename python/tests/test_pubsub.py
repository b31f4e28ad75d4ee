"""r.pubsub(): redis-py-shaped messages over the core's subscriber, on every deployment
(redis-plain, redis-cluster, slotlane-server per-shard and one-port), plus a Redis Cluster
of its own for a primary killed with SIGKILL and restarted and for a shard channel's slot
migrated while publishing. Every wait ends on a message or a counter; its limit (WAIT)
only turns a hang into a failure."""
import asyncio
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import slotlane
import slotlane.asyncio

WAIT = 30.0


def take(p: Any, want_type: str, limit: float = WAIT) -> Dict[str, Any]:
    """The next message of want_type; any other type first fails the test."""
    m = p.get_message(timeout=limit)
    assert m is not None, "no %s message within %ss" % (want_type, limit)
    assert m["type"] == want_type, m
    return m


def until(p: Any, want_type: str, channel: Any = None, limit: float = WAIT) -> List[Dict[str, Any]]:
    """Messages up to and including the first of want_type (and channel): what came before."""
    seen: List[Dict[str, Any]] = []
    end = time.monotonic() + limit
    while True:
        left = end - time.monotonic()
        assert left > 0, "no %s %r within %ss; saw %r" % (want_type, channel, limit, seen[-5:])
        m = p.get_message(timeout=left)
        if m is None:
            continue
        seen.append(m)
        if m["type"] == want_type and (channel is None or m["channel"] == channel):
            return seen


def test_messages_patterns_shards(client: slotlane.Client) -> None:
    with client.pubsub() as p:
        p.subscribe("ps:news")
        assert take(p, "subscribe") == {"type": "subscribe", "pattern": None, "channel": b"ps:news", "data": 1}
        p.psubscribe("ps:n*")
        assert take(p, "psubscribe")["channel"] == b"ps:n*"
        p.ssubscribe("ps:{s}shard")
        assert take(p, "ssubscribe")["channel"] == b"ps:{s}shard"
        binary = bytes(range(256)) + b"\r\n*3\r\n$7\r\nmessage"
        client.publish("ps:news", binary)
        m = take(p, "message")
        assert m == {"type": "message", "pattern": None, "channel": b"ps:news", "data": binary}
        m = take(p, "pmessage")
        assert m == {"type": "pmessage", "pattern": b"ps:n*", "channel": b"ps:news", "data": binary}
        big = bytes((i * 7) & 0xFF for i in range(1 << 20))
        assert client.spublish("ps:{s}shard", big) == 1
        m = take(p, "smessage")
        assert m["channel"] == b"ps:{s}shard" and m["data"] == big
        # order per channel, nothing lost
        n = 2000
        with client.pipeline() as pl:
            for i in range(n):
                pl.publish("ps:news", b"%d" % i)
            pl.execute()
        got = [m["data"] for m in (p.get_message(timeout=WAIT) for _ in range(2 * n)) if m and m["type"] == "message"]
        assert got == [b"%d" % i for i in range(n)]
        p.unsubscribe("ps:news")
        assert take(p, "unsubscribe")["channel"] == b"ps:news"
        p.punsubscribe()
        assert take(p, "punsubscribe")["channel"] == b"ps:n*"
        assert p.get_message(timeout=0) is None
        st = p.stats()
        assert st["confirmed"] == 1 and st["connection_losses"] == 0 and st["dropped"] == 0


def test_handlers_listen_decode(plain_url: str) -> None:
    with slotlane.Client(plain_url, decode_responses=True) as r, r.pubsub(ignore_subscribe_messages=True) as p:
        got: List[Dict[str, Any]] = []
        p.subscribe("ps:plain", **{"ps:handled": got.append})
        assert p.get_message(timeout=WAIT) is None  # the confirmations are ignored
        assert p.get_message(timeout=WAIT) is None
        r.publish("ps:handled", "to the handler")
        r.publish("ps:plain", "héllo")
        for m in p.listen():
            assert m == {"type": "message", "pattern": None, "channel": "ps:plain", "data": "héllo"}
            break
        assert got == [{"type": "message", "pattern": None, "channel": "ps:handled", "data": "to the handler"}]
        assert p.subscribed


def test_100k_in_order_cluster(cluster_url: str) -> None:
    """100 000 messages while connected: every one, in order, none dropped."""
    with slotlane.Client(cluster_url) as r, r.pubsub(ignore_subscribe_messages=True) as p:
        p.subscribe("ps:bulk")
        p.ssubscribe("ps:{b}bulk")
        confirmed = 0
        while confirmed < 2:
            p._core.fill(int(WAIT * 1000))
            while p._core.pending:
                confirmed += p._core.pending.popleft()["type"] in ("subscribe", "ssubscribe")
        n = 100000
        received: List[bytes] = []
        sreceived: List[bytes] = []
        for start in range(0, n, 5000):
            with r.pipeline() as pl:
                for i in range(start, start + 5000):
                    pl.publish("ps:bulk", b"%d" % i)
                    if i % 10 == 0:
                        pl.spublish("ps:{b}bulk", b"%d" % i)
                pl.execute()
            while True:
                m = p.get_message(timeout=0)
                if m is None:
                    break
                (received if m["type"] == "message" else sreceived).append(m["data"])
        end = time.monotonic() + WAIT
        while (len(received) < n or len(sreceived) < n // 10) and time.monotonic() < end:
            m = p.get_message(timeout=1)
            if m is not None:
                (received if m["type"] == "message" else sreceived).append(m["data"])
        assert received == [b"%d" % i for i in range(n)]
        assert sreceived == [b"%d" % i for i in range(0, n, 10)]
        assert p.stats()["dropped"] == 0


def test_overflow_drops_newest(plain_url: str) -> None:
    with slotlane.Client(plain_url) as r, r.pubsub(max_queue_bytes=50 * (32 + 8 + 100)) as p:
        p.subscribe("ps:over")
        take(p, "subscribe")
        with r.pipeline() as pl:
            for i in range(500):
                pl.publish("ps:over", b"%03d" % i + b"x" * 97)
            pl.execute()
        end = time.monotonic() + WAIT
        while True:  # the subscriber's counters: every message handled (kept or dropped)
            st = p.stats()
            if st["messages"] + st["dropped"] >= 500:
                break
            assert time.monotonic() < end, st
            time.sleep(0.001)
        assert st["messages"] == 50 and st["dropped"] == 450
        kept = [take(p, "message")["data"][:3] for _ in range(50)]
        assert kept == [b"%03d" % i for i in range(50)]
        assert take(p, "overflow")["data"] == 450
        r.publish("ps:over", b"after")
        assert take(p, "message")["data"] == b"after"


def _owner(r: slotlane.Client, key: bytes) -> int:
    slot = slotlane.key_slot(key)
    for n in r.nodes():
        if n.primary and any(a <= slot <= b for a, b in n.slots):
            return int(n.addr.rsplit(":", 1)[1])
    raise AssertionError("no owner of slot %d" % slot)


def test_primary_killed_and_restarted(chaos_cluster: Any) -> None:
    """kill -9 of the shard channel's node: connection_lost, then after the restart
    resubscribed (the gap reported) and messages again."""
    with slotlane.Client(chaos_cluster.url, reconnect_backoff=(0.01, 0.2)) as r, \
                r.pubsub() as p:
        ch = b"ps:{k}kill"
        port = _owner(r, ch)
        p.ssubscribe(ch)
        take(p, "ssubscribe")
        assert r.spublish(ch, b"before") == 1
        m = until(p, "smessage")[-1]
        assert m["data"] == b"before"
        chaos_cluster.kill(port)
        lost = until(p, "connection_lost")[-1]
        assert str(port) in lost["data"]
        chaos_cluster.restart(port)
        res = until(p, "resubscribed", ch)[-1]
        assert res["data"] == "ssubscribe"
        end = time.monotonic() + WAIT
        while True:  # the command client's own connection to the node broke: it reconnects
            try:
                if r.spublish(ch, b"after") == 1:
                    break
            except slotlane.ConnectionError:
                pass
            assert time.monotonic() < end
            time.sleep(0.05)
        assert until(p, "smessage")[-1]["data"] == b"after"
        assert p.stats()["resubscribed"] >= 1


def test_shard_slot_migrated_while_publishing(chaos_cluster: Any) -> None:
    """A shard channel's slot moves to another primary while a thread publishes: the old
    node unsubscribes it, the core follows (resubscribed) and messages keep coming."""
    with slotlane.Client(chaos_cluster.url) as r, r.pubsub() as p:
        ch = b"ps:{m}move"
        slot = slotlane.key_slot(ch)
        src = _owner(r, ch)
        dst = next(x for x in chaos_cluster.ports if x != src)
        p.ssubscribe(ch)
        stop = threading.Event()
        sent = [0]

        def publish() -> None:
            with slotlane.Client(chaos_cluster.url) as w:
                i = 0
                while not stop.is_set():
                    try:
                        w.spublish(ch, b"%d" % i)
                    except slotlane.Error:
                        pass
                    i += 1
                sent[0] = i

        take(p, "ssubscribe")
        t = threading.Thread(target=publish)
        t.start()
        try:
            until(p, "smessage")  # receiving
            mig = chaos_cluster.migrate(slot, src, dst)
            out, _ = mig.communicate(timeout=120)
            assert mig.returncode == 0, out
            res = until(p, "resubscribed", ch)
            assert res[-1]["data"] == "ssubscribe"
            after = until(p, "smessage")[-1]  # still receiving after the move
            assert int(after["data"]) > 0
        finally:
            stop.set()
            t.join()
        chaos_cluster.migrate(slot, dst, src).communicate(timeout=120)  # leave the cluster as it was


def test_asyncio_async_for(url: str) -> None:
    async def main() -> None:
        async with slotlane.asyncio.Client(url) as r:
            async with r.pubsub(ignore_subscribe_messages=True) as p:
                p.subscribe("ps:async")
                p.ssubscribe("ps:{a}async")
                confirmed = 0
                while confirmed < 2:
                    m: Optional[Dict[str, Any]] = await p.get_message(timeout=WAIT)
                    confirmed += m is None  # the confirmations are ignored: None each
                for i in range(100):
                    await r.publish("ps:async", b"%d" % i)
                await r.spublish("ps:{a}async", b"s")
                got = []
                async for m in p:
                    got.append(m)
                    if len(got) == 101:
                        break
                # the classic channel's messages in order; the shard channel's one comes on
                # another connection (its slot's owner), so anywhere among them
                assert [m["data"] for m in got if m["type"] == "message"] == [b"%d" % i for i in range(100)]
                assert [m for m in got if m["type"] != "message"] == [
                    {"type": "smessage", "pattern": None, "channel": b"ps:{a}async", "data": b"s"}]
                assert await p.get_message(timeout=0) is None
    asyncio.run(asyncio.wait_for(main(), 60))


def test_bad_arguments(plain_url: str) -> None:
    with slotlane.Client(plain_url) as r:
        with pytest.raises(ValueError):
            r.pubsub(max_queue_bytes=0)
        with pytest.raises(ValueError):
            r.pubsub(health_check_interval=-1)
        p = r.pubsub()
        with pytest.raises(TypeError):
            p.subscribe(object())
        p.close()
        with pytest.raises(slotlane.Error):
            p.subscribe("x")
        assert p.get_message(timeout=0) is None
    with pytest.raises(slotlane.Error, match="closed"):
        r.pubsub()  # the client is closed


def test_record_types_are_the_specs() -> None:
    """Every record kind of slotlane.h has the type name of bindings/spec/errors.json."""
    import json
    import os
    from slotlane._native import lib
    from slotlane._pubsub import _KIND_TYPE
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, "bindings", "spec", "errors.json")) as f:
        table = json.load(f)["pubsub_records"]
    kinds = {k: v for k, v in table.items() if k != "about"}
    assert {getattr(lib, k): v for k, v in kinds.items()} == _KIND_TYPE
