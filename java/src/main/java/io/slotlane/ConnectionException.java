package io.slotlane;

/**
 * The command's node could not be reached, written or read ({@link ErrorKind#IO}), or sent bytes that are not RESP ({@link ErrorKind#PROTOCOL}).
 */
public class ConnectionException extends SlotlaneException {
    private static final long serialVersionUID = 1L;

    /**
     * @param kind    {@link ErrorKind#IO} or {@link ErrorKind#PROTOCOL}
     * @param message the core's message
     */
    public ConnectionException(ErrorKind kind, String message) {
        super(kind, message);
    }
}
