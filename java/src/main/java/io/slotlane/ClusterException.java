package io.slotlane;

/**
 * A cluster failure: too many redirects ({@link ErrorKind#REDIRECTS}), no node for the slot,
 * discovery failed, or the client refused the command ({@link ErrorKind#CLUSTER}, e.g. a
 * transaction across slots: the message starts with {@code CROSSSLOT}).
 */
public class ClusterException extends SlotlaneException {
    private static final long serialVersionUID = 1L;

    /**
     * @param kind    {@link ErrorKind#REDIRECTS} or {@link ErrorKind#CLUSTER}
     * @param message the core's message
     */
    public ClusterException(ErrorKind kind, String message) {
        super(kind, message);
    }
}
