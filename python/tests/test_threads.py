"""One Client shared by threads: a pool of core handles, the GIL released during I/O."""
import threading
import time

import slotlane
from conftest import wait_blocked


def test_threads_share_a_client(client):
    errors = []
    n_threads, n_iter = 8, 60

    def work(t):
        try:
            for i in range(n_iter):
                key = "t%d:%d" % (t, i)
                assert client.set(key, i) is True
                assert client.get(key) == b"%d" % i
                with client.pipeline() as p:
                    for j in range(20):
                        p.incr("t%d:ctr" % t)
                    r = p.execute(raise_on_error=True)
                assert r[-1] == (i + 1) * 20
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert client.mget(["t%d:ctr" % t for t in range(n_threads)]) == [b"%d" % (n_iter * 20)] * n_threads
    # Several handles were used (each with its own connections), and at most max_handles.
    assert 1 <= len([h for h in client._all if h is not None]) <= client.max_handles
    assert client.stats()["commands"] >= n_threads * n_iter * 22


def test_gil_released_during_io(redis_url):
    """While one thread waits in BLPOP (0.8 s in the server), another keeps running Python."""
    with slotlane.Client(redis_url) as c:
        c.delete("blk")
        done = threading.Event()
        result = []

        def blocker():
            result.append(c.execute_command("BLPOP", "blk", "0.8"))
            done.set()

        t = threading.Thread(target=blocker)
        t0 = time.monotonic()
        t.start()
        spins = 0
        while not done.is_set() and time.monotonic() - t0 < 5:
            spins += 1
        t.join(5)
        assert result == [None]
        assert time.monotonic() - t0 >= 0.7
        # With the GIL held during the call this thread could not have spun for 0.8 s
        # (the switch interval is 5 ms: a handful of spins at most).
        assert spins > 10000


def test_pool_limit_and_timeout(redis_url):
    with slotlane.Client(redis_url, max_handles=1, pool_timeout=0.2) as c:
        c.delete("blk2")

        def blocker():
            c.execute_command("BLPOP", "blk2", "30")

        t = threading.Thread(target=blocker)
        t.start()
        # The one handle is in use once the server has the BLPOP blocked (an event; with
        # 30 s the BLPOP outlasts any busy machine), so waiting for a handle must time out.
        wait_blocked(redis_url, "blpop")
        try:
            c.get("x")
            raised = None
        except slotlane.TimeoutError as e:
            raised = e
        with slotlane.Client(redis_url) as other:
            other.execute_command("RPUSH", "blk2", "go")  # ends the BLPOP
        t.join(30)
        assert not t.is_alive()
        assert raised is not None and "pool_timeout" in str(raised)
        assert c.get("x") is None  # the handle is back


def test_close_cancels_running_execution(redis_url):
    c = slotlane.Client(redis_url, socket_timeout=None)
    c.delete("blk3")
    out = []

    def blocker():
        try:
            out.append(c.execute_command("BLPOP", "blk3", "0"))  # forever
        except slotlane.Error as e:
            out.append(e)

    t = threading.Thread(target=blocker)
    t.start()
    wait_blocked(redis_url, "blpop")  # in flight: blocked in the server, not just started
    c.close()
    t.join(60)  # BLPOP 0 waits forever: only the close ends it (the limit reports a hang)
    assert not t.is_alive()
    assert isinstance(out[0], slotlane.CancelledError), out
