package io.slotlane.bench;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import io.slotlane.ClientOptions;
import io.slotlane.Mode;
import io.slotlane.Pipeline;
import io.slotlane.Route;
import io.slotlane.SlotlaneClient;
import io.slotlane.TlsOptions;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.URI;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import java.time.Duration;
import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Response;

/**
 * RoutingCostBench — the Java cluster-cost benchmark of DESIGN.md ("The benchmarks"): the
 * client's CPU per request on the rows plain (one node, no discovery), cluster (keys
 * key:0..4095 over every primary) and one-node (the cluster client, every key in one hash
 * tag), GET and SET with 32-byte values (keys filled first), pipelines of depth 16 and 64,
 * W worker threads (8) each with its own pipeline, R rounds (3) interleaved, medians; the
 * same rows with Jedis (Pipeline for plain, ClusterPipeline for cluster and one-node) and
 * Lettuce (a connection per worker, auto-flush off, one flush per pipeline, awaitAll).
 *
 * <p>Method: every worker warms up, then all meet at a barrier with the main thread; each
 * worker reads its own thread user CPU (ThreadMXBean.getCurrentThreadUserTime) and the main
 * thread the process's user and system CPU (/proc/self/stat) and the clock; the timed loop
 * runs; every worker stops after its current pipeline, reads its CPU again and meets the
 * main thread at a second barrier. So both windows hold exactly the timed pipelines. Every
 * reply is checked (GET: the key's value; SET: OK): a wrong or error reply fails the row —
 * no figure, an error message, exit status 1.
 *
 * <p>Figures per row and round: user CPU ns per request of the worker threads (the client's
 * own threads: slotlane has no other; Jedis's ClusterPipeline reads nodes on helper threads,
 * which only the process figure sees) and of the whole process (JIT and GC included: the
 * headline, as in DESIGN.md), system CPU ns per request of the process, bytes written per
 * request (slotlane: sl_stats.bytes_written; both: the servers' total_net_input_bytes),
 * requests per second; also the worker threads' user + system CPU (getCurrentThreadCpuTime, ns
 * precision, where the user-only figures have the kernel's 10 ms tick). One JSON record per run (schema "slotlane.bench.cluster-cost/1", the one schema of every runner,
 * java/README.md) written to --json DIR/ under a name that never collides.
 *
 * <pre>
 * java ... RoutingCostBench --plain redis://127.0.0.1:P --cluster redis://127.0.0.1:C [--seconds 3]
 *      [--warmup 1] [--rounds 3] [--workers 8] [--depths 16,64] [--ops GET,SET]
 *      [--rows plain,cluster,one-node] [--clients slotlane,jedis] [--json DIR/] [--server-desc TEXT]
 *      [--invocation TEXT] [--tls-ca CA.crt] [--quick]
 *
 * --tls-ca: every client speaks TLS to the URLs' ports, trusting that CA (bench/tls/run.py):
 * slotlane with TlsOptions.caFile (full verification), Jedis with ssl(true) and an
 * SSLSocketFactory of a trust store holding the CA, Lettuce with withSsl(true) and
 * SslOptions.trustManager(CA) (JDK provider).
 * </pre>
 */
public final class RoutingCostBench {
    static final int KEYS = 4096;
    static final int VALUE_LEN = 32;
    static final String SCHEMA = "slotlane.bench.cluster-cost/1"; // the one schema of every runner

    // configuration
    String plainUrl, clusterUrl, jsonDir, serverDesc = "", invocation, tlsCa;
    double seconds = 3, warmup = 1, jitWarmup = 1;
    int rounds = 3, workers = 8;
    int[] depths = {16, 64};
    List<String> ops = List.of("GET", "SET"), rows = List.of("plain", "cluster", "one-node"),
            clients = List.of("slotlane", "jedis", "lettuce");
    boolean quick;
    final List<String> argv = new ArrayList<>();

    // state
    SlotlaneClient slPlain, slCluster;
    Jedis[] jedisPlain;
    JedisCluster jedisCluster;
    RedisClient lettucePlain;
    RedisClusterClient lettuceCluster;
    String[] keysSpread = new String[KEYS], keysTagged = new String[KEYS];
    String[] valsSpread = new String[KEYS], valsTagged = new String[KEYS];
    final ThreadMXBean mx = ManagementFactory.getThreadMXBean();

    /** One (client, row, op, depth) and its rounds. */
    static final class Row {
        final String client, row, op;
        final int depth;
        final List<JsonObject> rounds = new ArrayList<>();
        String error;

        Row(String client, String row, String op, int depth) {
            this.client = client;
            this.row = row;
            this.op = op;
            this.depth = depth;
        }

        String key() {
            return client + "/" + row + "/" + op + "/" + depth;
        }
    }

    public static void main(String[] args) throws Exception {
        RoutingCostBench b = new RoutingCostBench();
        b.parse(args);
        System.exit(b.run() ? 0 : 1);
    }

    void parse(String[] a) {
        argv.addAll(Arrays.asList(a));
        for (int i = 0; i < a.length; i++) {
            String k = a[i];
            if (k.equals("--quick")) {
                quick = true;
                seconds = 1.5;
                warmup = 0.5;
                continue;
            }
            if (i + 1 >= a.length) throw new IllegalArgumentException("missing value after " + k);
            String v = a[++i];
            switch (k) {
                case "--plain": plainUrl = v; break;
                case "--cluster": clusterUrl = v; break;
                case "--seconds": seconds = Double.parseDouble(v); break;
                case "--warmup": warmup = Double.parseDouble(v); break;
                case "--jit-warmup": jitWarmup = Double.parseDouble(v); break;
                case "--rounds": rounds = Integer.parseInt(v); break;
                case "--workers": workers = Integer.parseInt(v); break;
                case "--depths": depths = Arrays.stream(v.split(",")).mapToInt(Integer::parseInt).toArray(); break;
                case "--ops": ops = List.of(v.toUpperCase().split(",")); break;
                case "--rows": rows = List.of(v.split(",")); break;
                case "--clients": clients = List.of(v.split(",")); break;
                case "--json": jsonDir = v; break;
                case "--server-desc": serverDesc = v; break;
                case "--invocation": invocation = v; break;
                case "--tls-ca": tlsCa = v; break;
                default: throw new IllegalArgumentException("unknown option " + k);
            }
        }
        if (plainUrl == null && rows.contains("plain")) throw new IllegalArgumentException("--plain URL is required for the plain row");
        if (clusterUrl == null && (rows.contains("cluster") || rows.contains("one-node")))
            throw new IllegalArgumentException("--cluster URL is required for the cluster and one-node rows");
    }

    static String value(String key) {
        StringBuilder s = new StringBuilder("val:").append(key).append(':');
        while (s.length() < VALUE_LEN) s.append('x');
        return s.substring(0, VALUE_LEN);
    }

    /** The URL for Lettuce, with TLS (peer verification: the chain) when --tls-ca is given. */
    RedisURI lettuceUri(String url) {
        RedisURI u = RedisURI.create(url);
        if (tlsCa != null) {
            u.setSsl(true);
            u.setVerifyPeer(io.lettuce.core.SslVerifyMode.CA);
        }
        return u;
    }

    /** An SSLContext trusting the one CA of a PEM file (Jedis's socket factory). */
    static javax.net.ssl.SSLContext sslContext(String caFile) throws Exception {
        java.security.KeyStore ks = java.security.KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        try (var in = Files.newInputStream(Paths.get(caFile))) {
            ks.setCertificateEntry("ca", java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    static HostAndPort hostPort(String url) {
        URI u = URI.create(url);
        return new HostAndPort(u.getHost(), u.getPort());
    }

    String loadStart;

    /** The 1-minute load average (/proc/loadavg), -1 when unreadable. */
    static double load1() {
        String l = loadavg();
        return l == null ? -1 : Double.parseDouble(l.split("\\s+")[0]);
    }

    static String loadavg() {
        try {
            return Files.readString(Paths.get("/proc/loadavg")).trim();
        } catch (Exception e) {
            return null;
        }
    }

    boolean run() throws Exception {
        String started = Instant.now().toString();
        loadStart = loadavg();
        for (int i = 0; i < KEYS; i++) {
            keysSpread[i] = "key:" + i;
            keysTagged[i] = "{t}:key:" + i;
            valsSpread[i] = value(keysSpread[i]);
            valsTagged[i] = value(keysTagged[i]);
        }
        TlsOptions slTls = tlsCa == null ? null : TlsOptions.builder().caFile(Paths.get(tlsCa)).build();
        if (plainUrl != null) {
            ClientOptions.Builder ob = ClientOptions.builder().uri(plainUrl).mode(Mode.PLAIN).poolSize(workers);
            slPlain = SlotlaneClient.create((slTls == null ? ob : ob.tls(slTls)).build());
            fill(slPlain);
        }
        if (clusterUrl != null) {
            ClientOptions.Builder ob = ClientOptions.builder().uri(clusterUrl).mode(Mode.CLUSTER).poolSize(workers);
            slCluster = SlotlaneClient.create((slTls == null ? ob : ob.tls(slTls)).build());
            fill(slCluster);
        }
        DefaultJedisClientConfig jedisConfig = tlsCa == null ? DefaultJedisClientConfig.builder().build()
                : DefaultJedisClientConfig.builder().ssl(true).sslSocketFactory(sslContext(tlsCa).getSocketFactory()).build();
        if (clients.contains("jedis")) {
            if (plainUrl != null) {
                jedisPlain = new Jedis[workers];
                for (int w = 0; w < workers; w++) {
                    HostAndPort hp = hostPort(plainUrl);
                    jedisPlain[w] = new Jedis(hp, jedisConfig);
                }
            }
            if (clusterUrl != null) {
                ConnectionPoolConfig pool = new ConnectionPoolConfig();
                pool.setMaxTotal(2 * workers);
                pool.setMaxIdle(2 * workers);
                jedisCluster = new JedisCluster(Set.of(hostPort(clusterUrl)), jedisConfig, 5, pool);
            }
        }
        if (clients.contains("lettuce")) {
            if (plainUrl != null) lettucePlain = RedisClient.create(lettuceUri(plainUrl));
            if (clusterUrl != null) lettuceCluster = RedisClusterClient.create(lettuceUri(clusterUrl));
            if (tlsCa != null) {
                io.lettuce.core.SslOptions ssl = io.lettuce.core.SslOptions.builder().jdkSslProvider().trustManager(new java.io.File(tlsCa)).build();
                if (lettucePlain != null) lettucePlain.setOptions(io.lettuce.core.ClientOptions.builder().sslOptions(ssl).build());
                if (lettuceCluster != null)
                    lettuceCluster.setOptions(io.lettuce.core.cluster.ClusterClientOptions.builder().sslOptions(ssl).build());
            }
        }
        List<Row> all = new ArrayList<>();
        for (String row : rows)
            for (String op : ops)
                for (int d : depths)
                    for (String c : clients) all.add(new Row(c, row, op, d));
        // JIT warmup of every row before the first round (not recorded): the first round would
        // otherwise carry the compilation of every code path
        double savedSeconds = seconds, savedWarmup = warmup;
        seconds = jitWarmup;
        warmup = 0.2;
        for (Row row : all) {
            try {
                runRound(row, 0);
            } catch (Exception | AssertionError e) {
                row.error = "warmup: " + e;
                System.err.println("warmup " + row.key() + " FAILED: " + e);
            }
        }
        seconds = savedSeconds;
        warmup = savedWarmup;
        for (int r = 0; r < rounds; r++) {
            for (Row row : all) {
                if (row.error != null) continue;
                try {
                    JsonObject fig = runRound(row, r + 1);
                    row.rounds.add(fig);
                    System.err.printf("round %d %-28s user/req: process %6.0f ns, workers %6.0f ns  (%.0f req/s)%n", r + 1, row.key(),
                            fig.get("user_ns_per_req").getAsDouble(), fig.get("workers_user_ns_per_req").getAsDouble(),
                            fig.get("req_per_s").getAsDouble());
                } catch (Exception | AssertionError e) {
                    row.error = e.toString();
                    System.err.println("round " + (r + 1) + " " + row.key() + " FAILED: " + e);
                }
            }
        }
        boolean ok = all.stream().allMatch(x -> x.error == null);
        JsonObject rec = record(all, started, ok);
        String table = table(rec);
        System.out.println(table);
        if (jsonDir != null) System.out.println("record: " + write(rec));
        if (slPlain != null) slPlain.close();
        if (slCluster != null) slCluster.close();
        if (jedisPlain != null) for (Jedis j : jedisPlain) j.close();
        if (jedisCluster != null) jedisCluster.close();
        if (lettucePlain != null) lettucePlain.shutdown();
        if (lettuceCluster != null) lettuceCluster.shutdown();
        return ok;
    }

    void fill(SlotlaneClient c) {
        try (Pipeline p = c.pipeline()) {
            for (int i = 0; i < KEYS; i++) {
                p.set(keysSpread[i], valsSpread[i]);
                p.set(keysTagged[i], valsTagged[i]);
            }
            for (Object o : p.sync()) if (!Boolean.TRUE.equals(o)) throw new IllegalStateException("fill: " + o);
        }
    }

    // ------------------------------------------------------------------ one round of a row

    final class Worker extends Thread {
        final int id;
        final Row row;
        final CyclicBarrier start, end;
        volatile int phase; // 0 warmup, 1 timed, 2 stop
        long requests, pipelines, userNs, cpuNs;
        Throwable failure;

        Worker(int id, Row row, CyclicBarrier start, CyclicBarrier end) {
            super("bench-worker-" + id);
            this.id = id;
            this.row = row;
            this.start = start;
            this.end = end;
            setDaemon(true);
        }

        @Override
        public void run() {
            try {
                boolean tagged = row.row.equals("one-node");
                String[] keys = tagged ? keysTagged : keysSpread;
                String[] vals = tagged ? valsTagged : valsSpread;
                boolean get = row.op.equals("GET");
                Batch batch = batch(row, id, keys, vals, get);
                int idx = (id * 977) % KEYS;
                while (phase == 0) idx = batch.run(idx);
                long u0 = mx.getCurrentThreadUserTime();
                long c0 = mx.getCurrentThreadCpuTime();
                start.await();
                long req = 0, pipes = 0;
                while (phase == 1) {
                    idx = batch.run(idx);
                    req += row.depth;
                    pipes++;
                }
                userNs = mx.getCurrentThreadUserTime() - u0;
                cpuNs = mx.getCurrentThreadCpuTime() - c0;
                requests = req;
                pipelines = pipes;
                batch.close();
            } catch (Throwable t) {
                failure = t;
                phase = 2;
            }
            try {
                end.await();
            } catch (Exception ignored) {
                // the main thread reports the failure
            }
        }
    }

    /** One pipeline of a client, run and checked. */
    interface Batch {
        int run(int idx) throws Exception;

        default void close() {}
    }

    Batch batch(Row row, int worker, String[] keys, String[] vals, boolean get) {
        int depth = row.depth;
        if (row.client.equals("slotlane")) {
            SlotlaneClient c = row.row.equals("plain") ? slPlain : slCluster;
            Pipeline p = c.pipeline();
            return new Batch() {
                public int run(int idx) {
                    int i0 = idx;
                    for (int i = 0; i < depth; i++) {
                        if (get) p.get(keys[idx]);
                        else p.set(keys[idx], vals[idx]);
                        idx = (idx + 1) & (KEYS - 1);
                    }
                    List<Object> r = p.sync();
                    check(r, i0, vals, get);
                    return idx;
                }

                public void close() {
                    p.close();
                }
            };
        }
        if (row.client.equals("lettuce")) return lettuceBatch(row, keys, vals, get);
        @SuppressWarnings("unchecked")
        Response<String>[] resp = new Response[depth];
        if (row.row.equals("plain")) {
            redis.clients.jedis.Pipeline p = jedisPlain[worker].pipelined();
            return idx -> {
                int i0 = idx;
                for (int i = 0; i < depth; i++) {
                    resp[i] = get ? p.get(keys[idx]) : p.set(keys[idx], vals[idx]);
                    idx = (idx + 1) & (KEYS - 1);
                }
                p.sync();
                checkJedis(resp, depth, i0, vals, get);
                return idx;
            };
        }
        return idx -> {
            int i0 = idx;
            try (ClusterPipeline p = jedisCluster.pipelined()) {
                for (int i = 0; i < depth; i++) {
                    resp[i] = get ? p.get(keys[idx]) : p.set(keys[idx], vals[idx]);
                    idx = (idx + 1) & (KEYS - 1);
                }
                p.sync();
            }
            checkJedis(resp, depth, i0, vals, get);
            return idx;
        };
    }

    /** Lettuce: its own connection per worker, auto-flush off, one flush per pipeline, await all. */
    Batch lettuceBatch(Row row, String[] keys, String[] vals, boolean get) {
        int depth = row.depth;
        @SuppressWarnings("unchecked")
        RedisFuture<String>[] fs = new RedisFuture[depth];
        io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands<String, String> a;
        Runnable flush;
        AutoCloseable conn;
        if (row.row.equals("plain")) {
            StatefulRedisConnection<String, String> c = lettucePlain.connect();
            c.setAutoFlushCommands(false);
            a = c.async();
            flush = c::flushCommands;
            conn = c;
        } else {
            StatefulRedisClusterConnection<String, String> c = lettuceCluster.connect();
            c.setAutoFlushCommands(false);
            RedisAdvancedClusterAsyncCommands<String, String> ca = c.async();
            a = ca;
            flush = c::flushCommands;
            conn = c;
        }
        return new Batch() {
            public int run(int idx) throws Exception {
                int i0 = idx;
                for (int i = 0; i < depth; i++) {
                    fs[i] = get ? a.get(keys[idx]) : a.set(keys[idx], vals[idx]);
                    idx = (idx + 1) & (KEYS - 1);
                }
                flush.run();
                if (!LettuceFutures.awaitAll(Duration.ofSeconds(10), fs)) throw new AssertionError("lettuce: timeout");
                for (int i = 0; i < depth; i++) {
                    String want = get ? vals[(i0 + i) & (KEYS - 1)] : "OK";
                    String got = fs[i].get();
                    if (!want.equals(got)) throw new AssertionError("reply #" + i + ": expected " + want + ", got " + got);
                }
                return idx;
            }

            public void close() {
                try {
                    conn.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        };
    }

    static void check(List<Object> r, int idx, String[] vals, boolean get) {
        for (int i = 0; i < r.size(); i++) {
            Object want = get ? vals[idx] : Boolean.TRUE;
            if (!want.equals(r.get(i))) throw new AssertionError("reply #" + i + ": expected " + want + ", got " + r.get(i));
            idx = (idx + 1) & (KEYS - 1);
        }
    }

    static void checkJedis(Response<String>[] r, int n, int idx, String[] vals, boolean get) {
        for (int i = 0; i < n; i++) {
            String want = get ? vals[idx] : "OK";
            String got = r[i].get();
            if (!want.equals(got)) throw new AssertionError("reply #" + i + ": expected " + want + ", got " + got);
            idx = (idx + 1) & (KEYS - 1);
        }
    }

    JsonObject runRound(Row row, int round) throws Exception {
        CyclicBarrier start = new CyclicBarrier(workers + 1), end = new CyclicBarrier(workers + 1);
        List<Worker> ws = new ArrayList<>();
        for (int w = 0; w < workers; w++) ws.add(new Worker(w, row, start, end));
        SlotlaneClient sl = row.row.equals("plain") ? slPlain : slCluster;
        ws.forEach(Thread::start);
        Thread.sleep((long) (warmup * 1000));
        long bw0 = row.client.equals("slotlane") ? sl.stats().bytesWritten() : 0;
        long in0 = serverInput(sl);
        for (Worker w : ws) w.phase = 1;
        start.await();
        double load1 = load1(); // the machine is shared: say how busy it was
        long[] cpu0 = processCpu();
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        for (Worker w : ws) w.phase = 2;
        end.await();
        long t1 = System.nanoTime();
        long[] cpu1 = processCpu();
        for (Worker w : ws) {
            w.join();
            if (w.failure != null) throw new AssertionError(w.getName() + ": " + w.failure, w.failure);
        }
        long bw1 = row.client.equals("slotlane") ? sl.stats().bytesWritten() : 0;
        long in1 = serverInput(sl);
        long req = 0, pipes = 0, wuser = 0, wcpu = 0;
        for (Worker w : ws) {
            req += w.requests;
            pipes += w.pipelines;
            wuser += w.userNs;
            wcpu += w.cpuNs;
        }
        double wall = (t1 - t0) / 1e9;
        JsonObject o = new JsonObject();
        o.addProperty("round", round);
        o.addProperty("requests", req);
        o.addProperty("pipelines", pipes);
        o.addProperty("wall_s", round3(wall));
        o.addProperty("user_ns", cpu1[0] - cpu0[0]);
        o.addProperty("sys_ns", cpu1[1] - cpu0[1]);
        o.addProperty("workers_user_ns", wuser);
        o.addProperty("workers_cpu_ns", wcpu);
        if (row.client.equals("slotlane")) o.addProperty("bytes_written", bw1 - bw0);
        else o.add("bytes_written", JsonNull.INSTANCE);
        if (in0 >= 0 && in1 >= 0) o.addProperty("server_input_bytes", in1 - in0);
        else o.add("server_input_bytes", JsonNull.INSTANCE);
        o.addProperty("load1", load1);
        o.addProperty("cpu_ns_per_req", round1((cpu1[0] - cpu0[0] + cpu1[1] - cpu0[1]) / (double) req));
        o.addProperty("user_ns_per_req", round1((cpu1[0] - cpu0[0]) / (double) req));
        o.addProperty("sys_ns_per_req", round1((cpu1[1] - cpu0[1]) / (double) req));
        o.addProperty("workers_user_ns_per_req", round1(wuser / (double) req));
        o.addProperty("workers_cpu_ns_per_req", round1(wcpu / (double) req));
        if (row.client.equals("slotlane")) o.addProperty("bytes_per_req", round1((bw1 - bw0) / (double) req));
        else o.add("bytes_per_req", JsonNull.INSTANCE);
        if (in0 >= 0 && in1 >= 0) o.addProperty("server_input_bytes_per_req", round1((in1 - in0) / (double) req));
        else o.add("server_input_bytes_per_req", JsonNull.INSTANCE);
        o.addProperty("req_per_s", Math.round(req / wall));
        return o;
    }

    /** The servers' total_net_input_bytes summed over the nodes (INFO stats), or -1. */
    long serverInput(SlotlaneClient c) {
        try {
            Object r = c.command(Route.allPrimaries(), "INFO", "stats");
            List<Object> parts = r instanceof List ? new ArrayList<>((List<?>) r) : List.of(r);
            long sum = 0;
            for (Object p : parts) {
                String s = p.toString();
                int at = s.indexOf("total_net_input_bytes:");
                if (at < 0) return -1;
                int e = s.indexOf('\r', at);
                sum += Long.parseLong(s.substring(at + "total_net_input_bytes:".length(), e < 0 ? s.length() : e).trim());
            }
            return sum;
        } catch (RuntimeException e) {
            return -1;
        }
    }

    /** The process's user and system CPU in ns (/proc/self/stat, clock ticks of 10 ms). */
    static long[] processCpu() throws Exception {
        String s = Files.readString(Paths.get("/proc/self/stat"));
        String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
        long tick = 10_000_000L; // CLK_TCK 100 on Linux
        return new long[] {Long.parseLong(f[11]) * tick, Long.parseLong(f[12]) * tick};
    }

    static double round1(double v) {
        return Math.round(v * 10) / 10.0;
    }

    static double round3(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        int n = s.size();
        return n == 0 ? Double.NaN : n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    // ------------------------------------------------------------------ the record

    JsonObject record(List<Row> all, String started, boolean ok) throws Exception {
        JsonObject rec = new JsonObject();
        rec.addProperty("schema", SCHEMA);
        rec.addProperty("benchmark", "cluster-cost");
        rec.addProperty("tool", "RoutingCostBench (java/src/test/java/io/slotlane/bench/RoutingCostBench.java)");
        rec.addProperty("ok", ok);
        rec.addProperty("started_at", started);
        rec.addProperty("finished_at", Instant.now().toString());
        JsonObject m = new JsonObject();
        m.addProperty("hostname", InetAddress.getLocalHost().getHostName());
        m.addProperty("cpu_model", cpuModel());
        m.addProperty("cores", onlineCpus());
        m.addProperty("jvm_available_processors", Runtime.getRuntime().availableProcessors());
        m.addProperty("kernel", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        m.addProperty("client_cpus", System.getenv().getOrDefault("SL_BENCH_CLIENT_CPUS", "unpinned"));
        m.addProperty("loadavg_start", loadStart);
        m.addProperty("loadavg_end", loadavg());
        m.addProperty("note", "2 cores shared with other engineers' builds and benchmarks: compare rows of this record only");
        rec.add("machine", m);
        JsonObject v = new JsonObject();
        v.addProperty("slotlane", SlotlaneClient.version());
        v.addProperty("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        v.addProperty("jedis", mavenVersion("redis.clients", "jedis"));
        v.addProperty("lettuce", RedisClient.class.getPackage().getImplementationVersion());
        v.addProperty("server_plain", slPlain != null ? serverVersion(slPlain) : null);
        v.addProperty("server_cluster", slCluster != null ? serverVersion(slCluster) : null);
        rec.add("versions", v);
        JsonObject git = new JsonObject();
        git.addProperty("commit", System.getenv().getOrDefault("SL_GIT_COMMIT", "unknown"));
        String dirty = System.getenv("SL_GIT_DIRTY");
        if (dirty == null) git.add("dirty", JsonNull.INSTANCE);
        else git.addProperty("dirty", Boolean.parseBoolean(dirty));
        rec.add("git", git);
        JsonArray cmd = new JsonArray();
        cmd.add("java");
        ManagementFactory.getRuntimeMXBean().getInputArguments().forEach(cmd::add);
        cmd.add(RoutingCostBench.class.getName());
        argv.forEach(cmd::add);
        rec.add("command", cmd);
        rec.addProperty("invocation", invocation);
        JsonObject servers = new JsonObject();
        servers.addProperty("description", serverDesc);
        servers.addProperty("plain", plainUrl);
        servers.addProperty("cluster", clusterUrl);
        rec.add("servers", servers);
        JsonObject cfg = new JsonObject();
        cfg.addProperty("workers", workers);
        cfg.addProperty("seconds", seconds);
        cfg.addProperty("warmup_seconds", warmup);
        cfg.addProperty("jit_warmup_seconds_per_row", jitWarmup);
        cfg.addProperty("rounds", rounds);
        cfg.addProperty("keys", KEYS);
        cfg.addProperty("value_bytes", VALUE_LEN);
        cfg.addProperty("quick", quick);
        cfg.addProperty("tls_ca", tlsCa); // null: plaintext
        cfg.addProperty("order", "rounds outer; rows, ops, depths, clients inner (interleaved)");
        cfg.addProperty("jedis_multi_node_pipeline_sync_workers", redis.clients.jedis.MultiNodePipelineBase.MULTI_NODE_PIPELINE_SYNC_WORKERS);
        rec.add("config", cfg);

        Map<String, Double> med = new LinkedHashMap<>();
        Map<String, Double> medW = new LinkedHashMap<>();
        JsonArray rowsJ = new JsonArray();
        for (Row r : all) {
            JsonObject o = new JsonObject();
            o.addProperty("client", r.client);
            o.addProperty("row", r.row);
            o.addProperty("op", r.op);
            o.addProperty("depth", r.depth);
            o.addProperty("ok", r.error == null);
            if (r.error != null) o.addProperty("error", r.error);
            JsonArray rs = new JsonArray();
            r.rounds.forEach(rs::add);
            o.add("rounds", rs);
            if (r.error == null) {
                JsonObject md = new JsonObject();
                for (String f : List.of("cpu_ns_per_req", "user_ns_per_req", "workers_user_ns_per_req", "workers_cpu_ns_per_req", "sys_ns_per_req", "bytes_per_req",
                        "server_input_bytes_per_req", "req_per_s")) {
                    List<Double> vals = new ArrayList<>();
                    for (JsonObject x : r.rounds) if (!x.get(f).isJsonNull()) vals.add(x.get(f).getAsDouble());
                    if (vals.isEmpty()) md.add(f, JsonNull.INSTANCE);
                    else md.addProperty(f, round1(median(vals)));
                }
                o.add("median", md);
                med.put(r.key(), md.get("user_ns_per_req").getAsDouble());
                medW.put(r.key(), md.get("workers_user_ns_per_req").getAsDouble());
            }
            rowsJ.add(o);
        }
        // ratios: x_plain (same client, same op and depth) and x_jedis (slotlane over Jedis, same row)
        for (int i = 0; i < rowsJ.size(); i++) {
            JsonObject o = rowsJ.get(i).getAsJsonObject();
            Row r = all.get(i);
            Double self = med.get(r.key());
            Double plain = med.get(r.client + "/plain/" + r.op + "/" + r.depth);
            Double jedis = med.get("jedis/" + r.row + "/" + r.op + "/" + r.depth);
            if (self != null && plain != null) o.addProperty("x_plain", round3(self / plain));
            if (self != null && jedis != null && r.client.equals("slotlane")) o.addProperty("x_jedis", round3(self / jedis));
            Double selfW = medW.get(r.key()), jedisW = medW.get("jedis/" + r.row + "/" + r.op + "/" + r.depth);
            if (selfW != null && jedisW != null && r.client.equals("slotlane")) o.addProperty("x_jedis_workers", round3(selfW / jedisW));
            Double lettuce = med.get("lettuce/" + r.row + "/" + r.op + "/" + r.depth);
            if (self != null && lettuce != null && r.client.equals("slotlane")) o.addProperty("x_lettuce", round3(self / lettuce));
        }
        rec.add("rows", rowsJ);
        JsonArray targets = new JsonArray();
        for (String op : ops)
            for (int d : depths) {
                for (String row : rows) target(targets, "slotlane " + row + " process user CPU <= 0.5 x Jedis's", op, d,
                        med.get("slotlane/" + row + "/" + op + "/" + d), med.get("jedis/" + row + "/" + op + "/" + d), 0.5);
                target(targets, "one-node user CPU <= 1.1 x plain", op, d, med.get("slotlane/one-node/" + op + "/" + d),
                        med.get("slotlane/plain/" + op + "/" + d), 1.1);
                target(targets, "cluster user CPU <= 1.5 x plain", op, d, med.get("slotlane/cluster/" + op + "/" + d),
                        med.get("slotlane/plain/" + op + "/" + d), 1.5);
            }
        rec.add("targets", targets);
        return rec;
    }

    static void target(JsonArray out, String name, String op, int depth, Double num, Double den, double limit) {
        if (num == null || den == null) return;
        JsonObject t = new JsonObject();
        t.addProperty("name", name);
        t.addProperty("op", op);
        t.addProperty("depth", depth);
        t.addProperty("value", round3(num / den));
        t.addProperty("limit", limit);
        t.addProperty("met", num / den <= limit);
        out.add(t);
    }

    static String serverVersion(SlotlaneClient c) {
        try {
            Object r = c.command(Route.random(), "INFO", "server");
            String s = r.toString();
            int at = s.indexOf("redis_version:");
            if (at < 0) return null;
            int e = s.indexOf('\r', at);
            return s.substring(at + "redis_version:".length(), e < 0 ? s.length() : e);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** A dependency's version from its jar's META-INF/maven/GROUP/ARTIFACT/pom.properties. */
    static String mavenVersion(String group, String artifact) {
        try (var in = RoutingCostBench.class.getResourceAsStream("/META-INF/maven/" + group + "/" + artifact + "/pom.properties")) {
            if (in == null) return null;
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (Exception e) {
            return null;
        }
    }

    static int onlineCpus() {
        try {
            return (int) Files.readAllLines(Paths.get("/proc/cpuinfo")).stream().filter(l -> l.startsWith("processor")).count();
        } catch (Exception e) {
            return Runtime.getRuntime().availableProcessors();
        }
    }

    static String cpuModel() {
        try {
            for (String l : Files.readAllLines(Paths.get("/proc/cpuinfo")))
                if (l.startsWith("model name")) return l.substring(l.indexOf(':') + 1).trim();
        } catch (Exception ignored) {
            // not Linux
        }
        return null;
    }

    /** Writes the record under a name that never collides (a hard link of a finished temporary file). */
    Path write(JsonObject rec) throws Exception {
        return writeRecord(rec, jsonDir, "java-routing-cost");
    }

    /** Writes rec to DIR/HOST-DATE-TIME-KIND.json, a name that never collides (a hard link of a finished temporary file). */
    static Path writeRecord(JsonObject rec, String jsonDir, String kind) throws Exception {
        Path dir = Paths.get(jsonDir);
        Files.createDirectories(dir);
        String json = new GsonBuilder().setPrettyPrinting().serializeNulls().create().toJson(rec) + "\n";
        Path tmp = dir.resolve("." + kind + "." + ProcessHandle.current().pid() + ".tmp");
        Files.writeString(tmp, json);
        String host = InetAddress.getLocalHost().getHostName();
        DateTimeFormatter f = DateTimeFormatter.ofPattern("yyyy-MM-dd-HHmmss").withZone(ZoneOffset.UTC);
        try {
            for (int i = 0; i < 120; i++) {
                Path name = dir.resolve(host + "-" + f.format(Instant.now()) + "-" + kind + ".json");
                try {
                    Files.createLink(name, tmp);
                    return name;
                } catch (FileAlreadyExistsException e) {
                    Thread.sleep(1000);
                }
            }
            throw new IllegalStateException("no free record name in " + dir);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** The markdown table of the medians. */
    static String table(JsonObject rec) {
        StringBuilder s = new StringBuilder();
        s.append("| client | row | op | depth | user ns/req (process) | user ns/req (workers) | sys ns/req | bytes/req | req/s | x plain | x Jedis | x Lettuce |\n");
        s.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        Set<String> seen = new HashSet<>();
        for (var e : rec.getAsJsonArray("rows")) {
            JsonObject o = e.getAsJsonObject();
            seen.add(o.get("client").getAsString());
            s.append("| ").append(o.get("client").getAsString()).append(" | ").append(o.get("row").getAsString()).append(" | ")
                    .append(o.get("op").getAsString()).append(" | ").append(o.get("depth").getAsInt()).append(" | ");
            if (!o.get("ok").getAsBoolean()) {
                s.append("FAILED: ").append(o.get("error").getAsString()).append(" | | | | | | | |\n");
                continue;
            }
            JsonObject md = o.getAsJsonObject("median");
            Object bytes = !md.get("bytes_per_req").isJsonNull() ? md.get("bytes_per_req").getAsDouble()
                    : !md.get("server_input_bytes_per_req").isJsonNull() ? "srv " + md.get("server_input_bytes_per_req").getAsDouble() : "-";
            s.append(String.format("%.0f | %.0f | %.0f | %s | %.0f | %s | %s | %s |%n", md.get("user_ns_per_req").getAsDouble(),
                    md.get("workers_user_ns_per_req").getAsDouble(), md.get("sys_ns_per_req").getAsDouble(), bytes,
                    md.get("req_per_s").getAsDouble(), o.has("x_plain") ? o.get("x_plain").getAsString() : "-",
                    o.has("x_jedis") ? o.get("x_jedis").getAsString() : "-",
                    o.has("x_lettuce") ? o.get("x_lettuce").getAsString() : "-"));
        }
        s.append("\nTargets (medians of process user CPU per request):\n");
        for (var e : rec.getAsJsonArray("targets")) {
            JsonObject t = e.getAsJsonObject();
            s.append(String.format("  %-4s %s %-3s d%-3d %.3f (limit %.2f)%n", t.get("met").getAsBoolean() ? "met" : "MISS",
                    t.get("name").getAsString(), t.get("op").getAsString(), t.get("depth").getAsInt(),
                    t.get("value").getAsDouble(), t.get("limit").getAsDouble()));
        }
        return s.toString();
    }
}
