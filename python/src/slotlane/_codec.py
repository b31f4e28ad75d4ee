"""Encoding commands to RESP and decoding the core's reply records into Python values.

Commands are encoded here with bytes joins (cached length headers): the core takes
concatenated RESP arrays of bulk strings. Replies come back as the core's flat array of
24-byte records (slotlane.h, ``sl_reply``) plus one data buffer; they are read with
``struct.iter_unpack`` over a buffer of the records (one C-level loop, no FFI call per
reply) and the data buffer copied once to ``bytes`` and sliced.

Reply types -> Python:
  bulk string -> bytes (str with decode_responses), simple string (status) -> str,
  integer -> int, nil -> None, array / push -> list, map -> dict, set -> set (a list when
  an element is unhashable), double -> float, bool -> bool, big number -> int,
  verbatim string -> Verbatim (a bytes subclass with .format; str with decode_responses),
  error -> an exception instance (ResponseError for the server's errors).
"""
import struct
import sys
from typing import Any, Callable, Iterator, List, Optional, Tuple

from . import _errors

__all__ = ["Verbatim", "encode_into", "decode_records", "error_from_kind", "arg_bytes", "prefix"]

_REC = struct.Struct("=BBHIqQ")   # type, flags, reserved, len, value, offset: 24 bytes
assert _REC.size == 24
# The decoding loops read type and flags as one little-endian u16 (flags is 0 except for
# errors, so a bulk string is exactly 1) and skip the reserved field: 4 fields per record.
_REC4 = struct.Struct("=H2xIqQ")
assert _REC4.size == 24
_BIG_ENDIAN = sys.byteorder == "big"


def _swap_type_flags(recs: Any) -> bytearray:
    """Big-endian hosts: swap the type and flags bytes of every record so that the native
    u16 still reads type | flags << 8."""
    b = bytearray(recs)
    b[0::24], b[1::24] = b[1::24], b[0::24]
    return b
_Q = struct.Struct("=q")
_D = struct.Struct("=d")

_HDR = [b"$%d\r\n" % i for i in range(4096)]
_ARR = [b"*%d\r\n" % i for i in range(256)]
_CRLF = b"\r\n"


def prefix(name: bytes, nargs: int) -> bytes:
    """The RESP bytes of a command's array header and name: ``*N\\r\\n$3\\r\\nGET\\r\\n``
    for a command of nargs arguments after its name (the typed methods' fast path)."""
    return b"*%d\r\n$%d\r\n%s\r\n" % (nargs + 1, len(name), name)


def conv(a: Any, encoding: str, errors: str, pfx: bytes, i: int) -> bytes:
    """arg_bytes for the fast path, with the command's name in the TypeError."""
    if type(a) is str:
        return a.encode(encoding, errors)
    try:
        return arg_bytes(a, encoding, errors)
    except TypeError:
        name = pfx.split(b"\r\n")[2].decode("ascii", "replace")
        raise TypeError("%s: argument %d is of type %s; command arguments must be bytes, str, "
                        "int or float" % (name, i, type(a).__name__)) from None


class Verbatim(bytes):
    """A RESP3 verbatim string: the bytes without the ``fmt:`` prefix; ``format`` holds
    the three format letters (``"txt"``, ``"mkd"``)."""

    format: str

    def __new__(cls, value: bytes, format: str) -> "Verbatim":
        self = super().__new__(cls, value)
        self.format = format
        return self


def _bad_arg(a: Any) -> TypeError:
    return TypeError("invalid argument of type %s: a command argument must be bytes, str, int "
                     "or float (bytearray and memoryview are accepted too)" % type(a).__name__)


def arg_bytes(a: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """One command argument as bytes. bool and None are refused (their RESP form is
    ambiguous) with a TypeError."""
    t = type(a)
    if t is bytes:
        return bytes(a)
    if t is str:
        return str(a).encode(encoding, errors)
    if t is int:
        return b"%d" % a
    if t is float:
        return repr(a).encode()
    if isinstance(a, (bool, type(None))):
        raise _bad_arg(a)
    if isinstance(a, (bytes, bytearray, memoryview)):
        return bytes(a)
    if isinstance(a, str):
        return str(a).encode(encoding, errors)
    if isinstance(a, int):
        return b"%d" % int(a)
    if isinstance(a, float):
        return repr(float(a)).encode()
    raise _bad_arg(a)


def encode_into(parts: List[bytes], args: Tuple[Any, ...], encoding: str = "utf-8",
                errors: str = "strict") -> None:
    """Appends the RESP array of bulk strings for args to parts (joined later, once per
    pipeline). Raises TypeError for an argument that is not bytes/str/int/float and
    ValueError for an empty command."""
    n = len(args)
    if n == 0:
        raise ValueError("a command needs at least its name")
    ap = parts.append
    start = len(parts)
    ap(_ARR[n] if n < 256 else b"*%d\r\n" % n)
    utf8 = encoding == "utf-8" and errors == "strict"
    try:
        for a in args:
            t = type(a)
            if t is bytes:
                pass
            elif t is str:
                a = a.encode() if utf8 else a.encode(encoding, errors)
            elif t is int:
                a = b"%d" % a
            else:
                a = arg_bytes(a, encoding, errors)
            m = len(a)
            ap(_HDR[m] if m < 4096 else b"$%d\r\n" % m)
            ap(a)
            ap(_CRLF)
    except (TypeError, UnicodeError) as e:
        del parts[start:]  # a pipeline keeps only whole commands
        name = args[0] if isinstance(args[0], (bytes, str)) else "?"
        if isinstance(name, bytes):
            name = name.decode("ascii", "replace")
        if isinstance(e, TypeError):
            i = 0
            for i, a in enumerate(args):
                try:
                    arg_bytes(a, encoding, errors)
                except TypeError:
                    break
            raise TypeError("%s: argument %d is of type %s; command arguments must be bytes, str, "
                            "int or float" % (name, i, type(args[i]).__name__)) from None
        raise


# ------------------------------------------------------------------ decoding

_KINDS = _errors.KINDS          # the table of bindings/spec/errors.json
_KIND_CLASS = _errors.KIND_CLASS


def error_from_kind(kind: int, message: str) -> _errors.Error:
    cls = _KIND_CLASS.get(kind, _errors.Error)
    return cls(message, _KINDS[kind] if 0 <= kind < len(_KINDS) else "client")


_STATUS = {b"OK": "OK", b"PONG": "PONG", b"QUEUED": "QUEUED"}


def _status(b: bytes) -> str:
    s = _STATUS.get(b)
    return s if s is not None else b.decode("utf-8", "replace")


def _aggregate(t: int, items: List[Any]) -> Any:
    if t == 7:  # map: key, value, key, value...
        try:
            return dict(zip(items[0::2], items[1::2]))
        except TypeError:  # an unhashable key (an array): keep the pairs
            return list(zip(items[0::2], items[1::2]))
    if t == 8:
        try:
            return set(items)
        except TypeError:
            return items
    return items


def _other(t: int, fl: int, ln: int, v: int, off: int, it: Iterator[Tuple[int, int, int, int]],
           data: bytes, text: Optional[Tuple[str, str]]) -> Any:
    """Every record type the hot loops do not handle inline (and, for children, all)."""
    if t == 1:
        b = data[off:off + ln]
        return b if text is None else b.decode(*text)
    if t == 2:
        return _status(data[off:off + ln])
    if t == 4:
        return v
    if t == 5:
        return None
    if t == 3:
        return error_from_kind(fl, data[off:off + ln].decode("utf-8", "replace"))
    if t in (6, 7, 8, 13):
        items: List[Any] = []
        ap = items.append
        for _ in range(ln):
            tf, cl, cv, co = next(it)
            ap(_other(tf & 255, tf >> 8, cl, cv, co, it, data, text))
        return _aggregate(t, items)
    if t == 9:
        return _D.unpack(_Q.pack(v))[0]
    if t == 10:
        return bool(v)
    if t == 11:
        return int(data[off:off + ln])
    if t == 12:
        b = data[off:off + ln]
        if text is not None:
            return b.decode(*text)
        return Verbatim(b, _Q.pack(v)[:3].decode("ascii", "replace"))
    raise _errors.ProtocolError("unknown reply record type %d" % t)


def decode_records(recs: Any, data: bytes, text: Optional[Tuple[str, str]]) -> List[Any]:
    """Decodes a buffer of reply records (a multiple of 24 bytes) against data into one
    Python value per top-level reply, in one pass."""
    if _BIG_ENDIAN:
        recs = _swap_type_flags(recs)
    it = _REC4.iter_unpack(recs)
    out: List[Any] = []
    ap = out.append
    if text is None:
        for tf, ln, v, off in it:
            if tf == 1:
                ap(data[off:off + ln])
            elif tf == 2:
                b = data[off:off + ln]
                ap(_STATUS.get(b) or b.decode("utf-8", "replace"))
            elif tf == 4:
                ap(v)
            elif tf == 5:
                ap(None)
            else:
                ap(_other(tf & 255, tf >> 8, ln, v, off, it, data, None))
    else:
        enc, errs = text
        for tf, ln, v, off in it:
            if tf == 1:
                ap(data[off:off + ln].decode(enc, errs))
            elif tf == 2:
                b = data[off:off + ln]
                ap(_STATUS.get(b) or b.decode("utf-8", "replace"))
            elif tf == 4:
                ap(v)
            elif tf == 5:
                ap(None)
            else:
                ap(_other(tf & 255, tf >> 8, ln, v, off, it, data, text))
    return out


Callback = Callable[[Any], Any]
