package io.slotlane;

/**
 * The server answered the command with an error reply, e.g. {@code WRONGTYPE ...}.
 */
public class ReplyException extends SlotlaneException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message the server's error message, prefix included
     */
    public ReplyException(String message) {
        super(ErrorKind.SERVER, message);
    }

    /**
     * The error's prefix: the first word of the message ({@code ERR}, {@code WRONGTYPE},
     * {@code MOVED}...).
     *
     * @return the first word of the message
     */
    public String prefix() {
        String m = getMessage();
        int sp = m.indexOf(' ');
        return sp < 0 ? m : m.substring(0, sp);
    }
}
