package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Plain mode: one node, no discovery (the bundled server with one shard, and Debian's redis-server). */
class PlainModeTest {
    @Test
    void bundledServerPlain() {
        ClientOptions o = ClientOptions.builder().uri(TestServers.bundledPlain()).mode(Mode.PLAIN).build();
        try (SlotlaneClient c = SlotlaneClient.create(o)) {
            assertEquals(Mode.PLAIN, c.mode());
            c.flushall();
            c.mset(List.of(Pair.of("a", "1"), Pair.of("b", "2")));
            assertEquals(List.of("1", "2"), c.mget("a", "b"));
            assertEquals(1, c.stats().nodes());
        }
    }

    @Test
    void redisAutoDetectsPlainAndSelectsTheDatabase() {
        String url = TestServers.redisPlain();
        try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(url).build());
             SlotlaneClient db2 = SlotlaneClient.create(ClientOptions.builder().uri(url + "/2").build());
             SlotlaneClient db3 = SlotlaneClient.create(ClientOptions.builder().uri(url).database(3).build())) {
            assertEquals(Mode.PLAIN, c.mode());
            c.command("FLUSHALL");
            c.set("k", "db0");
            db2.set("k", "db2");
            db3.set("k", "db3");
            assertEquals("db0", c.get("k"));
            assertEquals("db2", db2.get("k"));
            assertEquals("db3", db3.get("k"));
        }
    }

    @Test
    void unreachableServerIsAConnectionException() {
        int port = TestServers.BASE + 99; // nothing listens there
        assertFalse(TestServers.portOpen(port));
        ConnectionException e = assertThrows(ConnectionException.class,
                () -> SlotlaneClient.create(ClientOptions.builder().host("127.0.0.1", port).build()));
        assertEquals(ErrorKind.IO, e.kind());
    }
}
