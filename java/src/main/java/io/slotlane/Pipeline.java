package io.slotlane;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Commands queued on the client side and sent together: {@link #sync()} hands them to the
 * core in one call, which routes each by its key, writes every node's share before reading
 * any, and returns one reply per command, in the order queued. This is not a transaction
 * (no MULTI/EXEC): commands of a pipeline run independently.
 *
 * <p>Failed commands do not throw: their place in {@link #sync()}'s list holds a
 * {@link SlotlaneException} (a {@link ReplyException} for an error reply, ...), and the
 * other commands keep their replies. A pipeline is reusable after {@code sync()}; it is
 * used by one thread at a time. The typed methods (rendered into {@link PipelineCommands})
 * check their arguments at once ({@link IllegalArgumentException}, nothing queued), return a
 * {@link Reply} and shape their replies as the client's methods of the same name do; the
 * values of {@code sync()} are the same shaped values.
 */
public final class Pipeline extends PipelineCommands implements AutoCloseable {
    private final SlotlaneClient client;
    private final CommandBuffer buf = new CommandBuffer(8192);
    private Shape<?>[] shapes = new Shape<?>[64];
    private int n;
    private boolean closed;
    /** The replies of the last sync, for its Reply handles; gen counts the syncs. */
    private List<Object> last;
    private int gen;

    Pipeline(SlotlaneClient client) {
        this.client = client;
    }

    private void add(Shape<?> shape) {
        if (n == shapes.length) shapes = Arrays.copyOf(shapes, n * 2);
        shapes[n++] = shape;
    }

    @Override
    <T> Reply<T> queued(Shape<T> shape) {
        add(shape);
        return new Reply<>(this, n - 1, gen);
    }

    @Override
    CommandBuffer buf() {
        if (closed) throw new IllegalStateException("the pipeline is closed");
        return buf;
    }

    /** A Reply's value: the shaped reply of command i of sync number g. */
    @Override
    Object result(int i, int g) {
        if (g != gen - 1 || last == null || i >= last.size())
            throw new IllegalStateException("the pipeline has not run this command (sync first; a Reply is valid until the next sync)");
        return last.get(i);
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
        last = null; // the previous replies are not kept alive while these are decoded
        if (n == 0) {
            last = new ArrayList<>(0);
            gen++;
            return new ArrayList<>(0);
        }
        int count = n;
        try {
            CoreHandle h = client.acquire();
            try {
                List<Object> out = new ArrayList<>(count);
                synchronized (h) {
                    h.execute(buf, 0);
                    ReplyDecoder d = h.dec;
                    Shape<?>[] sh = shapes;
                    for (int i = 0; i < count; i++) {
                        Shape<?> s = sh[i];
                        Object v = d.next(s == Shape.BYTES);
                        out.add(s == Shape.ANY || s == Shape.BYTES || v instanceof SlotlaneException ? v : shape(s, v));
                    }
                }
                last = out;
                gen++;
                return out;
            } finally {
                client.release(h);
            }
        } finally {
            buf.reset();
            Arrays.fill(shapes, 0, count, null);
            n = 0;
        }
    }

    /** A reply of another type than the command's is that command's failure, in its place. */
    static Object shape(Shape<?> s, Object v) {
        try {
            return s.apply(v);
        } catch (SlotlaneException e) {
            return e;
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
        add(Shape.ANY);
        return this;
    }

    /**
     * @param args a command's name and arguments
     * @return this pipeline (reply: strings as byte[])
     */
    public Pipeline command(byte[]... args) {
        Cmd.raw(buf(), args);
        add(Shape.BYTES);
        return this;
    }

    @Override
    public String toString() {
        return "Pipeline{" + n + " commands" + (closed ? ", closed" : "") + "}";
    }
}
