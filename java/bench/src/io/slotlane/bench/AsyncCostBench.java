package io.slotlane.bench;

import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisStringAsyncCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.slotlane.AsyncClient;
import io.slotlane.ClientOptions;
import io.slotlane.Mode;
import io.slotlane.Pipeline;
import io.slotlane.SlotlaneClient;
import java.net.InetAddress;
import java.net.URI;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * The async rows of the Java binding (issue 18): N concurrent callers (N = 64 and 512), each
 * awaiting one GET or SET at a time — a caller issues its next command from the completion of
 * the previous one — plain and cluster, against one slotlane-server (4 shards, per-shard
 * ports, misrouted forward: the cluster-cost setup; java/bench/async-cost.sh starts it), with
 * Lettuce's async API (RedisClient / RedisClusterClient, one connection, its own event loop)
 * measured in the same run, the clients interleaved per round. Rows of slotlane: its default
 * executor (ForkJoinPool.commonPool(): every future completes there) and a direct executor
 * (Runnable::run: completions on the binding's completion thread, as Lettuce completes on its
 * event loop). The same process runs the blocking slotlane pipeline at depth 16 (one thread,
 * cluster) for the "async user CPU <= 1.5 x sync pipeline" comparison.
 *
 * <p>Every reply is checked (GET: the key's value; SET: OK); a row with a wrong reply or an
 * error fails and reports no figure. Keys key:0..4095 with 32-byte values ("%032d"), filled
 * first. Per request: total CPU (user + system of the whole JVM over the timed loop, from
 * /proc/self/stat: JIT, GC, the core's loop thread and Lettuce's threads included), user and
 * system beside it, requests per second, p50/p99 of the awaits. Each row first runs a
 * quarter round unrecorded (JIT warm-up). Record: schema slotlane.bench.async-cost/1
 * (bench/records/README.md), {@code <host>-<date>-<time>-async-cost-java.json}.
 *
 * <pre>
 *   java/bench/async-cost.sh [--rounds 3] [--requests 40960] [--callers 64,512] [--ops GET,SET] [--json DIR/]
 * </pre>
 */
public final class AsyncCostBench {
    static final int KEYS = 4096;
    static final String[] KEY = new String[KEYS], VAL = new String[KEYS];
    /** Held: java.util.logging keeps loggers weakly, and a collected one forgets its level. */
    static final java.util.logging.Logger LETTUCE_LOG = java.util.logging.Logger.getLogger("io.lettuce");

    /** One client under test: issue(op, key index) → the future of the reply. */
    interface Subject extends AutoCloseable {
        CompletionStage<?> issue(boolean get, int k);

        @Override
        void close();
    }

    public static void main(String[] args) throws Exception {
        LETTUCE_LOG.setLevel(java.util.logging.Level.WARNING); // one INFO line per connection otherwise
        Map<String, String> a = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) a.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        String plain = a.get("plain"), cluster = a.get("cluster");
        if (plain == null || cluster == null) throw new IllegalArgumentException("usage: --plain URL --cluster URL [--rounds N] [--requests N] [--callers 64,512] [--ops GET,SET] [--json DIR/]");
        int rounds = Integer.parseInt(a.getOrDefault("rounds", "3"));
        int requests = Integer.parseInt(a.getOrDefault("requests", "40960"));
        int[] callers = Arrays.stream(a.getOrDefault("callers", "64,512").split(",")).mapToInt(Integer::parseInt).toArray();
        String[] ops = a.getOrDefault("ops", "GET,SET").split(",");
        String[] clients = a.getOrDefault("clients", "slotlane-java-async,slotlane-java-async-direct,lettuce-async").split(",");
        for (int i = 0; i < KEYS; i++) {
            KEY[i] = "key:" + i;
            VAL[i] = String.format("%032d", i);
        }
        String loadStart = RoutingCostBench.loadavg();
        long startedAt = Instant.now().getEpochSecond();
        try (SlotlaneClient s = SlotlaneClient.create(ClientOptions.builder().uri(cluster).build())) {
            try (Pipeline p = s.pipeline()) {
                for (int i = 0; i < KEYS; i++) p.set(KEY[i], VAL[i]);
                for (Object o : p.sync()) if (!Boolean.TRUE.equals(o)) throw new IllegalStateException("fill: " + o);
            }
        }
        Map<String, List<JsonObject>> rows = new LinkedHashMap<>();
        Map<String, String> errors = new LinkedHashMap<>();
        Map<String, List<JsonObject>> syncRows = new LinkedHashMap<>();
        for (int r = 0; r < rounds; r++) {
            for (String op : ops) {
                syncRows.computeIfAbsent(op, x -> new ArrayList<>()).add(syncRound(cluster, op.equals("GET"), requests));
                for (String row : new String[] {"plain", "cluster"}) {
                    String url = row.equals("plain") ? plain : cluster;
                    for (int n : callers) {
                        List<String> order = new ArrayList<>(Arrays.asList(clients));
                        if (r % 2 == 1) java.util.Collections.reverse(order);
                        for (String cl : order) {
                            String id = cl + "|" + row + "|" + op + "|" + n;
                            try (Subject sub = open(cl, url, row.equals("cluster"))) {
                                if (r == 0) round(sub, op.equals("GET"), n, requests / 4); // warm-up, not recorded
                                JsonObject res = round(sub, op.equals("GET"), n, requests);
                                rows.computeIfAbsent(id, x -> new ArrayList<>()).add(res);
                                System.out.printf("round %d %-28s %-7s %s N=%-4d cpu %7.0f ns/req (user %6.0f) %8.0f req/s p50 %6.0f us p99 %7.0f us%n",
                                        r, cl, row, op, n, res.get("cpu_ns_per_req").getAsDouble(), res.get("user_ns_per_req").getAsDouble(),
                                        res.get("req_per_s").getAsDouble(), res.get("p50_us").getAsDouble(), res.get("p99_us").getAsDouble());
                            } catch (Exception e) {
                                errors.put(id, e.getClass().getSimpleName() + ": " + e.getMessage());
                                System.out.println("FAILED " + id + ": " + e);
                            }
                        }
                    }
                }
            }
        }
        JsonObject rec = new JsonObject();
        rec.addProperty("schema", "slotlane.bench.async-cost/1");
        rec.addProperty("benchmark", "async-cost");
        rec.addProperty("tool", "java/bench/src/io/slotlane/bench/AsyncCostBench.java");
        rec.addProperty("command", a.getOrDefault("invocation", "java/bench/async-cost.sh") + " " + String.join(" ", args));
        rec.addProperty("started_at_unix", startedAt);
        rec.addProperty("runtime", "Java " + System.getProperty("java.version") + "; slotlane: AsyncClient (default executor ForkJoinPool.commonPool(), or Runnable::run); Lettuce "
                + RoutingCostBench.mavenVersion("io.lettuce", "lettuce-core") + " async API (its Netty event loop)");
        rec.addProperty("load_note", "a shared 2-core machine (other engineers' builds and tests run on it): see rounds[].load1 and machine.loadavg_*");
        JsonObject machine = new JsonObject();
        machine.addProperty("hostname", InetAddress.getLocalHost().getHostName());
        machine.addProperty("cores", RoutingCostBench.onlineCpus());
        machine.addProperty("cpu_model", RoutingCostBench.cpuModel());
        machine.addProperty("loadavg_start", loadStart);
        machine.addProperty("loadavg_end", RoutingCostBench.loadavg());
        rec.add("machine", machine);
        JsonObject servers = new JsonObject();
        servers.addProperty("description", a.getOrDefault("server-desc", "plain " + plain + ", cluster " + cluster));
        rec.add("servers", servers);
        JsonObject config = new JsonObject();
        config.addProperty("keys", KEYS);
        config.addProperty("value_bytes", 32);
        config.addProperty("requests_per_round", requests);
        config.addProperty("rounds", rounds);
        config.addProperty("warmup", "a quarter round per row before round 0, not recorded");
        rec.add("config", config);
        JsonArray outRows = new JsonArray();
        boolean ok = errors.isEmpty();
        Map<String, JsonObject> medians = new LinkedHashMap<>();
        for (String cl : clients)
            for (String op : ops)
                for (String row : new String[] {"plain", "cluster"})
                    for (int n : callers) {
                        String id = cl + "|" + row + "|" + op + "|" + n;
                        JsonObject o = new JsonObject();
                        o.addProperty("client", cl);
                        o.addProperty("row", row);
                        o.addProperty("op", op);
                        o.addProperty("callers", n);
                        List<JsonObject> rs = rows.getOrDefault(id, List.of());
                        String err = errors.get(id);
                        o.addProperty("ok", err == null && rs.size() == rounds);
                        if (err == null && rs.size() != rounds) err = "missing rounds";
                        if (err != null) o.addProperty("error", err);
                        else o.add("error", JsonNull.INSTANCE);
                        JsonArray ra = new JsonArray();
                        rs.forEach(ra::add);
                        o.add("rounds", ra);
                        JsonObject med = median(rs);
                        o.add("median", med);
                        medians.put(id, med);
                        outRows.add(o);
                    }
        rec.add("rows", outRows);
        JsonArray sync = new JsonArray();
        for (String op : ops) {
            JsonObject o = new JsonObject();
            o.addProperty("client", "slotlane-java-sync-pipeline");
            o.addProperty("row", "cluster");
            o.addProperty("op", op);
            o.addProperty("depth", 16);
            JsonArray ra = new JsonArray();
            syncRows.get(op).forEach(ra::add);
            o.add("rounds", ra);
            o.add("median", median(syncRows.get(op)));
            sync.add(o);
        }
        rec.add("sync_rows", sync);
        JsonArray targets = new JsonArray();
        for (String op : ops)
            for (String row : new String[] {"plain", "cluster"})
                for (int n : callers) {
                    JsonObject sl = medians.get("slotlane-java-async|" + row + "|" + op + "|" + n);
                    JsonObject le = medians.get("lettuce-async|" + row + "|" + op + "|" + n);
                    targets.add(target("total CPU/req <= 0.5 x Lettuce async", row, op, n, ratio(sl, le, "cpu_ns_per_req"), 0.5));
                    JsonObject sy = null;
                    for (var e : sync) if (e.getAsJsonObject().get("op").getAsString().equals(op)) sy = e.getAsJsonObject().getAsJsonObject("median");
                    targets.add(target("async user CPU/req <= 1.5 x sync pipeline depth 16 (cluster)", row, op, n, ratio(sl, sy, "user_ns_per_req"), 1.5));
                }
        rec.add("targets", targets);
        rec.addProperty("ok", ok);
        String dir = a.get("json");
        if (dir != null) System.out.println("record: " + RoutingCostBench.writeRecord(rec, dir, "async-cost-java"));
        System.exit(ok ? 0 : 1);
    }

    static Subject open(String client, String url, boolean cluster) {
        switch (client) {
            case "slotlane-java-async":
            case "slotlane-java-async-direct": {
                ClientOptions.Builder b = ClientOptions.builder().uri(url).mode(cluster ? Mode.CLUSTER : Mode.PLAIN);
                if (client.endsWith("direct")) b.executor(Runnable::run);
                AsyncClient c = AsyncClient.create(b.build());
                return new Subject() {
                    public CompletionStage<?> issue(boolean get, int k) {
                        return get ? c.get(KEY[k]) : c.set(KEY[k], VAL[k]);
                    }

                    public void close() {
                        c.close();
                    }
                };
            }
            case "lettuce-async": {
                URI u = URI.create(url);
                RedisURI ru = RedisURI.create(u.getHost(), u.getPort());
                if (cluster) {
                    RedisClusterClient cc = RedisClusterClient.create(ru);
                    StatefulRedisClusterConnection<String, String> conn = cc.connect();
                    return lettuce(conn.async(), () -> {
                        conn.close();
                        cc.shutdown(0, 2, TimeUnit.SECONDS);
                    });
                }
                RedisClient rc = RedisClient.create(ru);
                StatefulRedisConnection<String, String> conn = rc.connect();
                return lettuce(conn.async(), () -> {
                    conn.close();
                    rc.shutdown(0, 2, TimeUnit.SECONDS);
                });
            }
            default:
                throw new IllegalArgumentException("unknown client " + client);
        }
    }

    static Subject lettuce(RedisStringAsyncCommands<String, String> cmd, Runnable close) {
        return new Subject() {
            public CompletionStage<?> issue(boolean get, int k) {
                return get ? cmd.get(KEY[k]) : cmd.set(KEY[k], VAL[k]);
            }

            public void close() {
                close.run();
            }
        };
    }

    /** N callers chained on their completions until `requests` commands have run; the figures. */
    static JsonObject round(Subject s, boolean get, int n, int requests) throws Exception {
        AtomicInteger left = new AtomicInteger(requests), lat = new AtomicInteger();
        long[] latNs = new long[requests];
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(n);
        BiFunction<Object, Integer, Boolean> check = (v, k) -> get ? VAL[k].equals(v) : (Boolean.TRUE.equals(v) || "OK".equals(v));
        double load = RoutingCostBench.load1();
        long[] c0 = RoutingCostBench.processCpu();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) new Caller(s, get, i, left, lat, latNs, wrong, done, check).next();
        if (!done.await(300, TimeUnit.SECONDS)) throw new IllegalStateException("the round did not finish");
        long wall = System.nanoTime() - t0;
        long[] c1 = RoutingCostBench.processCpu();
        if (!wrong.isEmpty()) throw new IllegalStateException("wrong replies: " + String.join("; ", new ArrayList<>(wrong).subList(0, Math.min(3, wrong.size()))));
        long[] l = Arrays.copyOf(latNs, lat.get());
        Arrays.sort(l);
        JsonObject o = figures(requests, wall, c0, c1, load);
        o.addProperty("p50_us", l[l.length / 2] / 1e3);
        o.addProperty("p99_us", l[(int) (l.length * 0.99)] / 1e3);
        return o;
    }

    /** One caller: issues a command, and from its completion the next (a trampoline for futures done at once). */
    static final class Caller {
        final Subject s;
        final boolean get;
        final AtomicInteger left, lat;
        final long[] latNs;
        final ConcurrentLinkedQueue<String> wrong;
        final CountDownLatch done;
        final BiFunction<Object, Integer, Boolean> check;
        int seq;

        Caller(Subject s, boolean get, int id, AtomicInteger left, AtomicInteger lat, long[] latNs, ConcurrentLinkedQueue<String> wrong,
               CountDownLatch done, BiFunction<Object, Integer, Boolean> check) {
            this.s = s;
            this.get = get;
            this.seq = id * 7919;
            this.left = left;
            this.lat = lat;
            this.latNs = latNs;
            this.wrong = wrong;
            this.done = done;
            this.check = check;
        }

        void next() {
            for (;;) {
                if (left.getAndDecrement() <= 0) {
                    done.countDown();
                    return;
                }
                int k = seq++ % KEYS;
                long t = System.nanoTime();
                CompletableFuture<?> f = s.issue(get, k).toCompletableFuture();
                if (f.isDone()) {
                    finish(f, k, t);
                    continue;
                }
                f.whenComplete((v, e) -> {
                    finish(f, k, t);
                    next();
                });
                return;
            }
        }

        void finish(CompletableFuture<?> f, int k, long t) {
            long d = System.nanoTime() - t;
            int i = lat.getAndIncrement();
            if (i < latNs.length) latNs[i] = d;
            Object v;
            try {
                v = f.join();
            } catch (RuntimeException e) {
                wrong.add(KEY[k] + ": " + e);
                return;
            }
            if (!check.apply(v, k)) wrong.add(KEY[k] + ": " + v);
        }
    }

    /** The blocking pipeline at depth 16 on one thread (cluster), for the user-CPU comparison. */
    static JsonObject syncRound(String cluster, boolean get, int requests) throws Exception {
        try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(cluster).build()); Pipeline p = c.pipeline()) {
            for (int w = 0; w < 2; w++) {
                long[] c0 = RoutingCostBench.processCpu();
                double load = RoutingCostBench.load1();
                long t0 = System.nanoTime();
                int k = 0;
                for (int done = 0; done < requests; done += 16) {
                    int first = k;
                    for (int i = 0; i < 16; i++, k = (k + 1) % KEYS) {
                        if (get) p.get(KEY[k]);
                        else p.set(KEY[k], VAL[k]);
                    }
                    List<Object> r = p.sync();
                    for (int i = 0; i < 16; i++) {
                        Object want = get ? VAL[(first + i) % KEYS] : Boolean.TRUE;
                        if (!want.equals(r.get(i))) throw new IllegalStateException("sync pipeline: wrong reply " + r.get(i));
                    }
                }
                long wall = System.nanoTime() - t0;
                long[] c1 = RoutingCostBench.processCpu();
                if (w == 0) continue; // the first pass warms the JIT
                return figures(requests, wall, c0, c1, load);
            }
            throw new AssertionError();
        }
    }

    /** A round's figures per request from the process CPU before (c0) and after (c1) its timed loop. */
    static JsonObject figures(int requests, long wallNs, long[] c0, long[] c1, double load) {
        double user = c1[0] - c0[0], sys = c1[1] - c0[1];
        JsonObject o = new JsonObject();
        o.addProperty("requests", requests);
        o.addProperty("wall_s", wallNs / 1e9);
        o.addProperty("user_ns_per_req", user / requests);
        o.addProperty("sys_ns_per_req", sys / requests);
        o.addProperty("cpu_ns_per_req", (user + sys) / requests);
        o.addProperty("req_per_s", requests / (wallNs / 1e9));
        o.addProperty("load1", load);
        return o;
    }

    static JsonObject median(List<JsonObject> rs) {
        JsonObject m = new JsonObject();
        if (rs.isEmpty()) return m;
        for (String k : rs.get(0).keySet()) {
            if (k.equals("requests")) continue;
            List<Double> v = new ArrayList<>();
            for (JsonObject r : rs) v.add(r.get(k).getAsDouble());
            m.addProperty(k, RoutingCostBench.median(v));
        }
        return m;
    }

    static Double ratio(JsonObject a, JsonObject b, String k) {
        if (a == null || b == null || !a.has(k) || !b.has(k) || b.get(k).getAsDouble() == 0) return null;
        return a.get(k).getAsDouble() / b.get(k).getAsDouble();
    }

    static JsonObject target(String name, String row, String op, int n, Double value, double limit) {
        JsonObject t = new JsonObject();
        t.addProperty("name", name);
        t.addProperty("row", row);
        t.addProperty("op", op);
        t.addProperty("callers", n);
        if (value == null) t.add("value", JsonNull.INSTANCE);
        else t.addProperty("value", RoutingCostBench.round3(value));
        t.addProperty("limit", limit);
        t.addProperty("met", value != null && value <= limit);
        return t;
    }
}
