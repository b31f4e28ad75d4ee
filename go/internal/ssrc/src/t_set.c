/* t_set: sets (a dict of members), Redis 7.0 semantics. */
#include <limits.h>

#include "server.h"
#include "notify.h"

static int get_set(sv_ctx *c, sv_str key, sv_entry **e, sv_set **s)
{
    int r = sv_db_get_typed(c, key, SV_T_SET, e);
    if (r == 1) *s = (*e)->val;
    return r;
}

static void add_empty_set(sv_ctx *c) { sv_add_set(&c->r, 0); }

static void reply_members(sv_ctx *c, sv_set *s)
{
    sv_add_set(&c->r, (long long)sv_dict_size(&s->d));
    sv_dict_iter it;
    sv_dict_iter_init(&it, &s->d);
    for (sv_entry *m; (m = sv_dict_iter_next(&it));) sv_add_bulk(&c->r, m->key, m->klen);
}

void sv_cmd_sadd(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r < 0) return;
    if (r == 0) {
        s = (sv_set *)sv_obj_new(SV_T_SET);
        sv_db_add(c->sh, argv[1], &s->h);
    }
    long long n = 0;
    for (int i = 2; i < argc; i++) n += sv_dict_add(&s->d, argv[i].p, argv[i].len, NULL) != NULL;
    sv_add_int(&c->r, n);
}

static int set_remove(sv_set *s, const char *p, size_t n)
{
    sv_entry *m = sv_dict_unlink(&s->d, p, n);
    if (!m) return 0;
    free(m);
    return 1;
}

void sv_cmd_srem(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    long long n = 0;
    for (int i = 2; i < argc; i++) n += set_remove(s, argv[i].p, argv[i].len);
    sv_dict_maybe_shrink(&s->d);
    sv_add_int(&c->r, n);
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_smembers(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r == 0) add_empty_set(c);
    if (r == 1) reply_members(c, s);
}

void sv_cmd_sismember(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r == 1) sv_add_int(&c->r, sv_dict_find(&s->d, argv[2].p, argv[2].len) != NULL);
}

void sv_cmd_smismember(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r < 0) return;
    sv_add_array(&c->r, argc - 2);
    for (int i = 2; i < argc; i++) sv_add_int(&c->r, r == 1 && sv_dict_find(&s->d, argv[i].p, argv[i].len) != NULL);
}

void sv_cmd_scard(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r == 1) sv_add_int(&c->r, (long long)sv_dict_size(&s->d));
}

void sv_cmd_spop(sv_ctx *c, int argc, sv_str *argv)
{
    long long count = 0;
    if (argc > 3) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (argc == 3 && !sv_get_ll_range(c, argv[2], 0, LONG_MAX, &count, "value is out of range, must be positive")) return;
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r < 0) return;
    if (argc == 2) {
        if (r == 0) {
            sv_add_null(&c->r);
            return;
        }
        sv_entry *m = sv_dict_random(&s->d);
        sv_add_bulk(&c->r, m->key, m->klen);
        set_remove(s, m->key, m->klen);
        sv_db_delete_if_empty(c->sh, e);
        return;
    }
    if (r == 0 || count == 0) {
        add_empty_set(c);
        return;
    }
    size_t size = sv_dict_size(&s->d);
    if ((size_t)count > size) count = (long long)size;
    sv_add_set(&c->r, count);
    for (long long i = 0; i < count; i++) {
        sv_entry *m = sv_dict_random(&s->d);
        sv_add_bulk(&c->r, m->key, m->klen);
        set_remove(s, m->key, m->klen);
    }
    sv_dict_maybe_shrink(&s->d);
    sv_db_delete_if_empty(c->sh, e);
}

void sv_cmd_srandmember(sv_ctx *c, int argc, sv_str *argv)
{
    long long count = 0;
    if (argc > 3) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (argc == 3) {
        if (!sv_get_ll(c, argv[2], &count)) return;
        if (count == LLONG_MIN) {
            sv_add_error(&c->r, "value is out of range, value must between -9223372036854775807 and 9223372036854775807");
            return;
        }
    }
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r < 0) return;
    if (argc == 2) {
        sv_entry *m = r ? sv_dict_random(&s->d) : NULL;
        if (m) sv_add_bulk(&c->r, m->key, m->klen);
        else sv_add_null(&c->r);
        return;
    }
    if (r == 0 || count == 0) {
        sv_add_empty_array(&c->r);
        return;
    }
    if (count < 0) {
        /* repeats allowed: streamed; stops at the output limit (the client is dropped) */
        sv_add_array(&c->r, -count);
        for (long long i = 0; i < -count; i++) {
            if ((long long)c->r.out->len > sv_cfg.output_limit) break;
            sv_entry *m = sv_dict_random(&s->d);
            sv_add_bulk(&c->r, m->key, m->klen);
        }
        return;
    }
    size_t n = 0, size = sv_dict_size(&s->d);
    sv_entry **pick = sv_malloc(size * sizeof(*pick));
    sv_dict_iter it;
    sv_dict_iter_init(&it, &s->d);
    for (sv_entry *m; (m = sv_dict_iter_next(&it));) pick[n++] = m;
    for (size_t i = n; i > 1; i--) {
        size_t j = sv_rand64() % i;
        sv_entry *t = pick[i - 1];
        pick[i - 1] = pick[j];
        pick[j] = t;
    }
    if ((size_t)count < n) n = (size_t)count;
    sv_add_array(&c->r, (long long)n);
    for (size_t i = 0; i < n; i++) sv_add_bulk(&c->r, pick[i]->key, pick[i]->klen);
    free(pick);
}

void sv_cmd_smove(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_shard *sh = c->sh;
    sv_entry *se = sv_db_lookup_write(sh, argv[1]);
    sv_entry *de = sv_db_lookup_write(sh, argv[2]);
    se = sv_dict_find(&sh->keys, argv[1].p, argv[1].len);
    if (!se) {
        sv_add_int(&c->r, 0);
        return;
    }
    if (((sv_obj *)se->val)->type != SV_T_SET || (de && ((sv_obj *)de->val)->type != SV_T_SET)) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        return;
    }
    sv_set *ss = se->val;
    if (se == de) {
        sv_add_int(&c->r, sv_dict_find(&ss->d, argv[3].p, argv[3].len) != NULL);
        return;
    }
    if (!set_remove(ss, argv[3].p, argv[3].len)) {
        sv_add_int(&c->r, 0);
        return;
    }
    sv_notify(sh, SV_N_SET, "srem", argv[1]);
    sv_db_delete_if_empty(sh, se);
    sv_set *ds;
    if (!de) {
        ds = (sv_set *)sv_obj_new(SV_T_SET);
        sv_db_add(sh, argv[2], &ds->h);
    } else {
        ds = de->val;
    }
    if (sv_dict_add(&ds->d, argv[3].p, argv[3].len, NULL)) sv_notify(sh, SV_N_SET, "sadd", argv[2]);
    sv_add_int(&c->r, 1);
}

enum { OP_INTER, OP_UNION, OP_DIFF };

/* Loads the sets named by keys; missing keys give NULL. Returns 0 after WRONGTYPE. */
static int load_sets(sv_ctx *c, int n, sv_str *keys, sv_set **sets)
{
    for (int i = 0; i < n; i++) {
        sv_entry *e = sv_db_lookup(c->sh, keys[i]);
        sets[i] = NULL;
        if (!e) continue;
        if (((sv_obj *)e->val)->type != SV_T_SET) {
            sv_add_error(&c->r, SV_ERR_WRONGTYPE);
            return 0;
        }
        sets[i] = e->val;
    }
    return 1;
}

/* Computes the operation into a new set (never NULL). limit: 0 = none (SINTERCARD). */
static sv_set *set_op(int op, int n, sv_set **sets, long long limit)
{
    sv_set *out = (sv_set *)sv_obj_new(SV_T_SET);
    if (op == OP_INTER) {
        int smallest = -1;
        for (int i = 0; i < n; i++) {
            if (!sets[i]) return out;
            if (smallest < 0 || sv_dict_size(&sets[i]->d) < sv_dict_size(&sets[smallest]->d)) smallest = i;
        }
        sv_dict_iter it;
        sv_dict_iter_init(&it, &sets[smallest]->d);
        for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
            int all = 1;
            for (int i = 0; i < n && all; i++)
                if (i != smallest && !sv_dict_find(&sets[i]->d, m->key, m->klen)) all = 0;
            if (all) {
                sv_dict_add(&out->d, m->key, m->klen, NULL);
                if (limit && (long long)sv_dict_size(&out->d) >= limit) break;
            }
        }
    } else if (op == OP_UNION) {
        for (int i = 0; i < n; i++) {
            if (!sets[i]) continue;
            sv_dict_iter it;
            sv_dict_iter_init(&it, &sets[i]->d);
            for (sv_entry *m; (m = sv_dict_iter_next(&it));) sv_dict_add(&out->d, m->key, m->klen, NULL);
        }
    } else {
        if (!sets[0]) return out;
        sv_dict_iter it;
        sv_dict_iter_init(&it, &sets[0]->d);
        for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
            int keep = 1;
            for (int i = 1; i < n && keep; i++)
                if (sets[i] && sv_dict_find(&sets[i]->d, m->key, m->klen)) keep = 0;
            if (keep) sv_dict_add(&out->d, m->key, m->klen, NULL);
        }
    }
    return out;
}

static void setop_command(sv_ctx *c, int n, sv_str *keys, int op, sv_str *dst)
{
    sv_set **sets = sv_malloc(sizeof(*sets) * (size_t)n);
    if (!load_sets(c, n, keys, sets)) {
        free(sets);
        return;
    }
    sv_set *out = set_op(op, n, sets, 0);
    free(sets);
    if (!dst) {
        reply_members(c, out);
        sv_obj_free(&out->h);
        return;
    }
    long long size = (long long)sv_dict_size(&out->d);
    if (size == 0) {
        sv_db_delete_notify(c->sh, *dst);
        sv_obj_free(&out->h);
    } else {
        sv_db_set(c->sh, *dst, &out->h, 0);
    }
    sv_add_int(&c->r, size);
}

void sv_cmd_sinter(sv_ctx *c, int argc, sv_str *argv) { setop_command(c, argc - 1, argv + 1, OP_INTER, NULL); }
void sv_cmd_sunion(sv_ctx *c, int argc, sv_str *argv) { setop_command(c, argc - 1, argv + 1, OP_UNION, NULL); }
void sv_cmd_sdiff(sv_ctx *c, int argc, sv_str *argv) { setop_command(c, argc - 1, argv + 1, OP_DIFF, NULL); }
void sv_cmd_sinterstore(sv_ctx *c, int argc, sv_str *argv) { setop_command(c, argc - 2, argv + 2, OP_INTER, &argv[1]); }
void sv_cmd_sunionstore(sv_ctx *c, int argc, sv_str *argv) { setop_command(c, argc - 2, argv + 2, OP_UNION, &argv[1]); }
void sv_cmd_sdiffstore(sv_ctx *c, int argc, sv_str *argv) { setop_command(c, argc - 2, argv + 2, OP_DIFF, &argv[1]); }

void sv_cmd_sintercard(sv_ctx *c, int argc, sv_str *argv)
{
    long long numkeys, limit = 0;
    if (!sv_get_ll_range(c, argv[1], 1, LONG_MAX, &numkeys, "numkeys should be greater than 0")) return;
    if (numkeys > argc - 2) {
        sv_add_error(&c->r, "Number of keys can't be greater than number of args");
        return;
    }
    for (int j = 2 + (int)numkeys; j < argc; j++) {
        int more = argc - 1 - j;
        if (sv_eq(argv[j], "limit") && more) {
            j++;
            if (!sv_get_ll_range(c, argv[j], 0, LONG_MAX, &limit, "LIMIT can't be negative")) return;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    int n = (int)numkeys;
    sv_set **sets = sv_malloc(sizeof(*sets) * (size_t)n);
    if (!load_sets(c, n, argv + 2, sets)) {
        free(sets);
        return;
    }
    sv_set *out = set_op(OP_INTER, n, sets, limit);
    free(sets);
    sv_add_int(&c->r, (long long)sv_dict_size(&out->d));
    sv_obj_free(&out->h);
}

void sv_cmd_sscan(sv_ctx *c, int argc, sv_str *argv)
{
    uint64_t cursor;
    if (!sv_parse_scan_cursor(c, argv[2], &cursor)) return;
    sv_entry *e = NULL;
    sv_set *s = NULL;
    int r = get_set(c, argv[1], &e, &s);
    if (r == 0) sv_add_empty_scan(c);
    if (r != 1) return;
    sv_scan_collection(c, &s->d, cursor, argc, argv, SV_T_SET);
}
