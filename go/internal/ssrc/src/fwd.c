/* fwd: see fwd.h. */
#include "fwd.h"
#include "script.h"
#include "aof.h"
#include "blocking.h"
#include "pubsub.h"
#include "tracking.h"

#include <stdio.h>

#include "fwd_multi.h"

enum { K_PLAIN, K_SUM, K_OK, K_MGET, K_CONCAT, K_COORD, K_SILENT /* the reply is dropped */, K_SAME,
       K_KILL /* SCRIPT/FUNCTION KILL: the busy shard's answer */ };

typedef struct sv_pend {
    struct sv_pend *next;
    int waiting; /* parts still at other shards */
    int local;   /* replies of commands run here: later local replies join it */
    int kind;
    int nparts;
    sv_buf out;    /* the reply, once complete */
    sv_buf *parts; /* per part (merged kinds) */
    int *order;    /* MGET: part of each key */
    int norder;
    int mute;      /* CLIENT REPLY OFF/SKIP: the reply is dropped when it drains */
    void *coord;   /* K_COORD: the coordinator's state (fwd_multi.c) */
    size_t counted; /* reply bytes held here, counted in the connection's pend_bytes */
} sv_pend;

typedef struct sv_fmsg {
    struct sv_fmsg *next;
    sv_conn *conn;
    sv_pend *pend;
    int part;
    int src, dst;
    int proto;
    int is_reply;
    int must_run;  /* a coordinated step: runs even for a dropped client (a RENAME's restore) */
    int part_role; /* a coordinated XREAD's part that may park: 1 primary, 2 secondary (blocking.h) */
    int track;     /* CLIENT TRACKING: the owner remembers the keys a read of it names */
    int trk;       /* not a request: an invalidation for client_id (SV_TRK_* | TRK_MSG), key in reply */
    uint64_t client_id;
    int argc;
    sv_str *argv;
    sv_buf reply;
    sv_buf mem; /* argv and the argument bytes; kept with the message when recycled */
} sv_fmsg;

#define TRK_MSG 256 /* sv_fmsg.trk of a tracking message (with its SV_TRK_* bits) */

/* Set while sv_fwd_process dispatches a read its client tracks: the messages it makes
 * carry it (the first round of a coordinated read too, not its later steps). */
static _Thread_local int dispatch_tracked;

/* ---- recycling ----
 * A message is made by the receiving shard, runs at the owner and comes back to its
 * maker, which frees it; a reply slot lives and dies on the receiving shard. Both
 * free lists are therefore touched by one thread only and need no synchronisation.
 * Recycled objects keep their buffers (up to POOL_BUF_KEEP bytes), so a steady load
 * allocates nothing per forwarded command, and no buffer made by one thread is freed
 * by another on the hot path (glibc then takes the other arena's lock). */
#define POOL_MAX 4096       /* free objects kept per shard and kind */
#define POOL_BUF_KEEP 4096  /* larger buffers are freed, not kept */

typedef struct sv_fwd_pool {
    sv_fmsg *msgs;
    sv_pend *pends;
    int nmsgs, npends;
    sv_fmsg *def_head, *def_tail; /* taken while a script was busy, run after it (sv_fwd_busy_service) */
} sv_fwd_pool;

/* The per-source queue heads of a shard sit a cache line apart: producers on
 * different CPUs do not contend for one line (fwd_in[s * QSTRIDE]). */
#define QSTRIDE (64 / sizeof(void *))

/* The counters have one writer (their shard's thread) and are read by INFO on any
 * thread: a relaxed load and store, no locked read-modify-write per command. */
static inline void bump(atomic_uint_fast64_t *x)
{
    atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + 1, memory_order_relaxed);
}

static void buf_trim(sv_buf *b)
{
    b->len = 0;
    if (b->cap > POOL_BUF_KEEP) sv_buf_free(b);
}

/* ---- messages and queues ---- */

static sv_fmsg *msg_new(sv_conn *c, int n, sv_str *argv, const int *idx)
{
    size_t bytes = 0;
    for (int i = 0; i < n; i++) bytes += argv[idx ? idx[i] : i].len;
    sv_fwd_pool *pool = c->sh->fwd_pool;
    sv_fmsg *m = pool->msgs;
    if (m) {
        pool->msgs = m->next;
        pool->nmsgs--;
        sv_buf keep_reply = m->reply, keep_mem = m->mem;
        memset(m, 0, sizeof(*m));
        m->reply = keep_reply;
        m->mem = keep_mem;
    } else {
        m = sv_calloc(1, sizeof(*m));
    }
    /* every argument NUL-terminated: some commands read one byte past an argument,
     * as Redis's code does (the parser's buffer has the CR there) */
    sv_buf_reserve(&m->mem, sizeof(sv_str) * (size_t)n + bytes + (size_t)n);
    m->argv = (sv_str *)m->mem.data;
    char *p = (char *)(m->argv + n);
    for (int i = 0; i < n; i++) {
        sv_str a = argv[idx ? idx[i] : i];
        if (a.len) memcpy(p, a.p, a.len);
        m->argv[i].p = p;
        m->argv[i].len = a.len;
        p += a.len;
        *p++ = 0;
    }
    m->argc = n;
    m->conn = c;
    m->src = c->sh->index;
    m->proto = c->sess.proto;
    m->client_id = c->sess.id;
    m->track = dispatch_tracked;
    return m;
}

/* Back to its maker's free list (or freed when that is full or gone). */
static void msg_free(sv_fmsg *m)
{
    sv_fwd_pool *pool = sv_shards[m->src].fwd_pool;
    if (pool && pool->nmsgs < POOL_MAX) {
        buf_trim(&m->reply);
        buf_trim(&m->mem);
        m->next = pool->msgs;
        pool->msgs = m;
        pool->nmsgs++;
        return;
    }
    sv_buf_free(&m->reply);
    sv_buf_free(&m->mem);
    free(m);
}

/* Adds m to this turn's batch for shard t (published by on_check). */
static void push(sv_shard *sh, int t, sv_fmsg *m)
{
    m->next = sh->fwd_first[t];
    if (!m->next) {
        sh->fwd_last[t] = m;
        sh->fwd_dirty[sh->nfwd_dirty++] = t;
    }
    sh->fwd_first[t] = m;
}

/* Puts first..last (newest first) on shard t's queue from sh with one CAS. */
static void publish_to(sv_shard *sh, int t, sv_fmsg *first, sv_fmsg *last)
{
    sv_fmsg *_Atomic *head = &sv_shards[t].fwd_in[(size_t)sh->index * QSTRIDE];
    sv_fmsg *old = atomic_load_explicit(head, memory_order_relaxed);
    do {
        last->next = old;
    } while (!atomic_compare_exchange_weak_explicit(head, &old, first, memory_order_release, memory_order_relaxed));
    if (!old) { /* the target has taken everything we sent before: wake it */
        bump(&sh->fwd_wakeups);
        uv_async_send(&sv_shards[t].fwd_async);
    }
}

/* Takes everything shard s queued for sh, oldest first. */
static sv_fmsg *take_from(sv_shard *sh, int s)
{
    sv_fmsg *l = atomic_exchange_explicit(&sh->fwd_in[(size_t)s * QSTRIDE], NULL, memory_order_acquire);
    sv_fmsg *fifo = NULL; /* the list is newest first: reverse it */
    while (l) {
        sv_fmsg *n = l->next;
        l->next = fifo;
        fifo = l;
        l = n;
    }
    return fifo;
}

static void publish(sv_shard *sh)
{
    if (sh->aof) sv_aof_before_reply(sh); /* replies of forwarded writes acknowledge them */
    for (int k = 0; k < sh->nfwd_dirty; k++) {
        int t = sh->fwd_dirty[k];
        sv_fmsg *first = sh->fwd_first[t], *last = sh->fwd_last[t];
        sh->fwd_first[t] = sh->fwd_last[t] = NULL;
        publish_to(sh, t, first, last);
    }
    sh->nfwd_dirty = 0;
}

static void on_check(uv_check_t *h)
{
    sv_shard *sh = h->data;
    if (sh->nfwd_dirty) publish(sh);
}

/* ---- ordered replies ---- */

static sv_pend *pend_add(sv_conn *c)
{
    sv_fwd_pool *pool = c->sh->fwd_pool;
    sv_pend *p = pool->pends;
    if (p) {
        pool->pends = p->next;
        pool->npends--;
        sv_buf keep = p->out;
        memset(p, 0, sizeof(*p));
        p->out = keep;
    } else {
        p = sv_calloc(1, sizeof(*p));
    }
    if (c->pend_tail) c->pend_tail->next = p;
    else c->pend_head = p;
    c->pend_tail = p;
    return p;
}

static void pend_free(sv_shard *sh, sv_pend *p)
{
    if (p->parts)
        for (int i = 0; i < p->nparts; i++) sv_buf_free(&p->parts[i]);
    free(p->parts);
    free(p->order);
    if (p->coord) {
        sv_fwdm_free(p->coord);
        p->coord = NULL;
    }
    sv_fwd_pool *pool = sh->fwd_pool;
    if (pool && pool->npends < POOL_MAX) {
        buf_trim(&p->out);
        p->next = pool->pends;
        pool->pends = p;
        pool->npends++;
        return;
    }
    sv_buf_free(&p->out);
    free(p);
}

/* Replies held in slots are unsent replies: they count against the output limit. */
static void count(sv_conn *c, sv_pend *p, size_t n)
{
    p->counted += n;
    c->pend_bytes += n;
}

void sv_fwd_free_pending(sv_conn *c)
{
    while (c->pend_head) {
        sv_pend *p = c->pend_head;
        c->pend_head = p->next;
        pend_free(c->sh, p);
    }
    c->pend_tail = NULL;
    c->hold = NULL;
    c->pend_bytes = 0;
}

sv_buf *sv_fwd_reply_buf(sv_conn *c)
{
    if (!c->pend_head) return &c->out;
    /* consecutive commands run here share one slot: fewer slots to fill and drain */
    if (c->pend_tail->local) return &c->pend_tail->out;
    sv_pend *p = pend_add(c);
    p->local = 1;
    return &p->out;
}

void sv_fwd_mute_since(sv_conn *c, struct sv_pend *tail, size_t len)
{
    sv_pend *p = tail ? tail->next : c->pend_head;
    sv_buf *last = tail ? &tail->out : c->pend_head ? NULL : &c->out;
    if (last && last->len >= len) last->len = len; /* (a local reply joined what was last) */
    for (; p; p = p->next) {
        p->mute = 1;
        p->local = 0; /* the next command's reply must not join a muted slot */
    }
}

/* Moves the completed prefix of the slots to the output buffer. */
static void drain(sv_conn *c)
{
    sv_pend *p;
    while ((p = c->pend_head) && p->waiting == 0) {
        if (p->mute) p->out.len = 0;
        if (c->out.len == 0) {
            sv_buf t = c->out;
            c->out = p->out;
            p->out = t;
        } else {
            sv_buf_append(&c->out, p->out.data, p->out.len);
        }
        c->pend_head = p->next;
        if (!c->pend_head) c->pend_tail = NULL;
        if (p == c->hold) c->hold = NULL; /* its read batch is complete: write it */
        c->pend_bytes -= p->counted;
        pend_free(c->sh, p);
    }
}

/* ---- merging the parts of a split command ---- */

static int parse_line_ll(const char *p, size_t n, long long *v)
{
    const char *e = memchr(p, '\r', n);
    if (!e) return 0;
    return sv_str2ll(p + 1, (size_t)(e - p - 1), v);
}

/* Length of one simple RESP element (bulk, null, integer, status) at p. */
static size_t elem_len(const char *p, size_t n)
{
    const char *e = memchr(p, '\n', n);
    if (!e) return n;
    size_t line = (size_t)(e - p) + 1;
    if (p[0] == '$') {
        long long len;
        if (parse_line_ll(p, n, &len) && len >= 0) line += (size_t)len + 2;
    }
    return line > n ? n : line;
}

static void merge(sv_conn *c, sv_pend *p)
{
    sv_reply r = {&p->out, c->sess.proto};
    if (p->kind == K_KILL) { /* the shard running a script answers; the others are not busy */
        int k = 0;
        for (int i = 0; i < p->nparts; i++)
            if (p->parts[i].len && !(p->parts[i].len >= 8 && memcmp(p->parts[i].data, "-NOTBUSY", 8) == 0)) {
                k = i;
                break;
            }
        sv_buf_append(&p->out, p->parts[k].data, p->parts[k].len);
        return;
    }
    for (int i = 0; i < p->nparts; i++) /* an error in a part is the reply */
        if (p->parts[i].len && p->parts[i].data[0] == '-') {
            sv_buf_append(&p->out, p->parts[i].data, p->parts[i].len);
            return;
        }
    if (p->kind == K_OK) {
        sv_add_ok(&r);
    } else if (p->kind == K_SAME) { /* every shard gave the same answer (a library name, a sha) */
        sv_buf_append(&p->out, p->parts[0].data, p->parts[0].len);
    } else if (p->kind == K_SUM) {
        long long sum = 0, v;
        for (int i = 0; i < p->nparts; i++)
            if (p->parts[i].len && parse_line_ll(p->parts[i].data, p->parts[i].len, &v)) sum += v;
        sv_add_int(&r, sum);
    } else if (p->kind == K_CONCAT) {
        long long total = 0, v;
        size_t off[SV_MAX_SHARDS];
        for (int i = 0; i < p->nparts; i++) {
            sv_buf *b = &p->parts[i];
            off[i] = b->len;
            if (b->len && (b->data[0] == '*' || b->data[0] == '~') && parse_line_ll(b->data, b->len, &v) && v > 0) {
                total += v;
                off[i] = (size_t)((const char *)memchr(b->data, '\n', b->len) - b->data) + 1;
            }
        }
        sv_add_array(&r, total);
        for (int i = 0; i < p->nparts; i++) sv_buf_append(&p->out, p->parts[i].data + off[i], p->parts[i].len - off[i]);
    } else { /* K_MGET */
        size_t off[SV_MAX_SHARDS];
        for (int i = 0; i < p->nparts; i++) {
            const char *nl = p->parts[i].len ? memchr(p->parts[i].data, '\n', p->parts[i].len) : NULL;
            off[i] = nl ? (size_t)(nl - p->parts[i].data) + 1 : p->parts[i].len;
        }
        sv_add_array(&r, p->norder);
        for (int k = 0; k < p->norder; k++) {
            sv_buf *b = &p->parts[p->order[k]];
            size_t *o = &off[p->order[k]];
            if (*o >= b->len) {
                sv_add_null(&r);
                continue;
            }
            size_t n = elem_len(b->data + *o, b->len - *o);
            sv_buf_append(&p->out, b->data + *o, n);
            *o += n;
        }
    }
}

static void resume_paused(sv_shard *sh);

/* ---- the receiving shard ---- */

static void deliver(sv_shard *sh, sv_fmsg *m)
{
    sv_conn *c = m->conn;
    c->fwd_outstanding--;
    atomic_fetch_sub_explicit(&c->fwd_bytes, (long long)m->reply.len, memory_order_relaxed);
    if (!c->closing && atomic_load_explicit(&c->dropped, memory_order_relaxed))
        sv_conn_drop_over_limit(c); /* an owner shard saw the limit passed */
    sh->fwd_inflight[m->dst]--;
    if (m->pend->kind == K_COORD) {
        /* a coordinated command finishes even when its client has gone: its later
         * steps (a RENAME's restore) must not be lost */
        sv_pend *p = m->pend;
        sv_fwdm_reply(c, p->coord, m->part, &m->reply);
        msg_free(m);
        if (c->closing) {
            if (c->handle_closed && c->fwd_outstanding == 0) sv_conn_free(c);
        } else if (p == c->pend_head && p->waiting == 0) {
            drain(c);
            sv_conn_queue_flush(c);
        }
        return;
    }
    if (c->closing) {
        if (c->handle_closed && c->fwd_outstanding == 0) sv_conn_free(c);
        msg_free(m);
        return;
    }
    sv_pend *p = m->pend;
    if (p->kind == K_SILENT) { /* slotlane.unwatch: nothing for the client */
        msg_free(m);
        if (--p->waiting == 0 && p == c->pend_head) {
            drain(c);
            sv_conn_queue_flush(c);
        }
        return;
    }
    count(c, p, m->reply.len);
    sv_buf t;
    if (p->kind == K_PLAIN) {
        t = p->out;
        p->out = m->reply;
    } else {
        t = p->parts[m->part];
        p->parts[m->part] = m->reply;
    }
    m->reply = t;
    msg_free(m);
    if (--p->waiting == 0 && p->kind != K_PLAIN) merge(c, p);
    if (p == c->blk_remote) { /* a command parked at another shard answered: go on */
        c->blk_remote = NULL;
        c->blk_wait = 0;
        sv_block_resume_later(sh, c);
    }
    if (p == c->pend_head && p->waiting == 0) {
        drain(c);
        sv_conn_queue_flush(c);
    }
}

/* The reply of a request run here goes back to its shard. */
static void reply_back(sv_shard *sh, sv_fmsg *m)
{
    /* replies on their way back are unsent replies: past the limit, the client is
     * dropped (flagged here, closed by its own shard when this reply arrives) */
    long long held = atomic_fetch_add_explicit(&m->conn->fwd_bytes, (long long)m->reply.len, memory_order_relaxed) +
                     (long long)m->reply.len;
    if (held > sv_cfg.output_limit) atomic_store_explicit(&m->conn->dropped, 1, memory_order_relaxed);
    bump(&sh->fwd_executed);
    m->is_reply = 1;
    push(sh, m->src, m);
}

/* A forwarded request parked here (blocking.c): its reply is the message's. */
static sv_buf *remote_reply_buf(void *owner) { return &((sv_fmsg *)owner)->reply; }

static void remote_done(void *owner, int how)
{
    sv_fmsg *m = owner;
    sv_shard *sh = &sv_shards[m->dst];
    if (how == SV_BLOCK_CANCELLED) { /* shutdown: the client gets a null, not silence */
        sv_reply r = {&m->reply, m->proto};
        sv_add_null_array(&r);
    }
    reply_back(sh, m);
}

/* The client disconnected (its shard set the flag): the message goes back empty. */
static int remote_gone(void *owner)
{
    sv_fmsg *m = owner;
    if (!atomic_load_explicit(&m->conn->dropped, memory_order_relaxed)) return 0;
    m->is_reply = 1;
    push(&sv_shards[m->dst], m->src, m);
    return 1;
}

static const sv_block_owner remote_ops = {remote_reply_buf, remote_done, remote_gone};

/* Runs a forwarded request here (the owner) and queues the reply back. */
static void execute_request(sv_shard *sh, sv_fmsg *m)
{
    if (!m->must_run && atomic_load_explicit(&m->conn->dropped, memory_order_relaxed)) {
        /* its client is gone for passing the output limit: no reply would reach it,
         * and running a flood of large reads for it would only fill memory. (The
         * connection stays allocated while this message is out.) */
        m->is_reply = 1;
        push(sh, m->src, m);
        return;
    }
    sv_session s;
    memset(&s, 0, sizeof(s));
    s.id = m->client_id;
    s.proto = m->proto;
    /* the sender routed it here (all its keys are ours): no second routing check */
    if (m->track) s.trk = sv_tracking_standin(m->src); /* its reads remembered for its client */
    sv_ctx ctx = {.sh = sh, .sess = &s, .r = {&m->reply, m->proto}, .noroute = 1};
    ctx.can_block = !m->must_run;
    ctx.coord_part = m->part_role != 0;
    sv_tracking_before_command(sh, &s); /* its own invalidations are marked so (NOLOOP) */
    sv_execute(&ctx, m->argc, m->argv);
    sv_tracking_after_command(sh, &s, m->argc, m->argv, &m->reply);
    s.trk = NULL;
    if (ctx.blocked) { /* parked here; the reply goes back when it is served */
        sv_block_attach(ctx.blocked, &remote_ops, m, m->argc, m->argv, NULL);
        if (m->part_role) sv_waiter_set_part(ctx.blocked, m->part_role == 2);
        sv_block_serve(sh);
        return;
    }
    reply_back(sh, m);
    sv_block_serve(sh);
}

void sv_fwd_send_tracking(sv_shard *sh, int target, uint64_t id, int how, const sv_str *key)
{
    sv_fmsg *m = sv_calloc(1, sizeof(*m)); /* freed by the target: not recycled (rare) */
    m->src = sh->index;
    m->dst = target;
    m->client_id = id;
    m->trk = TRK_MSG | how;
    m->argc = key != NULL;
    if (key) sv_buf_append(&m->reply, key->p, key->len);
    /* published now, not at the end of the turn: it is in the target's queue before the
     * reply of the write that caused it leaves (sv_fwd_take_tracking); overtaking this
     * turn's batch is harmless, the client's replies keep their slots' order */
    publish_to(sh, target, m, m);
}

static void free_tracking_msg(sv_fmsg *m)
{
    sv_buf_free(&m->reply);
    free(m);
}

static void take_tracking(sv_shard *sh, sv_fmsg *m)
{
    sv_str key = {m->reply.data ? m->reply.data : "", m->reply.len};
    sv_tracking_deliver(sh, m->client_id, m->trk & ~TRK_MSG, m->argc ? &key : NULL);
    free_tracking_msg(m);
}

static void defer(sv_fwd_pool *pool, sv_fmsg *m)
{
    m->next = NULL;
    if (pool->def_tail) pool->def_tail->next = m;
    else pool->def_head = m;
    pool->def_tail = m;
}

void sv_fwd_take_tracking(sv_shard *sh)
{
    sv_fwd_pool *pool = sh->fwd_pool;
    int deferred = 0;
    for (int s = 0; s < sv_cfg.shards; s++) {
        if (s == sh->index || !atomic_load_explicit(&sh->fwd_in[(size_t)s * QSTRIDE], memory_order_relaxed)) continue;
        sv_fmsg *fifo = take_from(sh, s);
        while (fifo) {
            sv_fmsg *m = fifo;
            fifo = m->next;
            if (m->trk) {
                take_tracking(sh, m);
            } else {
                defer(pool, m); /* run by on_async before anything newer from that shard */
                deferred = 1;
            }
        }
    }
    if (deferred) uv_async_send(&sh->fwd_async);
}

static void on_async(uv_async_t *a)
{
    sv_shard *sh = a->data;
    if (sh->stopping) return;
    sh->now_ms = sv_mstime();
    /* A few passes catch what arrived meanwhile without another wakeup; no more: a
     * shard that keeps sending would hold this loop here for good, and the replies
     * of everything run here would pile up unpublished (they leave in on_check, at
     * the end of the turn). Stopping is safe: each exchange leaves the queue empty,
     * so the next batch published after it wakes this loop again. */
    sv_fwd_pool *pool = sh->fwd_pool;
    while (pool->def_head) { /* what a busy script's service took and could not answer */
        sv_fmsg *m = pool->def_head;
        pool->def_head = m->next;
        if (!pool->def_head) pool->def_tail = NULL;
        if (m->trk) take_tracking(sh, m);
        else if (m->is_reply) deliver(sh, m);
        else execute_request(sh, m);
    }
    int busy = 1;
    for (int pass = 0; busy && pass < 4; pass++) {
        busy = 0;
        for (int s = 0; s < sv_cfg.shards; s++) {
            sv_fmsg *fifo = take_from(sh, s);
            if (!fifo) continue;
            busy = 1;
            int run = 0;
            while (fifo) {
                sv_fmsg *m = fifo;
                fifo = m->next;
                if (m->trk) {
                    take_tracking(sh, m);
                } else if (m->is_reply) {
                    deliver(sh, m);
                } else {
                    execute_request(sh, m);
                    /* a long batch sends its replies back as it goes: held until the end
                     * of the batch, the replies to a client that pipelines thousands of
                     * large reads would all sit here at once, out of reach of the
                     * output limit its own shard enforces */
                    if (++run % 32 == 0 && sh->nfwd_dirty) publish(sh);
                }
            }
        }
    }
    if (sh->fwd_paused) resume_paused(sh);
    sv_block_serve(sh); /* connections whose parked command answered from another shard */
    sv_conn_flush_queued(sh);
}

/* ---- a busy script (script.c) ---- */

void sv_fwd_busy_service(sv_shard *sh, sv_fwd_busy_fn *answer, void *ud)
{
    if (!sh->fwd_on) return;
    sv_fwd_pool *pool = sh->fwd_pool;
    int deferred = 0;
    for (int s = 0; s < sv_cfg.shards; s++) {
        sv_fmsg *fifo = take_from(sh, s);
        while (fifo) {
            sv_fmsg *m = fifo;
            fifo = m->next;
            sv_reply r = {&m->reply, m->proto};
            if (m->trk || m->is_reply || m->must_run || !answer(ud, m->client_id, &r, m->argc, m->argv)) {
                /* replies run coordinators and drain connections (not from inside a
                 * script); a coordinated step must run (a RENAME's restore); the
                 * script's own client's next requests follow it: all of them wait */
                defer(pool, m);
                deferred = 1;
                continue;
            }
            /* a client's request: answered as the shard's own clients are (-BUSY, or
             * the KILL it asks for), and sent back at once, alone: the batch of this
             * turn may hold replies whose writes the log has not written yet */
            bump(&sh->fwd_executed);
            bump(&sh->fwd_busy_replies);
            m->is_reply = 1;
            publish_to(sh, m->src, m, m);
        }
    }
    if (deferred) uv_async_send(&sh->fwd_async); /* runs them once the script is over */
}

/* ---- dispatch ---- */

static sv_fmsg *send_part(sv_conn *c, sv_pend *p, int part, int owner, int n, sv_str *argv, const int *idx)
{
    sv_fmsg *m = msg_new(c, n, argv, idx);
    m->pend = p;
    m->part = part;
    m->dst = owner;
    c->fwd_outstanding++;
    p->waiting++;
    c->sh->fwd_inflight[owner]++;
    bump(&c->sh->fwd_commands);
    push(c->sh, owner, m);
    return m;
}

/* ---- the coordinator's side (fwd_multi.c) ---- */

sv_pend *sv_fwd_coord_slot(sv_conn *c, void *state)
{
    sv_pend *p = pend_add(c);
    p->kind = K_COORD;
    p->waiting = 1; /* until sv_fwd_coord_finish */
    p->coord = state;
    c->coord_active++;
    return p;
}

/* A coordinator's request (its reply comes back to sv_fwdm_reply with step). */
static sv_fmsg *coord_msg(sv_conn *c, sv_pend *p, int step, int owner, int argc, sv_str *argv)
{
    sv_fmsg *m = msg_new(c, argc, argv, NULL);
    m->pend = p;
    m->part = step;
    m->dst = owner;
    c->fwd_outstanding++;
    c->sh->fwd_inflight[owner]++;
    bump(&c->sh->fwd_commands);
    push(c->sh, owner, m);
    return m;
}

void sv_fwd_coord_send(sv_conn *c, sv_pend *p, int step, int owner, int argc, sv_str *argv)
{
    sv_fmsg *m = coord_msg(c, p, step, owner, argc, argv);
    m->proto = 2; /* the coordinator parses RESP2 */
    m->must_run = 1;
}

void sv_fwd_coord_park(sv_conn *c, sv_pend *p, int step, int owner, int argc, sv_str *argv, int secondary)
{
    /* may park there (must_run 0: can_block); replies in the client's protocol */
    coord_msg(c, p, step, owner, argc, argv)->part_role = secondary ? 2 : 1;
}

void sv_fwd_coord_settle(sv_conn *c, sv_pend *p)
{
    if (c->closing || p != c->pend_head || p->waiting) return;
    drain(c);
    sv_conn_queue_flush(c);
}

void sv_fwd_coord_hold(sv_conn *c, void *state)
{
    c->blk_wait = 1;
    c->blk_coord = state;
}

void sv_fwd_coord_unhold(sv_conn *c)
{
    c->blk_wait = 0;
    c->blk_coord = NULL;
    if (!c->closing) sv_block_resume_later(c->sh, c); /* its later requests run now */
}

sv_buf *sv_fwd_coord_out(sv_pend *p) { return &p->out; }

void sv_fwd_coord_finish(sv_conn *c, sv_pend *p)
{
    p->waiting = 0;
    c->coord_active--;
    c->coord_changed = 1; /* a connection paused behind it resumes at the end of on_async */
}

/* ---- a parked command's slot (blocking.c, via conn.c) ---- */

sv_pend *sv_fwd_later_slot(sv_conn *c)
{
    sv_pend *p = pend_add(c);
    p->kind = K_PLAIN;
    p->waiting = 1;
    return p;
}

sv_buf *sv_fwd_later_out(sv_pend *p) { return &p->out; }

void sv_fwd_later_done(sv_conn *c, sv_pend *p)
{
    count(c, p, p->out.len);
    p->waiting = 0;
    if (p == c->pend_head) drain(c);
}

/* ---- backpressure ---- */

static int target_full(sv_shard *sh, int t) { return t != sh->index && sh->fwd_inflight[t] >= sv_cfg.forward_queue; }

/* The command cannot be sent now: stop reading the connection (the caller leaves
 * the request in the read buffer) until shard t has answered some requests. */
static void pause_conn(sv_conn *c, int t)
{
    sv_shard *sh = c->sh;
    if (t >= 0) bump(&sh->fwd_queue_full);
    else c->coord_changed = 0;
    c->blocked_on = t;
    if (!c->fwd_paused) {
        c->fwd_paused = 1;
        c->paused_next = sh->fwd_paused;
        sh->fwd_paused = c;
        uv_read_stop((uv_stream_t *)&c->tcp);
    }
}

void sv_fwd_unpause(sv_conn *c)
{
    if (!c->fwd_paused) return;
    for (sv_conn **pp = &c->sh->fwd_paused; *pp; pp = &(*pp)->paused_next)
        if (*pp == c) {
            *pp = c->paused_next;
            break;
        }
    c->fwd_paused = 0;
}

/* After replies came back: resumes the paused connections whose target has room. */
static void resume_paused(sv_shard *sh)
{
    sv_conn *l = sh->fwd_paused;
    sh->fwd_paused = NULL;
    while (l) {
        sv_conn *c = l;
        l = c->paused_next;
        if (c->blocked_on < 0 ? !c->coord_changed : target_full(sh, c->blocked_on)) { /* stays paused */
            c->paused_next = sh->fwd_paused;
            sh->fwd_paused = c;
            continue;
        }
        c->fwd_paused = 0;
        sv_conn_resume(c); /* may pause it again */
    }
}

static void run_local(sv_conn *c, sv_buf *out, int argc, sv_str *argv, int noroute)
{
    sv_ctx ctx = {.sh = c->sh, .sess = &c->sess, .r = {out, c->sess.proto}, .noroute = noroute};
    ctx.can_block = out == &c->out || (c->pend_tail && out == &c->pend_tail->out); /* not a part */
    size_t before = out->len;
    sv_execute(&ctx, argc, argv);
    /* a reply (or part) written into a slot: the slot is the newest one */
    if (out != &c->out && c->pend_tail) count(c, c->pend_tail, out->len - before);
    if (ctx.close_after) c->close_when_flushed = 1; /* flush closes once no slot is left */
    if (ctx.blocked) /* parked: behind replies still owed, its own slot keeps its place */
        sv_conn_park(c, ctx.blocked, c->pend_head ? sv_fwd_later_slot(c) : NULL, argc, argv);
}

/* The merge of a command split per owner shard (its .split policy), or -1. */
/* ---- transactions (multi.c) across shards ---- */

/* Sends slotlane.unwatch to the shards keeping this connection's watches that were
 * released (all: every other shard's watch, the connection is closing). */
void sv_fwd_release_watches(sv_conn *c, int all)
{
    sv_tx *tx = c->sess.tx;
    if (!tx || (!all && !tx->nreleased)) return;
    int me = c->sh->index;
    sv_str *argv = sv_malloc(sizeof(sv_str) * (size_t)(tx->nw + 1));
    for (int t = 0; t < sv_cfg.shards; t++) {
        if (t == me) continue;
        int n = 1;
        for (int i = 0; i < tx->nw; i++)
            if (tx->w[i].shard == t && (all || tx->w[i].released)) argv[n++] = (sv_str){tx->w[i].key, tx->w[i].len};
        if (n == 1) continue;
        argv[0] = (sv_str){"slotlane.unwatch", 16};
        sv_pend *p = pend_add(c);
        p->kind = K_SILENT;
        send_part(c, p, 0, t, n, argv, NULL)->must_run = 1; /* also for a client dropped at its limit */
    }
    free(argv);
    int k = 0;
    for (int i = 0; i < tx->nw; i++) {
        sv_txwatch *w = &tx->w[i];
        if (w->shard != me && (all || w->released)) free(w->key);
        else tx->w[k++] = *w;
    }
    tx->nw = k;
    tx->nreleased = 0;
}

/* EXEC with forwarding: the queued commands' keys (and the watched keys) must all
 * live on one shard; on another one the transaction goes there as one slotlane.exec
 * (the reply comes back in order as any forwarded reply). Returns 1 when paused. */
static int exec_tx(sv_conn *c, int argc, sv_str *argv)
{
    sv_shard *sh = c->sh;
    int me = sh->index;
    sv_tx *tx = c->sess.tx;
    if (!tx || !tx->in_multi || tx->failed) {
        run_local(c, sv_fwd_reply_buf(c), argc, argv, 0); /* its error */
        sv_fwd_release_watches(c, 0);
        return 0;
    }
    int target = -1, spread = 0;
    for (int i = 0; i < tx->nw; i++) {
        if (tx->w[i].released) continue;
        if (target < 0) target = tx->w[i].shard;
        else if (tx->w[i].shard != target) spread = 1;
    }
    size_t nargs = 3 + 2 * (size_t)tx->nw;
    for (int i = 0; i < tx->nq && !spread; i++) {
        sv_txcmd *q = &tx->q[i];
        nargs += 1 + (size_t)q->argc;
        int keys[64];
        int *kp = q->argc > 64 ? sv_malloc(sizeof(int) * (size_t)q->argc) : keys;
        int nk = sv_cmd_keypos(q->cmd, q->argc, q->argv, kp, q->argc > 64 ? q->argc : 64);
        for (int k = 0; k < nk; k++) {
            int o = sv_slot_owner(sl__key_slot(q->argv[kp[k]].p, q->argv[kp[k]].len));
            if (target < 0) target = o;
            else if (o != target) spread = 1;
        }
        if (kp != keys) free(kp);
    }
    if (spread) { /* as Redis Cluster: the transaction is discarded */
        sv_tx_clear_queue(tx);
        sv_tx_drop_watches(sh, tx, -1);
        sv_reply r = {sv_fwd_reply_buf(c), c->sess.proto};
        size_t before = r.out->len;
        sv_add_error(&r, "-CROSSSLOT Keys in request don't hash to the same slot");
        if (r.out != &c->out && c->pend_tail) count(c, c->pend_tail, r.out->len - before);
        sv_fwd_release_watches(c, 0);
        return 0;
    }
    if (target < 0 || target == me) {
        run_local(c, sv_fwd_reply_buf(c), argc, argv, 0);
        return 0;
    }
    if (target_full(sh, target)) {
        pause_conn(c, target);
        return 1;
    }
    /* slotlane.exec NWATCH [KEY VERSION]... NCMDS [ARGC ARG...]... */
    sv_str *u = sv_malloc(sizeof(sv_str) * nargs);
    char (*num)[24] = sv_malloc(24 * (size_t)(2 + tx->nw + tx->nq));
    int n = 0, nn = 0, nw = 0;
    u[n++] = (sv_str){"slotlane.exec", 13};
    int nwpos = n++;
    for (int i = 0; i < tx->nw; i++) {
        if (tx->w[i].released) continue;
        u[n++] = (sv_str){tx->w[i].key, tx->w[i].len};
        u[n].p = num[nn];
        u[n++].len = sv_ll2str(num[nn++], (long long)tx->w[i].version);
        nw++;
    }
    u[nwpos].p = num[nn];
    u[nwpos].len = sv_ll2str(num[nn++], nw);
    u[n].p = num[nn];
    u[n++].len = sv_ll2str(num[nn++], tx->nq);
    for (int i = 0; i < tx->nq; i++) {
        u[n].p = num[nn];
        u[n++].len = sv_ll2str(num[nn++], tx->q[i].argc);
        for (int k = 0; k < tx->q[i].argc; k++) u[n++] = tx->q[i].argv[k];
    }
    sv_pend *p = pend_add(c);
    p->kind = K_PLAIN;
    send_part(c, p, 0, target, n, u, NULL);
    free(num);
    free(u);
    /* the target releases the watches it keeps as part of the unit */
    int k = 0;
    for (int i = 0; i < tx->nw; i++) {
        if (!tx->w[i].released && tx->w[i].shard == target) free(tx->w[i].key);
        else tx->w[k++] = tx->w[i];
    }
    tx->nw = k;
    sv_tx_clear_queue(tx);
    sv_fwd_release_watches(c, 0);
    return 0;
}

static int split_kind(const sv_cmd *cmd)
{
    switch (cmd->split) {
    case SV_SPLIT_MGET: return K_MGET;
    case SV_SPLIT_PAIRS_OK: return K_OK;
    case SV_SPLIT_SUM: return K_SUM;
    }
    return -1;
}

/* Fan-out to every shard (keyless commands about the whole keyspace). */
/* Scripting state every shard keeps (script.c): in one-port mode and with
 * forwarding these reach every shard, so a script or function loaded through the
 * port runs wherever its keys are. */
static int fans_scripting(const sv_cmd *cmd, int argc, sv_str *argv)
{
    if (argc < 2 || cmd->fan != SV_FAN_SAME) return 0;
    if (cmd->fn == sv_cmd_function)
        return sv_eq(argv[1], "load") || sv_eq(argv[1], "delete") || sv_eq(argv[1], "flush") ||
               sv_eq(argv[1], "restore");
    if (cmd->fn == sv_cmd_script) return sv_eq(argv[1], "load") || sv_eq(argv[1], "flush");
    return 0;
}

static void fan_out(sv_conn *c, int kind, int argc, sv_str *argv)
{
    int n = sv_cfg.shards, me = c->sh->index;
    sv_pend *p = pend_add(c);
    p->kind = kind;
    p->nparts = n;
    p->parts = sv_calloc((size_t)n, sizeof(sv_buf));
    run_local(c, &p->parts[me], argc, argv, 0);
    for (int t = 0; t < n; t++)
        if (t != me) send_part(c, p, t, t, argc, argv, NULL);
}

/* Whether a command must wait for the coordinated commands still running on its
 * connection: it uses one of their keys (and it or they write), or the whole
 * keyspace. Others (disjoint keys, reads after reads, connection commands) run at
 * once; their replies still leave in order. */
static int must_wait(sv_conn *c, const sv_cmd *cmd, int argc, sv_str *argv)
{
    if (!cmd || (cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) return 0; /* an error reply */
    if (!cmd->first && !cmd->getkeys) return (cmd->pflags & SV_P_KEYSPACE) != 0;
    int keys[64];
    int *kp = argc > 64 ? sv_malloc(sizeof(int) * (size_t)argc) : keys;
    int nk = sv_cmd_keypos(cmd, argc, argv, kp, argc > 64 ? argc : 64);
    int wait = 0;
    for (sv_pend *p = c->pend_head; p && !wait && nk > 0; p = p->next)
        if (p->kind == K_COORD && p->waiting)
            wait = sv_fwdm_conflicts(p->coord, argv, kp, nk, !(cmd->flags & SV_CMD_WRITE));
    if (kp != keys) free(kp);
    return wait;
}

/* CLIENT UNBLOCK with arguments each shard accepts (otherwise its error, once). */
static int unblock_args_ok(int argc, sv_str *argv)
{
    long long id;
    if (argc > 4 || !sv_str2ll(argv[2].p, argv[2].len, &id)) return 0;
    return argc == 3 || sv_eq(argv[3], "timeout") || sv_eq(argv[3], "error");
}

static int process(sv_conn *c, int argc, sv_str *argv);

int sv_fwd_process(sv_conn *c, int argc, sv_str *argv)
{
    if (!c->sess.trk) return process(c, argc, argv);
    /* CLIENT TRACKING: a read run on another shard is remembered there */
    const sv_cmd *cmd = sv_cmd_lookup(argv[0].p, argv[0].len);
    dispatch_tracked = cmd && (cmd->flags & SV_CMD_READONLY) && sv_tracking_wants_reads(&c->sess);
    int held = process(c, argc, argv);
    dispatch_tracked = 0;
    return held;
}

static int process(sv_conn *c, int argc, sv_str *argv)
{
    sv_shard *sh = c->sh;
    int me = sh->index;
    const sv_cmd *cmd = sv_cmd_lookup(argv[0].p, argv[0].len);
    if (c->coord_active && must_wait(c, cmd, argc, argv)) {
        /* a coordinated command of this connection still runs its steps on keys this
         * one uses: it must not overtake them (RENAME a b, then GET b) */
        pause_conn(c, -1);
        return 1;
    }
    if (!cmd || (cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
        run_local(c, sv_fwd_reply_buf(c), argc, argv, 0);
        return 0;
    }
    if (c->sess.ps && sv_pubsub_resp2_restricted(&c->sess) && !sv_pubsub_allowed_cmd(cmd->fn)) {
        run_local(c, sv_fwd_reply_buf(c), argc, argv, 1); /* its error, here: no routing */
        return 0;
    }
    sv_tx *tx = c->sess.tx;
    if (tx && tx->in_multi && cmd->multi != SV_MULTI_NOW) {
        /* queued here whatever shard owns its keys: EXEC decides where it runs */
        run_local(c, sv_fwd_reply_buf(c), argc, argv, 1);
        return 0;
    }
    if (cmd->pflags & SV_P_TX_EXEC) return exec_tx(c, argc, argv);
    if (cmd->pflags & SV_P_TX_RELEASE) {
        run_local(c, sv_fwd_reply_buf(c), argc, argv, 0);
        sv_fwd_release_watches(c, 0);
        return 0;
    }
    if (cmd->fn == sv_cmd_ssubscribe || cmd->fn == sv_cmd_sunsubscribe) {
        /* a subscription lives with its connection: here, whichever shard owns the
         * slot (messages reach every shard); channels of several slots: CROSSSLOT */
        int same = 1;
        for (int i = 2; i < argc; i++)
            if (sl__key_slot(argv[i].p, argv[i].len) != sl__key_slot(argv[1].p, argv[1].len)) same = 0;
        if (same) run_local(c, sv_fwd_reply_buf(c), argc, argv, 1);
        else {
            sv_reply r = {sv_fwd_reply_buf(c), c->sess.proto};
            sv_add_error(&r, "-CROSSSLOT Keys in request don't hash to the same slot");
        }
        return 0;
    }
    if (!cmd->first && !cmd->getkeys) {
        long long slot;
        int unblock = cmd->fn == sv_cmd_client && argc >= 3 && sv_eq(argv[1], "unblock"); /* any shard's client */
        /* SCRIPT/FUNCTION KILL: the script runs on one shard, whichever port got it */
        int kill = (cmd->fn == sv_cmd_script || cmd->fn == sv_cmd_function) && argc == 2 && sv_eq(argv[1], "kill");
        int fan = cmd->fan == SV_FAN_SUM || cmd->fan == SV_FAN_OK || cmd->fan == SV_FAN_CONCAT || unblock ||
                  fans_scripting(cmd, argc, argv) || kill;
        if (cmd->fan == SV_FAN_SLOT_ARG && argc >= 3 &&
            (sv_eq(argv[1], "countkeysinslot") || sv_eq(argv[1], "getkeysinslot")) &&
            sv_str2ll(argv[2].p, argv[2].len, &slot) && slot >= 0 && slot < SL_SLOTS &&
            sv_slot_owner((unsigned)slot) != me) { /* the slot's keys live on its owner */
            int t = sv_slot_owner((unsigned)slot);
            if (target_full(sh, t)) {
                pause_conn(c, t);
                return 1;
            }
            sv_pend *p = pend_add(c);
            p->kind = K_PLAIN;
            send_part(c, p, 0, t, argc, argv, NULL);
            return 0;
        }
        if (fan)
            for (int t = 0; t < sv_cfg.shards; t++)
                if (target_full(sh, t)) {
                    pause_conn(c, t);
                    return 1;
                }
        if (cmd->fan == SV_FAN_SUM) fan_out(c, K_SUM, argc, argv);
        else if (cmd->fan == SV_FAN_OK) fan_out(c, K_OK, argc, argv);
        else if (cmd->fan == SV_FAN_CONCAT) fan_out(c, K_CONCAT, argc, argv);
        else if (unblock && unblock_args_ok(argc, argv)) fan_out(c, K_SUM, argc, argv);
        else if (kill) fan_out(c, K_KILL, argc, argv);
        else if (fan && !unblock) fan_out(c, K_SAME, argc, argv);
        else run_local(c, sv_fwd_reply_buf(c), argc, argv, 0);
        return 0;
    }
    int keys[64], owners[64];
    int *kp = keys, *op = owners, *heap = NULL;
    if (argc > 64) {
        heap = sv_malloc(sizeof(int) * 2 * (size_t)argc);
        kp = heap;
        op = heap + argc;
    }
    int nk = sv_cmd_keypos(cmd, argc, argv, kp, argc > 64 ? argc : 64);
    int first = -1, multi = 0, blocked = -1;
    for (int i = 0; i < nk; i++) {
        op[i] = sv_slot_owner(sl__key_slot(argv[kp[i]].p, argv[kp[i]].len));
        if (first < 0) first = op[i];
        else if (op[i] != first) multi = 1;
        if (blocked < 0 && target_full(sh, op[i])) blocked = op[i];
    }
    if (nk > 0 && blocked >= 0) {
        free(heap);
        pause_conn(c, blocked);
        return 1;
    }
    if (cmd->coord == SV_COORD_WATCH && tx && tx->in_multi) {
        run_local(c, sv_fwd_reply_buf(c), argc, argv, 1); /* its error: WATCH inside MULTI */
    } else if (cmd->coord == SV_COORD_WATCH && nk > 0 && (multi || first != me)) {
        /* WATCH of other shards' keys: taken there, the versions kept here (fwd_multi.c) */
        sv_tx_get(&c->sess);
        sv_fwdm_start(c, cmd, argc, argv);
        if (c->pend_head && c->pend_head->waiting == 0) drain(c);
    } else if (nk <= 0 || (!multi && first == me)) {
        /* keys all ours: routed already, sv_execute need not hash them again */
        run_local(c, sv_fwd_reply_buf(c), argc, argv, nk > 0);
    } else if (!multi) {
        sv_pend *p = pend_add(c);
        p->kind = K_PLAIN;
        send_part(c, p, 0, first, argc, argv, NULL);
        /* it may park there: nothing after it runs until it answers, as in Redis */
        if (cmd->flags & SV_CMD_BLOCKING) {
            c->blk_remote = p;
            c->blk_wait = 1;
        }
    } else {
        int kind = split_kind(cmd);
        if (cmd->step == 2 && (argc - 1) % 2) {
            /* MSET/MSETNX with a key and no value: its arity error, as Redis */
            run_local(c, sv_fwd_reply_buf(c), argc, argv, 1);
        } else if (kind < 0 && sv_fwdm_handles(cmd)) {
            /* a short sequence of steps on the owner shards (fwd_multi.c) */
            sv_fwdm_start(c, cmd, argc, argv);
            if (c->pend_head && c->pend_head->waiting == 0) drain(c);
        } else if (kind < 0) {
            run_local(c, sv_fwd_reply_buf(c), argc, argv, 0); /* CROSSSLOT */
        } else {
            /* one part per owner shard, in the order owners first appear */
            int n = sv_cfg.shards;
            int partof[SV_MAX_SHARDS];
            for (int t = 0; t < n; t++) partof[t] = -1;
            int nparts = 0;
            for (int i = 0; i < nk; i++)
                if (partof[op[i]] < 0) partof[op[i]] = nparts++;
            sv_pend *p = pend_add(c);
            p->kind = kind;
            p->nparts = nparts;
            p->parts = sv_calloc((size_t)nparts, sizeof(sv_buf));
            if (kind == K_MGET) {
                p->norder = nk;
                p->order = sv_malloc(sizeof(int) * (size_t)nk);
                for (int i = 0; i < nk; i++) p->order[i] = partof[op[i]];
            }
            int step = cmd->step > 1 ? cmd->step : 1; /* key value pairs travel together */
            int *idx = sv_malloc(sizeof(int) * (size_t)argc);
            for (int t = 0; t < n; t++) {
                if (partof[t] < 0) continue;
                int m = 0;
                idx[m++] = 0;
                for (int i = 0; i < nk; i++)
                    if (op[i] == t)
                        for (int s = 0; s < step; s++) idx[m++] = kp[i] + s;
                if (t == me) {
                    sv_str *sub = sv_malloc(sizeof(sv_str) * (size_t)m);
                    for (int i = 0; i < m; i++) sub[i] = argv[idx[i]];
                    run_local(c, &p->parts[partof[t]], m, sub, 1);
                    free(sub);
                } else {
                    send_part(c, p, partof[t], t, m, argv, idx);
                }
            }
            free(idx);
            if (p->waiting == 0) { /* cannot happen (multi), kept for safety */
                merge(c, p);
                drain(c);
            }
        }
    }
    free(heap);
    return 0;
}

/* ---- lifecycle ---- */

void sv_fwd_init_shard(sv_shard *sh)
{
    int n = sv_cfg.shards;
    sh->fwd_on = 1;
    sh->fwd_in = sv_calloc((size_t)n * QSTRIDE, sizeof(*sh->fwd_in));
    for (int i = 0; i < n; i++) atomic_init(&sh->fwd_in[(size_t)i * QSTRIDE], NULL);
    sh->fwd_first = sv_calloc((size_t)n, sizeof(sv_fmsg *));
    sh->fwd_last = sv_calloc((size_t)n, sizeof(sv_fmsg *));
    sh->fwd_dirty = sv_calloc((size_t)n, sizeof(int));
    sh->fwd_inflight = sv_calloc((size_t)n, sizeof(int));
    sh->fwd_pool = sv_calloc(1, sizeof(sv_fwd_pool));
    uv_async_init(&sh->loop, &sh->fwd_async, on_async);
    sh->fwd_async.data = sh;
    uv_check_init(&sh->loop, &sh->fwd_check);
    sh->fwd_check.data = sh;
    uv_check_start(&sh->fwd_check, on_check);
    uv_unref((uv_handle_t *)&sh->fwd_check);
}

static void close_noop(uv_handle_t *h) { (void)h; }

void sv_fwd_close_shard(sv_shard *sh)
{
    if (!sh->fwd_on) return;
    if (sh->nfwd_dirty) publish(sh); /* replies owed to other shards' clients */
    uv_close((uv_handle_t *)&sh->fwd_async, close_noop);
    uv_check_stop(&sh->fwd_check);
    uv_close((uv_handle_t *)&sh->fwd_check, close_noop);
}

static void drop(sv_fmsg *m)
{
    if (m->trk) {
        free_tracking_msg(m);
        return;
    }
    sv_conn *c = m->conn;
    c->fwd_outstanding--;
    if (c->handle_closed && c->fwd_outstanding == 0) sv_conn_free(c);
    msg_free(m);
}

void sv_fwd_cleanup(void)
{
    if (!sv_shards) return;
    for (int t = 0; t < sv_cfg.shards; t++) {
        sv_shard *sh = &sv_shards[t];
        if (!sh->fwd_on) continue;
        for (int s = 0; s < sv_cfg.shards; s++) {
            sv_fmsg *l = atomic_exchange(&sh->fwd_in[(size_t)s * QSTRIDE], NULL);
            while (l) {
                sv_fmsg *n = l->next;
                drop(l);
                l = n;
            }
            sv_fmsg *b = sh->fwd_first[s];
            while (b) {
                sv_fmsg *n = b->next;
                drop(b);
                b = n;
            }
        }
    }
    for (int t = 0; t < sv_cfg.shards; t++) {
        sv_shard *sh = &sv_shards[t];
        free((void *)sh->fwd_in);
        free(sh->fwd_first);
        free(sh->fwd_last);
        free(sh->fwd_dirty);
        free(sh->fwd_inflight);
        sh->fwd_inflight = NULL;
        sh->fwd_in = NULL;
        /* after every drop above: nothing returns to the free lists any more */
        sv_fwd_pool *pool = sh->fwd_pool;
        sh->fwd_pool = NULL;
        while (pool && pool->msgs) {
            sv_fmsg *m = pool->msgs;
            pool->msgs = m->next;
            sv_buf_free(&m->reply);
            sv_buf_free(&m->mem);
            free(m);
        }
        while (pool && pool->pends) {
            sv_pend *p = pool->pends;
            pool->pends = p->next;
            sv_buf_free(&p->out);
            free(p);
        }
        free(pool);
        sh->fwd_first = sh->fwd_last = NULL;
        sh->fwd_dirty = NULL;
    }
}
