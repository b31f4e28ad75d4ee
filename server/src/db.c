/* db: objects and the per-shard keyspace — lookup with lazy expiry, add, delete,
 * TTLs, the per-slot key counts — plus the argument helpers every command uses. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "server.h"
#include "pause.h"
#include "tracking.h"
#include "blocking.h"
#include "notify.h"
#include "aof.h"
#include "stream.h"

const char *SV_ERR_WRONGTYPE = "-WRONGTYPE Operation against a key holding the wrong kind of value";
const char *SV_ERR_NOTINT = "value is not an integer or out of range";
const char *SV_ERR_NOTFLOAT = "value is not a valid float";
const char *SV_ERR_SYNTAX = "syntax error";
const char *SV_ERR_OVERFLOW = "increment or decrement would overflow";
const char *SV_ERR_NOSUCHKEY = "no such key";
const char *SV_ERR_OUTOFRANGE = "index out of range";

/* ---- objects ---- */

sv_blob *sv_blob_new(const void *p, size_t n)
{
    sv_blob *b = sv_malloc(sizeof(sv_blob) + n);
    b->len = n;
    if (n) memcpy(b->data, p, n);
    return b;
}

sv_string *sv_string_new(const void *p, size_t n)
{
    sv_string *s = sv_malloc(sizeof(sv_string) + n);
    s->h.type = SV_T_STRING;
    s->h.lfu = 0;
    s->h.oflags = 0;
    s->h.atime = 0;
    s->len = s->cap = n;
    if (n) memcpy(s->data, p, n);
    return s;
}

sv_string *sv_string_reserve(sv_entry *e, size_t need)
{
    sv_string *s = e->val;
    if (s->cap < need) {
        /* doubling below 1 MB, then 1 MB more at a time (as Redis's sds) */
        size_t cap = need < 1024 * 1024 ? need * 2 : need + 1024 * 1024;
        s = sv_realloc(s, sizeof(sv_string) + cap);
        s->cap = cap;
        e->val = s;
    }
    return s;
}

sv_obj *sv_obj_new(int type)
{
    switch (type) {
    case SV_T_LIST: {
        sv_list *l = sv_calloc(1, sizeof(*l));
        l->h.type = SV_T_LIST;
        return &l->h;
    }
    case SV_T_HASH: {
        sv_hashobj *h = sv_calloc(1, sizeof(*h));
        h->h.type = SV_T_HASH;
        sv_dict_init(&h->d);
        return &h->h;
    }
    case SV_T_SET: {
        sv_set *s = sv_calloc(1, sizeof(*s));
        s->h.type = SV_T_SET;
        sv_dict_init(&s->d);
        return &s->h;
    }
    case SV_T_ZSET: {
        sv_zset *z = sv_calloc(1, sizeof(*z));
        z->h.type = SV_T_ZSET;
        sv_dict_init(&z->d);
        sv_zsl_init(&z->zsl);
        return &z->h;
    }
    }
    return NULL;
}

static void free_blob_val(sv_entry *e, void *priv)
{
    (void)priv;
    free(e->val);
}

void sv_list_free(sv_list *l)
{
    for (size_t i = 0; i < l->len; i++) free(l->a[(l->head + i) % l->cap]);
    free(l->a);
    free(l);
}

void sv_zset_free(sv_zset *z)
{
    sv_zsl_free(&z->zsl);
    sv_dict_clear(&z->d, NULL, NULL);
    free(z);
}

void sv_obj_free(sv_obj *o)
{
    if (!o) return;
    switch (o->type) {
    case SV_T_STRING: free(o); break;
    case SV_T_LIST: sv_list_free((sv_list *)o); break;
    case SV_T_HASH: sv_dict_clear(&((sv_hashobj *)o)->d, free_blob_val, NULL); free(o); break;
    case SV_T_SET: sv_dict_clear(&((sv_set *)o)->d, NULL, NULL); free(o); break;
    case SV_T_ZSET: sv_zset_free((sv_zset *)o); break;
    case SV_T_STREAM: sv_stream_free((sv_stream *)o); break;
    }
}

/* ---- keyspace ---- */

static void expiring_remove(sv_shard *sh, sv_entry *e)
{
    if (!e->aux) return;
    size_t i = e->aux - 1;
    sv_entry *last = sh->expiring[--sh->nexpiring];
    sh->expiring[i] = last;
    last->aux = (uint32_t)(i + 1);
    e->aux = 0;
}

void sv_db_set_expire(sv_shard *sh, sv_entry *e, int64_t when_ms)
{
    e->u.i = when_ms;
    if (e->aux) return;
    if (sh->nexpiring == sh->capexpiring) {
        sh->capexpiring = sh->capexpiring ? sh->capexpiring * 2 : 64;
        sh->expiring = sv_realloc(sh->expiring, sh->capexpiring * sizeof(sv_entry *));
    }
    sh->expiring[sh->nexpiring] = e;
    e->aux = (uint32_t)(++sh->nexpiring);
}

void sv_db_persist(sv_shard *sh, sv_entry *e)
{
    expiring_remove(sh, e);
    e->u.i = 0;
}

void sv_db_delete_entry(sv_shard *sh, sv_entry *e)
{
    expiring_remove(sh, e);
    sh->slot_keys[sl__key_slot(e->key, e->klen)]--;
    sv_entry *u = sv_dict_unlink(&sh->keys, e->key, e->klen);
    (void)u;
    sv_obj_free(e->val);
    free(e);
    sv_dict_maybe_shrink(&sh->keys);
}

int sv_db_expired(sv_shard *sh, sv_entry *e)
{
    /* while the log is replayed nothing expires: each record must see the keys as
     * they were when it was logged (expiry deletions are in the log as DEL) */
    return e->u.i != 0 && e->u.i <= sh->now_ms && !sh->loading;
}

void sv_db_note_expired(sv_shard *sh, sv_entry *e)
{
    if (sh->aof) sv_aof_log_del(sh, e->key, e->klen);
    sh->stats.expired_keys++;
    sv_notify(sh, SV_N_EXPIRED, "expired", (sv_str){e->key, e->klen});
}

void sv_db_expire_entry(sv_shard *sh, sv_entry *e)
{
    sv_signal_modified_key(sh, (sv_str){e->key, e->klen});
    sv_db_note_expired(sh, e);
    sv_db_delete_entry(sh, e);
}

static sv_entry *lookup_notouch(sv_shard *sh, sv_str key)
{
    sv_entry *e = sv_dict_find(&sh->keys, key.p, key.len);
    if (e && sv_db_expired(sh, e)) {
        /* clients paused: reads as missing, deleted once the pause is over (Redis) */
        if (sv_pause_now() == SV_PAUSE_OFF) sv_db_expire_entry(sh, e);
        return NULL;
    }
    return e;
}


/* An access: OBJECT IDLETIME's time and, with an LFU maxmemory-policy, OBJECT FREQ's
 * counter. The time is stored only when it changed: the command reads this line anyway,
 * but a store on every access would dirty it and cost a write-back per key (measured:
 * up to +10% CPU per GET/SET over 100k random keys). */
static inline void touch_obj(sv_shard *sh, sv_obj *o)
{
    uint32_t now = (uint32_t)(sh->now_ms / 1000);
    if (o->atime != now) o->atime = now;
    if (atomic_load_explicit(&sv_lfu_on, memory_order_relaxed)) sv_lfu_incr(o);
}

static sv_entry *lookup(sv_shard *sh, sv_str key)
{
    sv_entry *e = lookup_notouch(sh, key);
    if (e) touch_obj(sh, e->val);
    return e;
}

sv_entry *sv_db_lookup_notouch(sv_shard *sh, sv_str key) { return lookup_notouch(sh, key); }

/* A command's lookup of its key: a miss while a read command runs (or a write whose
 * lookups Redis makes as reads, SV_P_KEYMISS) fires "keymiss", as Redis's lookupKeyRead.
 * (Deleting or replacing a missing key is no miss.) */
static sv_entry *lookup_by_command(sv_shard *sh, sv_str key)
{
    sv_entry *e = lookup(sh, key);
    if (!e && sv_notify_reads) sv_notify(sh, SV_N_KEY_MISS, "keymiss", key);
    return e;
}

/* Redis's LFULogIncr: +1 with probability 1 / ((counter - 5) * lfu-log-factor + 1). */
void sv_lfu_incr(sv_obj *o)
{
    if (o->lfu == 255) return;
    double base = o->lfu > 5 ? o->lfu - 5 : 0;
    double p = 1.0 / (base * (double)sv_lfu_log_factor + 1);
    if ((double)(sv_rand64() >> 11) / 9007199254740992.0 < p) o->lfu++;
}

sv_entry *sv_db_lookup(sv_shard *sh, sv_str key)
{
    sv_entry *e = lookup(sh, key);
    if (e) {
        sh->stats.keyspace_hits++;
    } else {
        sh->stats.keyspace_misses++;
        sv_notify(sh, SV_N_KEY_MISS, "keymiss", key); /* a read lookup, in any command */
    }
    return e;
}

sv_entry *sv_db_lookup_write(sv_shard *sh, sv_str key) { return lookup_by_command(sh, key); }

int sv_db_get_typed(sv_ctx *c, sv_str key, int type, sv_entry **out)
{
    sv_entry *e = lookup_by_command(c->sh, key);
    *out = e;
    if (!e) return 0;
    if (((sv_obj *)e->val)->type != type) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        return -1;
    }
    return 1;
}

/* A new list or sorted set is what a parked BLPOP/BZPOPMIN waits for (an empty one
 * does not exist), so creating one is the signal, as in Redis's dbAdd. Pushes to an
 * existing key need none: nobody can be waiting on a non-empty key. */
static void signal_if_blockable(sv_shard *sh, sv_str key, sv_obj *o)
{
    if (o->type == SV_T_LIST || o->type == SV_T_ZSET) sv_signal_key_ready(sh, key);
}

/* A key created: the "new" event (class n). */
static void notify_new(sv_shard *sh, sv_str key) { sv_notify(sh, SV_N_NEW, "new", key); }

sv_entry *sv_db_add(sv_shard *sh, sv_str key, sv_obj *o)
{
    sv_entry *e = sv_dict_add(&sh->keys, key.p, key.len, NULL);
    e->val = o;
    sv_obj_stored(sh->now_ms, o);
    sh->slot_keys[sl__key_slot(key.p, key.len)]++;
    notify_new(sh, key);
    signal_if_blockable(sh, key, o);
    return e;
}

sv_entry *sv_db_set(sv_shard *sh, sv_str key, sv_obj *o, int keepttl)
{
    sv_entry *ex = NULL;
    sv_entry *e = sv_dict_add(&sh->keys, key.p, key.len, &ex);
    sv_obj_stored(sh->now_ms, o);
    if (e) {
        e->val = o;
        sh->slot_keys[sl__key_slot(key.p, key.len)]++;
        notify_new(sh, key);
        signal_if_blockable(sh, key, o);
        return e;
    }
    if (ex->val != o) sv_obj_free(ex->val);
    ex->val = o;
    signal_if_blockable(sh, key, o);
    if (sv_db_expired(sh, ex)) sv_db_note_expired(sh, ex); /* replaced: logged as expired first */
    if (sv_db_expired(sh, ex) || !keepttl) sv_db_persist(sh, ex);
    return ex;
}

int sv_db_delete(sv_shard *sh, sv_str key)
{
    sv_entry *e = lookup(sh, key);
    if (!e) return 0;
    sv_db_delete_entry(sh, e);
    return 1;
}

int sv_db_delete_notify(sv_shard *sh, sv_str key)
{
    if (!sv_db_delete(sh, key)) return 0;
    sv_notify(sh, SV_N_GENERIC, "del", key);
    return 1;
}

void sv_db_delete_if_empty(sv_shard *sh, sv_entry *e)
{
    sv_obj *o = e->val;
    int empty = 0;
    switch (o->type) {
    case SV_T_LIST: empty = ((sv_list *)o)->len == 0; break;
    case SV_T_HASH: empty = sv_dict_size(&((sv_hashobj *)o)->d) == 0; break;
    case SV_T_SET: empty = sv_dict_size(&((sv_set *)o)->d) == 0; break;
    case SV_T_ZSET: empty = ((sv_zset *)o)->zsl.length == 0; break;
    }
    if (!empty) return;
    sv_notify(sh, SV_N_GENERIC, "del", (sv_str){e->key, e->klen}); /* after the command's own event */
    sv_db_delete_entry(sh, e);
}

static void free_key_val(sv_entry *e, void *priv)
{
    (void)priv;
    sv_obj_free(e->val);
}

void sv_db_flush(sv_shard *sh)
{
    if (sh->trk) sv_tracking_flush(sh);
    if (sh->nwatched) { /* as Redis: a watched key that existed was modified */
        sv_dict_iter it;
        sv_dict_iter_init(&it, &sh->watched);
        for (sv_entry *w; (w = sv_dict_iter_next(&it));)
            if (sv_dict_find(&sh->keys, w->key, w->klen)) w->u.i = (int64_t)++sh->watch_seq;
    }
    sv_dict_clear(&sh->keys, free_key_val, NULL);
    sh->nexpiring = 0;
    memset(sh->slot_keys, 0, sizeof(uint32_t) * SL_SLOTS);
}

void sv_db_free(sv_shard *sh)
{
    sv_db_flush(sh);
    sv_tracking_free_shard(sh);
    if (sh->watched_init) sv_dict_clear(&sh->watched, NULL, NULL);
    sh->watched_init = 0;
    sh->nwatched = 0;
    free(sh->expiring);
    sh->expiring = NULL;
    sh->capexpiring = 0;
    free(sh->slot_keys);
    sh->slot_keys = NULL;
}

/* Redis's active expiry, simplified: sample 20 keys with a TTL; if more than a
 * quarter were expired, sample again, within a time budget. */
size_t sv_expire_cycle(sv_shard *sh, int64_t budget_us)
{
    size_t removed = 0;
    int64_t start = sv_ustime();
    sh->now_ms = start / 1000;
    for (;;) {
        if (sh->nexpiring == 0) break;
        int sampled = 0, expired = 0;
        for (int i = 0; i < 20 && sh->nexpiring; i++) {
            sv_entry *e = sh->expiring[sv_rand64() % sh->nexpiring];
            sampled++;
            if (e->u.i <= sh->now_ms) {
                sv_db_expire_entry(sh, e);
                expired++;
            }
        }
        removed += (size_t)expired;
        if (expired * 4 <= sampled) break;
        if (sv_ustime() - start > budget_us) break;
    }
    return removed;
}

/* ---- argument helpers ---- */

int sv_get_ll(sv_ctx *c, sv_str a, long long *v)
{
    if (!sv_str2ll(a.p, a.len, v)) {
        sv_add_error(&c->r, SV_ERR_NOTINT);
        return 0;
    }
    return 1;
}

int sv_get_ms_timeout(sv_ctx *c, sv_str a, long long *ms)
{
    if (!sv_str2ll(a.p, a.len, ms)) {
        sv_add_error(&c->r, "timeout is not an integer or out of range");
        return 0;
    }
    if (*ms < 0) {
        sv_add_error(&c->r, "timeout is negative");
        return 0;
    }
    return 1;
}

int sv_get_ll_range(sv_ctx *c, sv_str a, long long min, long long max, long long *v, const char *msg)
{
    if (!sv_str2ll(a.p, a.len, v) || *v < min || *v > max) {
        sv_add_error(&c->r, msg ? msg : SV_ERR_NOTINT);
        return 0;
    }
    return 1;
}

int sv_get_double(sv_ctx *c, sv_str a, double *v)
{
    if (!sv_str2d(a.p, a.len, v)) {
        sv_add_error(&c->r, SV_ERR_NOTFLOAT);
        return 0;
    }
    return 1;
}

void sv_add_arity_error(sv_ctx *c, const char *cmdname)
{
    sv_add_errorf(&c->r, "wrong number of arguments for '%s' command", cmdname);
}

int sv_parse_scan_cursor(sv_ctx *c, sv_str a, uint64_t *cursor)
{
    char buf[32];
    char *end;
    if (a.len == 0 || a.len >= sizeof(buf)) goto bad;
    memcpy(buf, a.p, a.len);
    buf[a.len] = 0;
    if (buf[0] == '-' || buf[0] == ' ' || buf[0] == '+') goto bad;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (*end || errno == ERANGE) goto bad;
    *cursor = v;
    return 1;
bad:
    sv_add_error(&c->r, "invalid cursor");
    return 0;
}

int sv_parse_scanopts(sv_ctx *c, int argc, sv_str *argv, int i, int allowtype, sv_scanopts *o)
{
    o->count = 10;
    o->has_match = 0;
    o->type = -1;
    while (i < argc) {
        int rem = argc - i - 1;
        if (sv_eq(argv[i], "count") && rem >= 1) {
            long long v;
            if (!sv_get_ll(c, argv[i + 1], &v)) return 0;
            if (v < 1) {
                sv_add_error(&c->r, SV_ERR_SYNTAX);
                return 0;
            }
            /* bounded so that the count * 10 bucket budget cannot overflow */
            o->count = v > (1LL << 40) ? (1LL << 40) : v;
            i += 2;
        } else if (sv_eq(argv[i], "match") && rem >= 1) {
            o->match = argv[i + 1];
            o->has_match = !(o->match.len == 1 && o->match.p[0] == '*');
            i += 2;
        } else if (allowtype && sv_eq(argv[i], "type") && rem >= 1) {
            sv_str t = argv[i + 1];
            if (sv_eq(t, "string")) o->type = SV_T_STRING;
            else if (sv_eq(t, "list")) o->type = SV_T_LIST;
            else if (sv_eq(t, "hash")) o->type = SV_T_HASH;
            else if (sv_eq(t, "set")) o->type = SV_T_SET;
            else if (sv_eq(t, "zset")) o->type = SV_T_ZSET;
            else if (sv_eq(t, "stream")) o->type = SV_T_STREAM;
            else o->type = 99; /* unknown type: matches nothing, as in Redis 7.0 */
            i += 2;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return 0;
        }
    }
    return 1;
}

int sv_parse_mpop(sv_ctx *c, int argc, sv_str *argv, int ni, const char *first, const char *second, sv_mpop *o)
{
    /* Redis 7.0's order: numkeys, the keys' count against the arguments, the
     * direction, then COUNT (the keys are looked at only after all of these) */
    if (!sv_get_ll_range(c, argv[ni], 1, LONG_MAX, &o->numkeys, "numkeys should be greater than 0")) return 0;
    if (o->numkeys > argc - ni - 2) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return 0;
    }
    int j = ni + 1 + (int)o->numkeys;
    if (sv_eq(argv[j], first)) o->which = 0;
    else if (sv_eq(argv[j], second)) o->which = 1;
    else {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return 0;
    }
    o->count = 1;
    int counted = 0;
    for (j++; j < argc; j++) {
        if (!counted && sv_eq(argv[j], "count") && j + 1 < argc) {
            if (!sv_get_ll_range(c, argv[j + 1], 1, LONG_MAX, &o->count, "count should be greater than 0")) return 0;
            counted = 1;
            j++;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return 0;
        }
    }
    return 1;
}

int sv_numkeys_keys(int argc, sv_str *argv, int ni, int after, int *keys, int max)
{
    long long n;
    if (argc <= ni || !sv_str2ll(argv[ni].p, argv[ni].len, &n) || n < 1 || n > argc - ni - 1 - after) return -1;
    int k = 0;
    for (int i = 0; i < n && k < max; i++) keys[k++] = ni + 1 + i;
    return k;
}

/* ---- modification signals (WATCH) ---- */

void sv_signal_modified_key(sv_shard *sh, sv_str key)
{
    if (sh->trk || atomic_load_explicit(&sv_cur->tracking_bcast_any, memory_order_relaxed))
        sv_tracking_invalidate(sh, key); /* CLIENT TRACKING */
    if (sh->nwatched == 0) return;
    sv_entry *w = sv_dict_find(&sh->watched, key.p, key.len);
    if (w) w->u.i = (int64_t)++sh->watch_seq;
}

uint64_t sv_watch_add(sv_shard *sh, sv_str key)
{
    if (!sh->watched_init) {
        sv_dict_init(&sh->watched);
        sh->watched_init = 1;
    }
    sv_entry *ex = NULL;
    sv_entry *w = sv_dict_add(&sh->watched, key.p, key.len, &ex);
    if (!w) w = ex;
    else sh->nwatched++;
    w->aux++;
    return (uint64_t)w->u.i;
}

uint64_t sv_watch_version(sv_shard *sh, sv_str key)
{
    sv_entry *w = sh->nwatched ? sv_dict_find(&sh->watched, key.p, key.len) : NULL;
    return w ? (uint64_t)w->u.i : UINT64_MAX;
}

void sv_watch_release(sv_shard *sh, sv_str key)
{
    sv_entry *w = sh->nwatched ? sv_dict_find(&sh->watched, key.p, key.len) : NULL;
    if (!w || --w->aux > 0) return;
    free(sv_dict_unlink(&sh->watched, key.p, key.len));
    sh->nwatched--;
    sv_dict_maybe_shrink(&sh->watched);
}
