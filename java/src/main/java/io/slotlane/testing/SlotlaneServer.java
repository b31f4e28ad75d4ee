package io.slotlane.testing;

import io.slotlane.NativeLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bundled slotlane-server inside this JVM ({@code libslotlane_server_jni}, in the jar beside
 * the client's library): a real sharded cluster on loopback for an application's tests, with
 * slots, MOVED and discovery as in production. {@link #close()} stops every shard (connected
 * clients get I/O errors, not hangs) and waits for its threads. Several may run at once; they
 * share nothing.
 *
 * <pre>{@code
 * try (SlotlaneServer srv = SlotlaneServer.start(4);   // 4 shards, ephemeral ports
 *      SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(srv.url()).build())) { ... }
 * }</pre>
 */
public final class SlotlaneServer implements AutoCloseable {
    /** Where the shards listen. */
    public enum PortMode { PER_SHARD, ONE_PORT }

    /** The shards' append-only logs. */
    public enum Durability { MEMORY, EVERYSEC, ALWAYS }

    /** How to start a server: 4 shards, per-shard ports, -MOVED, in memory, ephemeral ports. */
    public static final class Options {
        int shards = 4;
        PortMode portMode = PortMode.PER_SHARD;
        boolean forward;
        Durability durability = Durability.MEMORY;
        Path dir;
        String bind;
        int port;
        final Map<String, String> settings = new LinkedHashMap<>();

        /** @param n 1..256 @return this */
        public Options shards(int n) { shards = n; return this; }
        /** @param m per-shard ports or one port @return this */
        public Options portMode(PortMode m) { portMode = m; return this; }
        /** @param f per-shard mode: forward keys of other shards instead of -MOVED @return this */
        public Options forward(boolean f) { forward = f; return this; }
        /** @param d the logs' policy @return this */
        public Options durability(Durability d) { durability = d; return this; }
        /** @param d the logs' directory (created if missing) @return this */
        public Options dir(Path d) { dir = d; return this; }
        /** @param b the listen address (default 127.0.0.1) @return this */
        public Options bind(String b) { bind = b; return this; }
        /** @param p 0: ports chosen by the kernel (default); else the base port @return this */
        public Options port(int p) { port = p; return this; }
        /**
         * Another flag of the slotlane-server executable, without the dashes.
         *
         * @param name e.g. "maxclients"
         * @param value e.g. "100"
         * @return this
         */
        public Options setting(String name, String value) { settings.put(name, value); return this; }
    }

    private long handle;
    private final String url;
    private final int[] ports;

    private SlotlaneServer(Options o) {
        NativeLoader.loadServer();
        List<String> kv = new ArrayList<>();
        o.settings.forEach((k, v) -> { kv.add(k); kv.add(v); });
        handle = start(o.shards, o.portMode.ordinal(), o.forward ? 1 : 0, o.durability.ordinal(),
                o.dir == null ? null : o.dir.toString(), o.bind, o.port, kv.toArray(new String[0]));
        url = url(handle);
        ports = ports(handle);
    }

    /**
     * Starts a server of {@code shards} shards on ephemeral ports.
     *
     * @param shards 1..256
     * @return the running server
     * @throws IllegalStateException when it cannot start
     */
    public static SlotlaneServer start(int shards) { return new SlotlaneServer(new Options().shards(shards)); }

    /**
     * Starts a server.
     *
     * @param o its options
     * @return the running server
     * @throws IllegalStateException when it cannot start (a bad option, a busy port, a directory in use)
     */
    public static SlotlaneServer start(Options o) { return new SlotlaneServer(o); }

    /** @return {@code redis://127.0.0.1:PORT} of shard 0: a cluster client discovers the others */
    public String url() { return url; }

    /** @return each shard's port (all the same in one-port mode) */
    public int[] ports() { return Arrays.copyOf(ports, ports.length); }

    /** Stops every shard and waits; a second call does nothing. {@link #close()} does it too. */
    public synchronized void stop() {
        if (handle != 0) stop(handle);
    }

    /** Stops the server and frees it. */
    @Override
    public synchronized void close() {
        if (handle != 0) {
            free(handle);
            handle = 0;
        }
    }

    private static native long start(int shards, int portMode, int misrouted, int durability, String dir,
                                     String bind, int port, String[] settings);
    private static native int[] ports(long h);
    private static native String url(long h);
    private static native void stop(long h);
    private static native void free(long h);
}
