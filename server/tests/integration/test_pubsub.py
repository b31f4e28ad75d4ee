"""Pub/sub: replies and messages against redis-server 7.0 (RESP2 and RESP3, 1 shard,
4 shards per-shard, one port), messages of 8 publishers reaching 16 subscribers on
4 shards complete and in per-publisher order, sharded channels routed by slot, and a
subscriber that stops reading dropped at `client-output-buffer-limit pubsub` while
the others keep receiving.

Verdicts come from replies, messages and the connection closing; nothing waits on a
clock."""
import socket

import pytest

from resp import Conn, Err, Push, Server, encode, keys_per_shard, read_until_close, shard_of

MODES = {
    "1 shard": dict(shards=1, extra=()),
    "4 shards per-shard": dict(shards=4, extra=()),
    "4 shards one-port": dict(shards=4, extra=("--port-mode", "one-port")),
    "4 shards forward": dict(shards=4, extra=("--misrouted", "forward")),
}


def norm(x):
    """Push and array compare alike across the two servers' parsers (same types)."""
    return x


def port_for(server, key=None):
    """The port to send to: in per-shard mode the owner of key's slot, else the one port."""
    if key is None or server.shards == 1 or "one-port" in server.extra or "--misrouted" in server.extra:
        return server.port
    return server.port + shard_of(key, server.shards)


class Pair:
    """The same client on ours and on the reference: every call compared."""

    def __init__(self, ours, ref, proto, key=None):
        self.a = Conn(port_for(ours, key))
        self.b = Conn(ref.port)
        if proto == 3:
            self.a.call("HELLO", "3")
            self.b.call("HELLO", "3")

    def call(self, *args):
        self.a.send(*args)
        self.b.send(*args)
        return self.read(f"{args}")

    def send(self, *args):
        self.a.send(*args)
        self.b.send(*args)

    def read(self, what="message"):
        ra, rb = self.a.read(), self.b.read()
        assert type(ra) is type(rb) and ra == rb, f"{what}: ours {ra!r}, redis {rb!r}"
        return ra

    def close(self):
        self.a.close()
        self.b.close()


@pytest.fixture(scope="module", params=list(MODES))
def servers(request):
    ours = Server(**MODES[request.param])
    ours.extra = MODES[request.param]["extra"]
    ref = Server(redis=True)
    yield ours, ref
    ref.stop()
    code, err = ours.stop()
    assert code == 0, err


@pytest.mark.parametrize("proto", [2, 3])
def test_differential_subscribe_publish(servers, proto):
    ours, ref = servers
    pub = Pair(ours, ref, 2)
    sub = Pair(ours, ref, proto)
    psub = Pair(ours, ref, proto)
    # nothing subscribed yet
    pub.send("UNSUBSCRIBE", "a", "b")  # one reply per channel
    pub.read("unsubscribe a")
    pub.read("unsubscribe b")
    for cmd in (["UNSUBSCRIBE"], ["PUNSUBSCRIBE"], ["PUBSUB", "NUMPAT"],
                ["PUBSUB", "NUMSUB", "news", "other"], ["PUBSUB", "CHANNELS"], ["PUBLISH", "news", "x"],
                ["PUBSUB", "FOO"], ["PUBSUB", "NUMPAT", "x"], ["PUBSUB", "CHANNELS", "a", "b"], ["SUBSCRIBE"],
                ["PUBLISH", "a"], ["PUBSUB", "HELP"]):
        pub.call(*cmd)
    sub.send("SUBSCRIBE", "news", "sport", "news")
    for _ in range(3):
        sub.read("subscribe")
    psub.send("PSUBSCRIBE", "n*", "s?ort", "x[ab]")
    for _ in range(3):
        psub.read("psubscribe")
    assert pub.call("PUBLISH", "news", "hello") == 2  # a channel and a pattern subscriber
    sub.read("message")
    psub.read("pmessage")
    assert pub.call("PUBLISH", "sport", "goal") == 2
    sub.read("message")
    psub.read("pmessage")
    assert pub.call("PUBLISH", "xa", "") == 1
    psub.read("pmessage")
    assert pub.call("PUBLISH", "nothing-here", "v") == 1  # n*
    psub.read("pmessage")
    assert pub.call("PUBLISH", "zz", "v") == 0
    pub.call("PUBSUB", "NUMSUB", "news", "sport", "none")
    pub.call("PUBSUB", "NUMPAT")
    chans = pub.a.call("PUBSUB", "CHANNELS"), pub.b.call("PUBSUB", "CHANNELS")
    assert sorted(chans[0]) == sorted(chans[1])
    assert sorted(pub.a.call("PUBSUB", "CHANNELS", "n*")) == sorted(pub.b.call("PUBSUB", "CHANNELS", "n*"))
    # what a subscribed client may send (a key of shard 0: a key of another shard
    # gets MOVED first, as in Redis Cluster, whose redirection comes before this check)
    k = keys_per_shard("k", 1, 4)[0]
    for cmd in (["PING"], ["PING", "hi"], ["GET", k], ["PUBSUB", "NUMSUB"], ["CLIENT", "ID"], ["SET", k, "v"]):
        if proto == 2 or cmd[0] == "PING":
            sub.call(*cmd)
        else:  # RESP3: anything; compare only the reply type for identity-carrying replies
            ra, rb = sub.a.call(*cmd), sub.b.call(*cmd)
            assert type(ra) is type(rb), (cmd, ra, rb)
    sub.send("UNSUBSCRIBE", "sport", "never")
    sub.read("unsubscribe")
    sub.read("unsubscribe")
    psub.send("PUNSUBSCRIBE", "s?ort")
    psub.read("punsubscribe")
    assert pub.call("PUBLISH", "sport", "late") == 0
    sub.send("UNSUBSCRIBE")
    sub.read("unsubscribe all")
    assert sub.call("PING") is not None  # out of subscribed mode: PONG again
    sub.call("GET", k)
    psub.send("PSUBSCRIBE", "n*")
    psub.read("psubscribe again")
    psub.send("RESET")
    psub.read("reset")
    assert pub.call("PUBLISH", "news", "after reset") == 0
    for c in (pub, sub, psub):
        c.close()


@pytest.mark.parametrize("proto", [2, 3])
def test_differential_sharded_channels(servers, proto):
    ours, ref = servers
    ch = "{sh}orders"
    pub = Pair(ours, ref, 2, key=ch)
    sub = Pair(ours, ref, proto, key=ch)
    sub.send("SSUBSCRIBE", ch, "{sh}other")
    sub.read("ssubscribe")
    sub.read("ssubscribe")
    pub.call("PUBSUB", "SHARDNUMSUB", ch, "{sh}none")
    assert sorted(pub.a.call("PUBSUB", "SHARDCHANNELS")) == sorted(pub.b.call("PUBSUB", "SHARDCHANNELS"))
    assert pub.call("SPUBLISH", ch, "o1") == 1
    sub.read("smessage")
    assert pub.call("PUBLISH", ch, "classic") == 0  # another namespace
    sub.call("PING")
    sub.send("SUNSUBSCRIBE", ch)
    sub.read("sunsubscribe")
    sub.send("SUNSUBSCRIBE")
    sub.read("sunsubscribe all")
    sub.send("SUNSUBSCRIBE")
    sub.read("sunsubscribe none")
    assert pub.call("SPUBLISH", ch, "o2") == 0
    pub.close()
    sub.close()


def test_sharded_channels_routed_by_slot():
    s = Server(shards=4)
    try:
        chans = keys_per_shard("ch", 1, 4)
        c = Conn(s.port)  # shard 0
        other = chans[1]
        assert c.call("SPUBLISH", other, "m").startswith("MOVED")
        assert c.call("SSUBSCRIBE", other).startswith("MOVED")
        assert c.call("SSUBSCRIBE", chans[0], "{x}y").startswith("CROSSSLOT")
        # classic channels are server-wide: a subscriber on shard 3 hears shard 0's publish
        sub = Conn(s.port + 3)
        assert sub.call("SUBSCRIBE", "all") == [b"subscribe", b"all", 1]
        assert c.call("PUBLISH", "all", "hi") == 1
        assert sub.read() == [b"message", b"all", b"hi"]
        assert c.call("PUBSUB", "NUMSUB", "all") == [b"all", 1]
    finally:
        code, err = s.stop()
    assert code == 0, err


@pytest.mark.parametrize("mode", ["per-shard", "one-port"])
def test_16_subscribers_8_publishers_on_4_shards(mode):
    extra = ("--port-mode", "one-port") if mode == "one-port" else ()
    s = Server(shards=4, extra=extra)
    per, chunk = 200, 50
    try:
        ports = [s.port] * 16 if mode == "one-port" else [s.port + i % 4 for i in range(16)]
        subs = []
        for i, p in enumerate(ports):
            c = Conn(p)
            if i % 2:  # half by channel, half by pattern, half RESP3
                c.call("HELLO", "3")
                c.send("PSUBSCRIBE", "feed*")
            else:
                c.send("SUBSCRIBE", "feed")
            c.read()
            subs.append(c)
        ctl = Conn(s.port)
        assert ctl.call("PUBSUB", "NUMSUB", "feed") == [b"feed", 8]
        assert ctl.call("PUBSUB", "NUMPAT") == 1
        pubs = [Conn(s.port if mode == "one-port" else s.port + i % 4) for i in range(8)]
        for start in range(0, per, chunk):
            for i, p in enumerate(pubs):
                p.send_raw(b"".join(encode(["PUBLISH", "feed", f"p{i}:{n}"]) for n in range(start, start + chunk)))
            for p in pubs:
                for _ in range(chunk):
                    assert p.read() == 16  # every subscriber of the server counted
        for c in subs:
            nxt = [0] * 8
            for _ in range(8 * per):
                m = c.read()
                body = m[-1].decode()
                i, n = (int(x) for x in body[1:].split(":"))
                assert n == nxt[i], f"publisher {i}: got {n}, expected {nxt[i]}"
                nxt[i] += 1
            assert nxt == [per] * 8
        info = ctl.call("INFO", "stats").decode()
        stats = dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)
        sent, wakeups = int(stats["pubsub_shard_messages_sent"]), int(stats["pubsub_shard_wakeups"])
        assert sent > 0
        # batched per loop turn: far fewer wakeups than messages between shards
        assert wakeups * 5 <= sent, (wakeups, sent)
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_slow_subscriber_is_dropped_at_the_limit():
    s = Server(shards=2)
    try:
        ctl = Conn(s.port)
        assert ctl.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 256kb 128kb 60") == "OK"
        assert b"pubsub 262144 131072 60" in ctl.call("CONFIG", "GET", "client-output-buffer-limit")[1]
        assert ctl.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1x 0 0").startswith("ERR CONFIG SET failed")
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(("127.0.0.1", s.port + 1))
        slow.sendall(encode(["SUBSCRIBE", "flood"]))
        fast = Conn(s.port + 1)
        fast.send("SUBSCRIBE", "flood")
        fast.read()
        other = Conn(s.port)  # a subscriber on the publisher's shard
        other.send("SUBSCRIBE", "flood")
        other.read()
        assert ctl.call("PUBSUB", "NUMSUB", "flood") == [b"flood", 3]
        payload = "x" * 1024
        total, chunk = 12000, 200
        for start in range(0, total, chunk):
            ctl.send_raw(b"".join(encode(["PUBLISH", "flood", f"{n}:{payload}"]) for n in range(start, start + chunk)))
            for _ in range(chunk):
                ctl.read()
            for _ in range(chunk):  # the fast ones keep up
                for c in (fast, other):
                    m = c.read()
                    assert m[0] == b"message"
        # the slow one was closed (it reads what the kernel held, then the end)
        data = read_until_close(slow, timeout=30)
        assert len(data) < total * 1024
        assert ctl.call("PUBSUB", "NUMSUB", "flood") == [b"flood", 2]
        assert ctl.call("PUBLISH", "flood", "still") == 2
        assert fast.read()[2] == b"still" and other.read()[2] == b"still"
    finally:
        code, err = s.stop()
    assert code == 0, err


def info_pubsub(conn):
    text = conn.call("INFO", "stats").decode()
    fields = dict(l.split(":", 1) for l in text.split("\r\n") if ":" in l)
    return tuple(int(fields[f]) for f in ("pubsub_channels", "pubsub_patterns", "pubsubshard_channels"))


def test_info_pubsub_counts_like_redis():
    """INFO stats pubsub_channels / pubsub_patterns / pubsubshard_channels count the
    channels and patterns with subscribers as Redis does (two subscribers of one
    channel count once, a pattern's last unsubscribe removes it), at 1 shard against
    redis-server; at 4 shards the whole server's, asked on any shard."""
    ours, ref = Server(shards=1), Server(redis=True)
    try:
        pa, pb = Conn(ours.port), Conn(ref.port)
        subs = [(Conn(ours.port), Conn(ref.port)) for _ in range(2)]
        # (who, confirmations it gets, command)
        script = [
            (0, 2, "SUBSCRIBE", "a", "b"), (1, 2, "SUBSCRIBE", "b", "c"), (0, 2, "PSUBSCRIBE", "p*", "q*"),
            (1, 1, "PSUBSCRIBE", "p*"), (0, 1, "SSUBSCRIBE", "s1"), (1, 2, "SSUBSCRIBE", "s1", "s2"),
            (0, 1, "UNSUBSCRIBE", "b"), (1, 1, "PUNSUBSCRIBE", "p*"), (0, 2, "PUNSUBSCRIBE"),
            (1, 1, "SUNSUBSCRIBE", "s1"), (0, 1, "UNSUBSCRIBE"), (1, 2, "UNSUBSCRIBE"),
        ]
        seen = []
        for who, n, *cmd in script:
            for conn in subs[who]:
                conn.send(*cmd)
                for _ in range(n):
                    conn.read()
            a, b = info_pubsub(pa), info_pubsub(pb)
            assert a == b, f"after {cmd}: ours {a}, redis {b}"
            seen.append(a)
        assert (3, 2, 2) in seen and seen[-1] == (0, 0, 2)
    finally:
        ref.stop()
        code, err = ours.stop()
    assert code == 0, err
    s = Server(shards=4)
    try:
        chans = keys_per_shard("sch", 1, 4)
        subs = [Conn(s.port + i) for i in range(4)]
        for i, c in enumerate(subs):
            c.send("SUBSCRIBE", f"c{i}", "common")
            c.read(), c.read()
            c.send("PSUBSCRIBE", f"p{i % 2}*")
            c.read()
            c.send("SSUBSCRIBE", chans[i])
            c.read()
        for i in range(4):
            assert info_pubsub(Conn(s.port + i)) == (5, 2, 4)
        assert Conn(s.port).call("PUBSUB", "NUMPAT") == 2
        subs[0].close()  # its connection's subscriptions go with it
        assert Conn(s.port + 1).call("PING") == "PONG"
        for _ in range(5000):  # shard 0's loop sees the close: asked until it has (bounded)
            if info_pubsub(Conn(s.port + 2)) == (4, 2, 3):
                break
        assert info_pubsub(Conn(s.port + 2)) == (4, 2, 3)
    finally:
        code, err = s.stop()
    assert code == 0, err
