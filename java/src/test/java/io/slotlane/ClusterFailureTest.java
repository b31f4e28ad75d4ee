package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Debian's Redis Cluster (3 primaries, each test its own): a primary killed mid-pipeline, MOVED/ASK during a live reshard. */
class ClusterFailureTest {

    /** The client port that owns each slot, from CLUSTER SLOTS (asked through the client). */
    static int[] owners(SlotlaneClient c) {
        int[] owner = new int[16384];
        for (Object range : (List<?>) c.command(Route.random(), "CLUSTER", "SLOTS")) {
            List<?> r = (List<?>) range;
            int port = ((Long) ((List<?>) r.get(2)).get(1)).intValue();
            for (long s = (Long) r.get(0); s <= (Long) r.get(1); s++) owner[(int) s] = port;
        }
        return owner;
    }

    @Test
    void primaryKilledMidPipeline() throws Exception {
        int base = TestServers.BASE + 40;
        try (TestServers.RedisCluster rc = new TestServers.RedisCluster("kill", base, 3);
             SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(rc.url())
                     .connectTimeout(Duration.ofMillis(300)).commandTimeout(Duration.ofSeconds(3)).build())) {
            int[] owner = owners(c);
            int victim = base + 1;
            String[] keys = new String[600];
            try (Pipeline p = c.pipeline()) {
                for (int i = 0; i < keys.length; i++) p.set(keys[i] = "fk:" + i, "v" + i);
                for (Object o : p.sync()) assertEquals(true, o);
            }
            int victimKeys = 0;
            for (String k : keys) if (owner[SlotlaneClient.keySlot(k)] == victim) victimKeys++;
            final int onVictim = victimKeys;
            assertTrue(onVictim > 100 && onVictim < 500, "keys on the victim: " + onVictim);

            AtomicBoolean stop = new AtomicBoolean();
            AtomicBoolean killed = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicInteger mixed = new AtomicInteger();     // pipelines after the kill with successes and failures
            AtomicInteger afterKill = new AtomicInteger();
            AtomicInteger before = new AtomicInteger();    // pipelines done before the kill
            Thread load = new Thread(() -> {
                try (Pipeline p = c.pipeline()) {
                    while (!stop.get()) {
                        boolean wasKilled = killed.get();
                        for (String k : keys) p.get(k);
                        List<Object> r = p.sync();
                        int ok = 0, failed = 0;
                        for (int i = 0; i < keys.length; i++) {
                            Object v = r.get(i);
                            boolean mine = owner[SlotlaneClient.keySlot(keys[i])] == victim;
                            if (v instanceof SlotlaneException) {
                                // only the killed node's commands fail, with a connection or timeout error
                                assertTrue(mine, "a command of a live node failed: " + keys[i] + " " + v);
                                assertTrue(v instanceof ConnectionException || v instanceof SlotlaneTimeoutException,
                                        "kind of failure: " + v);
                                failed++;
                            } else {
                                assertEquals("v" + i, v, keys[i]);
                                ok++;
                            }
                        }
                        if (wasKilled) {
                            afterKill.incrementAndGet();
                            if (ok == keys.length - onVictim && failed == onVictim) mixed.incrementAndGet();
                        } else {
                            before.incrementAndGet();
                        }
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            long reconnectsBefore = c.stats().reconnects();
            load.start();
            // Events, not sleeps: the load has run a pipeline before the kill, and after it one
            // that failed exactly the victim's commands (bounded only to report a stuck load).
            long limit = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (before.get() == 0 && load.isAlive() && System.nanoTime() < limit) Thread.sleep(5);
            killed.set(true);
            rc.kill(victim);
            while (mixed.get() == 0 && load.isAlive() && System.nanoTime() < limit) Thread.sleep(5);
            stop.set(true);
            load.join(20_000);
            assertFalse(load.isAlive());
            if (failure.get() != null) throw new AssertionError("load thread", failure.get());
            assertTrue(afterKill.get() > 0 && mixed.get() > 0,
                    "pipelines after the kill: " + afterKill.get() + ", with exactly the victim's commands failed: " + mixed.get());

            // the node comes back: the next pipelines reconnect and every command succeeds again
            rc.restart(victim);
            List<Object> r = null;
            for (int attempt = 0; attempt < 50; attempt++) {
                try (Pipeline p = c.pipeline()) {
                    for (String k : keys) p.get(k);
                    r = p.sync();
                }
                if (r.stream().noneMatch(v -> v instanceof SlotlaneException)) break;
                Thread.sleep(100);
            }
            for (int i = 0; i < keys.length; i++) {
                Object v = r.get(i);
                // the restarted node kept no data (no persistence): its keys read nil, no error
                if (owner[SlotlaneClient.keySlot(keys[i])] == victim) assertFalse(v instanceof SlotlaneException, keys[i] + " " + v);
                else assertEquals("v" + i, v);
            }
            assertTrue(c.stats().reconnects() > reconnectsBefore, "the client reconnected to the restarted node: " + c.stats());
        }
    }

    @Test
    void movedDuringALiveReshard() throws Exception {
        int base = TestServers.BASE + 50;
        try (TestServers.RedisCluster rc = new TestServers.RedisCluster("reshard", base, 3);
             SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(rc.url()).build())) {
            int[] owner = owners(c);
            // keys in 4 slots of the first primary, 30 keys each
            Map<Integer, List<String>> bySlot = new HashMap<>();
            List<Integer> slots = new ArrayList<>();
            for (int i = 0; slots.size() < 4 || bySlot.get(slots.get(3)).size() < 30; i++) {
                String k = "{m" + (i % 4000) + "}:" + (i / 4000);
                int s = SlotlaneClient.keySlot(k);
                if (owner[s] != base) continue;
                if (!bySlot.containsKey(s)) {
                    if (slots.size() == 4) continue;
                    slots.add(s);
                    bySlot.put(s, new ArrayList<>());
                }
                if (bySlot.get(s).size() < 30) bySlot.get(s).add(k);
                if (i > 2_000_000) fail("no keys found");
            }
            List<String> keys = new ArrayList<>();
            for (int s : slots) keys.addAll(bySlot.get(s));
            // filler keys elsewhere
            for (int i = 0; i < 100; i++) keys.add("other:" + i);
            List<Pair<String, String>> kv = new ArrayList<>();
            for (String k : keys) kv.add(Pair.of(k, "val-" + k));
            c.mset(kv);

            ClientStats before = c.stats();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread mover = new Thread(() -> {
                try {
                    for (int s : slots) rc.migrate(s, base, base + 2);
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            mover.start();
            int pipelines = 0;
            try (Pipeline p = c.pipeline()) {
                do {
                    for (String k : keys) p.get(k);
                    for (int i = 0; i < 5; i++) p.incr("{m" + (i % 4000) + "}:ctr");
                    List<Object> r = p.sync();
                    for (int i = 0; i < keys.size(); i++) assertEquals("val-" + keys.get(i), r.get(i), keys.get(i));
                    for (int i = keys.size(); i < r.size(); i++) assertInstanceOf(Long.class, r.get(i), "incr #" + i + ": " + r.get(i));
                    pipelines++;
                } while (mover.isAlive() || pipelines < 3);
            }
            mover.join();
            if (failure.get() != null) throw new AssertionError("migrate", failure.get());
            // after the reshard, the client learned the new owners
            for (String k : keys) assertEquals("val-" + k, c.get(k));
            ClientStats after = c.stats();
            long redirects = (after.moved() - before.moved()) + (after.ask() - before.ask());
            assertTrue(after.moved() - before.moved() > 0, "MOVED followed: " + after + " (pipelines: " + pipelines + ")");
            assertTrue(redirects > 0);
            int[] now = owners(c);
            for (int s : slots) assertEquals(base + 2, now[s], "slot " + s + " moved");
            System.out.println("reshard: pipelines=" + pipelines + " moved=" + (after.moved() - before.moved())
                    + " ask=" + (after.ask() - before.ask()));
        }
    }
}
