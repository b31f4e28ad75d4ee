#!/usr/bin/env python3
"""One subscriber of bench/pubsub/run.py: slotlane's r.pubsub() or redis-py's (with hiredis),
each used the way its users do (subscribe, then listen()). It prints "ready" once the
subscription is confirmed, receives N messages of the channel, checks every one (its
sequence number and its length), and prints one JSON line: its CPU (getrusage RUSAGE_SELF,
all threads — the core's subscriber thread included) from ready to the last message.

  sub_python.py slotlane|redis-py URL CHANNEL N SIZE
"""
import json
import resource
import sys
import time


def main():
    client, url, channel, n, size = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4]), int(sys.argv[5])
    if client == "slotlane":
        import slotlane
        r = slotlane.Client(url)
        p = r.pubsub(max_queue_bytes=1 << 30)  # the bench checks every message: none may be dropped
    else:
        import redis
        r = redis.Redis.from_url(url)
        p = r.pubsub()
    p.subscribe(channel)
    it = p.listen()
    first = next(it)
    assert first["type"] == "subscribe", first
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    print("ready", flush=True)
    got = 0
    bad = None
    for m in it:
        if m["type"] != "message":
            bad = bad or "unexpected %r" % (m["type"],)
            if m["type"] == "overflow":
                break  # messages were dropped: they will never come
            continue
        d = m["data"]
        if len(d) != size or int(d[:8]) != got:
            bad = bad or "message %d: %r (%d bytes)" % (got, d[:8], len(d))
        got += 1
        if got == n:
            break
    t1 = time.monotonic()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"received": got, "ok": bad is None, "error": bad, "wall_s": t1 - t0,
                      "user_ns": int((ru1.ru_utime - ru0.ru_utime) * 1e9),
                      "sys_ns": int((ru1.ru_stime - ru0.ru_stime) * 1e9)}), flush=True)
    p.close()
    r.close()


if __name__ == "__main__":
    main()
