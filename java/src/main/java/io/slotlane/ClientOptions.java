package io.slotlane;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;

/**
 * The options of a {@link SlotlaneClient}: where to connect and how. Immutable; made with
 * {@link #builder()}. Bad values fail with {@link IllegalArgumentException} when set.
 *
 * <pre>{@code
 * ClientOptions o = ClientOptions.builder().uri("redis://127.0.0.1:7000").build();   // mode AUTO
 * ClientOptions p = ClientOptions.builder().host("127.0.0.1", 6379).mode(Mode.PLAIN).build();
 * }</pre>
 *
 * The address is handed to the core as it is: it parses {@code redis://[user:password@]host:port[/db]},
 * {@code host:port} and comma-separated seeds, and rejects what it cannot parse.
 */
public final class ClientOptions {
    final String url;
    final Mode mode;
    final String username;
    final String password;
    final int database;
    final int resp;
    final int connectTimeoutMs;
    final int commandTimeoutMs;
    final int maxRedirects;
    final int refreshIntervalMs;
    final int poolSize;
    final int maxInflightBatches;
    final long maxInflightBytes;
    final Backpressure backpressure;
    final Executor executor;
    final TlsOptions tls;
    final ReadFrom readFrom;
    final boolean retryWrites;
    final int blockingGraceMs;
    final int leaseIdleMax;
    final ClientEvent.Sink events;

    /** Where read-only commands go in a cluster (the core's {@code sl_read_from}). */
    public enum ReadFrom {
        /** Every command to the slot's primary (default). */
        PRIMARY(0),
        /** Read-only commands to the first usable replica of the slot's primary, else to the primary. */
        PREFER_REPLICA(1),
        /** Read-only commands rotate over the primary's usable replicas, else go to the primary. */
        REPLICAS(2);

        final int code;

        ReadFrom(int code) {
            this.code = code;
        }
    }

    private ClientOptions(Builder b) {
        if (b.url == null) throw new IllegalArgumentException("ClientOptions: uri(...) or host(...) is required");
        this.url = b.url;
        this.mode = b.mode;
        this.username = b.username;
        this.password = b.password;
        this.database = b.database;
        this.resp = b.resp;
        this.connectTimeoutMs = b.connectTimeoutMs;
        this.commandTimeoutMs = b.commandTimeoutMs;
        this.maxRedirects = b.maxRedirects;
        this.refreshIntervalMs = b.refreshIntervalMs;
        this.poolSize = b.poolSize;
        this.maxInflightBatches = b.maxInflightBatches;
        this.maxInflightBytes = b.maxInflightBytes;
        this.backpressure = b.backpressure;
        this.executor = b.executor;
        this.tls = b.tls;
        this.readFrom = b.readFrom;
        this.retryWrites = b.retryWrites;
        this.blockingGraceMs = b.blockingGraceMs;
        this.leaseIdleMax = b.leaseIdleMax;
        this.events = b.onEvent == null ? null : new ClientEvent.Sink(b.onEvent);
    }

    /**
     * @return where read-only commands go ({@link ReadFrom#PRIMARY} by default)
     */
    public ReadFrom readFrom() { return readFrom; }

    /**
     * @return whether a sent write whose connection broke is sent once more
     */
    public boolean retryWrites() { return retryWrites; }

    /**
     * @return the grace added to a blocking command's block time for its deadline, in ms (0: the core's, 1000)
     */
    public int blockingGraceMs() { return blockingGraceMs; }

    /**
     * @return the idle leased connections kept per node (0: the core's, 4; -1: none)
     */
    public int leaseIdleMax() { return leaseIdleMax; }

    /**
     * @return a builder with the defaults
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * @return the address as given to the core
     */
    public String url() { return url; }

    /**
     * @return the mode asked for ({@link Mode#AUTO} by default)
     */
    public Mode mode() { return mode; }

    /**
     * @return the RESP version, 2 or 3
     */
    public int resp() { return resp; }

    /**
     * @return the most core handles (connections to each node) the client opens
     */
    public int poolSize() { return poolSize; }

    /**
     * @return the TLS options, or null (then TLS only for a {@code rediss://} URL, with the defaults)
     */
    public TlsOptions tls() { return tls; }

    /**
     * @return what {@link AsyncClient} does at the in-flight bound
     */
    public Backpressure backpressure() { return backpressure; }

    /**
     * @return the executor {@link AsyncClient}'s futures complete on (the default when none was set)
     */
    public Executor executor() { return executor != null ? executor : ForkJoinPool.commonPool(); }

    /** What {@link AsyncClient} does when its in-flight bound ({@link Builder#maxInflight}) is reached. */
    public enum Backpressure {
        /** The future fails at once with a {@link ResourceException} (SL_EBUSY); nothing is sent (default). */
        FAIL_FAST,
        /** The submitting thread waits until completions make room (then the call returns its future). */
        WAIT
    }

    @Override
    public String toString() {
        return "ClientOptions{url=" + url + ", mode=" + mode + ", resp=" + resp + ", poolSize=" + poolSize + "}";
    }

    /**
     * Builds {@link ClientOptions}.
     */
    public static final class Builder {
        private String url;
        private Mode mode = Mode.AUTO;
        private String username;
        private String password;
        private int database = -1;
        private int resp = 2;
        private int connectTimeoutMs = 2000;
        private int commandTimeoutMs = 5000;
        private int maxRedirects = 5;
        private int refreshIntervalMs = 0;
        private int poolSize = Math.max(8, 2 * Runtime.getRuntime().availableProcessors());
        private int maxInflightBatches;
        private long maxInflightBytes;
        private Backpressure backpressure = Backpressure.FAIL_FAST;
        private Executor executor;
        private TlsOptions tls;
        private ReadFrom readFrom = ReadFrom.PRIMARY;
        private boolean retryWrites;
        private int blockingGraceMs;
        private int leaseIdleMax;
        private ClientEvent.Listener onEvent;

        private Builder() {}

        /**
         * A listener of the core's events (topology changed, node down, node up, failover), for
         * logging and metrics. It is called on a thread of these options' own, one event at a
         * time (every client made with the options shares it).
         *
         * @param listener what to call; null: none
         * @return this builder
         */
        public Builder onEvent(ClientEvent.Listener listener) {
            this.onEvent = listener;
            return this;
        }

        /**
         * Where read-only commands (GET, MGET, HGETALL, ZRANGE... by Redis's command table) go
         * in a cluster: replica connections send READONLY, so a replica serves its primary's
         * slots. A replica's data may lag its primary's (replication is asynchronous).
         *
         * @param readFrom {@link ReadFrom#PRIMARY} (default), {@link ReadFrom#PREFER_REPLICA} or
         *                 {@link ReadFrom#REPLICAS} (round-robin)
         * @return this builder
         */
        public Builder readFrom(ReadFrom readFrom) {
            this.readFrom = Objects.requireNonNull(readFrom, "readFrom");
            return this;
        }

        /**
         * When a write was sent and its connection broke, the core fails it with a
         * {@link ConnectionException} whose message ends "(the command was sent: it may have
         * been executed)". With retryWrites it is sent once more instead: it may then run
         * twice (an INCR counted twice). Commands that never reached a socket are always
         * routed again and resent, and a sent read-only command is retried once.
         *
         * @param retry true to resend a sent write once (default false)
         * @return this builder
         */
        public Builder retryWrites(boolean retry) {
            this.retryWrites = retry;
            return this;
        }

        /**
         * Blocking commands (BLPOP, XREAD BLOCK, WAIT...) run on a connection leased for them;
         * their deadline is their block time plus this grace (none for a block time of 0), and
         * at the deadline the leased connection is closed, so a pop still armed on the server
         * never hands its element to anyone (the core's {@code blocking_grace_ms}).
         *
         * @param ms 0 (the default: the core's, 1000) or a positive grace in milliseconds
         * @return this builder
         */
        public Builder blockingGraceMs(int ms) {
            if (ms < 0) throw new IllegalArgumentException("blockingGraceMs must not be negative, not " + ms);
            this.blockingGraceMs = ms;
            return this;
        }

        /**
         * How many idle leased connections (of blocking commands and {@link Transaction}s) a core
         * handle keeps per node for reuse (the core's {@code lease_idle_max}).
         *
         * @param n 0 (the default: the core's, 4), a positive count, or -1 (none: each is closed after use)
         * @return this builder
         */
        public Builder leaseIdleMax(int n) {
            if (n < -1) throw new IllegalArgumentException("leaseIdleMax must be -1, 0 or positive, not " + n);
            this.leaseIdleMax = n;
            return this;
        }

        /**
         * The server's address: {@code redis://[user:password@]host:port[/db]}, {@code host:port},
         * or seeds separated by commas; {@code rediss://...} connects with TLS (see {@link #tls}).
         *
         * @param uri the address
         * @return this builder
         */
        public Builder uri(String uri) {
            Objects.requireNonNull(uri, "uri");
            if (uri.isBlank()) throw new IllegalArgumentException("uri must not be empty");
            if (uri.indexOf('\0') >= 0) throw new IllegalArgumentException("uri must not contain NUL characters");
            this.url = uri;
            return this;
        }

        /**
         * The server's host and port.
         *
         * @param host a host name or an IP address
         * @param port 1..65535
         * @return this builder
         */
        public Builder host(String host, int port) {
            if (host == null || host.isBlank()) throw new IllegalArgumentException("host must not be empty");
            if (host.indexOf('\0') >= 0 || host.indexOf(',') >= 0 || host.indexOf('/') >= 0)
                throw new IllegalArgumentException("host must be a host name or an IP address: " + host);
            if (port < 1 || port > 65535) throw new IllegalArgumentException("port must be in 1..65535, not " + port);
            this.url = (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
            return this;
        }

        /**
         * @param mode {@link Mode#AUTO} (default), {@link Mode#PLAIN} or {@link Mode#CLUSTER}
         * @return this builder
         */
        public Builder mode(Mode mode) {
            this.mode = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /**
         * @param username the ACL user (null: none, or the URI's)
         * @param password the password (null: none, or the URI's)
         * @return this builder
         */
        public Builder credentials(String username, String password) {
            if ((username != null && username.indexOf('\0') >= 0) || (password != null && password.indexOf('\0') >= 0))
                throw new IllegalArgumentException("credentials must not contain NUL characters");
            this.username = username;
            this.password = password;
            return this;
        }

        /**
         * @param database the database SELECTed in plain mode (0..; cluster mode has only 0)
         * @return this builder
         */
        public Builder database(int database) {
            if (database < 0) throw new IllegalArgumentException("database must be >= 0, not " + database);
            this.database = database;
            return this;
        }

        /**
         * @param version 2 (default) or 3 (HELLO 3 on every connection)
         * @return this builder
         */
        public Builder resp(int version) {
            if (version != 2 && version != 3) throw new IllegalArgumentException("resp must be 2 or 3, not " + version);
            this.resp = version;
            return this;
        }

        /**
         * @param timeout per connection attempt (default 2 s), positive
         * @return this builder
         */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeoutMs = millis("connectTimeout", timeout, false);
            return this;
        }

        /**
         * @param timeout the deadline of one command or pipeline (default 5 s); zero: none
         * @return this builder
         */
        public Builder commandTimeout(Duration timeout) {
            this.commandTimeoutMs = millis("commandTimeout", timeout, true);
            return this;
        }

        /**
         * @param max redirects (MOVED/ASK/TRYAGAIN) followed per command before it fails, 0..100 (default 5)
         * @return this builder
         */
        public Builder maxRedirects(int max) {
            if (max < 0 || max > 100) throw new IllegalArgumentException("maxRedirects must be in 0..100, not " + max);
            this.maxRedirects = max;
            return this;
        }

        /**
         * @param interval periodic slot-map refresh; zero (default): only after MOVED
         * @return this builder
         */
        public Builder refreshInterval(Duration interval) {
            this.refreshIntervalMs = millis("refreshInterval", interval, true);
            return this;
        }

        /**
         * The most core handles the client opens (each has its own connections); threads
         * beyond it wait for a free one. Default: max(8, 2 x processors).
         *
         * @param size 1..1024
         * @return this builder
         */
        public Builder poolSize(int size) {
            if (size < 1 || size > 1024) throw new IllegalArgumentException("poolSize must be in 1..1024, not " + size);
            this.poolSize = size;
            return this;
        }

        /**
         * @return the options
         */
        /**
         * The bound on what {@link AsyncClient} has in flight at once (the core's
         * {@code max_inflight_batches} / {@code max_inflight_bytes}): commands and pipelines
         * submitted and not yet completed, and their command bytes. Default (0): the core's,
         * 4096 batches and 64 MiB. At the bound, {@link #backpressure(Backpressure)} decides.
         *
         * @param batches 0 (the default) or the most batches in flight
         * @param bytes   0 (the default) or the most command bytes in flight
         * @return this builder
         */
        public Builder maxInflight(int batches, long bytes) {
            if (batches < 0) throw new IllegalArgumentException("maxInflight: batches must be >= 0, not " + batches);
            if (bytes < 0) throw new IllegalArgumentException("maxInflight: bytes must be >= 0, not " + bytes);
            this.maxInflightBatches = batches;
            this.maxInflightBytes = bytes;
            return this;
        }

        /**
         * @param policy what {@link AsyncClient} does at the in-flight bound: {@link Backpressure#FAIL_FAST}
         *               (default) or {@link Backpressure#WAIT}
         * @return this builder
         */
        public Builder backpressure(Backpressure policy) {
            this.backpressure = Objects.requireNonNull(policy, "backpressure");
            return this;
        }

        /**
         * The executor that completes {@link AsyncClient}'s futures, so the stages a caller
         * chains on them ({@code thenApply}...) run there — never on the core's loop thread nor
         * on the client's completion thread. Default: {@link ForkJoinPool#commonPool()}. An
         * executor that runs tasks in the calling thread ({@code Runnable::run}) runs them on the
         * completion thread: cheaper, but a stage that blocks there stalls every completion.
         *
         * @param executor where the futures complete
         * @return this builder
         */
        public Builder executor(Executor executor) {
            this.executor = Objects.requireNonNull(executor, "executor");
            return this;
        }

        /**
         * TLS on every connection the client opens (seeds, discovered nodes, reconnects),
         * whatever the URL's scheme; a {@code rediss://} URL without it uses the defaults
         * (the system's CAs, full verification). The handshake runs within the connect
         * timeout; nothing is sent before the server's certificate is verified, and a
         * failure throws {@link TlsException} saying what failed.
         *
         * @param tls the CAs, client certificate and verification
         * @return this builder
         */
        public Builder tls(TlsOptions tls) {
            this.tls = Objects.requireNonNull(tls, "tls");
            return this;
        }

        public ClientOptions build() {
            return new ClientOptions(this);
        }

        private static int millis(String what, Duration d, boolean zeroOk) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || (!zeroOk && d.isZero()))
                throw new IllegalArgumentException(what + " must be " + (zeroOk ? "zero or positive" : "positive") + ", not " + d);
            long ms = d.toMillis();
            if (ms > Integer.MAX_VALUE) throw new IllegalArgumentException(what + " is too long: " + d);
            if (ms == 0 && !d.isZero()) ms = 1;
            return (int) ms;
        }
    }
}
