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
from typing import (Any, AsyncIterator, Callable, Dict, Generic, List, Literal, Optional, Sequence, Set, Tuple,
                    TypeVar, overload)

from . import _cluster, _errors
from ._client import Client as _SyncClient, Target, _payload1, _payload2, _Queue, _raise_code
from ._codec import Callback, decode_records, encode_into
from ._commands import AsyncClientCommands
from ._native import ffi, lib
from ._pubsub import Message, PubSubBase

__all__ = ["Client", "Pipeline", "PubSub", "Script"]

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
        self._pending: Dict[int, Tuple["_asyncio.Future[Any]", Any, int]] = {}
        # A chain's submission (a scan page, a script: count 0 in _pending) is answered by its
        # handler(status, batch, sizes), also when its caller was cancelled.
        self._handlers: Dict[int, Callable[[int, Any, Any], Any]] = {}
        self._scans: Set[Any] = set()  # live sl_scan iterators: freed before the client
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
                if count == 0:
                    self._answer(fut, self._handlers.pop(token), c.status, b, c.sizes)
                elif not fut.done():  # a cancelled caller's batch only comes back to the pool
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

    @staticmethod
    def _answer(fut: "_asyncio.Future[Any]", handler: Callable[[int, Any, Any], Any], status: int, b: Any,
                sizes: Any) -> None:
        try:
            value = handler(status, b, sizes)
        except BaseException as e:  # the handler's verdict goes to the caller
            if not fut.done():
                fut.set_exception(e)
            return
        if not fut.done():
            fut.set_result(value)

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

    async def _chain(self, submit: Callable[[Any, Any], int], handler: Callable[[int, Any, Any], Any]) -> Any:
        """One submission of a chain in the core (a scan's page, EVALSHA with reload):
        submit(batch, token) submits it (fail-fast); its completion is answered by
        handler(status, batch, sizes). Cancelling the awaiting task cancels it."""
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
            rc = submit(b, ffi.cast("void *", token))
            if rc != lib.SL_EBUSY:
                break
            room = self._room
            assert room is not None
            room.clear()
            await room.wait()
        if rc != 0:
            self._batches.append(b)
            _raise_code(rc, _message(rc))
        aloop = self._aloop
        assert aloop is not None
        fut: "_asyncio.Future[Any]" = aloop.create_future()
        self._pending[token] = (fut, b, 0)
        self._handlers[token] = handler
        try:
            return await fut
        except _asyncio.CancelledError:
            if token in self._pending:
                lib.sl_batch_cancel(b)
            raise

    def _one_reply(self, status: int, b: Any, sizes: Any) -> Any:
        """A chain's one reply (a script's answer), decoded; an error reply is raised."""
        if status < 0 and (status in _NO_RECORDS_CODES or sizes.commands != 1):
            raise _errors.CODE_CLASS.get(status, _errors.Error)(_message(status))
        datap = self._datap
        recs = lib.sl_batch_replies(b, ffi.NULL, datap, ffi.NULL)
        nd = sizes.data
        r = decode_records(_buffer(recs, sizes.records * 24), _buffer(datap[0], nd)[:] if nd else b"", self._text)[0]
        if isinstance(r, _errors.Error):
            raise r
        return r

    async def scan_iter(self, match: Any = None, count: Optional[int] = None,
                        _type: Any = None) -> AsyncIterator[Any]:
        """Every key of the cluster (every primary; in plain mode the one node):
        ``async for key in r.scan_iter(match="user:*", count=1000, _type="hash")``. The
        core's cluster SCAN, its pages fetched on the loop thread (sl_loop_submit_scan_cq):
        it tracks slots, so a key that exists throughout comes at least once, also across a
        reshard or failover (a key of a moved slot may come twice)."""
        opts, keep = _cluster.scan_options(self, match, count, _type)
        if self._client is None:
            await self.connect()
        if self._closed:
            raise _errors.Error("the client is closed")
        out = ffi.new("sl_scan **")
        rc = lib.sl_scan_new(self._client, opts, out)
        if rc != 0:
            _raise_code(rc, _message(rc))
        del keep
        scan = out[0]
        self._scans.add(scan)
        state = {"inflight": False, "abandoned": False}
        text = self._text
        datap = self._datap
        nrec = ffi.new("size_t *")
        ndata = ffi.new("size_t *")

        def page(status: int, b: Any, sizes: Any) -> List[Any]:
            state["inflight"] = False
            if state["abandoned"]:  # its iterator was closed while this page was in flight
                self._free_scan(scan)
            if status != 0:
                raise _errors.CODE_CLASS.get(status, _errors.Error)(
                    ffi.string(lib.sl_scan_errmsg(scan)).decode("utf-8", "replace") if scan in self._scans
                    else _message(status))
            recs = lib.sl_batch_replies(b, nrec, datap, ndata)
            nd = ndata[0]
            return _cluster._page_keys(_buffer(recs, nrec[0] * 24), _buffer(datap[0], nd) if nd else b"", text)

        def submit(b: Any, token: Any) -> int:
            return int(lib.sl_loop_submit_scan_cq(_core_loop(), scan, b, 0, self._cq, token, lib.SL_SUBMIT_FAIL_FAST))

        try:
            while scan in self._scans and not lib.sl_scan_done(scan):
                state["inflight"] = True
                try:
                    keys = await self._chain(submit, page)
                except BaseException:  # cancelled while in flight: its completion frees the scan
                    state["inflight"] = any(h is page for h in self._handlers.values())
                    raise
                for k in keys:
                    yield k
        finally:
            if state["inflight"]:
                state["abandoned"] = True  # freed by its completion
            else:
                self._free_scan(scan)

    def _free_scan(self, scan: Any) -> None:
        if scan in self._scans:
            self._scans.discard(scan)
            lib.sl_scan_free(scan)

    async def _key_scan(self, scan: Any, name: Any, match: Any, count: Optional[int]) -> AsyncIterator[Any]:
        """One key's *SCAN (scan: the typed method) from cursor 0 to the server's 0."""
        cursor = 0
        while True:
            cursor, items = await scan(name, cursor, match=match, count=count)
            for item in items:
                yield item
            if cursor == 0:
                return

    def hscan_iter(self, name: Any, match: Any = None, count: Optional[int] = None) -> AsyncIterator[Any]:
        """One hash's (field, value) pairs: HSCAN from cursor 0 to the server's 0."""
        return self._key_scan(self.hscan, name, match, count)

    def sscan_iter(self, name: Any, match: Any = None, count: Optional[int] = None) -> AsyncIterator[Any]:
        """One set's members: SSCAN from cursor 0 to the server's 0."""
        return self._key_scan(self.sscan, name, match, count)

    def zscan_iter(self, name: Any, match: Any = None, count: Optional[int] = None) -> AsyncIterator[Any]:
        """One sorted set's (member, score) pairs: ZSCAN from cursor 0 to the server's 0."""
        return self._key_scan(self.zscan, name, match, count)

    def register_script(self, script: Any) -> "Script":
        """A Lua script bound to this client: ``await s(keys=[...], args=[...])`` runs
        EVALSHA; a node that answers NOSCRIPT gets the script and the command once more,
        on the core's loop thread (sl_loop_submit_script_cq)."""
        return Script(self, script)

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

    def pubsub(self, *, ignore_subscribe_messages: bool = False, health_check_interval: Optional[float] = None,
               max_queue_bytes: Optional[int] = None) -> "PubSub":
        """A subscriber (slotlane.Client.pubsub's options and events), awaited with
        ``await p.get_message(timeout=)`` or ``async for m in p``. It connects at once (a
        discovery on the calling thread: make it outside hot paths)."""
        return PubSub(self, ignore_subscribe_messages=ignore_subscribe_messages,
                      health_check_interval=health_check_interval, max_queue_bytes=max_queue_bytes)

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
        for scan in list(self._scans):  # nothing is in flight now
            self._free_scan(scan)
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


class Script(_cluster.ScriptBody):
    """A Lua script bound to an asyncio client (``Client.register_script``):
    ``await script(keys=[...], args=[...], readonly=False)``."""

    def __init__(self, client: "Client[Any]", script: Any) -> None:
        super().__init__(client, script)
        self.client = client

    async def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = (),
                       client: "Optional[Client[Any]]" = None, readonly: bool = False) -> Any:
        c = client or self.client
        payload = self.payload(c, keys, args, readonly)
        body = self.script

        def submit(b: Any, token: Any) -> int:
            return int(lib.slpy_submit_script(_core_loop(), b, payload, len(payload), body, len(body), c._cq, token))

        return await c._chain(submit, c._one_reply)


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


class PubSub(PubSubBase):
    """``slotlane.asyncio.Client.pubsub()``: the core's subscriber; its descriptor is watched
    by the event loop (``loop.add_reader``) while a coroutine waits for a message."""

    async def _readable(self, timeout: Optional[float]) -> None:
        loop = _asyncio.get_running_loop()
        fut: "_asyncio.Future[None]" = loop.create_future()
        fd = self._core.fileno()

        def ready() -> None:
            if not fut.done():
                fut.set_result(None)

        loop.add_reader(fd, ready)
        try:
            await _asyncio.wait_for(fut, timeout)
        except _asyncio.TimeoutError:
            pass
        finally:
            loop.remove_reader(fd)

    async def get_message(self, ignore_subscribe_messages: bool = False,
                          timeout: Optional[float] = 0.0) -> Optional[Message]:
        """The next message as a dict, or None when none came within timeout seconds (None:
        no limit; 0: do not wait) or a handler took it."""
        ignore = ignore_subscribe_messages or self.ignore_subscribe_messages
        core = self._core
        pending = core.pending
        if not pending:
            core.fill(0)
            if not pending and timeout != 0 and core._sub:
                await self._readable(timeout)
                core.fill(0)
            if not pending:
                return None
        return self._handle(pending.popleft(), ignore)

    async def listen(self) -> AsyncIterator[Message]:
        """Every message as it comes, while the pubsub is open (also ``async for m in p``)."""
        core = self._core
        pending = core.pending
        while core._sub:
            if not pending:
                core.fill(0)
                if not pending:
                    await self._readable(None)
                    continue
            m = self._handle(pending.popleft(), self.ignore_subscribe_messages)
            if m is not None:
                yield m

    def __aiter__(self) -> AsyncIterator[Message]:
        return self.listen()

    async def close(self) -> None:
        """Closes the subscriber's connections and stops its thread."""
        self._core.free()

    aclose = close
    reset = close

    async def __aenter__(self) -> "PubSub":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __del__(self) -> None:
        core = getattr(self, "_core", None)
        if core is not None:
            core.free()
