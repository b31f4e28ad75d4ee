#!/usr/bin/env python3
"""csharp/bench-callgrind/record.py NAME=DLL:DESC... — runs run.sh on each build's Slotlane.Client.dll
(in the order given) and writes bench/records/<host>-<date>-<time>-callgrind-queue-csharp.json (schema
slotlane.bench.callgrind-queue/1, bench/records/README.md). Instruction counts do not depend on the load."""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    builds = [a.split("=", 1) for a in sys.argv[1:]]
    if not builds or any(len(b) != 2 or ":" not in b[1] for b in builds):
        raise SystemExit(__doc__)
    rows = []
    for name, spec in builds:
        dll, desc = spec.split(":", 1)
        out = subprocess.run(["bash", os.path.join(HERE, "run.sh"), dll], check=True, capture_output=True, text=True).stdout
        for line in out.split("\n"):
            w = line.split()
            if len(w) == 5:
                op, _, a, b, n = w
                rows.append({"build": name, "desc": desc, "op": op, "ir_0": int(a), "ir_n": int(b), "n": int(n),
                             "ir_per_command": (int(b) - int(a)) / int(n)})
                print("%-6s %s %.1f Ir/command" % (name, op, rows[-1]["ir_per_command"]))
    mono = subprocess.run(["mono", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    rec = {"schema": "slotlane.bench.callgrind-queue/1", "benchmark": "callgrind-queue", "tool": "csharp/bench-callgrind/record.py",
           "lang": "csharp", "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "metric": "callgrind instructions (Ir) per pipeline command queued (GET key / SET key value, no server), (Ir(N) - Ir(0)) / N",
           "mono": mono, "command": ["csharp/bench-callgrind/record.py"] + sys.argv[1:], "rows": rows}
    d = os.path.join(ROOT, "bench", "records")
    while True:
        path = os.path.join(d, "%s-%s-callgrind-queue-csharp.json" % (socket.gethostname(), time.strftime("%Y-%m-%d-%H%M%S", time.gmtime())))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            time.sleep(1)
    with os.fdopen(fd, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print("record", path)


if __name__ == "__main__":
    main()
