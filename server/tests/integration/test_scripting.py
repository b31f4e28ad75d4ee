"""Scripting beyond the differential test's fixed cases: the busy-script rule
(SCRIPT KILL, FUNCTION KILL, -BUSY, -UNKILLABLE and SHUTDOWN NOSAVE, compared with
redis-server 7.0's replies), Redis Cluster's rules for scripts at 4 shards,
FUNCTION/SCRIPT reaching every shard in one-port mode, and durability (a script's
effects in the log, function libraries surviving a restart and a rewrite).

Every verdict comes from replies: a busy script is detected by polling another
connection until it answers -BUSY (it cannot answer before the threshold, and
answers BUSY after it), never by waiting for a time to pass."""
import os
import shutil
import socket

import pytest

from resp import Conn, Err, Server, encode, keys_per_shard, shard_of

LOOP = "local i = 0 while true do i = i + 1 end"
WRITE_LOOP = "redis.call('set', KEYS[1], 'v') while true do end"
LIB = ("#!lua name=spin\n"
       "redis.register_function('spin', function() while true do end end)\n"
       "redis.register_function('spinw', function(keys) redis.call('set', keys[1], 'x') while true do end end)\n"
       "redis.register_function('get', function(keys) return redis.call('get', keys[1]) end)\n")


def servers():
    return [pytest.param(False, id="slotlane"), pytest.param(True, id="redis")]


def wait_busy(conn):
    """Sends PING until the reply is -BUSY; returns that error."""
    for _ in range(100000):
        r = conn.call("PING")
        if isinstance(r, Err):
            assert r.startswith("BUSY "), r
            return r
        assert r == "PONG"
    raise AssertionError("never busy")


def start(redis):
    s = Server(redis=redis)
    c = Conn(s.port)
    assert c.call("CONFIG", "SET", "busy-reply-threshold", "50") == "OK"
    return s, c


def script_kill_replies(redis):
    """What a client sees around a looping EVAL that SCRIPT KILL stops."""
    s, runner = start(redis)
    other = Conn(s.port)
    try:
        runner.send("EVAL", LOOP, "0")
        busy = wait_busy(other)
        wrong_kill = other.call("FUNCTION", "KILL")
        kill = other.call("SCRIPT", "KILL")
        killed = runner.read()
        after = [other.call("PING"), runner.call("PING"), other.call("SCRIPT", "KILL")]
        return [busy, wrong_kill, kill, killed, *after]
    finally:
        code, err = s.stop()
        assert code == 0, err


def test_script_kill_stops_a_loop_while_the_shard_answers_busy():
    ours, ref = script_kill_replies(False), script_kill_replies(True)
    assert ours == ref
    assert ours[0] == Err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
    assert ours[2] == "OK"
    assert ours[3].startswith("ERR Script killed by user with SCRIPT KILL...")


def function_kill_replies(redis):
    s, runner = start(redis)
    other = Conn(s.port)
    try:
        assert runner.call("FUNCTION", "LOAD", LIB) == b"spin"
        runner.send("FCALL", "spin", "0")
        busy = wait_busy(other)
        stats = other.call("FUNCTION", "STATS")  # allowed while busy: shows the running function
        running = stats[1]
        assert running[0:2] == [b"name", b"spin"] and running[2:4] == [b"command", [b"FCALL", b"spin", b"0"]], stats
        assert running[4] == b"duration_ms" and running[5] >= 50, stats
        stats[1] = running[:4]  # the duration differs between the servers
        wrong_kill = other.call("SCRIPT", "KILL")
        kill = other.call("FUNCTION", "KILL")
        killed = runner.read()
        return [busy, stats, wrong_kill, kill, killed, runner.call("FCALL", "get", "1", "nokey"),
                other.call("FUNCTION", "STATS")[1]]
    finally:
        code, err = s.stop()
        assert code == 0, err


def test_function_kill_stops_a_looping_function():
    ours, ref = function_kill_replies(False), function_kill_replies(True)
    assert ours == ref
    assert ours[3] == "OK"


def unkillable_replies(redis, fcall):
    s, runner = start(redis)
    other = Conn(s.port)
    if fcall:
        assert runner.call("FUNCTION", "LOAD", LIB) == b"spin"
        runner.send("FCALL", "spinw", "1", "k")
    else:
        runner.send("EVAL", WRITE_LOOP, "1", "k")
    busy = wait_busy(other)
    kill = other.call("FUNCTION" if fcall else "SCRIPT", "KILL")
    other.send("SHUTDOWN", "NOSAVE")
    # the process ends: both connections are closed, no reply to the script
    closed = []
    for c in (other, runner):
        try:
            closed.append(c.read())
        except (ConnectionError, OSError, ValueError):
            closed.append("closed")
    code = s.proc.wait(timeout=30)
    s.stop()
    return [busy, kill, closed, code]


@pytest.mark.parametrize("fcall", [False, True], ids=["eval", "fcall"])
def test_a_script_that_wrote_cannot_be_killed_and_needs_shutdown_nosave(fcall):
    ours, ref = unkillable_replies(False, fcall), unkillable_replies(True, fcall)
    assert ours[:3] == ref[:3]
    assert ours[1].startswith("UNKILLABLE Sorry the script already executed write commands")
    assert ours[2] == ["closed", "closed"]
    assert ours[3] == 0


def test_busy_threshold_is_a_setting():
    s = Server()
    try:
        c = Conn(s.port)
        assert c.call("CONFIG", "GET", "busy-reply-threshold") == [b"busy-reply-threshold", b"5000"]
        assert c.call("CONFIG", "SET", "lua-time-limit", "200") == "OK"
        assert c.call("CONFIG", "GET", "busy-reply-threshold") == [b"busy-reply-threshold", b"200"]
        assert isinstance(c.call("CONFIG", "SET", "busy-reply-threshold", "x"), Err)
        # a script shorter than the threshold never makes anyone busy
        assert c.call("EVAL", "local n = 0 for i = 1, 300000 do n = n + i end return n", "0") == 45000150000
    finally:
        code, err = s.stop()
    assert code == 0, err


# ---- cluster rules (4 shards, per-shard ports, MOVED as Redis Cluster) ----

def conn_of(srv, key):
    return Conn(srv.port + shard_of(key, srv.shards))


def test_cluster_rules_for_scripts():
    s = Server(shards=4)
    try:
        k0, k1 = keys_per_shard("sc", 1, 4)[:2]       # on shards 0 and 1
        c0 = Conn(s.port)
        # declared keys route like any command: another shard's key -> MOVED
        r = c0.call("EVAL", "return 1", "1", k1)
        assert isinstance(r, Err) and r.startswith("MOVED "), r
        assert c0.call("EVAL", "return 1", "2", "{a}1", "{b}1").startswith("CROSSSLOT")
        # an undeclared key of another shard inside the script
        r = c0.call("EVAL", "return redis.call('get', ARGV[1])", "0", k1)
        assert r.startswith("ERR Script attempted to access a non local key in a cluster node script: "), r
        # keys of another slot on the same shard: only with allow-cross-slot-keys
        a, b = "{x}1", None
        for i in range(10000):
            cand = f"{{y{i}}}1"
            if shard_of(cand, 4) == shard_of(a, 4) and shard_of(cand, 4) >= 0:
                b = cand
                break
        ca = conn_of(s, a)
        r = ca.call("EVAL", "redis.call('set', KEYS[1], 1) return redis.call('set', ARGV[1], 2)", "1", a, b)
        assert r.startswith("ERR Script attempted to access keys that do not hash to the same slot"), r
        ok = ca.call("EVAL", "#!lua flags=allow-cross-slot-keys\n"
                     "redis.call('set', KEYS[1], 1) return redis.call('set', ARGV[1], 2)", "1", a, b)
        assert ok == "OK"
        assert ca.call("GET", b) == b"2"
        r = ca.call("EVAL", "#!lua flags=no-cluster\nreturn 1", "0")
        assert r == Err("ERR Can not run script on cluster, 'no-cluster' flag is set.")
        # the script cache and functions are per node, as in Redis Cluster
        sha = c0.call("SCRIPT", "LOAD", "return 'x'")
        c1 = Conn(s.port + 1)
        assert c1.call("EVALSHA", sha, "0").startswith("NOSCRIPT")
        assert c0.call("EVALSHA", sha, "0") == b"x"
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_one_port_reaches_every_shard():
    s = Server(shards=4, extra=["--port-mode", "one-port"])
    try:
        keys = keys_per_shard("op", 1, 4)
        c = Conn(s.port)
        assert c.call("FUNCTION", "LOAD", LIB) == b"spin"
        sha = c.call("SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])")
        for k in keys:  # each key's owner runs it, whichever shard the connection is on
            assert c.call("EVALSHA", sha, "1", k) == 1
            assert c.call("FCALL", "get", "1", k) == b"1"
        stats = c.call("FUNCTION", "STATS")
        assert stats[3][1][1] == 1  # libraries_count (this shard's view)
        assert c.call("FUNCTION", "DELETE", "spin") == "OK"
        for k in keys:
            assert c.call("FCALL", "get", "1", k) == Err("ERR Function not found")
        assert c.call("SCRIPT", "FLUSH") == "OK"
        for k in keys:
            assert c.call("EVALSHA", sha, "1", k).startswith("NOSCRIPT")
        # keys on several shards in one script: CROSSSLOT, as a multi-key command
        assert c.call("EVAL", "return 1", "2", keys[0], keys[1]).startswith("CROSSSLOT")
    finally:
        code, err = s.stop()
    assert code == 0, err


# ---- durability ----

@pytest.fixture
def d(tmp_path):
    p = tmp_path / "aof"
    yield str(p)
    shutil.rmtree(str(tmp_path), ignore_errors=True)


def durable(dirpath, shards=1):
    return Server(shards=shards, extra=["--durability", "always", "--dir", dirpath])


def info_persistence(port):
    raw = Conn(port).call("INFO", "persistence").decode()
    return dict(line.split(":", 1) for line in raw.splitlines() if ":" in line)


def test_script_effects_and_functions_survive_restart_and_rewrite(d):
    s = durable(d)
    try:
        c = Conn(s.port)
        assert c.call("FUNCTION", "LOAD", LIB) == b"spin"
        assert c.call("EVAL", "redis.call('set', KEYS[1], ARGV[1]) return redis.call('incr', KEYS[2])",
                      "2", "a", "n", "va") == 1
        assert c.call("EVAL", "return redis.call('lpush', KEYS[1], unpack(ARGV))", "1", "l", "x", "y") == 2
    finally:
        assert s.stop()[0] == 0
    log = open(os.path.join(d, "shard-0-of-1.aof"), "rb").read()
    assert b"EVAL" not in log.upper()  # the effects, not the script
    # the two writes of the first script are one unit, framed as EXEC's; a script
    # with one write needs no frame
    unit = encode(["MULTI"]) + encode(["set", "a", "va"]) + encode(["incr", "n"]) + encode(["EXEC"])
    assert unit in log, log
    assert encode(["lpush", "l", "x", "y"]) in log and log.count(encode(["MULTI"])) == 1
    s = durable(d)
    try:
        c = Conn(s.port)
        assert c.call("GET", "a") == b"va" and c.call("GET", "n") == b"1"
        assert c.call("FCALL", "get", "1", "a") == b"va"
        assert c.call("BGREWRITEAOF").startswith("Background")
        for _ in range(100000):
            i = info_persistence(s.port)
            if int(i["aof_rewrites"]) >= 1 and i["aof_rewrite_in_progress"] == "0":
                break
        assert c.call("FUNCTION", "LOAD", "#!lua name=late\nredis.register_function('late', function() return 7 end)") \
            == b"late"
    finally:
        assert s.stop()[0] == 0
    s = durable(d)
    try:
        c = Conn(s.port)
        assert c.call("FCALL", "get", "1", "a") == b"va"  # from the rewritten log
        assert c.call("FCALL", "late", "0") == 7          # logged after the rewrite
        assert c.call("LRANGE", "l", "0", "-1") == [b"y", b"x"]
    finally:
        assert s.stop()[0] == 0


def test_bad_input_never_crashes():
    s = Server()
    try:
        c = Conn(s.port)
        for argv in (["EVAL"], ["EVAL", "return 1"], ["EVALSHA", "x"], ["FCALL", "f"], ["SCRIPT"],
                     ["FUNCTION"], ["FUNCTION", "LOAD"], ["FUNCTION", "RESTORE", ""], ["EVAL", "\x00", "0"],
                     ["EVAL", "return string.rep('x', 1e6)", "0"],
                     ["EVAL", "return cmsgpack.unpack(string.rep('\\145', 100000))", "0"],
                     ["SCRIPT", "EXISTS"], ["SHUTDOWN", "bogus"]):
            r = c.call(*argv)
            assert isinstance(r, (Err, bytes, list)), (argv, r)
        assert c.call("PING") == "PONG"
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_busy_replies_with_a_log_leave_the_script_unit_whole(d):
    """With durability on, a script that wrote and then runs past the threshold keeps
    its log unit open: the busy mode's replies must not write it half (they
    acknowledge nothing). After the script ends its writes are logged as one unit
    and a restart has them."""
    s = durable(d)
    try:
        runner, other = Conn(s.port, timeout=120), Conn(s.port)
        assert runner.call("CONFIG", "SET", "busy-reply-threshold", "20") == "OK"
        # one write: its unit needs no MULTI frame, which the unit's end removes from
        # the log buffer (a half-written unit would leave a MULTI without EXEC, and
        # the replay would drop the SET as a torn unit)
        runner.send("EVAL", "redis.call('set', KEYS[1], 'v') "
                    "local n, i = tonumber(ARGV[1]), 0 while i < n do i = i + 1 end return i", "1", "bk", "5000000")
        busy = wait_busy(other)
        assert other.call("SCRIPT", "KILL").startswith("UNKILLABLE"), busy
        assert runner.read() == 5000000
        assert other.call("GET", "bk") == b"v"
    finally:
        assert s.stop()[0] == 0
    log = open(os.path.join(d, "shard-0-of-1.aof"), "rb").read()
    assert encode(["set", "bk", "v"]) in log and encode(["MULTI"]) not in log
    s = durable(d)
    try:
        c = Conn(s.port)
        assert c.call("GET", "bk") == b"v"
    finally:
        assert s.stop()[0] == 0


def conns_per_shard(port, shards):
    """One connection on each shard of a one-port server (the kernel spreads them)."""
    import re
    got = {}
    for _ in range(400):
        c = Conn(port)
        i = int(re.search(rb"shard_index:(\d+)", bytes(c.call("INFO", "server"))).group(1))
        if i in got:
            c.close()
        else:
            got[i] = c
        if len(got) == shards:
            return [got[i] for i in range(shards)]
    raise AssertionError(f"connections landed on shards {sorted(got)} only")


def forwarded_busy(conn):
    """INFO forwarded_busy_replies (every shard's), asked on a shard that is not busy."""
    info = bytes(conn.call("INFO", "stats"))
    return int(info.split(b"forwarded_busy_replies:")[1].split(b"\r\n")[0])


@pytest.mark.parametrize("fcall", [False, True], ids=["eval", "fcall"])
@pytest.mark.parametrize("shards", [2, 4])
def test_one_port_busy_shard_answers_forwarded_requests_and_any_port_kills(shards, fcall):
    """One-port mode: a looping script on shard 1 (its key's owner). A request for a
    key of that shard from a connection on shard 0 is forwarded there and gets -BUSY
    as a direct client does (INFO forwarded_busy_replies counts it), a keyless one
    stays on shard 0 and runs; the wrong KILL gets the busy shard's BUSY and the right
    one, sent through a connection on shard 0, stops the script there."""
    s = Server(shards=shards, extra=["--port-mode", "one-port"])
    try:
        conns = conns_per_shard(s.port, shards)
        here, there = conns[0], conns[1]
        k1 = next(k for k in keys_per_shard("bz", 1, shards) if shard_of(k, shards) == 1)
        k0 = next(k for k in keys_per_shard("bz", 1, shards) if shard_of(k, shards) == 0)
        assert here.call("SET", k1, "v") == "OK"
        assert here.call("CONFIG", "SET", "busy-reply-threshold", "50") == "OK"
        runner = Conn(s.port)
        if fcall:
            assert runner.call("FUNCTION", "LOAD", LIB) == b"spin"
            runner.send("FCALL", "spin", "1", k1)
            right, wrong = "FUNCTION", "SCRIPT"
        else:
            runner.send("EVAL", LOOP, "1", k1)
            right, wrong = "SCRIPT", "FUNCTION"
        wait_busy(there)  # shard 1's own client: -BUSY once the threshold passed
        before = forwarded_busy(here)
        busy = here.call("GET", k1)  # forwarded from shard 0 to the busy shard
        assert busy == Err(f"BUSY Redis is busy running a script. You can only call {right} KILL or SHUTDOWN NOSAVE."), busy
        assert forwarded_busy(here) == before + 1
        assert here.call("SET", k0, "x") == "OK"  # shard 0 is not busy
        assert here.call(wrong, "KILL") == Err(
            f"BUSY Redis is busy running a script. You can only call {right} KILL or SHUTDOWN NOSAVE.")
        assert here.call(right, "KILL") == "OK"
        killed = runner.read()
        assert isinstance(killed, Err) and "Script killed by user with SCRIPT KILL..." in killed, killed
        assert here.call("GET", k1) == b"v"
        assert here.call(right, "KILL") == Err("NOTBUSY No scripts in execution right now.")
    finally:
        code, err = s.stop()
    assert code == 0, err


def test_one_port_busy_shard_defers_steps_and_its_own_clients_requests():
    """While shard 1 is busy: a cross-shard RENAME whose destination is there waits
    for the script instead of failing halfway (its steps must run), and the script's
    own client's next request (pipelined behind the EVAL) runs after it, in order."""
    s = Server(shards=2, extra=["--port-mode", "one-port"])
    try:
        conns = conns_per_shard(s.port, 2)
        here = conns[0]
        k1 = next(k for k in keys_per_shard("bd", 1, 2) if shard_of(k, 2) == 1)
        k0 = next(k for k in keys_per_shard("bd", 1, 2) if shard_of(k, 2) == 0)
        assert here.call("SET", k0, "moved") == "OK"
        assert here.call("CONFIG", "SET", "busy-reply-threshold", "50") == "OK"
        other = conns_per_shard(s.port, 2)[0]  # a second connection on shard 0
        runner = conns[0]
        runner.send("EVAL", LOOP, "1", k1)
        runner.send("GET", k1)
        wait_busy(conns[1])
        other.send("RENAME", k0, k1)  # take on shard 0, restore on the busy shard 1
        assert conns[1].call("SCRIPT", "KILL") == "OK"
        assert "Script killed" in runner.read()
        # the GET pipelined behind the script runs after it, never -BUSY; the RENAME's
        # restore step waited for the script too, and which of the two the shard takes
        # first once the script is killed is not ordered: before it, k1 is gone (nil);
        # after it, k1 holds the moved value
        got = runner.read()
        assert got is None or got == b"moved", got
        assert other.read() == "OK"
        assert other.call("GET", k1) == b"moved"
        assert other.call("EXISTS", k0) == 0
    finally:
        code, err = s.stop()
    assert code == 0, err
