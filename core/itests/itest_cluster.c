/*
 * itest_cluster — integration tests of libslotlane against real redis-servers.
 * Not a ctest test (it needs servers): ci/test-core-integration.sh starts a 3-primary
 * Redis Cluster and a standalone redis-server with ci/redis-cluster.sh and
 * ci/redis-plain.sh and runs
 *
 *   itest_cluster random    pipelines of 1..1000 random commands checked against a model,
 *                           on the plain server and on the cluster, RESP2 and RESP3
 *                           (random-plain, random-cluster: one of the two)
 *   itest_cluster migrate   a live slot migration (ci/redis-cluster.sh migrate, in a
 *                           background process) under a pipelined INCR load
 *   itest_cluster kill      a primary killed mid-load, then restarted
 *   itest_cluster scan      the node list; sl_scan over an empty cluster, over 100 000 keys
 *                           (every key once), MATCH and TYPE, during a live reshard of slots
 *                           (every key at least once; duplicates counted), and across a
 *                           primary killed mid-pass and restarted (one SL_EIO, then complete)
 *   itest_cluster scripts   SCRIPT LOAD/EXISTS/FLUSH and FUNCTION LOAD/DELETE on every
 *                           primary; EVALSHA with keys on every shard; a script flushed on
 *                           one node is loaded there again, once; FCALL on every shard
 *   itest_cluster replica-reads  (a 3 x 1 cluster: SL_ITEST_REPLICA_PORT, _DIR) read_from =
 *                           prefer-replica: GETs on the replicas by their INFO commandstats, on
 *                           the primary while the replica is stopped
 *   itest_cluster replica-kill  kill -9 of a primary under 8 callers of GET + INCR: waits for
 *                           the failover event; every slot served after, no GET failed, every
 *                           failed INCR has the documented error; the node restarted (a replica)
 *   itest_cluster replica-failover  CLUSTER FAILOVER under the same load: nothing fails
 *   itest_cluster tls-errors  TLS failures against real servers, each a clear error: no
 *                           client certificate where one is required, a wrong CA, an expired
 *                           certificate, a wrong host name, a plaintext server under TLS and
 *                           a TLS server without it; and rediss:// with mutual TLS
 *   itest_cluster tls-hostnames  a TLS cluster whose nodes announce host names
 *                           (node-PORT.slotlane.test) and serve certificates naming only
 *                           them: with SL_TLS_NODES_HOSTNAME every node is verified by its own
 *                           announced name and 1000 SET/GETs over every slot succeed; with
 *                           the default (the address) the other nodes fail with a host name
 *                           mismatch naming 127.0.0.1, the seed's commands still succeed
 *
 * With SL_ITEST_TLS_DIR (certificates of ci/tls-certs.sh) every client speaks TLS (that
 * CA, the client certificate): random, migrate and kill run over TLS servers.
 * tls-errors needs SL_ITEST_TLS_PORT (a TLS server requiring client certificates),
 * SL_ITEST_TLS_EXPIRED_PORT (one serving an expired certificate) and SL_ITEST_NOTLS_PORT
 * (a plaintext server). tls-hostnames needs SL_ITEST_CLUSTER_PORT to be such a cluster
 * (ci/redis-cluster.sh with SL_REDIS_TLS_HOSTNAMES=1).
 *
 * Environment: SL_ITEST_CLUSTER_PORT (a node of the cluster), SL_ITEST_CLUSTER_DIR (the
 * harness directory of that cluster, for migrate/kill/restart), SL_ITEST_PLAIN_PORT,
 * SL_ITEST_SEED (PRNG seed, default 1). Every failure prints "FAIL file:line: ..." and
 * exits 1.
 */
#include "slotlane.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SL_SOURCE_DIR
#define SL_SOURCE_DIR "."
#endif

extern char **environ;

/* ------------------------------------------------------------ checking */

static const char *g_phase = "";
static pid_t g_child = -1;   /* a background harness job, stopped (its process group) on failure */

#define CHECK(cond, ...) do { if (!(cond)) fail_at(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)

static void fail_at(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s:%d [%s] (%s): ", file, line, g_phase, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (g_child > 0) {
        kill(-g_child, SIGTERM);
        waitpid(g_child, NULL, 0);
    }
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t g_rng;

static uint64_t rnd(void)
{
    /* xorshift64* */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717ULL;
}

static unsigned rndn(unsigned n) { return (unsigned)(rnd() % n); }

static const char *env_req(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "itest_cluster: %s is not set\n", name);
        exit(2);
    }
    return v;
}

/* ------------------------------------------------------------ client helpers */

static sl_tls *g_tls; /* SL_ITEST_TLS_DIR: every client's TLS configuration */

static const char *tls_file(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 512, "%s/%s", env_req("SL_ITEST_TLS_DIR"), name);
    return p;
}

/* A TLS configuration trusting ca, with the client certificate when client is set. */
static sl_tls *tls_new(const char *ca, int client, const char *server_name)
{
    sl_tls_options o = SL_TLS_OPTIONS_INIT;
    o.ca_file = tls_file(ca);
    if (client) {
        o.cert_file = tls_file("client.crt");
        o.key_file = tls_file("client.key");
    }
    o.server_name = server_name;
    sl_tls *t = NULL;
    char err[256] = "";
    int rc = sl_tls_new(&t, &o, err, sizeof err);
    CHECK(rc == 0, "sl_tls_new: %s: %s", sl_strerror(rc), err);
    return t;
}

static sl_client *client_new(int port, int resp)
{
    char url[64], err[256] = "";
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.resp_version = resp;
    o.command_timeout_ms = 10000;
    o.connect_timeout_ms = 1000;
    o.tls = g_tls;
    sl_client *c = NULL;
    int rc = sl_client_new(&c, &o, err, sizeof err);
    CHECK(rc == 0 && c, "sl_client_new(%s): %s: %s", url, sl_strerror(rc), err);
    return c;
}

/* sl_client_new on url with t (released here) fails with code and a message holding want. */
static void refused(const char *url, sl_tls *t, int code, const char *want)
{
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.tls = t;
    o.connect_timeout_ms = 2000;
    sl_client *c = NULL;
    char err[512] = "";
    int rc = sl_client_new(&c, &o, err, sizeof err);
    sl_tls_free(t);
    CHECK(rc == code && !c && strstr(err, want), "%s: expected %s \"%s\", got %s \"%s\"", url, sl_strerror(code),
          want, sl_strerror(rc), err);
    printf("  %s: %s\n", url, err);
}

static void appendv(sl_batch *b, int argc, const char *const *argv)
{
    int rc = sl_batch_append_argv(b, NULL, argc, argv, NULL);
    CHECK(rc == 0, "sl_batch_append_argv(%s): %s", argv[0], sl_strerror(rc));
}

static size_t subtree(const sl_reply *r, size_t n, size_t i)
{
    size_t pending = 1, j = i;
    while (pending && j < n) {
        const sl_reply *x = &r[j++];
        pending--;
        if (x->type == SL_REPLY_ARRAY || x->type == SL_REPLY_MAP || x->type == SL_REPLY_SET || x->type == SL_REPLY_PUSH)
            pending += x->len;
    }
    return j - i;
}

static int rec_is(const sl_reply *r, const uint8_t *d, int type, const char *text)
{
    return r->type == type && r->len == strlen(text) && memcmp(d + r->offset, text, r->len) == 0;
}

static const char *rec_text(const sl_reply *r, const uint8_t *d)
{
    static char buf[200];
    switch (r->type) {
    case SL_REPLY_INTEGER: snprintf(buf, sizeof buf, "integer %lld", (long long)r->value.integer); break;
    case SL_REPLY_NIL: snprintf(buf, sizeof buf, "nil"); break;
    case SL_REPLY_ARRAY: case SL_REPLY_MAP: case SL_REPLY_SET: case SL_REPLY_PUSH:
        snprintf(buf, sizeof buf, "aggregate type %d of %u", r->type, r->len); break;
    default:
        snprintf(buf, sizeof buf, "type %d kind %d \"%.*s\"", r->type, r->flags, (int)(r->len > 150 ? 150 : r->len),
                 (const char *)d + r->offset);
    }
    return buf;
}

static void flushall(sl_client *c)
{
    const char *argv[] = {"FLUSHALL"};
    const sl_reply *r;
    const uint8_t *d;
    sl_route route = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_ALL_PRIMARIES, 0, NULL};
    int rc = sl_client_command(c, sl_client_mode(c) == SL_MODE_CLUSTER ? &route : NULL, 1, argv, NULL, &r, &d);
    CHECK(rc == 0, "FLUSHALL: %s (%s)", sl_strerror(rc), sl_client_errmsg(c));
}

static void stats(sl_client *c, sl_stats *st)
{
    memset(st, 0, sizeof *st);
    st->version = SL_STATS_VERSION;
    st->size = sizeof *st;
    CHECK(sl_client_stats(c, st) == 0, "sl_client_stats");
}

/* owner[slot] = client port of the primary serving it, read from CLUSTER SLOTS. */
static void slot_owners(sl_client *c, int *owner)
{
    const char *argv[] = {"CLUSTER", "SLOTS"};
    const sl_reply *r;
    const uint8_t *d;
    int rc = sl_client_command(c, NULL, 2, argv, NULL, &r, &d);
    CHECK(rc == 0 && r[0].type == SL_REPLY_ARRAY, "CLUSTER SLOTS: %s", sl_strerror(rc));
    for (int s = 0; s < 16384; s++) owner[s] = 0;
    size_t total = subtree(r, (size_t)-1 / 2, 0); /* r[0]'s subtree is complete */
    size_t i = 1;
    for (uint32_t e = 0; e < r[0].len; e++) {
        const sl_reply *ent = &r[i];
        CHECK(ent->type == SL_REPLY_ARRAY && ent->len >= 3, "CLUSTER SLOTS entry");
        const sl_reply *lo = &r[i + 1], *hi = &r[i + 2], *node = &r[i + 3];
        CHECK(lo->type == SL_REPLY_INTEGER && hi->type == SL_REPLY_INTEGER && node->type == SL_REPLY_ARRAY
                  && node->len >= 2 && r[i + 5].type == SL_REPLY_INTEGER, "CLUSTER SLOTS entry shape");
        for (int64_t s = lo->value.integer; s <= hi->value.integer && s < 16384; s++)
            owner[s] = (int)r[i + 5].value.integer;
        i += subtree(r, total + 1, i);
    }
    for (int s = 0; s < 16384; s++) CHECK(owner[s] > 0, "slot %d has no owner", s);
}

/* Runs argv (NULL-terminated) in the background, in a process group of its own; returns
 * the pid (= the group's id). */
static pid_t spawn(char *const argv[])
{
    pid_t pid;
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    int rc = posix_spawn(&pid, argv[0], NULL, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    CHECK(rc == 0, "posix_spawn(%s): %s", argv[0], strerror(rc));
    return pid;
}

static int wait_exit(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static pid_t spawn_sh(const char *script)
{
    char *argv[] = {"/bin/bash", "-c", (char *)script, NULL};
    return spawn(argv);
}

static int harness(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return wait_exit(spawn_sh(cmd));
}

/* ------------------------------------------------------------ the model */

#define NKEYS 300

typedef struct {
    char *val[NKEYS]; /* NULL: absent */
} model;

static void model_set(model *m, int k, const char *v)
{
    free(m->val[k]);
    m->val[k] = v ? strdup(v) : NULL;
}

static void model_clear(model *m)
{
    for (int k = 0; k < NKEYS; k++) model_set(m, k, NULL);
}

static void key_name(int k, char *out, size_t cap)
{
    /* a few keys share a hash tag, so that some split parts hold several keys */
    if (k % 10 == 0) snprintf(out, cap, "{tag%d}:key:%d", k % 30, k);
    else snprintf(out, cap, "key:%d", k);
}

enum { OP_SET, OP_GET, OP_INCR, OP_DEL, OP_MGET, OP_MSET, OP_EXISTS, OP_N };

/* What one command expects. */
typedef struct {
    int op;
    int nkeys;
    int keys[8];
    char *expect[8];   /* GET/MGET: expected values (NULL = nil); INCR: the value ("" = error) */
    long long integer; /* DEL/EXISTS/INCR */
    int incr_error;
} expect_t;

static void expect_free(expect_t *e)
{
    for (int i = 0; i < 8; i++) { free(e->expect[i]); e->expect[i] = NULL; }
}

/* Builds one random command into the batch and its expected reply from the model
 * (applying the command to the model). */
static void random_command(sl_batch *b, model *m, expect_t *e)
{
    char names[8][48], vals[8][32];
    const char *argv[20];
    int argc = 0;
    memset(e, 0, sizeof *e);
    e->op = (int)rndn(OP_N);
    switch (e->op) {
    case OP_SET: {
        int k = (int)rndn(NKEYS);
        key_name(k, names[0], sizeof names[0]);
        if (rndn(2)) snprintf(vals[0], sizeof vals[0], "%u", rndn(1000));
        else snprintf(vals[0], sizeof vals[0], "v%u", rndn(100000));
        argv[argc++] = "SET"; argv[argc++] = names[0]; argv[argc++] = vals[0];
        model_set(m, k, vals[0]);
        break;
    }
    case OP_GET: {
        int k = (int)rndn(NKEYS);
        key_name(k, names[0], sizeof names[0]);
        argv[argc++] = "GET"; argv[argc++] = names[0];
        e->nkeys = 1; e->keys[0] = k;
        e->expect[0] = m->val[k] ? strdup(m->val[k]) : NULL;
        break;
    }
    case OP_INCR: {
        int k = (int)rndn(NKEYS);
        key_name(k, names[0], sizeof names[0]);
        argv[argc++] = "INCR"; argv[argc++] = names[0];
        const char *v = m->val[k];
        char *end;
        long long x = v ? strtoll(v, &end, 10) : 0;
        if (v && (*v == '\0' || *end != '\0')) {
            e->incr_error = 1;
        } else {
            e->integer = x + 1;
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", x + 1);
            model_set(m, k, buf);
        }
        break;
    }
    case OP_DEL: case OP_EXISTS: case OP_MGET: {
        int n = 1 + (int)rndn(e->op == OP_MGET ? 8 : 5);
        argv[argc++] = e->op == OP_DEL ? "DEL" : e->op == OP_EXISTS ? "EXISTS" : "MGET";
        e->nkeys = n;
        for (int i = 0; i < n; i++) {
            int k = (int)rndn(NKEYS);
            e->keys[i] = k;
            key_name(k, names[i], sizeof names[i]);
            argv[argc++] = names[i];
            if (e->op == OP_MGET) e->expect[i] = m->val[k] ? strdup(m->val[k]) : NULL;
            else if (e->op == OP_EXISTS) e->integer += m->val[k] != NULL;
        }
        if (e->op == OP_DEL) {
            /* DEL counts each deleted key once, even when repeated */
            for (int i = 0; i < n; i++)
                if (m->val[e->keys[i]]) { e->integer++; model_set(m, e->keys[i], NULL); }
        }
        break;
    }
    case OP_MSET: {
        int n = 1 + (int)rndn(4);
        argv[argc++] = "MSET";
        for (int i = 0; i < n; i++) {
            int k = (int)rndn(NKEYS);
            key_name(k, names[i], sizeof names[i]);
            snprintf(vals[i], sizeof vals[i], "%u", rndn(1000));
            argv[argc++] = names[i]; argv[argc++] = vals[i];
            model_set(m, k, vals[i]); /* later pairs win, as on the server */
        }
        break;
    }
    }
    appendv(b, argc, argv);
}

static const char *op_name[] = {"SET", "GET", "INCR", "DEL", "MGET", "MSET", "EXISTS"};

static void check_string_or_nil(const sl_reply *r, const uint8_t *d, const char *want, const char *what, size_t ci)
{
    if (!want)
        CHECK(r->type == SL_REPLY_NIL, "command #%zu %s: expected nil, got %s", ci, what, rec_text(r, d));
    else
        CHECK(rec_is(r, d, SL_REPLY_STRING, want), "command #%zu %s: expected \"%s\", got %s", ci, what, want, rec_text(r, d));
}

/* Checks the records of a batch against the expectations; returns the record index after. */
static void check_replies(sl_batch *b, expect_t *ex, size_t n)
{
    size_t nrec, dlen;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &nrec, &d, &dlen);
    size_t i = 0;
    for (size_t c = 0; c < n; c++) {
        CHECK(i < nrec, "records end before command #%zu", c);
        const sl_reply *x = &r[i];
        expect_t *e = &ex[c];
        switch (e->op) {
        case OP_SET: case OP_MSET:
            CHECK(rec_is(x, d, SL_REPLY_STATUS, "OK"), "command #%zu %s: expected +OK, got %s", c, op_name[e->op], rec_text(x, d));
            break;
        case OP_GET:
            check_string_or_nil(x, d, e->expect[0], "GET", c);
            break;
        case OP_INCR:
            if (e->incr_error)
                CHECK(x->type == SL_REPLY_ERROR && x->flags == SL_ERR_SERVER && x->len >= 3 && !memcmp(d + x->offset, "ERR", 3),
                      "command #%zu INCR on a non-integer: expected an ERR, got %s", c, rec_text(x, d));
            else
                CHECK(x->type == SL_REPLY_INTEGER && x->value.integer == e->integer,
                      "command #%zu INCR: expected %lld, got %s", c, e->integer, rec_text(x, d));
            break;
        case OP_DEL: case OP_EXISTS:
            CHECK(x->type == SL_REPLY_INTEGER && x->value.integer == e->integer,
                  "command #%zu %s of %d keys: expected %lld, got %s", c, op_name[e->op], e->nkeys, e->integer, rec_text(x, d));
            break;
        case OP_MGET:
            CHECK(x->type == SL_REPLY_ARRAY && x->len == (uint32_t)e->nkeys, "command #%zu MGET of %d keys: got %s",
                  c, e->nkeys, rec_text(x, d));
            for (int k = 0; k < e->nkeys; k++)
                check_string_or_nil(&r[i + 1 + (size_t)k], d, e->expect[k], "MGET element", c);
            break;
        }
        i += subtree(r, nrec, i);
    }
    CHECK(i == nrec, "%zu records left over", nrec - i);
}

/* ------------------------------------------------------------ random pipelines */

static void random_pipelines(int port, int resp, const char *label)
{
    char phase[96];
    snprintf(phase, sizeof phase, "random %s resp%d", label, resp);
    g_phase = phase;
    sl_client *c = client_new(port, resp);
    flushall(c);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    model m;
    memset(&m, 0, sizeof m);
    static const size_t sizes[] = {1, 2, 3, 5, 8, 13, 64, 100, 127, 256, 333, 512, 999, 1000};
    expect_t *ex = calloc(1000, sizeof *ex);
    size_t total = 0;
    for (size_t round = 0; round < sizeof sizes / sizeof sizes[0] + 12; round++) {
        size_t n = round < sizeof sizes / sizeof sizes[0] ? sizes[round] : 1 + rndn(1000);
        for (size_t k = 0; k < n; k++)
            random_command(b, &m, &ex[k]);
        sl_sizes sz;
        int rc = sl_batch_exec(b, 0, &sz);
        CHECK(rc == 0, "sl_batch_exec of %zu commands: %s (%s)", n, sl_strerror(rc), sl_client_errmsg(c));
        CHECK(sz.commands == n, "%llu replies for %zu commands", (unsigned long long)sz.commands, n);
        check_replies(b, ex, n);
        for (size_t k = 0; k < n; k++) expect_free(&ex[k]);
        total += n;
    }
    /* the whole keyspace agrees with the model at the end */
    for (int k = 0; k < NKEYS; k++) {
        char name[48];
        key_name(k, name, sizeof name);
        const char *argv[] = {"GET", name};
        appendv(b, 2, argv);
        ex[k].op = OP_GET;
        ex[k].expect[0] = m.val[k] ? strdup(m.val[k]) : NULL;
    }
    CHECK(sl_batch_exec(b, 0, NULL) == 0, "final GETs");
    check_replies(b, ex, NKEYS);
    for (int k = 0; k < NKEYS; k++) expect_free(&ex[k]);
    sl_stats st;
    stats(c, &st);
    printf("ok   %s: %zu commands in %zu pipelines (moved %llu, ask %llu)\n", phase, total,
           sizeof sizes / sizeof sizes[0] + 12, (unsigned long long)st.moved, (unsigned long long)st.ask);
    free(ex);
    model_clear(&m);
    sl_batch_free(b);
    sl_client_free(c);
}

/* ------------------------------------------------------------ live migration */

#define MIG_KEYS 60

static void migrate_test(int port, const char *dir)
{
    g_phase = "migrate";
    sl_client *c = client_new(port, 2);
    CHECK(sl_client_mode(c) == SL_MODE_CLUSTER, "the client is not in cluster mode");
    flushall(c);
    static int owner[16384];
    slot_owners(c, owner);
    const int slot = sl_key_slot("{mig}", 5);
    int from = owner[slot], to = 0;
    for (int s = 0; s < 16384; s++) if (owner[s] != from) { to = owner[s]; break; }
    CHECK(to, "a second primary");

    /* keys of the migrated slot, and a few elsewhere that must be unaffected */
    char names[MIG_KEYS + 10][32];
    long long counts[MIG_KEYS + 10];
    for (int k = 0; k < MIG_KEYS + 10; k++) {
        if (k < MIG_KEYS) snprintf(names[k], sizeof names[k], "{mig}:%d", k);
        else snprintf(names[k], sizeof names[k], "other:%d", k);
        counts[k] = 0;
    }
    /* the slot holds keys before the migration starts, so MIGRATE has work to do */
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    for (int k = 0; k < MIG_KEYS + 10; k++) {
        const char *argv[] = {"INCR", names[k]};
        appendv(b, 2, argv);
        counts[k]++;
    }
    CHECK(sl_batch_exec(b, 0, NULL) == 0, "first INCRs");

    sl_stats st0;
    stats(c, &st0);
    char script[1024];
    snprintf(script, sizeof script,
             "export SL_MIGRATE_COUNT=2 SL_MIGRATE_DELAY=0.005; h='%s/ci/redis-cluster.sh'; "
             "for i in 1 2; do \"$h\" migrate '%s' %d %d %d >/dev/null && \"$h\" migrate '%s' %d %d %d >/dev/null || exit 1; done",
             SL_SOURCE_DIR, dir, slot, from, to, dir, slot, to, from);
    pid_t mig = spawn_sh(script);
    g_child = mig;

    double t0 = now_s();
    size_t batches = 0, incrs = 0, done_at = 0;
    int mig_status = -1;
    const size_t n = 200;
    int keys[200];
    for (;;) {
        if (mig_status < 0) {
            int st;
            if (waitpid(mig, &st, WNOHANG) == mig) {
                mig_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                done_at = batches;
                g_child = -1;
            }
        } else if (batches >= done_at + 5) {
            break;   /* a few batches after the last step as well */
        }
        CHECK(now_s() - t0 < 60, "the migration loop did not finish within 60 s");
        for (size_t i = 0; i < n; i++) {
            int k = (i % 20 == 19) ? MIG_KEYS + (int)rndn(10) : (int)rndn(MIG_KEYS);
            keys[i] = k;
            const char *argv[] = {"INCR", names[k]};
            appendv(b, 2, argv);
        }
        sl_sizes sz;
        int rc = sl_batch_exec(b, 0, &sz);
        CHECK(rc == 0, "batch %zu: sl_batch_exec: %s (%s)", batches, sl_strerror(rc), sl_client_errmsg(c));
        size_t nrec;
        const uint8_t *d;
        const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
        CHECK(nrec == n, "batch %zu: %zu records for %zu INCRs", batches, nrec, n);
        for (size_t i = 0; i < n; i++) {
            long long want = ++counts[keys[i]];
            CHECK(r[i].type == SL_REPLY_INTEGER && r[i].value.integer == want,
                  "batch %zu, command #%zu INCR %s: expected %lld, got %s (lost, duplicated or out of order)",
                  batches, i, names[keys[i]], want, rec_text(&r[i], d));
        }
        batches++;
        incrs += n;
        usleep(1000); /* leave CPU to the migration (2 cores are shared with the servers) */
    }
    CHECK(mig_status == 0, "the migration loop failed (exit %d): see the harness output", mig_status);

    /* every counter agrees with the model */
    for (int k = 0; k < MIG_KEYS + 10; k++) {
        const char *argv[] = {"GET", names[k]};
        appendv(b, 2, argv);
    }
    CHECK(sl_batch_exec(b, 0, NULL) == 0, "final GETs");
    size_t nrec;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
    for (int k = 0; k < MIG_KEYS + 10; k++) {
        char want[32];
        snprintf(want, sizeof want, "%lld", counts[k]);
        CHECK(rec_is(&r[k], d, SL_REPLY_STRING, want), "final %s: expected %s, got %s", names[k], want, rec_text(&r[k], d));
    }
    sl_stats st1;
    stats(c, &st1);
    unsigned long long moved = st1.moved - st0.moved, ask = st1.ask - st0.ask;
    CHECK(moved + ask > 0, "no MOVED or ASK redirect was followed during 4 migrations of slot %d", slot);
    printf("ok   migrate: slot %d moved 4 times between %d and %d under %zu INCRs in %zu batches; "
           "moved %llu, ask %llu, tryagain %llu, refreshes %llu\n", slot, from, to, incrs, batches, moved, ask,
           (unsigned long long)(st1.tryagain - st0.tryagain), (unsigned long long)(st1.refreshes - st0.refreshes));
    sl_batch_free(b);
    sl_client_free(c);
}

/* ------------------------------------------------------------ a primary killed */

#define KILL_KEYS 240

static void kill_test(int port, const char *dir)
{
    g_phase = "kill";
    sl_client *c = client_new(port, 2);
    CHECK(sl_client_mode(c) == SL_MODE_CLUSTER, "the client is not in cluster mode");
    flushall(c);
    static int owner[16384];
    slot_owners(c, owner);
    /* the victim: a primary other than the seed */
    int victim = owner[16383] != port ? owner[16383] : owner[0];
    CHECK(victim != port, "victim is the seed");
    char names[KILL_KEYS][32];
    int on_victim[KILL_KEYS], nvictim = 0;
    for (int k = 0; k < KILL_KEYS; k++) {
        snprintf(names[k], sizeof names[k], "kill:%d", k);
        on_victim[k] = owner[sl_key_slot(names[k], strlen(names[k]))] == victim;
        nvictim += on_victim[k];
    }
    CHECK(nvictim > 10 && nvictim < KILL_KEYS - 10, "keys on the victim: %d", nvictim);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");

    /* One round: SET k "<round>" then GET k for every key. Live nodes must answer
     * exactly; the victim's commands may fail once it is down. */
    int round = 0, saw_mixed = 0, victim_down = 0, down_round = 0;
    unsigned long long io_records = 0;
    pid_t killer = -1;
    double t0 = now_s();
    char script[1024];
    for (;;) {
        round++;
        char val[16];
        snprintf(val, sizeof val, "%d", round);
        for (int k = 0; k < KILL_KEYS; k++) {
            const char *s[] = {"SET", names[k], val};
            const char *g[] = {"GET", names[k]};
            appendv(b, 3, s);
            appendv(b, 2, g);
        }
        if (round == 3) {
            /* kill the victim while the next batches run */
            snprintf(script, sizeof script, "sleep 0.05; '%s/ci/redis-cluster.sh' kill '%s' %d >/dev/null",
                     SL_SOURCE_DIR, dir, victim);
            killer = spawn_sh(script);
            g_child = killer;
        }
        sl_sizes sz;
        int rc = sl_batch_exec(b, 0, &sz);
        CHECK(rc == 0, "round %d: sl_batch_exec: %s (%s)", round, sl_strerror(rc), sl_client_errmsg(c));
        size_t nrec;
        const uint8_t *d;
        const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
        CHECK(nrec == 2 * KILL_KEYS, "round %d: %zu records", round, nrec);
        int ok_cmds = 0, io = 0;
        for (int k = 0; k < KILL_KEYS; k++) {
            const sl_reply *rs = &r[2 * k], *rg = &r[2 * k + 1];
            int node = owner[sl_key_slot(names[k], strlen(names[k]))];
            if (!on_victim[k] || killer < 0) {
                /* a live node (or before the kill): exact replies */
                CHECK(rec_is(rs, d, SL_REPLY_STATUS, "OK"), "round %d SET %s (node %d): %s", round, names[k], node,
                      rec_text(rs, d));
                CHECK(rec_is(rg, d, SL_REPLY_STRING, val), "round %d GET %s (node %d): expected %s, got %s", round,
                      names[k], node, val, rec_text(rg, d));
                ok_cmds += 2;
            } else if (victim_down) {
                /* the node is down: its commands fail, and only they */
                CHECK(rs->type == SL_REPLY_ERROR && rg->type == SL_REPLY_ERROR,
                      "round %d: %s on the dead node %d answered %s", round, names[k], victim, rec_text(rs, d));
                io += (rs->flags == SL_ERR_IO) + (rg->flags == SL_ERR_IO);
            } else {
                /* the kill is in flight: a reply is either right or an error */
                if (rs->type == SL_REPLY_ERROR) io += rs->flags == SL_ERR_IO;
                else CHECK(rec_is(rs, d, SL_REPLY_STATUS, "OK"), "round %d SET %s: %s", round, names[k], rec_text(rs, d));
                if (rg->type == SL_REPLY_ERROR) io += rg->flags == SL_ERR_IO;
                else CHECK(rec_is(rg, d, SL_REPLY_STRING, val), "round %d GET %s: expected %s, got %s", round, names[k],
                           val, rec_text(rg, d));
            }
        }
        if (io) {
            if (!victim_down) down_round = round;
            victim_down = 1;
            io_records += (unsigned long long)io;
            if (ok_cmds) saw_mixed = 1;
        }
        if (victim_down && round >= down_round + 2)
            break;
        CHECK(now_s() - t0 < 20, "no SL_ERR_IO record within 20 s of killing node %d (round %d)", victim, round);
        if (killer > 0 && !victim_down) usleep(20000);
    }
    int kst = wait_exit(killer);
    g_child = -1;
    CHECK(kst == 0, "ci/redis-cluster.sh kill failed");
    CHECK(saw_mixed, "no batch had both completed commands and SL_ERR_IO records");

    /* restart: the node rejoins (empty: no persistence); commands to it succeed again */
    double t_restart = now_s();
    CHECK(harness("'%s/ci/redis-cluster.sh' restart '%s' %d >/dev/null", SL_SOURCE_DIR, dir, victim) == 0,
          "ci/redis-cluster.sh restart %d failed", victim);
    double t1 = now_s();
    int recovered = 0, tries = 0;
    while (!recovered) {
        tries++;
        for (int k = 0; k < KILL_KEYS; k++) {
            if (!on_victim[k]) continue;
            const char *s[] = {"SET", names[k], "back"};
            const char *g[] = {"GET", names[k]};
            appendv(b, 3, s);
            appendv(b, 2, g);
        }
        sl_sizes sz;
        int rc = sl_batch_exec(b, 0, &sz);
        size_t nrec;
        const uint8_t *d;
        const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
        recovered = rc == 0 && sz.errors == 0;
        if (recovered) {
            for (size_t i = 0; i < nrec; i += 2) {
                CHECK(rec_is(&r[i], d, SL_REPLY_STATUS, "OK") && rec_is(&r[i + 1], d, SL_REPLY_STRING, "back"),
                      "after restart: %s / %s", rec_text(&r[i], d), rec_text(&r[i + 1], d));
            }
            break;
        }
        CHECK(now_s() - t1 < 10, "commands to node %d still fail 10 s after it rejoined: %s", victim,
              nrec ? rec_text(&r[0], d) : sl_strerror(rc));
        usleep(100000);
    }
    sl_stats st;
    stats(c, &st);
    double t_ok = now_s();
    CHECK(t_ok - t_restart < 20, "recovery took %.1f s after the restart began", t_ok - t_restart);
    printf("ok   kill: node %d killed during round 3, %llu SL_ERR_IO records in batches whose other commands "
           "completed; restarted, rejoined and serving again %.2f s after the restart began (%.2f s after it "
           "rejoined, %d tries), reconnects %llu\n", victim, io_records, t_ok - t_restart, t_ok - t1, tries,
           (unsigned long long)st.reconnects);
    sl_batch_free(b);
    sl_client_free(c);
}

/* ------------------------------------------------------------ the node list, SCAN */

#define SCAN_KEYS 100000
#define SCAN_HASHES 1000

/* Scans the whole cluster; counts every key into seen[] (strings "scan:<i>" at i, hashes
 * "scanh:<i>" at SCAN_KEYS + i; any other key fails). Returns the keys returned. Between
 * pages, poll() (may be NULL) runs. */
static size_t scan_count(sl_client *c, sl_batch *b, const sl_scan_options *o, uint8_t *seen, void (*poll)(void))
{
    sl_scan *s;
    CHECK(sl_scan_new(c, o, &s) == 0, "sl_scan_new: %s", sl_client_errmsg(c));
    int done = 0;
    size_t total = 0, pages = 0;
    while (!done) {
        int rc = sl_scan_next(s, b, &done);
        CHECK(rc == 0, "sl_scan_next (page %zu): %s (%s)", pages, sl_strerror(rc), sl_client_errmsg(c));
        size_t n;
        const uint8_t *d;
        const sl_reply *r = sl_batch_replies(b, &n, &d, NULL);
        CHECK(n >= 1 && r[0].type == SL_REPLY_ARRAY && n == 1 + (size_t)r[0].len, "page %zu: not an array of keys", pages);
        for (size_t i = 1; i < n; i++) {
            char k[48];
            CHECK(r[i].type == SL_REPLY_STRING && r[i].len < sizeof k, "page %zu: a key that is not a string", pages);
            memcpy(k, d + r[i].offset, r[i].len);
            k[r[i].len] = '\0';
            long idx = -1;
            if (!strncmp(k, "scan:", 5)) idx = strtol(k + 5, NULL, 10);
            else if (!strncmp(k, "scanh:", 6)) idx = SCAN_KEYS + strtol(k + 6, NULL, 10);
            CHECK(idx >= 0 && idx < SCAN_KEYS + SCAN_HASHES, "unexpected key %s", k);
            if (seen[idx] < 255) seen[idx]++;
            total++;
        }
        pages++;
        if (poll) poll();
    }
    sl_scan_free(s);
    return total;
}

static pid_t g_reshard = -1;
static int g_reshard_status = -1;

static void reshard_poll(void)
{
    int st;
    if (g_reshard > 0 && g_reshard_status < 0 && waitpid(g_reshard, &st, WNOHANG) == g_reshard) {
        g_reshard_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        g_child = -1;
    }
    usleep(200); /* leave the CPU to the migration now and then (2 shared cores) */
}

static void scan_test(int port, const char *dir)
{
    g_phase = "scan";
    sl_client *c = client_new(port, 2);
    CHECK(sl_client_mode(c) == SL_MODE_CLUSTER, "the client is not in cluster mode");
    flushall(c);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    uint8_t *seen = calloc(SCAN_KEYS + SCAN_HASHES, 1);

    /* the node list: 3 primaries covering every slot once, their replicas */
    sl_node_info *nodes;
    size_t nn;
    CHECK(sl_client_nodes(c, &nodes, &nn) == 0, "sl_client_nodes");
    int primaries = 0, replicas = 0, covered = 0;
    for (size_t i = 0; i < nn; i++) {
        if (nodes[i].is_primary) {
            primaries++;
            for (size_t r = 0; r < nodes[i].nranges; r++) covered += nodes[i].ranges[2 * r + 1] - nodes[i].ranges[2 * r] + 1;
        } else {
            replicas++;
            CHECK(nodes[i].primary >= 0 && nodes[nodes[i].primary].is_primary, "replica %s has no primary", nodes[i].addr);
        }
    }
    CHECK(primaries == 3 && covered == 16384, "%d primaries covering %d slots", primaries, covered);
    /* a per-node command is one loop over the list */
    for (size_t i = 0; i < nn; i++) {
        sl_route to = SL_ROUTE_INIT;
        to.kind = SL_ROUTE_NODE;
        to.node = nodes[i].addr;
        const char *argv[] = {"PING"};
        const sl_reply *r;
        const uint8_t *d;
        CHECK(sl_client_command(c, &to, 1, argv, NULL, &r, &d) == 0 && rec_is(r, d, SL_REPLY_STATUS, "PONG"),
              "PING %s", nodes[i].addr);
    }

    /* an empty cluster: no keys, done */
    CHECK(scan_count(c, b, NULL, seen, NULL) == 0, "keys in an empty cluster");

    /* 100 000 strings and 1000 hashes */
    for (int i = 0; i < SCAN_KEYS + SCAN_HASHES; i++) {
        char k[32];
        if (i < SCAN_KEYS) {
            snprintf(k, sizeof k, "scan:%d", i);
            const char *argv[] = {"SET", k, "v"};
            appendv(b, 3, argv);
        } else {
            snprintf(k, sizeof k, "scanh:%d", i - SCAN_KEYS);
            const char *argv[] = {"HSET", k, "f", "v"};
            appendv(b, 4, argv);
        }
        if (sl_batch_count(b) == 1000 || i == SCAN_KEYS + SCAN_HASHES - 1) {
            sl_sizes sz;
            CHECK(sl_batch_exec(b, 0, &sz) == 0 && sz.errors == 0, "filling: %s", sl_client_errmsg(c));
        }
    }
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.count = 1000;
    double t0 = now_s();
    size_t got = scan_count(c, b, &o, seen, NULL);
    double secs = now_s() - t0;
    for (int i = 0; i < SCAN_KEYS + SCAN_HASHES; i++) CHECK(seen[i] == 1, "key %d returned %d times", i, seen[i]);
    CHECK(got == SCAN_KEYS + SCAN_HASHES, "%zu keys", got);
    printf("ok   scan: %d primaries, %d replicas; %zu keys, each once, in %.2f s\n", primaries, replicas, got, secs);

    /* MATCH and TYPE */
    memset(seen, 0, SCAN_KEYS + SCAN_HASHES);
    o.match = "scan:1*";
    got = scan_count(c, b, &o, seen, NULL);
    size_t want = 0;
    for (int i = 0; i < SCAN_KEYS; i++) {
        char k[32];
        snprintf(k, sizeof k, "scan:%d", i);
        int m = k[5] == '1';
        want += m;
        CHECK(seen[i] == m, "MATCH scan:1*: %s returned %d times", k, seen[i]);
    }
    CHECK(got == want, "MATCH: %zu keys, want %zu", got, want);
    memset(seen, 0, SCAN_KEYS + SCAN_HASHES);
    o.match = NULL;
    o.type = "hash";
    got = scan_count(c, b, &o, seen, NULL);
    for (int i = 0; i < SCAN_KEYS + SCAN_HASHES; i++) CHECK(seen[i] == (i >= SCAN_KEYS), "TYPE hash: key %d returned %d times", i, seen[i]);
    printf("ok   scan: MATCH scan:1* %zu keys, TYPE hash %zu keys\n", want, got);
    o.type = NULL;

    /* a live reshard: slots of one primary move to another and back while scans run */
    static int owner[16384];
    slot_owners(c, owner);
    int from = owner[0], to = 0, slots[6], ns = 0;
    for (int sl = 0; sl < 16384; sl++) if (owner[sl] != from) { to = owner[sl]; break; }
    for (int sl = 0; sl < 16384 && ns < 6; sl += 997) if (owner[sl] == from) slots[ns++] = sl;
    CHECK(ns == 6 && to, "slots to move");
    char script[2048];
    int len = snprintf(script, sizeof script, "export SL_MIGRATE_COUNT=2 SL_MIGRATE_DELAY=0.002; h='%s/ci/redis-cluster.sh'; ", SL_SOURCE_DIR);
    for (int i = 0; i < ns; i++)
        len += snprintf(script + len, sizeof script - (size_t)len, "\"$h\" migrate '%s' %d %d %d >/dev/null || exit 1; ", dir, slots[i], from, to);
    for (int i = 0; i < ns; i++)
        len += snprintf(script + len, sizeof script - (size_t)len, "\"$h\" migrate '%s' %d %d %d >/dev/null || exit 1; ", dir, slots[i], to, from);
    CHECK(len < (int)sizeof script, "script too long");
    sl_stats st0;
    stats(c, &st0);
    g_reshard = spawn_sh(script);
    g_child = g_reshard;
    g_reshard_status = -1;
    o.count = 200;
    int scans = 0;
    size_t dups = 0;
    while (g_reshard_status < 0) {
        memset(seen, 0, SCAN_KEYS + SCAN_HASHES);
        got = scan_count(c, b, &o, seen, reshard_poll);
        for (int i = 0; i < SCAN_KEYS + SCAN_HASHES; i++) {
            CHECK(seen[i] >= 1, "during the reshard (scan %d), key %d was missed", scans, i);
            dups += seen[i] - 1u;
        }
        scans++;
        CHECK(scans < 200, "the reshard did not end within 200 scans");
    }
    CHECK(g_reshard_status == 0, "the reshard failed (exit %d): see the harness output", g_reshard_status);
    sl_stats st1;
    stats(c, &st1);
    printf("ok   scan: %d scans of %d keys during a reshard of %d slots (%d -> %d -> %d): none missed, "
           "%zu duplicates, %llu refreshes\n", scans, SCAN_KEYS + SCAN_HASHES, ns, from, to, from, dups,
           (unsigned long long)(st1.refreshes - st0.refreshes));
    /* a primary dies mid-pass (no replica takes over): the scan answers SL_EIO and stays
     * usable; after the node is restarted (empty: no persistence) it completes, with every
     * key of the other primaries */
    slot_owners(c, owner);
    int victim = owner[0]; /* may be the seed: the client knows the other primaries */
    memset(seen, 0, SCAN_KEYS + SCAN_HASHES);
    sl_scan *s;
    o.count = 100;
    CHECK(sl_scan_new(c, &o, &s) == 0, "sl_scan_new");
    int done = 0, failures = 0, pages = 0;
    while (!done) {
        int rc = sl_scan_next(s, b, &done);
        if (rc != 0) {
            CHECK(rc == SL_EIO && failures == 0, "sl_scan_next while %d is down: %s (%s)", victim, sl_strerror(rc),
                  sl_client_errmsg(c));
            failures++;
            CHECK(harness("'%s/ci/redis-cluster.sh' restart '%s' %d >/dev/null", SL_SOURCE_DIR, dir, victim) == 0,
                  "ci/redis-cluster.sh restart %d failed", victim);
            continue;
        }
        size_t n;
        const uint8_t *d;
        const sl_reply *r = sl_batch_replies(b, &n, &d, NULL);
        for (size_t i = 1; i < n; i++) {
            char k[48];
            memcpy(k, d + r[i].offset, r[i].len);
            k[r[i].len] = '\0';
            long idx = !strncmp(k, "scan:", 5) ? strtol(k + 5, NULL, 10) : SCAN_KEYS + strtol(k + 6, NULL, 10);
            seen[idx] = 1;
        }
        if (++pages == 1) /* slot 0's owner is scanned first: it dies after its first page */
            CHECK(harness("'%s/ci/redis-cluster.sh' kill '%s' %d >/dev/null", SL_SOURCE_DIR, dir, victim) == 0,
                  "ci/redis-cluster.sh kill %d failed", victim);
    }
    sl_scan_free(s);
    CHECK(failures == 1, "%d failures while %d was down, want 1", failures, victim);
    size_t lost = 0;
    for (int i = 0; i < SCAN_KEYS + SCAN_HASHES; i++) {
        char k[32];
        if (i < SCAN_KEYS) snprintf(k, sizeof k, "scan:%d", i);
        else snprintf(k, sizeof k, "scanh:%d", i - SCAN_KEYS);
        if (owner[sl_key_slot(k, strlen(k))] == victim) lost += !seen[i];
        else CHECK(seen[i], "key %s of a live primary missed across the restart of %d", k, victim);
    }
    printf("ok   scan: %d killed after the first page: one SL_EIO, then the scan completed after its restart "
           "(%zu of its keys gone with it)\n", victim, lost);
    sl_client_nodes_free(c, nodes);
    free(seen);
    flushall(c);
    sl_batch_free(b);
    sl_client_free(c);
}

/* ------------------------------------------------------------ scripts and functions */

/* calls= of "cmdstat_<name>" in the node's INFO commandstats. */
static long long cmdstat_calls(sl_client *c, const char *addr, const char *name)
{
    sl_route to = SL_ROUTE_INIT;
    to.kind = SL_ROUTE_NODE;
    to.node = addr;
    const char *argv[] = {"INFO", "commandstats"};
    const sl_reply *r;
    const uint8_t *d;
    CHECK(sl_client_command(c, &to, 2, argv, NULL, &r, &d) == 0, "INFO commandstats on %s", addr);
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:calls=", name);
    const char *t = (const char *)d + r->offset;
    for (size_t i = 0; i + strlen(key) <= r->len; i++)
        if (!memcmp(t + i, key, strlen(key))) return strtoll(t + i + strlen(key), NULL, 10);
    return 0;
}

static const sl_reply *cmd(sl_client *c, const sl_route *route, int argc, const char *const *argv, const uint8_t **d)
{
    const sl_reply *r;
    int rc = sl_client_command(c, route, argc, argv, NULL, &r, d);
    CHECK(rc == 0, "%s %s: %s (%s)", argv[0], argc > 1 ? argv[1] : "", sl_strerror(rc), sl_client_errmsg(c));
    return r;
}

/* EVALSHA sha 1 key through sl_batch_run_script; returns the integer reply. */
static long long run_script(sl_batch *b, const char *body, const char *sha, const char *key)
{
    char req[256];
    int len = snprintf(req, sizeof req, "*4\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$%zu\r\n%s\r\n", sha, strlen(key), key);
    sl_sizes sz;
    int rc = sl_batch_run_script(b, body, strlen(body), req, (size_t)len, 0, NULL, 0, NULL, 0, &sz);
    size_t n;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &n, &d, NULL);
    CHECK(rc == 0 && n == 1 && r[0].type == SL_REPLY_INTEGER, "EVALSHA on %s: %s", key, n ? rec_text(&r[0], d) : sl_strerror(rc));
    return r[0].value.integer;
}

static void scripts_test(int port)
{
    g_phase = "scripts";
    sl_client *c = client_new(port, 2);
    flushall(c);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    const uint8_t *d;
    const sl_reply *r;
    const char *flush[] = {"SCRIPT", "FLUSH"};
    r = cmd(c, NULL, 2, flush, &d);
    CHECK(rec_is(r, d, SL_REPLY_STATUS, "OK"), "SCRIPT FLUSH: %s", rec_text(r, d));
    const char *body = "return redis.call('INCR', KEYS[1])";
    char sha[41];
    sl_script_sha1(body, strlen(body), sha);
    const char *load[] = {"SCRIPT", "LOAD", body};
    r = cmd(c, NULL, 3, load, &d);
    CHECK(rec_is(r, d, SL_REPLY_STRING, sha), "SCRIPT LOAD: %s, want %s", rec_text(r, d), sha);
    const char *exists[] = {"SCRIPT", "EXISTS", sha};
    r = cmd(c, NULL, 3, exists, &d);
    CHECK(r[0].type == SL_REPLY_ARRAY && r[0].len == 1 && r[1].value.integer == 1, "SCRIPT EXISTS after LOAD");

    /* one key per primary: EVALSHA runs everywhere without a reload */
    sl_node_info *nodes;
    size_t nn;
    CHECK(sl_client_nodes(c, &nodes, &nn) == 0, "sl_client_nodes");
    char keys[8][32];
    int np = 0;
    for (size_t i = 0; i < nn && np < 8; i++) {
        if (!nodes[i].is_primary) continue;
        for (int k = 0;; k++) {
            snprintf(keys[np], sizeof keys[np], "sk:%d", k);
            int sl = sl_key_slot(keys[np], strlen(keys[np]));
            if (sl >= nodes[i].ranges[0] && sl <= nodes[i].ranges[1]) break;
        }
        np++;
    }
    CHECK(np == 3, "%d primaries", np);
    long long loads0[8];
    int pi = 0;
    for (size_t i = 0; i < nn; i++)
        if (nodes[i].is_primary) loads0[pi++] = cmdstat_calls(c, nodes[i].addr, "script|load");
    for (int k = 0; k < np; k++) CHECK(run_script(b, body, sha, keys[k]) == 1, "first run on %s", keys[k]);

    /* flushed on one node: the run there loads it once, then runs */
    const char *victim = NULL;
    int vi = -1;
    pi = 0;
    for (size_t i = 0; i < nn; i++)
        if (nodes[i].is_primary && pi++ == 1) { victim = nodes[i].addr; vi = 1; }
    sl_route to = SL_ROUTE_INIT;
    to.kind = SL_ROUTE_NODE;
    to.node = victim;
    cmd(c, &to, 2, flush, &d);
    r = cmd(c, NULL, 3, exists, &d);
    CHECK(r[0].type == SL_REPLY_ARRAY && r[1].value.integer == 0, "SCRIPT EXISTS after a flush on %s is not 0", victim);
    CHECK(run_script(b, body, sha, keys[vi]) == 2, "run after the flush");
    CHECK(run_script(b, body, sha, keys[vi]) == 3, "second run after the flush");
    long long reloads = cmdstat_calls(c, victim, "script|load") - loads0[vi];
    CHECK(reloads == 1, "%lld SCRIPT LOADs on %s after its flush, want 1", reloads, victim);
    pi = 0;
    for (size_t i = 0; i < nn; i++)
        if (nodes[i].is_primary && pi++ != vi)
            CHECK(cmdstat_calls(c, nodes[i].addr, "script|load") == loads0[pi - 1], "a reload on %s", nodes[i].addr);
    r = cmd(c, NULL, 3, exists, &d);
    CHECK(r[0].type == SL_REPLY_ARRAY && r[1].value.integer == 1, "SCRIPT EXISTS after the reload");
    printf("ok   scripts: SCRIPT LOAD on every primary (%s); EVALSHA on %d shards; flushed on %s: reloaded %lld time\n",
           sha, np, victim, reloads);

    /* functions */
    const char *fflush[] = {"FUNCTION", "FLUSH"};
    cmd(c, NULL, 2, fflush, &d);
    const char *lib = "#!lua name=sllib\nredis.register_function('slf', function(keys, args) return redis.call('INCR', keys[1]) end)";
    const char *fload[] = {"FUNCTION", "LOAD", lib};
    r = cmd(c, NULL, 3, fload, &d);
    CHECK(rec_is(r, d, SL_REPLY_STRING, "sllib"), "FUNCTION LOAD: %s", rec_text(r, d));
    for (int k = 0; k < np; k++) {
        const char *fc[] = {"FCALL", "slf", "1", keys[k]};
        r = cmd(c, NULL, 4, fc, &d);
        CHECK(r->type == SL_REPLY_INTEGER && r->value.integer == (k == vi ? 4 : 2), "FCALL on %s: %s", keys[k], rec_text(r, d));
        const char *fro[] = {"FCALL_RO", "slf", "1", keys[k]};
        int rc = sl_client_command(c, NULL, 4, fro, NULL, &r, &d);
        CHECK(rc == SL_ESERVER && r->type == SL_REPLY_ERROR, "FCALL_RO of a writing function on %s is not refused", keys[k]);
    }
    const char *fdel[] = {"FUNCTION", "DELETE", "sllib"};
    r = cmd(c, NULL, 3, fdel, &d);
    CHECK(rec_is(r, d, SL_REPLY_STATUS, "OK"), "FUNCTION DELETE: %s", rec_text(r, d));
    for (int k = 0; k < np; k++) {
        const char *fc[] = {"FCALL", "slf", "1", keys[k]};
        int rc = sl_client_command(c, NULL, 4, fc, NULL, &r, &d);
        CHECK(rc == SL_ESERVER, "FCALL after FUNCTION DELETE on %s: %s", keys[k], rec_text(r, d));
    }
    printf("ok   scripts: FUNCTION LOAD/DELETE on every primary, FCALL on %d shards\n", np);
    sl_client_nodes_free(c, nodes);
    flushall(c);
    sl_batch_free(b);
    sl_client_free(c);
}

/* ------------------------------------------------------------ TLS failures */

static void tls_errors_test(void)
{
    g_phase = "tls-errors";
    int tport = atoi(env_req("SL_ITEST_TLS_PORT")), xport = atoi(env_req("SL_ITEST_TLS_EXPIRED_PORT"));
    int pport = atoi(env_req("SL_ITEST_NOTLS_PORT"));
    char url[96];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", tport);
    /* rediss:// with mutual TLS: works, and every command's reply is there. */
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.tls = tls_new("ca.crt", 1, NULL);
    sl_client *c = NULL;
    char err[512] = "";
    int rc = sl_client_new(&c, &o, err, sizeof err);
    sl_tls_free(o.tls);
    CHECK(rc == 0, "%s: %s", url, err);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    for (int i = 0; i < 1000; i++) {
        char k[32];
        snprintf(k, sizeof k, "tls:%d", i);
        const char *set[] = {"SET", k, k};
        appendv(b, 3, set);
    }
    sl_sizes sz;
    CHECK(sl_batch_exec(b, 0, &sz) == 0 && sz.errors == 0 && sz.commands == 1000, "1000 SETs over TLS");
    sl_batch_free(b);
    sl_client_free(c);
    /* No client certificate where the server requires one. */
    refused(url, tls_new("ca.crt", 0, NULL), SL_ETLS, "TLS");
    /* A CA that did not sign the server's certificate. */
    refused(url, tls_new("other-ca.crt", 1, NULL), SL_ETLS, "certificate verify failed");
    /* The server's certificate names 127.0.0.1 and localhost, not this. */
    refused(url, tls_new("ca.crt", 1, "wrong.example"), SL_ETLS,
            "host name mismatch: expected wrong.example, certificate names 127.0.0.1, ::1, localhost");
    /* An expired certificate. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", xport);
    refused(url, tls_new("ca.crt", 1, NULL), SL_ETLS, "certificate verify failed: certificate has expired");
    /* A plaintext server under TLS. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", pport);
    refused(url, tls_new("ca.crt", 1, NULL), SL_ETLS, "TLS to 127.0.0.1:");
    /* A TLS server without TLS. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", tport);
    refused(url, NULL, SL_EIO, "if the port speaks TLS, use rediss://");
    printf("tls-errors: ok\n");
}

/* One TLS client of the host-name cluster: the seed verified by its own announced name (the
 * seed is dialled by address, so server_name says which name its certificate has). */
static sl_client *hostname_client(int port, sl_tls_node_names policy)
{
    char url[64], name[64], err[512] = "";
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    snprintf(name, sizeof name, "node-%d.slotlane.test", port);
    sl_tls_options t = SL_TLS_OPTIONS_INIT;
    t.ca_file = tls_file("ca.crt");
    t.cert_file = tls_file("client.crt");
    t.key_file = tls_file("client.key");
    t.server_name = name;
    t.node_names = policy;
    sl_tls *tls = NULL;
    int rc = sl_tls_new(&tls, &t, err, sizeof err);
    CHECK(rc == 0, "sl_tls_new: %s: %s", sl_strerror(rc), err);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.tls = tls;
    o.connect_timeout_ms = 5000;
    o.command_timeout_ms = 10000;
    sl_client *c = NULL;
    rc = sl_client_new(&c, &o, err, sizeof err);
    sl_tls_free(tls); /* the client holds its own reference */
    CHECK(rc == 0 && c, "sl_client_new(%s): %s: %s", url, sl_strerror(rc), err);
    return c;
}

/* Whether data[0, len) holds the string want. */
static int contains(const uint8_t *data, size_t len, const char *want)
{
    size_t w = strlen(want);
    for (size_t i = 0; i + w <= len; i++)
        if (!memcmp(data + i, want, w)) return 1;
    return 0;
}

static void tls_hostnames_test(int port)
{
    g_phase = "tls-hostnames";
    enum { N = 1000 };
    /* Verified by announced host name: everything works, on every node. */
    sl_client *c = hostname_client(port, SL_TLS_NODES_HOSTNAME);
    sl_node_info *nodes = NULL;
    size_t nn = 0;
    CHECK(sl_client_nodes(c, &nodes, &nn) == 0 && nn >= 3, "the node list has the 3 primaries");
    sl_client_nodes_free(c, nodes);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    char k[32];
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "host:%d", i);
        const char *set[] = {"SET", k, k};
        appendv(b, 3, set);
    }
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "host:%d", i);
        const char *get[] = {"GET", k};
        appendv(b, 2, get);
    }
    sl_sizes sz;
    int rc = sl_batch_exec(b, 0, &sz);
    CHECK(rc == 0 && sz.commands == 2 * N, "exec: %s (%s)", sl_strerror(rc), sl_client_errmsg(c));
    size_t nrec;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "host:%d", i);
        CHECK(rec_is(&r[i], d, SL_REPLY_STATUS, "OK"), "SET %s: %s", k, rec_text(&r[i], d));
        CHECK(rec_is(&r[N + i], d, SL_REPLY_STRING, k), "GET %s: %s", k, rec_text(&r[N + i], d));
    }
    sl_batch_free(b);
    sl_client_free(c);
    printf("ok   tls-hostnames: %d SET/GET over every slot, each node verified by its announced name\n", N);

    /* Verified by address (the default): the seed passes (server_name), every other node's
     * certificate names only its host name, so its commands fail with the mismatch. */
    c = hostname_client(port, SL_TLS_NODES_ADDRESS);
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "host:%d", i);
        const char *get[] = {"GET", k};
        appendv(b, 2, get);
    }
    rc = sl_batch_exec(b, 0, &sz);
    CHECK(rc == 0, "exec: %s (%s)", sl_strerror(rc), sl_client_errmsg(c));
    r = sl_batch_replies(b, &nrec, &d, NULL);
    size_t good = 0, mismatch = 0;
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "host:%d", i);
        if (rec_is(&r[i], d, SL_REPLY_STRING, k)) {
            good++;
        } else {
            const char *want = "host name mismatch: expected 127.0.0.1";
            CHECK(r[i].type == SL_REPLY_ERROR && r[i].len >= strlen(want) &&
                      contains(d + r[i].offset, r[i].len, want),
                  "GET %s by address: expected an error naming \"%s\", got %s", k, want, rec_text(&r[i], d));
            mismatch++;
        }
    }
    CHECK(good > 0 && mismatch > 0 && good + mismatch == N, "%zu served by the seed, %zu refused", good, mismatch);
    sl_batch_free(b);
    sl_client_free(c);
    printf("ok   tls-hostnames: by address, %zu GETs on the seed served, %zu on the other nodes refused\n", good,
           mismatch);
}

/* ------------------------------------------------------------ main */

/* ------------------------------------------------------------ replicas and failover */

/* The replica cluster (SL_ITEST_REPLICA_PORT, SL_ITEST_REPLICA_DIR): 3 primaries x 1
 * replica. Events of every client of a test, counted (the callback runs on each client's
 * own thread). */
static atomic_int g_failover_events, g_down_events;
static char g_failover_addr[64];

static void on_event(void *ctx, sl_event_type type, const char *addr)
{
    (void)ctx;
    if (type == SL_EVENT_FAILOVER && atomic_fetch_add(&g_failover_events, 1) == 0)
        snprintf(g_failover_addr, sizeof g_failover_addr, "%s", addr);
    if (type == SL_EVENT_NODE_DOWN) atomic_fetch_add(&g_down_events, 1);
}

static sl_client *replica_client(int port, sl_read_from rf)
{
    char url[64], err[256] = "";
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.command_timeout_ms = 15000; /* longer than a promotion (cluster-node-timeout 2 s) */
    o.connect_timeout_ms = 1000;
    o.read_from = rf;
    o.on_event = on_event;
    o.tls = g_tls;
    sl_client *c = NULL;
    int rc = sl_client_new(&c, &o, err, sizeof err);
    CHECK(rc == 0 && c, "sl_client_new(%s): %s: %s", url, sl_strerror(rc), err);
    return c;
}

/* The client's node list: primaries[] and, per primary, its replica's address. */
typedef struct {
    int n;
    char primary[8][64];
    char replica[8][64];
} shard_list;

static void shards_of(sl_client *c, shard_list *s)
{
    CHECK(sl_client_refresh(c) == 0, "refresh: %s", sl_client_errmsg(c));
    sl_node_info *nodes;
    size_t n;
    CHECK(sl_client_nodes(c, &nodes, &n) == 0, "sl_client_nodes");
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n && s->n < 8; i++)
        if (nodes[i].is_primary) snprintf(s->primary[s->n++], 64, "%s", nodes[i].addr);
    for (size_t i = 0; i < n; i++)
        if (!nodes[i].is_primary && nodes[i].primary >= 0 && nodes[i].primary < s->n)
            snprintf(s->replica[nodes[i].primary], 64, "%s", nodes[i].addr);
    sl_client_nodes_free(c, nodes);
    CHECK(s->n == 3, "%d primaries", s->n);
    for (int i = 0; i < 3; i++) CHECK(s->replica[i][0], "primary %s has no replica in the map", s->primary[i]);
}

static int port_of(const char *addr) { return atoi(strrchr(addr, ':') + 1); }

/* DBSIZE of the node addr (a replica answers for its own copy). */
static long long dbsize_on(sl_client *c, const char *addr)
{
    sl_route to = SL_ROUTE_INIT;
    to.kind = SL_ROUTE_NODE;
    to.node = addr;
    const char *argv[] = {"DBSIZE"};
    const sl_reply *r;
    const uint8_t *d;
    CHECK(sl_client_command(c, &to, 1, argv, NULL, &r, &d) == 0 && r->type == SL_REPLY_INTEGER, "DBSIZE on %s: %s",
          addr, sl_client_errmsg(c));
    return r->value.integer;
}

#define RR_KEYS 300

/* read_from = prefer-replica: GETs land on the replicas (their INFO commandstats), none on
 * the primaries; with one replica stopped, its shard's GETs go to its primary and none
 * fails; restarted, it serves them again. */
static void replica_reads_test(int port, const char *dir)
{
    g_phase = "replica-reads";
    sl_client *c = replica_client(port, SL_READ_PREFER_REPLICA);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    flushall(c);
    shard_list s;
    shards_of(c, &s);
    char k[RR_KEYS][24];
    for (int i = 0; i < RR_KEYS; i++) {
        snprintf(k[i], sizeof k[i], "rr:%d", i);
        const char *set[] = {"SET", k[i], k[i]};
        appendv(b, 3, set);
    }
    sl_sizes sz;
    CHECK(sl_batch_exec(b, 0, &sz) == 0 && sz.errors == 0, "SETs: %s", sl_client_errmsg(c));
    /* the replicas have the writes before the reads start: each replica's DBSIZE reaches its
     * primary's (WAIT would run on a leased connection that made no write: it proves nothing) */
    for (int i = 0; i < 3; i++) {
        double t0 = now_s();
        while (dbsize_on(c, s.replica[i]) != dbsize_on(c, s.primary[i])) {
            CHECK(now_s() - t0 < 30, "replica %s never caught up with %s", s.replica[i], s.primary[i]);
            usleep(2000);
        }
    }
    long long p0[3], r0[3], p1[3], r1[3];
    for (int i = 0; i < 3; i++) {
        p0[i] = cmdstat_calls(c, s.primary[i], "get");
        r0[i] = cmdstat_calls(c, s.replica[i], "get");
    }
    for (int i = 0; i < RR_KEYS; i++) {
        const char *get[] = {"GET", k[i]};
        appendv(b, 2, get);
    }
    CHECK(sl_batch_exec(b, 0, &sz) == 0 && sz.errors == 0, "GETs: %s", sl_client_errmsg(c));
    size_t nrec;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
    for (int i = 0; i < RR_KEYS; i++) CHECK(rec_is(&r[i], d, SL_REPLY_STRING, k[i]), "GET %s: %s", k[i], rec_text(&r[i], d));
    long long on_replicas = 0, on_primaries = 0;
    for (int i = 0; i < 3; i++) {
        p1[i] = cmdstat_calls(c, s.primary[i], "get");
        r1[i] = cmdstat_calls(c, s.replica[i], "get");
        on_replicas += r1[i] - r0[i];
        on_primaries += p1[i] - p0[i];
        CHECK(r1[i] - r0[i] > 0, "replica %s served no GET", s.replica[i]);
    }
    CHECK(on_replicas == RR_KEYS && on_primaries == 0, "GETs: %lld on replicas, %lld on primaries", on_replicas,
          on_primaries);
    sl_stats st;
    stats(c, &st);
    CHECK(st.replica_reads >= RR_KEYS, "replica_reads %llu", (unsigned long long)st.replica_reads);

    /* one replica down: its shard's reads go to the primary, none fails */
    CHECK(harness("'%s/ci/redis-cluster.sh' kill '%s' %d >/dev/null", SL_SOURCE_DIR, dir, port_of(s.replica[0])) == 0,
          "kill of replica %s", s.replica[0]);
    for (int i = 0; i < 3; i++) p0[i] = cmdstat_calls(c, s.primary[i], "get");
    int down_batches = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < RR_KEYS; i++) {
            const char *get[] = {"GET", k[i]};
            appendv(b, 2, get);
        }
        CHECK(sl_batch_exec(b, 0, &sz) == 0, "GETs with a replica down: %s", sl_client_errmsg(c));
        r = sl_batch_replies(b, &nrec, &d, NULL);
        for (int i = 0; i < RR_KEYS; i++)
            CHECK(rec_is(&r[i], d, SL_REPLY_STRING, k[i]), "GET %s with replica %s down: %s", k[i], s.replica[0],
                  rec_text(&r[i], d));
        down_batches++;
    }
    long long prim0 = cmdstat_calls(c, s.primary[0], "get") - p0[0];
    CHECK(prim0 > 0, "primary %s served none of its shard's GETs while its replica was down", s.primary[0]);
    CHECK(harness("'%s/ci/redis-cluster.sh' restart '%s' %d >/dev/null", SL_SOURCE_DIR, dir, port_of(s.replica[0])) == 0,
          "restart of replica %s", s.replica[0]);
    printf("ok   replica-reads: %d GETs on the 3 replicas (their INFO commandstats), 0 on the primaries; replica %s "
           "down: %d x %d GETs all answered, %lld of them by its primary\n",
           RR_KEYS, s.replica[0], down_batches, RR_KEYS, prim0);
    sl_batch_free(b);
    sl_client_free(c);
}

/* The load of the failover tests: 8 callers (threads, a client each), each a loop of
 * batches of GET and INCR over keys of every shard. */
#define LOAD_THREADS 8
#define LOAD_PAIRS 24
typedef struct {
    int id, port;
    sl_read_from rf;
    atomic_int *stop;
    atomic_int batches;            /* completed */
    int after_event;               /* batches started after the failover event was seen */
    unsigned long long gets, incrs, get_fail, incr_fail, incr_fail_documented, other_fail;
    char first_fail[200];
} loader;

static void *load_main(void *arg)
{
    loader *l = arg;
    sl_client *c = replica_client(l->port, l->rf);
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    char key[LOAD_PAIRS][32], cnt[LOAD_PAIRS][32];
    for (int i = 0; i < LOAD_PAIRS; i++) {
        snprintf(key[i], sizeof key[i], "load:%d:%d", l->id, i);
        snprintf(cnt[i], sizeof cnt[i], "cnt:%d:%d", l->id, i);
    }
    while (!atomic_load(l->stop)) {
        int seen = atomic_load(&g_failover_events) > 0;
        for (int i = 0; i < LOAD_PAIRS; i++) {
            const char *g[] = {"GET", key[i]};
            const char *n[] = {"INCR", cnt[i]};
            appendv(b, 2, g);
            appendv(b, 2, n);
        }
        sl_sizes sz;
        (void)sl_batch_exec(b, 0, &sz);
        size_t nrec;
        const uint8_t *d;
        const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
        CHECK(nrec == 2 * LOAD_PAIRS, "loader %d: %zu records", l->id, nrec);
        for (int i = 0; i < 2 * LOAD_PAIRS; i++) {
            int is_get = i % 2 == 0;
            if (is_get) l->gets++; else l->incrs++;
            if (r[i].type != SL_REPLY_ERROR) {
                CHECK(is_get ? r[i].type == SL_REPLY_NIL : r[i].type == SL_REPLY_INTEGER, "loader %d: %s answered type %d",
                      l->id, is_get ? "GET" : "INCR", r[i].type);
                continue;
            }
            const char *t = rec_text(&r[i], d);
            if (!l->first_fail[0]) snprintf(l->first_fail, sizeof l->first_fail, "%s: %s", is_get ? "GET" : "INCR", t);
            if (is_get) l->get_fail++;
            else {
                l->incr_fail++;
                if (r[i].flags == SL_ERR_IO && strstr(t, "(the command was sent: it may have been executed)"))
                    l->incr_fail_documented++;
            }
        }
        if (seen) l->after_event++;
        atomic_fetch_add(&l->batches, 1);
    }
    sl_batch_free(b);
    sl_client_free(c);
    return NULL;
}

/* Every slot answers: one GET per slot (a key of each of the 16384), all in one batch. */
static void every_slot_served(sl_client *c)
{
    static char keys[16384][16];
    static int have[16384];
    int left = 16384;
    memset(have, 0, sizeof have);
    for (int i = 0; left > 0; i++) {
        char k[16];
        snprintf(k, sizeof k, "s%d", i);
        int s = sl_key_slot(k, strlen(k));
        if (have[s]) continue;
        have[s] = 1;
        memcpy(keys[s], k, sizeof k);
        left--;
    }
    sl_batch *b;
    CHECK(sl_batch_new(c, &b) == 0, "sl_batch_new");
    for (int s = 0; s < 16384; s++) {
        const char *g[] = {"GET", keys[s]};
        appendv(b, 2, g);
    }
    sl_sizes sz;
    int rc = sl_batch_exec(b, 0, &sz);
    size_t nrec;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &nrec, &d, NULL);
    CHECK(rc == 0 && sz.errors == 0, "every slot: %s, %llu errors, the first: %s", sl_strerror(rc),
          (unsigned long long)sz.errors, nrec ? rec_text(&r[0], d) : "");
    sl_batch_free(b);
}

/* kill -9 of a primary (or, graceful, CLUSTER FAILOVER on its replica) under the load:
 * the test waits for the failover event, then every slot is served again; no GET failed
 * (a read in flight to the dead node is retried, one that never reached it waits for the
 * promotion), every failed INCR carries the documented error, and a graceful failover
 * fails nothing. */
static void replica_failover_test(int port, const char *dir, int graceful)
{
    g_phase = graceful ? "replica-failover" : "replica-kill";
    atomic_store(&g_failover_events, 0);
    atomic_store(&g_down_events, 0);
    sl_client *c = replica_client(port, SL_READ_PRIMARY);
    flushall(c);
    shard_list s;
    shards_of(c, &s);
    /* the victim: a primary other than the seed */
    int vi = port_of(s.primary[0]) != port ? 0 : 1;
    atomic_int stop = 0;
    static loader ld[LOAD_THREADS];
    pthread_t th[LOAD_THREADS];
    for (int t = 0; t < LOAD_THREADS; t++) {
        memset(&ld[t], 0, sizeof ld[t]);
        ld[t].id = t;
        ld[t].port = port;
        ld[t].rf = SL_READ_PRIMARY;
        ld[t].stop = &stop;
        CHECK(pthread_create(&th[t], NULL, load_main, &ld[t]) == 0, "pthread_create");
    }
    /* every caller under way before the failure */
    for (int t = 0; t < LOAD_THREADS; t++)
        while (atomic_load(&ld[t].batches) < 3) usleep(1000);
    double t0 = now_s();
    pid_t job;
    char script[1024];
    if (graceful)
        snprintf(script, sizeof script, "'%s/ci/redis-cluster.sh' failover '%s' %d >/dev/null", SL_SOURCE_DIR, dir,
                 port_of(s.replica[vi]));
    else
        snprintf(script, sizeof script, "'%s/ci/redis-cluster.sh' kill '%s' %d >/dev/null", SL_SOURCE_DIR, dir,
                 port_of(s.primary[vi]));
    job = spawn_sh(script);
    g_child = job;
    /* the failover event (a bound only so that a hang fails instead of hanging) */
    while (atomic_load(&g_failover_events) == 0) {
        CHECK(now_s() - t0 < 60, "no failover event within 60 s");
        usleep(2000);
    }
    double t_event = now_s();
    CHECK(wait_exit(job) == 0, "%s", script);
    g_child = -1;
    /* then every caller completes two more batches, started after the event */
    for (int t = 0; t < LOAD_THREADS; t++)
        while (ld[t].after_event < 2) {
            CHECK(now_s() - t_event < 60, "loader %d: no batch after the event within 60 s", t);
            usleep(1000);
        }
    atomic_store(&stop, 1);
    for (int t = 0; t < LOAD_THREADS; t++) pthread_join(th[t], NULL);
    every_slot_served(c);
    unsigned long long gets = 0, incrs = 0, gf = 0, inf = 0, infd = 0;
    const char *first = "";
    for (int t = 0; t < LOAD_THREADS; t++) {
        gets += ld[t].gets;
        incrs += ld[t].incrs;
        gf += ld[t].get_fail;
        inf += ld[t].incr_fail;
        infd += ld[t].incr_fail_documented;
        if (!first[0] && ld[t].first_fail[0]) first = ld[t].first_fail;
    }
    CHECK(gf == 0, "%llu of %llu GETs failed (the first: %s)", gf, gets, first);
    CHECK(inf == infd, "%llu failed INCRs, %llu with the documented error (the first: %s)", inf, infd, first);
    if (graceful) CHECK(inf == 0, "%llu INCRs failed in a graceful failover (the first: %s)", inf, first);
    printf("ok   %s: %s %s under %d callers: failover event %.2f s after it began (new primary %s); "
           "GETs %llu, 0 failed; INCRs %llu, %llu failed%s; node-down events %d; every slot served after\n",
           g_phase, graceful ? "CLUSTER FAILOVER on" : "kill -9 of", graceful ? s.replica[vi] : s.primary[vi],
           LOAD_THREADS, t_event - t0, g_failover_addr, gets, incrs, inf,
           inf ? " (each SL_ERR_IO \"...may have been executed\")" : "", atomic_load(&g_down_events));
    if (!graceful) {
        /* the old primary comes back as a replica of the new one */
        CHECK(harness("'%s/ci/redis-cluster.sh' restart '%s' %d >/dev/null", SL_SOURCE_DIR, dir,
                      port_of(s.primary[vi])) == 0, "restart of %s", s.primary[vi]);
    }
    sl_client_free(c);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    const char *seed = getenv("SL_ITEST_SEED");
    g_rng = seed && *seed ? strtoull(seed, NULL, 10) : 1;
    if (!g_rng) g_rng = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int all = !strcmp(what, "all");
    int known = 0;
    if (getenv("SL_ITEST_TLS_DIR") && *getenv("SL_ITEST_TLS_DIR")) g_tls = tls_new("ca.crt", 1, NULL);
    if (all || !strcmp(what, "random") || !strcmp(what, "random-plain")) {
        known = 1;
        int pport = atoi(env_req("SL_ITEST_PLAIN_PORT"));
        random_pipelines(pport, 2, "plain");
        random_pipelines(pport, 3, "plain");
    }
    if (all || !strcmp(what, "random") || !strcmp(what, "random-cluster")) {
        known = 1;
        int cport = atoi(env_req("SL_ITEST_CLUSTER_PORT"));
        random_pipelines(cport, 2, "cluster");
        random_pipelines(cport, 3, "cluster");
    }
    if (all || !strcmp(what, "migrate")) {
        known = 1;
        migrate_test(atoi(env_req("SL_ITEST_CLUSTER_PORT")), env_req("SL_ITEST_CLUSTER_DIR"));
    }
    if (all || !strcmp(what, "kill")) {
        known = 1;
        kill_test(atoi(env_req("SL_ITEST_CLUSTER_PORT")), env_req("SL_ITEST_CLUSTER_DIR"));
    }
    if (all || !strcmp(what, "scan")) {
        known = 1;
        scan_test(atoi(env_req("SL_ITEST_CLUSTER_PORT")), env_req("SL_ITEST_CLUSTER_DIR"));
    }
    if (all || !strcmp(what, "scripts")) {
        known = 1;
        scripts_test(atoi(env_req("SL_ITEST_CLUSTER_PORT")));
    }
    if (!strcmp(what, "replica-reads")) {
        known = 1;
        replica_reads_test(atoi(env_req("SL_ITEST_REPLICA_PORT")), env_req("SL_ITEST_REPLICA_DIR"));
    }
    if (!strcmp(what, "replica-kill") || !strcmp(what, "replica-failover")) {
        known = 1;
        replica_failover_test(atoi(env_req("SL_ITEST_REPLICA_PORT")), env_req("SL_ITEST_REPLICA_DIR"),
                              !strcmp(what, "replica-failover"));
    }
    if (!strcmp(what, "tls-errors")) {
        known = 1;
        tls_errors_test();
    }
    if (!strcmp(what, "tls-hostnames")) {
        known = 1;
        tls_hostnames_test(atoi(env_req("SL_ITEST_CLUSTER_PORT")));
    }
    if (!known) {
        fprintf(stderr, "usage: itest_cluster [random|random-plain|random-cluster|migrate|kill|scan|scripts|tls-errors|"
                        "tls-hostnames|replica-reads|replica-kill|replica-failover|all]\n");
        return 2;
    }
    sl_tls_free(g_tls);
    return 0;
}
