/* sl-cluster-cost — the C cluster-cost tool of DESIGN.md ("The benchmarks").
 *
 * What it measures: the client's CPU per request on three paths of libslotlane —
 *   plain     SL_MODE_PLAIN against one node, keys key:0..key:N-1
 *   cluster   SL_MODE_CLUSTER, keys key:0..key:N-1 spread over every shard
 *   one-node  SL_MODE_CLUSTER, every key in one hash tag ({t}:key:N)
 * × GET and SET × pipeline depths, plus a comparison row: hiredis (plain only).
 *
 * Method: keys are filled first with 32-byte values that depend on the key. W worker
 * threads each own a client and a batch (hiredis: a redisContext), pre-encode their
 * pipelines as RESP bytes (as the bindings do) and run each with one sl_batch_run call
 * (--argv: sl_batch_append_argv per command + sl_batch_exec). After a warmup, every
 * worker snapshots its counters and waits at a barrier; the main thread takes
 * getrusage(RUSAGE_SELF) and the clock, releases the workers for the timed loop, stops
 * them, waits until every one has finished its last pipeline and takes getrusage again.
 * So the CPU window holds exactly the timed pipelines of every worker. Every reply is
 * checked (GET: exactly the key's value; SET: +OK); any error or wrong reply fails the
 * row: no figure, an error message and a non-zero exit.
 *
 * Figures per row and round: user and system CPU ns per request of the whole process,
 * bytes the client wrote per request (sl_stats.bytes_written deltas summed over
 * workers; hiredis: the bytes it appended to its output buffers), the bytes the caller
 * handed over (payload) and the servers' total_net_input_bytes deltas when readable,
 * requests per second. Medians over rounds; every round is kept in the JSON record
 * (schema: bench/records/README.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "slotlane.h"

#ifndef SL_HAVE_HIREDIS
#define SL_HAVE_HIREDIS 0
#endif
#if SL_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

#ifndef SL_SOURCE_DIR
#define SL_SOURCE_DIR "."
#endif

#define VALUE_LEN 32
#define MAX_ROUNDS 50
#define MAX_WORKERS 256
#define MAX_NODES 64
#define ERRLEN 512
#define SCHEMA "slotlane.bench.cluster-cost/1"

enum { ROW_PLAIN = 0, ROW_CLUSTER = 1, ROW_ONENODE = 2, NROWKINDS };
enum { OP_GET = 0, OP_SET = 1, NOPS };
enum { CL_SLOTLANE = 0, CL_HIREDIS = 1 };
enum { API_RESP = 0, API_ARGV = 1 };

static const char *row_names[] = {"plain", "cluster", "one-node"};
static const char *op_names[] = {"GET", "SET"};

/* ------------------------------------------------------------ configuration */

static struct {
    const char *plain_url;
    const char *cluster_url;
    int rows[NROWKINDS];     /* selected */
    int ops[NOPS];
    int depths[16];
    int ndepths;
    double seconds, warmup;
    int rounds, workers, nkeys;
    int argv_api;
    int with_slotlane, with_hiredis;
    const char *json;        /* file, or a directory ("dir/") for an auto-named record */
    const char *server_desc;
    const char *invocation;
    int timeout_ms;
    int quick;
    int fill;
    const char *tls_ca, *tls_cert, *tls_key; /* --tls-ca: every slotlane client over TLS */
    sl_tls *tls;             /* the one configuration all workers' clients share */
} cfg;

/* The key spaces and values: read-only after setup, shared by every worker. */
static char **g_keys[2];     /* [0] key:N, [1] {t}:key:N */
static size_t *g_klen[2];
static char (*g_vals)[VALUE_LEN];

/* ------------------------------------------------------------------ helpers */

/* snprintf into a fixed buffer where truncation is acceptable (messages, names): one
 * place, so that every optimisation level's -Wformat-truncation stays quiet. */
__attribute__((format(printf, 3, 4))) static int fmtbuf(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    return n;
}

/* Copies src into dst[cap], truncating, always NUL-terminated. */
__attribute__((unused)) static void scopy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sl-cluster-cost: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

static void *xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p) die("out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_ns(struct timeval tv) { return (double)tv.tv_sec * 1e9 + (double)tv.tv_usec * 1e3; }

static void sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void utc_iso(char *buf, size_t cap, time_t t)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void value_of(int idx, char *out)
{
    /* 32 bytes that depend on the key index: "v0001234:" + letters. */
    char head[16];
    int n = fmtbuf(head, sizeof head, "v%07d:", idx);
    memcpy(out, head, (size_t)n);
    for (int i = n; i < VALUE_LEN; i++) out[i] = (char)('a' + (idx * 7 + i * 3) % 26);
}

/* "redis://[user:pass@]host:port[/db]" or "host:port" (first of a comma list) -> host, port. */
__attribute__((unused)) static int parse_hostport(const char *url, char *host, size_t hostcap, int *port)
{
    const char *p = url;
    if (strncmp(p, "redis://", 8) == 0) p += 8;
    const char *at = strchr(p, '@');
    const char *comma = strchr(p, ',');
    if (at && (!comma || at < comma)) p = at + 1;
    size_t n = strcspn(p, ",/");
    char tmp[256];
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    char *colon = strrchr(tmp, ':');
    if (!colon) {
        *port = 6379;
    } else {
        *colon = 0;
        *port = atoi(colon + 1);
    }
    if (fmtbuf(host, hostcap, "%s", tmp) >= (int)hostcap) return -1;
    return *port > 0 ? 0 : -1;
}

static int parse_list(const char *s, const char *const *names, int n, int *sel)
{
    for (int i = 0; i < n; i++) sel[i] = 0;
    char *dup = xstrdup(s), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < n; i++) {
            if (strcasecmp(t, names[i]) == 0) { sel[i] = 1; found = 1; }
        }
        if (!found && strcasecmp(t, "onenode") == 0 && n == NROWKINDS) { sel[ROW_ONENODE] = 1; found = 1; }
        if (!found) { free(dup); return -1; }
    }
    free(dup);
    return 0;
}

/* ------------------------------------------------------------ results */

typedef struct round_result {
    int ok;
    char err[ERRLEN];
    uint64_t requests, pipelines;
    double wall_s, user_ns, sys_ns;
    uint64_t bytes_written;       /* what the client wrote to its sockets */
    uint64_t payload_bytes;       /* what the caller handed to the client (RESP of the commands) */
    int64_t server_in;            /* servers' total_net_input_bytes delta; -1 unknown */
    uint64_t moved, ask, tryagain, refreshes, connects, reconnects;
    /* how disturbed the round was */
    uint64_t nvcsw, nivcsw;       /* this process's voluntary / involuntary context switches */
    double load1;                 /* /proc/loadavg at the start of the timed loop */
    double others_share;          /* CPU time of other processes on the client's CPUs, as a share
                                     of those CPUs' wall time (-1 unknown) */
    double steal_share;           /* hypervisor steal on the client's CPUs, likewise (-1 unknown) */
} round_result;

/* Busy and steal jiffies (USER_HZ) summed over the CPUs this process may run on. */
static cpu_set_t g_cpus;
static int cpu_jiffies(double *busy, double *steal)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    char line[512];
    *busy = *steal = 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        int cpu;
        unsigned long long v[8] = {0};
        if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;
        if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7]) < 9)
            continue;
        if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &g_cpus)) continue;
        /* user nice system idle iowait irq softirq steal */
        *busy += (double)(v[0] + v[1] + v[2] + v[5] + v[6]);
        *steal += (double)v[7];
        found++;
    }
    fclose(f);
    return found ? found : -1;
}

static double load1(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

typedef struct row {
    int client, api, kind, op, depth;
    int nrounds;
    round_result r[MAX_ROUNDS];
    int failed;
    char err[ERRLEN];
    /* medians */
    double m_user, m_sys, m_cpu, m_bytes, m_payload, m_server, m_rps, m_extra;
    int have_server;
} row;

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    if (n == 0) return NAN;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------ one measurement */

typedef struct shared {
    atomic_int phase;        /* 0 warmup, 1 timed, 2 stop */
    atomic_int fail;
    pthread_barrier_t bar;
} shared;

typedef struct worker {
    int id;
    const row *rw;
    shared *sh;
    pthread_t th;
    /* results */
    int failed;
    char err[ERRLEN];
    uint64_t pipelines;
    sl_stats s0, s1;
    uint64_t payload;
    uint64_t hi_bytes;       /* hiredis: bytes appended in the timed loop */
} worker;

static void wfail(worker *w, const char *fmt, ...)
{
    if (w->failed) return;
    va_list ap;
    va_start(ap, fmt);
    int n = fmtbuf(w->err, sizeof w->err, "worker %d: ", w->id);
    vsnprintf(w->err + n, sizeof w->err - (size_t)n, fmt, ap);
    va_end(ap);
    w->failed = 1;
    atomic_store(&w->sh->fail, 1);
}

static void bar(shared *sh) { pthread_barrier_wait(&sh->bar); }

/* The pipelines of one worker: the key indices of pipeline p are
 * (start + p*depth + j) % nkeys, j < depth. */
typedef struct plan {
    int npipes, depth, start, nkeys, keyset, op;
    uint8_t *buf;            /* all pipelines' RESP, concatenated */
    size_t *off, *len;       /* per pipeline */
} plan;

static int key_index(const plan *pl, int p, int j) { return (int)(((long)pl->start + (long)p * pl->depth + j) % pl->nkeys); }

static size_t encode_cmd(char *out, size_t cap, int op, const char *key, size_t klen, const char *val)
{
    int n;
    if (op == OP_GET)
        n = fmtbuf(out, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%.*s\r\n", klen, (int)klen, key);
    else
        n = fmtbuf(out, cap, "*3\r\n$3\r\nSET\r\n$%zu\r\n%.*s\r\n$%d\r\n%.*s\r\n", klen, (int)klen, key,
                     VALUE_LEN, VALUE_LEN, val);
    return (size_t)n;
}

static void plan_build(plan *pl, const row *rw, int wid)
{
    pl->depth = rw->depth;
    pl->nkeys = cfg.nkeys;
    pl->op = rw->op;
    pl->keyset = rw->kind == ROW_ONENODE ? 1 : 0;
    pl->npipes = (cfg.nkeys + rw->depth - 1) / rw->depth;
    pl->start = (int)((long)wid * cfg.nkeys / cfg.workers);
    size_t cap = (size_t)pl->npipes * (size_t)pl->depth * 128;
    pl->buf = xmalloc(cap);
    pl->off = xmalloc(sizeof(size_t) * (size_t)pl->npipes);
    pl->len = xmalloc(sizeof(size_t) * (size_t)pl->npipes);
    size_t pos = 0;
    for (int p = 0; p < pl->npipes; p++) {
        pl->off[p] = pos;
        for (int j = 0; j < pl->depth; j++) {
            int k = key_index(pl, p, j);
            pos += encode_cmd((char *)pl->buf + pos, cap - pos, pl->op, g_keys[pl->keyset][k],
                              g_klen[pl->keyset][k], g_vals[k]);
        }
        pl->len[p] = pos - pl->off[p];
    }
}

static void plan_free(plan *pl)
{
    free(pl->buf);
    free(pl->off);
    free(pl->len);
}

/* Checks the replies of pipeline p; 0 or -1 (w->err set). */
static int check_slotlane(worker *w, const plan *pl, int p, sl_batch *b, int rc, const sl_sizes *sz)
{
    size_t n = 0, dlen = 0;
    const uint8_t *data = NULL;
    const sl_reply *rec = sl_batch_replies(b, &n, &data, &dlen);
    if (rc != 0 || sz->errors != 0 || sz->commands != (uint64_t)pl->depth || n != (size_t)pl->depth || !rec) {
        /* find the first error record for the message */
        for (size_t i = 0; rec && i < n; i++) {
            if (rec[i].type == SL_REPLY_ERROR) {
                int k = key_index(pl, p, (int)i);
                wfail(w, "%s %s: error reply (kind %d): %.*s (exec rc %d %s)", op_names[pl->op],
                      g_keys[pl->keyset][k], rec[i].flags, (int)(rec[i].len > 200 ? 200 : rec[i].len),
                      (const char *)data + rec[i].offset, rc, sl_strerror(rc));
                return -1;
            }
        }
        wfail(w, "pipeline of %d: exec rc %d (%s), %llu commands, %llu errors, %zu records", pl->depth, rc,
              sl_strerror(rc), (unsigned long long)sz->commands, (unsigned long long)sz->errors, n);
        return -1;
    }
    for (int j = 0, k = key_index(pl, p, 0); j < pl->depth; j++, k = k + 1 == pl->nkeys ? 0 : k + 1) {
        const sl_reply *r = &rec[j];
        if (pl->op == OP_GET) {
            if (r->type != SL_REPLY_STRING || r->len != VALUE_LEN ||
                memcmp(data + r->offset, g_vals[k], VALUE_LEN) != 0) {
                wfail(w, "GET %s: wrong reply (type %d, len %u): %.*s", g_keys[pl->keyset][k], r->type, r->len,
                      (int)(r->len > 64 ? 64 : r->len), r->len ? (const char *)data + r->offset : "");
                return -1;
            }
        } else {
            if (r->type != SL_REPLY_STATUS || r->len != 2 || memcmp(data + r->offset, "OK", 2) != 0) {
                wfail(w, "SET %s: wrong reply (type %d, len %u): %.*s", g_keys[pl->keyset][k], r->type, r->len,
                      (int)(r->len > 64 ? 64 : r->len), r->len ? (const char *)data + r->offset : "");
                return -1;
            }
        }
    }
    return 0;
}

static int run_slotlane_pipe(worker *w, const plan *pl, int p, sl_batch *b)
{
    sl_sizes sz;
    int rc;
    memset(&sz, 0, sizeof sz);
    if (w->rw->api == API_RESP) {
        rc = sl_batch_run(b, pl->buf + pl->off[p], pl->len[p], (size_t)pl->depth, cfg.timeout_ms, NULL, 0, NULL,
                          0, &sz);
    } else {
        sl_batch_reset(b);
        static const char *const names[] = {"GET", "SET"};
        static const size_t nlen[] = {3, 3};
        for (int j = 0, k = key_index(pl, p, 0); j < pl->depth; j++, k = k + 1 == pl->nkeys ? 0 : k + 1) {
            const char *argv[3] = {names[pl->op], g_keys[pl->keyset][k], g_vals[k]};
            size_t lens[3] = {nlen[pl->op], g_klen[pl->keyset][k], VALUE_LEN};
            rc = sl_batch_append_argv(b, NULL, pl->op == OP_GET ? 2 : 3, argv, lens);
            if (rc != 0) {
                wfail(w, "sl_batch_append_argv: %d (%s)", rc, sl_strerror(rc));
                return -1;
            }
        }
        rc = sl_batch_exec(b, cfg.timeout_ms, &sz);
    }
    return check_slotlane(w, pl, p, b, rc, &sz);
}

static void *slotlane_worker(void *arg)
{
    worker *w = arg;
    const row *rw = w->rw;
    shared *sh = w->sh;
    sl_client *c = NULL;
    sl_batch *b = NULL;
    plan pl;
    memset(&pl, 0, sizeof pl);
    plan_build(&pl, rw, w->id);

    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = rw->kind == ROW_PLAIN ? cfg.plain_url : cfg.cluster_url;
    o.mode = rw->kind == ROW_PLAIN ? SL_MODE_PLAIN : SL_MODE_CLUSTER;
    o.command_timeout_ms = cfg.timeout_ms;
    o.tls = cfg.tls;
    char em[256] = "";
    int rc = sl_client_new(&c, &o, em, sizeof em);
    if (rc != 0) wfail(w, "sl_client_new(%s): %d (%s): %s", o.url, rc, sl_strerror(rc), em);
    if (!w->failed && (rc = sl_batch_new(c, &b)) != 0) wfail(w, "sl_batch_new: %d (%s)", rc, sl_strerror(rc));

    bar(sh); /* B0: set up */
    int p = 0;
    while (!w->failed && atomic_load_explicit(&sh->phase, memory_order_relaxed) == 0) {
        if (run_slotlane_pipe(w, &pl, p, b)) break;
        if (++p == pl.npipes) p = 0;
    }
    w->s0.version = w->s1.version = SL_STATS_VERSION;
    w->s0.size = w->s1.size = sizeof(sl_stats);
    if (!w->failed && (rc = sl_client_stats(c, &w->s0)) != 0) wfail(w, "sl_client_stats: %d", rc);
    bar(sh); /* B1: warmed up, counters read */
    bar(sh); /* B2: go */
    uint64_t n = 0, payload = 0;
    while (!w->failed && atomic_load_explicit(&sh->phase, memory_order_relaxed) == 1) {
        if (run_slotlane_pipe(w, &pl, p, b)) break;
        payload += pl.len[p];
        n++;
        if (++p == pl.npipes) p = 0;
    }
    if (!w->failed && (rc = sl_client_stats(c, &w->s1)) != 0) wfail(w, "sl_client_stats: %d", rc);
    w->pipelines = n;
    w->payload = payload;
    bar(sh); /* B3: stopped */
    bar(sh); /* B4: CPU read; clean up outside the window */
    sl_batch_free(b);
    sl_client_free(c);
    plan_free(&pl);
    return NULL;
}

#if SL_HAVE_HIREDIS
static int run_hiredis_pipe(worker *w, const plan *pl, int p, redisContext *c, uint64_t *appended)
{
    static const char *const names[] = {"GET", "SET"};
    for (int j = 0, k = key_index(pl, p, 0); j < pl->depth; j++, k = k + 1 == pl->nkeys ? 0 : k + 1) {
        const char *argv[3] = {names[pl->op], g_keys[pl->keyset][k], g_vals[k]};
        size_t lens[3] = {3, g_klen[pl->keyset][k], VALUE_LEN};
        if (redisAppendCommandArgv(c, pl->op == OP_GET ? 2 : 3, argv, lens) != REDIS_OK) {
            wfail(w, "redisAppendCommandArgv: %s", c->errstr);
            return -1;
        }
    }
    *appended += sdslen(c->obuf);
    for (int j = 0, k = key_index(pl, p, 0); j < pl->depth; j++, k = k + 1 == pl->nkeys ? 0 : k + 1) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
            wfail(w, "redisGetReply: %s", c->errstr);
            return -1;
        }
        int bad;
        if (pl->op == OP_GET)
            bad = r->type != REDIS_REPLY_STRING || r->len != VALUE_LEN || memcmp(r->str, g_vals[k], VALUE_LEN) != 0;
        else
            bad = r->type != REDIS_REPLY_STATUS || r->len != 2 || memcmp(r->str, "OK", 2) != 0;
        if (bad) {
            wfail(w, "%s %s: wrong reply (hiredis type %d, len %zu): %.*s", op_names[pl->op],
                  g_keys[pl->keyset][k], r->type, (size_t)r->len, (int)(r->len > 64 ? 64 : r->len),
                  r->str ? r->str : "");
            freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    return 0;
}

static void *hiredis_worker(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    plan pl;
    memset(&pl, 0, sizeof pl);
    plan_build(&pl, w->rw, w->id);
    char host[256];
    int port = 0;
    redisContext *c = NULL;
    if (parse_hostport(cfg.plain_url, host, sizeof host, &port) != 0) {
        wfail(w, "cannot parse %s", cfg.plain_url);
    } else {
        struct timeval tv = {2, 0};
        c = redisConnectWithTimeout(host, port, tv);
        if (!c || c->err) {
            wfail(w, "hiredis connect %s:%d: %s", host, port, c ? c->errstr : "out of memory");
        } else {
            struct timeval tt = {cfg.timeout_ms / 1000, (cfg.timeout_ms % 1000) * 1000};
            redisSetTimeout(c, tt);
        }
    }
    bar(sh); /* B0 */
    int p = 0;
    uint64_t scratch = 0;
    while (!w->failed && atomic_load_explicit(&sh->phase, memory_order_relaxed) == 0) {
        if (run_hiredis_pipe(w, &pl, p, c, &scratch)) break;
        if (++p == pl.npipes) p = 0;
    }
    bar(sh); /* B1 */
    bar(sh); /* B2 */
    uint64_t n = 0, payload = 0, appended = 0;
    while (!w->failed && atomic_load_explicit(&sh->phase, memory_order_relaxed) == 1) {
        if (run_hiredis_pipe(w, &pl, p, c, &appended)) break;
        payload += pl.len[p];
        n++;
        if (++p == pl.npipes) p = 0;
    }
    w->pipelines = n;
    w->payload = payload;
    w->hi_bytes = appended;
    bar(sh); /* B3 */
    bar(sh); /* B4 */
    if (c) redisFree(c);
    plan_free(&pl);
    return NULL;
}
#endif

/* ------------------------------------------------------------ servers (via hiredis) */

typedef struct server_set {
    int n;
    char host[MAX_NODES][64];
    int port[MAX_NODES];
#if SL_HAVE_HIREDIS
    redisContext *ctx[MAX_NODES];
#endif
} server_set;

static server_set g_plain_srv, g_cluster_srv;

#if SL_HAVE_HIREDIS
static redisContext *hconnect(const char *host, int port)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        if (c) redisFree(c);
        return NULL;
    }
    struct timeval tt = {10, 0};
    redisSetTimeout(c, tt);
    return c;
}

/* The value of "field:" in an INFO reply, copied to out; 0 or -1. */
static int info_field(const char *info, const char *field, char *out, size_t cap)
{
    size_t fl = strlen(field);
    const char *p = info;
    while (p && *p) {
        if (strncmp(p, field, fl) == 0 && p[fl] == ':') {
            p += fl + 1;
            size_t n = strcspn(p, "\r\n");
            if (n >= cap) n = cap - 1;
            memcpy(out, p, n);
            out[n] = 0;
            return 0;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

static char *hinfo(redisContext *c, const char *section)
{
    redisReply *r = redisCommand(c, "INFO %s", section);
    if (!r) return NULL;
    char *s = NULL;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) s = xstrdup(r->str);
    freeReplyObject(r);
    return s;
}

/* Sum of total_net_input_bytes over the set; -1 when any is unreadable. */
static int64_t servers_input_bytes(server_set *s)
{
    int64_t sum = 0;
    if (s->n == 0) return -1;
    for (int i = 0; i < s->n; i++) {
        if (!s->ctx[i]) return -1;
        char *info = hinfo(s->ctx[i], "stats");
        char v[64];
        if (!info || info_field(info, "total_net_input_bytes", v, sizeof v) != 0) {
            free(info);
            return -1;
        }
        free(info);
        sum += strtoll(v, NULL, 10);
    }
    return sum;
}

static void servers_open_plain(void)
{
    char host[256];
    int port;
    if (!cfg.plain_url || parse_hostport(cfg.plain_url, host, sizeof host, &port) != 0) return;
    g_plain_srv.n = 1;
    scopy(g_plain_srv.host[0], sizeof g_plain_srv.host[0], host);
    g_plain_srv.port[0] = port;
    g_plain_srv.ctx[0] = hconnect(host, port);
}

/* The primaries of the cluster, from CLUSTER SLOTS of the seed. */
static void servers_open_cluster(void)
{
    char host[256];
    int port;
    if (!cfg.cluster_url || parse_hostport(cfg.cluster_url, host, sizeof host, &port) != 0) return;
    redisContext *seed = hconnect(host, port);
    if (!seed) return;
    redisReply *r = redisCommand(seed, "CLUSTER SLOTS");
    if (r && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *e = r->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) continue;
            redisReply *node = e->element[2];
            if (node->type != REDIS_REPLY_ARRAY || node->elements < 2) continue;
            const char *h = node->element[0]->str ? node->element[0]->str : "";
            int pt = (int)node->element[1]->integer;
            if (!*h) h = host;
            int dup = 0;
            for (int k = 0; k < g_cluster_srv.n; k++)
                if (g_cluster_srv.port[k] == pt && strcmp(g_cluster_srv.host[k], h) == 0) dup = 1;
            if (dup || g_cluster_srv.n >= MAX_NODES) continue;
            scopy(g_cluster_srv.host[g_cluster_srv.n], sizeof g_cluster_srv.host[0], h);
            g_cluster_srv.port[g_cluster_srv.n] = pt;
            g_cluster_srv.n++;
        }
    }
    if (r) freeReplyObject(r);
    redisFree(seed);
    /* sort by port for a stable record */
    for (int i = 1; i < g_cluster_srv.n; i++)
        for (int j = i; j > 0 && g_cluster_srv.port[j - 1] > g_cluster_srv.port[j]; j--) {
            char th[sizeof g_cluster_srv.host[0]];
            memcpy(th, g_cluster_srv.host[j], sizeof th);
            memcpy(g_cluster_srv.host[j], g_cluster_srv.host[j - 1], sizeof th);
            memcpy(g_cluster_srv.host[j - 1], th, sizeof th);
            int tp = g_cluster_srv.port[j];
            g_cluster_srv.port[j] = g_cluster_srv.port[j - 1];
            g_cluster_srv.port[j - 1] = tp;
        }
    for (int i = 0; i < g_cluster_srv.n; i++) g_cluster_srv.ctx[i] = hconnect(g_cluster_srv.host[i], g_cluster_srv.port[i]);
}
#else
static int64_t servers_input_bytes(server_set *s) { (void)s; return -1; }
static void servers_open_plain(void) {}
static void servers_open_cluster(void) {}
#endif

/* ------------------------------------------------------------ fill */

static int fill_slotlane(const char *url, sl_mode mode, int keyset, char *err, size_t errcap)
{
    sl_client *c = NULL;
    sl_batch *b = NULL;
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = mode;
    o.command_timeout_ms = cfg.timeout_ms;
    o.tls = cfg.tls;
    char em[256] = "";
    int rc = sl_client_new(&c, &o, em, sizeof em);
    if (rc != 0) {
        fmtbuf(err, errcap, "sl_client_new(%s): %d (%s): %s", url, rc, sl_strerror(rc), em);
        return -1;
    }
    if ((rc = sl_batch_new(c, &b)) != 0) {
        fmtbuf(err, errcap, "sl_batch_new: %d (%s)", rc, sl_strerror(rc));
        sl_client_free(c);
        return -1;
    }
    char *buf = xmalloc(256 * 128);
    int ret = 0;
    for (int k0 = 0; k0 < cfg.nkeys && ret == 0; k0 += 256) {
        size_t len = 0;
        int cnt = 0;
        for (int k = k0; k < cfg.nkeys && k < k0 + 256; k++, cnt++)
            len += encode_cmd(buf + len, 256 * 128 - len, OP_SET, g_keys[keyset][k], g_klen[keyset][k], g_vals[k]);
        sl_sizes sz;
        memset(&sz, 0, sizeof sz);
        rc = sl_batch_run(b, buf, len, (size_t)cnt, cfg.timeout_ms, NULL, 0, NULL, 0, &sz);
        size_t n = 0;
        const uint8_t *data = NULL;
        const sl_reply *rec = sl_batch_replies(b, &n, &data, NULL);
        if (rc != 0 || sz.errors || n != (size_t)cnt || !rec) {
            fmtbuf(err, errcap, "fill %s: rc %d (%s), %llu errors, %zu records: %s", url, rc, sl_strerror(rc),
                     (unsigned long long)sz.errors, n, sl_client_errmsg(c));
            ret = -1;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (rec[i].type != SL_REPLY_STATUS || rec[i].len != 2 || memcmp(data + rec[i].offset, "OK", 2)) {
                fmtbuf(err, errcap, "fill %s: SET %s answered type %d: %.*s", url, g_keys[keyset][k0 + (int)i],
                         rec[i].type, (int)(rec[i].len > 100 ? 100 : rec[i].len), (const char *)data + rec[i].offset);
                ret = -1;
                break;
            }
        }
    }
    free(buf);
    sl_batch_free(b);
    sl_client_free(c);
    return ret;
}

#if SL_HAVE_HIREDIS
static int fill_hiredis(const char *url, int keyset, char *err, size_t errcap)
{
    char host[256];
    int port;
    if (parse_hostport(url, host, sizeof host, &port) != 0) {
        fmtbuf(err, errcap, "cannot parse %s", url);
        return -1;
    }
    redisContext *c = hconnect(host, port);
    if (!c) {
        fmtbuf(err, errcap, "hiredis connect %s:%d failed", host, port);
        return -1;
    }
    int ret = 0;
    for (int k0 = 0; k0 < cfg.nkeys && ret == 0; k0 += 256) {
        int cnt = 0;
        for (int k = k0; k < cfg.nkeys && k < k0 + 256; k++, cnt++) {
            const char *argv[3] = {"SET", g_keys[keyset][k], g_vals[k]};
            size_t lens[3] = {3, g_klen[keyset][k], VALUE_LEN};
            redisAppendCommandArgv(c, 3, argv, lens);
        }
        for (int i = 0; i < cnt; i++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
                fmtbuf(err, errcap, "fill %s: %s", url, c->errstr);
                ret = -1;
                break;
            }
            if (ret == 0 && (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0)) {
                fmtbuf(err, errcap, "fill %s: SET %s answered type %d: %s", url, g_keys[keyset][k0 + i], r->type,
                         r->str ? r->str : "");
                ret = -1;
            }
            freeReplyObject(r);
        }
    }
    redisFree(c);
    return ret;
}
#endif

/* ------------------------------------------------------------ run one row once */

static void measure(row *rw, round_result *out)
{
    memset(out, 0, sizeof *out);
    out->server_in = -1;
    int nw = cfg.workers;
    shared sh;
    atomic_init(&sh.phase, 0);
    atomic_init(&sh.fail, 0);
    pthread_barrier_init(&sh.bar, NULL, (unsigned)nw + 1);
    worker *ws = xcalloc((size_t)nw, sizeof *ws);
    server_set *srv = rw->kind == ROW_PLAIN ? &g_plain_srv : &g_cluster_srv;

    for (int i = 0; i < nw; i++) {
        ws[i].id = i;
        ws[i].rw = rw;
        ws[i].sh = &sh;
        void *(*fn)(void *) = slotlane_worker;
#if SL_HAVE_HIREDIS
        if (rw->client == CL_HIREDIS) fn = hiredis_worker;
#endif
        if (pthread_create(&ws[i].th, NULL, fn, &ws[i]) != 0) die("pthread_create failed");
    }
    pthread_barrier_wait(&sh.bar); /* B0 */
    double until = now_s() + cfg.warmup;
    while (now_s() < until && !atomic_load(&sh.fail)) sleep_s(0.01);
    atomic_store(&sh.phase, 1);
    pthread_barrier_wait(&sh.bar); /* B1 */
    int64_t in0 = servers_input_bytes(srv);
    struct rusage ru0, ru1;
    double busy0 = 0, steal0 = 0, busy1 = 0, steal1 = 0;
    int ncpu = cpu_jiffies(&busy0, &steal0);
    out->load1 = load1();
    getrusage(RUSAGE_SELF, &ru0);
    double t0 = now_s();
    pthread_barrier_wait(&sh.bar); /* B2 */
    until = t0 + cfg.seconds;
    while (now_s() < until && !atomic_load(&sh.fail)) sleep_s(0.01);
    atomic_store(&sh.phase, 2);
    pthread_barrier_wait(&sh.bar); /* B3 */
    double t1 = now_s();
    getrusage(RUSAGE_SELF, &ru1);
    if (ncpu > 0 && cpu_jiffies(&busy1, &steal1) != ncpu) ncpu = -1;
    pthread_barrier_wait(&sh.bar); /* B4 */
    int64_t in1 = servers_input_bytes(srv);
    for (int i = 0; i < nw; i++) pthread_join(ws[i].th, NULL);
    pthread_barrier_destroy(&sh.bar);

    out->ok = 1;
    for (int i = 0; i < nw; i++) {
        if (ws[i].failed) {
            out->ok = 0;
            fmtbuf(out->err, sizeof out->err, "%s", ws[i].err);
            break;
        }
    }
    for (int i = 0; i < nw; i++) {
        out->pipelines += ws[i].pipelines;
        out->payload_bytes += ws[i].payload;
        if (rw->client == CL_HIREDIS) {
            out->bytes_written += ws[i].hi_bytes;
        } else {
            out->bytes_written += ws[i].s1.bytes_written - ws[i].s0.bytes_written;
            out->moved += ws[i].s1.moved - ws[i].s0.moved;
            out->ask += ws[i].s1.ask - ws[i].s0.ask;
            out->tryagain += ws[i].s1.tryagain - ws[i].s0.tryagain;
            out->refreshes += ws[i].s1.refreshes - ws[i].s0.refreshes;
            out->connects += ws[i].s1.connects - ws[i].s0.connects;
            out->reconnects += ws[i].s1.reconnects - ws[i].s0.reconnects;
        }
    }
    out->requests = out->pipelines * (uint64_t)rw->depth;
    out->wall_s = t1 - t0;
    out->user_ns = tv_ns(ru1.ru_utime) - tv_ns(ru0.ru_utime);
    out->sys_ns = tv_ns(ru1.ru_stime) - tv_ns(ru0.ru_stime);
    out->nvcsw = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
    out->nivcsw = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
    out->others_share = out->steal_share = -1;
    if (ncpu > 0 && out->wall_s > 0) {
        double hz = (double)sysconf(_SC_CLK_TCK), cap = out->wall_s * ncpu;
        double others = (busy1 - busy0) / hz - (out->user_ns + out->sys_ns) / 1e9;
        out->others_share = others < 0 ? 0 : others / cap;
        out->steal_share = (steal1 - steal0) / hz / cap;
    }
    out->server_in = (in0 >= 0 && in1 >= 0) ? in1 - in0 : -1;
    if (out->ok && out->requests == 0) {
        out->ok = 0;
        fmtbuf(out->err, sizeof out->err, "no request completed in %.1f s", cfg.seconds);
    }
    free(ws);
}

/* ------------------------------------------------------------ machine / versions */

static char g_hostname[256], g_cpu_model[256], g_kernel[256], g_affinity[256];
static char g_git_commit[64] = "unknown", g_git_dirty[8] = "null";
static long g_cores;

static void read_machine(void)
{
    if (gethostname(g_hostname, sizeof g_hostname) != 0) fmtbuf(g_hostname, sizeof g_hostname, "unknown");
    g_hostname[sizeof g_hostname - 1] = 0;
    fmtbuf(g_cpu_model, sizeof g_cpu_model, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ' || *c == '\t') c++;
                    c[strcspn(c, "\n")] = 0;
                    fmtbuf(g_cpu_model, sizeof g_cpu_model, "%s", c);
                }
                break;
            }
        }
        fclose(f);
    }
    g_cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct utsname u;
    if (uname(&u) == 0) fmtbuf(g_kernel, sizeof g_kernel, "%s %s %s", u.sysname, u.release, u.machine);
    cpu_set_t set;
    CPU_ZERO(&set);
    g_affinity[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        g_cpus = set;
        size_t pos = 0;
        for (int i = 0; i < CPU_SETSIZE && pos + 8 < sizeof g_affinity; i++)
            if (CPU_ISSET(i, &set)) pos += (size_t)fmtbuf(g_affinity + pos, sizeof g_affinity - pos, "%s%d", pos ? "," : "", i);
    }
    /* read-only git queries (no optional locks: nothing is written) */
    f = popen("GIT_OPTIONAL_LOCKS=0 git -C '" SL_SOURCE_DIR "' rev-parse HEAD 2>/dev/null", "r");
    if (f) {
        char line[128];
        if (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (strlen(line) == 40) fmtbuf(g_git_commit, sizeof g_git_commit, "%s", line);
        }
        pclose(f);
    }
    f = popen("GIT_OPTIONAL_LOCKS=0 git -C '" SL_SOURCE_DIR "' status --porcelain 2>/dev/null | head -c 1", "r");
    if (f) {
        char line[8];
        fmtbuf(g_git_dirty, sizeof g_git_dirty, "%s", fgets(line, sizeof line, f) ? "true" : "false");
        pclose(f);
    }
}

/* INFO server fields of a node, for the record. */
typedef struct srvinfo {
    char version[64], mode[32], pid[32], cpus[128], name[64];
} srvinfo;

static void node_info(const char *host, int port, srvinfo *si)
{
    memset(si, 0, sizeof *si);
#if SL_HAVE_HIREDIS
    redisContext *c = hconnect(host, port);
    if (!c) return;
    char *info = hinfo(c, "server");
    if (info) {
        info_field(info, "redis_version", si->version, sizeof si->version);
        info_field(info, "redis_mode", si->mode, sizeof si->mode);
        info_field(info, "process_id", si->pid, sizeof si->pid);
        if (info_field(info, "server_name", si->name, sizeof si->name) != 0)
            info_field(info, "slotlane_version", si->name, sizeof si->name);
        free(info);
    }
    redisFree(c);
    if (si->pid[0]) {
        char path[64], line[256];
        fmtbuf(path, sizeof path, "/proc/%s/status", si->pid);
        FILE *f = fopen(path, "r");
        if (f) {
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
                    char *v = line + 18;
                    while (*v == ' ' || *v == '\t') v++;
                    v[strcspn(v, "\n")] = 0;
                    scopy(si->cpus, sizeof si->cpus, v);
                }
            fclose(f);
        }
    }
#else
    (void)host;
    (void)port;
#endif
}

/* ------------------------------------------------------------ JSON */

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void jnum(FILE *f, double v)
{
    if (isnan(v) || isinf(v)) fputs("null", f);
    else if (v == floor(v) && fabs(v) < 1e15) fprintf(f, "%.0f", v);
    else fprintf(f, "%.3f", v);
}

static const char *client_name(const row *r)
{
    if (r->client == CL_HIREDIS) return "hiredis";
    return r->api == API_ARGV ? "slotlane-argv" : "slotlane";
}

/* ------------------------------------------------------------ targets */

typedef struct target {
    char name[128];
    const char *op;
    int depth;
    double value, limit;
    int met;
} target;

static target g_targets[64];
static int g_ntargets;

static row *find_row(row *rows, int nrows, int client, int kind, int op, int depth)
{
    for (int i = 0; i < nrows; i++)
        if (rows[i].client == client && rows[i].kind == kind && rows[i].op == op && rows[i].depth == depth)
            return &rows[i];
    return NULL;
}

static void add_target(const char *name, int op, int depth, double value, double limit, int eq)
{
    if (g_ntargets >= 64 || isnan(value)) return;
    target *t = &g_targets[g_ntargets++];
    fmtbuf(t->name, sizeof t->name, "%s", name);
    t->op = op_names[op];
    t->depth = depth;
    t->value = value;
    t->limit = limit;
    t->met = eq ? fabs(value - limit) < 1e-9 : value <= limit + 1e-9;
}

static void eval_targets(row *rows, int nrows)
{
    for (int op = 0; op < NOPS; op++)
        for (int d = 0; d < cfg.ndepths; d++) {
            int depth = cfg.depths[d];
            row *pl = find_row(rows, nrows, CL_SLOTLANE, ROW_PLAIN, op, depth);
            row *cl = find_row(rows, nrows, CL_SLOTLANE, ROW_CLUSTER, op, depth);
            row *on = find_row(rows, nrows, CL_SLOTLANE, ROW_ONENODE, op, depth);
            row *hi = find_row(rows, nrows, CL_HIREDIS, ROW_PLAIN, op, depth);
            if (pl && pl->failed) pl = NULL;
            if (cl && cl->failed) cl = NULL;
            if (on && on->failed) on = NULL;
            if (hi && hi->failed) hi = NULL;
            if (pl && on) add_target("one-node user CPU <= 1.05 x plain", op, depth, on->m_user / pl->m_user, 1.05, 0);
            if (pl && cl)
                add_target(depth >= 64 ? "cluster user CPU <= 1.3 x plain" : "cluster user CPU <= 1.5 x plain", op,
                           depth, cl->m_user / pl->m_user, depth >= 64 ? 1.3 : 1.5, 0);
            if (pl) add_target("plain: bytes written per request beyond the commands' RESP = 0", op, depth, pl->m_extra, 0, 1);
            if (cl) add_target("cluster: bytes written per request beyond the commands' RESP = 0", op, depth, cl->m_extra, 0, 1);
            if (on) add_target("one-node: bytes written per request beyond the commands' RESP = 0", op, depth, on->m_extra, 0, 1);
            if (pl && hi) add_target("plain user CPU <= 0.25 x hiredis", op, depth, pl->m_user / hi->m_user, 0.25, 0);
        }
}

/* ------------------------------------------------------------ record */

static char g_started[32], g_finished[32];
static int g_argc;
static char **g_argv;

static void write_record(FILE *f, row *rows, int nrows, int all_ok)
{
    srvinfo si;
    fprintf(f, "{\n  \"schema\": \"%s\",\n  \"benchmark\": \"cluster-cost\",\n", SCHEMA);
    fprintf(f, "  \"tool\": \"sl-cluster-cost (bench/cluster-cost/cluster_cost.c)\",\n");
    fprintf(f, "  \"ok\": %s,\n", all_ok ? "true" : "false");
    fprintf(f, "  \"started_at\": \"%s\",\n  \"finished_at\": \"%s\",\n", g_started, g_finished);
    fprintf(f, "  \"machine\": {\"hostname\": ");
    jstr(f, g_hostname);
    fprintf(f, ", \"cpu_model\": ");
    jstr(f, g_cpu_model);
    fprintf(f, ", \"cores\": %ld, \"kernel\": ", g_cores);
    jstr(f, g_kernel);
    fprintf(f, ", \"client_cpus\": ");
    jstr(f, g_affinity);
    fprintf(f, "},\n");
    fprintf(f, "  \"versions\": {\"slotlane\": ");
    jstr(f, sl_version());
#if SL_HAVE_HIREDIS
    fprintf(f, ", \"hiredis\": \"%d.%d.%d\"", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
#else
    fprintf(f, ", \"hiredis\": null");
#endif
    {
        srvinfo a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        if (g_plain_srv.n) node_info(g_plain_srv.host[0], g_plain_srv.port[0], &a);
        if (g_cluster_srv.n) node_info(g_cluster_srv.host[0], g_cluster_srv.port[0], &b);
        fprintf(f, ", \"server_plain\": ");
        if (a.version[0]) jstr(f, a.version); else fputs("null", f);
        fprintf(f, ", \"server_cluster\": ");
        if (b.version[0]) jstr(f, b.version); else fputs("null", f);
    }
    fprintf(f, ", \"compiler\": ");
#ifdef __VERSION__
    jstr(f, "gcc " __VERSION__);
#else
    fputs("null", f);
#endif
    fprintf(f, "},\n");
    fprintf(f, "  \"git\": {\"commit\": ");
    jstr(f, g_git_commit);
    fprintf(f, ", \"dirty\": %s},\n", g_git_dirty);
    fprintf(f, "  \"command\": [");
    for (int i = 0; i < g_argc; i++) {
        if (i) fputs(", ", f);
        jstr(f, g_argv[i]);
    }
    fprintf(f, "],\n  \"invocation\": ");
    if (cfg.invocation) jstr(f, cfg.invocation); else fputs("null", f);
    fprintf(f, ",\n  \"servers\": {\n    \"description\": ");
    if (cfg.server_desc) jstr(f, cfg.server_desc); else fputs("null", f);
    for (int s = 0; s < 2; s++) {
        server_set *ss = s == 0 ? &g_plain_srv : &g_cluster_srv;
        const char *url = s == 0 ? cfg.plain_url : cfg.cluster_url;
        fprintf(f, ",\n    \"%s\": ", s == 0 ? "plain" : "cluster");
        if (!url) {
            fputs("null", f);
            continue;
        }
        fprintf(f, "{\"url\": ");
        jstr(f, url);
        fprintf(f, ", \"nodes\": [");
        for (int i = 0; i < ss->n; i++) {
            node_info(ss->host[i], ss->port[i], &si);
            fprintf(f, "%s\n      {\"addr\": \"%s:%d\", \"version\": ", i ? "," : "", ss->host[i], ss->port[i]);
            jstr(f, si.version);
            fprintf(f, ", \"redis_mode\": ");
            jstr(f, si.mode);
            fprintf(f, ", \"server_name\": ");
            jstr(f, si.name);
            fprintf(f, ", \"pid\": ");
            jstr(f, si.pid);
            fprintf(f, ", \"cpus\": ");
            jstr(f, si.cpus);
            fputc('}', f);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n  },\n");
    fprintf(f, "  \"config\": {\"workers\": %d, \"seconds\": ", cfg.workers);
    jnum(f, cfg.seconds);
    fprintf(f, ", \"warmup_seconds\": ");
    jnum(f, cfg.warmup);
    fprintf(f, ", \"rounds\": %d, \"keys\": %d, \"value_bytes\": %d, \"api\": \"%s\", \"timeout_ms\": %d, \"quick\": %s,"
               " \"order\": \"round-major: every row once per round, in table order\", \"tls\": %s},\n",
            cfg.rounds, cfg.nkeys, VALUE_LEN, cfg.argv_api ? "argv" : "resp", cfg.timeout_ms, cfg.quick ? "true" : "false",
            cfg.tls ? "true" : "false");
    fprintf(f, "  \"rows\": [");
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        fprintf(f, "%s\n    {\"client\": \"%s\", \"api\": \"%s\", \"row\": \"%s\", \"op\": \"%s\", \"depth\": %d, \"ok\": %s",
                i ? "," : "", client_name(r), r->client == CL_HIREDIS ? "argv" : (r->api == API_ARGV ? "argv" : "resp"),
                row_names[r->kind], op_names[r->op], r->depth, r->failed ? "false" : "true");
        fprintf(f, ", \"bytes_source\": \"%s\"",
                r->client == CL_HIREDIS ? "bytes appended to hiredis output buffers" : "sl_stats.bytes_written");
        if (r->failed) {
            fprintf(f, ", \"error\": ");
            jstr(f, r->err);
        }
        fprintf(f, ",\n     \"rounds\": [");
        for (int k = 0; k < r->nrounds; k++) {
            round_result *x = &r->r[k];
            fprintf(f, "%s\n       {\"round\": %d, \"ok\": %s", k ? "," : "", k + 1, x->ok ? "true" : "false");
            if (r->failed) { /* a failed row reports no figure, not even of its good rounds */
                if (!x->ok) {
                    fprintf(f, ", \"error\": ");
                    jstr(f, x->err);
                }
                fputc('}', f);
                continue;
            }
            if (!x->ok) {
                fprintf(f, ", \"error\": ");
                jstr(f, x->err);
                fputc('}', f);
                continue;
            }
            double q = (double)x->requests;
            fprintf(f, ", \"requests\": %llu, \"pipelines\": %llu, \"wall_s\": ", (unsigned long long)x->requests,
                    (unsigned long long)x->pipelines);
            jnum(f, x->wall_s);
            fprintf(f, ", \"user_ns\": ");
            jnum(f, x->user_ns);
            fprintf(f, ", \"sys_ns\": ");
            jnum(f, x->sys_ns);
            fprintf(f, ", \"bytes_written\": %llu, \"payload_bytes\": %llu, \"server_input_bytes\": ",
                    (unsigned long long)x->bytes_written, (unsigned long long)x->payload_bytes);
            if (x->server_in >= 0) fprintf(f, "%lld", (long long)x->server_in); else fputs("null", f);
            if (r->client == CL_SLOTLANE)
                fprintf(f, ", \"moved\": %llu, \"ask\": %llu, \"tryagain\": %llu, \"refreshes\": %llu, \"connects\": %llu, \"reconnects\": %llu",
                        (unsigned long long)x->moved, (unsigned long long)x->ask, (unsigned long long)x->tryagain,
                        (unsigned long long)x->refreshes, (unsigned long long)x->connects,
                        (unsigned long long)x->reconnects);
            fprintf(f, ",\n        \"nvcsw\": %llu, \"nivcsw\": %llu, \"load1\": ", (unsigned long long)x->nvcsw,
                    (unsigned long long)x->nivcsw);
            jnum(f, x->load1);
            fprintf(f, ", \"others_cpu_share\": ");
            if (x->others_share >= 0) jnum(f, x->others_share); else fputs("null", f);
            fprintf(f, ", \"steal_share\": ");
            if (x->steal_share >= 0) jnum(f, x->steal_share); else fputs("null", f);
            fprintf(f, ",\n        \"cpu_ns_per_req\": ");
            jnum(f, (x->user_ns + x->sys_ns) / q);
            fprintf(f, ", \"user_ns_per_req\": ");
            jnum(f, x->user_ns / q);
            fprintf(f, ", \"sys_ns_per_req\": ");
            jnum(f, x->sys_ns / q);
            fprintf(f, ", \"bytes_per_req\": ");
            jnum(f, (double)x->bytes_written / q);
            fprintf(f, ", \"payload_bytes_per_req\": ");
            jnum(f, (double)x->payload_bytes / q);
            fprintf(f, ", \"server_input_bytes_per_req\": ");
            if (x->server_in >= 0) jnum(f, (double)x->server_in / q); else fputs("null", f);
            fprintf(f, ", \"req_per_s\": ");
            jnum(f, q / x->wall_s);
            fputc('}', f);
        }
        fprintf(f, "]");
        if (!r->failed) {
            /* user first: csharp/Slotlane.Client.Benchmarks reads the C tool's medians by that order */
            fprintf(f, ",\n     \"median\": {\"user_ns_per_req\": ");
            jnum(f, r->m_user);
            fprintf(f, ", \"sys_ns_per_req\": ");
            jnum(f, r->m_sys);
            fprintf(f, ", \"cpu_ns_per_req\": ");
            jnum(f, r->m_cpu);
            fprintf(f, ", \"bytes_per_req\": ");
            jnum(f, r->m_bytes);
            fprintf(f, ", \"payload_bytes_per_req\": ");
            jnum(f, r->m_payload);
            fprintf(f, ", \"extra_bytes_per_req\": ");
            jnum(f, r->m_extra);
            fprintf(f, ", \"server_input_bytes_per_req\": ");
            if (r->have_server) jnum(f, r->m_server); else fputs("null", f);
            fprintf(f, ", \"req_per_s\": ");
            jnum(f, r->m_rps);
            fprintf(f, "}");
            row *pl = find_row(rows, nrows, CL_SLOTLANE, ROW_PLAIN, r->op, r->depth);
            fprintf(f, ", \"x_plain\": ");
            if (pl && !pl->failed) jnum(f, r->m_user / pl->m_user); else fputs("null", f);
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"targets\": [");
    for (int i = 0; i < g_ntargets; i++) {
        target *t = &g_targets[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        jstr(f, t->name);
        fprintf(f, ", \"op\": \"%s\", \"depth\": %d, \"value\": ", t->op, t->depth);
        jnum(f, t->value);
        fprintf(f, ", \"limit\": ");
        jnum(f, t->limit);
        fprintf(f, ", \"met\": %s}", t->met ? "true" : "false");
    }
    fprintf(f, "\n  ]\n}\n");
}

/* Writes the record: into DIR with a generated name that never collides (hard link of a
 * temporary file, retried with the next second's name), or to the given FILE. */
static int save_record(row *rows, int nrows, int all_ok, char *path_out, size_t cap)
{
    struct stat st;
    int is_dir = (stat(cfg.json, &st) == 0 && S_ISDIR(st.st_mode)) || cfg.json[strlen(cfg.json) - 1] == '/';
    char tmp[4096];
    if (!is_dir) {
        fmtbuf(tmp, sizeof tmp, "%s.%ld.tmp", cfg.json, (long)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f) return -1;
        write_record(f, rows, nrows, all_ok);
        if (fclose(f) != 0 || rename(tmp, cfg.json) != 0) {
            unlink(tmp);
            return -1;
        }
        fmtbuf(path_out, cap, "%s", cfg.json);
        return 0;
    }
    char dir[4096];
    fmtbuf(dir, sizeof dir, "%s", cfg.json);
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--) dir[n - 1] = 0;
    mkdir(dir, 0777);
    fmtbuf(tmp, sizeof tmp, "%s/.cluster-cost.%ld.tmp", dir, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    write_record(f, rows, nrows, all_ok);
    if (fclose(f) != 0) {
        unlink(tmp);
        return -1;
    }
    for (int attempt = 0; attempt < 120; attempt++) {
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y-%m-%d-%H%M%S", &tm);
        fmtbuf(path_out, cap, "%s/%s-%s-cluster-cost.json", dir, g_hostname, stamp);
        if (link(tmp, path_out) == 0) {
            unlink(tmp);
            return 0;
        }
        if (errno != EEXIST) break;
        sleep_s(1.0);
    }
    unlink(tmp);
    return -1;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sl-cluster-cost [--plain URL] [--cluster URL] [options]\n"
            "  --plain URL        one node, for the plain rows (SL_MODE_PLAIN) and the hiredis rows\n"
            "  --cluster URL      a seed of the cluster, for the cluster and one-node rows\n"
            "  --rows LIST        plain,cluster,one-node (default: all that have a URL)\n"
            "  --ops LIST         GET,SET (default both)\n"
            "  --depths LIST      pipeline depths (default 16,64)\n"
            "  --seconds S        timed loop per row and round (default 8; --quick 1)\n"
            "  --warmup S         warmup per row and round (default 1; --quick 0.3)\n"
            "  --rounds R         rounds; medians over them (default 3)\n"
            "  --workers W        threads, each with its own client and batch (default 8)\n"
            "  --keys N           keys key:0..key:N-1 (default 4096)\n"
            "  --argv             queue commands with sl_batch_append_argv + sl_batch_exec instead of\n"
            "                     pre-encoded RESP with one sl_batch_run per pipeline\n"
            "  --clients LIST     slotlane,hiredis (default both; hiredis runs the plain rows only)\n"
            "  --no-fill          do not SET the keys first (they must hold the values already)\n"
            "  --json PATH        write the JSON record: a FILE, or a DIR/ for an auto-named one\n"
            "  --server-desc TXT  a description of the servers, kept in the record\n"
            "  --invocation TXT   the command that started the run (e.g. `make bench`), kept in the record\n"
            "  --timeout-ms MS    execution deadline (default 10000)\n"
            "  --quick            a short run: 1 s per row, 0.3 s warmup\n"
            "  --tls-ca FILE      every slotlane client speaks TLS, trusting this CA (full verification;\n"
            "                     one configuration shared by every worker); hiredis 0.14 has no TLS: no\n"
            "                     hiredis rows\n"
            "  --tls-cert FILE, --tls-key FILE  a client certificate for mutual TLS\n");
}

int main(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    int rows_set = 0, seconds_set = 0, warmup_set = 0;
    int depth_default[2] = {16, 64};
    cfg.ndepths = 2;
    memcpy(cfg.depths, depth_default, sizeof depth_default);
    cfg.ops[OP_GET] = cfg.ops[OP_SET] = 1;
    cfg.seconds = 8;
    cfg.warmup = 1;
    cfg.rounds = 3;
    cfg.workers = 8;
    cfg.nkeys = 4096;
    cfg.with_slotlane = 1;
    cfg.with_hiredis = SL_HAVE_HIREDIS;
    cfg.timeout_ms = 10000;
    cfg.fill = 1;
    cfg.invocation = getenv("SL_BENCH_INVOCATION");

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT() (i + 1 < argc ? argv[++i] : (die("%s needs a value", a), (char *)NULL))
        if (!strcmp(a, "--plain")) cfg.plain_url = NEXT();
        else if (!strcmp(a, "--cluster")) cfg.cluster_url = NEXT();
        else if (!strcmp(a, "--rows")) {
            if (parse_list(NEXT(), row_names, NROWKINDS, cfg.rows)) die("bad --rows (plain,cluster,one-node)");
            rows_set = 1;
        } else if (!strcmp(a, "--ops")) {
            if (parse_list(NEXT(), op_names, NOPS, cfg.ops)) die("bad --ops (GET,SET)");
        } else if (!strcmp(a, "--depths")) {
            char *dup = xstrdup(NEXT()), *save = NULL;
            cfg.ndepths = 0;
            for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int d = atoi(t);
                if (d < 1 || d > 100000 || cfg.ndepths >= 16) die("bad --depths");
                cfg.depths[cfg.ndepths++] = d;
            }
            free(dup);
            if (!cfg.ndepths) die("bad --depths");
        } else if (!strcmp(a, "--seconds")) {
            cfg.seconds = atof(NEXT());
            seconds_set = 1;
        } else if (!strcmp(a, "--warmup")) {
            cfg.warmup = atof(NEXT());
            warmup_set = 1;
        } else if (!strcmp(a, "--rounds")) cfg.rounds = atoi(NEXT());
        else if (!strcmp(a, "--workers")) cfg.workers = atoi(NEXT());
        else if (!strcmp(a, "--keys")) cfg.nkeys = atoi(NEXT());
        else if (!strcmp(a, "--argv")) cfg.argv_api = 1;
        else if (!strcmp(a, "--clients")) {
            static const char *const cn[] = {"slotlane", "hiredis"};
            int sel[2];
            if (parse_list(NEXT(), cn, 2, sel)) die("bad --clients (slotlane,hiredis)");
            cfg.with_slotlane = sel[0];
            cfg.with_hiredis = sel[1];
            if (cfg.with_hiredis && !SL_HAVE_HIREDIS) die("built without hiredis");
        } else if (!strcmp(a, "--no-fill")) cfg.fill = 0;
        else if (!strcmp(a, "--json")) cfg.json = NEXT();
        else if (!strcmp(a, "--server-desc")) cfg.server_desc = NEXT();
        else if (!strcmp(a, "--invocation")) cfg.invocation = NEXT();
        else if (!strcmp(a, "--timeout-ms")) cfg.timeout_ms = atoi(NEXT());
        else if (!strcmp(a, "--quick")) cfg.quick = 1;
        else if (!strcmp(a, "--tls-ca")) cfg.tls_ca = NEXT();
        else if (!strcmp(a, "--tls-cert")) cfg.tls_cert = NEXT();
        else if (!strcmp(a, "--tls-key")) cfg.tls_key = NEXT();
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            die("unknown argument %s", a);
        }
#undef NEXT
    }
    if (cfg.quick) {
        if (!seconds_set) cfg.seconds = 1;
        if (!warmup_set) cfg.warmup = 0.3;
    }
    if (!rows_set) {
        cfg.rows[ROW_PLAIN] = cfg.plain_url != NULL;
        cfg.rows[ROW_CLUSTER] = cfg.rows[ROW_ONENODE] = cfg.cluster_url != NULL;
    }
    if (cfg.rows[ROW_PLAIN] && !cfg.plain_url) die("the plain row needs --plain URL");
    if ((cfg.rows[ROW_CLUSTER] || cfg.rows[ROW_ONENODE]) && !cfg.cluster_url) die("cluster rows need --cluster URL");
    if (!cfg.plain_url && !cfg.cluster_url) {
        usage(stderr);
        die("give --plain URL and/or --cluster URL");
    }
    if (cfg.tls_ca) {
        sl_tls_options to = SL_TLS_OPTIONS_INIT;
        to.ca_file = cfg.tls_ca;
        to.cert_file = cfg.tls_cert;
        to.key_file = cfg.tls_key;
        char em[256] = "";
        int rc = sl_tls_new(&cfg.tls, &to, em, sizeof em);
        if (rc) die("sl_tls_new: %s: %s", sl_strerror(rc), em);
        cfg.with_hiredis = 0;
    }
    if (cfg.rounds < 1 || cfg.rounds > MAX_ROUNDS) die("--rounds must be 1..%d", MAX_ROUNDS);
    if (cfg.workers < 1 || cfg.workers > MAX_WORKERS) die("--workers must be 1..%d", MAX_WORKERS);
    if (cfg.nkeys < 1 || cfg.nkeys > 10000000) die("bad --keys");
    if (cfg.seconds <= 0 || cfg.warmup < 0) die("bad --seconds/--warmup");

    /* key spaces and values */
    for (int s = 0; s < 2; s++) {
        g_keys[s] = xmalloc(sizeof(char *) * (size_t)cfg.nkeys);
        g_klen[s] = xmalloc(sizeof(size_t) * (size_t)cfg.nkeys);
        for (int k = 0; k < cfg.nkeys; k++) {
            char buf[64];
            int n = fmtbuf(buf, sizeof buf, s ? "{t}:key:%d" : "key:%d", k);
            g_keys[s][k] = xstrdup(buf);
            g_klen[s][k] = (size_t)n;
        }
    }
    g_vals = xmalloc((size_t)cfg.nkeys * VALUE_LEN + 1);
    for (int k = 0; k < cfg.nkeys; k++) value_of(k, g_vals[k]);

    read_machine();
    utc_iso(g_started, sizeof g_started, time(NULL));

    /* the rows, in table order: per op and depth, plain, one-node, cluster, hiredis */
    int maxrows = NOPS * cfg.ndepths * 4;
    row *rows = xcalloc((size_t)maxrows, sizeof *rows);
    int nrows = 0;
    for (int op = 0; op < NOPS; op++) {
        if (!cfg.ops[op]) continue;
        for (int d = 0; d < cfg.ndepths; d++) {
            static const int order[3] = {ROW_PLAIN, ROW_ONENODE, ROW_CLUSTER};
            for (int o = 0; o < 3 && cfg.with_slotlane; o++) {
                if (!cfg.rows[order[o]]) continue;
                row *r = &rows[nrows++];
                r->client = CL_SLOTLANE;
                r->api = cfg.argv_api ? API_ARGV : API_RESP;
                r->kind = order[o];
                r->op = op;
                r->depth = cfg.depths[d];
            }
            if (cfg.with_hiredis && cfg.rows[ROW_PLAIN]) {
                row *r = &rows[nrows++];
                r->client = CL_HIREDIS;
                r->api = API_ARGV;
                r->kind = ROW_PLAIN;
                r->op = op;
                r->depth = cfg.depths[d];
            }
        }
    }
    if (!nrows) die("no rows selected");

    servers_open_plain();
    servers_open_cluster();

    double est = (double)nrows * cfg.rounds * (cfg.seconds + cfg.warmup + 0.1);
    fprintf(stderr, "sl-cluster-cost: %d rows x %d rounds, %d workers, %.1f s + %.1f s warmup each: about %.0f s\n",
            nrows, cfg.rounds, cfg.workers, cfg.seconds, cfg.warmup, est);

    if (cfg.fill) {
        char err[ERRLEN];
        int need_pk = cfg.rows[ROW_PLAIN];
        int need_ck = cfg.rows[ROW_CLUSTER] && cfg.with_slotlane;
        int need_tk = cfg.rows[ROW_ONENODE] && cfg.with_slotlane;
        if (need_pk) {
#if SL_HAVE_HIREDIS
            /* (Debian's hiredis 0.14 has no TLS: over TLS slotlane fills the plain row too) */
            if (cfg.tls ? fill_slotlane(cfg.plain_url, SL_MODE_PLAIN, 0, err, sizeof err)
                        : fill_hiredis(cfg.plain_url, 0, err, sizeof err))
                die("%s", err);
#else
            if (fill_slotlane(cfg.plain_url, SL_MODE_PLAIN, 0, err, sizeof err)) die("%s", err);
#endif
        }
        if (need_ck && fill_slotlane(cfg.cluster_url, SL_MODE_CLUSTER, 0, err, sizeof err)) die("%s", err);
        if (need_tk && fill_slotlane(cfg.cluster_url, SL_MODE_CLUSTER, 1, err, sizeof err)) die("%s", err);
        fprintf(stderr, "sl-cluster-cost: keys filled\n");
    }

    for (int rd = 0; rd < cfg.rounds; rd++) {
        for (int i = 0; i < nrows; i++) {
            row *r = &rows[i];
            if (r->failed) continue;
            round_result *x = &r->r[r->nrounds++];
            measure(r, x);
            if (!x->ok) {
                r->failed = 1;
                fmtbuf(r->err, sizeof r->err, "round %d: %s", rd + 1, x->err);
                fprintf(stderr, "sl-cluster-cost: FAILED %s %s %s d%d: %s\n", client_name(r), row_names[r->kind],
                        op_names[r->op], r->depth, r->err);
            } else {
                fprintf(stderr, "  round %d %-13s %-8s %s d%-3d user %7.0f ns/req  sys %7.0f ns/req  %6.1f B/req  %9.0f req/s"
                                "  (others %3.0f%% of the client CPUs, load %.1f)\n",
                        rd + 1, client_name(r), row_names[r->kind], op_names[r->op], r->depth,
                        x->user_ns / (double)x->requests, x->sys_ns / (double)x->requests,
                        (double)x->bytes_written / (double)x->requests, (double)x->requests / x->wall_s,
                        x->others_share * 100, x->load1);
            }
        }
    }
    utc_iso(g_finished, sizeof g_finished, time(NULL));

    int all_ok = 1;
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        if (r->failed) {
            all_ok = 0;
            continue;
        }
        double u[MAX_ROUNDS], s[MAX_ROUNDS], c[MAX_ROUNDS], b[MAX_ROUNDS], p[MAX_ROUNDS], sv[MAX_ROUNDS], q[MAX_ROUNDS], e[MAX_ROUNDS];
        int nsv = 0;
        for (int k = 0; k < r->nrounds; k++) {
            round_result *x = &r->r[k];
            double n = (double)x->requests;
            u[k] = x->user_ns / n;
            s[k] = x->sys_ns / n;
            c[k] = (x->user_ns + x->sys_ns) / n;
            b[k] = (double)x->bytes_written / n;
            p[k] = (double)x->payload_bytes / n;
            e[k] = ((double)x->bytes_written - (double)x->payload_bytes) / n;
            q[k] = n / x->wall_s;
            if (x->server_in >= 0) sv[nsv++] = (double)x->server_in / n;
        }
        r->m_user = median(u, r->nrounds);
        r->m_sys = median(s, r->nrounds);
        r->m_cpu = median(c, r->nrounds);
        r->m_bytes = median(b, r->nrounds);
        r->m_payload = median(p, r->nrounds);
        r->m_extra = median(e, r->nrounds);
        r->m_rps = median(q, r->nrounds);
        r->have_server = nsv == r->nrounds;
        r->m_server = r->have_server ? median(sv, nsv) : NAN;
    }
    eval_targets(rows, nrows);

    /* the table */
    printf("\ncluster-cost: %s, %ld cores, %s; slotlane %s; %d workers, %.1f s x %d rounds (medians); client CPUs %s\n",
           g_hostname, g_cores, g_cpu_model, sl_version(), cfg.workers, cfg.seconds, cfg.rounds, g_affinity);
    if (cfg.server_desc) printf("servers: %s\n", cfg.server_desc);
    printf("\n| client | op | depth | row | user ns/req | x plain | sys ns/req | bytes/req | req/s | user ns/req by round | others' CPU share by round |\n");
    printf("|---|---|---:|---|---:|---:|---:|---:|---:|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        printf("| %s | %s | %d | %s | ", client_name(r), op_names[r->op], r->depth, row_names[r->kind]);
        if (r->failed) {
            printf("FAILED | | | | | %s | |\n", r->err);
            continue;
        }
        row *pl = find_row(rows, nrows, CL_SLOTLANE, ROW_PLAIN, r->op, r->depth);
        char xp[32] = "-";
        if (pl && !pl->failed) fmtbuf(xp, sizeof xp, "%.2f", r->m_user / pl->m_user);
        printf("%.0f | %s | %.0f | %.1f | %.0f | ", r->m_user, xp, r->m_sys, r->m_bytes, r->m_rps);
        for (int k = 0; k < r->nrounds; k++)
            printf("%s%.0f", k ? " " : "", r->r[k].user_ns / (double)r->r[k].requests);
        printf(" | ");
        for (int k = 0; k < r->nrounds; k++) {
            if (r->r[k].others_share >= 0) printf("%s%.0f%%", k ? " " : "", r->r[k].others_share * 100);
            else printf("%s?", k ? " " : "");
        }
        printf(" |\n");
    }
    printf("\n(x plain: user CPU against the slotlane plain row of the same op and depth; for hiredis, hiredis / slotlane plain.\n"
           " others' CPU share: CPU time other processes used on the client's CPUs during the round; high values mean\n"
           " a disturbed round.)\n");
    if (g_ntargets) {
        printf("\ntargets:\n");
        for (int i = 0; i < g_ntargets; i++) {
            target *t = &g_targets[i];
            printf("  %-4s %s %-3d %-66s %.3f (limit %.2f)\n", t->met ? "met" : "MISS", t->op, t->depth, t->name,
                   t->value, t->limit);
        }
    }
    int status = all_ok ? 0 : 1;
    if (cfg.json) {
        char path[4096];
        if (save_record(rows, nrows, all_ok, path, sizeof path) != 0) {
            fprintf(stderr, "sl-cluster-cost: cannot write the record to %s: %s\n", cfg.json, strerror(errno));
            status = 1;
        } else {
            printf("\nrecord: %s\n", path);
        }
    }
    if (!all_ok) fprintf(stderr, "sl-cluster-cost: some rows FAILED (no figures for them)\n");

    free(rows);
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < cfg.nkeys; k++) free(g_keys[s][k]);
        free(g_keys[s]);
        free(g_klen[s]);
    }
    free(g_vals);
#if SL_HAVE_HIREDIS
    for (int i = 0; i < g_plain_srv.n; i++)
        if (g_plain_srv.ctx[i]) redisFree(g_plain_srv.ctx[i]);
    for (int i = 0; i < g_cluster_srv.n; i++)
        if (g_cluster_srv.ctx[i]) redisFree(g_cluster_srv.ctx[i]);
#endif
    return status;
}
