/* params: see params.h. */
#include "params.h"
#include "notify.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"

enum { P_BOOL, P_INT, P_MEM, P_ENUM, P_STR, P_SPECIAL };
enum { P_IMMUTABLE = 1, P_PROTECTED = 2 };

typedef struct param {
    const char *name;
    const char *alias_of; /* 7.0 keeps the old name as a second entry of the same setting */
    int type, flags;
    long long min, max;   /* P_INT, P_MEM */
    const char *enums;    /* P_ENUM: "a, b, c", as Redis's error lists them */
    const char *def;      /* Redis's default, except where this server differs (see sv_params_init) */
} param;

/* Names, types, ranges and enum values as redis-server 7.0.15 answers CONFIG GET *
 * and CONFIG SET with bad values (derived from its replies; defaults are Redis's
 * except: hz 10, port/bind/dir/maxclients/loglevel/appendonly/appendfsync from our
 * flags, databases 1, cluster-enabled yes, save "", daemonize no). */
static const param table[] = {
#include "params_table.inc"
};
#define NPARAMS (sizeof(table) / sizeof(table[0]))

/* What the table implies (the same for every instance; made once). */
static int canon[NPARAMS];   /* index of the entry holding the value */
static int id_index[SV_PARAM__COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* The values, per instance (sv_server.params). */
typedef struct sv_params_state {
    pthread_mutex_t ps_lock;
    char *ps_val[NPARAMS];   /* canonical value of each canonical entry (aliases: NULL) */
    unsigned char ps_changed[NPARAMS]; /* set by CONFIG SET (REWRITE writes those) */
    int ps_inited;
    atomic_llong ps_nums[SV_PARAM__COUNT];
    int ps_notify_parsed; /* see parse_value */
} sv_params_state;
#define PS (sv_cur->params)
#define lock (PS->ps_lock)
#define val (PS->ps_val)
#define changed (PS->ps_changed)
#define inited (PS->ps_inited)
#define nums (PS->ps_nums)
#define notify_parsed (PS->ps_notify_parsed)

static const struct { enum sv_param_id id; const char *name; } ids[] = {
    {SV_PARAM_HASH_MAX_LISTPACK_ENTRIES, "hash-max-listpack-entries"},
    {SV_PARAM_HASH_MAX_LISTPACK_VALUE, "hash-max-listpack-value"},
    {SV_PARAM_LIST_MAX_LISTPACK_SIZE, "list-max-listpack-size"},
    {SV_PARAM_SET_MAX_INTSET_ENTRIES, "set-max-intset-entries"},
    {SV_PARAM_ZSET_MAX_LISTPACK_ENTRIES, "zset-max-listpack-entries"},
    {SV_PARAM_ZSET_MAX_LISTPACK_VALUE, "zset-max-listpack-value"},
    {SV_PARAM_SLOWLOG_LOG_SLOWER_THAN, "slowlog-log-slower-than"},
    {SV_PARAM_SLOWLOG_MAX_LEN, "slowlog-max-len"},
    {SV_PARAM_LIST_COMPRESS_DEPTH, "list-compress-depth"},
    {SV_PARAM_LATENCY_MONITOR_THRESHOLD, "latency-monitor-threshold"},
    {SV_PARAM_HZ, "hz"},
    {SV_PARAM_MAXMEMORY, "maxmemory"},
};

static int find(const char *name, size_t len)
{
    for (size_t i = 0; i < NPARAMS; i++)
        if (strlen(table[i].name) == len && !strncasecmp(table[i].name, name, len)) return (int)i;
    return -1;
}

static void publish(int i)
{
    for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++)
        if (id_index[ids[k].id] == i) {
            long long v = 0;
            sv_str2ll(val[i], strlen(val[i]), &v);
            atomic_store_explicit(&nums[ids[k].id], v, memory_order_relaxed);
        }
}

static void store(int i, const char *v)
{
    i = canon[i];
    free(val[i]);
    val[i] = sv_memdup(v, strlen(v));
    publish(i);
}

/* Defaults; called under the lock (or before the shards start). */
static void table_init(void)
{
    for (size_t i = 0; i < NPARAMS; i++) {
        canon[i] = table[i].alias_of ? find(table[i].alias_of, strlen(table[i].alias_of)) : (int)i;
        if (canon[i] < 0) canon[i] = (int)i;
    }
    for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) id_index[ids[k].id] = find(ids[k].name, strlen(ids[k].name));
}

void sv_params_init_state(sv_server *s)
{
    pthread_once(&table_once, table_init);
    s->params = sv_calloc(1, sizeof(sv_params_state));
    pthread_mutex_init(&s->params->ps_lock, NULL);
    s->params->ps_notify_parsed = -1;
}

void sv_params_free_state(sv_server *s)
{
    if (!s->params) return;
    for (size_t i = 0; i < NPARAMS; i++) free(s->params->ps_val[i]);
    pthread_mutex_destroy(&s->params->ps_lock);
    free(s->params);
    s->params = NULL;
}

static void ensure_init(void)
{
    if (inited) return;
    inited = 1;
    for (size_t i = 0; i < NPARAMS; i++)
        if (canon[i] == (int)i) store((int)i, table[i].def);
}

static const char *loglevels[] = {"debug", "verbose", "notice", "warning"};

void sv_params_init(void)
{
    char b[64];
    sv_meminfo m;
    sv_meminfo_read(&m); /* INFO's used_memory_startup */
    ensure_init();
    /* the settings our flags decide */
    snprintf(b, sizeof(b), "%d", sv_cfg.maxclients);
    store(find("maxclients", 10), b);
    store(find("loglevel", 8), loglevels[sv_cfg.loglevel > SV_LOG_WARNING ? SV_LOG_WARNING : sv_cfg.loglevel]);
    store(find("bind", 4), sv_cfg.bind);
    store(find("dir", 3), sv_cfg.dir);
    store(find("appendonly", 10), sv_cfg.durability ? "yes" : "no");
    store(find("appendfsync", 11), sv_cfg.durability == 2 ? "always" : "everysec");
    snprintf(b, sizeof(b), "%d", sv_cfg.aof_rewrite_pct);
    store(find("auto-aof-rewrite-percentage", 27), b);
    snprintf(b, sizeof(b), "%lld", sv_cfg.aof_rewrite_min);
    store(find("auto-aof-rewrite-min-size", 25), b);
    store(find("cluster-announce-ip", 19), sv_cfg.announce);
    store(find("enable-debug-command", 20), sv_cfg.enable_debug == 1 ? "yes" : sv_cfg.enable_debug == 2 ? "local" : "no");
    if (sv_cfg.config_file) {
        char full[4096];
        if (sv_cfg.config_file[0] != '/' && getcwd(full, sizeof(full) - 1024))
            snprintf(full + strlen(full), 1024, "/%s", sv_cfg.config_file);
        else snprintf(full, sizeof(full), "%s", sv_cfg.config_file);
        free(sv_cfg.config_file);
        sv_cfg.config_file = sv_memdup(full, strlen(full));
    }
}

void sv_params_free(void)
{
    for (size_t i = 0; i < NPARAMS; i++) {
        free(val[i]);
        val[i] = NULL;
    }
    inited = 0;
}

void sv_params_value(const char *rawname, char *out, size_t cap)
{
    char name[64];
    size_t l;
    for (l = 0; rawname[l] && l < sizeof(name) - 1; l++) name[l] = rawname[l] == '_' ? '-' : rawname[l];
    name[l] = 0;
    pthread_mutex_lock(&lock);
    ensure_init();
    int i = find(name, l);
    snprintf(out, cap, "%s", i >= 0 ? val[canon[i]] : "");
    pthread_mutex_unlock(&lock);
}

long long sv_param_ll(enum sv_param_id id) { return atomic_load_explicit(&nums[id], memory_order_relaxed); }

/* ---- parsing to the canonical form ---- */

/* Redis's memtoull: digits with an optional k kb m mb g gb (any case). */
static int parse_mem(const char *s, long long *out)
{
    const char *u = s;
    while (*u >= '0' && *u <= '9') u++;
    if (u == s || u - s > 19) return 0;
    long long mul = 1;
    if (!*u) mul = 1;
    else if (!strcasecmp(u, "b")) mul = 1;
    else if (!strcasecmp(u, "k")) mul = 1000;
    else if (!strcasecmp(u, "kb")) mul = 1024;
    else if (!strcasecmp(u, "m")) mul = 1000 * 1000;
    else if (!strcasecmp(u, "mb")) mul = 1024 * 1024;
    else if (!strcasecmp(u, "g")) mul = 1000LL * 1000 * 1000;
    else if (!strcasecmp(u, "gb")) mul = 1024LL * 1024 * 1024;
    else return 0;
    errno = 0;
    unsigned long long n = strtoull(s, NULL, 10);
    if (errno || n > (unsigned long long)LLONG_MAX / (unsigned long long)mul) return 0;
    *out = (long long)(n * (unsigned long long)mul);
    return 1;
}

static int is_ll(const char *s, long long *v) { return sv_str2ll(s, strlen(s), v); }

/* Splits on single spaces (Redis's sdssplitlen: an empty token is a token). */
static int split(const char *s, char tok[][64], int max)
{
    int n = 0;
    const char *p = s;
    if (!*s) return 0;
    for (;;) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (n == max || l >= 64) return -1;
        memcpy(tok[n], p, l);
        tok[n][l] = 0;
        n++;
        if (!e) break;
        p = e + 1;
    }
    return n;
}

/* client-output-buffer-limit: <class> <hard> <soft> <soft seconds> ...; the canonical
 * form lists all three classes, the ones not given keep their values. */
static const char *parse_cobl(const char *s, const char *cur, char *out, size_t cap)
{
    char tok[48][64];
    int n = split(s, tok, 48);
    if (n <= 0 || n % 4) return "Wrong number of arguments in buffer limit configuration.";
    long long lim[3][3];
    char ctok[12][64];
    if (split(cur, ctok, 12) != 12) return "Wrong number of arguments in buffer limit configuration.";
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 3; k++) lim[c][k] = strtoll(ctok[c * 4 + 1 + k], NULL, 10);
    for (int j = 0; j < n; j += 4) {
        int cls = !strcasecmp(tok[j], "normal") ? 0
                  : (!strcasecmp(tok[j], "slave") || !strcasecmp(tok[j], "replica")) ? 1
                  : !strcasecmp(tok[j], "pubsub") ? 2 : -1;
        if (cls < 0) return "Invalid client class specified in buffer limit configuration.";
        long long h, so, sec;
        if (!parse_mem(tok[j + 1], &h) || !parse_mem(tok[j + 2], &so) || !is_ll(tok[j + 3], &sec) || sec < 0)
            return "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
        lim[cls][0] = h;
        lim[cls][1] = so;
        lim[cls][2] = sec;
    }
    snprintf(out, cap, "normal %lld %lld %lld slave %lld %lld %lld pubsub %lld %lld %lld", lim[0][0], lim[0][1],
             lim[0][2], lim[1][0], lim[1][1], lim[1][2], lim[2][0], lim[2][1], lim[2][2]);
    return NULL;
}

/* notify-keyspace-events as last parsed (under the lock): its canonical spelling does not
 * show every flag ("KEAn" reads back "AKE", as Redis), so apply() uses these flags when
 * it gets that spelling. */
/* (sv_params_state.notify_parsed) */

/* The canonical value of `v` for parameter i into out; NULL or Redis's message. */
static const char *parse_value(int i, const char *v, char *out, size_t cap)
{
    const param *p = &table[i];
    const char *name = table[canon[i]].name;
    long long n;
    switch (p->type) {
    case P_BOOL:
        if (!strcasecmp(v, "yes") || !strcasecmp(v, "no")) {
            snprintf(out, cap, "%s", !strcasecmp(v, "yes") ? "yes" : "no");
            return NULL;
        }
        if (!strcmp(name, "enable-debug-command") && !strcasecmp(v, "local")) {
            snprintf(out, cap, "local");
            return NULL;
        }
        return "argument must be 'yes' or 'no'";
    case P_INT:
    case P_MEM:
        if (p->type == P_INT ? !is_ll(v, &n) : !parse_mem(v, &n)) {
            if (p->type == P_MEM && v[0] == '-' && is_ll(v, &n)) goto range;
            return p->type == P_INT ? "argument couldn't be parsed into an integer" : "argument must be a memory value";
        }
    range:
        if (n < p->min || n > p->max) {
            static _Thread_local char msg[128];
            snprintf(msg, sizeof(msg), "argument must be between %lld and %lld inclusive", p->min, p->max);
            return msg;
        }
        if (!strcmp(name, "hz")) n = n < 1 ? 1 : n > 500 ? 500 : n; /* as Redis: clamped */
        snprintf(out, cap, "%lld", n);
        return NULL;
    case P_ENUM: {
        const char *e = p->enums;
        while (*e) {
            const char *end = strchr(e, ',');
            size_t l = end ? (size_t)(end - e) : strlen(e);
            if (strlen(v) == l && !strncasecmp(v, e, l)) {
                snprintf(out, cap, "%.*s", (int)l, e);
                return NULL;
            }
            if (!end) break;
            e = end + 2;
        }
        static _Thread_local char msg[300];
        snprintf(msg, sizeof(msg), "argument(s) must be one of the following: %s", p->enums);
        return msg;
    }
    case P_STR:
        snprintf(out, cap, "%s", v);
        return NULL;
    }
    /* P_SPECIAL */
    if (!strcmp(name, "save")) {
        char tok[64][64];
        int k = split(v, tok, 64);
        if (k < 0 || k % 2) return "Invalid save parameters";
        for (int j = 0; j < k; j++)
            if (!is_ll(tok[j], &n) || n < 0) return "Invalid save parameters";
        snprintf(out, cap, "%s", v);
        return NULL;
    }
    if (!strcmp(name, "notify-keyspace-events")) {
        /* notify.c's parser and Redis's canonical spelling (as GET showed before the table) */
        int f;
        if (!sv_notify_parse((sv_str){v, strlen(v)}, &f)) return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
        sv_notify_format(f, out, cap);
        notify_parsed = f; /* the spelling drops 'n' after 'A'; apply() takes the flags from here */
        return NULL;
    }
    if (!strcmp(name, "client-output-buffer-limit")) return parse_cobl(v, val[canon[i]], out, cap);
    if (!strcmp(name, "bind")) {
        if (strcmp(v, val[canon[i]])) return "Failed to bind to specified addresses.";
        snprintf(out, cap, "%s", v);
        return NULL;
    }
    if (!strcmp(name, "oom-score-adj-values")) {
        char tok[4][64];
        if (split(v, tok, 4) != 3) return "wrong number of arguments";
        for (int j = 0; j < 3; j++)
            if (!is_ll(tok[j], &n) || n < -2000 || n > 2000) return "Invalid oom-score-adj-values";
        snprintf(out, cap, "%s", v);
        return NULL;
    }
    if (!strcmp(name, "latency-tracking-info-percentiles")) {
        char tok[16][64];
        int k = split(v, tok, 16);
        if (k < 0) return "Invalid latency-tracking-info-percentiles parameters";
        for (int j = 0; j < k; j++) {
            char *end;
            double d = strtod(tok[j], &end);
            if (!tok[j][0] || *end) return "Invalid latency-tracking-info-percentiles parameters";
            if (d < 0 || d > 100) return "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]";
        }
        snprintf(out, cap, "%s", v);
        return NULL;
    }
    if (!strcmp(name, "maxmemory-clients")) {
        size_t l = strlen(v);
        if (l > 1 && v[l - 1] == '%') {
            char num[32];
            if (l - 1 >= sizeof(num)) return "argument must be a memory or percent value";
            memcpy(num, v, l - 1);
            num[l - 1] = 0;
            if (!is_ll(num, &n) || n < 0 || n > 100) return "argument must be a memory or percent value";
            snprintf(out, cap, "%lld%%", n);
            return NULL;
        }
        if (!parse_mem(v, &n)) return "argument must be a memory or percent value";
        snprintf(out, cap, "%lld", n);
        return NULL;
    }
    snprintf(out, cap, "%s", v);
    return NULL;
}

/* The parameters that mean something here take effect; returns NULL or a message. */
static const char *apply(int i, const char *v)
{
    const char *name = table[canon[i]].name;
    long long n = 0;
    is_ll(v, &n);
    if (!strcmp(name, "maxclients")) {
        int fit = n > sv_cfg.maxclients ? sv_fd_limit_clients((int)(n > INT_MAX ? INT_MAX : n)) : (int)n;
        if (fit < n) { /* as Redis: more than the open-files limit allows is refused */
            static _Thread_local char msg[160];
            snprintf(msg, sizeof(msg), "The operating system is not able to handle the specified number of clients, try with %d", fit);
            return msg;
        }
        sv_cfg.maxclients = (int)n;
    } else if (!strcmp(name, "loglevel")) {
        for (int k = 0; k < 4; k++)
            if (!strcmp(v, loglevels[k])) sv_cfg.loglevel = k;
    } else if (!strcmp(name, "maxmemory-policy")) {
        atomic_store(&sv_lfu_on, strstr(v, "lfu") != NULL);
    } else if (!strcmp(name, "lfu-log-factor")) {
        atomic_store(&sv_lfu_log_factor, n);
    } else if (!strcmp(name, "auto-aof-rewrite-percentage")) {
        sv_cfg.aof_rewrite_pct = (int)n;
    } else if (!strcmp(name, "auto-aof-rewrite-min-size")) {
        sv_cfg.aof_rewrite_min = n;
    } else if (!strcmp(name, "notify-keyspace-events")) { /* keyspace notifications (notify.c) */
        int f;
        char spelled[32];
        if (!sv_notify_parse((sv_str){v, strlen(v)}, &f)) return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
        if (notify_parsed >= 0) {
            sv_notify_format(notify_parsed, spelled, sizeof(spelled));
            if (!strcmp(spelled, v)) f = notify_parsed;
        }
        sv_notify_flags = f;
    } else if (!strcmp(name, "client-output-buffer-limit")) { /* the normal and pubsub classes (t_server.c) */
        return sv_set_output_limits((sv_str){v, strlen(v)});
    } else if (!strcmp(name, "busy-reply-threshold")) { /* lua-time-limit is its alias (script.c) */
        sv_cfg.busy_reply_ms = n;
    }
    return NULL;
}

static void add_value(sv_ctx *c, int i)
{
    if (!strcmp(table[i].name, "port")) {
        char b[16];
        snprintf(b, sizeof(b), "%d", c->sh->port ? c->sh->port : sv_cfg.port);
        sv_add_bulk_cstr(&c->r, b);
    } else {
        sv_add_bulk_cstr(&c->r, val[canon[i]]);
    }
}

void sv_params_get(sv_ctx *c, int npat, sv_str *pat)
{
    unsigned char match[NPARAMS] = {0};
    long long n = 0;
    pthread_mutex_lock(&lock);
    ensure_init();
    for (int j = 0; j < npat; j++)
        for (size_t i = 0; i < NPARAMS; i++)
            if (!match[i] && sv_glob(pat[j].p, pat[j].len, table[i].name, strlen(table[i].name), 1)) {
                match[i] = 1;
                n++;
            }
    sv_add_map(&c->r, n);
    for (size_t i = 0; i < NPARAMS; i++) {
        if (!match[i]) continue;
        sv_add_bulk_cstr(&c->r, table[i].name);
        add_value(c, (int)i);
    }
    pthread_mutex_unlock(&lock);
}

#define VAL_MAX 1024

void sv_params_set(sv_ctx *c, int npairs, sv_str *kv)
{
    int idx[64];
    char (*nv)[VAL_MAX] = NULL;
    char **old = NULL;
    if (npairs > 64) {
        sv_add_error(&c->r, "CONFIG SET accepts at most 64 parameters at once");
        return;
    }
    /* 1: names (unknown, immutable, duplicate) */
    for (int j = 0; j < npairs; j++) {
        sv_str k = kv[2 * j];
        int i = find(k.p, k.len);
        if (i < 0 || memchr(kv[2 * j + 1].p, 0, kv[2 * j + 1].len) || kv[2 * j + 1].len >= VAL_MAX) {
            if (i < 0)
                sv_add_errorf(&c->r, "Unknown option or number of arguments for CONFIG SET - '%.*s'",
                              (int)(k.len > 128 ? 128 : k.len), k.p);
            else
                sv_add_errorf(&c->r, "CONFIG SET failed (possibly related to argument '%s') - argument too long or invalid",
                              table[i].name);
            return;
        }
        const char *why = (table[i].flags & P_IMMUTABLE) ? "can't set immutable config"
                          : (table[i].flags & P_PROTECTED) ? "can't set protected config" : NULL;
        for (int q = 0; q < j && !why; q++) /* as 7.0: by name (an alias and its name may both be given) */
            if (idx[q] == i) why = "duplicate parameter";
        if (why) {
            sv_add_errorf(&c->r, "CONFIG SET failed (possibly related to argument '%.*s') - %s",
                          (int)(k.len > 128 ? 128 : k.len), k.p, why);
            return;
        }
        idx[j] = i;
    }
    nv = sv_malloc(sizeof(*nv) * (size_t)npairs);
    old = sv_calloc((size_t)npairs, sizeof(*old));
    pthread_mutex_lock(&lock);
    ensure_init();
    /* 2: every value parsed before anything changes */
    for (int j = 0; j < npairs; j++) {
        char v[VAL_MAX];
        memcpy(v, kv[2 * j + 1].p, kv[2 * j + 1].len);
        v[kv[2 * j + 1].len] = 0;
        const char *err = parse_value(idx[j], v, nv[j], VAL_MAX);
        if (err) {
            sv_add_errorf(&c->r, "CONFIG SET failed (possibly related to argument '%.*s') - %s",
                          (int)(kv[2 * j].len > 128 ? 128 : kv[2 * j].len), kv[2 * j].p, err);
            goto out;
        }
    }
    /* 3: applied in order; a failure restores the ones before it (7.0 is atomic) */
    for (int j = 0; j < npairs; j++) {
        int i = canon[idx[j]];
        old[j] = sv_memdup(val[i], strlen(val[i]));
        const char *err = apply(i, nv[j]);
        if (err) {
            for (int q = j - 1; q >= 0; q--) {
                apply(canon[idx[q]], old[q]);
                store(idx[q], old[q]);
            }
            sv_add_errorf(&c->r, "CONFIG SET failed (possibly related to argument '%.*s') - %s",
                          (int)(kv[2 * j].len > 128 ? 128 : kv[2 * j].len), kv[2 * j].p, err);
            goto out;
        }
        store(i, nv[j]);
    }
    for (int j = 0; j < npairs; j++) changed[canon[idx[j]]] = 1;
    sv_add_ok(&c->r);
out:
    pthread_mutex_unlock(&lock);
    for (int j = 0; j < npairs; j++) free(old[j]);
    free(old);
    free(nv);
}

int sv_params_set_startup(const char *rawname, const char *v, char *err, size_t cap)
{
    char name[64];
    size_t l;
    for (l = 0; rawname[l] && l < sizeof(name) - 1; l++) name[l] = rawname[l] == '_' ? '-' : rawname[l];
    name[l] = 0;
    err[0] = 0;
    pthread_mutex_lock(&lock);
    ensure_init();
    int i = find(name, l);
    int r = 0;
    if (i >= 0) {
        char out[VAL_MAX];
        const char *e = strlen(v) >= VAL_MAX ? "argument too long" : parse_value(i, v, out, sizeof(out));
        if (!e) e = apply(i, out);
        if (e) {
            snprintf(err, cap, "invalid value '%s' for %s: %s", v, table[i].name, e);
            r = -1;
        } else {
            store(i, out);
            r = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* `name_with_underscores = "value"` (single quotes when the value has a double one:
 * the loader's strings have no escapes). */
static void write_setting(sv_buf *b, int i)
{
    char out[VAL_MAX + 256];
    char q = strchr(val[i], '"') ? '\'' : '"';
    int n = snprintf(out, sizeof(out), "%s = %c%s%c\n", table[i].name, q, val[i], q);
    for (char *p = out; *p && *p != ' '; p++)
        if (*p == '-') *p = '_';
    sv_buf_append(b, out, (size_t)n);
}

/* The file keeps its lines; a line `name = ...` of a changed parameter (written with
 * '_', as the loader reads it) is replaced, the others are appended. Written to a
 * temporary file, fsync'd and renamed over the old one. */
void sv_params_rewrite(sv_ctx *c)
{
    if (!sv_cfg.config_file) {
        sv_add_error(&c->r, "The server is running without a config file");
        return;
    }
    pthread_mutex_lock(&lock);
    ensure_init();
    unsigned char done[NPARAMS] = {0};
    sv_buf b = {0};
    FILE *f = fopen(sv_cfg.config_file, "r");
    char line[4096];
    while (f && fgets(line, sizeof(line), f)) {
        char key[128];
        int keep = 1;
        if (sscanf(line, " %127[A-Za-z0-9_-] =", key) == 1) {
            for (char *p = key; *p; p++) if (*p == '_') *p = '-';
            int i = find(key, strlen(key));
            if (i >= 0 && changed[canon[i]]) {
                if (done[canon[i]]) keep = 0;
                else {
                    done[canon[i]] = 1;
                    keep = 0;
                    write_setting(&b, canon[i]);
                }
            }
        }
        if (keep) sv_buf_append(&b, line, strlen(line));
    }
    if (f) fclose(f);
    for (size_t i = 0; i < NPARAMS; i++) {
        if (!changed[i] || done[i] || canon[i] != (int)i) continue;
        write_setting(&b, (int)i);
    }
    pthread_mutex_unlock(&lock);
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.rewrite.tmp", sv_cfg.config_file);
    FILE *w = fopen(tmp, "w");
    int ok = w && fwrite(b.data ? b.data : "", 1, b.len, w) == b.len && fflush(w) == 0 && fsync(fileno(w)) == 0;
    if (w) ok = fclose(w) == 0 && ok;
    if (ok) ok = rename(tmp, sv_cfg.config_file) == 0;
    sv_buf_free(&b);
    if (!ok) {
        unlink(tmp);
        sv_add_errorf(&c->r, "Rewriting config file: %s", strerror(errno));
        return;
    }
    sv_add_ok(&c->r);
}
