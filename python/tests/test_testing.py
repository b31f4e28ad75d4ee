"""slotlane.testing (the embedded slotlane-server) and its pytest plugin: two servers in one
process on ephemeral ports, a server stopped under a connected client (an I/O error, not a
hang or a timeout), 100 starts and stops without leaked threads or file descriptors, a
durability=always server restarted on the same directory, bad options, the fixtures."""
import os

import pytest

import slotlane
from slotlane.testing import Server, ServerError


def _count(path: str) -> int:
    return len(os.listdir(path))


def test_two_servers_at_once_on_ephemeral_ports():
    with Server(shards=4) as a, Server(shards=2, port_mode="one-port") as b:
        assert len(a.ports) == 4 and len(set(a.ports)) == 4 and 0 not in a.ports
        assert b.ports[0] == b.ports[1] and b.ports[0] not in a.ports
        assert a.url == "redis://127.0.0.1:%d" % a.ports[0]
        with slotlane.Client(a.url) as ra, slotlane.Client(b.url) as rb:
            for i in range(64):  # keys of every shard of a, routed by the client
                ra.set("key:%d" % i, "a%d" % i)
            rb.set("key:1", "b1")
            assert ra.get("key:1") == b"a1" and rb.get("key:1") == b"b1"
            assert rb.get("key:2") is None
            assert ra.dbsize() == 64 and rb.dbsize() == 1
            # each cluster view names its own shards
            assert sorted(int(n.addr.rsplit(":", 1)[1]) for n in ra.nodes()) == sorted(a.ports)


def test_stopped_while_connected_gives_errors_not_hangs():
    srv = Server(shards=2)
    with slotlane.Client(srv.url, socket_timeout=60) as r:
        r.set("k", "v")
        srv.stop()
        with pytest.raises(slotlane.Error) as e:
            r.get("k")
        # the connection ended (or was refused on the reconnect): never the 60 s deadline
        assert not isinstance(e.value, slotlane.TimeoutError)
        assert isinstance(e.value, (slotlane.ConnectionError, slotlane.ClusterError))
    srv.stop()  # a second stop: nothing


def test_start_stop_100_times_leaks_no_threads_or_fds():
    Server(shards=2).stop()  # what the process makes once
    fds0, threads0 = _count("/proc/self/fd"), _count("/proc/self/task")
    for i in range(100):
        with Server(shards=i % 3 + 1, port_mode="one-port" if i % 2 else "per-shard", misrouted="forward") as s:
            with slotlane.Client(s.url, cluster=False) as r:
                r.set("k", i)
    fds1, threads1 = _count("/proc/self/fd"), _count("/proc/self/task")
    print("100 starts/stops: fds %d -> %d, threads %d -> %d" % (fds0, fds1, threads0, threads1))
    assert (fds1, threads1) == (fds0, threads0)


def test_durability_always_restart_keeps_data(tmp_path):
    opts = dict(shards=3, durability="always", dir=str(tmp_path))
    with Server(**opts) as s:
        with pytest.raises(ServerError, match="in use|cannot use"):
            Server(**opts)  # the directory is locked by the running server
        with slotlane.Client(s.url) as r:
            for i in range(50):
                r.set("key:%d" % i, "v%d" % i)
            r.rpush("list", "a", "b")
    with Server(**opts) as s:
        with slotlane.Client(s.url) as r:
            assert r.dbsize() == 51
            assert r.get("key:17") == b"v17"
            assert r.lrange("list", 0, -1) == [b"a", b"b"]


def test_bad_options_are_errors():
    with pytest.raises(ServerError, match="shards"):
        Server(shards=0)
    with pytest.raises(ServerError, match="bad option value"):
        Server(port_mode="sideways")
    with pytest.raises(ServerError, match="maxclients"):
        Server(maxclients="many")
    with Server(shards=1) as s:
        with pytest.raises(ServerError, match="listen"):
            Server(shards=1, port=s.ports[0])
    # a flag of the executable, applied
    with Server(shards=1, hash_max_listpack_entries=3) as s, slotlane.Client(s.url) as r:
        r.hset("h", {"f1": 1, "f2": 2, "f3": 3, "f4": 4})
        assert r.execute_command("OBJECT", "ENCODING", "h") == b"hashtable"


def test_plugin_fixtures(slotlane_server, slotlane_cluster_url):
    assert slotlane_cluster_url == slotlane_server.url and slotlane_server.shards == 4
    with slotlane.Client(slotlane_cluster_url) as r:
        r.set("fixture", "ok")
        assert r.get("fixture") == b"ok"


class TestOptionsOverride:
    @pytest.fixture
    def slotlane_server_options(self):
        return {"shards": 2, "port_mode": "one-port"}

    def test_plugin_options_override(self, slotlane_server):
        assert slotlane_server.shards == 2 and len(set(slotlane_server.ports)) == 1
