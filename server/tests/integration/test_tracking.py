"""CLIENT TRACKING / CACHING / TRACKINGINFO / GETREDIR against redis-server 7.0,
decided by events: the invalidation pushes (and RESP2 redirect messages) a client
receives, counted and compared with what redis-server sends for the same commands.
A marker (ECHO) after each step makes "nothing more arrived" an event too: everything
before the marker's reply is what the server sent.

Runs on redis-server, slotlane-server at 1 shard, 2 shards per-shard (the clients
on shard 1, whose keys they use: tracking is per shard, as per node in Redis Cluster),
and with forwarding: 2 shards one-port (the kernel picks each client's shard) and 2
shards `--misrouted forward` with the clients on shard 0 and the keys on shard 1, so
every read is remembered by the other shard and every invalidation comes back from
it (a REDIRECT client, peer(), on shard 1)."""
import pytest

from resp import Conn, Err, Map, Push, Server, Status
from server_modes import ModeSetup, until_marker

MODES = ["redis", "shards1", "shards2-pershard", "shards2-oneport", "shards2-forward"]


class Setup(ModeSetup):
    def client(self, proto=3):
        return super().client(proto)


@pytest.fixture(params=MODES)
def setup(request):
    s = Setup(request.param)
    yield s
    s.stop()


def inval(*keys):
    return Push([b"invalidate", list(k.encode() for k in keys)])


def test_default_mode_invalidates_keys_read(setup):
    a, b = setup.client(), setup.client()
    k1, k2, k3 = setup.key("tk1"), setup.key("tk2"), setup.key("tk3")
    assert b.call("SET", k1, "1") == Status("OK")
    assert a.call("CLIENT", "TRACKING", "ON") == Status("OK")
    assert a.call("GET", k1) == b"1"
    assert a.call("GET", k2) is None  # a missing key is tracked too
    assert until_marker(a) == []
    assert b.call("SET", k1, "2") == Status("OK")
    assert b.call("SET", k3, "x") == Status("OK")  # not read: no push
    assert until_marker(a) == [inval(k1)]
    assert b.call("SET", k1, "3") == Status("OK")  # invalidated once: not tracked any more
    assert until_marker(a) == []
    assert b.call("LPUSH", k2, "x") == 1
    assert until_marker(a) == [inval(k2)]
    # its own write: the push comes after the write's reply
    assert a.call("GET", k3) == b"x"
    a.send("SET", k3, "y")
    assert a.read() == Status("OK")
    assert until_marker(a) == [inval(k3)]
    # a flush invalidates everything with a null
    assert a.call("GET", k1) == b"3"
    assert b.call("FLUSHALL") == Status("OK")
    got = until_marker(a)
    assert got == [Push([b"invalidate", None])], got


def test_noloop_bcast_prefix(setup):
    a, b = setup.client(), setup.client()
    p = setup.key("user:")
    assert a.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", p, "NOLOOP") == Status("OK")
    assert b.call("SET", p + "1", "x") == Status("OK")
    assert b.call("SET", setup.key("other"), "x") == Status("OK")
    a.send("SET", p + "2", "x")  # NOLOOP: no push for its own write
    assert until_marker(a) == [inval(p + "1"), Status("OK")]
    tracking = lambda c: int(bytes(c.call("INFO", "clients")).decode().split("tracking_clients:")[1].split("\r\n")[0])  # noqa: E731
    assert tracking(a) == 1  # (the tracking client's own shard counts it)
    info = a.call("CLIENT", "TRACKINGINFO")
    d = {k: v for k, v in info}
    assert sorted(d[b"flags"]) == [b"bcast", b"noloop", b"on"] and d[b"redirect"] == 0
    assert d[b"prefixes"] == [p.encode()]
    assert a.call("CLIENT", "TRACKING", "OFF") == Status("OK") and tracking(a) == 0


def test_optin_optout(setup):
    a, b = setup.client(), setup.client()
    k1, k2 = setup.key("oi1"), setup.key("oi2")
    assert a.call("CLIENT", "TRACKING", "ON", "OPTIN") == Status("OK")
    a.call("GET", k1)  # not cached: not tracked
    assert a.call("CLIENT", "CACHING", "YES") == Status("OK")
    a.call("GET", k2)  # tracked
    b.call("SET", k1, "1")
    b.call("SET", k2, "1")
    assert until_marker(a) == [inval(k2)]
    assert a.call("CLIENT", "TRACKING", "OFF") == Status("OK")
    assert a.call("CLIENT", "TRACKING", "ON", "OPTOUT") == Status("OK")
    assert a.call("CLIENT", "CACHING", "NO") == Status("OK")
    a.call("GET", k1)  # excluded
    a.call("GET", k2)  # tracked
    b.call("SET", k1, "2")
    b.call("SET", k2, "2")
    assert until_marker(a) == [inval(k2)]


def test_redirect_to_resp2_subscriber(setup):
    sub = setup.peer(proto=2)
    sid = sub.call("CLIENT", "ID")
    assert sub.call("SUBSCRIBE", "__redis__:invalidate") == [b"subscribe", b"__redis__:invalidate", 1]
    a, b = setup.client(proto=2), setup.client()
    k = setup.key("rk")
    assert a.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(sid)) == Status("OK")
    assert a.call("CLIENT", "GETREDIR") == sid
    a.call("GET", k)
    b.call("SET", k, "v")
    assert sub.read() == [b"message", b"__redis__:invalidate", [k.encode()]]
    assert until_marker(a) == []  # nothing on the tracking client itself


def test_tracking_replies_and_errors(setup):
    a = setup.client()
    for argv, want in (
            (["CLIENT", "GETREDIR"], -1),
            (["CLIENT", "CACHING", "YES"], Err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")),
            (["CLIENT", "TRACKING", "MAYBE"], Err("ERR syntax error")),
            (["CLIENT", "TRACKING", "ON", "FOO"], Err("ERR syntax error")),
            (["CLIENT", "TRACKING", "ON", "PREFIX", "a"], Err("ERR PREFIX option requires BCAST mode to be enabled")),
            (["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"], Err("ERR OPTIN and OPTOUT are not compatible with BCAST")),
            (["CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"], Err("ERR You can't specify both OPTIN mode and OPTOUT mode")),
            (["CLIENT", "TRACKING", "ON", "REDIRECT", "x"], Err("ERR value is not an integer or out of range")),
            (["CLIENT", "TRACKING", "ON", "REDIRECT", "999999"], Err("ERR The client ID you want redirect to does not exist")),
            (["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a"],
             Err("ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap.")),
            (["CLIENT", "TRACKING"], Err("ERR wrong number of arguments for 'client|tracking' command")),
            (["CLIENT", "TRACKINGINFO", "x"], Err("ERR wrong number of arguments for 'client|trackinginfo' command")),
            (["CLIENT", "TRACKING", "ON", "OPTIN"], Status("OK")),
            (["CLIENT", "CACHING", "NO"], Err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")),
            (["CLIENT", "CACHING", "MAYBE"], Err("ERR syntax error")),
            (["CLIENT", "TRACKING", "ON", "OPTOUT"], Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")),
            (["CLIENT", "TRACKING", "ON", "BCAST"], Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")),
            (["CLIENT", "GETREDIR"], 0),
            (["CLIENT", "TRACKING", "OFF"], Status("OK")),
            (["CLIENT", "TRACKINGINFO"], Map([(b"flags", {b"off"}), (b"redirect", -1), (b"prefixes", [])]))):
        got = a.call(*argv)
        if isinstance(want, Map):
            got = Map([(k, set(v) if k == b"flags" else v) for k, v in got])
        assert got == want, (argv, got)


def info(c):
    """CLIENT TRACKINGINFO as a dict (a RESP3 map or RESP2's flat pairs)."""
    r = c.call("CLIENT", "TRACKINGINFO")
    return dict(r) if isinstance(r, Map) else dict(zip(r[::2], r[1::2]))


def wait_gone(setup, cid):
    """Until the server has closed client cid: a REDIRECT to it is refused (the
    server's own answer, in every mode)."""
    probe = setup.client()
    for _ in range(100000):
        r = probe.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(cid))
        if isinstance(r, Err):
            assert "does not exist" in r
            return
        assert probe.call("CLIENT", "TRACKING", "OFF") == Status("OK")
    raise AssertionError(f"client {cid} never went")


def test_redirect_broken(setup):
    """The REDIRECT client goes away: the next invalidation sends the tracking client
    (RESP3) `tracking-redir-broken` with the ID instead, and TRACKINGINFO says
    broken_redirect from then on, as Redis 7.0 (a RESP2 tracking client gets nothing)."""
    sub = setup.peer(proto=3)
    sid = sub.call("CLIENT", "ID")
    a, a2, b = setup.client(), setup.client(proto=2), setup.client()
    k, k2 = setup.key("rb1"), setup.key("rb2")
    for c in (a, a2):
        assert c.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(sid)) == Status("OK")
    assert a.call("GET", k) is None and a2.call("GET", k) is None
    b.call("SET", k, "1")
    assert sub.read() == inval(k)  # (one per tracking client)
    assert sub.read() == inval(k)
    assert a.call("GET", k) == b"1" and a2.call("GET", k) == b"1" and a.call("GET", k2) is None
    sub.close()
    wait_gone(setup, sid)
    assert b"broken_redirect" not in info(a)[b"flags"]  # only once an invalidation found it gone
    b.call("SET", k, "2")
    b.call("SET", k2, "2")
    assert until_marker(a) == [Push([b"tracking-redir-broken", sid])] * 2
    assert until_marker(a2) == []
    assert b"broken_redirect" in info(a)[b"flags"] and b"broken_redirect" in info(a2)[b"flags"]
    assert info(a)[b"redirect"] == sid
    # TRACKING ON again clears it
    assert a.call("CLIENT", "TRACKING", "OFF") == Status("OK")
    assert a.call("CLIENT", "TRACKING", "ON") == Status("OK")
    assert b"broken_redirect" not in info(a)[b"flags"]


def test_reset_turns_tracking_off(setup):
    """RESET resets what Redis 7.0's clearClientConnectionState does: tracking off
    (no invalidation for keys read before), RESP2, no name, CLIENT REPLY OFF cleared;
    a SKIP still mutes the RESET itself."""
    a, b = setup.client(), setup.client()
    k = setup.key("rs1")
    assert a.call("CLIENT", "TRACKING", "ON", "NOLOOP") == Status("OK")
    assert a.call("CLIENT", "SETNAME", "me") == Status("OK")
    assert a.call("GET", k) is None
    assert a.call("RESET") == Status("RESET")
    assert a.call("CLIENT", "GETNAME") is None
    assert a.call("CLIENT", "GETREDIR") == -1
    assert info(a)[b"flags"] == [b"off"], info(a)
    a.call("HELLO", "3")
    b.call("SET", k, "1")
    assert until_marker(a) == []
    # CLIENT REPLY OFF: RESET's own reply is sent; SKIP: it is not
    a.send("CLIENT", "REPLY", "OFF")
    assert a.call("RESET") == Status("RESET")
    assert a.call("PING") == Status("PONG")
    a.send("CLIENT", "REPLY", "SKIP")
    a.send("RESET")
    assert a.call("PING") == Status("PONG")


def test_forwarded_reads_of_several_shards():
    """One-port mode, 4 shards, a RESP3 client: MGET of keys on every shard, a read of
    each shard's key, BCAST with a prefix whose keys live on other shards, a REDIRECT
    client on another shard: every invalidation arrives, once, from the owners."""
    from resp import keys_per_shard
    s = Server(shards=4, extra=["--port-mode", "one-port"])
    try:
        keys = keys_per_shard("fw", 2, 4)
        a, b, w = Conn(s.port), Conn(s.port), Conn(s.port)
        for c in (a, b):
            c.call("HELLO", "3")
        assert a.call("CLIENT", "TRACKING", "ON") == Status("OK")
        assert b.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "fw") == Status("OK")
        assert a.call("MGET", *keys[:4]) == [None] * 4
        for k in keys[4:]:
            assert a.call("GET", k) is None
        for k in keys:
            assert w.call("SET", k, "v") == Status("OK")
        got = until_marker(a)
        assert sorted(got, key=repr) == sorted((inval(k) for k in keys), key=repr), got
        got = until_marker(b)
        assert sorted(got, key=repr) == sorted((inval(k) for k in keys), key=repr), got
        for k in keys:  # invalidated once: forgotten
            assert w.call("SET", k, "w") == Status("OK")
        assert until_marker(a) == []
        assert len(until_marker(b)) == len(keys)  # BCAST: every change
        for c in (a, b, w):
            c.close()
    finally:
        assert s.stop()[0] == 0
