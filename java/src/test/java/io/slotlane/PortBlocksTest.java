package io.slotlane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** PortBlocks: a held block or a listening port moves the choice to the next block. */
class PortBlocksTest {
    private static final int[] RANGE = PortBlocks.suiteRange(TestServers.ROOT, "java");

    @Test
    void theTestsBlockIsInTheJavaRange() {
        assertTrue(RANGE[0] <= TestServers.BASE && TestServers.BASE + TestServers.BLOCK_SIZE - 1 <= RANGE[1],
                "BASE " + TestServers.BASE);
    }

    @Test
    void aHeldBlockIsSkippedAndReleasedWithItsLock(@TempDir Path dir) throws Exception {
        int first;
        try (PortBlocks.Block a = PortBlocks.choose(RANGE[0], RANGE[1], 10, "test", dir)) {
            first = a.base;
            try (PortBlocks.Block b = PortBlocks.choose(RANGE[0], RANGE[1], 10, "test", dir)) {
                assertTrue(b.base >= first + 10, "second block " + b.base + " after " + first);
            }
        }
        try (PortBlocks.Block c = PortBlocks.choose(RANGE[0], RANGE[1], 10, "test", dir)) {
            assertEquals(first, c.base);
        }
    }

    @Test
    void aListenerMovesTheChoice(@TempDir Path dir) throws Exception {
        int first;
        try (PortBlocks.Block a = PortBlocks.choose(RANGE[0], RANGE[1], 10, "test", dir)) {
            first = a.base;
        }
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), first + 3));
            try (PortBlocks.Block b = PortBlocks.choose(RANGE[0], RANGE[1], 10, "test", dir)) {
                assertTrue(b.base >= first + 10, "block " + b.base + " with a listener on " + (first + 3));
            }
        }
    }

    @Test
    void noFreeBlockIsAClearError(@TempDir Path dir) throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int p = s.getLocalPort();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> PortBlocks.choose(p, p, 1, "test", dir));
            assertTrue(e.getMessage().contains("no block of 1 free ports"), e.getMessage());
        }
    }
}
