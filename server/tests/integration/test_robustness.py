"""Robustness of slotlane-server at its limits (server/README.md, Robustness):
maxclients per shard and the open-files limit, the output buffer limit (pipelined
replies, one huge reply, forwarded replies), a client streaming up to 1 GB of
garbage (a legal 512 MB bulk followed by junk, random bytes, an endless inline line,
an endless multibulk of empty arguments), and 10,000 connections opened and closed
(some abruptly, in the middle of a command or of a forwarded command) leaving no fd,
memory or client-count leak. Memory is read from /proc/PID/status: VmHWM (the peak
RSS) bounds what a client could make the server hold, VmRSS what it keeps after."""
import os
import random
import resource
import socket
import struct
import time

import resp
from resp import Conn, Server, key_slot

LINGER_RST = struct.pack("ii", 1, 0)  # close() sends RST: an abrupt disconnect
MB = 1024 * 1024


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB -> bytes
    raise KeyError(field)


def nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def info_int(conn, field):
    text = conn.call("INFO", "everything").decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise KeyError(field)


def read_until_close(sock, timeout=10):
    return resp.read_until_close(sock, timeout)


def wait_for(pred, timeout=10, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def key_on_shard(shard, shards, prefix="k"):
    """A key whose slot the given shard owns (sv_slot_owner: slot * N / 16384)."""
    for i in range(100000):
        k = f"{prefix}{i}"
        if key_slot(k) * shards // 16384 == shard:
            return k
    raise AssertionError("no key found")


def stop_ok(server):
    code, err = server.stop()
    assert code == 0, err
    return err


# ---------------------------------------------------------------- maxclients


def test_maxclients_per_shard_recovers_and_counts():
    server = Server(shards=2, extra=["--maxclients", "20"])
    try:
        p0, p1 = server.port, server.port + 1
        conns = [Conn(p0)]
        # the readiness probe's connection may not be closed yet on the server's side
        wait_for(lambda: info_int(conns[0], "connected_clients") == 1, what="the probe connection closed")
        conns += [Conn(p0) for _ in range(19)]
        assert all(c.call("PING") == "PONG" for c in conns)
        for _ in range(3):  # the 21st, three times: each answered and closed
            over = socket.create_connection(("127.0.0.1", p0))
            assert read_until_close(over) == b"-ERR max number of clients reached\r\n"
            over.close()
        # the limit is per shard: shard 1 still accepts
        other = Conn(p1)
        assert other.call("PING") == "PONG"
        assert info_int(conns[0], "rejected_connections") == 3
        assert info_int(other, "rejected_connections") == 0
        assert info_int(conns[0], "connected_clients") == 20
        # close five: five new ones are accepted (once the server saw the closes), then the limit again
        for c in conns[:5]:
            c.close()
        conns = conns[5:]
        wait_for(lambda: info_int(conns[0], "connected_clients") == 15, what="closes seen")
        conns += [Conn(p0) for _ in range(5)]
        assert all(c.call("PING") == "PONG" for c in conns)
        over = socket.create_connection(("127.0.0.1", p0))
        assert read_until_close(over) == b"-ERR max number of clients reached\r\n"
        assert info_int(conns[0], "rejected_connections") == 4
        for c in conns + [other]:
            c.close()
    finally:
        stop_ok(server)


def _low_fd_limit(soft, hard):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return apply


def soft_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        return int(next(x for x in f if x.startswith("Max open files")).split()[3])


def test_open_files_limit_raised_or_maxclients_lowered():
    # soft limit too low, hard limit high enough: the server raises its soft limit
    server = Server(shards=2, extra=["--maxclients", "1000", "--loglevel", "warning"],
                    preexec_fn=_low_fd_limit(64, 4096))
    try:
        assert soft_limit(server.pid) >= 2000
        c = Conn(server.port)
        assert c.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"1000"]
        # CONFIG SET raises it further up to the hard limit, and refuses what does not fit,
        # as Redis does: 2 shards x 1500 + 48 reserved fit in 4096; 2 x 3000 do not
        assert c.call("CONFIG", "SET", "maxclients", "1500") == "OK"
        assert soft_limit(server.pid) >= 3048
        got = c.call("CONFIG", "SET", "maxclients", "3000")
        assert got == ("ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating "
                       "system is not able to handle the specified number of clients, try with 2024"), got
        assert c.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"1500"]
        c.close()
    finally:
        stop_ok(server)
    # the hard limit is too low: maxclients is lowered with a warning, and a client past it
    # gets the clear error instead of a failed accept
    server = Server(shards=1, extra=["--maxclients", "1000", "--loglevel", "warning"],
                    preexec_fn=_low_fd_limit(100, 100))
    try:
        c = Conn(server.port)
        wait_for(lambda: info_int(c, "connected_clients") == 1, what="the probe connection closed")
        got = int(c.call("CONFIG", "GET", "maxclients")[1])
        assert 1 <= got < 100
        conns = [Conn(server.port) for _ in range(got - 1)]
        assert all(x.call("PING") == "PONG" for x in conns)
        over = socket.create_connection(("127.0.0.1", server.port))
        assert read_until_close(over) == b"-ERR max number of clients reached\r\n"
        assert c.call("CONFIG", "SET", "maxclients", "1000").endswith("try with %d" % got)
        for x in conns + [c]:
            x.close()
        err = stop_ok(server)
        assert "maxclients lowered to %d" % got in err, err
    finally:
        server.stop()


# ---------------------------------------------------------------- output buffer limit


def _burst_without_reading(port, request, good, pinger):
    """Connects, sends one pipelined burst and never reads; returns once the server
    dropped the connection (its shard's connected_clients back to one), pinging the
    well-behaved client on the same shard meanwhile."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        wait_for(lambda: info_int(good, "connected_clients") == 2, what="the flooder accepted")
        s.sendall(request)

        def dropped():
            pinger()
            return info_int(good, "connected_clients") == 1
        wait_for(dropped, timeout=30, what="the flooder to be dropped")
    finally:
        s.close()


def test_output_limit_bounds_memory_and_spares_others():
    limit = 4 * MB
    server = Server(shards=2, extra=["--output-limit", str(limit), "--misrouted", "forward"])
    try:
        pid = server.pid
        good = Conn(server.port)
        value = b"v" * (256 * 1024)
        local = key_on_shard(0, 2, "local")
        remote = key_on_shard(1, 2, "remote")
        assert good.call("SET", local, value) == "OK"
        assert good.call("SET", remote, value) == "OK"  # forwarded to shard 1
        assert good.call("SADD", "{s}set", "m") == 1
        assert good.call("HSET", "{s}hash", "f", "v") == 1
        pongs = [0]

        def ping():  # the well-behaved client keeps being served
            assert good.call("PING") == "PONG"
            pongs[0] += 1

        peaks = {}

        def measure(name, request):
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM (the peak RSS) to the current RSS
            base = proc_status(pid, "VmRSS")
            _burst_without_reading(server.port, request, good, ping)
            peaks[name] = (proc_status(pid, "VmHWM") - base) / MB

        # 1. 4000 pipelined GETs of a 256 KB value (1 GB of replies), never read: served
        # here, and forwarded to shard 1 and back
        measure("local GET", b"GET %s\r\n" % local.encode() * 4000)
        measure("forwarded GET", b"GET %s\r\n" % remote.encode() * 4000)
        # local replies waiting in order behind a forwarded one (1 GB before they counted)
        measure("local behind forwarded", b"GET %s\r\n" % remote.encode() +
                b"GET %s\r\n" % local.encode() * 4000)
        # 2. one command whose reply has no bound (~4 GB): cut at the limit, client dropped
        measure("SRANDMEMBER", b"SRANDMEMBER {s}set -500000000\r\n")
        measure("HRANDFIELD", b"HRANDFIELD {s}hash -500000000 WITHVALUES\r\n")
        print("peak RSS growth (MB) per case:", peaks)
        # at most the limit in the output buffer, the write in flight and the buffer's
        # doubling; forwarded replies on their way back count against the limit too
        # (the owner shard stops running the client's commands once it is over)
        for name, grew in peaks.items():
            assert grew < 4 * limit / MB + 8, (name, peaks)
        assert pongs[0] >= 4
        assert good.call("GET", local) == value
        assert good.call("GET", remote) == value
        good.close()
        err = stop_ok(server)
        assert err.count("overcoming of output buffer limits") == 5, err
    finally:
        server.stop()


# ---------------------------------------------------------------- 1 GB of garbage


def _stream(port, chunks, total, pinger=None):
    """Streams chunks (a generator) until total bytes were sent or the server closed
    the connection. Returns (bytes sent, closed by the server, seconds)."""
    s = socket.create_connection(("127.0.0.1", port))
    sent = 0
    t0 = time.time()
    closed = False
    try:
        for i, chunk in enumerate(chunks):
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            sent += len(chunk)
            if pinger and i % 32 == 0:
                pinger()
            if sent >= total:
                break
    finally:
        s.close()
    return sent, closed, time.time() - t0


def _repeat(chunk):
    while True:
        yield chunk


def test_one_gigabyte_of_garbage():
    server = Server(shards=1)
    try:
        pid = server.pid
        good = Conn(server.port)
        pongs = [0]

        def ping():
            assert good.call("PING") == "PONG"
            pongs[0] += 1

        assert good.call("SET", "k", "v") == "OK"
        base = proc_status(pid, "VmRSS")
        junk = b"x" * MB

        # 1. a legal 512 MB bulk announced, then junk: the bulk is buffered (512 MB is
        # legal), runs as an unknown command, and the junk after it is an inline line
        # that passes 64 KB: protocol error, disconnect — well before 1 GB.
        def bulk_then_junk():
            yield b"*1\r\n$536870912\r\n"
            yield from _repeat(junk)
        sent, closed, secs = _stream(server.port, bulk_then_junk(), 1024 * MB, ping)
        assert closed and sent < 600 * MB, (sent / MB, secs)
        peak = proc_status(pid, "VmHWM")
        assert peak - base < 600 * MB, (peak - base) / MB  # one 512 MB bulk, nothing more
        # memory is given back once the client is gone
        wait_for(lambda: info_int(good, "connected_clients") == 1, what="disconnect")
        wait_for(lambda: proc_status(pid, "VmRSS") - base < 32 * MB, timeout=5, what="RSS back near the baseline")

        # 2. random bytes: a protocol error (unbalanced quotes, bad lengths...) or the
        # 64 KB inline limit ends it in the first few megabytes
        rng = random.Random(7)
        sent, closed, _ = _stream(server.port, (rng.randbytes(MB) for _ in iter(int, 1)), 1024 * MB, ping)
        assert closed and sent < 64 * MB, sent / MB
        # 3. a never-ending inline line: closed at 64 KB (plus what the socket buffers took)
        sent, closed, _ = _stream(server.port, _repeat(junk), 1024 * MB, ping)
        assert closed and sent < 64 * MB, sent / MB
        # 4. a multibulk header claiming 2^31-1 arguments, then empty arguments for ever:
        # 16 bytes of offsets per 6-byte argument count against the 1 GB query buffer limit
        def empty_args():
            yield b"*2147483647\r\n"
            yield from _repeat(b"$0\r\n\r\n" * (MB // 6))
        sent, closed, _ = _stream(server.port, empty_args(), 1024 * MB, ping)
        assert closed and sent < 400 * MB, sent / MB
        peak = proc_status(pid, "VmHWM")
        assert peak - base < 1100 * MB, (peak - base) / MB  # the 1 GB query buffer limit (measured ~720 MB)
        wait_for(lambda: info_int(good, "connected_clients") == 1, what="disconnect")
        wait_for(lambda: proc_status(pid, "VmRSS") - base < 32 * MB, timeout=5, what="RSS back near the baseline")

        # 5. one legal request of 500,000 arguments: its argument arrays (16 MB) are
        # not kept by the connection afterwards
        rss = proc_status(pid, "VmRSS")
        big = Conn(server.port)
        big.send("EXISTS", *(["k"] * 500000))
        assert big.read() == 500000
        assert big.call("PING") == "PONG"
        assert proc_status(pid, "VmRSS") - rss < 8 * MB, (proc_status(pid, "VmRSS") - rss) / MB
        big.close()

        assert pongs[0] > 0
        assert good.call("GET", "k") == b"v"
        good.close()
        err = stop_ok(server)
        assert "max query buffer length" in err, err
    finally:
        server.stop()


# ---------------------------------------------------------------- 10,000 connections


def _raise_fd_limit(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n and (hard == resource.RLIM_INFINITY or hard >= n):
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _batch(ports, n, remote_keys, rng):
    """Opens n connections over the ports, does something different on each, closes all."""
    socks = []
    for i in range(n):
        port = ports[i % len(ports)]
        s = socket.create_connection(("127.0.0.1", port))
        socks.append((i % 6, s, port))
    for kind, s, port in socks:
        if kind == 0:  # a complete command, reply read
            s.sendall(b"PING\r\n")
            assert s.recv(16) == b"+PONG\r\n"
        elif kind == 1:  # abrupt close in the middle of a command
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nval")
        elif kind == 2:  # abrupt close with a forwarded command in flight
            s.sendall(b"GET %s\r\nINCR %s\r\n" % (remote_keys[port], remote_keys[port]))
        elif kind == 3:  # a multi-key command split over every shard, then gone
            s.sendall(b"MGET " + b" ".join(remote_keys.values()) + b"\r\nDBSIZE\r\n")
        elif kind == 4:  # a pipeline whose replies are never read
            s.sendall(b"PING\r\n" * rng.randrange(1, 200))
        # kind 5: connected, nothing sent
    for kind, s, _ in socks:
        if kind in (1, 2, 4) or rng.random() < 0.3:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RST)
        s.close()


def test_ten_thousand_connections_leave_no_leak():
    assert _raise_fd_limit(4096) >= 1200, "the test needs ~1100 fds"
    shards = 3
    server = Server(shards=shards, extra=["--misrouted", "forward", "--maxclients", "2000"])
    try:
        pid = server.pid
        ports = [server.port + i for i in range(shards)]
        watch = [Conn(p) for p in ports]
        # a key owned by another shard than the port's, so commands sent there are forwarded
        remote_keys = {p: key_on_shard((i + 1) % shards, shards, "rk").encode() for i, p in enumerate(ports)}
        for k in remote_keys.values():
            watch[0].call("SET", k.decode(), "1")
        rng = random.Random(3)

        def settled():
            return all(info_int(w, "connected_clients") == 1 for w in watch)

        # warm-up: 5,000 connections first, so the allocator's free lists in each
        # shard's arena reach their working size (measured: RSS grows ~4 MB over the
        # first 5,000 connections, then by ~0.5 MB per 10,000 more, no leak under ASan)
        for _ in range(10):
            _batch(ports, 500, remote_keys, rng)
        wait_for(settled, what="clients back to baseline after the warm-up")
        # Up to three rounds of 10,000 connections: a leak grows RSS in every round by
        # about the same amount (2 MB is 200 bytes a connection), while the allocator's
        # arenas settle after a round or two, more slowly when a loaded machine keeps
        # more connections alive at once. The verdict: some round grew by less than 2 MB.
        growths = []
        for _ in range(3):
            fds0, rss0 = nfds(pid), proc_status(pid, "VmRSS")
            conns0 = sum(info_int(w, "total_connections_received") for w in watch)
            for _ in range(20):
                _batch(ports, 500, remote_keys, rng)
            wait_for(settled, what="clients back to baseline")
            assert sum(info_int(w, "total_connections_received") for w in watch) - conns0 == 10000
            assert nfds(pid) == fds0
            growths.append(proc_status(pid, "VmRSS") - rss0)
            if growths[-1] < 2 * MB:
                break
        assert min(growths) < 2 * MB, \
            "RSS grew in every round of 10,000 connections: " + ", ".join(f"{g / MB:.2f} MB" for g in growths)
        for w in watch:
            assert w.call("PING") == "PONG"
            w.close()
        stop_ok(server)
    finally:
        server.stop()
