package io.slotlane;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The servers the tests run against, started on first use and stopped when the JVM exits
 * (also after a failure): the bundled slotlane-server inside the JVM through the jar's own
 * testing helper (per-shard mode, 4 shards, and one shard for plain mode), Debian's redis-server standalone and as a 3-primary Redis
 * Cluster (through ci/redis-plain.sh and ci/redis-cluster.sh). Loopback ports from
 * {@code slotlane.test.port} (default: the first free block of 100 in the java range of ci/lib.sh's
 * port map, held with a lock file; {@link PortBlocks}): +0..3 bundled cluster, +10 bundled plain,
 * +20 Redis plain, +30..35 Redis Cluster, +40.. per-test clusters (ClusterFailureTest +40..+55,
 * TlsTest +60..+69, ReplicaReadTest +70..+81, TransactionTest +82..+87).
 */
final class TestServers {
    static final Path ROOT = Paths.get(System.getProperty("slotlane.root", "..")).toAbsolutePath().normalize();
    /** Ports per run: the layout below uses BASE+0..+59, TlsTest BASE+60..+69; +99 is never listened on. */
    static final int BLOCK_SIZE = 100;
    private static PortBlocks.Block block; // held until the JVM exits
    static final int BASE = chooseBase();
    static final Path WORK = ROOT.resolve("java/target/test-servers");
    private static final List<Runnable> STOPS = new ArrayList<>();
    private static String bundledCluster, bundledPlain, redisPlain, redisCluster;

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(TestServers::stopAll, "slotlane-test-servers-stop"));
    }

    private TestServers() {}

    /** -Dslotlane.test.port when set (it must be free), else the first free block of the java range. */
    private static int chooseBase() {
        String fixed = System.getProperty("slotlane.test.port", "");
        if (!fixed.isEmpty()) return Integer.parseInt(fixed);
        int[] r = PortBlocks.suiteRange(ROOT, "java");
        block = PortBlocks.choose(r[0], r[1], BLOCK_SIZE, "java", Paths.get(System.getProperty("java.io.tmpdir")));
        return block.base;
    }

    static synchronized void stopAll() {
        for (int i = STOPS.size() - 1; i >= 0; i--) {
            try {
                STOPS.get(i).run();
            } catch (RuntimeException e) {
                System.err.println("stopping a test server: " + e);
            }
        }
        STOPS.clear();
    }

    /** The bundled server, 4 shards in per-shard mode (a cluster). */
    static synchronized String bundledCluster() {
        if (bundledCluster == null) bundledCluster = startBundled(4, BASE);
        return bundledCluster;
    }

    /** The bundled server with one shard (owns every slot: for plain mode). */
    static synchronized String bundledPlain() {
        if (bundledPlain == null) bundledPlain = startBundled(1, BASE + 10);
        return bundledPlain;
    }

    /** Debian's redis-server, standalone. */
    static synchronized String redisPlain() {
        if (redisPlain == null) {
            int port = BASE + 20;
            checkFree(port, port);
            Path dir = WORK.resolve("redis-plain");
            script("redis-plain.sh", "start", dir.toString(), Integer.toString(port));
            STOPS.add(() -> script("redis-plain.sh", "stop", dir.toString()));
            redisPlain = "redis://127.0.0.1:" + port;
        }
        return redisPlain;
    }

    /** A 3-primary Redis Cluster shared by the tests that do not disturb it. */
    static synchronized String redisCluster() {
        if (redisCluster == null) redisCluster = new RedisCluster("shared", BASE + 30, 3).url();
        return redisCluster;
    }

    /** A Redis Cluster of its own, for a test that kills or reshards it. */
    static final class RedisCluster implements AutoCloseable {
        final Path dir;
        final int base;
        final int n;

        RedisCluster(String name, int base, int n) {
            this(name, base, n, 0);
        }

        /** n primaries with replicas replicas each (cluster-node-timeout 2 s with replicas: a fast promotion). */
        RedisCluster(String name, int base, int n, int replicas) {
            this.dir = WORK.resolve("cluster-" + name);
            this.base = base;
            this.n = n * (1 + replicas);
            checkFree(base, base + 2 * this.n - 1);
            script(replicas > 0 ? java.util.Map.of("SL_CLUSTER_NODE_TIMEOUT", "2000") : java.util.Map.of(),
                    "redis-cluster.sh", "start", dir.toString(), Integer.toString(base), Integer.toString(n), Integer.toString(replicas));
            synchronized (TestServers.class) {
                STOPS.add(this::stop);
            }
        }

        String url() {
            return "redis://127.0.0.1:" + base;
        }

        void kill(int port) {
            script("redis-cluster.sh", "kill", dir.toString(), Integer.toString(port));
        }

        void restart(int port) {
            script("redis-cluster.sh", "restart", dir.toString(), Integer.toString(port));
        }

        /** CLUSTER FAILOVER on replica port; returns when it is a primary. */
        void failover(int port) {
            script("redis-cluster.sh", "failover", dir.toString(), Integer.toString(port));
        }

        void migrate(int slot, int from, int to) {
            script("redis-cluster.sh", "migrate", dir.toString(), Integer.toString(slot), Integer.toString(from), Integer.toString(to));
        }

        void stop() {
            script("redis-cluster.sh", "stop", dir.toString());
        }

        @Override
        public void close() {
            stop();
        }
    }

    /**
     * The bundled server inside this JVM through the package's own helper (what users' tests
     * use: io.slotlane.testing.SlotlaneServer, the embedded server library the jar carries), so
     * {@code mvn test} needs no executable built beforehand; closed when the JVM exits.
     */
    private static String startBundled(int shards, int port) {
        checkFree(port, port + shards - 1);
        io.slotlane.testing.SlotlaneServer s = io.slotlane.testing.SlotlaneServer.start(
                new io.slotlane.testing.SlotlaneServer.Options().shards(shards).port(port).bind("127.0.0.1"));
        STOPS.add(s::close);
        return s.url();
    }

    static void script(String name, String... args) {
        script(java.util.Map.of(), name, args);
    }

    /** Runs ci/NAME with ARGS and these environment variables added (ci/redis-tls.sh reads SL_REDIS_TLS_*). */
    static void script(java.util.Map<String, String> env, String name, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add("bash");
        cmd.add(ROOT.resolve("ci").resolve(name).toString());
        cmd.addAll(List.of(args));
        try {
            Files.createDirectories(WORK);
            Path out = Files.createTempFile(WORK, name, ".out");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
            pb.environment().remove("SL_REDIS_TLS_DIR");
            pb.environment().putAll(env);
            Process p = pb.start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(cmd + " timed out");
            }
            String text = Files.readString(out);
            Files.deleteIfExists(out);
            if (p.exitValue() != 0) throw new IllegalStateException(cmd + " failed (" + p.exitValue() + "): " + text);
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + cmd, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + cmd, e);
        }
    }

    static boolean portOpen(int port) {
        return PortBlocks.portOpen(port);
    }

    private static void checkFree(int from, int to) {
        for (int p = from; p <= to; p++)
            if (portOpen(p))
                throw new IllegalStateException("port " + p + " is in use: leave -Dslotlane.test.port unset to get a free block");
    }

    /** A client of the given server with default options but the URL. */
    static SlotlaneClient client(String url) {
        return SlotlaneClient.create(ClientOptions.builder().uri(url).build());
    }
}
