package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * AsyncScript (EVALSHA with the core's NOSCRIPT reload, submitted with
 * sl_loop_submit_script_cq) against the bundled server (4 shards), standalone Redis and a
 * 3-primary Redis Cluster: the SHA is the sync Script's and the server's; a key on every
 * primary, the script loaded by the core where it is missing; after SCRIPT FLUSH on one node it
 * still runs and that node got exactly one SCRIPT LOAD (its INFO commandstats); EVALSHA_RO; an
 * error reply and bad Lua fail the future; bad arguments throw before sending.
 */
class AsyncScriptTest {
    private static List<String[]> targets() {
        List<String[]> t = new ArrayList<>();
        t.add(new String[] {"bundled", TestServers.bundledCluster()});
        t.add(new String[] {"plain", TestServers.redisPlain()});
        t.add(new String[] {"redis-cluster", TestServers.redisCluster()});
        return t;
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

    private static Object get(java.util.concurrent.CompletableFuture<Object> f) throws Exception {
        return f.get(60, TimeUnit.SECONDS);
    }

    @Test
    void everyShardReloadOnceReadOnlyAndErrors() throws Exception {
        String src = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
        for (String[] t : targets()) {
            try (SlotlaneClient c = TestServers.client(t[1]);
                 AsyncClient a = AsyncClient.create(ClientOptions.builder().uri(t[1]).build())) {
                c.flushall();
                c.command(Route.allPrimaries(), "SCRIPT", "FLUSH");
                AsyncScript s = a.script(src);
                assertEquals(Script.of(c, src).sha(), s.sha(), t[0]);
                List<String> keys = new ArrayList<>();
                List<ClusterNode> ps = new ArrayList<>();
                for (ClusterNode n : ClusterNode.list(c)) if (n.isPrimary()) ps.add(n);
                for (ClusterNode n : ps) {
                    String k = keyOn(n, "ak:");
                    keys.add(k);
                    assertEquals(5L, get(s.run(List.of(k), List.of("5"))), t[0] + " " + k + ": loaded where missing");
                }
                assertEquals(s.sha(), c.command("SCRIPT", "LOAD", src), t[0] + ": the server's SHA");
                String victim = ps.get(ps.size() - 1).address();
                String last = keys.get(keys.size() - 1);
                long before = scriptLoads(c, victim);
                c.command(Route.node(victim), "SCRIPT", "FLUSH");
                assertEquals(6L, get(s.run(List.of(last), List.of("1"))), t[0]);
                assertEquals(7L, get(s.run(List.of(last), List.of("1"))), t[0]);
                long after = scriptLoads(c, victim);
                if (before > 0 || after > 0) assertEquals(1, after - before, t[0] + ": reloads on " + victim);
                AsyncScript ro = a.script("return redis.call('GET', KEYS[1])");
                assertEquals("7", get(ro.runReadOnly(List.of(last), List.of())), t[0]);

                ExecutionException e = assertThrows(ExecutionException.class,
                        () -> get(a.script("return redis.error_reply('nope')").run(List.of(last), List.of())));
                assertInstanceOf(ReplyException.class, e.getCause(), t[0]);
                assertTrue(e.getCause().getMessage().contains("nope"), e.getCause().getMessage());
                e = assertThrows(ExecutionException.class, () -> get(a.script("not lua").run(List.of(last), List.of())));
                assertInstanceOf(SlotlaneException.class, e.getCause(), t[0]);
                assertThrows(IllegalArgumentException.class, () -> s.run(null, List.of()));
                assertThrows(IllegalArgumentException.class, () -> s.run(List.of(last), java.util.Arrays.asList("1", null)));
                c.flushall();
            }
        }
    }
}
