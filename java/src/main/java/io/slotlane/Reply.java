package io.slotlane;

/**
 * A typed command queued on a {@link Pipeline} or an {@link AsyncPipeline}: {@link #get()}
 * gives its reply, shaped by the command's reply type, once the pipeline has run it
 * ({@link Pipeline#sync()} returned, or {@link AsyncPipeline#execute()}'s future completed),
 * until the pipeline's next run.
 *
 * @param <T> the command's reply type
 */
public final class Reply<T> {
    private final PipelineCommands p;
    private final int index;
    private final int gen;

    Reply(PipelineCommands p, int index, int gen) {
        this.p = p;
        this.index = index;
        this.gen = gen;
    }

    /**
     * @return the command's value
     * @throws SlotlaneException the command's failure (a {@link ReplyException} for an error reply...)
     * @throws IllegalStateException when the pipeline has not run the command (sync first; a
     *         Reply is valid until the pipeline's next sync)
     */
    @SuppressWarnings("unchecked")
    public T get() {
        Object v = p.result(index, gen);
        if (v instanceof SlotlaneException) throw (SlotlaneException) v;
        return (T) v;
    }

    @Override
    public String toString() {
        return "Reply{#" + index + "}";
    }
}
