package io.slotlane;

import io.slotlane.internal.slotlane;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A Lua script of an {@link AsyncClient}, run by its SHA1 without blocking:
 * {@code AsyncScript s = asyncClient.script("return redis.call('INCR', KEYS[1])");
 * s.run(List.of("counter"), List.of()).thenAccept(...)}. Each run is one EVALSHA (routed by its
 * first key); a node that answers NOSCRIPT gets the script loaded (SCRIPT LOAD) and the
 * command once more — in the core, each step on its loop thread
 * ({@code sl_loop_submit_script_cq}). The futures are {@link AsyncClient}'s: they complete on
 * its executor, and {@code cancel(true)} cancels that run. Thread-safe.
 */
public final class AsyncScript {
    private final AsyncClient client;
    private final ByteBuffer body; // native memory the core reads until each run completes
    final long bodyAddr;
    final int bodyLen;
    private final String sha;

    AsyncScript(AsyncClient client, String src) {
        this.client = client;
        byte[] b = src.getBytes(StandardCharsets.UTF_8);
        body = ByteBuffer.allocateDirect(Math.max(b.length, 1) + 48).order(ByteOrder.nativeOrder());
        body.put(48, b);
        long base = slotlane.sl_java_buffer_address(body);
        bodyAddr = base + 48;
        bodyLen = b.length;
        slotlane.sl_script_sha1(bodyAddr, bodyLen, base); // 40 hex digits and a NUL at the buffer's start
        sha = CoreHandle.cString(body, 0, 41);
    }

    /** @return the SHA1 (40 lowercase hex digits) */
    public String sha() {
        return sha;
    }

    /**
     * Runs the script (EVALSHA).
     *
     * @param keys the keys (KEYS)
     * @param args the arguments (ARGV)
     * @return the future of the reply (bulk strings as String); an error reply fails it
     * @throws IllegalArgumentException a null list or element (nothing sent)
     */
    public CompletableFuture<Object> run(List<String> keys, List<String> args) {
        return call("EVALSHA", keys, args);
    }

    /**
     * Runs the script as a read-only one (EVALSHA_RO: a replica may serve it with
     * {@link ClientOptions.Builder#readFrom}).
     *
     * @param keys the keys (KEYS)
     * @param args the arguments (ARGV)
     * @return the future of the reply (bulk strings as String)
     */
    public CompletableFuture<Object> runReadOnly(List<String> keys, List<String> args) {
        return call("EVALSHA_RO", keys, args);
    }

    private CompletableFuture<Object> call(String name, List<String> keys, List<String> args) {
        Cmd.notNull(keys, "keys");
        Cmd.notNull(args, "args");
        for (String k : keys) Cmd.notNull(k, "key");
        for (String a : args) Cmd.notNull(a, "argument");
        return client.submitScript(this, b -> {
            b.start(3 + keys.size() + args.size());
            b.add(name);
            b.add(sha);
            b.add((long) keys.size());
            for (String k : keys) b.add(k);
            for (String a : args) b.add(a);
        });
    }

    @Override
    public String toString() {
        return "AsyncScript{" + sha + "}";
    }
}
