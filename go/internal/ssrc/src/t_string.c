/* t_string: strings and counters with Redis 7.0 semantics. GET and SET allocate
 * nothing per request beyond the stored value: SET over an existing string of a
 * similar size reuses its allocation. */
#include <limits.h>
#include <math.h>

#include "server.h"
#include "notify.h"

#define OBJ_NX (1 << 0)
#define OBJ_XX (1 << 1)
#define OBJ_EX (1 << 2)
#define OBJ_PX (1 << 3)
#define OBJ_KEEPTTL (1 << 4)
#define OBJ_GET (1 << 5)
#define OBJ_EXAT (1 << 6)
#define OBJ_PXAT (1 << 7)
#define OBJ_PERSIST (1 << 8)

/* Stores val at key (string), reusing the old allocation when it fits well. */
static sv_entry *store_string(sv_shard *sh, sv_str key, const char *p, size_t n, int keepttl)
{
    sv_entry *ex = NULL;
    sv_entry *e = sv_dict_add(&sh->keys, key.p, key.len, &ex);
    if (e) {
        e->val = sv_string_new(p, n);
        sv_obj_stored(sh->now_ms, e->val);
        sh->slot_keys[sl__key_slot(key.p, key.len)]++;
        sv_notify(sh, SV_N_NEW, "new", key);
        return e;
    }
    sv_string *old = ex->val;
    if (old->h.type == SV_T_STRING && old->cap >= n && old->cap <= n * 2 + 64) {
        memmove(old->data, p, n);
        old->len = n;
    } else {
        sv_obj_free(ex->val);
        ex->val = sv_string_new(p, n);
    }
    sv_obj_stored(sh->now_ms, ex->val);
    if (sv_db_expired(sh, ex)) { /* replaced: logged as expired first, then as Redis a new key */
        sv_db_note_expired(sh, ex);
        sv_notify(sh, SV_N_NEW, "new", key);
    }
    if (!keepttl || sv_db_expired(sh, ex)) sv_db_persist(sh, ex);
    return ex;
}

/* Returns 1 if the key holds a string (*s set), 0 if missing, -1 after WRONGTYPE. */
static int get_string(sv_ctx *c, sv_str key, sv_string **s, int count_hit)
{
    sv_entry *e = count_hit ? sv_db_lookup(c->sh, key) : sv_db_lookup_write(c->sh, key);
    if (!e) return 0;
    if (((sv_obj *)e->val)->type != SV_T_STRING) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        return -1;
    }
    *s = e->val;
    return 1;
}

void sv_cmd_get(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_string *s = NULL;
    int r = get_string(c, argv[1], &s, 1);
    if (r == 0) sv_add_null(&c->r);
    else if (r == 1) sv_add_bulk(&c->r, s->data, s->len);
}

/* Redis's parseExtendedStringArgumentsOrReply; is_set: SET (else GETEX). */
static int parse_ext(sv_ctx *c, int argc, sv_str *argv, int start, int is_set, int *flags, sv_str **expire)
{
    *flags = 0;
    *expire = NULL;
    for (int j = start; j < argc; j++) {
        sv_str *next = j == argc - 1 ? NULL : &argv[j + 1];
        int f = *flags;
        if (sv_eq(argv[j], "nx") && !(f & OBJ_XX) && is_set) *flags |= OBJ_NX;
        else if (sv_eq(argv[j], "xx") && !(f & OBJ_NX) && is_set) *flags |= OBJ_XX;
        else if (sv_eq(argv[j], "get") && is_set) *flags |= OBJ_GET;
        else if (sv_eq(argv[j], "keepttl") && !(f & (OBJ_PERSIST | OBJ_EX | OBJ_EXAT | OBJ_PX | OBJ_PXAT)) && is_set)
            *flags |= OBJ_KEEPTTL;
        else if (sv_eq(argv[j], "persist") && !is_set && !(f & (OBJ_EX | OBJ_EXAT | OBJ_PX | OBJ_PXAT | OBJ_KEEPTTL)))
            *flags |= OBJ_PERSIST;
        else if (sv_eq(argv[j], "ex") && !(f & (OBJ_KEEPTTL | OBJ_PERSIST | OBJ_EXAT | OBJ_PX | OBJ_PXAT)) && next) {
            *flags |= OBJ_EX; *expire = next; j++;
        } else if (sv_eq(argv[j], "px") && !(f & (OBJ_KEEPTTL | OBJ_PERSIST | OBJ_EX | OBJ_EXAT | OBJ_PXAT)) && next) {
            *flags |= OBJ_PX; *expire = next; j++;
        } else if (sv_eq(argv[j], "exat") && !(f & (OBJ_KEEPTTL | OBJ_PERSIST | OBJ_EX | OBJ_PX | OBJ_PXAT)) && next) {
            *flags |= OBJ_EXAT; *expire = next; j++;
        } else if (sv_eq(argv[j], "pxat") && !(f & (OBJ_KEEPTTL | OBJ_PERSIST | OBJ_EX | OBJ_EXAT | OBJ_PX)) && next) {
            *flags |= OBJ_PXAT; *expire = next; j++;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return 0;
        }
    }
    return 1;
}

/* Redis's getExpireMillisecondsOrReply: absolute ms or replies an error. */
static int expire_ms(sv_ctx *c, sv_str *expire, int flags, const char *cmd, int64_t *out)
{
    long long v;
    if (!sv_get_ll(c, *expire, &v)) return 0;
    int seconds = flags & (OBJ_EX | OBJ_EXAT);
    if (v <= 0 || (seconds && v > LLONG_MAX / 1000)) goto bad;
    if (seconds) v *= 1000;
    if (flags & (OBJ_EX | OBJ_PX)) {
        long long now = c->sh->now_ms;
        if (v > LLONG_MAX - now) goto bad;
        v += now;
    }
    *out = v;
    return 1;
bad:
    sv_add_errorf(&c->r, "invalid expire time in '%s' command", cmd);
    return 0;
}

static void set_generic(sv_ctx *c, int flags, sv_str key, sv_str val, sv_str *expire, const char *cmd, int ok_reply)
{
    int64_t when = 0;
    if (expire && !expire_ms(c, expire, flags, cmd, &when)) return;
    sv_entry *found = sv_db_lookup_write(c->sh, key);
    if (flags & OBJ_GET) {
        if (found) {
            sv_obj *o = found->val;
            if (o->type != SV_T_STRING) {
                sv_add_error(&c->r, SV_ERR_WRONGTYPE);
                return;
            }
            sv_add_bulk(&c->r, ((sv_string *)o)->data, ((sv_string *)o)->len);
        } else {
            sv_add_null(&c->r);
            sv_notify(c->sh, SV_N_KEY_MISS, "keymiss", key); /* GET reads the key, as Redis */
        }
    }
    if (((flags & OBJ_NX) && found) || ((flags & OBJ_XX) && !found)) {
        if (!(flags & OBJ_GET)) sv_add_null(&c->r);
        return;
    }
    sv_entry *e = store_string(c->sh, key, val.p, val.len, flags & OBJ_KEEPTTL);
    if (when) sv_db_set_expire(c->sh, e, when);
    sv_notify(c->sh, SV_N_STRING, "set", key);
    if (when) sv_notify(c->sh, SV_N_GENERIC, "expire", key);
    if (!(flags & OBJ_GET) && ok_reply) sv_add_ok(&c->r);
}

void sv_cmd_set(sv_ctx *c, int argc, sv_str *argv)
{
    if (argc == 3) {
        /* the hot path: no option parsing, no second lookup */
        store_string(c->sh, argv[1], argv[2].p, argv[2].len, 0);
        sv_add_ok(&c->r);
        sv_notify(c->sh, SV_N_STRING, "set", argv[1]);
        return;
    }
    int flags;
    sv_str *expire;
    if (!parse_ext(c, argc, argv, 3, 1, &flags, &expire)) return;
    set_generic(c, flags, argv[1], argv[2], expire, "set", 1);
}

void sv_cmd_setnx(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    if (sv_db_lookup_write(c->sh, argv[1])) {
        sv_add_int(&c->r, 0);
        return;
    }
    store_string(c->sh, argv[1], argv[2].p, argv[2].len, 0);
    sv_add_int(&c->r, 1);
}

void sv_cmd_setex(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    set_generic(c, OBJ_EX, argv[1], argv[3], &argv[2], "setex", 1);
}

void sv_cmd_psetex(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    set_generic(c, OBJ_PX, argv[1], argv[3], &argv[2], "psetex", 1);
}

void sv_cmd_getset(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    set_generic(c, OBJ_GET, argv[1], argv[2], NULL, "getset", 1);
}

void sv_cmd_getdel(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_string *s = NULL;
    int r = get_string(c, argv[1], &s, 1);
    if (r == 0) sv_add_null(&c->r);
    if (r != 1) return;
    sv_add_bulk(&c->r, s->data, s->len);
    sv_db_delete(c->sh, argv[1]);
}

void sv_cmd_getex(sv_ctx *c, int argc, sv_str *argv)
{
    int flags;
    sv_str *expire;
    int64_t when = 0;
    if (!parse_ext(c, argc, argv, 2, 0, &flags, &expire)) return;
    sv_entry *e = sv_db_lookup(c->sh, argv[1]);
    if (!e) {
        sv_add_null(&c->r);
        return;
    }
    sv_string *s = e->val;
    if (s->h.type != SV_T_STRING) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        return;
    }
    if (expire && !expire_ms(c, expire, flags, "getex", &when)) return;
    sv_add_bulk(&c->r, s->data, s->len);
    if (when) {
        if (when <= c->sh->now_ms && !c->sh->loading) sv_db_delete_entry(c->sh, e);
        else sv_db_set_expire(c->sh, e, when);
    } else if (flags & OBJ_PERSIST) {
        sv_db_persist(c->sh, e);
    }
}

void sv_cmd_mget(sv_ctx *c, int argc, sv_str *argv)
{
    sv_add_array(&c->r, argc - 1);
    for (int i = 1; i < argc; i++) {
        sv_entry *e = sv_db_lookup(c->sh, argv[i]);
        if (!e || ((sv_obj *)e->val)->type != SV_T_STRING) sv_add_null(&c->r);
        else sv_add_bulk(&c->r, ((sv_string *)e->val)->data, ((sv_string *)e->val)->len);
    }
}

static void mset_generic(sv_ctx *c, int argc, sv_str *argv, int nx, const char *name)
{
    if (argc % 2 == 0) {
        sv_add_arity_error(c, name);
        return;
    }
    if (nx) {
        for (int i = 1; i < argc; i += 2)
            if (sv_db_lookup_write(c->sh, argv[i])) {
                sv_add_int(&c->r, 0);
                return;
            }
    }
    for (int i = 1; i < argc; i += 2) {
        store_string(c->sh, argv[i], argv[i + 1].p, argv[i + 1].len, 0);
        sv_notify(c->sh, SV_N_STRING, "set", argv[i]);
    }
    if (nx) sv_add_int(&c->r, 1);
    else sv_add_ok(&c->r);
}

void sv_cmd_mset(sv_ctx *c, int argc, sv_str *argv) { mset_generic(c, argc, argv, 0, "mset"); }
void sv_cmd_msetnx(sv_ctx *c, int argc, sv_str *argv) { mset_generic(c, argc, argv, 1, "msetnx"); }

static int check_size(sv_ctx *c, long long size)
{
    if (size > SV_BULK_MAX) {
        sv_add_error(&c->r, "string exceeds maximum allowed size (proto-max-bulk-len)");
        return 0;
    }
    return 1;
}

static sv_string *string_reserve(sv_entry *e, size_t need) { return sv_string_reserve(e, need); }

void sv_cmd_append(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_string *s = NULL;
    int r = get_string(c, argv[1], &s, 0);
    if (r < 0) return;
    if (r == 0) {
        store_string(c->sh, argv[1], argv[2].p, argv[2].len, 0);
        sv_add_int(&c->r, (long long)argv[2].len);
        return;
    }
    if (!check_size(c, (long long)(s->len + argv[2].len))) return;
    sv_entry *e = sv_db_lookup_write(c->sh, argv[1]);
    s = string_reserve(e, s->len + argv[2].len);
    memcpy(s->data + s->len, argv[2].p, argv[2].len);
    s->len += argv[2].len;
    sv_add_int(&c->r, (long long)s->len);
}

void sv_cmd_strlen(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_string *s = NULL;
    int r = get_string(c, argv[1], &s, 1);
    if (r == 0) sv_add_int(&c->r, 0);
    else if (r == 1) sv_add_int(&c->r, (long long)s->len);
}

void sv_cmd_getrange(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long start, end;
    if (!sv_get_ll(c, argv[2], &start) || !sv_get_ll(c, argv[3], &end)) return;
    sv_string *s = NULL;
    int r = get_string(c, argv[1], &s, 1);
    if (r == 0) {
        sv_add_bulk(&c->r, "", 0);
        return;
    }
    if (r < 0) return;
    long long len = (long long)s->len;
    if (start < 0 && end < 0 && start > end) {
        sv_add_bulk(&c->r, "", 0);
        return;
    }
    if (start < 0) start = len + start;
    if (end < 0) end = len + end;
    if (start < 0) start = 0;
    if (end < 0) end = 0;
    if (end >= len) end = len - 1;
    if (start > end || len == 0) sv_add_bulk(&c->r, "", 0);
    else sv_add_bulk(&c->r, s->data + start, (size_t)(end - start + 1));
}

void sv_cmd_setrange(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long offset;
    if (!sv_get_ll(c, argv[2], &offset)) return;
    if (offset < 0) {
        sv_add_error(&c->r, "offset is out of range");
        return;
    }
    sv_str v = argv[3];
    if (offset > SV_BULK_MAX) offset = SV_BULK_MAX + 1; /* still too big, and no overflow below */
    sv_string *s = NULL;
    int r = get_string(c, argv[1], &s, 0);
    if (r < 0) return;
    if (r == 0) {
        if (v.len == 0) {
            sv_add_int(&c->r, 0);
            return;
        }
        if (!check_size(c, offset + (long long)v.len)) return;
        sv_entry *e = store_string(c->sh, argv[1], "", 0, 0);
        s = string_reserve(e, (size_t)offset + v.len);
        memset(s->data, 0, (size_t)offset);
        memcpy(s->data + offset, v.p, v.len);
        s->len = (size_t)offset + v.len;
        sv_add_int(&c->r, (long long)s->len);
        return;
    }
    if (v.len == 0) {
        sv_add_int(&c->r, (long long)s->len);
        return;
    }
    if (!check_size(c, offset + (long long)v.len)) return;
    sv_entry *e = sv_db_lookup_write(c->sh, argv[1]);
    size_t need = (size_t)offset + v.len;
    if (need > s->len) {
        s = string_reserve(e, need);
        memset(s->data + s->len, 0, need - s->len);
        s->len = need;
    }
    memcpy(s->data + offset, v.p, v.len);
    sv_add_int(&c->r, (long long)s->len);
}

static void incr_generic(sv_ctx *c, sv_str key, long long incr)
{
    sv_entry *e = sv_db_lookup_write(c->sh, key);
    sv_string *s = e ? e->val : NULL;
    if (s && s->h.type != SV_T_STRING) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        return;
    }
    long long v = 0;
    if (s && !sv_str2ll(s->data, s->len, &v)) {
        sv_add_error(&c->r, SV_ERR_NOTINT);
        return;
    }
    if ((incr < 0 && v < 0 && incr < (LLONG_MIN - v)) || (incr > 0 && v > 0 && incr > (LLONG_MAX - v))) {
        sv_add_error(&c->r, SV_ERR_OVERFLOW);
        return;
    }
    v += incr;
    char tmp[24];
    size_t n = sv_ll2str(tmp, v);
    if (s && s->cap >= n) {
        /* the counter is rewritten in place: no second lookup, no allocation */
        memcpy(s->data, tmp, n);
        s->len = n;
    } else {
        store_string(c->sh, key, tmp, n, 1);
    }
    sv_add_int(&c->r, v);
}

void sv_cmd_incr(sv_ctx *c, int argc, sv_str *argv) { (void)argc; incr_generic(c, argv[1], 1); }
void sv_cmd_decr(sv_ctx *c, int argc, sv_str *argv) { (void)argc; incr_generic(c, argv[1], -1); }
void sv_cmd_incrby(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long v;
    if (sv_get_ll(c, argv[2], &v)) incr_generic(c, argv[1], v);
}
void sv_cmd_decrby(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long v;
    if (!sv_get_ll(c, argv[2], &v)) return;
    if (v == LLONG_MIN) {
        sv_add_error(&c->r, "decrement would overflow");
        return;
    }
    incr_generic(c, argv[1], -v);
}

void sv_cmd_incrbyfloat(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_string *s = NULL;
    int r = get_string(c, argv[1], &s, 0);
    if (r < 0) return;
    long double v = 0, incr;
    if ((r == 1 && !sv_str2ld(s->data, s->len, &v)) || !sv_str2ld(argv[2].p, argv[2].len, &incr)) {
        sv_add_error(&c->r, SV_ERR_NOTFLOAT);
        return;
    }
    v += incr;
    if (isnan(v) || isinf(v)) {
        sv_add_error(&c->r, "increment would produce NaN or Infinity");
        return;
    }
    char tmp[5200];
    size_t n = sv_ld2str(tmp, sizeof(tmp), v);
    store_string(c->sh, argv[1], tmp, n, 1);
    sv_add_bulk(&c->r, tmp, n);
}
