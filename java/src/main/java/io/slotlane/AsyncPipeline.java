package io.slotlane;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Commands queued on the client side and submitted together by {@link #execute()} as one
 * batch of an {@link AsyncClient} (routed, split and pipelined per node by the core as
 * {@link Pipeline#sync()} does), without blocking. The typed methods (rendered into
 * {@link PipelineCommands}, the same as {@link Pipeline}'s) queue a command and return a
 * {@link Reply}, valid once {@code execute()}'s future has completed (until the next
 * {@code execute()}).
 *
 * <p>The future's list holds one value per command in order (failed commands: their
 * {@link SlotlaneException} in place, as {@link Pipeline#sync()}); it completes exceptionally
 * only when the execution failed as a whole. {@code cancel(true)} on it cancels this batch
 * only. After {@code execute()} the pipeline is empty and can queue the next commands at once
 * (the core has copied them). One thread at a time queues on a pipeline.
 */
public final class AsyncPipeline extends PipelineCommands {
    private final AsyncClient client;
    private final CommandBuffer buf = new CommandBuffer(8192);
    private Shape<?>[] shapes = new Shape<?>[64];
    private int n;
    /** Runs submitted (the gen of the queued commands' Replies) and the last completed run's replies. */
    private int gen;
    private volatile int lastGen = -1;
    private volatile List<Object> last;

    AsyncPipeline(AsyncClient client) {
        this.client = client;
    }

    @Override
    CommandBuffer buf() {
        return buf;
    }

    @Override
    <T> Reply<T> queued(Shape<T> shape) {
        add(shape);
        return new Reply<>(this, n - 1, gen);
    }

    private void add(Shape<?> shape) {
        if (n == shapes.length) shapes = Arrays.copyOf(shapes, n * 2);
        shapes[n++] = shape;
    }

    @Override
    Object result(int i, int g) {
        List<Object> l = last;
        if (g != lastGen || l == null || i >= l.size())
            throw new IllegalStateException("the pipeline has not run this command (a Reply is valid once execute()'s future completed, until the next execute)");
        return l.get(i);
    }

    /** On the completion thread, before the future completes: the replies the Replies of run g read. */
    void ran(int g, List<Object> replies) {
        last = replies;
        lastGen = g;
    }

    /**
     * @return the number of commands queued
     */
    public int size() {
        return n;
    }

    /**
     * Submits the queued commands as one batch and returns at once; the pipeline is then
     * empty. See {@link Pipeline#sync()} for the values' types.
     *
     * @return the future of one value per queued command
     */
    @SuppressWarnings("unchecked")
    public CompletableFuture<List<Object>> execute() {
        if (n == 0) return CompletableFuture.completedFuture(new ArrayList<>(0));
        int count = n;
        try {
            buf.flush();
            AsyncOp op = new AsyncOp(client, Arrays.copyOf(shapes, count), count, this, gen++);
            client.submit(op, buf);
            return (CompletableFuture<List<Object>>) (CompletableFuture<?>) op.future;
        } finally {
            buf.reset();
            Arrays.fill(shapes, 0, count, null);
            n = 0;
        }
    }

    /**
     * @param args a command's name and arguments
     * @return this pipeline (reply: strings as String)
     */
    public AsyncPipeline command(String... args) {
        Cmd.raw(buf, args);
        add(Shape.ANY);
        return this;
    }

    /**
     * @param args a command's name and arguments
     * @return this pipeline (reply: strings as byte[])
     */
    public AsyncPipeline command(byte[]... args) {
        Cmd.raw(buf, args);
        add(Shape.BYTES);
        return this;
    }

    @Override
    public String toString() {
        return "AsyncPipeline{" + n + " commands}";
    }
}
