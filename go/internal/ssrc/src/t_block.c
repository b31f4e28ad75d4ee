/* t_block: the blocking list and sorted-set commands (BLPOP BRPOP BLMOVE BRPOPLPUSH
 * BLMPOP BZPOPMIN BZPOPMAX BZMPOP), Redis 7.0's replies and errors.
 *
 * Each is its non-blocking command when a key has something (the pop itself is
 * LPOP/LMOVE/ZPOPMIN run on the key, so the element and the events are theirs), and
 * otherwise parks on its keys (blocking.c) — or, where it may not block (inside
 * MULTI, during the log's replay), answers as on timeout. A parked one is run again
 * with the same arguments when one of its keys gets a value. */
#include "blocking.h"
#include "server.h"

/* BLMOVE/BRPOPLPUSH: a null bulk where they may not block (MULTI), but a null
 * array on timeout, as every blocked list command in Redis 7.0 */
static const sv_block_type bulk_type = {NULL, NULL, NULL};

/* Finds the first key with something to pop. Returns -1 after WRONGTYPE (a key of
 * another type before it), 0 when none has, 1 with *which set. */
static int first_nonempty(sv_ctx *c, sv_str *keys, int nkeys, int type, int *which)
{
    for (int i = 0; i < nkeys; i++) {
        sv_entry *e = NULL;
        int r = sv_db_get_typed(c, keys[i], type, &e);
        if (r < 0) return -1;
        if (r == 1) { /* an empty aggregate does not exist */
            *which = i;
            return 1;
        }
    }
    return 0;
}

/* Nothing to pop: park, or answer as on timeout where blocking is not allowed. */
static void block_or_null(sv_ctx *c, sv_str *keys, int nkeys, int64_t deadline, const sv_block_type *type)
{
    if (sv_block_allowed(c)) sv_block_on_keys(c, nkeys, keys, deadline, type, NULL);
    else if (type == &bulk_type) sv_add_null(&c->r);
    else sv_add_null_array(&c->r);
}

/* BLPOP/BRPOP key [key ...] timeout */
static void bpop_generic(sv_ctx *c, int argc, sv_str *argv, int head)
{
    int64_t deadline;
    if (!sv_block_parse_timeout(c, argv[argc - 1], &deadline)) return;
    int k;
    int r = first_nonempty(c, argv + 1, argc - 2, SV_T_LIST, &k);
    if (r < 0) return;
    if (r == 0) {
        block_or_null(c, argv + 1, argc - 2, deadline, NULL);
        return;
    }
    sv_add_array(&c->r, 2);
    sv_add_bulk(&c->r, argv[1 + k].p, argv[1 + k].len);
    sv_str pop[2] = {{head ? "lpop" : "rpop", 4}, argv[1 + k]};
    if (head) sv_cmd_lpop(c, 2, pop);
    else sv_cmd_rpop(c, 2, pop);
}

void sv_cmd_blpop(sv_ctx *c, int argc, sv_str *argv) { bpop_generic(c, argc, argv, 1); }
void sv_cmd_brpop(sv_ctx *c, int argc, sv_str *argv) { bpop_generic(c, argc, argv, 0); }

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

static void bmove_generic(sv_ctx *c, sv_str src, sv_str dst, int from, int to, int64_t deadline)
{
    sv_entry *e;
    int r = sv_db_get_typed(c, src, SV_T_LIST, &e);
    if (r < 0) return;
    if (r == 0) {
        block_or_null(c, &src, 1, deadline, &bulk_type);
        return;
    }
    sv_str mv[5] = {{"lmove", 5}, src, dst, {from ? "left" : "right", from ? 4 : 5}, {to ? "left" : "right", to ? 4 : 5}};
    sv_cmd_lmove(c, 5, mv);
}

/* BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout */
void sv_cmd_blmove(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    int from, to;
    int64_t deadline;
    if (!parse_where(c, argv[3], &from) || !parse_where(c, argv[4], &to)) return;
    if (!sv_block_parse_timeout(c, argv[5], &deadline)) return;
    bmove_generic(c, argv[1], argv[2], from, to, deadline);
}

/* BRPOPLPUSH source destination timeout */
void sv_cmd_brpoplpush(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    int64_t deadline;
    if (!sv_block_parse_timeout(c, argv[3], &deadline)) return;
    bmove_generic(c, argv[1], argv[2], 0, 1, deadline);
}

/* BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count] */
void sv_cmd_blmpop(sv_ctx *c, int argc, sv_str *argv)
{
    int64_t deadline;
    int k;
    sv_mpop o;
    /* as Redis: the keys and options first, then the timeout */
    if (!sv_parse_mpop(c, argc, argv, 2, "left", "right", &o)) return;
    int nkeys = (int)o.numkeys, head = o.which == 0;
    long long count = o.count;
    if (!sv_block_parse_timeout(c, argv[1], &deadline)) return;
    int r = first_nonempty(c, argv + 3, nkeys, SV_T_LIST, &k);
    if (r < 0) return;
    if (r == 0) {
        block_or_null(c, argv + 3, nkeys, deadline, NULL);
        return;
    }
    char num[24];
    size_t nl = sv_ll2str(num, count);
    sv_add_array(&c->r, 2);
    sv_add_bulk(&c->r, argv[3 + k].p, argv[3 + k].len);
    sv_str pop[3] = {{head ? "lpop" : "rpop", 4}, argv[3 + k], {num, nl}};
    if (head) sv_cmd_lpop(c, 3, pop);
    else sv_cmd_rpop(c, 3, pop);
}

/* BZPOPMIN/BZPOPMAX key [key ...] timeout: [key, member, score] */
static void bzpop_generic(sv_ctx *c, int argc, sv_str *argv, int max)
{
    int64_t deadline;
    if (!sv_block_parse_timeout(c, argv[argc - 1], &deadline)) return;
    int k;
    int r = first_nonempty(c, argv + 1, argc - 2, SV_T_ZSET, &k);
    if (r < 0) return;
    if (r == 0) {
        block_or_null(c, argv + 1, argc - 2, deadline, NULL);
        return;
    }
    sv_add_array(&c->r, 3);
    sv_add_bulk(&c->r, argv[1 + k].p, argv[1 + k].len);
    /* ZPOPMIN key answers [member, score]: its elements without the header */
    size_t at = c->r.out->len;
    sv_str pop[2] = {{max ? "zpopmax" : "zpopmin", 7}, argv[1 + k]};
    if (max) sv_cmd_zpopmax(c, 2, pop);
    else sv_cmd_zpopmin(c, 2, pop);
    char *nl = memchr(c->r.out->data + at, '\n', c->r.out->len - at);
    size_t hdr = (size_t)(nl - (c->r.out->data + at)) + 1;
    memmove(c->r.out->data + at, c->r.out->data + at + hdr, c->r.out->len - at - hdr);
    c->r.out->len -= hdr;
}

void sv_cmd_bzpopmin(sv_ctx *c, int argc, sv_str *argv) { bzpop_generic(c, argc, argv, 0); }
void sv_cmd_bzpopmax(sv_ctx *c, int argc, sv_str *argv) { bzpop_generic(c, argc, argv, 1); }

/* BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]: [key, [[member, score], ...]] */
void sv_cmd_bzmpop(sv_ctx *c, int argc, sv_str *argv)
{
    int64_t deadline;
    int k;
    sv_mpop o;
    /* as Redis: the keys and options first, then the timeout */
    if (!sv_parse_mpop(c, argc, argv, 2, "min", "max", &o)) return;
    int nkeys = (int)o.numkeys, min = o.which == 0;
    long long count = o.count;
    if (!sv_block_parse_timeout(c, argv[1], &deadline)) return;
    int r = first_nonempty(c, argv + 3, nkeys, SV_T_ZSET, &k);
    if (r < 0) return;
    if (r == 0) {
        block_or_null(c, argv + 3, nkeys, deadline, NULL);
        return;
    }
    sv_entry *e = sv_db_lookup_write(c->sh, argv[3 + k]);
    sv_zset *z = e->val;
    long long n = count > (long long)z->zsl.length ? (long long)z->zsl.length : count;
    sv_add_array(&c->r, 2);
    sv_add_bulk(&c->r, argv[3 + k].p, argv[3 + k].len);
    sv_add_array(&c->r, n);
    /* each ZPOPMIN key answers one [member, score] pair, the shape ZMPOP nests */
    sv_str pop[2] = {{min ? "zpopmin" : "zpopmax", 7}, argv[3 + k]};
    for (long long i = 0; i < n; i++) {
        if (min) sv_cmd_zpopmin(c, 2, pop);
        else sv_cmd_zpopmax(c, 2, pop);
    }
}
