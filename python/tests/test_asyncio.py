"""slotlane.asyncio against every deployment (redis-plain, redis-cluster, slotlane-server per
shard and one-port), on asyncio's default loop and on uvloop: the typed surface, pipelines,
many concurrent callers on one connection per node, cancellation of an awaiting task (its
batch is cancelled in the core and the shared connection stays in step), backpressure,
errors, and fork()."""
import asyncio
import os
from typing import Any, Awaitable, Callable, List

import pytest

import slotlane
import slotlane.asyncio as sla

from conftest import wait_blocked_count, wait_blocked

try:
    import uvloop
except ImportError:  # pragma: no cover - ci/test-python.sh installs it
    uvloop = None

LOOPS = ["asyncio", "uvloop"]


@pytest.fixture(params=LOOPS)
def run(request: Any) -> Callable[[Awaitable[Any]], Any]:
    """Runs a coroutine to completion on a new event loop of the parameter's kind."""
    if request.param == "uvloop":
        if uvloop is None:
            pytest.fail("uvloop is not installed (pip install uvloop)")

        def go(coro: Awaitable[Any]) -> Any:
            loop = uvloop.new_event_loop()
            try:
                return loop.run_until_complete(coro)
            finally:
                loop.close()
        return go
    return asyncio.run  # type: ignore[return-value]


def flush(url: str) -> None:
    with slotlane.Client(url) as c:
        c.flushall()


def test_typed_surface_and_pipeline(url: str, run: Any) -> None:
    flush(url)

    async def main() -> None:
        async with sla.Client(url) as r:
            assert r.mode in ("plain", "cluster")
            assert await r.set("a", "1") is True
            assert await r.get("a") == b"1"
            assert await r.get("missing") is None
            assert await r.incr("n") == 1
            assert await r.incrby("n", 41) == 42
            assert await r.hset("h", {"f": "v", "g": "w"}) == 2
            assert await r.hgetall("h") == {b"f": b"v", b"g": b"w"}
            assert await r.mget("a", "missing", "n") == [b"1", None, b"42"]
            assert await r.exists("a", "h", "zz") == 2
            assert await r.execute_command("ECHO", "hi") == b"hi"
            with pytest.raises(slotlane.ResponseError, match="WRONGTYPE"):
                await r.lpush("a", "x")
            async with r.pipeline() as p:
                for i in range(50):
                    p.set("p:%d" % i, i)
                    p.get("p:%d" % i)
                p.lpush("a", "x")
                res = await p.execute()
            assert res[:4] == [True, b"0", True, b"1"]
            assert res[99] == b"49"
            assert isinstance(res[100], slotlane.ResponseError)
            with pytest.raises(slotlane.ResponseError):
                p.lpush("a", "x")
                await p.execute(raise_on_error=True)
            assert await r.pipeline().execute() == []
        assert r.closed
        async with sla.Client(url, decode_responses=True) as t:
            assert await t.get("a") == "1"
            assert await t.hgetall("h") == {"f": "v", "g": "w"}
    run(main())


def test_many_callers_one_connection_per_node(url: str, run: Any) -> None:
    flush(url)

    async def caller(r: "sla.Client[bytes]", i: int) -> None:
        for k in range(4):
            key = "c:%d:%d" % (i, k)
            assert await r.set(key, key) is True
            assert await r.get(key) == key.encode()

    async def main() -> None:
        async with sla.Client(url) as r:
            await r.ping()
            await asyncio.gather(*(caller(r, i) for i in range(512)))
            st = r.stats()
            # every node's one connection (the first one, from discovery, is reused)
            assert st["connects"] <= st["nodes"] + 1, st
            assert st["reconnects"] == 0
    run(main())


def test_cancel_mid_flight_keeps_the_connection_in_step(redis_url: str, run: Any) -> None:
    """A task awaiting BLPOP (the server holds it) waits on a connection leased for it: a
    GET to the same node is never held behind it; cancelled, the BLPOP's lease is closed,
    so the element pushed afterwards stays in the list (nothing swallowed), and the
    client's shared connections were never reconnected."""
    flush(redis_url)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with sla.Client(redis_url) as r:
            await r.set("{q}k", "v")
            connects = r.stats()["connects"]
            blpop = asyncio.ensure_future(r.execute_command("BLPOP", "{q}list", 0))
            await loop.run_in_executor(None, wait_blocked, redis_url, "blpop")
            assert await r.get("{q}k") == b"v"  # same slot, same node: not behind the BLPOP
            blpop.cancel()
            with pytest.raises(asyncio.CancelledError):
                await blpop
            await loop.run_in_executor(None, wait_blocked_count, redis_url, 0)  # its lease is gone
            with slotlane.Client(redis_url) as other:
                other.rpush("{q}list", "x")
            assert await r.execute_command("LLEN", "{q}list") == 1  # the cancelled BLPOP took nothing
            assert r.stats()["connects"] == connects  # the shared connections stayed
    run(main())


def test_wait_for_timeout_cancels_only_its_batch(redis_url: str, run: Any) -> None:
    flush(redis_url)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with sla.Client(redis_url) as r:
            p = r.pipeline()
            p.set("{w}a", "1")
            p.execute_command("BLPOP", "{w}l", 0)
            with pytest.raises(slotlane.BlockingPipelineError):  # refused, nothing sent
                await p.execute()
            assert await r.get("{w}a") is None
            await r.set("{w}a", "1")
            t = asyncio.ensure_future(r.execute_command("BLPOP", "{w}l", 0))
            await loop.run_in_executor(None, wait_blocked, redis_url, "blpop")
            others = [asyncio.ensure_future(r.get("{w}a")) for _ in range(20)]
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(t, 0.05)  # the BLPOP is held by the server: a cancel
            assert await asyncio.gather(*others) == [b"1"] * 20
    run(main())


def test_backpressure_waits_without_blocking_the_loop(url: str, run: Any) -> None:
    flush(url)

    async def main() -> None:
        async with sla.Client(url, max_inflight=2) as r:
            res = await asyncio.gather(*(r.incr("bp") for _ in range(200)))
            assert sorted(res) == list(range(1, 201))
    run(main())


def test_errors(url: str, run: Any) -> None:
    async def main() -> None:
        with pytest.raises(ValueError):
            sla.Client(url, max_inflight=0)
        with pytest.raises(TypeError):
            sla.Client(url, max_handles=3)
        r = sla.Client("127.0.0.1:1", socket_connect_timeout=0.5)
        with pytest.raises(slotlane.ConnectionError):
            await r.get("x")
        await r.close()
        with pytest.raises(slotlane.Error, match="closed"):
            await r.get("x")
        async with sla.Client(url) as c:
            with pytest.raises(slotlane.ArgumentError):
                await c.execute_command("GET", "k", target=1)
    run(main())


def test_close_with_calls_in_flight(redis_url: str, run: Any) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        r = sla.Client(redis_url)
        await r.connect()
        held = asyncio.ensure_future(r.execute_command("BLPOP", "{c}l", 0))
        await loop.run_in_executor(None, wait_blocked, redis_url, "blpop")
        await r.close()
        with pytest.raises((slotlane.CancelledError, asyncio.CancelledError)):
            await held
    run(main())


def test_fork_child_gets_a_clear_error(plain_url: str) -> None:
    """The blocking client made in the parent: the core refuses it in the child with
    SL_EFORK (ResourceError naming the fork); the asyncio client in the child makes its own
    loop thread and works."""
    c = slotlane.Client(plain_url)
    c.set("f", "1")
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            try:
                c.get("f")
                code = 1
            except slotlane.ResourceError as e:
                if "fork()" not in str(e):
                    code = 2

            async def child() -> bytes:
                async with sla.Client(plain_url) as r:
                    v = await r.get("f")
                    assert v is not None
                    return v
            if asyncio.run(child()) != b"1":
                code = 3
        except BaseException:
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert c.get("f") == b"1"  # the parent's client is untouched
    c.close()


def test_completions_are_drained_many_per_wakeup(plain_url: str, run: Any) -> None:
    """The event loop is woken by the queue's descriptor, not once per reply: 1000
    concurrent GETs complete in fewer reader callbacks than replies."""
    async def main() -> List[int]:
        async with sla.Client(plain_url) as r:
            await r.ping()
            calls = [0]
            orig = r._on_completions

            def counting() -> None:
                calls[0] += 1
                orig()
            loop = asyncio.get_running_loop()
            loop.remove_reader(r._fd)
            loop.add_reader(r._fd, counting)
            await asyncio.gather(*(r.get("x") for _ in range(1000)))
            return calls
    calls = run(main())
    assert 1 <= calls[0] < 1000
