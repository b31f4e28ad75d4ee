"""CLIENT PAUSE / UNPAUSE and CLIENT REPLY against redis-server 7.0, decided by events: the order of
replies (a held write's reply comes only after UNPAUSE, and what another client
reads meanwhile shows it has not run), the server's own clock (TIME sent during a
PAUSE ALL answers a time at least the pause's length after it began), and INFO's
counters (no key expires while paused).

Each case runs on redis-server and on slotlane-server at 1 shard, 2 shards per-shard
(the pausing client on shard 0, the paused ones on shard 1: a pause is server-wide)
and 2 shards one-port."""
import time

import pytest

from resp import Err, Status, key_slot
from server_modes import ModeSetup, until_marker


def wait_for(event, what, limit=300.0):
    """Polls the server until event() holds: decided by the server's answer, however long a
    loaded machine takes; the limit only turns a broken server into a failure, not a hang."""
    end = time.monotonic() + limit
    while not event():
        if time.monotonic() > end:
            raise AssertionError("waited %.0f s for %s" % (limit, what))
        time.sleep(0.002)

MODES = ["redis", "shards1", "shards2-pershard", "shards2-oneport"]


Setup = ModeSetup


@pytest.fixture(params=MODES)
def setup(request):
    s = Setup(request.param)
    yield s
    s.stop()


def test_pause_write_holds_writes_until_unpause(setup):
    k, other = setup.key("pk"), setup.key("pother")
    a, b, c = setup.pauser(), setup.client(), setup.client()
    assert c.call("SET", other, "1") == Status("OK")
    assert c.call("PFADD", setup.key("hll"), "x") == 1
    e = setup.client()
    assert e.call("MULTI") == Status("OK")
    assert e.call("INCR", setup.key("pcount")) == Status("QUEUED")
    assert a.call("CLIENT", "PAUSE", "100000", "WRITE") == Status("OK")
    f = setup.client()
    f.send("MULTI")
    f.send("SET", setup.key("pqueued"), "1")  # a write is held even where MULTI would queue it
    # a read before the write leaves at once; the write and what follows it wait
    b.send("GET", other)
    b.send("SET", k, "v")
    b.send("GET", k)
    assert b.read() == b"1"
    # reads of other clients run meanwhile and see the write not done
    assert c.call("GET", k) is None
    assert c.call("EXISTS", k) == 0
    r = c.call("MULTI"), c.call("GET", other), c.call("EXEC")  # a read-only transaction is not held
    assert r == (Status("OK"), Status("QUEUED"), [b"1"])
    # commands that may replicate are held too (PFCOUNT, PUBLISH, EVAL), in their order
    d = setup.client()
    d.send("PFCOUNT", setup.key("hll"))
    d.send("PUBLISH", "ch", "m")
    d.send("EVAL", "return 7", "0")
    ro = setup.client()  # a script declared no-writes runs (7.0 reads its shebang flags)
    assert ro.call("EVAL", "#!lua flags=no-writes\nreturn 8", "0") == 8
    e.send("EXEC")  # the EXEC of a write queued before the pause is held
    assert c.call("GET", setup.key("pcount")) is None
    assert a.call("CLIENT", "UNPAUSE") == Status("OK")
    assert b.read() == Status("OK")
    assert b.read() == b"v"
    assert [d.read(), d.read(), d.read()] == [1, 0, 7]
    assert e.read() == [1]
    assert f.read() == Status("OK") and f.read() == Status("QUEUED")
    assert f.call("DISCARD") == Status("OK")
    assert c.call("GET", k) == b"v"


def blocked(conn):
    info = bytes(conn.call("INFO", "clients")).decode()
    return int(info.split("blocked_clients:")[1].split("\r\n")[0])


def test_pause_write_held_in_arrival_order(setup):
    k = setup.key("porder")
    a = setup.pauser()
    clients = [setup.client() for _ in range(4)]
    assert a.call("CLIENT", "PAUSE", "100000", "WRITE") == Status("OK")
    for i, cl in enumerate(clients):
        cl.send("RPUSH", k, str(i))
        # held (INFO blocked_clients counts it, as Redis's postponed clients) before the next is sent
        wait_for(lambda: blocked(a) == i + 1, "client %d held by the pause" % i)
    # each RPUSH is held: the list does not exist yet
    probe = setup.client()
    assert probe.call("LLEN", k) == 0
    assert a.call("CLIENT", "UNPAUSE") == Status("OK")
    assert sorted(cl.read() for cl in clients) == [1, 2, 3, 4]
    got = probe.call("LRANGE", k, "0", "-1")
    if setup.mode == "shards2-oneport":  # clients on two shards: each shard resumes its own in order
        assert sorted(got) == [b"0", b"1", b"2", b"3"]
    else:
        assert got == [b"0", b"1", b"2", b"3"]
    assert blocked(a) == 0


def test_pause_all_holds_every_command_until_its_end(setup):
    """PAUSE ALL holds reads too (UNPAUSE as well, as Redis): TIME sent during the
    pause answers at least the pause's length after the TIME taken before it."""
    a, b = setup.pauser(), setup.client()
    t0 = a.call("TIME")
    assert a.call("CLIENT", "PAUSE", "400", "ALL") == Status("OK")
    b.send("TIME")
    b.send("GET", setup.key("pall"))
    t1 = b.read()
    assert b.read() is None
    ms = lambda t: int(t[0]) * 1000 + int(t[1]) // 1000  # noqa: E731
    assert ms(t1) - ms(t0) >= 400
    # over: commands run at once again
    assert b.call("SET", setup.key("pall"), "x") == Status("OK")


def local_key(conn, name):
    """One-port: a key of the shard this connection landed on (INFO is per shard)."""
    info = bytes(conn.call("INFO", "server")).decode()
    idx = int(info.split("shard_index:")[1].split("\r\n")[0])
    for i in range(1000):
        if key_slot(f"{{l{i}}}{name}") * 2 // 16384 == idx:
            return f"{{l{i}}}{name}"
    raise AssertionError("no local key")


def test_pause_keeps_keys_from_expiring(setup):
    a, b = setup.pauser(), setup.client()
    k = local_key(b, "pexp") if setup.mode == "shards2-oneport" else setup.key("pexp")
    expired = lambda: int(dict(l.split(":", 1) for l in bytes(b.call("INFO", "stats")).decode().split("\r\n")  # noqa: E731
                                 if ":" in l)["expired_keys"])
    before = expired()
    assert b.call("SET", k, "v", "PX", "50") == Status("OK")
    assert a.call("CLIENT", "PAUSE", "100000", "WRITE") == Status("OK")
    # the key passes its time: it reads as missing (polled on the server's answer)...
    wait_for(lambda: b.call("PTTL", k) == -2, "the key's time to pass")
    assert b.call("GET", k) is None
    # ... but nothing expired it: the active cycle and the lookups left it in place
    assert expired() == before
    assert b.call("DBSIZE") >= 1
    assert a.call("CLIENT", "UNPAUSE") == Status("OK")
    assert b.call("GET", k) is None
    assert expired() == before + 1


def test_pause_arguments_and_pause_zero(setup):
    a = setup.pauser()
    for argv, want in ((["CLIENT", "PAUSE", "x"], Err("ERR timeout is not an integer or out of range")),
                       (["CLIENT", "PAUSE", "-1"], Err("ERR timeout is negative")),
                       (["CLIENT", "PAUSE", "1", "foo"], Err("ERR CLIENT PAUSE mode must be WRITE or ALL")),
                       (["CLIENT", "PAUSE", "x", "foo"], Err("ERR CLIENT PAUSE mode must be WRITE or ALL")),
                       (["CLIENT", "PAUSE"], Err("ERR wrong number of arguments for 'client|pause' command")),
                       (["CLIENT", "UNPAUSE", "x"], Err("ERR wrong number of arguments for 'client|unpause' command")),
                       (["CLIENT", "UNPAUSE"], Status("OK")), (["CLIENT", "PAUSE", "0", "ALL"], Status("OK"))):
        assert a.call(*argv) == want, argv
    # PAUSE 0 holds nothing
    assert setup.client().call("SET", setup.key("pzero"), "1") == Status("OK")


@pytest.mark.parametrize("proto", [2, 3])
def test_client_reply(setup, proto):
    c = setup.client()
    if proto == 3:
        c.call("HELLO", "3")
    a, b, n = setup.key("ra"), setup.key("rb"), setup.key("rn")
    cases = [
        # (commands, the replies that must arrive)
        ([["CLIENT", "REPLY", "OFF"], ["SET", a, "1"], ["GET", a], ["INCR", a + "x", "y"], ["CLIENT", "REPLY", "ON"],
          ["GET", a]], [Status("OK"), b"1"]),
        ([["CLIENT", "REPLY", "SKIP"], ["SET", b, "2"], ["GET", b]], [b"2"]),
        ([["CLIENT", "REPLY", "SKIP"], ["CLIENT", "REPLY", "SKIP"], ["PING"], ["PING"]], [Status("PONG")]),
        ([["CLIENT", "REPLY", "SKIP"], ["GET", "{other}x"], ["SET", n, "3"]], [Status("OK")]),
        ([["CLIENT", "REPLY", "OFF"], ["CLIENT", "REPLY", "SKIP"], ["PING"], ["CLIENT", "REPLY", "ON"]], [Status("OK")]),
        ([["CLIENT", "REPLY", "FOO"]], [Err("ERR syntax error")]),
        ([["CLIENT", "REPLY"]], [Err("ERR wrong number of arguments for 'client|reply' command")]),
    ]
    for cmds, want in cases:
        for argv in cmds:
            c.send(*argv)
        got = until_marker(c)
        if setup.mode == "shards2-pershard":  # a key of the other shard: MOVED, muted or not
            got = [g for g in got if not (isinstance(g, Err) and str(g).startswith("MOVED"))]
        assert got == want, (cmds, got)
    assert c.call("GET", a) == b"1" and c.call("GET", n) == b"3"
