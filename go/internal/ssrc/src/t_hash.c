/* t_hash: hashes (a dict of field -> blob), Redis 7.0 semantics, and the scan helper
 * shared by HSCAN, SSCAN and ZSCAN. */
#include <limits.h>
#include <math.h>

#include "server.h"

/* Redis returns small collections (listpack/intset encoded) in one SCAN call with
 * cursor 0; we do the same below this size so replies match Redis's shape. */
#define SV_SMALL_COLLECTION 128

typedef struct coll_acc {
    sv_entry **v;
    size_t n, cap;
} coll_acc;

static void coll_collect(sv_entry *e, void *priv)
{
    coll_acc *a = priv;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->v = sv_realloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = e;
}

void sv_add_empty_scan(sv_ctx *c)
{
    sv_add_array(&c->r, 2);
    sv_add_bulk(&c->r, "0", 1);
    sv_add_empty_array(&c->r);
}

void sv_scan_collection(sv_ctx *c, sv_dict *d, uint64_t cursor, int argc, sv_str *argv, int kind)
{
    sv_scanopts o;
    if (!sv_parse_scanopts(c, argc, argv, 3, 0, &o)) return;
    coll_acc acc = {0};
    if (sv_dict_size(d) <= SV_SMALL_COLLECTION) {
        sv_dict_iter it;
        sv_dict_iter_init(&it, d);
        for (sv_entry *e; (e = sv_dict_iter_next(&it));) coll_collect(e, &acc);
        cursor = 0;
    } else {
        long long maxiter = o.count * 10;
        do {
            cursor = sv_dict_scan(d, cursor, coll_collect, &acc);
        } while (cursor && maxiter-- && (long long)acc.n < o.count);
    }
    size_t keep = 0;
    for (size_t i = 0; i < acc.n; i++)
        if (!o.has_match || sv_glob(o.match.p, o.match.len, acc.v[i]->key, acc.v[i]->klen, 0)) acc.v[keep++] = acc.v[i];
    char tmp[64];
    sv_add_array(&c->r, 2);
    sv_add_bulk(&c->r, tmp, sv_ull2str(tmp, cursor));
    sv_add_array(&c->r, (long long)(kind == SV_T_SET ? keep : keep * 2));
    for (size_t i = 0; i < keep; i++) {
        sv_entry *e = acc.v[i];
        sv_add_bulk(&c->r, e->key, e->klen);
        if (kind == SV_T_HASH) {
            sv_blob *b = e->val;
            sv_add_bulk(&c->r, b->data, b->len);
        } else if (kind == SV_T_ZSET) {
            sv_add_bulk(&c->r, tmp, sv_d2str(tmp, sizeof(tmp), e->u.d));
        }
    }
    free(acc.v);
}

static int get_hash(sv_ctx *c, sv_str key, sv_entry **e, sv_hashobj **h)
{
    int r = sv_db_get_typed(c, key, SV_T_HASH, e);
    if (r == 1) *h = (*e)->val;
    return r;
}

static sv_hashobj *get_or_create(sv_ctx *c, sv_str key, sv_entry **e)
{
    sv_hashobj *h = NULL;
    int r = get_hash(c, key, e, &h);
    if (r < 0) return NULL;
    if (r == 0) {
        h = (sv_hashobj *)sv_obj_new(SV_T_HASH);
        *e = sv_db_add(c->sh, key, &h->h);
    }
    return h;
}

/* Sets field to value; returns 1 if the field is new. */
static int hash_set(sv_hashobj *h, sv_str f, const char *v, size_t vlen)
{
    sv_entry *ex = NULL;
    sv_entry *e = sv_dict_add(&h->d, f.p, f.len, &ex);
    if (e) {
        e->val = sv_blob_new(v, vlen);
        return 1;
    }
    free(ex->val);
    ex->val = sv_blob_new(v, vlen);
    return 0;
}

static void hset_generic(sv_ctx *c, int argc, sv_str *argv, int is_hmset)
{
    if (argc % 2 == 1) {
        sv_add_arity_error(c, is_hmset ? "hmset" : "hset");
        return;
    }
    sv_entry *e = NULL;
    sv_hashobj *h = get_or_create(c, argv[1], &e);
    if (!h) return;
    long long created = 0;
    for (int i = 2; i < argc; i += 2) created += hash_set(h, argv[i], argv[i + 1].p, argv[i + 1].len);
    if (is_hmset) sv_add_ok(&c->r);
    else sv_add_int(&c->r, created);
}

void sv_cmd_hset(sv_ctx *c, int argc, sv_str *argv) { hset_generic(c, argc, argv, 0); }
void sv_cmd_hmset(sv_ctx *c, int argc, sv_str *argv) { hset_generic(c, argc, argv, 1); }

void sv_cmd_hsetnx(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_hashobj *h = get_or_create(c, argv[1], &e);
    if (!h) return;
    if (sv_dict_find(&h->d, argv[2].p, argv[2].len)) {
        sv_add_int(&c->r, 0);
        return;
    }
    hash_set(h, argv[2], argv[3].p, argv[3].len);
    sv_add_int(&c->r, 1);
}

void sv_cmd_hget(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, argv[1], &e, &h);
    if (r < 0) return;
    sv_entry *f = r ? sv_dict_find(&h->d, argv[2].p, argv[2].len) : NULL;
    if (!f) sv_add_null(&c->r);
    else sv_add_bulk(&c->r, ((sv_blob *)f->val)->data, ((sv_blob *)f->val)->len);
}

void sv_cmd_hmget(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, argv[1], &e, &h);
    if (r < 0) return;
    sv_add_array(&c->r, argc - 2);
    for (int i = 2; i < argc; i++) {
        sv_entry *f = r ? sv_dict_find(&h->d, argv[i].p, argv[i].len) : NULL;
        if (!f) sv_add_null(&c->r);
        else sv_add_bulk(&c->r, ((sv_blob *)f->val)->data, ((sv_blob *)f->val)->len);
    }
}

void sv_cmd_hdel(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, argv[1], &e, &h);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    long long n = 0;
    for (int i = 2; i < argc; i++) {
        sv_entry *f = sv_dict_unlink(&h->d, argv[i].p, argv[i].len);
        if (f) {
            free(f->val);
            free(f);
            n++;
        }
    }
    sv_dict_maybe_shrink(&h->d);
    sv_add_int(&c->r, n);
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_hlen(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, argv[1], &e, &h);
    if (r == 0) sv_add_int(&c->r, 0);
    else if (r == 1) sv_add_int(&c->r, (long long)sv_dict_size(&h->d));
}

void sv_cmd_hexists(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, argv[1], &e, &h);
    if (r == 0) sv_add_int(&c->r, 0);
    else if (r == 1) sv_add_int(&c->r, sv_dict_find(&h->d, argv[2].p, argv[2].len) != NULL);
}

void sv_cmd_hstrlen(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, argv[1], &e, &h);
    if (r < 0) return;
    sv_entry *f = r ? sv_dict_find(&h->d, argv[2].p, argv[2].len) : NULL;
    sv_add_int(&c->r, f ? (long long)((sv_blob *)f->val)->len : 0);
}

/* what: 1 keys, 2 values, 3 both (HGETALL: a map in RESP3) */
static void getall_generic(sv_ctx *c, sv_str key, int what)
{
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, key, &e, &h);
    if (r < 0) return;
    if (r == 0) {
        if (what == 3) sv_add_map(&c->r, 0);
        else sv_add_empty_array(&c->r);
        return;
    }
    long long n = (long long)sv_dict_size(&h->d);
    if (what == 3) sv_add_map(&c->r, n);
    else sv_add_array(&c->r, n);
    sv_dict_iter it;
    sv_dict_iter_init(&it, &h->d);
    for (sv_entry *f; (f = sv_dict_iter_next(&it));) {
        if (what & 1) sv_add_bulk(&c->r, f->key, f->klen);
        if (what & 2) sv_add_bulk(&c->r, ((sv_blob *)f->val)->data, ((sv_blob *)f->val)->len);
    }
}

void sv_cmd_hgetall(sv_ctx *c, int argc, sv_str *argv) { (void)argc; getall_generic(c, argv[1], 3); }
void sv_cmd_hkeys(sv_ctx *c, int argc, sv_str *argv) { (void)argc; getall_generic(c, argv[1], 1); }
void sv_cmd_hvals(sv_ctx *c, int argc, sv_str *argv) { (void)argc; getall_generic(c, argv[1], 2); }

void sv_cmd_hincrby(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long incr, v = 0;
    if (!sv_get_ll(c, argv[3], &incr)) return;
    sv_entry *e = NULL;
    sv_hashobj *h = get_or_create(c, argv[1], &e);
    if (!h) return;
    sv_entry *f = sv_dict_find(&h->d, argv[2].p, argv[2].len);
    if (f) {
        sv_blob *b = f->val;
        if (!sv_str2ll(b->data, b->len, &v)) {
            sv_add_error(&c->r, "hash value is not an integer");
            return;
        }
    }
    if ((incr < 0 && v < 0 && incr < (LLONG_MIN - v)) || (incr > 0 && v > 0 && incr > (LLONG_MAX - v))) {
        sv_add_error(&c->r, SV_ERR_OVERFLOW);
        return;
    }
    v += incr;
    char tmp[24];
    hash_set(h, argv[2], tmp, sv_ll2str(tmp, v));
    sv_add_int(&c->r, v);
}

void sv_cmd_hincrbyfloat(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long double incr, v = 0;
    if (!sv_str2ld(argv[3].p, argv[3].len, &incr)) {
        sv_add_error(&c->r, SV_ERR_NOTFLOAT);
        return;
    }
    if (isnan(incr) || isinf(incr)) {
        sv_add_error(&c->r, "value is NaN or Infinity");
        return;
    }
    sv_entry *e = NULL;
    sv_hashobj *h = get_or_create(c, argv[1], &e);
    if (!h) return;
    sv_entry *f = sv_dict_find(&h->d, argv[2].p, argv[2].len);
    if (f) {
        sv_blob *b = f->val;
        if (!sv_str2ld(b->data, b->len, &v)) {
            sv_add_error(&c->r, "hash value is not a float");
            return;
        }
    }
    v += incr;
    if (isnan(v) || isinf(v)) {
        sv_add_error(&c->r, "increment would produce NaN or Infinity");
        return;
    }
    char tmp[5200];
    size_t n = sv_ld2str(tmp, sizeof(tmp), v);
    hash_set(h, argv[2], tmp, n);
    sv_add_bulk(&c->r, tmp, n);
}

void sv_random_entries(sv_ctx *c, int argc, sv_str *argv, int type, const char *withname,
                       void (*add_value)(sv_ctx *c, sv_entry *e))
{
    long long count = 0;
    int withvalues = 0, hascount = argc >= 3;
    if (hascount) {
        if (!sv_str2ll(argv[2].p, argv[2].len, &count)) {
            sv_add_error(&c->r, SV_ERR_NOTINT);
            return;
        }
        if (count == LLONG_MIN) {
            sv_add_error(&c->r, "value is out of range, value must between -9223372036854775807 and 9223372036854775807");
            return;
        }
        if ((argc == 4 && !sv_eq(argv[3], withname)) || argc > 4) {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
        withvalues = argc == 4;
    }
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, argv[1], type, &e);
    if (r < 0) return;
    sv_dict *d = r == 0 ? NULL : type == SV_T_HASH ? &((sv_hashobj *)e->val)->d : &((sv_zset *)e->val)->d;
    if (!hascount) {
        sv_entry *f = d ? sv_dict_random(d) : NULL;
        if (f) sv_add_bulk(&c->r, f->key, f->klen);
        else sv_add_null(&c->r);
        return;
    }
    if (!d || count == 0) {
        sv_add_empty_array(&c->r);
        return;
    }
    int nested = withvalues && c->r.proto >= 3;
    if (count < 0) {
        /* repeats allowed: streamed without allocation; a count too large to answer
         * stops at the output limit, where the connection is dropped anyway */
        unsigned long long n = (unsigned long long)(-count);
        sv_add_array(&c->r, nested || !withvalues ? (long long)n : (long long)(n * 2));
        for (unsigned long long i = 0; i < n; i++) {
            if ((long long)c->r.out->len > sv_cfg.output_limit) break;
            sv_entry *f = sv_dict_random(d);
            if (nested) sv_add_array(&c->r, 2);
            sv_add_bulk(&c->r, f->key, f->klen);
            if (withvalues) add_value(c, f);
        }
        return;
    }
    /* distinct entries: a partial shuffle of all of them, the first count */
    size_t n = 0;
    sv_entry **pick = sv_malloc(sv_dict_size(d) * sizeof(*pick));
    sv_dict_iter it;
    sv_dict_iter_init(&it, d);
    for (sv_entry *f; (f = sv_dict_iter_next(&it));) pick[n++] = f;
    size_t want = (size_t)count < n ? (size_t)count : n;
    for (size_t i = 0; i < want; i++) {
        size_t j = i + sv_rand64() % (n - i);
        sv_entry *t = pick[i];
        pick[i] = pick[j];
        pick[j] = t;
    }
    sv_add_array(&c->r, nested || !withvalues ? (long long)want : (long long)(want * 2));
    for (size_t i = 0; i < want; i++) {
        if (nested) sv_add_array(&c->r, 2);
        sv_add_bulk(&c->r, pick[i]->key, pick[i]->klen);
        if (withvalues) add_value(c, pick[i]);
    }
    free(pick);
}

static void add_field_value(sv_ctx *c, sv_entry *f) { sv_add_bulk(&c->r, ((sv_blob *)f->val)->data, ((sv_blob *)f->val)->len); }

void sv_cmd_hrandfield(sv_ctx *c, int argc, sv_str *argv) { sv_random_entries(c, argc, argv, SV_T_HASH, "withvalues", add_field_value); }

void sv_cmd_hscan(sv_ctx *c, int argc, sv_str *argv)
{
    uint64_t cursor;
    if (!sv_parse_scan_cursor(c, argv[2], &cursor)) return;
    sv_entry *e = NULL;
    sv_hashobj *h = NULL;
    int r = get_hash(c, argv[1], &e, &h);
    if (r == 0) sv_add_empty_scan(c);
    if (r != 1) return;
    sv_scan_collection(c, &h->d, cursor, argc, argv, SV_T_HASH);
}
