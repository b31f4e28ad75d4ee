/* t_zset: sorted sets, Redis 7.0 semantics. Members live in a dict (member -> score)
 * and in a skiplist ordered by (score, member) for ranks and ranges (zskiplist.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "server.h"
#include "notify.h"

/* Ranks below are 0-based (the skiplist's are 1-based). */

static size_t zindex(sv_zset *z, sv_entry *e) { return sv_zsl_rank(&z->zsl, e) - 1; }

static void zset_delete_entry(sv_zset *z, sv_entry *e)
{
    sv_zsl_delete(&z->zsl, e);
    sv_dict_unlink(&z->d, e->key, e->klen);
    free(e);
}

/* Removes the elements of ranks [from, to). */
static void zset_delete_range(sv_zset *z, size_t from, size_t to)
{
    if (from >= to) return;
    sv_zsl_node *x = sv_zsl_at(&z->zsl, from + 1);
    for (size_t i = from; i < to && x; i++) {
        sv_zsl_node *next = x->level[0].forward;
        zset_delete_entry(z, x->e);
        x = next;
    }
    sv_dict_maybe_shrink(&z->d);
}

static void zset_update(sv_zset *z, sv_entry *e, double score)
{
    sv_zsl_update_score(&z->zsl, e, score);
    e->u.d = score;
}

static int get_zset(sv_ctx *c, sv_str key, sv_entry **e, sv_zset **z)
{
    int r = sv_db_get_typed(c, key, SV_T_ZSET, e);
    if (r == 1) *z = (*e)->val;
    return r;
}

#define Z_INCR 1
#define Z_NX 2
#define Z_XX 4
#define Z_GT 8
#define Z_LT 16
#define ZO_NAN 1
#define ZO_ADDED 2
#define ZO_UPDATED 4
#define ZO_NOP 8

static int zset_add(sv_zset *z, double score, sv_str m, int flags, int *out, double *newscore)
{
    *out = 0;
    if (isnan(score)) {
        *out = ZO_NAN;
        return 0;
    }
    sv_entry *e = sv_dict_find(&z->d, m.p, m.len);
    if (e) {
        if (flags & Z_NX) {
            *out = ZO_NOP;
            return 1;
        }
        double cur = e->u.d;
        if (flags & Z_INCR) {
            score += cur;
            if (score == 0) score = 0.0;
            if (isnan(score)) {
                *out = ZO_NAN;
                return 0;
            }
        }
        if (((flags & Z_LT) && score >= cur) || ((flags & Z_GT) && score <= cur)) {
            *out = ZO_NOP;
            return 1;
        }
        *newscore = score;
        if (score != cur) {
            zset_update(z, e, score == 0 ? 0.0 : score);
            *out = ZO_UPDATED;
        }
        return 1;
    }
    if (flags & Z_XX) {
        *out = ZO_NOP;
        return 1;
    }
    e = sv_dict_add(&z->d, m.p, m.len, NULL);
    e->u.d = score == 0 ? 0.0 : score; /* -0 is stored as 0, as in Redis's listpack */
    sv_zsl_insert(&z->zsl, e);
    *newscore = score;
    *out = ZO_ADDED;
    return 1;
}

static void zadd_generic(sv_ctx *c, int argc, sv_str *argv, int flags)
{
    int idx = 2, ch = 0;
    for (; idx < argc; idx++) {
        sv_str o = argv[idx];
        if (sv_eq(o, "nx")) flags |= Z_NX;
        else if (sv_eq(o, "xx")) flags |= Z_XX;
        else if (sv_eq(o, "ch")) ch = 1;
        else if (sv_eq(o, "incr")) flags |= Z_INCR;
        else if (sv_eq(o, "gt")) flags |= Z_GT;
        else if (sv_eq(o, "lt")) flags |= Z_LT;
        else break;
    }
    int incr = flags & Z_INCR;
    int elements = argc - idx;
    if (elements % 2 || !elements) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    elements /= 2;
    if ((flags & Z_NX) && (flags & Z_XX)) {
        sv_add_error(&c->r, "XX and NX options at the same time are not compatible");
        return;
    }
    if (((flags & Z_GT) && (flags & Z_NX)) || ((flags & Z_LT) && (flags & Z_NX)) || ((flags & Z_GT) && (flags & Z_LT))) {
        sv_add_error(&c->r, "GT, LT, and/or NX options at the same time are not compatible");
        return;
    }
    if (incr && elements > 1) {
        sv_add_error(&c->r, "INCR option supports a single increment-element pair");
        return;
    }
    double *scores = sv_malloc(sizeof(double) * (size_t)elements);
    for (int j = 0; j < elements; j++)
        if (!sv_get_double(c, argv[idx + j * 2], &scores[j])) {
            free(scores);
            return;
        }
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    long long added = 0, updated = 0, processed = 0;
    double score = 0;
    if (r < 0) goto done;
    if (r == 0) {
        if (flags & Z_XX) goto reply;
        z = (sv_zset *)sv_obj_new(SV_T_ZSET);
        e = sv_db_add(c->sh, argv[1], &z->h);
    }
    for (int j = 0; j < elements; j++) {
        int out;
        double ns = 0;
        if (!zset_add(z, scores[j], argv[idx + j * 2 + 1], flags, &out, &ns)) {
            sv_add_error(&c->r, "resulting score is not a number (NaN)");
            sv_db_delete_if_empty(c->sh, e);
            goto done;
        }
        if (out & ZO_ADDED) added++;
        if (out & ZO_UPDATED) updated++;
        if (!(out & ZO_NOP)) processed++;
        score = ns;
    }
reply:
    if (incr) {
        if (processed) sv_add_double(&c->r, score);
        else sv_add_null(&c->r);
    } else {
        sv_add_int(&c->r, ch ? added + updated : added);
    }
    if (added || updated) sv_notify(c->sh, SV_N_ZSET, incr ? "zincr" : "zadd", argv[1]);
    if (r == 0 && !(flags & Z_XX)) sv_db_delete_if_empty(c->sh, e);
done:
    free(scores);
}

void sv_cmd_zadd(sv_ctx *c, int argc, sv_str *argv) { zadd_generic(c, argc, argv, 0); }

void sv_cmd_zincrby(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    double incr;
    if (!sv_get_double(c, argv[2], &incr)) return;
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r < 0) return;
    if (r == 0) {
        z = (sv_zset *)sv_obj_new(SV_T_ZSET);
        e = sv_db_add(c->sh, argv[1], &z->h);
    }
    int out;
    double ns = 0;
    if (!zset_add(z, incr, argv[3], Z_INCR, &out, &ns)) {
        sv_add_error(&c->r, "resulting score is not a number (NaN)");
        sv_db_delete_if_empty(c->sh, e);
        return;
    }
    sv_add_double(&c->r, ns);
}

void sv_cmd_zrem(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    long long n = 0;
    for (int i = 2; i < argc; i++) {
        sv_entry *m = sv_dict_find(&z->d, argv[i].p, argv[i].len);
        if (m) {
            zset_delete_entry(z, m);
            n++;
        }
    }
    sv_dict_maybe_shrink(&z->d);
    sv_add_int(&c->r, n);
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_zscore(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r < 0) return;
    sv_entry *m = r ? sv_dict_find(&z->d, argv[2].p, argv[2].len) : NULL;
    if (m) sv_add_double(&c->r, m->u.d);
    else sv_add_null(&c->r);
}

void sv_cmd_zmscore(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r < 0) return;
    sv_add_array(&c->r, argc - 2);
    for (int i = 2; i < argc; i++) {
        sv_entry *m = r ? sv_dict_find(&z->d, argv[i].p, argv[i].len) : NULL;
        if (m) sv_add_double(&c->r, m->u.d);
        else sv_add_null(&c->r);
    }
}

void sv_cmd_zcard(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r == 1) sv_add_int(&c->r, (long long)z->zsl.length);
}

static void rank_generic(sv_ctx *c, sv_str *argv, int rev)
{
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r < 0) return;
    sv_entry *m = r ? sv_dict_find(&z->d, argv[2].p, argv[2].len) : NULL;
    if (!m) {
        sv_add_null(&c->r);
        return;
    }
    size_t i = zindex(z, m);
    sv_add_int(&c->r, (long long)(rev ? z->zsl.length - 1 - i : i));
}

void sv_cmd_zrank(sv_ctx *c, int argc, sv_str *argv) { (void)argc; rank_generic(c, argv, 0); }
void sv_cmd_zrevrank(sv_ctx *c, int argc, sv_str *argv) { (void)argc; rank_generic(c, argv, 1); }

/* ---- ranges ---- */

typedef struct zrange_score {
    double min, max;
    int minex, maxex;
} zrange_score;

static int parse_score_bound(sv_str a, double *v, int *ex)
{
    char buf[256];
    char *end;
    if (a.len >= sizeof(buf)) return 0;
    memcpy(buf, a.p, a.len);
    buf[a.len] = 0;
    const char *s = buf;
    *ex = 0;
    if (s[0] == '(') {
        *ex = 1;
        s++;
    }
    *v = strtod(s, &end);
    if (end[0] != 0 || isnan(*v)) return 0;
    return 1;
}

static int parse_score_range(sv_str min, sv_str max, zrange_score *r)
{
    return parse_score_bound(min, &r->min, &r->minex) && parse_score_bound(max, &r->max, &r->maxex);
}

static int score_gte_min(double v, const zrange_score *r) { return r->minex ? v > r->min : v >= r->min; }
static int score_lte_max(double v, const zrange_score *r) { return r->maxex ? v < r->max : v <= r->max; }

typedef struct zrange_lex {
    const char *min, *max;
    size_t minlen, maxlen;
    int minex, maxex;
    int mininf, maxinf; /* -1: "-" (negative infinity), 1: "+" */
} zrange_lex;

static int parse_lex_item(sv_str a, const char **p, size_t *len, int *ex, int *inf)
{
    *inf = 0;
    if (a.len == 0) return 0;
    switch (a.p[0]) {
    case '+':
        if (a.len != 1) return 0;
        *inf = 1;
        return 1;
    case '-':
        if (a.len != 1) return 0;
        *inf = -1;
        return 1;
    case '(':
        *ex = 1;
        break;
    case '[':
        *ex = 0;
        break;
    default:
        return 0;
    }
    *p = a.p + 1;
    *len = a.len - 1;
    return 1;
}

static int parse_lex_range(sv_str min, sv_str max, zrange_lex *r)
{
    memset(r, 0, sizeof(*r));
    return parse_lex_item(min, &r->min, &r->minlen, &r->minex, &r->mininf) &&
           parse_lex_item(max, &r->max, &r->maxlen, &r->maxex, &r->maxinf);
}

static int lexcmp(const char *a, size_t la, const char *b, size_t lb)
{
    size_t n = la < lb ? la : lb;
    int r = memcmp(a, b, n);
    if (r) return r;
    return la < lb ? -1 : la > lb;
}

static int lex_gte_min(const sv_entry *e, const zrange_lex *r)
{
    if (r->mininf == -1) return 1;
    if (r->mininf == 1) return 0;
    int c = lexcmp(e->key, e->klen, r->min, r->minlen);
    return r->minex ? c > 0 : c >= 0;
}

static int lex_lte_max(const sv_entry *e, const zrange_lex *r)
{
    if (r->maxinf == 1) return 1;
    if (r->maxinf == -1) return 0;
    int c = lexcmp(e->key, e->klen, r->max, r->maxlen);
    return r->maxex ? c < 0 : c <= 0;
}

static int below_score_min(const sv_zsl_node *n, const void *r) { return !score_gte_min(n->score, r); }
static int within_score_max(const sv_zsl_node *n, const void *r) { return score_lte_max(n->score, r); }
static int below_lex_min(const sv_zsl_node *n, const void *r) { return !lex_gte_min(n->e, r); }
static int within_lex_max(const sv_zsl_node *n, const void *r) { return lex_lte_max(n->e, r); }

/* Ranks [from, to) of the elements in a score range (the list is sorted by score). */
static void score_span(sv_zset *z, const zrange_score *r, size_t *from, size_t *to)
{
    *from = sv_zsl_count_below(&z->zsl, below_score_min, r);
    *to = sv_zsl_count_below(&z->zsl, within_score_max, r);
    if (*to < *from) *to = *from;
}

/* Lex ranges assume equal scores (as in Redis): then the list is sorted by member. */
static void lex_span(sv_zset *z, const zrange_lex *r, size_t *from, size_t *to)
{
    *from = sv_zsl_count_below(&z->zsl, below_lex_min, r);
    *to = sv_zsl_count_below(&z->zsl, within_lex_max, r);
    if (*to < *from) *to = *from;
}

enum { ZR_AUTO, ZR_RANK, ZR_SCORE, ZR_LEX };
enum { ZD_AUTO, ZD_FWD, ZD_REV };

static void add_entries_reply(sv_ctx *c, sv_entry **el, size_t n, int withscores)
{
    if (withscores && c->r.proto < 3) sv_add_array(&c->r, (long long)n * 2);
    else sv_add_array(&c->r, (long long)n);
    for (size_t i = 0; i < n; i++) {
        if (withscores && c->r.proto >= 3) sv_add_array(&c->r, 2);
        sv_add_bulk(&c->r, el[i]->key, el[i]->klen);
        if (withscores) sv_add_double(&c->r, el[i]->u.d);
    }
}

/* A new sorted set holding (member, score) of n entries (distinct members). */
static sv_zset *zset_from_entries(sv_entry **el, size_t n)
{
    sv_zset *z = (sv_zset *)sv_obj_new(SV_T_ZSET);
    for (size_t i = 0; i < n; i++) {
        sv_entry *m = sv_dict_add(&z->d, el[i]->key, el[i]->klen, NULL);
        m->u.d = el[i]->u.d;
        sv_zsl_insert(&z->zsl, m);
    }
    return z;
}

/* The *STORE forms: dst replaced by z (no TTL), or deleted when z is empty. */
static void store_zset(sv_ctx *c, sv_str dst, sv_zset *z)
{
    long long n = (long long)z->zsl.length;
    if (n) {
        sv_db_set(c->sh, dst, &z->h, 0);
    } else {
        sv_obj_free(&z->h);
        sv_db_delete_notify(c->sh, dst);
    }
    sv_add_int(&c->r, n);
}

/* Redis 7.0's zrangeGenericCommand for ZRANGE, its legacy forms and ZRANGESTORE
 * (store: argv[1] is the destination, the source and range follow). */
static void zrange_generic(sv_ctx *c, int argc, sv_str *argv, int rangetype, int direction, int store)
{
    int withscores = 0;
    long long offset = 0, limit = -1;
    int a0 = store ? 2 : 1; /* the source key */
    for (int j = a0 + 3; j < argc; j++) {
        int left = argc - j - 1;
        if (!store && sv_eq(argv[j], "withscores")) withscores = 1;
        else if (sv_eq(argv[j], "limit") && left >= 2) {
            if (!sv_get_ll(c, argv[j + 1], &offset) || !sv_get_ll(c, argv[j + 2], &limit)) return;
            j += 2;
        } else if (direction == ZD_AUTO && sv_eq(argv[j], "rev")) direction = ZD_REV;
        else if (rangetype == ZR_AUTO && sv_eq(argv[j], "bylex")) rangetype = ZR_LEX;
        else if (rangetype == ZR_AUTO && sv_eq(argv[j], "byscore")) rangetype = ZR_SCORE;
        else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    if (direction == ZD_AUTO) direction = ZD_FWD;
    if (rangetype == ZR_AUTO) rangetype = ZR_RANK;
    if (limit != -1 && rangetype == ZR_RANK) {
        sv_add_error(&c->r, "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
        return;
    }
    if (withscores && rangetype == ZR_LEX) {
        sv_add_error(&c->r, "syntax error, WITHSCORES not supported in combination with BYLEX");
        return;
    }
    sv_str minarg = argv[a0 + 1], maxarg = argv[a0 + 2];
    if (direction == ZD_REV && (rangetype == ZR_SCORE || rangetype == ZR_LEX)) {
        minarg = argv[a0 + 2];
        maxarg = argv[a0 + 1];
    }
    long long start = 0, end = 0;
    zrange_score sr;
    zrange_lex lr;
    if (rangetype == ZR_RANK) {
        if (!sv_get_ll(c, minarg, &start) || !sv_get_ll(c, maxarg, &end)) return;
    } else if (rangetype == ZR_SCORE) {
        if (!parse_score_range(minarg, maxarg, &sr)) {
            sv_add_error(&c->r, "min or max is not a float");
            return;
        }
    } else {
        if (!parse_lex_range(minarg, maxarg, &lr)) {
            sv_add_error(&c->r, "min or max not valid string range item");
            return;
        }
    }
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[a0], &e, &z);
    if (r < 0) return;
    size_t from = 0, to = 0;
    if (r == 0) {
        /* nothing: an empty range */
    } else if (rangetype == ZR_RANK) {
        long long llen = (long long)z->zsl.length;
        if (start < 0) start = llen + start;
        if (end < 0) end = llen + end;
        if (start < 0) start = 0;
        if (!(start > end || start >= llen)) {
            if (end >= llen) end = llen - 1;
            if (direction == ZD_FWD) {
                from = (size_t)start;
                to = (size_t)end + 1;
            } else {
                from = (size_t)(llen - 1 - end);
                to = (size_t)(llen - start);
            }
        }
    } else if (rangetype == ZR_SCORE) {
        score_span(z, &sr, &from, &to);
    } else {
        lex_span(z, &lr, &from, &to);
    }
    size_t total = to - from;
    if (rangetype != ZR_RANK) {
        if (offset < 0 || (unsigned long long)offset >= total) total = 0;
        else total -= (size_t)offset;
        if (limit >= 0 && (unsigned long long)limit < total) total = (size_t)limit;
    } else {
        offset = 0;
    }
    sv_entry **el = sv_malloc(sizeof(sv_entry *) * (total ? total : 1));
    if (total) {
        size_t first = direction == ZD_FWD ? from + (size_t)offset : to - 1 - (size_t)offset;
        sv_zsl_node *x = sv_zsl_at(&z->zsl, first + 1);
        for (size_t k = 0; k < total; k++) {
            el[k] = x->e;
            x = direction == ZD_FWD ? x->level[0].forward : x->backward;
        }
    }
    if (store) store_zset(c, argv[1], zset_from_entries(el, total));
    else add_entries_reply(c, el, total, withscores);
    free(el);
}

void sv_cmd_zrange(sv_ctx *c, int argc, sv_str *argv) { zrange_generic(c, argc, argv, ZR_AUTO, ZD_AUTO, 0); }
void sv_cmd_zrangestore(sv_ctx *c, int argc, sv_str *argv) { zrange_generic(c, argc, argv, ZR_AUTO, ZD_AUTO, 1); }
void sv_cmd_zrevrange(sv_ctx *c, int argc, sv_str *argv) { zrange_generic(c, argc, argv, ZR_RANK, ZD_REV, 0); }
void sv_cmd_zrangebyscore(sv_ctx *c, int argc, sv_str *argv) { zrange_generic(c, argc, argv, ZR_SCORE, ZD_FWD, 0); }
void sv_cmd_zrevrangebyscore(sv_ctx *c, int argc, sv_str *argv) { zrange_generic(c, argc, argv, ZR_SCORE, ZD_REV, 0); }
void sv_cmd_zrangebylex(sv_ctx *c, int argc, sv_str *argv) { zrange_generic(c, argc, argv, ZR_LEX, ZD_FWD, 0); }
void sv_cmd_zrevrangebylex(sv_ctx *c, int argc, sv_str *argv) { zrange_generic(c, argc, argv, ZR_LEX, ZD_REV, 0); }

void sv_cmd_zcount(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    zrange_score sr;
    if (!parse_score_range(argv[2], argv[3], &sr)) {
        sv_add_error(&c->r, "min or max is not a float");
        return;
    }
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    size_t from, to;
    score_span(z, &sr, &from, &to);
    sv_add_int(&c->r, to > from ? (long long)(to - from) : 0);
}

void sv_cmd_zlexcount(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    zrange_lex lr;
    if (!parse_lex_range(argv[2], argv[3], &lr)) {
        sv_add_error(&c->r, "min or max not valid string range item");
        return;
    }
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    size_t from, to;
    lex_span(z, &lr, &from, &to);
    sv_add_int(&c->r, (long long)(to - from));
}

static void zpop_generic(sv_ctx *c, int argc, sv_str *argv, int max)
{
    if (argc > 3) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    long long count = 1;
    if (argc == 3 && !sv_get_ll_range(c, argv[2], 0, LONG_MAX, &count, "value is out of range, must be positive")) return;
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_empty_array(&c->r);
    if (r != 1) return;
    if (count == 0) {
        sv_add_empty_array(&c->r);
        return;
    }
    int nested = argc == 3 && c->r.proto >= 3;
    size_t n = (size_t)count > z->zsl.length ? z->zsl.length : (size_t)count;
    sv_add_array(&c->r, nested ? (long long)n : (long long)n * 2);
    for (size_t i = 0; i < n; i++) {
        sv_entry *m = max ? z->zsl.tail->e : sv_zsl_first(&z->zsl)->e;
        if (nested) sv_add_array(&c->r, 2);
        sv_add_bulk(&c->r, m->key, m->klen);
        sv_add_double(&c->r, m->u.d);
        zset_delete_entry(z, m);
    }
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_zpopmin(sv_ctx *c, int argc, sv_str *argv) { zpop_generic(c, argc, argv, 0); }
void sv_cmd_zpopmax(sv_ctx *c, int argc, sv_str *argv) { zpop_generic(c, argc, argv, 1); }

void sv_cmd_zremrangebyrank(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long start, end;
    if (!sv_get_ll(c, argv[2], &start) || !sv_get_ll(c, argv[3], &end)) return;
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    long long llen = (long long)z->zsl.length;
    if (start < 0) start = llen + start;
    if (end < 0) end = llen + end;
    if (start < 0) start = 0;
    if (start > end || start >= llen) {
        sv_add_int(&c->r, 0);
        return;
    }
    if (end >= llen) end = llen - 1;
    zset_delete_range(z, (size_t)start, (size_t)end + 1);
    sv_add_int(&c->r, end - start + 1);
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_zremrangebyscore(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    zrange_score sr;
    if (!parse_score_range(argv[2], argv[3], &sr)) {
        sv_add_error(&c->r, "min or max is not a float");
        return;
    }
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    size_t from, to;
    score_span(z, &sr, &from, &to);
    if (to < from) to = from;
    zset_delete_range(z, from, to);
    sv_add_int(&c->r, (long long)(to - from));
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_zremrangebylex(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    zrange_lex lr;
    if (!parse_lex_range(argv[2], argv[3], &lr)) {
        sv_add_error(&c->r, "min or max not valid string range item");
        return;
    }
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    size_t from, to;
    lex_span(z, &lr, &from, &to);
    zset_delete_range(z, from, to);
    sv_add_int(&c->r, (long long)(to - from));
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_zscan(sv_ctx *c, int argc, sv_str *argv)
{
    uint64_t cursor;
    if (!sv_parse_scan_cursor(c, argv[2], &cursor)) return;
    sv_entry *e = NULL;
    sv_zset *z = NULL;
    int r = get_zset(c, argv[1], &e, &z);
    if (r == 0) sv_add_empty_scan(c);
    if (r != 1) return;
    sv_scan_collection(c, &z->d, cursor, argc, argv, SV_T_ZSET);
}

/* ---- ZRANDMEMBER, ZMPOP ---- */

static void add_member_score(sv_ctx *c, sv_entry *m) { sv_add_double(&c->r, m->u.d); }

void sv_cmd_zrandmember(sv_ctx *c, int argc, sv_str *argv) { sv_random_entries(c, argc, argv, SV_T_ZSET, "withscores", add_member_score); }

/* ZMPOP numkeys key... MIN|MAX [COUNT n]: [key, [[member, score]...]] of the first
 * non-empty sorted set (pairs nested in RESP2 too, as Redis). */
void sv_cmd_zmpop(sv_ctx *c, int argc, sv_str *argv)
{
    sv_mpop o;
    if (!sv_parse_mpop(c, argc, argv, 1, "min", "max", &o)) return;
    for (long long k = 0; k < o.numkeys; k++) {
        sv_entry *e = NULL;
        sv_zset *z = NULL;
        int r = get_zset(c, argv[2 + k], &e, &z);
        if (r < 0) return;
        if (r == 0) continue;
        long long n = (size_t)o.count > z->zsl.length ? (long long)z->zsl.length : o.count;
        sv_add_array(&c->r, 2);
        sv_add_bulk(&c->r, argv[2 + k].p, argv[2 + k].len);
        sv_add_array(&c->r, n);
        while (n--) {
            sv_entry *m = o.which ? z->zsl.tail->e : sv_zsl_first(&z->zsl)->e;
            sv_add_array(&c->r, 2);
            sv_add_bulk(&c->r, m->key, m->klen);
            sv_add_double(&c->r, m->u.d);
            zset_delete_entry(z, m);
        }
        sv_dict_maybe_shrink(&z->d);
        sv_db_delete_if_empty(c->sh, e);
        sv_signal_modified_key(c->sh, argv[2 + k]); /* the key popped from (.touch NONE) */
        return;
    }
    sv_add_null_array(&c->r);
}

/* ---- ZUNION ZINTER ZDIFF, their STORE forms, ZINTERCARD ---- */

enum { ZOP_UNION, ZOP_INTER, ZOP_DIFF, ZOP_INTERCARD };
enum { AGG_SUM, AGG_MIN, AGG_MAX };

/* An input: a sorted set, or a set (every member scores 1), or missing (empty). */
typedef struct zsrc {
    sv_obj *o;
    double weight;
    size_t card;
} zsrc;

static sv_dict *src_dict(const zsrc *s)
{
    if (!s->o) return NULL;
    return s->o->type == SV_T_ZSET ? &((sv_zset *)s->o)->d : &((sv_set *)s->o)->d;
}

static int src_find(const zsrc *s, const char *m, size_t l, double *score)
{
    sv_dict *d = src_dict(s);
    sv_entry *e = d ? sv_dict_find(d, m, l) : NULL;
    if (!e) return 0;
    *score = s->o->type == SV_T_ZSET ? e->u.d : 1.0;
    return 1;
}

static double src_score(const zsrc *s, const sv_entry *e) { return s->o->type == SV_T_ZSET ? e->u.d : 1.0; }

static void aggregate(double *target, double v, int agg)
{
    if (agg == AGG_SUM) {
        *target = *target + v;
        if (isnan(*target)) *target = 0.0; /* inf + -inf: 0, as Redis */
    } else if (agg == AGG_MIN) {
        if (v < *target) *target = v;
    } else if (v > *target) {
        *target = v;
    }
}

static double weighted(const zsrc *s, double score)
{
    double v = s->weight * score;
    return isnan(v) ? 0.0 : v; /* inf * 0 */
}

static int by_card(const void *a, const void *b)
{
    const zsrc *x = a, *y = b;
    return x->card < y->card ? -1 : x->card > y->card;
}

/* Redis 7.0's zunionInterDiffGenericCommand. dst: argv index of the destination (0
 * for none); numkeys at argv[dst + 1]. */
static void zsetop_generic(sv_ctx *c, int argc, sv_str *argv, int dst, int op, const char *name)
{
    int ni = dst + 1;
    long long numkeys;
    if (!sv_get_ll(c, argv[ni], &numkeys)) return;
    if (numkeys < 1) {
        sv_add_errorf(&c->r, "at least 1 input key is needed for '%s' command", name);
        return;
    }
    if (numkeys > argc - ni - 1) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    int n = (int)numkeys;
    zsrc *src = sv_calloc((size_t)n, sizeof(zsrc));
    for (int i = 0; i < n; i++) {
        sv_entry *e = sv_db_lookup(c->sh, argv[ni + 1 + i]);
        src[i].weight = 1.0;
        if (!e) continue;
        sv_obj *o = e->val;
        if (o->type != SV_T_ZSET && o->type != SV_T_SET) {
            sv_add_error(&c->r, SV_ERR_WRONGTYPE);
            free(src);
            return;
        }
        src[i].o = o;
        src[i].card = sv_dict_size(src_dict(&src[i]));
    }
    int agg = AGG_SUM, withscores = 0;
    long long limit = 0;
    for (int j = ni + 1 + n; j < argc; j++) {
        int remaining = argc - j;
        if (op == ZOP_INTERCARD) {
            if (remaining >= 2 && sv_eq(argv[j], "limit")) {
                if (!sv_get_ll_range(c, argv[j + 1], 0, LONG_MAX, &limit, "LIMIT can't be negative")) goto out;
                j++;
                continue;
            }
        } else if (op != ZOP_DIFF && remaining >= n + 1 && sv_eq(argv[j], "weights")) {
            for (int i = 0; i < n; i++)
                if (!sv_str2d(argv[j + 1 + i].p, argv[j + 1 + i].len, &src[i].weight)) {
                    sv_add_error(&c->r, "weight value is not a float");
                    goto out;
                }
            j += n;
            continue;
        } else if (op != ZOP_DIFF && remaining >= 2 && sv_eq(argv[j], "aggregate")) {
            if (sv_eq(argv[j + 1], "sum")) agg = AGG_SUM;
            else if (sv_eq(argv[j + 1], "min")) agg = AGG_MIN;
            else if (sv_eq(argv[j + 1], "max")) agg = AGG_MAX;
            else {
                sv_add_error(&c->r, SV_ERR_SYNTAX);
                goto out;
            }
            j++;
            continue;
        } else if (!dst && sv_eq(argv[j], "withscores")) {
            withscores = 1;
            continue;
        }
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        goto out;
    }
    /* smallest first (Redis does the same; it also fixes the order of the sums);
     * a difference keeps its first input first */
    if (op != ZOP_DIFF) qsort(src, (size_t)n, sizeof(zsrc), by_card);
    sv_zset *res = (sv_zset *)sv_obj_new(SV_T_ZSET);
    long long card = 0;
    if (op == ZOP_INTER || op == ZOP_INTERCARD) {
        sv_dict *d0 = src_dict(&src[0]);
        if (d0 && src[0].card) {
            sv_dict_iter it;
            sv_dict_iter_init(&it, d0);
            for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
                double score = weighted(&src[0], src_score(&src[0], m)), v;
                int j = 1;
                for (; j < n; j++) {
                    if (!src_find(&src[j], m->key, m->klen, &v)) break;
                    aggregate(&score, weighted(&src[j], v), agg);
                }
                if (j < n) continue;
                if (op == ZOP_INTERCARD) {
                    card++;
                    if (limit && card >= limit) break;
                    continue;
                }
                sv_entry *r = sv_dict_add(&res->d, m->key, m->klen, NULL);
                r->u.d = score;
            }
        }
    } else if (op == ZOP_UNION) {
        for (int i = 0; i < n; i++) {
            sv_dict *d = src_dict(&src[i]);
            if (!d) continue;
            sv_dict_iter it;
            sv_dict_iter_init(&it, d);
            for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
                double v = weighted(&src[i], src_score(&src[i], m));
                sv_entry *ex = NULL;
                sv_entry *r = sv_dict_add(&res->d, m->key, m->klen, &ex);
                if (r) r->u.d = v;
                else aggregate(&ex->u.d, v, agg);
            }
        }
    } else {
        sv_dict *d0 = src_dict(&src[0]);
        if (d0) {
            sv_dict_iter it;
            sv_dict_iter_init(&it, d0);
            for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
                double v;
                int j = 1;
                while (j < n && !src_find(&src[j], m->key, m->klen, &v)) j++;
                if (j < n) continue;
                sv_entry *r = sv_dict_add(&res->d, m->key, m->klen, NULL);
                r->u.d = src_score(&src[0], m);
            }
        }
    }
    if (op == ZOP_INTERCARD) {
        sv_obj_free(&res->h);
        sv_add_int(&c->r, card);
        goto out;
    }
    sv_dict_iter it;
    sv_dict_iter_init(&it, &res->d);
    for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
        /* stored, -0 becomes 0 as in Redis (its small sets are listpacks, which keep
         * "0"); a reply of ZUNION/ZINTER/ZDIFF shows "-0" as Redis's does */
        if (dst && m->u.d == 0) m->u.d = 0.0;
        sv_zsl_insert(&res->zsl, m);
    }
    if (dst) {
        store_zset(c, argv[dst], res);
    } else {
        size_t k = 0;
        sv_entry **el = sv_malloc(sizeof(sv_entry *) * (res->zsl.length + 1));
        for (sv_zsl_node *x = sv_zsl_first(&res->zsl); x; x = x->level[0].forward) el[k++] = x->e;
        add_entries_reply(c, el, k, withscores);
        free(el);
        sv_obj_free(&res->h);
    }
out:
    free(src);
}

void sv_cmd_zunion(sv_ctx *c, int argc, sv_str *argv) { zsetop_generic(c, argc, argv, 0, ZOP_UNION, "zunion"); }
void sv_cmd_zinter(sv_ctx *c, int argc, sv_str *argv) { zsetop_generic(c, argc, argv, 0, ZOP_INTER, "zinter"); }
void sv_cmd_zdiff(sv_ctx *c, int argc, sv_str *argv) { zsetop_generic(c, argc, argv, 0, ZOP_DIFF, "zdiff"); }
void sv_cmd_zunionstore(sv_ctx *c, int argc, sv_str *argv) { zsetop_generic(c, argc, argv, 1, ZOP_UNION, "zunionstore"); }
void sv_cmd_zinterstore(sv_ctx *c, int argc, sv_str *argv) { zsetop_generic(c, argc, argv, 1, ZOP_INTER, "zinterstore"); }
void sv_cmd_zdiffstore(sv_ctx *c, int argc, sv_str *argv) { zsetop_generic(c, argc, argv, 1, ZOP_DIFF, "zdiffstore"); }
void sv_cmd_zintercard(sv_ctx *c, int argc, sv_str *argv) { zsetop_generic(c, argc, argv, 0, ZOP_INTERCARD, "zintercard"); }
