package io.slotlane;

import io.slotlane.internal.slotlane;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;

/**
 * A client of a Redis-protocol server or cluster: a thin binding of libslotlane, whose core
 * routes every command by its key's slot, follows MOVED/ASK redirects, splits multi-key
 * commands across slots and pipelines per node.
 *
 * <pre>{@code
 * try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri("redis://127.0.0.1:7000").build())) {
 *     c.set("greeting", "hello");
 *     long n = c.incr("visits");
 *     try (Pipeline p = c.pipeline()) {
 *         for (int i = 0; i < 100; i++) p.get("key:" + i);
 *         List<Object> values = p.sync();
 *     }
 * }
 * }</pre>
 *
 * <p>Thread-safe: the client keeps a pool of core handles (each with its own connections,
 * at most {@link ClientOptions#poolSize()}); a call borrows one for its execution. A
 * command or pipeline crosses into C once; replies are decoded in Java from the core's
 * records. The typed methods of every command of the spec are rendered into
 * {@link ClientCommands}; {@link #command(String...)} runs any other. Failed commands throw
 * {@link SlotlaneException} (or a subclass); bad arguments throw {@link IllegalArgumentException}.
 */
public final class SlotlaneClient extends ClientCommands implements AutoCloseable {
    private final ClientOptions options;
    private final ConcurrentLinkedDeque<CoreHandle> idle = new ConcurrentLinkedDeque<>();
    private final CopyOnWriteArrayList<CoreHandle> all = new CopyOnWriteArrayList<>();
    private final Semaphore permits;
    private final Mode mode;
    private volatile boolean closed;
    private AsyncClient async; // made on first async(), guarded by this

    /** An encoder of one command into a buffer. */
    @FunctionalInterface
    interface Encoder {
        void encode(CommandBuffer b);
    }

    private SlotlaneClient(ClientOptions options) {
        this.options = options;
        this.permits = new Semaphore(options.poolSize, true);
        CoreHandle first = CoreHandle.open(options); // connects now: a bad address fails here
        all.add(first);
        idle.push(first);
        this.mode = first.mode() == io.slotlane.internal.sl_mode.SL_MODE_CLUSTER ? Mode.CLUSTER : Mode.PLAIN;
    }

    /**
     * Connects to the server (and in cluster mode discovers the slot map).
     *
     * @param options where and how to connect
     * @return the client
     * @throws IllegalArgumentException for an address the core cannot parse
     * @throws ConnectionException when the server cannot be reached
     * @throws ClusterException when discovery fails
     */
    public static SlotlaneClient create(ClientOptions options) {
        if (options == null) throw new IllegalArgumentException("options must not be null");
        return new SlotlaneClient(options);
    }

    /**
     * @return the version of the native library, e.g. {@code "0.1.0"}
     */
    public static String version() {
        return slotlane.sl_version();
    }

    /**
     * The cluster slot of a key (CRC16 with {@code {hash tags}}, mod 16384), computed by the core.
     *
     * @param key the key
     * @return 0..16383
     */
    public static int keySlot(byte[] key) {
        Cmd.notNull(key, "key");
        ByteBuffer b = ByteBuffer.allocateDirect(Math.max(1, key.length)).order(ByteOrder.nativeOrder());
        b.put(0, key);
        return slotlane.sl_key_slot(slotlane.sl_java_buffer_address(b), key.length);
    }

    /**
     * @param key the key, UTF-8 encoded
     * @return 0..16383
     */
    public static int keySlot(String key) {
        return keySlot(Cmd.notNull(key, "key").getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /**
     * @return {@link Mode#PLAIN} or {@link Mode#CLUSTER} (what AUTO detected)
     */
    public Mode mode() {
        return mode;
    }

    /**
     * @return the options the client was created with
     */
    public ClientOptions options() {
        return options;
    }

    /**
     * @return a new pipeline; see {@link Pipeline}
     */
    public Pipeline pipeline() {
        ensureOpen();
        return new Pipeline(this);
    }

    /**
     * A new WATCH/MULTI/EXEC transaction on a connection of its own; see {@link Transaction}.
     * Close it (try-with-resources): it holds a core handle of the pool from its first
     * command to the end of its session.
     *
     * @return the transaction (nothing is sent yet)
     */
    public Transaction transaction() {
        ensureOpen();
        return new Transaction(this);
    }

    /**
     * Runs an optimistic transaction until it commits: WATCH the keys, run the body (its reads
     * at once on the transaction's connection, its writes queued on {@link Transaction#multi()}),
     * then EXEC; when a watched key changed (EXEC answered nil: {@link WatchException}) or the
     * slot moved ({@link WatchMovedException}), again from the WATCH, on a new session.
     *
     * <pre>{@code
     * List<Object> r = client.transaction(List.of("{c}n"), tx -> {
     *     long n = Long.parseLong(tx.get("{c}n"));
     *     tx.multi().set("{c}n", n + 1);
     * });
     * }</pre>
     *
     * @param watchKeys the keys to WATCH, all of one slot (empty: none)
     * @param body      the transaction's reads and writes; run once per attempt
     * @return the EXEC's replies, one per command the body queued
     * @throws IllegalArgumentException null arguments
     * @throws CancelledException the thread was interrupted between attempts
     * @throws SlotlaneException what the body or the EXEC threw, but a {@code WatchException}
     */
    public List<Object> transaction(java.util.Collection<String> watchKeys, Transaction.Body body) {
        return transaction(watchKeys, body, Integer.MAX_VALUE);
    }

    /**
     * The same with at most maxAttempts attempts; the last attempt's {@link WatchException}
     * is thrown when none committed.
     *
     * @param watchKeys   the keys to WATCH, all of one slot (empty: none)
     * @param body        the transaction's reads and writes; run once per attempt
     * @param maxAttempts at least 1
     * @return the EXEC's replies
     */
    public List<Object> transaction(java.util.Collection<String> watchKeys, Transaction.Body body, int maxAttempts) {
        Cmd.notNull(watchKeys, "watchKeys");
        Cmd.notNull(body, "body");
        if (maxAttempts < 1) throw new IllegalArgumentException("maxAttempts must be at least 1");
        String[] keys = watchKeys.toArray(new String[0]);
        try (Transaction tx = transaction()) {
            for (int attempt = 1;; attempt++) {
                try {
                    if (keys.length > 0) tx.watch(keys);
                    body.run(tx);
                    Transaction.Multi m = tx.openMulti();
                    return (m != null ? m : tx.multi()).exec();
                } catch (WatchException e) {
                    tx.reset();
                    if (attempt >= maxAttempts) throw e;
                    if (Thread.currentThread().isInterrupted())
                        throw new CancelledException(ErrorKind.CANCELLED, "interrupted between the attempts of a transaction");
                }
            }
        }
    }

    /**
     * The asynchronous client of the same server, with the same options: its typed methods
     * return {@link java.util.concurrent.CompletableFuture}s (see {@link AsyncClient}). Made
     * (and connected) on the first call, then the same one; closed with this client.
     *
     * @return the asynchronous client
     */
    public synchronized AsyncClient async() {
        ensureOpen();
        if (async == null) async = AsyncClient.create(options);
        return async;
    }

    // ------------------------------------------------------------------ pool

    CoreHandle acquire() {
        ensureOpen();
        try {
            permits.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancelledException(ErrorKind.CANCELLED, "interrupted while waiting for a connection");
        }
        CoreHandle h = idle.pollFirst();
        if (h == null) {
            try {
                h = CoreHandle.open(options);
            } catch (RuntimeException | Error e) {
                permits.release();
                throw e;
            }
            all.add(h);
        }
        return h;
    }

    void release(CoreHandle h) {
        idle.offerFirst(h);
        permits.release();
        if (closed) drain();
    }

    private void drain() {
        CoreHandle h;
        while ((h = idle.pollFirst()) != null) {
            all.remove(h);
            h.free();
        }
    }

    private void ensureOpen() {
        if (closed) throw new IllegalStateException("the client is closed");
    }

    /**
     * Closes every connection. Executions still running finish (within their timeout) and
     * their connections are closed when they return. Idempotent.
     */
    @Override
    public void close() {
        closed = true;
        AsyncClient a;
        synchronized (this) {
            a = async;
        }
        if (a != null) a.close();
        drain();
    }

    // ------------------------------------------------------------------ execution

    @Override
    <T> T run(Shape<T> shape, Encoder e) {
        return call(shape, null, e);
    }

    private <T> T call(Shape<T> shape, Route route, Encoder e) {
        CoreHandle h = acquire();
        try {
            Object v;
            synchronized (h) {
                CommandBuffer b = h.cmd;
                b.reset();
                e.encode(b);
                if (route == null) h.execute(b, 0);
                else h.execute(b, route, 0);
                v = h.dec.next(shape == Shape.BYTES);
            }
            if (v instanceof SlotlaneException) throw (SlotlaneException) v;
            return shape.apply(v);
        } finally {
            release(h);
        }
    }

    /**
     * Re-reads the slot map now (every handle of the pool, as each is next free).
     */
    public void refresh() {
        CoreHandle h = acquire();
        try {
            synchronized (h) {
                h.refresh();
            }
        } finally {
            release(h);
        }
    }

    /**
     * The counters of every core handle of the pool, added up.
     *
     * @return the counters
     */
    public ClientStats stats() {
        long[] s = new long[10];
        int n = 0;
        for (CoreHandle h : all) {
            synchronized (h) {
                h.addStats(s);
            }
            n++;
        }
        return new ClientStats(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], n);
    }

    // ------------------------------------------------------------------ any command

    /**
     * Runs any command; bulk strings come back as {@code String} (UTF-8). See
     * {@link Pipeline#sync()} for the types of the values.
     *
     * @param args the command's name and arguments
     * @return the decoded reply
     */
    public Object command(String... args) {
        return call(Shape.ANY, null, b -> Cmd.raw(b, args));
    }

    /**
     * Runs any command given as bytes; bulk strings come back as {@code byte[]}.
     *
     * @param args the command's name and arguments
     * @return the decoded reply
     */
    public Object command(byte[]... args) {
        return call(Shape.BYTES, null, b -> Cmd.raw(b, args));
    }

    /**
     * Runs any command with a routing override (e.g. {@link Route#allPrimaries()}).
     *
     * @param route where to send it
     * @param args  the command's name and arguments
     * @return the decoded reply (strings as String)
     */
    public Object command(Route route, String... args) {
        Cmd.notNull(route, "route");
        return call(Shape.ANY, route, b -> Cmd.raw(b, args));
    }

    @Override
    public String toString() {
        return "SlotlaneClient{" + options.url + ", " + mode + (closed ? ", closed" : "") + "}";
    }
}
