"""Blocking commands on leased connections and transactions on sessions (issue 22), against
every deployment (Redis plain and cluster, slotlane-server per-shard and one-port) and a
Redis Cluster of its own for a slot migrated during a watch. Decided by events — replies,
the server's count of blocked clients (INFO clients / CLIENT LIST), exceptions — never by
sleeps."""
import asyncio
import threading
import time
from typing import Any, List

import pytest

import slotlane
import slotlane.asyncio as sla
from conftest import RedisCluster, wait_blocked, wait_blocked_count


# ------------------------------------------------------------ blocking commands


def test_blpop_typed_and_refused_in_pipeline(client: slotlane.Client) -> None:
    client.rpush("{b}q", "a", "b")
    assert client.blpop(["{b}none", "{b}q"], 0) == (b"{b}q", b"a")
    assert client.brpop(["{b}q"], 1) == (b"{b}q", b"b")
    assert client.blpop(["{b}q"], 0.01) is None  # its deadline is 10 ms + the grace: nil first
    p = client.pipeline()
    p.set("{b}k", "1")
    p.blpop(["{b}q"], 0)
    with pytest.raises(slotlane.BlockingPipelineError, match="BLPOP blocks and cannot run in a pipeline"):
        p.execute(raise_on_error=True)
    assert client.get("{b}k") is None  # nothing of the pipeline was sent


def test_blpop_forever_while_1000_gets_complete(redis_url: str) -> None:
    """One asyncio client (one shared connection per node): a BLPOP 0 waits on a leased
    connection while 1 000 GETs to the same node complete; then an element ends it."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with sla.Client(redis_url) as r:
            await r.flushall()
            await r.set("{n}k", "v")
            blpop = asyncio.ensure_future(r.blpop(["{n}q"], 0))
            await loop.run_in_executor(None, wait_blocked, redis_url, "blpop")
            gets = await asyncio.gather(*(r.get("{n}k") for _ in range(1000)))
            assert gets == [b"v"] * 1000
            assert not blpop.done()
            await r.rpush("{n}q", "e")
            assert await blpop == (b"{n}q", b"e")
    asyncio.run(main())


def test_50_blpops_served_in_arrival_order(redis_url: str) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with sla.Client(redis_url) as r:
            await r.flushall()
            tasks: List["asyncio.Future[Any]"] = []
            for i in range(50):  # each one blocked before the next starts: the server's order
                tasks.append(asyncio.ensure_future(r.blpop(["{o}q"], 0)))
                await loop.run_in_executor(None, wait_blocked_count, redis_url, i + 1)
            await r.rpush("{o}q", *[str(i) for i in range(50)])
            got = await asyncio.gather(*tasks)
            assert got == [(b"{o}q", str(i).encode()) for i in range(50)]
    asyncio.run(main())


def test_cancelled_blpop_swallows_nothing(redis_url: str) -> None:
    """A BLPOP cancelled mid-wait closes its lease: the element pushed afterwards goes to
    the next BLPOP, not to the cancelled one still armed on the server."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with sla.Client(redis_url) as r:
            await r.flushall()
            t = asyncio.ensure_future(r.blpop(["{c}q"], 0))
            await loop.run_in_executor(None, wait_blocked_count, redis_url, 1)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            await loop.run_in_executor(None, wait_blocked_count, redis_url, 0)  # its connection is gone
            await r.rpush("{c}q", "x")
            assert await r.blpop(["{c}q"], 0) == (b"{c}q", b"x")
            assert await r.llen("{c}q") == 0
    asyncio.run(main())


def test_sync_blpop_deadline_and_close(redis_url: str) -> None:
    with slotlane.Client(redis_url, socket_timeout=0.1) as c:
        c.flushall()
        # the deadline of a BLPOP is its block time plus the grace, not socket_timeout:
        # the server's own nil after 0.3 s, never a TimeoutError at 0.1 s
        assert c.blpop(["{d}q"], 0.3) is None
        c.rpush("{d}q", "y")
        assert c.lpop("{d}q") == b"y"
    c = slotlane.Client(redis_url)
    result: List[Any] = []
    th = threading.Thread(target=lambda: result.append(pytest.raises(slotlane.Error, c.blpop, ["{d}q2"], 0)))
    th.start()
    wait_blocked(redis_url, "blpop")
    c.close()  # cancels the BLPOP on its lease
    th.join(30)
    assert not th.is_alive() and result


# ------------------------------------------------------------ transactions


def test_transaction_commits_and_aborts(url: str) -> None:
    client = slotlane.Client(url)
    client.flushall()
    client.set("{t}a", "1")
    with client.pipeline(transaction=True) as p:
        p.incr("{t}a").set("{t}b", "x").get("{t}b")
        assert p.execute() == [2, True, b"x"]
    with client.pipeline(transaction=True) as p:
        assert p.watch("{t}a")
        assert p.get("{t}a") == b"2"  # immediate mode after WATCH
        p.multi()
        p.set("{t}a", "3")
        with slotlane.Client(url) as other:
            other.set("{t}a", "changed")  # touches the watched key
        with pytest.raises(slotlane.WatchError):
            p.execute()
    assert client.get("{t}a") == b"changed"
    def bump(p: Any) -> None:  # redis-py's shape: reads at once, then multi() and the writes
        v = int(p.get("{t}c") or 0)
        p.multi()
        p.set("{t}c", str(v + 1))
    assert client.transaction(bump, "{t}c") == [True]
    assert client.get("{t}c") == b"1"
    if client.mode == "cluster":  # keys of two slots: refused before sending
        with client.pipeline(transaction=True) as p:
            p.set("{t}a", "1").set("{u}a", "1")
            with pytest.raises(slotlane.ClusterError, match="CROSSSLOT"):
                p.execute()
    client.close()


def test_watch_conflicts_against_a_model(url: str) -> None:
    """8 threads, each 25 transactions: WATCH the counter, read it, MULTI, SET it to value+1
    and RPUSH its own tag. Every committed transaction's effect is present, no aborted
    one's: the log holds exactly the committed tags and the counter equals their count."""
    with slotlane.Client(url) as c:
        c.flushall()
        c.set("{m}n", "0")
        committed: List[str] = []
        lock = threading.Lock()

        def worker(w: int) -> None:
            for i in range(25):
                tag = "%d:%d" % (w, i)
                with c.pipeline(transaction=True) as p:
                    while True:
                        try:
                            p.watch("{m}n")
                            v = int(p.get("{m}n"))
                            p.multi()
                            p.set("{m}n", str(v + 1))
                            p.rpush("{m}log", tag)
                            p.execute()
                            with lock:
                                committed.append(tag)
                            break
                        except slotlane.WatchError:
                            continue  # aborted: nothing of it applied; retry
        ths = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        log = [x.decode() for x in c.lrange("{m}log", 0, -1)]
        assert sorted(log) == sorted(committed) and len(log) == 200
        assert int(c.get("{m}n")) == 200


def test_abandoned_session_comes_back_clean(redis_url: str) -> None:
    with slotlane.Client(redis_url, max_handles=1) as c:
        c.flushall()
        p = c.pipeline(transaction=True)
        p.watch("{a}k")
        p.multi()
        p.set("{a}k", "from the abandoned one")
        p.reset()  # no EXEC: the core sends DISCARD and gives the connection back
        assert c.set("{a}k", "1")
        with c.pipeline(transaction=True) as q:  # the same handle, the same leased connection
            q.watch("{a}k")
            q.multi()
            q.incr("{a}k")
            assert q.execute() == [2]
        assert c.get("{a}k") == b"2"


def test_slot_migrated_while_watched(chaos_cluster: RedisCluster) -> None:
    url = chaos_cluster.url
    key = "{mig}k"
    slot = slotlane.key_slot(key)
    with slotlane.Client(url) as c:
        c.set(key, "1")
        owner = next(n for n in c.nodes() if n.primary and any(a <= slot <= b for a, b in n.slots))
        src = int(owner.addr.rsplit(":", 1)[1])
        dst = next(p for p in chaos_cluster.ports if p != src)
        p = c.pipeline(transaction=True)
        p.watch(key)
        proc = chaos_cluster.migrate(slot, src, dst)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        p.multi()
        p.incr(key)
        with pytest.raises(slotlane.WatchMovedError):
            p.execute()
        # a WatchError: the usual retry loop takes it up on the new owner
        def bump(t: Any) -> None:
            t.multi()
            t.incr(key)
        assert c.transaction(bump, key) == [2]
        chaos_cluster.migrate(slot, dst, src).communicate(timeout=120)
