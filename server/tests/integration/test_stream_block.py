"""XREAD BLOCK and XREADGROUP BLOCK on the waiter module (blocking.c), compared with
redis-server 7.0: a parked XREAD `$` served by the next XADD (the ID resolved when it
parked), XREADGROUP `>` served by an XADD and creating its pending entry, a parked
XREADGROUP answered -NOGROUP by XGROUP DESTROY, a BLOCK that times out (nil), BLOCK
inside MULTI (nil at once), a negative timeout; RESP2 and RESP3, one shard and one-port
mode with 4 shards (parked on the key's owner, the reply forwarded back). Then the
pending entry a served XREADGROUP BLOCK made survives kill -9 with `always`. Every
wait ends by an event (a reply), never by a sleep: the second connection sends the
XADD once INFO shows the client parked (blocked_clients: in one-port mode the parked
command may still be on its way to the key's owner)."""
import shutil

import pytest

from resp import Conn, Server


def wait_parked(c, n=1):
    """Until INFO clients says n clients are parked (every shard counts)."""
    for _ in range(100000):
        info = c.call("INFO", "clients")
        if f"blocked_clients:{n}\r\n".encode() in bytes(info):
            return
    raise AssertionError(f"never parked: {info!r}")


def script(srv, proto):
    a, b = Conn(srv.port), Conn(srv.port)
    if proto == 3:
        a.call("HELLO", "3")
        b.call("HELLO", "3")
    r = []
    a.send("XREAD", "BLOCK", "0", "STREAMS", "{k}s", "$")
    wait_parked(b)
    r.append(b.call("XADD", "{k}s", "1-1", "f", "v"))
    r.append(a.read())
    b.call("XGROUP", "CREATE", "{k}s", "g", "$")
    a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "COUNT", "5", "STREAMS", "{k}s", ">")
    wait_parked(b)
    r.append(b.call("XADD", "{k}s", "2-1", "f", "w"))
    r.append(a.read())
    r.append(b.call("XPENDING", "{k}s", "g"))
    a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{k}s", ">")
    wait_parked(b)
    r.append(b.call("XGROUP", "DESTROY", "{k}s", "g"))
    r.append(a.read())
    r.append(a.call("XREAD", "BLOCK", "20", "STREAMS", "{k}s", "$"))
    a.call("MULTI")
    a.call("XREAD", "BLOCK", "0", "STREAMS", "{k}s", "$")
    r.append(a.call("EXEC"))
    r.append(a.call("XREAD", "BLOCK", "-1", "STREAMS", "{k}s", "$"))
    r.append(a.call("XREAD", "BLOCK", "x", "STREAMS", "{k}s", "$"))
    r.append(a.call("XREAD", "BLOCK", "0", "STREAMS", "{k}s", "0"))  # data: served at once
    return r


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("mode", ["one-shard", "one-port"])
def test_block_as_redis(proto, mode):
    ours = Server(shards=4, extra=["--port-mode", "one-port"]) if mode == "one-port" else Server()
    ref = Server(redis=True)
    try:
        got, want = script(ours, proto), script(ref, proto)
    finally:
        code, err = ours.stop()
        ref.stop()
    assert got == want, f"\n ours={got}\n ref ={want}"
    assert code == 0, err


def test_served_block_survives_kill9(tmp_path):
    d = str(tmp_path / "aof")
    s = Server(extra=["--durability", "always", "--dir", d])
    try:
        a, b = Conn(s.port), Conn(s.port)
        b.call("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
        a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "q", ">")
        wait_parked(b)
        b.call("XADD", "q", "7-1", "f", "v")
        assert a.read() == [[b"q", [[b"7-1", [b"f", b"v"]]]]]
    finally:
        s.stop(sig=9)
    s2 = Server(extra=["--durability", "always", "--dir", d])
    try:
        assert Conn(s2.port).call("XPENDING", "q", "g") == [1, b"7-1", b"7-1", [[b"c", b"1"]]]
    finally:
        s2.stop()
    shutil.rmtree(str(tmp_path), ignore_errors=True)
