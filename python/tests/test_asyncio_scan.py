"""slotlane.asyncio's cluster SCAN (``async for key in r.scan_iter(...)``: the core's scan paged
on its loop thread), the one-key iterators and its Script, on the deployments whose nodes
each own their keys (redis-plain, a 3-primary Redis Cluster, slotlane-server per shard), on
asyncio's loop and uvloop; 100 000 keys and a live reshard on a Redis Cluster. Verdicts come
from the keys returned and the servers' own counters (INFO commandstats), never from timing."""
import asyncio
from collections import Counter
from typing import Any, List

import pytest

import slotlane
import slotlane.asyncio as sla

from test_asyncio import run  # noqa: F401  (the fixture: asyncio and uvloop)
from test_cluster_scan import SCAN_DEPLOYMENTS, cmdstat_calls, fill, key_on


@pytest.fixture(params=SCAN_DEPLOYMENTS)
def scan_url(request: Any, servers: Any) -> str:
    url = servers.url(request.param)
    with slotlane.Client(url) as c:
        c.flushall()
    return url


async def counted(it: Any) -> Counter:
    seen: Counter = Counter()
    async for k in it:
        seen[k] += 1
    return seen


def test_async_scan_iter_every_key_match_type(scan_url: str, run: Any) -> None:  # noqa: F811
    keys = ["ak:%d" % i for i in range(3000)]
    with slotlane.Client(scan_url) as c:
        fill(c, keys)
        c.hset("ah:1", {"f": "v"})

    async def main() -> None:
        async with sla.Client(scan_url) as r:
            seen = await counted(r.scan_iter(count=100))
            assert len(seen) == 3001 and max(seen.values()) == 1
            assert set(seen) == {k.encode() for k in keys} | {b"ah:1"}
            m = await counted(r.scan_iter(match="ak:1*"))
            assert set(m) == {k.encode() for k in keys if k.startswith("ak:1")}
            assert set(await counted(r.scan_iter(_type="hash"))) == {b"ah:1"}
            # left early: the iterator is closed, the client goes on
            it = r.scan_iter()
            assert isinstance(await it.__anext__(), bytes)
            await it.aclose()
            assert await r.get("ak:7") == b"v"
            with pytest.raises(ValueError):
                await r.scan_iter(count=0).__anext__()
            await r.flushall()
            assert len(await counted(r.scan_iter())) == 0
        async with sla.Client(scan_url, decode_responses=True) as r:
            await r.set("txt:1", "v")
            assert [k async for k in r.scan_iter()] == ["txt:1"]
            await r.delete("txt:1")
    run(main())


def test_async_scan_page_cancelled_then_the_client_goes_on(scan_url: str, run: Any) -> None:  # noqa: F811
    """A task cancelled while it awaits a page (wherever it is: submitted, on the wire)
    raises CancelledError; the scan is freed by the page's completion, and the shared
    connections stay in step for the next calls."""
    with slotlane.Client(scan_url) as c:
        fill(c, ["cp:%d" % i for i in range(2000)])

    async def main() -> None:
        async with sla.Client(scan_url) as r:
            for _ in range(20):
                it = r.scan_iter(count=10)
                task = asyncio.ensure_future(it.__anext__())
                await asyncio.sleep(0)  # the page is submitted
                task.cancel()
                with pytest.raises((asyncio.CancelledError, StopAsyncIteration)):
                    await task
                await it.aclose()
                assert await r.get("cp:5") == b"v"
            assert len(await counted(r.scan_iter(count=500))) == 2000
        assert not r._scans  # close() freed whatever a completion had not
    run(main())


def test_async_hscan_sscan_zscan_iter(scan_url: str, run: Any) -> None:  # noqa: F811
    async def main() -> None:
        async with sla.Client(scan_url, decode_responses=True) as r:
            fields = {"f%d" % i: "v%d" % i for i in range(500)}
            await r.hset("ih", fields)
            await r.sadd("is", *fields)
            await r.zadd("iz", {f: i for i, f in enumerate(fields)})
            assert dict([kv async for kv in r.hscan_iter("ih", count=50)]) == fields
            assert {m async for m in r.sscan_iter("is", match="f1*")} == {f for f in fields if f.startswith("f1")}
            z = dict([ms async for ms in r.zscan_iter("iz")])
            assert len(z) == 500 and z["f7"] == 7
            assert [x async for x in r.hscan_iter("missing")] == []
            await r.delete("ih", "is", "iz")
    run(main())


def test_async_script_every_shard_and_reload(url: str, run: Any) -> None:  # noqa: F811
    with slotlane.Client(url) as c:
        c.execute_command("SCRIPT", "FLUSH")
        primaries = [n for n in c.nodes() if n.primary]
        keys = [key_on(n, "ask") for n in primaries]
        c.delete(*keys)

    async def main() -> List[int]:
        async with sla.Client(url) as r:
            script = r.register_script("return redis.call('INCR', KEYS[1]) + tonumber(ARGV[1])")
            assert script.sha == (await r.script_load(script.script)).decode()
            out = [await script(keys=[k], args=[10]) for k in keys]
            with slotlane.Client(url) as c:
                victim = primaries[-1]
                loads = {n.addr: cmdstat_calls(c, n.addr, "script|load") for n in primaries}
                c.execute_command("SCRIPT", "FLUSH", target=victim.addr)
                assert await script(keys=[keys[-1]], args=[0]) == 2
                assert await script(keys=[keys[-1]], args=[0]) == 3
                after = {n.addr: cmdstat_calls(c, n.addr, "script|load") for n in primaries}
                if loads[victim.addr] or after[victim.addr]:  # the server counts SCRIPT LOAD
                    assert after[victim.addr] - loads[victim.addr] == 1
                    assert all(after[a] == loads[a] for a in after if a != victim.addr)
            # many at once, each its own chain in the core
            assert await asyncio.gather(*(script(keys=[k], args=[0]) for k in keys)) == \
                [4 if i == len(keys) - 1 else 2 for i in range(len(keys))]
            ro = r.register_script("return redis.call('GET', KEYS[1])")
            assert await ro(keys=[keys[0]], readonly=True) == await r.get(keys[0])
            with pytest.raises(slotlane.ResponseError):
                await r.register_script("this is not lua")(keys=[keys[0]])
            await r.delete(*keys)
            return out
    assert run(main()) == [11] * len(keys)


def test_async_scan_100k_keys(cluster_url: str) -> None:
    keys = ["abig:%d" % i for i in range(100_000)]
    with slotlane.Client(cluster_url) as c:
        c.flushall()
        fill(c, keys)

    async def main() -> Counter:
        async with sla.Client(cluster_url) as r:
            return await counted(r.scan_iter(count=1000))
    seen = asyncio.run(main())
    assert len(seen) == 100_000 and max(seen.values()) == 1
    assert set(seen) == {k.encode() for k in keys}
    with slotlane.Client(cluster_url) as c:
        c.flushall()


def test_async_scan_during_live_reshard(chaos_cluster: Any) -> None:
    """Slots move between two primaries while whole scans run on the loop thread (its map
    refreshed by CLUSTER SLOTS steps): every key that existed throughout comes."""
    keys = ["ars:%d" % i for i in range(30_000)]
    want = {k.encode() for k in keys}
    with slotlane.Client(chaos_cluster.url) as c:
        c.flushall()
        fill(c, keys)
        by_addr = {n.addr: n for n in c.nodes() if n.primary}
    src = int(next(a for a, n in by_addr.items() if n.slots[0][0] == 0).rsplit(":", 1)[1])
    dst = next(p for p in chaos_cluster.ports if p != src)

    async def main() -> None:
        async with sla.Client(chaos_cluster.url) as r:
            scans = dups = 0
            for slot in (0, 977):
                mig = chaos_cluster.migrate(slot, src, dst, count=2)
                try:
                    while True:
                        seen = await counted(r.scan_iter(count=200))
                        missed = want - set(seen)
                        assert not missed, "%d keys missed during the move of slot %d" % (len(missed), slot)
                        dups += sum(seen.values()) - len(seen)
                        scans += 1
                        if mig.poll() is not None:
                            break
                finally:
                    out = mig.communicate(timeout=60)[0]
                assert mig.returncode == 0, out
            print("async reshard of 2 slots: %d full scans, %d duplicates" % (scans, dups))
    asyncio.run(main())
    with slotlane.Client(chaos_cluster.url) as c:
        c.flushall()
