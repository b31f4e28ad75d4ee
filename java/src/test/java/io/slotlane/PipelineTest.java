package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import io.slotlane.CommandOptions.SetOptions;
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
        c.flushall();
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
            for (Object o : r) assertEquals(true, o);
            assertEquals(0, p.size());
            for (int s = 0; s < keys.length; s++) p.get(keys[s]);
            r = p.sync();
            for (int s = 0; s < keys.length; s++) assertEquals("value-of-" + s, r.get(s), keys[s]);
        }
        ClientStats after = c.stats();
        assertEquals(4, after.nodes());
        assertEquals(0, after.moved() - before.moved());
        assertEquals(2 * 16384, after.commands() - before.commands());
        assertEquals(16384, c.dbsize());
    }

    @Test
    void typedRepliesAndConversions() {
        Pipeline p = c.pipeline();
        Reply<Boolean> set = p.set("a", "1");
        p.set("b", "2".getBytes(StandardCharsets.UTF_8));
        Reply<Boolean> nx1 = p.set("c", "3", new SetOptions().nx());
        Reply<Boolean> nx2 = p.set("c", "4", new SetOptions().nx());
        Reply<String> get = p.get("a");
        Reply<String> missing = p.get("missing");
        Reply<List<String>> mget = p.mget("a", "b", "missing");
        Reply<Boolean> mset = p.mset(List.of(Pair.of("d", "4"), Pair.of("e", 5)));
        Reply<Long> exists = p.exists("a", "b", "zz");
        Reply<Boolean> expire = p.expire("a", 100);
        Reply<Boolean> expireMissing = p.expire("zz", 100);
        Reply<Long> incr = p.incrby("n", 5);
        Reply<Long> rpush = p.rpush("l", "x", "y");
        Reply<List<String>> lrange = p.lrange("l", 0, -1);
        Reply<Long> hset = p.hset("h", List.of(Pair.of("f", "v")));
        Reply<Map<String, String>> hgetall = p.hgetall("h");
        Reply<Long> sadd = p.sadd("s", "m1", "m2");
        Reply<Set<String>> smembers = p.smembers("s");
        Reply<Long> zadd = p.zadd("z", List.of(Pair.of(2.5, "m")));
        Reply<Double> zscore = p.zscore("z", "m");
        Reply<Double> zscoreNone = p.zscore("z", "none");
        Reply<List<Pair<String, Double>>> withScores = p.zrangeWithscores("z", 0, -1);
        p.command("ECHO", "hi");
        p.command("ECHO".getBytes(StandardCharsets.UTF_8), new byte[] {1, 2});
        Reply<Long> del = p.delete("a", "b", "zz");
        assertThrows(IllegalStateException.class, get::get, "a Reply before sync");
        assertTrue(p.toString().contains("commands"));
        List<Object> r = p.sync();
        assertTrue(set.get());
        assertTrue(nx1.get());
        assertFalse(nx2.get());
        assertEquals("1", get.get());
        assertNull(missing.get());
        assertEquals(Arrays.asList("1", "2", null), mget.get());
        assertTrue(mset.get());
        assertEquals(2L, exists.get());
        assertTrue(expire.get());
        assertFalse(expireMissing.get());
        assertEquals(5L, incr.get());
        assertEquals(2L, rpush.get());
        assertEquals(List.of("x", "y"), lrange.get());
        assertEquals(1L, hset.get());
        assertEquals(Map.of("f", "v"), hgetall.get());
        assertEquals(2L, sadd.get());
        assertEquals(Set.of("m1", "m2"), smembers.get());
        assertEquals(1L, zadd.get());
        assertEquals(2.5, zscore.get());
        assertNull(zscoreNone.get());
        assertEquals(List.of(Pair.of("m", 2.5)), withScores.get());
        assertEquals(2L, del.get());
        // sync's values are the same shaped values, the raw commands' as decoded
        assertEquals(25, r.size());
        assertEquals(true, r.get(0));
        assertEquals(Map.of("f", "v"), r.get(15));
        assertEquals("hi", r.get(22));
        assertArrayEquals(new byte[] {1, 2}, (byte[]) r.get(23));
        // a Reply is valid until the next sync
        p.get("a");
        p.sync();
        assertThrows(IllegalStateException.class, get::get);
        p.close();
        assertThrows(IllegalStateException.class, () -> p.get("a"));
        assertThrows(IllegalStateException.class, p::sync);
    }

    @Test
    void errorsFailOnlyTheirCommand() {
        c.set("str", "x");
        try (Pipeline p = c.pipeline()) {
            p.set("k1", "v1");
            Reply<Long> lpush = p.lpush("str", "y");
            p.get("k1");
            p.command("NOSUCH", "arg");
            p.incr("str");
            p.get("str");
            List<Object> r = p.sync();
            assertEquals(true, r.get(0));
            assertEquals("WRONGTYPE", assertThrows(ReplyException.class, lpush::get).prefix());
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
        List<Pair<String, String>> kv = new ArrayList<>();
        for (int i = 0; i < 3000; i++) kv.add(Pair.of("{t}k" + i, value.substring(0, 100)));
        assertTrue(c.mset(kv));
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
