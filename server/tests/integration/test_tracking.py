"""CLIENT TRACKING / CACHING / TRACKINGINFO / GETREDIR against redis-server 7.0,
decided by events: the invalidation pushes (and RESP2 redirect messages) a client
receives, counted and compared with what redis-server sends for the same commands.
A marker (ECHO) after each step makes "nothing more arrived" an event too: everything
before the marker's reply is what the server sent.

Runs on redis-server, slotlane-server at 1 shard, and 2 shards per-shard (the clients
on shard 1, whose keys they use: tracking is per shard, as per node in Redis Cluster);
with forwarding (one-port) TRACKING ON is refused with an error."""
import pytest

from resp import Conn, Err, Map, Push, Server, Status
from server_modes import ModeSetup, until_marker

MODES = ["redis", "shards1", "shards2-pershard"]


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
    assert tracking(b) == 1
    info = a.call("CLIENT", "TRACKINGINFO")
    d = {k: v for k, v in info}
    assert sorted(d[b"flags"]) == [b"bcast", b"noloop", b"on"] and d[b"redirect"] == 0
    assert d[b"prefixes"] == [p.encode()]
    assert a.call("CLIENT", "TRACKING", "OFF") == Status("OK") and tracking(b) == 0


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
    sub = setup.client(proto=2)
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


def test_refused_with_forwarding():
    s = Server(shards=2, extra=["--port-mode", "one-port"])
    try:
        c = Conn(s.port)
        c.call("HELLO", "3")
        r = c.call("CLIENT", "TRACKING", "ON")
        assert isinstance(r, Err) and "not supported with forwarding" in r
        assert c.call("CLIENT", "GETREDIR") == -1
        c.close()
    finally:
        assert s.stop()[0] == 0
