"""Encoding and record decoding without a server: exact RESP bytes, every record type."""
import math
import struct

import pytest

import slotlane
from slotlane._codec import decode_records, encode_into

REC = struct.Struct("=BBHIqQ")


def enc(*args, encoding="utf-8", errors="strict"):
    parts = []
    encode_into(parts, args, encoding, errors)
    return b"".join(parts)


def test_encode_exact():
    assert enc(b"GET", "k") == b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
    assert enc("SET", "ключ", 12, -3, 1.5, bytearray(b"x"), memoryview(b"")) == (
        b"*7\r\n$3\r\nSET\r\n$8\r\n\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87\r\n$2\r\n12\r\n$2\r\n-3\r\n"
        b"$3\r\n1.5\r\n$1\r\nx\r\n$0\r\n\r\n")
    big = b"z" * 5000
    assert enc(b"SET", b"k", big) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5000\r\n" + big + b"\r\n"
    assert enc(*([b"a"] * 300)).startswith(b"*300\r\n")
    assert enc("SET", "é", encoding="latin-1") == b"*2\r\n$3\r\nSET\r\n$1\r\n\xe9\r\n"


def test_encode_refuses():
    for bad in (None, True, False, 1j, [1], object()):
        with pytest.raises(TypeError, match="SET: argument 2 is of type"):
            enc("SET", "k", bad)
    with pytest.raises(ValueError):
        enc()
    with pytest.raises(UnicodeEncodeError):
        enc("SET", "\udcff")


def rec(t, ln=0, v=0, off=0, fl=0):
    return REC.pack(t, fl, 0, ln, v, off)


def test_decode_every_type():
    pieces = {}
    data = b""
    for name, text in [("hello", b"hello"), ("ok", b"OK"), ("err", b"ERR boom"), ("dbl", b"3.14159"),
                       ("big", b"123456789012345678901234567890123456789"), ("verb", b"verb"), ("eio", b"gone")]:
        pieces[name] = (len(data), len(text))
        data += text

    def at(name):
        return {"off": pieces[name][0], "ln": pieces[name][1]}

    def r(t, v=0, fl=0, ln=None, off=0, **kw):
        return REC.pack(t, fl, 0, kw.get("ln", ln or 0), v, kw.get("off", off))

    dbl = struct.unpack("=q", struct.pack("=d", 3.14159))[0]
    fmt = struct.unpack("=q", b"txt\0\0\0\0\0")[0]
    h0 = {"off": 0, "ln": 2}   # "he"
    h1 = {"off": 1, "ln": 1}   # "e"
    recs = b"".join([
        r(1, **at("hello")),
        r(2, **at("ok")),
        r(3, **at("err")),
        r(4, -42),
        r(5),
        r(6, ln=2), r(4, 1), r(6, ln=1), r(5),            # [1, [None]]
        r(7, ln=4), r(1, **h0), r(4, 7), r(1, **h1), r(5),  # {b"he": 7, b"e": None}
        r(8, ln=2), r(1, **h0), r(1, **h1),               # {b"he", b"e"}
        r(9, dbl, **at("dbl")),
        r(10, 1),
        r(11, **at("big")),
        r(12, fmt, **at("verb")),
        r(13, ln=1), r(1, **h1),                           # push [b"e"]
    ] + [r(3, fl=k, **at("eio")) for k in range(1, 8)])
    out = decode_records(recs, data, None)
    assert out[0] == b"hello" and out[1] == "OK"
    assert isinstance(out[2], slotlane.ResponseError) and out[2].message == "ERR boom" and out[2].code == "ERR"
    assert out[3:5] == [-42, None]
    assert out[5] == [1, [None]]
    assert out[6] == {b"he": 7, b"e": None}
    assert out[7] == {b"he", b"e"}
    assert math.isclose(out[8], 3.14159)
    assert out[9] is True
    assert out[10] == 123456789012345678901234567890123456789
    assert all(e.message == "gone" for e in out[13:])
    assert isinstance(out[11], slotlane.Verbatim) and out[11] == b"verb" and out[11].format == "txt"
    assert out[12] == [b"e"]
    kinds = [(type(e), e.kind) for e in out[13:]]
    assert kinds == [(slotlane.ConnectionError, "io"), (slotlane.TimeoutError, "timeout"),
                     (slotlane.ClusterError, "redirects"), (slotlane.ProtocolError, "protocol"),
                     (slotlane.CancelledError, "cancelled"), (slotlane.ClusterError, "cluster"),
                     (slotlane.ArgumentError, "argument")]
    assert len(out) == 20


def test_decode_text_mode():
    recs = rec(1, 2, 0, 0) + rec(6, 1) + rec(1, 2, 0, 0) + rec(7, 2) + rec(1, 1, 0, 0) + rec(1, 1, 0, 1)
    recs_u = rec(1, 2, 0, 0) + rec(6, 1) + rec(1, 2, 0, 0) + rec(2, 2, 0, 0)
    assert decode_records(recs_u, b"\xc3\xa9", ("utf-8", "strict")) == ["é", ["é"], "é"]
    out = decode_records(recs, b"\xc3\xa9", ("latin-1", "strict"))
    assert out == ["Ã©", ["Ã©"], {"Ã": "©"}]


def test_unhashable_map_keys_and_set_members():
    recs = rec(7, 2) + rec(6, 1) + rec(4, 0, 1) + rec(4, 0, 2) + rec(8, 1) + rec(6, 0)
    out = decode_records(recs, b"", None)
    assert out == [[([1], 2)], [[]]]


def test_error_values_compare():
    a = slotlane.ResponseError("ERR x")
    assert a == slotlane.ResponseError("ERR x") and a != slotlane.ResponseError("ERR y")
    assert a != slotlane.ConnectionError("ERR x")
    assert hash(a) == hash(slotlane.ResponseError("ERR x"))
    import pickle
    assert pickle.loads(pickle.dumps(a)) == a
    assert issubclass(slotlane.ProtocolError, slotlane.ConnectionError)
    for cls in (slotlane.ResponseError, slotlane.ConnectionError, slotlane.TimeoutError, slotlane.ClusterError):
        assert issubclass(cls, slotlane.Error)
