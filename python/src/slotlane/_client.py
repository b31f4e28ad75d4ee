"""Client and Pipeline: a pool of core handles, one crossing into C per pipeline."""
import logging
import threading
from typing import Any, Callable, Dict, Generic, Iterator, List, Literal, Optional, Tuple, TypeVar, Union, overload

from . import _cluster, _errors, _pubsub
from ._codec import _CRLF, _HDR, Callback, conv, decode_records, encode_into
from ._commands import ClientCommands, PipelineCommands
from ._native import ffi, lib
from ._shapes import OK as _OK

__all__ = ["Client", "Pipeline", "ALL_PRIMARIES", "RANDOM"]

ALL_PRIMARIES = "all-primaries"
"""``target=ALL_PRIMARIES``: send the command to every primary (replies merged by the core
for DBSIZE, KEYS, FLUSHALL, FLUSHDB, PING...; otherwise a list with one reply per primary)."""
RANDOM = "random"
"""``target=RANDOM``: send the command to a random primary."""

Target = Union[None, str, int]
_S = TypeVar("_S", bytes, str)
_Q = TypeVar("_Q", bound="_Queue")

_NO_RECORDS_CODES = (lib.SL_EINVAL, lib.SL_ENOMEM, lib.SL_ESTATE)
_EBLOCKING = lib.SL_EBLOCKING
_slpy_run = lib.slpy_run
_buffer = ffi.buffer


def _raise_code(rc: int, message: str) -> None:
    """Raises the exception of a failed call of the core as a whole (the codes table of
    bindings/spec/errors.json: SL_EINVAL -> ArgumentError, a ValueError too)."""
    msg = message or ffi.string(lib.sl_strerror(rc)).decode("utf-8", "replace")
    raise _errors.CODE_CLASS.get(rc, _errors.Error)(msg)


def _payload1(pfx: bytes, a: Any, enc: str, errs: str) -> bytes:
    """The bytes of a one-argument command (its prefix: name and array header)."""
    if type(a) is not bytes:
        a = conv(a, enc, errs, pfx, 1)
    m = len(a)
    return b"".join((pfx, _HDR[m] if m < 4096 else b"$%d\r\n" % m, a, _CRLF))


def _payload2(pfx: bytes, a: Any, b: Any, enc: str, errs: str) -> bytes:
    """The bytes of a two-argument command."""
    if type(a) is not bytes:
        a = conv(a, enc, errs, pfx, 1)
    if type(b) is not bytes:
        b = conv(b, enc, errs, pfx, 2)
    m = len(a)
    n = len(b)
    return b"".join((pfx, _HDR[m] if m < 4096 else b"$%d\r\n" % m, a, _CRLF,
                     _HDR[n] if n < 4096 else b"$%d\r\n" % n, b, _CRLF))


_CERT_REQS = {"none": 0, "optional": 1, "required": 2}
_NODE_NAMES = {"address": "SL_TLS_NODES_ADDRESS", "hostname": "SL_TLS_NODES_HOSTNAME",
               "server_name": "SL_TLS_NODES_SERVER_NAME", "chain": "SL_TLS_NODES_CHAIN_ONLY"}


def _tls_config(ca_certs: Optional[str], ca_path: Optional[str], ca_data: Union[None, str, bytes],
                certfile: Optional[str], keyfile: Optional[str], cert_reqs: Union[str, int],
                check_hostname: bool, server_hostname: Optional[str], node_names: str) -> Any:
    """The core's TLS configuration (sl_tls) for redis-py's ssl_* options; freed by the GC."""
    # "none", "optional", "required", or ssl.CERT_NONE, CERT_OPTIONAL, CERT_REQUIRED (0, 1, 2)
    reqs = (_CERT_REQS.get(cert_reqs.lower(), -1) if isinstance(cert_reqs, str) else
            int(cert_reqs) if isinstance(cert_reqs, int) and 0 <= int(cert_reqs) <= 2 else -1)
    if reqs < 0:
        raise ValueError("ssl_cert_reqs must be 'none', 'optional' or 'required' (or ssl.CERT_*), got %r"
                         % (cert_reqs,))
    if node_names not in _NODE_NAMES:
        raise ValueError("ssl_node_names must be one of %s, got %r" % (", ".join(_NODE_NAMES), node_names))
    if keyfile is not None and certfile is None:
        raise ValueError("ssl_keyfile needs ssl_certfile")
    o = ffi.new("sl_tls_options *")
    rc = lib.sl_tls_options_init(o, lib.SL_TLS_OPTIONS_VERSION)
    if rc != 0:
        _raise_code(rc, "sl_tls_options_init failed")
    keep = []

    def cstr(name: str, v: Union[None, str, bytes]) -> Any:
        b = _opt_str(name, v)
        if b is None:
            return ffi.NULL
        c = ffi.new("char[]", b)
        keep.append(c)
        return c

    o.ca_file = cstr("ssl_ca_certs", ca_certs)
    o.ca_dir = cstr("ssl_ca_path", ca_path)
    o.ca_pem = cstr("ssl_ca_data", ca_data)
    o.cert_file = cstr("ssl_certfile", certfile)
    o.key_file = cstr("ssl_keyfile", keyfile if keyfile is not None else certfile)  # redis-py: key in the cert file
    o.server_name = cstr("ssl_server_hostname", server_hostname)
    o.verify = (lib.SL_TLS_VERIFY_NONE_INSECURE if reqs == 0 else
                lib.SL_TLS_VERIFY_FULL if check_hostname else lib.SL_TLS_VERIFY_CHAIN)
    o.node_names = getattr(lib, _NODE_NAMES[node_names])
    out = ffi.new("sl_tls **")
    errbuf = ffi.new("char[512]")
    rc = lib.sl_tls_new(out, o, errbuf, 512)
    if rc != 0:
        _raise_code(rc, ffi.string(errbuf).decode("utf-8", "replace"))
    return ffi.gc(out[0], lib.sl_tls_free)


class _Handle:
    """One core client (its own connections) with its batch and out-parameters."""

    __slots__ = ("client", "batch", "sizes", "recp", "datap")

    def __init__(self, opts: Any) -> None:
        out = ffi.new("sl_client **")
        errbuf = ffi.new("char[512]")
        rc = lib.sl_client_new(out, opts, errbuf, 512)
        if rc != 0:
            _raise_code(rc, ffi.string(errbuf).decode("utf-8", "replace"))
        self.client = out[0]
        bout = ffi.new("sl_batch **")
        rc = lib.sl_batch_new(self.client, bout)
        if rc != 0:
            msg = ffi.string(lib.sl_client_errmsg(self.client)).decode("utf-8", "replace")
            lib.sl_client_free(self.client)
            self.client = ffi.NULL
            _raise_code(rc, msg)
        self.batch = bout[0]
        self.sizes = ffi.new("sl_sizes *")
        self.recp = ffi.new("sl_reply **")
        self.datap = ffi.new("uint8_t **")

    def errmsg(self) -> str:
        return str(ffi.string(lib.sl_client_errmsg(self.client)).decode("utf-8", "replace"))

    def free(self) -> None:
        if self.batch:
            lib.sl_batch_free(self.batch)
            self.batch = ffi.NULL
        if self.client:
            lib.sl_client_free(self.client)
            self.client = ffi.NULL


def _seconds_to_ms(name: str, v: Optional[float], none_ms: int) -> int:
    if v is None:
        return none_ms
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("%s must be a number of seconds or None, not %s" % (name, type(v).__name__))
    if v < 0 or v != v:
        raise ValueError("%s must not be negative" % name)
    ms = int(round(v * 1000))
    if ms > 2 ** 31 - 1:
        raise ValueError("%s is too large" % name)
    return max(ms, 1) if v > 0 else 0


def _opt_int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, not %s" % (name, type(v).__name__))
    if not lo <= v <= hi:
        raise ValueError("%s must be in %d..%d, got %d" % (name, lo, hi, v))
    return v


def _opt_str(name: str, v: Any) -> Optional[bytes]:
    if v is None:
        return None
    if isinstance(v, bytes):
        b = v
    elif isinstance(v, str):
        b = v.encode("utf-8")
    else:
        raise TypeError("%s must be str or None, not %s" % (name, type(v).__name__))
    if b"\0" in b:
        raise ValueError("%s must not contain NUL characters" % name)
    return b


class Client(ClientCommands[_S]):
    """A Redis-protocol client for one server or a cluster, from a URL or host and port.

    ``Client("redis://user:pw@host:6379/0")``, ``Client("host", 6379)``,
    ``Client("h1:7000,h2:7001", cluster=True)``. Parsing the address, detecting a
    cluster, routing, splitting multi-key commands across slots and following redirects
    are done by the C core.

    ``cluster``: None asks the seed (a cluster when it answers CLUSTER SLOTS), True or
    False force cluster or plain mode. ``username``/``password``/``db`` override the
    URL's. ``protocol``: RESP version 2 or 3. ``socket_connect_timeout``: seconds per
    connection attempt (None: the core's default, 2 s); ``socket_timeout``: the deadline
    in seconds of one command or pipeline (None: no deadline). ``max_redirects``: MOVED/ASK/TRYAGAIN per command.
    ``refresh_interval``: seconds between periodic slot-map refreshes (None: only after
    MOVED). ``reconnect_backoff``: (first, max) seconds of the reconnect backoff.
    ``decode_responses``: bulk strings as str (with ``encoding``/``encoding_errors``)
    instead of bytes; str arguments are encoded with the same encoding.
    ``read_from``: where read-only commands go in a cluster — ``"primary"`` (default),
    ``"prefer_replica"`` (a replica of the slot's primary, the primary when none answers)
    or ``"replicas_round_robin"``; replica data may lag the primary's. ``retry_writes``:
    True sends a write whose connection broke after it was sent once more (it may then run
    twice); False (default) raises ``ConnectionError`` saying it may have run. Reads and
    commands that never reached the server are retried across a failover either way.
    ``on_event(event, address)``: called with ``"node_down"``, ``"node_up"``,
    ``"failover"`` or ``"topology_changed"`` (also logged to the ``slotlane`` logger); it
    runs inside a command on the calling thread and must not use the client.
    ``max_handles``: how many core handles (each with its own connections) threads may
    use at once; a thread that finds them all busy waits (``pool_timeout`` seconds,
    None: forever).

    TLS (as redis-py): ``ssl=True`` or a ``rediss://`` URL. ``ssl_ca_certs`` (a PEM file),
    ``ssl_ca_path`` (a hashed directory) and ``ssl_ca_data`` (PEM text) are the trusted CAs
    (none given: the system's); ``ssl_certfile``/``ssl_keyfile`` a client certificate
    (mutual TLS); ``ssl_cert_reqs`` ``"required"`` (default), ``"optional"`` (verified like
    required: OpenSSL has no "optional" for a client) or ``"none"`` (no verification:
    insecure), or ``ssl.CERT_*``; ``ssl_check_hostname=False`` verifies the chain only;
    ``ssl_server_hostname`` the name the seeds' certificates are checked against and sent
    as SNI instead of their address. ``ssl_node_names``: what the certificates of nodes
    learned from the cluster are checked against — ``"address"`` (the address the cluster
    announces, the default), ``"hostname"`` (its announced host name), ``"server_name"``
    (``ssl_server_hostname`` for every node) or ``"chain"`` (the chain only). TLS failures
    raise ``TlsError`` (a ``ConnectionError``) saying what failed. One configuration, made
    once, serves every handle of the client. A ``*ssl.SSLContext`` cannot be used: the
    handshake is OpenSSL's in the C core, not Python's.

    A Client may be shared by threads; the GIL is released during I/O. ``close()`` or
    ``with Client(...) as c:`` releases every connection.
    """

    @overload
    def __init__(self: "Client[bytes]", url_or_host: str = "localhost", port: Optional[int] = None, *,
                 cluster: Optional[bool] = None, username: Optional[str] = None,
                 password: Optional[str] = None, db: Optional[int] = None, protocol: int = 2,
                 socket_connect_timeout: Optional[float] = 2.0, socket_timeout: Optional[float] = 5.0,
                 max_redirects: int = 5, refresh_interval: Optional[float] = None,
                 reconnect_backoff: Tuple[float, float] = (0.01, 1.0),
                 decode_responses: Literal[False] = False, encoding: str = "utf-8",
                 encoding_errors: str = "strict", max_handles: int = 64,
                 pool_timeout: Optional[float] = None, ssl: bool = False,
                 ssl_ca_certs: Optional[str] = None, ssl_ca_path: Optional[str] = None,
                 ssl_ca_data: Union[None, str, bytes] = None, ssl_certfile: Optional[str] = None,
                 ssl_keyfile: Optional[str] = None, ssl_cert_reqs: Union[str, int] = "required",
                 ssl_check_hostname: bool = True, ssl_server_hostname: Optional[str] = None,
                 ssl_node_names: str = "address", read_from: str = "primary",
                 retry_writes: bool = False,
                 on_event: Optional[Callable[[str, str], None]] = None) -> None: ...

    @overload
    def __init__(self: "Client[str]", url_or_host: str = "localhost", port: Optional[int] = None, *,
                 cluster: Optional[bool] = None, username: Optional[str] = None,
                 password: Optional[str] = None, db: Optional[int] = None, protocol: int = 2,
                 socket_connect_timeout: Optional[float] = 2.0, socket_timeout: Optional[float] = 5.0,
                 max_redirects: int = 5, refresh_interval: Optional[float] = None,
                 reconnect_backoff: Tuple[float, float] = (0.01, 1.0),
                 decode_responses: Literal[True], encoding: str = "utf-8",
                 encoding_errors: str = "strict", max_handles: int = 64,
                 pool_timeout: Optional[float] = None, ssl: bool = False,
                 ssl_ca_certs: Optional[str] = None, ssl_ca_path: Optional[str] = None,
                 ssl_ca_data: Union[None, str, bytes] = None, ssl_certfile: Optional[str] = None,
                 ssl_keyfile: Optional[str] = None, ssl_cert_reqs: Union[str, int] = "required",
                 ssl_check_hostname: bool = True, ssl_server_hostname: Optional[str] = None,
                 ssl_node_names: str = "address", read_from: str = "primary",
                 retry_writes: bool = False,
                 on_event: Optional[Callable[[str, str], None]] = None) -> None: ...

    def __init__(self, url_or_host: str = "localhost", port: Optional[int] = None, *,
                 cluster: Optional[bool] = None, username: Optional[str] = None,
                 password: Optional[str] = None, db: Optional[int] = None, protocol: int = 2,
                 socket_connect_timeout: Optional[float] = 2.0, socket_timeout: Optional[float] = 5.0,
                 max_redirects: int = 5, refresh_interval: Optional[float] = None,
                 reconnect_backoff: Tuple[float, float] = (0.01, 1.0),
                 decode_responses: bool = False, encoding: str = "utf-8",
                 encoding_errors: str = "strict", max_handles: int = 64,
                 pool_timeout: Optional[float] = None, ssl: bool = False,
                 ssl_ca_certs: Optional[str] = None, ssl_ca_path: Optional[str] = None,
                 ssl_ca_data: Union[None, str, bytes] = None, ssl_certfile: Optional[str] = None,
                 ssl_keyfile: Optional[str] = None, ssl_cert_reqs: Union[str, int] = "required",
                 ssl_check_hostname: bool = True, ssl_server_hostname: Optional[str] = None,
                 ssl_node_names: str = "address", read_from: str = "primary",
                 retry_writes: bool = False,
                 on_event: Optional[Callable[[str, str], None]] = None) -> None:
        self._closed = True  # until fully constructed (close() and __del__ stay safe)
        self._free: List[_Handle] = []
        self._all: List[_Handle] = []
        (self._opts, self._keep, self.encoding, self.encoding_errors, self._text) = self._options(
            url_or_host, port, cluster=cluster, username=username, password=password, db=db,
            protocol=protocol, socket_connect_timeout=socket_connect_timeout,
            socket_timeout=socket_timeout, max_redirects=max_redirects,
            refresh_interval=refresh_interval, reconnect_backoff=reconnect_backoff,
            decode_responses=decode_responses, encoding=encoding, encoding_errors=encoding_errors,
            ssl=ssl, ssl_ca_certs=ssl_ca_certs, ssl_ca_path=ssl_ca_path, ssl_ca_data=ssl_ca_data,
            ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile, ssl_cert_reqs=ssl_cert_reqs,
            ssl_check_hostname=ssl_check_hostname, ssl_server_hostname=ssl_server_hostname,
            ssl_node_names=ssl_node_names, read_from=read_from, retry_writes=retry_writes,
            on_event=on_event)
        self.max_handles = _opt_int("max_handles", max_handles, 1, 100000)
        self._pool_timeout = None if pool_timeout is None else float(pool_timeout)
        self.decode_responses = decode_responses
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._freed_stats: Dict[str, int] = {}
        # The first handle now: a bad address, an unreachable server or a failed
        # detection raise here, not at the first command.
        h = _Handle(self._opts)
        self._all.append(h)
        self._free.append(h)
        self._mode = lib.sl_client_mode(h.client)
        self._closed = False

    @staticmethod
    def _options(url_or_host: str = "localhost", port: Optional[int] = None, *,
                 cluster: Optional[bool] = None, username: Optional[str] = None,
                 password: Optional[str] = None, db: Optional[int] = None, protocol: int = 2,
                 socket_connect_timeout: Optional[float] = 2.0, socket_timeout: Optional[float] = 5.0,
                 max_redirects: int = 5, refresh_interval: Optional[float] = None,
                 reconnect_backoff: Tuple[float, float] = (0.01, 1.0),
                 decode_responses: bool = False, encoding: str = "utf-8",
                 encoding_errors: str = "strict", ssl: bool = False,
                 ssl_ca_certs: Optional[str] = None, ssl_ca_path: Optional[str] = None,
                 ssl_ca_data: Union[None, str, bytes] = None, ssl_certfile: Optional[str] = None,
                 ssl_keyfile: Optional[str] = None, ssl_cert_reqs: Union[str, int] = "required",
                 ssl_check_hostname: bool = True, ssl_server_hostname: Optional[str] = None,
                 ssl_node_names: str = "address", read_from: str = "primary",
                 retry_writes: bool = False, on_event: Optional[Callable[[str, str], None]] = None
                 ) -> Tuple[Any, List[Any], str, str, Optional[Tuple[str, str]]]:
        """Checks the options (the asyncio client's too) and fills the core's options
        struct: (opts, the strings it points to, encoding, errors, the decode pair)."""
        if not isinstance(url_or_host, str):
            raise TypeError("url_or_host must be a str (a redis:// URL, \"host\", \"host:port\" or "
                            "a comma-separated list of seeds), not %s" % type(url_or_host).__name__)
        if port is not None:
            port = _opt_int("port", port, 1, 65535)
            if "://" in url_or_host or "," in url_or_host:
                raise ValueError("port is only valid with a bare host name, not with a URL or a "
                                 "list of seeds: %r" % url_or_host)
            host = url_or_host
            if ":" in host and not host.startswith("["):
                host = "[%s]" % host  # an IPv6 literal
            address = "%s:%d" % (host, port)
        else:
            address = url_or_host
        if "\0" in address:
            raise ValueError("the address must not contain NUL characters")
        if cluster is not None and not isinstance(cluster, bool):
            raise TypeError("cluster must be None (detect), True or False, not %s" % type(cluster).__name__)
        if protocol not in (2, 3) or isinstance(protocol, bool):
            raise ValueError("protocol must be 2 or 3, got %r" % (protocol,))
        if not isinstance(decode_responses, bool):
            raise TypeError("decode_responses must be a bool")
        if not isinstance(encoding, str) or not isinstance(encoding_errors, str):
            raise TypeError("encoding and encoding_errors must be str")
        "".encode(encoding, encoding_errors)  # LookupError for an unknown codec, early

        opts = ffi.new("sl_client_options *")
        rc = lib.sl_client_options_init(opts, lib.SL_CLIENT_OPTIONS_VERSION)
        if rc != 0:
            _raise_code(rc, "sl_client_options_init failed")
        keep: List[Any] = []  # the strings opts points to

        def cstr(b: Optional[bytes]) -> Any:
            if b is None:
                return ffi.NULL
            c = ffi.new("char[]", b)
            keep.append(c)
            return c

        opts.url = cstr(address.encode("utf-8"))
        opts.mode = (lib.SL_MODE_AUTO if cluster is None else
                     lib.SL_MODE_CLUSTER if cluster else lib.SL_MODE_PLAIN)
        opts.username = cstr(_opt_str("username", username))
        opts.password = cstr(_opt_str("password", password))
        if db is not None:
            opts.db = _opt_int("db", db, 0, 1000000)
        opts.resp_version = protocol
        opts.connect_timeout_ms = _seconds_to_ms("socket_connect_timeout", socket_connect_timeout, 0)
        opts.command_timeout_ms = _seconds_to_ms("socket_timeout", socket_timeout, 0)
        opts.max_redirects = _opt_int("max_redirects", max_redirects, 0, 100)
        opts.refresh_interval_ms = _seconds_to_ms("refresh_interval", refresh_interval, 0)
        if (not isinstance(reconnect_backoff, tuple) or len(reconnect_backoff) != 2):
            raise TypeError("reconnect_backoff must be a (first, max) tuple of seconds")
        opts.reconnect_min_ms = _seconds_to_ms("reconnect_backoff[0]", reconnect_backoff[0], 0)
        opts.reconnect_max_ms = _seconds_to_ms("reconnect_backoff[1]", reconnect_backoff[1], 0)
        if ssl or address.lower().startswith("rediss://"):
            tls = _tls_config(ssl_ca_certs, ssl_ca_path, ssl_ca_data, ssl_certfile, ssl_keyfile,
                              ssl_cert_reqs, ssl_check_hostname, ssl_server_hostname, ssl_node_names)
            opts.tls = tls  # each core handle takes its own reference
            keep.append(tls)
        if read_from not in _READ_FROM:
            raise ValueError("read_from must be one of %s, got %r" % (", ".join(map(repr, _READ_FROM)), read_from))
        opts.read_from = _READ_FROM[read_from]
        if not isinstance(retry_writes, bool):
            raise TypeError("retry_writes must be a bool")
        opts.retry_writes = int(retry_writes)
        if on_event is not None and not callable(on_event):
            raise TypeError("on_event must be a callable(event, address) or None")
        cb = _event_callback(on_event)
        keep.append(cb)  # alive as long as the options (every handle is made from them)
        opts.on_event = cb
        text: Optional[Tuple[str, str]] = (encoding, encoding_errors) if decode_responses else None
        return opts, keep, encoding, encoding_errors, text

    # ------------------------------------------------------------ the pool

    def _acquire(self) -> _Handle:
        try:
            h = self._free.pop()  # atomic: each idle handle goes to exactly one taker
        except IndexError:
            pass
        else:
            if not self._closed:
                return h
            self._retire(h)  # released just as close() ran: free it here
        if self._closed:
            raise _errors.Error("the client is closed")
        with self._cond:
            while True:
                if self._closed:
                    raise _errors.Error("the client is closed")
                if self._free:
                    return self._free.pop()
                if len(self._all) < self.max_handles:
                    self._all.append(None)  # type: ignore[arg-type]  # reserve the slot
                    break
                if not self._cond.wait(self._pool_timeout):
                    raise _errors.TimeoutError("no free connection handle within pool_timeout "
                                               "(%d handles busy)" % self.max_handles)
        try:
            h = _Handle(self._opts)  # connects without the lock (and without the GIL)
        except BaseException:
            with self._cond:
                self._all.remove(None)  # type: ignore[arg-type]
                self._cond.notify()
            raise
        with self._cond:
            self._all[self._all.index(None)] = h  # type: ignore[arg-type]
        return h

    def _release(self, h: _Handle) -> None:
        if self._closed:
            self._retire(h)
            return
        self._free.append(h)
        if self._all and len(self._all) >= self.max_handles:
            with self._cond:
                self._cond.notify()

    def _retire(self, h: _Handle) -> None:
        with self._lock:
            self._add_stats(self._freed_stats, h)
            if h in self._all:
                self._all.remove(h)
        h.free()

    # ------------------------------------------------------------ execution

    def _run(self, h: _Handle, payload: bytes, count: int) -> List[Any]:
        """One crossing: the batch runs (GIL released) and the records are decoded."""
        sizes = h.sizes
        rc = _slpy_run(h.batch, payload, len(payload), count, 0, sizes, h.recp, h.datap)
        # SL_EBLOCKING: a blocking command in a pipeline, nothing sent: the whole call fails
        if rc < 0 and (rc in _NO_RECORDS_CODES or rc == _EBLOCKING or sizes.commands != count):
            _raise_code(rc, h.errmsg())
        nd = sizes.data
        return decode_records(_buffer(h.recp[0], sizes.records * 24),
                              _buffer(h.datap[0], nd)[:] if nd else b"", self._text)

    def _cmd(self, args: Any, cb: Optional[Callback] = None) -> Any:
        parts: List[bytes] = []
        encode_into(parts, args, self.encoding, self.encoding_errors)
        return self._one(b"".join(parts), cb)

    def _one(self, payload: bytes, cb: Optional[Callback]) -> Any:
        h = self._acquire()
        try:
            r = self._run(h, payload, 1)[0]
        finally:
            self._release(h)
        if isinstance(r, _errors.Error):
            raise r
        return r if cb is None else cb(r)

    def _c1(self, pfx: bytes, a: Any, cb: Optional[Callback] = None) -> Any:
        return self._one(_payload1(pfx, a, self.encoding, self.encoding_errors), cb)

    def _c2(self, pfx: bytes, a: Any, b: Any, cb: Optional[Callback] = None) -> Any:
        return self._one(_payload2(pfx, a, b, self.encoding, self.encoding_errors), cb)

    def execute_command(self, *args: Any, target: Target = None) -> Any:
        """Runs one command given as its arguments and returns its reply as Python values
        (see the module's type table); an error reply is raised (ResponseError...).

        ``target`` overrides routing: ``ALL_PRIMARIES``, ``RANDOM``, ``"host:port"`` (a
        node) or an int slot (its owner). None routes by the command's key.
        """
        if target is None:
            return self._cmd(args)
        return self._routed(args, target)

    def _routed(self, args: Tuple[Any, ...], target: Target) -> Any:
        route = ffi.new("sl_route *")
        route.version = lib.SL_ROUTE_VERSION
        route.size = ffi.sizeof("sl_route")
        keep = None
        if isinstance(target, bool):
            raise TypeError("target must be ALL_PRIMARIES, RANDOM, \"host:port\" or a slot number")
        if isinstance(target, int):
            if not 0 <= target < 16384:
                raise ValueError("target slot must be 0..16383, got %d" % target)
            route.kind = lib.SL_ROUTE_SLOT
            route.slot = target
        elif target == ALL_PRIMARIES:
            route.kind = lib.SL_ROUTE_ALL_PRIMARIES
        elif target == RANDOM:
            route.kind = lib.SL_ROUTE_RANDOM
        elif isinstance(target, str):
            if ":" not in target:
                raise ValueError("target must be ALL_PRIMARIES, RANDOM, \"host:port\" or a slot "
                                 "number, got %r" % target)
            keep = ffi.new("char[]", target.encode("utf-8"))
            route.kind = lib.SL_ROUTE_NODE
            route.node = keep
        else:
            raise TypeError("target must be ALL_PRIMARIES, RANDOM, \"host:port\" or a slot number, "
                            "not %s" % type(target).__name__)
        parts: List[bytes] = []
        encode_into(parts, args, self.encoding, self.encoding_errors)
        payload = b"".join(parts)
        h = self._acquire()
        try:
            lib.sl_batch_reset(h.batch)
            rc = lib.sl_batch_append(h.batch, route, payload, len(payload), 1)
            if rc != 0:
                _raise_code(rc, h.errmsg())
            rc = lib.sl_batch_exec(h.batch, 0, h.sizes)
            if rc < 0 and (rc in _NO_RECORDS_CODES or h.sizes.commands != 1):
                _raise_code(rc, h.errmsg())
            recs = lib.sl_batch_replies(h.batch, ffi.NULL, h.datap, ffi.NULL)
            nd = h.sizes.data
            r = decode_records(ffi.buffer(recs, h.sizes.records * 24),
                               ffi.buffer(h.datap[0], nd)[:] if nd else b"", self._text)[0]
        finally:
            del keep
            self._release(h)
        if isinstance(r, _errors.Error):
            raise r
        return r

    # ------------------------------------------------------------ cluster-wide

    def nodes(self) -> List[_cluster.Node]:
        """The current topology: every primary (in the order of ``ALL_PRIMARIES`` replies)
        with its slot ranges, then the replicas the slot map names. Nothing is sent; call
        ``refresh()`` first for a fresh map. Each ``addr`` is a ``target=`` for
        execute_command, so a per-node command is one loop."""
        return _cluster.nodes(self)

    def scan_iter(self, match: Optional[Any] = None, count: Optional[int] = None,
                  _type: Optional[Any] = None) -> Iterator[_S]:
        """Every key of the cluster (every primary; the one node in plain mode), as
        redis-py's ``scan_iter``: ``match`` a glob pattern, ``count`` the per-call hint,
        ``_type`` a type name. The core tracks slots, not node cursors: across a reshard or a
        failover every key that existed throughout is returned at least once — a key of a
        moved slot may come twice. One connection handle is held until the iterator ends
        or is closed."""
        return _cluster.scan_iter(self, match, count, _type)

    def register_script(self, script: Any) -> _cluster.Script:
        """A callable for a Lua script, as redis-py's: ``s = c.register_script(lua)``, then
        ``s(keys=[...], args=[...])`` runs EVALSHA (``readonly=True``: EVALSHA_RO); a node
        without the script gets it loaded and the command once more."""
        return _cluster.Script(self, script)

    def pipeline(self, transaction: bool = False) -> "Pipeline[_S]":
        """A pipeline: queue commands (the typed methods and execute_command), then
        ``execute()`` sends them all at once — one crossing into C, every node written
        before any is read — and returns their results in order. A blocking command
        (BLPOP...) is refused in a pipeline of several commands (BlockingPipelineError):
        alone, as ``client.blpop(...)``, it runs on a connection leased for it.

        ``transaction=True``: a Transaction (redis-py's transactional pipeline): the
        commands run as MULTI ... EXEC in one slot, and ``watch()``/``multi()`` pin a
        connection of its own for WATCH (slotlane._transaction)."""
        if transaction:
            from ._transaction import Transaction
            return Transaction(self)  # type: ignore[return-value]
        return Pipeline(self)

    def pubsub(self, *, ignore_subscribe_messages: bool = False, health_check_interval: Optional[float] = None,
               max_queue_bytes: Optional[int] = None) -> "_pubsub.PubSub":
        """A subscriber on connections of its own (redis-py's ``PubSub``: subscribe,
        psubscribe, ssubscribe, ``get_message(timeout=)``, ``listen()``). The core keeps its
        subscriptions across lost connections, failovers and slot moves and reports the gaps
        as ``resubscribed`` / ``connection_lost`` messages; a health-check PING every
        ``health_check_interval`` seconds of silence (None: 30, 0: never); at most
        ``max_queue_bytes`` queued (default 64 MiB: then the newest are dropped and an
        ``overflow`` message says how many)."""
        if self._closed:
            raise _errors.Error("the client is closed")
        return _pubsub.PubSub(self, ignore_subscribe_messages=ignore_subscribe_messages,
                              health_check_interval=health_check_interval, max_queue_bytes=max_queue_bytes)
    def transaction(self, func: Any, *watches: Any, value_from_callable: bool = False) -> Any:
        """redis-py's helper: ``func(pipe)`` with ``watches`` watched, then EXEC, retried from
        the WATCH for as long as a watched key changed (WatchError, WatchMovedError)."""
        from ._transaction import transaction
        return transaction(self, func, *watches, value_from_callable=value_from_callable)

    # ------------------------------------------------------------ state

    @property
    def mode(self) -> str:
        """``"cluster"`` or ``"plain"``: what the client is (after detection)."""
        return "cluster" if self._mode == lib.SL_MODE_CLUSTER else "plain"

    @property
    def closed(self) -> bool:
        return self._closed

    @staticmethod
    def _add_stats(acc: Dict[str, int], h: _Handle) -> None:
        Client._add_stats_of(acc, h.client)

    @staticmethod
    def _add_stats_of(acc: Dict[str, int], client: Any) -> None:
        st = ffi.new("sl_stats *")
        st.version = lib.SL_STATS_VERSION
        st.size = ffi.sizeof("sl_stats")
        if lib.sl_client_stats(client, st) != 0:
            return
        for f in _STAT_FIELDS:
            if f == "nodes":
                acc[f] = max(acc.get(f, 0), st.nodes)
            else:
                acc[f] = acc.get(f, 0) + getattr(st, f)

    def stats(self) -> Dict[str, int]:
        """The core's counters (commands, moved, ask, tryagain, refreshes, connects,
        reconnects, bytes_written, bytes_read, nodes; failovers, refreshes_moved, refreshes_lost,
        retries, replica_reads, nodes_down), summed over the handles that are
        idle now and those already closed (a handle in use by another thread at this
        moment is counted at the next call)."""
        acc = {f: 0 for f in _STAT_FIELDS}
        for k, v in self._freed_stats.items():
            acc[k] = v if k == "nodes" else acc[k] + v
        taken = []
        try:
            while True:
                try:
                    h = self._free.pop()
                except IndexError:
                    break
                taken.append(h)
                self._add_stats(acc, h)
        finally:
            for h in taken:
                self._release(h)
        return acc

    def refresh(self) -> None:
        """Re-reads the slot map now (every idle handle)."""
        h = self._acquire()
        try:
            rc = lib.sl_client_refresh(h.client)
            if rc != 0:
                _raise_code(rc, h.errmsg())
        finally:
            self._release(h)

    def close(self) -> None:
        """Closes every connection. Executions running in other threads are cancelled
        (their commands fail with CancelledError) and their handles freed when they
        return. Calling close() again does nothing."""
        if self._closed:
            return
        with self._cond:
            self._closed = True
            idle = []
            while True:  # pop one by one: a concurrent _acquire may take one first
                try:
                    idle.append(self._free.pop())
                except IndexError:
                    break
            busy = [h for h in self._all if h is not None and not any(h is i for i in idle)]
            for h in busy:
                lib.sl_client_cancel(h.client)
            self._cond.notify_all()
        for h in idle:
            self._retire(h)

    def __enter__(self) -> "Client[_S]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        url = ffi.string(self._opts.url).decode() if getattr(self, "_opts", None) else "?"
        url = url.split("@", 1)[-1] if "@" in url else url
        return "<slotlane.Client %s %s%s>" % (url, self.mode if hasattr(self, "_mode") else "?",
                                              " closed" if self._closed else "")


_STAT_FIELDS = ("commands", "moved", "ask", "tryagain", "refreshes", "connects", "reconnects",
                "bytes_written", "bytes_read", "nodes", "failovers", "refreshes_moved",
                "refreshes_lost", "retries", "replica_reads", "nodes_down")

_READ_FROM = {"primary": lib.SL_READ_PRIMARY, "prefer_replica": lib.SL_READ_PREFER_REPLICA,
              "replicas_round_robin": lib.SL_READ_REPLICAS_ROUND_ROBIN}

_EVENT_NAMES = {lib.SL_EVENT_TOPOLOGY_CHANGED: "topology_changed", lib.SL_EVENT_NODE_DOWN: "node_down",
                lib.SL_EVENT_NODE_UP: "node_up", lib.SL_EVENT_FAILOVER: "failover"}

#: The core's events (a node down or up, a failover, a changed topology) are logged here:
#: ``node_down`` and ``failover`` at WARNING, the others at INFO.
log = logging.getLogger("slotlane")


def _event_callback(on_event: Optional[Callable[[str, str], None]]) -> Any:
    """The core's sl_event_fn: logs the event and hands (event, "host:port") to on_event.
    It runs inside the core (the thread running a command, or the asyncio client's loop
    thread), so on_event must not use the client; an exception it raises is logged."""

    def cb(ctx: Any, event: int, addr: Any) -> None:
        name = _EVENT_NAMES.get(event, "event %d" % event)
        where = ffi.string(addr).decode("utf-8", "replace")
        log.log(logging.WARNING if name in ("node_down", "failover") else logging.INFO, "slotlane: %s %s", name, where)
        if on_event is not None:
            try:
                on_event(name, where)
            except Exception:  # never into the C core
                log.exception("slotlane: the on_event callback raised")

    return ffi.callback("sl_event_fn", cb)


class _Queue(PipelineCommands):
    """What the pipelines of Client and slotlane.asyncio.Client share: the queue of
    encoded commands with their reply shapers, and the shaping of the results."""

    __slots__ = ("_client", "_parts", "_n", "_cbs", "_oks", "_enc", "_errs")

    def __init__(self, client: Any) -> None:
        self._client = client
        self._parts: List[bytes] = []
        self._n = 0
        self._cbs: List[Tuple[int, Callback]] = []
        self._oks: List[int] = []  # commands whose "OK" becomes True (SET)
        self._enc = client.encoding
        self._errs = client.encoding_errors

    def _cmd(self: _Q, args: Any, cb: Optional[Callback] = None) -> _Q:
        encode_into(self._parts, args, self._enc, self._errs)
        if cb is _OK:
            self._oks.append(self._n)
        elif cb is not None:
            self._cbs.append((self._n, cb))
        self._n += 1
        return self

    def execute_command(self: _Q, *args: Any) -> _Q:
        """Queues one command given as its arguments (routed by its key)."""
        return self._cmd(list(args))

    def __len__(self) -> int:
        return self._n

    def reset(self) -> None:
        """Discards the queued commands."""
        self._parts = []
        self._n = 0
        self._cbs = []
        self._oks = []

    def _take(self) -> Tuple[bytes, int, List[Tuple[int, Callback]], List[int]]:
        """Empties the queue: its bytes, count, shapers and "OK" positions."""
        payload = b"".join(self._parts)
        n, cbs, oks = self._n, self._cbs, self._oks
        self._parts = []
        self._n = 0
        if cbs:
            self._cbs = []
        if oks:
            self._oks = []
        return payload, n, cbs, oks

    @staticmethod
    def _shape(res: List[Any], cbs: List[Tuple[int, Callback]], oks: List[int],
               raise_on_error: bool) -> List[Any]:
        for i in oks:  # ok and ok? replies: +OK -> True, nil -> False (an error stays)
            r = res[i]
            if r == "OK":
                res[i] = True
            elif r is None:
                res[i] = False
        for i, cb in cbs:
            r = res[i]
            if not isinstance(r, _errors.Error):
                try:
                    res[i] = cb(r)
                except (ValueError, TypeError) as e:
                    res[i] = _errors.ProtocolError("unexpected reply %r: %s" % (r, e))
        if raise_on_error:
            for r in res:
                if isinstance(r, _errors.Error):
                    raise r
        return res


class Pipeline(_Queue, Generic[_S]):
    """Queued commands sent together by ``execute()``. Every typed method and
    ``execute_command`` returns the pipeline (so calls can be chained). A context manager:
    leaving the block discards what was not executed."""

    __slots__ = ()

    def execute(self, raise_on_error: bool = False) -> List[Any]:
        """Sends every queued command (one crossing into C) and returns their results in
        order. A failed command's result is its exception instance (ResponseError,
        ConnectionError for a command whose node failed...), or with
        ``raise_on_error=True`` the first one is raised. The queue is empty afterwards."""
        if self._n == 0:
            return []
        payload, n, cbs, oks = self._take()
        client = self._client
        h = client._acquire()
        try:
            res = client._run(h, payload, n)
        finally:
            client._release(h)
        return self._shape(res, cbs, oks, raise_on_error)

    def __enter__(self) -> "Pipeline[_S]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.reset()

    def __repr__(self) -> str:
        return "<slotlane.Pipeline %d queued>" % self._n
