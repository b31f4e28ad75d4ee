package io.slotlane;

import io.slotlane.internal.sl_error_code;
import io.slotlane.internal.slotlane;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One submitted batch of an {@link AsyncClient}: a command or a pipeline's commands, their
 * reply shapes and the future they complete. Between submission and its completion the
 * batch belongs to the core; {@link #cancelBatch()} is the only thing done to it then.
 */
final class AsyncOp {
    final AsyncClient client;
    final Shape<?>[] shapes;
    final int count;
    final Future<Object> future;
    /** The pipeline whose Reply handles read the results (null for one command), and its run. */
    final AsyncPipeline pipeline;
    final int gen;
    long batch;
    /** The scan whose page this op fetches (sl_loop_submit_scan_cq), or null. */
    AsyncScan scan;
    /** The script whose EVALSHA this op runs (sl_loop_submit_script_cq: its body kept alive until the completion), or null. */
    AsyncScript script;
    private boolean submitted, done; // guarded by this

    @SuppressWarnings({"unchecked", "rawtypes"})
    AsyncOp(AsyncClient client, Shape<?>[] shapes, int count, AsyncPipeline pipeline, int gen) {
        this.client = client;
        this.shapes = shapes;
        this.count = count;
        this.pipeline = pipeline;
        this.gen = gen;
        this.future = new Future(this, client.executor);
    }

    synchronized void markSubmitted() {
        submitted = true;
    }

    /** sl_batch_cancel while the batch is this op's and in flight; nothing afterwards. */
    synchronized void cancelBatch() {
        if (submitted && !done) slotlane.sl_batch_cancel(batch);
    }

    /** On the completion thread: decodes the replies and hands the future's completion to the executor. */
    void completed(AsyncEngine e, int status, long records, long bytes, long commands) {
        synchronized (this) {
            done = true; // the batch is ours again: no cancel may reach it once it is reused
        }
        Object value = null;
        Throwable error = null;
        try {
            int rc = scan != null ? 0
                    : commands == count ? e.copyOut(batch, records, bytes) : (status != 0 ? status : sl_error_code.SL_EPROTO);
            if (scan != null) {
                value = scan.completed(e, batch, status, records, bytes); // a page, or its failure thrown
            } else if (rc != 0) {
                error = client.failure(rc);
            } else if (pipeline == null) {
                Shape<?> s = shapes[0];
                Object v = e.dec.next(s == Shape.BYTES);
                if (v instanceof SlotlaneException) error = (SlotlaneException) v;
                else value = s.apply(v);
            } else {
                List<Object> out = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    Shape<?> s = shapes[i];
                    Object v = e.dec.next(s == Shape.BYTES);
                    out.add(s == Shape.ANY || s == Shape.BYTES || v instanceof SlotlaneException ? v : Pipeline.shape(s, v));
                }
                pipeline.ran(gen, out);
                value = out;
            }
        } catch (RuntimeException ex) {
            error = ex;
        } finally {
            client.finished(this);
        }
        client.deliver(this, value, error);
    }

    /**
     * The future an {@link AsyncClient} method returns: {@code cancel(true)} (or false) also
     * cancels the command's batch in the core; its dependents complete on the client's executor.
     */
    static final class Future<T> extends CompletableFuture<T> {
        private final AsyncOp op;
        private final Executor executor;

        Future(AsyncOp op, Executor executor) {
            this.op = op;
            this.executor = executor;
        }

        /**
         * Completes this future with a {@link java.util.concurrent.CancellationException} and
         * cancels the command's (or pipeline's) batch in the core: its commands without a reply
         * are not waited for, and the replies still owed on the shared connection are read and
         * dropped there, so every other command on that connection keeps its reply.
         */
        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            boolean cancelled = super.cancel(mayInterruptIfRunning);
            if (cancelled && op != null) op.cancelBatch();
            return cancelled;
        }

        @Override
        public Executor defaultExecutor() {
            return executor;
        }

        @Override
        public <U> CompletableFuture<U> newIncompleteFuture() {
            return new Future<>(null, executor); // dependents: cancelling one does not cancel this batch
        }
    }
}
