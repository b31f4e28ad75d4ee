"""slotlane: a Redis-protocol client for Redis Cluster, Valkey Cluster and sharded servers.

A thin binding over libslotlane, the C core that routes commands by slot, pipelines them
per node in one crossing, follows MOVED/ASK redirects and splits multi-key commands.

    import slotlane
    with slotlane.Client("redis://localhost:7000") as r:      # cluster detected
        r.set("greeting", "hello")
        with r.pipeline() as p:
            for i in range(100):
                p.get("key:%d" % i)
            values = p.execute()
"""
from ._native import ffi as _ffi, lib as _lib
from ._codec import Verbatim
from ._client import ALL_PRIMARIES, RANDOM, Client, Pipeline
from ._cluster import Node, Script
from ._pubsub import PubSub
from ._errors import (ArgumentError, BlockingPipelineError, CancelledError, ClusterError, ConnectionError, Error,
                      ProtocolError, ResourceError, ResponseError, TimeoutError, TlsError, WatchError,
                      WatchMovedError)
from ._transaction import Transaction

__version__: str = _ffi.string(_lib.sl_version()).decode("ascii")


def key_slot(key: "bytes | str") -> int:
    """The cluster slot of a key (CRC16 with {hash tags}, mod 16384), computed by the core."""
    if isinstance(key, str):
        key = key.encode("utf-8")
    elif not isinstance(key, bytes):
        raise TypeError("key must be bytes or str, not %s" % type(key).__name__)
    return int(_lib.sl_key_slot(key, len(key)))


__all__ = ["Client", "Pipeline", "Error", "ResponseError", "ConnectionError", "TimeoutError",
           "ClusterError", "ProtocolError", "CancelledError", "ArgumentError", "ResourceError", "TlsError", "WatchError", "WatchMovedError",
           "BlockingPipelineError", "Transaction", "Verbatim", "ALL_PRIMARIES",
           "RANDOM", "Node", "Script", "PubSub", "key_slot", "__version__"]
