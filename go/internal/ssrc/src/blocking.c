/* blocking: see blocking.h.
 *
 * Data: per shard, a dict key -> sv_bkey, the FIFO of the waiters parked on that key
 * (one node per (waiter, key)); a list of every waiter; a list of the waiters with a
 * deadline ordered by it (insertion scans from the tail: waiters mostly arrive with
 * the same timeout, so it is O(1) in practice) and one timer armed for the earliest.
 * Signalled keys are collected (once each) and served after the current top-level
 * command, in signal order: each key's waiters try their command in FIFO order
 * until the key is gone. A try that moves an element to another key (BLMOVE)
 * signals that key, which is served in the same pass. */
#include "blocking.h"

#include <math.h>
#include <stdio.h>

#include "conn.h"

typedef struct sv_wnode {
    struct sv_wnode *prev, *next; /* in its key's FIFO */
    struct sv_bkey *bk;
    sv_waiter *w;
} sv_wnode;

typedef struct sv_bkey {
    sv_wnode *head, *tail;
    sv_entry *e; /* its entry in blk->keys (entry->val = this) */
    int ready;   /* queued in blk->ready */
} sv_bkey;

struct sv_waiter {
    sv_shard *sh;
    sv_waiter *prev, *next;   /* blk->all */
    sv_waiter *tprev, *tnext; /* blk->tfirst..tlast when deadline > 0 */
    int64_t deadline;         /* ms, 0 = for ever */
    int nkeys;
    sv_wnode *nodes;
    int argc;
    sv_str *argv;
    sv_buf mem;               /* argv and the argument bytes */
    sv_session sess;          /* id and protocol for forwarded requests (own copy) */
    sv_session *sessp;        /* the session the command runs with */
    const sv_block_type *type;
    void *priv;
    const sv_block_owner *ops;
    void *owner;
    int part;                 /* a coordinated part: 1 primary, 2 secondary (sv_waiter_set_part) */
};

static const sv_block_type default_type = {NULL, NULL, NULL};
/* the wait of a CLIENT UNBLOCK asked of the other shards (below): not a blocked command
 * (INFO blocked_clients does not count it, CLIENT UNBLOCK does not answer it) */
static const sv_block_type ub_type;

void *sv_waiter_priv(sv_waiter *w) { return w->priv; }
uint64_t sv_waiter_client_id(sv_waiter *w) { return w->sessp->id; }
int sv_block_parts_count(sv_shard *sh) { return sh->blk ? atomic_load_explicit(&sh->blk->nparts, memory_order_relaxed) : 0; }

int sv_block_count(sv_shard *sh)
{
    if (!sh->blk) return 0;
    return atomic_load_explicit(&sh->blk->nwaiters, memory_order_relaxed) -
           atomic_load_explicit(&sh->blk->nsecondary, memory_order_relaxed);
}

/* ---- timeouts ---- */

int sv_block_parse_timeout(sv_ctx *c, sv_str a, int64_t *deadline_ms)
{
    long double v;
    if (!sv_str2ld(a.p, a.len, &v) || isnan(v)) {
        sv_add_error(&c->r, "timeout is not a float or out of range");
        return 0;
    }
    v *= 1000.0L;
    /* as Redis 7.0: the milliseconds rounded up (0.0001 s is 1 ms; -0.0001 rounds to
     * 0, for ever); past the long long range the conversion gives its minimum on x86,
     * hence "negative" */
    if (v >= 9.2e18L || v <= -9.2e18L) {
        sv_add_error(&c->r, "timeout is negative");
        return 0;
    }
    long long ms = (long long)ceill(v);
    if (ms < 0) {
        sv_add_error(&c->r, "timeout is negative");
        return 0;
    }
    if (ms > 0) {
        int64_t now = sv_mstime();
        if (ms > INT64_MAX - now) {
            sv_add_error(&c->r, "timeout is out of range");
            return 0;
        }
        ms += now;
    }
    *deadline_ms = ms;
    return 1;
}

static void on_timer(uv_timer_t *t);

static void arm_timer(sv_blk *b)
{
    if (!b->tfirst) {
        if (b->timer_at) uv_timer_stop(&b->timer);
        b->timer_at = 0;
        return;
    }
    if (b->timer_at == b->tfirst->deadline) return;
    int64_t now = sv_mstime();
    int64_t wait = b->tfirst->deadline - now;
    b->timer_at = b->tfirst->deadline;
    uv_timer_start(&b->timer, on_timer, wait > 0 ? (uint64_t)wait : 0, 0);
}

static void tlist_insert(sv_blk *b, sv_waiter *w)
{
    sv_waiter *after = b->tlast;
    while (after && after->deadline > w->deadline) after = after->tprev;
    w->tprev = after;
    w->tnext = after ? after->tnext : b->tfirst;
    if (w->tnext) w->tnext->tprev = w;
    else b->tlast = w;
    if (after) after->tnext = w;
    else b->tfirst = w;
}

static void tlist_remove(sv_blk *b, sv_waiter *w)
{
    if (w->tprev) w->tprev->tnext = w->tnext;
    else if (b->tfirst == w) b->tfirst = w->tnext;
    if (w->tnext) w->tnext->tprev = w->tprev;
    else if (b->tlast == w) b->tlast = w->tprev;
    w->tprev = w->tnext = NULL;
}

/* ---- waiters ---- */

static void free_bkey_entry(sv_blk *b, sv_bkey *bk)
{
    sv_entry *e = sv_dict_unlink(&b->keys, bk->e->key, bk->e->klen);
    free(e);
    free(bk);
}

/* Unlinks the waiter from every structure and frees it (no reply). */
static void waiter_free(sv_waiter *w)
{
    sv_blk *b = w->sh->blk;
    for (int i = 0; i < w->nkeys; i++) {
        sv_wnode *n = &w->nodes[i];
        sv_bkey *bk = n->bk;
        if (n->prev) n->prev->next = n->next;
        else bk->head = n->next;
        if (n->next) n->next->prev = n->prev;
        else bk->tail = n->prev;
        if (!bk->head && !bk->ready) free_bkey_entry(b, bk); /* a ready one goes after its serve */
    }
    if (w->prev) w->prev->next = w->next;
    else b->all = w->next;
    if (w->next) w->next->prev = w->prev;
    if (w->deadline) tlist_remove(b, w);
    if (w->type != &ub_type)
        atomic_store_explicit(&b->nwaiters, atomic_load_explicit(&b->nwaiters, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    if (w->part == 2)
        atomic_store_explicit(&b->nsecondary, atomic_load_explicit(&b->nsecondary, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    if (w->part)
        atomic_store_explicit(&b->nparts, atomic_load_explicit(&b->nparts, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    if (w->type->free_priv && w->priv) w->type->free_priv(w->priv);
    free(w->nodes);
    sv_buf_free(&w->mem);
    free(w);
}

void sv_block_on_keys(sv_ctx *c, int nkeys, const sv_str *keys, int64_t deadline_ms, const sv_block_type *type,
                      void *priv)
{
    if (!type) type = &default_type;
    if (c->retry) { /* a try that cannot serve: the same waiter keeps waiting */
        if (priv && type->free_priv && priv != c->retry->priv) type->free_priv(priv);
        c->blocked = c->retry;
        return;
    }
    sv_shard *sh = c->sh;
    sv_blk *b = sh->blk;
    sv_waiter *w = sv_calloc(1, sizeof(*w));
    w->sh = sh;
    w->deadline = deadline_ms;
    w->type = type;
    w->priv = priv;
    w->sess.id = c->sess->id;
    w->sess.proto = c->sess->proto;
    w->sessp = &w->sess; /* the owner may point it at a connection's own session */
    w->nkeys = nkeys;
    w->nodes = sv_calloc((size_t)nkeys, sizeof(sv_wnode));
    int k = 0;
    for (int i = 0; i < nkeys; i++) {
        sv_entry *ex = NULL;
        sv_entry *e = sv_dict_add(&b->keys, keys[i].p, keys[i].len, &ex);
        sv_bkey *bk;
        if (e) {
            bk = sv_calloc(1, sizeof(*bk));
            bk->e = e;
            e->val = bk;
        } else {
            bk = ex->val;
        }
        int dup = 0; /* the same key twice (BLPOP k k 0): one node is enough */
        for (int j = 0; j < k; j++)
            if (w->nodes[j].bk == bk) dup = 1;
        if (dup) continue;
        sv_wnode *n = &w->nodes[k++];
        n->bk = bk;
        n->w = w;
        n->prev = bk->tail;
        if (bk->tail) bk->tail->next = n;
        else bk->head = n;
        bk->tail = n;
    }
    w->nkeys = k;
    w->next = b->all;
    if (b->all) b->all->prev = w;
    b->all = w;
    if (deadline_ms) {
        tlist_insert(b, w);
        arm_timer(b);
    }
    if (type != &ub_type)
        atomic_store_explicit(&b->nwaiters, atomic_load_explicit(&b->nwaiters, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    c->blocked = w;
}

/* The command is parked with its own copy of the arguments: the caller's buffers
 * (a connection's read buffer, a forwarded message) are reused meanwhile. */
void sv_block_attach(sv_waiter *w, const sv_block_owner *ops, void *owner, int argc, sv_str *argv,
                     sv_session *sess)
{
    w->ops = ops;
    w->owner = owner;
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) bytes += argv[i].len + 1;
    sv_buf_reserve(&w->mem, sizeof(sv_str) * (size_t)argc + bytes);
    w->argv = (sv_str *)w->mem.data;
    char *p = (char *)(w->argv + argc);
    for (int i = 0; i < argc; i++) {
        if (argv[i].len) memcpy(p, argv[i].p, argv[i].len);
        w->argv[i].p = p;
        w->argv[i].len = argv[i].len;
        p += argv[i].len;
        *p++ = 0; /* NUL-terminated, as the parser's buffer is */
    }
    w->argc = argc;
    if (sess) w->sessp = sess;
}

void sv_block_cancel(sv_waiter *w) { waiter_free(w); }

/* Writes the scratch reply to the owner and lets it go on. */
static void deliver(sv_waiter *w, sv_buf *reply)
{
    const sv_block_owner *ops = w->ops;
    void *owner = w->owner;
    sv_buf *out = ops->reply_buf(owner);
    sv_buf_append(out, reply->data, reply->len);
    reply->len = 0;
    waiter_free(w);
    ops->done(owner, SV_BLOCK_SERVED);
}

/* Answers the waiter as its command does on timeout (also CLIENT UNBLOCK TIMEOUT). */
static void answer_timeout(sv_waiter *w)
{
    sv_blk *b = w->sh->blk;
    sv_reply r = {&b->scratch, w->sessp->proto};
    b->scratch.len = 0;
    if (w->type->timeout_reply) w->type->timeout_reply(&r);
    else sv_add_null_array(&r);
    deliver(w, &b->scratch);
}

static int owner_gone(sv_waiter *w) { return w->ops && w->ops->gone && w->ops->gone(w->owner); }

/* Runs the waiter's command again; returns 1 when it was served (and delivered). */
static int try_serve(sv_waiter *w)
{
    sv_shard *sh = w->sh;
    sv_blk *b = sh->blk;
    if (owner_gone(w)) {
        waiter_free(w);
        return 0;
    }
    b->scratch.len = 0;
    sv_ctx ctx = {.sh = sh, .sess = w->sessp, .r = {&b->scratch, w->sessp->proto}, .noroute = 1};
    ctx.can_block = 1;
    ctx.retry = w;
    if (w->type->try_again) w->type->try_again(&ctx, w, w->argc, w->argv);
    else sv_execute(&ctx, w->argc, w->argv);
    if (ctx.blocked == w) { /* still nothing for it */
        b->scratch.len = 0;
        return 0;
    }
    deliver(w, &b->scratch);
    return 1;
}

static void on_timer(uv_timer_t *t)
{
    sv_shard *sh = t->data;
    sv_blk *b = sh->blk;
    b->timer_at = 0;
    int64_t now = sv_mstime();
    sh->now_ms = now;
    while (b->tfirst && b->tfirst->deadline <= now) {
        sv_waiter *w = b->tfirst;
        if (owner_gone(w)) waiter_free(w);
        else answer_timeout(w);
    }
    arm_timer(b);
    /* the connections answered run their next requests */
    sv_block_serve_ready(sh);
}

/* ---- readiness and serving ---- */

void sv_signal_key_ready(sv_shard *sh, sv_str key)
{
    sv_blk *b = sh->blk;
    if (!b || atomic_load_explicit(&b->nwaiters, memory_order_relaxed) == 0) return;
    sv_entry *e = sv_dict_find(&b->keys, key.p, key.len);
    if (!e) return;
    sv_bkey *bk = e->val;
    if (bk->ready) return;
    bk->ready = 1;
    if (b->nready == b->capready) {
        b->capready = b->capready ? b->capready * 2 : 16;
        b->ready = sv_realloc(b->ready, sizeof(sv_str) * (size_t)b->capready);
    }
    b->ready[b->nready].p = sv_memdup(key.p, key.len);
    b->ready[b->nready].len = key.len;
    b->nready++;
}

static void serve_key(sv_blk *b, sv_shard *sh, sv_str key)
{
    sv_entry *e = sv_dict_find(&b->keys, key.p, key.len);
    if (!e) return;
    sv_bkey *bk = e->val;
    /* new waiters parked on this key during the pass (a served client's next BLPOP)
     * wait for the next signal, as in Redis: walk only those present now */
    sv_wnode *last = bk->tail;
    sv_wnode *n = bk->head;
    b->serving_key = key;
    while (n) {
        sv_wnode *next = n == last ? NULL : n->next;
        try_serve(n->w);
        if (!sv_dict_find(&sh->keys, key.p, key.len)) break; /* nothing left to serve */
        n = next;
    }
    b->serving_key = (sv_str){NULL, 0};
    bk->ready = 0;
    if (!bk->head) free_bkey_entry(b, bk);
}

void sv_block_resume_later(sv_shard *sh, sv_conn *conn)
{
    sv_blk *b = sh->blk;
    if (b->nresume == b->capresume) {
        b->capresume = b->capresume ? b->capresume * 2 : 16;
        b->resume = sv_realloc(b->resume, sizeof(*b->resume) * (size_t)b->capresume);
    }
    b->resume[b->nresume++] = conn;
}

void sv_block_serve_ready(sv_shard *sh)
{
    sv_blk *b = sh->blk;
    if (!b || b->serving) return; /* the outer pass picks up what is signalled now */
    b->serving = 1;
    while (b->nready || b->nresume) {
        /* keys first: one pass serves every key signalled so far, and those its
         * tries signal (appended while it runs) */
        for (int i = 0; i < b->nready; i++) {
            sv_str k = b->ready[i];
            serve_key(b, sh, k);
            free((void *)k.p);
        }
        b->nready = 0;
        /* then the connections answered run what they have buffered (which may
         * push, and signal again) */
        int n = b->nresume;
        for (int i = 0; i < n; i++) sv_conn_resume(b->resume[i]);
        if (b->nresume > n) memmove(b->resume, b->resume + n, sizeof(*b->resume) * (size_t)(b->nresume - n));
        b->nresume -= n;
    }
    b->serving = 0;
}

/* ---- CLIENT UNBLOCK, cron, lifecycle ---- */

int sv_block_unblock_client(sv_shard *sh, uint64_t client_id, int error)
{
    sv_blk *b = sh->blk;
    if (!b) return 0;
    for (sv_waiter *w = b->all; w; w = w->next) {
        /* a coordinated command answers through its primary part alone (its
         * coordinator then releases the others): CLIENT UNBLOCK counts it once; a
         * cross-shard CLIENT UNBLOCK's own waiter is never a target */
        if (w->sessp->id != client_id || !w->ops || w->part == 2 || w->type == &ub_type) continue;
        if (error) {
            sv_reply r = {&b->scratch, w->sessp->proto};
            b->scratch.len = 0;
            sv_add_error(&r, "-UNBLOCKED client unblocked via CLIENT UNBLOCK");
            deliver(w, &b->scratch);
        } else {
            answer_timeout(w);
        }
        return 1;
    }
    return 0;
}

sv_str sv_block_ready_key(sv_shard *sh) { return sh->blk ? sh->blk->serving_key : (sv_str){NULL, 0}; }

void sv_waiter_set_part(sv_waiter *w, int secondary)
{
    if (w->part) return; /* a retry: already set */
    w->part = secondary ? 2 : 1;
    sv_blk *b = w->sh->blk;
    atomic_store_explicit(&b->nparts, atomic_load_explicit(&b->nparts, memory_order_relaxed) + 1, memory_order_relaxed);
    if (secondary) {
        atomic_store_explicit(&b->nsecondary, atomic_load_explicit(&b->nsecondary, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
}

int sv_block_release_part(sv_shard *sh, uint64_t client_id)
{
    sv_blk *b = sh->blk;
    if (!b) return 0;
    for (sv_waiter *w = b->all; w; w = w->next)
        if (w->part && w->ops && w->sessp->id == client_id) {
            answer_timeout(w);
            return 1;
        }
    return 0;
}

/* Across shards (per-shard mode): a request per other shard on its channel (an MPSC
 * inbox and an async handle each; static, so a late send never touches freed memory),
 * answered on the asker's channel; the asker waits as a keyless waiter that counts
 * nowhere, so a client that leaves meanwhile is dropped like any parked one. */
typedef struct ub_req {
    sv_waiter *w; /* the asker's waiter; NULL once it left */
    uint64_t id;
    int error, origin, left, found;
} ub_req;

typedef struct ub_msg {
    struct ub_msg *next;
    ub_req *req; /* read-only at the target */
    int answered, result;
} ub_msg;

typedef struct ub_chan {
    ub_msg *_Atomic inbox;
    atomic_int open;
    uv_async_t async;
} ub_chan;

/* one per shard of the instance (sv_server.ub_chans, made with it) */
#define ub_chans (sv_cur->ub_chan_arr)

void sv_block_init_state(sv_server *s) { s->ub_chan_arr = sv_calloc(SV_MAX_SHARDS, sizeof(ub_chan)); }
void sv_block_free_state(sv_server *s)
{
    free(s->ub_chan_arr);
    s->ub_chan_arr = NULL;
}

static void ub_waiter_gone(void *priv) { ((ub_req *)priv)->w = NULL; }
static const sv_block_type ub_type = {NULL, NULL, ub_waiter_gone};

/* 0 when the target's loop has stopped (shutdown): nothing sent */
static int ub_send(int t, ub_msg *m)
{
    ub_chan *ch = &ub_chans[t];
    if (!atomic_load_explicit(&ch->open, memory_order_acquire)) return 0;
    ub_msg *old = atomic_load_explicit(&ch->inbox, memory_order_relaxed);
    do {
        m->next = old;
    } while (!atomic_compare_exchange_weak_explicit(&ch->inbox, &old, m, memory_order_release, memory_order_relaxed));
    uv_async_send(&ch->async);
    return 1;
}

static void ub_answer(sv_shard *sh, ub_req *q, int result)
{
    q->found |= result;
    if (--q->left > 0) return;
    if (q->w) {
        sv_blk *b = sh->blk;
        sv_reply r = {&b->scratch, q->w->sessp->proto};
        b->scratch.len = 0;
        sv_add_int(&r, q->found);
        deliver(q->w, &b->scratch); /* frees the waiter (q->w = NULL) */
    }
    free(q);
}

static void ub_on_async(uv_async_t *a)
{
    sv_shard *sh = a->data;
    ub_msg *l = atomic_exchange_explicit(&ub_chans[sh->index].inbox, NULL, memory_order_acquire);
    while (l) {
        ub_msg *m = l;
        l = m->next;
        if (m->answered) {
            ub_answer(sh, m->req, m->result);
            free(m);
            continue;
        }
        m->result = sv_block_unblock_client(sh, m->req->id, m->req->error);
        m->answered = 1;
        if (!ub_send(m->req->origin, m)) free(m); /* the asker's shard has stopped */
    }
    sv_block_serve(sh); /* the clients unblocked here go on */
}

void sv_block_unblock_any(sv_ctx *c, uint64_t client_id, int error)
{
    sv_shard *sh = c->sh;
    if (sv_block_unblock_client(sh, client_id, error)) {
        sv_add_int(&c->r, 1);
        return;
    }
    if (sv_cfg.shards == 1 || sh->fwd_on || !sv_block_allowed(c) || !c->sess->conn ||
        !atomic_load_explicit(&ub_chans[sh->index].open, memory_order_acquire)) {
        /* one shard; forwarding fans CLIENT UNBLOCK out itself (fwd.c); in MULTI or a
         * script: this shard's answer */
        sv_add_int(&c->r, 0);
        return;
    }
    ub_req *q = sv_calloc(1, sizeof(*q));
    q->id = client_id;
    q->error = error;
    q->origin = sh->index;
    q->left = 1; /* until every request is out: an answer cannot finish it early */
    sv_block_on_keys(c, 0, NULL, 0, &ub_type, q);
    q->w = c->blocked;
    for (int t = 0; t < sv_cfg.shards; t++) {
        if (t == sh->index) continue;
        ub_msg *m = sv_calloc(1, sizeof(*m));
        m->req = q;
        q->left++;
        if (!ub_send(t, m)) { /* that shard has stopped: it has nobody blocked */
            free(m);
            q->left--;
        }
    }
    /* the asker is parked (c->blocked) before the last answer can arrive: answers are
     * taken in this loop's async callback, after this command */
    if (--q->left == 0) { /* nobody to ask */
        sv_waiter *w = c->blocked;
        c->blocked = NULL;
        sv_block_cancel(w);
        free(q);
        sv_add_int(&c->r, 0);
    }
}

static void ub_open(sv_shard *sh)
{
    ub_chan *ch = &ub_chans[sh->index];
    atomic_init(&ch->inbox, NULL);
    uv_async_init(&sh->loop, &ch->async, ub_on_async);
    ch->async.data = sh;
    atomic_store_explicit(&ch->open, 1, memory_order_release);
}

/* After the shard's waiters are cancelled: what is still in the inbox is answered
 * (requests: nobody is blocked here any more) or finished (answers to its askers). */
static void ub_close(sv_shard *sh)
{
    ub_chan *ch = &ub_chans[sh->index];
    if (!atomic_load_explicit(&ch->open, memory_order_acquire)) return;
    atomic_store_explicit(&ch->open, 0, memory_order_release);
    ub_on_async(&ch->async);
    uv_close((uv_handle_t *)&ch->async, NULL);
}

void sv_block_cron(sv_shard *sh)
{
    sv_blk *b = sh->blk;
    if (!b) return;
    for (sv_waiter *w = b->all, *next; w; w = next) {
        next = w->next;
        if (owner_gone(w)) waiter_free(w);
    }
}

void sv_block_init_shard(sv_shard *sh)
{
    sv_blk *b = sv_calloc(1, sizeof(*b));
    sv_dict_init(&b->keys);
    atomic_init(&b->nwaiters, 0);
    atomic_init(&b->nsecondary, 0);
    atomic_init(&b->nparts, 0);
    uv_timer_init(&sh->loop, &b->timer);
    b->timer.data = sh;
    sh->blk = b;
    ub_open(sh);
}

static void free_bkey(sv_entry *e, void *priv)
{
    (void)priv;
    free(e->val);
}

static void free_blk(uv_handle_t *h)
{
    sv_shard *sh = h->data;
    sv_blk *b = sh->blk;
    sh->blk = NULL;
    for (int i = 0; i < b->nready; i++) free((void *)b->ready[i].p);
    free(b->ready);
    free(b->resume);
    sv_buf_free(&b->scratch);
    sv_dict_clear(&b->keys, free_bkey, NULL);
    free(b);
}

void sv_block_close_shard(sv_shard *sh)
{
    sv_blk *b = sh->blk;
    if (!b) return;
    while (b->all) {
        sv_waiter *w = b->all;
        const sv_block_owner *ops = w->ops;
        void *owner = w->owner;
        waiter_free(w);
        if (ops) ops->done(owner, SV_BLOCK_CANCELLED);
    }
    b->nresume = 0;
    ub_close(sh);
    uv_timer_stop(&b->timer);
    uv_close((uv_handle_t *)&b->timer, free_blk);
}
