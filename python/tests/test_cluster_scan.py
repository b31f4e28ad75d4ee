"""Cluster-wide SCAN (scan_iter), the node list (nodes()) and scripts (register_script,
SCRIPT/FUNCTION fan-out) on every deployment (plain, a 3-primary Redis Cluster, the bundled
server), plus 100 000 keys and a live reshard on a Redis Cluster. Verdicts come from the
keys returned and the servers' own counters (INFO commandstats), never from timing."""
from collections import Counter

import pytest

import slotlane

# slotlane-server's one-port mode answers SCAN from the receiving shard only (server/README.md):
# a whole-keyspace iteration needs a deployment whose nodes each own their keys.
SCAN_DEPLOYMENTS = ["redis-plain", "redis-cluster", "slotlane-per-shard"]


@pytest.fixture(params=SCAN_DEPLOYMENTS)
def scan_client(request, servers):
    c = slotlane.Client(servers.url(request.param))
    c.flushall()
    try:
        yield c
    finally:
        c.close()


def fill(c, keys, value=b"v"):
    for i in range(0, len(keys), 1000):
        with c.pipeline() as p:
            for k in keys[i:i + 1000]:
                p.set(k, value)
            p.execute()


def key_on(node, prefix):
    """A key whose slot the node serves."""
    lo, hi = node.slots[0]
    i = 0
    while True:
        k = "%s:%d" % (prefix, i)
        if lo <= slotlane.key_slot(k) <= hi:
            return k
        i += 1


def cmdstat_calls(c, addr, name):
    info = c.execute_command("INFO", "commandstats", target=addr)
    text = info.decode() if isinstance(info, bytes) else str(info)
    for line in text.splitlines():
        if line.startswith("cmdstat_%s:" % name):
            return int(line.split("calls=", 1)[1].split(",", 1)[0])
    return 0


def test_nodes(client, deployment):
    nodes = client.nodes()
    primaries = [n for n in nodes if n.primary]
    assert primaries and all(n.primary_addr is None for n in primaries)
    covered = sorted(s for n in primaries for r in n.slots for s in (r,))
    assert sum(hi - lo + 1 for lo, hi in covered) == 16384
    for n in nodes:
        if not n.primary:
            assert n.primary_addr in {p.addr for p in primaries}
    # a per-node command is one loop
    assert all(client.execute_command("PING", target=n.addr) in (b"PONG", "PONG", True) for n in primaries)
    assert len(primaries) == {"redis-cluster": 3, "slotlane-per-shard": 4}.get(deployment, 1)


def test_scan_iter_every_key_match_type(scan_client):
    client = scan_client
    assert list(client.scan_iter()) == []  # an empty deployment
    keys = ["sc:%d" % i for i in range(3000)]
    fill(client, keys)
    for i in range(50):
        client.execute_command("HSET", "sch:%d" % i, "f", "v")
    seen = Counter(k.decode() for k in client.scan_iter(count=100))
    assert set(seen) == set(keys) | {"sch:%d" % i for i in range(50)}
    assert max(seen.values()) == 1  # a steady deployment: each key once
    assert sorted(k.decode() for k in client.scan_iter(match="sc:1*")) == sorted(k for k in keys if k.startswith("sc:1"))
    assert sorted(k.decode() for k in client.scan_iter(_type="hash")) == sorted("sch:%d" % i for i in range(50))
    assert list(client.scan_iter(match=b"nothing*", count=1000)) == []


@pytest.mark.parametrize("deployment", SCAN_DEPLOYMENTS)
def test_scan_iter_text_and_bad_arguments(deployment, servers):
    with slotlane.Client(servers.url(deployment), decode_responses=True) as c:
        c.flushall()
        c.set("tx:1", "v")
        assert list(c.scan_iter(match="tx:*")) == ["tx:1"]
        with pytest.raises(ValueError):
            list(c.scan_iter(count=0))
        with pytest.raises(TypeError):
            list(c.scan_iter(match=object()))
        # an abandoned iterator gives its handle back
        it = c.scan_iter()
        next(it)
        it.close()
        assert c.get("tx:1") == "v"


def test_scan_100k_keys(cluster_url):
    with slotlane.Client(cluster_url) as c:
        c.flushall()
        keys = ["big:%d" % i for i in range(100_000)]
        fill(c, keys)
        seen = Counter(c.scan_iter(count=1000))
        assert len(seen) == 100_000 and max(seen.values()) == 1
        assert set(seen) == {k.encode() for k in keys}
        c.flushall()


def test_scan_during_live_reshard(chaos_cluster):
    """Slots move between two primaries while whole scans run: every key that existed
    throughout comes at least once; the duplicates are counted (and reported)."""
    c = slotlane.Client(chaos_cluster.url)
    try:
        c.flushall()
        keys = ["rs:%d" % i for i in range(100_000)]
        fill(c, keys)
        want = {k.encode() for k in keys}
        by_addr = {n.addr: n for n in c.nodes() if n.primary}
        src = int(next(a for a, n in by_addr.items() if n.slots[0][0] == 0).rsplit(":", 1)[1])
        dst = next(p for p in chaos_cluster.ports if p != src)
        slots = [s for s in range(0, 5000, 977)][:4]
        scans = dups = 0
        for slot in slots:
            mig = chaos_cluster.migrate(slot, src, dst, count=2)
            try:
                while True:
                    seen = Counter(c.scan_iter(count=200))
                    missed = want - set(seen)
                    assert not missed, "%d keys missed during the move of slot %d, e.g. %r" % (
                        len(missed), slot, sorted(missed)[:3])
                    dups += sum(seen.values()) - len(seen)
                    scans += 1
                    if mig.poll() is not None:
                        break
            finally:
                out = mig.communicate(timeout=60)[0]
            assert mig.returncode == 0, out
        assert scans >= len(slots)
        print("reshard of %d slots: %d full scans, %d duplicates" % (len(slots), scans, dups))
        c.flushall()
    finally:
        c.close()


def test_register_script_every_shard_and_reload(client):
    client.execute_command("SCRIPT", "FLUSH")
    script = client.register_script("return redis.call('INCR', KEYS[1]) + tonumber(ARGV[1])")
    assert script.sha == client.execute_command("SCRIPT", "LOAD", script.script).decode()
    assert client.execute_command("SCRIPT", "EXISTS", script.sha) == [1]
    primaries = [n for n in client.nodes() if n.primary]
    keys = [key_on(n, "sk") for n in primaries]
    for k in keys:
        assert script(keys=[k], args=[10]) == 11
    # flushed on one node: it gets the script again (once), the others are not asked
    victim = primaries[-1]
    loads = {n.addr: cmdstat_calls(client, n.addr, "script|load") for n in primaries}
    client.execute_command("SCRIPT", "FLUSH", target=victim.addr)
    if len(primaries) > 1:
        assert client.execute_command("SCRIPT", "EXISTS", script.sha) == [0]
    assert script(keys=[keys[-1]], args=[0]) == 2
    assert script(keys=[keys[-1]], args=[0]) == 3
    after = {n.addr: cmdstat_calls(client, n.addr, "script|load") for n in primaries}
    if loads[victim.addr] or after[victim.addr]:  # the server counts SCRIPT LOAD
        assert after[victim.addr] - loads[victim.addr] == 1
        assert all(after[a] == loads[a] for a in after if a != victim.addr)
    assert client.execute_command("SCRIPT", "EXISTS", script.sha) == [1]
    ro = client.register_script("return redis.call('GET', KEYS[1])")
    assert ro(keys=[keys[0]], readonly=True) == client.get(keys[0])
    with pytest.raises(slotlane.ResponseError):
        client.register_script("this is not lua")(keys=[keys[0]])


def test_function_load_fcall_every_shard(client):
    try:
        client.execute_command("FUNCTION", "FLUSH")
    except slotlane.ResponseError as e:
        pytest.skip("no FUNCTION here: %s" % e)
    lib = ("#!lua name=sllib\nredis.register_function('slf', function(keys, args) "
           "return redis.call('INCR', keys[1]) end)")
    assert client.execute_command("FUNCTION", "LOAD", lib) == b"sllib"
    for n in (n for n in client.nodes() if n.primary):
        k = key_on(n, "fk")
        assert client.execute_command("FCALL", "slf", 1, k) == 1
    assert client.execute_command("FUNCTION", "DELETE", "sllib") in (b"OK", "OK")
    with pytest.raises(slotlane.ResponseError):
        client.execute_command("FCALL", "slf", 1, "fk:0")


def test_page_keys_builds_keys_and_refuses_bad_records():
    """The C helper that turns a scan page into keys: bytes, text, and a record that points
    past the data is a ValueError, not a read out of bounds."""
    import struct
    from slotlane import _cluster
    recs = struct.pack("<BBHIqQ", 6, 0, 0, 2, 0, 0) + struct.pack("<BBHIqQ", 1, 0, 0, 3, 0, 0) + \
        struct.pack("<BBHIqQ", 1, 0, 0, 2, 0, 3)
    assert _cluster._page_keys(recs, b"abcde", None) == [b"abc", b"de"]
    assert _cluster._page_keys(recs, b"abc\xc3\xa9", ("utf-8", "strict")) == ["abc", "\xe9"]
    assert _cluster._page_keys(recs[:24], b"", None) == []
    with pytest.raises(ValueError):
        _cluster._page_keys(recs, b"abcd", None)
    with pytest.raises(ValueError):
        _cluster._page_keys(recs[:30], b"abcde", None)
