"""COPY of a stream (groups, consumers, pending entries, tombstones and counters copied
whole, the copy independent of its source) and OBJECT ENCODING `stream`, compared with
redis-server 7.0: the same replies for the same sequence (no reply here carries a time)."""
from resp import Conn, Server

SETUP = [["XADD", "s", "1-1", "a", "1"], ["XADD", "s", "2-1", "b", "2"], ["XADD", "s", "3-1", "c", "3"],
         ["XDEL", "s", "2-1"], ["XGROUP", "CREATE", "s", "g", "0"],
         ["XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"],
         ["XGROUP", "CREATE", "s", "h", "$"]]
STEPS = [["COPY", "s", "c"], ["COPY", "s", "c"], ["COPY", "s", "c", "REPLACE"], ["OBJECT", "ENCODING", "c"],
         ["XLEN", "c"], ["XRANGE", "c", "-", "+"], ["XPENDING", "c", "g"], ["XINFO", "GROUPS", "c"],
         # the copy is independent: writes to one are not seen in the other
         ["XADD", "c", "4-1", "d", "4"], ["XACK", "c", "g", "1-1"], ["XLEN", "s"], ["XPENDING", "s", "g"],
         ["XPENDING", "c", "g"], ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "c", ">"],
         ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"], ["OBJECT", "ENCODING", "s"],
         ["SET", "str", "x"], ["COPY", "str", "s"], ["COPY", "s", "str", "REPLACE"], ["TYPE", "str"],
         ["XLEN", "str"]]


def replies(redis):
    srv = Server(redis=redis)
    try:
        c = Conn(srv.port)
        for a in SETUP:
            c.call(*a)
        return [c.call(*a) for a in STEPS]
    finally:
        srv.stop()


def test_copy_and_object_encoding_of_streams_as_redis():
    ours, ref = replies(False), replies(True)
    diffs = [f"{a}: ours {x!r} redis {y!r}" for a, x, y in zip(STEPS, ours, ref) if x != y]
    assert not diffs, "\n".join(diffs)
    assert ours[STEPS.index(["OBJECT", "ENCODING", "c"])] in (b"stream", "stream")
