/* fake_server: see fake_server.h. Test-support code: its own RESP request parser and
 * reply writer, no dependency on core/src. */
#include "fake_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#ifdef SL_WITH_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#define FS_MAX_ARGS 4096
#define FS_LOG_ARG 64

/* ------------------------------------------------------------------ helpers */

static void fs_die(const char *what)
{
    fprintf(stderr, "fake_server: %s: %s\n", what, strerror(errno));
    abort();
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) fs_die("malloc");
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) fs_die("realloc");
    return q;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

int64_t fs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fs_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

static void buf_reserve(buf *b, size_t more)
{
    if (b->len + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

static void buf_add(buf *b, const void *d, size_t n)
{
    buf_reserve(b, n);
    if (n) memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void buf_printf(buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        buf_add(b, tmp, (size_t)n);
        return;
    }
    char *big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf_add(b, big, (size_t)n);
    free(big);
}

static void buf_consume(buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

/* ------------------------------------------------------------------ CRC16 */

static uint16_t crc16_xmodem(const uint8_t *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)((uint16_t)p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

int fs_key_slot(const char *key, size_t len)
{
    const uint8_t *k = (const uint8_t *)key;
    size_t s;
    for (s = 0; s < len; s++)
        if (k[s] == '{') break;
    if (s < len) {
        size_t e;
        for (e = s + 1; e < len; e++)
            if (k[e] == '}') break;
        if (e < len && e != s + 1) return crc16_xmodem(k + s + 1, e - s - 1) & 16383;
    }
    return crc16_xmodem(k, len) & 16383;
}

int fs_find_key(const char *prefix, int lo, int hi, char *out, size_t cap)
{
    for (unsigned i = 0; i < 10000000u; i++) {
        int n = snprintf(out, cap, "%s%u", prefix, i);
        if (n < 0 || (size_t)n >= cap) break;
        int slot = fs_key_slot(out, (size_t)n);
        if (slot >= lo && slot <= hi) return slot;
    }
    fprintf(stderr, "fake_server: no key %s* in slots [%d, %d]\n", prefix, lo, hi);
    abort();
}

/* ------------------------------------------------------------------ state */

typedef struct rule {
    int id;
    int live;
    char name[32];      /* upper case; "" = any */
    char sub[32];       /* subcommand, upper case; "" = none */
    char *key;          /* NULL = any */
    size_t keylen;
    int times;          /* remaining; 0 = always */
    fs_action action;
    char *reply;        /* NULL = default */
    size_t reply_len;
    size_t close_after;
    int stall_ms;
    uint64_t hits;
} rule;

typedef struct logent {
    char name[32];
    char arg1[FS_LOG_ARG];
    size_t arg1len;     /* full length; bytes beyond FS_LOG_ARG are not kept */
    char arg2[FS_LOG_ARG];
    size_t arg2len;
    int argc;
    int asking;
    int64_t us;         /* arrival (parse) time */
} logent;

typedef struct kv {
    char *key, *val;
    size_t klen, vlen;
} kv;

typedef struct conn {
    int fd;
    unsigned id;
    buf in, out;
    int resp3;
    int asking;         /* ASKING was the previous command */
    int authed;
    int stalled;
    int64_t stall_until;/* 0: until release */
    unsigned stall_gen;
    buf held;           /* the held answer of a stalled request */
    int closing;        /* close once out is written */
    void *ssl;          /* TLS mode: the connection's SSL */
    int tls_up;         /* its handshake completed */
    /* pub/sub: what the connection is subscribed to (kind 0 channel, 1 pattern, 2 shard) */
    struct fs_sub *subs;
    size_t nsubs, capsubs;
} conn;

typedef struct fs_sub {
    int kind;
    char *name;         /* NUL-terminated copy (fnmatch) */
    size_t len;
} fs_sub;

struct fs_node {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    pthread_t thread;
    int lfd;
    int wake[2];
    int port;
    char id[41];
    int stop;

    conn **conns;
    size_t nconns, capconns;
    unsigned next_conn_id;
    int drop_all;

    fs_range *slots;
    size_t nslots;
    int enforce;
    int empty_host;
    char *password;

    rule *rules;
    size_t nrules, caprules;
    int next_rule_id;
    unsigned release_gen;

    logent *log;
    size_t nlog, caplog;
    uint64_t connections;
    uint64_t bytes_received;

    kv *store;
    size_t nstore, capstore;

    struct args *scratch;   /* the argv views of the request being handled */

    void *ssl_ctx;          /* TLS mode (fs_set_tls): the SSL_CTX new connections use */
    int tls_stall;          /* TLS mode: never answer a ClientHello */
    uint64_t tls_handshakes;
    uint64_t tls_failures;
};

static void node_wake(fs_node *n)
{
    char c = 1;
    ssize_t r;
    do {
        r = write(n->wake[1], &c, 1);
    } while (r < 0 && errno == EINTR);
}

static void make_id(int port, char *out)
{
    /* 40 hex chars derived from the port. */
    uint32_t x = (uint32_t)port * 2654435761u;
    for (int i = 0; i < 40; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out[i] = "0123456789abcdef"[x & 15];
    }
    out[40] = 0;
}

/* ------------------------------------------------------------------ store */

static kv *store_find(fs_node *n, const char *k, size_t kl)
{
    for (size_t i = 0; i < n->nstore; i++)
        if (n->store[i].klen == kl && memcmp(n->store[i].key, k, kl) == 0) return &n->store[i];
    return NULL;
}

static void store_put(fs_node *n, const char *k, size_t kl, const char *v, size_t vl)
{
    kv *e = store_find(n, k, kl);
    if (e) {
        free(e->val);
        e->val = xstrndup(v, vl);
        e->vlen = vl;
        return;
    }
    if (n->nstore == n->capstore) {
        n->capstore = n->capstore ? n->capstore * 2 : 16;
        n->store = xrealloc(n->store, n->capstore * sizeof(kv));
    }
    e = &n->store[n->nstore++];
    e->key = xstrndup(k, kl);
    e->klen = kl;
    e->val = xstrndup(v, vl);
    e->vlen = vl;
}

static int store_del(fs_node *n, const char *k, size_t kl)
{
    kv *e = store_find(n, k, kl);
    if (!e) return 0;
    free(e->key);
    free(e->val);
    *e = n->store[--n->nstore];
    return 1;
}

/* SCAN's cursor order: a 31-bit FNV-1a hash of the key, never 0 (0 starts and ends a
 * scan). Keys keep their position when others come and go, as Redis's reverse-binary
 * cursor does, so a key present throughout a scan is returned. */
static long long scan_hash(const char *k, size_t kl)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < kl; i++) h = (h ^ (uint8_t)k[i]) * 16777619u;
    return (long long)(h & 0x7fffffffu) + 1;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* SCAN cursor [MATCH pattern] [COUNT n] [TYPE t]: keys whose hash >= cursor, in hash order,
 * at least COUNT of them (all keys of the last hash taken), then the next hash or 0. */
struct args;
static void cmd_scan(fs_node *n, const struct args *a, buf *o);

static void store_clear(fs_node *n)
{
    for (size_t i = 0; i < n->nstore; i++) {
        free(n->store[i].key);
        free(n->store[i].val);
    }
    n->nstore = 0;
}

/* ------------------------------------------------------------------ replies */

static void r_simple(buf *o, const char *s) { buf_printf(o, "+%s\r\n", s); }
static void r_err(buf *o, const char *s) { buf_printf(o, "-%s\r\n", s); }
static void r_int(buf *o, long long v) { buf_printf(o, ":%lld\r\n", v); }
static void r_arr(buf *o, long long count) { buf_printf(o, "*%lld\r\n", count); }

static void r_bulk(buf *o, const char *s, size_t len)
{
    buf_printf(o, "$%zu\r\n", len);
    buf_add(o, s, len);
    buf_add(o, "\r\n", 2);
}

static void r_str(buf *o, const char *s) { r_bulk(o, s, strlen(s)); }

static void r_nil(buf *o, int resp3) { buf_add(o, resp3 ? "_\r\n" : "$-1\r\n", resp3 ? 3 : 5); }

static void r_map(buf *o, int resp3, long long pairs)
{
    if (resp3)
        buf_printf(o, "%%%lld\r\n", pairs);
    else
        r_arr(o, pairs * 2);
}

/* ------------------------------------------------------------------ matching */

static void upcase(char *dst, size_t cap, const char *src, size_t len)
{
    size_t i;
    for (i = 0; i < len && i + 1 < cap; i++) {
        char c = src[i];
        dst[i] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
    }
    dst[i] = 0;
}

/* Splits "NAME SUB" into upper-case parts. */
static void split_cmd(const char *cmd, char *name, char *sub)
{
    name[0] = sub[0] = 0;
    if (!cmd) return;
    const char *sp = strchr(cmd, ' ');
    if (sp) {
        upcase(name, 32, cmd, (size_t)(sp - cmd));
        while (*sp == ' ') sp++;
        upcase(sub, 32, sp, strlen(sp));
    } else {
        upcase(name, 32, cmd, strlen(cmd));
    }
}

static int log_matches(const logent *e, const char *name, const char *sub, const char *key)
{
    if (name[0] && strcmp(e->name, name) != 0) return 0;
    const char *karg = e->arg1;
    size_t klen = e->arg1len;
    if (sub[0]) {
        char up[32];
        if (e->argc < 2) return 0;
        upcase(up, sizeof up, e->arg1, e->arg1len < FS_LOG_ARG ? e->arg1len : FS_LOG_ARG);
        if (strcmp(up, sub) != 0) return 0;
        karg = e->arg2;
        klen = e->arg2len;
        if (key && e->argc < 3) return 0;
    } else if (key && e->argc < 2) {
        return 0;
    }
    if (key) {
        size_t kl = strlen(key);
        if (kl != klen || kl > FS_LOG_ARG || memcmp(karg, key, kl) != 0) return 0;
    }
    return 1;
}

/* argv views into the connection's input buffer */
typedef struct args {
    int argc;
    const char *v[FS_MAX_ARGS];
    size_t l[FS_MAX_ARGS];
} args;

static int argeq(const args *a, int i, const char *s)
{
    size_t n = strlen(s);
    return i < a->argc && a->l[i] == n && strncasecmp(a->v[i], s, n) == 0;
}

static int rule_matches(const rule *r, const args *a, const char *name)
{
    if (!r->live) return 0;
    if (r->name[0] && strcmp(r->name, name) != 0) return 0;
    int ki = 1;
    if (r->sub[0]) {
        if (!argeq(a, 1, r->sub)) return 0;
        ki = 2;
    }
    if (r->key) {
        if (ki >= a->argc || a->l[ki] != r->keylen || memcmp(a->v[ki], r->key, r->keylen) != 0)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ cluster */

static int slot_owner(const fs_node *n, int slot)
{
    for (size_t i = 0; i < n->nslots; i++)
        if (slot >= n->slots[i].start && slot <= n->slots[i].end) return n->slots[i].port;
    return 0;
}

/* Distinct ports of the slot map, in order of first appearance. */
static size_t map_ports(const fs_node *n, int *ports, size_t cap)
{
    size_t np = 0;
    for (size_t i = 0; i < n->nslots; i++) {
        size_t j;
        for (j = 0; j < np; j++)
            if (ports[j] == n->slots[i].port) break;
        if (j == np && np < cap) ports[np++] = n->slots[i].port;
    }
    return np;
}

static const char *map_host(const fs_node *n) { return n->empty_host ? "" : "127.0.0.1"; }

static void cluster_slots(fs_node *n, buf *o)
{
    r_arr(o, (long long)n->nslots);
    for (size_t i = 0; i < n->nslots; i++) {
        char id[41];
        make_id(n->slots[i].port, id);
        r_arr(o, 3);
        r_int(o, n->slots[i].start);
        r_int(o, n->slots[i].end);
        r_arr(o, 3);
        r_str(o, map_host(n));
        r_int(o, n->slots[i].port);
        r_str(o, id);
    }
}

static void cluster_shards(fs_node *n, buf *o, int resp3)
{
    int ports[64];
    size_t np = map_ports(n, ports, 64);
    r_arr(o, (long long)np);
    for (size_t p = 0; p < np; p++) {
        long long nr = 0;
        for (size_t i = 0; i < n->nslots; i++)
            if (n->slots[i].port == ports[p]) nr++;
        char id[41];
        make_id(ports[p], id);
        r_map(o, resp3, 2);
        r_str(o, "slots");
        r_arr(o, nr * 2);
        for (size_t i = 0; i < n->nslots; i++)
            if (n->slots[i].port == ports[p]) {
                r_int(o, n->slots[i].start);
                r_int(o, n->slots[i].end);
            }
        r_str(o, "nodes");
        r_arr(o, 1);
        r_map(o, resp3, 7);
        r_str(o, "id");
        r_str(o, id);
        r_str(o, "port");
        r_int(o, ports[p]);
        r_str(o, "ip");
        r_str(o, map_host(n));
        r_str(o, "endpoint");
        r_str(o, map_host(n));
        r_str(o, "role");
        r_str(o, "master");
        r_str(o, "replication-offset");
        r_int(o, 0);
        r_str(o, "health");
        r_str(o, "online");
    }
}

static void cluster_nodes(fs_node *n, buf *o)
{
    int ports[64];
    size_t np = map_ports(n, ports, 64);
    buf t = {0};
    for (size_t p = 0; p < np; p++) {
        char id[41];
        make_id(ports[p], id);
        buf_printf(&t, "%s %s:%d@%d %s - 0 0 %zu connected", id, map_host(n), ports[p],
                   ports[p] + 10000, ports[p] == n->port ? "myself,master" : "master", p + 1);
        for (size_t i = 0; i < n->nslots; i++)
            if (n->slots[i].port == ports[p]) {
                if (n->slots[i].start == n->slots[i].end)
                    buf_printf(&t, " %d", n->slots[i].start);
                else
                    buf_printf(&t, " %d-%d", n->slots[i].start, n->slots[i].end);
            }
        buf_add(&t, "\n", 1);
    }
    r_bulk(o, t.len ? (const char *)t.p : "", t.len);
    free(t.p);
}

static void cmd_cluster(fs_node *n, conn *c, const args *a, buf *o)
{
    if (!n->nslots) {
        r_err(o, "ERR This instance has cluster support disabled");
        return;
    }
    if (argeq(a, 1, "SLOTS"))
        cluster_slots(n, o);
    else if (argeq(a, 1, "SHARDS"))
        cluster_shards(n, o, c->resp3);
    else if (argeq(a, 1, "NODES"))
        cluster_nodes(n, o);
    else if (argeq(a, 1, "MYID"))
        r_str(o, n->id);
    else if (argeq(a, 1, "INFO")) {
        const char *s = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n";
        r_bulk(o, s, strlen(s));
    } else if (argeq(a, 1, "KEYSLOT") && a->argc == 3)
        r_int(o, fs_key_slot(a->v[2], a->l[2]));
    else
        r_err(o, "ERR unknown subcommand");
}

/* Which argument indexes are keys, for the commands the store knows. Returns the count. */
static int key_indexes(const char *name, const args *a, int *idx, int cap)
{
    int k = 0;
    if (!strcmp(name, "GET") || !strcmp(name, "SET") || !strcmp(name, "INCR") ||
        !strcmp(name, "DECR") || !strcmp(name, "INCRBY") || !strcmp(name, "APPEND") ||
        !strcmp(name, "STRLEN") || !strcmp(name, "TYPE") || !strcmp(name, "EXPIRE") ||
        !strcmp(name, "TTL") || !strcmp(name, "SPUBLISH")) {
        if (a->argc > 1 && k < cap) idx[k++] = 1;
    } else if (!strcmp(name, "DEL") || !strcmp(name, "EXISTS") || !strcmp(name, "MGET") ||
               !strcmp(name, "UNLINK") || !strcmp(name, "TOUCH") || !strcmp(name, "SSUBSCRIBE")) {
        for (int i = 1; i < a->argc && k < cap; i++) idx[k++] = i;
    } else if (!strcmp(name, "MSET")) {
        for (int i = 1; i < a->argc && k < cap; i += 2) idx[k++] = i;
    }
    return k;
}

/* Cluster ownership check; 1 when it wrote an error answer. */
static int check_owner(fs_node *n, conn *c, const char *name, const args *a, buf *o)
{
    int idx[FS_MAX_ARGS];
    int k = key_indexes(name, a, idx, FS_MAX_ARGS);
    if (!k) return 0;
    int slot = fs_key_slot(a->v[idx[0]], a->l[idx[0]]);
    for (int i = 1; i < k; i++)
        if (fs_key_slot(a->v[idx[i]], a->l[idx[i]]) != slot) {
            r_err(o, "CROSSSLOT Keys in request don't hash to the same slot");
            return 1;
        }
    int owner = slot_owner(n, slot);
    if (!owner) {
        r_err(o, "CLUSTERDOWN Hash slot not served");
        return 1;
    }
    if (owner != n->port && !c->asking) {
        buf_printf(o, "-MOVED %d %s:%d\r\n", slot, "127.0.0.1", owner);
        return 1;
    }
    return 0;
}

static int parse_ll(const char *s, size_t l, long long *out)
{
    char tmp[32];
    if (l == 0 || l >= sizeof tmp) return -1;
    memcpy(tmp, s, l);
    tmp[l] = 0;
    char *end;
    errno = 0;
    long long v = strtoll(tmp, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static void cmd_hello(fs_node *n, conn *c, const args *a, buf *o)
{
    long long proto = c->resp3 ? 3 : 2;
    int i = 1;
    if (a->argc > 1) {
        if (parse_ll(a->v[1], a->l[1], &proto) < 0 || (proto != 2 && proto != 3)) {
            r_err(o, "NOPROTO unsupported protocol version");
            return;
        }
        i = 2;
    }
    while (i < a->argc) {
        if (argeq(a, i, "AUTH") && i + 2 < a->argc) {
            if (n->password && (a->l[i + 2] != strlen(n->password) ||
                                memcmp(a->v[i + 2], n->password, a->l[i + 2]) != 0)) {
                r_err(o, "WRONGPASS invalid username-password pair or user is disabled.");
                return;
            }
            c->authed = 1;
            i += 3;
        } else if (argeq(a, i, "SETNAME") && i + 1 < a->argc) {
            i += 2;
        } else {
            r_err(o, "ERR Syntax error in HELLO option");
            return;
        }
    }
    if (n->password && !c->authed) {
        r_err(o, "NOAUTH HELLO must be called with the client already authenticated");
        return;
    }
    c->resp3 = proto == 3;
    r_map(o, c->resp3, 7);
    r_str(o, "server");
    r_str(o, "redis");
    r_str(o, "version");
    r_str(o, "7.0.0");
    r_str(o, "proto");
    r_int(o, proto);
    r_str(o, "id");
    r_int(o, c->id);
    r_str(o, "mode");
    r_str(o, n->nslots ? "cluster" : "standalone");
    r_str(o, "role");
    r_str(o, "master");
    r_str(o, "modules");
    r_arr(o, 0);
}

/* The default answer of a request (the store, the cluster commands). */
/* ------------------------------------------------------------------ pub/sub */

static const char *const sub_words[2][3] = {{"unsubscribe", "punsubscribe", "sunsubscribe"},
                                            {"subscribe", "psubscribe", "ssubscribe"}};

/* [word, name, count] as a push (RESP3) or an array (RESP2). */
static void r_sub(buf *o, int resp3, const char *word, const char *name, size_t len, long long count)
{
    buf_printf(o, "%c3\r\n", resp3 ? '>' : '*');
    r_str(o, word);
    if (name)
        r_bulk(o, name, len);
    else
        r_nil(o, resp3);
    r_int(o, count);
}

static long sub_find(const conn *c, int kind, const char *name, size_t len)
{
    for (size_t i = 0; i < c->nsubs; i++)
        if (c->subs[i].kind == kind && c->subs[i].len == len && memcmp(c->subs[i].name, name, len) == 0) return (long)i;
    return -1;
}

static void sub_drop(conn *c, size_t i)
{
    free(c->subs[i].name);
    c->subs[i] = c->subs[--c->nsubs];
}

static void cmd_subscribe(conn *c, int kind, int subscribe, const args *a, buf *o)
{
    if (subscribe) {
        for (int i = 1; i < a->argc; i++) {
            if (sub_find(c, kind, a->v[i], a->l[i]) < 0) {
                if (c->nsubs == c->capsubs) {
                    c->capsubs = c->capsubs ? c->capsubs * 2 : 8;
                    c->subs = xrealloc(c->subs, c->capsubs * sizeof *c->subs);
                }
                c->subs[c->nsubs++] = (fs_sub){kind, xstrndup(a->v[i], a->l[i]), a->l[i]};
            }
            r_sub(o, c->resp3, sub_words[1][kind], a->v[i], a->l[i], (long long)c->nsubs);
        }
        return;
    }
    if (a->argc == 1) {
        int any = 0;
        for (size_t i = c->nsubs; i-- > 0;)
            if (c->subs[i].kind == kind) {
                char *nm = xstrndup(c->subs[i].name, c->subs[i].len);
                size_t l = c->subs[i].len;
                sub_drop(c, i);
                r_sub(o, c->resp3, sub_words[0][kind], nm, l, (long long)c->nsubs);
                free(nm);
                any = 1;
            }
        if (!any) r_sub(o, c->resp3, sub_words[0][kind], NULL, 0, (long long)c->nsubs);
        return;
    }
    for (int i = 1; i < a->argc; i++) {
        long k = sub_find(c, kind, a->v[i], a->l[i]);
        if (k >= 0) sub_drop(c, (size_t)k);
        r_sub(o, c->resp3, sub_words[0][kind], a->v[i], a->l[i], (long long)c->nsubs);
    }
}

/* Delivers a message to the node's subscribers (kind 0: PUBLISH, 2: SPUBLISH); returns the
 * receivers. */
static long long deliver(fs_node *n, int shard, const char *ch, size_t chl, const char *msg, size_t ml)
{
    long long got = 0;
    char *chz = xstrndup(ch, chl);
    for (size_t i = 0; i < n->nconns; i++) {
        conn *c = n->conns[i];
        for (size_t j = 0; j < c->nsubs; j++) {
            fs_sub *u = &c->subs[j];
            int hit = shard ? (u->kind == 2 && u->len == chl && memcmp(u->name, ch, chl) == 0)
                            : (u->kind == 0 && u->len == chl && memcmp(u->name, ch, chl) == 0) ||
                                  (u->kind == 1 && fnmatch(u->name, chz, 0) == 0);
            if (!hit) continue;
            got++;
            buf_printf(&c->out, "%c%d\r\n", c->resp3 ? '>' : '*', u->kind == 1 ? 4 : 3);
            r_str(&c->out, u->kind == 1 ? "pmessage" : shard ? "smessage" : "message");
            if (u->kind == 1) r_bulk(&c->out, u->name, u->len);
            r_bulk(&c->out, ch, chl);
            r_bulk(&c->out, msg, ml);
        }
    }
    free(chz);
    return got;
}

static void default_answer(fs_node *n, conn *c, const char *name, const args *a, buf *o)
{
    int was_asking = c->asking;
    c->asking = 0;
    if (!strcmp(name, "AUTH")) {
        const char *pw = a->argc == 2 ? a->v[1] : a->argc == 3 ? a->v[2] : NULL;
        size_t pl = a->argc == 2 ? a->l[1] : a->argc == 3 ? a->l[2] : 0;
        if (!pw) {
            r_err(o, "ERR wrong number of arguments for 'auth' command");
        } else if (n->password && (pl != strlen(n->password) || memcmp(pw, n->password, pl) != 0)) {
            r_err(o, "WRONGPASS invalid username-password pair or user is disabled.");
        } else {
            c->authed = 1;
            r_simple(o, "OK");
        }
        return;
    }
    if (!strcmp(name, "HELLO")) {
        cmd_hello(n, c, a, o);
        return;
    }
    if (n->password && !c->authed) {
        r_err(o, "NOAUTH Authentication required.");
        return;
    }
    if (!strcmp(name, "ASKING")) {
        c->asking = 1;
        r_simple(o, "OK");
        return;
    }
    if (!strcmp(name, "PING")) {
        if (c->nsubs && !c->resp3) {
            r_arr(o, 2);
            r_str(o, "pong");
            r_bulk(o, a->argc > 1 ? a->v[1] : "", a->argc > 1 ? a->l[1] : 0);
        } else if (a->argc > 1)
            r_bulk(o, a->v[1], a->l[1]);
        else
            r_simple(o, "PONG");
        return;
    }
    if (!strcmp(name, "ECHO")) {
        if (a->argc != 2)
            r_err(o, "ERR wrong number of arguments for 'echo' command");
        else
            r_bulk(o, a->v[1], a->l[1]);
        return;
    }
    if (!strcmp(name, "SELECT") || !strcmp(name, "READONLY") || !strcmp(name, "READWRITE") ||
        !strcmp(name, "CLIENT") || !strcmp(name, "QUIT") || !strcmp(name, "RESET")) {
        r_simple(o, "OK");
        return;
    }
    if (!strcmp(name, "COMMAND")) {
        r_arr(o, 0);
        return;
    }
    if (!strcmp(name, "INFO")) {
        const char *s = n->nslots ? "# Server\r\nredis_version:7.0.0\r\n# Cluster\r\ncluster_enabled:1\r\n"
                                  : "# Server\r\nredis_version:7.0.0\r\n# Cluster\r\ncluster_enabled:0\r\n";
        r_bulk(o, s, strlen(s));
        return;
    }
    if (!strcmp(name, "CLUSTER")) {
        cmd_cluster(n, c, a, o);
        return;
    }
    if (!strcmp(name, "DBSIZE")) {
        r_int(o, (long long)n->nstore);
        return;
    }
    if (!strcmp(name, "FLUSHALL") || !strcmp(name, "FLUSHDB")) {
        store_clear(n);
        r_simple(o, "OK");
        return;
    }
    if (n->nslots && n->enforce) {
        c->asking = was_asking;
        int refused = check_owner(n, c, name, a, o);
        c->asking = 0;
        if (refused) return;
    }
    static const char *const subcmds[2][3] = {{"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"},
                                              {"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"}};
    for (int sub = 0; sub < 2; sub++)
        for (int kind = 0; kind < 3; kind++)
            if (!strcmp(name, subcmds[sub][kind])) {
                if (sub && a->argc < 2)
                    r_err(o, "ERR wrong number of arguments");
                else
                    cmd_subscribe(c, kind, sub, a, o);
                return;
            }
    if (!strcmp(name, "PUBLISH") || !strcmp(name, "SPUBLISH")) {
        if (a->argc != 3)
            r_err(o, "ERR wrong number of arguments");
        else
            r_int(o, deliver(n, name[0] == 'S', a->v[1], a->l[1], a->v[2], a->l[2]));
        return;
    }
    if (!strcmp(name, "GET")) {
        if (a->argc != 2) {
            r_err(o, "ERR wrong number of arguments for 'get' command");
            return;
        }
        kv *e = store_find(n, a->v[1], a->l[1]);
        if (e)
            r_bulk(o, e->val, e->vlen);
        else
            r_nil(o, c->resp3);
        return;
    }
    if (!strcmp(name, "SET")) {
        if (a->argc < 3) {
            r_err(o, "ERR wrong number of arguments for 'set' command");
            return;
        }
        store_put(n, a->v[1], a->l[1], a->v[2], a->l[2]);
        r_simple(o, "OK");
        return;
    }
    if (!strcmp(name, "INCR")) {
        if (a->argc != 2) {
            r_err(o, "ERR wrong number of arguments for 'incr' command");
            return;
        }
        long long v = 0;
        kv *e = store_find(n, a->v[1], a->l[1]);
        if (e && parse_ll(e->val, e->vlen, &v) < 0) {
            r_err(o, "ERR value is not an integer or out of range");
            return;
        }
        v++;
        char tmp[32];
        int tl = snprintf(tmp, sizeof tmp, "%lld", v);
        store_put(n, a->v[1], a->l[1], tmp, (size_t)tl);
        r_int(o, v);
        return;
    }
    if (!strcmp(name, "DEL") || !strcmp(name, "UNLINK") || !strcmp(name, "EXISTS")) {
        if (a->argc < 2) {
            r_err(o, "ERR wrong number of arguments");
            return;
        }
        long long cnt = 0;
        for (int i = 1; i < a->argc; i++) {
            if (name[0] == 'E')
                cnt += store_find(n, a->v[i], a->l[i]) != NULL;
            else
                cnt += store_del(n, a->v[i], a->l[i]);
        }
        r_int(o, cnt);
        return;
    }
    if (!strcmp(name, "MGET")) {
        if (a->argc < 2) {
            r_err(o, "ERR wrong number of arguments for 'mget' command");
            return;
        }
        r_arr(o, a->argc - 1);
        for (int i = 1; i < a->argc; i++) {
            kv *e = store_find(n, a->v[i], a->l[i]);
            if (e)
                r_bulk(o, e->val, e->vlen);
            else
                r_nil(o, c->resp3);
        }
        return;
    }
    if (!strcmp(name, "MSET")) {
        if (a->argc < 3 || (a->argc % 2) == 0) {
            r_err(o, "ERR wrong number of arguments for 'mset' command");
            return;
        }
        for (int i = 1; i + 1 < a->argc; i += 2) store_put(n, a->v[i], a->l[i], a->v[i + 1], a->l[i + 1]);
        r_simple(o, "OK");
        return;
    }
    if (!strcmp(name, "SCAN")) {
        cmd_scan(n, a, o);
        return;
    }
    buf_printf(o, "-ERR unknown command '%.*s', with args beginning with: \r\n",
               (int)(a->l[0] > 64 ? 64 : a->l[0]), a->v[0]);
}

static void cmd_scan(fs_node *n, const args *a, buf *o)
{
    long long cursor, count = 10;
    char mbuf[256], tbuf[32];
    const char *match = NULL, *type = NULL;
    if (a->argc < 2 || parse_ll(a->v[1], a->l[1], &cursor) != 0 || cursor < 0) {
        r_err(o, "ERR invalid cursor");
        return;
    }
    for (int i = 2; i + 1 < a->argc; i += 2) {
        if (argeq(a, i, "MATCH") && a->l[i + 1] < sizeof mbuf) {
            memcpy(mbuf, a->v[i + 1], a->l[i + 1]);
            mbuf[a->l[i + 1]] = '\0';
            match = mbuf;
        } else if (argeq(a, i, "TYPE") && a->l[i + 1] < sizeof tbuf) {
            memcpy(tbuf, a->v[i + 1], a->l[i + 1]);
            tbuf[a->l[i + 1]] = '\0';
            type = tbuf;
        } else if (!argeq(a, i, "COUNT") || parse_ll(a->v[i + 1], a->l[i + 1], &count) != 0 || count < 1) {
            r_err(o, "ERR syntax error");
            return;
        }
    }
    if ((a->argc - 2) % 2) {
        r_err(o, "ERR syntax error");
        return;
    }
    /* (hash, store index) pairs of the keys at or after the cursor, in hash order */
    long long *hs = xmalloc((n->nstore + 1) * 2 * sizeof *hs);
    size_t m = 0;
    for (size_t i = 0; i < n->nstore; i++) {
        long long h = scan_hash(n->store[i].key, n->store[i].klen);
        if (h < cursor) continue;
        hs[2 * m] = h;
        hs[2 * m + 1] = (long long)i;
        m++;
    }
    qsort(hs, m, 2 * sizeof *hs, cmp_ll);
    size_t take = m < (size_t)count ? m : (size_t)count;
    while (take > 0 && take < m && hs[2 * take] == hs[2 * (take - 1)]) take++;
    char next[24];
    snprintf(next, sizeof next, "%lld", take < m ? hs[2 * take] : 0LL);
    size_t nout = 0;
    int *sel = xmalloc((take + 1) * sizeof *sel);
    for (size_t j = 0; j < take; j++) {
        const kv *e = &n->store[hs[2 * j + 1]];
        if (match && fnmatch(match, e->key, 0) != 0) continue;
        if (type && strcmp(type, "string") != 0) continue; /* the store holds strings only */
        sel[nout++] = (int)hs[2 * j + 1];
    }
    r_arr(o, 2);
    r_str(o, next);
    r_arr(o, (long long)nout);
    for (size_t j = 0; j < nout; j++) r_bulk(o, n->store[sel[j]].key, n->store[sel[j]].klen);
    free(sel);
    free(hs);
}

/* ------------------------------------------------------------------ parsing */

/* Reads a "<c><digits>\r\n" line at p[0, len). Returns bytes used, 0 when incomplete,
 * -1 when malformed. */
static long parse_header(const uint8_t *p, size_t len, char type, long long *val)
{
    if (len < 1) return 0;
    if (p[0] != (uint8_t)type) return -1;
    size_t i = 1;
    long long v = 0;
    int digits = 0, neg = 0;
    if (i < len && p[i] == '-') {
        neg = 1;
        i++;
    }
    for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
        if (++digits > 12) return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (i >= len) return 0;
    if (p[i] != '\r') return -1;
    if (i + 1 >= len) return 0;
    if (p[i + 1] != '\n' || !digits) return -1;
    *val = neg ? -v : v;
    return (long)(i + 2);
}

/* Parses one request from c->in. Returns bytes used (>0), 0 when incomplete, -1 when
 * malformed. */
static long parse_request(const buf *in, args *a)
{
    const uint8_t *p = in->p;
    size_t len = in->len, pos = 0;
    long long n;
    long h = parse_header(p, len, '*', &n);
    if (h <= 0) return h;
    if (n < 1 || n > FS_MAX_ARGS) return -1;
    pos = (size_t)h;
    a->argc = (int)n;
    for (long long i = 0; i < n; i++) {
        long long bl;
        h = parse_header(p + pos, len - pos, '$', &bl);
        if (h <= 0) return h;
        if (bl < 0 || bl > (512ll << 20)) return -1;
        pos += (size_t)h;
        if (len - pos < (size_t)bl + 2) return 0;
        if (p[pos + (size_t)bl] != '\r' || p[pos + (size_t)bl + 1] != '\n') return -1;
        a->v[i] = (const char *)p + pos;
        a->l[i] = (size_t)bl;
        pos += (size_t)bl + 2;
    }
    return (long)pos;
}

/* ------------------------------------------------------------------ connections */

static void conn_free(conn *c)
{
#ifdef SL_WITH_TLS
    SSL_free(c->ssl);
#endif
    if (c->fd >= 0) close(c->fd);
    free(c->in.p);
    free(c->out.p);
    free(c->held.p);
    for (size_t i = 0; i < c->nsubs; i++) free(c->subs[i].name);
    free(c->subs);
    free(c);
}

static void log_request(fs_node *n, conn *c, const char *name, const args *a)
{
    if (n->nlog == n->caplog) {
        n->caplog = n->caplog ? n->caplog * 2 : 256;
        n->log = xrealloc(n->log, n->caplog * sizeof(logent));
    }
    logent *e = &n->log[n->nlog++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->argc = a->argc;
    e->asking = c->asking;
    e->us = fs_now_us();
    if (a->argc > 1) {
        e->arg1len = a->l[1];
        memcpy(e->arg1, a->v[1], a->l[1] < FS_LOG_ARG ? a->l[1] : FS_LOG_ARG);
    }
    if (a->argc > 2) {
        e->arg2len = a->l[2];
        memcpy(e->arg2, a->v[2], a->l[2] < FS_LOG_ARG ? a->l[2] : FS_LOG_ARG);
    }
}

/* Handles the complete requests in c->in until it stalls or closes. */
static void conn_process(fs_node *n, conn *c)
{
    args *ap = n->scratch;
    while (!c->stalled && !c->closing) {
        long used = parse_request(&c->in, ap);
        if (used == 0) break;
        if (used < 0) {
            r_err(&c->out, "ERR Protocol error: invalid request");
            c->closing = 1;
            c->in.len = 0;
            break;
        }
        char name[32];
        upcase(name, sizeof name, ap->v[0], ap->l[0]);
        log_request(n, c, name, ap);

        rule *hit = NULL;
        for (size_t i = 0; i < n->nrules; i++)
            if (rule_matches(&n->rules[i], ap, name)) {
                hit = &n->rules[i];
                break;
            }
        if (hit) {
            hit->hits++;
            if (hit->times > 0 && --hit->times == 0) hit->live = 0;
        }

        if (!hit) {
            default_answer(n, c, name, ap, &c->out);
        } else if (hit->action == FS_CLOSE) {
            c->closing = 1;
        } else {
            buf ans = {0};
            if (hit->reply) {
                buf_add(&ans, hit->reply, hit->reply_len);
                /* a scripted answer replaces the command: ASKING is consumed */
                if (strcmp(name, "ASKING") != 0) c->asking = 0;
            } else {
                default_answer(n, c, name, ap, &ans);
            }
            if (hit->action == FS_REPLY) {
                buf_add(&c->out, ans.p, ans.len);
                free(ans.p);
            } else if (hit->action == FS_CLOSE_AFTER) {
                buf_add(&c->out, ans.p, hit->close_after < ans.len ? hit->close_after : ans.len);
                free(ans.p);
                c->closing = 1;
            } else { /* FS_STALL */
                free(c->held.p);
                c->held = ans;
                c->stalled = 1;
                c->stall_gen = n->release_gen;
                c->stall_until = hit->stall_ms > 0 ? fs_now_ms() + hit->stall_ms : 0;
            }
        }
        buf_consume(&c->in, (size_t)used);
        if (c->closing) c->in.len = 0;
    }
}

/* Writes what it can; returns -1 when the connection is gone. */
static int conn_flush(conn *c)
{
    size_t off = 0;
#ifdef SL_WITH_TLS
    if (c->ssl) {
        while (c->tls_up && off < c->out.len) {
            ERR_clear_error();
            int w = SSL_write(c->ssl, c->out.p + off, (int)(c->out.len - off));
            if (w <= 0) {
                int e = SSL_get_error(c->ssl, w);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) break;
                return -1;
            }
            off += (size_t)w;
        }
        buf_consume(&c->out, off);
        return 0;
    }
#endif
    while (off < c->out.len) {
        ssize_t w = send(c->fd, c->out.p + off, c->out.len - off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return -1;
        }
        off += (size_t)w;
    }
    buf_consume(&c->out, off);
    return 0;
}

/* Closes a connection whose answer was (partly) written: drains unread input first so the
 * kernel sends FIN after the data rather than a reset. */
static void conn_close_gently(conn *c)
{
    uint8_t tmp[4096];
    while (recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT) > 0) {
    }
    shutdown(c->fd, SHUT_WR);
    close(c->fd);
    c->fd = -1;
}

static void remove_conn(fs_node *n, size_t i)
{
    conn_free(n->conns[i]);
    n->conns[i] = n->conns[--n->nconns];
}

static void accept_all(fs_node *n)
{
    for (;;) {
        int fd = accept(n->lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR) continue;
            return;
        }
        int fl = fcntl(fd, F_GETFL, 0);
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = xmalloc(sizeof *c);
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->id = ++n->next_conn_id;
#ifdef SL_WITH_TLS
        if (n->ssl_ctx) {
            c->ssl = SSL_new(n->ssl_ctx);
            if (!c->ssl) fs_die("SSL_new");
            SSL_set_fd(c->ssl, fd);
            SSL_set_accept_state(c->ssl);
        }
#endif
        if (n->nconns == n->capconns) {
            n->capconns = n->capconns ? n->capconns * 2 : 8;
            n->conns = xrealloc(n->conns, n->capconns * sizeof(conn *));
        }
        n->conns[n->nconns++] = c;
        n->connections++;
    }
}

#ifdef SL_WITH_TLS
/* TLS mode: the handshake, then what the connection sent. Returns 1 when the connection is
 * gone (EOF, a failed handshake), 0 otherwise. */
static int tls_read(fs_node *n, conn *c)
{
    if (!c->tls_up) {
        if (n->tls_stall) { /* read the ClientHello and answer nothing */
            uint8_t tmp[4096];
            ssize_t r;
            while ((r = recv(c->fd, tmp, sizeof tmp, 0)) > 0) n->bytes_received += (uint64_t)r;
            return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        }
        ERR_clear_error();
        int r = SSL_accept(c->ssl);
        if (r != 1) {
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
            n->tls_failures++;
            return 1;
        }
        c->tls_up = 1;
        n->tls_handshakes++;
    }
    for (;;) {
        buf_reserve(&c->in, 16384);
        ERR_clear_error();
        int r = SSL_read(c->ssl, c->in.p + c->in.len, (int)(c->in.cap - c->in.len));
        if (r > 0) {
            c->in.len += (size_t)r;
            n->bytes_received += (uint64_t)r;
            continue;
        }
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
        return 1;
    }
}
#endif

static void *node_main(void *arg)
{
    fs_node *n = arg;
    struct pollfd *pfds = NULL;
    size_t cappfds = 0;
    pthread_mutex_lock(&n->mu);
    while (!n->stop) {
        if (n->drop_all) {
            while (n->nconns) remove_conn(n, n->nconns - 1);
            n->drop_all = 0;
        }
        /* stall ends (release or deadline) */
        int64_t now = fs_now_ms();
        int timeout = -1;
        for (size_t i = 0; i < n->nconns; i++) {
            conn *c = n->conns[i];
            if (!c->stalled) continue;
            if (c->stall_gen != n->release_gen || (c->stall_until && now >= c->stall_until)) {
                buf_add(&c->out, c->held.p, c->held.len);
                c->held.len = 0;
                c->stalled = 0;
                conn_process(n, c);
            } else if (c->stall_until) {
                int64_t left = c->stall_until - now;
                if (timeout < 0 || left < timeout) timeout = (int)left;
            }
        }
        /* flush, close the closing ones */
        for (size_t i = 0; i < n->nconns;) {
            conn *c = n->conns[i];
            if (conn_flush(c) < 0) {
                remove_conn(n, i);
                continue;
            }
            if (c->closing && c->out.len == 0) {
                conn_close_gently(c);
                remove_conn(n, i);
                continue;
            }
            i++;
        }
        pthread_cond_broadcast(&n->cond);

        size_t np = n->nconns + 2;
        if (np > cappfds) {
            cappfds = np * 2;
            pfds = xrealloc(pfds, cappfds * sizeof *pfds);
        }
        pfds[0].fd = n->wake[0];
        pfds[0].events = POLLIN;
        pfds[1].fd = n->lfd;
        pfds[1].events = POLLIN;
        for (size_t i = 0; i < n->nconns; i++) {
            pfds[i + 2].fd = n->conns[i]->fd;
            pfds[i + 2].events = (short)(POLLIN | (n->conns[i]->out.len ? POLLOUT : 0));
            pfds[i + 2].revents = 0;
        }
        pfds[0].revents = pfds[1].revents = 0;
        /* Connections are only added/removed by this thread, so the fds stay valid while
         * the mutex is released for poll. */
        size_t nc = n->nconns;
        pthread_mutex_unlock(&n->mu);
        int pr = poll(pfds, nc + 2, timeout);
        pthread_mutex_lock(&n->mu);
        if (pr < 0) continue;
        if (pfds[0].revents & POLLIN) {
            char tmp[64];
            while (read(n->wake[0], tmp, sizeof tmp) > 0) {
            }
        }
        if (n->drop_all) continue;
        /* read and process, back to front so removals keep indexes valid */
        for (size_t j = nc; j-- > 0;) {
            if (!(pfds[j + 2].revents & (POLLIN | POLLERR | POLLHUP))) continue;
            conn *c = n->conns[j];
            int gone = 0;
#ifdef SL_WITH_TLS
            if (c->ssl && (gone = tls_read(n, c)) >= 0) {
                if (c->closing) c->in.len = 0;
                conn_process(n, c);
                if (gone) {
                    conn_flush(c);
                    remove_conn(n, j);
                }
                continue;
            }
            gone = 0;
#endif
            for (;;) {
                buf_reserve(&c->in, 16384);
                ssize_t r = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
                if (r > 0) {
                    c->in.len += (size_t)r;
                    n->bytes_received += (uint64_t)r;
                    continue;
                }
                if (r < 0 && errno == EINTR) continue;
                if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                gone = 1; /* EOF or error */
                break;
            }
            if (c->closing) c->in.len = 0; /* input after a close action is dropped */
            conn_process(n, c);
            if (gone) {
                conn_flush(c);
                remove_conn(n, j);
            }
        }
        if (pfds[1].revents & POLLIN) accept_all(n);
    }
    while (n->nconns) remove_conn(n, n->nconns - 1);
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
    free(pfds);
    return NULL;
}

/* ------------------------------------------------------------------ public */

fs_node *fs_start(void)
{
    fs_node *n = xmalloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->enforce = 1;
    n->scratch = xmalloc(sizeof *n->scratch);
    pthread_mutex_init(&n->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->cond, &ca);
    pthread_condattr_destroy(&ca);

    n->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (n->lfd < 0) fs_die("socket");
    int one = 1;
    setsockopt(n->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (bind(n->lfd, (struct sockaddr *)&sa, sizeof sa) < 0) fs_die("bind");
    if (listen(n->lfd, 128) < 0) fs_die("listen");
    socklen_t sl = sizeof sa;
    if (getsockname(n->lfd, (struct sockaddr *)&sa, &sl) < 0) fs_die("getsockname");
    n->port = ntohs(sa.sin_port);
    make_id(n->port, n->id);
    fcntl(n->lfd, F_SETFL, fcntl(n->lfd, F_GETFL, 0) | O_NONBLOCK);

    if (pipe(n->wake) < 0) fs_die("pipe");
    fcntl(n->wake[0], F_SETFL, fcntl(n->wake[0], F_GETFL, 0) | O_NONBLOCK);
    fcntl(n->wake[1], F_SETFL, fcntl(n->wake[1], F_GETFL, 0) | O_NONBLOCK);
    errno = pthread_create(&n->thread, NULL, node_main, n);
    if (errno) fs_die("pthread_create");
    return n;
}

void fs_stop(fs_node *n)
{
    if (!n) return;
    pthread_mutex_lock(&n->mu);
    n->stop = 1;
    pthread_mutex_unlock(&n->mu);
    node_wake(n);
    pthread_join(n->thread, NULL);
    close(n->lfd);
    close(n->wake[0]);
    close(n->wake[1]);
#ifdef SL_WITH_TLS
    if (n->ssl_ctx) SSL_CTX_free(n->ssl_ctx);
#endif
    free(n->conns);
    free(n->slots);
    free(n->password);
    for (size_t i = 0; i < n->nrules; i++) {
        free(n->rules[i].key);
        free(n->rules[i].reply);
    }
    free(n->rules);
    free(n->log);
    store_clear(n);
    free(n->store);
    free(n->scratch);
    pthread_cond_destroy(&n->cond);
    pthread_mutex_destroy(&n->mu);
    free(n);
}

int fs_port(const fs_node *n) { return n->port; }

const char *fs_id(const fs_node *n) { return n->id; }

void fs_set_slots(fs_node *n, const fs_range *ranges, size_t count)
{
    pthread_mutex_lock(&n->mu);
    free(n->slots);
    n->slots = NULL;
    n->nslots = 0;
    if (count) {
        n->slots = xmalloc(count * sizeof *ranges);
        memcpy(n->slots, ranges, count * sizeof *ranges);
        n->nslots = count;
    }
    /* as Redis: a shard channel whose slot left the node is unsubscribed, with a push */
    for (size_t i = 0; count && i < n->nconns; i++) {
        conn *c = n->conns[i];
        for (size_t j = c->nsubs; j-- > 0;)
            if (c->subs[j].kind == 2 && slot_owner(n, fs_key_slot(c->subs[j].name, c->subs[j].len)) != n->port) {
                char *nm = xstrndup(c->subs[j].name, c->subs[j].len);
                size_t l = c->subs[j].len;
                sub_drop(c, j);
                r_sub(&c->out, c->resp3, "sunsubscribe", nm, l, (long long)c->nsubs);
                free(nm);
            }
    }
    node_wake(n);
    pthread_mutex_unlock(&n->mu);
}

long long fs_publish(fs_node *n, int shard, const char *channel, const void *msg, size_t len)
{
    pthread_mutex_lock(&n->mu);
    long long got = deliver(n, shard, channel, strlen(channel), msg, len);
    node_wake(n);
    pthread_mutex_unlock(&n->mu);
    return got;
}

void fs_push_raw(fs_node *n, const void *bytes, size_t len)
{
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->nconns; i++)
        if (n->conns[i]->nsubs) buf_add(&n->conns[i]->out, bytes, len);
    node_wake(n);
    pthread_mutex_unlock(&n->mu);
}

size_t fs_subscriptions(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    size_t k = 0;
    for (size_t i = 0; i < n->nconns; i++) k += n->conns[i]->nsubs;
    pthread_mutex_unlock(&n->mu);
    return k;
}

void fs_set_enforce(fs_node *n, int on)
{
    pthread_mutex_lock(&n->mu);
    n->enforce = on;
    pthread_mutex_unlock(&n->mu);
}

void fs_set_empty_host(fs_node *n, int on)
{
    pthread_mutex_lock(&n->mu);
    n->empty_host = on;
    pthread_mutex_unlock(&n->mu);
}

void fs_set_password(fs_node *n, const char *password)
{
    pthread_mutex_lock(&n->mu);
    free(n->password);
    n->password = password ? xstrndup(password, strlen(password)) : NULL;
    pthread_mutex_unlock(&n->mu);
}

int fs_set_tls(fs_node *n, const fs_tls *t)
{
#ifdef SL_WITH_TLS
    SSL_CTX *ctx = NULL;
    if (t) {
        signal(SIGPIPE, SIG_IGN); /* OpenSSL's socket BIO write()s: a gone client must not kill the test */
        ctx = SSL_CTX_new(TLS_server_method());
        if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, t->key_file, SSL_FILETYPE_PEM) != 1)
            fs_die("fs_set_tls: cannot load the server certificate or key");
        if (t->client_ca_file) {
            if (SSL_CTX_load_verify_file(ctx, t->client_ca_file) != 1) fs_die("fs_set_tls: cannot load the client CA");
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        }
    }
    pthread_mutex_lock(&n->mu);
    if (n->ssl_ctx) SSL_CTX_free(n->ssl_ctx);
    n->ssl_ctx = ctx;
    n->tls_stall = t ? t->stall_handshake : 0;
    pthread_mutex_unlock(&n->mu);
    return 0;
#else
    (void)n;
    (void)t;
    return -1;
#endif
}

/* A counter of the node, read under its mutex. */
static uint64_t locked_counter(fs_node *n, const uint64_t *counter)
{
    pthread_mutex_lock(&n->mu);
    uint64_t v = *counter;
    pthread_mutex_unlock(&n->mu);
    return v;
}

uint64_t fs_tls_handshakes(fs_node *n) { return locked_counter(n, &n->tls_handshakes); }
uint64_t fs_tls_failures(fs_node *n) { return locked_counter(n, &n->tls_failures); }

int fs_add_rule(fs_node *n, const fs_rule *r)
{
    pthread_mutex_lock(&n->mu);
    if (n->nrules == n->caprules) {
        n->caprules = n->caprules ? n->caprules * 2 : 8;
        n->rules = xrealloc(n->rules, n->caprules * sizeof(rule));
    }
    rule *x = &n->rules[n->nrules++];
    memset(x, 0, sizeof *x);
    x->id = ++n->next_rule_id;
    x->live = 1;
    split_cmd(r->cmd, x->name, x->sub);
    if (r->key) {
        x->keylen = strlen(r->key);
        x->key = xstrndup(r->key, x->keylen);
    }
    x->times = r->times;
    x->action = r->action;
    if (r->reply) {
        x->reply_len = r->reply_len ? r->reply_len : strlen(r->reply);
        x->reply = xstrndup(r->reply, x->reply_len);
    }
    x->close_after = r->close_after;
    x->stall_ms = r->stall_ms;
    int id = x->id;
    pthread_mutex_unlock(&n->mu);
    return id;
}

int fs_add_reply(fs_node *n, const char *cmd, const char *key, int times, const char *reply)
{
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = cmd;
    r.key = key;
    r.times = times;
    r.action = FS_REPLY;
    r.reply = reply;
    return fs_add_rule(n, &r);
}

void fs_remove_rule(fs_node *n, int id)
{
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->nrules; i++)
        if (n->rules[i].id == id) n->rules[i].live = 0;
    pthread_mutex_unlock(&n->mu);
}

void fs_clear_rules(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->nrules; i++) {
        free(n->rules[i].key);
        free(n->rules[i].reply);
    }
    n->nrules = 0;
    pthread_mutex_unlock(&n->mu);
}

uint64_t fs_rule_hits(fs_node *n, int id)
{
    uint64_t h = 0;
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->nrules; i++)
        if (n->rules[i].id == id) h = n->rules[i].hits;
    pthread_mutex_unlock(&n->mu);
    return h;
}

void fs_release(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    n->release_gen++;
    pthread_mutex_unlock(&n->mu);
    node_wake(n);
}

void fs_drop_connections(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    n->drop_all = 1;
    node_wake(n);
    while (n->drop_all && !n->stop) pthread_cond_wait(&n->cond, &n->mu);
    pthread_mutex_unlock(&n->mu);
}

static uint64_t count_locked(fs_node *n, const char *cmd, const char *key, int asking_only)
{
    char name[32], sub[32];
    split_cmd(cmd, name, sub);
    uint64_t k = 0;
    for (size_t i = 0; i < n->nlog; i++)
        if ((!asking_only || n->log[i].asking) && log_matches(&n->log[i], name, sub, key)) k++;
    return k;
}

uint64_t fs_count(fs_node *n, const char *cmd, const char *key)
{
    pthread_mutex_lock(&n->mu);
    uint64_t k = count_locked(n, cmd, key, 0);
    pthread_mutex_unlock(&n->mu);
    return k;
}

uint64_t fs_count_asking(fs_node *n, const char *cmd, const char *key)
{
    pthread_mutex_lock(&n->mu);
    uint64_t k = count_locked(n, cmd, key, 1);
    pthread_mutex_unlock(&n->mu);
    return k;
}

size_t fs_times(fs_node *n, const char *cmd, const char *key, int64_t *out, size_t cap)
{
    char name[32], sub[32];
    split_cmd(cmd, name, sub);
    size_t k = 0;
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->nlog; i++)
        if (log_matches(&n->log[i], name, sub, key)) {
            if (k < cap) out[k] = n->log[i].us;
            k++;
        }
    pthread_mutex_unlock(&n->mu);
    return k;
}

uint64_t fs_connections(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    uint64_t k = n->connections;
    pthread_mutex_unlock(&n->mu);
    return k;
}

uint64_t fs_open_connections(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    uint64_t k = n->nconns;
    pthread_mutex_unlock(&n->mu);
    return k;
}

uint64_t fs_bytes_received(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    uint64_t k = n->bytes_received;
    pthread_mutex_unlock(&n->mu);
    return k;
}

static int stalled_locked(fs_node *n)
{
    int k = 0;
    for (size_t i = 0; i < n->nconns; i++) k += n->conns[i]->stalled;
    return k;
}

int fs_stalled(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    int k = stalled_locked(n);
    pthread_mutex_unlock(&n->mu);
    return k;
}

void fs_reset_counters(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    n->nlog = 0;
    n->connections = 0;
    n->bytes_received = 0;
    pthread_mutex_unlock(&n->mu);
}

void fs_flush(fs_node *n)
{
    pthread_mutex_lock(&n->mu);
    store_clear(n);
    pthread_mutex_unlock(&n->mu);
}

void fs_store_del(fs_node *n, const char *key)
{
    pthread_mutex_lock(&n->mu);
    store_del(n, key, strlen(key));
    pthread_mutex_unlock(&n->mu);
}

void fs_store_set(fs_node *n, const char *key, const char *value)
{
    pthread_mutex_lock(&n->mu);
    store_put(n, key, strlen(key), value, strlen(value));
    pthread_mutex_unlock(&n->mu);
}

static void deadline_ts(struct timespec *ts, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += timeout_ms / 1000;
    ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int fs_wait_count(fs_node *n, const char *cmd, const char *key, uint64_t atleast, int timeout_ms)
{
    struct timespec ts;
    deadline_ts(&ts, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&n->mu);
    while (count_locked(n, cmd, key, 0) < atleast) {
        if (pthread_cond_timedwait(&n->cond, &n->mu, &ts) == ETIMEDOUT) {
            rc = count_locked(n, cmd, key, 0) >= atleast ? 0 : -1;
            break;
        }
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int fs_wait_open_connections(fs_node *n, uint64_t atmost, int timeout_ms)
{
    struct timespec ts;
    deadline_ts(&ts, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&n->mu);
    while (n->nconns > atmost) {
        if (pthread_cond_timedwait(&n->cond, &n->mu, &ts) == ETIMEDOUT) {
            rc = n->nconns > atmost ? -1 : 0;
            break;
        }
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int fs_wait_stalled(fs_node *n, int atleast, int timeout_ms)
{
    struct timespec ts;
    deadline_ts(&ts, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&n->mu);
    while (stalled_locked(n) < atleast) {
        if (pthread_cond_timedwait(&n->cond, &n->mu, &ts) == ETIMEDOUT) {
            rc = stalled_locked(n) >= atleast ? 0 : -1;
            break;
        }
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

/* ------------------------------------------------------------------ cluster */

static void even_split(int count, int i, int *lo, int *hi)
{
    *lo = (int)((long)16384 * i / count);
    *hi = (int)((long)16384 * (i + 1) / count) - 1;
}

void fs_cluster_start(fs_cluster *c, int count)
{
    if (count < 1 || count > FS_MAX_NODES) {
        fprintf(stderr, "fake_server: bad cluster size %d\n", count);
        abort();
    }
    memset(c, 0, sizeof *c);
    c->n = count;
    fs_range r[FS_MAX_NODES];
    for (int i = 0; i < count; i++) {
        c->nodes[i] = fs_start();
        even_split(count, i, &r[i].start, &r[i].end);
        r[i].port = fs_port(c->nodes[i]);
    }
    fs_cluster_set_map(c, r, (size_t)count);
}

void fs_cluster_set_map(fs_cluster *c, const fs_range *ranges, size_t count)
{
    for (int i = 0; i < c->n; i++) fs_set_slots(c->nodes[i], ranges, count);
}

int fs_cluster_default_owner(const fs_cluster *c, int slot)
{
    for (int i = 0; i < c->n; i++) {
        int lo, hi;
        even_split(c->n, i, &lo, &hi);
        if (slot >= lo && slot <= hi) return i;
    }
    return -1;
}

uint64_t fs_cluster_count(fs_cluster *c, const char *cmd, const char *key)
{
    uint64_t k = 0;
    for (int i = 0; i < c->n; i++) k += fs_count(c->nodes[i], cmd, key);
    return k;
}

void fs_cluster_stop(fs_cluster *c)
{
    for (int i = 0; i < c->n; i++) {
        fs_stop(c->nodes[i]);
        c->nodes[i] = NULL;
    }
    c->n = 0;
}

void fs_dead_port_open(fs_dead_port *d)
{
    d->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (d->fd < 0) fs_die("socket");
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(d->fd, (struct sockaddr *)&sa, sizeof sa) < 0) fs_die("bind");
    socklen_t sl = sizeof sa;
    if (getsockname(d->fd, (struct sockaddr *)&sa, &sl) < 0) fs_die("getsockname");
    d->port = ntohs(sa.sin_port);
    d->filler = -1;
}

void fs_blackhole_open(fs_dead_port *d)
{
    d->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (d->fd < 0) fs_die("socket");
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(d->fd, (struct sockaddr *)&sa, sizeof sa) < 0) fs_die("bind");
    if (listen(d->fd, 0) < 0) fs_die("listen");
    socklen_t sl = sizeof sa;
    if (getsockname(d->fd, (struct sockaddr *)&sa, &sl) < 0) fs_die("getsockname");
    d->port = ntohs(sa.sin_port);
    /* backlog 0 still queues one connection: fill it, so later SYNs are dropped */
    d->filler = socket(AF_INET, SOCK_STREAM, 0);
    if (d->filler < 0) fs_die("socket");
    if (connect(d->filler, (struct sockaddr *)&sa, sizeof sa) < 0) fs_die("connect");
}

void fs_dead_port_close(fs_dead_port *d)
{
    if (d->fd >= 0) close(d->fd);
    if (d->filler > 0) close(d->filler);
    d->fd = -1;
    d->filler = -1;
}
