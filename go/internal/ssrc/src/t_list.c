/* t_list: lists as a power-of-two ring of element pointers, Redis 7.0 semantics. */
#include <limits.h>

#include "server.h"

static inline sv_blob **at(sv_list *l, size_t i) { return &l->a[(l->head + i) & (l->cap - 1)]; }

static void list_grow(sv_list *l)
{
    size_t cap = l->cap ? l->cap * 2 : 8;
    sv_blob **a = sv_malloc(cap * sizeof(*a));
    for (size_t i = 0; i < l->len; i++) a[i] = *at(l, i);
    free(l->a);
    l->a = a;
    l->cap = cap;
    l->head = 0;
}

static void push_head(sv_list *l, sv_blob *b)
{
    if (l->len == l->cap) list_grow(l);
    l->head = (l->head - 1) & (l->cap - 1);
    l->a[l->head] = b;
    l->len++;
}

static void push_tail(sv_list *l, sv_blob *b)
{
    if (l->len == l->cap) list_grow(l);
    *at(l, l->len) = b;
    l->len++;
}

static sv_blob *pop_head(sv_list *l)
{
    sv_blob *b = l->a[l->head];
    l->head = (l->head + 1) & (l->cap - 1);
    l->len--;
    return b;
}

static sv_blob *pop_tail(sv_list *l)
{
    sv_blob *b = *at(l, l->len - 1);
    l->len--;
    return b;
}

static void list_insert_at(sv_list *l, size_t i, sv_blob *b)
{
    if (l->len == l->cap) list_grow(l);
    for (size_t j = l->len; j > i; j--) *at(l, j) = *at(l, j - 1);
    *at(l, i) = b;
    l->len++;
}

static int get_list(sv_ctx *c, sv_str key, sv_list **l)
{
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, key, SV_T_LIST, &e);
    if (r == 1) *l = e->val;
    return r;
}

static void push_generic(sv_ctx *c, int argc, sv_str *argv, int head, int xx)
{
    sv_list *l = NULL;
    int r = get_list(c, argv[1], &l);
    if (r < 0) return;
    if (r == 0) {
        if (xx) {
            sv_add_int(&c->r, 0);
            return;
        }
        l = (sv_list *)sv_obj_new(SV_T_LIST);
        sv_db_add(c->sh, argv[1], &l->h);
    }
    for (int i = 2; i < argc; i++) {
        sv_blob *b = sv_blob_new(argv[i].p, argv[i].len);
        if (head) push_head(l, b);
        else push_tail(l, b);
    }
    sv_add_int(&c->r, (long long)l->len);
}

void sv_cmd_lpush(sv_ctx *c, int argc, sv_str *argv) { push_generic(c, argc, argv, 1, 0); }
void sv_cmd_rpush(sv_ctx *c, int argc, sv_str *argv) { push_generic(c, argc, argv, 0, 0); }
void sv_cmd_lpushx(sv_ctx *c, int argc, sv_str *argv) { push_generic(c, argc, argv, 1, 1); }
void sv_cmd_rpushx(sv_ctx *c, int argc, sv_str *argv) { push_generic(c, argc, argv, 0, 1); }

static void pop_generic(sv_ctx *c, int argc, sv_str *argv, int head, const char *name)
{
    long long count = 0;
    int hascount = 0;
    if (argc > 3) {
        sv_add_arity_error(c, name);
        return;
    }
    if (argc == 3) {
        if (!sv_get_ll_range(c, argv[2], 0, LONG_MAX, &count, "value is out of range, must be positive")) return;
        hascount = 1;
    }
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, argv[1], SV_T_LIST, &e);
    if (r < 0) return;
    if (r == 0) {
        if (hascount) sv_add_null_array(&c->r);
        else sv_add_null(&c->r);
        return;
    }
    sv_list *l = e->val;
    if (hascount && count == 0) {
        sv_add_empty_array(&c->r);
        return;
    }
    if (!hascount) {
        sv_blob *b = head ? pop_head(l) : pop_tail(l);
        sv_add_bulk(&c->r, b->data, b->len);
        free(b);
    } else {
        if ((size_t)count > l->len) count = (long long)l->len;
        sv_add_array(&c->r, count);
        while (count--) {
            sv_blob *b = head ? pop_head(l) : pop_tail(l);
            sv_add_bulk(&c->r, b->data, b->len);
            free(b);
        }
    }
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_lpop(sv_ctx *c, int argc, sv_str *argv) { pop_generic(c, argc, argv, 1, "lpop"); }
void sv_cmd_rpop(sv_ctx *c, int argc, sv_str *argv) { pop_generic(c, argc, argv, 0, "rpop"); }

void sv_cmd_llen(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_list *l = NULL;
    int r = get_list(c, argv[1], &l);
    if (r == 0) sv_add_int(&c->r, 0);
    else if (r == 1) sv_add_int(&c->r, (long long)l->len);
}

void sv_cmd_lrange(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long start, end;
    if (!sv_get_ll(c, argv[2], &start) || !sv_get_ll(c, argv[3], &end)) return;
    sv_list *l = NULL;
    int r = get_list(c, argv[1], &l);
    if (r == 0) sv_add_empty_array(&c->r);
    if (r != 1) return;
    long long llen = (long long)l->len;
    if (start < 0) start = llen + start;
    if (end < 0) end = llen + end;
    if (start < 0) start = 0;
    if (start > end || start >= llen) {
        sv_add_empty_array(&c->r);
        return;
    }
    if (end >= llen) end = llen - 1;
    sv_add_array(&c->r, end - start + 1);
    for (long long i = start; i <= end; i++) {
        sv_blob *b = *at(l, (size_t)i);
        sv_add_bulk(&c->r, b->data, b->len);
    }
}

void sv_cmd_lindex(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_list *l = NULL;
    int r = get_list(c, argv[1], &l);
    if (r == 0) sv_add_null(&c->r);
    if (r != 1) return;
    long long idx;
    if (!sv_get_ll(c, argv[2], &idx)) return;
    if (idx < 0) idx += (long long)l->len;
    if (idx < 0 || idx >= (long long)l->len) {
        sv_add_null(&c->r);
        return;
    }
    sv_blob *b = *at(l, (size_t)idx);
    sv_add_bulk(&c->r, b->data, b->len);
}

void sv_cmd_lset(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_list *l = NULL;
    int r = get_list(c, argv[1], &l);
    if (r == 0) sv_add_error(&c->r, SV_ERR_NOSUCHKEY);
    if (r != 1) return;
    long long idx;
    if (!sv_get_ll(c, argv[2], &idx)) return;
    if (idx < 0) idx += (long long)l->len;
    if (idx < 0 || idx >= (long long)l->len) {
        sv_add_error(&c->r, SV_ERR_OUTOFRANGE);
        return;
    }
    sv_blob **slot = at(l, (size_t)idx);
    free(*slot);
    *slot = sv_blob_new(argv[3].p, argv[3].len);
    sv_add_ok(&c->r);
}

static inline int blob_eq(sv_blob *b, sv_str s) { return b->len == s.len && memcmp(b->data, s.p, s.len) == 0; }

void sv_cmd_linsert(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    int after;
    if (sv_eq(argv[2], "after")) after = 1;
    else if (sv_eq(argv[2], "before")) after = 0;
    else {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    sv_list *l = NULL;
    int r = get_list(c, argv[1], &l);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    for (size_t i = 0; i < l->len; i++) {
        if (blob_eq(*at(l, i), argv[3])) {
            list_insert_at(l, i + (size_t)after, sv_blob_new(argv[4].p, argv[4].len));
            sv_add_int(&c->r, (long long)l->len);
            return;
        }
    }
    sv_add_int(&c->r, -1);
}

void sv_cmd_lrem(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long count;
    if (!sv_get_ll(c, argv[2], &count)) return;
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, argv[1], SV_T_LIST, &e);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    sv_list *l = e->val;
    long long removed = 0;
    /* compact in one pass from the chosen end */
    size_t n = l->len;
    if (count >= 0) {
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
            sv_blob *b = *at(l, i);
            if ((count == 0 || removed < count) && blob_eq(b, argv[3])) {
                free(b);
                removed++;
            } else {
                *at(l, w++) = b;
            }
        }
        l->len = w;
    } else {
        /* LLONG_MIN cannot be negated: Redis then removes every match */
        long long want = count == LLONG_MIN ? LLONG_MAX : -count;
        size_t w = n;
        for (size_t i = n; i-- > 0;) {
            sv_blob *b = *at(l, i);
            if (removed < want && blob_eq(b, argv[3])) {
                free(b);
                removed++;
            } else {
                *at(l, --w) = b;
            }
        }
        l->head = (l->head + w) & (l->cap - 1);
        l->len = n - w;
    }
    sv_add_int(&c->r, removed);
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_ltrim(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long start, end;
    if (!sv_get_ll(c, argv[2], &start) || !sv_get_ll(c, argv[3], &end)) return;
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, argv[1], SV_T_LIST, &e);
    if (r == 0) sv_add_ok(&c->r);
    if (r != 1) return;
    sv_list *l = e->val;
    long long llen = (long long)l->len, ltrim, rtrim;
    if (start < 0) start = llen + start;
    if (end < 0) end = llen + end;
    if (start < 0) start = 0;
    if (start > end || start >= llen) {
        ltrim = llen;
        rtrim = 0;
    } else {
        if (end >= llen) end = llen - 1;
        ltrim = start;
        rtrim = llen - end - 1;
    }
    while (ltrim-- > 0) free(pop_head(l));
    while (rtrim-- > 0) free(pop_tail(l));
    sv_add_ok(&c->r);
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_lpos(sv_ctx *c, int argc, sv_str *argv)
{
    long long rank = 1, count = -1, maxlen = 0;
    for (int j = 3; j < argc; j++) {
        int more = argc - 1 - j;
        if (sv_eq(argv[j], "rank") && more) {
            j++;
            if (!sv_str2ll(argv[j].p, argv[j].len, &rank)) {
                sv_add_error(&c->r, SV_ERR_NOTINT);
                return;
            }
            if (rank == LLONG_MIN) {
                sv_add_error(&c->r, "value is out of range, value must between -9223372036854775807 and 9223372036854775807");
                return;
            }
            if (rank == 0) {
                sv_add_error(&c->r, "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
                return;
            }
        } else if (sv_eq(argv[j], "count") && more) {
            j++;
            if (!sv_get_ll_range(c, argv[j], 0, LONG_MAX, &count, "COUNT can't be negative")) return;
        } else if (sv_eq(argv[j], "maxlen") && more) {
            j++;
            if (!sv_get_ll_range(c, argv[j], 0, LONG_MAX, &maxlen, "MAXLEN can't be negative")) return;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    sv_list *l = NULL;
    int r = get_list(c, argv[1], &l);
    if (r == 0) {
        if (count != -1) sv_add_empty_array(&c->r);
        else sv_add_null(&c->r);
    }
    if (r != 1) return;
    long long matches = 0, found = 0;
    sv_buf tmp = {0};
    sv_reply tr = {&tmp, c->r.proto};
    long long llen = (long long)l->len;
    long long single = -1;
    for (long long k = 0; k < llen && (maxlen == 0 || k < maxlen); k++) {
        long long idx = rank > 0 ? k : llen - 1 - k;
        if (blob_eq(*at(l, (size_t)idx), argv[2])) {
            matches++;
            long long need = rank > 0 ? rank : -rank;
            if (matches >= need) {
                if (count == -1) {
                    single = idx;
                    break;
                }
                sv_add_int(&tr, idx);
                found++;
                if (count != 0 && found == count) break;
            }
        }
    }
    if (count == -1) {
        if (single >= 0) sv_add_int(&c->r, single);
        else sv_add_null(&c->r);
    } else {
        sv_add_array(&c->r, found);
        sv_buf_append(c->r.out, tmp.data, tmp.len);
    }
    sv_buf_free(&tmp);
}

static void lmove_generic(sv_ctx *c, sv_str src, sv_str dst, int from_head, int to_head)
{
    sv_entry *se;
    int r = sv_db_get_typed(c, src, SV_T_LIST, &se);
    if (r == 0) sv_add_null(&c->r);
    if (r != 1) return;
    sv_entry *de;
    int dr = sv_db_get_typed(c, dst, SV_T_LIST, &de);
    if (dr < 0) return;
    sv_list *sl = se->val;
    sv_blob *b = from_head ? pop_head(sl) : pop_tail(sl);
    sv_add_bulk(&c->r, b->data, b->len);
    sv_list *dl;
    if (dr == 0) {
        /* src != dst here: a same-key move finds src itself */
        dl = (sv_list *)sv_obj_new(SV_T_LIST);
        sv_db_add(c->sh, dst, &dl->h);
        se = sv_dict_find(&c->sh->keys, src.p, src.len);
    } else {
        dl = de->val;
    }
    if (to_head) push_head(dl, b);
    else push_tail(dl, b);
    sv_db_delete_if_empty(c->sh, se);
}

static int parse_where(sv_ctx *c, sv_str a, int *head)
{
    if (sv_eq(a, "left")) *head = 1;
    else if (sv_eq(a, "right")) *head = 0;
    else {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return 0;
    }
    return 1;
}

void sv_cmd_lmove(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    int from, to;
    if (!parse_where(c, argv[3], &from) || !parse_where(c, argv[4], &to)) return;
    lmove_generic(c, argv[1], argv[2], from, to);
}

void sv_cmd_rpoplpush(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    lmove_generic(c, argv[1], argv[2], 0, 1);
}

/* LMPOP numkeys key... LEFT|RIGHT [COUNT n]: pops from the first non-empty list. */
void sv_cmd_lmpop(sv_ctx *c, int argc, sv_str *argv)
{
    sv_mpop o;
    if (!sv_parse_mpop(c, argc, argv, 1, "left", "right", &o)) return;
    for (long long k = 0; k < o.numkeys; k++) {
        sv_entry *e = NULL;
        int r = sv_db_get_typed(c, argv[2 + k], SV_T_LIST, &e);
        if (r < 0) return;
        if (r == 0) continue;
        sv_list *l = e->val;
        long long n = (size_t)o.count > l->len ? (long long)l->len : o.count;
        sv_add_array(&c->r, 2);
        sv_add_bulk(&c->r, argv[2 + k].p, argv[2 + k].len);
        sv_add_array(&c->r, n);
        while (n--) {
            sv_blob *b = o.which == 0 ? pop_head(l) : pop_tail(l);
            sv_add_bulk(&c->r, b->data, b->len);
            free(b);
        }
        sv_db_delete_if_empty(c->sh, e);
        sv_signal_modified_key(c->sh, argv[2 + k]); /* the key popped from (.touch NONE) */
        return;
    }
    sv_add_null_array(&c->r);
}
