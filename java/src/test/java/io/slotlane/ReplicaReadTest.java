package io.slotlane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ClientOptions.readFrom against a Redis Cluster of 3 primaries x 1 replica of its own
 * (ports BASE+70..+81): reads with PREFER_REPLICA and REPLICAS land on the replicas, by
 * the nodes' own INFO commandstats; PRIMARY keeps them on the primaries.
 */
class ReplicaReadTest {
    private static TestServers.RedisCluster cluster;

    @BeforeAll
    static void start() {
        cluster = new TestServers.RedisCluster("replicas", TestServers.BASE + 70, 3, 1);
    }

    @AfterAll
    static void stop() {
        if (cluster != null) cluster.stop();
    }

    private static SlotlaneClient node(int port) {
        return SlotlaneClient.create(ClientOptions.builder().host("127.0.0.1", port).mode(Mode.PLAIN).build());
    }

    private static long getCalls(int port) {
        try (SlotlaneClient c = node(port)) {
            Object info = c.command("INFO", "commandstats");
            String text = info instanceof byte[] ? new String((byte[]) info) : String.valueOf(info);
            for (String line : text.split("\r?\n"))
                if (line.startsWith("cmdstat_get:")) return Long.parseLong(line.split("calls=")[1].split(",")[0]);
            return 0;
        }
    }

    /** A number field of the node's INFO replication (master_repl_offset: sent by a primary, applied by a replica). */
    private static long replInfo(int port, String field) {
        try (SlotlaneClient c = node(port)) {
            for (String line : String.valueOf(c.command("INFO", "replication")).split("\r?\n"))
                if (line.startsWith(field)) return Long.parseLong(line.substring(field.length()).trim());
        }
        throw new IllegalStateException(port + " has no " + field);
    }

    private static boolean isReplica(int port) {
        try (SlotlaneClient c = node(port)) {
            return String.valueOf(c.command("INFO", "replication")).contains("role:slave");
        }
    }

    private static long[] readsOn(ClientOptions.ReadFrom readFrom, List<String> keys) {
        List<Integer> prim = new ArrayList<>(), rep = new ArrayList<>();
        for (int i = 0; i < cluster.n; i++) (isReplica(cluster.base + i) ? rep : prim).add(cluster.base + i);
        assertEquals(3, rep.size());
        Map<Integer, Long> before = new HashMap<>();
        for (int i = 0; i < cluster.n; i++) before.put(cluster.base + i, getCalls(cluster.base + i));
        try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(cluster.url()).readFrom(readFrom).build());
             Pipeline p = c.pipeline()) {
            for (String k : keys) p.get(k);
            List<Object> out = p.sync();
            for (int i = 0; i < keys.size(); i++) assertEquals(keys.get(i), out.get(i));
        }
        long onRep = 0, onPrim = 0;
        for (int port : rep) onRep += getCalls(port) - before.get(port);
        for (int port : prim) onPrim += getCalls(port) - before.get(port);
        return new long[] {onRep, onPrim};
    }

    @Test
    void readsLandOnReplicas() {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 100; i++) keys.add("jrf:" + i);
        try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(cluster.url()).build())) {
            try (Pipeline p = c.pipeline()) {
                for (String k : keys) p.set(k, k);
                p.sync();
            }
        }
        // the replicas hold the writes before they are read: each replica's replication offset
        // reaches its primary's (a WAIT on another connection waits for that connection's writes
        // only — none — and returns at once; C#'s same test read a replica that had not applied)
        for (int i = 0; i < cluster.n; i++) {
            int port = cluster.base + i;
            if (!isReplica(port)) continue;
            long want = replInfo((int) replInfo(port, "master_port:"), "master_repl_offset:");
            for (int k = 0; replInfo(port, "master_repl_offset:") < want; k++) {
                if (k == 30_000) fail("replica " + port + " never reached offset " + want);
                java.util.concurrent.locks.LockSupport.parkNanos(2_000_000); // a poll interval, never a verdict
            }
        }
        long[] pref = readsOn(ClientOptions.ReadFrom.PREFER_REPLICA, keys);
        assertEquals(100, pref[0]);
        assertEquals(0, pref[1]);
        long[] rr = readsOn(ClientOptions.ReadFrom.REPLICAS, keys);
        assertEquals(100, rr[0]);
        assertEquals(0, rr[1]);
        long[] prim = readsOn(ClientOptions.ReadFrom.PRIMARY, keys);
        assertEquals(0, prim[0]);
        assertEquals(100, prim[1]);
        assertThrows(NullPointerException.class, () -> ClientOptions.builder().readFrom(null));
    }

    @Test
    void listenerSeesTheTopologyEventAfterARefresh() throws Exception {
        LinkedBlockingQueue<String> got = new LinkedBlockingQueue<>();
        ClientOptions o = ClientOptions.builder().uri(cluster.url())
                .onEvent((e, addr) -> got.add(e + " " + addr)).build();
        try (SlotlaneClient c = SlotlaneClient.create(o)) {
            c.set("jev:k", "v");
            int replica = -1;
            for (int i = 0; i < cluster.n && replica < 0; i++) if (isReplica(cluster.base + i)) replica = cluster.base + i;
            cluster.failover(replica); // the replica is a primary now: the map changed
            got.clear();
            c.refresh();
            String seen = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (seen == null) {
                long left = deadline - System.nanoTime();
                assertTrue(left > 0, "no TOPOLOGY_CHANGED event after the refresh");
                String ev = got.poll(left, TimeUnit.NANOSECONDS);
                if (ev != null && ev.startsWith("TOPOLOGY_CHANGED 127.0.0.1:")) seen = ev;
            }
            assertEquals("v", c.get("jev:k")); // served across the change
        }
    }
}
