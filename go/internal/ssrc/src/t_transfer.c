/* t_transfer: the internal commands that move a whole value between shards, for the
 * cross-shard RENAME/RENAMENX of fwd_multi.c.
 *
 *   slotlane.take KEY
 *     -> nil when KEY is missing, else [type, pxat, element...] and KEY is deleted
 *        in the same step (so no other command sees the value in two places).
 *   slotlane.dump KEY
 *     -> the same without the delete (READONLY): a cross-shard command that reads
 *        keys of other shards computes on copies (fwd_multi.c, "gathered").
 *   slotlane.restore KEY TYPE PXAT [element...]
 *     -> OK; KEY is replaced by a TYPE value built from the elements, with absolute
 *        expiry PXAT in unix ms (0: none; already past: KEY ends up absent); no
 *        element: KEY is deleted.
 *
 * Elements: string: the value; list: the elements head to tail; hash: field value
 * pairs; set: members; zset: score member pairs (scores printed with 17 significant
 * digits, which read back to the same double). Both are WRITE commands whose argv
 * says everything they do, so a log of write commands replays them exactly; both
 * check their arguments, since any client can send them. */
#include <math.h>
#include <stdio.h>

#include "server.h"
#include "notify.h"

static const char *type_names[] = {"string", "list", "hash", "set", "zset"};

/* [type, pxat, element...] of a key's value (RESP2 or RESP3 alike: bulk strings). */
static void add_value(sv_ctx *c, sv_entry *e)
{
    sv_obj *o = e->val;
    if (o->type == SV_T_STREAM) {
        /* a stream does not travel as a flat element list (groups, PELs): the
         * cross-shard RENAME of a stream is refused, the key left as it is */
        sv_add_error(&c->r, "cross-shard RENAME of a stream is not supported by slotlane-server");
        return;
    }
    long long n = 0;
    switch (o->type) {
    case SV_T_STRING: n = 1; break;
    case SV_T_LIST: n = (long long)((sv_list *)o)->len; break;
    case SV_T_HASH: n = 2 * (long long)sv_dict_size(&((sv_hashobj *)o)->d); break;
    case SV_T_SET: n = (long long)sv_dict_size(&((sv_set *)o)->d); break;
    case SV_T_ZSET: n = 2 * (long long)((sv_zset *)o)->zsl.length; break;
    }
    sv_add_array(&c->r, 2 + n);
    sv_add_bulk_cstr(&c->r, type_names[o->type]);
    sv_add_bulk_ll(&c->r, e->u.i); /* absolute expiry in ms, 0 for none */
    switch (o->type) {
    case SV_T_STRING: {
        sv_string *s = (sv_string *)o;
        sv_add_bulk(&c->r, s->data, s->len);
        break;
    }
    case SV_T_LIST: {
        sv_list *l = (sv_list *)o;
        for (size_t i = 0; i < l->len; i++) {
            sv_blob *b = l->a[(l->head + i) % l->cap];
            sv_add_bulk(&c->r, b->data, b->len);
        }
        break;
    }
    case SV_T_HASH:
    case SV_T_SET: {
        sv_dict *d = o->type == SV_T_HASH ? &((sv_hashobj *)o)->d : &((sv_set *)o)->d;
        sv_dict_iter it;
        sv_dict_iter_init(&it, d);
        for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
            sv_add_bulk(&c->r, m->key, m->klen);
            if (o->type == SV_T_HASH) {
                sv_blob *b = m->val;
                sv_add_bulk(&c->r, b->data, b->len);
            }
        }
        break;
    }
    case SV_T_ZSET: {
        sv_zset *z = (sv_zset *)o;
        for (sv_zsl_node *x = sv_zsl_first(&z->zsl); x; x = x->level[0].forward) {
            char num[64];
            int k = snprintf(num, sizeof(num), "%.17g", x->e->u.d);
            sv_add_bulk(&c->r, num, (size_t)k);
            sv_add_bulk(&c->r, x->e->key, x->e->klen);
        }
        break;
    }
    }
}

void sv_cmd_slotlane_take(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_entry *e = sv_db_lookup_write(c->sh, argv[1]);
    if (!e) {
        sv_add_null(&c->r);
        return;
    }
    add_value(c, e);
    sv_db_delete_entry(c->sh, e);
}

void sv_cmd_slotlane_dump(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    /* a step of a gathered command, whose own run fires its "keymiss" (fwd_multi.c) */
    sv_entry *e = sv_db_lookup_notouch(c->sh, argv[1]);
    if (!e) sv_add_null(&c->r);
    else add_value(c, e);
}

void sv_cmd_slotlane_rename_from(sv_ctx *c, int argc, sv_str *argv) { sv_cmd_slotlane_take(c, argc, argv); }

static void restore_value(sv_ctx *c, int argc, sv_str *argv);

/* As Redis's RENAME on the destination: the value restored, "new" if it was created,
 * then "rename_to" (the table's event); not the events of the command that built it */
void sv_cmd_slotlane_rename_to(sv_ctx *c, int argc, sv_str *argv)
{
    size_t mark = sv_notify_mark(c->sh);
    restore_value(c, argc, argv);
    sv_notify_drop_since(c->sh, mark, SV_N_NEW);
}

/* A step (a gathered command's write-back, a copy into its scratch keyspace): the
 * events are the command's, fired where it ran; the builder's own are dropped */
void sv_cmd_slotlane_restore(sv_ctx *c, int argc, sv_str *argv)
{
    size_t mark = sv_notify_mark(c->sh);
    restore_value(c, argc, argv);
    sv_notify_drop_since(c->sh, mark, 0);
}

static void restore_value(sv_ctx *c, int argc, sv_str *argv)
{
    sv_shard *sh = c->sh;
    int type = -1;
    for (int t = 0; t < 5; t++)
        if (sv_eq(argv[2], type_names[t])) type = t;
    if (type < 0) {
        sv_add_error(&c->r, "slotlane.restore: unknown type");
        return;
    }
    long long pxat;
    if (!sv_str2ll(argv[3].p, argv[3].len, &pxat) || pxat < 0) {
        sv_add_error(&c->r, "slotlane.restore: invalid expire time");
        return;
    }
    int nel = argc - 4;
    sv_str *el = argv + 4;
    if ((type == SV_T_STRING && nel > 1) || ((type == SV_T_HASH || type == SV_T_ZSET) && nel % 2)) {
        sv_add_error(&c->r, "slotlane.restore: wrong number of elements for the type");
        return;
    }
    if (type == SV_T_ZSET)
        for (int i = 0; i < nel; i += 2) {
            double d;
            if (!sv_str2d(el[i].p, el[i].len, &d)) {
                sv_add_error(&c->r, SV_ERR_NOTFLOAT);
                return;
            }
        }
    sv_db_delete(sh, argv[1]);
    if (nel > 0) {
        /* built by the ordinary command, so the value is exactly what it would make */
        static const char *builders[] = {"set", "rpush", "hset", "sadd", "zadd"};
        sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)(nel + 2));
        sub[0].p = builders[type];
        sub[0].len = strlen(builders[type]);
        sub[1] = argv[1];
        memcpy(sub + 2, el, sizeof(sv_str) * (size_t)nel);
        sv_buf scratch = {0};
        sv_ctx inner = {.sh = sh, .sess = c->sess, .r = {&scratch, 2}, .noroute = 1};
        const sv_cmd *cmd = sv_cmd_lookup(sub[0].p, sub[0].len);
        cmd->fn(&inner, nel + 2, sub);
        free(sub);
        int failed = scratch.len && scratch.data[0] == '-';
        if (failed) sv_add_raw(&c->r, scratch.data, scratch.len);
        sv_buf_free(&scratch);
        if (failed) return;
        if (pxat > 0) {
            sv_entry *e = sv_db_lookup_write(sh, argv[1]);
            if (e && pxat <= sh->now_ms) sv_db_delete_entry(sh, e);
            else if (e) sv_db_set_expire(sh, e, pxat);
        }
    }
    sv_add_ok(&c->r);
}
