package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Many threads share one client (a pool of core handles smaller than the thread count). */
class ConcurrencyTest {
    @Test
    void sixteenThreadsShareAClient() throws Exception {
        ClientOptions o = ClientOptions.builder().uri(TestServers.bundledCluster()).poolSize(4).build();
        try (SlotlaneClient c = SlotlaneClient.create(o)) {
            c.flushall();
            ExecutorService pool = Executors.newFixedThreadPool(16);
            List<Future<Integer>> fs = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                final int thread = t;
                fs.add(pool.submit(() -> {
                    int checked = 0;
                    try (Pipeline p = c.pipeline()) {
                        for (int round = 0; round < 50; round++) {
                            String k = "t" + thread + ":r" + round;
                            assertTrue(c.set(k, k));
                            assertEquals(k, c.get(k));
                            assertEquals(round + 1, c.incr("ctr:" + thread));
                            for (int i = 0; i < 20; i++) {
                                p.set(k + ":" + i, "v" + i);
                                p.get(k + ":" + i);
                            }
                            List<Object> r = p.sync();
                            for (int i = 0; i < 20; i++) {
                                assertEquals(true, r.get(2 * i));
                                assertEquals("v" + i, r.get(2 * i + 1));
                            }
                            checked += 43;
                        }
                    }
                    return checked;
                }));
            }
            pool.shutdown();
            assertTrue(pool.awaitTermination(120, TimeUnit.SECONDS));
            int total = 0;
            for (Future<Integer> f : fs) total += f.get();
            assertEquals(16 * 50 * 43, total);
            ClientStats s = c.stats();
            assertTrue(s.handles() <= 4, "handles " + s.handles());
            assertTrue(s.handles() >= 2, "the pool was used by several threads at once: " + s.handles());
            for (int t = 0; t < 16; t++) assertEquals("50", c.get("ctr:" + t));
        }
    }
}
