"""One slotlane-server (or redis-server) per test in the modes the CLIENT tests run
in: "redis", "shards1", "shards2-pershard" (the clients on shard 1, with keys of
shard 1 from key()), "shards2-oneport", "shards2-forward" (per-shard ports with
`--misrouted forward`: the clients on shard 0, the keys of shard 1, so every key is
reached through forwarding; peer() is a client of shard 1). Servers are stopped by
PID (resp.Server)."""
from resp import Conn, Server, key_slot


class ModeSetup:
    def __init__(self, mode):
        self.mode = mode
        if mode == "redis":
            self.srv = Server(redis=True)
        elif mode == "shards1":
            self.srv = Server(shards=1)
        elif mode == "shards2-pershard":
            self.srv = Server(shards=2)
        elif mode == "shards2-forward":
            self.srv = Server(shards=2, extra=["--misrouted", "forward"])
        else:
            self.srv = Server(shards=2, extra=["--port-mode", "one-port"])
        self.conns = []

    def key(self, name):
        """A key owned by the last shard in per-shard mode (the clients' shard)."""
        if self.mode not in ("shards2-pershard", "shards2-forward"):
            return name
        for i in range(1000):
            k = f"{{t{i}}}{name}"
            if key_slot(k) * 2 // 16384 == 1:
                return k
        raise AssertionError("no key for shard 1")

    def pauser(self):
        """A client of the first port (shard 0 in per-shard mode)."""
        c = Conn(self.srv.port)
        self.conns.append(c)
        return c

    def client(self, proto=2):
        """A client of the last shard (per-shard mode), else of the port."""
        c = Conn(self.srv.port + (1 if self.mode == "shards2-pershard" else 0))
        if proto == 3:
            c.call("HELLO", "3")
        self.conns.append(c)
        return c

    def peer(self, proto=2):
        """Another client: of the other shard in forward mode, else as client()."""
        if self.mode != "shards2-forward":
            return self.client(proto)
        c = Conn(self.srv.port + 1)
        if proto == 3:
            c.call("HELLO", "3")
        self.conns.append(c)
        return c

    def stop(self):
        for c in self.conns:
            c.close()
        code, err = self.srv.stop()
        assert self.mode == "redis" or code == 0, err


def until_marker(conn, marker="end-of-case"):
    """Every reply up to the ECHO of the marker: what the server really sent."""
    conn.send("ECHO", marker)
    out = []
    while True:
        r = conn.read()
        if r == marker.encode():
            return out
        out.append(r)
