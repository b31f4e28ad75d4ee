/* slotlane-load — a memtier-style load generator built on libslotlane (DESIGN.md, "The
 * benchmarks": "a memtier-style tool built on the core that drives every shard with its
 * own full pipelines, so a cluster is measured by a client that routes well").
 *
 * Model (the default, async engine): T threads, each running its own libuv loop with C
 * client handles attached (sl_client_attach_loop). In cluster mode a handle keeps one
 * connection per node, so the run holds T x C x nodes connections. Every handle keeps K
 * batches (--inflight) in flight at once with sl_batch_exec_async; each batch is one
 * pipeline of B commands (random keys, SET:GET in the --ratio sequence). The core groups
 * a batch per node and writes every node its part in one write, so with
 * --pipeline-per-node (B = D x nodes) every connection carries D requests per round trip
 * on average. When a batch completes, its callback accounts the replies and sends the
 * next pipeline at once: requests outstanding per connection stay K x B / nodes, the
 * model of redis-benchmark -c/-P (C connections, each with P requests outstanding, one
 * pipeline per connection per round trip) and of memtier --pipeline. A thread drives all
 * its handles from one loop, as redis-benchmark does, so one CPU can keep every
 * connection busy.
 *
 * Per-node batches (the default with --cluster and the async engine): a batch that spans
 * every node completes when the slowest node has answered, so a handle's connections
 * moved in lockstep and the server found fewer ready connections per wake-up than under
 * redis-benchmark, whose connections each belong to one node and move on their own. So
 * the tool learns which primary owns each key (CLUSTER SLOTS and sl_key_slot, once, into
 * one key list per node) and a handle keeps K batches in flight PER NODE, each of B keys
 * of that node only: every connection has exactly K x B outstanding and its next batch
 * leaves when its own replies are in. The batches still go through the core's routing by
 * key (a moved slot is a MOVED the core follows); the tool only chooses the keys.
 * --mixed-batches keeps the older model (random keys over every node in one batch).
 *
 * --sync keeps the older engine: the blocking sl_batch_run, one batch in flight per
 * thread, handles driven round-robin (concurrency = T pipelines).
 *
 * Latency: as memtier does with pipelining, every request of a pipeline is given the
 * pipeline's round trip (from its send to its completion callback; one clock read per
 * batch, shared by the completion of one and the send of the next). Latencies go into
 * per-thread log-linear histograms (HDR-style: 32 linear sub-buckets per power of two,
 * under 1.6% error), fixed arrays, so the hot path allocates nothing; the command buffers
 * and batches are made once and reused.
 *
 * Verification: the value SET for key k is fixed by k (its first 16 bytes are a hash of
 * k in hex, the rest a pattern), so a GET must return exactly that value or nil; SET must
 * answer +OK. A wrong value, a wrong reply type or an error reply is an error.
 *
 * Errors: error records (server errors, I/O, timeouts...), wrong replies and whole-batch
 * failures are counted per kind and the first message is kept; the run exits 1 when any
 * occurred unless --allow-errors. A dead server is an I/O error per command, never a
 * crash; the core's reconnect backoff paces the retries.
 *
 * Output: a text summary on stdout and, with --json FILE, one JSON object (schema
 * "slotlane.bench.load/1", fields in bench/records/README.md).
 */
#define _GNU_SOURCE
#include "msg_modes.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "slotlane.h"
#include "slotlane_uv.h"

#ifndef SL_SOURCE_DIR
#define SL_SOURCE_DIR "."
#endif

#define SCHEMA "slotlane.bench.load/1"
#define TOOL "slotlane-load"
#define ERRLEN 256
#define MAX_THREADS 1024
#define MAX_CONNS 4096
#define MAX_PIPELINE 100000
#define MAX_DATA_SIZE (16 * 1024 * 1024)
#define MAX_PREFIX 200
#define FILL_BATCH 256

/* ------------------------------------------------------------ configuration */

static struct {
    char url[1024];
    const char *host;
    int port;
    int url_set, hostport_set;
    int cluster;
    int threads, conns, pipeline;
    long data_size;
    long long key_range;
    char key_prefix[MAX_PREFIX + 1];
    int ratio_set, ratio_get;
    double test_time;      /* seconds; 0 when --requests */
    long long requests;    /* total; 0 when --test-time */
    const char *json;
    int allow_errors;
    int fill;
    int timeout_ms;
    unsigned long long seed;
    int quiet;
    int fill_only;
    int per_node;          /* --pipeline-per-node: a batch holds D commands per node */
    int batch;             /* commands per batch: D, or D x nodes with --pipeline-per-node */
    int sync;              /* --sync: the blocking engine */
    int inflight;          /* --inflight K: batches in flight per handle (async engine) */
    int verify;            /* check GET values (--no-verify: only reply types) */
    int mixed;             /* --mixed-batches: cluster batches of random keys over every node */
    int eager;             /* --eager-send: a completed batch's successor leaves from its callback */
    int node_batches;      /* cluster + async + not --mixed-batches: one batch per node (see below) */
    int multi_incr;        /* --multi-incr N: each request is MULTI, N x INCR of one key, EXEC */
    const char *stream;    /* --stream-pairs KEY: XREADGROUP + XACK pairs on this stream */
} cfg;

static int g_argc;
static char **g_argv;

/* ------------------------------------------------------------ helpers */

/* snprintf where truncation is acceptable (messages): one place, so -Wformat-truncation
 * stays quiet at every optimisation level. */
__attribute__((format(printf, 3, 4))) static int fmtbuf(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    return n;
}

/* A usage error: message, a pointer to --help, exit 2 (the convention of the repo's tools). */
__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(TOOL ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n(see " TOOL " --help)\n", stderr);
    va_end(ap);
    exit(2);
}

/* A run-time failure (cannot connect, out of memory...): exit 1. */
__attribute__((format(printf, 1, 2), noreturn)) static void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(TOOL ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p) fatal("out of memory (%zu x %zu bytes)", n, m);
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

static void utc_iso(char *buf, size_t cap, time_t t)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Strict number parsing: the whole string must be a number in [lo, hi]. */
static long long parse_ll(const char *flag, const char *s, long long lo, long long hi)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !end || end == s || *end || v < lo || v > hi)
        usage_error("%s wants an integer in %lld..%lld, not '%s'", flag, lo, hi, s);
    return v;
}

static double parse_d(const char *flag, const char *s, double lo, double hi)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !end || end == s || *end || !(v >= lo && v <= hi))
        usage_error("%s wants a number in %g..%g, not '%s'", flag, lo, hi, s);
    return v;
}

/* xorshift64*: a per-thread generator; no shared state, no locks on the hot path. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n) without modulo bias worth caring about at these ranges (128-bit multiply). */
static inline uint64_t rng_below(uint64_t *s, uint64_t n) { return (uint64_t)(((unsigned __int128)rng_next(s) * n) >> 64); }

/* Decimal digits of v into out (no NUL); returns the length. */
static inline size_t utoa(uint64_t v, char *out)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* ------------------------------------------------------------ histogram */

/* Log-linear buckets over nanoseconds: values below 64 exactly; above, 32 sub-buckets per
 * power of two (relative error under 1/32 of the value, reported at the bucket middle).
 * 64 + 58 x 32 buckets cover all of uint64. */
#define H_SUB 32
#define H_BUCKETS (64 + 58 * H_SUB)

typedef struct hist {
    uint64_t count;
    uint64_t b[H_BUCKETS];
    uint64_t max_ns;
    double sum_ns;
} hist;

static inline int h_index(uint64_t v)
{
    if (v < 64) return (int)v;
    int e = 63 - __builtin_clzll(v); /* >= 6 */
    int m = (int)(v >> (e - 5));     /* 32..63 */
    return 64 + (e - 6) * H_SUB + (m - 32);
}

/* The middle of bucket i, in ns. */
static double h_value(int i)
{
    if (i < 64) return (double)i;
    int e = (i - 64) / H_SUB + 6, m = (i - 64) % H_SUB + 32;
    double lo = ldexp((double)m, e - 5), width = ldexp(1.0, e - 5);
    return lo + width / 2;
}

static inline void h_add(hist *h, uint64_t v, uint64_t n)
{
    h->b[h_index(v)] += n;
    h->count += n;
    h->sum_ns += (double)v * (double)n;
    if (v > h->max_ns) h->max_ns = v;
}

static void h_merge(hist *into, const hist *from)
{
    for (int i = 0; i < H_BUCKETS; i++) into->b[i] += from->b[i];
    into->count += from->count;
    into->sum_ns += from->sum_ns;
    if (from->max_ns > into->max_ns) into->max_ns = from->max_ns;
}

/* The p-quantile (0 < p <= 1) in ms; NAN when empty. */
static double h_quantile_ms(const hist *h, double p)
{
    if (!h->count) return NAN;
    uint64_t want = (uint64_t)ceil(p * (double)h->count);
    if (want < 1) want = 1;
    uint64_t acc = 0;
    for (int i = 0; i < H_BUCKETS; i++) {
        acc += h->b[i];
        if (acc >= want) {
            double v = h_value(i);
            if (v > (double)h->max_ns) v = (double)h->max_ns; /* never above what was seen */
            return v / 1e6;
        }
    }
    return (double)h->max_ns / 1e6;
}

/* ------------------------------------------------------------ workers */

enum { OP_SET = 0, OP_GET = 1, OP_TX = 2 /* --multi-incr */, OP_XRG = 3 /* --stream-pairs */ };

/* Error counters by sl_err_kind (0..7), plus whole-batch failures. */
#define N_ERR_KINDS 8
static const char *err_kind_names[N_ERR_KINDS] = {"server", "io", "timeout", "redirects",
                                                  "protocol", "cancelled", "cluster", "argument"};

struct worker;
struct handle;

/* One batch and its pipeline: the unit that is in flight. Made once, reused. */
typedef struct flight {
    struct worker *w;
    struct handle *h;
    sl_batch *b;
    uint8_t *buf;          /* one pipeline's RESP, sized once for the worst case */
    size_t cap;
    uint8_t *ops;          /* the op of each command of the pipeline (reply checking) */
    uint64_t *keys;        /* the key number of each command (value checking) */
    int n;                 /* commands of the pipeline in flight */
    /* --stream-pairs: the IDs the last pipeline's XREADGROUPs read, acknowledged
     * (XACK) at the head of the next one */
    char (*ids)[48];
    uint8_t *idlen;
    int nids, nacks;
    int node;              /* per-node batches: the node whose keys this batch holds; -1: any keys */
    uint64_t t0;           /* when it was sent */
    struct flight *next_deferred;
} flight;

typedef struct handle {
    sl_client *c;
    flight *f;             /* --inflight batches (1 with --sync) */
    int nf;
} handle;

typedef struct worker {
    int id;
    pthread_t th;
    handle *h;
    int nh;
    uint64_t rng;
    uint64_t ratio_pos;    /* position in the SET:GET sequence */
    long long quota;       /* requests to run (--requests), or -1 */
    long long issued;      /* requests sent so far (for the quota) */
    int active;            /* async: batches in flight or waiting to be resent */
    int depth;             /* async: inside sl_batch_exec_async (a completion there is nested) */
    uv_loop_t loop;        /* async: the thread's loop */
    uv_timer_t resend;     /* async: sends the deferred batches */
    flight *deferred;
    uv_check_t flush;      /* async: sends the batches completed in this loop iteration */
    flight *ready;
    /* results */
    uint64_t requests, sets, gets, hits, misses, pipelines;
    uint64_t errors, err_kind[N_ERR_KINDS], batch_failures, wrong_replies;
    char first_error[ERRLEN];
    hist lat, lat_set, lat_get;
    double t_start, t_end;
    sl_stats stats;
    char setup_error[ERRLEN];
} worker;

static atomic_int g_stop;
static uint64_t g_nodes = 1;  /* nodes the first handle discovered (1 in plain mode) */
static pthread_barrier_t g_start_bar;
static const char *g_value;   /* data_size bytes, shared, read-only: the value pattern */
static char g_dlen[24];       /* the decimal value length, and its digits */
static size_t g_dl, g_plen, g_tag;

/* Per-node batches: the keys 0..K-1 grouped by the primary that owns their slot (from
 * CLUSTER SLOTS), so a batch drawn from one group goes to one connection. */
#define MAX_MAP_NODES 1024
#define MAX_NODE_KEYS 50000000LL /* 4 bytes a key: 200 MB at most */
static uint32_t *g_node_keys[MAX_MAP_NODES];
static uint32_t g_node_nkeys[MAX_MAP_NODES];
static int g_map_nodes;

static void note_error(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_error(worker *w, const char *fmt, ...)
{
    if (w->first_error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->first_error, sizeof w->first_error, fmt, ap);
    va_end(ap);
}

/* The value of key k: its first g_tag (= min(16, size)) bytes are a hash of k in hex, the
 * rest is g_value's pattern; so any GET can be checked against the key it asked for,
 * across runs (the hash has no seed) and under concurrent SETs (they write the same). */
static inline void value_tag(uint64_t k, uint8_t *out)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t x = k + 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    for (size_t i = 0; i < g_tag; i++) out[i] = (uint8_t)hex[(x >> (60 - 4 * i)) & 15];
}

/* Appends SET or GET of key k at p; returns the end. */
static inline uint8_t *put_cmd(uint8_t *p, int op, uint64_t k)
{
    char knum[24];
    size_t kn = utoa(k, knum);
    memcpy(p, op == OP_SET ? "*3\r\n$3\r\nSET\r\n$" : "*2\r\n$3\r\nGET\r\n$", 14);
    p += 14;
    p += utoa(g_plen + kn, (char *)p);
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, cfg.key_prefix, g_plen);
    p += g_plen;
    memcpy(p, knum, kn);
    p += kn;
    *p++ = '\r';
    *p++ = '\n';
    if (op == OP_SET) {
        *p++ = '$';
        memcpy(p, g_dlen, g_dl);
        p += g_dl;
        *p++ = '\r';
        *p++ = '\n';
        value_tag(k, p);
        memcpy(p + g_tag, g_value + g_tag, (size_t)cfg.data_size - g_tag);
        p += cfg.data_size;
        *p++ = '\r';
        *p++ = '\n';
    }
    return p;
}

/* --multi-incr: one transaction — MULTI, N x INCR of key k, EXEC — at p; returns the end. */
static uint8_t *put_tx(uint8_t *p, uint64_t k)
{
    char knum[24];
    size_t kn = utoa(k, knum);
    memcpy(p, "*1\r\n$5\r\nMULTI\r\n", 15);
    p += 15;
    for (int i = 0; i < cfg.multi_incr; i++) {
        memcpy(p, "*2\r\n$4\r\nINCR\r\n$", 15);
        p += 15;
        p += utoa(g_plen + kn, (char *)p);
        *p++ = '\r';
        *p++ = '\n';
        memcpy(p, cfg.key_prefix, g_plen);
        p += g_plen;
        memcpy(p, knum, kn);
        p += kn;
        *p++ = '\r';
        *p++ = '\n';
    }
    memcpy(p, "*1\r\n$4\r\nEXEC\r\n", 14);
    return p + 14;
}

/* Commands per request: 1, or MULTI + N INCR + EXEC. */
static int cmds_per_request(void) { return cfg.multi_incr ? cfg.multi_incr + 2 : 1; }

static size_t rec_skip(const sl_reply *rec, size_t n, size_t i);

/* Commands in a pipeline of n requests (--stream-pairs: also the XACKs in front). */
static size_t flight_cmds(const flight *f, int n) { return (size_t)n * (size_t)cmds_per_request() + (size_t)f->nacks; }

/* One RESP bulk string at p; returns the end. */
static uint8_t *put_bulk(uint8_t *p, const void *s, size_t n)
{
    *p++ = '$';
    p += utoa(n, (char *)p);
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, s, n);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* --stream-pairs: XACK of each ID read by the flight's last pipeline, then n x
 * XREADGROUP GROUP g c<thread> COUNT 1 STREAMS key > (a pair: one read, its ack in
 * the next round trip). */
static size_t encode_pairs(worker *w, flight *f, int n)
{
    uint8_t *p = f->buf;
    size_t kl = strlen(cfg.stream);
    char cname[24];
    cname[0] = 'c';
    size_t cl = 1 + utoa((uint64_t)w->id, cname + 1);
    f->nacks = f->nids;
    for (int i = 0; i < f->nids; i++) {
        static const char xack[] = "*4\r\n$4\r\nXACK\r\n";
        memcpy(p, xack, sizeof xack - 1);
        p = put_bulk(p + sizeof xack - 1, cfg.stream, kl);
        p = put_bulk(p, "g", 1);
        p = put_bulk(p, f->ids[i], f->idlen[i]);
    }
    f->nids = 0;
    for (int i = 0; i < n; i++) {
        f->ops[i] = OP_XRG;
        static const char head[] = "*9\r\n$10\r\nXREADGROUP\r\n$5\r\nGROUP\r\n$1\r\ng\r\n";
        static const char mid[] = "$5\r\nCOUNT\r\n$1\r\n1\r\n$7\r\nSTREAMS\r\n";
        memcpy(p, head, sizeof head - 1);
        p = put_bulk(p + sizeof head - 1, cname, cl);
        memcpy(p, mid, sizeof mid - 1);
        p = put_bulk(p + sizeof mid - 1, cfg.stream, kl);
        memcpy(p, "$1\r\n>\r\n", 7);
        p += 7;
    }
    f->n = n;
    return (size_t)(p - f->buf);
}

/* --stream-pairs: the XACKs (each :1) and the XREADGROUP replies
 * [[key, [[id, [field, value...]]]]] (or nil: the stream had nothing new) from record
 * r; keeps the IDs for the next pipeline's XACKs. Returns the next record. */
static size_t check_pairs(worker *w, flight *f, const sl_reply *rec, size_t nrec, size_t r, const uint8_t *data,
                          size_t dlen)
{
    for (int i = 0; i < f->nacks; i++, r++)
        if (r >= nrec || rec[r].type != SL_REPLY_INTEGER || rec[r].value.integer != 1) {
            w->errors++;
            w->wrong_replies++;
            note_error(w, "XACK %s: not :1", cfg.stream);
        }
    for (int i = 0; i < f->n; i++) {
        if (r >= nrec) {
            w->errors++;
            note_error(w, "XREADGROUP: no reply record");
            continue;
        }
        const sl_reply *x = &rec[r];
        if (x->type == SL_REPLY_NIL) {
            w->misses++;
            r++;
            continue;
        }
        /* ARRAY 1, ARRAY 2, key, ARRAY 1, ARRAY 2, id, ARRAY 2k, fields... */
        const sl_reply *id = r + 5 < nrec ? &rec[r + 5] : NULL;
        if (x->type != SL_REPLY_ARRAY || x->len != 1 || !id || rec[r + 3].type != SL_REPLY_ARRAY || rec[r + 3].len != 1 ||
            id->type != SL_REPLY_STRING || id->len >= 48 || !data || id->offset + id->len > dlen) {
            w->errors++;
            w->wrong_replies++;
            note_error(w, "XREADGROUP %s: not one entry (type %d)", cfg.stream, x->type);
            r = rec_skip(rec, nrec, r);
            continue;
        }
        memcpy(f->ids[f->nids], data + id->offset, id->len);
        f->idlen[f->nids++] = (uint8_t)id->len;
        w->hits++;
        r = rec_skip(rec, nrec, r);
    }
    return r;
}

/* Encodes one pipeline of n requests into f->buf; returns its length. */
static size_t encode_pipeline(worker *w, flight *f, int n)
{
    /* The keys first, in a loop of their own: a per-node key list is a random read into
     * K x 4 bytes (400 KB at 100,000 keys), a cache miss each; drawn back to back the n
     * loads overlap, where interleaved with the encoding each one stalled (perf: most
     * of this function's time was that one load). */
    if (f->node < 0) {
        for (int i = 0; i < n; i++) f->keys[i] = rng_below(&w->rng, (uint64_t)cfg.key_range);
    } else {
        const uint32_t *list = g_node_keys[f->node];
        uint64_t len = g_node_nkeys[f->node];
        for (int i = 0; i < n; i++) f->keys[i] = list[rng_below(&w->rng, len)];
    }
    if (cfg.stream) return encode_pairs(w, f, n);
    uint8_t *p = f->buf;
    if (cfg.multi_incr) {
        for (int i = 0; i < n; i++) {
            f->ops[i] = OP_TX;
            p = put_tx(p, f->keys[i]);
        }
        f->n = n;
        return (size_t)(p - f->buf);
    }
    uint64_t period = (uint64_t)cfg.ratio_set + (uint64_t)cfg.ratio_get;
    for (int i = 0; i < n; i++) {
        int op = (w->ratio_pos++ % period) < (uint64_t)cfg.ratio_set ? OP_SET : OP_GET;
        f->ops[i] = (uint8_t)op;
        p = put_cmd(p, op, f->keys[i]);
    }
    f->n = n;
    return (size_t)(p - f->buf);
}

/* Worst-case bytes of one request: header, key and value with their length lines (a
 * transaction: its N + 2 commands). */
static size_t cmd_cap(void)
{
    if (cfg.multi_incr) return 64 + (size_t)cfg.multi_incr * (32 + strlen(cfg.key_prefix) + 24);
    if (cfg.stream) return 2 * (128 + strlen(cfg.stream)); /* an XREADGROUP and an XACK */
    return 64 + strlen(cfg.key_prefix) + 24 + (size_t)cfg.data_size + 24;
}

/* --multi-incr: the N + 2 replies of a transaction from record r — +OK, N x +QUEUED,
 * an array of N integers that follow each other (the INCRs ran as one unit). Returns
 * the records used; *why says what was wrong (NULL: right). */
static size_t check_tx(const sl_reply *rec, size_t nrec, size_t r, const uint8_t *data, size_t dlen, const char **why)
{
    size_t n = (size_t)cfg.multi_incr, used = 0;
    *why = NULL;
#define TX_STATUS(x, s) ((x)->type == SL_REPLY_STATUS && (x)->len == strlen(s) && data && (x)->offset + (x)->len <= dlen && \
                         memcmp(data + (x)->offset, s, strlen(s)) == 0)
    if (r >= nrec || !TX_STATUS(&rec[r], "OK")) *why = "MULTI did not answer +OK";
    used++;
    for (size_t i = 0; i < n && !*why; i++, used++)
        if (r + used >= nrec || !TX_STATUS(&rec[r + used], "QUEUED")) *why = "an INCR was not +QUEUED";
    if (*why) return used;
    if (r + used >= nrec || rec[r + used].type != SL_REPLY_ARRAY || rec[r + used].len != n) {
        *why = "EXEC did not answer an array of the INCRs' replies";
        return used + 1;
    }
    const sl_reply *a = &rec[r + used + 1];
    for (size_t i = 0; i < n && !*why; i++) {
        if (r + used + 1 + i >= nrec || a[i].type != SL_REPLY_INTEGER) *why = "an INCR in EXEC did not answer an integer";
        else if (i && a[i].value.integer != a[i - 1].value.integer + 1) *why = "the INCRs of one EXEC are not consecutive";
    }
#undef TX_STATUS
    return used + 1 + n;
}

/* Does data[0, len) hold the value of key k? */
static int value_ok(uint64_t k, const uint8_t *data, size_t len)
{
    if (len != (size_t)cfg.data_size) return 0;
    uint8_t tag[16];
    value_tag(k, tag);
    return memcmp(data, tag, g_tag) == 0 && memcmp(data + g_tag, g_value + g_tag, len - g_tag) == 0;
}

/* Counts the replies of the pipeline of f (n commands), which took rtt_ns. */
static void account(worker *w, flight *f, int rc, uint64_t rtt_ns)
{
    int n = f->n;
    size_t nrec = 0, dlen = 0;
    const uint8_t *data = NULL;
    const sl_reply *rec = sl_batch_replies(f->b, &nrec, &data, &dlen);
    if (rc != 0) {
        w->batch_failures++;
        note_error(w, "batch execution: %d (%s): %s", rc, sl_strerror(rc), sl_client_errmsg(f->h->c));
    }
    size_t r = 0;
    uint64_t nset = 0, nget = 0;
    if (cfg.stream) check_pairs(w, f, rec, rec ? nrec : 0, 0, data, dlen);
    for (int i = 0; i < n && !cfg.stream; i++) {
        int op = f->ops[i];
        if (op == OP_SET) nset++;
        else if (op == OP_GET) nget++;
        if (!rec || r >= nrec) { /* no record for this command: count it failed */
            w->errors++;
            w->err_kind[SL_ERR_IO]++;
            note_error(w, "%s: no reply record", op == OP_SET ? "SET" : "GET");
            continue;
        }
        if (op == OP_TX) {
            const char *why;
            r += check_tx(rec, nrec, r, data, dlen, &why);
            if (why) {
                w->errors++;
                w->wrong_replies++;
                note_error(w, "transaction on %s%llu: %s", cfg.key_prefix, (unsigned long long)f->keys[i], why);
            }
            continue;
        }
        const sl_reply *x = &rec[r];
        /* skip the children of an aggregate (GET/SET never answer one; be robust) */
        size_t skip = 1;
        if (x->type == SL_REPLY_ARRAY || x->type == SL_REPLY_MAP || x->type == SL_REPLY_SET ||
            x->type == SL_REPLY_PUSH) {
            uint64_t pending = x->len;
            size_t j = r + 1;
            while (pending && j < nrec) {
                const sl_reply *c = &rec[j++];
                pending--;
                if (c->type == SL_REPLY_ARRAY || c->type == SL_REPLY_MAP || c->type == SL_REPLY_SET ||
                    c->type == SL_REPLY_PUSH)
                    pending += c->len;
            }
            skip = j - r;
        }
        r += skip;
        const uint8_t *xd = data && x->offset + x->len <= dlen ? data + x->offset : NULL;
        if (x->type == SL_REPLY_ERROR) {
            w->errors++;
            w->err_kind[x->flags < N_ERR_KINDS ? x->flags : 0]++;
            uint32_t ml = x->len > 160 ? 160 : x->len;
            note_error(w, "%s %s%llu: error reply (%s): %.*s", op == OP_SET ? "SET" : "GET", cfg.key_prefix,
                       (unsigned long long)f->keys[i], x->flags < N_ERR_KINDS ? err_kind_names[x->flags] : "?",
                       xd ? (int)ml : 0, xd ? (const char *)xd : "");
        } else if (op == OP_GET) {
            if (x->type == SL_REPLY_NIL) w->misses++;
            else if (x->type == SL_REPLY_STRING && (!cfg.verify || (xd && value_ok(f->keys[i], xd, x->len))))
                w->hits++;
            else {
                w->errors++;
                w->wrong_replies++;
                if (x->type == SL_REPLY_STRING) {
                    uint32_t ml = x->len > 40 ? 40 : x->len;
                    note_error(w, "GET %s%llu: wrong value (%u bytes: '%.*s'), not the value this tool SETs",
                               cfg.key_prefix, (unsigned long long)f->keys[i], x->len, xd ? (int)ml : 0,
                               xd ? (const char *)xd : "");
                } else {
                    note_error(w, "GET %s%llu: unexpected reply type %d", cfg.key_prefix,
                               (unsigned long long)f->keys[i], x->type);
                }
            }
        } else if (x->type != SL_REPLY_STATUS || !xd || x->len != 2 || memcmp(xd, "OK", 2) != 0) {
            w->errors++;
            w->wrong_replies++;
            note_error(w, "SET %s%llu: unexpected reply (type %d), not +OK", cfg.key_prefix,
                       (unsigned long long)f->keys[i], x->type);
        }
    }
    w->requests += (uint64_t)n;
    w->sets += nset;
    w->gets += nget;
    w->pipelines++;
    /* the pipeline's round trip, attributed to each of its requests */
    h_add(&w->lat, rtt_ns, (uint64_t)n);
    if (nset) h_add(&w->lat_set, rtt_ns, nset);
    if (nget) h_add(&w->lat_get, rtt_ns, nget);
}

/* The size of the next pipeline: the batch, cut to what is left of the quota; 0: done. */
static int next_size(worker *w)
{
    int n = cfg.batch;
    if (w->quota >= 0) {
        long long left = w->quota - w->issued;
        if (left <= 0) return 0;
        if (left < n) n = (int)left;
    }
    w->issued += n;
    return n;
}

/* The connection counters of this thread's handles, summed. */
static void collect_stats(worker *w)
{
    memset(&w->stats, 0, sizeof w->stats);
    for (int i = 0; i < w->nh; i++) {
        sl_stats s;
        memset(&s, 0, sizeof s);
        s.version = SL_STATS_VERSION;
        s.size = sizeof s;
        if (w->h[i].c && sl_client_stats(w->h[i].c, &s) == 0) {
            w->stats.moved += s.moved;
            w->stats.ask += s.ask;
            w->stats.tryagain += s.tryagain;
            w->stats.refreshes += s.refreshes;
            w->stats.connects += s.connects;
            w->stats.reconnects += s.reconnects;
            w->stats.bytes_written += s.bytes_written;
            w->stats.bytes_read += s.bytes_read;
            if (s.nodes > w->stats.nodes) w->stats.nodes = s.nodes;
        }
    }
}

/* --sync: one blocking sl_batch_run at a time, handles round-robin. */
static void run_sync(worker *w)
{
    int hi = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        int n = next_size(w);
        if (!n) break;
        flight *f = &w->h[hi].f[0];
        size_t len = encode_pipeline(w, f, n);
        sl_sizes sz;
        uint64_t t0 = now_ns();
        int rc = sl_batch_run(f->b, f->buf, len, flight_cmds(f, n), cfg.timeout_ms, NULL, 0, NULL, 0, &sz);
        account(w, f, rc, now_ns() - t0);
        if (++hi == w->nh) hi = 0;
    }
}

static void on_batch(sl_batch *b, int status, const sl_sizes *sizes, void *arg);

/* Sends f's next pipeline (stamped now), or retires f when the run is over. */
static void launch(flight *f, uint64_t now)
{
    worker *w = f->w;
    int n = atomic_load_explicit(&g_stop, memory_order_relaxed) ? 0 : next_size(w);
    if (!n) {
        w->active--;
        return;
    }
    size_t len = encode_pipeline(w, f, n);
    int rc = sl_batch_append(f->b, NULL, f->buf, len, flight_cmds(f, n));
    if (rc == 0) {
        f->t0 = now;
        w->depth++;
        rc = sl_batch_exec_async(f->b, cfg.timeout_ms, on_batch, f);
        w->depth--;
    }
    if (rc != 0) { /* a bug of this tool, not of the server: stop this batch, fail the run */
        w->batch_failures++;
        w->errors += (uint64_t)n;
        note_error(w, "cannot send a pipeline: %s: %s", sl_strerror(rc), sl_client_errmsg(f->h->c));
        sl_batch_reset(f->b);
        w->active--;
    }
}

static void on_resend(uv_timer_t *t)
{
    worker *w = t->data;
    flight *list = w->deferred;
    w->deferred = NULL;
    uint64_t now = now_ns();
    while (list) {
        flight *f = list;
        list = f->next_deferred;
        f->next_deferred = NULL;
        launch(f, now);
    }
}

/* After the loop's poll phase: every batch completed by the replies read in this
 * iteration leaves now, back to back. */
static void on_flush(uv_check_t *c)
{
    worker *w = c->data;
    flight *list = w->ready;
    w->ready = NULL;
    uv_check_stop(c); /* an active check handle would keep the loop alive */
    uint64_t now = now_ns();
    while (list) {
        flight *f = list;
        list = f->next_deferred;
        f->next_deferred = NULL;
        launch(f, now);
    }
}

static void on_batch(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    (void)b;
    (void)sizes;
    flight *f = arg;
    worker *w = f->w;
    uint64_t now = now_ns();
    account(w, f, status, now - f->t0);
    if (status == 0 && w->depth == 0) {
        if (cfg.eager) {
            launch(f, now); /* --eager-send: the next pipeline leaves at once */
            return;
        }
        /* The hot path: the successor is queued and handed to the core from a uv_check
         * handle (on_flush) once the loop iteration's reads are all done, so the
         * iteration's pipelines start together, as redis-benchmark writes its
         * connections' next pipelines in the iteration after the one that read their
         * replies. (The core writes a batch as soon as it is handed over, so this is
         * when it leaves; before 2026-11-30 it waited for a writable poll.) Measured
         * against sending from here (--eager-send), a small effect on a noisy machine:
         * server CPU per request lower in every A/B pair, fewer server wake-ups
         * (bench/load/README.md). */
        f->next_deferred = w->ready;
        w->ready = f;
        if (!uv_is_active((uv_handle_t *)&w->flush)) uv_check_start(&w->flush, on_flush);
        return;
    }
    /* A batch that failed as a whole (no node reachable...) completes at once, inside
     * sl_batch_exec_async: resending it from here would recurse without bound and spin.
     * Resend it from the loop instead, after 10 ms when it failed (the core's reconnect
     * backoff does the rest). */
    f->next_deferred = w->deferred;
    w->deferred = f;
    if (!uv_is_active((uv_handle_t *)&w->resend)) uv_timer_start(&w->resend, on_resend, status ? 10 : 0, 0);
}

/* The async engine: every handle attached to this thread's loop, every batch in flight. */
static void run_async(worker *w)
{
    w->active = 0;
    uint64_t now = now_ns();
    for (int i = 0; i < w->nh; i++)
        for (int j = 0; j < w->h[i].nf; j++) {
            flight *f = &w->h[i].f[j];
            if (f->node >= 0 && g_node_nkeys[f->node] == 0) continue; /* no key of the range is there */
            w->active++;
            launch(f, now);
        }
    /* returns when no batch is in flight: idle connections do not keep the loop alive */
    uv_run(&w->loop, UV_RUN_DEFAULT);
    if (w->active != 0) {
        w->batch_failures++;
        note_error(w, "the loop stopped with %d batches in flight", w->active);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(&g_start_bar);
    w->t_start = now_s();
    if (cfg.sync) run_sync(w);
    else run_async(w);
    w->t_end = now_s();
    collect_stats(w);
    if (!cfg.sync) { /* back to the blocking API, so that main can free the clients */
        for (int i = 0; i < w->nh; i++) (void)sl_client_detach_loop(w->h[i].c, NULL, NULL);
        uv_close((uv_handle_t *)&w->resend, NULL);
        uv_close((uv_handle_t *)&w->flush, NULL);
        uv_run(&w->loop, UV_RUN_DEFAULT); /* the close callbacks */
        if (uv_loop_close(&w->loop) != 0) {
            w->batch_failures++;
            note_error(w, "the loop still had handles at the end");
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ setup */

static int open_handle(handle *h, int nflights, char *err, size_t errcap)
{
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = cfg.url;
    o.mode = cfg.cluster ? SL_MODE_CLUSTER : SL_MODE_PLAIN;
    o.command_timeout_ms = cfg.timeout_ms;
    char em[ERRLEN] = "";
    int rc = sl_client_new(&h->c, &o, em, sizeof em);
    if (rc != 0) {
        fmtbuf(err, errcap, "cannot connect to %s (%s mode): %s%s%s", cfg.url, cfg.cluster ? "cluster" : "plain",
               sl_strerror(rc), em[0] ? ": " : "", em);
        return -1;
    }
    h->f = xcalloc((size_t)nflights, sizeof *h->f);
    h->nf = nflights;
    for (int i = 0; i < nflights; i++) {
        if ((rc = sl_batch_new(h->c, &h->f[i].b)) != 0) {
            fmtbuf(err, errcap, "sl_batch_new: %s", sl_strerror(rc));
            return -1;
        }
        h->f[i].h = h;
        h->f[i].node = -1;
    }
    return 0;
}

/* Buffers of a handle's batches, once the batch size is known. */
static void size_handle(handle *h, worker *w, int batch)
{
    for (int i = 0; i < h->nf; i++) {
        flight *f = &h->f[i];
        f->w = w;
        f->cap = cmd_cap() * (size_t)batch;
        f->buf = xcalloc(1, f->cap);
        f->ops = xcalloc((size_t)batch, 1);
        f->keys = xcalloc((size_t)batch, sizeof *f->keys);
        if (cfg.stream) {
            f->ids = xcalloc((size_t)batch, sizeof *f->ids);
            f->idlen = xcalloc((size_t)batch, 1);
        }
    }
}

static void close_handle(handle *h)
{
    for (int i = 0; h->f && i < h->nf; i++) {
        sl_batch_free(h->f[i].b);
        free(h->f[i].buf);
        free(h->f[i].ops);
        free(h->f[i].keys);
        free(h->f[i].ids);   /* --stream-pairs */
        free(h->f[i].idlen);
    }
    free(h->f);
    sl_client_free(h->c);
    h->f = NULL;
    h->c = NULL;
}

/* SETs every key 0..K-1 once (to the value GETs check), so GETs hit. One handle,
 * blocking pipelines of FILL_BATCH. */
static void fill_keys(void)
{
    handle h;
    memset(&h, 0, sizeof h);
    char err[ERRLEN];
    if (open_handle(&h, 1, err, sizeof err) != 0) fatal("fill: %s", err);
    size_handle(&h, NULL, FILL_BATCH);
    flight *f = &h.f[0];
    double t0 = now_s();
    for (long long k0 = 0; k0 < cfg.key_range; k0 += FILL_BATCH) {
        uint8_t *p = f->buf;
        int n = 0;
        for (long long k = k0; k < cfg.key_range && n < FILL_BATCH; k++, n++) p = put_cmd(p, OP_SET, (uint64_t)k);
        sl_sizes sz;
        memset(&sz, 0, sizeof sz);
        int rc = sl_batch_run(f->b, f->buf, (size_t)(p - f->buf), (size_t)n, cfg.timeout_ms, NULL, 0, NULL, 0, &sz);
        if (rc != 0 || sz.errors) {
            size_t nrec = 0;
            const uint8_t *data = NULL;
            const sl_reply *rec = sl_batch_replies(f->b, &nrec, &data, NULL);
            for (size_t i = 0; rec && i < nrec; i++)
                if (rec[i].type == SL_REPLY_ERROR)
                    fatal("fill: SET %s%lld: %.*s", cfg.key_prefix, k0 + (long long)i,
                          (int)(rec[i].len > 160 ? 160 : rec[i].len), (const char *)data + rec[i].offset);
            fatal("fill: %s (%s)", sl_strerror(rc), sl_client_errmsg(h.c));
        }
        if (g_stop) fatal("interrupted during the fill");
    }
    if (!cfg.quiet)
        fprintf(stderr, TOOL ": filled %lld keys of %ld bytes in %.1f s\n", cfg.key_range, cfg.data_size, now_s() - t0);
    close_handle(&h);
}

/* The index after the record at i and its children (an aggregate's subtree). */
static size_t rec_skip(const sl_reply *rec, size_t n, size_t i)
{
    uint64_t pending = 1;
    while (pending && i < n) {
        const sl_reply *x = &rec[i++];
        pending--;
        if (x->type == SL_REPLY_ARRAY || x->type == SL_REPLY_MAP || x->type == SL_REPLY_SET ||
            x->type == SL_REPLY_PUSH)
            pending += x->len;
    }
    return i;
}

/* Per-node batches: asks one node for CLUSTER SLOTS (the core routes the keyless command
 * to its default node), numbers the primaries by "host:port" in the order of the reply,
 * and sorts the keys 0..K-1 into one list per primary by sl_key_slot. The tool only
 * chooses which keys go into a batch; the batches still go through the core's routing by
 * key (a moved slot is a MOVED the core follows, never a wrong node). One short-lived
 * client, closed before the run, so the run's connection counts are unchanged. */
static void learn_node_keys(void)
{
    if (cfg.key_range > MAX_NODE_KEYS)
        fatal("per-node batches keep a list of the keys: --key-range %lld is over %lld; use --mixed-batches",
              cfg.key_range, MAX_NODE_KEYS);
    handle h;
    memset(&h, 0, sizeof h);
    char err[ERRLEN];
    if (open_handle(&h, 1, err, sizeof err) != 0) fatal("%s", err);
    const char *argv[] = {"CLUSTER", "SLOTS"};
    const sl_reply *rep = NULL;
    const uint8_t *data = NULL;
    int rc = sl_client_command(h.c, NULL, 2, argv, NULL, &rep, &data);
    if (rc != 0 || !rep || rep->type != SL_REPLY_ARRAY)
        fatal("CLUSTER SLOTS failed (%s): %s", sl_strerror(rc), sl_client_errmsg(h.c));
    /* *rep is the reply's first record, its children follow: its subtree's length */
    const sl_reply *recs = rep;
    size_t nrec = rec_skip(recs, SIZE_MAX, 0);
    static int16_t owner[16384];
    for (int s = 0; s < 16384; s++) owner[s] = -1;
    char names[MAX_MAP_NODES][280];
    int nn = 0;
    size_t i = 1;
    for (uint32_t e = 0; e < rep->len; e++) {
        const sl_reply *ent = &recs[i];
        size_t next = rec_skip(recs, nrec, i);
        /* [start, end, [host, port, id...], replicas...] */
        if (ent->type != SL_REPLY_ARRAY || ent->len < 3 || i + 5 >= nrec || recs[i + 1].type != SL_REPLY_INTEGER ||
            recs[i + 2].type != SL_REPLY_INTEGER || recs[i + 3].type != SL_REPLY_ARRAY || recs[i + 3].len < 2 ||
            recs[i + 4].type != SL_REPLY_STRING || recs[i + 5].type != SL_REPLY_INTEGER)
            fatal("CLUSTER SLOTS: entry %u is not [start, end, [host, port, ...], ...]", e);
        int64_t lo = recs[i + 1].value.integer, hi = recs[i + 2].value.integer;
        if (lo < 0 || hi > 16383 || lo > hi) fatal("CLUSTER SLOTS: bad slot range %lld-%lld", (long long)lo, (long long)hi);
        char name[280];
        fmtbuf(name, sizeof name, "%.*s:%lld", (int)(recs[i + 4].len > 255 ? 255 : recs[i + 4].len),
               (const char *)data + recs[i + 4].offset, (long long)recs[i + 5].value.integer);
        int idx = 0;
        while (idx < nn && strcmp(names[idx], name) != 0) idx++;
        if (idx == nn) {
            if (nn == MAX_MAP_NODES) fatal("CLUSTER SLOTS: more than %d primaries", MAX_MAP_NODES);
            memcpy(names[nn++], name, sizeof name);
        }
        for (int64_t s = lo; s <= hi; s++) owner[s] = (int16_t)idx;
        i = next;
    }
    if (nn == 0) fatal("CLUSTER SLOTS: no slot is served");
    /* two passes over the keys: count, then fill, so each list is allocated once */
    char key[MAX_PREFIX + 24];
    memcpy(key, cfg.key_prefix, g_plen);
    static uint32_t pos[MAX_MAP_NODES];
    for (int pass = 0; pass < 2; pass++) {
        for (int n = 0; n < nn; n++) {
            if (pass == 1) g_node_keys[n] = xcalloc(g_node_nkeys[n], sizeof(uint32_t));
            pos[n] = 0;
        }
        for (long long k = 0; k < cfg.key_range; k++) {
            size_t kl = g_plen + utoa((uint64_t)k, key + g_plen);
            int o = owner[sl_key_slot(key, kl)];
            if (o < 0) fatal("CLUSTER SLOTS: slot %d (of key %s%lld) has no owner", sl_key_slot(key, kl), cfg.key_prefix, k);
            if (pass == 0) g_node_nkeys[o]++;
            else g_node_keys[o][pos[o]++] = (uint32_t)k;
        }
    }
    g_map_nodes = nn;
    for (int n = 0; n < nn; n++)
        if (!g_node_nkeys[n])
            fprintf(stderr, TOOL ": note: no key of the range is on %s; its connections stay idle\n", names[n]);
    close_handle(&h);
}

/* ------------------------------------------------------------ machine */

static char g_hostname[256] = "unknown", g_cpu_model[256] = "unknown", g_kernel[256] = "", g_affinity[256] = "";
static char g_git_commit[64] = "unknown", g_git_dirty[8] = "null";
static long g_cores;

static void read_machine(void)
{
    if (gethostname(g_hostname, sizeof g_hostname) != 0) fmtbuf(g_hostname, sizeof g_hostname, "unknown");
    g_hostname[sizeof g_hostname - 1] = 0;
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
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        size_t pos = 0;
        for (int i = 0; i < CPU_SETSIZE && pos + 8 < sizeof g_affinity; i++)
            if (CPU_ISSET(i, &set))
                pos += (size_t)fmtbuf(g_affinity + pos, sizeof g_affinity - pos, "%s%d", pos ? "," : "", i);
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
    else fprintf(f, "%.6g", v);
}

typedef struct totals {
    uint64_t requests, sets, gets, hits, misses, pipelines, errors, err_kind[N_ERR_KINDS], batch_failures,
        wrong_replies;
    uint64_t moved, ask, tryagain, refreshes, connects, reconnects, bytes_written, bytes_read, nodes;
    hist lat, lat_set, lat_get;
    double wall_s, user_s, sys_s, fill_s;
    char first_error[ERRLEN];
    int connections;
    double outstanding_per_conn;
} totals;

static void jlat(FILE *f, const hist *h)
{
    fprintf(f, "{\"p50\": ");
    jnum(f, h_quantile_ms(h, 0.50));
    fprintf(f, ", \"p99\": ");
    jnum(f, h_quantile_ms(h, 0.99));
    fprintf(f, ", \"p99_9\": ");
    jnum(f, h_quantile_ms(h, 0.999));
    fprintf(f, ", \"max\": ");
    jnum(f, h->count ? (double)h->max_ns / 1e6 : NAN);
    fprintf(f, ", \"mean\": ");
    jnum(f, h->count ? h->sum_ns / (double)h->count / 1e6 : NAN);
    fprintf(f, "}");
}

static void write_json(FILE *f, const totals *t, const char *started, const char *finished, int ok)
{
    fprintf(f, "{\n  \"schema\": \"%s\",\n  \"benchmark\": \"load\",\n", SCHEMA);
    fprintf(f, "  \"tool\": \"slotlane-load (bench/load/slotlane_load.c)\",\n");
    fprintf(f, "  \"ok\": %s,\n  \"started_at\": \"%s\",\n  \"finished_at\": \"%s\",\n", ok ? "true" : "false", started,
            finished);
    fprintf(f, "  \"machine\": {\"hostname\": ");
    jstr(f, g_hostname);
    fprintf(f, ", \"cpu_model\": ");
    jstr(f, g_cpu_model);
    fprintf(f, ", \"cores\": %ld, \"kernel\": ", g_cores);
    jstr(f, g_kernel);
    fprintf(f, ", \"load_cpus\": ");
    jstr(f, g_affinity);
    fprintf(f, "},\n  \"versions\": {\"slotlane\": ");
    jstr(f, sl_version());
    fprintf(f, ", \"compiler\": ");
#ifdef __VERSION__
    jstr(f, "gcc " __VERSION__);
#else
    fputs("null", f);
#endif
    fprintf(f, "},\n  \"git\": {\"commit\": ");
    jstr(f, g_git_commit);
    fprintf(f, ", \"dirty\": %s},\n  \"command\": [", g_git_dirty);
    for (int i = 0; i < g_argc; i++) {
        if (i) fputs(", ", f);
        jstr(f, g_argv[i]);
    }
    fprintf(f, "],\n  \"config\": {\"url\": ");
    jstr(f, cfg.url);
    fprintf(f, ", \"mode\": \"%s\", \"threads\": %d, \"conns_per_thread\": %d, \"pipeline\": %d, \"data_size\": %ld,"
               " \"key_range\": %lld, \"key_prefix\": ",
            cfg.cluster ? "cluster" : "plain", cfg.threads, cfg.conns, cfg.pipeline, cfg.data_size, cfg.key_range);
    jstr(f, cfg.key_prefix);
    fprintf(f, ", \"ratio\": \"%d:%d\", \"test_time_s\": ", cfg.ratio_set, cfg.ratio_get);
    if (cfg.test_time > 0) jnum(f, cfg.test_time); else fputs("null", f);
    fprintf(f, ", \"requests\": ");
    if (cfg.requests > 0) fprintf(f, "%lld", cfg.requests); else fputs("null", f);
    fprintf(f, ", \"fill\": %s, \"timeout_ms\": %d, \"seed\": %llu, \"pipeline_per_node\": %s, \"batch\": %d,"
               " \"engine\": \"%s\", \"inflight\": %d, \"verify\": %s, \"batches\": \"%s\", \"multi_incr\": %d, \"stream_pairs\": %s%s%s},\n",
            cfg.fill ? "true" : "false", cfg.timeout_ms, cfg.seed, cfg.per_node ? "true" : "false", cfg.batch,
            cfg.sync ? "sync" : "async", cfg.sync ? 1 : cfg.inflight, cfg.verify ? "true" : "false",
            cfg.node_batches ? "per-node" : cfg.cluster ? "mixed" : "plain", cfg.multi_incr,
            cfg.stream ? "\"" : "", cfg.stream ? cfg.stream : "null", cfg.stream ? "\"" : "");
    double w = t->wall_s > 0 ? t->wall_s : NAN;
    fprintf(f, "  \"results\": {\"requests\": %llu, \"sets\": %llu, \"gets\": %llu, \"get_hits\": %llu,"
               " \"get_misses\": %llu, \"pipelines\": %llu,\n",
            (unsigned long long)t->requests, (unsigned long long)t->sets, (unsigned long long)t->gets,
            (unsigned long long)t->hits, (unsigned long long)t->misses, (unsigned long long)t->pipelines);
    fprintf(f, "    \"wall_s\": ");
    jnum(f, t->wall_s);
    fprintf(f, ", \"ops_per_s\": ");
    jnum(f, (double)t->requests / w);
    fprintf(f, ", \"set_ops_per_s\": ");
    jnum(f, (double)t->sets / w);
    fprintf(f, ", \"get_ops_per_s\": ");
    jnum(f, (double)t->gets / w);
    fprintf(f, ",\n    \"latency_ms\": ");
    jlat(f, &t->lat);
    fprintf(f, ",\n    \"set_latency_ms\": ");
    jlat(f, &t->lat_set);
    fprintf(f, ",\n    \"get_latency_ms\": ");
    jlat(f, &t->lat_get);
    fprintf(f, ",\n    \"errors\": %llu, \"error_kinds\": {", (unsigned long long)t->errors);
    for (int i = 0; i < N_ERR_KINDS; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", err_kind_names[i], (unsigned long long)t->err_kind[i]);
    fprintf(f, ", \"wrong_reply\": %llu}, \"batch_failures\": %llu, \"first_error\": ",
            (unsigned long long)t->wrong_replies, (unsigned long long)t->batch_failures);
    if (t->first_error[0]) jstr(f, t->first_error); else fputs("null", f);
    fprintf(f, ",\n    \"connections_per_node\": ");
    jnum(f, t->nodes ? (double)t->connections / (double)t->nodes : NAN);
    fprintf(f, ", \"outstanding_per_conn\": ");
    jnum(f, t->outstanding_per_conn);
    fprintf(f, ",\n    \"connections\": %d, \"nodes\": %llu, \"moved\": %llu, \"ask\": %llu, \"tryagain\": %llu,"
               " \"refreshes\": %llu, \"connects\": %llu, \"reconnects\": %llu, \"bytes_written\": %llu,"
               " \"bytes_read\": %llu,\n",
            t->connections, (unsigned long long)t->nodes, (unsigned long long)t->moved, (unsigned long long)t->ask,
            (unsigned long long)t->tryagain, (unsigned long long)t->refreshes, (unsigned long long)t->connects,
            (unsigned long long)t->reconnects, (unsigned long long)t->bytes_written,
            (unsigned long long)t->bytes_read);
    fprintf(f, "    \"load_user_s\": ");
    jnum(f, t->user_s);
    fprintf(f, ", \"load_sys_s\": ");
    jnum(f, t->sys_s);
    fprintf(f, ", \"load_cpu_ns_per_req\": ");
    jnum(f, t->requests ? (t->user_s + t->sys_s) * 1e9 / (double)t->requests : NAN);
    fprintf(f, ", \"fill_s\": ");
    jnum(f, t->fill_s);
    fprintf(f, "}\n}\n");
}

static int save_json(const totals *t, const char *started, const char *finished, int ok)
{
    if (strcmp(cfg.json, "-") == 0) {
        write_json(stdout, t, started, finished, ok);
        return fflush(stdout) == 0 ? 0 : -1;
    }
    /* a finished temporary file renamed into place: a reader never sees half a record */
    char tmp[4096];
    if (fmtbuf(tmp, sizeof tmp, "%s.%ld.tmp", cfg.json, (long)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    write_json(f, t, started, finished, ok);
    if (fclose(f) != 0 || rename(tmp, cfg.json) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: slotlane-load [options]\n"
            "A memtier-style load generator built on libslotlane: T threads, each running a libuv\n"
            "loop that drives C client handles with K pipelines in flight per handle (the core's\n"
            "async API, sl_batch_exec_async). In cluster mode a handle keeps one connection per\n"
            "node and K batches in flight per node, each of keys that node owns (learned once\n"
            "from CLUSTER SLOTS; the core still routes every command by its key), so every\n"
            "connection has K x D requests outstanding and moves on its own, as a\n"
            "redis-benchmark --cluster connection does.\n"
            "\n"
            "Target:\n"
            "  --host H             server host (default 127.0.0.1)\n"
            "  --port P             server port (default 6379)\n"
            "  --url URL            instead of --host/--port: redis://[user:pass@]host:port[/db],\n"
            "                       host:port, or seeds h1:p1,h2:p2\n"
            "  --cluster            cluster mode: discover the slot map, route by key (default: plain,\n"
            "                       one node, no discovery)\n"
            "Load:\n"
            "  --threads T          threads (default 4), each with its own loop\n"
            "  --conns C            client handles per thread (default 1); one connection per node each\n"
            "  --inflight K         batches in flight per handle, and per node with per-node batches\n"
            "                       (default 1)\n"
            "  --sync               the blocking engine instead: one sl_batch_run in flight per thread,\n"
            "                       its handles driven round-robin (concurrency = T pipelines)\n"
            "  --pipeline D         commands per batch (default 16): per connection with per-node\n"
            "                       batches, as redis-benchmark -P and memtier --pipeline\n"
            "  --mixed-batches      cluster mode: batches of random keys over every node instead\n"
            "                       (the core splits each per node; a handle's next batch waits\n"
            "                       for every node's part, so its connections move in lockstep;\n"
            "                       outstanding per connection = K x batch / nodes)\n"
            "  --eager-send         send a completed batch's successor from its completion callback\n"
            "                       (default: once the loop iteration's replies are all read, so\n"
            "                       the iteration's pipelines leave together, as redis-benchmark's\n"
            "                       do; measured: fewer server wake-ups, less server CPU)\n"
            "  --pipeline-per-node  with --mixed-batches or --sync: make each batch D x nodes\n"
            "                       commands, so that every connection carries D per round trip\n"
            "                       on average (random keys split a batch of D into about D/nodes\n"
            "                       per node); per-node batches are D per connection already\n"
            "  --data-size S        SET value bytes (default 32)\n"
            "  --key-range K        keys <prefix>0 .. <prefix>K-1, chosen uniformly at random\n"
            "                       (default 100000)\n"
            "  --key-prefix P       key prefix (default \"key:\")\n"
            "  --ratio S:G          SETs to GETs, in sequence as memtier does (default 1:10; 1:0 = SET\n"
            "                       only, 0:1 = GET only)\n"
            "  --stream-pairs KEY   each request is XREADGROUP GROUP g c<thread> COUNT 1 STREAMS KEY >, and\n"
            "                       the XACK of the ID it read goes at the head of the next pipeline (the\n"
            "                       stream and its group g must exist; reported as GET hits/misses)\n"
            "  --multi-incr N       each request is a transaction: MULTI, N x INCR of one random key,\n"
            "                       EXEC (checked: +OK, N x +QUEUED, N consecutive integers); no fill\n"
            "  --test-time SECONDS  run for this long (default 10)\n"
            "  --requests N         or run N requests in total, split over the threads\n"
            "  --no-fill            do not SET every key first (the fill runs when the ratio has GETs)\n"
            "  --fill-only          SET every key once and exit (so that a measured GET run, with\n"
            "                       --no-fill, does not include the fill in the server's CPU time)\n"
            "  --seed N             random seed (default: from the clock); thread i uses seed + i\n"
            "  --timeout-ms MS      deadline of one pipeline (default 10000)\n"
            "  --no-verify          accept any GET value (default: a GET must return the value this\n"
            "                       tool SETs for that key, or nil)\n"
            "Output:\n"
            "  --json FILE          write the JSON result to FILE (\"-\": stdout), schema\n"
            "                       slotlane.bench.load/1 (bench/records/README.md)\n"
            "  --allow-errors       exit 0 even when requests failed\n"
            "  --quiet              no progress lines on stderr\n"
            "  --help               this text\n"
            "\n"
            "Latency: each request is given its pipeline's round trip (as memtier does with\n"
            "pipelining); p50/p99/p99.9 come from log-scale histograms (under 1.6%% error).\n"
            "GET of a missing key is a miss, not an error; error replies, wrong replies (a GET value\n"
            "that is not the key's, a SET that is not +OK), I/O errors and timeouts are errors.\n"
            "Exit status: 0 ok; 1 errors during the run (unless --allow-errors), cannot connect, or\n"
            "cannot write the JSON; 2 bad arguments.\n");
}

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&g_stop, 1); /* the run stops and still reports what it measured */
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the message modes (msg_modes.c) have their own arguments */
        if (!strcmp(argv[i], "--mode") || !strncmp(argv[i], "--mode=", 7)) return sl_load_msg_mode(argc, argv);
    g_argc = argc;
    g_argv = argv;
    cfg.host = "127.0.0.1";
    cfg.port = 6379;
    cfg.threads = 4;
    cfg.conns = 1;
    cfg.pipeline = 16;
    cfg.data_size = 32;
    cfg.key_range = 100000;
    strcpy(cfg.key_prefix, "key:");
    cfg.ratio_set = 1;
    cfg.ratio_get = 10;
    cfg.test_time = 10;
    cfg.fill = 1;
    cfg.timeout_ms = 10000;
    cfg.inflight = 1;
    cfg.verify = 1;
    int inflight_set = 0;
    cfg.seed = (unsigned long long)now_ns() ^ ((unsigned long long)getpid() << 32);
    int time_set = 0, requests_set = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        /* --flag=value is accepted too */
        char name[64];
        const char *inl = NULL;
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            inl = eq + 1;
            a = name;
        }
#define VAL() (inl ? inl : (i + 1 < argc ? argv[++i] : (usage_error("%s needs a value", a), (char *)NULL)))
#define NOVAL() do { if (inl) usage_error("%s takes no value", a); } while (0)
        if (!strcmp(a, "--host")) {
            cfg.host = VAL();
            if (!*cfg.host || strlen(cfg.host) > 255) usage_error("bad --host");
            cfg.hostport_set = 1;
        } else if (!strcmp(a, "--port")) {
            cfg.port = (int)parse_ll(a, VAL(), 1, 65535);
            cfg.hostport_set = 1;
        } else if (!strcmp(a, "--url")) {
            const char *u = VAL();
            if (!*u || strlen(u) >= sizeof cfg.url) usage_error("bad --url");
            fmtbuf(cfg.url, sizeof cfg.url, "%s", u);
            cfg.url_set = 1;
        } else if (!strcmp(a, "--cluster")) {
            NOVAL();
            cfg.cluster = 1;
        } else if (!strcmp(a, "--threads")) cfg.threads = (int)parse_ll(a, VAL(), 1, MAX_THREADS);
        else if (!strcmp(a, "--conns")) cfg.conns = (int)parse_ll(a, VAL(), 1, MAX_CONNS);
        else if (!strcmp(a, "--pipeline")) cfg.pipeline = (int)parse_ll(a, VAL(), 1, MAX_PIPELINE);
        else if (!strcmp(a, "--data-size")) cfg.data_size = (long)parse_ll(a, VAL(), 1, MAX_DATA_SIZE);
        else if (!strcmp(a, "--key-range")) cfg.key_range = parse_ll(a, VAL(), 1, 1000000000000LL);
        else if (!strcmp(a, "--key-prefix")) {
            const char *p = VAL();
            if (strlen(p) > MAX_PREFIX) usage_error("--key-prefix is longer than %d bytes", MAX_PREFIX);
            fmtbuf(cfg.key_prefix, sizeof cfg.key_prefix, "%s", p);
        } else if (!strcmp(a, "--ratio")) {
            const char *r = VAL();
            int s = -1, g = -1, n = 0;
            if (sscanf(r, "%d:%d%n", &s, &g, &n) != 2 || r[n] || s < 0 || g < 0 || s + g == 0 || s > 1000000 ||
                g > 1000000)
                usage_error("--ratio wants SET:GET with non-negative integers, not both 0 (e.g. 1:10), not '%s'", r);
            cfg.ratio_set = s;
            cfg.ratio_get = g;
        } else if (!strcmp(a, "--stream-pairs")) {
            cfg.stream = VAL();
            if (!*cfg.stream || strlen(cfg.stream) > 200) usage_error("--stream-pairs wants a stream key (1..200 bytes)");
        } else if (!strcmp(a, "--multi-incr")) {
            cfg.multi_incr = (int)parse_ll(a, VAL(), 1, 1000);
        } else if (!strcmp(a, "--test-time")) {
            cfg.test_time = parse_d(a, VAL(), 0.001, 1e7);
            time_set = 1;
        } else if (!strcmp(a, "--requests")) {
            cfg.requests = parse_ll(a, VAL(), 1, LLONG_MAX / 2);
            requests_set = 1;
        } else if (!strcmp(a, "--json")) {
            cfg.json = VAL();
            if (!*cfg.json) usage_error("--json needs a file name");
        } else if (!strcmp(a, "--allow-errors")) {
            NOVAL();
            cfg.allow_errors = 1;
        } else if (!strcmp(a, "--no-fill")) {
            NOVAL();
            cfg.fill = 0;
        } else if (!strcmp(a, "--sync")) {
            NOVAL();
            cfg.sync = 1;
        } else if (!strcmp(a, "--inflight")) {
            cfg.inflight = (int)parse_ll(a, VAL(), 1, 1024);
            inflight_set = 1;
        } else if (!strcmp(a, "--no-verify")) {
            NOVAL();
            cfg.verify = 0;
        } else if (!strcmp(a, "--eager-send")) {
            NOVAL();
            cfg.eager = 1;
        } else if (!strcmp(a, "--mixed-batches")) {
            NOVAL();
            cfg.mixed = 1;
        } else if (!strcmp(a, "--pipeline-per-node")) {
            NOVAL();
            cfg.per_node = 1;
        } else if (!strcmp(a, "--fill-only")) {
            NOVAL();
            cfg.fill_only = 1;
        } else if (!strcmp(a, "--seed")) cfg.seed = (unsigned long long)parse_ll(a, VAL(), 0, LLONG_MAX);
        else if (!strcmp(a, "--timeout-ms")) cfg.timeout_ms = (int)parse_ll(a, VAL(), 1, INT_MAX);
        else if (!strcmp(a, "--quiet")) {
            NOVAL();
            cfg.quiet = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else usage_error("unknown argument '%s'", argv[i]);
#undef VAL
#undef NOVAL
    }
    if (cfg.sync && inflight_set) usage_error("--inflight is for the async engine, not --sync");
    if (cfg.mixed && (!cfg.cluster || cfg.sync))
        usage_error("--mixed-batches is for --cluster with the async engine (plain mode and --sync always mix)");
    cfg.node_batches = cfg.cluster && !cfg.sync && !cfg.mixed;
    if (time_set && requests_set) usage_error("give --test-time or --requests, not both");
    if (requests_set) cfg.test_time = 0;
    if (cfg.url_set && cfg.hostport_set) usage_error("give --url or --host/--port, not both");
    if (!cfg.url_set) {
        int n = strchr(cfg.host, ':') ? fmtbuf(cfg.url, sizeof cfg.url, "[%s]:%d", cfg.host, cfg.port)
                                      : fmtbuf(cfg.url, sizeof cfg.url, "%s:%d", cfg.host, cfg.port);
        if (n >= (int)sizeof cfg.url) usage_error("--host is too long");
    }
    if ((long long)cfg.threads * cfg.conns > 100000) usage_error("--threads x --conns is more than 100000 handles");
    if (cfg.requests > 0 && cfg.requests < cfg.threads) cfg.threads = (int)cfg.requests; /* one request per thread at least */

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed connection is an I/O error, not a death */

    read_machine();
    char started[32], finished[32];
    utc_iso(started, sizeof started, time(NULL));

    char *value = xcalloc(1, (size_t)cfg.data_size + 1);
    for (long i = 0; i < cfg.data_size; i++) value[i] = (char)('a' + i % 26);
    g_value = value;
    g_dl = utoa((uint64_t)cfg.data_size, g_dlen);
    g_plen = strlen(cfg.key_prefix);
    g_tag = cfg.data_size < 16 ? (size_t)cfg.data_size : 16;

    totals t;
    memset(&t, 0, sizeof t);
    if (cfg.fill_only) {
        if (!cfg.fill) usage_error("--fill-only and --no-fill contradict each other");
        fill_keys();
        free(value);
        return 0;
    }
    if (cfg.fill && cfg.ratio_get > 0 && !cfg.multi_incr && !cfg.stream) {
        double f0 = now_s();
        fill_keys();
        t.fill_s = now_s() - f0;
    }

    if (cfg.node_batches) learn_node_keys();

    /* every handle connects (and discovers) before the clock starts */
    worker *ws = xcalloc((size_t)cfg.threads, sizeof *ws);
    for (int i = 0; i < cfg.threads; i++) {
        worker *w = &ws[i];
        w->id = i;
        w->nh = cfg.conns;
        w->h = xcalloc((size_t)cfg.conns, sizeof *w->h);
        w->rng = (cfg.seed + (uint64_t)i) * 0x9E3779B97F4A7C15ULL + 1; /* never 0: xorshift's fixed point */
        if (!w->rng) w->rng = 1;
        w->ratio_pos = (uint64_t)i; /* threads start at different points of the sequence */
        w->quota = -1;
        if (cfg.requests > 0) w->quota = cfg.requests / cfg.threads + (i < cfg.requests % cfg.threads ? 1 : 0);
        for (int j = 0; j < cfg.conns; j++) {
            handle *h = &w->h[j];
            char err[ERRLEN];
            /* per-node batches: --inflight batches for each node, batch f for node f mod nodes */
            int nf = cfg.sync ? 1 : cfg.inflight * (cfg.node_batches ? g_map_nodes : 1);
            if (open_handle(h, nf, err, sizeof err) != 0) fatal("thread %d handle %d: %s", i, j, err);
            if (cfg.node_batches)
                for (int k = 0; k < nf; k++) h->f[k].node = k % g_map_nodes;
            if (i == 0 && j == 0) {
                /* the batch size, now that the first handle knows the nodes */
                sl_stats s;
                memset(&s, 0, sizeof s);
                s.version = SL_STATS_VERSION;
                s.size = sizeof s;
                if (sl_client_stats(h->c, &s) == 0 && s.nodes > 0) g_nodes = s.nodes;
                if (!cfg.cluster) g_nodes = 1;
                if (cfg.node_batches) g_nodes = (uint64_t)g_map_nodes; /* the primaries */
                cfg.batch = cfg.pipeline;
                if (cfg.per_node && !cfg.node_batches) {
                    if ((uint64_t)cfg.pipeline * g_nodes > MAX_PIPELINE * 16ULL)
                        fatal("--pipeline %d x %llu nodes is too large a batch", cfg.pipeline,
                              (unsigned long long)g_nodes);
                    cfg.batch = (int)((uint64_t)cfg.pipeline * g_nodes);
                }
            }
            size_handle(h, w, cfg.batch);
            if (g_stop) fatal("interrupted while connecting");
        }
        if (!cfg.sync) {
            /* the thread's loop, made here and handed over with the thread's start */
            if (uv_loop_init(&w->loop) != 0 || uv_timer_init(&w->loop, &w->resend) != 0 ||
                uv_check_init(&w->loop, &w->flush) != 0)
                fatal("thread %d: uv_loop_init failed", i);
            w->resend.data = w;
            w->flush.data = w;
            for (int j = 0; j < cfg.conns; j++) {
                int rc = sl_client_attach_loop(w->h[j].c, &w->loop);
                if (rc != 0) fatal("thread %d handle %d: sl_client_attach_loop: %s", i, j, sl_strerror(rc));
            }
        }
    }
    t.connections = (int)((uint64_t)cfg.threads * (uint64_t)cfg.conns * g_nodes);
    /* requests outstanding per connection: the async engine keeps --inflight batches per
     * handle, each spread over the handle's g_nodes connections; --sync keeps one batch
     * per thread, spread over one handle's connections, the thread's other handles idle */
    t.outstanding_per_conn = cfg.sync           ? (double)cfg.batch * cfg.threads / (double)t.connections
                             : cfg.node_batches ? (double)cfg.batch * cfg.inflight
                                                : (double)cfg.batch * cfg.inflight / (double)g_nodes;
    if (!cfg.quiet)
        fprintf(stderr, TOOL ": %s %s, %s engine%s, %d threads x %d handles (%d connections), batch %d, "
                        "%d in flight per handle%s, %.1f requests outstanding per connection, %ld-byte values, "
                        "%lld keys, ratio %d:%d, %s\n",
                cfg.cluster ? "cluster" : "plain", cfg.url, cfg.sync ? "sync" : "async",
                cfg.node_batches ? ", per-node batches" : cfg.cluster && !cfg.sync ? ", mixed batches" : "", cfg.threads,
                cfg.conns, t.connections, cfg.batch, cfg.sync ? 1 : cfg.inflight, cfg.node_batches ? " and node" : "",
                t.outstanding_per_conn, cfg.data_size, cfg.key_range, cfg.ratio_set, cfg.ratio_get,
                cfg.requests > 0 ? "by requests" : "by time");

    if (pthread_barrier_init(&g_start_bar, NULL, (unsigned)cfg.threads + 1) != 0) fatal("pthread_barrier_init failed");
    for (int i = 0; i < cfg.threads; i++)
        if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]) != 0) fatal("cannot start thread %d", i);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    double t0 = now_s();
    pthread_barrier_wait(&g_start_bar);
    if (cfg.test_time > 0) {
        double until = t0 + cfg.test_time;
        while (!atomic_load(&g_stop)) {
            double left = until - now_s();
            if (left <= 0) break;
            struct timespec ts = {0, (long)((left > 0.05 ? 0.05 : left) * 1e9)};
            nanosleep(&ts, NULL);
        }
        atomic_store(&g_stop, 1);
    }
    for (int i = 0; i < cfg.threads; i++) pthread_join(ws[i].th, NULL);
    double t1 = now_s();
    getrusage(RUSAGE_SELF, &ru1);
    pthread_barrier_destroy(&g_start_bar);
    utc_iso(finished, sizeof finished, time(NULL));

    /* the window: from the release of the threads to the end of the last one's last pipeline */
    (void)t1;
    double first = 0, last = 0;
    for (int i = 0; i < cfg.threads; i++) {
        worker *w = &ws[i];
        if (i == 0 || w->t_start < first) first = w->t_start;
        if (i == 0 || w->t_end > last) last = w->t_end;
        t.requests += w->requests;
        t.sets += w->sets;
        t.gets += w->gets;
        t.hits += w->hits;
        t.misses += w->misses;
        t.pipelines += w->pipelines;
        t.errors += w->errors;
        for (int k = 0; k < N_ERR_KINDS; k++) t.err_kind[k] += w->err_kind[k];
        t.batch_failures += w->batch_failures;
        t.wrong_replies += w->wrong_replies;
        if (!t.first_error[0] && w->first_error[0]) memcpy(t.first_error, w->first_error, sizeof t.first_error);
        h_merge(&t.lat, &w->lat);
        h_merge(&t.lat_set, &w->lat_set);
        h_merge(&t.lat_get, &w->lat_get);
        t.moved += w->stats.moved;
        t.ask += w->stats.ask;
        t.tryagain += w->stats.tryagain;
        t.refreshes += w->stats.refreshes;
        t.connects += w->stats.connects;
        t.reconnects += w->stats.reconnects;
        t.bytes_written += w->stats.bytes_written;
        t.bytes_read += w->stats.bytes_read;
        if (w->stats.nodes > t.nodes) t.nodes = w->stats.nodes;
    }
    t.wall_s = last - first;
    t.user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
    t.sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
    int ok = t.errors == 0 && t.batch_failures == 0 && t.requests > 0;

    double w = t.wall_s > 0 ? t.wall_s : NAN;
    printf("slotlane-load: %s %s, %s engine%s, %d threads x %d handles = %d connections, batch %d x %d in flight%s "
           "(%.1f outstanding per connection), %ld B, %lld keys, ratio %d:%d\n",
           cfg.cluster ? "cluster" : "plain", cfg.url, cfg.sync ? "sync" : "async",
           cfg.node_batches ? ", per-node batches" : cfg.cluster && !cfg.sync ? ", mixed batches" : "", cfg.threads, cfg.conns,
           t.connections, cfg.batch, cfg.sync ? 1 : cfg.inflight, cfg.node_batches ? " per node" : "",
           t.outstanding_per_conn, cfg.data_size, cfg.key_range, cfg.ratio_set, cfg.ratio_get);
    printf("%-6s %12s %12s %10s %10s %10s %10s\n", "type", "ops/s", "requests", "p50 ms", "p99 ms", "p99.9 ms", "max ms");
    const struct {
        const char *name;
        uint64_t n;
        const hist *h;
    } lines[3] = {{"SET", t.sets, &t.lat_set}, {"GET", t.gets, &t.lat_get}, {"Totals", t.requests, &t.lat}};
    for (int i = 0; i < 3; i++) {
        if (!lines[i].h->count) {
            printf("%-6s %12.0f %12llu %10s %10s %10s %10s\n", lines[i].name, 0.0, 0ULL, "-", "-", "-", "-");
            continue;
        }
        printf("%-6s %12.0f %12llu %10.3f %10.3f %10.3f %10.3f\n", lines[i].name, (double)lines[i].n / w,
               (unsigned long long)lines[i].n, h_quantile_ms(lines[i].h, 0.5), h_quantile_ms(lines[i].h, 0.99),
               h_quantile_ms(lines[i].h, 0.999), (double)lines[i].h->max_ns / 1e6);
    }
    printf("wall %.3f s, GET hits %llu misses %llu, errors %llu (batch failures %llu), load CPU %.0f ns/req\n", t.wall_s,
           (unsigned long long)t.hits, (unsigned long long)t.misses, (unsigned long long)t.errors,
           (unsigned long long)t.batch_failures, t.requests ? (t.user_s + t.sys_s) * 1e9 / (double)t.requests : 0.0);
    if (t.first_error[0]) printf("first error: %s\n", t.first_error);
    fflush(stdout);

    int status = 0;
    if (t.requests == 0) {
        fprintf(stderr, TOOL ": no request completed\n");
        status = 1;
    } else if (!ok && !cfg.allow_errors) {
        fprintf(stderr, TOOL ": %llu requests failed (first: %s); --allow-errors to accept\n",
                (unsigned long long)t.errors, t.first_error[0] ? t.first_error : "?");
        status = 1;
    }
    if (cfg.json && save_json(&t, started, finished, ok) != 0) {
        fprintf(stderr, TOOL ": cannot write %s: %s\n", cfg.json, strerror(errno));
        status = 1;
    }

    for (int i = 0; i < cfg.threads; i++) {
        for (int j = 0; j < ws[i].nh; j++) close_handle(&ws[i].h[j]);
        free(ws[i].h);
    }
    free(ws);
    free(value);
    return status;
}
