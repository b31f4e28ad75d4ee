"""Protocol behaviour over real sockets: RESP2/RESP3 and HELLO, inline commands,
pipelining, protocol errors (reply, then close) with Redis's strings and limits,
the output-buffer limit, connection commands."""
import socket
import time

import pytest

import resp
from resp import Conn, Err, Map, Server, Status


@pytest.fixture(scope="module")
def server():
    s = Server(shards=1, extra=["--maxclients", "50"])
    yield s
    code, err = s.stop()
    assert code == 0, err


@pytest.fixture(scope="module")
def redis_ref():
    s = Server(redis=True)
    yield s
    s.stop()


def read_all_until_close(sock, timeout=5):
    return resp.read_until_close(sock, timeout)


PROTOCOL_ERRORS = [
    (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n:5\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*2147483648\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"SET \"unbalanced\r\n", b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    (b"x" * 70000, b"-ERR Protocol error: too big inline request\r\n"),
    (b"*" + b"1" * 70000, b"-ERR Protocol error: too big mbulk count string\r\n"),
    (b"*1\r\n$" + b"1" * 70000, b"-ERR Protocol error: too big bulk count string\r\n"),
]


@pytest.mark.parametrize("payload,reply", PROTOCOL_ERRORS)
def test_protocol_errors_reply_then_close(server, redis_ref, payload, reply):
    # earlier pipelined commands are answered first, then the error, then EOF
    for port in (server.port, redis_ref.port):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PING\r\n" + payload)
        got = read_all_until_close(s)
        s.close()
        assert got == b"+PONG\r\n" + reply, (port, got)
    # the server still serves others
    assert Conn(server.port).call("PING") == "PONG"


def test_inline_and_pipelining(server):
    c = Conn(server.port)
    c.send_raw(b"SET inl \"a b\"\r\nGET inl\r\n\r\nPING\n")
    assert [c.read() for _ in range(3)] == ["OK", b"a b", "PONG"]
    # 10000 pipelined commands in one write, answered in order
    n = 10000
    c.send_raw(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\np%d\r\n$%d\r\n%d\r\n" % (len(str(i)) + 1, i, len(str(i)), i)
                        for i in range(n)))
    assert all(c.read() == "OK" for _ in range(n))
    c.send_raw(b"".join(b"GET p%d\r\n" % i for i in range(n)))
    assert [c.read() for _ in range(n)] == [str(i).encode() for i in range(n)]
    # a command split into single bytes
    for b in b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n":
        c.send_raw(bytes([b]))
        time.sleep(0.0005)
    assert c.read() == b"hello"


def test_large_values(server):
    c = Conn(server.port, timeout=30)
    big = b"x" * (8 * 1024 * 1024)
    assert c.call("SET", "big", big) == "OK"
    assert c.call("STRLEN", "big") == len(big)
    assert c.call("GET", "big") == big
    assert c.call("APPEND", "big", b"yz") == len(big) + 2
    assert c.call("SETRANGE", "big2", "536870912", "x") == "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    c.call("DEL", "big")


def test_hello_and_resp3(server, redis_ref):
    ours, ref = Conn(server.port), Conn(redis_ref.port)
    for c in (ours, ref):
        r = c.call("HELLO", "3", "SETNAME", "me")
        assert isinstance(r, Map)
        d = dict(r)
        assert [k for k, _ in r] == [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"]
        assert d[b"server"] == b"redis" and d[b"proto"] == 3 and d[b"role"] == b"master"
        assert d[b"version"].startswith(b"7.0")
        assert c.call("CLIENT", "GETNAME") == b"me"
        assert c.call("GET", "nokey") is None
        assert c.call("HELLO", "4") == "NOPROTO unsupported protocol version"
        assert c.call("HELLO", "x") == "ERR Protocol version is not an integer or out of range"
        assert c.call("HELLO", "2", "AUTH", "bob", "pw") == "WRONGPASS invalid username-password pair or user is disabled."
        assert isinstance(c.call("HELLO", "2", "AUTH", "default", "anything"), list)
        assert c.call("AUTH", "pw").startswith("ERR AUTH <password> called without any password configured")
        assert c.call("AUTH", "default", "x") == "OK"
        assert c.call("CLIENT", "SETNAME", "bad name") == "ERR Client names cannot contain spaces, newlines or special characters."
        assert c.call("SELECT", "0") == "OK"
        assert c.call("ECHO", "hi") == b"hi"
        assert c.call("PING", "x") == b"x"
        assert c.call("PING", "a", "b") == "ERR wrong number of arguments for 'ping' command"
    # CLIENT SETINFO (Redis 7.2) is sent by clients although 7.0 lacks it: ours only
    assert ours.call("CLIENT", "SETINFO", "LIB-NAME", "slotlane") == "OK"
    assert ours.call("CLIENT", "SETINFO", "LIB-VER", "1.0") == "OK"
    assert ours.call("CLIENT", "SETINFO", "BAD", "1") == "ERR Unrecognized option 'BAD'"
    cid = ours.call("CLIENT", "ID")
    lst = ours.call("CLIENT", "LIST")
    assert f"id={cid} ".encode() in lst and b"name=me" in lst and b"lib-name=slotlane" in lst
    assert ours.call("CLIENT", "NOPE") == "ERR unknown subcommand 'NOPE'. Try CLIENT HELP."
    assert ours.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"50"]
    assert ours.call("CONFIG", "SET", "maxclients", "60") == "OK"
    assert ours.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"60"]
    assert ours.call("CONFIG", "SET", "nosuch", "1") == "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"
    assert ours.call("CONFIG", "SET", "maxclients", "50") == "OK"
    t = ours.call("TIME")
    assert abs(int(t[0]) - time.time()) < 5
    assert ours.call("FUNCTION", "FLUSH") == "OK"
    assert ours.call("COMMAND", "COUNT") == len(ours.call("COMMAND", "LIST")) >= 125
    info = ours.call("COMMAND", "INFO", "get", "mset", "nosuch")
    assert info[0][:6] == [b"get", 2, ["readonly", "fast"], 1, 1, 1] and len(info[0]) == 10
    assert info[0][6] == ["@read", "@string", "@fast"]
    assert info[1][0] == b"mset" and info[1][3:6] == [1, -1, 2]
    assert info[2] is None
    assert ours.call("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2") == [b"a", b"b"]
    assert ours.call("COMMAND", "GETKEYS", "SINTERCARD", "2", "x", "y", "LIMIT", "1") == [b"x", b"y"]
    assert ours.call("COMMAND", "GETKEYS", "PING", "x") == "ERR The command has no key arguments"
    assert ours.call("COMMAND", "GETKEYS", "PING") == "ERR wrong number of arguments for 'command|getkeys' command"
    assert ours.call("COMMAND", "GETKEYS", "NOSUCH", "x") == "ERR Invalid command specified"
    docs = ours.call("COMMAND", "DOCS", "get")
    assert docs[0] == b"get"  # RESP2 (HELLO 2 above): a flat map
    info = ours.call("INFO", "server", "clients", "stats", "keyspace", "cluster").decode()
    for field in ("redis_version:7.0", "connected_clients:", "total_commands_processed:", "# Keyspace",
                  "cluster_enabled:1"):
        assert field in info
    assert ours.call("QUIT") == "OK"


def test_output_buffer_limit():
    """A client that pipelines reads of a large value and never reads is dropped
    at the limit (1 MB here); other clients are unaffected."""
    server = Server(shards=1, extra=["--output-limit", "1048576"])
    try:
        c = Conn(server.port)
        c.call("SET", "obl", b"v" * 100000)
        s = socket.create_connection(("127.0.0.1", server.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        req = b"GET obl\r\n" * 200
        dropped = False
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                s.sendall(req)
            except (BrokenPipeError, ConnectionResetError):
                dropped = True
                break
            time.sleep(0.01)
            if c.call("CLIENT", "LIST").count(b"\n") == 1:  # only this client is left
                dropped = True
                break
        s.close()
        assert dropped
        assert c.call("PING") == "PONG"
        # a client that reads the same replies (in batches under the limit) is not dropped
        for _ in range(40):
            c.send_raw(b"GET obl\r\n" * 5)
            assert all(len(c.read()) == 100000 for _ in range(5))
        code, err = server.stop()
        assert code == 0, err
        assert "output buffer limits" in err
    finally:
        server.stop()


def test_maxclients(server):
    conns = [Conn(server.port) for _ in range(49)]  # + nothing else open: 49 of 50
    for x in conns:
        assert x.call("PING") == "PONG"
    extra = Conn(server.port)
    assert extra.call("PING") == "PONG"  # the 50th
    over = socket.create_connection(("127.0.0.1", server.port))
    assert read_all_until_close(over) == b"-ERR max number of clients reached\r\n"
    for x in conns + [extra]:
        x.close()
