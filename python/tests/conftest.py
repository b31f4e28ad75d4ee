"""Servers for the tests, started and stopped here (by PID, also on failure).

Deployments (the ``client`` fixture runs a test once per deployment):
  redis-plain         Debian's redis-server, standalone (ci/redis-plain.sh), port BASE
  redis-cluster       a 3-primary Redis Cluster (ci/redis-cluster.sh), ports BASE+10..+15
  slotlane-per-shard  slotlane-server, 4 shards, per-shard ports BASE+40..+43
  slotlane-one-port   slotlane-server, 4 shards, one-port mode, port BASE+50
BASE is the first free block of 100 ports in the python range of ci/lib.sh's port map
(ports.py), held with a lock file for the session.
slotlane-server runs inside the test process through the package's own helper
(slotlane.testing.Server, what users' tests use), so a bare ``pytest`` in python/ needs
nothing started or built by hand; SL_SLOTLANE_SERVER=BINARY runs that executable instead. The failure tests use their own cluster (``chaos_cluster``,
ports BASE+20..+25), rebuilt for every test that breaks it.

Environment: SL_ROOT (the repository; default: two levels up), SL_TEST_DIR (where server
files go; default build/python-test), SL_SLOTLANE_SERVER (the server binary).
"""
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, Iterator, List, Optional

import pytest

import ports
import slotlane

ROOT = os.environ.get("SL_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "server", "tests", "integration"))
import resp  # noqa: E402  (the repository's one RESP test client)

TEST_DIR = os.environ.get("SL_TEST_DIR") or os.path.join(ROOT, "build", "python-test")
SERVER_BIN = os.environ.get("SL_SLOTLANE_SERVER") or os.path.join(ROOT, "build", "server", "slotlane-server")
HOST = "127.0.0.1"

# One block of the python range (ports.py): two checkouts' runs at once never collide.
# SL_PYTHON_TEST_PORT pins the base instead (it must be free).
if os.environ.get("SL_PYTHON_TEST_PORT"):
    BASE, _BLOCK_LOCK = int(os.environ["SL_PYTHON_TEST_PORT"]), None
else:
    BASE, _BLOCK_LOCK = ports.choose_block(*ports.suite_range(ROOT, "python"), ports.BLOCK_SIZE, "python")
PLAIN_PORT = BASE
CLUSTER_PORT = BASE + 10      # 3 primaries: +10..+12, buses +13..+15
CHAOS_PORT = BASE + 20        # 3 primaries: +20..+22, buses +23..+25
REPLICA_PORT = BASE + 60      # 3 primaries x 1 replica: +60..+65, buses +66..+71
# (test_tls.py: +75..+78 and its TLS cluster +80..+85)
SL_PERSHARD_PORT = BASE + 40  # 4 shards: +40..+43
SL_ONEPORT_PORT = BASE + 50
UNUSED_PORT = BASE + ports.BLOCK_SIZE - 1  # in the block, never listened on

DEPLOYMENTS = ["redis-plain", "redis-cluster", "slotlane-per-shard", "slotlane-one-port"]


def script(name: str, *args: str, timeout: float = 90) -> str:
    p = subprocess.run(["bash", os.path.join(ROOT, "ci", name)] + list(args), capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("ci/%s %s failed (%d): %s%s" % (name, " ".join(args), p.returncode, p.stdout, p.stderr))
    return p.stdout


def ping(port: int, timeout: float = 0.5) -> bool:
    try:
        c = resp.Conn(port, host=HOST, timeout=timeout)
        try:
            return bool(c.call("PING") == "PONG")
        finally:
            c.close()
    except (OSError, ConnectionError):
        return False


def _client_list(port: int) -> str:
    c = resp.Conn(port, host=HOST, timeout=5)
    try:
        return str(c.call("CLIENT", "LIST").decode())
    finally:
        c.close()


def wait_blocked(url: str, cmd: str, limit: float = 30) -> None:
    """Until a client of the server at url (every primary, for the test cluster) is blocked
    in cmd (CLIENT LIST: flags with b, cmd=cmd): an event to wait for instead of a sleep.
    ``limit`` only turns a client that never blocks into a failure instead of a hang."""
    port = int(url.rsplit(":", 1)[1])
    ports = [port + i for i in range(3)] if port == CLUSTER_PORT else [port]
    end = time.monotonic() + limit
    while time.monotonic() < end:
        for p in ports:
            for line in _client_list(p).splitlines():
                f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
                if "b" in f.get("flags", "") and f.get("cmd") == cmd:
                    return
        time.sleep(0.01)
    raise AssertionError("no client of %s blocked in %s" % (url, cmd))


def blocked_clients(url: str) -> int:
    """Clients the server (every primary of a cluster) has blocked now (INFO clients)."""
    def count(text: bytes) -> int:
        for line in text.decode().splitlines():
            if line.startswith("blocked_clients:"):
                return int(line.split(":", 1)[1])
        raise AssertionError("no blocked_clients in INFO clients")
    with slotlane.Client(url) as c:
        if c.mode == "cluster":
            return sum(count(t) for t in c.execute_command("INFO", "clients", target=slotlane.ALL_PRIMARIES))
        return count(c.execute_command("INFO", "clients"))


def wait_blocked_count(url: str, n: int, limit: float = 30) -> None:
    """Until the server has n blocked clients: an event to wait for (the limit only turns a
    hang into a failure)."""
    end = time.monotonic() + limit
    while blocked_clients(url) != n:
        if time.monotonic() > end:
            raise AssertionError("the server never had %d blocked clients (has %d)" % (n, blocked_clients(url)))
        time.sleep(0.005)


class RedisCluster:
    """A Redis Cluster from ci/redis-cluster.sh."""

    def __init__(self, name: str, base: int, n: int = 3, replicas: int = 0) -> None:
        self.dir = os.path.join(TEST_DIR, name)
        self.base = base
        self.n = n
        self.replicas = replicas
        self.started = False

    def start(self) -> "RedisCluster":
        if self.replicas:
            os.environ.setdefault("SL_CLUSTER_NODE_TIMEOUT", "2000")  # a fast promotion
        script("redis-cluster.sh", "start", self.dir, str(self.base), str(self.n), str(self.replicas))
        self.started = True
        return self

    def failover(self, port: int) -> None:
        script("redis-cluster.sh", "failover", self.dir, str(port))

    def stop(self) -> None:
        if self.started or os.path.isdir(self.dir):
            script("redis-cluster.sh", "stop", self.dir)
            self.started = False

    @property
    def ports(self) -> List[int]:
        return [self.base + i for i in range(self.n * (1 + self.replicas))]

    @property
    def url(self) -> str:
        return "redis://%s:%d" % (HOST, self.base)

    def pid(self, port: int) -> int:
        with open(os.path.join(self.dir, str(port), "pid")) as f:
            return int(f.read().strip())

    def kill(self, port: int) -> None:
        script("redis-cluster.sh", "kill", self.dir, str(port))

    def restart(self, port: int) -> None:
        script("redis-cluster.sh", "restart", self.dir, str(port))

    def migrate(self, slot: int, src: int, dst: int, count: int = 3) -> "subprocess.Popen[str]":
        env = dict(os.environ, SL_MIGRATE_COUNT=str(count))
        return subprocess.Popen(["bash", os.path.join(ROOT, "ci", "redis-cluster.sh"), "migrate", self.dir,
                                 str(slot), str(src), str(dst)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env)


class SlotlaneServer:
    """build/server/slotlane-server, started by PID and stopped with SIGTERM (then SIGKILL)."""

    def __init__(self, port: int, args: List[str], nports: int) -> None:
        self.port = port
        self.args = args
        self.nports = nports
        self.proc: Optional["subprocess.Popen[bytes]"] = None

    def start(self) -> "SlotlaneServer":
        os.makedirs(TEST_DIR, exist_ok=True)
        log = open(os.path.join(TEST_DIR, "slotlane-server-%d.log" % self.port), "wb")
        self.proc = subprocess.Popen([SERVER_BIN] + self.args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        for i in range(self.nports):
            while not ping(self.port + i):
                if self.proc.poll() is not None:
                    with open(log.name, "rb") as f:
                        text = f.read().decode("utf-8", "replace").strip()
                    self.proc = None
                    if "not implemented" in text:
                        raise _Unavailable(text)
                    raise RuntimeError("slotlane-server %s exited (%s): %s" % (self.args, self.proc, text))
                if time.time() > deadline:
                    self.stop()
                    raise RuntimeError("slotlane-server %s does not answer on port %d" % (self.args, self.port + i))
                time.sleep(0.05)
        return self

    def stop(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.proc = None


def server_help() -> str:
    if not os.access(SERVER_BIN, os.X_OK):
        return ""
    try:
        p = subprocess.run([SERVER_BIN, "--help"], capture_output=True, text=True, timeout=10)
        return p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


class Servers:
    """Session-wide servers, started on first use."""

    def __init__(self) -> None:
        self.urls: Dict[str, str] = {}
        self.skip: Dict[str, str] = {}
        self.stops: List = []

    def url(self, dep: str) -> str:
        if dep in self.urls:
            return self.urls[dep]
        if dep in self.skip:
            pytest.skip(self.skip[dep])
        try:
            url = self._start(dep)
        except _Unavailable as e:
            self.skip[dep] = str(e)
            pytest.skip(str(e))
        self.urls[dep] = url
        return url

    def _start(self, dep: str) -> str:
        if dep == "redis-plain":
            d = os.path.join(TEST_DIR, "plain")
            self.stops.append(lambda: script("redis-plain.sh", "stop", d))
            script("redis-plain.sh", "start", d, str(PLAIN_PORT))
            return "redis://%s:%d" % (HOST, PLAIN_PORT)
        if dep == "redis-cluster":
            c = RedisCluster("cluster", CLUSTER_PORT)
            self.stops.append(c.stop)
            return c.start().url
        if not os.environ.get("SL_SLOTLANE_SERVER"):
            # the bundled server in this process, through the package's own helper
            from slotlane.testing import Server
            if dep == "slotlane-per-shard":
                srv = Server(shards=4, port=SL_PERSHARD_PORT, bind=HOST)
            elif dep == "slotlane-one-port":
                srv = Server(shards=4, port=SL_ONEPORT_PORT, bind=HOST, port_mode="one-port")
            else:
                raise ValueError(dep)
            self.stops.append(srv.stop)
            return srv.url
        h = server_help()
        if not h:
            raise RuntimeError("%s is not built" % SERVER_BIN)
        if dep == "slotlane-per-shard":
            s = SlotlaneServer(SL_PERSHARD_PORT, ["--shards", "4", "--port", str(SL_PERSHARD_PORT),
                                                  "--bind", HOST] + (["--port-mode", "per-shard"] if "--port-mode" in h else []), 4)
            self.stops.append(s.stop)
            s.start()
            return "redis://%s:%d" % (HOST, SL_PERSHARD_PORT)
        if dep == "slotlane-one-port":
            if "one-port" not in h or "one-port (not implemented" in h:
                raise _Unavailable("slotlane-server --help does not offer one-port mode yet")
            s = SlotlaneServer(SL_ONEPORT_PORT, ["--shards", "4", "--port", str(SL_ONEPORT_PORT), "--bind", HOST,
                                                 "--port-mode", "one-port"], 1)
            self.stops.append(s.stop)
            s.start()
            return "redis://%s:%d" % (HOST, SL_ONEPORT_PORT)
        raise ValueError(dep)

    def stop_all(self) -> None:
        errors = []
        for stop in reversed(self.stops):
            try:
                stop()
            except Exception as e:  # keep stopping the others
                errors.append(e)
        self.stops.clear()
        if errors:
            raise errors[0]


class _Unavailable(Exception):
    pass


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    s = Servers()
    try:
        yield s
    finally:
        s.stop_all()


@pytest.fixture(params=DEPLOYMENTS)
def deployment(request, servers: Servers) -> str:
    return request.param


@pytest.fixture
def url(deployment: str, servers: Servers) -> str:
    return servers.url(deployment)


@pytest.fixture
def client(url: str) -> Iterator[slotlane.Client]:
    c = slotlane.Client(url)
    c.flushall()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def text_client(url: str) -> Iterator[slotlane.Client]:
    c = slotlane.Client(url, decode_responses=True)
    c.flushall()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(params=["redis-plain", "redis-cluster"])
def redis_url(request, servers: Servers) -> str:
    return servers.url(request.param)


@pytest.fixture
def cluster_url(servers: Servers) -> str:
    return servers.url("redis-cluster")


@pytest.fixture
def plain_url(servers: Servers) -> str:
    return servers.url("redis-plain")


@pytest.fixture
def chaos_cluster() -> Iterator[RedisCluster]:
    """A Redis Cluster of its own for a test that kills nodes or moves slots: started
    fresh (a healthy one is kept by the script), stopped if the test broke it."""
    c = RedisCluster("chaos", CHAOS_PORT)
    c.start()
    ok = False
    try:
        yield c
        ok = True
    finally:
        healthy = ok and all(ping(p) for p in c.ports)
        if not healthy:
            c.stop()


@pytest.fixture(scope="session", autouse=True)
def _stop_chaos_at_end() -> Iterator[None]:
    yield
    for name in ("chaos", "replicas"):
        d = os.path.join(TEST_DIR, name)
        if os.path.isdir(d):
            script("redis-cluster.sh", "stop", d)


@pytest.fixture(scope="session")
def replica_cluster() -> RedisCluster:
    """3 primaries x 1 replica (cluster-node-timeout 2 s), one per session: the tests
    that fail nodes over leave it healthy (a killed primary is restarted as a replica)."""
    return RedisCluster("replicas", REPLICA_PORT, 3, 1).start()


def keys_for_every_slot() -> List[bytes]:
    """One key per slot (16384 keys), found with the core's own slot function."""
    found: List[Optional[bytes]] = [None] * 16384
    missing = 16384
    i = 0
    while missing:
        k = b"slot:%d" % i
        s = slotlane.key_slot(k)
        if found[s] is None:
            found[s] = k
            missing -= 1
        i += 1
    return [k for k in found if k is not None]


def shutil_which(name: str) -> Optional[str]:
    return shutil.which(name)
