package io.slotlane.bench;

import io.slotlane.ClientOptions;
import io.slotlane.Subscriber;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;

/**
 * One subscriber of bench/pubsub/run.py: slotlane's {@link Subscriber} or Jedis's
 * {@link JedisPubSub}, each used the way its users do (slotlane: subscribe, then
 * {@code poll(null)} in a loop; Jedis: {@code jedis.subscribe(listener, channel)}, whose
 * {@code onMessage} runs on the calling thread), both with String payloads. It prints "ready"
 * once the subscription is confirmed, receives N messages of the channel, checks every one
 * (its sequence number, the first 8 characters, and its length) and prints one JSON line with
 * its CPU from ready to the last message: user and system of the whole JVM from
 * /proc/self/stat (JIT, GC and the core's subscriber thread included; the kernel's 10 ms
 * tick, as in the other Java benchmarks).
 *
 * <pre>
 *   java -cp CLASSPATH io.slotlane.bench.PubSubSub slotlane|jedis URL CHANNEL N SIZE
 *   mvn -q -B -DskipTests -Pbench verify -Dbench.main=io.slotlane.bench.PubSubSub \
 *       -Dbench.args="--write-classpath FILE"     # what run.py's prepare() does: FILE gets the class path
 * </pre>
 */
public final class PubSubSub {
    private PubSubSub() {}

    /** Checks one payload after the other; the first failure is kept. */
    static final class Check {
        final int size;
        long got;
        String bad;

        Check(int size) {
            this.size = size;
        }

        void payload(String p) {
            if (bad == null && (p.length() != size || seq(p) != got)) {
                bad = String.format("message %d: %s (%d bytes)", got, p.substring(0, Math.min(8, p.length())), p.length());
            }
            got++;
        }

        /** The sequence number of a payload ("%08d" then padding), -1 when it is not one. */
        static long seq(String p) {
            if (p.length() < 8) return -1;
            long v = 0;
            for (int i = 0; i < 8; i++) {
                char c = p.charAt(i);
                if (c < '0' || c > '9') return -1;
                v = v * 10 + (c - '0');
            }
            return v;
        }
    }

    /** The JVM's user and system CPU in ns (/proc/self/stat, clock ticks of 10 ms). */
    static long[] cpu() {
        try {
            String s = Files.readString(Paths.get("/proc/self/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            long tick = 10_000_000L; // CLK_TCK 100 on Linux
            return new long[] {Long.parseLong(f[11]) * tick, Long.parseLong(f[12]) * tick};
        } catch (Exception e) {
            throw new IllegalStateException("reading /proc/self/stat", e);
        }
    }

    static long[] cpu0, cpu1;
    static long t0, t1;

    static void ready(PrintStream out) {
        cpu0 = cpu();
        t0 = System.nanoTime();
        out.println("ready");
        out.flush();
    }

    static String json(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("--write-classpath")) {
            Files.writeString(Path.of(args[1]), System.getProperty("java.class.path") + "\n");
            return;
        }
        if (args.length != 5) {
            System.err.println("usage: PubSubSub slotlane|jedis URL CHANNEL N SIZE  (or --write-classpath FILE)");
            System.exit(2);
        }
        String client = args[0], url = args[1], channel = args[2];
        long n;
        int size;
        try {
            n = Long.parseLong(args[3]);
            size = Integer.parseInt(args[4]);
        } catch (NumberFormatException e) {
            n = -1;
            size = -1;
        }
        if (n <= 0 || size < 8) {
            System.err.println("PubSubSub: N must be a positive integer and SIZE an integer >= 8");
            System.exit(2);
        }
        // stdout carries only "ready" and the JSON line: the clients' logs go to stderr
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Check check = new Check(size);
        final long want = n;
        switch (client) {
            case "slotlane" -> {
                // the bench checks every message: none may be dropped
                try (Subscriber s = Subscriber.create(ClientOptions.builder().uri(url).build(),
                        new Subscriber.Options().maxQueueBytes(1L << 30))) {
                    s.subscribe(channel);
                    Subscriber.Message first = s.poll(null);
                    if (first == null || first.type() != Subscriber.Type.SUBSCRIBE) {
                        throw new IllegalStateException("slotlane: not a confirmation: " + first);
                    }
                    ready(out);
                    while (check.got < want) {
                        Subscriber.Message m = s.poll(null);
                        if (m == null) {
                            check.bad = check.bad != null ? check.bad : "the subscriber closed";
                            break;
                        }
                        if (m.type() == Subscriber.Type.MESSAGE) {
                            check.payload(m.payload());
                        } else if (m.type() == Subscriber.Type.OVERFLOW) {
                            check.bad = check.bad != null ? check.bad : m.count() + " messages were dropped";
                            break; // they will never come
                        } else if (check.bad == null) {
                            check.bad = "unexpected " + m.type();
                        }
                    }
                    cpu1 = cpu();
                    t1 = System.nanoTime();
                }
            }
            case "jedis" -> {
                try (Jedis j = new Jedis(URI.create(url))) {
                    JedisPubSub l = new JedisPubSub() {
                        @Override
                        public void onSubscribe(String ch, int count) {
                            ready(out);
                        }

                        @Override
                        public void onMessage(String ch, String message) {
                            check.payload(message);
                            if (check.got == want) {
                                cpu1 = cpu();
                                t1 = System.nanoTime();
                                unsubscribe();
                            }
                        }
                    };
                    j.subscribe(l, channel); // returns once unsubscribed
                }
            }
            default -> {
                System.err.println("PubSubSub: the client is slotlane or jedis, not " + client);
                System.exit(2);
                return;
            }
        }
        out.println("{\"received\": " + check.got + ", \"ok\": " + (check.bad == null) + ", \"error\": " + json(check.bad)
                + ", \"wall_s\": " + (t1 - t0) / 1e9 + ", \"user_ns\": " + (cpu1[0] - cpu0[0])
                + ", \"sys_ns\": " + (cpu1[1] - cpu0[1]) + "}");
        out.flush();
    }
}
