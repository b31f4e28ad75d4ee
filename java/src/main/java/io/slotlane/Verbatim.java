package io.slotlane;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A RESP3 verbatim string: its three-letter format ({@code txt}, {@code mkd}) and its text.
 */
public final class Verbatim {
    private final String format;
    private final byte[] bytes;

    Verbatim(String format, byte[] bytes) {
        this.format = format;
        this.bytes = bytes;
    }

    /**
     * @return the format, e.g. {@code "txt"}
     */
    public String format() { return format; }

    /**
     * @return the text's bytes (a copy)
     */
    public byte[] bytes() { return bytes.clone(); }

    /**
     * @return the text, decoded as UTF-8
     */
    @Override
    public String toString() { return new String(bytes, StandardCharsets.UTF_8); }

    @Override
    public boolean equals(Object o) {
        return o instanceof Verbatim && ((Verbatim) o).format.equals(format) && Arrays.equals(((Verbatim) o).bytes, bytes);
    }

    @Override
    public int hashCode() { return format.hashCode() * 31 + Arrays.hashCode(bytes); }
}
