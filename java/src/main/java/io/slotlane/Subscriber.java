package io.slotlane;

import io.slotlane.internal.sl_client_options;
import io.slotlane.internal.sl_error_code;
import io.slotlane.internal.slotlane;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * Pub/sub over the core's subscriber ({@code sl_subscriber_*}, slotlane.h "pub/sub"): the core
 * owns the subscriber's connections (never the command connections) and a thread of its own;
 * it subscribes what this object asks for, keeps it subscribed across lost connections,
 * failovers and slot moves, and queues messages and events in one bounded queue, which this
 * class drains in batches.
 *
 * <pre>{@code
 * try (Subscriber s = Subscriber.create(ClientOptions.builder().uri("redis://127.0.0.1:7000").build())) {
 *     s.subscribe("news");
 *     s.ssubscribe("orders:{eu}");                       // routed by the channel's slot
 *     Subscriber.Message m = s.poll(Duration.ofSeconds(1));  // null: nothing within the timeout
 * }
 * }</pre>
 *
 * Besides messages, the queue holds the servers' confirmations ({@link Type#SUBSCRIBE} ...) and
 * the core's events: {@link Type#RESUBSCRIBED} (subscribed again after a gap: messages
 * published meanwhile were missed), {@link Type#CONNECTION_LOST}, {@link Type#OVERFLOW} (the
 * queue bound was reached and {@link Message#count()} messages were dropped, the newest ones)
 * and {@link Type#ERROR} (a server refused a subscription).
 *
 * <p>Thread-safe: subscribe and unsubscribe from any thread. Messages are read either with
 * {@link #poll(Duration)} or by a listener ({@link #onMessage(Consumer)}), not both.
 */
public final class Subscriber implements AutoCloseable {
    private static final int BATCH = 256, MSG = 32;
    private static final System.Logger LOG = System.getLogger("io.slotlane");

    /** What a message of the queue is (the core's {@code sl_message_kind}). */
    public enum Type {
        /** A message of a channel. */
        MESSAGE,
        /** A message of a channel matched by a pattern ({@link Message#pattern()}). */
        PMESSAGE,
        /** A message of a shard channel. */
        SMESSAGE,
        /** The server confirmed the channel; count: its subscriptions on that connection. */
        SUBSCRIBE,
        /** The server confirmed the pattern (in {@link Message#channel()}). */
        PSUBSCRIBE,
        /** The server confirmed the shard channel. */
        SSUBSCRIBE,
        /** The channel is no longer subscribed. */
        UNSUBSCRIBE,
        /** The pattern is no longer subscribed. */
        PUNSUBSCRIBE,
        /** The shard channel is no longer subscribed. */
        SUNSUBSCRIBE,
        /** Subscribed again after a gap ({@link Message#kind()} says which kind): messages were missed. */
        RESUBSCRIBED,
        /** The queue was full: {@link Message#count()} messages were dropped here. */
        OVERFLOW,
        /** A subscriber connection broke ({@link Message#payload()}: the node and why). */
        CONNECTION_LOST,
        /** A server refused a subscription ({@link Message#payload()}: its error). */
        ERROR
    }

    /** What a subscription is ({@code sl_sub_kind}). */
    public enum Kind {
        /** SUBSCRIBE. */
        CHANNEL,
        /** PSUBSCRIBE. */
        PATTERN,
        /** SSUBSCRIBE (routed by the channel's slot). */
        SHARD
    }

    /**
     * One record of the queue. Bytes are copies; the String forms decode them as UTF-8.
     */
    public static final class Message {
        private final Type type;
        private final Kind kind;
        private final byte[] channel, pattern, payload;
        private final long count;

        Message(Type type, Kind kind, byte[] channel, byte[] pattern, byte[] payload, long count) {
            this.type = type;
            this.kind = kind;
            this.channel = channel;
            this.pattern = pattern;
            this.payload = payload;
            this.count = count;
        }

        /** @return what the record is */
        public Type type() { return type; }

        /** @return for RESUBSCRIBED and ERROR: the kind of subscription; else null */
        public Kind kind() { return kind; }

        /** @return the channel (the pattern for PSUBSCRIBE/PUNSUBSCRIBE) as UTF-8 text; "" when none */
        public String channel() { return new String(channel, StandardCharsets.UTF_8); }

        /** @return the channel's bytes */
        public byte[] channelBytes() { return channel.clone(); }

        /** @return for PMESSAGE: the pattern that matched; else "" */
        public String pattern() { return new String(pattern, StandardCharsets.UTF_8); }

        /** @return the payload (the reason of CONNECTION_LOST, the error of ERROR) as UTF-8 text */
        public String payload() { return new String(payload, StandardCharsets.UTF_8); }

        /** @return the payload's bytes */
        public byte[] payloadBytes() { return payload.clone(); }

        /** @return (un)subscribe: the server's count; OVERFLOW: the messages dropped; else 0 */
        public long count() { return count; }

        @Override
        public String toString() {
            return "Message{" + type + (kind != null ? " " + kind : "") + ", channel=" + channel()
                    + (pattern.length > 0 ? ", pattern=" + pattern() : "") + ", payload=" + payload.length + " bytes"
                    + (count != 0 ? ", count=" + count : "") + "}";
        }
    }

    /**
     * The subscriber's counters ({@code sl_subscriber_stats}).
     *
     * @param messages         messages queued
     * @param dropped          messages dropped by the queue bound
     * @param connectionLosses CONNECTION_LOST records
     * @param resubscribed     RESUBSCRIBED records
     * @param pings            health-check PINGs sent
     * @param refreshes        topology refreshes the subscriber asked for
     * @param confirmed        subscriptions the servers confirm now
     * @param queuedBytes      bytes in the queue now
     * @param bytesRead        bytes read from the subscriber's connections
     */
    public record Stats(long messages, long dropped, long connectionLosses, long resubscribed, long pings,
                        long refreshes, long confirmed, long queuedBytes, long bytesRead) {
    }

    /** Builds the subscriber's own options (the queue bound and the health check). */
    public static final class Options {
        long maxQueueBytes;
        int healthCheckMs;

        /** The defaults: a 64 MiB queue, a health-check PING after 30 s of silence. */
        public Options() {}

        /**
         * @param bytes the queued bytes (channel + pattern + payload + 32 a record) past which new
         *              messages are dropped and counted in an OVERFLOW record; positive
         * @return this
         */
        public Options maxQueueBytes(long bytes) {
            if (bytes <= 0) throw new IllegalArgumentException("maxQueueBytes must be positive, not " + bytes);
            this.maxQueueBytes = bytes;
            return this;
        }

        /**
         * @param interval a connection that read nothing this long is sent a PING (no reply within as
         *                 long again: it is dead); zero: never
         * @return this
         */
        public Options healthCheckInterval(Duration interval) {
            Objects.requireNonNull(interval, "interval");
            if (interval.isNegative()) throw new IllegalArgumentException("healthCheckInterval must not be negative");
            long ms = interval.toMillis();
            if (ms > Integer.MAX_VALUE) throw new IllegalArgumentException("healthCheckInterval is too long");
            this.healthCheckMs = interval.isZero() ? -1 : (int) Math.max(1, ms);
            return this;
        }
    }

    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final Object drainLock = new Object();
    private final ArrayDeque<Message> pending = new ArrayDeque<>();
    private final ByteBuffer msgs = ByteBuffer.allocateDirect(BATCH * MSG).order(ByteOrder.nativeOrder());
    private final long msgsAddr = slotlane.sl_java_buffer_address(msgs);
    private final ByteBuffer out = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
    private final long outAddr = slotlane.sl_java_buffer_address(out);
    private ByteBuffer data = ByteBuffer.allocateDirect(1 << 16).order(ByteOrder.nativeOrder());
    private long dataAddr = slotlane.sl_java_buffer_address(data);
    private long sub; // 0 once freed; guarded by lock
    private volatile boolean closed;
    private volatile Thread listener;

    private Subscriber(long sub) {
        this.sub = sub;
    }

    /**
     * A subscriber for the servers of options (URL or seeds, mode, credentials, RESP version,
     * TLS, timeouts); connects and discovers the topology now.
     *
     * @param options the client options of the servers
     * @return the subscriber
     * @throws ConnectionException when no server can be reached (and the other failures of a client's creation)
     */
    public static Subscriber create(ClientOptions options) {
        return create(options, new Options());
    }

    /**
     * @param options the client options of the servers
     * @param subscriberOptions the queue bound and health check
     * @return the subscriber
     */
    public static Subscriber create(ClientOptions options, Options subscriberOptions) {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(subscriberOptions, "subscriberOptions");
        ByteBuffer b = ByteBuffer.allocateDirect(64 + 512).order(ByteOrder.nativeOrder());
        long a = slotlane.sl_java_buffer_address(b);
        // sl_subscriber_options v1: version, size, max_queue_bytes, health_check_interval_ms (24 bytes)
        b.putInt(8, 1);
        b.putInt(12, 24);
        b.putLong(16, subscriberOptions.maxQueueBytes);
        b.putInt(24, subscriberOptions.healthCheckMs);
        sl_client_options copts = CoreHandle.coreOptions(options);
        try {
            int rc = slotlane.sl_subscriber_new(a, copts, a + 8, a + 64, 512);
            if (rc != 0) {
                String msg = CoreHandle.cString(b, 64, 512);
                throw CoreHandle.failure(rc, msg, options.url);
            }
            return new Subscriber(b.getLong(0));
        } finally {
            copts.delete();
        }
    }

    /** @param channels channels to SUBSCRIBE (UTF-8) */
    public void subscribe(String... channels) { change(true, Kind.CHANNEL, channels); }

    /** @param patterns patterns to PSUBSCRIBE */
    public void psubscribe(String... patterns) { change(true, Kind.PATTERN, patterns); }

    /** @param channels shard channels to SSUBSCRIBE: on their slot's owner, followed across slot moves */
    public void ssubscribe(String... channels) { change(true, Kind.SHARD, channels); }

    /** @param channels channels to UNSUBSCRIBE; none: every channel */
    public void unsubscribe(String... channels) { change(false, Kind.CHANNEL, channels); }

    /** @param patterns patterns to PUNSUBSCRIBE; none: every pattern */
    public void punsubscribe(String... patterns) { change(false, Kind.PATTERN, patterns); }

    /** @param channels shard channels to SUNSUBSCRIBE; none: every shard channel */
    public void sunsubscribe(String... channels) { change(false, Kind.SHARD, channels); }

    /**
     * Adds (or removes) a binary-safe name of a kind; the server's confirmation follows in the queue.
     *
     * @param subscribe true to subscribe, false to unsubscribe
     * @param kind      the kind of subscription
     * @param name      the name; for an unsubscribe, null means every name of the kind
     */
    public void change(boolean subscribe, Kind kind, byte[] name) {
        Objects.requireNonNull(kind, "kind");
        if (subscribe && name == null) throw new IllegalArgumentException("a channel or pattern must not be null");
        ByteBuffer nb = ByteBuffer.allocateDirect(Math.max(1, name == null ? 0 : name.length));
        if (name != null) nb.put(0, name);
        lock.readLock().lock();
        try {
            if (sub == 0 || closed) throw new IllegalStateException("the subscriber is closed");
            long na = name == null ? 0 : slotlane.sl_java_buffer_address(nb);
            int rc = subscribe ? slotlane.sl_subscriber_subscribe(sub, kind.ordinal(), na, name.length)
                    : slotlane.sl_subscriber_unsubscribe(sub, kind.ordinal(), na, name == null ? 0 : name.length);
            if (rc != 0) throw CoreHandle.failure(rc, (subscribe ? "subscribe: " : "unsubscribe: ") + slotlane.sl_strerror(rc), null);
        } finally {
            lock.readLock().unlock();
        }
    }

    private void change(boolean subscribe, Kind kind, String[] names) {
        Objects.requireNonNull(names, "names");
        if (subscribe && names.length == 0) throw new IllegalArgumentException("name at least one channel or pattern");
        if (names.length == 0) {
            change(false, kind, (byte[]) null);
            return;
        }
        for (String n : names) {
            if (n == null) throw new IllegalArgumentException("a channel or pattern must not be null");
            change(subscribe, kind, n.getBytes(StandardCharsets.UTF_8));
        }
    }

    /**
     * The next record of the queue, waiting up to timeout for one.
     *
     * @param timeout how long to wait; zero: do not wait; null: no limit
     * @return the record, or null when none came within the timeout or the subscriber is closed
     * @throws IllegalStateException when a listener ({@link #onMessage}) reads the queue
     */
    public Message poll(Duration timeout) {
        if (listener != null) throw new IllegalStateException("a listener (onMessage) reads this subscriber's messages");
        int ms;
        if (timeout == null) ms = -1;
        else {
            if (timeout.isNegative()) throw new IllegalArgumentException("timeout must not be negative");
            ms = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
        }
        synchronized (drainLock) {
            if (pending.isEmpty()) fill(ms);
            return pending.poll();
        }
    }

    /**
     * Hands every record, in order, to listener on a thread of the subscriber's own (one at a
     * time), until {@link #close()}; {@link #poll} is refused from then on. An exception the
     * listener throws is logged (logger {@code io.slotlane}) and the next record follows.
     *
     * @param listener what to call with each record
     * @throws IllegalStateException when a listener is set already or the subscriber is closed
     */
    public synchronized void onMessage(Consumer<Message> listener) {
        Objects.requireNonNull(listener, "listener");
        if (this.listener != null) throw new IllegalStateException("a listener is set already");
        if (closed) throw new IllegalStateException("the subscriber is closed");
        Thread t = new Thread(() -> {
            while (true) {
                Message m;
                synchronized (drainLock) {
                    if (pending.isEmpty() && !fill(-1)) break;
                    m = pending.poll();
                }
                if (m == null) continue;
                try {
                    listener.accept(m);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "slotlane: a Subscriber listener threw", e);
                }
            }
        }, "slotlane-subscriber");
        t.setDaemon(true);
        this.listener = t;
        t.start();
    }

    /** One drain into pending; false when the subscriber is closed and its queue empty. Holds drainLock. */
    private boolean fill(int timeoutMs) {
        lock.readLock().lock();
        try {
            if (sub == 0) return false;
            int rc = slotlane.sl_subscriber_drain(sub, timeoutMs, msgsAddr, BATCH, dataAddr, data.capacity(), outAddr, outAddr + 8);
            if (rc == sl_error_code.SL_ETOOSMALL) {
                long need = out.getLong(8);
                if (need > Integer.MAX_VALUE - 64) throw new ProtocolException(ErrorKind.PROTOCOL, "slotlane: a message exceeds 2 GiB");
                data = CoreHandle.grownData(data, (int) need);
                dataAddr = slotlane.sl_java_buffer_address(data);
                rc = slotlane.sl_subscriber_drain(sub, 0, msgsAddr, BATCH, dataAddr, data.capacity(), outAddr, outAddr + 8);
            }
            if (rc == sl_error_code.SL_ESTATE) return false;
            if (rc != 0) throw CoreHandle.failure(rc, "sl_subscriber_drain: " + slotlane.sl_strerror(rc), null);
            int n = (int) out.getLong(0);
            for (int i = 0; i < n; i++) pending.add(decode(i * MSG));
            return true;
        } finally {
            lock.readLock().unlock();
        }
    }

    private static final Type[] TYPES = Type.values();
    private static final Kind[] KINDS = Kind.values();

    private Message decode(int at) {
        int k = msgs.get(at) & 0xff;
        int flags = msgs.get(at + 1) & 0xff;
        int chl = msgs.getInt(at + 4), patl = msgs.getInt(at + 8), payl = msgs.getInt(at + 12);
        long count = msgs.getLong(at + 16);
        int off = (int) msgs.getLong(at + 24);
        byte[] ch = new byte[chl], pat = new byte[patl], pay = new byte[payl];
        data.get(off, ch);
        data.get(off + chl, pat);
        data.get(off + chl + patl, pay);
        Type t = k >= 1 && k <= TYPES.length ? TYPES[k - 1] : Type.ERROR;
        Kind kind = (t == Type.RESUBSCRIBED || t == Type.ERROR) && flags < KINDS.length ? KINDS[flags] : null;
        return new Message(t, kind, ch, pat, pay, count);
    }

    /** @return the core subscriber's counters */
    public Stats stats() {
        ByteBuffer b = ByteBuffer.allocateDirect(80).order(ByteOrder.nativeOrder());
        b.putInt(0, 1);  // SL_SUBSCRIBER_STATS_VERSION
        b.putInt(4, 80); // version 1's size: two ints and nine counters
        lock.readLock().lock();
        try {
            if (sub != 0) slotlane.sl_subscriber_stats_get(sub, slotlane.sl_java_buffer_address(b));
        } finally {
            lock.readLock().unlock();
        }
        long[] v = new long[9];
        for (int i = 0; i < 9; i++) v[i] = b.getLong(8 + 8 * i);
        return new Stats(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
    }

    /** @return true after {@link #close()} */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Closes the subscriber's connections and stops its thread; a {@link #poll} waiting returns
     * (null), the listener thread ends. Idempotent.
     */
    @Override
    public void close() {
        lock.readLock().lock();
        try {
            closed = true;
            if (sub != 0) slotlane.sl_subscriber_close(sub); // wakes a waiting drain
        } finally {
            lock.readLock().unlock();
        }
        Thread t = listener;
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        lock.writeLock().lock(); // no drain is running any more
        try {
            if (sub != 0) slotlane.sl_subscriber_free(sub);
            sub = 0;
        } finally {
            lock.writeLock().unlock();
        }
    }
}
