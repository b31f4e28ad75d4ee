package io.slotlane;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The tests' loopback ports: a block of the suite's range in ci/lib.sh's port map (the one
 * place ranges are assigned), chosen as the Go tests do — the first block whose lock file
 * this JVM can lock and whose ports all refuse a connection — so two checkouts' runs on
 * one machine never share a port.
 */
final class PortBlocks {
    private PortBlocks() {}

    /** A chosen block: its base and the lock that holds it (released by close or the JVM's exit). */
    static final class Block implements AutoCloseable {
        final int base;
        private final FileChannel channel;

        Block(int base, FileChannel channel) {
            this.base = base;
            this.channel = channel;
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /** {lo, hi} of suite in ci/lib.sh's port map. */
    static int[] suiteRange(Path root, String suite) {
        try {
            String text = Files.readString(root.resolve("ci/lib.sh"));
            Matcher m = Pattern.compile("^\\s*" + Pattern.quote(suite) + "\\)\\s+echo \"(\\d+) (\\d+)\"", Pattern.MULTILINE)
                    .matcher(text);
            if (!m.find()) throw new IllegalStateException("ci/lib.sh has no port range for " + suite);
            return new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))};
        } catch (IOException e) {
            throw new IllegalStateException("reading ci/lib.sh", e);
        }
    }

    static boolean portOpen(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The first base in [lo, hi] (steps of size) with its lock file slotlane-NAME-ports-BASE.lock in lockDir held and all size ports free. */
    static Block choose(int lo, int hi, int size, String name, Path lockDir) {
        for (int base = lo; base + size - 1 <= hi; base += size) {
            FileChannel ch = null;
            try {
                ch = FileChannel.open(lockDir.resolve("slotlane-" + name + "-ports-" + base + ".lock"),
                        StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                FileLock lock;
                try {
                    lock = ch.tryLock();
                } catch (OverlappingFileLockException held) { // this JVM holds it already
                    lock = null;
                }
                boolean free = lock != null;
                for (int p = base; free && p < base + size; p++) free = !portOpen(p);
                if (free) return new Block(base, ch);
                ch.close();
            } catch (IOException e) {
                throw new IllegalStateException("port block lock " + base, e);
            }
        }
        throw new IllegalStateException("no block of " + size + " free ports in " + lo + "-" + hi);
    }
}
