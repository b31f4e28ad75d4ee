/* notify: see notify.h. */
#include "notify.h"

#include <stdio.h>

#include "pubsub.h"

_Thread_local int sv_notify_reads;

/* ---- the queue of a running command ---- */

#define NQ_DEPTH 8
typedef struct sv_nq {
    int depth;  /* sv_call nesting (EXEC runs its queued commands inside) */
    size_t start[NQ_DEPTH]; /* where each running command's events begin in q */
    sv_buf q;   /* [int cls][size_t elen][size_t klen][event][key] ... */
} sv_nq;

static sv_nq *queue_of(sv_shard *sh)
{
    if (!sh->ntf) sh->ntf = sv_calloc(1, sizeof(sv_nq));
    return sh->ntf;
}

static void publish_one(sv_shard *sh, const char *event, size_t elen, sv_str key)
{
    int f = sv_notify_flags;
    char stack[256];
    size_t need = 16 + (key.len > elen ? key.len : elen);
    char *ch = need <= sizeof(stack) ? stack : sv_malloc(need);
    if (f & SV_N_KEYSPACE) {
        memcpy(ch, "__keyspace@0__:", 15);
        memcpy(ch + 15, key.p, key.len);
        sv_pubsub_publish(sh, (sv_str){ch, 15 + key.len}, (sv_str){event, elen});
    }
    if (f & SV_N_KEYEVENT) {
        memcpy(ch, "__keyevent@0__:", 15);
        memcpy(ch + 15, event, elen);
        sv_pubsub_publish(sh, (sv_str){ch, 15 + elen}, key);
    }
    if (ch != stack) free(ch);
}

void sv_notify(sv_shard *sh, int cls, const char *event, sv_str key)
{
    if (!sv_notify_wanted(cls)) return;
    sv_nq *nq = queue_of(sh);
    size_t elen = strlen(event);
    if (nq->depth == 0) { /* outside a command (active expiry): at once */
        publish_one(sh, event, elen, key);
        return;
    }
    sv_buf_append(&nq->q, &cls, sizeof(int));
    sv_buf_append(&nq->q, &elen, sizeof(size_t));
    sv_buf_append(&nq->q, &key.len, sizeof(size_t));
    sv_buf_append(&nq->q, event, elen);
    sv_buf_append(&nq->q, key.p, key.len);
}

/* ---- what each command fires (see notify.h) ---- */



/* The first bulk string of an array reply ([key, ...] of BLPOP, BZPOPMIN, BLMPOP). */
static int reply_first_bulk(const char *r, size_t rlen, sv_str *out)
{
    const char *nl = memchr(r, '\n', rlen);
    if (!nl || r[0] != '*') return 0;
    const char *b = nl + 1;
    size_t left = rlen - (size_t)(b - r);
    const char *nl2 = memchr(b, '\n', left);
    long long n;
    if (!nl2 || b[0] != '$' || !sv_str2ll(b + 1, (size_t)(nl2 - b - 2), &n) || n < 0) return 0;
    out->p = nl2 + 1;
    out->len = (size_t)n;
    return 1;
}

static void fire_from_reply_key(sv_ctx *c, const char *event, int cls, const char *r, size_t rlen)
{
    sv_str k;
    if (reply_first_bulk(r, rlen, &k)) sv_notify(c->sh, cls, event, k);
}

void sv_ev_blpop(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)argc;
    fire_from_reply_key(c, (argv[0].p[1] | 32) == 'l' ? "lpop" : "rpop", SV_N_LIST, r, rlen);
}

/* [B]LMPOP / [B]ZMPOP: numkeys at argv[at], the keys, then the direction; the key
 * popped from is the reply's first element */
static void mpop(sv_ctx *c, int argc, sv_str *argv, int at, const char *first, const char *ev_first,
                 const char *ev_second, int cls, const char *r, size_t rlen)
{
    long long n = 0;
    sv_str2ll(argv[at].p, argv[at].len, &n);
    int is_first = n > 0 && at + 1 + n < argc && sv_eq(argv[at + 1 + n], first);
    fire_from_reply_key(c, is_first ? ev_first : ev_second, cls, r, rlen);
}

void sv_ev_blmpop(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    mpop(c, argc, argv, 2, "left", "lpop", "rpop", SV_N_LIST, r, rlen);
}

void sv_ev_lmpop(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    mpop(c, argc, argv, 1, "left", "lpop", "rpop", SV_N_LIST, r, rlen);
}

void sv_ev_bzpop(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)argc;
    fire_from_reply_key(c, (argv[0].p[5] | 32) == 'i' ? "zpopmin" : "zpopmax", SV_N_ZSET, r, rlen);
}

void sv_ev_bzmpop(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    mpop(c, argc, argv, 2, "min", "zpopmin", "zpopmax", SV_N_ZSET, r, rlen);
}

void sv_ev_zmpop(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    mpop(c, argc, argv, 1, "min", "zpopmin", "zpopmax", SV_N_ZSET, r, rlen);
}

/* The destinations of the STORE forms whose key is not argv[1] (a result was stored:
 * the reply is a positive count; an empty result's "del" is fired where the key is
 * deleted, sv_db_delete_notify) */
void sv_ev_bitop(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)argc, (void)r, (void)rlen;
    sv_notify(c->sh, SV_N_STRING, "set", argv[2]);
}

void sv_ev_copy(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)argc, (void)r, (void)rlen;
    sv_notify(c->sh, SV_N_GENERIC, "copy_to", argv[2]);
}

/* GEORADIUS key lon lat radius unit ... / GEORADIUSBYMEMBER key member radius unit ...:
 * the key after the last STORE or STOREDIST */
void sv_ev_georadius(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)r, (void)rlen;
    int at = -1;
    for (int i = argv[0].len == 9 ? 6 : 5; i + 1 < argc; i++)
        if (sv_eq(argv[i], "store") || sv_eq(argv[i], "storedist")) at = ++i;
    if (at > 0) sv_notify(c->sh, SV_N_ZSET, "georadiusstore", argv[at]);
}

/* SORT key [BY p] [LIMIT o n] [GET p ...] [ASC|DESC] [ALPHA] STORE dst */
void sv_ev_sort(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)r, (void)rlen;
    int at = -1;
    for (int i = 2; i + 1 < argc; i++) {
        if (sv_eq(argv[i], "store")) at = ++i;
        else if (sv_eq(argv[i], "by") || sv_eq(argv[i], "get")) i++;
        else if (sv_eq(argv[i], "limit")) i += 2;
    }
    if (at > 0) sv_notify(c->sh, SV_N_LIST, "sortstore", argv[at]);
}

void sv_ev_expire(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)argc;
    (void)r;
    (void)rlen;
    /* a time in the past deletes the key: Redis fires "del" then */
    sv_notify(c->sh, SV_N_GENERIC, sv_db_lookup_write(c->sh, argv[1]) ? "expire" : "del", argv[1]);
}

void sv_ev_getex(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)r;
    (void)rlen;
    if (argc < 3) return;
    if (sv_eq(argv[2], "persist")) sv_notify(c->sh, SV_N_GENERIC, "persist", argv[1]);
    else sv_notify(c->sh, SV_N_GENERIC, sv_db_lookup_write(c->sh, argv[1]) ? "expire" : "del", argv[1]);
}

void sv_ev_rename(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)argc;
    (void)r;
    (void)rlen;
    if (argv[1].len == argv[2].len && !memcmp(argv[1].p, argv[2].p, argv[1].len)) return; /* same key */
    sv_notify(c->sh, SV_N_GENERIC, "rename_from", argv[1]);
    sv_notify(c->sh, SV_N_GENERIC, "rename_to", argv[2]);
}

/* slotlane.rename_from / slotlane.rename_to: the event is the command's name */
void sv_ev_rename_step(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)argc, (void)r, (void)rlen;
    sv_notify(c->sh, SV_N_GENERIC, argv[0].p[argv[0].len - 1] == 'm' ? "rename_from" : "rename_to", argv[1]);
}

/* LMOVE/BLMOVE src dst FROM TO, RPOPLPUSH/BRPOPLPUSH src dst: the push on dst, then
 * the pop on src (Redis's order) */
void sv_ev_lmove(sv_ctx *c, int argc, sv_str *argv, const char *r, size_t rlen)
{
    (void)r;
    (void)rlen;
    int from_left = 0, to_left = 1;
    if (argc >= 5 && (argv[0].len == 5 || argv[0].len == 6)) { /* lmove / blmove */
        from_left = sv_eq(argv[3], "left");
        to_left = sv_eq(argv[4], "left");
    }
    sv_notify(c->sh, SV_N_LIST, to_left ? "lpush" : "rpush", argv[2]);
    sv_notify(c->sh, SV_N_LIST, from_left ? "lpop" : "rpop", argv[1]);
}

static int reply_says_changed(int rule, const char *r, size_t rlen)
{
    if (rlen == 0 || r[0] == '-' || r[0] == '!') return 0; /* parked, or an error */
    if (rule == SV_EV_ANY) return 1;
    if (r[0] == '_' || (r[0] == '$' && r[1] == '-') || (r[0] == '*' && (r[1] == '-' || r[1] == '0'))) return 0;
    if (r[0] == ':') return r[1] != '0' && r[1] != '-';
    return 1;
}

void sv_notify_begin(sv_shard *sh)
{
    sv_nq *nq = queue_of(sh);
    if (nq->depth < NQ_DEPTH) nq->start[nq->depth] = nq->q.len;
    nq->depth++;
}

static size_t entry_len(const char *at)
{
    size_t elen, klen;
    memcpy(&elen, at + sizeof(int), sizeof(size_t));
    memcpy(&klen, at + sizeof(int) + sizeof(size_t), sizeof(size_t));
    return sizeof(int) + 2 * sizeof(size_t) + elen + klen;
}

void sv_notify_end(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t reply_off)
{
    sv_notify_end_on(c, cmd, argc, argv, reply_off, c->sh);
}

void sv_notify_end_on(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t reply_off, sv_shard *pub)
{
    sv_shard *sh = c->sh;
    sv_nq *nq = sh->ntf;
    size_t queued = nq->q.len;
    /* the command's own event first, then what it queued inside */
    const char *r = c->r.out->data + reply_off;
    size_t rlen = c->r.out->len - reply_off;
    if (cmd->ev_class && cmd->ev_rule < SV_EV_INSIDE && argc >= 2 && reply_says_changed(cmd->ev_rule, r, rlen)) {
        if (cmd->ev_fire) cmd->ev_fire(c, argc, argv, r, rlen);
        else sv_notify(sh, cmd->ev_class, cmd->event, argv[1]);
    }
    /* order this command's events as Redis fires them: what the lookups and key
     * creation fired before it changed anything ("expired", "new"), its own event
     * (appended just now), then the rest of what it fired inside (the "del" of an
     * emptied key; each key's "new" and "set" of MSET in their order) */
    size_t start = nq->depth <= NQ_DEPTH ? nq->start[nq->depth - 1] : 0;
    size_t lead = start;
    while (lead < queued) {
        int cls;
        memcpy(&cls, nq->q.data + lead, sizeof(int));
        if (!(cls & (SV_N_NEW | SV_N_EXPIRED | SV_N_KEY_MISS))) break;
        lead += entry_len(nq->q.data + lead);
    }
    if (queued < nq->q.len && lead < queued) { /* move the own events before the rest */
        size_t own = nq->q.len - queued, rest = queued - lead;
        char *tmp = sv_malloc(rest);
        memcpy(tmp, nq->q.data + lead, rest);
        memmove(nq->q.data + lead, nq->q.data + queued, own);
        memcpy(nq->q.data + lead + own, tmp, rest);
        free(tmp);
    }
    if (--nq->depth > 0) return; /* inside EXEC: published after it, in this order */
    sv_buf q = nq->q;
    nq->q = (sv_buf){0};
    for (size_t at = 0; at < q.len;) {
        size_t elen, klen;
        memcpy(&elen, q.data + at + sizeof(int), sizeof(size_t));
        memcpy(&klen, q.data + at + sizeof(int) + sizeof(size_t), sizeof(size_t));
        const char *ev = q.data + at + sizeof(int) + 2 * sizeof(size_t);
        publish_one(pub, ev, elen, (sv_str){ev + elen, klen});
        at += entry_len(q.data + at);
    }
    q.len = 0;
    if (!nq->q.data) nq->q = q; /* keep the buffer */
    else sv_buf_free(&q);
}

size_t sv_notify_mark(sv_shard *sh) { return sh->ntf ? sh->ntf->q.len : 0; }

void sv_notify_drop_since(sv_shard *sh, size_t mark, int keep)
{
    sv_nq *nq = sh->ntf;
    if (!nq || nq->q.len <= mark) return;
    size_t to = mark;
    for (size_t at = mark; at < nq->q.len;) {
        size_t n = entry_len(nq->q.data + at);
        int cls;
        memcpy(&cls, nq->q.data + at, sizeof(int));
        if (cls & keep) {
            memmove(nq->q.data + to, nq->q.data + at, n);
            to += n;
        }
        at += n;
    }
    nq->q.len = to;
}

void sv_notify_free_shard(sv_shard *sh)
{
    if (!sh->ntf) return;
    sv_buf_free(&sh->ntf->q);
    free(sh->ntf);
    sh->ntf = NULL;
}

/* ---- CONFIG ---- */

int sv_notify_parse(sv_str s, int *flags)
{
    int f = 0;
    for (size_t i = 0; i < s.len; i++) {
        switch (s.p[i]) {
        case 'A': f |= SV_N_ALL; break;
        case 'g': f |= SV_N_GENERIC; break;
        case '$': f |= SV_N_STRING; break;
        case 'l': f |= SV_N_LIST; break;
        case 's': f |= SV_N_SET; break;
        case 'h': f |= SV_N_HASH; break;
        case 'z': f |= SV_N_ZSET; break;
        case 'x': f |= SV_N_EXPIRED; break;
        case 'e': f |= SV_N_EVICTED; break;
        case 'K': f |= SV_N_KEYSPACE; break;
        case 'E': f |= SV_N_KEYEVENT; break;
        case 't': f |= SV_N_STREAM; break;
        case 'm': f |= SV_N_KEY_MISS; break;
        case 'd': f |= SV_N_MODULE; break;
        case 'n': f |= SV_N_NEW; break;
        default: return 0;
        }
    }
    *flags = f;
    return 1;
}

void sv_notify_format(int flags, char *out, size_t cap)
{
    char b[32];
    int n = 0;
    if ((flags & SV_N_ALL) == SV_N_ALL) {
        b[n++] = 'A';
    } else {
        static const struct { int f; char c; } order[] = {
            {SV_N_GENERIC, 'g'}, {SV_N_STRING, '$'}, {SV_N_LIST, 'l'}, {SV_N_SET, 's'}, {SV_N_HASH, 'h'},
            {SV_N_ZSET, 'z'}, {SV_N_EXPIRED, 'x'}, {SV_N_EVICTED, 'e'}, {SV_N_STREAM, 't'}, {SV_N_MODULE, 'd'}};
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
            if (flags & order[i].f) b[n++] = order[i].c;
        if (flags & SV_N_NEW) b[n++] = 'n'; /* (not shown after A: Redis 7.0 does the same) */
    }
    if (flags & SV_N_KEYSPACE) b[n++] = 'K';
    if (flags & SV_N_KEYEVENT) b[n++] = 'E';
    if (flags & SV_N_KEY_MISS) b[n++] = 'm';
    b[n] = 0;
    snprintf(out, cap, "%s", b);
}
