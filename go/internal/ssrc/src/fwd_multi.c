/* fwd_multi: see fwd_multi.h. A coordinator runs rounds: it issues the requests of
 * a round (a request for a key this shard owns runs at once, the others go to their
 * owners), and when every reply of the round is in, it looks at them and issues
 * the next round or writes the client's reply. */
#include "fwd_multi.h"

#include <limits.h>

#include "blocking.h"
#include "fwd.h"
#include "notify.h"

enum { OP_MSETNX, OP_RENAME, OP_RENAMENX, OP_LMOVE, OP_SMOVE, OP_WATCH, OP_SINTER, OP_SUNION, OP_SDIFF, OP_SINTERCARD,
       OP_GATHER, OP_XREAD };

typedef struct coord {
    sv_conn *c;
    struct sv_pend *p;
    int op;
    int store;  /* set operations: the *STORE form (argv[1] is the destination) */
    int proto;  /* the client's, for the final reply */
    int stage;
    int done;
    int argc;
    sv_str *argv; /* a private copy of the command */
    int nreq, outstanding, cap;
    sv_buf *rep;  /* the replies of the current round, by request */
    sv_buf hold;  /* a reply kept across rounds (the taken value, the popped element) */
    sv_buf err;   /* LMOVE/SMOVE: the error replied after a push-back */
    int from_head, to_head; /* LMOVE */
    long long limit;        /* SINTERCARD */
    int nsrc, src0;         /* set operations: source keys argv[src0 .. src0+nsrc-1] */
    int *kp;                /* the key positions in argv (later commands wait on them) */
    int nk;
    int readonly;           /* SINTER SUNION SDIFF SINTERCARD: later reads need not wait */
    long long stored;       /* *STORE: the result's cardinality */
    const sv_cmd *cmd;      /* OP_GATHER: the command run on the copies */
    int *uk;                /* OP_GATHER: argv index of each distinct key */
    int nuk;
    /* XREAD / XREADGROUP: keys argv[sarg ..], IDs after them; one part per owner shard */
    int sarg, nstreams;
    int group_cmd, block;
    sv_str group;           /* XREADGROUP's group (in argv) */
    int *pk;                /* the part of each stream */
    int npart;
    int powner[SV_MAX_SHARDS];
    char answered[SV_MAX_SHARDS];
    sv_str *ids;            /* the ID of each stream sent to its part (`$` resolved) */
    char (*idbuf)[48];
    sv_waiter *local_w;     /* the part parked on this shard, while it is */
    int local_step;
    int cancelling;         /* the first part answered: the others are being released */
} coord;

/* ---- a RESP2 reply, as the steps produce them ---- */

typedef struct rv {
    char t;      /* + - : $ * or 'n' (nil) */
    long long i; /* ':' */
    sv_str s;    /* '+' text, '$' bytes, '-' the whole line with CRLF */
    sv_str *a;   /* '*': elements (bulk strings; p NULL for a nil element) */
    long long na;
} rv;

static int read_line(const char *p, const char *end, long long *v, const char **next)
{
    const char *e = p;
    while (e + 1 < end && !(e[0] == '\r' && e[1] == '\n')) e++;
    if (e + 1 >= end) return 0;
    *next = e + 2;
    return sv_str2ll(p, (size_t)(e - p), v);
}

static int read_bulk(const char **pp, const char *end, sv_str *out)
{
    const char *p = *pp;
    long long n;
    if (p >= end || *p != '$' || !read_line(p + 1, end, &n, &p)) return 0;
    if (n < 0) {
        out->p = NULL;
        out->len = 0;
    } else {
        if ((size_t)(end - p) < (size_t)n + 2) return 0;
        out->p = p;
        out->len = (size_t)n;
        p += n + 2;
    }
    *pp = p;
    return 1;
}

/* Returns 0 when the reply is not what a step can answer (a bug, not input). */
static int parse(const sv_buf *b, rv *v)
{
    memset(v, 0, sizeof(*v));
    if (!b->len) return 0;
    const char *p = b->data, *end = b->data + b->len, *next;
    v->t = p[0];
    switch (p[0]) {
    case '-':
        v->s.p = p;
        v->s.len = b->len;
        return 1;
    case '+':
        v->s.p = p + 1;
        v->s.len = b->len >= 3 ? b->len - 3 : 0;
        return 1;
    case ':':
        return read_line(p + 1, end, &v->i, &next);
    case '$':
        if (!read_bulk(&p, end, &v->s)) return 0;
        if (!v->s.p) v->t = 'n';
        return 1;
    case '*':
        if (!read_line(p + 1, end, &v->na, &p)) return 0;
        if (v->na < 0) {
            v->t = 'n';
            return 1;
        }
        if ((size_t)v->na > b->len) return 0;
        v->a = sv_malloc(sizeof(sv_str) * (size_t)(v->na + 1));
        for (long long k = 0; k < v->na; k++)
            if (!read_bulk(&p, end, &v->a[k])) {
                free(v->a);
                v->a = NULL;
                return 0;
            }
        return 1;
    }
    return 0;
}

/* ---- rounds ---- */

static int owner_of(sv_str key) { return sv_slot_owner(sl__key_slot(key.p, key.len)); }

static sv_str lit(const char *s) { return (sv_str){s, strlen(s)}; }

static void req_to(coord *co, int owner, int argc, sv_str *argv);

/* Issues one request of the current round to the owner of its key (argv[1]). */
static void req(coord *co, int argc, sv_str *argv) { req_to(co, owner_of(argv[1]), argc, argv); }

/* ... or to a given shard. */
static void req_to(coord *co, int owner, int argc, sv_str *argv)
{
    if (co->nreq == co->cap) { /* cannot happen: rounds are sized at the start */
        co->cap *= 2;
        co->rep = sv_realloc(co->rep, sizeof(sv_buf) * (size_t)co->cap);
        memset(co->rep + co->nreq, 0, sizeof(sv_buf) * (size_t)(co->cap - co->nreq));
    }
    int i = co->nreq++;
    co->rep[i].len = 0;
    sv_shard *sh = co->c->sh;
    if (owner == sh->index) {
        sv_session s;
        memset(&s, 0, sizeof(s));
        s.id = co->c->sess.id;
        s.proto = 2;
        sv_ctx ctx = {.sh = sh, .sess = &s, .r = {&co->rep[i], 2}, .noroute = 0};
        sv_execute(&ctx, argc, argv);
    } else {
        co->outstanding++;
        sv_fwd_coord_send(co->c, co->p, i, owner, argc, argv);
    }
}

static void round_begin(coord *co) { co->nreq = 0; }

static void finish(coord *co)
{
    co->done = 1;
    sv_fwd_coord_finish(co->c, co->p);
    if (co->c->blk_coord == co) sv_fwd_coord_unhold(co->c); /* a blocking XREAD: the connection goes on */
}

static sv_reply out(coord *co) { return (sv_reply){sv_fwd_coord_out(co->p), co->proto}; }

static void reply_raw(coord *co, sv_str s)
{
    sv_buf_append(sv_fwd_coord_out(co->p), s.p, s.len);
    finish(co);
}

static void reply_error(coord *co, const char *msg)
{
    sv_reply r = out(co);
    sv_add_error(&r, msg);
    finish(co);
}

static void reply_int(coord *co, long long v)
{
    sv_reply r = out(co);
    sv_add_int(&r, v);
    finish(co);
}

/* A reply a step cannot give (a bug): the client gets an error, never a crash. */
static void internal_error(coord *co)
{
    reply_error(co, "internal error in a cross-shard step");
}

/* Keeps reply i across rounds (the next round reuses the buffers). */
static void keep(coord *co, int i)
{
    sv_buf_free(&co->hold);
    co->hold = co->rep[i];
    memset(&co->rep[i], 0, sizeof(sv_buf));
}

/* ---- the commands ---- */

static void step_msetnx(coord *co)
{
    int n = sv_cfg.shards;
    if (co->stage == 1 || co->stage == 2) {
        long long sum = 0;
        for (int i = 0; i < co->nreq; i++) {
            rv v;
            if (!parse(&co->rep[i], &v) || (v.t != ':' && v.t != '+' && v.t != '-')) { internal_error(co); return; }
            if (v.t == '-') { reply_raw(co, v.s); return; }
            sum += v.i;
        }
        if (co->stage == 2) { reply_int(co, 1); return; }
        if (sum > 0) { reply_int(co, 0); return; }
    }
    /* stage 0: EXISTS of each owner's keys; stage 1: MSET of each owner's pairs */
    int per = co->stage == 0 ? 1 : 2;
    sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)co->argc);
    round_begin(co);
    for (int t = 0; t < n; t++) {
        int m = 1;
        for (int k = 1; k + 1 < co->argc; k += 2)
            if (owner_of(co->argv[k]) == t)
                for (int s = 0; s < per; s++) sub[m++] = co->argv[k + s];
        if (m == 1) continue;
        sub[0] = lit(co->stage == 0 ? "slotlane.exists" : "mset");
        req(co, m, sub);
    }
    free(sub);
    co->stage++;
}

static void step_rename(coord *co)
{
    sv_str src = co->argv[1], dst = co->argv[2];
    rv v, w;
    switch (co->stage) {
    case 0:
        round_begin(co);
        if (co->op == OP_RENAMENX) {
            req(co, 2, (sv_str[]){lit("slotlane.exists"), src});
            req(co, 2, (sv_str[]){lit("slotlane.exists"), dst});
            co->stage = 1;
        } else {
            req(co, 2, (sv_str[]){lit("slotlane.rename_from"), src});
            co->stage = 2;
        }
        return;
    case 1:
        if (!parse(&co->rep[0], &v) || !parse(&co->rep[1], &w) || v.t != ':' || w.t != ':') { internal_error(co); return; }
        if (v.i == 0) { reply_error(co, SV_ERR_NOSUCHKEY); return; }
        if (w.i > 0) { reply_int(co, 0); return; }
        round_begin(co);
        req(co, 2, (sv_str[]){lit("slotlane.rename_from"), src});
        co->stage = 2;
        return;
    case 2: {
        keep(co, 0);
        if (!parse(&co->hold, &v)) { internal_error(co); return; }
        if (v.t == 'n') { reply_error(co, SV_ERR_NOSUCHKEY); return; }
        if (v.t == '-') { reply_raw(co, v.s); return; }
        if (v.t != '*' || v.na < 2) {
            free(v.a);
            { internal_error(co); return; }
        }
        /* [type, pxat, elements...] -> slotlane.rename_to dst type pxat elements... */
        sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)(v.na + 2));
        sub[0] = lit("slotlane.rename_to");
        sub[1] = dst;
        memcpy(sub + 2, v.a, sizeof(sv_str) * (size_t)v.na);
        round_begin(co);
        req(co, (int)v.na + 2, sub);
        free(sub);
        free(v.a);
        co->stage = 3;
        return;
    }
    default:
        if (!parse(&co->rep[0], &v)) { internal_error(co); return; }
        if (v.t == '-') { reply_raw(co, v.s); return; }
        if (co->op == OP_RENAMENX) { reply_int(co, 1); return; }
        sv_reply r = out(co);
        sv_add_ok(&r);
        finish(co);
    }
}

/* LMOVE/RPOPLPUSH (list) and SMOVE (set): the destination's type, then take from
 * the source (its own reply covers a missing or wrong-typed source), then add to
 * the destination; a destination that changed type meanwhile gets the element back
 * at the source. Two rounds usually; a wrong-typed destination needs the source's
 * type too (a missing source answers nil / 0 before any type error, as Redis). */
static void step_move(coord *co)
{
    int list = co->op == OP_LMOVE;
    sv_str src = co->argv[1], dst = co->argv[2];
    const char *tname = list ? "list" : "set";
    rv v, w;
    switch (co->stage) {
    case 0:
        round_begin(co);
        req(co, 2, (sv_str[]){lit("slotlane.type"), dst});
        co->stage = 1;
        return;
    case 1:
        if (!parse(&co->rep[0], &w) || w.t != '+') { internal_error(co); return; }
        round_begin(co);
        if (!sv_eq(w.s, "none") && !sv_eq(w.s, tname)) {
            req(co, 2, (sv_str[]){lit("slotlane.type"), src});
            co->stage = 5;
            return;
        }
        if (list) req(co, 2, (sv_str[]){lit(co->from_head ? "lpop" : "rpop"), src});
        else req(co, 3, (sv_str[]){lit("srem"), src, co->argv[3]});
        co->stage = 2;
        return;
    case 2:
        keep(co, 0);
        if (!parse(&co->hold, &v)) { internal_error(co); return; }
        if (v.t == '-') { reply_raw(co, v.s); return; } /* the source's WRONGTYPE */
        if (list && v.t == 'n') {                  /* no source */
            sv_reply r = out(co);
            sv_add_null(&r);
            { finish(co); return; }
        }
        if (!list && v.t == ':' && v.i == 0) { reply_int(co, 0); return; }
        if ((list && v.t != '$') || (!list && v.t != ':')) { internal_error(co); return; }
        round_begin(co);
        if (list) req(co, 3, (sv_str[]){lit(co->to_head ? "lpush" : "rpush"), dst, v.s});
        else req(co, 3, (sv_str[]){lit("sadd"), dst, co->argv[3]});
        co->stage = 3;
        return;
    case 3:
        if (!parse(&co->rep[0], &w)) { internal_error(co); return; }
        if (w.t == ':') {
            if (!list) { reply_int(co, 1); return; }
            parse(&co->hold, &v);
            sv_reply r = out(co);
            sv_add_bulk(&r, v.s.p, v.s.len);
            { finish(co); return; }
        }
        if (w.t != '-') { internal_error(co); return; }
        sv_log(SV_LOG_VERBOSE, "cross-shard %s: the destination changed type meanwhile, element returned",
               list ? "LMOVE" : "SMOVE");
        sv_buf_append(&co->err, w.s.p, w.s.len);
        parse(&co->hold, &v);
        round_begin(co);
        if (list) req(co, 3, (sv_str[]){lit(co->from_head ? "lpush" : "rpush"), src, v.s});
        else req(co, 3, (sv_str[]){lit("sadd"), src, co->argv[3]});
        co->stage = 4;
        return;
    case 4:
        { reply_raw(co, (sv_str){co->err.data, co->err.len}); return; }
    default: /* 5: the destination has another type */
        if (!parse(&co->rep[0], &v) || v.t != '+') { internal_error(co); return; }
        if (!sv_eq(v.s, "none")) { reply_error(co, SV_ERR_WRONGTYPE); return; }
        if (!list) { reply_int(co, 0); return; }
        sv_reply r = out(co);
        sv_add_null(&r);
        finish(co);
    }
}

static void step_setop(coord *co)
{
    if (co->stage == 0) {
        round_begin(co);
        for (int i = 0; i < co->nsrc; i++) req(co, 2, (sv_str[]){lit("smembers"), co->argv[co->src0 + i]});
        co->stage = 1;
        return;
    }
    rv v;
    if (co->stage == 2) {
        if (!parse(&co->rep[0], &v)) { internal_error(co); return; }
        if (v.t == '-') { reply_raw(co, v.s); return; }
        { reply_int(co, co->stored); return; }
    }
    /* stage 1: the members of every source, in key order; a WRONGTYPE is the reply */
    rv *sets = sv_calloc((size_t)co->nsrc, sizeof(rv));
    int ok = 1;
    for (int i = 0; i < co->nsrc && ok; i++)
        if (!parse(&co->rep[i], &sets[i]) || (sets[i].t != '*' && sets[i].t != '-')) ok = 0;
    if (!ok) {
        for (int i = 0; i < co->nsrc; i++) free(sets[i].a);
        free(sets);
        { internal_error(co); return; }
    }
    for (int i = 0; i < co->nsrc; i++)
        if (sets[i].t == '-') {
            sv_str e = sets[i].s;
            sv_buf_append(sv_fwd_coord_out(co->p), e.p, e.len);
            for (int k = 0; k < co->nsrc; k++) free(sets[k].a);
            free(sets);
            { finish(co); return; }
        }
    /* every member gets a mark (u.i); the result is the members whose mark is want:
     * intersection: the number of sources containing it (counted in key order);
     * union: 1; difference: 1 for the first source's members, 0 once seen later */
    sv_dict d;
    sv_dict_init(&d);
    int op = co->op;
    long long want = op == OP_SINTER || op == OP_SINTERCARD ? co->nsrc : 1;
    for (int i = 0; i < co->nsrc; i++) {
        rv *s = &sets[i];
        for (long long k = 0; k < s->na; k++) {
            sv_str m = s->a[k];
            if (op == OP_SUNION || i == 0) {
                sv_entry *ex = NULL;
                sv_entry *e = sv_dict_add(&d, m.p, m.len, &ex);
                if (e) e->u.i = 1;
            } else {
                sv_entry *e = sv_dict_find(&d, m.p, m.len);
                if (!e) continue;
                if (op == OP_SDIFF) e->u.i = 0;
                else if (e->u.i == i) e->u.i = i + 1;
            }
        }
    }
    long long count = 0;
    sv_dict_iter it;
    sv_dict_iter_init(&it, &d);
    for (sv_entry *e; (e = sv_dict_iter_next(&it));) count += e->u.i == want;
    if (op == OP_SINTERCARD) {
        if (co->limit && count > co->limit) count = co->limit;
        reply_int(co, count);
    } else if (!co->store) {
        sv_reply r = out(co);
        sv_add_set(&r, count);
        sv_dict_iter_init(&it, &d);
        for (sv_entry *e; (e = sv_dict_iter_next(&it));)
            if (e->u.i == want) sv_add_bulk(&r, e->key, e->klen);
        finish(co);
    } else if (!count) {
        /* an empty result deletes the destination: a DEL on its owner, which fires
         * "del" (and signals the key) only when there was one to delete, as Redis */
        co->stored = 0;
        round_begin(co);
        req(co, 2, (sv_str[]){lit("del"), co->argv[1]});
        co->stage = 2;
    } else {
        /* the destination replaced by the result */
        sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)(count + 4));
        sub[0] = lit("slotlane.restore");
        sub[1] = co->argv[1];
        sub[2] = lit("set");
        sub[3] = lit("0");
        int m = 4;
        sv_dict_iter_init(&it, &d);
        for (sv_entry *e; (e = sv_dict_iter_next(&it));)
            if (e->u.i == want) sub[m++] = (sv_str){e->key, e->klen};
        co->stored = count;
        /* the command's event, fired here: the restore step fires none */
        sv_notify(co->c->sh, SV_N_SET, co->cmd->name, co->argv[1]);
        round_begin(co);
        req(co, m, sub); /* copied into the message (or run here at once) */
        free(sub);
        co->stage = 2;
    }
    sv_dict_clear(&d, NULL, NULL);
    for (int i = 0; i < co->nsrc; i++) free(sets[i].a);
    free(sets);
}

/* OP_GATHER: every other multi-key command (the zset operations and their STORE
 * forms, ZRANGESTORE, ZMPOP, LMPOP, COPY, LCS, BITOP, PFCOUNT, PFMERGE, ...).
 * Round 1: slotlane.dump of each distinct key on its owner. Then the command runs
 * here, by its ordinary code, on a scratch keyspace holding copies of those values
 * (so every reply and error is the command's own). For a write command, each key
 * whose value or expiry the command changed in the scratch keyspace is written
 * back in round 2 (slotlane.restore, or DEL when it is gone); the client's reply
 * leaves after that round. */
static void gather_dump(sv_shard *sh, sv_str key, sv_buf *out)
{
    sv_session s;
    memset(&s, 0, sizeof(s));
    s.proto = 2;
    sv_ctx ctx = {.sh = sh, .sess = &s, .r = {out, 2}, .noroute = 1};
    sv_cmd_slotlane_dump(&ctx, 2, (sv_str[]){lit("slotlane.dump"), key});
}

static void step_gather(coord *co)
{
    rv v;
    if (co->stage == 0) {
        round_begin(co);
        for (int i = 0; i < co->nuk; i++) req(co, 2, (sv_str[]){lit("slotlane.dump"), co->argv[co->uk[i]]});
        co->stage = 1;
        return;
    }
    if (co->stage == 2) {
        for (int i = 0; i < co->nreq; i++)
            if (!parse(&co->rep[i], &v) || v.t != '+') { internal_error(co); return; }
        reply_raw(co, (sv_str){co->hold.data, co->hold.len});
        return;
    }
    /* stage 1: the copies into a scratch keyspace */
    sv_shard *sc = sv_calloc(1, sizeof(*sc));
    sv_dict_init(&sc->keys);
    sc->slot_keys = sv_calloc(SL_SLOTS, sizeof(uint32_t));
    sc->index = co->c->sh->index;
    sc->now_ms = co->c->sh->now_ms;
    sv_session s;
    memset(&s, 0, sizeof(s));
    s.id = co->c->sess.id;
    s.proto = 2;
    sv_buf *before = sv_calloc((size_t)co->nuk + 1, sizeof(sv_buf));
    sv_buf scratch = {0};
    int ok = 1;
    for (int i = 0; i < co->nuk && ok; i++) {
        if (!parse(&co->rep[i], &v) || (v.t != 'n' && v.t != '*')) ok = 0;
        else if (v.t == '*') {
            if (v.na < 2) ok = 0;
            else {
                sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)(v.na + 2));
                sub[0] = lit("slotlane.restore");
                sub[1] = co->argv[co->uk[i]];
                memcpy(sub + 2, v.a, sizeof(sv_str) * (size_t)v.na);
                scratch.len = 0;
                sv_ctx ctx = {.sh = sc, .sess = &s, .r = {&scratch, 2}, .noroute = 1};
                sv_cmd_slotlane_restore(&ctx, (int)v.na + 2, sub);
                free(sub);
                if (!scratch.len || scratch.data[0] != '+') ok = 0;
            }
        }
        free(v.a);
        if (ok) gather_dump(sc, co->argv[co->uk[i]], &before[i]);
    }
    if (ok) {
        /* the command itself, with the client's protocol */
        s.proto = co->proto;
        sv_buf_free(&co->hold);
        sv_ctx ctx = {.sh = sc, .sess = &s, .r = {&co->hold, co->proto}, .noroute = 1};
        /* its keyspace events, as sv_call would fire them, published from this shard
         * (the steps on the owners fire none of their own: slotlane.dump, .restore) */
        int reads = sv_notify_reads, ntf = sv_notify_flags != 0;
        sv_notify_reads = !(co->cmd->flags & SV_CMD_WRITE) || (co->cmd->pflags & SV_P_KEYMISS);
        if (ntf) sv_notify_begin(sc);
        co->cmd->fn(&ctx, co->argc, co->argv);
        if (ntf) sv_notify_end_on(&ctx, co->cmd, co->argc, co->argv, 0, co->c->sh);
        sv_notify_reads = reads;
        round_begin(co);
        if (co->cmd->flags & SV_CMD_WRITE)
            for (int i = 0; i < co->nuk; i++) {
                sv_str key = co->argv[co->uk[i]];
                scratch.len = 0;
                gather_dump(sc, key, &scratch);
                if (scratch.len == before[i].len && memcmp(scratch.data, before[i].data, scratch.len) == 0) continue;
                sv_buf b = {scratch.data, scratch.len, scratch.cap};
                if (!parse(&b, &v)) { ok = 0; break; }
                if (v.t == 'n') {
                    req(co, 4, (sv_str[]){lit("slotlane.restore"), key, lit("string"), lit("0")}); /* no element: deleted */
                } else {
                    sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)(v.na + 2));
                    sub[0] = lit("slotlane.restore");
                    sub[1] = key;
                    memcpy(sub + 2, v.a, sizeof(sv_str) * (size_t)v.na);
                    req(co, (int)v.na + 2, sub); /* copied into the message (or run here at once) */
                    free(sub);
                }
                free(v.a);
            }
    }
    for (int i = 0; i < co->nuk; i++) sv_buf_free(&before[i]);
    free(before);
    sv_buf_free(&scratch);
    sv_db_free(sc);
    sv_notify_free_shard(sc);
    free(sc);
    if (!ok) { internal_error(co); return; }
    if (co->nreq == 0) { reply_raw(co, (sv_str){co->hold.data, co->hold.len}); return; }
    co->stage = 2;
}

/* XREAD / XREADGROUP with keys on several shards, BLOCK or not.
 * Stage 0: slotlane.xprep of each owner's keys (one round): the per-key errors Redis
 * gives before serving anything (WRONGTYPE, NOGROUP), and each stream's last ID.
 * Stage 1: in key order, the first key error or ID error is the reply; otherwise one
 * part per owner shard — the command itself with that shard's keys and their IDs
 * (`$` as the last ID of round 0, so an entry added meanwhile is not missed). With
 * BLOCK a part with nothing to serve parks on its shard (the one on this shard too);
 * the first part to answer (served, timed out, unblocked) makes the others be released
 * (slotlane.xcancel: they answer nil unless they were served meanwhile). Stage 2,
 * every part in: the streams served, merged in key order (a part served meanwhile is
 * in the reply too, so no entry leaves a stream or enters a PEL without reaching the
 * client); else XREAD's first error, XREADGROUP's first error if nothing was
 * served; else nil. */

/* The end of one RESP element at p (NULL when it is not whole). */
static const char *skip_elem(const char *p, const char *end, int depth)
{
    if (p >= end || depth > 64) return NULL;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl || nl - p < 2) return NULL;
    long long n;
    char t = p[0];
    if (t != '$' && t != '=' && t != '!' && t != '*' && t != '~' && t != '>' && t != '%' && t != '|') return nl + 1;
    if (!sv_str2ll(p + 1, (size_t)(nl - 1 - (p + 1)), &n)) return NULL;
    if (n < 0) return nl + 1;
    const char *q = nl + 1;
    if (t == '$' || t == '=' || t == '!') return end - q < n + 2 ? NULL : q + n + 2;
    if (t == '%' || t == '|') n *= 2;
    for (long long i = 0; i < n && q; i++) q = skip_elem(q, end, depth + 1);
    return q;
}

static void xread_free_parts(coord *co)
{
    free(co->pk);
    free(co->ids);
    free(co->idbuf);
}

/* The part of each stream (in order of the owners' first keys), and per part its
 * request: the options as given, then its keys and their IDs. */
static sv_str *xread_part_argv(coord *co, int i, int *argc)
{
    int n = 0;
    for (int k = 0; k < co->nstreams; k++) n += co->pk[k] == i;
    sv_str *a = sv_malloc(sizeof(sv_str) * (size_t)(co->sarg + 2 * n));
    memcpy(a, co->argv, sizeof(sv_str) * (size_t)co->sarg);
    int m = co->sarg;
    for (int k = 0; k < co->nstreams; k++)
        if (co->pk[k] == i) a[m++] = co->argv[co->sarg + k];
    for (int k = 0; k < co->nstreams; k++)
        if (co->pk[k] == i) a[m++] = co->ids[k];
    *argc = m;
    return a;
}

static void xread_prep(coord *co)
{
    co->pk = sv_malloc(sizeof(int) * (size_t)co->nstreams);
    co->ids = sv_malloc(sizeof(sv_str) * (size_t)co->nstreams);
    co->idbuf = sv_malloc(48 * (size_t)co->nstreams);
    co->npart = 0;
    for (int k = 0; k < co->nstreams; k++) {
        int t = owner_of(co->argv[co->sarg + k]), i = 0;
        while (i < co->npart && co->powner[i] != t) i++;
        if (i == co->npart) co->powner[co->npart++] = t;
        co->pk[k] = i;
        co->ids[k] = co->argv[co->sarg + co->nstreams + k];
    }
    round_begin(co);
    sv_str *a = sv_malloc(sizeof(sv_str) * (size_t)(co->nstreams + 3));
    for (int i = 0; i < co->npart; i++) {
        int m = 0;
        a[m++] = lit("slotlane.xprep");
        a[m++] = lit(co->group_cmd ? "1" : "0");
        a[m++] = co->group;
        for (int k = 0; k < co->nstreams; k++)
            if (co->pk[k] == i) a[m++] = co->argv[co->sarg + k];
        req_to(co, co->powner[i], m, a);
    }
    free(a);
    co->stage = 1;
}

static const sv_block_owner local_part_ops;
static void xread_release(coord *co);

/* Stage 1 -> 2: the checks in key order, then the parts. */
static void xread_send(coord *co)
{
    rv *pr = sv_calloc((size_t)co->npart, sizeof(rv));
    int *at = sv_calloc((size_t)co->npart, sizeof(int));
    int ok = 1;
    for (int i = 0; i < co->npart && ok; i++) {
        int n = 0;
        for (int k = 0; k < co->nstreams; k++) n += co->pk[k] == i;
        ok = parse(&co->rep[i], &pr[i]) && pr[i].t == '*' && pr[i].na == n;
    }
    sv_session *sess = &co->c->sess;
    sv_reply r = out(co);
    sv_ctx ctx = {.sh = co->c->sh, .sess = sess, .r = r, .noroute = 1};
    int failed = !ok;
    for (int k = 0; k < co->nstreams && ok && !failed; k++) {
        sv_str st = pr[co->pk[k]].a[at[co->pk[k]]++];
        sv_str ida = co->argv[co->sarg + co->nstreams + k];
        if (st.len > 1 && st.p[0] == 'm') { /* a missing key's NOGROUP: Redis's lookup missed first */
            sv_notify(co->c->sh, SV_N_KEY_MISS, "keymiss", co->argv[co->sarg + k]);
            sv_buf_append(r.out, st.p + 1, st.len - 1);
            failed = 1;
        } else if (st.len && st.p[0] == '-') { /* the key's own error comes first */
            sv_buf_append(r.out, st.p, st.len);
            failed = 1;
        } else if (!sv_xread_check_id(&ctx, ida, co->group_cmd)) {
            failed = 1;
        } else if (ida.len == 1 && ida.p[0] == '$' && st.len < 48) {
            memcpy(co->idbuf[k], st.p, st.len);
            co->ids[k] = (sv_str){co->idbuf[k], st.len};
        }
    }
    for (int i = 0; i < co->npart; i++) free(pr[i].a);
    free(pr);
    free(at);
    if (!ok) { internal_error(co); return; }
    if (failed || co->c->closing) { finish(co); return; }
    /* the parts: rep[i] is part i's reply (the client's protocol) */
    round_begin(co);
    co->nreq = co->npart;
    co->stage = 2;
    sv_shard *sh = co->c->sh;
    for (int i = 0; i < co->npart; i++) {
        int argc;
        sv_str *a = xread_part_argv(co, i, &argc);
        co->rep[i].len = 0;
        co->answered[i] = 0;
        if (co->powner[i] != sh->index) {
            co->outstanding++;
            sv_fwd_coord_park(co->c, co->p, i, co->powner[i], argc, a, i > 0);
        } else {
            sv_session s;
            memset(&s, 0, sizeof(s));
            s.id = sess->id;
            s.proto = co->proto;
            sv_ctx lc = {.sh = sh, .sess = &s, .r = {&co->rep[i], co->proto}, .noroute = 1};
            lc.can_block = 1;
            lc.coord_part = 1;
            sv_execute(&lc, argc, a);
            if (lc.blocked) { /* parked here: answered through local_part_ops */
                co->outstanding++;
                co->local_w = lc.blocked;
                co->local_step = i;
                sv_block_attach(lc.blocked, &local_part_ops, co, argc, a, NULL);
                sv_waiter_set_part(lc.blocked, i > 0);
            } else {
                co->answered[i] = 1;
            }
        }
        free(a);
    }
    if (co->block) /* one answered at once (here): the rest is released */
        for (int i = 0; i < co->npart; i++)
            if (co->answered[i]) {
                xread_release(co);
                break;
            }
}

/* Releases the parts still parked (the one here at once, the others by message). */
static void xread_release(coord *co)
{
    if (co->cancelling || co->stage != 2) return;
    co->cancelling = 1;
    char id[24];
    sv_str ids = {id, sv_ll2str(id, (long long)co->c->sess.id)};
    for (int i = 0; i < co->npart; i++) {
        if (co->answered[i]) continue;
        if (co->powner[i] == co->c->sh->index) {
            if (co->local_w) { /* parked here: dropped, nothing was served */
                sv_block_cancel(co->local_w);
                co->local_w = NULL;
                co->answered[i] = 1;
                co->outstanding--;
            }
        } else {
            co->outstanding++;
            sv_fwd_coord_send(co->c, co->p, co->npart + i, co->powner[i], 2, (sv_str[]){lit("slotlane.xcancel"), ids});
        }
    }
}

/* A part answered (a step reply, or the part parked here). */
static void xread_answered(coord *co, int step)
{
    if (co->stage != 2 || step >= co->npart) return; /* xprep, or a release's :0/:1 */
    co->answered[step] = 1;
    if (co->block) xread_release(co);
}

typedef struct xitem {
    int k;
    const char *key, *ents;
    size_t klen, elen;
} xitem;

static void xread_merge(coord *co)
{
    xitem *it = sv_malloc(sizeof(xitem) * (size_t)(co->nstreams + 1));
    int nit = 0;
    const sv_buf *err = NULL;
    for (int i = 0; i < co->npart; i++) {
        const sv_buf *b = &co->rep[i];
        if (!b->len) continue; /* released without a reply (dropped client, shutdown) */
        const char *p = b->data, *end = b->data + b->len;
        if (p[0] == '-') {
            if (!err) err = b;
            continue;
        }
        long long n;
        const char *nl = memchr(p, '\n', b->len);
        if (p[0] == '_' || (nl && p[0] == '*' && p[1] == '-')) continue; /* nil */
        if (!nl || (p[0] != '*' && p[0] != '%') || !sv_str2ll(p + 1, (size_t)(nl - 1 - (p + 1)), &n) || n < 0) {
            free(it);
            internal_error(co);
            return;
        }
        p = nl + 1;
        int k = 0;
        for (long long j = 0; j < n; j++) {
            if (co->proto == 2) p = p && end - p >= 4 && memcmp(p, "*2\r\n", 4) == 0 ? p + 4 : NULL;
            sv_str key;
            const char *kp = p, *q = p;
            if (!q || !read_bulk(&q, end, &key) || !key.p) { p = NULL; break; }
            const char *e = skip_elem(q, end, 0);
            /* the stream of this name among the part's keys, after the previous one */
            while (k < co->nstreams && (co->pk[k] != i || !(co->argv[co->sarg + k].len == key.len && memcmp(co->argv[co->sarg + k].p, key.p, key.len) == 0))) k++;
            if (!e || k == co->nstreams || nit == co->nstreams) { p = NULL; break; }
            it[nit++] = (xitem){k, kp, q, (size_t)(q - kp), (size_t)(e - q)};
            k++;
            p = e;
        }
        if (!p) {
            free(it);
            internal_error(co);
            return;
        }
    }
    if (err && (!co->group_cmd || !nit)) { /* XREADGROUP: what was served is the reply */
        free(it);
        reply_raw(co, (sv_str){err->data, err->len});
        return;
    }
    sv_reply r = out(co);
    if (!nit) {
        free(it);
        sv_add_null_array(&r);
        finish(co);
        return;
    }
    for (int a = 1; a < nit; a++) /* key order (a few items) */
        for (int b = a; b > 0 && it[b - 1].k > it[b].k; b--) {
            xitem t = it[b];
            it[b] = it[b - 1];
            it[b - 1] = t;
        }
    if (co->proto == 2) sv_add_array(&r, nit);
    else sv_add_map(&r, nit);
    for (int a = 0; a < nit; a++) {
        if (co->proto == 2) sv_add_array(&r, 2);
        sv_add_raw(&r, it[a].key, it[a].klen);
        sv_add_raw(&r, it[a].ents, it[a].elen);
    }
    free(it);
    finish(co);
}

static void step_xread(coord *co)
{
    switch (co->stage) {
    case 0: xread_prep(co); return;
    case 1: xread_send(co); return;
    default: xread_merge(co); return;
    }
}

/* The part parked on this shard answered (served, timed out, CLIENT UNBLOCK); at
 * shutdown (CANCELLED) it only leaves. */
static sv_buf *local_part_buf(void *owner)
{
    coord *co = owner;
    return &co->rep[co->local_step];
}

static void run(coord *co);

static void local_part_done(void *owner, int how)
{
    coord *co = owner;
    sv_conn *c = co->c;
    struct sv_pend *p = co->p;
    co->local_w = NULL;
    co->outstanding--;
    co->answered[co->local_step] = 1;
    if (how == SV_BLOCK_CANCELLED) return;
    if (co->block) xread_release(co);
    run(co);
    sv_fwd_coord_settle(c, p);
}

static const sv_block_owner local_part_ops = {local_part_buf, local_part_done, NULL};

void sv_fwdm_closing(void *state)
{
    coord *co = state;
    if (co->op != OP_XREAD || co->done) return;
    xread_release(co); /* stage 1 sends no part: it sees the connection closing */
    run(co);
}

/* WATCH: stage 0 sends slotlane.watch to each owner of keys not watched yet (this
 * shard's own run at once); stage 1 keeps the versions they answered in the
 * connection's transaction state, so that EXEC can send them with the unit. A
 * connection closed meanwhile gets its watches released instead (stage 2). */
static int watch_key_here(coord *co, int k, int t)
{
    sv_str a = co->argv[k];
    if (owner_of(a) != t || sv_tx_watching(co->c->sess.tx, a)) return 0;
    for (int j = 1; j < k; j++) /* WATCH a a: once */
        if (co->argv[j].len == a.len && memcmp(co->argv[j].p, a.p, a.len) == 0) return 0;
    return 1;
}

static void step_watch(coord *co)
{
    int n = sv_cfg.shards;
    sv_tx *tx = sv_tx_get(&co->c->sess);
    sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)co->argc);
    if (co->stage == 0) {
        round_begin(co);
        for (int t = 0; t < n; t++) {
            int m = 1;
            for (int k = 1; k < co->argc; k++)
                if (watch_key_here(co, k, t)) sub[m++] = co->argv[k];
            if (m == 1) continue;
            sub[0] = lit("slotlane.watch");
            req(co, m, sub);
        }
        co->stage = 1;
        if (co->nreq == 0) reply_raw(co, lit("+OK\r\n"));
    } else if (co->stage == 1) {
        int i = 0;
        for (int t = 0; t < n; t++) {
            int nk = 0;
            for (int k = 1; k < co->argc; k++)
                if (watch_key_here(co, k, t)) sub[nk++] = co->argv[k];
            if (nk == 0) continue;
            rv v;
            if (!parse(&co->rep[i++], &v) || v.t != '*' || v.na != nk) {
                free(v.a);
                free(sub);
                internal_error(co);
                return;
            }
            for (int k = 0; k < nk; k++) {
                long long ver = 0;
                sv_str2ll(v.a[k].p, v.a[k].len, &ver);
                sv_tx_add_watch(tx, sub[k], t, (uint64_t)ver);
            }
            free(v.a);
        }
        if (!co->c->closing) {
            reply_raw(co, lit("+OK\r\n"));
        } else { /* nobody will EXEC: give them back */
            for (int i2 = 0; i2 < tx->nw; i2++) tx->w[i2].released = 1;
            tx->nreleased = tx->nw;
            round_begin(co);
            for (int t = 0; t < n; t++) {
                int k2 = 1;
                for (int i2 = 0; i2 < tx->nw; i2++)
                    if (tx->w[i2].shard == t) sub[k2++] = (sv_str){tx->w[i2].key, tx->w[i2].len};
                if (k2 == 1) continue;
                sub[0] = lit("slotlane.unwatch");
                req(co, k2, sub);
            }
            sv_tx_free(co->c->sh, &co->c->sess);
            co->stage = 2;
            if (co->nreq == 0) reply_raw(co, lit("+OK\r\n"));
        }
    } else {
        reply_raw(co, lit("+OK\r\n"));
    }
    free(sub);
}

/* Runs rounds while none of their requests is at another shard. */
static void run(coord *co)
{
    while (!co->done && co->outstanding == 0) {
        switch (co->op) {
        case OP_MSETNX: step_msetnx(co); break;
        case OP_RENAME:
        case OP_RENAMENX: step_rename(co); break;
        case OP_LMOVE:
        case OP_SMOVE: step_move(co); break;
        case OP_GATHER: step_gather(co); break;
        case OP_XREAD: step_xread(co); break;
        case OP_WATCH: step_watch(co); break;
        default: step_setop(co); break;
        }
    }
}

/* ---- entry points ---- */

/* The operation of a command by its .coord policy (and whether it stores). */
static int op_of(const sv_cmd *cmd, int *store)
{
    *store = cmd->coord == SV_COORD_SINTERSTORE || cmd->coord == SV_COORD_SUNIONSTORE ||
             cmd->coord == SV_COORD_SDIFFSTORE;
    switch (cmd->coord) {
    case SV_COORD_MSETNX: return OP_MSETNX;
    case SV_COORD_RENAME: return OP_RENAME;
    case SV_COORD_RENAMENX: return OP_RENAMENX;
    case SV_COORD_LMOVE:
    case SV_COORD_RPOPLPUSH: return OP_LMOVE;
    case SV_COORD_SMOVE: return OP_SMOVE;
    case SV_COORD_WATCH: return OP_WATCH;
    case SV_COORD_SINTERCARD: return OP_SINTERCARD;
    case SV_COORD_SINTER:
    case SV_COORD_SINTERSTORE: return OP_SINTER;
    case SV_COORD_SUNION:
    case SV_COORD_SUNIONSTORE: return OP_SUNION;
    case SV_COORD_SDIFF:
    case SV_COORD_SDIFFSTORE: return OP_SDIFF;
    case SV_COORD_GATHER: return OP_GATHER;
    case SV_COORD_XREAD: return OP_XREAD;
    }
    return -1;
}

int sv_fwdm_handles(const sv_cmd *cmd)
{
    int store;
    return op_of(cmd, &store) >= 0;
}

/* The argument errors Redis gives before looking at any key; 0 after replying one. */
static int check_args(sv_conn *c, coord *co, const sv_cmd *cmd)
{
    sv_session *sess = &c->sess;
    sv_ctx ctx = {.sh = c->sh, .sess = sess, .r = {sv_fwd_reply_buf(c), sess->proto}, .noroute = 0};
    sv_str *argv = co->argv;
    if (co->op == OP_LMOVE) {
        if (cmd->coord == SV_COORD_RPOPLPUSH) {
            co->from_head = 0;
            co->to_head = 1;
            return 1;
        }
        int h[2];
        for (int k = 0; k < 2; k++) {
            if (sv_eq(argv[3 + k], "left")) h[k] = 1;
            else if (sv_eq(argv[3 + k], "right")) h[k] = 0;
            else {
                sv_add_error(&ctx.r, SV_ERR_SYNTAX);
                return 0;
            }
        }
        co->from_head = h[0];
        co->to_head = h[1];
    } else if (co->op == OP_SINTERCARD) {
        long long numkeys; /* valid: the key positions came from it */
        sv_str2ll(argv[1].p, argv[1].len, &numkeys);
        for (int j = 2 + (int)numkeys; j < co->argc; j++) {
            if (sv_eq(argv[j], "limit") && co->argc - 1 - j > 0) {
                j++;
                if (!sv_get_ll_range(&ctx, argv[j], 0, LONG_MAX, &co->limit, "LIMIT can't be negative")) return 0;
            } else {
                sv_add_error(&ctx.r, SV_ERR_SYNTAX);
                return 0;
            }
        }
        co->src0 = 2;
        co->nsrc = (int)numkeys;
    } else if (co->op == OP_XREAD) {
        sv_xread_opts o;
        co->group_cmd = cmd->fn == sv_cmd_xreadgroup;
        if (!sv_xread_check(&ctx, co->argc, argv, co->group_cmd, &o)) return 0;
        co->sarg = o.sarg;
        co->nstreams = o.nstreams;
        co->block = o.block;
        co->group = o.group;
    } else if (co->op >= OP_SINTER && co->op != OP_GATHER) {
        co->src0 = co->store ? 2 : 1;
        co->nsrc = co->argc - co->src0;
    }
    return 1;
}

void sv_fwdm_free(void *state)
{
    coord *co = state;
    for (int i = 0; i < co->cap; i++) sv_buf_free(&co->rep[i]);
    free(co->rep);
    sv_buf_free(&co->hold);
    sv_buf_free(&co->err);
    free(co->kp);
    free(co->uk);
    if (co->local_w) sv_block_cancel(co->local_w);
    xread_free_parts(co);
    free(co->argv);
    free(co);
}

void sv_fwdm_start(sv_conn *c, const sv_cmd *cmd, int argc, sv_str *argv)
{
    coord *co = sv_calloc(1, sizeof(*co));
    co->c = c;
    co->op = op_of(cmd, &co->store);
    co->proto = c->sess.proto;
    /* the command's arguments are in the read buffer, which the next read reuses */
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) bytes += argv[i].len + 1;
    co->argv = sv_malloc(sizeof(sv_str) * (size_t)argc + bytes);
    char *p = (char *)(co->argv + argc);
    for (int i = 0; i < argc; i++) {
        if (argv[i].len) memcpy(p, argv[i].p, argv[i].len);
        co->argv[i].p = p;
        co->argv[i].len = argv[i].len;
        p += argv[i].len;
        *p++ = 0;
    }
    co->argc = argc;
    if (!check_args(c, co, cmd)) {
        co->cap = 0;
        sv_fwdm_free(co);
        return;
    }
    co->cap = argc + 1;
    if (co->op == OP_XREAD && co->cap < 2 * sv_cfg.shards + 1) co->cap = 2 * sv_cfg.shards + 1; /* parts, releases */
    co->rep = sv_calloc((size_t)co->cap, sizeof(sv_buf));
    co->kp = sv_malloc(sizeof(int) * (size_t)argc);
    co->nk = sv_cmd_keypos(cmd, argc, co->argv, co->kp, argc);
    co->cmd = cmd;
    if (co->op == OP_GATHER) {
        co->uk = sv_malloc(sizeof(int) * (size_t)(co->nk > 0 ? co->nk : 1));
        for (int i = 0; i < co->nk; i++) {
            sv_str a = co->argv[co->kp[i]];
            int dup = 0;
            for (int k = 0; k < co->nuk && !dup; k++) {
                sv_str b = co->argv[co->uk[k]];
                dup = a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
            }
            if (!dup) co->uk[co->nuk++] = co->kp[i];
        }
    }
    co->readonly = !(cmd->flags & SV_CMD_WRITE) && co->op != OP_WATCH; /* a later WATCH of its keys waits */
    co->p = sv_fwd_coord_slot(c, co);
    c->sh->stats.commands++;
    if (co->op == OP_XREAD && co->block) sv_fwd_coord_hold(c, co); /* blocked: as a parked command */
    run(co);
}

int sv_fwdm_conflicts(void *state, sv_str *argv, const int *kp, int nk, int readonly)
{
    coord *co = state;
    if (readonly && co->readonly) return 0;
    for (int i = 0; i < nk; i++)
        for (int k = 0; k < co->nk; k++) {
            sv_str a = argv[kp[i]], b = co->argv[co->kp[k]];
            if (a.len == b.len && memcmp(a.p, b.p, a.len) == 0) return 1;
        }
    return 0;
}

void sv_fwdm_reply(sv_conn *c, void *state, int step, sv_buf *reply)
{
    (void)c;
    coord *co = state;
    sv_buf t = co->rep[step];
    co->rep[step] = *reply;
    *reply = t;
    co->outstanding--;
    if (co->op == OP_XREAD) xread_answered(co, step);
    run(co);
}
