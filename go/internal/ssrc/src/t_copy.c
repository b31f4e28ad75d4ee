/* t_copy: COPY, and sv_obj_dup (a deep copy of any value) it is built on. */
#include "server.h"
#include "stream.h"

sv_obj *sv_obj_dup(const sv_obj *o)
{
    switch (o->type) {
    case SV_T_STRING: {
        const sv_string *s = (const sv_string *)o;
        return &sv_string_new(s->data, s->len)->h;
    }
    case SV_T_LIST: {
        const sv_list *l = (const sv_list *)o;
        sv_list *n = (sv_list *)sv_obj_new(SV_T_LIST);
        /* the ring's capacity is a power of two (t_list.c indexes with a mask) */
        size_t cap = 8;
        while (cap < l->len) cap *= 2;
        n->cap = cap;
        n->a = sv_malloc(sizeof(sv_blob *) * cap);
        for (size_t i = 0; i < l->len; i++) {
            const sv_blob *b = l->a[(l->head + i) & (l->cap - 1)];
            n->a[i] = sv_blob_new(b->data, b->len);
        }
        n->len = l->len;
        return &n->h;
    }
    case SV_T_HASH:
    case SV_T_SET: {
        sv_dict *from = o->type == SV_T_HASH ? &((sv_hashobj *)o)->d : &((sv_set *)o)->d;
        sv_obj *n = sv_obj_new(o->type);
        sv_dict *to = o->type == SV_T_HASH ? &((sv_hashobj *)n)->d : &((sv_set *)n)->d;
        sv_dict_iter it;
        sv_dict_iter_init(&it, from);
        for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
            sv_entry *c = sv_dict_add(to, m->key, m->klen, NULL);
            if (o->type == SV_T_HASH) {
                const sv_blob *b = m->val;
                c->val = sv_blob_new(b->data, b->len);
            }
        }
        return n;
    }
    case SV_T_ZSET: {
        const sv_zset *z = (const sv_zset *)o;
        sv_zset *n = (sv_zset *)sv_obj_new(SV_T_ZSET);
        for (sv_zsl_node *x = sv_zsl_first(&z->zsl); x; x = x->level[0].forward) {
            sv_entry *c = sv_dict_add(&n->d, x->e->key, x->e->klen, NULL);
            c->u.d = x->e->u.d;
            sv_zsl_insert(&n->zsl, c);
        }
        return &n->h;
    }
    case SV_T_STREAM:
        return &sv_stream_dup((const sv_stream *)o)->h;
    }
    return NULL;
}

/* COPY source destination [DB db] [REPLACE], as a Redis Cluster node: only db 0. */
void sv_cmd_copy(sv_ctx *c, int argc, sv_str *argv)
{
    int replace = 0;
    long long db = 0;
    for (int j = 3; j < argc; j++) {
        if (sv_eq(argv[j], "replace")) {
            replace = 1;
        } else if (sv_eq(argv[j], "db") && j + 1 < argc) {
            if (!sv_str2ll(argv[j + 1].p, argv[j + 1].len, &db) || db < INT32_MIN || db > INT32_MAX) {
                sv_add_error(&c->r, SV_ERR_NOTINT);
                return;
            }
            if (db < 0 || db >= 16) {
                sv_add_error(&c->r, "DB index is out of range");
                return;
            }
            j++;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    if (db != 0) {
        sv_add_error(&c->r, "Copying to another database is not allowed in cluster mode");
        return;
    }
    if (argv[1].len == argv[2].len && memcmp(argv[1].p, argv[2].p, argv[1].len) == 0) {
        sv_add_error(&c->r, "source and destination objects are the same");
        return;
    }
    sv_entry *src = sv_db_lookup(c->sh, argv[1]);
    if (!src) {
        sv_add_int(&c->r, 0);
        return;
    }
    int64_t expire = src->u.i;
    if (sv_db_lookup_write(c->sh, argv[2]) && !replace) {
        sv_add_int(&c->r, 0);
        return;
    }
    sv_entry *e = sv_db_set(c->sh, argv[2], sv_obj_dup(src->val), 0);
    if (expire) sv_db_set_expire(c->sh, e, expire);
    sv_signal_modified_key(c->sh, argv[2]); /* the destination only (.touch NONE) */
    sv_add_int(&c->r, 1);
}

/* MOVE: one database per node, as a Redis Cluster node answers. */
void sv_cmd_move(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_add_error(&c->r, "MOVE is not allowed in cluster mode");
}
