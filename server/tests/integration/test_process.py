"""The process: flags and --help, one-line errors with exit code 2, the TOML config,
CPU pinning, clean shutdown on SIGTERM/SIGINT with clients connected, and a
valgrind run that must report no leaks and no errors."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from resp import SERVER, Conn, Server, port_free


def run(args, timeout=10):
    return subprocess.run([SERVER, *args], capture_output=True, text=True, timeout=timeout)


def test_help_documents_every_flag():
    r = run(["--help"])
    assert r.returncode == 0
    for flag in ("--shards", "--cpus", "--bind", "--announce", "--port", "--port-mode", "--durability", "--dir",
                 "--aof-rewrite-percentage", "--aof-rewrite-min-size", "--maxclients", "--loglevel", "--config"):
        assert flag in r.stdout, flag


@pytest.mark.parametrize("args", [
    ["--shards", "0"], ["--shards", "x"], ["--shards", "257"], ["--port", "70000"], ["--port", "-1"],
    ["--bind", "nonsense"], ["--announce", "1.2.3"], ["--cpus", "a"], ["--cpus", "3-1"], ["--cpus", "1,"],
    ["--port-mode", "both"], ["--durability", "sometimes"], ["--maxclients", "0"], ["--loglevel", "loud"],
    ["--nosuch", "1"], ["--shards"], ["stray"], ["--port", "65535", "--shards", "2"],
    ["--aof-rewrite-percentage", "-1"], ["--aof-rewrite-min-size", "12xb"], ["--aof-rewrite-min-size", "-5"],
])
def test_bad_values_exit_2_with_one_line(args):
    r = run(args)
    assert r.returncode == 2, (args, r)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("slotlane-server: "), r.stderr
    assert r.stdout == ""


def test_unusable_durability_dir_is_an_error():
    # the durability itself is tested in test_durability.py
    with tempfile.NamedTemporaryFile() as f:
        r = run(["--durability", "always", "--dir", f.name, "--port", "21999"])
        assert r.returncode == 1 and f"cannot use --dir {f.name}" in r.stderr, r


def test_busy_port_is_an_error():
    s = Server(shards=1)
    try:
        r = run(["--port", str(s.port)])
        assert r.returncode == 1 and "cannot listen" in r.stderr, r
    finally:
        assert s.stop()[0] == 0


def test_toml_config_and_flag_override():
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write('# slotlane-server settings\n[server]\nshards = 2\nport_mode = "per-shard"\n'
                'announce = "127.0.0.1"  # told to clients\nmaxclients = 77\nloglevel = \'warning\'\ncpus = [0]\n')
        path = f.name
    try:
        s = Server(shards=2, extra=["--config", path, "--maxclients", "88"])
        try:
            c = Conn(s.port + 1)
            assert c.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"88"]  # the flag wins
            assert len(c.call("CLUSTER", "SLOTS")) == 2  # shards from the file
        finally:
            assert s.stop()[0] == 0
        with open(path, "a") as f:
            f.write("bogus_key = 1\n")
        r = run(["--config", path])
        assert r.returncode == 2 and "unknown setting 'bogus_key'" in r.stderr and r.stderr.count("\n") == 1
    finally:
        os.unlink(path)


def test_cpu_pinning():
    ncpu = os.cpu_count()
    s = Server(shards=3, extra=["--cpus", f"0-{min(ncpu, 2) - 1}"])
    try:
        want = {str(i) for i in range(min(ncpu, 2))}
        # A shard thread pins itself when it starts; its port accepts connections (the
        # kernel's backlog) a moment before that, so look until the pins are there.
        deadline = time.monotonic() + 5
        while True:
            allowed = set()
            for tid in os.listdir(f"/proc/{s.pid}/task"):
                with open(f"/proc/{s.pid}/task/{tid}/status") as f:
                    for line in f:
                        if line.startswith("Cpus_allowed_list:"):
                            allowed.add(line.split()[1])
            # shard threads are pinned to single CPUs; the main thread is not
            singles = {a for a in allowed if "-" not in a and "," not in a}
            if singles == want or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert singles == want, allowed
    finally:
        assert s.stop()[0] == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_clean_shutdown_with_clients(sig):
    s = Server(shards=2)
    conns = [Conn(s.port + (i % 2)) for i in range(20)]
    for i, c in enumerate(conns):
        c.call("SET", f"{{{i % 2}}}k", "v" * 1000)
    # one client in the middle of a request, one with unread replies
    conns[0].send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc")
    conns[1].send_raw(b"PING\r\n" * 1000)
    code, err = s.stop(sig)
    assert code == 0, err
    assert "shutting down" in err or err == ""
    for c in conns:
        c.close()
    assert port_free(s.port) and port_free(s.port + 1)


@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind is not installed")
def test_valgrind_no_leaks_no_errors():
    log = tempfile.mktemp(suffix=".vg")
    import resp
    real = resp.SERVER
    wrapper = tempfile.mktemp(suffix=".sh")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible "
                f"--errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 --log-file={log} {real} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    resp.SERVER = wrapper
    try:
        s = Server(shards=2)
    finally:
        resp.SERVER = real
    try:
        a, b = Conn(s.port), Conn(s.port + 1)
        for c in (a, b):
            for i in range(200):
                c.call("SET", f"k{i}", "v")
                c.call("RPUSH", f"l{i}", "a", "b")
                c.call("HSET", f"h{i}", "f", "v")
                c.call("SADD", f"s{i}", "m")
                c.call("ZADD", f"z{i}", "1", "m")
                c.call("EXPIRE", f"k{i}", "100")
            c.send_raw(b"*1\r\n$-3\r\n")  # a protocol error closes the connection
        code, err = s.stop(timeout=120)
        with open(log) as f:
            report = f.read()
        assert code == 0, report[-3000:]
        assert "ERROR SUMMARY: 0 errors" in report, report[-3000:]
        assert "definitely lost" not in report or "definitely lost: 0 bytes" in report
    finally:
        s.stop(timeout=120)
        os.unlink(wrapper)
        if os.path.exists(log):
            os.unlink(log)


def test_announce_address_in_cluster_replies():
    s = Server(shards=2, extra=["--announce", "10.1.2.3"])
    try:
        c = Conn(s.port)
        slots = c.call("CLUSTER", "SLOTS")
        assert {node[0] for _, _, node in slots} == {b"10.1.2.3"}
        assert b"10.1.2.3:%d@" % (s.port + 1) in c.call("CLUSTER", "NODES")
        key = next(f"k{i}" for i in range(100) if c.call("GET", f"k{i}") != None and
                   str(c.call("GET", f"k{i}")).startswith("MOVED"))
        assert c.call("GET", key).endswith(f" 10.1.2.3:{s.port + 1}")
    finally:
        assert s.stop()[0] == 0
