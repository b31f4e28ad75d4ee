"""Bad input: random and truncated RESP sent to a running server for a bounded time
by several connections at once. The server must stay up, keep serving a well-behaved
client correctly the whole time, and exit cleanly with nothing leaked (run against
the ASan+UBSan build when it exists: any report fails the test)."""
import os
import random
import socket
import threading
import time

from resp import Conn, Err, Server, encode

DURATION = float(os.environ.get("SV_BADINPUT_SECONDS", "15"))
ASAN_BIN = os.path.join(os.environ.get("SL_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))),
                        "build-asan", "server", "slotlane-server")


def valid_request(rng):
    cmd = rng.choice([["SET", "k", "v"], ["GET", "k"], ["LPUSH", "l", "a", "b"], ["HSET", "h", "f", "v"],
                      ["ZADD", "z", "1", "m"], ["SADD", "s", "x"], ["MGET", "a", "b"], ["PING"],
                      ["HELLO", "3"], ["HELLO", "2"], ["CLIENT", "SETNAME", "x"], ["SCAN", "0"],
                      ["ZRANGE", "z", "0", "-1", "WITHSCORES"], ["INCRBYFLOAT", "f", "1.5"]])
    return encode(cmd)


def bad_payload(rng):
    kind = rng.randrange(10)
    if kind == 0:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if kind == 1:  # a valid pipeline truncated anywhere
        data = b"".join(valid_request(rng) for _ in range(rng.randrange(1, 6)))
        return data[:rng.randrange(1, len(data))]
    if kind == 2:  # a valid request with one byte flipped
        data = bytearray(valid_request(rng))
        data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if kind == 3:  # absurd lengths
        return rng.choice([b"*2147483647\r\n$1\r\nx\r\n", b"*1\r\n$536870912\r\nabc", b"*-5\r\n", b"*1\r\n$-1\r\n",
                           b"$5\r\nhello\r\n", b"*3\r\n$3\r\nSET\r\n$99999\r\n", b"*1\r\n*1\r\n$1\r\nx\r\n"])
    if kind == 4:  # inline garbage with quotes and escapes
        alphabet = 'ab "\'\\x0 \t\r'
        return ("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 80))) + "\n").encode()
    if kind == 5:  # long lines without terminators
        return rng.choice([b"*", b"*1\r\n$", b""]) + b"9" * rng.randrange(10, 70000)
    if kind == 6:  # many tiny writes of a valid request
        return valid_request(rng)
    if kind == 7:  # RESP types a client must not send
        return rng.choice([b"+OK\r\n", b"-ERR x\r\n", b":1\r\n", b"%1\r\n", b"_\r\n", b",1.5\r\n"])
    return b"".join(valid_request(rng) for _ in range(rng.randrange(1, 20)))


def abuser(port, seed, stop, counter):
    rng = random.Random(seed)
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            for _ in range(rng.randrange(1, 5)):
                data = bad_payload(rng)
                if rng.random() < 0.3:
                    for i in range(0, len(data), 7):
                        s.sendall(data[i:i + 7])
                else:
                    s.sendall(data)
                counter[0] += 1
            if rng.random() < 0.5:
                s.settimeout(0.05)
                try:
                    s.recv(1 << 16)
                except OSError:
                    pass
            if rng.random() < 0.3:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
            s.close()
        except OSError:
            pass


def test_bad_input_keeps_serving():
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    import resp
    real = resp.SERVER
    if os.path.exists(ASAN_BIN) and os.environ.get("SV_BADINPUT_PLAIN") != "1":
        resp.SERVER = ASAN_BIN
    try:
        s = Server(shards=2, env=env)
    finally:
        resp.SERVER = real
    try:
        run_abuse(s)
    finally:
        s.stop()


def run_abuse(s):
    stop = threading.Event()
    counter = [0]
    threads = [threading.Thread(target=abuser, args=(s.port + (i % 2), 1000 + i, stop, counter)) for i in range(6)]
    for t in threads:
        t.start()
    good = Conn(s.port)
    checks = 0
    deadline = time.time() + DURATION
    try:
        while time.time() < deadline:
            v = str(checks).encode()
            r = good.call("SET", "{g}good", v)
            if isinstance(r, Err) and r.startswith("MOVED"):  # the key lives on the other shard
                good.close()
                good = Conn(int(r.split(":")[-1]))
                continue
            assert r == "OK"
            assert good.call("GET", "{g}good") == v
            checks += 1
            assert s.proc.poll() is None, "server died"
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert checks > 100 and counter[0] > 100, (checks, counter)
    code, err = s.stop(timeout=60)
    assert code == 0, err[-4000:]
    assert "Sanitizer" not in err and "runtime error" not in err, err[-4000:]


EDGE_ARGS = ["0", "1", "-1", "2", "10", "-10", "9223372036854775807", "-9223372036854775808", "18446744073709551616",
             "4611686018427387904", "-4611686018427387904", "inf", "-inf", "+inf", "nan", "1e308", "-1e308", "(1",
             "[a", "(a", "-", "+", "", "x", "k", "k2", "{t}k", "{t}k2", "f", "m", "*", "?", "[", "\\", "\x00",
             "NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "GET", "PERSIST",
             "WITHSCORES", "LIMIT", "BYSCORE", "BYLEX", "REV", "COUNT", "MATCH", "TYPE", "RANK", "MAXLEN",
             "WITHVALUES", "LEFT", "RIGHT", "BEFORE", "AFTER", "SYNC", "ASYNC", "AUTH", "SETNAME", "default",
             "SLOTS", "NODES", "SHARDS", "string", "list", "hash", "set", "zset", "KEYSLOT", "COUNTKEYSINSLOT", "GETKEYSINSLOT", "16383", "16384",
             "GETKEYS", "INFO", "DOCS", "LIST", "ID", "SETINFO", "LIB-NAME", "maxclients", "loglevel", "v" * 300]


BLOCKING = {"blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin", "bzpopmax", "bzmpop"}
SUBSCRIBING = {"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"}


def short_timeout(argv):
    """A blocking command's timeout that would park it (a number >= 0 in range) made
    1 ms, so the fuzz never waits; refused values (negative, inf, nan, junk) stay."""
    name = argv[0]
    pos = {"blmove": 5, "brpoplpush": 3, "blmpop": 1, "bzmpop": 1}.get(name, len(argv) - 1)
    if pos < 1 or pos >= len(argv):
        return argv
    try:
        v = float(argv[pos])
    except ValueError:
        return argv
    if 0 <= v * 1000 < 9.2e18:
        argv = list(argv)
        argv[pos] = "0.001"
    return argv


def test_command_fuzz():
    """Every command with random edge-case arguments (huge counts, overflowing
    numbers, odd options): the server answers each and stays clean under ASan."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    import resp
    real = resp.SERVER
    if os.path.exists(ASAN_BIN) and os.environ.get("SV_BADINPUT_PLAIN") != "1":
        resp.SERVER = ASAN_BIN
    try:
        s = Server(shards=1, extra=["--output-limit", "16777216"], env=env)
    finally:
        resp.SERVER = real
    try:
        rng = random.Random(99)
        c = Conn(s.port)
        names = [n.decode() for n in c.call("COMMAND", "LIST") if n not in (b"quit", b"reset", b"shutdown")]
        # internal, hidden from COMMAND
        names += ["slotlane.take", "slotlane.restore", "slotlane.rename_from", "slotlane.rename_to", "slotlane.exists", "slotlane.type", "slotlane.watch", "slotlane.unwatch", "slotlane.exec"] * 5
        answered = 0
        for i in range(int(os.environ.get("SV_FUZZ_COMMANDS", "30000"))):
            if i % 500 == 0:  # keys of every type to work on
                c.call("SET", "k", "5")
                c.call("RPUSH", "l", "a", "b")
                c.call("HSET", "h", "f", "1")
                c.call("SADD", "s", "m", "1")
                c.call("ZADD", "z", "1", "m", "2", "a")
            name = rng.choice(names)
            argv = [name] + [rng.choice(EDGE_ARGS + ["k", "l", "h", "s", "z"] * 5) for _ in range(rng.randrange(0, 7))]
            try:
                if name in BLOCKING:
                    c.call(*short_timeout(argv))
                elif name in SUBSCRIBING:  # (un)subscribe answer once per channel: RESET ends it
                    c.send(*argv)
                    c.send("RESET")
                    while c.read() != "RESET":
                        pass
                else:
                    c.call(*argv)
                answered += 1
            except (ConnectionError, OSError):
                c.close()  # dropped at the output limit: a legitimate outcome, reconnect
                c = Conn(s.port)
            assert s.proc.poll() is None, f"server died on {argv!r}"
        assert answered > 1000
        c.call("DISCARD")  # the random commands may have left a MULTI open (then PING is QUEUED)
        assert c.call("PING") == "PONG"
        code, err = s.stop(timeout=60)
        assert code == 0, err[-4000:]
        assert "Sanitizer" not in err and "runtime error" not in err, err[-4000:]
    finally:
        s.stop()
