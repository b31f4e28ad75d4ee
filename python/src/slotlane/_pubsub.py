"""PubSub: redis-py's pub/sub shape over the core's subscriber (slotlane.h, "pub/sub").

The core owns the subscriber's connections and its thread: it subscribes what this object
asks for, keeps it subscribed across lost connections, failovers and slot moves, and queues
messages and events as records; this module only turns records into redis-py's dicts
``{"type", "pattern", "channel", "data"}``. Besides redis-py's types (message, pmessage,
smessage, subscribe, psubscribe, ssubscribe and their unsubscribes) there are:

- ``resubscribed``: the channel (``data``: which kind, "subscribe", "psubscribe" or
  "ssubscribe") is subscribed again after a gap: messages published meanwhile were missed;
- ``connection_lost``: a subscriber connection broke (``data``: node and reason);
- ``overflow``: the bounded queue was full and ``data`` messages were dropped there;
- ``error``: a server refused a subscription (``data``: its error).
"""
import collections
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Tuple

from . import _errors
from ._native import ffi, lib

Message = Dict[str, Any]
Handler = Callable[[Message], None]

_KIND_TYPE = {lib.SL_MSG_MESSAGE: "message", lib.SL_MSG_PMESSAGE: "pmessage",
              lib.SL_MSG_SMESSAGE: "smessage", lib.SL_MSG_SUBSCRIBE: "subscribe",
              lib.SL_MSG_PSUBSCRIBE: "psubscribe", lib.SL_MSG_SSUBSCRIBE: "ssubscribe",
              lib.SL_MSG_UNSUBSCRIBE: "unsubscribe", lib.SL_MSG_PUNSUBSCRIBE: "punsubscribe",
              lib.SL_MSG_SUNSUBSCRIBE: "sunsubscribe", lib.SL_MSG_RESUBSCRIBED: "resubscribed",
              lib.SL_MSG_OVERFLOW: "overflow", lib.SL_MSG_CONNECTION_LOST: "connection_lost",
              lib.SL_MSG_ERROR: "error"}
_SUB_WORD = ("subscribe", "psubscribe", "ssubscribe")
_SUBSCRIBE_TYPES = frozenset(("subscribe", "psubscribe", "ssubscribe", "unsubscribe",
                              "punsubscribe", "sunsubscribe"))
_BATCH = 256


def _raise(rc: int, what: str) -> None:
    msg = "%s: %s" % (what, ffi.string(lib.sl_strerror(rc)).decode("utf-8", "replace"))
    raise _errors.CODE_CLASS.get(rc, _errors.Error)(msg)


def _name(v: Any, encoding: str, errors: str) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode(encoding, errors)
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(v).encode("ascii")
    raise TypeError("a channel or pattern must be bytes, str or a number, not %s" % type(v).__name__)


class _Subscriber:
    """The core's subscriber and the drain buffers: what the sync and asyncio forms share."""

    def __init__(self, opts: Any, text: Optional[Tuple[str, str]], encoding: str, errors: str,
                 health_check_interval: Optional[float], max_queue_bytes: Optional[int]) -> None:
        self._sub = ffi.NULL
        so = ffi.new("sl_subscriber_options *")
        so.version = lib.SL_SUBSCRIBER_OPTIONS_VERSION
        so.size = ffi.sizeof("sl_subscriber_options")
        if health_check_interval is not None:
            if not isinstance(health_check_interval, (int, float)) or health_check_interval < 0:
                raise ValueError("health_check_interval must be None (30 s), 0 (never) or seconds > 0")
            so.health_check_interval_ms = -1 if health_check_interval == 0 else max(1, int(health_check_interval * 1000))
        if max_queue_bytes is not None:
            if not isinstance(max_queue_bytes, int) or max_queue_bytes <= 0:
                raise ValueError("max_queue_bytes must be a positive int")
            so.max_queue_bytes = max_queue_bytes
        out = ffi.new("sl_subscriber **")
        errbuf = ffi.new("char[512]")
        rc = lib.sl_subscriber_new(out, opts, so, errbuf, 512)
        if rc != 0:
            raise _errors.CODE_CLASS.get(rc, _errors.Error)(ffi.string(errbuf).decode("utf-8", "replace"))
        self._sub = out[0]
        self._text = text
        self._encoding = encoding
        self._errors = errors
        self._msgs = ffi.new("sl_message[]", _BATCH)
        self._cap = 1 << 16
        self._data = ffi.new("uint8_t[]", self._cap)
        self._count = ffi.new("size_t *")
        self._used = ffi.new("size_t *")
        self.pending: Deque[Message] = collections.deque()

    def fileno(self) -> int:
        return int(lib.sl_subscriber_fd(self._sub))

    def op(self, subscribe: bool, kind: int, name: Optional[bytes]) -> None:
        if not self._sub:
            raise _errors.Error("the pubsub is closed")
        if subscribe:
            assert name is not None
            rc = lib.sl_subscriber_subscribe(self._sub, kind, name, len(name))
        else:
            rc = lib.sl_subscriber_unsubscribe(self._sub, kind, ffi.NULL if name is None else name,
                                               0 if name is None else len(name))
        if rc != 0:
            _raise(rc, "subscribe" if subscribe else "unsubscribe")

    def fill(self, timeout_ms: int) -> bool:
        """Drains one batch of records into pending (waiting up to timeout_ms, -1: no limit,
        without the GIL); False when the subscriber is closed and empty."""
        if not self._sub:
            return False
        rc = lib.sl_subscriber_drain(self._sub, timeout_ms, self._msgs, _BATCH, self._data, self._cap,
                                     self._count, self._used)
        if rc == lib.SL_ETOOSMALL:
            self._cap = max(self._cap * 2, int(self._used[0]))
            self._data = ffi.new("uint8_t[]", self._cap)
            rc = lib.sl_subscriber_drain(self._sub, 0, self._msgs, _BATCH, self._data, self._cap,
                                         self._count, self._used)
        if rc == lib.SL_ESTATE:
            return False
        if rc != 0:
            _raise(rc, "get_message")
        n = int(self._count[0])
        if n == 0:
            return True
        raw = ffi.buffer(self._data, int(self._used[0]))[:]
        text = self._text
        append = self.pending.append
        for i in range(n):
            m = self._msgs[i]
            kind = m.kind
            off = m.offset
            chl = m.channel_len
            patl = m.pattern_len
            payl = m.payload_len
            ch: Any = raw[off:off + chl]
            typ = _KIND_TYPE.get(kind, "unknown")
            if kind <= lib.SL_MSG_SMESSAGE:
                pat: Any = raw[off + chl:off + chl + patl] if kind == lib.SL_MSG_PMESSAGE else None
                data: Any = raw[off + chl + patl:off + chl + patl + payl]
                if text is not None:
                    ch = ch.decode(*text)
                    data = data.decode(*text)
                    if pat is not None:
                        pat = pat.decode(*text)
                append({"type": typ, "pattern": pat, "channel": ch, "data": data})
                continue
            if text is not None:
                ch = ch.decode(*text)
            if kind == lib.SL_MSG_RESUBSCRIBED:
                append({"type": typ, "pattern": None, "channel": ch, "data": _SUB_WORD[m.flags % 3]})
            elif kind in (lib.SL_MSG_OVERFLOW,):
                append({"type": typ, "pattern": None, "channel": None, "data": int(m.count)})
            elif kind in (lib.SL_MSG_CONNECTION_LOST, lib.SL_MSG_ERROR):
                why = raw[off + chl + patl:off + chl + patl + payl].decode("utf-8", "replace")
                append({"type": typ, "pattern": None, "channel": None, "data": why})
            else:
                append({"type": typ, "pattern": None, "channel": ch if chl or kind <= lib.SL_MSG_SSUBSCRIBE else None,
                        "data": int(m.count)})
        return True

    def stats(self) -> Dict[str, int]:
        st = ffi.new("sl_subscriber_stats *")
        st.version = lib.SL_SUBSCRIBER_STATS_VERSION
        st.size = ffi.sizeof("sl_subscriber_stats")
        if self._sub:
            lib.sl_subscriber_stats_get(self._sub, st)
        return {k: int(getattr(st, k)) for k in ("messages", "dropped", "connection_losses", "resubscribed",
                                                 "pings", "refreshes", "confirmed", "queued_bytes", "bytes_read")}

    def close(self) -> None:
        if self._sub:
            lib.sl_subscriber_close(self._sub)

    def free(self) -> None:
        sub, self._sub = self._sub, ffi.NULL
        if sub:
            lib.sl_subscriber_free(sub)


class PubSubBase:
    """What the sync and asyncio PubSub share: the wanted set (with redis-py's handlers)
    and turning records into dicts."""

    def __init__(self, client: Any, ignore_subscribe_messages: bool = False,
                 health_check_interval: Optional[float] = None, max_queue_bytes: Optional[int] = None) -> None:
        self._client = client  # its options (and the strings they point to) stay alive
        self._core = _Subscriber(client._opts, client._text, client.encoding, client.encoding_errors,
                                 health_check_interval, max_queue_bytes)
        self.ignore_subscribe_messages = ignore_subscribe_messages
        self.channels: Dict[Any, Optional[Handler]] = {}
        self.patterns: Dict[Any, Optional[Handler]] = {}
        self.shard_channels: Dict[Any, Optional[Handler]] = {}

    def _key(self, b: bytes) -> Any:
        text = self._client._text
        return b.decode(*text) if text is not None else b

    def _change(self, subscribe: bool, kind: int, table: Dict[Any, Optional[Handler]],
                args: Tuple[Any, ...], kwargs: Dict[str, Handler]) -> None:
        names: List[Tuple[bytes, Optional[Handler]]] = []
        for a in args:
            for v in (a if isinstance(a, (list, tuple, set)) else (a,)):
                names.append((_name(v, self._client.encoding, self._client.encoding_errors), None))
        for k, h in kwargs.items():
            names.append((_name(k, self._client.encoding, self._client.encoding_errors), h))
        if not subscribe and not names:
            self._core.op(False, kind, None)
            table.clear()
            return
        for b, handler in names:
            self._core.op(subscribe, kind, b)
            if subscribe:
                table[self._key(b)] = handler
            else:
                table.pop(self._key(b), None)

    def subscribe(self, *args: Any, **kwargs: Handler) -> None:
        """SUBSCRIBE channels (kwargs: channel=handler, called instead of returning its messages)."""
        self._change(True, lib.SL_SUB_CHANNEL, self.channels, args, kwargs)

    def psubscribe(self, *args: Any, **kwargs: Handler) -> None:
        self._change(True, lib.SL_SUB_PATTERN, self.patterns, args, kwargs)

    def ssubscribe(self, *args: Any, **kwargs: Handler) -> None:
        """SSUBSCRIBE shard channels: on their slot's owner, followed across slot moves."""
        self._change(True, lib.SL_SUB_SHARD, self.shard_channels, args, kwargs)

    def unsubscribe(self, *args: Any) -> None:
        """UNSUBSCRIBE these channels (none: every channel)."""
        self._change(False, lib.SL_SUB_CHANNEL, self.channels, args, {})

    def punsubscribe(self, *args: Any) -> None:
        self._change(False, lib.SL_SUB_PATTERN, self.patterns, args, {})

    def sunsubscribe(self, *args: Any) -> None:
        self._change(False, lib.SL_SUB_SHARD, self.shard_channels, args, {})

    @property
    def subscribed(self) -> bool:
        return bool(self.channels or self.patterns or self.shard_channels)

    def stats(self) -> Dict[str, int]:
        """The core subscriber's counters (messages, dropped, connection_losses, resubscribed,
        pings, refreshes, confirmed, queued_bytes, bytes_read)."""
        return self._core.stats()

    def fileno(self) -> int:
        """A descriptor readable while messages are queued (for select/selectors)."""
        return self._core.fileno()

    def _handle(self, m: Message, ignore: bool) -> Optional[Message]:
        """redis-py's rules: a handler takes its message (None is returned); subscribe
        confirmations are dropped when ignored."""
        t = m["type"]
        if t in _SUBSCRIBE_TYPES:
            return None if ignore else m
        h: Optional[Handler] = None
        if t == "message":
            h = self.channels.get(m["channel"])
        elif t == "pmessage":
            h = self.patterns.get(m["pattern"])
        elif t == "smessage":
            h = self.shard_channels.get(m["channel"])
        if h is not None:
            h(m)
            return None
        return m


class PubSub(PubSubBase):
    """``Client.pubsub()``: subscribe, then ``get_message(timeout=)`` or ``listen()``."""

    def get_message(self, ignore_subscribe_messages: bool = False,
                    timeout: Optional[float] = 0.0) -> Optional[Message]:
        """The next message as a dict, or None when none came within timeout seconds
        (None: wait without limit; 0: do not wait) or a handler took it."""
        ignore = ignore_subscribe_messages or self.ignore_subscribe_messages
        pending = self._core.pending
        if not pending:
            ms = -1 if timeout is None else max(0, int(timeout * 1000))
            if not self._core.fill(ms):
                return None
            if not pending:
                return None
        return self._handle(pending.popleft(), ignore)

    def listen(self) -> Iterator[Message]:
        """Every message, as it comes, while the pubsub is open."""
        pending = self._core.pending
        while self._core._sub:
            if not pending and not self._core.fill(1000):  # a second at a time: Ctrl-C works
                return
            while pending:
                m = self._handle(pending.popleft(), self.ignore_subscribe_messages)
                if m is not None:
                    yield m

    def close(self) -> None:
        """Closes the subscriber's connections and stops its thread."""
        self._core.free()

    reset = close

    def __enter__(self) -> "PubSub":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        core = getattr(self, "_core", None)
        if core is not None:
            core.free()


__all__ = ["PubSub", "PubSubBase", "Message"]
