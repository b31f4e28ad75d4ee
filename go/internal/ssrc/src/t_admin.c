/* t_admin: introspection as Redis 7.0 answers it — the per-command and per-error
 * statistics (INFO commandstats/errorstats/latencystats), SLOWLOG, LATENCY, OBJECT,
 * DEBUG (behind enable-debug-command), ROLE, WAIT, LASTSAVE. */
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

#include "conn.h"
#include "params.h"
#include "server.h"
#include "stream.h"


static void unknown_subcommand(sv_ctx *c, sv_str sub, const char *cmd)
{
    sv_add_errorf(&c->r, "unknown subcommand '%.*s'. Try %s HELP.", (int)(sub.len > 128 ? 128 : sub.len), sub.p, cmd);
}

static void subcommand_arity(sv_ctx *c, const char *cmd, sv_str sub)
{
    char name[80];
    snprintf(name, sizeof(name), "%s|%.*s", cmd, (int)(sub.len > 32 ? 32 : sub.len), sub.p);
    for (char *p = name; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    sv_add_arity_error(c, name);
}

static void add_help(sv_ctx *c, const char *const *lines, size_t n)
{
    sv_add_array(&c->r, (long long)n);
    for (size_t i = 0; i < n; i++) sv_add_status(&c->r, lines[i]);
}

/* ---- statistics ---- */

void sv_stats_init(sv_shard *sh) { sh->cmdstats = sv_calloc(sv_cmdstat_count(), sizeof(sv_cmdstat)); }

static void slowlog_clear(sv_shard *sh)
{
    for (size_t i = 0; i < sh->slow_len; i++) {
        free(sh->slowlog[i].argv);
        free(sh->slowlog[i].name);
    }
    sh->slow_len = 0;
}

void sv_stats_free(sv_shard *sh)
{
    slowlog_clear(sh);
    free(sh->slowlog);
    sh->slowlog = NULL;
    sh->slow_cap = 0;
    free(sh->cmdstats);
    sh->cmdstats = NULL;
}

void sv_stats_reset(sv_shard *sh)
{
    memset(&sh->stats, 0, sizeof(sh->stats));
    if (sh->cmdstats) memset(sh->cmdstats, 0, sv_cmdstat_count() * sizeof(sv_cmdstat));
    sh->nerrstats = 0;
}

void sv_stats_error(sv_shard *sh, const char *r, size_t n)
{
    if (n < 2 || r[0] != '-') return;
    size_t l = 0;
    while (1 + l < n && l < sizeof(sh->errstats[0].name) - 1 && r[1 + l] != ' ' && r[1 + l] != '\r') l++;
    sh->stats.error_replies++;
    for (int i = 0; i < sh->nerrstats; i++)
        if (strlen(sh->errstats[i].name) == l && !memcmp(sh->errstats[i].name, r + 1, l)) {
            sh->errstats[i].count++;
            return;
        }
    if (sh->nerrstats == SV_MAX_ERRSTATS) { /* as Redis: no more kinds are tracked */
        sh->stats.errstats_overflow++;
        return;
    }
    sv_errstat *e = &sh->errstats[sh->nerrstats++];
    memcpy(e->name, r + 1, l);
    e->name[l] = 0;
    e->count = 1;
}

/* ---- memory and instantaneous rates ---- */

static atomic_llong mem_peak, mem_startup;

void sv_meminfo_read(sv_meminfo *m)
{
    struct mallinfo2 mi = mallinfo2();
    m->used = (long long)(mi.uordblks + mi.hblkhd);
    m->active = (long long)(mi.arena + mi.hblkhd);
    long page = sysconf(_SC_PAGESIZE);
    long long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lld %lld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    m->rss = resident * page;
    if (m->used == 0) m->used = m->active = m->rss; /* an allocator mallinfo2 does not see (ASan's): the RSS */
    m->total_system = (long long)sysconf(_SC_PHYS_PAGES) * page;
    long long p = atomic_load(&mem_peak);
    while (m->used > p && !atomic_compare_exchange_weak(&mem_peak, &p, m->used)) {}
    m->peak = m->used > p ? m->used : p;
    /* the start's memory: the first reading, or any lower one (buffers of the start
     * freed later), so that the dataset (used - startup) is never negative */
    long long s = atomic_load(&mem_startup);
    while ((s == 0 || m->used < s) && !atomic_compare_exchange_weak(&mem_startup, &s, m->used)) {}
    m->startup = atomic_load(&mem_startup);
}

void sv_stats_sample(sv_shard *sh)
{
    int64_t now = sv_mstime();
    uint64_t cur[3] = {sh->stats.commands, sh->stats.net_in, sh->stats.net_out};
    if (sh->inst_last_ms && now > sh->inst_last_ms) {
        for (int k = 0; k < 3; k++) {
            uint64_t d = cur[k] >= sh->inst_last[k] ? cur[k] - sh->inst_last[k] : 0; /* RESETSTAT: 0 */
            sh->inst[k][sh->inst_idx] = (double)d * 1000.0 / (double)(now - sh->inst_last_ms);
        }
        sh->inst_idx = (sh->inst_idx + 1) % 16;
    }
    sh->inst_last_ms = now;
    memcpy(sh->inst_last, cur, sizeof(cur));
}

void sv_stats_instantaneous(sv_shard *sh, double *ops, double *in_kbps, double *out_kbps)
{
    double sum[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 16; i++) sum[k] += sh->inst[k][i];
    *ops = sum[0] / 16;
    *in_kbps = sum[1] / 16 / 1024;
    *out_kbps = sum[2] / 16 / 1024;
}

/* ---- SLOWLOG ---- */

#define SLOWLOG_MAX_ARGC 32
#define SLOWLOG_MAX_ARGLEN 128

void sv_slowlog_push(sv_ctx *c, int argc, sv_str *argv, int64_t usec)
{
    long long thr = sv_param_ll(SV_PARAM_SLOWLOG_LOG_SLOWER_THAN);
    if (thr < 0 || usec < thr || !c->sess) return;
    long long max = sv_param_ll(SV_PARAM_SLOWLOG_MAX_LEN);
    sv_shard *sh = c->sh;
    if (max <= 0) return;
    /* EXEC's commands are logged each; AUTH and HELLO carry passwords */
    if (sv_eq(argv[0], "exec") || sv_eq(argv[0], "auth") || sv_eq(argv[0], "hello")) return;
    while ((long long)sh->slow_len >= max) { /* the oldest go (after a lower slowlog-max-len too) */
        sv_slowentry *o = &sh->slowlog[--sh->slow_len];
        free(o->argv);
        free(o->name);
    }
    if (sh->slow_len == sh->slow_cap) {
        sh->slow_cap = sh->slow_cap ? sh->slow_cap * 2 : 16;
        sh->slowlog = sv_realloc(sh->slowlog, sh->slow_cap * sizeof(*sh->slowlog));
    }
    memmove(sh->slowlog + 1, sh->slowlog, sh->slow_len * sizeof(*sh->slowlog)); /* newest first */
    sh->slow_len++;
    sv_slowentry *e = &sh->slowlog[0];
    int n = argc > SLOWLOG_MAX_ARGC ? SLOWLOG_MAX_ARGC : argc;
    char more[SLOWLOG_MAX_ARGC][64];
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        more[i][0] = 0;
        if (i == SLOWLOG_MAX_ARGC - 1 && argc > SLOWLOG_MAX_ARGC)
            snprintf(more[i], sizeof(more[i]), "... (%d more arguments)", argc - SLOWLOG_MAX_ARGC + 1);
        else if (argv[i].len > SLOWLOG_MAX_ARGLEN)
            snprintf(more[i], sizeof(more[i]), "... (%zu more bytes)", argv[i].len - SLOWLOG_MAX_ARGLEN);
        bytes += (more[i][0] && i == SLOWLOG_MAX_ARGC - 1 && argc > SLOWLOG_MAX_ARGC ? 0
                  : argv[i].len > SLOWLOG_MAX_ARGLEN ? SLOWLOG_MAX_ARGLEN : argv[i].len) + strlen(more[i]);
    }
    e->argv = sv_malloc(sizeof(sv_str) * (size_t)n + bytes + 1);
    char *p = (char *)(e->argv + n);
    for (int i = 0; i < n; i++) {
        int whole = !(i == SLOWLOG_MAX_ARGC - 1 && argc > SLOWLOG_MAX_ARGC);
        size_t l = whole ? (argv[i].len > SLOWLOG_MAX_ARGLEN ? SLOWLOG_MAX_ARGLEN : argv[i].len) : 0;
        e->argv[i].p = p;
        if (l) memcpy(p, argv[i].p, l);
        memcpy(p + l, more[i], strlen(more[i]));
        e->argv[i].len = l + strlen(more[i]);
        p += e->argv[i].len;
    }
    e->argc = n;
    e->id = sh->slow_next_id++;
    e->time_s = sv_mstime() / 1000;
    e->usec = usec;
    snprintf(e->addr, sizeof(e->addr), "%s", c->sess->addr);
    e->name = c->sess->name ? sv_memdup(c->sess->name, strlen(c->sess->name)) : NULL;
}

void sv_cmd_slowlog(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    sv_shard *sh = c->sh;
    if (sv_eq(sub, "get") && argc <= 3) {
        long long count = 10;
        if (argc == 3 && (!sv_str2ll(argv[2].p, argv[2].len, &count) || count < -1)) {
            sv_add_error(&c->r, "count should be greater than or equal to -1");
            return;
        }
        size_t n = count < 0 || (size_t)count > sh->slow_len ? sh->slow_len : (size_t)count;
        sv_add_array(&c->r, (long long)n);
        for (size_t i = 0; i < n; i++) {
            sv_slowentry *e = &sh->slowlog[i];
            sv_add_array(&c->r, 6);
            sv_add_int(&c->r, (long long)e->id);
            sv_add_int(&c->r, e->time_s);
            sv_add_int(&c->r, e->usec);
            sv_add_array(&c->r, e->argc);
            for (int j = 0; j < e->argc; j++) sv_add_bulk(&c->r, e->argv[j].p, e->argv[j].len);
            sv_add_bulk_cstr(&c->r, e->addr);
            sv_add_bulk_cstr(&c->r, e->name ? e->name : "");
        }
    } else if (sv_eq(sub, "len") && argc == 2) {
        sv_add_int(&c->r, (long long)sh->slow_len);
    } else if (sv_eq(sub, "reset") && argc == 2) {
        slowlog_clear(sh);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *const help[] = {
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
            "HELP",
            "    Prints this help."};
        add_help(c, help, sizeof(help) / sizeof(help[0]));
    } else if (sv_eq(sub, "len") || sv_eq(sub, "reset") || sv_eq(sub, "help")) {
        subcommand_arity(c, "slowlog", sub);
    } else if (sv_eq(sub, "get")) { /* 7.0's own message for GET with too many arguments */
        sv_add_errorf(&c->r, "unknown subcommand or wrong number of arguments for '%.*s'. Try SLOWLOG HELP.",
                      (int)(sub.len > 128 ? 128 : sub.len), sub.p);
    } else {
        unknown_subcommand(c, sub, "SLOWLOG");
    }
}

/* ---- LATENCY: no event is ever recorded here (no latency monitor), so it answers as
 * Redis does with no samples; HISTOGRAM comes from the per-command call times. ---- */

static void add_histogram(sv_ctx *c, const char *name, const sv_cmdstat *st)
{
    sv_add_bulk_cstr(&c->r, name);
    sv_add_map(&c->r, 2);
    sv_add_bulk_cstr(&c->r, "calls");
    sv_add_int(&c->r, (long long)st->calls);
    sv_add_bulk_cstr(&c->r, "histogram_usec");
    int n = 0;
    for (int b = 0; b < SV_LAT_BUCKETS; b++) n += st->hist[b] != 0;
    sv_add_map(&c->r, n);
    uint64_t cum = 0;
    for (int b = 0; b < SV_LAT_BUCKETS; b++) {
        if (!st->hist[b]) continue;
        cum += st->hist[b];
        sv_add_int(&c->r, 1LL << b); /* upper bound of the bucket, µs */
        sv_add_int(&c->r, (long long)cum);
    }
}

void sv_cmd_latency(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    if (sv_eq(sub, "latest") && argc == 2) {
        sv_add_empty_array(&c->r);
    } else if (sv_eq(sub, "history") && argc == 3) {
        sv_add_empty_array(&c->r);
    } else if (sv_eq(sub, "reset")) {
        sv_add_int(&c->r, 0);
    } else if (sv_eq(sub, "graph") && argc == 3) {
        sv_add_errorf(&c->r, "No samples available for event '%.*s'", (int)(argv[2].len > 128 ? 128 : argv[2].len),
                      argv[2].p);
    } else if (sv_eq(sub, "doctor") && argc == 2) {
        /* latency-monitor-threshold 0: Redis's report for a disabled monitor; otherwise no event
         * ever crossed it (nothing is measured here) */
        const char *msg = sv_param_ll(SV_PARAM_LATENCY_MONITOR_THRESHOLD)
            ? "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
            : "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";
        sv_add_verbatim(&c->r, msg, strlen(msg));
    } else if (sv_eq(sub, "histogram")) {
        size_t n = sv_cmdstat_count();
        long long count = 0;
        const sv_cmdstat *st = c->sh->cmdstats;
        unsigned char *seen = sv_calloc(n, 1);
        for (size_t i = 0; argc == 2 && i < n; i++) seen[i] = sv_cmdstat_listed(i);
        for (int j = 2; j < argc; j++) {
            size_t k, first = sv_cmdstat_lookup(argv[j].p, argv[j].len, &k);
            while (k--) seen[first + k] = 1;
            /* a container's own calls too (COMMAND alone), as Redis */
            const sv_cmd *cmd = sv_cmd_lookup_public(argv[j].p, argv[j].len);
            if (cmd) seen[sv_cmd_index(cmd)] = 1;
        }
        for (size_t i = 0; i < n; i++) count += seen[i] && st[i].calls;
        sv_add_map(&c->r, count);
        for (size_t i = 0; i < n; i++)
            if (seen[i] && st[i].calls) add_histogram(c, sv_cmdstat_name(i), &st[i]);
        free(seen);
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *const help[] = {
            "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
            "HELP",
            "    Prints this help."};
        add_help(c, help, sizeof(help) / sizeof(help[0]));
    } else if (sv_eq(sub, "latest") || sv_eq(sub, "history") || sv_eq(sub, "graph") || sv_eq(sub, "doctor") ||
               sv_eq(sub, "help")) {
        subcommand_arity(c, "latency", sub);
    } else {
        unknown_subcommand(c, sub, "LATENCY");
    }
}

/* ---- OBJECT ---- */

static int is_int_string(const char *p, size_t n, long long *v) { return n <= 20 && sv_str2ll(p, n, v); }

/* Redis 7.0's encoding names, chosen by its thresholds (CONFIG *-max-listpack-*,
 * set-max-intset-entries). A collection that passed them is marked and keeps the
 * large encoding, as Redis never converts back. */
static const char *encoding_of(sv_obj *o)
{
    switch (o->type) {
    case SV_T_STRING: {
        sv_string *s = (sv_string *)o;
        long long v;
        if (is_int_string(s->data, s->len, &v)) return "int";
        /* a HyperLogLog (PFADD/PFMERGE) is a string Redis builds raw, whatever its length */
        if (s->len >= 16 && !memcmp(s->data, "HYLL", 4)) return "raw";
        return s->len <= 44 ? "embstr" : "raw";
    }
    case SV_T_LIST:
        return "quicklist"; /* 7.0: every list */
    case SV_T_HASH: {
        sv_hashobj *h = (sv_hashobj *)o;
        long long maxn = sv_param_ll(SV_PARAM_HASH_MAX_LISTPACK_ENTRIES);
        long long maxv = sv_param_ll(SV_PARAM_HASH_MAX_LISTPACK_VALUE);
        if (!(o->oflags & SV_OBJ_BIG) && (long long)sv_dict_size(&h->d) <= maxn) {
            sv_dict_iter it;
            sv_dict_iter_init(&it, &h->d);
            sv_entry *e;
            int ok = 1;
            while (ok && (e = sv_dict_iter_next(&it)))
                ok = (long long)e->klen <= maxv && (long long)((sv_blob *)e->val)->len <= maxv;
            if (ok) return "listpack";
        }
        o->oflags |= SV_OBJ_BIG;
        return "hashtable";
    }
    case SV_T_SET: {
        sv_set *s = (sv_set *)o;
        if (!(o->oflags & SV_OBJ_BIG) && (long long)sv_dict_size(&s->d) <= sv_param_ll(SV_PARAM_SET_MAX_INTSET_ENTRIES)) {
            sv_dict_iter it;
            sv_dict_iter_init(&it, &s->d);
            sv_entry *e;
            long long v;
            int ok = 1;
            while (ok && (e = sv_dict_iter_next(&it))) ok = is_int_string(e->key, e->klen, &v);
            if (ok) return "intset";
        }
        o->oflags |= SV_OBJ_BIG;
        return "hashtable";
    }
    case SV_T_ZSET: {
        sv_zset *z = (sv_zset *)o;
        long long maxv = sv_param_ll(SV_PARAM_ZSET_MAX_LISTPACK_VALUE);
        /* stored as a skiplist (zskiplist.c) at every size; the name is 7.0's by its thresholds */
        if (!(o->oflags & SV_OBJ_BIG) && (long long)z->zsl.length <= sv_param_ll(SV_PARAM_ZSET_MAX_LISTPACK_ENTRIES)) {
            int ok = 1;
            for (sv_zsl_node *x = sv_zsl_first(&z->zsl); ok && x; x = x->level[0].forward)
                ok = (long long)x->e->klen <= maxv;
            if (ok) return "listpack";
        }
        o->oflags |= SV_OBJ_BIG;
        return "skiplist";
    }
    case SV_T_STREAM:
        return "stream";
    }
    return "unknown";
}

static long long refcount_of(sv_obj *o)
{
    long long v;
    sv_string *s = (sv_string *)o;
    /* Redis shares the integers 0..9999 (OBJ_SHARED_REFCOUNT) when no LRU/LFU policy needs per-key fields */
    if (o->type == SV_T_STRING && is_int_string(s->data, s->len, &v) && v >= 0 && v < 10000) return 2147483647;
    return 1;
}

static const char *lfu_error =
    "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between "
    "policies at runtime LRU and LFU data will take some time to adjust.";
static const char *lru_error =
    "An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at "
    "runtime LRU and LFU data will take some time to adjust.";

void sv_cmd_object(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    int known = sv_eq(sub, "encoding") || sv_eq(sub, "freq") || sv_eq(sub, "idletime") || sv_eq(sub, "refcount");
    if (known && argc == 3) {
        sv_entry *e = sv_db_lookup_notouch(c->sh, argv[2]);
        if (!e) {
            sv_add_null(&c->r);
            return;
        }
        sv_obj *o = e->val;
        if (sv_eq(sub, "encoding")) {
            sv_add_bulk_cstr(&c->r, encoding_of(o));
        } else if (sv_eq(sub, "refcount")) {
            sv_add_int(&c->r, refcount_of(o));
        } else if (sv_eq(sub, "freq")) {
            if (!atomic_load(&sv_lfu_on)) sv_add_error(&c->r, lfu_error);
            else sv_add_int(&c->r, o->lfu);
        } else {
            if (atomic_load(&sv_lfu_on)) {
                sv_add_error(&c->r, lru_error);
                return;
            }
            long long idle = c->sh->now_ms / 1000 - (long long)o->atime;
            sv_add_int(&c->r, idle < 0 ? 0 : idle);
        }
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *const help[] = {
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
            "HELP",
            "    Prints this help."};
        add_help(c, help, sizeof(help) / sizeof(help[0]));
    } else if (known || sv_eq(sub, "help")) {
        subcommand_arity(c, "object", sub);
    } else {
        unknown_subcommand(c, sub, "OBJECT");
    }
}

/* ---- DEBUG (enable-debug-command / --enable-debug-command yes|local) ---- */

static int local_client(sv_session *s)
{
    return !strncmp(s->addr, "127.", 4) || !strncmp(s->addr, "::1:", 4) || !strncmp(s->addr, "[::1]", 5);
}

static size_t value_size(sv_obj *o)
{
    switch (o->type) {
    case SV_T_STRING: return ((sv_string *)o)->len;
    case SV_T_LIST: return ((sv_list *)o)->len;
    case SV_T_HASH: return sv_dict_size(&((sv_hashobj *)o)->d);
    case SV_T_SET: return sv_dict_size(&((sv_set *)o)->d);
    case SV_T_ZSET: return ((sv_zset *)o)->zsl.length;
    case SV_T_STREAM: return (size_t)((sv_stream *)o)->length;
    }
    return 0;
}

void sv_cmd_debug(sv_ctx *c, int argc, sv_str *argv)
{
    if (sv_cfg.enable_debug == 0 || (sv_cfg.enable_debug == 2 && !(c->sess && local_client(c->sess)))) {
        sv_add_error(&c->r, "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can "
                            "run it from a local connection, otherwise you need to set this option in the configuration "
                            "file, and then restart the server.");
        return;
    }
    sv_str sub = argv[1];
    if (sv_eq(sub, "sleep") && argc == 3) {
        /* the shard's thread sleeps, as Redis's only thread does (strtod: junk is 0) */
        char b[64];
        snprintf(b, sizeof(b), "%.*s", (int)(argv[2].len > 63 ? 63 : argv[2].len), argv[2].p);
        double s = strtod(b, NULL);
        if (s > 0 && isfinite(s)) {
            long long us = (long long)(s * 1e6);
            while (us > 0) {
                long long step = us > 1000000 ? 1000000 : us;
                usleep((useconds_t)step);
                us -= step;
            }
        }
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "set-active-expire") && argc == 3) {
        long long v = 0;
        sv_str2ll(argv[2].p, argv[2].len, &v); /* Redis: atoi */
        atomic_store(&sv_active_expire, v != 0);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "object") && argc == 3) {
        sv_entry *e = sv_db_lookup_notouch(c->sh, argv[2]);
        if (!e) {
            sv_add_error(&c->r, "no such key");
            return;
        }
        sv_obj *o = e->val;
        char b[256];
        long long idle = c->sh->now_ms / 1000 - (long long)o->atime;
        snprintf(b, sizeof(b), "Value at:%p refcount:%lld encoding:%s serializedlength:%zu lru:%u lru_seconds_idle:%lld",
                 (void *)o, refcount_of(o), encoding_of(o), value_size(o), o->atime & 0xFFFFFF, idle < 0 ? 0 : idle);
        sv_add_status(&c->r, b);
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *const help[] = {
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "OBJECT <key>",
            "    Show low level info about the <key> and associated value.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "HELP",
            "    Prints this help."};
        add_help(c, help, sizeof(help) / sizeof(help[0]));
    } else {
        sv_add_errorf(&c->r, "unknown subcommand or wrong number of arguments for '%.*s'. Try DEBUG HELP.",
                      (int)(sub.len > 128 ? 128 : sub.len), sub.p);
    }
}

/* ---- ROLE WAIT LASTSAVE: a primary with no replicas and no snapshots ---- */

void sv_cmd_role(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_add_array(&c->r, 3);
    sv_add_bulk_cstr(&c->r, "master");
    sv_add_int(&c->r, 0);
    sv_add_empty_array(&c->r);
}

/* No replicas acknowledge anything: 0 at once (Redis would wait out the timeout). */
void sv_cmd_wait(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long n, t;
    if (!sv_str2ll(argv[1].p, argv[1].len, &n)) {
        sv_add_error(&c->r, SV_ERR_NOTINT);
        return;
    }
    if (!sv_get_ms_timeout(c, argv[2], &t)) return;
    sv_add_int(&c->r, 0);
}

void sv_cmd_lastsave(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_add_int(&c->r, c->sh->start_ms / 1000); /* nothing was ever saved: the start, as Redis */
}

/* ---- MEMORY (USAGE DOCTOR MALLOC-STATS PURGE HELP) and SHUTDOWN ---- */

/* Bytes of the key's entry and value: what this server allocated for them (headers,
 * element arrays and dict entries; allocator overhead not counted). */
static size_t memory_usage(sv_entry *e)
{
    size_t n = sizeof(sv_entry) + e->klen;
    sv_obj *o = e->val;
    sv_dict_iter it;
    sv_entry *x;
    switch (o->type) {
    case SV_T_STRING:
        n += sizeof(sv_string) + ((sv_string *)o)->cap;
        break;
    case SV_T_LIST: {
        sv_list *l = (sv_list *)o;
        n += sizeof(*l) + l->cap * sizeof(sv_blob *);
        for (size_t i = 0; i < l->len; i++) n += sizeof(sv_blob) + l->a[(l->head + i) % l->cap]->len;
        break;
    }
    case SV_T_HASH:
    case SV_T_SET:
    case SV_T_ZSET: {
        sv_dict *d = o->type == SV_T_HASH ? &((sv_hashobj *)o)->d : o->type == SV_T_SET ? &((sv_set *)o)->d
                                                                                       : &((sv_zset *)o)->d;
        n += o->type == SV_T_HASH ? sizeof(sv_hashobj) : o->type == SV_T_SET ? sizeof(sv_set) : sizeof(sv_zset);
        if (o->type == SV_T_ZSET) /* the skiplist nodes (header included): 1 1/3 levels each on average, counted as 2 */
            n += (sizeof(sv_zsl_node) + 2 * sizeof(struct sv_zsl_level)) * (((sv_zset *)o)->zsl.length + 1);
        sv_dict_iter_init(&it, d);
        while ((x = sv_dict_iter_next(&it))) {
            n += sizeof(sv_entry) + x->klen + sizeof(sv_entry *);
            if (o->type == SV_T_HASH) n += sizeof(sv_blob) + ((sv_blob *)x->val)->len;
        }
        break;
    }
    case SV_T_STREAM: {
        sv_stream *st = (sv_stream *)o;
        n += sizeof(*st) + st->capblocks * sizeof(sv_sblock *) + st->capgroups * sizeof(sv_cgroup *);
        for (size_t i = 0; i < st->nblocks; i++) n += sizeof(sv_sblock) + st->blocks[st->head + i]->data.cap;
        break;
    }
    }
    return n;
}

void sv_memory_overhead(sv_shard *sh, sv_memover *o)
{
    sv_meminfo_read(&o->m);
    o->clients = 0;
    for (sv_conn *k = sh->conns; k; k = k->next) o->clients += (long long)(sizeof(*k) + k->rbuf.cap + sv_conn_unsent(k));
    /* the keyspace's own structures, as Redis counts its dict's: entries and buckets
     * (the key bytes live in the entry here), the TTL index, the per-slot counts */
    uint64_t buckets = sh->keys.ht[0].mask + (sh->keys.ht[0].table ? 1 : 0) + sh->keys.ht[1].mask +
                       (sh->keys.ht[1].table ? 1 : 0);
    o->keys = (long long)sv_dict_size(&sh->keys);
    o->main = o->keys * (long long)sizeof(sv_entry) + (long long)(buckets * sizeof(sv_entry *));
    o->expires = (long long)(sh->capexpiring * sizeof(sv_entry *));
    o->slot_to_keys = sh->slot_keys ? (long long)(SL_SLOTS * sizeof(uint32_t)) : 0;
    o->total = o->m.startup + o->clients + o->main + o->expires + o->slot_to_keys;
    o->dataset = o->m.used > o->total ? o->m.used - o->total : 0;
}

/* MEMORY STATS: Redis 7.0's fields in its order, from what this server measures
 * (sv_memory_overhead; the allocator's figures from glibc's mallinfo2 and the RSS);
 * what it does not have (replication, cluster links, Lua caches) is 0. */
static void memory_stats(sv_ctx *c)
{
    sv_memover o;
    sv_memory_overhead(c->sh, &o);
    const sv_meminfo *m = &o.m;
    long long net = m->used > m->startup ? m->used - m->startup : 0;
    int dbs = o.keys > 0;
    sv_add_map(&c->r, 27 + dbs);
#define STAT_INT(name, v) (sv_add_bulk_cstr(&c->r, name), sv_add_int(&c->r, (long long)(v)))
#define STAT_DBL(name, v) (sv_add_bulk_cstr(&c->r, name), sv_add_double(&c->r, (double)(v)))
    STAT_INT("peak.allocated", m->peak);
    STAT_INT("total.allocated", m->used);
    STAT_INT("startup.allocated", m->startup);
    STAT_INT("replication.backlog", 0);
    STAT_INT("clients.slaves", 0);
    STAT_INT("clients.normal", o.clients);
    STAT_INT("cluster.links", 0);
    STAT_INT("aof.buffer", 0);
    STAT_INT("lua.caches", 0);
    STAT_INT("functions.caches", 0);
    if (dbs) {
        sv_add_bulk_cstr(&c->r, "db.0");
        sv_add_map(&c->r, 3);
        STAT_INT("overhead.hashtable.main", o.main);
        STAT_INT("overhead.hashtable.expires", o.expires);
        STAT_INT("overhead.hashtable.slot-to-keys", o.slot_to_keys);
    }
    STAT_INT("overhead.total", o.total);
    STAT_INT("keys.count", o.keys);
    STAT_INT("keys.bytes-per-key", o.keys ? net / o.keys : 0);
    STAT_INT("dataset.bytes", o.dataset);
    STAT_DBL("dataset.percentage", net ? 100.0 * (double)o.dataset / (double)net : 0);
    STAT_DBL("peak.percentage", m->peak ? 100.0 * (double)m->used / (double)m->peak : 0);
    STAT_INT("allocator.allocated", m->used);
    STAT_INT("allocator.active", m->active);
    STAT_INT("allocator.resident", m->rss);
    STAT_DBL("allocator-fragmentation.ratio", m->used ? (double)m->active / (double)m->used : 0);
    STAT_INT("allocator-fragmentation.bytes", m->active - m->used);
    STAT_DBL("allocator-rss.ratio", m->active ? (double)m->rss / (double)m->active : 0);
    STAT_INT("allocator-rss.bytes", m->rss - m->active);
    STAT_DBL("rss-overhead.ratio", 1.0);
    STAT_INT("rss-overhead.bytes", 0);
    STAT_DBL("fragmentation", m->used ? (double)m->rss / (double)m->used : 0);
    STAT_INT("fragmentation.bytes", m->rss - m->used);
#undef STAT_INT
#undef STAT_DBL
}

static void cat(sv_buf *b, const char *s) { sv_buf_append(b, s, strlen(s)); }

/* MEMORY DOCTOR: Redis 7.0's report, by its rules, from the figures MEMORY STATS
 * shows (no replicas; the script cache is not counted here, so its report never shows). */
static void memory_doctor(sv_ctx *c)
{
    sv_memover o;
    sv_memory_overhead(c->sh, &o);
    const sv_meminfo *m = &o.m;
    int empty = m->used < 5 * 1024 * 1024, peak = 0, frag = 0, alloc_frag = 0, alloc_rss = 0, big_clients = 0;
    if (!empty) {
        peak = (double)m->peak / (double)m->used > 1.5;
        frag = (double)m->rss / (double)m->used > 1.4 && m->rss - m->used > 10 << 20;
        alloc_frag = (double)m->active / (double)m->used > 1.1 && m->active - m->used > 10 << 20;
        alloc_rss = m->active && (double)m->rss / (double)m->active > 1.1 && m->rss - m->active > 10 << 20;
        big_clients = c->sh->nclients && o.clients / c->sh->nclients > 1024 * 200;
    }
    sv_buf b = {0};
    if (empty) {
        cat(&b, "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n");
    } else if (!(peak | frag | alloc_frag | alloc_rss | big_clients)) {
        cat(&b, "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n");
    } else {
        cat(&b, "Sam, I detected a few issues in this Redis instance memory implants:\n\n");
        if (peak)
            cat(&b, " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n");
        if (frag)
            cat(&b, " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"libc\".\n\n");
        if (alloc_frag)
            cat(&b, " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n");
        if (alloc_rss)
            cat(&b, " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n");
        if (big_clients)
            cat(&b, " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n");
        cat(&b, "I'm here to keep you safe, Sam. I want to help you.\n");
    }
    sv_add_verbatim(&c->r, b.data, b.len);
    sv_buf_free(&b);
}

void sv_cmd_memory(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    if (sv_eq(sub, "usage") && argc >= 3) {
        for (int j = 3; j < argc; j++) {
            long long n;
            if (sv_eq(argv[j], "samples") && j + 1 < argc) {
                if (!sv_get_ll(c, argv[++j], &n)) return;
            } else {
                sv_add_error(&c->r, SV_ERR_SYNTAX);
                return;
            }
        }
        sv_entry *e = sv_db_lookup_notouch(c->sh, argv[2]);
        if (!e) sv_add_null(&c->r);
        else sv_add_int(&c->r, (long long)memory_usage(e));
    } else if (sv_eq(sub, "doctor") && argc == 2) {
        memory_doctor(c);
    } else if (sv_eq(sub, "malloc-stats") && argc == 2) {
        const char *msg = "Stats not supported for the current allocator";
        sv_add_verbatim(&c->r, msg, strlen(msg));
    } else if (sv_eq(sub, "stats") && argc == 2) {
        memory_stats(c);
    } else if (sv_eq(sub, "purge") && argc == 2) {
        malloc_trim(0);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *const help[] = {
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
            "HELP",
            "    Prints this help."};
        add_help(c, help, sizeof(help) / sizeof(help[0]));
    } else if (sv_eq(sub, "usage") || sv_eq(sub, "doctor") || sv_eq(sub, "malloc-stats") || sv_eq(sub, "purge") ||
               sv_eq(sub, "stats") || sv_eq(sub, "help")) {
        subcommand_arity(c, "memory", sub);
    } else {
        unknown_subcommand(c, sub, "MEMORY");
    }
}

/* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] | ABORT: the same clean shutdown as SIGTERM
 * (connections closed, the log flushed); as Redis, no reply on success. */
void sv_cmd_shutdown(sv_ctx *c, int argc, sv_str *argv)
{
    int abort_ = 0, other = 0;
    for (int j = 1; j < argc; j++) {
        if (sv_eq(argv[j], "abort")) abort_ = 1;
        else if (sv_eq(argv[j], "nosave") || sv_eq(argv[j], "save") || sv_eq(argv[j], "now") || sv_eq(argv[j], "force"))
            other = 1;
        else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    if (abort_ && other) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (abort_) {
        sv_add_error(&c->r, "No shutdown in progress.");
        return;
    }
    if (sv_cur->embedded) { /* the host process is not ours to end: its code stops the server */
        sv_add_error(&c->r, "SHUTDOWN is refused by an embedded server (the host stops it: sl_server_stop)");
        return;
    }
    sv_log(SV_LOG_NOTICE, "SHUTDOWN from a client: shutting down");
    c->close_after = 1;
    kill(getpid(), SIGTERM); /* the main thread takes it (shard threads block signals) */
}
