"""What the server benchmarks (redis_benchmark.py, scripting.py, datatypes.py,
durability.py, streams.py) share: a free port, a pinned server started fresh, its
CPU time from /proc, a redis-benchmark run, the git state and a record file name
that never collides. One server per call; the caller stops it (stop())."""
import datetime
import json
import os
import socket
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVER = os.environ.get("SV_SERVER_BIN", os.path.join(ROOT, "build", "server", "slotlane-server"))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def load1():
    return float(open("/proc/loadavg").read().split()[0])


def free_port(first=21100):
    for p in range(first, 21999):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port")


def cpu_ns(pid):
    """(user, system) CPU nanoseconds of the process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return utime * 1_000_000_000 // CLK_TCK, stime * 1_000_000_000 // CLK_TCK


def start(kind, port, server_cpu, binary=None):
    """slotlane-server --shards 1 (kind "slotlane", or "baseline" with binary) or
    redis-server without persistence, pinned to server_cpu; (proc, command) once it
    accepts connections."""
    if kind in ("slotlane", "baseline"):
        exe = binary if kind == "baseline" else SERVER
        cmd = ["taskset", "-c", server_cpu, exe, "--shards", "1", "--port", str(port), "--cpus", server_cpu,
               "--loglevel", "warning"]
    else:
        cmd = ["taskset", "-c", server_cpu, "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--logfile", "/dev/null"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(250):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, cmd
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise RuntimeError(f"{kind} did not start")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def redis_benchmark(port, load_cpu, args, timeout=900):
    """redis-benchmark -p port ARGS --csv pinned to load_cpu: (requests/s of its first
    row, the command)."""
    cmd = ["taskset", "-c", load_cpu, "redis-benchmark", "-p", str(port), "--csv", *args]  # a command line last
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    rows = [l for l in out.stdout.splitlines() if l.startswith('"') and not l.startswith('"test"')]
    return float(rows[0].split(",")[1].strip('"')), cmd


def git_state():
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "server"], capture_output=True,
                                    text=True).stdout.strip())
        return {"commit": commit if len(commit) == 40 else "unknown", "dirty": dirty}
    except OSError:
        return {"commit": "unknown", "dirty": None}


def write_record(record, name, host, finished, first=None):
    """Writes the record to bench/records/<host>-<date>-<HHMMSS>-<name>.json (first, when
    given and free, before that) without ever replacing one: through a finished
    temporary file and a hard link, so no reader sees half a file. Returns the path."""
    records = os.path.join(ROOT, "bench", "records")
    os.makedirs(records, exist_ok=True)
    tmp = os.path.join(records, f".{host}-{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    candidates = [first] if first else []
    t = finished
    for _ in range(120):
        candidates.append(os.path.join(records, f"{host}-{t.strftime('%Y-%m-%d-%H%M%S')}-{name}.json"))
        t += datetime.timedelta(seconds=1)
    try:
        for path in candidates:
            try:
                os.link(tmp, path)
                return path
            except FileExistsError:
                continue
        raise RuntimeError("no free record name")
    finally:
        os.unlink(tmp)
