package io.slotlane;

import io.slotlane.internal.sl_error_code;
import io.slotlane.internal.slotlane;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The asynchronous client: every typed method of the spec (rendered into
 * {@link AsyncCommands}, the same names, parameters and reply types as
 * {@link SlotlaneClient}'s) returns a {@link CompletableFuture} at once.
 *
 * <pre>{@code
 * try (AsyncClient c = AsyncClient.create(ClientOptions.builder().uri("redis://127.0.0.1:7000").build())) {
 *     CompletableFuture<Boolean> set = c.set("greeting", "hello");
 *     String v = c.get("greeting").thenApply(String::toUpperCase).join();
 *     AsyncPipeline p = c.pipeline();
 *     Reply<Long> n = p.incr("visits");
 *     p.get("greeting");
 *     List<Object> replies = p.execute().join();   // n.get() is valid from here on
 * }
 * }</pre>
 *
 * <p>How it runs: a call encodes its command on the calling thread and submits it as one
 * batch to the core's loop thread (one per process), which multiplexes the batches of every
 * caller on one connection per node (no connection per caller). Completions go into one
 * completion queue, drained many per wake-up by one completion thread ("slotlane-completions"),
 * which decodes the replies and completes each future on the client's executor
 * ({@link ClientOptions.Builder#executor}, default {@link ForkJoinPool#commonPool()}): the
 * stages chained on a future never run on the core's loop thread nor on the completion thread.
 *
 * <p>Cancelling: {@code future.cancel(true)} on a future this client returned cancels that
 * command's (or pipeline's) batch only — the replies it is still owed are read and dropped on
 * the shared connection, so every other caller's commands keep their replies.
 * Backpressure: at most {@link ClientOptions.Builder#maxInflight} batches and bytes are in flight;
 * past that a call fails with a {@link ResourceException} (the default,
 * {@link ClientOptions.Backpressure#FAIL_FAST}) or waits for room
 * ({@link ClientOptions.Backpressure#WAIT}). {@link #close()} completes every future still
 * pending exceptionally ({@link CancelledException}) before it returns, exactly once.
 *
 * <p>Thread-safe. Bad arguments throw {@link IllegalArgumentException} at the call, and
 * nothing is sent; a call on a closed client throws {@link IllegalStateException}.
 */
public final class AsyncClient extends AsyncCommands implements AutoCloseable {
    private final ClientOptions options;
    private final AsyncEngine engine;
    private final long client;
    private final Mode mode;
    final Executor executor;
    private final int flags;
    private final ConcurrentLinkedDeque<Long> spare = new ConcurrentLinkedDeque<>();
    private final Set<AsyncOp> inflight = ConcurrentHashMap.newKeySet();
    /** The scans not freed yet: freed before the core client (after their last page). */
    private final Set<AsyncScan> scans = ConcurrentHashMap.newKeySet();
    /** One for the open client, one per operation in flight: the last release frees the core client. */
    private final AtomicInteger refs = new AtomicInteger(1);
    /** Calls between their closed check and the end of their submission (close waits for them). */
    private final AtomicInteger submitting = new AtomicInteger();
    private volatile boolean closed;

    /** A calling thread's encoding buffer and out-parameter (reused: no allocation per call). */
    private static final class Scratch {
        final CommandBuffer cmd = new CommandBuffer(1024);
        final ByteBuffer out = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
        final long outAddr = slotlane.sl_java_buffer_address(out);
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private AsyncClient(ClientOptions options) {
        this.options = options;
        this.engine = AsyncEngine.get();
        this.executor = options.executor();
        this.flags = options.backpressure == ClientOptions.Backpressure.WAIT ? 0 : 1; // SL_SUBMIT_FAIL_FAST
        this.client = CoreHandle.newClient(options); // connects now: a bad address fails here
        this.mode = slotlane.sl_client_mode(client) == io.slotlane.internal.sl_mode.SL_MODE_CLUSTER ? Mode.CLUSTER : Mode.PLAIN;
    }

    /**
     * Connects (blocking: the seed's connect and, in cluster mode, the discovery) and starts
     * the process's loop and completion threads on first use.
     *
     * @param options where and how to connect, the executor, the in-flight bound
     * @return the client
     * @throws IllegalArgumentException for an address the core cannot parse
     * @throws ConnectionException when the server cannot be reached
     * @throws ClusterException when discovery fails
     */
    public static AsyncClient create(ClientOptions options) {
        if (options == null) throw new IllegalArgumentException("options must not be null");
        return new AsyncClient(options);
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
     * @return a new pipeline whose {@link AsyncPipeline#execute()} submits its commands as one batch
     */
    public AsyncPipeline pipeline() {
        ensureOpen();
        return new AsyncPipeline(this);
    }

    /**
     * Runs any command; bulk strings come back as {@code String} (UTF-8).
     *
     * @param args the command's name and arguments
     * @return the future of the decoded reply
     */
    public CompletableFuture<Object> command(String... args) {
        return submit(Shape.ANY, b -> Cmd.raw(b, args));
    }

    /**
     * Runs any command given as bytes; bulk strings come back as {@code byte[]}.
     *
     * @param args the command's name and arguments
     * @return the future of the decoded reply
     */
    public CompletableFuture<Object> command(byte[]... args) {
        return submit(Shape.BYTES, b -> Cmd.raw(b, args));
    }

    /**
     * A cluster-wide SCAN of every key (every primary; the one node in plain mode), fetched
     * in pages on the core's loop thread; see {@link AsyncScan}. Close it (try-with-resources)
     * or run it to the end with {@link AsyncScan#forEach}.
     *
     * @param match a glob pattern (MATCH), or null for every key
     * @param count the per-call hint (COUNT), 0 for the server's default
     * @param type  a type name (TYPE: "string", "hash"...), or null for any
     * @return the scan (nothing is sent until its first {@link AsyncScan#next()})
     * @throws IllegalArgumentException a negative count, an empty pattern or type
     * @throws IllegalStateException on a closed client
     */
    public AsyncScan scan(String match, int count, String type) {
        submitting.incrementAndGet(); // close() waits for it: the core client lives until it returns
        try {
            ensureOpen();
            AsyncScan scan = new AsyncScan(this, AsyncScan.create(client, match, count, type));
            scans.add(scan);
            return scan;
        } finally {
            submitting.decrementAndGet();
        }
    }

    /**
     * A Lua script run by its SHA1 on this client (EVALSHA; a node that answers NOSCRIPT
     * gets it loaded and the command once more, in the core, on the loop thread); see
     * {@link AsyncScript}.
     *
     * @param src the script's body
     * @return the script
     */
    public AsyncScript script(String src) {
        ensureOpen();
        return new AsyncScript(this, Cmd.notNull(src, "src"));
    }

    /** Submits one EVALSHA / EVALSHA_RO of script with its reload on NOSCRIPT. */
    @SuppressWarnings("unchecked")
    CompletableFuture<Object> submitScript(AsyncScript script, SlotlaneClient.Encoder e) {
        Scratch s = SCRATCH.get();
        CommandBuffer b = s.cmd;
        b.reset();
        e.encode(b); // bad arguments throw here, before anything is submitted
        b.flush();
        AsyncOp op = new AsyncOp(this, new Shape<?>[] {Shape.ANY}, 1, null, 0);
        op.script = script;
        submit(op, b);
        return op.future;
    }

    /** Submits the next page of scan s (no page of it in flight); its future completes with the page. */
    @SuppressWarnings("unchecked")
    CompletableFuture<AsyncScan.Page> submitScan(AsyncScan scan, long s) {
        Scratch sc = SCRATCH.get();
        AsyncOp op = new AsyncOp(this, new Shape<?>[] {Shape.ANY}, 1, null, 0);
        op.scan = scan;
        submitting.incrementAndGet();
        try {
            if (closed) throw new IllegalStateException("the client is closed");
            long batch = takeBatch(sc);
            op.batch = batch;
            refs.incrementAndGet();
            inflight.add(op);
            long token = engine.register(op);
            op.markSubmitted();
            int rc = slotlane.sl_loop_submit_scan_cq(engine.loop, s, batch, 0, engine.cq, token, flags);
            if (rc != 0) {
                engine.unregister(token);
                finished(op);
                inflight.remove(op);
                scan.refused();
                op.future.completeExceptionally(rc == sl_error_code.SL_EBUSY
                        ? Errors.ofCode(rc, "the client's in-flight bound is reached (ClientOptions.maxInflight; Backpressure.FAIL_FAST)")
                        : failure(rc));
            }
        } finally {
            submitting.decrementAndGet();
        }
        return (CompletableFuture<AsyncScan.Page>) (CompletableFuture<?>) op.future;
    }

    /** A scan freed by its close (or its last page): not freed again with the client. */
    void forget(AsyncScan scan) {
        scans.remove(scan);
    }

    // ------------------------------------------------------------------ submission

    @Override
    @SuppressWarnings("unchecked")
    <T> CompletableFuture<T> submit(Shape<T> shape, SlotlaneClient.Encoder e) {
        Scratch s = SCRATCH.get();
        CommandBuffer b = s.cmd;
        b.reset();
        e.encode(b); // bad arguments throw here, before anything is submitted
        b.flush();
        AsyncOp op = new AsyncOp(this, new Shape<?>[] {shape}, 1, null, 0);
        submit(op, b);
        return (CompletableFuture<T>) (CompletableFuture<?>) op.future;
    }

    /** Appends the buffer's commands to a batch and submits it; a refusal fails the op's future. */
    void submit(AsyncOp op, CommandBuffer b) {
        Scratch s = SCRATCH.get();
        submitting.incrementAndGet();
        try {
            if (closed) throw new IllegalStateException("the client is closed");
            long batch = takeBatch(s);
            int rc = slotlane.sl_batch_append(batch, 0, b.addr, b.pos, b.count);
            if (rc != 0) {
                spare.offerFirst(batch);
                throw failure(rc);
            }
            op.batch = batch;
            refs.incrementAndGet();
            inflight.add(op);
            long token = engine.register(op);
            op.markSubmitted();
            AsyncScript script = op.script;
            rc = script == null ? slotlane.sl_loop_submit_cq(engine.loop, batch, 0, engine.cq, token, flags)
                    : slotlane.sl_loop_submit_script_cq(engine.loop, batch, script.bodyAddr, script.bodyLen, 0, engine.cq, token, flags);
            if (rc != 0) {
                engine.unregister(token);
                finished(op);
                inflight.remove(op);
                op.future.completeExceptionally(rc == sl_error_code.SL_EBUSY
                        ? Errors.ofCode(rc, "the client's in-flight bound is reached (ClientOptions.maxInflight; Backpressure.FAIL_FAST)")
                        : failure(rc));
            }
        } finally {
            submitting.decrementAndGet();
        }
    }

    private long takeBatch(Scratch s) {
        Long b = spare.pollFirst();
        if (b != null) {
            slotlane.sl_batch_reset(b);
            return b;
        }
        s.out.putLong(0, 0);
        int rc = slotlane.sl_batch_new(client, s.outAddr);
        if (rc != 0) throw failure(rc);
        return s.out.getLong(0);
    }

    /** A failure of the core as a whole, by its code (no message: another thread may own the client's). */
    SlotlaneException failure(int rc) {
        return Errors.ofCode(rc, slotlane.sl_strerror(rc));
    }

    /** The op's batch is the client's again: kept for the next call; the op's reference released. */
    void finished(AsyncOp op) {
        spare.offerFirst(op.batch);
        release();
    }

    /** Completes the op's future on the executor (on the common pool if the executor refuses). */
    void deliver(AsyncOp op, Object value, Throwable error) {
        CompletableFuture<Object> f = op.future;
        Runnable r = () -> {
            if (error == null) f.complete(value);
            else f.completeExceptionally(error);
            inflight.remove(op); // until here close() completes it instead
        };
        try {
            executor.execute(r);
        } catch (RejectedExecutionException ex) {
            ForkJoinPool.commonPool().execute(r);
        }
    }

    private void release() {
        if (refs.decrementAndGet() != 0) return;
        // closed and nothing in flight: every batch is idle, then the client (detached already)
        Long b;
        while ((b = spare.pollFirst()) != null) slotlane.sl_batch_free(b);
        for (AsyncScan s : scans) s.freeWithClient(); // no page is in flight: the scans go before their client
        scans.clear();
        slotlane.sl_client_free(client);
    }

    private void ensureOpen() {
        if (closed) throw new IllegalStateException("the client is closed");
    }

    /**
     * Closes the client: the executions in flight are cancelled in the core, and every future
     * not yet complete is completed exceptionally with a {@link CancelledException} before this
     * returns (the stages chained on those run on this thread). Each future completes exactly
     * once. The connections are closed once the completion thread has taken the cancelled
     * executions. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) return;
            closed = true;
        }
        while (submitting.get() > 0) Thread.yield(); // a submission past its closed check finishes first
        // every execution in flight completes with SL_ECANCELLED into the queue (before this returns)
        slotlane.sl_loop_detach(engine.loop, client);
        CancelledException gone = new CancelledException(ErrorKind.CANCELLED, "the client was closed");
        for (AsyncOp op : inflight) op.future.completeExceptionally(gone);
        release(); // the open reference; the completion thread releases the others
    }

    @Override
    public String toString() {
        return "AsyncClient{" + options.url + ", " + mode + (closed ? ", closed" : "") + "}";
    }
}
