package io.slotlane;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The typed helpers' encoders, shared by {@link SlotlaneClient} and {@link Pipeline}: argument
 * checks ({@link IllegalArgumentException}) and RESP encoding only. Which node a command goes
 * to, and how MGET/MSET/DEL/EXISTS are split across slots, is the core's business.
 */
final class Cmd {
    private Cmd() {}

    static final byte[] GET = b("GET"), SET = b("SET"), MGET = b("MGET"), MSET = b("MSET"), DEL = b("DEL"),
            EXISTS = b("EXISTS"), EXPIRE = b("EXPIRE"), TTL = b("TTL"), INCR = b("INCR"), INCRBY = b("INCRBY"),
            DECR = b("DECR"), LPUSH = b("LPUSH"), RPUSH = b("RPUSH"), LPOP = b("LPOP"), RPOP = b("RPOP"),
            LRANGE = b("LRANGE"), LLEN = b("LLEN"), HSET = b("HSET"), HGET = b("HGET"), HGETALL = b("HGETALL"),
            HDEL = b("HDEL"), SADD = b("SADD"), SREM = b("SREM"), SMEMBERS = b("SMEMBERS"),
            SISMEMBER = b("SISMEMBER"), SCARD = b("SCARD"), ZADD = b("ZADD"), ZSCORE = b("ZSCORE"),
            ZRANGE = b("ZRANGE"), ZREM = b("ZREM"), ZCARD = b("ZCARD"), PING = b("PING"), FLUSHALL = b("FLUSHALL"),
            DBSIZE = b("DBSIZE");

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    static <T> T notNull(T v, String what) {
        if (v == null) throw new IllegalArgumentException(what + " must not be null");
        return v;
    }

    static void noArgs(CommandBuffer b, byte[] name) {
        b.start(1);
        b.add(name);
    }

    static void key(CommandBuffer b, byte[] name, String key) {
        notNull(key, "key");
        b.start(2);
        b.add(name);
        b.add(key);
    }

    static void key(CommandBuffer b, byte[] name, byte[] key) {
        notNull(key, "key");
        b.start(2);
        b.add(name);
        b.add(key);
    }

    static void keyArg(CommandBuffer b, byte[] name, String key, String what, String arg) {
        notNull(key, "key");
        notNull(arg, what);
        b.start(3);
        b.add(name);
        b.add(key);
        b.add(arg);
    }

    static void keyLong(CommandBuffer b, byte[] name, String key, long arg) {
        notNull(key, "key");
        b.start(3);
        b.add(name);
        b.add(key);
        b.add(arg);
    }

    static void keyRange(CommandBuffer b, byte[] name, String key, long start, long stop) {
        notNull(key, "key");
        b.start(4);
        b.add(name);
        b.add(key);
        b.add(start);
        b.add(stop);
    }

    /** NAME key arg [arg ...]: at least one arg. */
    static void keyArgs(CommandBuffer b, byte[] name, String key, String what, String[] args) {
        notNull(key, "key");
        if (args == null || args.length == 0) throw new IllegalArgumentException("at least one " + what + " is required");
        for (String a : args) notNull(a, what);
        b.start(2 + args.length);
        b.add(name);
        b.add(key);
        for (String a : args) b.add(a);
    }

    /** NAME key [key ...]: at least one key. */
    static void keys(CommandBuffer b, byte[] name, String[] keys) {
        if (keys == null || keys.length == 0) throw new IllegalArgumentException("at least one key is required");
        for (String k : keys) notNull(k, "key");
        b.start(1 + keys.length);
        b.add(name);
        for (String k : keys) b.add(k);
    }

    static void keys(CommandBuffer b, byte[] name, byte[][] keys) {
        if (keys == null || keys.length == 0) throw new IllegalArgumentException("at least one key is required");
        for (byte[] k : keys) notNull(k, "key");
        b.start(1 + keys.length);
        b.add(name);
        for (byte[] k : keys) b.add(k);
    }

    static void set(CommandBuffer b, String key, String value, SetParams p) {
        notNull(key, "key");
        notNull(value, "value");
        b.start(3 + (p == null ? 0 : p.argc()));
        b.add(SET);
        b.add(key);
        b.add(value);
        if (p != null) p.encode(b);
    }

    static void set(CommandBuffer b, byte[] key, byte[] value, SetParams p) {
        notNull(key, "key");
        notNull(value, "value");
        b.start(3 + (p == null ? 0 : p.argc()));
        b.add(SET);
        b.add(key);
        b.add(value);
        if (p != null) p.encode(b);
    }

    /** MSET k1 v1 k2 v2 ...: a non-empty, even number of arguments. */
    static void mset(CommandBuffer b, String[] kv) {
        if (kv == null || kv.length == 0 || kv.length % 2 != 0)
            throw new IllegalArgumentException("mset needs keys and values in pairs (an even, non-zero count), not "
                    + (kv == null ? "null" : kv.length + " arguments"));
        for (int i = 0; i < kv.length; i++) notNull(kv[i], i % 2 == 0 ? "key" : "value");
        b.start(1 + kv.length);
        b.add(MSET);
        for (String s : kv) b.add(s);
    }

    static void mset(CommandBuffer b, Map<String, String> kv) {
        if (kv == null || kv.isEmpty()) throw new IllegalArgumentException("mset needs at least one key and value");
        for (Map.Entry<String, String> e : kv.entrySet()) {
            notNull(e.getKey(), "key");
            notNull(e.getValue(), "value");
        }
        b.start(1 + 2 * kv.size());
        b.add(MSET);
        for (Map.Entry<String, String> e : kv.entrySet()) {
            b.add(e.getKey());
            b.add(e.getValue());
        }
    }

    static void hset(CommandBuffer b, String key, String field, String value) {
        notNull(key, "key");
        notNull(field, "field");
        notNull(value, "value");
        b.start(4);
        b.add(HSET);
        b.add(key);
        b.add(field);
        b.add(value);
    }

    static void hset(CommandBuffer b, String key, Map<String, String> fields) {
        notNull(key, "key");
        if (fields == null || fields.isEmpty()) throw new IllegalArgumentException("hset needs at least one field");
        for (Map.Entry<String, String> e : fields.entrySet()) {
            notNull(e.getKey(), "field");
            notNull(e.getValue(), "value");
        }
        b.start(2 + 2 * fields.size());
        b.add(HSET);
        b.add(key);
        for (Map.Entry<String, String> e : fields.entrySet()) {
            b.add(e.getKey());
            b.add(e.getValue());
        }
    }

    static void zadd(CommandBuffer b, String key, double score, String member) {
        notNull(key, "key");
        notNull(member, "member");
        if (Double.isNaN(score)) throw new IllegalArgumentException("score must not be NaN");
        b.start(4);
        b.add(ZADD);
        b.add(key);
        b.add(score);
        b.add(member);
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
