#!/usr/bin/env python3
"""bench/pubsub/run.py — what receiving a published message costs a subscriber: slotlane's
pub/sub in each binding beside the ecosystem's client, against the same redis-server, in
one run.

  flock /tmp/suite-bench.lock python3 bench/pubsub/run.py [--langs python,rust,go,node,java]
      [--subs 1,16] [--sizes 32,1024] [--messages 200000] [--rounds 3] [--records bench/records]

Clients (slotlane beside the ecosystem's): python slotlane / redis-py (with hiredis),
bench/pubsub/sub_python.py; rust slotlane::PubSub / redis-rs (`redis` crate, sync
Connection::as_pubsub), rust/bench/examples/pubsub_sub.rs; go slotlane / go-redis,
go/bench/cmd/pubsub-sub; node slotlane / ioredis, bench/pubsub/sub_node.js; java
io.slotlane.Subscriber (poll) / Jedis (JedisPubSub), java/bench/src/.../PubSubSub.java (one
JVM per subscriber: -Xms256m -Xmx256m -XX:+UseSerialGC; its CPU is the whole JVM's from
/proc/self/stat, 10 ms ticks, JIT and GC included). Build steps (prepare(), before the
server starts): the publisher's venv build/python-venv when missing (pip install python/
redis hiredis); rust: cargo build --release --example pubsub_sub in rust/bench; go: go build
of the subscriber into build/bench-pubsub/; java: Maven's `bench` profile (mvn -Pbench
verify, which builds the native library too) runs PubSubSub --write-classpath, and the
subscribers then start as plain `java` processes on that class path.

One publisher (slotlane's Python client, PUBLISH pipelined 16 at a time, as fast as it goes)
and 1 or 16 subscriber processes of one client; every subscriber checks every message (its
sequence number and length). Debian's redis-server (port 26800, the bench-pubsub range of
ci/lib.sh; client-output-buffer-limit for pubsub off, so a slow subscriber is not
disconnected; slotlane's subscribers get max_queue_bytes 1 GiB for the same reason: the bench
checks that nothing is lost, and a subscriber whose queue overflows fails its row) and the
publisher run on CPU 1, the subscribers on CPU 0. Rounds are
interleaved: in round r every client of a language runs once, the order alternating by
round, so a ratio is measured under the same load. Figures per row: messages received per
second (all subscribers) and the subscribers' CPU per message received (user + system,
getrusage of each subscriber process: the headline), user and system beside it; a row's
ratio slotlane / ecosystem is the median of its per-round ratios. Target (issue 20): <= 0.5.
One record: bench/records/<host>-<date>-<time>-pubsub.json (schema slotlane.bench.pubsub/1).
The machine is shared: the load average is in every round.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import run as bench_run  # noqa: E402  (bench/run.py: records, clocks, load averages)

HOST = "127.0.0.1"
SUB_CPU, SERVER_CPU = "0", "1"
PORT = 26800
VENV_PY = os.path.join(ROOT, "build", "python-venv", "bin", "python")
GO_SUB = os.path.join(ROOT, "build", "bench-pubsub", "pubsub-sub")
NODE_SUB = os.path.join(HERE, "sub_node.js")
RUST_SUB = os.path.join(ROOT, "rust", "target", "release", "examples", "pubsub_sub")
JAVA_ARGS = os.path.join(ROOT, "build", "bench-pubsub", "java.args")  # a java @argfile: -cp "<class path>"
JAVA_SUB = ["java", "-Xms256m", "-Xmx256m", "-XX:+UseSerialGC", "@" + JAVA_ARGS, "io.slotlane.bench.PubSubSub"]

# language -> [(client, ecosystem?, argv prefix)]; argv gets URL CHANNEL N SIZE appended
CLIENTS = {
    "python": [("slotlane", False, [VENV_PY, os.path.join(HERE, "sub_python.py"), "slotlane"]),
               ("redis-py", True, [VENV_PY, os.path.join(HERE, "sub_python.py"), "redis-py"])],
    "go": [("slotlane", False, [GO_SUB, "slotlane"]), ("go-redis", True, [GO_SUB, "go-redis"])],
    "node": [("slotlane", False, ["node", NODE_SUB, "slotlane"]), ("ioredis", True, ["node", NODE_SUB, "ioredis"])],
    "rust": [("slotlane", False, [RUST_SUB, "slotlane"]), ("redis-rs", True, [RUST_SUB, "redis-rs"])],
    "java": [("slotlane", False, JAVA_SUB + ["slotlane"]), ("jedis", True, JAVA_SUB + ["jedis"])],
}


def prepare_publisher():
    """The venv of the publisher (and of the python subscribers), as ci/bench-langs.sh makes it."""
    if os.path.exists(VENV_PY) and subprocess.run([VENV_PY, "-c", "import slotlane, redis"],
                                                  stderr=subprocess.DEVNULL).returncode == 0:
        return
    venv = os.path.dirname(os.path.dirname(VENV_PY))
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", os.path.join(ROOT, "python"), "redis", "hiredis"],
                   check=True)


def prepare(lang):
    os.makedirs(os.path.join(ROOT, "build", "bench-pubsub"), exist_ok=True)
    if lang == "go":
        subprocess.run(["go", "build", "-o", GO_SUB, "./cmd/pubsub-sub"], cwd=os.path.join(ROOT, "go", "bench"),
                       check=True)
    elif lang == "rust":
        subprocess.run(["cargo", "build", "-q", "-j2", "--release", "--example", "pubsub_sub"],
                       cwd=os.path.join(ROOT, "rust", "bench"), check=True)
    elif lang == "java":
        cp_file = os.path.join(ROOT, "build", "bench-pubsub", "java.classpath")
        subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-DskipTests", "-Pbench", "verify",
                        "-Dbench.main=io.slotlane.bench.PubSubSub", "-Dbench.args=--write-classpath " + cp_file],
                       cwd=os.path.join(ROOT, "java"), check=True)
        with open(cp_file) as f:
            cp = f.read().strip()
        with open(JAVA_ARGS, "w") as f:
            f.write('-cp "%s"\n' % cp.replace("\\", "\\\\").replace('"', '\\"'))


def publish(url, channel, n, size):
    """Runs the publisher (pinned with the server); returns its wall time."""
    code = ("import sys,time,slotlane\n"
            "r=slotlane.Client(sys.argv[1]);ch=sys.argv[2].encode();n=int(sys.argv[3]);size=int(sys.argv[4])\n"
            "pad=b'x'*(size-8);t=time.monotonic()\n"
            "for s in range(0,n,16):\n"
            "  with r.pipeline() as p:\n"
            "    for i in range(s,min(n,s+16)): p.publish(ch,b'%08d'%i+pad)\n"
            "    p.execute()\n"
            "print(time.monotonic()-t)\n")
    out = subprocess.run(["taskset", "-c", SERVER_CPU, VENV_PY, "-c", code, url, channel, str(n), str(size)],
                         check=True, stdout=subprocess.PIPE, text=True, timeout=600).stdout
    return float(out.strip().splitlines()[-1])


def one_round(argv, url, subs, n, size, tag):
    channel = "bench:%s" % tag
    procs = []
    try:
        for _ in range(subs):
            procs.append(subprocess.Popen(["taskset", "-c", SUB_CPU] + argv + [url, channel, str(n), str(size)],
                                          stdout=subprocess.PIPE, text=True))
        for p in procs:
            line = p.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError("a subscriber did not start: %r" % line)
        load = bench_run.load1()
        t0 = time.monotonic()
        pub_s = publish(url, channel, n, size)
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=600)
            lines = out.strip().splitlines()
            if p.returncode != 0 or not lines:
                raise RuntimeError("a subscriber failed (exit %s)" % p.returncode)
            results.append(json.loads(lines[-1]))
        wall = time.monotonic() - t0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    deliveries = sum(r["received"] for r in results)
    user = sum(r["user_ns"] for r in results)
    system = sum(r["sys_ns"] for r in results)
    ok = all(r["ok"] and r["received"] == n for r in results)
    return {"ok": ok, "error": next((r["error"] for r in results if r["error"]), None),
            "deliveries": deliveries, "wall_s": wall, "publish_s": pub_s, "load1": load,
            "msgs_per_s": deliveries / wall, "user_ns": user, "sys_ns": system,
            "cpu_ns_per_msg": (user + system) / deliveries, "user_ns_per_msg": user / deliveries,
            "sys_ns_per_msg": system / deliveries}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--langs", default="python,rust,go,node,java")
    ap.add_argument("--subs", default="1,16")
    ap.add_argument("--sizes", default="32,1024")
    ap.add_argument("--messages", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", default=os.path.join(ROOT, "bench", "records"))
    a = ap.parse_args()
    langs = a.langs.split(",")
    unknown = [x for x in langs if x not in CLIENTS]
    if unknown:
        ap.error("no pub/sub subscribers for %s (languages: %s)" % (",".join(unknown), ",".join(CLIENTS)))
    if a.messages <= 0 or a.rounds <= 0:
        ap.error("--messages and --rounds must be positive")
    prepare_publisher()
    for lang in langs:
        prepare(lang)
    work = tempfile.mkdtemp(prefix="slotlane-bench-pubsub-")
    d = os.path.join(work, "plain")
    subprocess.run(["bash", os.path.join(ROOT, "ci", "redis-plain.sh"), "start", d, str(PORT)], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    url = "redis://%s:%d" % (HOST, PORT)
    t_start = bench_run.utcnow()
    load_before = bench_run.load1()
    rows = []
    try:
        with open(os.path.join(d, "pid")) as f:
            pid = f.read().strip()
        subprocess.run(["taskset", "-a", "-p", "-c", SERVER_CPU, pid], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["redis-cli", "-p", str(PORT), "config", "set", "client-output-buffer-limit", "pubsub 0 0 0"],
                       check=True, stdout=subprocess.DEVNULL)
        server_version = bench_run.sh(["redis-server", "--version"])
        for lang in langs:
            for subs in [int(x) for x in a.subs.split(",")]:
                for size in [int(x) for x in a.sizes.split(",")]:
                    per = {c[0]: [] for c in CLIENTS[lang]}
                    for r in range(a.rounds):
                        order = CLIENTS[lang] if r % 2 == 0 else list(reversed(CLIENTS[lang]))
                        for client, _eco, argv in order:
                            bench_run.log("%s %s: %d subscriber(s), %d B, round %d" % (lang, client, subs, size, r + 1))
                            per[client].append(one_round(argv, url, subs, a.messages, size,
                                                         "%s-%s-%d-%d-%d" % (lang, client, subs, size, r)))
                    for client, eco, _argv in CLIENTS[lang]:
                        rs = per[client]
                        ok = all(x["ok"] for x in rs)
                        row = {"language": lang, "client": client, "ecosystem": eco, "subscribers": subs,
                               "payload_bytes": size, "messages": a.messages, "ok": ok,
                               "error": next((x["error"] for x in rs if x["error"]), None), "rounds": rs}
                        if ok:
                            row["median"] = {k: statistics.median(x[k] for x in rs)
                                             for k in ("msgs_per_s", "cpu_ns_per_msg", "user_ns_per_msg",
                                                       "sys_ns_per_msg")}
                        rows.append(row)
                    sl_rows = per["slotlane"]
                    eco_client = next(c[0] for c in CLIENTS[lang] if c[1])
                    ratios = [s["cpu_ns_per_msg"] / e["cpu_ns_per_msg"] for s, e in zip(sl_rows, per[eco_client])]
                    rows[-2 if CLIENTS[lang][0][0] == "slotlane" else -1]["ratio_vs_" + eco_client] = {
                        "rounds": ratios, "median": statistics.median(ratios), "target": "<= 0.5",
                        "target_met": statistics.median(ratios) <= 0.5}
    finally:
        subprocess.run(["bash", os.path.join(ROOT, "ci", "redis-plain.sh"), "stop", d], stdout=subprocess.DEVNULL)
    t_end = bench_run.utcnow()
    rec = {
        "schema": "slotlane.bench.pubsub/1", "benchmark": "pubsub", "tool": "bench/pubsub/run.py",
        "ok": all(r["ok"] for r in rows),
        "started_at": bench_run.iso(t_start), "finished_at": bench_run.iso(t_end),
        "load_average_1min": {"before": load_before, "after": bench_run.load1(),
                              "note": "shared 2-vCPU VM, other engineers' builds and tests running"},
        "command": sys.argv,
        "git": {"commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                                         text=True).stdout.strip()},
        "versions": {"server": server_version},
        "config": {"messages": a.messages, "rounds": a.rounds, "subs": a.subs, "sizes": a.sizes,
                   "publisher": "slotlane Python, PUBLISH pipelined 16 at a time, on CPU %s with the server" % SERVER_CPU,
                   "subscriber_cpu": SUB_CPU, "server_cpu": SERVER_CPU,
                   "order": "interleaved: each round runs every client of a language once, order alternating"},
        "rows": rows,
    }
    name = bench_run.write_record(rec, a.records, "pubsub")
    print("record: %s" % name)
    print("%-7s %-9s %4s %6s %12s %10s %9s %9s %7s" % ("lang", "client", "subs", "bytes", "msgs/s", "cpu ns/msg",
                                                       "user", "sys", "ratio"))
    for r in rows:
        m = r.get("median", {})
        ratio = next((v["median"] for k, v in r.items() if k.startswith("ratio_vs_")), None)
        print("%-7s %-9s %4d %6d %12.0f %10.0f %9.0f %9.0f %7s" % (
            r["language"], r["client"], r["subscribers"], r["payload_bytes"], m.get("msgs_per_s", 0),
            m.get("cpu_ns_per_msg", 0), m.get("user_ns_per_msg", 0), m.get("sys_ns_per_msg", 0),
            "%.2f" % ratio if ratio is not None else ""))
    return 0 if rec["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
