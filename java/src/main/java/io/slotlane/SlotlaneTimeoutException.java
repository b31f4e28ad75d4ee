package io.slotlane;

/**
 * The execution's deadline ({@link ClientOptions.Builder#commandTimeout}) passed before the command's reply.
 */
public class SlotlaneTimeoutException extends SlotlaneException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message the core's message
     */
    public SlotlaneTimeoutException(String message) {
        super(ErrorKind.TIMEOUT, message);
    }
}
