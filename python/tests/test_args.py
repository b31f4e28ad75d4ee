"""Wrong argument types and values: TypeError / ValueError with a clear message, nothing sent."""
import pytest

import slotlane


@pytest.mark.parametrize("bad", [None, True, 1j, object(), [b"a"], {"a": 1}])
def test_bad_key_types(plain_url, bad):
    with slotlane.Client(plain_url) as c:
        with pytest.raises(TypeError, match="GET: argument 1 is of type %s" % type(bad).__name__):
            c.get(bad)
        with pytest.raises(TypeError, match="SET: argument 2 is of type"):
            c.set("k", bad)
        with pytest.raises(TypeError, match="of type %s" % type(bad).__name__):
            c.execute_command("SET", "k", bad)
        with pytest.raises(TypeError, match="of type"):
            c.lpush("l", "ok", bad)
        assert c.ping()


def test_bad_values(plain_url):
    with slotlane.Client(plain_url) as c:
        with pytest.raises(ValueError, match="at least its name"):
            c.execute_command()
        with pytest.raises(ValueError, match="nx and xx are mutually exclusive"):
            c.set("k", "v", nx=True, xx=True)
        with pytest.raises(ValueError, match="ex and px are mutually exclusive"):
            c.set("k", "v", ex=1, px=1)
        with pytest.raises(TypeError, match="ex must be an int"):
            c.set("k", "v", ex="10")
        with pytest.raises(TypeError, match="amount must be an int"):
            c.incrby("k", 1.5)
        with pytest.raises(TypeError, match="amount must be an int"):
            c.incr("k", True)
        with pytest.raises(ValueError, match="MGET needs at least one key"):
            c.mget()
        with pytest.raises(TypeError, match="MSET needs a mapping"):
            c.mset([("a", 1)])
        with pytest.raises(ValueError, match="non-empty mapping"):
            c.mset({})
        with pytest.raises(TypeError, match="ZADD needs a mapping"):
            c.zadd("z", ["a", 1])
        with pytest.raises(TypeError, match="score of 'a' must be a number"):
            c.zadd("z", {"a": None})
        with pytest.raises(ValueError, match="exactly one member"):
            c.zadd("z", {"a": 1, "b": 2}, incr=True)
        with pytest.raises(ValueError, match="HSET needs"):
            c.hset("h")
        with pytest.raises(ValueError, match="a key needs a value"):
            c.hset("h", "f")
        with pytest.raises(ValueError, match="LPUSH needs at least one value"):
            c.lpush("l")
        with pytest.raises(TypeError, match="start must be an int"):
            c.lrange("l", "0", -1)
        with pytest.raises(ValueError, match="start and num go together"):
            c.zrangebyscore("z", 0, 1, start=0)
        with pytest.raises(ValueError, match="gt and lt are mutually exclusive"):
            c.expire("k", 1, gt=True, lt=True)
        assert c.ping()


def test_bad_client_options(plain_url):
    with pytest.raises(TypeError, match="url_or_host must be a str"):
        slotlane.Client(6379)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="port must be in 1..65535"):
        slotlane.Client("localhost", 70000)
    with pytest.raises(TypeError, match="port must be an int"):
        slotlane.Client("localhost", "6379")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="only valid with a bare host"):
        slotlane.Client("redis://localhost:1", 6379)
    with pytest.raises(ValueError, match="protocol must be 2 or 3"):
        slotlane.Client(plain_url, protocol=4)
    with pytest.raises(TypeError, match="cluster must be None"):
        slotlane.Client(plain_url, cluster="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="socket_timeout must not be negative"):
        slotlane.Client(plain_url, socket_timeout=-1)
    with pytest.raises(TypeError, match="socket_connect_timeout must be a number"):
        slotlane.Client(plain_url, socket_connect_timeout="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_redirects must be in 0..100"):
        slotlane.Client(plain_url, max_redirects=1000)
    with pytest.raises(LookupError):
        slotlane.Client(plain_url, encoding="no-such-codec")
    with pytest.raises(TypeError, match="password must be str"):
        slotlane.Client(plain_url, password=5)  # type: ignore[arg-type]
    # The core parses the URL: its message comes through as a ValueError.
    with pytest.raises(ValueError) as ei:
        slotlane.Client("redis://host:notaport")
    assert str(ei.value)
    with pytest.raises(NotImplementedError, match="TLS"):
        slotlane.Client("rediss://localhost:6379")


def test_host_port_form(plain_url):
    port = int(plain_url.rsplit(":", 1)[1])
    with slotlane.Client("127.0.0.1", port) as c:
        assert c.ping() and c.mode == "plain"
    with slotlane.Client("127.0.0.1:%d" % port, cluster=False) as c:
        assert c.ping()


def test_connection_refused():
    with pytest.raises(slotlane.ConnectionError) as ei:
        slotlane.Client("redis://127.0.0.1:22499", socket_connect_timeout=1)
    assert ei.value.kind == "io" and str(ei.value)


def test_cluster_forced_on_plain_server(plain_url):
    with pytest.raises(slotlane.ClusterError):
        slotlane.Client(plain_url, cluster=True)
