package io.slotlane;

import java.time.Duration;
import java.util.Objects;

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
    }

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

        private Builder() {}

        /**
         * The server's address: {@code redis://[user:password@]host:port[/db]}, {@code host:port},
         * or seeds separated by commas. {@code rediss://} (TLS) is not supported by the core.
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
