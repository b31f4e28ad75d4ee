#!/usr/bin/env python3
"""Measures what misbehaving clients can make slotlane-server hold (server/README.md,
Robustness): the cases of server/tests/integration/test_robustness.py, with their
figures recorded instead of only bounded. For each client: bytes sent before the
server dropped it, time, the server's peak RSS growth (VmHWM after resetting it
through /proc/PID/clear_refs) and its RSS once the client is gone. Then 10,000
connections opened and closed: fd count and RSS before and after.

Writes bench/records/<host>-<YYYY-MM-DD>-<HHMMSS>-server-limits.json
(schema slotlane.bench.server-limits/1, bench/records/README.md).

Usage: make build && python3 server/bench/limits.py
"""
import datetime
import json
import os
import platform
import random
import socket
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "server", "tests", "integration"))
import resp  # noqa: E402
from resp import Conn, Server  # noqa: E402
import test_robustness as T  # noqa: E402  (the same cases and helpers as the test)

MB = T.MB


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def garbage_cases():
    def bulk_then_junk():
        yield b"*1\r\n$536870912\r\n"
        yield from T._repeat(b"x" * MB)

    def empty_args():
        yield b"*2147483647\r\n"
        yield from T._repeat(b"$0\r\n\r\n" * (MB // 6))

    rng = random.Random(7)
    return [("512 MB bulk then junk", bulk_then_junk()),
            ("random bytes", (rng.randbytes(MB) for _ in iter(int, 1))),
            ("endless inline line", T._repeat(b"x" * MB)),
            ("2^31-1 empty arguments", empty_args())]


def measure_garbage():
    server = Server(shards=1)
    rows = []
    try:
        pid = server.pid
        good = Conn(server.port)
        base = T.proc_status(pid, "VmRSS")
        for name, gen in garbage_cases():
            reset_peak(pid)
            before = T.proc_status(pid, "VmRSS")
            sent, closed, secs = T._stream(server.port, gen, 1024 * MB, lambda: good.call("PING"))
            T.wait_for(lambda: T.info_int(good, "connected_clients") == 1, what="disconnect")
            time.sleep(0.2)
            rows.append({"case": name, "shards": 1, "sent_bytes": sent, "dropped": closed, "seconds": round(secs, 3),
                         "peak_rss_growth_bytes": T.proc_status(pid, "VmHWM") - before,
                         "rss_after_minus_baseline_bytes": T.proc_status(pid, "VmRSS") - base})
        good.close()
    finally:
        server.stop()
    return rows


def measure_output_limit(limit):
    server = Server(shards=2, extra=["--output-limit", str(limit), "--misrouted", "forward"])
    rows = []
    try:
        pid = server.pid
        good = Conn(server.port)
        value = b"v" * (256 * 1024)
        local = T.key_on_shard(0, 2, "local").encode()
        remote = T.key_on_shard(1, 2, "remote").encode()
        good.call("SET", local, value)
        good.call("SET", remote, value)
        good.call("SADD", "{s}set", "m")
        good.call("HSET", "{s}hash", "f", "v")
        cases = [("4000 pipelined GETs of 256 KB, local", b"GET %s\r\n" % local * 4000),
                 ("4000 pipelined GETs of 256 KB, forwarded", b"GET %s\r\n" % remote * 4000),
                 ("4000 local GETs behind one forwarded GET", b"GET %s\r\n" % remote + b"GET %s\r\n" % local * 4000),
                 ("SRANDMEMBER key -500000000", b"SRANDMEMBER {s}set -500000000\r\n"),
                 ("HRANDFIELD key -500000000 WITHVALUES", b"HRANDFIELD {s}hash -500000000 WITHVALUES\r\n")]
        for name, request in cases:
            reset_peak(pid)
            before = T.proc_status(pid, "VmRSS")
            t0 = time.time()
            T._burst_without_reading(server.port, request, good, lambda: good.call("PING"))
            rows.append({"case": name, "shards": 2, "output_limit": limit, "request_bytes": len(request),
                         "seconds": round(time.time() - t0, 3),
                         "peak_rss_growth_bytes": T.proc_status(pid, "VmHWM") - before})
        good.close()
    finally:
        server.stop()
    return rows


def measure_connections(total=10000, warmup=5000, batch=500, shards=3):
    T._raise_fd_limit(4096)
    server = Server(shards=shards, extra=["--misrouted", "forward", "--maxclients", "2000"])
    try:
        pid = server.pid
        ports = [server.port + i for i in range(shards)]
        watch = [Conn(p) for p in ports]
        remote_keys = {p: T.key_on_shard((i + 1) % shards, shards, "rk").encode() for i, p in enumerate(ports)}
        for k in remote_keys.values():
            watch[0].call("SET", k, "1")
        rng = random.Random(3)

        def settled():
            return all(T.info_int(w, "connected_clients") == 1 for w in watch)
        start_rss = T.proc_status(pid, "VmRSS")
        for _ in range(warmup // batch):
            T._batch(ports, batch, remote_keys, rng)
        T.wait_for(settled, what="baseline")
        fds0, rss0 = T.nfds(pid), T.proc_status(pid, "VmRSS")
        t0 = time.time()
        for _ in range(total // batch):
            T._batch(ports, batch, remote_keys, rng)
        T.wait_for(settled, what="baseline")
        secs = time.time() - t0
        row = {"shards": shards, "connections": total, "warmup_connections": warmup, "batch": batch,
               "seconds": round(secs, 3), "rss_at_start_bytes": start_rss, "fds_before": fds0,
               "fds_after": T.nfds(pid), "rss_before_bytes": rss0, "rss_after_bytes": T.proc_status(pid, "VmRSS"),
               "connected_clients_after": [T.info_int(w, "connected_clients") for w in watch]}
        for w in watch:
            w.close()
    finally:
        server.stop()
    return row


def git_state():
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "server"], capture_output=True,
                                    text=True).stdout.strip())
        return {"commit": commit or "unknown", "dirty": dirty}
    except OSError:
        return {"commit": "unknown", "dirty": None}


def write_record(record, host, finished):
    """A new file, never replacing one: through a finished temporary file and a hard link."""
    records = os.path.join(ROOT, "bench", "records")
    os.makedirs(records, exist_ok=True)
    tmp = os.path.join(records, f".{host}-{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    try:
        t = finished
        for _ in range(120):
            name = os.path.join(records, f"{host}-{t.strftime('%Y-%m-%d-%H%M%S')}-server-limits.json")
            try:
                os.link(tmp, name)
                return name
            except FileExistsError:
                t += datetime.timedelta(seconds=1)
        raise RuntimeError("no free record name")
    finally:
        os.unlink(tmp)


def main():
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    garbage = measure_garbage()
    output = measure_output_limit(4 * MB)
    conns = measure_connections()
    finished = datetime.datetime.now(datetime.timezone.utc)
    host = socket.gethostname()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    record = {
        "schema": "slotlane.bench.server-limits/1", "benchmark": "server-limits", "tool": "server/bench/limits.py",
        "started_at": started.isoformat(timespec="seconds"), "finished_at": finished.isoformat(timespec="seconds"),
        "machine": {"hostname": host, "cpu_model": cpu, "cores": os.cpu_count(), "kernel": platform.release()},
        "load_avg_start": load_start, "load_avg_end": os.getloadavg(), "git": git_state(),
        "command": sys.argv, "server_binary": os.path.relpath(resp.SERVER, ROOT),
        "garbage": garbage, "output_limit": output, "connections": conns,
    }
    path = write_record(record, host, finished)
    for r in garbage:
        print(f"{r['case']:<28} sent {r['sent_bytes'] / MB:7.0f} MB in {r['seconds']:5.2f} s, dropped={r['dropped']}, "
              f"peak RSS +{r['peak_rss_growth_bytes'] / MB:.0f} MB, after +{r['rss_after_minus_baseline_bytes'] / MB:.1f} MB")
    for r in output:
        print(f"{r['case']:<44} peak RSS +{r['peak_rss_growth_bytes'] / MB:.1f} MB")
    c = conns
    print(f"{c['connections']} connections in {c['seconds']} s: fds {c['fds_before']} -> {c['fds_after']}, "
          f"RSS {(c['rss_after_bytes'] - c['rss_before_bytes']) / MB:+.2f} MB")
    print("load average", load_start, "->", os.getloadavg())
    print("record:", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
