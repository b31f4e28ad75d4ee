package io.slotlane;

import io.slotlane.internal.slotlane;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Commands encoded as RESP arrays of bulk strings, concatenated. Encoding writes into a
 * reused heap array (plain array stores: the JIT removes their bounds checks, where the
 * absolute puts of a direct buffer cost a few ns a byte); {@link #flush()} copies the
 * bytes once per execution into a reused direct ByteBuffer whose address was read once
 * (per allocation) and is handed to the core as a long. No JNI call per command. Not
 * thread-safe.
 */
final class CommandBuffer {
    private static final byte[] DIGITS = "0123456789".getBytes(StandardCharsets.US_ASCII);
    private byte[] arr;
    private ByteBuffer direct;
    /** The direct buffer's address (valid after flush()). */
    long addr;
    /** Bytes encoded. */
    int pos;
    /** Commands encoded. */
    int count;
    /** Arguments encoded (what end() counts). */
    private int args;

    CommandBuffer(int capacity) {
        arr = new byte[capacity];
        allocateDirect(capacity);
    }

    void reset() {
        pos = 0;
        count = 0;
    }

    private void allocateDirect(int capacity) {
        ByteBuffer nb = ByteBuffer.allocateDirect(capacity).order(ByteOrder.nativeOrder());
        long a = slotlane.sl_java_buffer_address(nb);
        if (a == 0) throw new IllegalStateException("slotlane: no address for a direct buffer");
        direct = nb;
        addr = a;
    }

    /** Copies the encoded bytes into the direct buffer (one bulk copy); then addr/pos/count describe them. */
    void flush() {
        if (pos > direct.capacity()) allocateDirect(Math.max(pos, 2 * direct.capacity()));
        direct.put(0, arr, 0, pos);
    }

    private void ensure(int more) {
        long need = (long) pos + more;
        if (need > arr.length) {
            if (need > Integer.MAX_VALUE - 64) throw new IllegalArgumentException("slotlane: commands exceed 2 GiB");
            arr = Arrays.copyOf(arr, (int) Math.min(Integer.MAX_VALUE - 64, Math.max(need, 2L * arr.length)));
        }
    }

    /** Starts a command of argc arguments (the arguments follow with add()). */
    void start(int argc) {
        ensure(16);
        byte[] a = arr;
        int p = pos;
        a[p++] = '*';
        p = digits(a, p, argc);
        a[p++] = '\r';
        a[p++] = '\n';
        pos = p;
        count++;
    }

    void add(byte[] arg) {
        int n = arg.length;
        args++;
        ensure(n + 16);
        int p = header(n);
        System.arraycopy(arg, 0, arr, p, n);
        crlf(p + n);
    }

    void add(String arg) {
        int n = arg.length();
        for (int i = 0; i < n; i++) {
            if (arg.charAt(i) >= 0x80) {
                add(arg.getBytes(StandardCharsets.UTF_8));
                return;
            }
        }
        args++;
        ensure(n + 16);
        int p = header(n);
        ascii(arg, n, arr, p);
        crlf(p + n);
    }

    /** Copies the low bytes of an ASCII string (checked by the caller): an array copy for compact strings. */
    @SuppressWarnings("deprecation")
    private static void ascii(String s, int n, byte[] dst, int at) {
        s.getBytes(0, n, dst, at);
    }

    void add(long v) {
        args++;
        ensure(48);
        int p = header(decimalLength(v));
        crlf(digits(arr, p, v));
    }

    /** A double by the spec's argument rule: +inf/-inf, an integral value as an integer, else the round-trip text. */
    void add(double v) {
        String s;
        if (v == Double.POSITIVE_INFINITY) s = "+inf";
        else if (v == Double.NEGATIVE_INFINITY) s = "-inf";
        else if (Double.isNaN(v)) throw new IllegalArgumentException("a NaN score or value is not allowed");
        else if (v == Math.rint(v) && Math.abs(v) < 1e16) s = Long.toString((long) v);
        else s = Double.toString(v);
        add(s);
    }

    /**
     * A value parameter by the spec's argument rule: String (UTF-8), byte[], an integer
     * (Long, Integer, Short, Byte) or a float (Double, Float). A Boolean is never a value
     * (bools are only flags); null and other types are refused.
     */
    void addValue(Object v, String what) {
        if (v instanceof String) add((String) v);
        else if (v instanceof byte[]) add((byte[]) v);
        else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) add(((Number) v).longValue());
        else if (v instanceof Double || v instanceof Float) add(((Number) v).doubleValue());
        else throw badArg(v, what, "a String, byte[] or number");
    }

    /** A key inside a tuple (MSET's key_value): String or byte[]. */
    void addKey(Object v, String what) {
        if (v instanceof String) add((String) v);
        else if (v instanceof byte[]) add((byte[]) v);
        else throw badArg(v, what, "a String or byte[]");
    }

    /** An int parameter given as an object (inside a tuple). */
    void addInt(Object v, String what) {
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) add(((Number) v).longValue());
        else throw badArg(v, what, "an integer");
    }

    /** A double parameter given as an object (inside a tuple or a list): any number but a Boolean. */
    void addDouble(Object v, String what) {
        if (v instanceof Number) add(((Number) v).doubleValue());
        else throw badArg(v, what, "a number");
    }

    static IllegalArgumentException badArg(Object v, String what, String want) {
        if (v == null) return new IllegalArgumentException(what + " must not be null");
        if (v instanceof Boolean) return new IllegalArgumentException(what + ": a Boolean is not a key, value or number (bools are only flags)");
        return new IllegalArgumentException(what + " must be " + want + ", not a " + v.getClass().getName());
    }

    // ------------------------------------------------------------------ commands of variable length

    private int varStart;
    private int varArgs;

    /** Starts a command whose argument count is known at its end: add()s, then end(). */
    void begin() {
        varStart = pos;
        varArgs = args;
    }

    private final byte[] head = new byte[24];

    /** Ends the command begun: writes its "*argc" header before its arguments. */
    void end() {
        byte[] head = this.head;
        head[0] = '*';
        int h = digits(head, 1, args - varArgs);
        head[h++] = '\r';
        head[h++] = '\n';
        ensure(h);
        System.arraycopy(arr, varStart, arr, varStart + h, pos - varStart);
        System.arraycopy(head, 0, arr, varStart, h);
        pos += h;
        count++;
    }

    /** Drops what was encoded since (pos, count) were read: a command refused while encoding leaves nothing queued. */
    void rollback(int toPos, int toCount) {
        pos = toPos;
        count = toCount;
    }

    /** Writes "$len\r\n" at pos; returns where the argument's bytes go. */
    private int header(int len) {
        byte[] a = arr;
        int p = pos;
        a[p++] = '$';
        p = digits(a, p, len);
        a[p++] = '\r';
        a[p++] = '\n';
        return p;
    }

    private void crlf(int p) {
        arr[p] = '\r';
        arr[p + 1] = '\n';
        pos = p + 2;
    }

    private static int decimalLength(long v) {
        if (v == Long.MIN_VALUE) return 20;
        int n = 1;
        if (v < 0) {
            n = 2;
            v = -v;
        }
        while (v >= 10) {
            v /= 10;
            n++;
        }
        return n;
    }

    /** Writes v in decimal at p; returns the position after it. */
    private static int digits(byte[] a, int p, long v) {
        if (v == Long.MIN_VALUE) {
            byte[] s = "-9223372036854775808".getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(s, 0, a, p, s.length);
            return p + s.length;
        }
        if (v < 0) {
            a[p++] = '-';
            v = -v;
        }
        if (v < 10) {
            a[p] = DIGITS[(int) v];
            return p + 1;
        }
        if (v < 100) {
            a[p] = DIGITS[(int) (v / 10)];
            a[p + 1] = DIGITS[(int) (v % 10)];
            return p + 2;
        }
        int end = p + decimalLength(v);
        for (int i = end - 1; i >= p; i--) {
            a[i] = DIGITS[(int) (v % 10)];
            v /= 10;
        }
        return end;
    }
}
