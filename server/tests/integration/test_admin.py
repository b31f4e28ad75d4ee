"""CONFIG, INFO and the introspection commands (OBJECT, DEBUG, SLOWLOG, LATENCY,
ROLE, WAIT, LASTSAVE) against redis-server 7.0, differentially: the same command on
both, the replies compared exactly where they are not identity or statistics, by
shape and invariants where they are (INFO: section headers and field names, the
type of each value; pids, uptimes, memory figures differ by nature).

Runs at 1 and 4 shards per-shard (each keyed command sent to the shard owning its
key), and one-port at 1 and 4 shards, each in RESP2 and RESP3; the reference runs
with `enable-debug-command yes`, ours with `--enable-debug-command yes`.

Statistics are per shard (commandstats, errorstats, SLOWLOG, LATENCY HISTOGRAM): a
command counts on the shard that ran it, which under one-port forwarding is the
key's owner, so the statistics cases use keyless commands (PING ECHO WAIT) that run
on the receiving shard.
"""
import os
import re
import tempfile

import pytest
import redis

from resp import Conn, Err, Map, Server, Status, Verbatim, key_slot


def norm(r):
    """RESP2/RESP3 differences that are not ours to compare (maps as pair lists)."""
    if isinstance(r, Map):
        return sorted((repr(norm(k)), repr(norm(v))) for k, v in r)
    if isinstance(r, list):
        return [norm(x) for x in r]
    if isinstance(r, Verbatim):
        return bytes(r)[4:] if bytes(r)[:4] == b"txt:" else bytes(r)
    return r


def as_map(r):
    if isinstance(r, Map):
        return {k: v for k, v in r}
    return {r[i]: r[i + 1] for i in range(0, len(r), 2)}


class Pair:
    def __init__(self, shards, proto, one_port):
        extra = ["--enable-debug-command", "yes"] + (["--port-mode", "one-port"] if one_port else [])
        self.ours_srv = Server(shards=shards, extra=extra)
        self.ref_srv = Server(redis=True, extra=["--enable-debug-command", "yes"])
        self.shards, self.one_port, self.proto = shards, one_port, proto
        n = 1 if one_port else shards
        self.ours = [Conn(self.ours_srv.port + i) for i in range(n)]
        self.ref = Conn(self.ref_srv.port)
        if proto == 3:
            for c in self.ours + [self.ref]:
                c.call("HELLO", "3")

    def conn(self, key=None):
        if key is None or len(self.ours) == 1:
            return self.ours[0]
        return self.ours[key_slot(key) * self.shards // 16384]

    def both(self, *argv, key=None):
        return self.conn(key).call(*argv), self.ref.call(*argv)

    def same(self, *argv, key=None):
        o, r = self.both(*argv, key=key)
        assert norm(o) == norm(r), f"{argv!r}: ours {o!r} redis {r!r}"
        return o

    def same_map(self, *argv, key=None):
        """A map reply (CONFIG GET): Redis's order is its hash table's."""
        o, r = self.both(*argv, key=key)
        if isinstance(o, Err) or isinstance(r, Err):
            assert o == r, f"{argv!r}: ours {o!r} redis {r!r}"
        else:
            assert as_map(o) == as_map(r), f"{argv!r}: ours {o!r} redis {r!r}"
        return o

    def stop(self):
        for c in self.ours + [self.ref]:
            c.close()
        code, err = self.ours_srv.stop()
        self.ref_srv.stop()
        assert code == 0, err


MODES = [(1, 2, False), (1, 3, False), (4, 2, False), (4, 3, False), (1, 2, True), (4, 3, True)]


@pytest.fixture(params=MODES, ids=lambda m: f"shards{m[0]}-resp{m[1]}-{'oneport' if m[2] else 'pershard'}")
def pair(request):
    p = Pair(*request.param)
    yield p
    p.stop()


# ---- CONFIG ----

SETTABLE = [  # (parameter, value) that tools and test suites set; GET must answer the same after SET
    ("list-max-ziplist-size", "128"), ("list-max-listpack-size", "-1"), ("hash-max-ziplist-entries", "64"),
    ("hash-max-listpack-value", "32"), ("zset-max-ziplist-entries", "16"), ("zset-max-listpack-value", "1kb"),
    ("set-max-intset-entries", "100"), ("list-compress-depth", "2"), ("maxmemory", "1gb"), ("maxmemory", "100mb"),
    ("maxmemory-policy", "allkeys-lru"), ("maxmemory-policy", "NOEVICTION"), ("maxmemory-samples", "7"),
    ("lazyfree-lazy-eviction", "yes"), ("lazyfree-lazy-user-del", "YES"), ("lazyfree-lazy-expire", "no"),
    ("appendfsync", "always"), ("appendfsync", "everysec"), ("notify-keyspace-events", "KEA"),
    ("notify-keyspace-events", "Ex"), ("notify-keyspace-events", "mnKE"), ("notify-keyspace-events", ""),
    ("client-output-buffer-limit", "normal 1mb 2mb 3"), ("client-output-buffer-limit", "pubsub 32mb 8mb 60 slave 1 2 3"),
    ("busy-reply-threshold", "6000"), ("lua-time-limit", "7000"), ("slowlog-log-slower-than", "20000"),
    ("slowlog-max-len", "64"), ("latency-monitor-threshold", "0"), ("latency-tracking", "yes"), ("hz", "0"),
    ("hz", "1000"), ("hz", "10"), ("timeout", "30"), ("timeout", "0"), ("save", ""), ("save", "900 1 300 10"),
    ("save", ""), ("activerehashing", "no"), ("stream-node-max-entries", "200"), ("hll-sparse-max-bytes", "3000"),
    ("maxmemory-clients", "10%"), ("maxmemory-clients", "0"), ("proto-max-bulk-len", "512mb"),
    ("client-query-buffer-limit", "1gb"), ("tcp-keepalive", "60"), ("maxclients", "1000"),
    ("loglevel", "warning"), ("latency-tracking-info-percentiles", "50 99 99.9"), ("oom-score-adj-values", "0 200 800"),
]

BAD = [  # each must be refused with Redis's message, and change nothing
    ["CONFIG", "SET", "no-such-param", "1"], ["CONFIG", "SET", "maxmemory", "x"], ["CONFIG", "SET", "maxmemory", "1.5gb"],
    ["CONFIG", "SET", "maxmemory", "10", "maxmemory", "20"], ["CONFIG", "SET", "hash-max-ziplist-entries", "1",
                                                              "hash-max-listpack-entries", "2"],
    ["CONFIG", "SET", "databases", "3"], ["CONFIG", "SET", "daemonize", "yes"], ["CONFIG", "SET", "dir", "/tmp"],
    ["CONFIG", "SET", "hz", "x"], ["CONFIG", "SET", "timeout", "-1"], ["CONFIG", "SET", "maxmemory-samples", "0"],
    ["CONFIG", "SET", "slowlog-log-slower-than", "-2"], ["CONFIG", "SET", "appendfsync", "sometimes"],
    ["CONFIG", "SET", "lazyfree-lazy-eviction", "maybe"], ["CONFIG", "SET", "maxmemory-policy", "lru"],
    ["CONFIG", "SET", "notify-keyspace-events", "KEQ"], ["CONFIG", "SET", "save", "100 x"],
    ["CONFIG", "SET", "save", "100 2 3"], ["CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"],
    ["CONFIG", "SET", "client-output-buffer-limit", "foo 1 2 3"], ["CONFIG", "SET", "client-output-buffer-limit",
                                                                   "normal x 2 3"],
    ["CONFIG", "SET", "maxclients", "0"], ["CONFIG", "SET", "port", "99999"], ["CONFIG", "SET", "a"],
    ["CONFIG", "SET", "a", "b", "c"], ["CONFIG", "GET"], ["CONFIG"], ["CONFIG", "FOO"], ["CONFIG", "RESETSTAT", "x"],
    ["CONFIG", "SET", "maxmemory", "5mb", "hz", "x"], ["CONFIG", "SET", "hz", "5", "no-such", "1"],
    ["CONFIG", "SET", "latency-tracking-info-percentiles", "50 200"], ["CONFIG", "SET", "maxmemory-clients", "x%"],
]

# identity or deliberately different here (README "CONFIG"): compared by presence only
IDENTITY = {"port", "bind", "dir", "logfile", "pidfile", "daemonize", "databases", "cluster-enabled",
            "cluster-announce-ip", "enable-debug-command", "save", "appendonly", "loglevel",
            "maxclients"}  # maxclients: what the open-files limit allows each server


def test_config_set_get(pair):
    for name, value in SETTABLE:
        pair.same("CONFIG", "SET", name, value)
        pair.same_map("CONFIG", "GET", name)
    # several pairs at once, several patterns, aliases answered under both names
    pair.same("CONFIG", "SET", "hash-max-ziplist-entries", "100", "zset-max-listpack-entries", "50", "maxmemory", "2mb")
    pair.same_map("CONFIG", "GET", "*-max-*-entries", "maxmemory")
    pair.same_map("CONFIG", "GET", "maxmemory*", "maxmemory", "*lazyfree*")
    pair.same_map("CONFIG", "GET", "no-such-*")
    pair.same("CONFIG", "HELP")


def test_config_errors_are_atomic(pair):
    pair.same("CONFIG", "SET", "maxmemory", "7mb", "hz", "20")
    for argv in BAD:
        pair.same(*argv)
    pair.same_map("CONFIG", "GET", "maxmemory", "hz", "hash-max-*")


def test_config_get_everything(pair):
    o, r = pair.both("CONFIG", "GET", "*")
    o, r = as_map(o), as_map(r)
    assert set(o) == set(r)
    differ = {k: (o[k], r[k]) for k in o if o[k] != r[k] and k.decode() not in IDENTITY}
    assert not differ, differ


def test_config_rewrite():
    s = Server(shards=1)
    try:
        assert Conn(s.port).call("CONFIG", "REWRITE") == Err("ERR The server is running without a config file")
    finally:
        s.stop()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "slotlane.toml")
        with open(path, "w") as f:
            f.write("# kept\nshards = 1\nmaxmemory = \"1mb\"\n")
        s = Server(shards=1, extra=["--config", path])
        try:
            c = Conn(s.port)
            assert c.call("CONFIG", "SET", "maxmemory", "2mb", "list-max-ziplist-size", "128",
                          "notify-keyspace-events", "Ex") == Status("OK")
            assert c.call("CONFIG", "REWRITE") == Status("OK")
        finally:
            assert s.stop()[0] == 0
        text = open(path).read()
        assert "# kept" in text and "shards = 1" in text
        assert text.count("maxmemory") == 1, text
        s = Server(shards=1, extra=["--config", path])  # the rewritten file is read back
        try:
            c = Conn(s.port)
            got = as_map(c.call("CONFIG", "GET", "maxmemory", "list-max-listpack-size", "notify-keyspace-events"))
            assert got == {b"maxmemory": b"2097152", b"list-max-listpack-size": b"128", b"notify-keyspace-events": b"xE"}
            info = c.call("INFO", "server")
            assert f"config_file:{path}".encode() in bytes(info)
        finally:
            assert s.stop()[0] == 0


# ---- INFO ----

def info_fields(text):
    sections, cur = {}, None
    body = bytes(text).decode()
    if body.startswith("txt:"):
        body = body[4:]
    for line in body.split("\r\n"):
        if line.startswith("# "):
            cur = line[2:]
            sections[cur] = {}
        elif line and cur is not None:
            k, _, v = line.partition(":")
            sections[cur][k] = v
    return sections


def kind(v):
    if re.fullmatch(r"-?\d+", v):
        return "int"
    if re.fullmatch(r"-?\d+\.\d+%?", v):
        return "float"
    return "str"


PER_ITEM = re.compile(r"^(cmdstat_|errorstat_|latency_percentiles_usec_|db\d+)")


def test_info_sections_and_fields(pair):
    for args in [(), ("default",), ("all",), ("everything",), ("server", "clients"), ("commandstats",),
                 ("CPU", "keyspace"), ("foo",), ("errorstats", "errorstats")]:
        o, r = pair.both("INFO", *args)
        so, sr = info_fields(o), info_fields(r)
        assert list(so) == list(sr), f"INFO {args}: {list(so)} vs {list(sr)}"
        for sec in sr:
            for field, value in sr[sec].items():
                if PER_ITEM.match(field):
                    continue
                assert field in so[sec], f"INFO {sec}: {field} missing"
                if field in ("executable", "os", "redis_mode", "mem_allocator", "redis_build_id"):
                    continue
                assert kind(so[sec][field]) == kind(value), f"{field}: ours {so[sec][field]!r} redis {value!r}"
    s = info_fields(pair.conn().call("INFO", "everything"))
    assert s["Replication"]["role"] == "master" and s["Replication"]["connected_slaves"] == "0"
    assert float(s["CPU"]["used_cpu_user"]) >= 0 and float(s["CPU"]["used_cpu_sys"]) >= 0
    assert int(s["Memory"]["used_memory_rss"]) >= int(s["Memory"]["used_memory"]) > 0
    assert s["Cluster"]["cluster_enabled"] == "1"


def test_info_statistics(pair):
    """Counters from events: after CONFIG RESETSTAT, the same keyless commands on both
    servers give the same calls, rejected_calls, failed_calls and errorstats."""
    c = pair.conn()
    for conn in (c, pair.ref):
        assert conn.call("CONFIG", "RESETSTAT") == Status("OK")
        for _ in range(3):
            conn.call("PING")
        conn.call("ECHO")              # arity: rejected
        conn.call("WAIT", "x", "0")    # failed, ERR
        conn.call("WAIT", "0", "0")
        conn.call("PING", "a", "b")    # rejected
    so = info_fields(c.call("INFO", "commandstats", "errorstats"))
    sr = info_fields(pair.ref.call("INFO", "commandstats", "errorstats"))

    def stat(s, cmd):
        d = dict(kv.split("=") for kv in s["Commandstats"][f"cmdstat_{cmd}"].split(","))
        return d["calls"], d["rejected_calls"], d["failed_calls"]

    for cmd in ("ping", "echo", "wait"):
        assert stat(so, cmd) == stat(sr, cmd), cmd
    assert so["Errorstats"] == sr["Errorstats"]
    so = info_fields(c.call("INFO", "stats"))
    sr = info_fields(pair.ref.call("INFO", "stats"))
    assert so["Stats"]["total_error_replies"] == sr["Stats"]["total_error_replies"] == "3"
    # LATENCY HISTOGRAM of those calls: the same shape and counts
    o, r = pair.both("LATENCY", "HISTOGRAM", "ping", "wait")
    om, rm = as_map(o), as_map(r)
    assert set(om) == set(rm) == {b"ping", b"wait"}
    for k in om:
        a, b = as_map(om[k]), as_map(rm[k])
        assert a[b"calls"] == b[b"calls"] and set(a) == set(b) == {b"calls", b"histogram_usec"}
        assert max(as_map(a[b"histogram_usec"]).values()) == a[b"calls"]


def test_subcommand_statistics(pair):
    """Per-subcommand counters under Redis 7.0's names (cmdstat_config|get ...): the
    same calls, rejected and failed counts and latencystats names on both servers; an
    unknown subcommand counts in errorstats only."""
    c = pair.conn()
    calls = [["CONFIG", "GET", "maxmemory"], ["CONFIG", "GET", "hz"], ["CLIENT", "ID"], ["CLIENT", "LIST"],
             ["CONFIG", "FOO"], ["OBJECT", "HELP"], ["MEMORY", "STATS"], ["SLOWLOG", "LEN"], ["COMMAND", "COUNT"],
             ["CONFIG"], ["LATENCY", "HELP"], ["CLIENT", "NOSUCH", "x"]]
    for conn in (c, pair.ref):
        assert conn.call("CONFIG", "RESETSTAT") == Status("OK")
        for argv in calls:
            conn.call(*argv)
    so = info_fields(c.call("INFO", "commandstats", "errorstats", "latencystats"))
    sr = info_fields(pair.ref.call("INFO", "commandstats", "errorstats", "latencystats"))

    def stats(s):
        out = {}
        for name, v in s["Commandstats"].items():
            d = dict(kv.split("=") for kv in v.split(","))
            out[name] = (d["calls"], d["rejected_calls"], d["failed_calls"])
        return out

    o, r = stats(so), stats(sr)
    assert o == r and "cmdstat_config|get" in o and o["cmdstat_config|get"][0] == "2"
    assert so["Errorstats"] == sr["Errorstats"]
    assert set(so["Latencystats"]) == set(sr["Latencystats"])
    assert "latency_percentiles_usec_client|list" in so["Latencystats"]
    # LATENCY HISTOGRAM by full name and by container
    for names in (["config|get"], ["config"], ["client", "memory|stats"], ["config|nosuch"]):
        o, r = pair.both("LATENCY", "HISTOGRAM", *names)
        om, rm = as_map(o), as_map(r)
        assert set(om) == set(rm), names
        for k in om:
            assert as_map(om[k])[b"calls"] == as_map(rm[k])[b"calls"], (names, k)


def test_role_wait_lastsave(pair):
    pair.same("ROLE")
    pair.same("WAIT", "0", "0")
    pair.same("WAIT", "1", "1")
    pair.same("WAIT", "x", "0")
    pair.same("WAIT", "1", "x")
    pair.same("WAIT", "1", "-1")
    pair.same("WAIT", "1")
    o, r = pair.both("LASTSAVE")
    assert isinstance(o, int) and isinstance(r, int)


# ---- OBJECT ----

def test_object(pair):
    big = "x" * 100
    cases = [
        (["SET", "s:int", "12345"], "s:int"), (["SET", "s:emb", "hello"], "s:emb"), (["SET", "s:raw", "y" * 45], "s:raw"),
        (["SET", "s:lead", "007"], "s:lead"), (["SET", "s:small", "5"], "s:small"),
        (["RPUSH", "l", "a", "b"], "l"), (["HSET", "h", "f", "v"], "h"), (["HSET", "h:long", "f", big], "h:long"),
        (["SADD", "set:int", "1", "2", "3"], "set:int"), (["SADD", "set:str", "a", "1"], "set:str"),
        (["ZADD", "z", "1", "a"], "z"), (["ZADD", "z:long", "1", big], "z:long"),
    ]
    for argv, key in cases:
        pair.same(*argv, key=key)
        pair.same("OBJECT", "ENCODING", key, key=key)
        pair.same("OBJECT", "REFCOUNT", key, key=key)
    # the thresholds come from CONFIG: one more element than allowed converts, and stays converted
    pair.same("CONFIG", "SET", "hash-max-listpack-entries", "4", "set-max-intset-entries", "4",
              "zset-max-listpack-entries", "4")
    for i in range(5):
        pair.same("HSET", "h:grow", f"f{i}", "v", key="h:grow")
        pair.same("SADD", "set:grow", str(i), key="set:grow")
        pair.same("ZADD", "z:grow", str(i), f"m{i}", key="z:grow")
        for k in ("h:grow", "set:grow", "z:grow"):
            pair.same("OBJECT", "ENCODING", k, key=k)
    pair.same("OBJECT", "ENCODING", "missing", key="missing")
    pair.same("OBJECT", "FREQ", "s:emb", key="s:emb")  # no LFU policy: Redis's error
    o, r = pair.both("OBJECT", "IDLETIME", "s:emb", key="s:emb")
    assert isinstance(o, int) and 0 <= o <= 5 and isinstance(r, int)
    pair.same("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    o, r = pair.both("OBJECT", "FREQ", "s:emb", key="s:emb")
    assert isinstance(o, int) and isinstance(r, int) and 0 <= o <= 255
    pair.same("OBJECT", "IDLETIME", "s:emb", key="s:emb")  # LFU policy: Redis's error
    pair.same("CONFIG", "SET", "maxmemory-policy", "noeviction")
    pair.same("OBJECT", "HELP")
    pair.same("OBJECT", "FOO")
    pair.same("OBJECT", "ENCODING")
    pair.same("OBJECT", "IDLETIME", "a", "b")
    pair.same("OBJECT")


def test_idletime_tracks_access():
    """IDLETIME from the access time: a key read after DEBUG SLEEP is idle 0 again."""
    s = Server(shards=1, extra=["--enable-debug-command", "yes"])
    try:
        c = Conn(s.port)
        c.call("SET", "k", "v")
        c.call("SET", "other", "v")
        assert c.call("DEBUG", "SLEEP", "2.1") == Status("OK")
        c.call("PING")  # the next batch sees the new time
        assert c.call("OBJECT", "IDLETIME", "k") >= 2
        c.call("GET", "k")
        assert c.call("OBJECT", "IDLETIME", "k") == 0
        assert c.call("OBJECT", "IDLETIME", "other") >= 2  # OBJECT itself does not touch
    finally:
        s.stop()


# ---- DEBUG ----

def test_debug(pair):
    pair.same("SET", "d", "123", key="d")
    pair.same("DEBUG", "SLEEP", "0")
    pair.same("DEBUG", "SLEEP", "x")
    pair.same("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    pair.same("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    pair.same("DEBUG", "OBJECT", "missing", key="missing")
    pair.same("DEBUG", "JMAP")
    pair.same("DEBUG", "OBJECT")
    pair.same("DEBUG")
    o, r = pair.both("DEBUG", "OBJECT", "d", key="d")
    fields = lambda s: [kv.split(":")[0] for kv in s.split(" ")][:6]
    assert fields(o) == fields(r) and " encoding:int " in o and " encoding:int " in r
    o, r = pair.both("DEBUG", "HELP")
    assert isinstance(o, list) and isinstance(r, list) and o[0] == r[0]


def test_debug_disabled():
    ours, ref = Server(shards=1), Server(redis=True)
    try:
        for argv in (["DEBUG", "SLEEP", "0"], ["DEBUG", "OBJECT", "k"], ["DEBUG", "HELP"]):
            assert Conn(ours.port).call(*argv) == Conn(ref.port).call(*argv)
        assert Conn(ours.port).call("CONFIG", "GET", "enable-debug-command") == [b"enable-debug-command", b"no"]
    finally:
        ours.stop()
        ref.stop()


def test_debug_set_active_expire():
    """Active expiry off: an expired key stays in DBSIZE (nothing reads it); on: the cycle removes it."""
    s = Server(shards=1, extra=["--enable-debug-command", "yes"])
    try:
        c = Conn(s.port)
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        c.call("SET", "k", "v", "PX", "1")
        c.call("DEBUG", "SLEEP", "0.3")  # past its time, three cron turns on this shard's thread blocked
        for _ in range(3):
            c.call("DEBUG", "SLEEP", "0.15")  # cron turns run between these batches
            assert c.call("DBSIZE") == 1
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        for _ in range(200):
            c.call("DEBUG", "SLEEP", "0.05")
            if c.call("DBSIZE") == 0:
                break
        assert c.call("DBSIZE") == 0
        assert bytes(c.call("INFO", "stats")).count(b"expired_keys:1") == 1
    finally:
        s.stop()


# ---- SLOWLOG and LATENCY ----

def slow_args(entries):
    return [e[3] for e in entries]


def test_slowlog(pair):
    c = pair.conn()
    pair.same("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "5")
    pair.same("SLOWLOG", "RESET")
    pair.same("SLOWLOG", "LEN")  # the RESET itself is logged after it ran, as in Redis
    pair.same("ECHO", "a" * 200)
    pair.same("PING", "x")
    pair.same("WAIT", *(["0"] * 2))
    o, r = pair.both("SLOWLOG", "GET", "3")
    assert slow_args(o) == slow_args(r)
    assert all(isinstance(e[0], int) and isinstance(e[1], int) and isinstance(e[2], int) and isinstance(e[4], bytes)
               for e in o)
    c.call("CLIENT", "SETNAME", "tool")
    pair.ref.call("CLIENT", "SETNAME", "tool")
    pair.same("ECHO", "named")
    o, r = pair.both("SLOWLOG", "GET", "1")
    assert o[0][5] == r[0][5] == b"tool" and o[0][4].startswith(b"127.0.0.1:")
    for _ in range(8):
        pair.same("PING")
    pair.same("SLOWLOG", "LEN")
    o, r = pair.both("SLOWLOG", "GET", "-1")
    assert len(o) == len(r) == 5
    pair.same("CONFIG", "SET", "slowlog-log-slower-than", "-1")
    pair.same("SLOWLOG", "RESET")
    pair.same("PING")
    pair.same("SLOWLOG", "LEN")
    for argv in (["SLOWLOG", "GET", "x"], ["SLOWLOG", "GET", "-2"], ["SLOWLOG", "HELP"], ["SLOWLOG", "FOO"],
                 ["SLOWLOG", "LEN", "x"], ["SLOWLOG", "GET", "1", "2"], ["SLOWLOG"]):
        pair.same(*argv)


def test_slowlog_truncates_like_redis(pair):
    pair.same("CONFIG", "SET", "slowlog-log-slower-than", "0")
    pair.same("SLOWLOG", "RESET")
    pair.same("ECHO", "b" * 300)
    o, r = pair.both("SLOWLOG", "GET", "1")
    assert o[0][3] == r[0][3]
    pair.same("PING", *(["z"] * 1))
    pair.same("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_latency(pair):
    for argv in (["LATENCY", "LATEST"], ["LATENCY", "HISTORY", "command"], ["LATENCY", "RESET"],
                 ["LATENCY", "RESET", "command", "fork"], ["LATENCY", "DOCTOR"], ["LATENCY", "GRAPH", "command"],
                 ["LATENCY", "HELP"], ["LATENCY", "FOO"], ["LATENCY", "HISTORY"], ["LATENCY"]):
        pair.same(*argv)
    pair.same("CONFIG", "SET", "latency-monitor-threshold", "100")
    pair.same("LATENCY", "DOCTOR")
    pair.same("LATENCY", "HISTOGRAM", "no-such-command")


# ---- a tool's startup ----

def test_tool_startup_with_redis_py():
    """What redis-py's own test suite and a typical app send first, through redis-py's
    parser: CONFIG SET list-max-ziplist-size, CONFIG RESETSTAT, INFO all and friends."""
    s = Server(shards=1)
    try:
        for proto in (2, 3):
            r = redis.Redis(port=s.port, protocol=proto)
            assert r.config_set("list-max-ziplist-size", 128)
            assert r.config_resetstat()
            assert r.config_get("list-max-ziplist-size") == {b"list-max-ziplist-size": b"128"} or \
                r.config_get("list-max-ziplist-size") == {"list-max-ziplist-size": "128"}
            info = r.info("all")
            assert info["redis_version"].startswith("7.0") and info["role"] == "master"
            assert isinstance(info["used_cpu_user"], float) and isinstance(info["connected_clients"], int)
            assert r.info("commandstats")["cmdstat_config|get"]["calls"] >= 1
            r.set("k", "v")
            assert "db0" in r.info("keyspace") and r.info("keyspace")["db0"]["keys"] == 1
            assert r.slowlog_len() >= 0 and isinstance(r.slowlog_get(), list)
            assert r.object("encoding", "k") in (b"embstr", "embstr")
            assert r.role()[0] in (b"master", "master")
            r.close()
    finally:
        assert s.stop()[0] == 0


# ---- CLIENT ----

def test_client_subcommands(pair):
    for argv in (["CLIENT", "KILL", "1.2.3.4:5"], ["CLIENT", "KILL", "ID", "999999"], ["CLIENT", "KILL", "ID", "x"],
                 ["CLIENT", "KILL", "ID", "0"], ["CLIENT", "KILL", "TYPE", "foo"], ["CLIENT", "KILL", "TYPE", "pubsub"],
                 ["CLIENT", "KILL", "USER", "bob"], ["CLIENT", "KILL", "SKIPME", "maybe"], ["CLIENT", "KILL", "ID"],
                 ["CLIENT", "KILL", "ADDR", "1.1.1.1:1"], ["CLIENT", "KILL", "LADDR", "1.1.1.1:1"], ["CLIENT", "KILL"],
                 ["CLIENT", "KILL", "FOO", "bar"], ["CLIENT", "NO-EVICT", "on"], ["CLIENT", "NO-EVICT", "off"],
                 ["CLIENT", "NO-EVICT", "x"], ["CLIENT", "NO-EVICT"], ["CLIENT", "GETREDIR"],
                 ["CLIENT", "UNBLOCK", "5"], ["CLIENT", "UNBLOCK", "x"], ["CLIENT", "UNBLOCK", "5", "foo"],
                 ["CLIENT", "UNBLOCK", "5", "error"], ["CLIENT", "LIST", "ID", "x"], ["CLIENT", "LIST", "TYPE", "foo"],
                 ["CLIENT", "LIST", "TYPE", "pubsub"], ["CLIENT", "LIST", "ID", "999999"], ["CLIENT", "HELP"],
                 ["CLIENT", "FOO"]):
        pair.same(*argv)
    o, r = pair.both("CLIENT", "LIST", "TYPE", "normal")
    assert norm(o).count(b"\n") >= 1 and norm(r).count(b"\n") >= 1


def test_client_kill_closes_connections():
    for server in (Server(shards=1), Server(redis=True)):
        try:
            me, other, third = Conn(server.port), Conn(server.port), Conn(server.port)
            oid = other.call("CLIENT", "ID")
            assert me.call("CLIENT", "LIST", "ID", str(oid)).count(b"\n") == 1
            assert me.call("CLIENT", "KILL", "ID", str(oid)) == 1
            with pytest.raises((ConnectionError, OSError)):
                other.call("PING")
            addr = [l for l in bytes(third.call("CLIENT", "INFO")).decode().split(" ") if l.startswith("addr=")][0][5:]
            assert me.call("CLIENT", "KILL", addr) == Status("OK")
            with pytest.raises((ConnectionError, OSError)):
                third.call("PING")
            assert me.call("CLIENT", "KILL", "TYPE", "normal") == 0  # SKIPME yes by default
            assert me.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no") == 1  # itself, after the reply
            with pytest.raises((ConnectionError, OSError)):
                me.call("PING")
        finally:
            server.stop()


# ---- MEMORY and SHUTDOWN ----

def test_memory(pair):
    pair.same("SET", "mk", "v" * 100, key="mk")
    pair.same("RPUSH", "ml", "a", "b", key="ml")
    for argv, key in ((["MEMORY", "USAGE", "missing"], "missing"), (["MEMORY", "USAGE", "mk", "SAMPLES", "x"], "mk"),
                      (["MEMORY", "USAGE", "mk", "foo"], "mk"), (["MEMORY", "HELP"], None), (["MEMORY", "FOO"], None),
                      (["MEMORY", "PURGE"], None), (["MEMORY"], None), (["MEMORY", "DOCTOR", "x"], None)):
        pair.same(*argv, key=key)
    for k in ("mk", "ml"):
        o, r = pair.both("MEMORY", "USAGE", k, "SAMPLES", "0", key=k)
        assert isinstance(o, int) and isinstance(r, int) and o > 100 * (k == "mk")
    o, r = pair.both("MEMORY", "DOCTOR")
    assert type(o) == type(r)


def memory_stats(reply):
    if isinstance(reply, Map):
        return [(k, memory_stats(v) if isinstance(v, (Map, list)) else v) for k, v in reply]
    return [(reply[i], memory_stats(reply[i + 1]) if isinstance(reply[i + 1], list) else reply[i + 1])
            for i in range(0, len(reply), 2)]


def test_memory_stats(pair):
    """MEMORY STATS: Redis 7.0's field names in its order, the same value types, and
    values that agree with what the shard holds."""
    pair.same("SET", "ms", "v" * 1000, key="ms")
    pair.same("SET", "ms:ttl", "v", "EX", "100", key="ms:ttl")
    c = pair.conn("ms")
    o, r = c.call("MEMORY", "STATS"), pair.ref.call("MEMORY", "STATS")
    os_, rs = memory_stats(o), memory_stats(r)
    shared = pair.one_port and pair.shards > 1  # the answering shard may hold none of the keys: no db.0
    if shared:
        os_, rs = [x for x in os_ if x[0] != b"db.0"], [x for x in rs if x[0] != b"db.0"]
    assert [k for k, _ in os_] == [k for k, _ in rs]
    for (k, a), (_, b) in zip(os_, rs):
        if isinstance(a, list):
            assert [x for x, _ in a] == [x for x, _ in b], k
            assert all(isinstance(v, int) for _, v in a), k
        else:
            assert type(a) == type(b), f"{k}: ours {a!r} redis {b!r}"
    d = dict(os_)
    if not shared:
        assert d[b"keys.count"] == c.call("DBSIZE") >= 1
    assert d[b"peak.allocated"] >= d[b"total.allocated"] >= d[b"startup.allocated"] > 0
    assert d[b"overhead.total"] >= d[b"startup.allocated"] + d[b"clients.normal"]
    assert d[b"clients.normal"] > 0 and d[b"replication.backlog"] == 0
    assert d[b"total.allocated"] == d[b"overhead.total"] + d[b"dataset.bytes"] or d[b"dataset.bytes"] == 0
    if not shared:
        db0 = dict(d[b"db.0"])
        assert db0[b"overhead.hashtable.main"] > 0
        if pair.shards == 1:
            assert db0[b"overhead.hashtable.expires"] > 0  # the key with a TTL
    pair.same("MEMORY", "STATS", "x")
    pair.same("DEL", "ms", key="ms")
    pair.same("DEL", "ms:ttl", key="ms:ttl")


def test_memory_doctor():
    """MEMORY DOCTOR answers Redis's texts by Redis's rules: below 5 MB the "empty"
    report (both servers, same text); with more, the no-issue one or the list."""
    ours, ref = Server(shards=1), Server(redis=True)
    try:
        co, cr = Conn(ours.port), Conn(ref.port)
        o, r = co.call("MEMORY", "DOCTOR"), cr.call("MEMORY", "DOCTOR")
        if dict(memory_stats(co.call("MEMORY", "STATS")))[b"total.allocated"] < 5 << 20:
            assert norm(o) == norm(r) and b"empty" in norm(o)
        for i in range(8):
            assert co.call("SET", f"big:{i}", "x" * (1 << 20)) == Status("OK")
        text = norm(co.call("MEMORY", "DOCTOR"))
        assert text.startswith(b"Hi Sam, I can't find any memory issue") or \
            text.startswith(b"Sam, I detected a few issues in this Redis instance memory implants:")
        co.close()
        cr.close()
    finally:
        assert ours.stop()[0] == 0
        ref.stop()


def test_shutdown():
    s = Server(shards=2)
    c = Conn(s.port)
    assert c.call("SHUTDOWN", "ABORT") == Err("ERR No shutdown in progress.")
    assert c.call("SHUTDOWN", "FOO") == Err("ERR syntax error")
    c.send("SHUTDOWN", "NOSAVE")
    with pytest.raises((ConnectionError, OSError)):
        c.read()
    s.proc.wait(timeout=20)
    code, err = s.stop()
    assert code == 0, err
