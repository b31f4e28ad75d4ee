"""slotlane.asyncio: the asyncio client — the same typed surface as slotlane.Client, as
coroutines, on the core's completion path.

    import slotlane.asyncio
    async with slotlane.asyncio.Client("redis://localhost:7000") as r:   # cluster detected
        await r.set("greeting", "hello")
        async with r.pipeline() as p:
            for i in range(100):
                p.get("key:%d" % i)
            values = await p.execute()

How it runs: every command (or pipeline) is one batch submitted, in one crossing, to the
core's loop thread (one per process, sl_loop), which multiplexes every caller's batches on
one connection per node. Batches complete into the client's completion queue (sl_cq),
whose descriptor the event loop watches (``loop.add_reader``): one wake-up drains every
completion that arrived, on the event loop's thread. No Python runs on the core's
thread, and there is no ``call_soon_threadsafe`` per reply. Works on asyncio's default
loop and on uvloop.

Cancelling the awaiting task (``task.cancel()``, ``asyncio.wait_for``'s timeout) cancels
its batch in the core (sl_batch_cancel): the replies still owed on the shared connection
are read and dropped there, so the connection stays in step for every other caller — a
cancelled call never leaves a reply behind for the next one (redis-py's CVE-2023-28858/9).

Backpressure: the core bounds what one client has in flight (``max_inflight`` batches,
``max_inflight_bytes`` of commands; defaults 4096 and 64 MiB). At the bound a call waits,
without blocking the event loop, until a completion makes room (the submission fails fast
in the core and is retried after the next drain).

A client belongs to the event loop it was first used on. After ``fork()`` a client made
in the parent raises ResourceError naming the fork; make a new one in the child.
"""
import asyncio as _asyncio
import os
from typing import Any, Dict, Generic, List, Literal, Optional, Tuple, TypeVar, overload

from . import _errors
from ._client import Client as _SyncClient, Target, _payload1, _payload2, _Queue, _raise_code
from ._codec import Callback, decode_records, encode_into
from ._commands import AsyncClientCommands
from ._native import ffi, lib

__all__ = ["Client", "Pipeline"]

_S = TypeVar("_S", bytes, str)
_DRAIN = 256  # completions taken per sl_cq_drain
_NO_RECORDS_CODES = (lib.SL_EINVAL, lib.SL_ENOMEM, lib.SL_ESTATE, lib.SL_EFORK,
                     lib.SL_EBLOCKING)  # EBLOCKING: a blocking command in a pipeline, nothing sent
_slpy_submit = lib.slpy_submit
_drain = lib.sl_cq_drain
_buffer = ffi.buffer

# The core's loop thread: one per process, made on first use (a child after fork() makes
# its own: the parent's thread does not exist there).
_loop_thread: Any = None


def _forget_loop_thread() -> None:
    global _loop_thread
    _loop_thread = None


os.register_at_fork(after_in_child=_forget_loop_thread)


def _core_loop() -> Any:
    global _loop_thread
    if _loop_thread is None:
        out = ffi.new("sl_loop **")
        rc = lib.sl_loop_new(out)
        if rc != 0:
            _raise_code(rc, "could not start the core's loop thread")
        _loop_thread = out[0]
    return _loop_thread


def _message(rc: int) -> str:
    if rc == lib.SL_EFORK:
        return ("the client was made before fork(), in the parent process, and cannot be used in this "
                "child (pid %d): make a new client after forking" % os.getpid())
    return str(ffi.string(lib.sl_strerror(rc)).decode("utf-8", "replace"))


class Client(AsyncClientCommands[_S]):
    """An asyncio Redis-protocol client for one server or a cluster.

    Takes the options of slotlane.Client (``cluster``, ``username``, ``password``, ``db``,
    ``protocol``, ``socket_connect_timeout``, ``socket_timeout``, ``max_redirects``,
    ``refresh_interval``, ``reconnect_backoff``, ``decode_responses``, ``encoding``,
    ``encoding_errors``), plus ``max_inflight`` / ``max_inflight_bytes`` (the core's
    in-flight bounds). Nothing connects in the constructor: the first command, or
    ``async with`` / ``await client.connect()``, connects (in a worker thread, so the event
    loop never waits for a connect) and detects a cluster. ``await client.close()`` or
    leaving ``async with`` cancels what is in flight and closes every connection.
    """

    @overload
    def __init__(self: "Client[bytes]", url_or_host: str = "localhost", port: Optional[int] = None, *,
                 decode_responses: Literal[False] = False, max_inflight: int = 4096,
                 max_inflight_bytes: int = 64 << 20, **options: Any) -> None: ...

    @overload
    def __init__(self: "Client[str]", url_or_host: str = "localhost", port: Optional[int] = None, *,
                 decode_responses: Literal[True], max_inflight: int = 4096,
                 max_inflight_bytes: int = 64 << 20, **options: Any) -> None: ...

    def __init__(self, url_or_host: str = "localhost", port: Optional[int] = None, *,
                 decode_responses: bool = False, max_inflight: int = 4096,
                 max_inflight_bytes: int = 64 << 20, **options: Any) -> None:
        self._client: Any = None
        self._closed = False
        for name in ("max_handles", "pool_timeout"):
            if name in options:
                raise TypeError("%s is an option of the blocking client only" % name)
        if isinstance(max_inflight, bool) or not isinstance(max_inflight, int) or not 1 <= max_inflight < 2 ** 32:
            raise ValueError("max_inflight must be an int 1..2**32-1")
        if isinstance(max_inflight_bytes, bool) or not isinstance(max_inflight_bytes, int) or max_inflight_bytes < 1:
            raise ValueError("max_inflight_bytes must be a positive int")
        # The blocking client's option checks and its options struct, without connecting.
        opts = _SyncClient._options(url_or_host, port, decode_responses=decode_responses, **options)
        self._opts, self._keep, self.encoding, self.encoding_errors, self._text = opts
        self.decode_responses = decode_responses
        self._opts.max_inflight_batches = max_inflight
        self._opts.max_inflight_bytes = max_inflight_bytes
        self._aloop: Optional[_asyncio.AbstractEventLoop] = None
        self._connecting: Optional["_asyncio.Future[None]"] = None
        self._cq: Any = None
        self._fd = -1
        self._pending: Dict[int, Tuple["_asyncio.Future[List[Any]]", Any, int]] = {}
        self._batches: List[Any] = []
        self._all_batches: List[Any] = []
        self._next = 1
        self._room: Optional[_asyncio.Event] = None
        self._comps = ffi.new("sl_completion[]", _DRAIN)
        self._datap = ffi.new("uint8_t **")
        self._mode = lib.SL_MODE_AUTO

    # ------------------------------------------------------------ connecting

    async def connect(self) -> None:
        """Connects now (the first command does it otherwise); raises what the blocking
        client's constructor raises (ConnectionError, ClusterError, ArgumentError...)."""
        if self._client is not None:
            return
        if self._closed:
            raise _errors.Error("the client is closed")
        loop = _asyncio.get_running_loop()
        if self._connecting is None:
            self._connecting = loop.create_future()
            try:
                client = await loop.run_in_executor(None, self._new_core_client)
                self._attach(loop, client)
            except BaseException as e:
                fut, self._connecting = self._connecting, None
                fut.set_exception(e)
                fut.exception()  # retrieved: the awaiting callers get it below
                raise
            self._connecting.set_result(None)
        else:
            await _asyncio.shield(self._connecting)

    def _new_core_client(self) -> Any:
        out = ffi.new("sl_client **")
        errbuf = ffi.new("char[512]")
        rc = lib.sl_client_new(out, self._opts, errbuf, 512)
        if rc != 0:
            _raise_code(rc, ffi.string(errbuf).decode("utf-8", "replace"))
        return out[0]

    def _attach(self, loop: _asyncio.AbstractEventLoop, client: Any) -> None:
        cqp = ffi.new("sl_cq **")
        rc = lib.sl_cq_new(cqp)
        if rc != 0:
            lib.sl_client_free(client)
            _raise_code(rc, "could not make a completion queue")
        self._client, self._cq, self._aloop = client, cqp[0], loop
        self._mode = lib.sl_client_mode(client)
        self._fd = lib.sl_cq_fd(self._cq)
        self._room = _asyncio.Event()
        loop.add_reader(self._fd, self._on_completions)

    # ------------------------------------------------------------ completions

    def _on_completions(self) -> None:
        """The queue's descriptor is readable: take every completion, resolve its future."""
        comps = self._comps
        pending = self._pending
        free = self._batches
        text = self._text
        datap = self._datap
        while True:
            n = _drain(self._cq, comps, _DRAIN)
            for i in range(n):
                c = comps[i]
                token = int(ffi.cast("uintptr_t", c.token))
                fut, b, count = pending.pop(token)
                if not fut.done():  # a cancelled caller's batch only comes back to the pool
                    status = c.status
                    sizes = c.sizes
                    if status < 0 and (status in _NO_RECORDS_CODES or sizes.commands != count):
                        fut.set_exception(_errors.CODE_CLASS.get(status, _errors.Error)(_message(status)))
                    else:
                        recs = lib.sl_batch_replies(b, ffi.NULL, datap, ffi.NULL)
                        nd = sizes.data
                        fut.set_result(decode_records(_buffer(recs, sizes.records * 24),
                                                      _buffer(datap[0], nd)[:] if nd else b"", text))
                free.append(b)
            if n < _DRAIN:
                break
        room = self._room
        if room is not None and n and not room.is_set():
            room.set()

    # ------------------------------------------------------------ execution

    def _batch(self) -> Any:
        if self._batches:
            return self._batches.pop()
        out = ffi.new("sl_batch **")
        rc = lib.sl_batch_new(self._client, out)
        if rc != 0:
            _raise_code(rc, _message(rc))
        self._all_batches.append(out[0])
        return out[0]

    async def _exec(self, payload: bytes, count: int) -> List[Any]:
        """Submits one batch of count commands and awaits its decoded replies."""
        if self._client is None:
            await self.connect()
        if self._closed:
            raise _errors.Error("the client is closed")
        if _asyncio.get_running_loop() is not self._aloop:
            raise _errors.Error("a slotlane.asyncio.Client is used on the event loop it was first used on")
        b = self._batch()
        token = self._next
        self._next = token + 1
        while True:
            rc = _slpy_submit(_core_loop(), b, payload, len(payload), count, 0, self._cq, ffi.cast("void *", token))
            if rc != lib.SL_EBUSY:
                break
            room = self._room
            assert room is not None
            room.clear()
            await room.wait()
        if rc != 0:
            self._batches.append(b)
            if rc == lib.SL_EINVAL:
                raise _errors.ArgumentError("malformed command bytes")
            _raise_code(rc, _message(rc))
        aloop = self._aloop
        assert aloop is not None
        fut: "_asyncio.Future[List[Any]]" = aloop.create_future()
        self._pending[token] = (fut, b, count)
        try:
            return await fut
        except _asyncio.CancelledError:
            if token in self._pending:
                lib.sl_batch_cancel(b)  # its completion still comes, and returns the batch
            raise

    async def _one(self, payload: bytes, cb: Optional[Callback]) -> Any:
        r = (await self._exec(payload, 1))[0]
        if isinstance(r, _errors.Error):
            raise r
        return r if cb is None else cb(r)

    async def _cmd(self, args: Any, cb: Optional[Callback] = None) -> Any:
        parts: List[bytes] = []
        encode_into(parts, args, self.encoding, self.encoding_errors)
        return await self._one(b"".join(parts), cb)

    async def _c1(self, pfx: bytes, a: Any, cb: Optional[Callback] = None) -> Any:
        return await self._one(_payload1(pfx, a, self.encoding, self.encoding_errors), cb)

    async def _c2(self, pfx: bytes, a: Any, b: Any, cb: Optional[Callback] = None) -> Any:
        return await self._one(_payload2(pfx, a, b, self.encoding, self.encoding_errors), cb)

    async def execute_command(self, *args: Any, target: Target = None) -> Any:
        """Runs one command given as its arguments and returns its reply (an error reply is
        raised). ``target`` is the blocking client's routing override; only None (route
        by key) is supported here."""
        if target is not None:
            raise _errors.ArgumentError("target= is not supported by slotlane.asyncio yet: route by key")
        return await self._cmd(args)

    def pipeline(self) -> "Pipeline[_S]":
        """A pipeline: queue commands, then ``await p.execute()`` sends them as one batch."""
        return Pipeline(self)

    # ------------------------------------------------------------ state

    @property
    def mode(self) -> str:
        """``"cluster"`` or ``"plain"`` (``"unknown"`` until connected)."""
        if self._client is None:
            return "unknown"
        return "cluster" if self._mode == lib.SL_MODE_CLUSTER else "plain"

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> Dict[str, int]:
        """The core's counters (as slotlane.Client.stats()); read while the loop thread
        may be counting, so a figure can lag by the executions in flight."""
        acc: Dict[str, int] = {}
        if self._client is not None:
            _SyncClient._add_stats_of(acc, self._client)
        return acc

    async def close(self) -> None:
        """Cancels what is in flight (those calls raise CancelledError), closes every
        connection and frees the client. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        client = self._client
        if client is None:
            return
        for _fut, b, _count in list(self._pending.values()):
            lib.sl_batch_cancel(b)
        # Detaching waits (in a worker thread) until every execution has completed into
        # the queue; the drain then resolves every future.
        await _asyncio.get_running_loop().run_in_executor(None, lib.sl_loop_detach, _core_loop(), client)
        self._on_completions()
        for fut, _b, _count in self._pending.values():  # none are left: completions are exactly once
            if not fut.done():
                fut.set_exception(_errors.CancelledError("the client was closed"))
        if self._aloop is not None:
            self._aloop.remove_reader(self._fd)
        for b in self._all_batches:
            lib.sl_batch_free(b)
        self._all_batches = []
        self._batches = []
        lib.sl_client_free(client)
        lib.sl_cq_free(self._cq)
        self._client = self._cq = None

    async def __aenter__(self) -> "Client[_S]":
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        url = ffi.string(self._opts.url).decode() if getattr(self, "_opts", None) else "?"
        url = url.split("@", 1)[-1] if "@" in url else url
        return "<slotlane.asyncio.Client %s %s%s>" % (url, self.mode, " closed" if self._closed else "")


class Pipeline(_Queue, Generic[_S]):
    """Queued commands sent together by ``await execute()`` as one batch. The typed
    methods and ``execute_command`` queue and return the pipeline. ``async with
    r.pipeline() as p``: leaving the block discards what was not executed."""

    __slots__ = ()

    async def execute(self, raise_on_error: bool = False) -> List[Any]:
        """Sends every queued command and returns their results in order (a failed
        command's result is its exception instance, or with ``raise_on_error=True`` the
        first one is raised). Cancelling the awaiting task cancels the batch."""
        if self._n == 0:
            return []
        payload, n, cbs, oks = self._take()
        res = await self._client._exec(payload, n)
        return self._shape(res, cbs, oks, raise_on_error)

    async def __aenter__(self) -> "Pipeline[_S]":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.reset()

    def __repr__(self) -> str:
        return "<slotlane.asyncio.Pipeline %d queued>" % self._n
