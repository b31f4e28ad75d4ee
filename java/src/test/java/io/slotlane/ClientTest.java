package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import io.slotlane.CommandOptions.ExpireOptions;
import io.slotlane.CommandOptions.SetGetOptions;
import io.slotlane.CommandOptions.SetOptions;
import io.slotlane.CommandOptions.ZaddOptions;
import io.slotlane.CommandOptions.ZrangeWithscoresOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
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
        c.flushall();
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
        assertTrue(c.set("k", "v"));
        assertEquals("v", c.get("k"));
        assertTrue(c.set("ü", "ẞ€"));
        assertEquals("ẞ€", c.get("ü"));
        byte[] bin = {0, (byte) 0xff, '\r', '\n', 7};
        assertTrue(c.set("bin", bin)); // a byte[] value; binary replies through the raw byte[] call
        assertArrayEquals(bin, (byte[]) c.command("GET".getBytes(StandardCharsets.UTF_8), "bin".getBytes(StandardCharsets.UTF_8)));
        assertTrue(c.set("num", 42));
        assertEquals(43, c.incr("num"));
        assertTrue(c.set("f", 1.5));
        assertEquals("1.5", c.get("f"));
        assertTrue(c.set("empty", ""));
        assertEquals("", c.get("empty"));
    }

    @Test
    void setOptions() {
        assertFalse(c.set("p", "1", new SetOptions().xx()));
        assertTrue(c.set("p", "1", new SetOptions().nx()));
        assertFalse(c.set("p", "2", new SetOptions().nx()));
        assertEquals("1", c.get("p"));
        assertTrue(c.set("p", "3", new SetOptions().xx().ex(100)));
        long t = c.ttl("p");
        assertTrue(t > 90 && t <= 100, "ttl " + t);
        assertTrue(c.set("p", "4", new SetOptions().keepttl()));
        assertTrue(c.ttl("p") > 90);
        assertTrue(c.set("q", "1", new SetOptions().px(50_000)));
        assertTrue(c.ttl("q") > 40);
        long now = System.currentTimeMillis() / 1000;
        assertTrue(c.set("r", "1", new SetOptions().exat(now + 1000)));
        assertTrue(c.ttl("r") > 900);
        assertTrue(c.set("s", "1", new SetOptions().pxat((now + 1000) * 1000)));
        assertTrue(c.ttl("s") > 900);
        assertEquals("1", c.setGet("s", "2", null));
        assertNull(c.setGet("nos", "2", new SetGetOptions().nx()));
        // options the server refuses together are sent as given: its syntax error
        assertEquals("ERR", assertThrows(ReplyException.class, () -> c.set("p", "1", new SetOptions().nx().xx())).prefix());
    }

    @Test
    void multiKeyAcrossSlots() {
        String[] keys = new String[40];
        List<Pair<String, String>> kv = new ArrayList<>();
        for (int i = 0; i < keys.length; i++) {
            keys[i] = "mk:" + i;
            kv.add(Pair.of(keys[i], "v" + i));
        }
        long slots = java.util.Arrays.stream(keys).mapToInt(SlotlaneClient::keySlot).distinct().count();
        assertTrue(slots > 30);
        assertTrue(c.mset(kv));
        List<String> got = c.mget(keys);
        assertEquals(40, got.size());
        for (int i = 0; i < 40; i++) assertEquals("v" + i, got.get(i));
        assertEquals(java.util.Arrays.asList("v0", null, "v1"), c.mget("mk:0", "nope", "mk:1"));
        assertTrue(c.mset(List.of(Pair.of("a", "1"), Pair.of("b", "2"), Pair.of("c", 3))));
        assertEquals(java.util.Arrays.asList("1", null, "3"), c.mget("a", "zz", "c"));
        assertEquals(6, c.exists(keys[0], keys[1], "a", "a", "b", "c", "zz"));
        assertEquals(40, c.delete(keys));
        assertEquals(3, c.delete("a", "b", "c", "zz"));
        assertEquals(0, c.exists("a"));
        assertEquals(0, c.dbsize());
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
        assertEquals(11, c.incrby("n", 10));
        assertEquals(10, c.decr("n"));
        assertEquals(Long.MIN_VALUE + 1, c.incrby("m", Long.MIN_VALUE + 1));
        assertTrue(c.expire("e", 200, new ExpireOptions().gt()));
        assertFalse(c.expire("e", 10, new ExpireOptions().gt()));
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
        assertEquals(1, c.hset("h", List.of(Pair.of("f1", "v1"))));
        assertEquals(2, c.hset("h", List.of(Pair.of("f2", "v2"), Pair.of("f3", "v3"))));
        assertEquals("v2", c.hget("h", "f2"));
        assertNull(c.hget("h", "nof"));
        assertEquals(Map.of("f1", "v1", "f2", "v2", "f3", "v3"), c.hgetall("h"));
        assertEquals(Map.of(), c.hgetall("noh"));
        assertEquals(2, c.hdel("h", "f1", "f2", "nof"));
        assertEquals(Map.of("f3", "v3"), c.hgetall("h"));
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
        assertEquals(1, c.zadd("z", List.of(Pair.of(1.5, "a"))));
        assertEquals(1, c.zadd("z", List.of(Pair.of(-2, "b"))));
        assertEquals(1, c.zadd("z", List.of(Pair.of(Double.POSITIVE_INFINITY, "c"))));
        assertEquals(0, c.zadd("z", List.of(Pair.of(3, "a"))));
        assertEquals(0, c.zadd("z", List.of(Pair.of(1, "a")), new ZaddOptions().gt()));
        assertEquals(3.0, c.zscore("z", "a"));
        assertEquals(-2.0, c.zscore("z", "b"));
        assertEquals(Double.POSITIVE_INFINITY, c.zscore("z", "c"));
        assertNull(c.zscore("z", "nobody"));
        assertEquals(List.of("b", "a", "c"), c.zrange("z", 0, -1));
        assertEquals(List.of(Pair.of("b", -2.0), Pair.of("a", 3.0)), c.zrangeWithscores("z", "-inf", "(5", new ZrangeWithscoresOptions().byscore()));
        assertEquals(1, c.zrem("z", "b", "nobody"));
        assertEquals(2, c.zcard("z"));
    }

    @Test
    void genericCommandsAndRoutes() {
        assertEquals("OK", c.command(Route.allPrimaries(), "FLUSHALL"));
        assertEquals("OK", c.command("SET", "g", "1"));
        assertEquals("1", c.command("GET", "g"));
        Object b = c.command("GET".getBytes(StandardCharsets.UTF_8), "g".getBytes(StandardCharsets.UTF_8));
        assertArrayEquals("1".getBytes(StandardCharsets.UTF_8), (byte[]) b);
        assertEquals(2L, c.command("INCRBY", "g", "1"));
        c.set("g2", "x");
        c.set("g3", "y");
        assertEquals(List.of("x", "y"), c.command("MGET", "g2", "g3"));
        // all primaries: DBSIZE is summed by the core; one key per shard
        c.flushall();
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
        assertEquals(4, c.dbsize());
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
            r3.hset("h3", List.of(Pair.of("f", "v")));
            assertEquals(Map.of("f", "v"), r3.hgetall("h3"));
            r3.sadd("s3", "a");
            assertEquals(Set.of("a"), r3.smembers("s3"));
            r3.zadd("z3", List.of(Pair.of(2.5, "m")));
            r3.zadd("z3", List.of(Pair.of(1, "n")));
            assertEquals(List.of(Pair.of("n", 1.0), Pair.of("m", 2.5)), r3.zrangeWithscores("z3", 0, -1));
            assertEquals(2.5, r3.zscore("z3", "m"));
            Object raw = r3.command("HGETALL", "h3");
            assertTrue(raw instanceof Map, "RESP3 map: " + raw);
        }
    }
}
