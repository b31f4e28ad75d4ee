/* t_keys: the generic keyspace commands and TTLs, Redis 7.0 semantics. */
#include <limits.h>

#include "server.h"
#include "pause.h"
#include "notify.h"

void sv_cmd_del(sv_ctx *c, int argc, sv_str *argv)
{
    long long n = 0;
    for (int i = 1; i < argc; i++)
        if (sv_db_delete(c->sh, argv[i])) {
            n++;
            sv_notify(c->sh, SV_N_GENERIC, "del", argv[i]);
        }
    sv_add_int(&c->r, n);
}

void sv_cmd_exists(sv_ctx *c, int argc, sv_str *argv)
{
    long long n = 0;
    for (int i = 1; i < argc; i++) n += sv_db_lookup_write(c->sh, argv[i]) != NULL;
    sv_add_int(&c->r, n);
}

void sv_cmd_touch(sv_ctx *c, int argc, sv_str *argv) { sv_cmd_exists(c, argc, argv); }

static const char *type_name(int t)
{
    static const char *names[] = {"string", "list", "hash", "set", "zset", "stream"};
    return names[t];
}

void sv_cmd_type(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = sv_db_lookup_write(c->sh, argv[1]);
    sv_add_status(&c->r, e ? type_name(((sv_obj *)e->val)->type) : "none");
}

static void rename_generic(sv_ctx *c, sv_str *argv, int nx)
{
    sv_shard *sh = c->sh;
    sv_entry *src = sv_db_lookup_write(sh, argv[1]);
    if (!src) {
        sv_add_error(&c->r, SV_ERR_NOSUCHKEY);
        return;
    }
    if (argv[1].len == argv[2].len && memcmp(argv[1].p, argv[2].p, argv[1].len) == 0) {
        if (nx) sv_add_int(&c->r, 0);
        else sv_add_ok(&c->r);
        return;
    }
    sv_entry *dst = sv_db_lookup_write(sh, argv[2]);
    if (dst && nx) {
        sv_add_int(&c->r, 0);
        return;
    }
    /* src may have moved if the lookup of dst deleted an expired key and shrank the table */
    src = sv_dict_find(&sh->keys, argv[1].p, argv[1].len);
    sv_obj *o = src->val;
    int64_t expire = src->u.i;
    src->val = NULL;
    sv_db_delete_entry(sh, src);
    sv_entry *e = sv_db_set(sh, argv[2], o, 0);
    if (expire) sv_db_set_expire(sh, e, expire);
    if (nx) sv_add_int(&c->r, 1);
    else sv_add_ok(&c->r);
}

void sv_cmd_rename(sv_ctx *c, int argc, sv_str *argv) { (void)argc; rename_generic(c, argv, 0); }
void sv_cmd_renamenx(sv_ctx *c, int argc, sv_str *argv) { (void)argc; rename_generic(c, argv, 1); }

typedef struct scan_acc {
    sv_entry **v;
    size_t n, cap;
} scan_acc;

static void scan_collect(sv_entry *e, void *priv)
{
    scan_acc *a = priv;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->v = sv_realloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = e;
}

void sv_cmd_keys(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_shard *sh = c->sh;
    sv_str pat = argv[1];
    int all = pat.len == 1 && pat.p[0] == '*';
    sv_buf tmp = {0};
    sv_reply r = {&tmp, c->r.proto};
    long long n = 0;
    scan_acc expired = {0};
    sv_dict_iter it;
    sv_dict_iter_init(&it, &sh->keys);
    for (sv_entry *e; (e = sv_dict_iter_next(&it));) {
        if (sv_db_expired(sh, e)) {
            scan_collect(e, &expired); /* deleted after the walk, as Redis's KEYS expires what it meets */
            continue;
        }
        if (!all && !sv_glob(pat.p, pat.len, e->key, e->klen, 0)) continue;
        sv_add_bulk(&r, e->key, e->klen);
        n++;
    }
    for (size_t i = 0; i < expired.n && sv_pause_now() == SV_PAUSE_OFF; i++) sv_db_expire_entry(sh, expired.v[i]);
    free(expired.v);
    sv_add_array(&c->r, n);
    sv_buf_append(c->r.out, tmp.data, tmp.len);
    sv_buf_free(&tmp);
}

/* The SCAN loop of Redis's scanGenericCommand: at most count*10 buckets per call. */
static uint64_t scan_dict(sv_dict *d, uint64_t cursor, long long count, scan_acc *acc)
{
    long long maxiter = count * 10;
    do {
        cursor = sv_dict_scan(d, cursor, scan_collect, acc);
    } while (cursor && maxiter-- && (long long)acc->n < count);
    return cursor;
}

static void add_cursor(sv_ctx *c, uint64_t cursor)
{
    char tmp[24];
    sv_add_array(&c->r, 2);
    sv_add_bulk(&c->r, tmp, sv_ull2str(tmp, cursor));
}

void sv_cmd_scan(sv_ctx *c, int argc, sv_str *argv)
{
    uint64_t cursor;
    sv_scanopts o;
    if (!sv_parse_scan_cursor(c, argv[1], &cursor)) return;
    if (!sv_parse_scanopts(c, argc, argv, 2, 1, &o)) return;
    sv_shard *sh = c->sh;
    scan_acc acc = {0};
    cursor = scan_dict(&sh->keys, cursor, o.count, &acc);
    /* filter after the scan, as Redis does; expired keys are deleted here */
    size_t keep = 0;
    for (size_t i = 0; i < acc.n; i++) {
        sv_entry *e = acc.v[i];
        if (o.has_match && !sv_glob(o.match.p, o.match.len, e->key, e->klen, 0)) continue;
        if (o.type >= 0 && ((sv_obj *)e->val)->type != o.type) continue;
        if (sv_db_expired(sh, e)) continue;
        acc.v[keep++] = e;
    }
    add_cursor(c, cursor);
    sv_add_array(&c->r, (long long)keep);
    for (size_t i = 0; i < keep; i++) sv_add_bulk(&c->r, acc.v[i]->key, acc.v[i]->klen);
    free(acc.v);
}

void sv_cmd_randomkey(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_shard *sh = c->sh;
    for (int tries = 0; tries < 100; tries++) {
        sv_entry *e = sv_dict_random(&sh->keys);
        if (!e) break;
        if (sv_db_expired(sh, e)) {
            if (sv_pause_now() == SV_PAUSE_OFF) sv_db_expire_entry(sh, e);
            continue;
        }
        sv_add_bulk(&c->r, e->key, e->klen);
        return;
    }
    sv_add_null(&c->r);
}

#define EXP_NX 1
#define EXP_XX 2
#define EXP_GT 4
#define EXP_LT 8

static void expire_generic(sv_ctx *c, int argc, sv_str *argv, int64_t base, int seconds, const char *name)
{
    int flag = 0;
    for (int j = 3; j < argc; j++) {
        if (sv_eq(argv[j], "nx")) flag |= EXP_NX;
        else if (sv_eq(argv[j], "xx")) flag |= EXP_XX;
        else if (sv_eq(argv[j], "gt")) flag |= EXP_GT;
        else if (sv_eq(argv[j], "lt")) flag |= EXP_LT;
        else {
            sv_add_errorf(&c->r, "Unsupported option %.*s", (int)argv[j].len, argv[j].p);
            return;
        }
    }
    if ((flag & EXP_NX) && (flag & (EXP_XX | EXP_GT | EXP_LT))) {
        sv_add_error(&c->r, "NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if ((flag & EXP_GT) && (flag & EXP_LT)) {
        sv_add_error(&c->r, "GT and LT options at the same time are not compatible");
        return;
    }
    long long when;
    if (!sv_get_ll(c, argv[2], &when)) return;
    if (seconds) {
        if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) goto bad;
        when *= 1000;
    }
    if (when > LLONG_MAX - base) goto bad;
    when += base;
    sv_entry *e = sv_db_lookup_write(c->sh, argv[1]);
    if (!e) {
        sv_add_int(&c->r, 0);
        return;
    }
    long long cur = e->u.i ? e->u.i : -1;
    if (((flag & EXP_NX) && cur != -1) || ((flag & EXP_XX) && cur == -1) ||
        ((flag & EXP_GT) && (when <= cur || cur == -1)) || ((flag & EXP_LT) && cur != -1 && when >= cur)) {
        sv_add_int(&c->r, 0);
        return;
    }
    if (when <= c->sh->now_ms && !c->sh->loading) sv_db_delete_entry(c->sh, e);
    else sv_db_set_expire(c->sh, e, when);
    sv_add_int(&c->r, 1);
    return;
bad:
    sv_add_errorf(&c->r, "invalid expire time in '%s' command", name);
}

void sv_cmd_expire(sv_ctx *c, int argc, sv_str *argv) { expire_generic(c, argc, argv, c->sh->now_ms, 1, "expire"); }
void sv_cmd_pexpire(sv_ctx *c, int argc, sv_str *argv) { expire_generic(c, argc, argv, c->sh->now_ms, 0, "pexpire"); }
void sv_cmd_expireat(sv_ctx *c, int argc, sv_str *argv) { expire_generic(c, argc, argv, 0, 1, "expireat"); }
void sv_cmd_pexpireat(sv_ctx *c, int argc, sv_str *argv) { expire_generic(c, argc, argv, 0, 0, "pexpireat"); }

static void ttl_generic(sv_ctx *c, sv_str key, int ms, int absolute)
{
    sv_entry *e = sv_db_lookup_write(c->sh, key);
    if (!e) {
        sv_add_int(&c->r, -2);
        return;
    }
    if (!e->u.i) {
        sv_add_int(&c->r, -1);
        return;
    }
    if (absolute) {
        sv_add_int(&c->r, ms ? e->u.i : e->u.i / 1000);
        return;
    }
    long long ttl = e->u.i - c->sh->now_ms;
    if (ttl < 0) ttl = 0;
    sv_add_int(&c->r, ms ? ttl : (ttl + 500) / 1000);
}

void sv_cmd_ttl(sv_ctx *c, int argc, sv_str *argv) { (void)argc; ttl_generic(c, argv[1], 0, 0); }
void sv_cmd_pttl(sv_ctx *c, int argc, sv_str *argv) { (void)argc; ttl_generic(c, argv[1], 1, 0); }
void sv_cmd_expiretime(sv_ctx *c, int argc, sv_str *argv) { (void)argc; ttl_generic(c, argv[1], 0, 1); }
void sv_cmd_pexpiretime(sv_ctx *c, int argc, sv_str *argv) { (void)argc; ttl_generic(c, argv[1], 1, 1); }

void sv_cmd_persist(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = sv_db_lookup_write(c->sh, argv[1]);
    if (!e || !e->u.i) {
        sv_add_int(&c->r, 0);
        return;
    }
    sv_db_persist(c->sh, e);
    sv_add_int(&c->r, 1);
}

void sv_cmd_dbsize(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_add_int(&c->r, (long long)sv_dict_size(&c->sh->keys));
}

void sv_cmd_flushall(sv_ctx *c, int argc, sv_str *argv)
{
    if (argc > 2 || (argc == 2 && !sv_eq(argv[1], "sync") && !sv_eq(argv[1], "async"))) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    sv_db_flush(c->sh);
    sv_add_ok(&c->r);
}
