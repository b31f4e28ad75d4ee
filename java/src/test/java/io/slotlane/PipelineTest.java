package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Pipelines against the bundled server (4 shards): every method, every slot, errors in place, growth. */
class PipelineTest {
    static SlotlaneClient c;

    @BeforeAll
    static void start() {
        c = TestServers.client(TestServers.bundledCluster());
    }

    @AfterAll
    static void stop() {
        c.close();
    }

    @BeforeEach
    void flush() {
        c.flushAll();
    }

    /** One key per slot, 16384 keys: key i has slot i. */
    static String[] keyPerSlot() {
        String[] keys = new String[16384];
        int found = 0;
        for (int i = 0; found < 16384; i++) {
            String k = "slot:" + i;
            int s = SlotlaneClient.keySlot(k);
            if (keys[s] == null) {
                keys[s] = k;
                found++;
            }
        }
        return keys;
    }

    @Test
    void everySlotInOnePipeline() {
        String[] keys = keyPerSlot();
        ClientStats before = c.stats();
        try (Pipeline p = c.pipeline()) {
            for (int s = 0; s < keys.length; s++) p.set(keys[s], "value-of-" + s);
            assertEquals(16384, p.size());
            List<Object> r = p.sync();
            assertEquals(16384, r.size());
            for (Object o : r) assertEquals("OK", o);
            assertEquals(0, p.size());
            for (int s = 0; s < keys.length; s++) p.get(keys[s]);
            r = p.sync();
            for (int s = 0; s < keys.length; s++) assertEquals("value-of-" + s, r.get(s), keys[s]);
        }
        ClientStats after = c.stats();
        assertEquals(4, after.nodes());
        assertEquals(0, after.moved() - before.moved());
        assertEquals(2 * 16384, after.commands() - before.commands());
        assertEquals(16384, c.dbSize());
    }

    @Test
    void everyMethodAndConversions() {
        Pipeline p = c.pipeline();
        p.set("a", "1").set("b".getBytes(StandardCharsets.UTF_8), "2".getBytes(StandardCharsets.UTF_8))
                .set("c", "3", SetParams.setParams().nx()).set("c", "4", SetParams.setParams().nx())
                .get("a").get("b".getBytes(StandardCharsets.UTF_8)).get("missing")
                .mget("a", "b", "missing").mset("d", "4", "e", "5").mset(Map.of("f", "6"))
                .exists("a", "b", "zz").expire("a", 100).expire("zz", 100).ttl("a")
                .incr("n").incrBy("n", 5)
                .rpush("l", "x", "y").lpush("l", "w").lrange("l", 0, -1)
                .hset("h", "f", "v").hget("h", "f").hgetAll("h")
                .sadd("s", "m1", "m2").smembers("s")
                .zadd("z", 2.5, "m").zscore("z", "m").zscore("z", "none")
                .command("ECHO", "hi").command("ECHO".getBytes(StandardCharsets.UTF_8), new byte[] {1, 2})
                .del("a", "b", "zz");
        assertTrue(p.toString().contains("commands"));
        List<Object> r = p.sync();
        List<Object> want = Arrays.asList("OK", "OK", "OK", null, "1", null /* bytes, checked below */, null,
                Arrays.asList("1", "2", null), "OK", "OK", 2L, true, false, 100L, 1L, 6L, 2L, 3L,
                List.of("w", "x", "y"), 1L, "v", Map.of("f", "v"), 2L, Set.of("m1", "m2"), 1L, 2.5, null, "hi", null, 2L);
        assertEquals(want.size(), r.size());
        for (int i = 0; i < want.size(); i++) {
            if (i == 5) assertArrayEquals("2".getBytes(StandardCharsets.UTF_8), (byte[]) r.get(i));
            else if (i == 28) assertArrayEquals(new byte[] {1, 2}, (byte[]) r.get(i));
            else assertEquals(want.get(i), r.get(i), "command #" + i);
        }
        p.close();
        assertThrows(IllegalStateException.class, () -> p.get("a"));
        assertThrows(IllegalStateException.class, p::sync);
    }

    @Test
    void errorsFailOnlyTheirCommand() {
        c.set("str", "x");
        try (Pipeline p = c.pipeline()) {
            p.set("k1", "v1").lpush("str", "y").get("k1").command("NOSUCH", "arg").incr("str").get("str");
            List<Object> r = p.sync();
            assertEquals("OK", r.get(0));
            ReplyException wrongType = assertInstanceOf(ReplyException.class, r.get(1));
            assertEquals("WRONGTYPE", wrongType.prefix());
            assertEquals("v1", r.get(2));
            assertEquals("ERR", assertInstanceOf(ReplyException.class, r.get(3)).prefix());
            assertInstanceOf(ReplyException.class, r.get(4));
            assertEquals("x", r.get(5));
        }
    }

    @Test
    void emptyAndReuse() {
        try (Pipeline p = c.pipeline()) {
            assertEquals(List.of(), p.sync());
            for (int round = 0; round < 3; round++) {
                p.incr("ctr");
                assertEquals(List.of((long) round + 1), p.sync());
            }
        }
    }

    @Test
    void largeRepliesGrowTheBuffers() {
        char[] big = new char[1 << 20];
        Arrays.fill(big, 'x');
        String value = new String(big);
        c.set("big", value);
        try (Pipeline p = c.pipeline()) {
            // 1 MiB of data (the data buffer starts at 64 KiB) and 5000 records (it starts at 1024)
            p.get("big");
            for (int i = 0; i < 5000; i++) p.get("big:" + i);
            p.get("big");
            List<Object> r = p.sync();
            assertEquals(value, r.get(0));
            assertEquals(value, r.get(5001));
            for (int i = 1; i <= 5000; i++) assertNull(r.get(i));
            // the next one fits without growing again
            p.get("big");
            assertEquals(value, p.sync().get(0));
        }
        // a big command (the command buffer starts at 8 KiB)
        List<String> kv = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            kv.add("{t}k" + i);
            kv.add(value.substring(0, 100));
        }
        assertEquals("OK", c.mset(kv.toArray(new String[0])));
        assertEquals(value.substring(0, 100), c.get("{t}k2999"));
    }

    @Test
    void nestedRepliesAndBinaryMode() {
        c.rpush("nl", "a", "b");
        try (Pipeline p = c.pipeline()) {
            p.command("LRANGE".getBytes(StandardCharsets.UTF_8), "nl".getBytes(StandardCharsets.UTF_8),
                    "0".getBytes(StandardCharsets.UTF_8), "-1".getBytes(StandardCharsets.UTF_8));
            p.command("LRANGE", "nl", "0", "-1");
            List<Object> r = p.sync();
            List<?> bytes = (List<?>) r.get(0);
            assertArrayEquals("a".getBytes(StandardCharsets.UTF_8), (byte[]) bytes.get(0));
            assertEquals(List.of("a", "b"), r.get(1));
        }
    }
}
