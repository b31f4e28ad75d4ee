package io.slotlane;

/**
 * A command or an execution failed. Thrown by single commands; returned in place of the
 * reply by {@link Pipeline#sync()}, so that one failed command of a pipeline fails only
 * itself. Subclasses: {@link ReplyException} (the server's error reply),
 * {@link ConnectionException} (I/O and protocol), {@link SlotlaneTimeoutException},
 * {@link ClusterException} (redirects, slots, CROSSSLOT).
 */
public class SlotlaneException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final ErrorKind kind;

    /**
     * @param kind    why the command failed
     * @param message the core's or the server's message
     */
    public SlotlaneException(ErrorKind kind, String message) {
        super(message);
        this.kind = kind;
    }

    /**
     * @return why the command failed
     */
    public ErrorKind kind() {
        return kind;
    }

    /** The exception for an error record or code of the given kind. */
    static SlotlaneException of(ErrorKind kind, String message) {
        switch (kind) {
            case SERVER: return new ReplyException(message);
            case IO: case PROTOCOL: return new ConnectionException(kind, message);
            case TIMEOUT: return new SlotlaneTimeoutException(message);
            case REDIRECTS: case CLUSTER: return new ClusterException(kind, message);
            default: return new SlotlaneException(kind, message);
        }
    }
}
