"""Replica reads and failover against a 3 primaries x 1 replica Redis Cluster (the session's
``replica_cluster``): read_from sends GETs to the replicas (their INFO commandstats), the
event callback and the ``slotlane`` logger report a failover, and commands keep working
across it. Decided by replies, INFO counters and the events, never by sleeping."""
import logging
import threading
import time
from typing import List, Tuple

import pytest

import slotlane

from conftest import HOST, RedisCluster


def node_client(port: int) -> "slotlane.Client[bytes]":
    return slotlane.Client("%s:%d" % (HOST, port), cluster=False)


def get_calls(port: int) -> int:
    with node_client(port) as c:
        info = c.execute_command("INFO", "commandstats")
    text = info.decode() if isinstance(info, bytes) else str(info)
    for line in text.splitlines():
        if line.startswith("cmdstat_get:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def repl_field(port: int, field: bytes) -> int:
    """A number of the node's INFO replication (master_repl_offset: sent by a primary,
    applied by a replica; master_port on a replica)."""
    with node_client(port) as c:
        info = c.execute_command("INFO", "replication")
    for line in bytes(info).splitlines():
        if line.startswith(field + b":"):
            return int(line.split(b":", 1)[1])
    raise AssertionError("%d has no %r" % (port, field))


def wait_replicated(replicas: List[int]) -> None:
    """Until each replica applied what its primary had sent (a WAIT on another connection
    waits for that connection's writes only, none, and returns at once)."""
    for r in replicas:
        want = repl_field(repl_field(r, b"master_port"), b"master_repl_offset")
        for _ in range(30000):
            if repl_field(r, b"master_repl_offset") >= want:
                break
            time.sleep(0.002)  # a poll interval on the server's counter, never a verdict
        else:
            raise AssertionError("replica %d never reached offset %d" % (r, want))


def roles(cluster: RedisCluster) -> Tuple[List[int], List[int]]:
    """(primary ports, replica ports) by each node's own INFO replication."""
    prim, rep = [], []
    for p in cluster.ports:
        with node_client(p) as c:
            info = c.execute_command("INFO", "replication")
        (rep if b"role:slave" in info else prim).append(p)
    return prim, rep


def test_read_from_replica(replica_cluster: RedisCluster) -> None:
    with pytest.raises(ValueError):
        slotlane.Client(replica_cluster.url, read_from="nearest")
    with slotlane.Client(replica_cluster.url, read_from="prefer_replica") as c:
        keys = [b"rf:%d" % i for i in range(100)]
        with c.pipeline() as p:
            for k in keys:
                p.set(k, k)
            p.execute()
        # the replicas hold the writes before they are read
        wait_replicated(roles(replica_cluster)[1])
        prim, rep = roles(replica_cluster)
        before = {p: get_calls(p) for p in prim + rep}
        with c.pipeline() as p:
            for k in keys:
                p.get(k)
            assert p.execute() == keys
        on_rep = sum(get_calls(p) - before[p] for p in rep)
        on_prim = sum(get_calls(p) - before[p] for p in prim)
        assert (on_rep, on_prim) == (100, 0)
        assert c.stats()["replica_reads"] >= 100


def test_failover_event_and_no_failed_read(replica_cluster: RedisCluster, caplog: pytest.LogCaptureFixture) -> None:
    events: List[Tuple[str, str]] = []
    seen = threading.Event()

    def on_event(name: str, addr: str) -> None:
        events.append((name, addr))
        if name == "failover":
            seen.set()

    caplog.set_level(logging.INFO, logger="slotlane")
    prim, rep = roles(replica_cluster)
    with slotlane.Client(replica_cluster.url, on_event=on_event, socket_timeout=15.0) as c:
        c.flushall()
        victim = prim[0] if prim[0] != replica_cluster.base else prim[1]
        keys = [b"fe:%d" % i for i in range(60)]
        c.set(b"fe:0", b"x")  # connected everywhere before the kill
        with c.pipeline() as p:
            for k in keys:
                p.get(k)
            p.execute()
        replica_cluster.kill(victim)
        failed_reads = 0
        t0 = time.monotonic()
        while not seen.is_set():
            assert time.monotonic() - t0 < 60, "no failover event within 60 s: %r" % events
            with c.pipeline() as p:
                for k in keys:
                    p.get(k)
                out = p.execute(raise_on_error=False)
            failed_reads += sum(isinstance(r, Exception) for r in out)
        # served again: every key answers
        with c.pipeline() as p:
            for k in keys:
                p.get(k)
            assert all(not isinstance(r, Exception) for r in p.execute(raise_on_error=False))
        assert failed_reads == 0
        assert any(name == "node_down" and addr.endswith(":%d" % victim) for name, addr in events)
        assert c.stats()["failovers"] >= 1
    assert any("failover" in r.getMessage() for r in caplog.records if r.name == "slotlane")
    replica_cluster.restart(victim)  # back, as a replica
