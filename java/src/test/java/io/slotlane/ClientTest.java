package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every public method of SlotlaneClient against the bundled server (4 shards, per-shard mode). */
class ClientTest {
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

    @Test
    void modeVersionOptionsAndSlots() throws Exception {
        assertEquals(Mode.CLUSTER, c.mode());
        assertEquals(Files.readString(TestServers.ROOT.resolve("VERSION")).trim(), SlotlaneClient.version());
        assertEquals(TestServers.bundledCluster(), c.options().url());
        assertEquals(2, c.options().resp());
        // known CRC16 slots (Redis Cluster specification)
        assertEquals(12182, SlotlaneClient.keySlot("foo"));
        assertEquals(SlotlaneClient.keySlot("bar"), SlotlaneClient.keySlot("{bar}.x"));
        assertEquals(SlotlaneClient.keySlot("foo"), SlotlaneClient.keySlot("foo".getBytes(StandardCharsets.UTF_8)));
        assertEquals(0, SlotlaneClient.keySlot(new byte[0]));
        assertTrue(c.toString().contains("CLUSTER"));
        assertEquals("PONG", c.ping());
    }

    @Test
    void stringsGetSet() {
        assertNull(c.get("missing"));
        assertEquals("OK", c.set("k", "v"));
        assertEquals("v", c.get("k"));
        assertEquals("OK", c.set("ü", "ẞ€"));
        assertEquals("ẞ€", c.get("ü"));
        byte[] bin = {0, (byte) 0xff, '\r', '\n', 7};
        assertEquals("OK", c.set("bin".getBytes(StandardCharsets.UTF_8), bin));
        assertArrayEquals(bin, c.get("bin".getBytes(StandardCharsets.UTF_8)));
        assertNull(c.get("nothing".getBytes(StandardCharsets.UTF_8)));
        assertEquals("OK", c.set("empty", ""));
        assertEquals("", c.get("empty"));
    }

    @Test
    void setParams() {
        assertNull(c.set("p", "1", SetParams.setParams().xx()));
        assertEquals("OK", c.set("p", "1", SetParams.setParams().nx()));
        assertNull(c.set("p", "2", SetParams.setParams().nx()));
        assertEquals("1", c.get("p"));
        assertEquals("OK", c.set("p", "3", SetParams.setParams().xx().ex(100)));
        long t = c.ttl("p");
        assertTrue(t > 90 && t <= 100, "ttl " + t);
        assertEquals("OK", c.set("p", "4", SetParams.setParams().keepTtl()));
        assertTrue(c.ttl("p") > 90);
        assertEquals("OK", c.set("q", "1", SetParams.setParams().px(50_000)));
        assertTrue(c.ttl("q") > 40);
        long now = System.currentTimeMillis() / 1000;
        assertEquals("OK", c.set("r", "1", SetParams.setParams().exAt(now + 1000)));
        assertTrue(c.ttl("r") > 900);
        assertEquals("OK", c.set("s", "1", SetParams.setParams().pxAt((now + 1000) * 1000)));
        assertTrue(c.ttl("s") > 900);
        byte[] bk = "bk".getBytes(StandardCharsets.UTF_8);
        assertEquals("OK", c.set(bk, bk, SetParams.setParams().nx()));
        assertNull(c.set(bk, bk, SetParams.setParams().nx()));
        assertTrue(SetParams.setParams().nx().ex(5).toString().contains("NX"));
    }

    @Test
    void multiKeyAcrossSlots() {
        String[] keys = new String[40];
        String[] kv = new String[80];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = "mk:" + i;
            kv[2 * i] = keys[i];
            kv[2 * i + 1] = "v" + i;
        }
        long slots = java.util.Arrays.stream(keys).mapToInt(SlotlaneClient::keySlot).distinct().count();
        assertTrue(slots > 30);
        assertEquals("OK", c.mset(kv));
        List<String> got = c.mget(keys);
        assertEquals(40, got.size());
        for (int i = 0; i < 40; i++) assertEquals("v" + i, got.get(i));
        assertEquals(java.util.Arrays.asList("v0", null, "v1"), c.mget("mk:0", "nope", "mk:1"));
        Map<String, String> m = new LinkedHashMap<>();
        m.put("a", "1");
        m.put("b", "2");
        m.put("c", "3");
        assertEquals("OK", c.mset(m));
        List<byte[]> bytes = c.mget("a".getBytes(StandardCharsets.UTF_8), "zz".getBytes(StandardCharsets.UTF_8));
        assertArrayEquals("1".getBytes(StandardCharsets.UTF_8), bytes.get(0));
        assertNull(bytes.get(1));
        assertEquals(6, c.exists(keys[0], keys[1], "a", "a", "b", "c", "zz"));
        assertEquals(40, c.del(keys));
        assertEquals(3, c.del("a", "b", "c", "zz"));
        assertEquals(0, c.exists("a"));
        assertEquals(0, c.dbSize());
    }

    @Test
    void expiryAndCounters() {
        assertFalse(c.expire("nokey", 10));
        assertEquals(-2, c.ttl("nokey"));
        c.set("e", "1");
        assertEquals(-1, c.ttl("e"));
        assertTrue(c.expire("e", 100));
        assertTrue(c.ttl("e") > 90);
        assertEquals(1, c.incr("n"));
        assertEquals(11, c.incrBy("n", 10));
        assertEquals(10, c.decr("n"));
        assertEquals(Long.MIN_VALUE + 1, c.incrBy("m", Long.MIN_VALUE + 1));
        c.set("notnum", "x");
        ReplyException e = assertThrows(ReplyException.class, () -> c.incr("notnum"));
        assertEquals("ERR", e.prefix());
        assertEquals(ErrorKind.SERVER, e.kind());
    }

    @Test
    void lists() {
        assertEquals(2, c.rpush("l", "b", "c"));
        assertEquals(3, c.lpush("l", "a"));
        assertEquals(List.of("a", "b", "c"), c.lrange("l", 0, -1));
        assertEquals(3, c.llen("l"));
        assertEquals("a", c.lpop("l"));
        assertEquals("c", c.rpop("l"));
        assertNull(c.lpop("nolist"));
        assertNull(c.rpop("nolist"));
        assertEquals(List.of(), c.lrange("nolist", 0, -1));
        c.set("str", "x");
        ReplyException e = assertThrows(ReplyException.class, () -> c.lpush("str", "y"));
        assertEquals("WRONGTYPE", e.prefix());
    }

    @Test
    void hashes() {
        assertEquals(1, c.hset("h", "f1", "v1"));
        Map<String, String> more = new LinkedHashMap<>();
        more.put("f2", "v2");
        more.put("f3", "v3");
        assertEquals(2, c.hset("h", more));
        assertEquals("v2", c.hget("h", "f2"));
        assertNull(c.hget("h", "nof"));
        assertEquals(Map.of("f1", "v1", "f2", "v2", "f3", "v3"), c.hgetAll("h"));
        assertEquals(Map.of(), c.hgetAll("noh"));
        assertEquals(2, c.hdel("h", "f1", "f2", "nof"));
        assertEquals(Map.of("f3", "v3"), c.hgetAll("h"));
    }

    @Test
    void sets() {
        assertEquals(3, c.sadd("s", "a", "b", "c"));
        assertEquals(0, c.sadd("s", "a"));
        assertEquals(Set.of("a", "b", "c"), c.smembers("s"));
        assertTrue(c.sismember("s", "a"));
        assertFalse(c.sismember("s", "z"));
        assertEquals(1, c.srem("s", "a", "z"));
        assertEquals(2, c.scard("s"));
        assertEquals(Set.of(), c.smembers("nos"));
    }

    @Test
    void sortedSets() {
        assertEquals(1, c.zadd("z", 1.5, "a"));
        assertEquals(1, c.zadd("z", -2, "b"));
        assertEquals(1, c.zadd("z", Double.POSITIVE_INFINITY, "c"));
        assertEquals(0, c.zadd("z", 3, "a"));
        assertEquals(3.0, c.zscore("z", "a"));
        assertEquals(-2.0, c.zscore("z", "b"));
        assertEquals(Double.POSITIVE_INFINITY, c.zscore("z", "c"));
        assertNull(c.zscore("z", "nobody"));
        assertEquals(List.of("b", "a", "c"), c.zrange("z", 0, -1));
        assertEquals(1, c.zrem("z", "b", "nobody"));
        assertEquals(2, c.zcard("z"));
    }

    @Test
    void genericCommandsAndRoutes() {
        assertEquals("OK", c.command("SET", "g", "1"));
        assertEquals("1", c.command("GET", "g"));
        Object b = c.command("GET".getBytes(StandardCharsets.UTF_8), "g".getBytes(StandardCharsets.UTF_8));
        assertArrayEquals("1".getBytes(StandardCharsets.UTF_8), (byte[]) b);
        assertEquals(2L, c.command("INCRBY", "g", "1"));
        c.set("g2", "x");
        c.set("g3", "y");
        assertEquals(List.of("x", "y"), c.command("MGET", "g2", "g3"));
        // all primaries: DBSIZE is summed by the core; one key per shard
        c.flushAll();
        int[] seen = new int[4];
        for (int i = 0, n = 0; n < 4; i++) {
            String k = "shard:" + i;
            int shard = SlotlaneClient.keySlot(k) / 4096;
            if (seen[shard]++ == 0) {
                c.set(k, "x");
                n++;
            }
        }
        assertEquals(4L, c.command(Route.allPrimaries(), "DBSIZE"));
        assertEquals(4, c.dbSize());
        long perNode = 0;
        for (int i = 0; i < 4; i++) {
            perNode += (Long) c.command(Route.node("127.0.0.1:" + (TestServers.BASE + i)), "DBSIZE");
        }
        assertEquals(4, perNode);
        assertEquals(1L, c.command(Route.slot(SlotlaneClient.keySlot("shard:0")), "EXISTS", "shard:0"));
        assertEquals("PONG", c.command(Route.random(), "PING"));
        assertEquals("Route.slot(5)", Route.slot(5).toString());
        ReplyException e = assertThrows(ReplyException.class, () -> c.command("NOSUCHCOMMAND"));
        assertEquals("ERR", e.prefix());
    }

    @Test
    void statsAndRefresh() {
        ClientStats before = c.stats();
        c.set("st", "1");
        c.refresh();
        ClientStats after = c.stats();
        assertTrue(after.commands() > before.commands());
        assertTrue(after.bytesWritten() > before.bytesWritten());
        assertTrue(after.bytesRead() > before.bytesRead());
        assertTrue(after.refreshes() > before.refreshes());
        assertEquals(4, after.nodes());
        assertTrue(after.connects() >= 1);
        assertTrue(after.handles() >= 1);
        assertEquals(0, after.moved());
    }

    @Test
    void closeIsIdempotentAndFinal() {
        SlotlaneClient x = TestServers.client(TestServers.bundledCluster());
        Pipeline p = x.pipeline();
        x.set("cl", "1");
        x.close();
        x.close();
        assertThrows(IllegalStateException.class, () -> x.get("cl"));
        assertThrows(IllegalStateException.class, x::pipeline);
        p.get("cl");
        assertThrows(IllegalStateException.class, p::sync);
        assertEquals(0, x.stats().handles());
    }

    @Test
    void resp3Values() {
        try (SlotlaneClient r3 = SlotlaneClient.create(ClientOptions.builder().uri(TestServers.bundledCluster()).resp(3).build())) {
            r3.hset("h3", "f", "v");
            assertEquals(Map.of("f", "v"), r3.hgetAll("h3"));
            r3.sadd("s3", "a");
            assertEquals(Set.of("a"), r3.smembers("s3"));
            r3.zadd("z3", 2.5, "m");
            assertEquals(2.5, r3.zscore("z3", "m"));
            Object raw = r3.command("HGETALL", "h3");
            assertTrue(raw instanceof Map, "RESP3 map: " + raw);
        }
    }
}
