"""Shared helpers of the core's recording scripts: a throwaway redis-server on a free
loopback port and a minimal RESP2 client (raw sockets, so no client library's reply
post-processing can change what is recorded)."""
import os
import shutil
import socket
import subprocess
import tempfile
import time


def free_port(lo=20900, hi=20999):
    for port in range(lo, hi + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port in %d-%d" % (lo, hi))


class Server:
    """redis-server on 127.0.0.1:<free port>, without persistence, in a temp dir."""

    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="sl-redis-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir, *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                self.client = Client(self.port)
                self.client.call("PING")
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.05)

    def version(self):
        info = self.client.call("INFO", "server").decode()
        for line in info.splitlines():
            if line.startswith("redis_version:"):
                return line.split(":", 1)[1].strip()
        return "unknown"

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ReplyError(Exception):
    pass


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise OSError("connection closed")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest
        if t == b"-":
            return ReplyError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError("unexpected reply type %r" % t)

    def call(self, *args, raise_errors=True):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        r = self._read()
        if isinstance(r, ReplyError) and raise_errors:
            raise r
        return r


def c_string(b):
    """A C string literal for arbitrary bytes (octal escapes, never ambiguous)."""
    if isinstance(b, str):
        b = b.encode()
    out = ['"']
    for c in b:
        if c in (0x22, 0x5c):
            out.append("\\" + chr(c))
        elif 0x20 <= c < 0x7f and c != 0x3f:  # '?' escaped: no trigraphs
            out.append(chr(c))
        else:
            out.append("\\%03o" % c)
    out.append('"')
    return "".join(out)
