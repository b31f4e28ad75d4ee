"""Wrong argument types and values: TypeError / ValueError with a clear message, nothing sent."""
import pytest
from conftest import UNUSED_PORT

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
        assert c.ping() == "PONG"


def test_bad_values(plain_url):
    # The spec's argument rules (bindings/spec/README.md): int parameters take ints, double
    # parameters ints or floats, never a bool; a required list must not be empty (checked
    # before sending: ArgumentError, a ValueError); options Redis itself refuses together
    # (NX with XX, EX with PX) are sent, and the server's syntax error is raised.
    with slotlane.Client(plain_url) as c:
        with pytest.raises(ValueError, match="at least its name"):
            c.execute_command()
        with pytest.raises(slotlane.ResponseError, match="syntax error"):
            c.set("k", "v", nx=True, xx=True)
        with pytest.raises(slotlane.ResponseError, match="syntax error"):
            c.set("k", "v", ex=1, px=1)
        with pytest.raises(TypeError, match="ex must be an int"):
            c.set("k", "v", ex="10")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="increment must be an int"):
            c.incrby("k", 1.5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="increment must be an int"):
            c.incrby("k", True)
        with pytest.raises(TypeError, match="increment must be an int or float"):
            c.incrbyfloat("k", True)
        with pytest.raises(slotlane.ArgumentError, match="MGET: keys needs at least one element"):
            c.mget()
        with pytest.raises(TypeError, match="key_value: each element must be a tuple of 2"):
            c.mset(["a", 1])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="key_value needs at least one element"):
            c.mset({})
        with pytest.raises(TypeError, match="score_member must be a sequence of tuples or a mapping"):
            c.zadd("z", "a")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="score_member must be an int or float, not NoneType"):
            c.zadd("z", {"a": None})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match="missing 1 required positional argument"):
            c.hset("h")  # type: ignore[call-arg]
        with pytest.raises(ValueError, match="LPUSH: elements needs at least one element"):
            c.lpush("l")
        with pytest.raises(TypeError, match="start must be an int"):
            c.lrange("l", "0", -1)  # type: ignore[arg-type]
        with pytest.raises(slotlane.ResponseError, match="GT and LT"):
            c.expire("k", 1, gt=True, lt=True)
        assert c.ping() == "PONG"


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
    # The core parses the URL: its message comes through as an ArgumentError (a ValueError).
    with pytest.raises(ValueError) as ei:
        slotlane.Client("redis://host:notaport")
    assert str(ei.value)
    # rediss://: TLS is compiled in where pkg-config found OpenSSL (test_tls.py has the
    # cases), else the core answers SL_EUNSUPPORTED (errors.json: ResourceError).
    from slotlane._native import lib
    with pytest.raises(slotlane.ConnectionError if lib.sl_tls_supported() else slotlane.ResourceError):
        slotlane.Client("rediss://127.0.0.1:1", socket_connect_timeout=1)


def test_host_port_form(plain_url):
    port = int(plain_url.rsplit(":", 1)[1])
    with slotlane.Client("127.0.0.1", port) as c:
        assert c.ping() and c.mode == "plain"
    with slotlane.Client("127.0.0.1:%d" % port, cluster=False) as c:
        assert c.ping()


def test_connection_refused():
    with pytest.raises(slotlane.ConnectionError) as ei:
        slotlane.Client("redis://127.0.0.1:%d" % UNUSED_PORT, socket_connect_timeout=1)
    assert ei.value.kind == "io" and str(ei.value)


def test_cluster_forced_on_plain_server(plain_url):
    with pytest.raises(slotlane.ClusterError):
        slotlane.Client(plain_url, cluster=True)
