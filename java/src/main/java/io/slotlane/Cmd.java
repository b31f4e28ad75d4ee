package io.slotlane;

import java.nio.charset.StandardCharsets;

/**
 * The raw call's encoder and the checks the generated encoders (Commands) share: argument
 * checks ({@link IllegalArgumentException}) and RESP encoding only. Which node a command goes
 * to, and how MGET/MSET/DEL/EXISTS are split across slots, is the core's business.
 */
final class Cmd {
    private Cmd() {}

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    static <T> T notNull(T v, String what) {
        if (v == null) throw new IllegalArgumentException(what + " must not be null");
        return v;
    }

    static void raw(CommandBuffer b, String[] args) {
        if (args == null || args.length == 0) throw new IllegalArgumentException("a command needs at least its name");
        for (String a : args) notNull(a, "argument");
        b.start(args.length);
        for (String a : args) b.add(a);
    }

    static void raw(CommandBuffer b, byte[][] args) {
        if (args == null || args.length == 0) throw new IllegalArgumentException("a command needs at least its name");
        for (byte[] a : args) notNull(a, "argument");
        b.start(args.length);
        for (byte[] a : args) b.add(a);
    }
}
