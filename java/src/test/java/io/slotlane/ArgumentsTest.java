package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
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
        // the core parses the URL and refuses what it cannot parse: errors.json's ArgumentError
        assertEquals(ErrorKind.ARGUMENT, assertThrows(ArgumentException.class,
                () -> SlotlaneClient.create(ClientOptions.builder().uri("redis://127.0.0.1:notaport").build())).kind());
        // rediss:// to a port without TLS (the bundled server): the handshake fails, saying so
        TlsException tls = assertThrows(TlsException.class,
                () -> SlotlaneClient.create(ClientOptions.builder().uri(TestServers.bundledCluster().replace("redis://", "rediss://")).build()));
        assertTrue(tls.getMessage().contains("does not speak TLS"), tls.getMessage());
        bad("maxInflight", () -> ClientOptions.builder().maxInflight(-1, 0));
        bad("serverName must not be empty", () -> TlsOptions.builder().serverName(""));
        bad("NUL", () -> TlsOptions.builder().caPem("x\0y"));
        bad("needs serverName", () -> TlsOptions.builder().nodeNames(TlsOptions.NodeNames.SERVER_NAME).build());
        assertThrows(NullPointerException.class, () -> ClientOptions.builder().executor(null));
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
    void routes() {
        bad("slot", () -> Route.slot(16384));
        bad("slot", () -> Route.slot(-1));
        bad("host:port", () -> Route.node("nohostport"));
        bad("host:port", () -> Route.node("host:"));
        assertThrows(NullPointerException.class, () -> Route.node(null));
    }

    @Test
    void commands() {
        bad("key must not be null", () -> c.get((String) null));
        bad("value must not be null", () -> c.set("k", null));
        bad("a Boolean is not a key, value or number", () -> c.set("k", true));
        bad("must be a String, byte[] or number", () -> c.set("k", new Object()));
        bad("keys needs at least one element", () -> c.mget(new String[0]));
        bad("keys needs at least one element", () -> c.delete());
        bad("keys needs at least one element", () -> c.exists());
        bad("keys must not be null", () -> c.delete("a", null));
        bad("key_value needs at least one element", () -> c.mset(List.of()));
        bad("key_value must not be null", () -> c.mset(Arrays.asList(Pair.of("a", "1"), null)));
        bad("value must not be null", () -> c.mset(List.of(Pair.of("k", null))));
        bad("key must be a String or byte[]", () -> c.mset(List.of(Pair.of(1, "v"))));
        bad("elements needs at least one element", () -> c.rpush("l"));
        bad("members needs at least one element", () -> c.sadd("s"));
        bad("fields needs at least one element", () -> c.hdel("h"));
        bad("field_value needs at least one element", () -> c.hset("h", List.of()));
        bad("field must not be null", () -> c.hget("h", null));
        bad("NaN", () -> c.zadd("z", List.of(Pair.of(Double.NaN, "m"))));
        bad("score must be a number", () -> c.zadd("z", List.of(Pair.of("1", "m"))));
        bad("score: a Boolean", () -> c.zadd("z", List.of(Pair.of(true, "m"))));
        bad("member must not be null", () -> c.zadd("z", List.of(Pair.of(1, null))));
        bad("at least its name", () -> c.command(new String[0]));
        bad("argument must not be null", () -> c.command("GET", null));
        bad("route must not be null", () -> c.command((Route) null, "PING"));
        bad("key must not be null", () -> SlotlaneClient.keySlot((String) null));
        try (Pipeline p = c.pipeline()) {
            bad("key must not be null", () -> p.get((String) null));
            bad("keys needs at least one element", () -> p.mget());
            bad("value: a Boolean", () -> p.set("k", false));
            // refused in the middle of its encoding: nothing of it stays queued
            bad("member must not be null", () -> p.zadd("z", List.of(Pair.of(1, "a"), Pair.of(2, null))));
            bad("at least its name", () -> p.command(new byte[0][]));
            assertEquals(0, p.size(), "a refused command is not queued");
            p.set("ok", "1");
            bad("key must not be null", () -> p.set(null, "v"));
            assertEquals(java.util.List.of(true), p.sync());
        }
    }
}
