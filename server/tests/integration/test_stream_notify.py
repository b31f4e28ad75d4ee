"""Keyspace notifications of the stream commands (class `t`, plus `g` and `n`): the
same messages in the same order as redis-server 7.0 for a sequence of every stream
write — xadd, xtrim (also from XADD's MAXLEN), xdel, xgroup-create (MKSTREAM: new),
xgroup-createconsumer (also created by XREADGROUP, XCLAIM, XAUTOCLAIM), xgroup-setid,
xgroup-delconsumer, xgroup-destroy, xsetid; no event for what changed nothing (XDEL of
a missing ID, XTRIM of nothing, XADD NOMKSTREAM of a missing key)."""
from resp import Conn, Server

CMDS = [["XADD", "s", "1-1", "a", "b"], ["XADD", "s", "MAXLEN", "1", "2-1", "a", "b"], ["XDEL", "s", "2-1"],
        ["XDEL", "s", "9-9"], ["XGROUP", "CREATE", "s", "g", "0"], ["XGROUP", "CREATE", "t", "g", "$", "MKSTREAM"],
        ["XGROUP", "CREATECONSUMER", "s", "g", "c"], ["XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">"],
        ["XADD", "s", "3-1", "x", "y"], ["XREADGROUP", "GROUP", "g", "e", "STREAMS", "s", ">"],
        ["XCLAIM", "s", "g", "f", "0", "3-1"], ["XAUTOCLAIM", "s", "g", "h", "0", "0"],
        ["XGROUP", "SETID", "s", "g", "0"], ["XGROUP", "DELCONSUMER", "s", "g", "c"], ["XGROUP", "DESTROY", "s", "g"],
        ["XSETID", "s", "10-0"], ["XTRIM", "s", "MAXLEN", "0"], ["XTRIM", "s", "MAXLEN", "0"],
        ["XADD", "s", "NOMKSTREAM", "11-1", "a", "b"], ["XADD", "nomk", "NOMKSTREAM", "1-1", "a", "b"], ["DEL", "s"]]


def messages(redis, flags):
    srv = Server(redis=redis)
    try:
        c = Conn(srv.port)
        assert c.call("CONFIG", "SET", "notify-keyspace-events", flags) == "OK"
        sub = Conn(srv.port)
        sub.send("PSUBSCRIBE", "*")
        sub.read()
        for a in CMDS:
            c.call(*a)
        c.call("PUBLISH", "end", "x")  # the last message: everything before it arrived
        got = []
        while True:
            m = sub.read()
            if m[2] == b"end":
                return got
            got.append((m[2], m[3]))
    finally:
        srv.stop()


def test_stream_events_as_redis():
    for flags in ("KEA", "Et", "Kn", "Eg"):
        ours, ref = messages(False, flags), messages(True, flags)
        assert ours == ref, f"{flags}:\n ours={ours}\n ref ={ref}"
    assert any(ch == b"__keyevent@0__:xgroup-createconsumer" for ch, _ in messages(False, "Et"))
