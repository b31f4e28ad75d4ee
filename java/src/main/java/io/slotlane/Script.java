package io.slotlane;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A Lua script run by its SHA1: {@code Script s = Script.of(client, "return redis.call('INCR', KEYS[1])");
 * s.run(List.of("counter"), List.of())}. It sends EVALSHA; a node that answers NOSCRIPT gets
 * the script loaded (SCRIPT LOAD) and the command once more — in the core.
 */
public final class Script {
    private final SlotlaneClient client;
    private final ByteBuffer body;
    private final long bodyAddr;
    private final int bodyLen;
    private final String sha;

    private Script(SlotlaneClient client, byte[] src) {
        this.client = client;
        body = ByteBuffer.allocateDirect(Math.max(src.length, 1)).order(ByteOrder.nativeOrder());
        body.put(0, src);
        bodyAddr = io.slotlane.internal.slotlane.sl_java_buffer_address(body);
        bodyLen = src.length;
        CoreHandle h = client.acquire();
        try {
            synchronized (h) {
                sha = h.sha1(bodyAddr, bodyLen);
            }
        } finally {
            client.release(h);
        }
    }

    /**
     * Binds a script to a client.
     *
     * @param client the client
     * @param src the script's body
     * @return the script
     */
    public static Script of(SlotlaneClient client, String src) {
        return new Script(client, src.getBytes(StandardCharsets.UTF_8));
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
     * @return the reply (bulk strings as String)
     */
    public Object run(List<String> keys, List<String> args) {
        return call("EVALSHA", keys, args);
    }

    /**
     * Runs the script as a read-only one (EVALSHA_RO).
     *
     * @param keys the keys (KEYS)
     * @param args the arguments (ARGV)
     * @return the reply (bulk strings as String)
     */
    public Object runReadOnly(List<String> keys, List<String> args) {
        return call("EVALSHA_RO", keys, args);
    }

    private Object call(String name, List<String> keys, List<String> args) {
        CoreHandle h = client.acquire();
        try {
            Object v;
            synchronized (h) {
                CommandBuffer b = h.cmd;
                b.reset();
                b.start(3 + keys.size() + args.size());
                b.add(name);
                b.add(sha);
                b.add((long) keys.size());
                for (String k : keys) b.add(k);
                for (String a : args) b.add(a);
                h.runScript(b, bodyAddr, bodyLen, 0);
                v = h.dec.next(false);
            }
            if (v instanceof SlotlaneException) throw (SlotlaneException) v;
            return v;
        } finally {
            client.release(h);
        }
    }
}
