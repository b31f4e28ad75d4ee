"""slotlane.testing: the bundled slotlane-server inside your test process.

    from slotlane.testing import Server

    with Server(shards=4) as srv:                 # per-shard ports chosen by the kernel
        with slotlane.Client(srv.url) as r:       # a real cluster: slots, MOVED, discovery
            r.set("k", "v")

The server runs in this process (the extension slotlane._server, built from the same
package: nothing is downloaded or started by hand), one thread per shard, and stops when
the ``with`` block ends (or at ``stop()``). Several servers may run at once; they share
nothing. With pytest, the plugin this package registers gives the fixtures
``slotlane_server`` (a started Server, stopped after the test) and ``slotlane_cluster_url``
(its URL); override ``slotlane_server_options`` (a dict of Server's arguments) to change
them for a module or a test.
"""
from typing import Any, List, Optional

__all__ = ["Server", "ServerError"]

_PORT_MODES = {"per-shard": 0, "one-port": 1}
_MISROUTED = {"moved": 0, "forward": 1}
_DURABILITY = {"memory": 0, "everysec": 1, "always": 2}
_LOG_LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3, "none": 4}


class ServerError(Exception):
    """The embedded server could not start (a bad option, a port or directory in use), or
    this installation has no embedded server (built without Lua 5.1 or libuv)."""


def _native() -> Any:
    try:
        from . import _server  # type: ignore[attr-defined]
    except ImportError as e:  # pragma: no cover - depends on how the package was built
        raise ServerError("slotlane was built without the embedded server (slotlane._server): "
                          "install liblua5.1-0-dev, lua-cjson-dev, lua-bitop-dev and libuv1-dev "
                          "(Debian) and reinstall (%s)" % e) from None
    return _server


class Server:
    """A slotlane-server in this process: ``shards`` shards, ``port_mode`` "per-shard" (shard
    i on its own port, a Redis Cluster primary) or "one-port" (every shard on one port,
    keys forwarded), ``misrouted`` "moved" or "forward", ``durability`` "memory",
    "everysec" or "always" with ``dir``, ``port`` 0 (ephemeral ports) or a base port,
    ``log_level`` ("warning" by default, "none"). Any other keyword is a flag of the
    slotlane-server executable (``maxclients=100``, ``hash_max_listpack_entries=64``).
    Starts at construction; raises ServerError when it cannot."""

    def __init__(self, shards: int = 4, port_mode: str = "per-shard", misrouted: str = "moved",
                 durability: str = "memory", dir: Optional[str] = None, bind: str = "127.0.0.1",
                 port: int = 0, log_level: str = "warning", **settings: Any) -> None:
        native = _native()
        self._ffi, self._lib = native.ffi, native.lib
        try:
            values = (_PORT_MODES[port_mode], _MISROUTED[misrouted], _DURABILITY[durability],
                      _LOG_LEVELS[log_level])
        except KeyError as e:
            raise ServerError("bad option value %s" % e) from None
        ffi, lib = self._ffi, self._lib
        o = ffi.new("sl_server_options *")
        lib.sl_server_options_init(o, lib.SL_SERVER_OPTIONS_VERSION)
        o.shards = shards
        o.port_mode, o.misrouted, o.durability, o.log_level = values
        o.port = port
        keep: List[Any] = []  # the strings live until the call returns
        if dir is not None:
            keep.append(ffi.new("char[]", str(dir).encode()))
            o.dir = keep[-1]
        keep.append(ffi.new("char[]", bind.encode()))
        o.bind = keep[-1]
        if settings:
            strs = []
            for k, v in settings.items():
                for s in (k.replace("_", "-"), "yes" if v is True else "no" if v is False else str(v)):
                    keep.append(ffi.new("char[]", s.encode()))
                    strs.append(keep[-1])
            arr = ffi.new("const char *[]", strs)
            keep.append(arr)
            o.settings = arr
            o.nsettings = len(strs)
        out = ffi.new("sl_server **")
        err = ffi.new("char[512]")
        rc = lib.sl_server_start(out, o, err, 512)
        if rc != 0:
            raise ServerError(ffi.string(err).decode("utf-8", "replace"))
        self._s: Any = out[0]
        self.shards: int = lib.sl_server_shards(self._s)
        #: the port of each shard (all the same in one-port mode)
        self.ports: List[int] = [lib.sl_server_port(self._s, i) for i in range(self.shards)]
        buf = ffi.new("char[128]")
        lib.sl_server_url(self._s, buf, 128)
        #: "redis://127.0.0.1:PORT" of shard 0: a cluster client discovers the others
        self.url: str = ffi.string(buf).decode()
        self.host: str = bind
        self._stopped = False

    def stop(self) -> None:
        """Stops every shard and waits: connected clients see their connections end (I/O
        errors, not hangs), ports are released, logs flushed. A second call does nothing."""
        if not self._stopped:
            self._stopped = True
            self._lib.sl_server_stop(self._s)

    close = stop

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        s = getattr(self, "_s", None)
        if s is not None:
            self._lib.sl_server_free(s)
            self._s = None

    def __repr__(self) -> str:
        return "<slotlane.testing.Server %s shards=%d ports=%s%s>" % (
            self.url, self.shards, self.ports, " stopped" if self._stopped else "")

