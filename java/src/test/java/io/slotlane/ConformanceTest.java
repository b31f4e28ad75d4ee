package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The language-neutral cases of bindings/conformance/ (README there): each case's commands
 * run as one pipeline, and the Java values users get are compared with the replies recorded
 * from Redis 7.0. Against Debian's redis-server (standalone) and Redis Cluster, every case;
 * against the bundled server, every case whose commands it knows (COMMAND INFO) — the others
 * are reported as skipped, with the commands it lacks.
 */
class ConformanceTest {
    private static final Map<String, SlotlaneClient> CLIENTS = new HashMap<>();

    @AfterAll
    static void close() {
        CLIENTS.values().forEach(SlotlaneClient::close);
        CLIENTS.clear();
    }

    static List<JsonObject> cases() throws Exception {
        List<JsonObject> out = cases("bindings/conformance/cases");
        assertTrue(out.size() >= 30, "conformance cases found: " + out.size());
        return out;
    }

    /** Every case of the case files of dir (relative to the repository), in file order, each with its "_file". */
    static List<JsonObject> cases(String dir) throws Exception {
        List<JsonObject> out = new ArrayList<>();
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(TestServers.ROOT.resolve(dir), "*.json")) {
            ds.forEach(files::add);
        }
        files.sort(null);
        for (Path f : files) {
            JsonObject doc = JsonParser.parseString(Files.readString(f)).getAsJsonObject();
            for (JsonElement c : doc.getAsJsonArray("cases")) {
                JsonObject o = c.getAsJsonObject();
                o.addProperty("_file", f.getFileName().toString());
                out.add(o);
            }
        }
        return out;
    }

    @TestFactory
    Stream<DynamicTest> redisStandalone() throws Exception {
        return tests("redis-plain", TestServers::redisPlain, false);
    }

    @TestFactory
    Stream<DynamicTest> redisCluster() throws Exception {
        return tests("redis-cluster", TestServers::redisCluster, false);
    }

    @TestFactory
    Stream<DynamicTest> bundledServer() throws Exception {
        return tests("bundled", TestServers::bundledCluster, true);
    }

    private Stream<DynamicTest> tests(String server, java.util.function.Supplier<String> url, boolean onlyKnown) throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonObject c : cases()) {
            JsonArray resps = c.get("resp").isJsonArray() ? c.getAsJsonArray("resp") : new JsonArray();
            if (!c.get("resp").isJsonArray()) resps.add(c.get("resp"));
            for (JsonElement r : resps) {
                int resp = r.getAsInt();
                String name = c.get("name").getAsString() + " (resp" + resp + ", " + server + ")";
                tests.add(DynamicTest.dynamicTest(name, () -> run(c, resp, server, url.get(), onlyKnown)));
            }
        }
        return tests.stream();
    }

    private static SlotlaneClient client(String server, String url, int resp) {
        return CLIENTS.computeIfAbsent(server + resp,
                k -> SlotlaneClient.create(ClientOptions.builder().uri(url).resp(resp).poolSize(2).build()));
    }

    private static byte[][] args(JsonArray cmd) {
        byte[][] a = new byte[cmd.size()][];
        for (int i = 0; i < a.length; i++) {
            JsonElement e = cmd.get(i);
            a[i] = e.isJsonObject() ? HexFormat.of().parseHex(e.getAsJsonObject().get("hex").getAsString())
                    : e.getAsString().getBytes(StandardCharsets.UTF_8);
        }
        return a;
    }

    private static void run(JsonObject c, int resp, String server, String url, boolean onlyKnown) {
        SlotlaneClient cl = client(server, url, resp);
        String mode = c.get("mode").getAsString();
        boolean cluster = cl.mode() == Mode.CLUSTER;
        Assumptions.assumeTrue(mode.equals("any") || mode.equals(cluster ? "cluster" : "plain"),
                "a \"" + mode + "\" case does not apply to a " + (cluster ? "cluster" : "plain") + " client");
        JsonArray setup = c.has("setup") ? c.getAsJsonArray("setup") : new JsonArray();
        JsonArray commands = c.getAsJsonArray("commands");
        if (onlyKnown) {
            // commands the case expects to be unknown (their recorded reply is "ERR unknown command") are not needed
            JsonArray exp = c.getAsJsonObject("expected").getAsJsonArray(Integer.toString(resp));
            List<String> unknown = new ArrayList<>();
            for (JsonArray list : List.of(setup, commands))
                for (int i = 0; i < list.size(); i++) {
                    JsonElement cmd = list.get(i);
                    if (list == commands && exp.get(i).getAsJsonObject().get("type").getAsString().equals("error")
                            && exp.get(i).getAsJsonObject().get("prefix").getAsString().startsWith("ERR unknown command")) continue;
                    String n = new String(args(cmd.getAsJsonArray())[0], StandardCharsets.UTF_8).toLowerCase(Locale.ROOT);
                    List<?> info = (List<?>) cl.command("COMMAND", "INFO", n);
                    if (info.get(0) == null && !unknown.contains(n)) unknown.add(n);
                }
            Assumptions.assumeTrue(unknown.isEmpty(), "the bundled server lacks " + unknown);
        }
        cl.flushall();
        if (setup.size() > 0) {
            try (Pipeline p = cl.pipeline()) {
                for (JsonElement cmd : setup) p.command(args(cmd.getAsJsonArray()));
                List<Object> r = p.sync();
                for (int i = 0; i < r.size(); i++)
                    assertFalse(r.get(i) instanceof SlotlaneException, "setup #" + i + ": " + r.get(i));
            }
        }
        List<Object> got;
        try (Pipeline p = cl.pipeline()) {
            for (JsonElement cmd : commands) p.command(args(cmd.getAsJsonArray()));
            got = p.sync();
        }
        JsonArray expected = c.getAsJsonObject("expected").getAsJsonArray(Integer.toString(resp));
        assertEquals(expected.size(), got.size());
        for (int i = 0; i < got.size(); i++) {
            String why = mismatch(expected.get(i).getAsJsonObject(), got.get(i));
            if (why != null)
                fail(c.get("_file").getAsString() + " command #" + i + " " + commands.get(i) + ": " + why);
        }
    }

    private static byte[] expectedBytes(JsonObject e) {
        return e.has("hex") ? HexFormat.of().parseHex(e.get("hex").getAsString())
                : e.get("value").getAsString().getBytes(StandardCharsets.UTF_8);
    }

    private static String show(Object v) {
        if (v instanceof byte[]) return "bytes \"" + new String((byte[]) v, StandardCharsets.UTF_8) + "\"";
        return v == null ? "null" : v.getClass().getSimpleName() + " " + v;
    }

    /** null when the Java value matches the expected reply, else why not. */
    static String mismatch(JsonObject e, Object got) {
        String type = e.get("type").getAsString();
        String bad = "expected " + e + ", got " + show(got);
        if (!e.has("value") && !e.has("hex") && !e.has("children") && !type.equals("nil") && !type.equals("error"))
            return null; // a "loose" reply of the spec's cases (its value varies): only its type was recorded
        switch (type) {
            case "string":
                if (got instanceof String) // the typed methods' text (SpecConformanceTest)
                    return got.equals(new String(expectedBytes(e), StandardCharsets.UTF_8)) ? null : bad;
                return got instanceof byte[] && Arrays.equals(expectedBytes(e), (byte[]) got) ? null : bad;
            case "status":
                return got instanceof String && got.equals(e.get("value").getAsString()) ? null : bad;
            case "error": {
                if (!(got instanceof SlotlaneException)) return bad;
                SlotlaneException x = (SlotlaneException) got;
                boolean kind = x.kind().name().toLowerCase(Locale.ROOT).equals(e.get("kind").getAsString());
                boolean cls = !e.get("kind").getAsString().equals("server") || x instanceof ReplyException;
                return kind && cls && x.getMessage().startsWith(e.get("prefix").getAsString()) ? null
                        : bad + " (" + x.getClass().getSimpleName() + " " + x.kind() + ": " + x.getMessage() + ")";
            }
            case "integer":
                return got instanceof Long && (Long) got == Long.parseLong(e.get("value").getAsString()) ? null : bad;
            case "nil":
                return got == null ? null : bad;
            case "double": {
                if (!(got instanceof Double)) return bad;
                String t = e.get("value").getAsString();
                double want = t.equals("inf") ? Double.POSITIVE_INFINITY : t.equals("-inf") ? Double.NEGATIVE_INFINITY
                        : t.equals("nan") ? Double.NaN : Double.parseDouble(t);
                return Double.compare(want, (Double) got) == 0 ? null : bad;
            }
            case "bool":
                return Boolean.valueOf(e.get("value").getAsBoolean()).equals(got) ? null : bad;
            case "bignum":
                return new BigInteger(e.get("value").getAsString()).equals(got) ? null : bad;
            case "verb":
                return got instanceof Verbatim && ((Verbatim) got).format().equals(e.get("format").getAsString())
                        && Arrays.equals(((Verbatim) got).bytes(), e.get("value").getAsString().getBytes(StandardCharsets.UTF_8))
                        ? null : bad;
            case "array":
            case "push":
                if (!(got instanceof List)) return bad;
                return children(e, new ArrayList<>((List<?>) got), false);
            case "set":
                if (!(got instanceof Set)) return bad;
                return children(e, new ArrayList<>((Set<?>) got), false);
            case "map": {
                if (!(got instanceof Map)) return bad;
                List<Object> flat = new ArrayList<>();
                for (Map.Entry<?, ?> en : ((Map<?, ?>) got).entrySet()) {
                    flat.add(en.getKey());
                    flat.add(en.getValue());
                }
                return children(e, flat, true);
            }
            default:
                return "unknown expected type " + type;
        }
    }

    private static String children(JsonObject e, List<Object> got, boolean pairs) {
        JsonArray want = e.getAsJsonArray("children");
        if (want.size() != got.size()) return "expected " + want.size() + " children, got " + got.size() + ": " + got;
        boolean unordered = e.has("unordered") && e.get("unordered").getAsBoolean();
        int step = pairs ? 2 : 1;
        if (!unordered) {
            for (int i = 0; i < want.size(); i++) {
                String w = mismatch(want.get(i).getAsJsonObject(), got.get(i));
                if (w != null) return "child #" + i + ": " + w;
            }
            return null;
        }
        boolean[] used = new boolean[got.size()];
        outer:
        for (int i = 0; i < want.size(); i += step) {
            for (int j = 0; j < got.size(); j += step) {
                if (used[j]) continue;
                boolean ok = mismatch(want.get(i).getAsJsonObject(), got.get(j)) == null
                        && (!pairs || mismatch(want.get(i + 1).getAsJsonObject(), got.get(j + 1)) == null);
                if (ok) {
                    used[j] = true;
                    continue outer;
                }
            }
            return "no element matches " + want.get(i) + " in " + got;
        }
        return null;
    }
}
