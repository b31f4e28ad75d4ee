package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Bad arguments fail with IllegalArgumentException and a clear message, before anything is sent. */
class ArgumentsTest {
    static SlotlaneClient c;

    @BeforeAll
    static void start() {
        c = TestServers.client(TestServers.bundledCluster());
    }

    @AfterAll
    static void stop() {
        c.close();
    }

    static void bad(String messagePart, Executable e) {
        IllegalArgumentException x = assertThrows(IllegalArgumentException.class, e);
        assertTrue(x.getMessage() != null && x.getMessage().contains(messagePart),
                "message \"" + x.getMessage() + "\" should contain \"" + messagePart + "\"");
    }

    @Test
    void options() {
        bad("uri", () -> ClientOptions.builder().build());
        bad("empty", () -> ClientOptions.builder().uri(" "));
        bad("NUL", () -> ClientOptions.builder().uri("a\0b"));
        bad("port", () -> ClientOptions.builder().host("localhost", 0));
        bad("port", () -> ClientOptions.builder().host("localhost", 70000));
        bad("host", () -> ClientOptions.builder().host("", 1));
        bad("host", () -> ClientOptions.builder().host("a,b", 1));
        bad("resp", () -> ClientOptions.builder().resp(4));
        bad("poolSize", () -> ClientOptions.builder().poolSize(0));
        bad("database", () -> ClientOptions.builder().database(-1));
        bad("maxRedirects", () -> ClientOptions.builder().maxRedirects(-1));
        bad("connectTimeout", () -> ClientOptions.builder().connectTimeout(Duration.ZERO));
        bad("commandTimeout", () -> ClientOptions.builder().commandTimeout(Duration.ofMillis(-1)));
        bad("refreshInterval", () -> ClientOptions.builder().refreshInterval(Duration.ofSeconds(-5)));
        bad("NUL", () -> ClientOptions.builder().credentials("u", "p\0"));
        bad("options", () -> SlotlaneClient.create(null));
        assertThrows(NullPointerException.class, () -> ClientOptions.builder().mode(null));
        // the core parses the URL and refuses what it cannot parse: IllegalArgumentException too
        bad("", () -> SlotlaneClient.create(ClientOptions.builder().uri("redis://127.0.0.1:notaport").build()));
        assertThrows(UnsupportedOperationException.class,
                () -> SlotlaneClient.create(ClientOptions.builder().uri("rediss://127.0.0.1:" + TestServers.BASE).build()));
        ClientOptions ok = ClientOptions.builder().host("127.0.0.1", 1).mode(Mode.PLAIN).poolSize(3)
                .connectTimeout(Duration.ofMillis(200)).commandTimeout(Duration.ZERO).maxRedirects(2)
                .refreshInterval(Duration.ofSeconds(1)).database(0).credentials(null, null).resp(3).build();
        assertEquals("127.0.0.1:1", ok.url());
        assertEquals(Mode.PLAIN, ok.mode());
        assertEquals(3, ok.poolSize());
        assertTrue(ok.toString().contains("127.0.0.1:1"));
        assertEquals("[::1]:5", ClientOptions.builder().host("::1", 5).build().url());
    }

    @Test
    void setParamsAndRoutes() {
        bad("EX must be positive", () -> SetParams.setParams().ex(0));
        bad("PX must be positive", () -> SetParams.setParams().px(-1));
        bad("conflicts", () -> SetParams.setParams().ex(1).px(1));
        bad("conflicts", () -> SetParams.setParams().ex(1).keepTtl());
        bad("conflicts", () -> SetParams.setParams().exAt(1).pxAt(1));
        bad("conflicts", () -> SetParams.setParams().nx().xx());
        bad("slot", () -> Route.slot(16384));
        bad("slot", () -> Route.slot(-1));
        bad("host:port", () -> Route.node("nohostport"));
        bad("host:port", () -> Route.node("host:"));
        assertThrows(NullPointerException.class, () -> Route.node(null));
    }

    @Test
    void commands() {
        bad("key must not be null", () -> c.get((String) null));
        bad("key must not be null", () -> c.get((byte[]) null));
        bad("value must not be null", () -> c.set("k", null));
        bad("params must not be null", () -> c.set("k", "v", null));
        bad("at least one key", () -> c.mget(new String[0]));
        bad("at least one key", () -> c.del());
        bad("at least one key", () -> c.exists());
        bad("key must not be null", () -> c.del("a", null));
        bad("pairs", () -> c.mset("a", "1", "b"));
        bad("pairs", () -> c.mset(new String[0]));
        bad("at least one", () -> c.mset(new HashMap<>()));
        Map<String, String> nullValue = new HashMap<>();
        nullValue.put("k", null);
        bad("value must not be null", () -> c.mset(nullValue));
        bad("at least one value", () -> c.rpush("l"));
        bad("at least one member", () -> c.sadd("s"));
        bad("at least one field", () -> c.hdel("h"));
        bad("at least one field", () -> c.hset("h", new HashMap<>()));
        bad("field must not be null", () -> c.hget("h", null));
        bad("NaN", () -> c.zadd("z", Double.NaN, "m"));
        bad("member must not be null", () -> c.zadd("z", 1, null));
        bad("at least its name", () -> c.command(new String[0]));
        bad("argument must not be null", () -> c.command("GET", null));
        bad("route must not be null", () -> c.command((Route) null, "PING"));
        bad("key must not be null", () -> SlotlaneClient.keySlot((String) null));
        try (Pipeline p = c.pipeline()) {
            bad("key must not be null", () -> p.get((String) null));
            bad("at least one key", () -> p.mget());
            bad("pairs", () -> p.mset("x"));
            bad("at least its name", () -> p.command(new byte[0][]));
            assertEquals(0, p.size(), "a refused command is not queued");
            p.set("ok", "1");
            bad("key must not be null", () -> p.set(null, "v"));
            assertEquals(java.util.List.of("OK"), p.sync());
        }
    }
}
