package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * AsyncClient.scan (AsyncScan: CompletableFuture pages of the core's cluster SCAN, paged on
 * the loop thread) against the bundled server (4 shards), standalone Redis and a 3-primary
 * Redis Cluster: every key once, MATCH, TYPE, COUNT's pages one at a time, an empty
 * keyspace, a cancelled page then the scan going on, closes with a page in flight and with
 * the client. Decided by the pages' keys and the futures.
 */
class AsyncScanTest {
    private static final int KEYS = 5000, HASHES = 20;

    private static List<String[]> targets() {
        List<String[]> t = new ArrayList<>();
        t.add(new String[] {"bundled", TestServers.bundledCluster()});
        t.add(new String[] {"plain", TestServers.redisPlain()});
        t.add(new String[] {"redis-cluster", TestServers.redisCluster()});
        return t;
    }

    private static void load(SlotlaneClient c) {
        c.flushall();
        for (int i = 0; i < KEYS; i += 1000) {
            Pipeline p = c.pipeline();
            for (int k = i; k < i + 1000; k++) p.command("SET", "as:" + k, "v");
            p.sync();
        }
        for (int i = 0; i < HASHES; i++) c.command("HSET", "ash:" + i, "f", "v");
    }

    private static Map<String, Integer> all(AsyncClient a, String match, int count, String type) throws Exception {
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        long n = a.scan(match, count, type).forEach(k -> seen.merge(new String(k, StandardCharsets.UTF_8), 1, Integer::sum))
                .get(120, TimeUnit.SECONDS);
        assertEquals(n, seen.values().stream().mapToLong(Integer::longValue).sum());
        return seen;
    }

    @Test
    void everyKeyOnceMatchTypeAndPages() throws Exception {
        for (String[] t : targets()) {
            try (SlotlaneClient c = TestServers.client(t[1]);
                 AsyncClient a = AsyncClient.create(ClientOptions.builder().uri(t[1]).build())) {
                c.flushall();
                assertTrue(all(a, null, 0, null).isEmpty(), t[0] + ": an empty keyspace");
                load(c);
                if (t[0].equals("bundled")) {
                    long primaries = ClusterNode.list(c).stream().filter(ClusterNode::isPrimary).count();
                    assertEquals(4, primaries, "the bundled cluster's shards");
                }
                Map<String, Integer> seen = all(a, null, 200, null);
                assertEquals(KEYS + HASHES, seen.size(), t[0]);
                assertTrue(seen.values().stream().allMatch(n -> n == 1), t[0] + ": a key twice");
                for (int i = 0; i < KEYS; i++) assertTrue(seen.containsKey("as:" + i), t[0] + ": as:" + i + " missed");

                Map<String, Integer> m = all(a, "as:1*", 0, null);
                assertTrue(m.keySet().stream().allMatch(k -> k.startsWith("as:1")), t[0]);
                assertEquals(1111, m.size(), t[0] + ": MATCH");
                Map<String, Integer> h = all(a, null, 0, "hash");
                assertEquals(HASHES, h.size(), t[0] + ": TYPE");
                assertTrue(h.keySet().stream().allMatch(k -> k.startsWith("ash:")), t[0]);

                // page by page: one in flight at a time (a next() while one is refused; one that
                // came after the page had already completed — the thread was preempted between
                // the two calls — is the next page); after the last, empty last pages
                int pages = 0, keys = 0, refused = 0;
                try (AsyncScan s = a.scan(null, 50, null)) {
                    CompletableFuture<AsyncScan.Page> f = s.next();
                    for (;;) {
                        CompletableFuture<AsyncScan.Page> early = null;
                        try {
                            early = s.next();
                        } catch (IllegalStateException e) {
                            refused++;
                        }
                        if (early != null) assertTrue(f.isDone(), "a second page accepted while one was in flight");
                        AsyncScan.Page p = f.get(60, TimeUnit.SECONDS);
                        pages++;
                        keys += p.keys().size();
                        if (p.last()) {
                            if (early != null) assertTrue(early.get(60, TimeUnit.SECONDS).last(), "after the last page");
                            break;
                        }
                        f = early != null ? early : s.next();
                    }
                    assertTrue(refused > 0, "no next() was ever refused while a page was in flight");
                    assertTrue(s.isDone());
                    AsyncScan.Page after = s.next().get();
                    assertTrue(after.last() && after.keys().isEmpty());
                }
                assertEquals(KEYS + HASHES, keys, t[0]);
                assertTrue(pages > 4, t[0] + ": COUNT 50 gives many pages, not " + pages);

                assertThrows(IllegalArgumentException.class, () -> a.scan(null, -1, null));
                assertThrows(IllegalArgumentException.class, () -> a.scan("", 0, null));
                c.flushall();
            }
        }
    }

    /** Polls until the scan takes a next page (the cancelled one completed in the core), bounded. */
    private static CompletableFuture<AsyncScan.Page> nextWhenFree(AsyncScan s) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (;;) {
            try {
                return s.next();
            } catch (IllegalStateException busy) {
                if (System.nanoTime() > deadline) throw busy;
                Thread.sleep(1);
            }
        }
    }

    @Test
    void cancelledPageAndCloses() throws Exception {
        String url = TestServers.bundledCluster();
        try (SlotlaneClient c = TestServers.client(url)) {
            load(c);
            AsyncClient a = AsyncClient.create(ClientOptions.builder().uri(url).build());
            try {
                // a cancelled page: its future is cancelled, the scan goes on to the end
                try (AsyncScan s = a.scan(null, 100, null)) {
                    CompletableFuture<AsyncScan.Page> f = s.next();
                    f.cancel(true);
                    assertThrows(CancellationException.class, f::join);
                    int keys = 0;
                    for (;;) {
                        AsyncScan.Page p = nextWhenFree(s).get(60, TimeUnit.SECONDS);
                        keys += p.keys().size();
                        if (p.last()) break;
                    }
                    assertTrue(keys > 0 && keys <= KEYS + HASHES, "keys after a cancelled page: " + keys);
                }
                // closed with a page in flight: the page's future still completes, the scan refuses more
                AsyncScan s = a.scan(null, 100, null);
                CompletableFuture<AsyncScan.Page> f = s.next();
                s.close();
                try {
                    f.get(60, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    assertInstanceOf(SlotlaneException.class, e.getCause());
                }
                assertThrows(IllegalStateException.class, s::next);
                // a scan left open is freed with its client
                AsyncScan open = a.scan(null, 100, null);
                open.next().get(60, TimeUnit.SECONDS);
                a.close();
                assertThrows(IllegalStateException.class, open::next);
                assertThrows(IllegalStateException.class, () -> a.scan(null, 0, null));
            } finally {
                a.close();
            }
            c.flushall();
        }
    }
}
