package io.slotlane;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * Subscriber against the bundled server (per-shard cluster) and a Redis Cluster: classic,
 * pattern and sharded messages, unsubscribe, the queue bound's drops and close while a poll
 * waits. Every wait ends on a record or a counter; the limits only turn a hang into a failure.
 */
class SubscriberTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private static String url(String server) {
        return server.equals("bundled") ? TestServers.bundledCluster() : TestServers.redisCluster();
    }

    private static Subscriber.Message take(Subscriber s, Subscriber.Type want) {
        Subscriber.Message m = s.poll(WAIT);
        assertNotNull(m, "no " + want + " within " + WAIT);
        assertEquals(want, m.type(), m.toString());
        return m;
    }

    @ParameterizedTest
    @ValueSource(strings = {"bundled", "redis"})
    void messagesPatternsShards(String server) {
        String url = url(server);
        try (SlotlaneClient c = TestServers.client(url);
             Subscriber s = Subscriber.create(ClientOptions.builder().uri(url).build())) {
            s.subscribe("jps:news");
            assertEquals("jps:news", take(s, Subscriber.Type.SUBSCRIBE).channel());
            s.psubscribe("jps:n*");
            assertEquals("jps:n*", take(s, Subscriber.Type.PSUBSCRIBE).channel());
            s.ssubscribe("jps:{s}shard");
            assertEquals("jps:{s}shard", take(s, Subscriber.Type.SSUBSCRIBE).channel());
            byte[] binary = new byte[300];
            for (int i = 0; i < binary.length; i++) binary[i] = (byte) i;
            c.publish("jps:news", binary);
            Subscriber.Message m = take(s, Subscriber.Type.MESSAGE);
            assertEquals("jps:news", m.channel());
            assertArrayEquals(binary, m.payloadBytes());
            m = take(s, Subscriber.Type.PMESSAGE);
            assertEquals("jps:n*", m.pattern());
            assertArrayEquals(binary, m.payloadBytes());
            byte[] big = new byte[1 << 20]; // larger than the first data buffer: it grows
            for (int i = 0; i < big.length; i++) big[i] = (byte) (i * 7);
            assertEquals(1, c.spublish("jps:{s}shard", big));
            m = take(s, Subscriber.Type.SMESSAGE);
            assertEquals("jps:{s}shard", m.channel());
            assertArrayEquals(big, m.payloadBytes());
            // order per channel, nothing lost
            int n = 1000;
            try (Pipeline p = c.pipeline()) {
                for (int i = 0; i < n; i++) p.publish("jps:news", Integer.toString(i));
                p.sync();
            }
            List<String> got = new ArrayList<>();
            for (int i = 0; i < 2 * n; i++) {
                m = s.poll(WAIT);
                assertNotNull(m);
                if (m.type() == Subscriber.Type.MESSAGE) got.add(m.payload());
            }
            for (int i = 0; i < n; i++) assertEquals(Integer.toString(i), got.get(i));
            s.unsubscribe("jps:news");
            assertEquals("jps:news", take(s, Subscriber.Type.UNSUBSCRIBE).channel());
            s.punsubscribe();
            assertEquals("jps:n*", take(s, Subscriber.Type.PUNSUBSCRIBE).channel());
            assertEquals(0, c.publish("jps:news", "after")); // nobody listens any more
            assertNull(s.poll(Duration.ZERO));
            Subscriber.Stats st = s.stats();
            assertEquals(1, st.confirmed());
            assertEquals(0, st.dropped());
            assertEquals(0, st.connectionLosses());
        }
    }

    @Test
    void boundedQueueDropsAndReports() throws Exception {
        String url = TestServers.bundledCluster();
        try (SlotlaneClient c = TestServers.client(url);
             Subscriber s = Subscriber.create(ClientOptions.builder().uri(url).build(),
                     new Subscriber.Options().maxQueueBytes(4096))) {
            s.subscribe("jps:bounded");
            take(s, Subscriber.Type.SUBSCRIBE);
            int n = 200;
            String payload = "x".repeat(100);
            try (Pipeline p = c.pipeline()) {
                for (int i = 0; i < n; i++) p.publish("jps:bounded", payload);
                p.sync();
            }
            // nothing is drained meanwhile: every message is queued or dropped
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (s.stats().messages() + s.stats().dropped() < n) {
                assertTrue(System.nanoTime() < deadline, "the subscriber did not see " + n + " messages: " + s.stats());
                Thread.onSpinWait();
            }
            Subscriber.Stats st = s.stats();
            assertTrue(st.dropped() > 0, st.toString());
            long received = 0, reported = 0;
            Subscriber.Message m;
            while ((m = s.poll(Duration.ZERO)) != null) {
                if (m.type() == Subscriber.Type.MESSAGE) received++;
                else if (m.type() == Subscriber.Type.OVERFLOW) reported += m.count();
            }
            assertEquals(st.dropped(), reported);
            assertEquals(n, received + reported);
        }
        assertThrows(IllegalArgumentException.class, () -> new Subscriber.Options().maxQueueBytes(0));
    }

    @Test
    void listenerAndCloseWhilePollWaits() throws Exception {
        String url = TestServers.bundledCluster();
        Subscriber s = Subscriber.create(ClientOptions.builder().uri(url).build());
        s.subscribe("jps:wait");
        take(s, Subscriber.Type.SUBSCRIBE);
        Subscriber.Message[] result = new Subscriber.Message[1];
        Thread t = new Thread(() -> result[0] = s.poll(null), "poller");
        t.start();
        // the poller is inside the core's drain (its stack says so), then close wakes it
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!inDrain(t)) {
            assertTrue(System.nanoTime() < deadline, "the poller never reached sl_subscriber_drain");
            Thread.onSpinWait();
        }
        s.close();
        t.join(WAIT.toMillis());
        assertFalse(t.isAlive(), "poll did not return after close");
        assertNull(result[0]);
        assertTrue(s.isClosed());
        assertThrows(IllegalStateException.class, () -> s.subscribe("jps:late"));
        s.close(); // idempotent

        try (SlotlaneClient c = TestServers.client(url);
             Subscriber l = Subscriber.create(ClientOptions.builder().uri(url).build())) {
            LinkedBlockingQueue<Subscriber.Message> got = new LinkedBlockingQueue<>();
            l.onMessage(got::add);
            assertThrows(IllegalStateException.class, () -> l.poll(Duration.ZERO));
            l.subscribe("jps:listen");
            Subscriber.Message m = got.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(m);
            assertEquals(Subscriber.Type.SUBSCRIBE, m.type());
            assertEquals(1, c.publish("jps:listen", "hello"));
            m = got.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(m);
            assertEquals("hello", m.payload());
        }
    }

    private static boolean inDrain(Thread t) {
        for (StackTraceElement e : t.getStackTrace())
            if (e.getMethodName().contains("sl_1subscriber_1drain") || e.getMethodName().contains("sl_subscriber_drain"))
                return true;
        return false;
    }
}
