"""The one RESP2/RESP3 test client of the repository: the server's integration tests, the
server and bench scripts, bindings/conformance/record.py and the Python binding's test
harness import it (by path: sys.path gets server/tests/integration). Nothing else speaks
RESP over a socket by hand.

Replies are decoded into plain Python values that keep the wire type, so two
servers can be compared exactly: Status and Err for simple strings and errors,
int, bytes (bulk), None (null bulk / null array / RESP3 null), list (array),
Map, Set, Double, Bool, Verbatim for the RESP3 types.
"""
import atexit
import os
import socket
import subprocess
import time


class Status(str):
    def __repr__(self):
        return f"Status({str.__repr__(self)})"


class Err(str):
    def __repr__(self):
        return f"Err({str.__repr__(self)})"


class Map(list):
    """RESP3 map as a list of (key, value) pairs, in wire order."""
    def __repr__(self):
        return f"Map({list.__repr__(self)})"


class Set(list):
    def __repr__(self):
        return f"Set({list.__repr__(self)})"


class Push(list):
    """A RESP3 push ('>'): pub/sub messages and (un)subscribe confirmations."""
    def __repr__(self):
        return "Push(" + list.__repr__(self) + ")"


class Double(str):
    def __repr__(self):
        return f"Double({str.__repr__(self)})"


class BigNum(str):
    def __repr__(self):
        return f"BigNum({str.__repr__(self)})"


class Bool(int):
    pass


class Verbatim(bytes):
    pass


class NullArray:
    """RESP2 *-1, distinct from $-1 (None)."""
    def __eq__(self, other):
        return isinstance(other, NullArray)

    def __hash__(self):
        return 1

    def __repr__(self):
        return "NullArray"


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a).encode()
        elif isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.port = port

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode(args))

    def call(self, *args):
        self.send(*args)
        return self.read()

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Status(rest.decode())
        if t == b"-":
            return Err(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return NullArray() if n < 0 else [self.read() for _ in range(n)]
        if t == b"%":
            return Map((self.read(), self.read()) for _ in range(int(rest)))
        if t == b"~":
            return Set(self.read() for _ in range(int(rest)))
        if t == b">":
            return Push(self.read() for _ in range(int(rest)))
        if t == b"_":
            return None
        if t == b",":
            return Double(rest.decode())
        if t == b"#":
            return Bool(rest == b"t")
        if t == b"(":
            return BigNum(rest.decode())
        if t == b"=":
            return Verbatim(self._exact(int(rest)))
        if t == b"!":  # RESP3 blob error
            return Err(self._exact(int(rest)).decode("utf-8", "replace"))
        if t == b"|":  # RESP3 attribute: dropped, as the core drops it; the reply follows
            for _ in range(2 * int(rest)):
                self.read()
            return self.read()
        raise ValueError(f"bad reply type {line!r}")


def port_free(port):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


ROOT = os.environ.get("SL_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
SERVER = os.environ.get("SV_SERVER_BIN", os.path.join(ROOT, "build", "server", "slotlane-server"))


def _wait_ready(ports, proc, what):
    deadline = time.time() + 10
    for p in ports:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", p), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"{what} did not listen on {p}")
                time.sleep(0.02)


_LIVE = {}


def _kill_leftovers():
    """Safety net: servers a failing test did not stop are killed by PID at exit."""
    for proc in list(_LIVE.values()):
        if proc.poll() is None:
            proc.kill()
            proc.wait()


atexit.register(_kill_leftovers)


class Server:
    """A slotlane-server (or redis-server) process on free ports in 21000-21999."""

    def __init__(self, shards=1, extra=(), redis=False, env=None, preexec_fn=None):
        import random
        rnd = random.Random()
        nports = 1 if "one-port" in extra else shards
        for _ in range(200):
            base = rnd.randrange(21000, 22000 - nports)
            if all(port_free(base + i) for i in range(nports)):
                if redis:
                    cmd = ["redis-server", "--port", str(base), "--bind", "127.0.0.1", "--save", "",
                           "--appendonly", "no", "--daemonize", "no", "--logfile", "/dev/null", *extra]
                else:
                    cmd = [SERVER, "--shards", str(shards), "--port", str(base), "--loglevel", "warning", *extra]
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                        preexec_fn=preexec_fn)
                try:
                    _wait_ready([base + i for i in range(nports)], proc, cmd[0])
                except RuntimeError:
                    proc.kill()
                    proc.wait()
                    continue
                self.proc, self.port, self.shards = proc, base, shards
                _LIVE[proc.pid] = proc
                return
        raise RuntimeError("no free port range found")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, sig=15, timeout=20):
        """Stops the process by PID; returns (exit code, stderr text). Idempotent."""
        if getattr(self, "_result", None) is not None:
            return self._result
        _LIVE.pop(self.proc.pid, None)
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        self._result = (self.proc.returncode, (err or b"").decode(errors="replace"))
        return self._result


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_slot(key):
    if isinstance(key, str):
        key = key.encode()
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) % 16384


def shard_of(key, shards):
    """The slotlane-server shard owning key: shards own equal contiguous slot ranges."""
    return key_slot(key) * shards // 16384


def keys_per_shard(prefix, per_shard, shards):
    """per_shard keys owned by each shard, interleaved shard 0,1,..,shards-1,0,1,..."""
    found = {i: [] for i in range(shards)}
    n = 0
    while any(len(v) < per_shard for v in found.values()):
        k = f"{prefix}:{n}"
        n += 1
        if len(found[shard_of(k, shards)]) < per_shard:
            found[shard_of(k, shards)].append(k)
    return [found[i][j] for j in range(per_shard) for i in range(shards)]


def read_until_close(sock, timeout=10):
    """Everything the peer sends until it closes (or resets) the connection."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data
