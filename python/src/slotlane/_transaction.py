"""Transaction: ``Client.pipeline(transaction=True)``, redis-py's transactional pipeline on
the core's sessions (slotlane.h, ``sl_session_*``).

Without ``watch()`` the queued commands go out as MULTI ... EXEC in one pipeline (the core
routes the group to its slot's owner and refuses one that spans slots). ``watch(*keys)``
pins a session: one connection, leased for this transaction, to the primary of the keys'
slot; until ``multi()`` every command runs at once on it (redis-py's immediate mode), and
``execute()`` sends MULTI ... EXEC there. EXEC answering nil raises ``WatchError``; the
slot moving while watched raises ``WatchMovedError`` (a ``WatchError``: the usual retry
loop takes it up on the new owner). ``reset()`` (also on leaving a ``with`` block, and
after ``execute()``) ends the session: the core sends UNWATCH or DISCARD when needed and
returns the connection clean, or closes it after an error."""
from typing import Any, Callable, Generic, List, Optional, Tuple, TypeVar

from . import _errors
from ._client import _Queue, _payload1, _payload2, _raise_code
from ._codec import Callback, decode_records, encode_into
from ._commands import ClientCommands
from ._native import ffi, lib

_S = TypeVar("_S", bytes, str)
_MULTI = b"*1\r\n$5\r\nMULTI\r\n"
_EXEC = b"*1\r\n$4\r\nEXEC\r\n"
_NO_RECORDS_CODES = (lib.SL_EINVAL, lib.SL_ENOMEM, lib.SL_ESTATE)


class _Immediate(ClientCommands[Any]):
    """The client's typed methods run at once on a transaction's session: what a
    Transaction's methods are between watch() and multi() (redis-py's immediate mode)."""

    __slots__ = ("_t",)

    def __init__(self, t: "Transaction[Any]") -> None:
        self._t = t

    def _cmd(self, args: Any, cb: Optional[Callback] = None) -> Any:
        t = self._t
        parts: List[bytes] = []
        encode_into(parts, args, t._enc, t._errs)
        return t._now(b"".join(parts), cb)

    def _c1(self, pfx: bytes, a: Any, cb: Optional[Callback] = None) -> Any:
        t = self._t
        return t._now(_payload1(pfx, a, t._enc, t._errs), cb)

    def _c2(self, pfx: bytes, a: Any, b: Any, cb: Optional[Callback] = None) -> Any:
        t = self._t
        return t._now(_payload2(pfx, a, b, t._enc, t._errs), cb)

    def execute_command(self, *args: Any) -> Any:
        return self._cmd(list(args))


# The names that run at once while watching: every typed method and execute_command.
_IMMEDIATE = frozenset(n for n in dir(ClientCommands) if not n.startswith("_")) | {"execute_command"}


class Transaction(_Queue, Generic[_S]):
    """``Client.pipeline(transaction=True)``: queued commands run as one MULTI ... EXEC;
    with ``watch()`` first, on a connection of their own (see the module)."""

    __slots__ = ("_h", "_session", "_watching", "_multi", "_imm")

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self._h: Any = None
        self._session: Any = None
        self._watching = False
        self._multi = False
        self._imm = _Immediate(self)

    def __getattribute__(self, name: str) -> Any:
        # Between watch() and multi() a command runs at once and returns its reply.
        if name in _IMMEDIATE:
            get = object.__getattribute__
            if get(self, "_watching") and not get(self, "_multi"):
                return getattr(get(self, "_imm"), name)
        return object.__getattribute__(self, name)

    # ------------------------------------------------------------ the session

    def _pin(self) -> Any:
        if self._session is None:
            h = self._client._acquire()
            out = ffi.new("sl_session **")
            rc = lib.sl_session_new(h.client, out)
            if rc != 0:
                self._client._release(h)
                _raise_code(rc, h.errmsg())
            self._h, self._session = h, out[0]
        return self._h

    def _run(self, payload: bytes, count: int) -> Tuple[int, List[Any]]:
        """Runs the commands on the session (the GIL released): the code and the replies."""
        h = self._h
        sizes = h.sizes
        rc = lib.sl_session_run(self._session, h.batch, payload, len(payload), count, 0, ffi.NULL, 0, ffi.NULL, 0,
                                sizes)
        if rc < 0 and (rc in _NO_RECORDS_CODES or sizes.commands != count):
            _raise_code(rc, h.errmsg())
        recs = lib.sl_batch_replies(h.batch, ffi.NULL, h.datap, ffi.NULL)
        nd = sizes.data
        res = decode_records(ffi.buffer(recs, sizes.records * 24), ffi.buffer(h.datap[0], nd)[:] if nd else b"",
                             self._client._text)
        if rc == lib.SL_EWATCHMOVED:
            msg = h.errmsg()
            self.reset()  # the session is broken: a retry pins a new one on the new owner
            raise _errors.WatchMovedError(msg)
        return rc, res

    def _now(self, payload: bytes, cb: Optional[Callback]) -> Any:
        _, res = self._run(payload, 1)
        r = res[0]
        if isinstance(r, _errors.Error):
            raise r
        return r if cb is None else cb(r)

    # ------------------------------------------------------------ redis-py's API

    def watch(self, *names: Any) -> bool:
        """WATCH the keys on the transaction's own connection (to their slot's primary);
        commands then run at once until ``multi()``."""
        if self._multi:
            raise _errors.Error("Cannot issue a WATCH after a MULTI")
        if not names:
            raise _errors.ArgumentError("watch() needs at least one key")
        self._pin()
        self._imm._cmd([b"WATCH", *names])
        self._watching = True
        return True

    def unwatch(self) -> bool:
        """UNWATCH on the transaction's connection (no-op without a watch)."""
        if self._session is not None and self._watching:
            self._imm._cmd([b"UNWATCH"])
        self._watching = False
        return True

    def multi(self) -> None:
        """Starts queueing the transaction's commands (after ``watch()``); without a watch the
        pipeline queues from the start."""
        if self._multi:
            raise _errors.Error("Cannot issue nested calls to MULTI")
        if self._n:
            raise _errors.Error("Commands without an initial WATCH have already been issued")
        self._multi = True

    def execute(self, raise_on_error: bool = True) -> List[Any]:
        """Sends MULTI, the queued commands and EXEC, and returns the commands' results in
        order. Raises WatchError when EXEC answered nil (a watched key changed), and the
        first queued command's error when the server refused the transaction (EXECABORT)."""
        payload, n, cbs, oks = self._take()
        try:
            if n == 0 and not self._multi and not self._watching:
                return []
            body = b"".join((_MULTI, payload, _EXEC))
            if self._session is not None:
                rc, res = self._run(body, n + 2)
            else:
                client = self._client
                h = client._acquire()
                try:
                    res = client._run(h, body, n + 2)
                finally:
                    client._release(h)
                rc = 0
            exec_r = res[-1]
            if rc == lib.SL_EABORTED or (exec_r is None and self._watching):
                raise _errors.WatchError("Watched variable changed: the transaction was aborted (EXEC answered nil)")
            if isinstance(exec_r, _errors.Error):
                for r in res[1:-1]:  # EXECABORT: the command the server refused says why
                    if isinstance(r, _errors.Error):
                        raise r
                raise exec_r
            if not isinstance(exec_r, list) or len(exec_r) != n:
                raise _errors.ProtocolError("EXEC answered %r for %d commands" % (exec_r, n))
            return self._shape(exec_r, cbs, oks, raise_on_error)
        finally:
            self.reset()

    def reset(self) -> None:
        """Discards what was queued and ends the session (UNWATCH/DISCARD sent by the core
        when needed; the connection goes back to the pool clean)."""
        super().reset()
        self._watching = False
        self._multi = False
        s, h = self._session, self._h
        self._session = self._h = None
        if s is not None:
            lib.sl_session_close(s)
            self._client._release(h)

    def __enter__(self) -> "Transaction[_S]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.reset()

    def __del__(self) -> None:
        try:
            self.reset()
        except Exception:  # interpreter shutdown: nothing to give back to
            pass

    def __repr__(self) -> str:
        return "<slotlane.Transaction %d queued%s>" % (self._n, ", watching" if self._watching else "")


def transaction(client: Any, func: Callable[[Any], Any], *watches: Any, value_from_callable: bool = False) -> Any:
    """redis-py's ``Client.transaction``: runs func(pipe) with the keys watched and executes,
    again from the WATCH for as long as a watched key changes (WatchError)."""
    with Transaction(client) as pipe:
        while True:
            try:
                if watches:
                    pipe.watch(*watches)
                value = func(pipe)
                results = pipe.execute()
                return value if value_from_callable else results
            except _errors.WatchError:
                pipe.reset()
                continue
