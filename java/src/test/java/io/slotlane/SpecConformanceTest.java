package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The spec's conformance cases (bindings/conformance/commands/*.json) through the typed
 * methods: every call of a case is made through the rendered Java method (the spec's method
 * name mapped by {@link Commands#METHODS}, required parameters positional, optional ones set on
 * its options builder, the arguments built from the call's JSON by the spec's parameter types)
 * -- once queued on one Pipeline (the case's batch, read through {@link Reply#get()}), once on
 * the client -- and each value is compared with the recorded reply as the method's reply type
 * shapes it (bindings/spec/README.md). Against standalone Redis and Redis Cluster, RESP2 and
 * RESP3. Java's typed string results are text (UTF-8): a recorded non-UTF-8 string is
 * compared as Java decodes it.
 */
class SpecConformanceTest {
    private static final Map<String, SlotlaneClient> CLIENTS = new HashMap<>();
    private static final Map<String, JsonObject> METHODS = new HashMap<>();

    @AfterAll
    static void close() {
        CLIENTS.values().forEach(SlotlaneClient::close);
        CLIENTS.clear();
    }

    static synchronized Map<String, JsonObject> methods() throws Exception {
        if (METHODS.isEmpty()) {
            JsonObject doc = JsonParser.parseString(Files.readString(TestServers.ROOT.resolve("bindings/spec/commands.json"))).getAsJsonObject();
            for (JsonElement m : doc.getAsJsonArray("methods")) METHODS.put(m.getAsJsonObject().get("method").getAsString(), m.getAsJsonObject());
        }
        return METHODS;
    }

    static List<JsonObject> cases() throws Exception {
        List<JsonObject> out = ConformanceTest.cases("bindings/conformance/commands");
        assertTrue(out.size() >= 280, "spec cases found: " + out.size());
        return out;
    }

    @Test
    void everyMethodIsRenderedAndHasACase() throws Exception {
        Set<String> called = new java.util.HashSet<>();
        for (JsonObject c : cases())
            for (JsonElement call : c.getAsJsonArray("calls")) called.add(call.getAsJsonObject().get("method").getAsString());
        List<String> bad = new ArrayList<>();
        for (String m : methods().keySet()) {
            if (!called.contains(m)) bad.add(m + ": no case");
            String j = Commands.METHODS.get(m);
            if (j == null) bad.add(m + ": not rendered");
            else if (find(SlotlaneClient.class, j, methods().get(m)) == null || find(Pipeline.class, j, methods().get(m)) == null)
                bad.add(m + ": no client or pipeline method " + j);
        }
        assertEquals(List.of(), bad);
        assertEquals(methods().size(), Commands.METHODS.size());
    }

    /** errors.json's names -> Java's (render_java.py's EXC). */
    private static final Map<String, String> JAVA_NAMES = Map.ofEntries(Map.entry("Error", "SlotlaneException"),
            Map.entry("ResponseError", "ReplyException"), Map.entry("ConnectionError", "ConnectionException"),
            Map.entry("ProtocolError", "ProtocolException"), Map.entry("TimeoutError", "SlotlaneTimeoutException"),
            Map.entry("ClusterError", "ClusterException"), Map.entry("CancelledError", "CancelledException"),
            Map.entry("ArgumentError", "ArgumentException"), Map.entry("ResourceError", "ResourceException"),
            Map.entry("TlsError", "TlsException"), Map.entry("WatchError", "WatchException"),
            Map.entry("WatchMovedError", "WatchMovedException"), Map.entry("BlockingPipelineError", "BlockingPipelineException"));

    /** Every SL_E* code and sl_err_kind of slotlane.h (as SWIG reads it) raises errors.json's type; the table names them all. */
    @Test
    void errorsAreErrorsJson() throws Exception {
        JsonObject e = JsonParser.parseString(Files.readString(TestServers.ROOT.resolve("bindings/spec/errors.json"))).getAsJsonObject();
        JsonObject codes = e.getAsJsonObject("codes");
        int n = 0;
        for (java.lang.reflect.Field f : io.slotlane.internal.sl_error_code.class.getFields()) {
            if (f.getName().equals("SL_OK")) continue;
            assertTrue(codes.has(f.getName()), "errors.json lacks " + f.getName());
            SlotlaneException x = Errors.ofCode(f.getInt(null), "m");
            assertEquals(JAVA_NAMES.get(codes.get(f.getName()).getAsString()), x.getClass().getSimpleName(), f.getName());
            n++;
        }
        assertEquals(codes.size(), n);
        JsonObject kinds = e.getAsJsonObject("kinds");
        n = 0;
        for (java.lang.reflect.Field f : io.slotlane.internal.sl_err_kind.class.getFields()) {
            JsonArray k = kinds.getAsJsonArray(f.getName());
            assertNotNull(k, "errors.json lacks " + f.getName());
            ErrorKind kind = ErrorKind.ofRecordFlags(f.getInt(null));
            assertEquals(k.get(0).getAsString(), kind.name().toLowerCase(Locale.ROOT), f.getName());
            SlotlaneException x = Errors.ofKind(kind, "m");
            assertEquals(JAVA_NAMES.get(k.get(1).getAsString()), x.getClass().getSimpleName(), f.getName());
            assertEquals(kind, x.kind());
            n++;
        }
        assertEquals(kinds.size(), n);
        // the hierarchy of errors.json's parents
        for (JsonElement t : e.getAsJsonArray("types")) {
            JsonObject o = t.getAsJsonObject();
            if (o.get("parent").isJsonNull()) continue;
            Class<?> cls = Class.forName("io.slotlane." + JAVA_NAMES.get(o.get("name").getAsString()));
            assertEquals(JAVA_NAMES.get(o.get("parent").getAsString()), cls.getSuperclass().getSimpleName());
        }
        assertInstanceOf(CancelledException.class, Errors.ofCode(io.slotlane.internal.sl_error_code.SL_ECANCELLED, "cancelled"));
    }

    @TestFactory
    Stream<DynamicTest> redisStandalone() throws Exception {
        return tests("redis-plain", TestServers::redisPlain);
    }

    @TestFactory
    Stream<DynamicTest> redisCluster() throws Exception {
        return tests("redis-cluster", TestServers::redisCluster);
    }

    private Stream<DynamicTest> tests(String server, java.util.function.Supplier<String> url) throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        boolean cluster = server.endsWith("cluster");
        for (JsonObject c : cases()) {
            String mode = c.get("mode").getAsString();
            if (!mode.equals("any") && !mode.equals(cluster ? "cluster" : "plain")) continue;
            for (JsonElement r : c.getAsJsonArray("resp")) {
                int resp = r.getAsInt();
                String name = c.get("name").getAsString() + " (resp" + resp + ", " + server + ")";
                tests.add(DynamicTest.dynamicTest(name, () -> run(c, resp, client(server, url.get(), resp))));
            }
        }
        assertTrue(tests.size() >= 200, "case runs: " + tests.size());
        return tests.stream();
    }

    private static SlotlaneClient client(String server, String url, int resp) {
        return CLIENTS.computeIfAbsent(server + resp,
                k -> SlotlaneClient.create(ClientOptions.builder().uri(url).resp(resp).poolSize(2).build()));
    }

    // ------------------------------------------------------------------ calls

    /** The rendered method of a spec method on cls: with its options parameter when it has one. */
    static Method find(Class<?> cls, String name, JsonObject m) {
        int req = 0;
        boolean opt = false;
        for (JsonElement p : m.getAsJsonArray("params")) {
            if (p.getAsJsonObject().get("optional").getAsBoolean()) opt = true;
            else req++;
        }
        for (Method x : cls.getMethods()) {
            if (!x.getName().equals(name) || x.getParameterCount() != req + (opt ? 1 : 0)) continue;
            if (opt && !x.getParameterTypes()[req].getSimpleName().endsWith("Options")) continue;
            return x;
        }
        return null;
    }

    static Object scalar(String type, JsonElement v) {
        switch (type) {
            case "key":
                return v.getAsString();
            case "int":
                return v.getAsLong();
            case "double":
                return v.getAsDouble();
            case "flag":
                return v.getAsBoolean();
            case "value":
                if (v.isJsonObject()) return HexFormat.of().parseHex(v.getAsJsonObject().get("hex").getAsString());
                JsonPrimitive p = v.getAsJsonPrimitive();
                if (p.isNumber()) {
                    String s = p.getAsString();
                    return s.contains(".") || s.contains("e") || s.contains("E") ? (Object) p.getAsDouble() : (Object) p.getAsLong();
                }
                return p.getAsString();
            default:
                throw new IllegalArgumentException("scalar of type " + type);
        }
    }

    /** The Java argument of a spec parameter from the call's JSON. */
    static Object arg(JsonObject p, JsonElement v, Class<?> javaType) {
        String type = p.get("type").getAsString();
        if (type.equals("tuple")) {
            JsonArray fields = p.getAsJsonArray("fields");
            List<Object> out = new ArrayList<>();
            for (JsonElement t : v.getAsJsonArray()) {
                JsonArray a = t.getAsJsonArray();
                Object[] f = new Object[a.size()];
                for (int i = 0; i < f.length; i++) f[i] = scalar(fields.get(i).getAsJsonObject().get("type").getAsString(), a.get(i));
                out.add(f.length == 2 ? Pair.of(f[0], f[1]) : Tuple3.of(f[0], f[1], f[2]));
            }
            return out;
        }
        if (p.has("list") && p.get("list").getAsBoolean()) {
            JsonArray a = v.getAsJsonArray();
            if (javaType.isArray()) {
                Object arr = java.lang.reflect.Array.newInstance(javaType.getComponentType(), a.size());
                for (int i = 0; i < a.size(); i++) java.lang.reflect.Array.set(arr, i, scalar(type, a.get(i)));
                return arr;
            }
            List<Object> out = new ArrayList<>();
            for (JsonElement x : a) out.add(scalar(type, x));
            return out;
        }
        return scalar(type, v);
    }

    static Object[] callArgs(Method fn, JsonObject m, JsonObject args) throws Exception {
        List<Object> out = new ArrayList<>();
        Class<?>[] types = fn.getParameterTypes();
        Object opts = null;
        for (JsonElement pe : m.getAsJsonArray("params")) {
            JsonObject p = pe.getAsJsonObject();
            String name = p.get("name").getAsString();
            if (!p.get("optional").getAsBoolean()) {
                if (!args.has(name)) throw new AssertionError(m.get("method") + ": no argument " + name);
                out.add(arg(p, args.get(name), types[out.size()]));
                continue;
            }
            if (opts == null) opts = types[types.length - 1].getConstructor().newInstance();
            if (!args.has(name)) continue;
            Method setter = null;
            String jn = setterName(name);
            for (Method x : opts.getClass().getMethods())
                if (x.getName().equals(jn) && x.getParameterCount() == 1) setter = x;
            if (setter == null) throw new AssertionError(m.get("method") + ": no option " + jn);
            setter.invoke(opts, arg(p, args.get(name), setter.getParameterTypes()[0]));
        }
        if (opts != null) out.add(opts);
        return out.toArray();
    }

    static String setterName(String n) {
        String[] w = n.split("_");
        StringBuilder b = new StringBuilder(w[0]);
        for (int i = 1; i < w.length; i++) b.append(Character.toUpperCase(w[i].charAt(0))).append(w[i].substring(1));
        String s = b.toString();
        return s.equals("byte") ? "byteArg" : s;
    }

    // ------------------------------------------------------------------ one case

    private static void prepare(SlotlaneClient cl, JsonObject c) {
        cl.flushall();
        JsonArray setup = c.has("setup") ? c.getAsJsonArray("setup") : new JsonArray();
        if (setup.size() == 0) return;
        try (Pipeline p = cl.pipeline()) {
            for (JsonElement cmd : setup) {
                JsonArray a = cmd.getAsJsonArray();
                byte[][] args = new byte[a.size()][];
                for (int i = 0; i < args.length; i++)
                    args[i] = a.get(i).isJsonObject() ? HexFormat.of().parseHex(a.get(i).getAsJsonObject().get("hex").getAsString())
                            : a.get(i).getAsString().getBytes(StandardCharsets.UTF_8);
                p.command(args);
            }
            List<Object> r = p.sync();
            for (int i = 0; i < r.size(); i++) assertFalse(r.get(i) instanceof SlotlaneException, "setup #" + i + ": " + r.get(i));
        }
    }

    private static void run(JsonObject c, int resp, SlotlaneClient cl) throws Exception {
        Map<String, JsonObject> ms = methods();
        JsonArray calls = c.getAsJsonArray("calls");
        JsonArray want = c.getAsJsonObject("expected").getAsJsonArray(Integer.toString(resp));
        String where = c.get("_file").getAsString() + " " + c.get("name").getAsString();
        // 1. the calls queued on one pipeline
        prepare(cl, c);
        List<Reply<?>> replies = new ArrayList<>();
        try (Pipeline p = cl.pipeline()) {
            for (JsonElement ce : calls) {
                JsonObject call = ce.getAsJsonObject();
                JsonObject m = ms.get(call.get("method").getAsString());
                Method fn = find(Pipeline.class, Commands.METHODS.get(m.get("method").getAsString()), m);
                replies.add((Reply<?>) fn.invoke(p, callArgs(fn, m, call.getAsJsonObject("args"))));
            }
            p.sync();
            for (int i = 0; i < replies.size(); i++) {
                Object v;
                Throwable err = null;
                try {
                    v = replies.get(i).get();
                } catch (SlotlaneException e) {
                    v = null;
                    err = e;
                }
                String m = calls.get(i).getAsJsonObject().get("method").getAsString();
                String why = outcome(ms.get(m).get("reply").getAsString(), want.get(i).getAsJsonObject(), v, err);
                if (why != null) fail(where + ": pipeline call " + i + " " + m + ": " + why);
            }
        }
        // 2. one by one on the client
        prepare(cl, c);
        for (int i = 0; i < calls.size(); i++) {
            JsonObject call = calls.get(i).getAsJsonObject();
            JsonObject m = ms.get(call.get("method").getAsString());
            Method fn = find(SlotlaneClient.class, Commands.METHODS.get(m.get("method").getAsString()), m);
            Object v = null;
            Throwable err = null;
            try {
                v = fn.invoke(cl, callArgs(fn, m, call.getAsJsonObject("args")));
            } catch (InvocationTargetException e) {
                err = e.getCause();
            }
            String why = outcome(m.get("reply").getAsString(), want.get(i).getAsJsonObject(), v, err);
            if (why != null) fail(where + ": client call " + i + " " + m.get("method").getAsString() + ": " + why);
        }
    }

    // ------------------------------------------------------------------ replies

    /** A parsed reply type: t, of, nullable. */
    static final class T {
        String t;
        List<T> of = new ArrayList<>();
        boolean nil;
    }

    static T parse(String s) {
        int[] pos = {0};
        return parse(s, pos);
    }

    private static T parse(String s, int[] pos) {
        T n = new T();
        int j = pos[0];
        while (j < s.length() && Character.isLowerCase(s.charAt(j))) j++;
        n.t = s.substring(pos[0], j);
        pos[0] = j;
        if (pos[0] < s.length() && s.charAt(pos[0]) == '<') {
            pos[0]++;
            n.of.add(parse(s, pos));
            while (s.charAt(pos[0]) == ',') {
                pos[0]++;
                n.of.add(parse(s, pos));
            }
            pos[0]++;
        }
        if (pos[0] < s.length() && s.charAt(pos[0]) == '?') {
            pos[0]++;
            n.nil = true;
        }
        return n;
    }

    static String outcome(String reply, JsonObject e, Object v, Throwable err) {
        if (e.get("type").getAsString().equals("error")) {
            if (!(err instanceof SlotlaneException)) return "expected an error " + e + ", got " + (err != null ? err : v);
            SlotlaneException x = (SlotlaneException) err;
            boolean kind = !e.has("kind") || x.kind().name().toLowerCase(Locale.ROOT).equals(e.get("kind").getAsString());
            boolean cls = !e.has("kind") || !e.get("kind").getAsString().equals("server") || x instanceof ReplyException;
            boolean prefix = !e.has("prefix") || x.getMessage().startsWith(e.get("prefix").getAsString());
            return kind && cls && prefix ? null : "expected error " + e + ", got " + x.getClass().getSimpleName() + " " + x.kind() + ": " + x.getMessage();
        }
        if (err != null) return "expected " + e + ", got " + err;
        return typed(parse(reply), e, v);
    }

    private static boolean loose(JsonObject e) {
        return !e.has("value") && !e.has("hex") && !e.has("children");
    }

    private static String text(JsonObject e) {
        return e.has("hex") ? new String(HexFormat.of().parseHex(e.get("hex").getAsString()), StandardCharsets.UTF_8)
                : e.get("value").getAsString();
    }

    private static double dbl(String s) {
        switch (s) {
            case "inf": case "+inf": return Double.POSITIVE_INFINITY;
            case "-inf": return Double.NEGATIVE_INFINITY;
            case "nan": return Double.NaN;
            default: return Double.parseDouble(s);
        }
    }

    /** null when the typed value v matches the recorded reply e under type t, else why not. */
    static String typed(T t, JsonObject e, Object v) {
        String et = e.get("type").getAsString();
        String bad = "expected " + e + " as " + t.t + ", got " + (v == null ? "null" : v.getClass().getSimpleName() + " " + v);
        if (et.equals("nil")) {
            if (t.t.equals("ok")) return Boolean.FALSE.equals(v) ? null : bad;
            return v == null && (t.nil || t.t.equals("any")) ? null : bad;
        }
        if (v == null) return bad;
        boolean loose = loose(e);
        switch (t.t) {
            case "any":
                return loose ? null : ConformanceTest.mismatch(e, v);
            case "ok":
                return Boolean.TRUE.equals(v) ? null : bad;
            case "status":
            case "string":
                return v instanceof String && (loose || v.equals(text(e))) ? null : bad;
            case "int":
                return v instanceof Long && (loose || (Long) v == e.get("value").getAsLong()) ? null : bad;
            case "bool":
                return v instanceof Boolean && (loose || (Boolean) v == (e.get("value").getAsString().equals("true") || e.get("value").getAsString().equals("1"))) ? null : bad;
            case "double":
                return v instanceof Double && (loose || Double.compare((Double) v, dbl(e.get("value").getAsString())) == 0) ? null : bad;
            case "cursor":
                return v instanceof Long && (loose || (Long) v == Long.parseUnsignedLong(text(e))) ? null : bad;
            case "array":
            case "set": {
                if (!(v instanceof Collection) || (t.t.equals("set") != v instanceof Set)) return bad;
                if (loose) return null;
                List<Object> got = new ArrayList<>((Collection<?>) v);
                JsonArray kids = e.getAsJsonArray("children");
                if (got.size() != kids.size()) return bad + " (" + got.size() + " elements)";
                boolean unordered = t.t.equals("set") || (e.has("unordered") && e.get("unordered").getAsBoolean());
                boolean[] used = new boolean[got.size()];
                for (int i = 0; i < kids.size(); i++) {
                    if (!unordered) {
                        String w = typed(t.of.get(0), kids.get(i).getAsJsonObject(), got.get(i));
                        if (w != null) return "[" + i + "]: " + w;
                        continue;
                    }
                    boolean found = false;
                    for (int j = 0; j < got.size() && !found; j++)
                        if (!used[j] && typed(t.of.get(0), kids.get(i).getAsJsonObject(), got.get(j)) == null) used[j] = found = true;
                    if (!found) return bad + " (no element for " + kids.get(i) + ")";
                }
                return null;
            }
            case "map":
            case "pairs": {
                List<Object[]> items = new ArrayList<>();
                if (t.t.equals("map")) {
                    if (!(v instanceof Map)) return bad;
                    for (Map.Entry<?, ?> en : ((Map<?, ?>) v).entrySet()) items.add(new Object[] {en.getKey(), en.getValue()});
                } else {
                    if (!(v instanceof List)) return bad;
                    for (Object o : (List<?>) v) {
                        if (!(o instanceof Pair)) return bad;
                        items.add(new Object[] {((Pair<?, ?>) o).key(), ((Pair<?, ?>) o).value()});
                    }
                }
                if (loose) return null;
                List<JsonObject> flat = new ArrayList<>();
                JsonArray kids = e.getAsJsonArray("children");
                boolean nested = et.equals("array") && kids.size() > 0 && kids.get(0).getAsJsonObject().get("type").getAsString().equals("array");
                for (JsonElement k : kids) {
                    if (nested) for (JsonElement kk : k.getAsJsonObject().getAsJsonArray("children")) flat.add(kk.getAsJsonObject());
                    else flat.add(k.getAsJsonObject());
                }
                if (items.size() * 2 != flat.size()) return bad + " (" + items.size() + " pairs)";
                boolean unordered = t.t.equals("map") || (e.has("unordered") && e.get("unordered").getAsBoolean());
                boolean[] used = new boolean[items.size()];
                for (int i = 0; i < flat.size(); i += 2) {
                    boolean found = false;
                    for (int j = 0; j < items.size() && !found; j++) {
                        if (used[j] || (!unordered && j != i / 2)) continue;
                        if (typed(t.of.get(0), flat.get(i), items.get(j)[0]) == null && typed(t.of.get(1), flat.get(i + 1), items.get(j)[1]) == null)
                            used[j] = found = true;
                    }
                    if (!found) return bad + " (no pair for " + flat.get(i) + ", " + flat.get(i + 1) + ")";
                }
                return null;
            }
            case "tuple": {
                if (!(v instanceof Tuple2)) return bad;
                if (loose) return null;
                JsonArray kids = e.getAsJsonArray("children");
                if (kids.size() != 2) return bad;
                String w = typed(t.of.get(0), kids.get(0).getAsJsonObject(), ((Tuple2<?, ?>) v).first());
                return w != null ? "[0]: " + w : typed(t.of.get(1), kids.get(1).getAsJsonObject(), ((Tuple2<?, ?>) v).second());
            }
            default:
                return "unknown type " + t.t;
        }
    }
}
