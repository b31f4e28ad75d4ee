"""The tests' loopback ports: a block of the python range of ci/lib.sh's port map (the one
place ranges are assigned), chosen as the Go tests do — the first block whose lock file
this process can hold (flock, until it exits) and whose ports all refuse a connection —
so two checkouts' ``pytest`` runs on one machine never share a port."""
import fcntl
import os
import re
import socket
import tempfile
from typing import IO, Optional, Tuple

BLOCK_SIZE = 100  # conftest.py's layout uses base+0..+85; +99 is never listened on


def suite_range(root: str, suite: str) -> Tuple[int, int]:
    """(lo, hi) of suite in ci/lib.sh's port map."""
    with open(os.path.join(root, "ci", "lib.sh")) as f:
        m = re.search(r"^\s*%s\)\s+echo \"(\d+) (\d+)\"" % re.escape(suite), f.read(), re.M)
    if not m:
        raise RuntimeError("ci/lib.sh has no port range for %r" % suite)
    return int(m.group(1)), int(m.group(2))


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def choose_block(lo: int, hi: int, size: int, name: str,
                 lock_dir: Optional[str] = None) -> Tuple[int, IO[bytes]]:
    """The first base in [lo, hi] (steps of size) whose lock file
    ``slotlane-NAME-ports-BASE.lock`` this process could lock and whose size ports are all
    free, and the open lock file: keep it open for as long as the ports are used (closing
    it, or the process's exit, releases the block)."""
    d = lock_dir or tempfile.gettempdir()
    for base in range(lo, hi - size + 2, size):
        f = open(os.path.join(d, "slotlane-%s-ports-%d.lock" % (name, base)), "ab")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another run holds this block
            f.close()
            continue
        if any(port_open(p) for p in range(base, base + size)):
            f.close()
            continue
        return base, f
    raise RuntimeError("no block of %d free ports in %d-%d" % (size, lo, hi))
