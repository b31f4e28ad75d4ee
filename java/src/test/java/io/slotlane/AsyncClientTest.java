package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * AsyncClient: the rendered future-returning surface (bundled server in cluster and plain
 * mode, Redis Cluster), async pipelines, the executor, per-batch cancellation against a
 * command the server holds on purpose (BLPOP on an empty list: it answers only when the
 * test pushes), backpressure at the in-flight bound, close() completing every future once.
 * Every wait is on an event (a reply, INFO blocked_clients), never on a sleep.
 */
class AsyncClientTest {
    static SlotlaneClient sync; // plain bundled server: the stall tests' observer and unblocker
    static ExecutorService pool;

    @BeforeAll
    static void start() {
        sync = TestServers.client(TestServers.bundledPlain());
        pool = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "test-continuations");
            t.setDaemon(true);
            return t;
        });
    }

    @AfterAll
    static void stop() {
        sync.close();
        pool.shutdownNow();
    }

    static AsyncClient client(String url) {
        return AsyncClient.create(ClientOptions.builder().uri(url).executor(pool).build());
    }

    /** Waits (on the server's answer, bounded only to turn a hang into a failure) until n clients are blocked. */
    static void awaitBlocked(int n) {
        String info = "";
        // polled every millisecond; the bound (a minute or more) only turns a hang into a failure
        for (int i = 0; i < 60_000; i++) {
            info = (String) sync.command("INFO", "clients");
            if (info.contains("blocked_clients:" + n + "\r\n")) return;
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        fail("the server never reported " + n + " blocked clients; its INFO clients said:\n" + info);
    }

    static Throwable cause(CompletableFuture<?> f) {
        CompletionException e = assertThrows(CompletionException.class, f::join);
        return e.getCause();
    }

    @Test
    void typedMethodsAndPipelinesOnEveryServer() {
        for (String url : new String[] {TestServers.bundledCluster(), TestServers.bundledPlain(), TestServers.redisCluster()}) {
            try (AsyncClient c = client(url)) {
                c.delete("{a}x", "{a}l", "n:1", "n:2").join();
                assertTrue(c.set("{a}x", "hello").join(), url);
                assertEquals("hello", c.get("{a}x").join());
                assertNull(c.get("{a}missing").join());
                assertEquals(5L, c.append("{a}x", "").join());
                assertEquals(java.util.Arrays.asList("hello", null), c.mget("{a}x", "n:1").join()); // cluster: split across slots
                assertEquals(2L, c.rpush("{a}l", "p", "q").join());
                assertEquals(List.of("p", "q"), c.lrange("{a}l", 0, -1).join());
                // an error reply completes the future exceptionally with the spec's exception
                Throwable t = cause(c.incr("{a}l"));
                assertInstanceOf(ReplyException.class, t);
                assertTrue(t.getMessage().startsWith("WRONGTYPE"), t.getMessage());
                assertThrows(IllegalArgumentException.class, () -> c.set(null, "v"));

                AsyncPipeline p = c.pipeline();
                Reply<Long> n1 = p.incr("n:1");
                Reply<Long> n2 = p.incrby("n:2", 5);
                Reply<Long> bad = p.incr("{a}l");
                p.command("GET", "{a}x");
                assertEquals(4, p.size());
                assertThrows(IllegalStateException.class, n1::get); // not run yet
                List<Object> r = p.execute().join();
                assertEquals(0, p.size());
                assertEquals(1L, r.get(0));
                assertEquals(5L, r.get(1));
                assertInstanceOf(ReplyException.class, r.get(2));
                assertEquals("hello", r.get(3));
                assertEquals(1L, n1.get());
                assertEquals(5L, n2.get());
                assertThrows(ReplyException.class, bad::get);
                assertTrue(p.execute().join().isEmpty());
            }
        }
    }

    /** The thread a stage chained on a pending future runs on (the future is held by the server until the chain is attached). */
    static String stageThread(AsyncClient c, String list) {
        sync.delete(list);
        CompletableFuture<Object> held = c.command("BLPOP", list, "0");
        awaitBlocked(1);
        CompletableFuture<String> name = held.thenApply(v -> Thread.currentThread().getName());
        assertFalse(held.isDone());
        sync.rpush(list, "go");
        return name.join();
    }

    @Test
    void continuationsRunOnTheExecutorNeverOnTheCoresThreads() {
        try (AsyncClient c = client(TestServers.bundledPlain())) {
            assertEquals("test-continuations", stageThread(c, "{s}exec1"));
        }
        // the default executor: the common pool, never the completion thread
        try (AsyncClient d = AsyncClient.create(ClientOptions.builder().uri(TestServers.bundledPlain()).build())) {
            String name = stageThread(d, "{s}exec2");
            assertTrue(name.startsWith("ForkJoinPool.commonPool"), name);
        }
        // an executor that runs in the calling thread runs stages on the completion thread (documented)
        try (AsyncClient e = AsyncClient.create(ClientOptions.builder().uri(TestServers.bundledPlain()).executor(Runnable::run).build())) {
            assertEquals("slotlane-completions", stageThread(e, "{s}exec3"));
        }
    }

    @Test
    void manyCallersShareTheClient() throws Exception {
        try (AsyncClient c = client(TestServers.bundledCluster())) {
            int threads = 8, per = 500;
            List<Thread> ts = new ArrayList<>();
            AtomicInteger wrong = new AtomicInteger();
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread th = new Thread(() -> {
                    List<CompletableFuture<Boolean>> sets = new ArrayList<>();
                    for (int i = 0; i < per; i++) sets.add(c.set("mc:" + id + ":" + i, "v" + id + ":" + i));
                    for (CompletableFuture<Boolean> f : sets) if (!f.join()) wrong.incrementAndGet();
                    List<CompletableFuture<String>> gets = new ArrayList<>();
                    for (int i = 0; i < per; i++) gets.add(c.get("mc:" + id + ":" + i));
                    for (int i = 0; i < per; i++) if (!("v" + id + ":" + i).equals(gets.get(i).join())) wrong.incrementAndGet();
                });
                ts.add(th);
                th.start();
            }
            for (Thread th : ts) th.join();
            assertEquals(0, wrong.get());
        }
    }

    @Test
    void cancelCancelsOnlyThatBatchAndTheConnectionStaysInStep() {
        sync.delete("{s}list");
        try (AsyncClient c = client(TestServers.bundledPlain())) {
            Object id = c.command("CLIENT", "ID").join();
            c.set("{s}k", "before").join();
            // the BLPOP waits on a connection leased for it (core lease.c), never on the shared one
            CompletableFuture<Object> held = c.command("BLPOP", "{s}list", "0"); // the server holds it
            awaitBlocked(1);
            assertEquals("before", c.get("{s}k").join()); // the same node answers meanwhile
            assertTrue(held.cancel(true));
            assertTrue(held.isCancelled());
            assertTrue(c.set("{s}k", "after").join());
            awaitBlocked(0); // the cancelled BLPOP's lease is closed
            assertEquals(1L, sync.rpush("{s}list", "x"));
            assertEquals(1L, sync.llen("{s}list")); // the cancelled BLPOP took nothing
            assertEquals("after", c.get("{s}k").join());
            assertEquals(id, c.command("CLIENT", "ID").join()); // the shared connection, never reopened
            assertThrows(CancellationException.class, held::join);
        }
    }

    @Test
    void cancellingAPipelineKeepsTheOtherCallersReplies() {
        sync.delete("{s}list2");
        try (AsyncClient c = client(TestServers.bundledPlain())) {
            c.set("{s}p1", "one").join();
            AsyncPipeline p = c.pipeline(); // a pipeline of one BLPOP: leased like the command alone
            p.command("BLPOP", "{s}list2", "0");
            CompletableFuture<List<Object>> f = p.execute();
            awaitBlocked(1);
            assertEquals("one", c.get("{s}p1").join()); // the other callers' replies come meanwhile
            assertTrue(f.cancel(true));
            awaitBlocked(0);
            sync.rpush("{s}list2", "y");
            assertEquals(1L, sync.llen("{s}list2")); // the cancelled pipeline's BLPOP took nothing
            assertThrows(CancellationException.class, f::join);
        }
    }

    @Test
    void theInFlightBoundFailsFastWithTheSpecsException() {
        sync.delete("{s}list3");
        ClientOptions o = ClientOptions.builder().uri(TestServers.bundledPlain()).executor(pool).maxInflight(1, 0).build();
        try (AsyncClient c = AsyncClient.create(o)) {
            CompletableFuture<Object> held = c.command("BLPOP", "{s}list3", "0");
            awaitBlocked(1);
            Throwable t = cause(c.get("{s}k"));
            assertInstanceOf(ResourceException.class, t);
            assertTrue(t.getMessage().contains("in-flight bound"), t.getMessage());
            sync.rpush("{s}list3", "z");
            assertEquals(List.of("{s}list3", "z"), held.join());
            assertTrue(c.set("{s}k", "v").join()); // room again
        }
    }

    @Test
    void theWaitPolicyHoldsSubmittersAtTheBound() throws Exception {
        ClientOptions o = ClientOptions.builder().uri(TestServers.bundledCluster()).executor(pool)
                .maxInflight(2, 0).backpressure(ClientOptions.Backpressure.WAIT).build();
        try (AsyncClient c = AsyncClient.create(o)) {
            List<CompletableFuture<Long>> fs = new ArrayList<>();
            c.delete("w:counter").join();
            Thread[] ts = new Thread[4];
            List<List<CompletableFuture<Long>>> per = new ArrayList<>();
            for (int t = 0; t < ts.length; t++) {
                List<CompletableFuture<Long>> mine = new ArrayList<>();
                per.add(mine);
                ts[t] = new Thread(() -> {
                    for (int i = 0; i < 200; i++) mine.add(c.incr("w:counter"));
                });
                ts[t].start();
            }
            for (Thread t : ts) t.join();
            for (List<CompletableFuture<Long>> m : per) fs.addAll(m);
            long sum = 0;
            for (CompletableFuture<Long> f : fs) sum += f.join(); // none failed with SL_EBUSY
            assertEquals(800L * 801 / 2, sum);
        }
    }

    @Test
    void aBlockingCommandsDeadlineIsItsBlockTimeNotTheCommandTimeout() {
        sync.delete("{s}late");
        ClientOptions o = ClientOptions.builder().uri(TestServers.bundledPlain()).executor(pool)
                .commandTimeout(java.time.Duration.ofMillis(300)).build();
        try (AsyncClient c = AsyncClient.create(o)) {
            // a blocking command's deadline is its block time plus the grace, not commandTimeout: the
            // server answers nil after 0.5 s
            CompletableFuture<Object> held = c.command("BLPOP", "{s}late", "0.5");
            assertNull(held.join());
            assertTrue(c.set("{s}after-timeout", "v").join());
            assertEquals("v", c.get("{s}after-timeout").join());
        }
    }

    @Test
    void closeCompletesEveryPendingFutureExactlyOnce() {
        sync.delete("{s}never");
        AsyncClient c = client(TestServers.bundledPlain());
        AtomicInteger completions = new AtomicInteger();
        List<CompletableFuture<Object>> fs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            CompletableFuture<Object> f = c.command("BLPOP", "{s}never", "0");
            f.whenComplete((v, e) -> completions.incrementAndGet());
            fs.add(f);
        }
        try {
            // every BLPOP runs on a connection leased for it (core lease.c): all 20 are held
            awaitBlocked(fs.size());
        } finally {
            c.close(); // also when the wait failed, so no held BLPOP outlives this test
        }
        for (CompletableFuture<Object> f : fs) {
            assertTrue(f.isDone());
            assertInstanceOf(CancelledException.class, cause(f));
        }
        assertThrows(IllegalStateException.class, () -> c.get("k"));
        c.close(); // idempotent
        // a later client's round trip passes through the same completion thread after the
        // cancelled executions' completions: none completes a future a second time
        try (AsyncClient d = client(TestServers.bundledPlain())) {
            assertEquals("PONG", d.ping().join());
        }
        assertEquals(20, completions.get());
        awaitBlocked(0); // the closed client's connection is gone from the server
    }

    @Test
    void asyncOfTheSyncClientIsClosedWithIt() {
        SlotlaneClient s = TestServers.client(TestServers.bundledCluster());
        AsyncClient a = s.async();
        assertSame(a, s.async());
        assertTrue(a.set("sa:k", "v").join());
        assertEquals("v", s.get("sa:k"));
        s.close();
        assertThrows(IllegalStateException.class, () -> a.get("sa:k"));
    }
}
