"""XREAD / XREADGROUP (BLOCK or not) with keys on several shards in one-port mode,
coordinated by fwd_multi.c: one part per owner shard, parked there with BLOCK, the
others released once one answers, the streams served merged in key order.

Compared with redis-server 7.0 (one node, the same key names) at 2 and 4 shards,
RESP2 and RESP3: a parked XREAD served by an XADD on either shard (only that stream,
as 7.0 serves a parked XREAD), immediate replies in key order, XREADGROUP's pending
entries, NOGROUP/WRONGTYPE/ID errors in Redis's key order with nothing consumed,
timeouts, CLIENT UNBLOCK (TIMEOUT and ERROR, answered :1 once), XGROUP DESTROY while
parked, and the 1000-entry cap of a parked read served without COUNT (also on one
shard). Then behaviour only slotlane has: INFO blocked_clients counts the coordinated
client once, a disconnect releases every part (blocked_clients back to 0, nothing
consumed for the gone client), and many consumers parked on two shards' streams while
producers add to both receive every entry exactly once, each in the PEL once.
Per-shard mode keeps CROSSSLOT. Every wait ends by an event (a reply, an INFO field),
never by a sleep."""
import pytest

import resp
from resp import Conn, Err, Server


def blocked(c):
    info = bytes(c.call("INFO", "clients"))
    return int(info.split(b"blocked_clients:")[1].split(b"\r\n")[0])


def wait_blocked(c, n, parts=None):
    """Until INFO says n clients are parked and, when parts is given, slotlane's
    blocked_parts says every part of the coordinated reads has parked on its shard
    (redis-server has no such field: one node, no parts)."""
    for _ in range(100000):
        info = bytes(c.call("INFO", "clients"))
        got = int(info.split(b"blocked_clients:")[1].split(b"\r\n")[0])
        have = int(info.split(b"blocked_parts:")[1].split(b"\r\n")[0]) if b"blocked_parts:" in info else None
        if got == n and (parts is None or have is None or have == parts):
            return
    raise AssertionError(f"blocked_clients never reached {n} (parts {parts}): {info!r}")


def names(shards):
    """Three stream names: on shards 0, 1 and the last (2 shards: 0, 1, 1)."""
    want = [0, 1, shards - 1]
    out = []
    n = 0
    for w in want:
        while True:
            k = f"xs:{n}"
            n += 1
            if resp.shard_of(k, shards) == w:
                out.append(k)
                break
    return out


def parts(shards, *keys):
    return len({resp.shard_of(k, shards) for k in keys})


def script(srv, proto, shards, s1, s2, s3):
    a, b = Conn(srv.port), Conn(srv.port)
    if proto == 3:
        a.call("HELLO", "3")
        b.call("HELLO", "3")
    r = []
    # parked on two shards, served by the second key's shard: only that stream
    a.send("XREAD", "BLOCK", "0", "STREAMS", s1, s2, "$", "$")
    wait_blocked(b, 1, parts(shards, s1, s2))
    r.append(b.call("XADD", s2, "1-1", "f", "a"))
    r.append(a.read())
    # ... and by the first key's shard
    a.send("XREAD", "BLOCK", "0", "STREAMS", s2, s1, "$", "$")
    wait_blocked(b, 1, parts(shards, s2, s1))
    r.append(b.call("XADD", s1, "2-1", "f", "b"))
    r.append(a.read())
    # data on two shards at once: served at once, in key order
    r.append(b.call("XADD", s3, "3-1", "f", "c"))
    r.append(a.call("XREAD", "BLOCK", "0", "STREAMS", s3, s2, s1, "0", "0", "0"))
    r.append(a.call("XREAD", "COUNT", "1", "STREAMS", s1, s2, s3, "0", "0", "0"))
    r.append(a.call("XREAD", "STREAMS", s1, s2, "$", "$"))
    # a timeout: nil
    r.append(a.call("XREAD", "BLOCK", "20", "STREAMS", s1, s2, "$", "$"))
    # consumer groups
    r.append(b.call("XGROUP", "CREATE", s1, "g", "$"))
    r.append(b.call("XGROUP", "CREATE", s2, "g", "$"))
    a.send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", s1, s2, ">", ">")
    wait_blocked(b, 1, parts(shards, s1, s2))
    r.append(b.call("XADD", s2, "4-1", "f", "d"))
    r.append(a.read())
    r.append(b.call("XPENDING", s1, "g"))
    r.append(b.call("XPENDING", s2, "g"))
    r.append(b.call("XADD", s1, "5-1", "f", "e"))
    r.append(a.call("XREADGROUP", "GROUP", "g", "c1", "COUNT", "5", "STREAMS", s1, s2, ">", ">"))
    r.append(a.call("XREADGROUP", "GROUP", "g", "c1", "STREAMS", s2, s1, "0", "0"))  # history of both
    # errors in Redis's key order, nothing consumed
    r.append(b.call("XADD", s1, "6-1", "f", "f"))
    r.append(a.call("XREADGROUP", "GROUP", "g", "c1", "STREAMS", s1, s3, ">", ">"))  # s3 has no group
    r.append(a.call("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", s1, s3, ">", ">"))
    r.append(b.call("XPENDING", s1, "g"))
    r.append(b.call("SET", "str:" + s3, "x"))
    r.append(a.call("XREAD", "STREAMS", s1, "str:" + s3, "0", "0"))
    r.append(a.call("XREAD", "BLOCK", "0", "STREAMS", "str:" + s3, s1, "0", "bad"))
    r.append(a.call("XREAD", "STREAMS", s1, "str:" + s3, "bad", "0"))
    r.append(a.call("XREADGROUP", "GROUP", "g", "c1", "STREAMS", s1, s2, ">", "$"))
    # XGROUP DESTROY while parked
    r.append(a.call("XREADGROUP", "GROUP", "g", "c1", "STREAMS", s1, s2, ">", ">"))  # drain 6-1
    a.send("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", s1, s2, ">", ">")
    wait_blocked(b, 1, parts(shards, s1, s2))
    r.append(b.call("XGROUP", "DESTROY", s2, "g"))
    r.append(a.read())
    # CLIENT UNBLOCK: once, for the client (not once per part)
    aid = a.call("CLIENT", "ID")
    a.send("XREAD", "BLOCK", "0", "STREAMS", s1, s2, s3, "$", "$", "$")
    wait_blocked(b, 1, parts(shards, s1, s2, s3))
    r.append(b.call("CLIENT", "UNBLOCK", str(aid)))
    r.append(a.read())
    a.send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", s3, s1, "0", ">")
    r.append(a.read())  # s3 has no group: NOGROUP at once
    a.send("XREAD", "BLOCK", "0", "STREAMS", s2, s1, "$", "$")
    wait_blocked(b, 1, parts(shards, s2, s1))
    r.append(b.call("CLIENT", "UNBLOCK", str(aid), "ERROR"))
    r.append(a.read())
    r.append(b.call("CLIENT", "UNBLOCK", str(aid)))
    # many entries at once (one EXEC) to a parked read without COUNT: 1000 of them
    a.send("XREAD", "BLOCK", "0", "STREAMS", s2, s1, "$", "$")
    wait_blocked(b, 1, parts(shards, s2, s1))
    b.call("MULTI")
    for i in range(1500):
        b.call("XADD", s1, f"100-{i + 1}", "f", "v")
    execd = b.call("EXEC")
    r.append(len(execd))
    got = a.read()
    entries = got[0][1]  # RESP3: a Map is a list of (key, value) pairs
    r.append((len(entries), entries[0][0], entries[-1][0]))
    # the commands after a parked one wait for it, and leave in order
    a.send("XREAD", "BLOCK", "0", "STREAMS", s1, s2, "$", "$")
    a.send("PING")
    wait_blocked(b, 1, parts(shards, s1, s2))
    r.append(b.call("XADD", s2, "200-1", "f", "g"))
    r.append(a.read())
    r.append(a.read())
    a.close()
    b.close()
    return r


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("shards", [2, 4])
def test_xread_across_shards_as_redis(shards, proto):
    keys = names(shards)
    assert len({resp.shard_of(k, shards) for k in keys[:2]}) == 2
    ours = Server(shards=shards, extra=["--port-mode", "one-port"])
    ref = Server(redis=True)
    try:
        got, want = script(ours, proto, shards, *keys), script(ref, proto, shards, *keys)
        wait_blocked(Conn(ours.port), 0, 0)
    finally:
        code, err = ours.stop()
        ref.stop()
    assert got == want, "\n" + "\n".join(f"{i}: ours={g!r}\n   ref ={w!r}" for i, (g, w) in enumerate(zip(got, want))
                                         if g != w)
    assert code == 0, err


@pytest.mark.parametrize("proto", [2, 3])
def test_parked_read_capped_on_one_shard(proto):
    """The cap of a parked read served without COUNT, on one shard (the waiter module
    itself) and with the XREADGROUP pending entries it made."""
    def run(srv):
        a, b = Conn(srv.port), Conn(srv.port)
        if proto == 3:
            a.call("HELLO", "3")
        b.call("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
        a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "q", ">")
        wait_blocked(b, 1)
        b.call("MULTI")
        for i in range(1200):
            b.call("XADD", "q", f"1-{i + 1}", "f", "v")
        b.call("EXEC")
        got = a.read()
        entries = got[0][1]
        return [len(entries), entries[-1][0], b.call("XPENDING", "q", "g")[:3],
                len(a.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "q", ">")[0][1])]
    ours, ref = Server(), Server(redis=True)
    try:
        got, want = run(ours), run(ref)
    finally:
        ours.stop()
        ref.stop()
    assert got == want
    assert got[0] == 1000


@pytest.fixture(scope="module", params=[2, 4])
def oneport(request):
    s = Server(shards=request.param, extra=["--port-mode", "one-port"])
    s.keys = names(request.param)
    yield s
    code, err = s.stop()
    assert code == 0, err


def test_blocked_clients_counts_the_client_once(oneport):
    s1, s2, s3 = oneport.keys
    a, b = Conn(oneport.port), Conn(oneport.port)
    a.send("XREAD", "BLOCK", "0", "STREAMS", s1, s2, s3, "$", "$", "$")
    wait_blocked(b, 1)
    c = Conn(oneport.port)
    c.send("XREAD", "BLOCK", "0", "STREAMS", s3, s1, "$", "$")
    wait_blocked(b, 2)
    b.call("XADD", s1, "*", "f", "v")
    assert a.read()[0][0] == s1.encode()
    assert c.read()[0][0] == s1.encode()
    wait_blocked(b, 0, 0)
    b.call("DEL", s1, s2, s3)


def test_disconnect_releases_every_part(oneport):
    s1, s2, s3 = oneport.keys
    b = Conn(oneport.port)
    b.call("XGROUP", "CREATE", s1, "dg", "$", "MKSTREAM")
    b.call("XGROUP", "CREATE", s2, "dg", "$", "MKSTREAM")
    for _ in range(3):
        a = Conn(oneport.port)
        a.send("XREADGROUP", "GROUP", "dg", "gone", "BLOCK", "0", "STREAMS", s1, s2, ">", ">")
        # both parts parked (not only the client counted): a part still on its way to its
        # shard when the connection closes can serve an entry added meanwhile (see
        # fwd_multi.c's stage 1); this test is about releasing parked ones
        wait_blocked(b, 1, 2)
        a.close()
        wait_blocked(b, 0, 0)
    # nothing parked any more: these entries are for nobody, and stay unread
    b.call("XADD", s1, "*", "f", "v")
    b.call("XADD", s2, "*", "f", "v")
    assert b.call("XPENDING", s1, "dg")[0] == 0
    assert b.call("XPENDING", s2, "dg")[0] == 0
    # a live consumer still gets them
    assert len(b.call("XREADGROUP", "GROUP", "dg", "live", "BLOCK", "0", "STREAMS", s1, s2, ">", ">")) == 2
    b.call("DEL", s1, s2)


def test_every_entry_once_with_consumers_parked_on_two_shards(oneport):
    """8 consumers each loop XREADGROUP BLOCK 0 COUNT 3 on two streams of two shards
    while a producer adds 400 entries alternating between them, pipelined: every
    entry reaches exactly one consumer, once, and the PELs hold exactly the entries
    delivered (nothing consumed without reaching a client)."""
    s1, s2, _ = oneport.keys
    b = Conn(oneport.port)
    for k in (s1, s2):
        b.call("DEL", k)
        b.call("XGROUP", "CREATE", k, "eg", "$", "MKSTREAM")
    consumers = [Conn(oneport.port) for _ in range(8)]
    for i, c in enumerate(consumers):
        c.send("XREADGROUP", "GROUP", "eg", f"c{i}", "BLOCK", "0", "COUNT", "3", "STREAMS", s1, s2, ">", ">")
    wait_blocked(b, 8)
    total = 400
    p = Conn(oneport.port)
    for i in range(total):
        p.send("XADD", s1 if i % 2 == 0 else s2, "*", "n", str(i))
    added = [p.read() for _ in range(total)]
    assert all(isinstance(x, bytes) for x in added)
    seen = []
    import select
    live = {c.sock.fileno(): c for c in consumers}
    while len(seen) < total:
        # a consumer whose reply arrived reads it and parks again
        ready, _, _ = select.select(list(live), [], [], 30)
        assert ready, f"stalled with {len(seen)} of {total} entries delivered"
        for fd in ready:
            c = live[fd]
            reply = c.read()
            assert isinstance(reply, list), reply
            for key, entries in reply:  # one connection, RESP2
                seen += [(key, e[0]) for e in entries]
            if len(seen) < total:
                i = consumers.index(c)
                c.send("XREADGROUP", "GROUP", "eg", f"c{i}", "BLOCK", "0", "COUNT", "3", "STREAMS", s1, s2, ">", ">")
    assert len(seen) == len(set(seen)) == total
    assert sorted(e for _, e in seen) == sorted(added)
    assert b.call("XPENDING", s1, "eg")[0] + b.call("XPENDING", s2, "eg")[0] == total
    for c in consumers:
        c.close()
    wait_blocked(b, 0, 0)
    b.call("DEL", s1, s2)


def test_per_shard_mode_keeps_crossslot():
    s = Server(shards=2)
    try:
        s1, s2, _ = names(2)
        c = Conn(s.port + resp.shard_of(s1, 2))
        for cmd in (["XREAD", "BLOCK", "0", "STREAMS", s1, s2, "$", "$"],
                    ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", s1, s2, ">", ">"]):
            got = c.call(*cmd)
            assert isinstance(got, Err) and str(got).startswith("CROSSSLOT"), got
    finally:
        code, err = s.stop()
    assert code == 0, err


@pytest.mark.parametrize("shards", [2, 4])
def test_sigterm_with_parts_parked(shards):
    """SIGTERM while coordinated reads are parked on every shard: a clean exit (under
    ASan: nothing leaked), each parked client answered or disconnected."""
    s = Server(shards=shards, extra=["--port-mode", "one-port"])
    s1, s2, s3 = names(shards)
    clients = [Conn(s.port) for _ in range(6)]
    try:
        b = Conn(s.port)
        b.call("XGROUP", "CREATE", s1, "g", "$", "MKSTREAM")
        b.call("XGROUP", "CREATE", s3, "g", "$", "MKSTREAM")
        for i, c in enumerate(clients):
            if i % 2:
                c.send("XREAD", "BLOCK", "0", "STREAMS", s1, s2, s3, "$", "$", "$")
            else:
                c.send("XREADGROUP", "GROUP", "g", f"c{i}", "BLOCK", "0", "STREAMS", s3, s1, ">", ">")
        wait_blocked(b, len(clients))
    finally:
        code, err = s.stop()
    assert code == 0, err
