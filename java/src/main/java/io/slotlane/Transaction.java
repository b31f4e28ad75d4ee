package io.slotlane;

import io.slotlane.internal.sl_error_code;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

/**
 * A WATCH ... MULTI ... EXEC transaction on a connection of its own: a session of the core
 * ({@code sl_session_*}) that pins one leased connection to the primary of the slot of the
 * first key it sees, so no other caller's command can come between the WATCH and the EXEC.
 *
 * <pre>{@code
 * try (Transaction tx = client.transaction()) {
 *     tx.watch("{acct}:balance");
 *     long balance = Long.parseLong(tx.get("{acct}:balance"));   // runs at once, on the session
 *     Transaction.Multi m = tx.multi();
 *     m.set("{acct}:balance", balance - 10);                     // queued
 *     Reply<Long> n = m.rpush("{acct}:log", "-10");
 *     List<Object> replies = m.exec();                           // MULTI, the commands, EXEC
 * } catch (WatchException aborted) {
 *     // a watched key changed: nothing was applied; retry (client.transaction(keys, body) does)
 * }
 * }</pre>
 *
 * <p>Until {@link #multi()} the typed methods (those of {@link ClientCommands}, the client's)
 * and {@link #command(String...)} run at once on the session and return their replies, as
 * redis-py's pipeline does after {@code watch()}. {@link #multi()} returns a {@link Multi}, a
 * typed pipeline whose {@link Multi#exec()} sends MULTI, the queued commands and EXEC in one
 * write and returns the commands' replies; EXEC answering nil (a watched key changed) throws
 * {@link WatchException}, the slot moving (MOVED/ASK) while watched throws
 * {@link WatchMovedException} (a {@code WatchException}: a retry pins a new session on the new
 * owner). Every key of a transaction must be in one slot (use {@code {hash tags}}): a command
 * of another slot is refused before anything is sent ({@link ClusterException}, CROSSSLOT).
 *
 * <p>After {@code exec()} (also when it throws) the session has ended and this object can
 * start the next transaction ({@link #watch(String...)} again). {@link #close()} (and
 * {@link #reset()}) ends the session: the core sends UNWATCH or DISCARD when needed and gives
 * the connection back clean, or closes it after an error. A transaction holds one core
 * handle of its client's pool from its first command to the end of its session: close it
 * (try-with-resources; one dropped unclosed is ended by a {@link Cleaner} once collected,
 * but until then its handle is not the pool's). Not thread-safe: one thread at a time uses a transaction. Inside a
 * transaction use its own methods: the client's take another handle of the pool (with
 * {@link ClientOptions.Builder#poolSize poolSize(1)} they would wait for this one).
 */
public final class Transaction extends ClientCommands implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();
    private final SlotlaneClient client;
    /** The core handle and session, also ended by the cleaner when the transaction is dropped unclosed. */
    private final Held st;
    private final Cleaner.Cleanable cleanable;
    private boolean watching; // WATCH sent (and no UNWATCH)
    private Multi multi;      // the open MULTI (queued on the client side)
    private boolean closed;

    /**
     * Runs a transaction's reads and queues its writes; see
     * {@link SlotlaneClient#transaction(Collection, Body)}.
     */
    @FunctionalInterface
    public interface Body {
        /**
         * @param tx the transaction, its keys watched: read with its typed methods, then queue
         *           the writes on {@link Transaction#multi()} (when the body does not call it,
         *           an empty MULTI/EXEC still checks the watched keys)
         */
        void run(Transaction tx);
    }

    Transaction(SlotlaneClient client) {
        this.client = client;
        this.st = new Held(client);
        this.cleanable = CLEANER.register(this, st);
    }

    /**
     * What a transaction holds from its first command to the end of its session: the pool's
     * core handle and the core's session. Run (once per session) by reset(), close(), or the
     * cleaner when a transaction is dropped without close(): the session ends (UNWATCH) and
     * the handle goes back to the pool.
     */
    private static final class Held implements Runnable {
        private final SlotlaneClient client;
        volatile CoreHandle h; // from the first command to the end of the session
        volatile long session; // 0: none yet

        Held(SlotlaneClient client) {
            this.client = client;
        }

        @Override
        public void run() {
            CoreHandle held = h;
            long s = session;
            session = 0;
            h = null;
            if (held != null) {
                try {
                    if (s != 0) {
                        synchronized (held) {
                            CoreHandle.sessionClose(s); // a failed UNWATCH/DISCARD closed the connection: nothing is lost
                        }
                    }
                } finally {
                    client.release(held);
                }
            }
        }
    }

    // ------------------------------------------------------------------ the session

    private CoreHandle pin() {
        if (closed) throw new IllegalStateException("the transaction is closed");
        CoreHandle h = st.h;
        if (h == null) st.h = h = client.acquire();
        if (st.session == 0) {
            synchronized (h) {
                st.session = h.sessionNew();
            }
        }
        return h;
    }

    /**
     * Ends the session (the core sends UNWATCH/DISCARD when needed and returns the connection,
     * or closes it after an error), gives the core handle back to the pool and drops an open
     * {@link Multi}'s queued commands. The transaction can be used again.
     */
    public void reset() {
        watching = false;
        if (multi != null) {
            multi.done = true;
            multi = null;
        }
        st.run();
    }

    /** Ends the session; the transaction cannot be used afterwards. Idempotent. */
    @Override
    public void close() {
        closed = true;
        reset();
        cleanable.clean(); // nothing left to end: deregistered
    }

    /**
     * Runs the buffer's commands on the session; returns the core's code with the decoder on
     * the records. A moved slot while watched, or a failure that broke the session, ends the
     * session and throws.
     */
    private int execute(CommandBuffer b) {
        CoreHandle held = pin();
        int rc;
        String msg;
        synchronized (held) {
            rc = held.sessionExecute(st.session, b, 0);
            msg = held.sessionError;
        }
        if (rc == sl_error_code.SL_EWATCHMOVED) {
            reset();
            throw new WatchMovedException(ErrorKind.CLIENT, msg);
        }
        return rc;
    }

    /** The session is broken by an execution's failure (a timeout, a cancel, I/O): it is ended. */
    private static boolean breaks(int rc) {
        return rc != 0 && rc != sl_error_code.SL_ECLUSTER && rc != sl_error_code.SL_EABORTED;
    }

    private void ensureImmediate() {
        if (multi != null)
            throw new IllegalStateException("MULTI is open: queue the transaction's commands on the Multi that multi() returned");
    }

    /** A command run at once on the session: its shaped reply, or its failure thrown. */
    private <T> T now(Shape<T> shape, SlotlaneClient.Encoder e) {
        if (closed) throw new IllegalStateException("the transaction is closed");
        ensureImmediate();
        try {
            CoreHandle held = pin();
            CommandBuffer b = held.cmd;
            b.reset();
            e.encode(b); // bad arguments throw here, before anything is sent
            int rc = execute(b);
            Object v = held.dec.next(shape == Shape.BYTES);
            if (breaks(rc)) {
                reset();
                if (v instanceof SlotlaneException) throw (SlotlaneException) v;
                throw Errors.ofCode(rc, String.valueOf(held.sessionError));
            }
            if (v instanceof SlotlaneException) throw (SlotlaneException) v;
            return shape.apply(v);
        } finally {
            Reference.reachabilityFence(this); // the cleaner may not end the session while it is in use
        }
    }

    @Override
    <T> T run(Shape<T> shape, SlotlaneClient.Encoder e) {
        return now(shape, e);
    }

    // ------------------------------------------------------------------ WATCH, MULTI

    /**
     * WATCH the keys on the transaction's connection (leased now, to the primary of their
     * slot); until {@link #multi()} the typed methods run at once on it.
     *
     * @param keys the keys, all of one slot
     * @throws IllegalArgumentException without keys, or a null key
     * @throws IllegalStateException after {@link #multi()}, or on a closed transaction
     * @throws ClusterException keys of another slot than the session's (CROSSSLOT; nothing sent)
     */
    public void watch(String... keys) {
        if (keys == null || keys.length == 0) throw new IllegalArgumentException("watch() needs at least one key");
        for (String k : keys) Cmd.notNull(k, "key");
        if (multi != null) throw new IllegalStateException("WATCH inside MULTI is not allowed: watch before multi()");
        now(Shape.ANY, b -> {
            b.start(keys.length + 1);
            b.add("WATCH");
            for (String k : keys) b.add(k);
        });
        watching = true;
    }

    /**
     * @param keys the keys, all of one slot
     * @see #watch(String...)
     */
    public void watch(Collection<String> keys) {
        if (keys == null) throw new IllegalArgumentException("keys must not be null");
        watch(keys.toArray(new String[0]));
    }

    /** UNWATCH on the transaction's connection (nothing when no key is watched). */
    public void unwatch() {
        if (st.session != 0 && watching) now(Shape.ANY, b -> Cmd.raw(b, new String[] {"UNWATCH"}));
        watching = false;
    }

    /**
     * @return whether the session holds a WATCH (the core's view: also after the slot moved)
     */
    public boolean isWatching() {
        long s = st.session;
        return s != 0 && CoreHandle.sessionWatching(s);
    }

    /**
     * @return the slot the session is pinned to, or -1 (no session yet, or plain mode)
     */
    public int slot() {
        long s = st.session;
        return s == 0 ? -1 : CoreHandle.sessionSlot(s);
    }

    /**
     * Starts queueing the transaction's commands: the returned pipeline's typed methods queue
     * them, and its {@link Multi#exec()} sends MULTI, them and EXEC. Nothing is sent here.
     *
     * @return the transaction's pipeline
     * @throws IllegalStateException when a MULTI is already open, or on a closed transaction
     */
    public Multi multi() {
        if (closed) throw new IllegalStateException("the transaction is closed");
        if (multi != null) throw new IllegalStateException("MULTI is already open (nested MULTI)");
        multi = new Multi(this);
        return multi;
    }

    /**
     * @return the open {@link Multi}, or null
     */
    Multi openMulti() {
        return multi;
    }

    // ------------------------------------------------------------------ any command

    /**
     * Runs any command at once on the session (before {@link #multi()}); bulk strings as String.
     *
     * @param args the command's name and arguments
     * @return the decoded reply
     */
    public Object command(String... args) {
        return now(Shape.ANY, b -> Cmd.raw(b, args));
    }

    /**
     * Runs any command given as bytes at once on the session; bulk strings as {@code byte[]}.
     *
     * @param args the command's name and arguments
     * @return the decoded reply
     */
    public Object command(byte[]... args) {
        return now(Shape.BYTES, b -> Cmd.raw(b, args));
    }

    @Override
    public String toString() {
        return "Transaction{" + (closed ? "closed" : st.session == 0 ? "no session" : "slot " + slot())
                + (watching ? ", watching" : "") + (multi != null ? ", MULTI with " + multi.size() + " commands" : "") + "}";
    }

    // ------------------------------------------------------------------ EXEC

    /** EXEC: the transaction's pipeline, run by {@code exec()}. */
    private List<Object> exec(Multi m) {
        if (closed) throw new IllegalStateException("the transaction is closed");
        if (m != multi) throw new IllegalStateException("this MULTI has already run or was discarded");
        int n = m.n;
        try {
            if (n == 0 && st.session == 0) return new ArrayList<>(0); // nothing watched, nothing queued
            CommandBuffer b = m.buf;
            Cmd.raw(b, new String[] {"EXEC"});
            int rc = execute(b);
            CoreHandle h = st.h;
            ReplyDecoder d = h.dec;
            Object first = d.next(false); // MULTI's OK
            SlotlaneException refused = first instanceof SlotlaneException ? (SlotlaneException) first : null;
            for (int i = 0; i < n; i++) { // QUEUED, or why the server refused the command
                Object q = d.next(false);
                if (refused == null && q instanceof SlotlaneException) refused = (SlotlaneException) q;
            }
            Object exec = d.nextExec(m.shapes, n);
            if (rc == sl_error_code.SL_EABORTED || (exec == null && refused == null))
                throw new WatchException(ErrorKind.CLIENT,
                        "a watched key changed: the transaction was aborted (EXEC answered nil), nothing was applied");
            if (refused != null) throw refused; // CROSSSLOT (nothing sent), EXECABORT's cause, a broken session
            if (exec instanceof SlotlaneException) throw (SlotlaneException) exec;
            if (rc != 0) throw Errors.ofCode(rc, String.valueOf(h.sessionError));
            if (!(exec instanceof List) || ((List<?>) exec).size() != n)
                throw new ProtocolException(ErrorKind.PROTOCOL, "EXEC answered " + exec + " for " + n + " commands");
            List<?> raw = (List<?>) exec;
            List<Object> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                Shape<?> s = m.shapes[i];
                Object v = raw.get(i);
                out.add(s == Shape.ANY || s == Shape.BYTES || v instanceof SlotlaneException ? v : Pipeline.shape(s, v));
            }
            m.last = out;
            return out;
        } finally {
            reset(); // the session ends with its EXEC (its connection back clean, or closed after an error)
        }
    }

    /**
     * The commands of a transaction, queued on the client side from {@link Transaction#multi()}
     * and sent by {@link #exec()} as MULTI, the commands and EXEC in one write on the session's
     * connection. The typed methods (rendered into {@link PipelineCommands}, the same as
     * {@link Pipeline}'s) check their arguments at once ({@link IllegalArgumentException},
     * nothing queued) and return a {@link Reply}, valid once {@code exec()} has returned.
     */
    public static final class Multi extends PipelineCommands {
        private final Transaction tx;
        private final CommandBuffer buf = new CommandBuffer(4096);
        private Shape<?>[] shapes = new Shape<?>[16];
        private int n;
        private boolean done;
        private List<Object> last;

        private Multi(Transaction tx) {
            this.tx = tx;
            Cmd.raw(buf, new String[] {"MULTI"});
        }

        @Override
        CommandBuffer buf() {
            if (done) throw new IllegalStateException("this MULTI has already run or was discarded: start another with multi()");
            return buf;
        }

        @Override
        <T> Reply<T> queued(Shape<T> shape) {
            add(shape);
            return new Reply<>(this, n - 1, 0);
        }

        private void add(Shape<?> shape) {
            if (n == shapes.length) shapes = Arrays.copyOf(shapes, n * 2);
            shapes[n++] = shape;
        }

        @Override
        Object result(int i, int g) {
            if (last == null || i >= last.size())
                throw new IllegalStateException("the transaction has not committed this command (a Reply is valid once exec() returned)");
            return last.get(i);
        }

        /**
         * @return the number of commands queued
         */
        public int size() {
            return n;
        }

        /**
         * Sends MULTI, the queued commands and EXEC on the session's connection and returns the
         * commands' replies in order (shaped as the typed methods' replies; a command that
         * failed inside the transaction has its {@link SlotlaneException} in its place). The
         * transaction's session then ends, whatever the outcome.
         *
         * @return one value per queued command
         * @throws WatchException EXEC answered nil: a watched key changed, nothing was applied
         * @throws WatchMovedException the slot moved (MOVED/ASK) while watched
         * @throws ClusterException a command of another slot than the session's (CROSSSLOT:
         *         refused before anything was sent)
         * @throws ReplyException the server refused the transaction (EXECABORT: the refused
         *         command's error)
         * @throws SlotlaneException the execution failed (a timeout, a lost connection: the
         *         server may have applied it)
         */
        public List<Object> exec() {
            if (done) throw new IllegalStateException("this MULTI has already run or was discarded: start another with multi()");
            try {
                return tx.exec(this);
            } finally {
                done = true;
            }
        }

        /** Drops the queued commands and ends the transaction's session (as {@link Transaction#reset()}). */
        public void discard() {
            if (!done && tx.multi == this) tx.reset();
            done = true;
        }

        /**
         * @param args a command's name and arguments
         * @return this (reply: strings as String)
         */
        public Multi command(String... args) {
            Cmd.raw(buf(), args);
            add(Shape.ANY);
            return this;
        }

        /**
         * @param args a command's name and arguments
         * @return this (reply: strings as byte[])
         */
        public Multi command(byte[]... args) {
            Cmd.raw(buf(), args);
            add(Shape.BYTES);
            return this;
        }

        @Override
        public String toString() {
            return "Transaction.Multi{" + n + " commands" + (done ? ", done" : "") + "}";
        }
    }
}
