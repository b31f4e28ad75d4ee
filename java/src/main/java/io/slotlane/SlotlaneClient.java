package io.slotlane;

import io.slotlane.internal.slotlane;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * records. Failed commands throw {@link SlotlaneException} (or a subclass); bad arguments
 * throw {@link IllegalArgumentException}.
 */
public final class SlotlaneClient implements AutoCloseable {
    private final ClientOptions options;
    private final ConcurrentLinkedDeque<CoreHandle> idle = new ConcurrentLinkedDeque<>();
    private final CopyOnWriteArrayList<CoreHandle> all = new CopyOnWriteArrayList<>();
    private final Semaphore permits;
    private final Mode mode;
    private volatile boolean closed;

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

    // ------------------------------------------------------------------ pool

    CoreHandle acquire() {
        ensureOpen();
        try {
            permits.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SlotlaneException(ErrorKind.CANCELLED, "interrupted while waiting for a connection");
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
        drain();
    }

    // ------------------------------------------------------------------ execution

    private Object call(byte conv, Encoder e) {
        return call(conv, null, e);
    }

    private Object call(byte conv, Route route, Encoder e) {
        CoreHandle h = acquire();
        try {
            Object v;
            synchronized (h) {
                CommandBuffer b = h.cmd;
                b.reset();
                e.encode(b);
                if (route == null) h.execute(b, 0);
                else h.execute(b, route, 0);
                v = h.dec.next(Conv.asBytes(conv));
            }
            if (v instanceof SlotlaneException) throw (SlotlaneException) v;
            return Conv.apply(conv, v);
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
        return call(Conv.ANY, b -> Cmd.raw(b, args));
    }

    /**
     * Runs any command given as bytes; bulk strings come back as {@code byte[]}.
     *
     * @param args the command's name and arguments
     * @return the decoded reply
     */
    public Object command(byte[]... args) {
        return call(Conv.BYTES, b -> Cmd.raw(b, args));
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
        return call(Conv.ANY, route, b -> Cmd.raw(b, args));
    }

    /**
     * @return {@code "PONG"} from the default node
     */
    public String ping() {
        return (String) call(Conv.ANY, b -> Cmd.noArgs(b, Cmd.PING));
    }

    /** Deletes every key of every primary (FLUSHALL routed to all primaries). */
    public void flushAll() {
        call(Conv.ANY, Route.allPrimaries(), b -> Cmd.noArgs(b, Cmd.FLUSHALL));
    }

    /**
     * @return the number of keys, summed over every primary
     */
    public long dbSize() {
        return (Long) call(Conv.ANY, Route.allPrimaries(), b -> Cmd.noArgs(b, Cmd.DBSIZE));
    }

    // ------------------------------------------------------------------ strings

    /**
     * @param key the key
     * @return its value, or null
     */
    public String get(String key) {
        return (String) call(Conv.ANY, b -> Cmd.key(b, Cmd.GET, key));
    }

    /**
     * @param key the key
     * @return its value, or null
     */
    public byte[] get(byte[] key) {
        return (byte[]) call(Conv.BYTES, b -> Cmd.key(b, Cmd.GET, key));
    }

    /**
     * @param key the key
     * @param value the value
     * @return {@code "OK"}
     */
    public String set(String key, String value) {
        return (String) call(Conv.ANY, b -> Cmd.set(b, key, value, null));
    }

    /**
     * @param key the key
     * @param value the value
     * @return {@code "OK"}
     */
    public String set(byte[] key, byte[] value) {
        return (String) call(Conv.ANY, b -> Cmd.set(b, key, value, null));
    }

    /**
     * SET with options.
     *
     * @param key    the key
     * @param value  the value
     * @param params expiry and NX/XX
     * @return {@code "OK"}, or null when an NX/XX condition was not met
     */
    public String set(String key, String value, SetParams params) {
        Cmd.notNull(params, "params");
        return (String) call(Conv.ANY, b -> Cmd.set(b, key, value, params));
    }

    /**
     * SET with options.
     *
     * @param key    the key
     * @param value  the value
     * @param params expiry and NX/XX
     * @return {@code "OK"}, or null when an NX/XX condition was not met
     */
    public String set(byte[] key, byte[] value, SetParams params) {
        Cmd.notNull(params, "params");
        return (String) call(Conv.ANY, b -> Cmd.set(b, key, value, params));
    }

    /**
     * @param keys keys, in any slots
     * @return their values in the keys' order (null for missing ones)
     */
    public List<String> mget(String... keys) {
        return Conv.cast(call(Conv.ANY, b -> Cmd.keys(b, Cmd.MGET, keys)));
    }

    /**
     * @param keys keys, in any slots
     * @return their values in the keys' order (null for missing ones)
     */
    public List<byte[]> mget(byte[]... keys) {
        return Conv.cast(call(Conv.BYTES, b -> Cmd.keys(b, Cmd.MGET, keys)));
    }

    /**
     * @param keysAndValues k1, v1, k2, v2... (any slots)
     * @return {@code "OK"}
     */
    public String mset(String... keysAndValues) {
        return (String) call(Conv.ANY, b -> Cmd.mset(b, keysAndValues));
    }

    /**
     * @param keysAndValues keys and values (any slots)
     * @return {@code "OK"}
     */
    public String mset(Map<String, String> keysAndValues) {
        return (String) call(Conv.ANY, b -> Cmd.mset(b, keysAndValues));
    }

    /**
     * @param keys keys, in any slots
     * @return how many existed and were deleted
     */
    public long del(String... keys) {
        return (Long) call(Conv.ANY, b -> Cmd.keys(b, Cmd.DEL, keys));
    }

    /**
     * @param keys keys, in any slots
     * @return how many exist (a key given twice counts twice)
     */
    public long exists(String... keys) {
        return (Long) call(Conv.ANY, b -> Cmd.keys(b, Cmd.EXISTS, keys));
    }

    /**
     * @param key the key
     * @param seconds time to live
     * @return whether the key exists (and got the expiry)
     */
    public boolean expire(String key, long seconds) {
        return (Boolean) call(Conv.BOOL, b -> Cmd.keyLong(b, Cmd.EXPIRE, key, seconds));
    }

    /**
     * @param key the key
     * @return seconds to live, -1 without expiry, -2 when the key does not exist
     */
    public long ttl(String key) {
        return (Long) call(Conv.ANY, b -> Cmd.key(b, Cmd.TTL, key));
    }

    /**
     * @param key the key
     * @return the value after the increment
     */
    public long incr(String key) {
        return (Long) call(Conv.ANY, b -> Cmd.key(b, Cmd.INCR, key));
    }

    /**
     * @param key the key
     * @param by the increment
     * @return the value after the increment
     */
    public long incrBy(String key, long by) {
        return (Long) call(Conv.ANY, b -> Cmd.keyLong(b, Cmd.INCRBY, key, by));
    }

    /**
     * @param key the key
     * @return the value after the decrement
     */
    public long decr(String key) {
        return (Long) call(Conv.ANY, b -> Cmd.key(b, Cmd.DECR, key));
    }

    // ------------------------------------------------------------------ lists

    /**
     * @param key the list
     * @param values pushed at the head, in order
     * @return the list's length
     */
    public long lpush(String key, String... values) {
        return (Long) call(Conv.ANY, b -> Cmd.keyArgs(b, Cmd.LPUSH, key, "value", values));
    }

    /**
     * @param key the list
     * @param values pushed at the tail, in order
     * @return the list's length
     */
    public long rpush(String key, String... values) {
        return (Long) call(Conv.ANY, b -> Cmd.keyArgs(b, Cmd.RPUSH, key, "value", values));
    }

    /**
     * @param key the list
     * @return the first element, removed, or null
     */
    public String lpop(String key) {
        return (String) call(Conv.ANY, b -> Cmd.key(b, Cmd.LPOP, key));
    }

    /**
     * @param key the list
     * @return the last element, removed, or null
     */
    public String rpop(String key) {
        return (String) call(Conv.ANY, b -> Cmd.key(b, Cmd.RPOP, key));
    }

    /**
     * @param key the list
     * @param start first index
     * @param stop last index (inclusive; -1: the end)
     * @return the elements
     */
    public List<String> lrange(String key, long start, long stop) {
        return Conv.cast(call(Conv.ANY, b -> Cmd.keyRange(b, Cmd.LRANGE, key, start, stop)));
    }

    /**
     * @param key the list
     * @return its length
     */
    public long llen(String key) {
        return (Long) call(Conv.ANY, b -> Cmd.key(b, Cmd.LLEN, key));
    }

    // ------------------------------------------------------------------ hashes

    /**
     * @param key the hash
     * @param field the field
     * @param value the value
     * @return fields added (0 or 1)
     */
    public long hset(String key, String field, String value) {
        return (Long) call(Conv.ANY, b -> Cmd.hset(b, key, field, value));
    }

    /**
     * @param key the hash
     * @param fields fields and values
     * @return fields added
     */
    public long hset(String key, Map<String, String> fields) {
        return (Long) call(Conv.ANY, b -> Cmd.hset(b, key, fields));
    }

    /**
     * @param key the hash
     * @param field the field
     * @return its value, or null
     */
    public String hget(String key, String field) {
        return (String) call(Conv.ANY, b -> Cmd.keyArg(b, Cmd.HGET, key, "field", field));
    }

    /**
     * @param key the hash
     * @return every field and value (empty when the key does not exist)
     */
    public Map<String, String> hgetAll(String key) {
        return Conv.cast(call(Conv.MAP, b -> Cmd.key(b, Cmd.HGETALL, key)));
    }

    /**
     * @param key the hash
     * @param fields fields to delete
     * @return how many were deleted
     */
    public long hdel(String key, String... fields) {
        return (Long) call(Conv.ANY, b -> Cmd.keyArgs(b, Cmd.HDEL, key, "field", fields));
    }

    // ------------------------------------------------------------------ sets

    /**
     * @param key the set
     * @param members members to add
     * @return how many were added
     */
    public long sadd(String key, String... members) {
        return (Long) call(Conv.ANY, b -> Cmd.keyArgs(b, Cmd.SADD, key, "member", members));
    }

    /**
     * @param key the set
     * @param members members to remove
     * @return how many were removed
     */
    public long srem(String key, String... members) {
        return (Long) call(Conv.ANY, b -> Cmd.keyArgs(b, Cmd.SREM, key, "member", members));
    }

    /**
     * @param key the set
     * @return its members
     */
    public Set<String> smembers(String key) {
        return Conv.cast(call(Conv.SET, b -> Cmd.key(b, Cmd.SMEMBERS, key)));
    }

    /**
     * @param key the set
     * @param member the member
     * @return whether it is a member
     */
    public boolean sismember(String key, String member) {
        return (Boolean) call(Conv.BOOL, b -> Cmd.keyArg(b, Cmd.SISMEMBER, key, "member", member));
    }

    /**
     * @param key the set
     * @return its size
     */
    public long scard(String key) {
        return (Long) call(Conv.ANY, b -> Cmd.key(b, Cmd.SCARD, key));
    }

    // ------------------------------------------------------------------ sorted sets

    /**
     * @param key the sorted set
     * @param score the score (not NaN)
     * @param member the member
     * @return members added (0 or 1)
     */
    public long zadd(String key, double score, String member) {
        return (Long) call(Conv.ANY, b -> Cmd.zadd(b, key, score, member));
    }

    /**
     * @param key the sorted set
     * @param member the member
     * @return its score, or null
     */
    public Double zscore(String key, String member) {
        return (Double) call(Conv.DOUBLE, b -> Cmd.keyArg(b, Cmd.ZSCORE, key, "member", member));
    }

    /**
     * @param key the sorted set
     * @param start first rank
     * @param stop last rank (inclusive; -1: the end)
     * @return the members by score
     */
    public List<String> zrange(String key, long start, long stop) {
        return Conv.cast(call(Conv.ANY, b -> Cmd.keyRange(b, Cmd.ZRANGE, key, start, stop)));
    }

    /**
     * @param key the sorted set
     * @param members members to remove
     * @return how many were removed
     */
    public long zrem(String key, String... members) {
        return (Long) call(Conv.ANY, b -> Cmd.keyArgs(b, Cmd.ZREM, key, "member", members));
    }

    /**
     * @param key the sorted set
     * @return its size
     */
    public long zcard(String key) {
        return (Long) call(Conv.ANY, b -> Cmd.key(b, Cmd.ZCARD, key));
    }

    @Override
    public String toString() {
        return "SlotlaneClient{" + options.url + ", " + mode + (closed ? ", closed" : "") + "}";
    }
}
