/* t_sort: SORT and SORT_RO — ASC/DESC, ALPHA, LIMIT, BY pattern (nosort when it has
 * no '*'), GET pattern / # / pattern->field, STORE — with Redis 7.0's semantics as
 * a standalone server gives them (Redis Cluster 7.0 refuses BY and GET patterns;
 * here the pattern keys are looked up on the shard that holds the sorted key, so
 * they must share its hash tag to be seen). Numbers parse with strtod as Redis
 * does; ALPHA compares as C strings (strcoll in the C locale) unless storing,
 * which compares the bytes. */
#include <errno.h>
#include <math.h>

#include "server.h"

typedef struct sortobj {
    const char *p;
    size_t len;
    double score;
    sv_str cmp; /* ALPHA BY: the pattern's value (p NULL: none) */
} sortobj;

/* The value a pattern names for an element: a string key, or a hash field with
 * "->field"; "#" is the element itself. 0 when there is none. */
static int by_pattern(sv_shard *sh, sv_str pat, sv_str ele, sv_str *out)
{
    if (pat.len == 1 && pat.p[0] == '#') {
        *out = ele;
        return 1;
    }
    const char *star = memchr(pat.p, '*', pat.len);
    if (!star) return 0;
    size_t prefix = (size_t)(star - pat.p), fieldlen = 0;
    const char *field = NULL;
    for (const char *f = star + 1; f + 1 < pat.p + pat.len; f++)
        if (f[0] == '-' && f[1] == '>') {
            if (f + 2 < pat.p + pat.len) {
                field = f + 2;
                fieldlen = (size_t)(pat.p + pat.len - field);
            }
            break;
        }
    size_t postfix = pat.len - prefix - 1 - (field ? fieldlen + 2 : 0);
    char stackbuf[256];
    size_t klen = prefix + ele.len + postfix;
    char *k = klen <= sizeof(stackbuf) ? stackbuf : sv_malloc(klen);
    memcpy(k, pat.p, prefix);
    if (ele.len) memcpy(k + prefix, ele.p, ele.len);
    memcpy(k + prefix + ele.len, star + 1, postfix);
    sv_entry *e = sv_db_lookup(sh, (sv_str){k, klen});
    if (k != stackbuf) free(k);
    if (!e) return 0;
    sv_obj *o = e->val;
    if (field) {
        if (o->type != SV_T_HASH) return 0;
        sv_entry *fe = sv_dict_find(&((sv_hashobj *)o)->d, field, fieldlen);
        if (!fe) return 0;
        sv_blob *b = fe->val;
        *out = (sv_str){b->data, b->len};
        return 1;
    }
    if (o->type != SV_T_STRING) return 0;
    *out = (sv_str){((sv_string *)o)->data, ((sv_string *)o)->len};
    return 1;
}

static int binary_cmp(const char *a, size_t la, const char *b, size_t lb)
{
    size_t n = la < lb ? la : lb;
    int r = n ? memcmp(a, b, n) : 0;
    if (r) return r;
    return la < lb ? -1 : la > lb;
}

/* strcoll/strcmp of the C strings (stops at a NUL byte, as Redis's does) */
static int cstring_cmp(const char *a, size_t la, const char *b, size_t lb)
{
    size_t i = 0;
    for (;; i++) {
        int ca = i < la ? (unsigned char)a[i] : 0, cb = i < lb ? (unsigned char)b[i] : 0;
        if (ca != cb || ca == 0) return ca - cb;
    }
}

/* qsort's comparator takes no argument: the options of the running SORT (one
 * command at a time per shard thread) */
static _Thread_local int sort_desc, sort_alpha, sort_bypattern, sort_store;

static int sort_cmp(const void *x, const void *y)
{
    const sortobj *a = x, *b = y;
    int cmp;
    if (!sort_alpha) {
        if (a->score > b->score) cmp = 1;
        else if (a->score < b->score) cmp = -1;
        else cmp = binary_cmp(a->p, a->len, b->p, b->len);
    } else if (sort_bypattern) {
        if (!a->cmp.p || !b->cmp.p) cmp = a->cmp.p == b->cmp.p ? 0 : !a->cmp.p ? -1 : 1;
        else if (sort_store) cmp = binary_cmp(a->cmp.p, a->cmp.len, b->cmp.p, b->cmp.len);
        else cmp = cstring_cmp(a->cmp.p, a->cmp.len, b->cmp.p, b->cmp.len);
    } else if (sort_store) {
        cmp = binary_cmp(a->p, a->len, b->p, b->len);
    } else {
        cmp = cstring_cmp(a->p, a->len, b->p, b->len);
    }
    return sort_desc ? -cmp : cmp;
}

static void sort_generic(sv_ctx *c, int argc, sv_str *argv, int readonly)
{
    int desc = 0, alpha = 0, dontsort = 0, ngets = 0;
    long long lstart = 0, lcount = -1;
    sv_str sortby = {NULL, 0}, storekey = {NULL, 0};
    int has_by = 0, has_store = 0;
    sv_str *gets = sv_malloc(sizeof(sv_str) * (size_t)argc);
    for (int j = 2; j < argc; j++) {
        int left = argc - j - 1;
        if (sv_eq(argv[j], "asc")) desc = 0;
        else if (sv_eq(argv[j], "desc")) desc = 1;
        else if (sv_eq(argv[j], "alpha")) alpha = 1;
        else if (sv_eq(argv[j], "limit") && left >= 2) {
            if (!sv_get_ll(c, argv[j + 1], &lstart) || !sv_get_ll(c, argv[j + 2], &lcount)) goto out;
            j += 2;
        } else if (!readonly && sv_eq(argv[j], "store") && left >= 1) {
            storekey = argv[++j];
            has_store = 1;
        } else if (sv_eq(argv[j], "by") && left >= 1) {
            sortby = argv[++j];
            has_by = 1;
            dontsort = memchr(sortby.p, '*', sortby.len) == NULL;
        } else if (sv_eq(argv[j], "get") && left >= 1) {
            gets[ngets++] = argv[++j];
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            goto out;
        }
    }
    sv_entry *e = sv_db_lookup(c->sh, argv[1]);
    sv_obj *o = e ? e->val : NULL;
    if (o && o->type != SV_T_SET && o->type != SV_T_LIST && o->type != SV_T_ZSET) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        goto out;
    }
    /* a set has no order of its own: stored "unsorted", it is sorted ALPHA */
    if (dontsort && o && o->type == SV_T_SET && has_store) {
        dontsort = 0;
        alpha = 1;
        has_by = 0;
    }
    long long vlen = !o ? 0
                     : o->type == SV_T_LIST ? (long long)((sv_list *)o)->len
                     : o->type == SV_T_SET ? (long long)sv_dict_size(&((sv_set *)o)->d)
                                           : (long long)((sv_zset *)o)->zsl.length;
    long long start = lstart < 0 ? 0 : lstart > vlen ? vlen : lstart;
    long long count = lcount < -1 ? -1 : lcount > vlen ? vlen : lcount;
    long long end = count < 0 ? vlen - 1 : start + count - 1;
    if (start >= vlen) {
        start = vlen - 1;
        end = vlen - 2;
    }
    if (end >= vlen) end = vlen - 1;
    long long total = vlen;
    int ranged = o && (o->type == SV_T_ZSET || o->type == SV_T_LIST) && dontsort;
    if (ranged && (start != 0 || end != vlen - 1)) total = end - start + 1;
    if (total < 0) total = 0;
    sortobj *v = sv_calloc((size_t)(total ? total : 1), sizeof(sortobj));
    long long n = 0;
    if (o && o->type == SV_T_LIST) {
        sv_list *l = (sv_list *)o;
        if (dontsort) {
            if (end >= start) {
                for (long long k = 0; k < total; k++) {
                    size_t idx = desc ? (size_t)(vlen - start - 1 - k) : (size_t)(start + k);
                    sv_blob *b = l->a[(l->head + idx) & (l->cap - 1)];
                    v[n++] = (sortobj){b->data, b->len, 0, {NULL, 0}};
                }
                end -= start;
                start = 0;
            }
        } else {
            for (size_t k = 0; k < l->len; k++) {
                sv_blob *b = l->a[(l->head + k) & (l->cap - 1)];
                v[n++] = (sortobj){b->data, b->len, 0, {NULL, 0}};
            }
        }
    } else if (o && o->type == SV_T_SET) {
        sv_dict_iter it;
        sv_dict_iter_init(&it, &((sv_set *)o)->d);
        for (sv_entry *m; (m = sv_dict_iter_next(&it));) v[n++] = (sortobj){m->key, m->klen, 0, {NULL, 0}};
    } else if (o && dontsort) {
        sv_zset *z = (sv_zset *)o;
        sv_zsl_node *x = desc ? (start > 0 ? sv_zsl_at(&z->zsl, (size_t)(vlen - start)) : z->zsl.tail)
                              : (start > 0 ? sv_zsl_at(&z->zsl, (size_t)start + 1) : sv_zsl_first(&z->zsl));
        for (long long k = 0; k < total && x; k++) {
            v[n++] = (sortobj){x->e->key, x->e->klen, 0, {NULL, 0}};
            x = desc ? x->backward : x->level[0].forward;
        }
        end -= start;
        start = 0;
    } else if (o) {
        sv_dict_iter it;
        sv_dict_iter_init(&it, &((sv_zset *)o)->d);
        for (sv_entry *m; (m = sv_dict_iter_next(&it));) v[n++] = (sortobj){m->key, m->klen, 0, {NULL, 0}};
    }
    int conv_error = 0;
    if (!dontsort) {
        for (long long j = 0; j < n; j++) {
            sv_str by = {v[j].p, v[j].len};
            if (has_by && !by_pattern(c->sh, sortby, by, &by)) continue;
            if (alpha) {
                if (has_by) v[j].cmp = by;
            } else {
                char tmp[128];
                char *s = by.len < sizeof(tmp) ? tmp : sv_malloc(by.len + 1);
                memcpy(s, by.p, by.len);
                s[by.len] = 0;
                char *eptr;
                errno = 0;
                v[j].score = strtod(s, &eptr);
                if (eptr[0] != '\0' || errno == ERANGE || isnan(v[j].score)) conv_error = 1;
                if (s != tmp) free(s);
            }
        }
        sort_desc = desc;
        sort_alpha = alpha;
        sort_bypattern = has_by;
        sort_store = has_store;
        qsort(v, (size_t)n, sizeof(sortobj), sort_cmp);
    }
    long long outlen = ngets ? ngets * (end - start + 1) : end - start + 1;
    if (outlen < 0) outlen = 0;
    if (conv_error) {
        sv_add_error(&c->r, "One or more scores can't be converted into double");
    } else if (!has_store) {
        sv_add_array(&c->r, outlen);
        for (long long j = start; j <= end; j++) {
            if (!ngets) sv_add_bulk(&c->r, v[j].p, v[j].len);
            for (int g = 0; g < ngets; g++) {
                sv_str val;
                if (by_pattern(c->sh, gets[g], (sv_str){v[j].p, v[j].len}, &val)) sv_add_bulk(&c->r, val.p, val.len);
                else sv_add_null(&c->r);
            }
        }
    } else {
        sv_list *l = (sv_list *)sv_obj_new(SV_T_LIST);
        size_t cap = 8;
        while ((long long)cap < outlen) cap *= 2;
        l->a = sv_malloc(sizeof(sv_blob *) * cap);
        l->cap = cap;
        for (long long j = start; j <= end; j++) {
            if (!ngets) l->a[l->len++] = sv_blob_new(v[j].p, v[j].len);
            for (int g = 0; g < ngets; g++) {
                sv_str val;
                if (!by_pattern(c->sh, gets[g], (sv_str){v[j].p, v[j].len}, &val)) val = (sv_str){"", 0};
                l->a[l->len++] = sv_blob_new(val.p, val.len);
            }
        }
        if (outlen) sv_db_set(c->sh, storekey, &l->h, 0); /* frees the source if it is the destination: read above */
        else {
            sv_obj_free(&l->h);
            sv_db_delete_notify(c->sh, storekey);
        }
        sv_signal_modified_key(c->sh, storekey); /* SORT signals only what it stored (.touch NONE) */
        sv_add_int(&c->r, outlen);
    }
    free(v);
out:
    free(gets);
}

void sv_cmd_sort(sv_ctx *c, int argc, sv_str *argv) { sort_generic(c, argc, argv, 0); }
void sv_cmd_sort_ro(sv_ctx *c, int argc, sv_str *argv) { sort_generic(c, argc, argv, 1); }
