"""The node list, cluster-wide SCAN and scripts: thin wrappers over the core's
sl_client_nodes, sl_scan_* and sl_batch_run_script (the loops live in the core)."""
import sys
from typing import Any, Iterator, List, NamedTuple, Optional, Sequence, Tuple, TYPE_CHECKING

from ._codec import conv, decode_records, encode_into
from ._native import ffi, lib

try:
    from . import _pages
except ImportError:  # pragma: no cover - an interpreter without the C helper
    _pages = None  # type: ignore[assignment]

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

__all__ = ["Node", "Script", "ScriptBody", "nodes", "scan_iter", "scan_options"]

_SCAN = b"*1\r\n$4\r\nSCAN\r\n"      # for conv's messages: the command an argument is of
_SCRIPT = b"*1\r\n$6\r\nSCRIPT\r\n"


class Node(NamedTuple):
    """One node of the client's current topology (``Client.nodes()``)."""
    addr: str
    """``"host:port"``: also a ``target=`` of execute_command."""
    primary: bool
    """True for a primary (it serves slots), False for a replica."""
    primary_addr: Optional[str]
    """A replica's primary, None for a primary."""
    slots: List[Tuple[int, int]]
    """The slot ranges served, (first, last) inclusive; [] for a replica."""


def nodes(client: "Client[Any]") -> List[Node]:
    from ._client import _raise_code
    h = client._acquire()
    try:
        out = ffi.new("sl_node_info **")
        count = ffi.new("size_t *")
        rc = lib.sl_client_nodes(h.client, out, count)
        if rc != 0:
            _raise_code(rc, h.errmsg())
        try:
            raw = []
            for i in range(count[0]):
                n = out[0][i]
                r = n.ranges
                raw.append((ffi.string(n.addr).decode("utf-8"), bool(n.is_primary), int(n.primary),
                            [(int(r[2 * k]), int(r[2 * k + 1])) for k in range(n.nranges)]))
        finally:
            lib.sl_client_nodes_free(h.client, out[0])
    finally:
        client._release(h)
    return [Node(a, p, None if pi < 0 else raw[pi][0], s) for a, p, pi, s in raw]


_LITTLE = sys.byteorder == "little"


def _page_keys(recs: Any, data: Any, text: Optional[Tuple[str, str]]) -> List[Any]:
    """A scan page (an array record, then one bulk-string record per key: the core checks
    the shape) as a list of keys: built in C by slotlane._pages from the batch's own memory;
    without it (an interpreter that cannot load it), the lengths and offsets are read as
    strided memoryview slices and each key sliced in Python."""
    if _pages is not None and _LITTLE:
        return _pages.page_keys(recs, data, *(text or ()))
    data = bytes(data)
    if not _LITTLE:
        return list(decode_records(recs, data, text)[0])
    mv = memoryview(recs)
    if len(mv) < 48:
        return []
    lens = mv.cast("I")[7::6].tolist()   # sl_reply.len of records 1..n (u32 index 6k+1)
    offs = mv.cast("Q")[5::3].tolist()   # sl_reply.offset of records 1..n (u64 index 3k+2)
    if text is None:
        return [data[o:o + n] for o, n in zip(offs, lens)]
    enc, errs = text
    return [data[o:o + n].decode(enc, errs) for o, n in zip(offs, lens)]


def scan_options(client: Any, match: Any, count: Optional[int], _type: Any) -> Tuple[Any, List[Any]]:
    """sl_scan_options for scan_iter's arguments (checked), and the buffers it points into."""
    enc, errs = client.encoding, client.encoding_errors
    opts = ffi.new("sl_scan_options *")
    opts.version = lib.SL_SCAN_OPTIONS_VERSION
    opts.size = ffi.sizeof("sl_scan_options")
    keep = []
    if match is not None:
        m = conv(match, enc, errs, _SCAN, 1)
        keep.append(ffi.new("char[]", m))
        opts.match = keep[-1]
        opts.match_len = len(m)
    if _type is not None:
        t = conv(_type, enc, errs, _SCAN, 2)
        if b"\0" in t:
            raise ValueError("_type must not contain NUL characters")
        keep.append(ffi.new("char[]", t))
        opts.type = keep[-1]
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or not 0 < count < 2 ** 31:
            raise ValueError("count must be a positive int, got %r" % (count,))
        opts.count = count
    return opts, keep


def scan_iter(client: "Client[Any]", match: Any = None, count: Optional[int] = None,
              _type: Any = None) -> Iterator[Any]:
    from ._client import _raise_code
    opts, keep = scan_options(client, match, count, _type)
    text = client._text
    h = client._acquire()
    scan = ffi.new("sl_scan **")
    try:
        rc = lib.sl_scan_new(h.client, opts, scan)
        if rc != 0:
            _raise_code(rc, h.errmsg())
        done = ffi.new("int *")
        nrec = ffi.new("size_t *")
        ndata = ffi.new("size_t *")
        while not done[0]:
            rc = lib.sl_scan_next(scan[0], h.batch, done)
            if rc != 0:
                _raise_code(rc, h.errmsg())
            recs = lib.sl_batch_replies(h.batch, nrec, h.datap, ndata)
            nd = ndata[0]
            yield from _page_keys(ffi.buffer(recs, nrec[0] * 24), ffi.buffer(h.datap[0], nd) if nd else b"", text)
    finally:
        if scan[0] != ffi.NULL:
            lib.sl_scan_free(scan[0])
        client._release(h)


class ScriptBody:
    """A script's body (bytes) and SHA1, the part of Script that the asyncio client's shares."""

    def __init__(self, client: Any, script: Any) -> None:
        self.script: bytes = conv(script, client.encoding, client.encoding_errors, _SCRIPT, 1)
        out = ffi.new("char[41]")
        lib.sl_script_sha1(self.script, len(self.script), out)
        self.sha: str = ffi.string(out).decode("ascii")

    def payload(self, c: Any, keys: Sequence[Any], args: Sequence[Any], readonly: bool) -> bytes:
        """The EVALSHA (EVALSHA_RO) command's bytes for client c."""
        parts: List[bytes] = []
        encode_into(parts, ("EVALSHA_RO" if readonly else "EVALSHA", self.sha, len(keys), *keys, *args),
                    c.encoding, c.encoding_errors)
        return b"".join(parts)


class Script(ScriptBody):
    """A Lua script bound to a client (``Client.register_script``), called like redis-py's:
    ``script(keys=[...], args=[...])``. Runs EVALSHA; a node that answers NOSCRIPT gets the
    script (SCRIPT LOAD) and the command once more — in the core (sl_batch_run_script)."""

    def __init__(self, client: "Client[Any]", script: Any) -> None:
        super().__init__(client, script)
        self.client = client

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = (),
                 client: "Optional[Client[Any]]" = None, readonly: bool = False) -> Any:
        from ._client import _NO_RECORDS_CODES, _raise_code
        from . import _errors
        c = client or self.client
        payload = self.payload(c, keys, args, readonly)
        h = c._acquire()
        try:
            rc = lib.sl_batch_run_script(h.batch, self.script, len(self.script), payload, len(payload), 0,
                                         ffi.NULL, 0, ffi.NULL, 0, h.sizes)
            if rc < 0 and (rc in _NO_RECORDS_CODES or h.sizes.commands != 1):
                _raise_code(rc, h.errmsg())
            recs = lib.sl_batch_replies(h.batch, ffi.NULL, h.datap, ffi.NULL)
            nd = h.sizes.data
            r = decode_records(ffi.buffer(recs, h.sizes.records * 24),
                               ffi.buffer(h.datap[0], nd)[:] if nd else b"", c._text)[0]
        finally:
            c._release(h)
        if isinstance(r, _errors.Error):
            raise r
        return r
