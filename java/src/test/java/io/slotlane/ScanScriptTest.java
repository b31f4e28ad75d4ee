package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * ScanIterable, ClusterNode and Script against the bundled server (per-shard), standalone
 * Redis and a 3-primary Redis Cluster: 10 000 keys each once, MATCH and TYPE, an empty
 * keyspace, the node list, a script with keys on every shard reloaded once (the node's INFO
 * commandstats) after SCRIPT FLUSH on one node, FUNCTION LOAD then FCALL on every shard.
 */
class ScanScriptTest {
    private static List<String[]> targets() {
        List<String[]> t = new ArrayList<>();
        t.add(new String[] {"bundled", TestServers.bundledCluster()});
        t.add(new String[] {"plain", TestServers.redisPlain()});
        t.add(new String[] {"redis-cluster", TestServers.redisCluster()});
        return t;
    }

    private static Map<String, Integer> scan(SlotlaneClient c, String match, int count, String type) {
        Map<String, Integer> seen = new HashMap<>();
        for (byte[] k : ScanIterable.of(c, match, count, type)) seen.merge(new String(k, StandardCharsets.UTF_8), 1, Integer::sum);
        return seen;
    }

    private static List<ClusterNode> primaries(SlotlaneClient c) {
        List<ClusterNode> p = new ArrayList<>();
        for (ClusterNode n : ClusterNode.list(c)) if (n.isPrimary()) p.add(n);
        return p;
    }

    private static String keyOn(ClusterNode n, String prefix) {
        int[] r = n.slots()[0];
        for (int i = 0;; i++) {
            String k = prefix + i;
            int s = SlotlaneClient.keySlot(k);
            if (s >= r[0] && s <= r[1]) return k;
        }
    }

    private static long scriptLoads(SlotlaneClient c, String addr) {
        String info = String.valueOf(c.command(Route.node(addr), "INFO", "commandstats"));
        for (String line : info.split("\n"))
            if (line.startsWith("cmdstat_script|load:calls=")) return Long.parseLong(line.split("calls=")[1].split(",")[0]);
        return 0;
    }

    @Test
    void everyKeyOnceMatchTypeEmptyAndNodes() {
        for (String[] t : targets()) {
            try (SlotlaneClient c = TestServers.client(t[1])) {
                c.flushall();
                assertTrue(scan(c, null, 0, null).isEmpty(), t[0] + ": empty");
                for (int i = 0; i < 10000; i += 1000) {
                    Pipeline p = c.pipeline();
                    for (int k = i; k < i + 1000; k++) p.command("SET", "js:" + k, "v");
                    p.sync();
                }
                for (int i = 0; i < 20; i++) c.command("HSET", "jsh:" + i, "f", "v");
                Map<String, Integer> seen = scan(c, null, 500, null);
                assertEquals(10020, seen.size(), t[0]);
                assertTrue(seen.values().stream().allMatch(n -> n == 1), t[0] + ": a key twice");
                Map<String, Integer> m = scan(c, "js:1*", 0, null);
                assertTrue(m.keySet().stream().allMatch(k -> k.startsWith("js:1")), t[0]);
                assertEquals(1111, m.size(), t[0] + ": MATCH");
                assertEquals(20, scan(c, null, 0, "hash").size(), t[0] + ": TYPE");
                List<ClusterNode> ps = primaries(c);
                int covered = 0;
                for (ClusterNode n : ps) {
                    for (int[] r : n.slots()) covered += r[1] - r[0] + 1;
                    assertEquals("PONG", c.command(Route.node(n.address()), "PING"));
                }
                assertEquals(16384, covered, t[0]);
                assertEquals(t[0].equals("plain") ? 1 : t[0].equals("bundled") ? 4 : 3, ps.size(), t[0]);
                assertThrows(IllegalArgumentException.class, () -> ScanIterable.of(c, null, -1, null));
                // an abandoned iterator gives its handle back
                try (ScanIterable.Iter it = ScanIterable.of(c, null, 10, null).iterator()) {
                    assertTrue(it.hasNext());
                }
                c.flushall();
            }
        }
    }

    @Test
    void scriptOnEveryShardReloadedOnceAndFunctions() {
        for (String[] t : targets()) {
            try (SlotlaneClient c = TestServers.client(t[1])) {
                c.flushall();
                c.command("SCRIPT", "FLUSH");
                Script s = Script.of(c, "return redis.call('INCRBY', KEYS[1], ARGV[1])");
                assertEquals(s.sha(), c.command("SCRIPT", "LOAD", "return redis.call('INCRBY', KEYS[1], ARGV[1])"), t[0]);
                List<ClusterNode> ps = primaries(c);
                List<String> keys = new ArrayList<>();
                for (ClusterNode n : ps) {
                    String k = keyOn(n, "jk:");
                    keys.add(k);
                    assertEquals(5L, s.run(List.of(k), List.of("5")), t[0] + " " + k);
                }
                String victim = ps.get(ps.size() - 1).address();
                long before = scriptLoads(c, victim);
                c.command(Route.node(victim), "SCRIPT", "FLUSH");
                String last = keys.get(keys.size() - 1);
                assertEquals(6L, s.run(List.of(last), List.of("1")), t[0]);
                assertEquals(7L, s.run(List.of(last), List.of("1")), t[0]);
                long after = scriptLoads(c, victim);
                if (before > 0 || after > 0) assertEquals(1, after - before, t[0] + ": reloads on " + victim);
                Script ro = Script.of(c, "return redis.call('GET', KEYS[1])");
                assertEquals(keys.size() == 1 ? "7" : "5", ro.runReadOnly(List.of(keys.get(0)), List.of()), t[0]);
                assertThrows(SlotlaneException.class, () -> Script.of(c, "not lua").run(List.of(keys.get(0)), List.of()));
                c.command("FUNCTION", "FLUSH");
                assertEquals("jlib", c.command("FUNCTION", "LOAD",
                        "#!lua name=jlib\nredis.register_function('jf', function(keys, args) return redis.call('INCR', keys[1]) end)"), t[0]);
                for (String k : keys) {
                    long v = Long.parseLong((String) c.command("GET", k));
                    assertEquals(v + 1, c.command("FCALL", "jf", "1", k), t[0] + " FCALL " + k);
                }
                c.command("FUNCTION", "DELETE", "jlib");
                assertThrows(SlotlaneException.class, () -> c.command("FCALL", "jf", "1", keys.get(0)));
                c.flushall();
            }
        }
    }
}
