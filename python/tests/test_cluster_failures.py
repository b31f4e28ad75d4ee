"""Against a real Redis Cluster (Debian's redis-server): a live reshard (MOVED/ASK
redirects followed) and a primary killed mid-pipeline. Each a few seconds."""
import os
import signal
import threading
import time

import slotlane


def owner_port(c, slot):
    for lo, hi, (host, port, *_rest), *_ in c.execute_command("CLUSTER", "SLOTS"):
        if lo <= slot <= hi:
            return int(port)
    raise AssertionError("no owner for slot %d" % slot)


def test_moved_during_live_reshard(chaos_cluster):
    c = slotlane.Client(chaos_cluster.url)
    try:
        assert c.mode == "cluster"
        c.flushall()
        tag = "{resh}"
        slot = slotlane.key_slot(tag)
        keys = ["%s:%d" % (tag, i) for i in range(300)]
        others = ["spread:%d" % i for i in range(100)]
        c.mset({k: k for k in keys + others})
        src = owner_port(c, slot)
        dst = next(p for p in chaos_cluster.ports if p != src)
        before = c.stats()
        mig = chaos_cluster.migrate(slot, src, dst, count=10)
        rounds = 0
        try:
            while True:
                with c.pipeline() as p:
                    for k in keys + others:
                        p.get(k)
                    r = p.execute()
                assert r == [k.encode() for k in keys + others], [x for x in r if not isinstance(x, bytes)][:3]
                rounds += 1
                if mig.poll() is not None:
                    break
        finally:
            out = mig.communicate(timeout=60)[0]
        assert mig.returncode == 0, out
        # After the move, the next pipeline gets MOVED for the stale slot and follows it.
        with c.pipeline() as p:
            for k in keys:
                p.get(k)
            assert p.execute() == [k.encode() for k in keys]
        after = c.stats()
        redirects = (after["moved"] - before["moved"]) + (after["ask"] - before["ask"])
        assert redirects > 0, (before, after)
        assert after["moved"] > before["moved"]
        assert owner_port(c, slot) == dst
        assert rounds >= 1
    finally:
        c.close()


def test_primary_killed_mid_pipeline(chaos_cluster):
    c = slotlane.Client(chaos_cluster.url, socket_timeout=5, socket_connect_timeout=0.5)
    try:
        c.flushall()
        keys = ["kill:%d" % i for i in range(600)]
        c.mset({k: k for k in keys})
        victim = chaos_cluster.ports[1]
        victim_keys = {k for k in keys if owner_port(c, slotlane.key_slot(k)) == victim}
        assert 0 < len(victim_keys) < len(keys)
        # Freeze the victim so the pipeline is in flight on it, then kill it.
        pid = chaos_cluster.pid(victim)
        os.kill(pid, signal.SIGSTOP)
        results = []

        def run():
            with c.pipeline() as p:
                for k in keys:
                    p.get(k)
                results.append(p.execute())

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.5)
        assert t.is_alive()  # waiting for the frozen node
        chaos_cluster.kill(victim)  # SIGKILL works on a stopped process
        t.join(10)
        assert not t.is_alive()
        r = results[0]
        for k, v in zip(keys, r):
            if k in victim_keys:
                assert isinstance(v, slotlane.ConnectionError), (k, v)
                assert v.kind == "io" and v.message
            else:
                assert v == k.encode(), (k, v)
        # The next pipeline: the other nodes still answer; the victim's commands fail alone.
        with c.pipeline() as p:
            for k in keys:
                p.get(k)
            r2 = p.execute()
        assert all(v == k.encode() for k, v in zip(keys, r2) if k not in victim_keys)
        assert all(isinstance(v, slotlane.Error) for k, v in zip(keys, r2) if k in victim_keys)
    finally:
        c.close()
