package io.slotlane;

import io.slotlane.internal.sl_tls_options;
import io.slotlane.internal.slotlane;
import io.slotlane.internal.slotlaneConstants;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.Collections;
import java.util.Objects;

/**
 * TLS for a client ({@link ClientOptions.Builder#tls}), mapped to the core's
 * {@code sl_tls_options} (OpenSSL 3): the trusted CAs (a PEM file, a hashed directory, PEM
 * text, a {@link KeyStore} of trusted certificates, the system's store), a client certificate
 * and key for mutual TLS (PEM files, PEM text or a {@link KeyStore} entry), the verification
 * ({@link Verify#FULL}: chain and host name, the default), the server name sent as SNI and
 * verified instead of the address, and how nodes learned from the cluster's topology are
 * verified ({@link NodeNames}). A {@code rediss://} URL without {@code tls(...)} uses the
 * defaults: the system's CAs, full verification.
 *
 * <p>The core's configuration is made once, on the first client that uses these options
 * (the files are read then: a bad file fails that client's creation with a
 * {@link TlsException}), and shared by every client made with them. Immutable; thread-safe.
 *
 * <pre>{@code
 * ClientOptions o = ClientOptions.builder().uri("rediss://cache.example:6380")
 *         .tls(TlsOptions.builder().caFile(Path.of("ca.crt")).clientCert(Path.of("client.crt"), Path.of("client.key")).build())
 *         .build();
 * }</pre>
 */
public final class TlsOptions {
    private static final Cleaner CLEANER = Cleaner.create();

    /** What is verified of the server's certificate (the core's {@code sl_tls_verify}). */
    public enum Verify {
        /** The chain to a trusted CA and the host name (or {@link Builder#serverName}) (default). */
        FULL(0),
        /** The chain only: any certificate of a trusted CA, for any name. */
        CHAIN(1),
        /** Nothing: whoever is on the path can read and change the traffic. For tests only. */
        NONE_INSECURE(2);

        final int code;

        Verify(int code) {
            this.code = code;
        }
    }

    /** The name a node learned from the topology (not a seed) is verified against ({@code sl_tls_node_names}). */
    public enum NodeNames {
        /** The address the cluster announced it by, IP or host name (default). */
        ADDRESS(0),
        /** The host name the node announces (Redis 7 cluster-announce-hostname), else its address. */
        HOSTNAME(1),
        /** {@link Builder#serverName} for every node: one certificate for all. */
        SERVER_NAME(2),
        /** The chain only (seeds are still verified by name). */
        CHAIN_ONLY(3);

        final int code;

        NodeNames(int code) {
            this.code = code;
        }
    }

    final String caFile, caDir, caPem, certFile, keyFile, certPem, keyPem, serverName;
    final int systemRoots;
    final Verify verify;
    final NodeNames nodeNames;
    private long handle; // the core's sl_tls, made on first use; guarded by this

    private TlsOptions(Builder b) {
        caFile = b.caFile;
        caDir = b.caDir;
        caPem = b.caPem;
        certFile = b.certFile;
        keyFile = b.keyFile;
        certPem = b.certPem;
        keyPem = b.keyPem;
        serverName = b.serverName;
        systemRoots = b.systemRoots;
        verify = b.verify;
        nodeNames = b.nodeNames;
    }

    /**
     * @return a builder with the defaults: the system's CAs, full verification
     */
    public static Builder builder() {
        return new Builder();
    }

    /** The core's configuration (sl_tls), made on the first call; freed when these options are unreachable. */
    synchronized long handle() {
        if (handle != 0) return handle;
        sl_tls_options o = new sl_tls_options();
        ByteBuffer out = ByteBuffer.allocateDirect(8 + 512).order(ByteOrder.nativeOrder());
        long oa = slotlane.sl_java_buffer_address(out);
        try {
            int rc = slotlane.sl_tls_options_init(o, slotlaneConstants.SL_TLS_OPTIONS_VERSION);
            if (rc != 0) throw new IllegalStateException("sl_tls_options_init: " + slotlane.sl_strerror(rc));
            if (caFile != null) o.setCa_file(caFile);
            if (caDir != null) o.setCa_dir(caDir);
            if (caPem != null) o.setCa_pem(caPem);
            if (certFile != null) o.setCert_file(certFile);
            if (keyFile != null) o.setKey_file(keyFile);
            if (certPem != null) o.setCert_pem(certPem);
            if (keyPem != null) o.setKey_pem(keyPem);
            if (serverName != null) o.setServer_name(serverName);
            o.setSystem_roots(systemRoots);
            o.setVerify(verify.code);
            o.setNode_names(nodeNames.code);
            out.putLong(0, 0);
            out.put(8, (byte) 0);
            rc = slotlane.sl_tls_new(oa, o, oa + 8, 512);
            if (rc != 0) {
                byte[] m = new byte[512];
                out.get(8, m);
                int n = 0;
                while (n < m.length && m[n] != 0) n++;
                String msg = new String(m, 0, n, StandardCharsets.UTF_8);
                throw Errors.ofCode(rc, msg.isEmpty() ? slotlane.sl_strerror(rc) : msg);
            }
            long h = out.getLong(0);
            handle = h;
            CLEANER.register(this, () -> slotlane.sl_tls_free(h)); // the clients keep their own references
            return h;
        } finally {
            o.delete();
        }
    }

    @Override
    public String toString() {
        return "TlsOptions{verify=" + verify + (caFile != null ? ", caFile=" + caFile : "") + (caDir != null ? ", caDir=" + caDir : "")
                + (caPem != null ? ", caPem" : "") + (certFile != null || certPem != null ? ", client certificate" : "")
                + (serverName != null ? ", serverName=" + serverName : "") + ", nodeNames=" + nodeNames + "}";
    }

    /** Builds {@link TlsOptions}. */
    public static final class Builder {
        private String caFile, caDir, caPem, certFile, keyFile, certPem, keyPem, serverName;
        private int systemRoots = -1;
        private Verify verify = Verify.FULL;
        private NodeNames nodeNames = NodeNames.ADDRESS;

        private Builder() {}

        /**
         * @param file a PEM file of trusted CA certificates
         * @return this builder
         */
        public Builder caFile(Path file) {
            this.caFile = path(file, "caFile");
            return this;
        }

        /**
         * @param dir a directory of CA certificates under their subject hashes ({@code c_rehash}, {@code openssl rehash})
         * @return this builder
         */
        public Builder caDir(Path dir) {
            this.caDir = path(dir, "caDir");
            return this;
        }

        /**
         * @param pem trusted CA certificates as PEM text
         * @return this builder
         */
        public Builder caPem(String pem) {
            this.caPem = text(pem, "caPem");
            return this;
        }

        /**
         * Trusts every certificate entry of a key store (a Java trust store, e.g. loaded from
         * a PKCS#12 or JKS file), handed to the core as PEM.
         *
         * @param trustStore the store
         * @return this builder
         * @throws IllegalArgumentException when the store has no certificate or cannot be read
         */
        public Builder trustStore(KeyStore trustStore) {
            Objects.requireNonNull(trustStore, "trustStore");
            StringBuilder pem = new StringBuilder();
            try {
                for (String alias : Collections.list(trustStore.aliases())) {
                    Certificate c = trustStore.getCertificate(alias);
                    if (c != null) pem.append(pem("CERTIFICATE", c.getEncoded()));
                }
            } catch (GeneralSecurityException e) {
                throw new IllegalArgumentException("trustStore: " + e.getMessage(), e);
            }
            if (pem.length() == 0) throw new IllegalArgumentException("trustStore: no certificate in the store");
            this.caPem = (caPem == null ? "" : caPem) + pem;
            return this;
        }

        /**
         * @param trust also trust the system's CA store (default: only when no CA is given)
         * @return this builder
         */
        public Builder systemRoots(boolean trust) {
            this.systemRoots = trust ? 1 : 0;
            return this;
        }

        /**
         * A client certificate for mutual TLS.
         *
         * @param certFile PEM: the client's certificate, then its chain
         * @param keyFile  PEM: its private key (unencrypted)
         * @return this builder
         */
        public Builder clientCert(Path certFile, Path keyFile) {
            this.certFile = path(certFile, "certFile");
            this.keyFile = path(keyFile, "keyFile");
            this.certPem = this.keyPem = null;
            return this;
        }

        /**
         * @param certPem the client's certificate chain as PEM text
         * @param keyPem  its private key as PEM text (unencrypted)
         * @return this builder
         */
        public Builder clientCertPem(String certPem, String keyPem) {
            this.certPem = text(certPem, "certPem");
            this.keyPem = text(keyPem, "keyPem");
            this.certFile = this.keyFile = null;
            return this;
        }

        /**
         * The client certificate and key of a key store entry (a PKCS#12 or JKS key store),
         * handed to the core as PEM (the key as PKCS#8).
         *
         * @param keyStore the store
         * @param alias    the entry's alias; null: the store's first key entry
         * @param password the key's password (may be null for none)
         * @return this builder
         * @throws IllegalArgumentException when the entry is missing or its key cannot be exported
         */
        public Builder clientKeyStore(KeyStore keyStore, String alias, char[] password) {
            Objects.requireNonNull(keyStore, "keyStore");
            try {
                String a = alias;
                if (a == null) {
                    for (String x : Collections.list(keyStore.aliases())) {
                        if (keyStore.isKeyEntry(x)) {
                            a = x;
                            break;
                        }
                    }
                }
                if (a == null) throw new IllegalArgumentException("clientKeyStore: no key entry in the store");
                Key k = keyStore.getKey(a, password);
                Certificate[] chain = keyStore.getCertificateChain(a);
                if (!(k instanceof PrivateKey) || k.getEncoded() == null || chain == null || chain.length == 0)
                    throw new IllegalArgumentException("clientKeyStore: " + a + " is not a private key entry with a certificate chain");
                StringBuilder cert = new StringBuilder();
                for (Certificate c : chain) cert.append(pem("CERTIFICATE", c.getEncoded()));
                return clientCertPem(cert.toString(), pem("PRIVATE KEY", k.getEncoded()));
            } catch (GeneralSecurityException e) {
                throw new IllegalArgumentException("clientKeyStore: " + e.getMessage(), e);
            }
        }

        /**
         * @param verify what is verified of the server's certificate (default {@link Verify#FULL})
         * @return this builder
         */
        public Builder verify(Verify verify) {
            this.verify = Objects.requireNonNull(verify, "verify");
            return this;
        }

        /**
         * @param name the name sent as SNI and verified against instead of the seeds' address
         * @return this builder
         */
        public Builder serverName(String name) {
            this.serverName = text(name, "serverName");
            return this;
        }

        /**
         * @param names how the nodes learned from the topology are verified (default {@link NodeNames#ADDRESS})
         * @return this builder
         */
        public Builder nodeNames(NodeNames names) {
            this.nodeNames = Objects.requireNonNull(names, "nodeNames");
            return this;
        }

        /**
         * @return the options
         * @throws IllegalArgumentException for contradictory options
         */
        public TlsOptions build() {
            if (nodeNames == NodeNames.SERVER_NAME && serverName == null)
                throw new IllegalArgumentException("TlsOptions: nodeNames(SERVER_NAME) needs serverName(...)");
            return new TlsOptions(this);
        }

        private static String path(Path p, String what) {
            return text(Objects.requireNonNull(p, what).toString(), what);
        }

        private static String text(String s, String what) {
            Objects.requireNonNull(s, what);
            if (s.isEmpty()) throw new IllegalArgumentException(what + " must not be empty");
            if (s.indexOf('\0') >= 0) throw new IllegalArgumentException(what + " must not contain NUL characters");
            return s;
        }

        private static String pem(String type, byte[] der) {
            return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                    + "\n-----END " + type + "-----\n";
        }
    }
}
