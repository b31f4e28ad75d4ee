#!/usr/bin/env python3
"""bench/failover/load.py CLIENT SEEDS KEYS MASK RATE — the load of bench/failover/run.py: one
client (slotlane or redis-py's RedisCluster) runs pipelines of INCR over KEYS (comma-
separated), RATE pipelines a second at most (the same load on the servers for every
client: a faster client must not slow the cluster's own failover down), until SIGTERM, printing per pipeline one JSON line: t0, t1
(time.monotonic, the same clock as the parent's), ok_v / fail_v (results on the keys MASK
marks with 1: the victim primary's) and ok_o / fail_o (the others). A pipeline that raises
as a whole counts every command failed."""
import json
import signal
import sys
import time


def main():
    client, seeds, keys, mask = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
    period = 1.0 / float(sys.argv[5])
    victim = [m == "1" for m in mask]
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    if client == "slotlane":
        import slotlane
        c = slotlane.Client(seeds, socket_timeout=15.0)

        def run():
            with c.pipeline() as p:
                for k in keys:
                    p.incr(k)
                return p.execute(raise_on_error=False)
    elif client == "redis-py":
        from redis.cluster import ClusterNode, RedisCluster
        nodes = [ClusterNode(h, int(p)) for h, p in (s.rsplit(":", 1) for s in seeds.split(","))]
        c = RedisCluster(startup_nodes=nodes, socket_timeout=15.0)

        def run():
            p = c.pipeline()
            for k in keys:
                p.incr(k)
            return p.execute(raise_on_error=False)
    else:
        raise SystemExit("unknown client %s" % client)
    out = sys.stdout
    next_t = time.monotonic()
    while not stop:
        now = time.monotonic()
        if now < next_t:
            time.sleep(next_t - now)  # pacing only: no verdict depends on it
        next_t = max(next_t + period, time.monotonic() - period)
        t0 = time.monotonic()
        try:
            res = run()
        except Exception as e:  # the whole pipeline failed
            res = [e] * len(keys)
        t1 = time.monotonic()
        okv = failv = oko = failo = 0
        for v, r in zip(victim, res):
            bad = isinstance(r, Exception)
            if v:
                failv += bad
                okv += not bad
            else:
                failo += bad
                oko += not bad
        out.write(json.dumps({"t0": t0, "t1": t1, "ok_v": okv, "fail_v": failv, "ok_o": oko, "fail_o": failo}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
