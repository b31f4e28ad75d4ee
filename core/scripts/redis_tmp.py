"""Shared helpers of the core's recording scripts: a throwaway redis-server on a free
loopback port and a RESP2 client (the repository's one RESP test client over raw sockets,
so no client library's reply post-processing can change what is recorded)."""
import os
import shutil
import socket
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server", "tests", "integration"))
import resp  # noqa: E402  (the repository's one RESP test client)


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


def _plain(v):
    """A reply of the repository's RESP test client in this module's form: a status as
    bytes, an error as ReplyError, a null array as None, arrays as lists."""
    if isinstance(v, resp.Err):
        return ReplyError(str(v))
    if isinstance(v, resp.Status):
        return str(v).encode()
    if isinstance(v, resp.NullArray):
        return None
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


class Client(resp.Conn):
    """RESP2 over a raw socket: the repository's one RESP test client
    (server/tests/integration/resp.py), its replies converted by _plain."""

    def __init__(self, port):
        super().__init__(port, timeout=10)

    def call(self, *args, raise_errors=True):
        r = _plain(super().call(*args))
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
