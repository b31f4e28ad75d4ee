/* t_stream: the stream commands (XADD XLEN XRANGE XREVRANGE XDEL XTRIM XREAD XGROUP
 * XREADGROUP XACK XPENDING XCLAIM XAUTOCLAIM XINFO XSETID) with Redis 7.0's replies
 * and errors, and the internal slotlane.xmeta / slotlane.xpel that a rewritten log
 * uses to recreate a stream exactly.
 *
 * Durability: XADD, XTRIM, XREADGROUP, XCLAIM and XAUTOCLAIM write their own log
 * records (their .aof policy is SV_AOF_NONE in cmdtable.c), so that replay is deterministic: XADD with the
 * ID it generated and `~` trimming as the exact trim it did; what XREADGROUP and
 * the claims (and XGROUP CREATECONSUMER) did to the consumers and pending entries
 * as slotlane.xpel (consumer, seen time,
 * delivery time and count of each entry), entries they dropped as XACK, and the
 * group's position as XGROUP SETID ... ENTRIESREAD. The other stream writes are
 * deterministic and logged as their argv. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>

#include "aof.h"
#include "blocking.h"
#include "notify.h"
#include "server.h"
#include "stream.h"
#include "stream_int.h"

static const char *ERR_BADID = "Invalid stream ID specified as stream command argument";

static int64_t now_ms(sv_ctx *c) { return c->sh->now_ms ? c->sh->now_ms : sv_mstime(); }

/* A keyspace event of the stream class (Redis's notifyKeyspaceEvent with
 * NOTIFY_STREAM), fired where Redis fires it (notify.c delivers it after the command). */
static void stream_event(sv_ctx *c, const char *event, sv_str key) { sv_notify(c->sh, SV_N_STREAM, event, key); }

/* ---- reply helpers ---- */

static void add_id(sv_ctx *c, const sv_sid *id)
{
    char b[48];
    sv_add_bulk(&c->r, b, sv_sid_fmt(b, id));
}

/* A length header inserted at a mark once the count is known (Redis's deferred
 * lengths). type: '*' array, '%' map (RESP2: array of 2n). */
static size_t mark(sv_ctx *c) { return c->r.out->len; }

static void set_len_at(sv_ctx *c, size_t at, char type, long long n)
{
    if (type == '%' && c->r.proto == 2) {
        type = '*';
        n *= 2;
    }
    char h[32];
    h[0] = type;
    size_t hl = 1 + sv_ll2str(h + 1, n);
    h[hl++] = '\r';
    h[hl++] = '\n';
    sv_buf *o = c->r.out;
    sv_buf_reserve(o, hl);
    memmove(o->data + at + hl, o->data + at, o->len - at);
    memcpy(o->data + at, h, hl);
    o->len += hl;
}

/* [id, [field, value, ...]] */
static void add_entry(sv_ctx *c, const char *e)
{
    sv_sid id = ent_id(e);
    uint32_t nf = ent_nfields(e);
    sv_add_array(&c->r, 2);
    add_id(c, &id);
    sv_add_array(&c->r, 2 * (long long)nf);
    const char *p = ENT_FIELDS(e);
    for (uint32_t i = 0; i < 2 * nf; i++) {
        sv_str s = ent_next_str(&p);
        sv_add_bulk(&c->r, s.p, s.len);
    }
}

static void err_badid(sv_ctx *c) { sv_add_error(&c->r, ERR_BADID); }

static int parse_id_or_reply(sv_ctx *c, sv_str a, sv_sid *id, uint64_t missing, int strict)
{
    if (sv_sid_parse(a, id, missing, strict, NULL)) return 1;
    err_badid(c);
    return 0;
}

/* The IDs argv[from..argc-1] (XDEL, XACK): a new array, or NULL after replying the
 * first bad one's error. */
static sv_sid *parse_id_list(sv_ctx *c, int argc, sv_str *argv, int from)
{
    sv_sid *ids = sv_malloc(sizeof(sv_sid) * (size_t)(argc - from));
    for (int j = from; j < argc; j++)
        if (!parse_id_or_reply(c, argv[j], &ids[j - from], 0, 1)) {
            free(ids);
            return NULL;
        }
    return ids;
}

/* Range bound with the "(" exclusive prefix (Redis's streamParseIntervalIDOrReply). */
static int parse_interval(sv_ctx *c, sv_str a, sv_sid *id, int *excl, uint64_t missing)
{
    *excl = a.len > 1 && a.p[0] == '(';
    if (*excl) return parse_id_or_reply(c, (sv_str){a.p + 1, a.len - 1}, id, missing, 1);
    return parse_id_or_reply(c, a, id, missing, 0);
}

static int parse_range(sv_ctx *c, sv_str sa, sv_str ea, sv_sid *start, sv_sid *end)
{
    int ex;
    if (!parse_interval(c, sa, start, &ex, 0)) return 0;
    if (ex && sid_incr(start) != 0) {
        sv_add_error(&c->r, "invalid start ID for the interval");
        return 0;
    }
    if (!parse_interval(c, ea, end, &ex, UINT64_MAX)) return 0;
    if (ex && sid_decr(end) != 0) {
        sv_add_error(&c->r, "invalid end ID for the interval");
        return 0;
    }
    return 1;
}

static int get_ll_msg(sv_ctx *c, sv_str a, long long *v, const char *msg)
{
    if (sv_str2ll(a.p, a.len, v)) return 1;
    sv_add_error(&c->r, msg ? msg : SV_ERR_NOTINT);
    return 0;
}

static void subcommand_error(sv_ctx *c, sv_str cmd, sv_str sub)
{
    char up[32];
    size_t n = cmd.len < sizeof(up) - 1 ? cmd.len : sizeof(up) - 1;
    for (size_t i = 0; i < n; i++) up[i] = (char)toupper((unsigned char)cmd.p[i]);
    up[n] = 0;
    sv_add_errorf(&c->r, "unknown subcommand or wrong number of arguments for '%.*s'. Try %s HELP.",
                  (int)(sub.len > 128 ? 128 : sub.len), sub.p, up);
}

static void nogroup_key(sv_ctx *c, sv_str key, sv_str group, const char *tail)
{
    sv_add_errorf(&c->r, "-NOGROUP No such key '%.*s' or consumer group '%.*s'%s", (int)key.len, key.p,
                  (int)group.len, group.p, tail);
}

/* The stream at key for a command that reads it: 1 found, 0 missing, -1 replied
 * WRONGTYPE. */
static int get_stream(sv_ctx *c, sv_str key, sv_stream **s)
{
    sv_entry *e;
    int r = sv_db_get_typed(c, key, SV_T_STREAM, &e);
    *s = r == 1 ? e->val : NULL;
    return r;
}

/* ---- logging ---- */

static int logging(sv_ctx *c) { return c->sh->aof && !c->sh->loading; }

/* argv under construction with its number texts in one arena (no pointer into it
 * is taken until the arena is complete). */
typedef struct logv {
    sv_str *v;
    int n, cap;
    char *txt;
    size_t tlen, tcap;
    size_t *toff; /* per argument: offset in txt + 1, or 0 for a borrowed string */
} logv;

static void lv_init(logv *l, int cap, size_t tcap)
{
    l->cap = cap;
    l->n = 0;
    l->v = sv_malloc(sizeof(sv_str) * (size_t)cap);
    l->toff = sv_malloc(sizeof(size_t) * (size_t)cap);
    l->tcap = tcap;
    l->tlen = 0;
    l->txt = sv_malloc(tcap ? tcap : 1);
}

static void lv_grow(logv *l)
{
    if (l->n < l->cap) return;
    l->cap *= 2;
    l->v = sv_realloc(l->v, sizeof(sv_str) * (size_t)l->cap);
    l->toff = sv_realloc(l->toff, sizeof(size_t) * (size_t)l->cap);
}

static void lv_str(logv *l, sv_str s)
{
    lv_grow(l);
    l->toff[l->n] = 0;
    l->v[l->n++] = s;
}

static void lv_cstr(logv *l, const char *s) { lv_str(l, (sv_str){s, strlen(s)}); }

static char *lv_room(logv *l, size_t n)
{
    if (l->tlen + n > l->tcap) {
        l->tcap = (l->tlen + n) * 2;
        l->txt = sv_realloc(l->txt, l->tcap);
    }
    lv_grow(l);
    l->toff[l->n] = l->tlen + 1;
    return l->txt + l->tlen;
}

static void lv_ll(logv *l, long long v)
{
    char *p = lv_room(l, 24);
    size_t n = sv_ll2str(p, v);
    l->v[l->n++].len = n;
    l->tlen += n;
}

static void lv_id(logv *l, const sv_sid *id)
{
    char *p = lv_room(l, 48);
    size_t n = sv_sid_fmt(p, id);
    l->v[l->n++].len = n;
    l->tlen += n;
}

static void lv_log_free(sv_ctx *c, logv *l)
{
    for (int i = 0; i < l->n; i++)
        if (l->toff[i]) l->v[i].p = l->txt + l->toff[i] - 1;
    sv_aof_log(c->sh, l->n, l->v);
    free(l->v);
    free(l->toff);
    free(l->txt);
}

static void log_setid(sv_ctx *c, sv_str key, const sv_cgroup *g)
{
    logv l;
    lv_init(&l, 7, 80);
    lv_cstr(&l, "XGROUP");
    lv_cstr(&l, "SETID");
    lv_str(&l, key);
    lv_str(&l, (sv_str){g->name, g->nlen});
    lv_id(&l, &g->last_id);
    lv_cstr(&l, "ENTRIESREAD");
    lv_ll(&l, g->entries_read);
    lv_log_free(c, &l);
}

/* slotlane.xpel KEY GROUP CONSUMER SEEN [ID DELIVERY-TIME DELIVERY-COUNT]... */
static void log_xpel(sv_ctx *c, sv_str key, const sv_cgroup *g, const sv_consumer *cons, sv_nack **nacks, size_t n)
{
    logv l;
    lv_init(&l, 5 + 3 * (int)n, 24 + 96 * n);
    lv_cstr(&l, "slotlane.xpel");
    lv_str(&l, key);
    lv_str(&l, (sv_str){g->name, g->nlen});
    lv_str(&l, (sv_str){cons->name, cons->nlen});
    lv_ll(&l, cons->seen_time);
    for (size_t i = 0; i < n; i++) {
        lv_id(&l, &nacks[i]->id);
        lv_ll(&l, nacks[i]->delivery_time);
        lv_ll(&l, (long long)nacks[i]->delivery_count);
    }
    lv_log_free(c, &l);
}

static void log_xack(sv_ctx *c, sv_str key, const sv_cgroup *g, const sv_sid *ids, size_t n)
{
    if (!n) return;
    logv l;
    lv_init(&l, 3 + (int)n, 48 * n);
    lv_cstr(&l, "XACK");
    lv_str(&l, key);
    lv_str(&l, (sv_str){g->name, g->nlen});
    for (size_t i = 0; i < n; i++) lv_id(&l, &ids[i]);
    lv_log_free(c, &l);
}

/* A growable list of nack pointers (what a command touched, for its log record). */
typedef struct nlist {
    sv_nack **a;
    size_t n, cap;
} nlist;

static void nl_push(nlist *l, sv_nack *x)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->a = sv_realloc(l->a, l->cap * sizeof(*l->a));
    }
    l->a[l->n++] = x;
}

/* ---- XADD / XTRIM argument parsing (Redis's streamParseAddOrTrimArgsOrReply) ---- */

typedef struct add_args {
    trim_args t;
    sv_sid id;
    int id_given, seq_given, nomkstream;
} add_args;

/* Returns the index of the ID (XADD) or argc (XTRIM), -1 after an error reply. */
static int parse_add_trim(sv_ctx *c, int argc, sv_str *argv, add_args *a, int xadd)
{
    memset(a, 0, sizeof(*a));
    int i = 2, limit_given = 0;
    for (; i < argc; i++) {
        int more = argc - 1 - i;
        sv_str o = argv[i];
        if (xadd && o.len == 1 && o.p[0] == '*') break;
        int maxlen = sv_eq(o, "maxlen"), minid = sv_eq(o, "minid");
        if ((maxlen || minid) && more) {
            if (a->t.strategy != TRIM_NONE) {
                sv_add_error(&c->r, "syntax error, MAXLEN and MINID options at the same time are not compatible");
                return -1;
            }
            a->t.approx = 0;
            sv_str nx = argv[i + 1];
            if (more >= 2 && nx.len == 1 && nx.p[0] == '~') {
                a->t.approx = 1;
                i++;
            } else if (more >= 2 && nx.len == 1 && nx.p[0] == '=') {
                i++;
            }
            if (maxlen) {
                if (!get_ll_msg(c, argv[i + 1], &a->t.maxlen, NULL)) return -1;
                if (a->t.maxlen < 0) {
                    sv_add_error(&c->r, "The MAXLEN argument must be >= 0.");
                    return -1;
                }
                a->t.strategy = TRIM_MAXLEN;
            } else {
                if (!parse_id_or_reply(c, argv[i + 1], &a->t.minid, 0, 1)) return -1;
                a->t.strategy = TRIM_MINID;
            }
            i++;
        } else if (sv_eq(o, "limit") && more) {
            if (!get_ll_msg(c, argv[i + 1], &a->t.limit, NULL)) return -1;
            if (a->t.limit < 0) {
                sv_add_error(&c->r, "The LIMIT argument must be >= 0.");
                return -1;
            }
            limit_given = 1;
            i++;
        } else if (xadd && sv_eq(o, "nomkstream")) {
            a->nomkstream = 1;
        } else if (xadd) {
            if (!sv_sid_parse(o, &a->id, 0, 1, &a->seq_given)) {
                err_badid(c);
                return -1;
            }
            a->id_given = 1;
            break;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return -1;
        }
    }
    if (a->t.limit && a->t.strategy == TRIM_NONE) {
        sv_add_error(&c->r, "syntax error, LIMIT cannot be used without specifying a trimming strategy");
        return -1;
    }
    if (!xadd && a->t.strategy == TRIM_NONE) {
        sv_add_error(&c->r, "syntax error, XTRIM must be called with a trimming strategy");
        return -1;
    }
    if (c->sh->loading) {
        a->t.limit = 0; /* the log holds exact trims */
    } else if (limit_given) {
        if (!a->t.approx) {
            sv_add_error(&c->r, "syntax error, LIMIT cannot be used without the special ~ option");
            return -1;
        }
    } else {
        a->t.limit = a->t.approx ? 100 * SV_SBLOCK_MAX : 0;
    }
    return i;
}

/* The trim as the log records it: exact, MAXLEN = length after / MINID = first ID. */
static void lv_trim(logv *l, const sv_stream *s, const add_args *a)
{
    if (a->t.strategy == TRIM_NONE) return;
    lv_cstr(l, a->t.strategy == TRIM_MAXLEN ? "MAXLEN" : "MINID");
    lv_cstr(l, "=");
    if (a->t.strategy == TRIM_MAXLEN) {
        lv_ll(l, a->t.approx ? (long long)s->length : a->t.maxlen);
    } else {
        sv_sid m = a->t.approx ? stream_edge(s, 1, 1) : a->t.minid;
        lv_id(l, &m);
    }
}

void sv_cmd_xadd(sv_ctx *c, int argc, sv_str *argv)
{
    add_args a;
    int idpos = parse_add_trim(c, argc, argv, &a, 1);
    if (idpos < 0) return;
    int fpos = idpos + 1;
    if (argc - fpos < 2 || (argc - fpos) % 2) {
        sv_add_arity_error(c, "xadd");
        return;
    }
    if (a.id_given && a.seq_given && a.id.ms == 0 && a.id.seq == 0) {
        sv_add_error(&c->r, "The ID specified in XADD must be greater than 0-0");
        return;
    }
    sv_entry *e;
    int r = sv_db_get_typed(c, argv[1], SV_T_STREAM, &e);
    if (r < 0) return;
    sv_stream *s;
    int created = 0;
    if (r == 0) {
        if (a.nomkstream) {
            sv_add_null(&c->r);
            return;
        }
        s = sv_stream_new();
        created = 1;
    } else {
        s = e->val;
    }
    if (s->last_id.ms == UINT64_MAX && s->last_id.seq == UINT64_MAX) {
        sv_add_error(&c->r, "The stream has exhausted the last possible ID, unable to add more items");
        if (created) sv_stream_free(s);
        return;
    }
    sv_sid id;
    int bad = 0;
    if (a.id_given) {
        if (a.seq_given) {
            id = a.id;
        } else if (s->last_id.ms == a.id.ms) {
            if (s->last_id.seq == UINT64_MAX) bad = 1;
            id = s->last_id;
            id.seq++;
        } else {
            id = a.id;
        }
    } else {
        uint64_t ms = (uint64_t)now_ms(c);
        if (ms > s->last_id.ms) {
            id.ms = ms;
            id.seq = 0;
        } else {
            id = s->last_id;
            sid_incr(&id);
        }
    }
    if (bad || sv_sid_cmp(&id, &s->last_id) <= 0) {
        sv_add_error(&c->r, "The ID specified in XADD is equal or smaller than the target stream top item");
        if (created) sv_stream_free(s);
        return;
    }
    if (stream_append(s, id, (argc - fpos) / 2, argv + fpos) != 0) {
        sv_add_error(&c->r, "Elements are too large to be stored");
        if (created) sv_stream_free(s);
        return;
    }
    if (created) sv_db_add(c->sh, argv[1], &s->h);
    add_id(c, &id);
    stream_event(c, "xadd", argv[1]);
    sv_signal_key_ready(c->sh, argv[1]); /* parked XREAD/XREADGROUP BLOCK on it try again */
    if (a.t.strategy != TRIM_NONE && stream_trim(s, &a.t)) stream_event(c, "xtrim", argv[1]);
    if (logging(c)) {
        logv l;
        lv_init(&l, argc + 4, 128);
        lv_cstr(&l, "XADD");
        lv_str(&l, argv[1]);
        if (a.nomkstream) lv_cstr(&l, "NOMKSTREAM");
        lv_trim(&l, s, &a);
        lv_id(&l, &id);
        for (int i = fpos; i < argc; i++) lv_str(&l, argv[i]);
        lv_log_free(c, &l);
    }
}

void sv_cmd_xtrim(sv_ctx *c, int argc, sv_str *argv)
{
    add_args a;
    if (parse_add_trim(c, argc, argv, &a, 0) < 0) return;
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    if (r == 0) {
        sv_add_int(&c->r, 0);
        return;
    }
    int64_t n = stream_trim(s, &a.t);
    if (n) {
        stream_event(c, "xtrim", argv[1]);
        if (logging(c)) {
            logv l;
            lv_init(&l, 6, 64);
            lv_cstr(&l, "XTRIM");
            lv_str(&l, argv[1]);
            lv_trim(&l, s, &a);
            lv_log_free(c, &l);
        }
    }
    sv_add_int(&c->r, n);
}

void sv_cmd_xlen(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r >= 0) sv_add_int(&c->r, r ? (long long)s->length : 0);
}

/* Entries of [start, end] (count 0: all), as an array. Returns how many. */
static size_t reply_range(sv_ctx *c, const sv_stream *s, const sv_sid *start, const sv_sid *end, size_t count, int rev)
{
    size_t at = mark(c), n = 0;
    siter it;
    siter_start(&it, s, start, end, rev);
    for (const char *e; (!count || n < count) && (e = siter_next(&it)); n++) add_entry(c, e);
    set_len_at(c, at, '*', (long long)n);
    return n;
}

static void xrange(sv_ctx *c, int argc, sv_str *argv, int rev)
{
    sv_sid start, end;
    if (!parse_range(c, rev ? argv[3] : argv[2], rev ? argv[2] : argv[3], &start, &end)) return;
    long long count = -1;
    for (int j = 4; j < argc; j++) {
        if (sv_eq(argv[j], "count") && argc - j - 1 >= 1) {
            if (!get_ll_msg(c, argv[j + 1], &count, NULL)) return;
            if (count < 0) count = 0;
            j++;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    if (r == 0) {
        sv_add_empty_array(&c->r);
        return;
    }
    if (count == 0) {
        sv_add_null_array(&c->r);
        return;
    }
    reply_range(c, s, &start, &end, count < 0 ? 0 : (size_t)count, rev);
}

void sv_cmd_xrange(sv_ctx *c, int argc, sv_str *argv) { xrange(c, argc, argv, 0); }
void sv_cmd_xrevrange(sv_ctx *c, int argc, sv_str *argv) { xrange(c, argc, argv, 1); }

void sv_cmd_xdel(sv_ctx *c, int argc, sv_str *argv)
{
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    if (r == 0) {
        sv_add_int(&c->r, 0);
        return;
    }
    sv_sid *ids = parse_id_list(c, argc, argv, 2);
    if (!ids) return;
    long long deleted = 0;
    int first = 0;
    for (int j = 0; j < argc - 2; j++) {
        if (!stream_delete(s, &ids[j])) continue;
        if (sv_sid_cmp(&ids[j], &s->first_id) == 0) first = 1;
        if (sv_sid_cmp(&ids[j], &s->max_deleted) > 0) s->max_deleted = ids[j];
        deleted++;
    }
    if (deleted) {
        if (s->length == 0) s->first_id = (sv_sid){0, 0};
        else if (first) s->first_id = stream_edge(s, 1, 0);
        stream_event(c, "xdel", argv[1]);
    }
    free(ids);
    sv_add_int(&c->r, deleted);
}

/* ---- consumer group arithmetic (Redis 7.0's lag and entries-read) ---- */

static int range_has_tombstones(const sv_stream *s, const sv_sid *start)
{
    static const sv_sid zero = {0, 0};
    if (!s->length || sv_sid_cmp(&s->max_deleted, &zero) == 0) return 0;
    if (sv_sid_cmp(&s->first_id, &s->max_deleted) > 0) return 0;
    sv_sid st = start ? *start : zero;
    return sv_sid_cmp(&st, &s->max_deleted) <= 0;
}

static int64_t estimate_distance(const sv_stream *s, const sv_sid *id)
{
    static const sv_sid zero = {0, 0};
    if (!s->entries_added) return 0;
    if (!s->length && sv_sid_cmp(id, &s->last_id) < 1) return (int64_t)s->entries_added;
    int cl = sv_sid_cmp(id, &s->last_id);
    if (cl == 0) return (int64_t)s->entries_added;
    if (cl > 0) return -1;
    int cf = sv_sid_cmp(id, &s->first_id);
    if (sv_sid_cmp(&s->max_deleted, &zero) == 0 || sv_sid_cmp(&s->max_deleted, &s->first_id) < 0) {
        if (cf < 0) return (int64_t)(s->entries_added - s->length);
        if (cf == 0) return (int64_t)(s->entries_added - s->length + 1);
    }
    return -1;
}

static void add_lag(sv_ctx *c, const sv_stream *s, const sv_cgroup *g)
{
    if (!s->entries_added) {
        sv_add_int(&c->r, 0);
    } else if (g->entries_read != -1 && !range_has_tombstones(s, &g->last_id)) {
        sv_add_int(&c->r, (long long)s->entries_added - g->entries_read);
    } else {
        int64_t er = estimate_distance(s, &g->last_id);
        if (er != -1) sv_add_int(&c->r, (long long)s->entries_added - er);
        else sv_add_null(&c->r);
    }
}

/* The group passes entry id (delivered for the first time). */
static void group_advance(const sv_stream *s, sv_cgroup *g, const sv_sid *id)
{
    if (g->entries_read != -1 && !range_has_tombstones(s, id)) g->entries_read++;
    else if (s->entries_added) g->entries_read = estimate_distance(s, id);
    g->last_id = *id;
}

/* ---- XREAD / XREADGROUP ---- */

static sv_consumer *consumer_lookup(sv_cgroup *g, sv_str name, int64_t now, int refresh)
{
    sv_consumer *cons = consumer_find(g, name, NULL);
    if (cons && refresh) cons->seen_time = now;
    return cons;
}

/* New entries after gt for a group: PEL entries for this consumer (unless noack). */
static size_t serve_group(sv_ctx *c, sv_str key, sv_stream *s, sv_cgroup *g, sv_consumer *cons, const sv_sid *gt,
                          size_t count, int noack, nlist *touched, int *moved)
{
    sv_sid start = *gt;
    sid_incr(&start);
    size_t at = mark(c), n = 0;
    int64_t now = now_ms(c);
    siter it;
    siter_start(&it, s, &start, NULL, 0);
    for (const char *e; (!count || n < count) && (e = siter_next(&it)); n++) {
        sv_sid id = ent_id(e);
        if (sv_sid_cmp(&id, &g->last_id) > 0) {
            group_advance(s, g, &id);
            *moved = 1;
        }
        add_entry(c, e);
        if (noack) continue;
        size_t pos;
        sv_nack *nk = pel_find(&g->pel, &id, &pos);
        if (!nk) {
            nk = sv_malloc(sizeof(*nk));
            nk->id = id;
            nk->consumer = cons;
            pel_insert(&g->pel, nk);
            pel_insert(&cons->pel, nk);
        } else {
            /* XGROUP SETID moved the group back: the entry changes owner */
            pel_remove(&nk->consumer->pel, &id);
            nk->consumer = cons;
            pel_insert(&cons->pel, nk);
        }
        nk->delivery_time = now;
        nk->delivery_count = 1;
        nl_push(touched, nk);
    }
    (void)key;
    set_len_at(c, at, '*', (long long)n);
    return n;
}

/* The consumer's own pending entries from start: entries deleted since show as nil. */
static size_t serve_history(sv_ctx *c, sv_stream *s, sv_consumer *cons, const sv_sid *start, size_t count,
                            nlist *touched)
{
    size_t at = mark(c), n = 0;
    int64_t now = now_ms(c);
    for (size_t i = pel_lower(&cons->pel, start); i < cons->pel.len && (!count || n < count); i++, n++) {
        sv_nack *nk = PEL_AT(&cons->pel, i);
        const char *e = stream_find(s, &nk->id, NULL, NULL);
        if (!e) {
            sv_add_array(&c->r, 2);
            add_id(c, &nk->id);
            sv_add_null_array(&c->r);
        } else {
            add_entry(c, e);
            nk->delivery_time = now;
            nk->delivery_count++;
            nl_push(touched, nk);
        }
    }
    set_len_at(c, at, '*', (long long)n);
    return n;
}

/* XREAD/XREADGROUP's options, then per key its type, group and ID, in Redis's order.
 * Without lookups (keys < 0): only the options and the IDs (cross-shard XREAD). */
typedef struct xread_args {
    long long timeout, count;
    int sarg, nstreams, noack, have_group;
    sv_str gname, cname;
} xread_args;

static int xread_options(sv_ctx *c, int argc, sv_str *argv, int group_cmd, xread_args *x)
{
    memset(x, 0, sizeof(*x));
    x->timeout = -1;
    for (int i = 1; i < argc; i++) {
        int more = argc - i - 1;
        sv_str o = argv[i];
        if (sv_eq(o, "block") && more) {
            i++;
            if (!get_ll_msg(c, argv[i], &x->timeout, "timeout is not an integer or out of range")) return 0;
            if (x->timeout < 0) {
                sv_add_error(&c->r, "timeout is negative");
                return 0;
            }

        } else if (sv_eq(o, "count") && more) {
            i++;
            if (!get_ll_msg(c, argv[i], &x->count, NULL)) return 0;
            if (x->count < 0) x->count = 0;
        } else if (sv_eq(o, "streams") && more) {
            x->sarg = i + 1;
            x->nstreams = argc - x->sarg;
            if (x->nstreams % 2) {
                sv_add_error(&c->r, "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.");
                return 0;
            }
            x->nstreams /= 2;
            break;
        } else if (sv_eq(o, "group") && more >= 2) {
            if (!group_cmd) {
                sv_add_error(&c->r, "The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
                return 0;
            }
            x->gname = argv[i + 1];
            x->cname = argv[i + 2];
            x->have_group = 1;
            i += 2;
        } else if (sv_eq(o, "noack")) {
            if (!group_cmd) {
                sv_add_error(&c->r, "The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
                return 0;
            }
            x->noack = 1;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return 0;
        }
    }
    if (x->sarg == 0) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return 0;
    }
    if (group_cmd && !x->have_group) {
        sv_add_error(&c->r, "Missing GROUP option for XREADGROUP");
        return 0;
    }
    return 1;
}

/* The ID argument of stream k (after its key was checked). */
static int xread_id(sv_ctx *c, sv_str ida, int group_cmd, const sv_stream *s, sv_sid *id)
{
    if (ida.len == 1 && ida.p[0] == '$') {
        if (group_cmd) {
            sv_add_error(&c->r, "The $ ID is meaningless in the context of XREADGROUP: you want to read the "
                                "history of this consumer by specifying a proper ID, or use the > ID to get "
                                "new messages. The $ ID would just return an empty result set.");
            return 0;
        }
        *id = s ? s->last_id : (sv_sid){0, 0};
    } else if (ida.len == 1 && ida.p[0] == '>') {
        if (!group_cmd) {
            sv_add_error(&c->r, "The > ID can be specified only when calling XREADGROUP using the GROUP "
                                "<group> <consumer> option.");
            return 0;
        }
        *id = (sv_sid){UINT64_MAX, UINT64_MAX};
    } else if (!parse_id_or_reply(c, ida, id, 0, 1)) {
        return 0;
    }
    return 1;
}

int sv_xread_check(sv_ctx *c, int argc, sv_str *argv, int group_cmd, sv_xread_opts *o)
{
    xread_args x;
    if (!xread_options(c, argc, argv, group_cmd, &x)) return 0;
    o->sarg = x.sarg;
    o->nstreams = x.nstreams;
    o->count = x.count;
    o->block = x.timeout != -1;
    o->group = x.gname;
    return 1;
}

int sv_xread_check_id(sv_ctx *c, sv_str ida, int group_cmd)
{
    sv_sid id;
    return xread_id(c, ida, group_cmd, NULL, &id);
}

/* A parked XREAD/XREADGROUP BLOCK keeps the IDs as they were resolved when it parked
 * (`$`: the stream's last ID then, as Redis); a retry (a write signalled one of its
 * keys) runs the command again with them. */
typedef struct xblock {
    int n;
    sv_sid ids[];
} xblock;

#define XREAD_BLOCKED_COUNT 1000

static _Thread_local const xblock *retry_ids; /* set while a parked command is tried again */

static void xread(sv_ctx *c, int argc, sv_str *argv, int group_cmd);

static void xblock_try(sv_ctx *c, sv_waiter *w, int argc, sv_str *argv)
{
    retry_ids = sv_waiter_priv(w);
    xread(c, argc, argv, argv[0].len == 10); /* XREADGROUP or XREAD */
    retry_ids = NULL;
}

static const sv_block_type xread_block = {xblock_try, NULL, free};

static void xread(sv_ctx *c, int argc, sv_str *argv, int group_cmd)
{
    xread_args x;
    if (!xread_options(c, argc, argv, group_cmd, &x)) return;
    long long timeout = x.timeout, count = x.count;
    int sarg = x.sarg, nstreams = x.nstreams, noack = x.noack, have_group = x.have_group;
    sv_str gname = x.gname, cname = x.cname;
    sv_sid *ids = sv_malloc(sizeof(sv_sid) * (size_t)nstreams);
    sv_cgroup **groups = sv_calloc((size_t)nstreams, sizeof(sv_cgroup *));
    for (int k = 0; k < nstreams; k++) {
        sv_str key = argv[sarg + k], ida = argv[sarg + nstreams + k];
        sv_stream *s;
        if (get_stream(c, key, &s) < 0) goto done;
        if (have_group) {
            if (!s || !(groups[k] = group_find(s, gname, NULL))) {
                /* XGROUP DESTROY (or the key went) while it waited; a coordinated
                 * BLOCK's part (its group was there at the check) counts as waiting */
                if (retry_ids || (c->coord_part && x.timeout != -1))
                    sv_add_error(&c->r, "-NOGROUP the consumer group this client was blocked on no longer exists");
                else
                    nogroup_key(c, key, gname, " in XREADGROUP with GROUP option");
                goto done;
            }
        }
        if (retry_ids && k < retry_ids->n) ids[k] = retry_ids->ids[k];
        else if (!xread_id(c, ida, group_cmd, s, &ids[k])) goto done;
    }
    /* A parked command served because a key got data serves that key alone, at most
     * 1000 entries without COUNT (Redis 7.0's serveClientsBlockedOnStreamKey and
     * XREAD_BLOCKED_DEFAULT_COUNT) */
    sv_str only = retry_ids ? sv_block_ready_key(c->sh) : (sv_str){NULL, 0};
    if (retry_ids && !count) count = XREAD_BLOCKED_COUNT;
    size_t top = mark(c);
    long long served = 0;
    int64_t now = now_ms(c);
    for (int k = 0; k < nstreams; k++) {
        sv_str key = argv[sarg + k];
        if (only.p && (served || key.len != only.len || memcmp(key.p, only.p, key.len) != 0)) continue;
        sv_entry *e = sv_db_lookup(c->sh, key);
        if (!e) continue;
        sv_stream *s = e->val;
        sv_sid gt = ids[k];
        int sync = 0, history = 0;
        if (groups[k]) {
            if (gt.ms != UINT64_MAX || gt.seq != UINT64_MAX) {
                sync = history = 1;
            } else if (s->length) {
                sv_sid maxid = stream_edge(s, 0, 0);
                if (sv_sid_cmp(&maxid, &groups[k]->last_id) > 0) {
                    sync = 1;
                    gt = groups[k]->last_id;
                }
            }
        } else if (s->length) {
            sv_sid maxid = stream_edge(s, 0, 0);
            sync = sv_sid_cmp(&maxid, &gt) > 0;
        }
        if (!sync) continue;
        served++;
        if (c->r.proto == 2) sv_add_array(&c->r, 2);
        sv_add_bulk(&c->r, key.p, key.len);
        if (!groups[k]) {
            sv_sid start = gt;
            sid_incr(&start);
            reply_range(c, s, &start, NULL, (size_t)count, 0);
            continue;
        }
        sv_cgroup *g = groups[k];
        sv_consumer *cons = consumer_lookup(g, cname, now, 1);
        if (!cons) {
            cons = consumer_create(g, cname, now);
            stream_event(c, "xgroup-createconsumer", key);
        }
        nlist touched = {0};
        int moved = 0;
        if (history) {
            sv_sid start = gt;
            sid_incr(&start);
            serve_history(c, s, cons, &start, (size_t)count, &touched);
        } else {
            serve_group(c, key, s, g, cons, &gt, (size_t)count, noack, &touched, &moved);
        }
        if (logging(c)) {
            log_xpel(c, key, g, cons, touched.a, touched.n);
            if (moved) log_setid(c, key, g);
        }
        free(touched.a);
    }
    if (served) {
        set_len_at(c, top, c->r.proto == 2 ? '*' : '%', served); /* RESP2: [key, entries] pairs */
    } else if (timeout != -1 && sv_block_allowed(c)) {
        /* nothing to serve: park on the keys until an XADD (or XGROUP DESTROY) signals one */
        xblock *xb = sv_malloc(sizeof(xblock) + sizeof(sv_sid) * (size_t)nstreams);
        xb->n = nstreams;
        memcpy(xb->ids, ids, sizeof(sv_sid) * (size_t)nstreams);
        /* 0 waits for ever; so does a time past the clock's range (Redis 7.0 overflows) */
        int64_t deadline = timeout && timeout <= LLONG_MAX - now_ms(c) ? now_ms(c) + timeout : 0;
        sv_block_on_keys(c, nstreams, argv + sarg, deadline, &xread_block, xb);
    } else {
        /* no BLOCK, or one that may not park (inside EXEC): a timeout at once, as Redis */
        sv_add_null_array(&c->r);
    }
done:
    free(ids);
    free(groups);
}

void sv_cmd_xread(sv_ctx *c, int argc, sv_str *argv) { xread(c, argc, argv, 0); }
void sv_cmd_xreadgroup(sv_ctx *c, int argc, sv_str *argv) { xread(c, argc, argv, 1); }

/* slotlane.xprep HASGROUP GROUP KEY...: the per-key checks of a cross-shard XREAD or
 * XREADGROUP (fwd_multi.c), before anything is served: for each key its error line
 * (WRONGTYPE; NOGROUP when HASGROUP is 1 and the group is missing, after an `m`
 * when the key is: the coordinator fires the "keymiss" of Redis's lookup if that error
 * is the reply — an internal read fires none) or its stream's last ID (0-0 when there
 * is no stream), which the coordinator puts for `$`. */
void sv_cmd_slotlane_xprep(sv_ctx *c, int argc, sv_str *argv)
{
    int group = sv_eq(argv[1], "1");
    sv_buf line = {0};
    sv_add_array(&c->r, argc - 3);
    for (int k = 3; k < argc; k++) {
        line.len = 0;
        sv_ctx one = *c;
        one.r.out = &line;
        sv_stream *s;
        int found = get_stream(&one, argv[k], &s);
        if (found >= 0 && group && (!s || !group_find(s, argv[2], NULL))) {
            if (!found) sv_buf_append(&line, "m", 1); /* a missing key: see above */
            nogroup_key(&one, argv[k], argv[2], " in XREADGROUP with GROUP option");
        }
        if (line.len) {
            sv_add_bulk(&c->r, line.data, line.len);
        } else {
            sv_sid last = s ? s->last_id : (sv_sid){0, 0};
            add_id(c, &last);
        }
    }
    sv_buf_free(&line);
}

/* slotlane.xcancel CLIENT-ID: the coordinator of that client's cross-shard XREAD BLOCK
 * has its answer; the part parked here (if it still is) answers nil. */
void sv_cmd_slotlane_xcancel(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    long long id;
    if (!sv_str2ll(argv[1].p, argv[1].len, &id)) {
        sv_add_error(&c->r, SV_ERR_NOTINT);
        return;
    }
    sv_add_int(&c->r, sv_block_release_part(c->sh, (uint64_t)id));
}

/* ---- XGROUP ---- */

static void add_help(sv_ctx *c, const char *cmd, const char **lines)
{
    size_t n = 0;
    while (lines[n]) n++;
    sv_add_array(&c->r, (long long)n + 3);
    char h[96];
    snprintf(h, sizeof(h), "%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", cmd);
    sv_add_status(&c->r, h);
    for (size_t i = 0; i < n; i++) sv_add_status(&c->r, lines[i]);
    sv_add_status(&c->r, "HELP");
    sv_add_status(&c->r, "    Prints this help.");
}

/* Redis 7.0 has XGROUP's and XINFO's subcommands in its command table, with
 * their own arity: name, arity (as COMMAND shows it). */
static int sub_arity_ok(sv_ctx *c, const char *full, int arity, int argc)
{
    if ((arity > 0 && argc != arity) || (arity < 0 && argc < -arity)) {
        sv_add_arity_error(c, full);
        return 0;
    }
    return 1;
}

void sv_cmd_xgroup(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    static const struct {
        const char *name, *full;
        int arity;
    } subs[] = {{"create", "xgroup|create", -5},       {"setid", "xgroup|setid", -5},
                {"destroy", "xgroup|destroy", 4},       {"createconsumer", "xgroup|createconsumer", 5},
                {"delconsumer", "xgroup|delconsumer", 5}, {"help", "xgroup|help", 2}};
    int which = -1;
    for (int i = 0; i < 6; i++)
        if (sv_eq(sub, subs[i].name)) which = i;
    if (which < 0) {
        char up[16] = "XGROUP";
        sv_add_errorf(&c->r, "unknown subcommand '%.*s'. Try %s HELP.", (int)(sub.len > 128 ? 128 : sub.len), sub.p, up);
        return;
    }
    if (!sub_arity_ok(c, subs[which].full, subs[which].arity, argc)) return;
    if (which == 5) {
        static const char *help[] = {
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            NULL};
        add_help(c, "XGROUP", help);
        return;
    }
    int mkstream = 0;
    long long entries_read = -1;
    sv_str key = argv[2], gname = argv[3];
    for (int i = 5; i < argc;) {
        if (which == 0 && sv_eq(argv[i], "mkstream")) {
            mkstream = 1;
            i++;
        } else if ((which == 0 || which == 1) && sv_eq(argv[i], "entriesread") && i + 1 < argc) {
            if (!get_ll_msg(c, argv[i + 1], &entries_read, NULL)) return;
            if (entries_read < 0 && entries_read != -1) {
                sv_add_error(&c->r, "value for ENTRIESREAD must be positive or -1");
                return;
            }
            i += 2;
        } else {
            subcommand_error(c, argv[0], sub);
            return;
        }
    }
    sv_stream *s;
    if (get_stream(c, key, &s) < 0) return;
    sv_cgroup *g = NULL;
    size_t gat = 0;
    if (!mkstream) {
        if (!s) {
            sv_add_error(&c->r, "The XGROUP subcommand requires the key to exist. Note that for CREATE you may "
                                "want to use the MKSTREAM option to create an empty stream automatically.");
            return;
        }
        g = group_find(s, gname, &gat);
        if (!g && (which == 1 || which == 3 || which == 4)) {
            sv_add_errorf(&c->r, "-NOGROUP No such consumer group '%.*s' for key name '%.*s'", (int)gname.len,
                          gname.p, (int)key.len, key.p);
            return;
        }
    }
    if (which == 0) {
        if (argc > 8) {
            subcommand_error(c, argv[0], sub);
            return;
        }
        sv_sid id;
        if (argv[4].len == 1 && argv[4].p[0] == '$') id = s ? s->last_id : (sv_sid){0, 0};
        else if (!parse_id_or_reply(c, argv[4], &id, 0, 1)) return;
        if (!s) {
            s = sv_stream_new();
            sv_db_add(c->sh, key, &s->h);
        }
        if (group_create(s, gname, id, entries_read)) {
            sv_add_ok(&c->r);
            stream_event(c, "xgroup-create", key);
            if (logging(c)) sv_aof_log(c->sh, argc, argv);
        } else {
            /* MKSTREAM never creates here: the key existed, or the group would be new */
            sv_add_error(&c->r, "-BUSYGROUP Consumer Group name already exists");
        }
    } else if (which == 1) {
        if (argc != 5 && argc != 7) {
            subcommand_error(c, argv[0], sub);
            return;
        }
        if (!g) { /* MKSTREAM is not an option of SETID, so g was looked up */
            subcommand_error(c, argv[0], sub);
            return;
        }
        sv_sid id;
        if (argv[4].len == 1 && argv[4].p[0] == '$') id = s->last_id;
        else if (!parse_id_or_reply(c, argv[4], &id, 0, 0)) return;
        g->last_id = id;
        g->entries_read = entries_read;
        sv_add_ok(&c->r);
        stream_event(c, "xgroup-setid", key);
        if (logging(c)) sv_aof_log(c->sh, argc, argv);
    } else if (which == 2) {
        if (g) {
            group_destroy(s, gat);
            sv_add_int(&c->r, 1);
            stream_event(c, "xgroup-destroy", key);
            sv_signal_key_ready(c->sh, key); /* its parked XREADGROUPs get NOGROUP */
            if (logging(c)) sv_aof_log(c->sh, argc, argv);
        } else {
            sv_add_int(&c->r, 0);
        }
    } else if (which == 3) {
        sv_consumer *made = consumer_create(g, argv[4], now_ms(c));
        if (made) {
            stream_event(c, "xgroup-createconsumer", key);
            if (logging(c)) log_xpel(c, key, g, made, NULL, 0); /* with its seen time */
        }
        sv_add_int(&c->r, made ? 1 : 0);
        return;
    } else {
        size_t at;
        long long pending = 0;
        sv_consumer *cons = consumer_find(g, argv[4], &at);
        if (cons) {
            pending = (long long)cons->pel.len;
            consumer_delete(g, at);
            stream_event(c, "xgroup-delconsumer", key);
            if (logging(c)) sv_aof_log(c->sh, argc, argv);
        }
        sv_add_int(&c->r, pending);
    }
}

/* ---- XSETID XACK XPENDING ---- */

void sv_cmd_xsetid(sv_ctx *c, int argc, sv_str *argv)
{
    sv_sid id, maxdel = {0, 0};
    long long added = -1;
    if (!parse_id_or_reply(c, argv[2], &id, 0, 1)) return;
    for (int i = 3; i < argc; i += 2) {
        int more = argc - 1 - i;
        if (sv_eq(argv[i], "entriesadded") && more) {
            if (!get_ll_msg(c, argv[i + 1], &added, NULL)) return;
            if (added < 0) {
                sv_add_error(&c->r, "entries_added must be positive");
                return;
            }
        } else if (sv_eq(argv[i], "maxdeletedid") && more) {
            if (!parse_id_or_reply(c, argv[i + 1], &maxdel, 0, 1)) return;
            if (sv_sid_cmp(&id, &maxdel) < 0) {
                sv_add_error(&c->r, "The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
                return;
            }
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    if (r == 0) {
        sv_add_error(&c->r, SV_ERR_NOSUCHKEY);
        return;
    }
    if (s->length > 0) {
        sv_sid maxid = stream_edge(s, 0, 0);
        if (sv_sid_cmp(&id, &maxid) < 0) {
            sv_add_error(&c->r, "The ID specified in XSETID is smaller than the target stream top item");
            return;
        }
        if (added != -1 && s->length > (uint64_t)added) {
            sv_add_error(&c->r, "The entries_added specified in XSETID is smaller than the target stream length");
            return;
        }
    }
    s->last_id = id;
    if (added != -1) s->entries_added = (uint64_t)added;
    if (maxdel.ms || maxdel.seq) s->max_deleted = maxdel;
    sv_add_ok(&c->r);
    stream_event(c, "xsetid", argv[1]);
}

void sv_cmd_xack(sv_ctx *c, int argc, sv_str *argv)
{
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    sv_cgroup *g = r ? group_find(s, argv[2], NULL) : NULL;
    if (!g) {
        sv_add_int(&c->r, 0);
        return;
    }
    sv_sid *ids = parse_id_list(c, argc, argv, 3);
    if (!ids) return;
    long long acked = 0;
    for (int j = 0; j < argc - 3; j++) {
        size_t at;
        sv_nack *nk = pel_find(&g->pel, &ids[j], &at);
        if (!nk) continue;
        pel_remove_at(&g->pel, at);
        pel_remove(&nk->consumer->pel, &ids[j]);
        free(nk);
        acked++;
    }
    free(ids);
    sv_add_int(&c->r, acked);
}

void sv_cmd_xpending(sv_ctx *c, int argc, sv_str *argv)
{
    int justinfo = argc == 3;
    sv_sid start = {0, 0}, end = {0, 0};
    long long count = 0, minidle = 0;
    sv_str cname = {0};
    int have_cons = 0;
    if (argc != 3 && (argc < 6 || argc > 9)) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (argc >= 6) {
        int si = 3;
        if (sv_eq(argv[3], "idle")) {
            if (!get_ll_msg(c, argv[4], &minidle, NULL)) return;
            if (argc < 8) {
                sv_add_error(&c->r, SV_ERR_SYNTAX);
                return;
            }
            si += 2;
        }
        if (!get_ll_msg(c, argv[si + 2], &count, NULL)) return;
        if (count < 0) count = 0;
        if (!parse_range(c, argv[si], argv[si + 1], &start, &end)) return;
        if (si + 3 < argc) {
            cname = argv[si + 3];
            have_cons = 1;
        }
    }
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    sv_cgroup *g = r ? group_find(s, argv[2], NULL) : NULL;
    if (!g) {
        nogroup_key(c, argv[1], argv[2], "");
        return;
    }
    if (justinfo) {
        sv_add_array(&c->r, 4);
        sv_add_int(&c->r, (long long)g->pel.len);
        if (g->pel.len == 0) {
            sv_add_null(&c->r);
            sv_add_null(&c->r);
            sv_add_null_array(&c->r);
            return;
        }
        add_id(c, &PEL_AT(&g->pel, 0)->id);
        add_id(c, &PEL_AT(&g->pel, g->pel.len - 1)->id);
        size_t at = mark(c);
        long long n = 0;
        for (size_t i = 0; i < g->ncons; i++) {
            sv_consumer *cons = g->cons[i];
            if (!cons->pel.len) continue;
            sv_add_array(&c->r, 2);
            sv_add_bulk(&c->r, cons->name, cons->nlen);
            sv_add_bulk_ll(&c->r, (long long)cons->pel.len);
            n++;
        }
        set_len_at(c, at, '*', n);
        return;
    }
    const sv_pel *pel = &g->pel;
    if (have_cons) {
        sv_consumer *cons = consumer_find(g, cname, NULL);
        if (!cons) {
            sv_add_array(&c->r, 0);
            return;
        }
        pel = &cons->pel;
    }
    int64_t now = now_ms(c);
    size_t at = mark(c);
    long long n = 0;
    for (size_t i = pel_lower(pel, &start); count && i < pel->len; i++) {
        sv_nack *nk = PEL_AT(pel, i);
        if (sv_sid_cmp(&nk->id, &end) > 0) break;
        if (minidle && now - nk->delivery_time < minidle) continue;
        n++;
        count--;
        sv_add_array(&c->r, 4);
        add_id(c, &nk->id);
        sv_add_bulk(&c->r, nk->consumer->name, nk->consumer->nlen);
        int64_t el = now - nk->delivery_time;
        sv_add_int(&c->r, el < 0 ? 0 : el);
        sv_add_int(&c->r, (long long)nk->delivery_count);
    }
    set_len_at(c, at, '*', n);
}

/* ---- XCLAIM / XAUTOCLAIM ---- */

/* Moves nk to cons (the claim itself). */
static void claim_to(sv_nack *nk, sv_consumer *cons)
{
    if (nk->consumer == cons) return;
    if (nk->consumer) pel_remove(&nk->consumer->pel, &nk->id);
    nk->consumer = cons;
    pel_insert(&cons->pel, nk);
}

static void drop_nack(sv_cgroup *g, sv_nack *nk)
{
    pel_remove(&g->pel, &nk->id);
    if (nk->consumer) pel_remove(&nk->consumer->pel, &nk->id);
    free(nk);
}

static void claim_log(sv_ctx *c, sv_str key, sv_cgroup *g, sv_consumer *cons, nlist *touched, sv_sid *dropped,
                      size_t ndropped, int setid)
{
    if (!logging(c)) return;
    log_xack(c, key, g, dropped, ndropped);
    if (cons) log_xpel(c, key, g, cons, touched->a, touched->n);
    if (setid) log_setid(c, key, g);
}

void sv_cmd_xclaim(sv_ctx *c, int argc, sv_str *argv)
{
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    sv_cgroup *g = r ? group_find(s, argv[2], NULL) : NULL;
    if (!g) {
        nogroup_key(c, argv[1], argv[2], "");
        return;
    }
    long long minidle, retry = -1, dtime = -1;
    int force = 0, justid = 0;
    if (!get_ll_msg(c, argv[4], &minidle, "Invalid min-idle-time argument for XCLAIM")) return;
    if (minidle < 0) minidle = 0;
    sv_sid *ids = sv_malloc(sizeof(sv_sid) * (size_t)(argc - 5));
    int j = 5;
    for (; j < argc; j++)
        if (!sv_sid_parse(argv[j], &ids[j - 5], 0, 1, NULL)) break;
    int nids = j - 5;
    int64_t now = now_ms(c);
    sv_sid lastid = {0, 0};
    for (; j < argc; j++) {
        int more = argc - 1 - j;
        sv_str o = argv[j];
        if (sv_eq(o, "force")) {
            force = 1;
        } else if (sv_eq(o, "justid")) {
            justid = 1;
        } else if (sv_eq(o, "idle") && more) {
            j++;
            if (!get_ll_msg(c, argv[j], &dtime, "Invalid IDLE option argument for XCLAIM")) goto out;
            dtime = now - dtime;
        } else if (sv_eq(o, "time") && more) {
            j++;
            if (!get_ll_msg(c, argv[j], &dtime, "Invalid TIME option argument for XCLAIM")) goto out;
        } else if (sv_eq(o, "retrycount") && more) {
            j++;
            if (!get_ll_msg(c, argv[j], &retry, "Invalid RETRYCOUNT option argument for XCLAIM")) goto out;
        } else if (sv_eq(o, "lastid") && more) {
            j++;
            if (!parse_id_or_reply(c, argv[j], &lastid, 0, 1)) goto out;
        } else {
            sv_add_errorf(&c->r, "Unrecognized XCLAIM option '%.*s'", (int)(o.len > 128 ? 128 : o.len), o.p);
            goto out;
        }
    }
    int setid = 0;
    if (sv_sid_cmp(&lastid, &g->last_id) > 0) {
        g->last_id = lastid;
        setid = 1;
    }
    if (dtime != -1) {
        if (dtime < 0 || dtime > now) dtime = now;
    } else {
        dtime = now;
    }
    sv_consumer *cons = NULL;
    nlist touched = {0};
    sv_sid *dropped = sv_malloc(sizeof(sv_sid) * (size_t)(nids ? nids : 1));
    size_t ndropped = 0;
    size_t at = mark(c);
    long long n = 0;
    for (int k = 0; k < nids; k++) {
        sv_sid id = ids[k];
        sv_nack *nk = pel_find(&g->pel, &id, NULL);
        const char *e = stream_find(s, &id, NULL, NULL);
        if (!e) {
            if (nk) { /* the entry is gone: its PEL entry goes too */
                drop_nack(g, nk);
                dropped[ndropped++] = id;
            }
            continue;
        }
        if (force && !nk) { /* as Redis's streamCreateNACK: delivered once, now */
            nk = sv_calloc(1, sizeof(*nk));
            nk->id = id;
            nk->delivery_time = now;
            nk->delivery_count = 1;
            pel_insert(&g->pel, nk);
        }
        if (!nk) continue;
        if (nk->consumer && minidle && now - nk->delivery_time < minidle) continue;
        if (!cons) {
            cons = consumer_lookup(g, argv[3], now, 1);
            if (!cons) {
                cons = consumer_create(g, argv[3], now);
                stream_event(c, "xgroup-createconsumer", argv[1]);
            }
        }
        claim_to(nk, cons);
        nk->delivery_time = dtime;
        if (retry >= 0) nk->delivery_count = (uint64_t)retry;
        else if (!justid) nk->delivery_count++;
        if (justid) add_id(c, &id);
        else add_entry(c, e);
        n++;
        nl_push(&touched, nk);
    }
    set_len_at(c, at, '*', n);
    claim_log(c, argv[1], g, cons, &touched, dropped, ndropped, setid);
    free(touched.a);
    free(dropped);
out:
    free(ids);
}

void sv_cmd_xautoclaim(sv_ctx *c, int argc, sv_str *argv)
{
    long long minidle, count = 100;
    int justid = 0;
    sv_sid start;
    int ex;
    if (!get_ll_msg(c, argv[4], &minidle, "Invalid min-idle-time argument for XAUTOCLAIM")) return;
    if (minidle < 0) minidle = 0;
    if (!parse_interval(c, argv[5], &start, &ex, 0)) return;
    if (ex && sid_incr(&start) != 0) {
        sv_add_error(&c->r, "invalid start ID for the interval");
        return;
    }
    for (int j = 6; j < argc; j++) {
        int more = argc - 1 - j;
        if (sv_eq(argv[j], "count") && more) {
            long long maxc = LLONG_MAX / 16; /* Redis: LONG_MAX / max(sizeof(streamID), 10) */
            if (!sv_str2ll(argv[j + 1].p, argv[j + 1].len, &count)) {
                sv_add_error(&c->r, "COUNT must be > 0");
                return;
            }
            if (count < 1 || count > maxc) {
                sv_add_error(&c->r, "COUNT must be > 0");
                return;
            }
            j++;
        } else if (sv_eq(argv[j], "justid")) {
            justid = 1;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    if (r < 0) return;
    sv_cgroup *g = r ? group_find(s, argv[2], NULL) : NULL;
    if (!g) {
        nogroup_key(c, argv[1], argv[2], "");
        return;
    }
    long long attempts = count * 10;
    int64_t now = now_ms(c);
    sv_consumer *cons = NULL;
    nlist touched = {0};
    size_t capdrop = 16, ndropped = 0;
    sv_sid *dropped = sv_malloc(sizeof(sv_sid) * capdrop);
    sv_add_array(&c->r, 3);
    size_t cursor_at = mark(c);
    size_t at = mark(c);
    long long n = 0;
    size_t i = pel_lower(&g->pel, &start);
    while (attempts-- && count && i < g->pel.len) {
        sv_nack *nk = PEL_AT(&g->pel, i);
        sv_sid id = nk->id;
        const char *e = stream_find(s, &id, NULL, NULL);
        if (!e) {
            if (ndropped == capdrop) {
                capdrop *= 2;
                dropped = sv_realloc(dropped, sizeof(sv_sid) * capdrop);
            }
            dropped[ndropped++] = id;
            drop_nack(g, nk); /* the next one moves to index i */
            count--;
            continue;
        }
        i++;
        if (minidle && now - nk->delivery_time < minidle) continue;
        if (!cons) {
            cons = consumer_lookup(g, argv[3], now, 1);
            if (!cons) {
                cons = consumer_create(g, argv[3], now);
                stream_event(c, "xgroup-createconsumer", argv[1]);
            }
        }
        claim_to(nk, cons);
        nk->delivery_time = now;
        if (!justid) nk->delivery_count++;
        if (justid) add_id(c, &nk->id);
        else add_entry(c, e);
        n++;
        count--;
        nl_push(&touched, nk);
    }
    set_len_at(c, at, '*', n);
    /* the cursor: the next PEL entry, 0-0 at the end; inserted before the claimed list */
    sv_sid next = {0, 0};
    if (i < g->pel.len) next = PEL_AT(&g->pel, i)->id;
    {
        sv_buf tmp = {0};
        sv_reply saved = c->r;
        c->r.out = &tmp;
        add_id(c, &next);
        c->r = saved;
        sv_buf *o = c->r.out;
        sv_buf_reserve(o, tmp.len);
        memmove(o->data + cursor_at + tmp.len, o->data + cursor_at, o->len - cursor_at);
        memcpy(o->data + cursor_at, tmp.data, tmp.len);
        o->len += tmp.len;
        sv_buf_free(&tmp);
    }
    sv_add_array(&c->r, (long long)ndropped);
    for (size_t k = 0; k < ndropped; k++) add_id(c, &dropped[k]);
    claim_log(c, argv[1], g, cons, &touched, dropped, ndropped, 0);
    free(touched.a);
    free(dropped);
}

/* ---- XINFO ---- */

static void info_stream(sv_ctx *c, sv_stream *s, int argc, sv_str *argv)
{
    int full = 1;
    long long count = 10;
    int optc = argc - 3;
    if (optc == 0) {
        full = 0;
    } else {
        if ((optc != 1 && optc != 3) || !sv_eq(argv[3], "full") || (optc == 3 && !sv_eq(argv[4], "count"))) {
            subcommand_error(c, argv[0], argv[1]);
            return;
        }
        if (optc == 3) {
            if (!get_ll_msg(c, argv[5], &count, NULL)) return;
            if (count < 0) count = 10;
        }
    }
    sv_add_map(&c->r, full ? 9 : 10);
    sv_add_bulk_cstr(&c->r, "length");
    sv_add_int(&c->r, (long long)s->length);
    sv_add_bulk_cstr(&c->r, "radix-tree-keys");
    sv_add_int(&c->r, (long long)s->nblocks);
    sv_add_bulk_cstr(&c->r, "radix-tree-nodes");
    sv_add_int(&c->r, (long long)(s->nblocks ? 2 * s->nblocks : 1)); /* no radix tree here: an estimate */
    sv_add_bulk_cstr(&c->r, "last-generated-id");
    add_id(c, &s->last_id);
    sv_add_bulk_cstr(&c->r, "max-deleted-entry-id");
    add_id(c, &s->max_deleted);
    sv_add_bulk_cstr(&c->r, "entries-added");
    sv_add_int(&c->r, (long long)s->entries_added);
    sv_add_bulk_cstr(&c->r, "recorded-first-entry-id");
    add_id(c, &s->first_id);
    if (!full) {
        sv_add_bulk_cstr(&c->r, "groups");
        sv_add_int(&c->r, (long long)s->ngroups);
        for (int last = 0; last < 2; last++) {
            sv_add_bulk_cstr(&c->r, last ? "last-entry" : "first-entry");
            siter it;
            siter_start(&it, s, NULL, NULL, last);
            const char *e = siter_next(&it);
            if (e) add_entry(c, e);
            else sv_add_null(&c->r);
        }
        return;
    }
    sv_add_bulk_cstr(&c->r, "entries");
    reply_range(c, s, NULL, NULL, (size_t)count, 0);
    sv_add_bulk_cstr(&c->r, "groups");
    sv_add_array(&c->r, (long long)s->ngroups);
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        sv_cgroup *g = s->groups[gi];
        sv_add_map(&c->r, 7);
        sv_add_bulk_cstr(&c->r, "name");
        sv_add_bulk(&c->r, g->name, g->nlen);
        sv_add_bulk_cstr(&c->r, "last-delivered-id");
        add_id(c, &g->last_id);
        sv_add_bulk_cstr(&c->r, "entries-read");
        if (g->entries_read != -1) sv_add_int(&c->r, g->entries_read);
        else sv_add_null(&c->r);
        sv_add_bulk_cstr(&c->r, "lag");
        add_lag(c, s, g);
        sv_add_bulk_cstr(&c->r, "pel-count");
        sv_add_int(&c->r, (long long)g->pel.len);
        sv_add_bulk_cstr(&c->r, "pending");
        size_t np = g->pel.len;
        if (count && (size_t)count < np) np = (size_t)count;
        sv_add_array(&c->r, (long long)np);
        for (size_t i = 0; i < np; i++) {
            sv_nack *nk = PEL_AT(&g->pel, i);
            sv_add_array(&c->r, 4);
            add_id(c, &nk->id);
            sv_add_bulk(&c->r, nk->consumer->name, nk->consumer->nlen);
            sv_add_int(&c->r, nk->delivery_time);
            sv_add_int(&c->r, (long long)nk->delivery_count);
        }
        sv_add_bulk_cstr(&c->r, "consumers");
        sv_add_array(&c->r, (long long)g->ncons);
        for (size_t ci = 0; ci < g->ncons; ci++) {
            sv_consumer *cons = g->cons[ci];
            sv_add_map(&c->r, 4);
            sv_add_bulk_cstr(&c->r, "name");
            sv_add_bulk(&c->r, cons->name, cons->nlen);
            sv_add_bulk_cstr(&c->r, "seen-time");
            sv_add_int(&c->r, cons->seen_time);
            sv_add_bulk_cstr(&c->r, "pel-count");
            sv_add_int(&c->r, (long long)cons->pel.len);
            sv_add_bulk_cstr(&c->r, "pending");
            size_t cp = cons->pel.len;
            if (count && (size_t)count < cp) cp = (size_t)count;
            sv_add_array(&c->r, (long long)cp);
            for (size_t i = 0; i < cp; i++) {
                sv_nack *nk = PEL_AT(&cons->pel, i);
                sv_add_array(&c->r, 3);
                add_id(c, &nk->id);
                sv_add_int(&c->r, nk->delivery_time);
                sv_add_int(&c->r, (long long)nk->delivery_count);
            }
        }
    }
}

void sv_cmd_xinfo(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    static const struct {
        const char *name, *full;
        int arity;
    } subs[] = {{"consumers", "xinfo|consumers", 4}, {"groups", "xinfo|groups", 3},
                {"stream", "xinfo|stream", -3},       {"help", "xinfo|help", 2}};
    int which = -1;
    for (int i = 0; i < 4; i++)
        if (sv_eq(sub, subs[i].name)) which = i;
    if (which < 0) {
        sv_add_errorf(&c->r, "unknown subcommand '%.*s'. Try XINFO HELP.", (int)(sub.len > 128 ? 128 : sub.len), sub.p);
        return;
    }
    if (!sub_arity_ok(c, subs[which].full, subs[which].arity, argc)) return;
    if (which == 3) {
        static const char *help[] = {"CONSUMERS <key> <groupname>",
                                     "    Show consumers of <groupname>.",
                                     "GROUPS <key>",
                                     "    Show the stream consumer groups.",
                                     "STREAM <key> [FULL [COUNT <count>]",
                                     "    Show information about the stream.",
                                     NULL};
        add_help(c, "XINFO", help);
        return;
    }
    sv_stream *s;
    int r = get_stream(c, argv[2], &s);
    if (r < 0) return;
    if (r == 0) {
        sv_add_error(&c->r, SV_ERR_NOSUCHKEY);
        return;
    }
    if (which == 0) {
        sv_cgroup *g = group_find(s, argv[3], NULL);
        if (!g) {
            sv_add_errorf(&c->r, "-NOGROUP No such consumer group '%.*s' for key name '%.*s'", (int)argv[3].len,
                          argv[3].p, (int)argv[2].len, argv[2].p);
            return;
        }
        int64_t now = now_ms(c);
        sv_add_array(&c->r, (long long)g->ncons);
        for (size_t i = 0; i < g->ncons; i++) {
            sv_consumer *cons = g->cons[i];
            int64_t idle = now - cons->seen_time;
            sv_add_map(&c->r, 3);
            sv_add_bulk_cstr(&c->r, "name");
            sv_add_bulk(&c->r, cons->name, cons->nlen);
            sv_add_bulk_cstr(&c->r, "pending");
            sv_add_int(&c->r, (long long)cons->pel.len);
            sv_add_bulk_cstr(&c->r, "idle");
            sv_add_int(&c->r, idle < 0 ? 0 : idle);
        }
    } else if (which == 1) {
        sv_add_array(&c->r, (long long)s->ngroups);
        for (size_t i = 0; i < s->ngroups; i++) {
            sv_cgroup *g = s->groups[i];
            sv_add_map(&c->r, 6);
            sv_add_bulk_cstr(&c->r, "name");
            sv_add_bulk(&c->r, g->name, g->nlen);
            sv_add_bulk_cstr(&c->r, "consumers");
            sv_add_int(&c->r, (long long)g->ncons);
            sv_add_bulk_cstr(&c->r, "pending");
            sv_add_int(&c->r, (long long)g->pel.len);
            sv_add_bulk_cstr(&c->r, "last-delivered-id");
            add_id(c, &g->last_id);
            sv_add_bulk_cstr(&c->r, "entries-read");
            if (g->entries_read != -1) sv_add_int(&c->r, g->entries_read);
            else sv_add_null(&c->r);
            sv_add_bulk_cstr(&c->r, "lag");
            add_lag(c, s, g);
        }
    } else {
        info_stream(c, s, argc, argv);
    }
}

/* ---- internal: the rewrite's exact restore ---- */

/* slotlane.xmeta KEY LAST-ID ENTRIES-ADDED MAX-DELETED-ID [TOMBSTONE-ID]...
 * Creates the stream if missing, marks the given entries deleted (as a trim would:
 * the block stays), sets the counters exactly. */
void sv_cmd_slotlane_xmeta(sv_ctx *c, int argc, sv_str *argv)
{
    sv_sid last, maxdel;
    long long added;
    if (!sv_sid_parse(argv[2], &last, 0, 1, NULL) || !sv_sid_parse(argv[4], &maxdel, 0, 1, NULL) ||
        !sv_str2ll(argv[3].p, argv[3].len, &added) || added < 0) {
        sv_add_error(&c->r, "slotlane.xmeta: invalid arguments");
        return;
    }
    sv_sid *tomb = sv_malloc(sizeof(sv_sid) * (size_t)(argc - 4));
    for (int j = 5; j < argc; j++)
        if (!sv_sid_parse(argv[j], &tomb[j - 5], 0, 1, NULL)) {
            free(tomb);
            sv_add_error(&c->r, "slotlane.xmeta: invalid arguments");
            return;
        }
    sv_entry *e;
    int r = sv_db_get_typed(c, argv[1], SV_T_STREAM, &e);
    if (r < 0) {
        free(tomb);
        return;
    }
    sv_stream *s = r ? e->val : NULL;
    if (!s) {
        s = sv_stream_new();
        sv_db_add(c->sh, argv[1], &s->h);
    }
    for (int j = 0; j < argc - 5; j++) stream_tombstone(s, &tomb[j]);
    free(tomb);
    if (s->length) { /* never below a live entry (the monotonicity XSETID keeps too) */
        sv_sid top = stream_edge(s, 0, 0);
        if (sv_sid_cmp(&last, &top) < 0) last = s->last_id;
    }
    s->last_id = last; /* exactly (XSETID may have put it below deleted entries) */
    if ((uint64_t)added >= s->length) s->entries_added = (uint64_t)added;
    s->max_deleted = maxdel;
    stream_fix_first(s);
    sv_add_ok(&c->r);
}

/* slotlane.xpel KEY GROUP CONSUMER SEEN-TIME [ID DELIVERY-TIME DELIVERY-COUNT]...
 * The consumer (created if missing) with this seen time, owning these pending
 * entries with these delivery times and counts (taken from another consumer if
 * one had them). */
void sv_cmd_slotlane_xpel(sv_ctx *c, int argc, sv_str *argv)
{
    long long seen;
    if ((argc - 5) % 3 || !sv_str2ll(argv[4].p, argv[4].len, &seen)) {
        sv_add_error(&c->r, "slotlane.xpel: invalid arguments");
        return;
    }
    size_t n = (size_t)(argc - 5) / 3;
    sv_nack *vals = sv_malloc(sizeof(sv_nack) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        sv_str *t = argv + 5 + 3 * i;
        long long dt, dc;
        if (!sv_sid_parse(t[0], &vals[i].id, 0, 1, NULL) || !sv_str2ll(t[1].p, t[1].len, &dt) ||
            !sv_str2ll(t[2].p, t[2].len, &dc) || dc < 0) {
            free(vals);
            sv_add_error(&c->r, "slotlane.xpel: invalid arguments");
            return;
        }
        vals[i].delivery_time = dt;
        vals[i].delivery_count = (uint64_t)dc;
    }
    sv_stream *s;
    int r = get_stream(c, argv[1], &s);
    sv_cgroup *g = r > 0 ? group_find(s, argv[2], NULL) : NULL;
    if (r < 0 || !g) {
        if (r >= 0) nogroup_key(c, argv[1], argv[2], "");
        free(vals);
        return;
    }
    sv_consumer *cons = consumer_find(g, argv[3], NULL);
    if (!cons) cons = consumer_create(g, argv[3], seen);
    cons->seen_time = seen;
    for (size_t i = 0; i < n; i++) {
        sv_nack *nk = pel_find(&g->pel, &vals[i].id, NULL);
        if (!nk) {
            nk = sv_calloc(1, sizeof(*nk));
            nk->id = vals[i].id;
            pel_insert(&g->pel, nk);
        }
        claim_to(nk, cons);
        nk->delivery_time = vals[i].delivery_time;
        nk->delivery_count = vals[i].delivery_count;
    }
    free(vals);
    sv_add_ok(&c->r);
}

/* ---- rewrite ---- */

static void em_id(const sv_stream_emit *em, const sv_sid *id)
{
    char b[48];
    em->bulk(em->priv, b, sv_sid_fmt(b, id));
}

static void em_ll(const sv_stream_emit *em, long long v)
{
    char b[24];
    em->bulk(em->priv, b, sv_ll2str(b, v));
}

static void em_cstr(const sv_stream_emit *em, const char *s) { em->bulk(em->priv, s, strlen(s)); }

#define RW_CHUNK 64

void sv_stream_rewrite(const sv_stream *s, const char *key, size_t klen, const sv_stream_emit *em)
{
    size_t ntomb = 0;
    /* every entry, deleted ones too, so the blocks come out as they are */
    for (size_t bi = 0; bi < s->nblocks; bi++) {
        const sv_sblock *b = blk(s, bi);
        for (uint32_t i = 0; i < b->n; i++) {
            const char *e = b->data.data + b->off[i];
            uint32_t nf = ent_nfields(e);
            sv_sid id = ent_id(e);
            em->len(em->priv, '*', 3 + 2 * (size_t)nf);
            em_cstr(em, "XADD");
            em->bulk(em->priv, key, klen);
            em_id(em, &id);
            const char *p = ENT_FIELDS(e);
            for (uint32_t k = 0; k < 2 * nf; k++) {
                sv_str f = ent_next_str(&p);
                em->bulk(em->priv, f.p, f.len);
            }
            if (e[16] & ENT_DELETED) ntomb++;
        }
    }
    /* counters and tombstones, RW_CHUNK tombstones per record */
    size_t done = 0, bi = 0;
    uint32_t ei = 0;
    do {
        size_t n = ntomb - done < RW_CHUNK ? ntomb - done : RW_CHUNK;
        em->len(em->priv, '*', 5 + n);
        em_cstr(em, "slotlane.xmeta");
        em->bulk(em->priv, key, klen);
        em_id(em, &s->last_id);
        em_ll(em, (long long)s->entries_added);
        em_id(em, &s->max_deleted);
        for (size_t k = 0; k < n;) {
            const sv_sblock *b = blk(s, bi);
            const char *e = b->data.data + b->off[ei];
            if (++ei == b->n) {
                ei = 0;
                bi++;
            }
            if (!(e[16] & ENT_DELETED)) continue;
            sv_sid id = ent_id(e);
            em_id(em, &id);
            k++;
        }
        done += n;
    } while (done < ntomb);
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        const sv_cgroup *g = s->groups[gi];
        em->len(em->priv, '*', 7);
        em_cstr(em, "XGROUP");
        em_cstr(em, "CREATE");
        em->bulk(em->priv, key, klen);
        em->bulk(em->priv, g->name, g->nlen);
        em_id(em, &g->last_id);
        em_cstr(em, "ENTRIESREAD");
        em_ll(em, g->entries_read);
        for (size_t ci = 0; ci < g->ncons; ci++) {
            const sv_consumer *cons = g->cons[ci];
            size_t k = 0;
            do {
                size_t n = cons->pel.len - k < RW_CHUNK ? cons->pel.len - k : RW_CHUNK;
                em->len(em->priv, '*', 5 + 3 * n);
                em_cstr(em, "slotlane.xpel");
                em->bulk(em->priv, key, klen);
                em->bulk(em->priv, g->name, g->nlen);
                em->bulk(em->priv, cons->name, cons->nlen);
                em_ll(em, cons->seen_time);
                for (size_t x = 0; x < n; x++) {
                    const sv_nack *nk = PEL_AT(&cons->pel, k + x);
                    em_id(em, &nk->id);
                    em_ll(em, nk->delivery_time);
                    em_ll(em, (long long)nk->delivery_count);
                }
                k += n;
            } while (k < cons->pel.len);
        }
    }
}
