package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Transaction (WATCH/MULTI/EXEC on the core's sessions) against the bundled server (per-shard,
 * 4 shards), standalone Redis and a 3-primary Redis Cluster: commit and abort, 8 threads
 * against a model (every committed INCR saw the value it read plus one, the counter equals
 * the commits, the log holds exactly the committed tags), the transaction(keys, body) helper
 * retrying its aborts, an abandoned session whose connection comes back clean (the same
 * CLIENT ID, its WATCH gone), and CROSSSLOT refused before anything is sent (the node's
 * INFO commandstats), and a watched key's slot migrated (a Redis Cluster of its own, BASE+82..+87:
 * WatchMovedException, then the helper commits on the new owner). Decided by replies and
 * counters only.
 */
class TransactionTest {
    private static List<String[]> targets() {
        List<String[]> t = new ArrayList<>();
        t.add(new String[] {"bundled", TestServers.bundledCluster()});
        t.add(new String[] {"plain", TestServers.redisPlain()});
        t.add(new String[] {"redis-cluster", TestServers.redisCluster()});
        return t;
    }

    @Test
    void commitsAbortsAndTypedReplies() {
        for (String[] t : targets()) {
            try (SlotlaneClient c = TestServers.client(t[1]); SlotlaneClient other = TestServers.client(t[1])) {
                c.delete("{t}a", "{t}b");
                c.set("{t}a", "1");
                try (Transaction tx = c.transaction()) {
                    tx.watch("{t}a");
                    assertTrue(tx.isWatching(), t[0]);
                    if (c.mode() == Mode.CLUSTER) assertEquals(SlotlaneClient.keySlot("{t}a"), tx.slot(), t[0]);
                    assertEquals("1", tx.get("{t}a"), t[0] + ": a read at once on the session");
                    Transaction.Multi m = tx.multi();
                    Reply<Long> n = m.incr("{t}a");
                    m.set("{t}b", "x");
                    Reply<String> b = m.get("{t}b");
                    assertThrows(IllegalStateException.class, () -> tx.get("{t}a"), "a command outside the open MULTI");
                    assertThrows(IllegalStateException.class, () -> tx.watch("{t}a"));
                    assertThrows(IllegalStateException.class, n::get, "no reply before EXEC");
                    assertEquals(List.of(2L, true, "x"), m.exec(), t[0]);
                    assertEquals(2L, n.get());
                    assertEquals("x", b.get());
                    assertFalse(tx.isWatching(), t[0] + ": the session ended with EXEC");
                    assertThrows(IllegalStateException.class, m::exec, "a MULTI runs once");

                    // the same object, the next transaction: aborted by another client's write
                    tx.watch("{t}a");
                    assertEquals("2", tx.get("{t}a"));
                    Transaction.Multi m2 = tx.multi();
                    m2.set("{t}a", "from the aborted one");
                    other.set("{t}a", "changed");
                    assertThrows(WatchException.class, m2::exec, t[0]);
                    assertEquals("changed", c.get("{t}a"), t[0] + ": nothing of the aborted one applied");

                    // without a watch: MULTI/EXEC on the key's slot; an empty one sends nothing
                    assertEquals(List.of(), tx.multi().exec());
                    Transaction.Multi m3 = tx.multi();
                    m3.set("{t}a", "3");
                    m3.command("GET", "{t}a");
                    assertEquals(List.of(true, "3"), m3.exec(), t[0]);
                    // a command the server refuses at queueing time: EXECABORT, its error thrown
                    Transaction.Multi m4 = tx.multi();
                    m4.set("{t}a", "4");
                    m4.command("GET", "{t}a", "extra");
                    assertThrows(ReplyException.class, m4::exec, t[0]);
                    assertEquals("3", c.get("{t}a"), t[0] + ": EXECABORT applied nothing");
                    assertThrows(IllegalArgumentException.class, () -> tx.watch());
                }
                assertThrows(IllegalStateException.class, () -> {
                    Transaction tx = c.transaction();
                    tx.close();
                    tx.get("{t}a");
                });
                c.delete("{t}a", "{t}b");
            }
        }
    }

    @Test
    void eightThreadsAgainstAModel() throws Exception {
        for (String[] t : targets()) {
            try (SlotlaneClient c = TestServers.client(t[1])) {
                c.delete("{m}n", "{m}log", "{m}h");
                c.set("{m}n", "0");
                List<String> committed = Collections.synchronizedList(new ArrayList<>());
                AtomicInteger aborted = new AtomicInteger();
                List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
                List<Thread> threads = new ArrayList<>();
                for (int w = 0; w < 8; w++) {
                    int worker = w;
                    Thread th = new Thread(() -> {
                        try {
                            for (int i = 0; i < 25; i++) {
                                String tag = worker + ":" + i;
                                try (Transaction tx = c.transaction()) {
                                    for (;;) {
                                        tx.watch("{m}n");
                                        long seen = Long.parseLong(tx.get("{m}n"));
                                        Transaction.Multi m = tx.multi();
                                        Reply<Long> incr = m.incr("{m}n");
                                        m.rpush("{m}log", tag);
                                        try {
                                            m.exec();
                                        } catch (WatchException e) {
                                            aborted.incrementAndGet();
                                            continue; // nothing of it applied: again from the WATCH
                                        }
                                        // the watch held: nobody wrote between the GET and the EXEC
                                        if (incr.get() != seen + 1) throw new AssertionError("INCR gave " + incr.get() + " after GET " + seen);
                                        committed.add(tag);
                                        break;
                                    }
                                }
                                // the helper: the same, retried by the client
                                c.transaction(List.of("{m}h"), tx -> {
                                    String v = tx.get("{m}h");
                                    tx.multi().set("{m}h", (v == null ? 0 : Long.parseLong(v)) + 1);
                                });
                            }
                        } catch (Throwable e) {
                            failures.add(e);
                        }
                    });
                    threads.add(th);
                    th.start();
                }
                for (Thread th : threads) th.join(120_000);
                for (Thread th : threads) assertFalse(th.isAlive(), t[0] + ": a worker hangs");
                if (!failures.isEmpty()) throw new AssertionError(t[0] + ": " + failures.get(0), failures.get(0));
                assertEquals(200, committed.size(), t[0]);
                assertEquals("200", c.get("{m}n"), t[0] + ": the counter is the committed count (aborted: " + aborted.get() + ")");
                List<String> log = new ArrayList<>(c.lrange("{m}log", 0, -1));
                Collections.sort(log);
                List<String> want = new ArrayList<>(committed);
                Collections.sort(want);
                assertEquals(want, log, t[0] + ": exactly the committed transactions' tags");
                assertEquals("200", c.get("{m}h"), t[0] + ": the helper's commits");
                c.delete("{m}n", "{m}log", "{m}h");
            }
        }
    }

    @Test
    void abandonedSessionComesBackClean() {
        for (String[] t : targets()) {
            ClientOptions o = ClientOptions.builder().uri(t[1]).poolSize(1).build();
            try (SlotlaneClient c = SlotlaneClient.create(o); SlotlaneClient other = TestServers.client(t[1])) {
                c.set("{a}k", "0");
                Object id1;
                Transaction tx1 = c.transaction();
                tx1.watch("{a}k");
                id1 = tx1.command("CLIENT", "ID");
                tx1.multi().set("{a}k", "from the abandoned one");
                other.set("{a}k", "1"); // the watched key changes: a WATCH left armed would abort the next EXEC
                tx1.close(); // no EXEC: the core sends UNWATCH and gives the connection back
                assertEquals("1", c.get("{a}k"), t[0] + ": nothing of the abandoned one applied");
                try (Transaction tx2 = c.transaction()) { // the same handle (pool of one), the same leased connection
                    assertEquals("1", tx2.get("{a}k"), t[0] + ": pins the slot");
                    assertEquals(id1, tx2.command("CLIENT", "ID"), t[0] + ": the connection came back to the pool");
                    Transaction.Multi m = tx2.multi();
                    m.incr("{a}k");
                    assertEquals(List.of(2L), m.exec(), t[0] + ": no stale WATCH on the connection");
                }
                assertEquals("2", c.get("{a}k"));
                c.delete("{a}k");
            }
        }
    }

    @Test
    void leaseIdleMaxNoneClosesTheSessionsConnection() {
        String url = TestServers.bundledCluster();
        assertThrows(IllegalArgumentException.class, () -> ClientOptions.builder().leaseIdleMax(-2));
        assertThrows(IllegalArgumentException.class, () -> ClientOptions.builder().blockingGraceMs(-1));
        Object[] ids = new Object[2];
        for (int keep = 0; keep < 2; keep++) {
            ClientOptions o = ClientOptions.builder().uri(url).poolSize(1).leaseIdleMax(keep == 0 ? -1 : 0).blockingGraceMs(500).build();
            assertEquals(keep == 0 ? -1 : 0, o.leaseIdleMax());
            try (SlotlaneClient c = SlotlaneClient.create(o)) {
                Object first;
                try (Transaction tx = c.transaction()) {
                    tx.watch("{l}k");
                    first = tx.command("CLIENT", "ID");
                }
                try (Transaction tx = c.transaction()) {
                    tx.watch("{l}k");
                    ids[keep] = tx.command("CLIENT", "ID");
                }
                if (keep == 0) assertNotEquals(first, ids[keep], "leaseIdleMax(-1): the connection was closed after use");
                else assertEquals(first, ids[keep], "the default keeps it for the next session");
            }
        }
    }

    /** A transaction dropped without close(): once collected, its cleaner ends the session and frees the handle. */
    private static void dropWatching(SlotlaneClient c) {
        Transaction tx = c.transaction();
        tx.watch("{d}k");
        assertTrue(tx.isWatching());
    }

    @Test
    void droppedUnclosedGivesItsHandleBack() throws Exception {
        ClientOptions o = ClientOptions.builder().uri(TestServers.bundledCluster()).poolSize(1).build();
        try (SlotlaneClient c = SlotlaneClient.create(o); SlotlaneClient other = TestServers.client(TestServers.bundledCluster())) {
            c.set("{d}k", "0");
            dropWatching(c); // holds the pool's only handle until collected
            java.util.concurrent.CompletableFuture<String> get = java.util.concurrent.CompletableFuture.supplyAsync(() -> c.get("{d}k"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!get.isDone()) { // the GET waits for the handle: each gc lets the cleaner run
                assertTrue(System.nanoTime() < deadline, "the dropped transaction's handle never came back");
                System.gc();
                Thread.sleep(10);
            }
            assertEquals("0", get.get());
            other.set("{d}k", "1"); // a WATCH left armed on the handle's connection would abort the next EXEC
            try (Transaction tx = c.transaction()) {
                tx.watch("{d}k");
                Transaction.Multi m = tx.multi();
                m.incr("{d}k");
                assertEquals(List.of(2L), m.exec());
            }
        }
    }

    private static String ownerOf(SlotlaneClient c, String key) {
        int slot = SlotlaneClient.keySlot(key);
        for (ClusterNode n : ClusterNode.list(c))
            if (n.isPrimary()) for (int[] r : n.slots()) if (slot >= r[0] && slot <= r[1]) return n.address();
        throw new AssertionError("no primary owns slot " + slot);
    }

    private static long calls(SlotlaneClient c, String addr, String cmd) {
        String info = String.valueOf(c.command(Route.node(addr), "INFO", "commandstats"));
        for (String line : info.split("\n"))
            if (line.startsWith("cmdstat_" + cmd + ":calls=")) return Long.parseLong(line.split("calls=")[1].split(",")[0].trim());
        return 0;
    }

    @Test
    void crossSlotRefusedBeforeSending() {
        for (String[] t : targets()) {
            if (t[0].equals("plain")) continue; // one node: every slot is the session's
            try (SlotlaneClient c = TestServers.client(t[1])) {
                String a = "{x}1", b = "{y}1";
                assertNotEquals(SlotlaneClient.keySlot(a), SlotlaneClient.keySlot(b));
                c.delete(a, b);
                String node = ownerOf(c, a), nodeB = ownerOf(c, b);
                try (Transaction tx = c.transaction()) {
                    long watches = calls(c, node, "watch") + calls(c, nodeB, "watch");
                    ClusterException e = assertThrows(ClusterException.class, () -> tx.watch(a, b), t[0]);
                    assertTrue(e.getMessage().contains("CROSSSLOT"), e.getMessage());
                    assertEquals(watches, calls(c, node, "watch") + calls(c, nodeB, "watch"), t[0] + ": WATCH not sent");

                    long multis = calls(c, node, "multi");
                    tx.watch(a);
                    Transaction.Multi m = tx.multi();
                    m.set(a, "x");
                    m.set(b, "y");
                    e = assertThrows(ClusterException.class, m::exec, t[0]);
                    assertTrue(e.getMessage().contains("CROSSSLOT"), e.getMessage());
                    assertEquals(multis, calls(c, node, "multi"), t[0] + ": MULTI not sent");
                    assertNull(c.get(a));
                    assertNull(c.get(b));

                    // the counter counts: the same transaction in one slot is sent
                    tx.watch(a);
                    Transaction.Multi ok = tx.multi();
                    ok.set(a, "x");
                    assertEquals(List.of(true), ok.exec());
                    assertEquals(multis + 1, calls(c, node, "multi"), t[0] + ": one MULTI sent");
                }
                c.delete(a, b);
            }
        }
    }

    @Test
    void slotMigratedWhileWatched() {
        int base = TestServers.BASE + 82; // a cluster of its own: +82..+87
        try (TestServers.RedisCluster rc = new TestServers.RedisCluster("watch-moved", base, 3);
             SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(rc.url()).build())) {
            String key = "{mig}k";
            int slot = SlotlaneClient.keySlot(key);
            c.set(key, "1");
            int src = Integer.parseInt(ownerOf(c, key).replaceAll(".*:", ""));
            int dst = src == base ? base + 1 : base;
            try (Transaction tx = c.transaction()) {
                tx.watch(key);
                assertEquals("1", tx.get(key));
                rc.migrate(slot, src, dst); // returns when the slot is the new owner's
                Transaction.Multi m = tx.multi();
                m.incr(key);
                assertThrows(WatchMovedException.class, m::exec, "the slot moved while watched");
            }
            assertEquals("1", c.get(key), "nothing of it applied");
            // a WatchException: the helper's retry takes it up on the new owner
            assertEquals(List.of(2L), c.transaction(List.of(key), tx -> tx.multi().incr(key)));
            c.refresh();
            assertEquals(dst, Integer.parseInt(ownerOf(c, key).replaceAll(".*:", "")));
        }
    }
}
