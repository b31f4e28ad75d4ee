package io.slotlane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.slotlane.testing.SlotlaneServer;
import io.slotlane.testing.SlotlaneServerExtension;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * io.slotlane.testing: the embedded slotlane-server in the JVM. Two servers at once on
 * ephemeral ports, a server stopped under a connected client (an error, not a hang or the
 * deadline), 100 starts and stops without leaked threads or file descriptors, durability
 * ALWAYS restarted on the same directory, bad options, the JUnit 5 extension.
 */
@ExtendWith(SlotlaneServerExtension.class)
class TestingTest {
    private static int count(String dir) {
        String[] e = new File(dir).list();
        return e == null ? -1 : e.length;
    }

    @Test
    void twoServersAtOnceOnEphemeralPorts() {
        try (SlotlaneServer a = SlotlaneServer.start(4);
             SlotlaneServer b = SlotlaneServer.start(new SlotlaneServer.Options().shards(2).portMode(SlotlaneServer.PortMode.ONE_PORT));
             SlotlaneClient ca = SlotlaneClient.create(ClientOptions.builder().uri(a.url()).build());
             SlotlaneClient cb = SlotlaneClient.create(ClientOptions.builder().uri(b.url()).build())) {
            assertEquals(4, Arrays.stream(a.ports()).distinct().count());
            assertFalse(Arrays.stream(a.ports()).anyMatch(p -> p == 0 || p == b.ports()[0]));
            assertEquals(b.ports()[0], b.ports()[1]);
            assertEquals("redis://127.0.0.1:" + a.ports()[0], a.url());
            for (int i = 0; i < 64; i++) ca.set("key:" + i, "a" + i);
            cb.set("key:1", "b1");
            assertEquals("a1", ca.get("key:1"));
            assertEquals("b1", cb.get("key:1"));
            assertNull(cb.get("key:2"));
            assertEquals(64L, ca.dbsize());
            assertEquals(1L, cb.dbsize());
        }
    }

    @Test
    void stoppedWhileConnectedGivesErrorsNotHangs() {
        try (SlotlaneServer s = SlotlaneServer.start(2);
             SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(s.url()).commandTimeout(java.time.Duration.ofSeconds(60)).build())) {
            c.set("k", "v");
            s.stop();
            SlotlaneException e = assertThrows(SlotlaneException.class, () -> c.get("k"));
            assertFalse(e instanceof SlotlaneTimeoutException, "never the 60 s deadline: " + e);
            assertTrue(e instanceof ConnectionException || e instanceof ClusterException, e.toString());
            s.stop(); // a second stop: nothing
        }
    }

    @Test
    void startStop100TimesLeaksNoThreadsOrFds() {
        for (int i = 0; i < 2; i++) round(i);
        int fds0 = count("/proc/self/fd"), threads0 = count("/proc/self/task");
        for (int i = 0; i < 100; i++) round(i);
        int fds1 = count("/proc/self/fd"), threads1 = count("/proc/self/task");
        System.out.printf("100 starts/stops: fds %d -> %d, threads %d -> %d%n", fds0, fds1, threads0, threads1);
        assertEquals(fds0, fds1);
        // the JVM's own threads come and go; 100 x 1-3 shard threads would be hundreds
        assertTrue(threads1 <= threads0 + 4, threads0 + " -> " + threads1);
    }

    private static void round(int i) {
        SlotlaneServer.Options o = new SlotlaneServer.Options().shards(i % 3 + 1).forward(true)
                .portMode(i % 2 == 1 ? SlotlaneServer.PortMode.ONE_PORT : SlotlaneServer.PortMode.PER_SHARD);
        try (SlotlaneServer s = SlotlaneServer.start(o);
             SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(s.url()).mode(Mode.PLAIN).build())) {
            c.set("k", String.valueOf(i));
            s.close(); // with the client still connected
        }
    }

    @Test
    void durabilityAlwaysRestartKeepsData(@TempDir Path dir) {
        SlotlaneServer.Options o = new SlotlaneServer.Options().shards(3).durability(SlotlaneServer.Durability.ALWAYS).dir(dir);
        try (SlotlaneServer s = SlotlaneServer.start(o)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> SlotlaneServer.start(o));
            assertTrue(e.getMessage().contains("in use"), e.getMessage());
            try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(s.url()).build())) {
                for (int i = 0; i < 50; i++) c.set("key:" + i, "v" + i);
            }
        }
        try (SlotlaneServer s = SlotlaneServer.start(o); SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(s.url()).build())) {
            assertEquals(50L, c.dbsize());
            assertEquals("v17", c.get("key:17"));
        }
        assertTrue(Files.isDirectory(dir));
    }

    @Test
    void badOptionsAreErrors() {
        assertTrue(assertThrows(IllegalStateException.class, () -> SlotlaneServer.start(0)).getMessage().contains("shards"));
        assertTrue(assertThrows(IllegalStateException.class,
                () -> SlotlaneServer.start(new SlotlaneServer.Options().setting("maxclients", "many"))).getMessage().contains("maxclients"));
        try (SlotlaneServer a = SlotlaneServer.start(1)) {
            assertTrue(assertThrows(IllegalStateException.class,
                    () -> SlotlaneServer.start(new SlotlaneServer.Options().shards(1).port(a.ports()[0]))).getMessage().contains("listen"));
        }
    }

    @Test
    void theExtensionsServerServes(SlotlaneServer srv) {
        assertEquals(4, srv.ports().length);
        try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(srv.url()).build())) {
            c.set("ext", "ok");
            assertEquals("ok", c.get("ext"));
        }
    }
}
