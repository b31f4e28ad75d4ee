package io.slotlane;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Commands queued on the client side and sent together: {@link #sync()} hands them to the
 * core in one call, which routes each by its key, writes every node's share before reading
 * any, and returns one reply per command, in the order queued. This is not a transaction
 * (no MULTI/EXEC): commands of a pipeline run independently.
 *
 * <p>Failed commands do not throw: their place in {@link #sync()}'s list holds a
 * {@link SlotlaneException} (a {@link ReplyException} for an error reply, ...), and the
 * other commands keep their replies. A pipeline is reusable after {@code sync()}; it is
 * used by one thread at a time. The typed methods check their arguments at once
 * ({@link IllegalArgumentException}) and convert their replies as the client's methods of
 * the same name do.
 */
public final class Pipeline implements AutoCloseable {
    private final SlotlaneClient client;
    private final CommandBuffer buf = new CommandBuffer(8192);
    private byte[] convs = new byte[64];
    private int n;
    private boolean closed;

    Pipeline(SlotlaneClient client) {
        this.client = client;
    }

    private Pipeline queued(byte conv) {
        if (n == convs.length) convs = Arrays.copyOf(convs, n * 2);
        convs[n++] = conv;
        return this;
    }

    private CommandBuffer buf() {
        if (closed) throw new IllegalStateException("the pipeline is closed");
        return buf;
    }

    /**
     * @return the number of commands queued
     */
    public int size() {
        return n;
    }

    /**
     * Sends the queued commands (one crossing into the core) and returns their replies in
     * order; the pipeline is then empty. Values: bulk strings as {@code String} (or
     * {@code byte[]} for the byte methods), status replies as {@code String}, integers as
     * {@code Long}, nil as {@code null}, arrays as {@code List}, RESP3 maps as
     * {@code Map}, sets as {@code Set}, doubles as {@code Double}, booleans as
     * {@code Boolean}, big numbers as {@code BigInteger}, verbatim strings as
     * {@link Verbatim}; errors as {@link SlotlaneException} instances.
     *
     * @return one value per queued command
     * @throws SlotlaneException only when the execution failed as a whole without replies
     */
    public List<Object> sync() {
        if (closed) throw new IllegalStateException("the pipeline is closed");
        if (n == 0) return new ArrayList<>(0);
        int count = n;
        try {
            CoreHandle h = client.acquire();
            try {
                List<Object> out = new ArrayList<>(count);
                synchronized (h) {
                    h.execute(buf, 0);
                    ReplyDecoder d = h.dec;
                    byte[] cv = convs;
                    for (int i = 0; i < count; i++) {
                        byte c = cv[i];
                        Object v = d.next(Conv.asBytes(c));
                        out.add(c <= Conv.BYTES ? v : Conv.apply(c, v));
                    }
                }
                return out;
            } finally {
                client.release(h);
            }
        } finally {
            buf.reset();
            n = 0;
        }
    }

    /** Drops the queued commands; the pipeline cannot be used afterwards. */
    @Override
    public void close() {
        closed = true;
        buf.reset();
        n = 0;
    }

    // ------------------------------------------------------------------ any command

    /**
     * @param args a command's name and arguments
     * @return this pipeline (reply: strings as String)
     */
    public Pipeline command(String... args) {
        Cmd.raw(buf(), args);
        return queued(Conv.ANY);
    }

    /**
     * @param args a command's name and arguments
     * @return this pipeline (reply: strings as byte[])
     */
    public Pipeline command(byte[]... args) {
        Cmd.raw(buf(), args);
        return queued(Conv.BYTES);
    }

    // ------------------------------------------------------------------ strings

    /**
     * @param key the key
     * @return this pipeline (reply: String or null)
     */
    public Pipeline get(String key) {
        Cmd.key(buf(), Cmd.GET, key);
        return queued(Conv.ANY);
    }

    /**
     * @param key the key
     * @return this pipeline (reply: byte[] or null)
     */
    public Pipeline get(byte[] key) {
        Cmd.key(buf(), Cmd.GET, key);
        return queued(Conv.BYTES);
    }

    /**
     * @param key the key
     * @param value the value
     * @return this pipeline (reply: "OK")
     */
    public Pipeline set(String key, String value) {
        Cmd.set(buf(), key, value, null);
        return queued(Conv.ANY);
    }

    /**
     * @param key the key
     * @param value the value
     * @return this pipeline (reply: "OK")
     */
    public Pipeline set(byte[] key, byte[] value) {
        Cmd.set(buf(), key, value, null);
        return queued(Conv.ANY);
    }

    /**
     * @param key the key
     * @param value the value
     * @param params expiry and NX/XX
     * @return this pipeline (reply: "OK" or null)
     */
    public Pipeline set(String key, String value, SetParams params) {
        Cmd.set(buf(), key, value, Cmd.notNull(params, "params"));
        return queued(Conv.ANY);
    }

    /**
     * @param keys keys in any slots
     * @return this pipeline (reply: List of String or null)
     */
    public Pipeline mget(String... keys) {
        Cmd.keys(buf(), Cmd.MGET, keys);
        return queued(Conv.ANY);
    }

    /**
     * @param keysAndValues k1, v1, k2, v2...
     * @return this pipeline (reply: "OK")
     */
    public Pipeline mset(String... keysAndValues) {
        Cmd.mset(buf(), keysAndValues);
        return queued(Conv.ANY);
    }

    /**
     * @param keysAndValues keys and values
     * @return this pipeline (reply: "OK")
     */
    public Pipeline mset(Map<String, String> keysAndValues) {
        Cmd.mset(buf(), keysAndValues);
        return queued(Conv.ANY);
    }

    /**
     * @param keys keys in any slots
     * @return this pipeline (reply: Long, keys deleted)
     */
    public Pipeline del(String... keys) {
        Cmd.keys(buf(), Cmd.DEL, keys);
        return queued(Conv.ANY);
    }

    /**
     * @param keys keys in any slots
     * @return this pipeline (reply: Long, keys existing)
     */
    public Pipeline exists(String... keys) {
        Cmd.keys(buf(), Cmd.EXISTS, keys);
        return queued(Conv.ANY);
    }

    /**
     * @param key the key
     * @param seconds time to live
     * @return this pipeline (reply: Boolean)
     */
    public Pipeline expire(String key, long seconds) {
        Cmd.keyLong(buf(), Cmd.EXPIRE, key, seconds);
        return queued(Conv.BOOL);
    }

    /**
     * @param key the key
     * @return this pipeline (reply: Long)
     */
    public Pipeline ttl(String key) {
        Cmd.key(buf(), Cmd.TTL, key);
        return queued(Conv.ANY);
    }

    /**
     * @param key the key
     * @return this pipeline (reply: Long)
     */
    public Pipeline incr(String key) {
        Cmd.key(buf(), Cmd.INCR, key);
        return queued(Conv.ANY);
    }

    /**
     * @param key the key
     * @param by the increment
     * @return this pipeline (reply: Long)
     */
    public Pipeline incrBy(String key, long by) {
        Cmd.keyLong(buf(), Cmd.INCRBY, key, by);
        return queued(Conv.ANY);
    }

    // ------------------------------------------------------------------ lists, hashes, sets, sorted sets

    /**
     * @param key the list
     * @param values values
     * @return this pipeline (reply: Long, the length)
     */
    public Pipeline rpush(String key, String... values) {
        Cmd.keyArgs(buf(), Cmd.RPUSH, key, "value", values);
        return queued(Conv.ANY);
    }

    /**
     * @param key the list
     * @param values values
     * @return this pipeline (reply: Long, the length)
     */
    public Pipeline lpush(String key, String... values) {
        Cmd.keyArgs(buf(), Cmd.LPUSH, key, "value", values);
        return queued(Conv.ANY);
    }

    /**
     * @param key the list
     * @param start first index
     * @param stop last index
     * @return this pipeline (reply: List)
     */
    public Pipeline lrange(String key, long start, long stop) {
        Cmd.keyRange(buf(), Cmd.LRANGE, key, start, stop);
        return queued(Conv.ANY);
    }

    /**
     * @param key the hash
     * @param field the field
     * @param value the value
     * @return this pipeline (reply: Long)
     */
    public Pipeline hset(String key, String field, String value) {
        Cmd.hset(buf(), key, field, value);
        return queued(Conv.ANY);
    }

    /**
     * @param key the hash
     * @param field the field
     * @return this pipeline (reply: String or null)
     */
    public Pipeline hget(String key, String field) {
        Cmd.keyArg(buf(), Cmd.HGET, key, "field", field);
        return queued(Conv.ANY);
    }

    /**
     * @param key the hash
     * @return this pipeline (reply: Map of String to String)
     */
    public Pipeline hgetAll(String key) {
        Cmd.key(buf(), Cmd.HGETALL, key);
        return queued(Conv.MAP);
    }

    /**
     * @param key the set
     * @param members members
     * @return this pipeline (reply: Long)
     */
    public Pipeline sadd(String key, String... members) {
        Cmd.keyArgs(buf(), Cmd.SADD, key, "member", members);
        return queued(Conv.ANY);
    }

    /**
     * @param key the set
     * @return this pipeline (reply: Set of String)
     */
    public Pipeline smembers(String key) {
        Cmd.key(buf(), Cmd.SMEMBERS, key);
        return queued(Conv.SET);
    }

    /**
     * @param key the sorted set
     * @param score the score
     * @param member the member
     * @return this pipeline (reply: Long)
     */
    public Pipeline zadd(String key, double score, String member) {
        Cmd.zadd(buf(), key, score, member);
        return queued(Conv.ANY);
    }

    /**
     * @param key the sorted set
     * @param member the member
     * @return this pipeline (reply: Double or null)
     */
    public Pipeline zscore(String key, String member) {
        Cmd.keyArg(buf(), Cmd.ZSCORE, key, "member", member);
        return queued(Conv.DOUBLE);
    }

    @Override
    public String toString() {
        return "Pipeline{" + n + " commands" + (closed ? ", closed" : "") + "}";
    }
}
