package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * TLS (ClientOptions.tls, TlsOptions, rediss://) against Debian's redis-server with tls-port
 * only (ci/redis-plain.sh with ci/redis-tls.sh) and a 3-primary tls-cluster Redis Cluster,
 * with certificates made by openssl now (ci/tls-certs.sh): full verification from a CA file,
 * a CA directory, PEM text and a KeyStore; mutual TLS from files and from a PKCS#12-style
 * KeyStore entry; a wrong CA, an expired certificate, a host-name mismatch, a plaintext port
 * on a TLS URL, bad files — each a TlsException saying what failed; the async client over TLS.
 */
class TlsTest {
    static final int TLS = TestServers.BASE + 60, MTLS = TestServers.BASE + 61, EXPIRED = TestServers.BASE + 62,
            CLUSTER = TestServers.BASE + 64; // the cluster: +64..+69
    static Path certs;
    static final List<Runnable> stops = new ArrayList<>();

    @BeforeAll
    static void start() {
        certs = TestServers.WORK.resolve("tls-certs");
        TestServers.script("tls-certs.sh", certs.toString());
        plain("tls", TLS, Map.of());
        plain("mtls", MTLS, Map.of("SL_REDIS_TLS_AUTH_CLIENTS", "yes"));
        plain("tls-expired", EXPIRED, Map.of("SL_REDIS_TLS_CERT", "expired"));
        Map<String, String> env = Map.of("SL_REDIS_TLS_DIR", certs.toString());
        String dir = TestServers.WORK.resolve("tls-cluster").toString();
        TestServers.script(env, "redis-cluster.sh", "start", dir, Integer.toString(CLUSTER), "3");
        stops.add(() -> TestServers.script(env, "redis-cluster.sh", "stop", dir));
    }

    static void plain(String name, int port, Map<String, String> extra) {
        Map<String, String> env = new java.util.HashMap<>(extra);
        env.put("SL_REDIS_TLS_DIR", certs.toString());
        String dir = TestServers.WORK.resolve(name).toString();
        TestServers.script(env, "redis-plain.sh", "start", dir, Integer.toString(port));
        stops.add(() -> TestServers.script(env, "redis-plain.sh", "stop", dir));
    }

    @AfterAll
    static void stop() {
        for (int i = stops.size() - 1; i >= 0; i--) {
            try {
                stops.get(i).run();
            } catch (RuntimeException e) {
                System.err.println("stopping a TLS server: " + e);
            }
        }
    }

    static String url(int port) {
        return "rediss://127.0.0.1:" + port;
    }

    static Path cert(String name) {
        return certs.resolve(name);
    }

    static SlotlaneClient client(String url, TlsOptions tls) {
        return SlotlaneClient.create(ClientOptions.builder().uri(url).tls(tls).connectTimeout(java.time.Duration.ofSeconds(2)).build());
    }

    static TlsOptions.Builder ca() {
        return TlsOptions.builder().caFile(cert("ca.crt"));
    }

    static String refused(String contains, Executable e) {
        TlsException t = assertThrows(TlsException.class, e);
        assertTrue(t.getMessage().contains(contains), t.getMessage());
        return t.getMessage();
    }

    @Test
    void fullVerificationFromEveryFormOfCa() throws Exception {
        try (SlotlaneClient c = client(url(TLS), ca().build())) {
            assertTrue(c.set("tls:k", "v"));
            assertEquals("v", c.get("tls:k"));
            try (Pipeline p = c.pipeline()) { // replies spanning many TLS records
                for (int i = 0; i < 2000; i++) {
                    p.set("tls:" + i, "x".repeat(100));
                    p.get("tls:" + i);
                }
                List<Object> r = p.sync();
                for (int i = 0; i < 2000; i++) assertEquals("x".repeat(100), r.get(2 * i + 1));
            }
            c.set("tls:big", "y".repeat(300_000));
            assertEquals("y".repeat(300_000), c.get("tls:big"));
        }
        String pem = Files.readString(cert("ca.crt"));
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(cert("ca.crt"))) {
            trust.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        for (TlsOptions o : new TlsOptions[] {TlsOptions.builder().caPem(pem).build(), TlsOptions.builder().caDir(cert("cadir")).build(),
                TlsOptions.builder().trustStore(trust).build()}) {
            try (SlotlaneClient c = client(url(TLS), o)) {
                assertEquals("PONG", c.ping(), o.toString());
            }
        }
        // the plain URL with tls(...) also speaks TLS; one TlsOptions serves many clients
        TlsOptions shared = ca().build();
        try (SlotlaneClient a = client("redis://127.0.0.1:" + TLS, shared); SlotlaneClient b = client(url(TLS), shared)) {
            assertEquals("PONG", a.ping());
            assertEquals("PONG", b.ping());
        }
    }

    @Test
    void verificationFailuresAreTlsExceptions() {
        refused("certificate verify failed", () -> client(url(TLS), TlsOptions.builder().caFile(cert("other-ca.crt")).build()));
        refused("certificate verify failed: certificate has expired", () -> client(url(EXPIRED), ca().build()));
        refused("host name mismatch: expected wrong.example", () -> client(url(TLS), ca().serverName("wrong.example").build()));
        // the system's CAs do not know the test CA (rediss:// without tls(...): the defaults)
        assertThrows(TlsException.class, () -> SlotlaneClient.create(ClientOptions.builder().uri(url(TLS)).build()));
        // a plaintext port on a TLS URL (the bundled server speaks no TLS)
        refused("TLS", () -> client(TestServers.bundledPlain().replace("redis://", "rediss://"), ca().build()));
        refused("cannot load the CA file /nonexistent", () -> client(url(TLS), TlsOptions.builder().caFile(Path.of("/nonexistent/ca.pem")).build()));
        refused("client key", () -> client(url(TLS), ca().clientCert(cert("client.crt"), cert("server.key")).build()));
        assertThrows(IllegalArgumentException.class, () -> TlsOptions.builder().nodeNames(TlsOptions.NodeNames.SERVER_NAME).build());
    }

    @Test
    void weakerVerificationWhenAskedFor() {
        try (SlotlaneClient c = client(url(TLS), ca().serverName("wrong.example").verify(TlsOptions.Verify.CHAIN).build())) {
            assertEquals("PONG", c.ping());
        }
        try (SlotlaneClient c = client(url(TLS), TlsOptions.builder().verify(TlsOptions.Verify.NONE_INSECURE).build())) {
            assertEquals("PONG", c.ping());
        }
    }

    @Test
    void mutualTlsFromFilesAndFromAKeyStore() throws Exception {
        refused("", () -> client(url(MTLS), ca().build())); // no client certificate: refused
        try (SlotlaneClient c = client(url(MTLS), ca().clientCert(cert("client.crt"), cert("client.key")).build())) {
            assertEquals("PONG", c.ping());
        }
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        Certificate crt;
        try (InputStream in = Files.newInputStream(cert("client.crt"))) {
            crt = CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
        PrivateKey key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(pkcs8(cert("client.key"))));
        ks.setKeyEntry("client", key, "pw".toCharArray(), new Certificate[] {crt});
        try (SlotlaneClient c = client(url(MTLS), ca().clientKeyStore(ks, null, "pw".toCharArray()).build())) {
            assertEquals("PONG", c.ping());
        }
    }

    /** The DER of a PEM private key: PKCS#8 as is ("PRIVATE KEY"), else converted by openssl. */
    static byte[] pkcs8(Path pem) throws Exception {
        String text = Files.readString(pem);
        if (!text.contains("BEGIN PRIVATE KEY")) {
            Path out = TestServers.WORK.resolve("client.pk8");
            Process p = new ProcessBuilder("openssl", "pkcs8", "-topk8", "-nocrypt", "-in", pem.toString(), "-out", out.toString())
                    .redirectErrorStream(true).start();
            assertEquals(0, p.waitFor());
            text = Files.readString(out);
        }
        String b64 = text.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        return Base64.getDecoder().decode(b64);
    }

    @Test
    void aTlsClusterOverEverySlotAndTheAsyncClient() {
        TlsOptions o = ca().clientCert(cert("client.crt"), cert("client.key")).build();
        try (SlotlaneClient c = client(url(CLUSTER), o)) {
            assertEquals(Mode.CLUSTER, c.mode());
            try (Pipeline p = c.pipeline()) {
                for (int i = 0; i < 4096; i++) p.set("k:" + i, Integer.toString(i));
                for (int i = 0; i < 4096; i++) p.get("k:" + i);
                List<Object> r = p.sync();
                for (int i = 0; i < 4096; i++) assertEquals(Integer.toString(i), r.get(4096 + i));
            }
            assertEquals(3, ClusterNode.list(c).stream().filter(ClusterNode::isPrimary).count()); // every primary reached over TLS
            AsyncClient a = c.async();
            assertEquals("7", a.get("k:7").join());
            AsyncPipeline ap = a.pipeline();
            for (int i = 0; i < 512; i++) ap.get("k:" + i);
            List<Object> r = ap.execute().join();
            for (int i = 0; i < 512; i++) assertEquals(Integer.toString(i), r.get(i));
        }
    }
}
