"""Blocking commands (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP)
and CLIENT UNBLOCK: wake-up order, timeouts, disconnects, wake-ups by LMOVE and by
a parked BLMOVE, pipelined requests behind a parked one, and (one-port mode) a waiter
whose key another shard owns.

Every verdict comes from replies and from INFO's blocked_clients (the test waits
until the server says N clients are parked before it pushes); timeouts are short and
the test waits for their reply, never asserting on elapsed time."""
import socket
import time

import pytest

from resp import Conn, Err, NullArray, Server, keys_per_shard, shard_of

MODES = {
    "1 shard": dict(shards=1, extra=()),
    "one-port 4 shards": dict(shards=4, extra=("--port-mode", "one-port")),
    "forward 4 shards": dict(shards=4, extra=("--misrouted", "forward")),
}


def blocked(port):
    info = Conn(port).call("INFO", "clients").decode()
    for line in info.split("\r\n"):
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    raise AssertionError("no blocked_clients in INFO")


def wait_blocked(port, n, what="parked clients"):
    """Until the server reports n parked clients (an event, polled; generous deadline)."""
    deadline = time.time() + 20
    while True:
        got = blocked(port)
        if got == n:
            return
        if time.time() > deadline:
            raise AssertionError(f"{what}: blocked_clients {got}, expected {n}")
        time.sleep(0.005)


@pytest.fixture(scope="module", params=list(MODES))
def server(request):
    s = Server(**MODES[request.param])
    yield s
    code, err = s.stop()
    assert code == 0, err


def test_fifo_order_across_100_waiters(server):
    waiters = []
    for i in range(100):
        c = Conn(server.port)
        c.send("BLPOP", "fifo:q", "0")
        wait_blocked(server.port, i + 1)  # parked in this order
        waiters.append(c)
    p = Conn(server.port)
    assert p.call("RPUSH", "fifo:q", *[str(i) for i in range(100)]) == 100
    for i, c in enumerate(waiters):
        assert c.read() == [b"fifo:q", str(i).encode()]
        c.close()
    assert p.call("EXISTS", "fifo:q") == 0
    wait_blocked(server.port, 0)


def test_more_waiters_than_elements(server):
    a, b = Conn(server.port), Conn(server.port)
    a.send("BRPOP", "few:q", "0")
    wait_blocked(server.port, 1)
    b.send("BRPOP", "few:q", "0")
    wait_blocked(server.port, 2)
    p = Conn(server.port)
    p.call("LPUSH", "few:q", "x")
    assert a.read() == [b"few:q", b"x"]
    wait_blocked(server.port, 1)  # b still waits
    p.call("LPUSH", "few:q", "y")
    assert b.read() == [b"few:q", b"y"]
    wait_blocked(server.port, 0)


def test_timeouts(server):
    c = Conn(server.port)
    assert c.call("BLPOP", "{to}a", "{to}b", "0.02") == NullArray()
    assert c.call("BRPOP", "to:a", "0.01") == NullArray()
    assert c.call("BLMOVE", "{to}a", "{to}c", "LEFT", "RIGHT", "0.01") == NullArray()
    assert c.call("BRPOPLPUSH", "{to}a", "{to}c", "0.01") == NullArray()
    assert c.call("BLMPOP", "0.01", "1", "to:a", "LEFT") == NullArray()
    assert c.call("BZPOPMIN", "to:z", "0.01") == NullArray()
    assert c.call("BZPOPMAX", "to:z", "0.01") == NullArray()
    assert c.call("BZMPOP", "0.01", "1", "to:z", "MAX", "COUNT", "2") == NullArray()
    assert c.call("BLPOP", "{to}a", "0.0001") == NullArray()  # rounded up to 1 ms, as Redis
    assert c.call("HELLO", "3")[0] is not None
    assert c.call("BLPOP", "to:a", "0.01") is None  # RESP3 null
    assert c.call("BZPOPMIN", "to:z", "0.01") is None
    # a timed-out waiter is gone: the next push stays in the list
    assert c.call("RPUSH", "to:a", "v") == 1
    assert c.call("LLEN", "to:a") == 1
    wait_blocked(server.port, 0)


def test_bad_timeouts_are_refused(server):
    c = Conn(server.port)
    assert c.call("BLPOP", "bt:a", "-1") == Err("ERR timeout is negative")
    assert c.call("BLPOP", "bt:a", "x") == Err("ERR timeout is not a float or out of range")
    assert c.call("BLPOP", "bt:a", "nan") == Err("ERR timeout is not a float or out of range")
    assert c.call("BZPOPMIN", "bt:a", "inf") == Err("ERR timeout is negative")
    assert c.call("BLMOVE", "{bt}a", "{bt}b", "LEFT", "UP", "0") == Err("ERR syntax error")
    assert c.call("BLMPOP", "0", "0", "bt:a", "LEFT") == Err("ERR numkeys should be greater than 0")
    assert c.call("BLMPOP", "0", "1", "bt:a", "LEFT", "COUNT", "0") == Err("ERR count should be greater than 0")
    assert c.call("BZMPOP", "0", "1", "bt:a", "LEFT") == Err("ERR syntax error")
    assert c.call("BLPOP", "bt:a") == Err("ERR wrong number of arguments for 'blpop' command")
    assert c.call("PING") == "PONG"
    assert blocked(server.port) == 0


def test_disconnected_waiter_is_dropped(server):
    a = Conn(server.port)
    a.send("BLPOP", "dc:q", "0")
    wait_blocked(server.port, 1)
    a.close()
    wait_blocked(server.port, 0, "after the waiter disconnected")
    b = Conn(server.port)
    b.send("BLPOP", "dc:q", "0")
    wait_blocked(server.port, 1)
    p = Conn(server.port)
    p.call("RPUSH", "dc:q", "only")
    assert b.read() == [b"dc:q", b"only"]  # the element went to the live waiter
    assert p.call("EXISTS", "dc:q") == 0


def test_pipelined_requests_wait_behind_a_parked_one(server):
    c = Conn(server.port)
    c.send_raw(b"*2\r\n$4\r\nPING\r\n$1\r\na\r\n*3\r\n$5\r\nBLPOP\r\n$5\r\npp:q1\r\n$1\r\n0\r\n"
               b"*2\r\n$4\r\nPING\r\n$1\r\nb\r\n*2\r\n$4\r\nLLEN\r\n$5\r\npp:q1\r\n")
    assert c.read() == b"a"  # the reply before the parked command leaves at once
    wait_blocked(server.port, 1)
    Conn(server.port).call("RPUSH", "pp:q1", "x", "y")
    assert c.read() == [b"pp:q1", b"x"]
    assert c.read() == b"b"
    assert c.read() == 1  # LLEN ran after the pop


def test_lmove_and_blmove_chain_wake_waiters(server):
    a, b = Conn(server.port), Conn(server.port)
    key1, key2 = "{ch}1", "{ch}2"
    b.send("BLPOP", key2, "0")
    wait_blocked(server.port, 1)
    a.send("BLMOVE", key1, key2, "RIGHT", "LEFT", "0")
    wait_blocked(server.port, 2)
    p = Conn(server.port)
    # a push to key1 serves the BLMOVE, whose move into key2 serves the BLPOP
    p.call("RPUSH", key1, "e1")
    assert a.read() == b"e1"
    assert b.read() == [key2.encode(), b"e1"]
    # a plain LMOVE into a waited-on key wakes its waiter too
    b.send("BLPOP", key2, "0")
    wait_blocked(server.port, 1)
    p.call("RPUSH", "{ch}src", "e2")
    assert p.call("LMOVE", "{ch}src", key2, "LEFT", "RIGHT") == b"e2"
    assert b.read() == [key2.encode(), b"e2"]
    wait_blocked(server.port, 0)


def test_sorted_set_and_mpop_wake_ups(server):
    a, b, d = Conn(server.port), Conn(server.port), Conn(server.port)
    a.send("BZPOPMIN", "zw:z", "0")
    wait_blocked(server.port, 1)
    b.send("BZMPOP", "0", "1", "zw:z", "MAX", "COUNT", "5")
    wait_blocked(server.port, 2)
    d.send("BLMPOP", "0", "2", "{zw}none", "{zw}l", "RIGHT", "COUNT", "2")
    wait_blocked(server.port, 3)
    p = Conn(server.port)
    p.call("ZADD", "zw:z", "1", "a", "2", "b", "3", "c")
    assert a.read() == [b"zw:z", b"a", b"1"]
    assert b.read() == [b"zw:z", [[b"c", b"3"], [b"b", b"2"]]]
    p.call("RPUSH", "{zw}l", "1", "2", "3")
    assert d.read() == [b"{zw}l", [b"3", b"2"]]
    wait_blocked(server.port, 0)


def test_wrongtype_and_existing_values(server):
    c = Conn(server.port)
    c.call("SET", "wt:s", "v")
    assert c.call("BLPOP", "wt:s", "0").startswith("WRONGTYPE")
    assert c.call("BZPOPMIN", "wt:s", "0").startswith("WRONGTYPE")
    c.call("RPUSH", "{wt}l", "a")
    c.call("SET", "{wt}s", "v")
    # the source has an element, the destination the wrong type: WRONGTYPE, nothing moved
    assert c.call("BLMOVE", "{wt}l", "{wt}s", "LEFT", "LEFT", "0").startswith("WRONGTYPE")
    assert c.call("LLEN", "{wt}l") == 1
    assert c.call("BRPOPLPUSH", "{wt}l", "{wt}d", "0") == b"a"


def test_client_unblock(server):
    a = Conn(server.port)
    ida = a.call("CLIENT", "ID")
    a.send("BLPOP", "ub:q", "0")
    wait_blocked(server.port, 1)
    c = Conn(server.port)
    assert c.call("CLIENT", "UNBLOCK", str(ida), "TIMEOUT") == 1
    assert a.read() == NullArray()
    a.send("BZPOPMAX", "ub:z", "0")
    wait_blocked(server.port, 1)
    assert c.call("CLIENT", "UNBLOCK", str(ida), "ERROR") == 1
    assert a.read() == Err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    assert c.call("CLIENT", "UNBLOCK", str(ida)) == 0  # not parked any more
    assert c.call("CLIENT", "UNBLOCK", str(ida), "LATER") == Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    assert c.call("CLIENT", "UNBLOCK", "x") == Err("ERR value is not an integer or out of range")
    assert a.call("PING") == "PONG"  # the unblocked client goes on
    wait_blocked(server.port, 0)


def test_remote_waiters_in_one_port_mode():
    """One port, 4 shards: waiters whose key another shard owns are parked there; their
    replies come back in order with the connection's other replies, and a waiter that
    disconnects while parked at another shard loses nothing."""
    s = Server(shards=4, extra=("--port-mode", "one-port"))
    try:
        keys = keys_per_shard("rw", 1, 4)  # one key per shard
        conns = []
        for i in range(16):
            c = Conn(s.port)
            k = keys[i % 4]
            c.send_raw(b"*2\r\n$4\r\nECHO\r\n$2\r\n%02d\r\n" % i +
                       b"*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(k), k.encode()) +
                       b"*2\r\n$4\r\nECHO\r\n$4\r\nnext\r\n")
            assert c.read() == b"%02d" % i
            wait_blocked(s.port, i + 1)
            conns.append((c, k))
        p = Conn(s.port)
        for k in keys:
            p.call("RPUSH", k, *[f"{k}-{j}" for j in range(4)])
        seen = {k: 0 for k in keys}
        for c, k in conns:  # FIFO per key: the i-th waiter of a key gets its i-th element
            assert c.read() == [k.encode(), f"{k}-{seen[k]}".encode()]
            assert c.read() == b"next"
            seen[k] += 1
        wait_blocked(s.port, 0)
        # a disconnect while parked on another shard: dropped there, nothing lost
        gone = Conn(s.port)
        gone.send("BLPOP", keys[2], "0")
        wait_blocked(s.port, 1)
        gone.close()
        wait_blocked(s.port, 0, "after the remote waiter disconnected")
        p.call("RPUSH", keys[2], "kept")
        assert p.call("LRANGE", keys[2], "0", "-1") == [b"kept"]
        # CLIENT UNBLOCK reaches a waiter parked at any shard
        w = Conn(s.port)
        wid = w.call("CLIENT", "ID")
        w.send("BLPOP", keys[3], "0")
        wait_blocked(s.port, 1)
        assert p.call("CLIENT", "UNBLOCK", str(wid)) == 1
        assert w.read() == NullArray()
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_client_unblock_across_shards_in_per_shard_mode():
    """Per-shard mode, 4 shards: a client parked on one shard is unblocked by CLIENT
    UNBLOCK sent to any other shard's port (the request asks every shard), with
    Redis's TIMEOUT (null array) and ERROR (-UNBLOCKED) replies and :0 for a client
    that is not parked; the asker's later pipelined requests answer after it, in order;
    INFO blocked_clients never counts the asker."""
    s = Server(shards=4)
    try:
        keys = keys_per_shard("ubx", 1, 4)
        ids = []
        for i in range(4):  # a client parked on each shard, its key's owner
            w = Conn(s.port + i)
            ids.append((w, w.call("CLIENT", "ID")))
        seen_ids = [i for _, i in ids]
        assert len(set(seen_ids)) == 4  # client ids are unique across shards
        for n, (w, _) in enumerate(ids):
            w.send("BLPOP", keys[n], "0")
        wait_blocked(s.port, 4)
        asker = Conn(s.port)  # shard 0
        # shard 1's client, TIMEOUT; the PING pipelined behind waits for the answer
        asker.send_raw(b"".join([
            b"*4\r\n$6\r\nCLIENT\r\n$7\r\nUNBLOCK\r\n$%d\r\n%d\r\n$7\r\nTIMEOUT\r\n" % (len(str(ids[1][1])), ids[1][1]),
            b"*1\r\n$4\r\nPING\r\n"]))
        assert asker.read() == 1
        assert asker.read() == "PONG"
        assert ids[1][0].read() == NullArray()
        wait_blocked(s.port, 3)
        # shard 3's client, ERROR, asked on shard 2's port
        other = Conn(s.port + 2)
        assert other.call("CLIENT", "UNBLOCK", str(ids[3][1]), "ERROR") == 1
        assert ids[3][0].read() == Err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
        wait_blocked(s.port, 2)
        # its own shard's client: answered there at once, as before
        assert asker.call("CLIENT", "UNBLOCK", str(ids[0][1])) == 1
        assert ids[0][0].read() == NullArray()
        # not parked (any more), unknown, and the asker itself: 0 from every shard
        assert asker.call("CLIENT", "UNBLOCK", str(ids[1][1])) == 0
        assert asker.call("CLIENT", "UNBLOCK", "999999") == 0
        assert asker.call("CLIENT", "UNBLOCK", str(asker.call("CLIENT", "ID"))) == 0
        assert other.call("CLIENT", "UNBLOCK", str(ids[1][1]), "LATER") == \
            Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        # the unblocked clients go on; shard 2's waiter is still parked and then served
        assert ids[1][0].call("PING") == "PONG"
        assert blocked(s.port) == 1
        assert Conn(s.port + 2).call("RPUSH", keys[2], "x") == 1
        assert ids[2][0].read() == [keys[2].encode(), b"x"]
        wait_blocked(s.port, 0)
        # many askers at once, each on another shard than the waiter's
        w = Conn(s.port + 3)
        wid = w.call("CLIENT", "ID")
        w.send("BLPOP", keys[3], "0")
        wait_blocked(s.port, 1)
        askers = [Conn(s.port + i % 3) for i in range(12)]
        for a in askers:
            a.send("CLIENT", "UNBLOCK", str(wid))
        assert sorted(a.read() for a in askers) == [0] * 11 + [1]
        assert w.read() == NullArray()
        wait_blocked(s.port, 0)
        # an asker that leaves before the answers come: the others' answers find it gone
        w.send("BLPOP", keys[3], "0")
        wait_blocked(s.port, 1)
        gone = Conn(s.port + 1)
        gone.send("CLIENT", "UNBLOCK", str(wid))
        gone.close()
        assert Conn(s.port + 1).call("CLIENT", "UNBLOCK", str(wid)) in (0, 1)  # whichever got there first
        assert w.read() == NullArray()
        wait_blocked(s.port, 0)
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_shutdown_with_parked_clients():
    """SIGTERM with clients parked locally and at another shard: a clean exit."""
    s = Server(shards=2, extra=("--port-mode", "one-port"))
    keys = keys_per_shard("sd", 2, 2)
    conns = []
    for i, k in enumerate(keys):
        c = Conn(s.port)
        c.send("BLPOP", k, "0")
        conns.append(c)
        wait_blocked(s.port, i + 1)
    code, err = s.stop()
    assert code == 0, err


def test_multi_exec_pushes_wake_and_blocking_inside_does_not_park(server):
    a = Conn(server.port)
    a.send("BLPOP", "{mx}q", "0")
    wait_blocked(server.port, 1)
    t = Conn(server.port)
    assert t.call("MULTI") == "OK"
    assert t.call("RPUSH", "{mx}q", "e1", "e2") == "QUEUED"
    assert t.call("RPUSH", "{mx}other", "x") == "QUEUED"
    # the waiter is served after EXEC, not in the middle of it: the LLEN inside sees both
    assert t.call("LLEN", "{mx}q") == "QUEUED"
    assert t.call("EXEC") == [2, 1, 2]
    assert a.read() == [b"{mx}q", b"e1"]
    wait_blocked(server.port, 0)
    # inside MULTI the blocking commands answer at once, as their non-blocking forms
    assert t.call("MULTI") == "OK"
    for cmd in (["BLPOP", "{mx}empty", "0"], ["BLMOVE", "{mx}empty", "{mx}d", "LEFT", "LEFT", "0"],
                ["BRPOPLPUSH", "{mx}empty", "{mx}d", "0"], ["BZPOPMIN", "{mx}empty", "0"],
                ["BLMPOP", "0", "1", "{mx}empty", "LEFT"], ["BZMPOP", "0", "1", "{mx}empty", "MIN"],
                ["BLPOP", "{mx}q", "0"]):
        assert t.call(*cmd) == "QUEUED"
    assert t.call("EXEC") == [NullArray(), None, None, NullArray(), NullArray(), NullArray(), [b"{mx}q", b"e2"]]
    assert blocked(server.port) == 0
