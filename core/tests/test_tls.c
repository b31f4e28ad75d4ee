/* TLS in the core (tls.h, src/tls/openssl.c) against the fake server's TLS mode, with
 * certificates made by `openssl` now (ci/tls-certs.sh): the handshake state machine in the
 * blocking and the libuv engine, what is verified (CA file, directory, PEM bytes; chain and
 * host name; per node in a cluster), mutual TLS, and each failure's message: a wrong CA,
 * an expired certificate, a wrong name, a plaintext server on a TLS client and the other
 * way round, a handshake that never ends — a clear error, never a hang, and nothing sent
 * before verification. Every verdict comes from replies, counters and messages.
 *
 * Built twice: with the tls part (SL_WITH_TLS), and from the core part alone (the
 * test_tls_unsupported program: what every package without OpenSSL gets). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "slotlane.h"

#ifndef SL_WITH_TLS

static void test_unsupported(void **state)
{
    (void)state;
    assert_int_equal(sl_tls_supported(), 0);
    sl_tls *t = (sl_tls *)state;
    char err[256] = "";
    assert_int_equal(sl_tls_new(&t, NULL, err, sizeof err), SL_EUNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(err, "not supported by this build"));
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = "rediss://127.0.0.1:1";
    sl_client *c = (sl_client *)&o;
    assert_int_equal(sl_client_new(&c, &o, err, sizeof err), SL_EUNSUPPORTED);
    assert_null(c);
    assert_non_null(strstr(err, "not supported by this build"));
    assert_string_equal(sl_strerror(SL_ETLS), "TLS error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_unsupported)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

#include "fake_server.h"
#include "sl_test.h"
#include "slotlane_uv.h"

static char dir[64];

static void append1(sl_batch *b, const char *a0)
{
    const char *argv[1] = {a0};
    assert_int_equal(sl_batch_append_argv(b, NULL, 1, argv, NULL), 0);
}

static void want_status(sl_batch *b, size_t idx, const char *want)
{
    const uint8_t *data;
    const sl_reply *r = reply_at(b, idx, &data);
    if (r->type != SL_REPLY_STATUS || r->len != strlen(want) || memcmp(data + r->offset, want, r->len) != 0)
        fail_msg("reply %zu: type %d \"%.*s\", want status \"%s\"", idx, r->type, (int)r->len,
                 (const char *)data + r->offset, want);
}

static const char *cert(const char *name)
{
    static char paths[8][160];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 160, "%s/%s", dir, name);
    return p;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[8][8192];
    static int next;
    char *b = buf[next++ % 8];
    size_t n = fread(b, 1, 8191, f);
    b[n] = 0;
    fclose(f);
    return b;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sl-tls-test.XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s/ci/tls-certs.sh' '%s'", SL_SOURCE_DIR, dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A fake node speaking TLS with the certificate NAME.crt/NAME.key. */
static fs_node *tls_node(const char *name, const char *client_ca)
{
    fs_node *n = fs_start();
    char crt[32], key[32];
    snprintf(crt, sizeof crt, "%s.crt", name);
    snprintf(key, sizeof key, "%s.key", name);
    fs_tls t = {cert(crt), cert(key), client_ca ? cert(client_ca) : NULL, 0};
    assert_int_equal(fs_set_tls(n, &t), 0);
    return n;
}

static sl_tls *tls_of(const sl_tls_options *o)
{
    sl_tls *t = NULL;
    char err[256] = "";
    int rc = sl_tls_new(&t, o, err, sizeof err);
    if (rc) fail_msg("sl_tls_new: %d %s", rc, err);
    return t;
}

/* The default configuration: trust ca.crt, full verification. */
static sl_tls *tls_ca(void)
{
    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    o.ca_file = cert("ca.crt");
    return tls_of(&o);
}

/* A client of 127.0.0.1:port over TLS (the client takes its own reference to t, which this
 * releases). rc_out/err: as new_client_opts; NULL rc_out fails the test on an error. */
static sl_client *tls_client(int port, sl_mode mode, sl_tls *t, int connect_ms, int *rc_out, char *err, size_t cap)
{
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", port);
    o.url = url;
    o.mode = mode;
    o.tls = t;
    o.connect_timeout_ms = connect_ms;
    o.command_timeout_ms = EXEC_TIMEOUT_MS;
    sl_client *c = NULL;
    char buf[512];
    if (!err) {
        err = buf;
        cap = sizeof buf;
    }
    err[0] = 0;
    int rc = sl_client_new(&c, &o, err, cap);
    sl_tls_free(t);
    if (rc_out) {
        *rc_out = rc;
        return c;
    }
    if (rc) fail_msg("sl_client_new: %d %s", rc, err);
    return c;
}

/* The client cannot be made; its message holds want, and the server saw no command. */
static void expect_refused(fs_node *n, sl_mode mode, sl_tls *t, int want_rc, const char *want)
{
    int rc = 0;
    char err[512];
    fs_reset_counters(n);
    sl_client *c = tls_client(fs_port(n), mode, t, 2000, &rc, err, sizeof err);
    if (rc != want_rc || !strstr(err, want))
        fail_msg("expected %d \"%s\", got %d \"%s\"", want_rc, want, rc, err);
    assert_null(c);
    assert_int_equal(fs_count(n, NULL, NULL), 0); /* nothing sent before verification */
}

/* SETs and GETs of n keys with values of vlen bytes, all in one batch; checks every reply. */
static void roundtrip(sl_client *c, int nkeys, size_t vlen)
{
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    char *val = malloc(vlen + 16);
    char key[32];
    for (int i = 0; i < nkeys; i++) {
        snprintf(key, sizeof key, "key:%d", i);
        memset(val, 'a' + i % 26, vlen);
        snprintf(val, 16, "%d:", i);
        val[strlen(val)] = 'x';
        val[vlen] = 0;
        append3(b, "SET", key, val);
    }
    for (int i = 0; i < nkeys; i++) {
        snprintf(key, sizeof key, "key:%d", i);
        append2(b, "GET", key);
    }
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(b, 0, &sz), 0);
    assert_int_equal(sz.errors, 0);
    for (int i = 0; i < nkeys; i++) {
        memset(val, 'a' + i % 26, vlen);
        snprintf(val, 16, "%d:", i);
        val[strlen(val)] = 'x';
        val[vlen] = 0;
        want_str(b, (size_t)(nkeys + i), val);
    }
    free(val);
    sl_batch_free(b);
}

static void test_connect_verified(void **state)
{
    (void)state;
    fs_node *n = tls_node("server", NULL);
    sl_client *c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_ca(), 2000, NULL, NULL, 0);
    assert_int_equal(fs_tls_handshakes(n), 1);
    /* Replies far larger than a TLS record (16 KiB): OpenSSL holds decrypted bytes the
     * socket no longer reports, which the read must drain before polling again. */
    roundtrip(c, 200, 3000);
    roundtrip(c, 4, 200000);
    roundtrip(c, 2000, 10);
    assert_int_equal(fs_count(n, "GET", NULL), 2204);
    assert_int_equal(stats_of(c).connects, 1);
    assert_int_equal(fs_tls_handshakes(n), 1);
    /* A reconnect is TLS too. */
    fs_drop_connections(n);
    assert_int_equal(fs_wait_open_connections(n, 0, 5000), 0);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    append1(b, "PING");
    for (int tries = 0; tries < 3; tries++) { /* the first may meet the closed connection */
        int rc = sl_batch_exec(b, 0, NULL);
        assert_true(rc == 0 || rc == SL_EIO);
        if (!is_error_kind(b, 0, SL_ERR_IO)) break;
        append1(b, "PING");
    }
    want_status(b, 0, "PONG");
    assert_int_equal(fs_tls_handshakes(n), 2);
    assert_int_equal(stats_of(c).reconnects, 1);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

static void test_ca_forms(void **state)
{
    (void)state;
    fs_node *n = tls_node("server", NULL);
    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    o.ca_pem = slurp(cert("ca.crt"));
    sl_client *c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 10, 10);
    sl_client_free(c);
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    o.ca_dir = cert("cadir");
    c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 10, 10);
    sl_client_free(c);
    /* The system's store alone does not know the test CA. */
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    expect_refused(n, SL_MODE_PLAIN, tls_of(&o), SL_ETLS, "certificate verify failed: unable to get local issuer");
    /* An unrelated CA, whatever the verification of names. */
    o.ca_file = cert("other-ca.crt");
    o.verify = SL_TLS_VERIFY_CHAIN;
    expect_refused(n, SL_MODE_AUTO, tls_of(&o), SL_ETLS, "certificate verify failed");
    fs_stop(n);
}

static void test_expired(void **state)
{
    (void)state;
    fs_node *n = tls_node("expired", NULL);
    expect_refused(n, SL_MODE_PLAIN, tls_ca(), SL_ETLS, "certificate verify failed: certificate has expired");
    fs_stop(n);
}

static void test_host_names(void **state)
{
    (void)state;
    fs_node *n = tls_node("wrong-name", NULL);
    expect_refused(n, SL_MODE_PLAIN, tls_ca(), SL_ETLS,
                   "host name mismatch: expected 127.0.0.1, certificate names wrong.example");
    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    o.ca_file = cert("ca.crt");
    o.server_name = "wrong.example"; /* the name instead of the address */
    sl_client *c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 5, 10);
    sl_client_free(c);
    o.server_name = NULL;
    o.verify = SL_TLS_VERIFY_CHAIN; /* chain only: any name of the CA passes */
    c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 5, 10);
    sl_client_free(c);
    fs_stop(n);

    n = tls_node("server", NULL);
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    o.ca_file = cert("ca.crt");
    o.server_name = "other.example";
    expect_refused(n, SL_MODE_PLAIN, tls_of(&o), SL_ETLS,
                   "host name mismatch: expected other.example, certificate names 127.0.0.1, ::1, localhost");
    o.server_name = "localhost";
    c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 5, 10);
    sl_client_free(c);
    /* No verification at all: no CA, yet it connects. */
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    o.system_roots = 0;
    o.verify = SL_TLS_VERIFY_NONE_INSECURE;
    c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 5, 10);
    sl_client_free(c);
    fs_stop(n);
}

static void test_mutual(void **state)
{
    (void)state;
    fs_node *n = tls_node("server", "ca.crt");
    /* TLS 1.3: the client's handshake ends before the server checks the client; the
     * server's alert comes with the first reply. */
    int rc = 0;
    char err[512];
    sl_client *c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_ca(), 2000, &rc, err, sizeof err);
    if (rc != SL_ETLS || !strstr(err, "certificate required")) fail_msg("got %d %s", rc, err);
    assert_null(c);
    assert_int_equal(fs_count(n, NULL, NULL), 0);
    assert_true(fs_tls_failures(n) >= 1);

    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    o.ca_file = cert("ca.crt");
    o.cert_file = cert("client.crt");
    o.key_file = cert("client.key");
    c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 20, 100);
    sl_client_free(c);
    o.cert_file = o.key_file = NULL;
    o.cert_pem = slurp(cert("client.crt"));
    o.key_pem = slurp(cert("client.key"));
    c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 20, 100);
    sl_client_free(c);
    fs_stop(n);
}

static void test_plaintext_mismatch(void **state)
{
    (void)state;
    /* A TLS client on a plaintext server: the server answers the ClientHello in RESP. */
    fs_node *n = fs_start();
    int rc = 0;
    char err[512];
    sl_client *c = tls_client(fs_port(n), SL_MODE_AUTO, tls_ca(), 2000, &rc, err, sizeof err);
    if (rc != SL_ETLS || !strstr(err, "TLS to 127.0.0.1:")) fail_msg("got %d %s", rc, err);
    assert_null(c);
    fs_stop(n);
    /* A plaintext client on a TLS server: the server refuses the bytes. */
    n = tls_node("server", NULL);
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n));
    sl_client_options po = SL_CLIENT_OPTIONS_INIT;
    po.url = url;
    rc = sl_client_new(&c, &po, err, sizeof err);
    assert_null(c);
    if (rc != SL_EIO || !strstr(err, "if the port speaks TLS, use rediss://")) fail_msg("got %d %s", rc, err);
    assert_int_equal(fs_count(n, NULL, NULL), 0);
    assert_true(fs_tls_failures(n) >= 1);
    fs_stop(n);
}

static void test_handshake_stalls(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    fs_tls t = {cert("server.crt"), cert("server.key"), NULL, 1};
    assert_int_equal(fs_set_tls(n, &t), 0);
    int rc = 0;
    char err[512];
    sl_client *c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_ca(), 200, &rc, err, sizeof err);
    if (rc != SL_ETLS || !strstr(err, "the handshake timed out")) fail_msg("got %d %s", rc, err);
    assert_null(c);
    assert_true(fs_bytes_received(n) > 0); /* the ClientHello came */
    assert_int_equal(fs_count(n, NULL, NULL), 0);
    fs_stop(n);
}

/* A 3-node cluster, every node TLS: discovery, every slot, MOVED to a node known only from
 * the topology, and per-node verification against each node's own certificate. */
static void test_cluster(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    for (int i = 0; i < 3; i++) {
        fs_tls t = {cert(i == 2 ? "wrong-name.crt" : "server.crt"), cert(i == 2 ? "wrong-name.key" : "server.key"),
                    NULL, 0};
        fs_set_tls(cl.nodes[i], &t);
    }
    /* Node 2's certificate names wrong.example: by address (the default) its commands fail
     * with the mismatch, the other nodes' succeed. */
    sl_client *c = tls_client(fs_port(cl.nodes[0]), SL_MODE_CLUSTER, tls_ca(), 2000, NULL, NULL, 0);
    assert_int_equal(sl_client_mode(c), SL_MODE_CLUSTER);
    char k0[32], k2[32];
    key_on(&cl, 0, "k", k0, sizeof k0);
    key_on(&cl, 2, "k", k2, sizeof k2);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    append3(b, "SET", k0, "v0");
    append3(b, "SET", k2, "v2");
    assert_int_equal(sl_batch_exec(b, 0, NULL), 0);
    want_status(b, 0, "OK");
    want_err_prefix(b, 1, SL_ERR_IO, "TLS to 127.0.0.1:");
    size_t nr;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &nr, &d, NULL);
    assert_non_null(strstr((const char *)d + r[1].offset, "host name mismatch: expected 127.0.0.1, certificate names wrong.example"));
    assert_int_equal(fs_count(cl.nodes[2], NULL, NULL), 0);
    sl_batch_free(b);
    sl_client_free(c);

    /* Discovered nodes verified by chain only: every node answers; the seed still by name. */
    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    o.ca_file = cert("ca.crt");
    o.node_names = SL_TLS_NODES_CHAIN_ONLY;
    c = tls_client(fs_port(cl.nodes[0]), SL_MODE_CLUSTER, tls_of(&o), 2000, NULL, NULL, 0);
    roundtrip(c, 3000, 20); /* keys over every node */
    for (int i = 0; i < 3; i++) assert_true(fs_count(cl.nodes[i], "GET", NULL) > 500);
    /* A slot moves to node 1: MOVED, followed over TLS. */
    int slot = fs_key_slot(k2, strlen(k2));
    fs_range all[5];
    size_t nm = 0;
    for (int i = 0; i < 3; i++) { /* the even split without the slot, then the slot on node 1 */
        int lo = 16384 * i / 3, hi = 16384 * (i + 1) / 3 - 1, port = fs_port(cl.nodes[i]);
        if (slot < lo || slot > hi) {
            all[nm++] = (fs_range){lo, hi, port};
            continue;
        }
        if (slot > lo) all[nm++] = (fs_range){lo, slot - 1, port};
        if (slot < hi) all[nm++] = (fs_range){slot + 1, hi, port};
    }
    all[nm++] = (fs_range){slot, slot, fs_port(cl.nodes[1])};
    fs_cluster_set_map(&cl, all, nm);
    assert_int_equal(sl_batch_new(c, &b), 0);
    append3(b, "SET", k2, "moved");
    append2(b, "GET", k2);
    assert_int_equal(sl_batch_exec(b, 0, NULL), 0);
    want_status(b, 0, "OK");
    want_str(b, 1, "moved");
    assert_true(stats_of(c).moved >= 1);
    assert_int_equal(fs_count(cl.nodes[1], "GET", k2), 1);
    sl_batch_free(b);
    sl_client_free(c);
    fs_cluster_stop(&cl);
}

/* ------------------------------------------------------------ the libuv engine */

typedef struct done {
    int calls;
    int status;
} done;

static void on_done(sl_batch *b, int status, const sl_sizes *sz, void *arg)
{
    (void)b;
    (void)sz;
    done *d = arg;
    d->calls++;
    d->status = status;
}

static void run_async(uv_loop_t *loop, sl_batch *b, done *d)
{
    d->calls = 0;
    assert_int_equal(sl_batch_exec_async(b, 0, on_done, d), 0);
    while (d->calls == 0) uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(d->calls, 1);
}

static void closed(sl_client *c, void *arg)
{
    (void)c;
    *(int *)arg = 1;
}

static void test_async(void **state)
{
    (void)state;
    fs_node *n = tls_node("server", NULL);
    sl_client *c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_ca(), 2000, NULL, NULL, 0);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    done d;
    /* On the connection the blocking API made, then on a new one the loop handshakes. */
    for (int round = 0; round < 2; round++) {
        char val[20000];
        memset(val, 'v', sizeof val - 1);
        val[sizeof val - 1] = 0;
        for (int i = 0; i < 50; i++) {
            char key[16];
            snprintf(key, sizeof key, "a%d", i);
            append3(b, "SET", key, val);
            append2(b, "GET", key);
        }
        run_async(&loop, b, &d);
        assert_int_equal(d.status, 0);
        for (int i = 0; i < 50; i++) want_str(b, (size_t)(2 * i + 1), val);
        if (round == 0) {
            assert_int_equal(sl_client_detach_loop(c, NULL, NULL), 0);
            uv_run(&loop, UV_RUN_DEFAULT);
            sl_batch_free(b);
            sl_client_free(c);
            c = tls_client(fs_port(n), SL_MODE_PLAIN, tls_ca(), 2000, NULL, NULL, 0);
            assert_int_equal(sl_batch_new(c, &b), 0);
            fs_drop_connections(n); /* the loop's own connect and handshake next */
            assert_int_equal(fs_wait_open_connections(n, 0, 5000), 0);
            assert_int_equal(sl_client_attach_loop(c, &loop), 0);
            append1(b, "PING");
            run_async(&loop, b, &d); /* meets the closed connection or reconnects */
        }
    }
    assert_int_equal(fs_tls_handshakes(n), 3);
    /* A handshake that never ends: the connect timeout ends it, with the message. */
    fs_node *stall = fs_start();
    fs_tls t = {cert("server.crt"), cert("server.key"), NULL, 1};
    fs_set_tls(stall, &t);
    sl_batch_reset(b);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", fs_port(stall));
    sl_route route = SL_ROUTE_INIT;
    route.kind = SL_ROUTE_NODE;
    route.node = addr;
    assert_int_equal(sl_batch_append_argv(b, &route, 1, (const char *const[]){"PING"}, NULL), 0);
    run_async(&loop, b, &d);
    size_t nr;
    const uint8_t *data;
    const sl_reply *r = sl_batch_replies(b, &nr, &data, NULL);
    assert_int_equal(r[0].type, SL_REPLY_ERROR);
    if (!strstr((const char *)data + r[0].offset, "the handshake timed out"))
        fail_msg("got %.*s", (int)r[0].len, (const char *)data + r[0].offset);
    int detached = 0;
    assert_int_equal(sl_client_detach_loop(c, closed, &detached), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_true(detached);
    assert_int_equal(uv_loop_close(&loop), 0);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(stall);
    fs_stop(n);
}

/* ------------------------------------------------------------ the configuration */

static void test_config(void **state)
{
    (void)state;
    char err[256];
    sl_tls *t = NULL;
    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    o.ca_file = "/nonexistent/ca.pem";
    assert_int_equal(sl_tls_new(&t, &o, err, sizeof err), SL_ETLS);
    assert_non_null(strstr(err, "cannot load the CA file /nonexistent/ca.pem"));
    assert_null(t);
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    o.cert_file = cert("client.crt");
    assert_int_equal(sl_tls_new(&t, &o, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "needs its key"));
    o.key_file = cert("server.key");
    assert_int_equal(sl_tls_new(&t, &o, err, sizeof err), SL_ETLS);
    assert_non_null(strstr(err, "cannot load the client key"));
    assert_non_null(strstr(err, "mismatch"));
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    o.ca_pem = "not a certificate";
    assert_int_equal(sl_tls_new(&t, &o, err, sizeof err), SL_ETLS);
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    o.verify = (sl_tls_verify)9;
    assert_int_equal(sl_tls_new(&t, &o, err, sizeof err), SL_EINVAL);
    o = (sl_tls_options)SL_TLS_OPTIONS_INIT;
    o.size = 8;
    assert_int_equal(sl_tls_new(&t, &o, err, sizeof err), SL_EINVAL);
    assert_int_equal(sl_tls_options_init(&o, 1), 0);
    assert_int_equal(o.verify, SL_TLS_VERIFY_FULL);
    assert_int_equal(o.system_roots, -1);
    assert_int_equal(sl_tls_supported(), 1);

    /* One configuration, two clients; the caller's reference goes first. */
    fs_node *n = tls_node("server", NULL);
    t = tls_ca();
    sl_tls_options_init(&o, SL_TLS_OPTIONS_VERSION);
    sl_client_options co = SL_CLIENT_OPTIONS_INIT;
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n));
    co.url = url;
    co.tls = t;
    sl_client *a = NULL, *b = NULL;
    assert_int_equal(sl_client_new(&a, &co, err, sizeof err), 0);
    assert_int_equal(sl_client_new(&b, &co, err, sizeof err), 0);
    sl_tls_free(t);
    roundtrip(a, 10, 10);
    sl_client_free(a);
    roundtrip(b, 10, 10);
    sl_client_free(b);
    /* rediss:// with no configuration: the system's CAs, which do not know the test CA. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", fs_port(n));
    co.tls = NULL;
    assert_int_equal(sl_client_new(&a, &co, err, sizeof err), SL_ETLS);
    assert_non_null(strstr(err, "certificate verify failed"));
    fs_stop(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_verified),
        cmocka_unit_test(test_ca_forms),
        cmocka_unit_test(test_expired),
        cmocka_unit_test(test_host_names),
        cmocka_unit_test(test_mutual),
        cmocka_unit_test(test_plaintext_mismatch),
        cmocka_unit_test(test_handshake_stalls),
        cmocka_unit_test(test_cluster),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

#endif
