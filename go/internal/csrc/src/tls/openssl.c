/* tls/openssl: TLS with OpenSSL 3 (the tls part of build.cfg; tls.h is its interface).
 * A configuration is one SSL_CTX, loaded once and shared (OpenSSL makes SSL objects from
 * one SSL_CTX on any threads); each connection is an SSL over the node's non-blocking
 * socket through our own BIO, so writes use send(MSG_NOSIGNAL) (OpenSSL's socket BIO
 * write()s, and a server that went away would kill the process with SIGPIPE). */
#include "tls.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct sl_tls {
    atomic_int refs;
    SSL_CTX *ctx;
    sl_tls_verify verify;
    sl_tls_node_names node_names;
    char *server_name;
};

struct sl__tls_conn {
    SSL *ssl;
    int fd;
    const char *expected;        /* the name verified, for the mismatch message */
    char expected_buf[256];
    char names[256];             /* the names the peer's certificate holds (on a mismatch) */
    char err[256];
};

int sl_tls_supported(void) { return 1; }

int sl_tls_options_init(sl_tls_options *opts, unsigned int version)
{
    if (!opts || version == 0 || version > SL_TLS_OPTIONS_VERSION) return SL_EINVAL;
    sl_tls_options d = SL_TLS_OPTIONS_INIT;
    *opts = d;
    return 0;
}

/* ------------------------------------------------------------ errors */

/* The reason of OpenSSL's oldest queued error ("wrong version number"), or fallback. */
static const char *ossl_reason(char *buf, size_t cap, const char *fallback)
{
    unsigned long e = ERR_get_error();
    unsigned long last = e;
    while (last && (e = ERR_get_error()) != 0) {
    }
    if (!last) {
        snprintf(buf, cap, "%s", fallback);
        return buf;
    }
    const char *r = ERR_reason_error_string(last);
    if (r) snprintf(buf, cap, "%s", r);
    else ERR_error_string_n(last, buf, cap);
    return buf;
}

static int fail(char *err, size_t cap, int code, const char *fmt, const char *a, const char *b)
{
    if (err && cap) snprintf(err, cap, fmt, a, b);
    ERR_clear_error();
    return code;
}

/* ------------------------------------------------------------ the BIO: send/recv on the fd */

static int bio_write(BIO *b, const char *buf, int len)
{
    int fd = (int)BIO_get_fd(b, NULL);
    ssize_t w = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
    return (int)w;
}

static int bio_read(BIO *b, char *buf, int len)
{
    int fd = (int)BIO_get_fd(b, NULL);
    ssize_t r = recv(fd, buf, (size_t)len, 0);
    BIO_clear_retry_flags(b);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
    return (int)r;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    switch (cmd) {
    case BIO_C_SET_FD:
        BIO_set_data(b, (void *)(intptr_t)*(int *)ptr);
        BIO_set_init(b, 1);
        (void)num;
        return 1;
    case BIO_C_GET_FD:
        if (ptr) *(int *)ptr = (int)(intptr_t)BIO_get_data(b);
        return (long)(intptr_t)BIO_get_data(b);
    case BIO_CTRL_FLUSH:
        return 1;
    default:
        return 0;
    }
}

/* One BIO method for the process, made on first use (OpenSSL's own once-guard). */
static BIO_METHOD *bio_method;
static CRYPTO_ONCE bio_once = CRYPTO_ONCE_STATIC_INIT;

static void bio_method_make(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "slotlane socket");
    if (!m) return;
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_ctrl(m, bio_ctrl);
    bio_method = m;
}

/* ------------------------------------------------------------ configuration */

static int verify_cb(int ok, X509_STORE_CTX *store);

/* Loads PEM certificates from bytes: the first into *first (when first is not NULL), every
 * other one handed to add(). Returns how many were read. */
static int pem_certs(const char *pem, size_t len, X509 **first, int (*add)(void *, X509 *), void *arg)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio) return -1;
    int n = 0;
    for (;;) {
        X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (!x) break;
        if (n == 0 && first) {
            *first = x;
        } else if (!add(arg, x)) {
            X509_free(x);
            n = -1;
            break;
        }
        n++;
    }
    ERR_clear_error(); /* the end of the bytes reads as "no start line" */
    BIO_free(bio);
    return n;
}

static int add_trusted(void *store, X509 *x)
{
    int ok = X509_STORE_add_cert(store, x);
    X509_free(x);
    return ok;
}

static int add_chain(void *ctx, X509 *x)
{
    return (int)SSL_CTX_add0_chain_cert(ctx, x); /* takes x */
}

static size_t len_of(const char *s, size_t len) { return len ? len : strlen(s); }

int sl_tls_new(sl_tls **out, const sl_tls_options *opts, char *err, size_t cap)
{
    char why[160];
    if (err && cap) err[0] = 0;
    if (!out) return fail(err, cap, SL_EINVAL, "out is NULL%s%s", "", "");
    *out = NULL;
    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    if (opts) {
        if (opts->version == 0 || opts->version > SL_TLS_OPTIONS_VERSION || opts->size < sizeof(sl_tls_options))
            return fail(err, cap, SL_EINVAL, "TLS options version or size not supported%s%s", "", "");
        memcpy(&o, opts, sizeof o);
    }
    if (o.verify != SL_TLS_VERIFY_FULL && o.verify != SL_TLS_VERIFY_CHAIN && o.verify != SL_TLS_VERIFY_NONE_INSECURE)
        return fail(err, cap, SL_EINVAL, "verify must be SL_TLS_VERIFY_FULL, _CHAIN or _NONE_INSECURE%s%s", "", "");
    if ((unsigned)o.node_names > SL_TLS_NODES_CHAIN_ONLY)
        return fail(err, cap, SL_EINVAL, "node_names must be one of SL_TLS_NODES_*%s%s", "", "");
    if (o.system_roots < -1 || o.system_roots > 1)
        return fail(err, cap, SL_EINVAL, "system_roots must be -1, 0 or 1%s%s", "", "");
    if ((o.cert_file || o.cert_pem) != (o.key_file || o.key_pem))
        return fail(err, cap, SL_EINVAL, "a client certificate needs its key, and a key its certificate%s%s", "", "");
    if ((o.cert_file && o.cert_pem) || (o.key_file && o.key_pem))
        return fail(err, cap, SL_EINVAL, "give the client certificate and key as a file or as PEM bytes, not both%s%s", "", "");
    if (o.server_name && (!o.server_name[0] || strlen(o.server_name) > 253))
        return fail(err, cap, SL_EINVAL, "server_name must be 1 to 253 bytes%s%s", "", "");
    CRYPTO_THREAD_run_once(&bio_once, bio_method_make);
    if (!bio_method) return fail(err, cap, SL_ENOMEM, "out of memory%s%s", "", "");

    sl_tls *t = calloc(1, sizeof *t);
    if (!t) return fail(err, cap, SL_ENOMEM, "out of memory%s%s", "", "");
    atomic_init(&t->refs, 1);
    t->verify = o.verify;
    t->node_names = o.node_names;
    int rc = SL_ETLS;
    if (o.server_name && !(t->server_name = strdup(o.server_name))) {
        rc = fail(err, cap, SL_ENOMEM, "out of memory%s%s", "", "");
        goto bad;
    }
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) {
        fail(err, cap, SL_ETLS, "cannot make an OpenSSL context: %s%s", ossl_reason(why, sizeof why, "unknown"), "");
        goto bad;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF); /* a close without close_notify is a close */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read ahead: one recv() takes a whole record (or several) instead of its 5-byte header
     * and then its body: one syscall per reply burst, as without TLS. What it buffers beyond
     * the record is reported by sl__tls_pending (SSL_has_pending). */
    SSL_CTX_set_read_ahead(t->ctx, 1);
    SSL_CTX_set_verify(t->ctx, o.verify == SL_TLS_VERIFY_NONE_INSECURE ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, verify_cb);

    int have_ca = 0;
    if (o.ca_file) {
        if (SSL_CTX_load_verify_file(t->ctx, o.ca_file) != 1) {
            fail(err, cap, SL_ETLS, "cannot load the CA file %s: %s", o.ca_file, ossl_reason(why, sizeof why, "unreadable"));
            goto bad;
        }
        have_ca = 1;
    }
    if (o.ca_dir) {
        if (SSL_CTX_load_verify_dir(t->ctx, o.ca_dir) != 1) {
            fail(err, cap, SL_ETLS, "cannot use the CA directory %s: %s", o.ca_dir, ossl_reason(why, sizeof why, "unreadable"));
            goto bad;
        }
        have_ca = 1;
    }
    if (o.ca_pem) {
        int n = pem_certs(o.ca_pem, len_of(o.ca_pem, o.ca_pem_len), NULL, add_trusted, SSL_CTX_get_cert_store(t->ctx));
        if (n <= 0) {
            fail(err, cap, SL_ETLS, "the CA PEM bytes hold no certificate%s%s", "", "");
            goto bad;
        }
        have_ca = 1;
    }
    if (o.system_roots == 1 || (o.system_roots == -1 && !have_ca)) {
        if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
            fail(err, cap, SL_ETLS, "cannot use the system's CA store: %s%s", ossl_reason(why, sizeof why, "unreadable"), "");
            goto bad;
        }
    }
    if (o.cert_file) {
        if (SSL_CTX_use_certificate_chain_file(t->ctx, o.cert_file) != 1) {
            fail(err, cap, SL_ETLS, "cannot load the client certificate %s: %s", o.cert_file,
                 ossl_reason(why, sizeof why, "unreadable"));
            goto bad;
        }
    } else if (o.cert_pem) {
        X509 *leaf = NULL;
        int n = pem_certs(o.cert_pem, len_of(o.cert_pem, o.cert_pem_len), &leaf, add_chain, t->ctx);
        int ok = n > 0 && SSL_CTX_use_certificate(t->ctx, leaf) == 1;
        X509_free(leaf);
        if (!ok) {
            fail(err, cap, SL_ETLS, "the client certificate PEM bytes hold no usable certificate%s%s", "", "");
            goto bad;
        }
    }
    if (o.key_file) {
        if (SSL_CTX_use_PrivateKey_file(t->ctx, o.key_file, SSL_FILETYPE_PEM) != 1) {
            fail(err, cap, SL_ETLS, "cannot load the client key %s: %s", o.key_file, ossl_reason(why, sizeof why, "unreadable"));
            goto bad;
        }
    } else if (o.key_pem) {
        BIO *bio = BIO_new_mem_buf(o.key_pem, (int)len_of(o.key_pem, o.key_pem_len));
        EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
        int ok = k && SSL_CTX_use_PrivateKey(t->ctx, k) == 1;
        EVP_PKEY_free(k);
        BIO_free(bio);
        if (!ok) {
            fail(err, cap, SL_ETLS, "the client key PEM bytes hold no usable (unencrypted) private key%s%s", "", "");
            goto bad;
        }
    }
    if ((o.key_file || o.key_pem) && SSL_CTX_check_private_key(t->ctx) != 1) {
        fail(err, cap, SL_ETLS, "the client key does not match the client certificate%s%s", "", "");
        goto bad;
    }
    ERR_clear_error();
    *out = t;
    return 0;
bad:
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
    return rc == SL_ETLS ? SL_ETLS : rc;
}

void sl__tls_ref(sl_tls *t)
{
    if (t) atomic_fetch_add(&t->refs, 1);
}

void sl_tls_free(sl_tls *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

sl_tls_verify sl__tls_verify_mode(const sl_tls *t) { return t->verify; }
const char *sl__tls_server_name(const sl_tls *t) { return t->server_name; }
sl_tls_node_names sl__tls_node_names(const sl_tls *t) { return t->node_names; }

/* ------------------------------------------------------------ connections */

static int conn_index = -1;
static CRYPTO_ONCE conn_once = CRYPTO_ONCE_STATIC_INIT;
static void conn_index_make(void) { conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL); }

/* Writes the names a certificate holds (DNS and IP SANs, else its common name). */
static void cert_names(X509 *x, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && o + 1 < cap; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
        char one[64];
        one[0] = 0;
        if (g->type == GEN_DNS) {
            snprintf(one, sizeof one, "%.*s", ASN1_STRING_length(g->d.dNSName),
                     (const char *)ASN1_STRING_get0_data(g->d.dNSName));
        } else if (g->type == GEN_IPADD) {
            int l = ASN1_STRING_length(g->d.iPAddress);
            const unsigned char *p = ASN1_STRING_get0_data(g->d.iPAddress);
            if (l == 4 || l == 16) inet_ntop(l == 4 ? AF_INET : AF_INET6, p, one, sizeof one);
        }
        if (one[0]) o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? ", " : "", one);
    }
    GENERAL_NAMES_free(sans);
    if (!out[0]) {
        char cn[128];
        if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn) > 0)
            snprintf(out, cap, "CN=%s", cn);
        else
            snprintf(out, cap, "no names");
    }
}

/* Keeps the names of a certificate that failed the name check, for the message. */
static int verify_cb(int ok, X509_STORE_CTX *store)
{
    int e = X509_STORE_CTX_get_error(store);
    if (!ok && (e == X509_V_ERR_HOSTNAME_MISMATCH || e == X509_V_ERR_IP_ADDRESS_MISMATCH)) {
        SSL *ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
        sl__tls_conn *tc = ssl ? SSL_get_ex_data(ssl, conn_index) : NULL;
        X509 *leaf = X509_STORE_CTX_get0_cert(store);
        if (tc && leaf) cert_names(leaf, tc->names, sizeof tc->names);
    }
    return ok;
}

static int is_ip(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

int sl__tls_conn_new(sl_tls *t, int fd, const sl__tls_peer *peer, sl__tls_conn **out, char *err, size_t cap)
{
    char why[160];
    *out = NULL;
    CRYPTO_THREAD_run_once(&conn_once, conn_index_make);
    if (conn_index < 0) return fail(err, cap, SL_ENOMEM, "out of memory%s%s", "", "");
    sl__tls_conn *tc = calloc(1, sizeof *tc);
    if (!tc) return fail(err, cap, SL_ENOMEM, "out of memory%s%s", "", "");
    tc->fd = fd;
    tc->ssl = SSL_new(t->ctx);
    BIO *bio = bio_method ? BIO_new(bio_method) : NULL;
    if (!tc->ssl || !bio) {
        BIO_free(bio);
        SSL_free(tc->ssl);
        free(tc);
        return fail(err, cap, SL_ENOMEM, "cannot start TLS: %s%s", ossl_reason(why, sizeof why, "out of memory"), "");
    }
    BIO_set_fd(bio, fd, BIO_NOCLOSE);
    SSL_set_bio(tc->ssl, bio, bio);
    SSL_set_ex_data(tc->ssl, conn_index, tc);
    int ok = 1;
    if (peer->sni && !is_ip(peer->sni)) ok = SSL_set_tlsext_host_name(tc->ssl, peer->sni) == 1;
    if (ok && peer->name && t->verify == SL_TLS_VERIFY_FULL) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(tc->ssl);
        snprintf(tc->expected_buf, sizeof tc->expected_buf, "%s", peer->name);
        tc->expected = tc->expected_buf;
        if (is_ip(peer->name)) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(vp, peer->name) == 1;
        } else {
            X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = X509_VERIFY_PARAM_set1_host(vp, peer->name, 0) == 1;
        }
    }
    if (!ok) {
        int rc = fail(err, cap, SL_ETLS, "cannot verify against the name %s: %s", peer->name ? peer->name : peer->sni,
                      ossl_reason(why, sizeof why, "bad name"));
        sl__tls_conn_free(tc);
        return rc;
    }
    SSL_set_connect_state(tc->ssl);
    *out = tc;
    return 0;
}

/* What a failed handshake's verification says, or "" when it passed. */
static int verify_failure(sl__tls_conn *tc, char *err, size_t cap)
{
    long v = SSL_get_verify_result(tc->ssl);
    if (v == X509_V_OK) return 0;
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
        snprintf(err, cap, "host name mismatch: expected %s, certificate names %s", tc->expected ? tc->expected : "?",
                 tc->names[0] ? tc->names : "no names");
    else
        snprintf(err, cap, "certificate verify failed: %s", X509_verify_cert_error_string(v));
    return 1;
}

int sl__tls_handshake(sl__tls_conn *tc, char *err, size_t cap)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(tc->ssl);
    if (r == 1) return 0;
    int e = SSL_get_error(tc->ssl, r);
    if (e == SSL_ERROR_WANT_READ) return SL__TLS_WANT_READ;
    if (e == SSL_ERROR_WANT_WRITE) return SL__TLS_WANT_WRITE;
    char why[160];
    if (verify_failure(tc, err, cap)) {
        ERR_clear_error();
    } else if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0)) {
        snprintf(err, cap, "the server closed the connection during the TLS handshake (not a TLS port?)");
    } else if (e == SSL_ERROR_SYSCALL) {
        snprintf(err, cap, "TLS handshake: %s", strerror(errno));
    } else {
        ossl_reason(why, sizeof why, "failed");
        /* A plaintext server answers the ClientHello with RESP ("-ERR ..."): no TLS record. */
        int plain = strstr(why, "wrong version number") || strstr(why, "packet length too long") ||
                    strstr(why, "record layer failure");
        snprintf(err, cap, "TLS handshake failed: %s%s", why, plain ? " (the server does not speak TLS on this port?)" : "");
    }
    return SL_ETLS;
}

static ssize_t io_result(sl__tls_conn *tc, int r, int reading)
{
    int e = SSL_get_error(tc->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN && reading) return 0;
    char why[160];
    if (e == SSL_ERROR_SYSCALL) {
        int saved = errno ? errno : EPIPE;
        if (!errno && reading) return 0; /* EOF */
        snprintf(tc->err, sizeof tc->err, "%s", strerror(saved));
        ERR_clear_error();
        errno = saved;
        return -1;
    }
    /* A TLS alert (the server refused our certificate: "tlsv13 alert certificate required")
     * or a broken record. */
    snprintf(tc->err, sizeof tc->err, "TLS: %s", ossl_reason(why, sizeof why, "failed"));
    errno = EPROTO;
    return -1;
}

ssize_t sl__tls_read(sl__tls_conn *tc, void *buf, size_t len)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(tc->ssl, buf, len > 0x40000000 ? 0x40000000 : (int)len);
    if (r > 0) return r;
    return io_result(tc, r, 1);
}

ssize_t sl__tls_write(sl__tls_conn *tc, const void *buf, size_t len)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(tc->ssl, buf, len > 0x40000000 ? 0x40000000 : (int)len);
    if (r > 0) return r;
    return io_result(tc, r, 0);
}

size_t sl__tls_pending(const sl__tls_conn *tc)
{
    /* Decrypted bytes, or (read ahead) received bytes of records not yet decrypted: either
     * way bytes poll() will not report again. A partial record counts too; reading it then
     * meets EAGAIN until the rest arrives. */
    int p = SSL_pending(tc->ssl);
    if (p > 0) return (size_t)p;
    return SSL_has_pending(tc->ssl) ? 1 : 0;
}

const char *sl__tls_errmsg(const sl__tls_conn *tc) { return tc->err; }

void sl__tls_conn_free(sl__tls_conn *tc)
{
    if (!tc) return;
    SSL_free(tc->ssl); /* no close_notify: the socket closes next and the server sees EOF */
    ERR_clear_error();
    free(tc);
}
