/* pubsub: see pubsub.h. */
#include "pubsub.h"

#include <stdio.h>

#include "conn.h"

enum { K_CH, K_PAT, K_SCH, NKINDS };

/* The local subscribers of one channel or pattern, in subscription order. */
typedef struct sv_subs {
    sv_conn **v;
    int n, cap;
} sv_subs;

/* Registry entry: subscribers of a name on each shard. */
typedef struct sv_reg {
    long long total;
    int per[];
} sv_reg;

/* A session's subscriptions (sv_session.ps), made at its first subscribe. */
typedef struct sv_psub {
    sv_conn *conn;
    sv_dict names[NKINDS];
    int drop;  /* past the pubsub output limit: nothing more is written, closed at the end of the turn */
    int dirty; /* has output queued this turn (in the shard's dirty list) */
    struct sv_psub *dirty_next;
} sv_psub;

/* A message on its way to another shard. */
typedef struct sv_pmsg {
    struct sv_pmsg *next;
    int sharded;
    size_t clen, mlen;
    char data[];
} sv_pmsg;

typedef struct sv_pubsub_shard {
    sv_dict local[NKINDS];   /* name -> sv_subs */
    sv_pmsg *_Atomic inbox;  /* from every other shard, newest first */
    sv_pmsg **first, **last; /* per target: this turn's batch (newest first) */
    int *dirty_t;
    int ndirty_t;
    uv_async_t async;
    uv_check_t check;
    uv_timer_t hold_timer;   /* a held flush is written at the latest when it fires */
    int held;                /* turns the subscribers' flush has been held over (see on_check) */
    int prev_busy;           /* the previous turn handed subscribers messages */
    size_t turn_bytes;       /* bytes given to subscribers since their last flush */
    sv_psub *dirty;          /* subscribers with output this turn */
    atomic_uint_fast64_t sent, wakeups, received; /* INFO: messages to other shards, wakeups, messages taken */
} sv_pubsub_shard;


/* The instance's registry (sv_server.pubsub_reg): made before its shards start. */
typedef struct sv_pubsub_reg {
    sv_dict d[NKINDS];
    uv_rwlock_t lock;
} sv_pubsub_reg;
#define reg (sv_cur->pubsub_reg->d)
#define reg_lock (sv_cur->pubsub_reg->lock)

void sv_pubsub_init(void)
{
    if (sv_cur->pubsub_reg) return;
    sv_pubsub_reg *r = sv_calloc(1, sizeof(*r));
    for (int k = 0; k < NKINDS; k++) sv_dict_init(&r->d[k]);
    uv_rwlock_init(&r->lock);
    sv_cur->pubsub_reg = r;
}

static void free_reg(sv_entry *e, void *priv);

void sv_pubsub_free_state(sv_server *s)
{
    sv_pubsub_reg *r = s->pubsub_reg;
    if (!r) return;
    for (int k = 0; k < NKINDS; k++) sv_dict_clear(&r->d[k], free_reg, NULL);
    uv_rwlock_destroy(&r->lock);
    free(r);
    s->pubsub_reg = NULL;
}

/* With one shard nobody else touches the registry: no lock. */
static void rd_lock(void)
{
    if (sv_cfg.shards > 1) uv_rwlock_rdlock(&reg_lock);
}
static void rd_unlock(void)
{
    if (sv_cfg.shards > 1) uv_rwlock_rdunlock(&reg_lock);
}
static void wr_lock(void)
{
    if (sv_cfg.shards > 1) uv_rwlock_wrlock(&reg_lock);
}
static void wr_unlock(void)
{
    if (sv_cfg.shards > 1) uv_rwlock_wrunlock(&reg_lock);
}

static inline void bump(atomic_uint_fast64_t *x)
{
    atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* ---- registry ---- */

static void reg_add(int kind, int shard, sv_str name, int delta)
{
    wr_lock();
    sv_entry *ex = NULL;
    sv_entry *e = sv_dict_add(&reg[kind], name.p, name.len, &ex);
    if (e) e->val = sv_calloc(1, sizeof(sv_reg) + sizeof(int) * (size_t)sv_cfg.shards);
    else e = ex;
    sv_reg *r = e->val;
    r->per[shard] += delta;
    r->total += delta;
    if (r->total <= 0) { /* NUMPAT and CHANNELS see only names with subscribers */
        sv_entry *u = sv_dict_unlink(&reg[kind], name.p, name.len);
        free(u->val);
        free(u);
    }
    wr_unlock();
}

/* ---- local subscriptions ---- */

static sv_psub *psub_of(sv_session *s, int create)
{
    if (!s->ps && create) {
        sv_psub *ps = sv_calloc(1, sizeof(*ps));
        for (int k = 0; k < NKINDS; k++) sv_dict_init(&ps->names[k]);
        ps->conn = s->conn;
        s->ps = ps;
    }
    return s->ps;
}

static long long count_of(const sv_psub *ps, int kind)
{
    if (!ps) return 0;
    if (kind == K_SCH) return (long long)sv_dict_size(&ps->names[K_SCH]);
    return (long long)(sv_dict_size(&ps->names[K_CH]) + sv_dict_size(&ps->names[K_PAT]));
}

int sv_pubsub_subscribed(const sv_session *s) { return s->ps && (count_of(s->ps, K_CH) || count_of(s->ps, K_SCH)); }
int sv_pubsub_resp2_restricted(const sv_session *s) { return s->proto == 2 && sv_pubsub_subscribed(s); }

void sv_pubsub_counts(const sv_session *s, int *sub, int *psub, int *ssub)
{
    const sv_psub *ps = s->ps;
    *sub = ps ? (int)sv_dict_size(&ps->names[K_CH]) : 0;
    *psub = ps ? (int)sv_dict_size(&ps->names[K_PAT]) : 0;
    *ssub = ps ? (int)sv_dict_size(&ps->names[K_SCH]) : 0;
}

static int do_subscribe(sv_shard *sh, sv_psub *ps, int kind, sv_str name)
{
    sv_entry *e = sv_dict_add(&ps->names[kind], name.p, name.len, NULL);
    if (!e) return 0; /* already */
    sv_pubsub_shard *p = sh->pubsub;
    sv_entry *ex = NULL;
    sv_entry *le = sv_dict_add(&p->local[kind], name.p, name.len, &ex);
    if (le) le->val = sv_calloc(1, sizeof(sv_subs));
    else le = ex;
    sv_subs *subs = le->val;
    if (subs->n == subs->cap) {
        subs->cap = subs->cap ? subs->cap * 2 : 4;
        subs->v = sv_realloc(subs->v, sizeof(*subs->v) * (size_t)subs->cap);
    }
    subs->v[subs->n++] = ps->conn;
    reg_add(kind, sh->index, name, 1);
    return 1;
}

static int do_unsubscribe(sv_shard *sh, sv_psub *ps, int kind, sv_str name)
{
    sv_entry *e = sv_dict_unlink(&ps->names[kind], name.p, name.len);
    if (!e) return 0;
    free(e);
    sv_pubsub_shard *p = sh->pubsub;
    sv_entry *le = sv_dict_find(&p->local[kind], name.p, name.len);
    if (le) {
        sv_subs *subs = le->val;
        for (int i = 0; i < subs->n; i++)
            if (subs->v[i] == ps->conn) {
                memmove(subs->v + i, subs->v + i + 1, sizeof(*subs->v) * (size_t)(subs->n - i - 1));
                subs->n--;
                break;
            }
        if (subs->n == 0) {
            sv_entry *u = sv_dict_unlink(&p->local[kind], name.p, name.len);
            free(subs->v);
            free(subs);
            free(u);
        }
    }
    reg_add(kind, sh->index, name, -1);
    return 1;
}

/* ---- replies and messages ---- */

static void add_push(sv_reply *r, int n)
{
    char hdr[16];
    int l = snprintf(hdr, sizeof(hdr), "%c%d\r\n", r->proto >= 3 ? '>' : '*', n);
    sv_add_raw(r, hdr, (size_t)l);
}

static const char *sub_names[NKINDS] = {"subscribe", "psubscribe", "ssubscribe"};
static const char *unsub_names[NKINDS] = {"unsubscribe", "punsubscribe", "sunsubscribe"};

static void flush_dirty(sv_pubsub_shard *p)
{
    if (p->held) {
        p->held = 0;
        uv_timer_stop(&p->hold_timer);
    }
    p->turn_bytes = 0;
    while (p->dirty) {
        sv_psub *ps = p->dirty;
        p->dirty = ps->dirty_next;
        ps->dirty = 0;
        ps->dirty_next = NULL;
        if (ps->drop) sv_conn_drop_over_limit(ps->conn); /* unsubscribes it */
        else sv_conn_flush(ps->conn);
    }
}

/* Appends one message to a subscriber's output (sent at the end of the turn). */
static void write_msg(sv_pubsub_shard *p, sv_conn *c, int kind, const sv_entry *pat, sv_str ch, sv_str msg)
{
    sv_psub *ps = c->sess.ps;
    if (c->closing || !ps || ps->drop) return;
    sv_reply r = {&c->out, c->sess.proto};
    if (kind == K_PAT) {
        add_push(&r, 4);
        sv_add_bulk(&r, "pmessage", 8);
        sv_add_bulk(&r, pat->key, pat->klen);
    } else {
        add_push(&r, 3);
        if (kind == K_CH) sv_add_bulk(&r, "message", 7);
        else sv_add_bulk(&r, "smessage", 8);
    }
    sv_add_bulk(&r, ch.p, ch.len);
    sv_add_bulk(&r, msg.p, msg.len);
    p->turn_bytes += ch.len + msg.len + 32;
    long long limit = atomic_load_explicit(&sv_pubsub_limit, memory_order_relaxed);
    if (limit > 0 && (long long)sv_conn_unsent(c) > limit) ps->drop = 1; /* a slow subscriber */
    if (!ps->dirty) {
        ps->dirty = 1;
        ps->dirty_next = p->dirty;
        p->dirty = ps;
    }
}

static void deliver_local(sv_shard *sh, int sharded, sv_str ch, sv_str msg)
{
    sv_pubsub_shard *p = sh->pubsub;
    int kind = sharded ? K_SCH : K_CH;
    sv_entry *e = sv_dict_find(&p->local[kind], ch.p, ch.len);
    if (e) {
        sv_subs *subs = e->val;
        for (int i = 0; i < subs->n; i++) write_msg(p, subs->v[i], kind, NULL, ch, msg);
    }
    if (sharded || sv_dict_size(&p->local[K_PAT]) == 0) return;
    sv_dict_iter it;
    sv_dict_iter_init(&it, &p->local[K_PAT]);
    for (sv_entry *pe; (pe = sv_dict_iter_next(&it));)
        if (sv_glob(pe->key, pe->klen, ch.p, ch.len, 0)) {
            sv_subs *subs = pe->val;
            for (int i = 0; i < subs->n; i++) write_msg(p, subs->v[i], K_PAT, pe, ch, msg);
        }
}

static long long publish_generic(sv_shard *sh, int sharded, sv_str ch, sv_str msg)
{
    sv_pubsub_init(); /* (once: shards made without a loop, in tests, have not) */
    int n = sv_cfg.shards, me = sh->index;
    unsigned char want[SV_MAX_SHARDS];
    memset(want, 0, (size_t)n);
    long long receivers = 0;
    rd_lock();
    sv_entry *e = sv_dict_find(&reg[sharded ? K_SCH : K_CH], ch.p, ch.len);
    if (e) {
        sv_reg *r = e->val;
        receivers += r->total;
        for (int i = 0; i < n; i++) want[i] |= r->per[i] > 0;
    }
    if (!sharded && sv_dict_size(&reg[K_PAT])) {
        sv_dict_iter it;
        sv_dict_iter_init(&it, &reg[K_PAT]);
        for (sv_entry *pe; (pe = sv_dict_iter_next(&it));)
            if (sv_glob(pe->key, pe->klen, ch.p, ch.len, 0)) {
                sv_reg *r = pe->val;
                receivers += r->total;
                for (int i = 0; i < n; i++) want[i] |= r->per[i] > 0;
            }
    }
    rd_unlock();
    sv_pubsub_shard *p = sh->pubsub;
    if (!p) return receivers; /* a shard without a loop (tests, fuzzing) */
    if (want[me]) deliver_local(sh, sharded, ch, msg);
    for (int t = 0; t < n; t++) {
        if (t == me || !want[t]) continue;
        sv_pmsg *m = sv_malloc(sizeof(*m) + ch.len + msg.len);
        m->sharded = sharded;
        m->clen = ch.len;
        m->mlen = msg.len;
        if (ch.len) memcpy(m->data, ch.p, ch.len);
        if (msg.len) memcpy(m->data + ch.len, msg.p, msg.len);
        m->next = p->first[t];
        if (!m->next) {
            p->last[t] = m;
            p->dirty_t[p->ndirty_t++] = t;
        }
        p->first[t] = m;
        bump(&p->sent);
    }
    return receivers;
}

long long sv_pubsub_publish(sv_shard *sh, sv_str channel, sv_str msg) { return publish_generic(sh, 0, channel, msg); }

/* ---- between shards ---- */

#define HOLD_TURNS 3 /* turns a stream's subscriber flush may be held over */

static void on_hold_timer(uv_timer_t *t)
{
    sv_shard *sh = t->data;
    sv_pubsub_shard *p = sh->pubsub;
    p->prev_busy = 0;
    if (p->dirty) flush_dirty(p);
}

static void on_check(uv_check_t *h)
{
    sv_shard *sh = h->data;
    sv_pubsub_shard *p = sh->pubsub;
    for (int k = 0; k < p->ndirty_t; k++) {
        int t = p->dirty_t[k];
        sv_pmsg *first = p->first[t], *last = p->last[t];
        p->first[t] = p->last[t] = NULL;
        sv_pubsub_shard *tp = sv_shards[t].pubsub;
        sv_pmsg *old = atomic_load_explicit(&tp->inbox, memory_order_relaxed);
        do {
            last->next = old;
        } while (!atomic_compare_exchange_weak_explicit(&tp->inbox, &old, first, memory_order_release,
                                                        memory_order_relaxed));
        if (!old) { /* it has taken everything sent before: wake it */
            bump(&p->wakeups);
            uv_async_send(&tp->async);
        }
    }
    p->ndirty_t = 0;
    int busy = p->dirty != NULL, prev = p->prev_busy;
    p->prev_busy = busy;
    if (!busy) return;
    /* A stream of messages (this turn and the one before handed subscribers some): the
     * subscribers' write is held over the next turns, which the publishers' next requests
     * start, so a loop that keeps receiving PUBLISHes writes each subscriber once per
     * HOLD_TURNS + 1 turns — the same bytes in fewer writes (each a loopback packet whose
     * kernel work is most of a PUBLISH's cost) and no extra poll. A message is late by
     * HOLD_TURNS turns, at most 1 ms (the timer, started with the first held turn, when
     * the stream stops); a lone message is never held, nor past 64 KB. */
    if (prev && p->held < HOLD_TURNS && p->turn_bytes < 65536) {
        if (!p->held++) uv_timer_start(&p->hold_timer, on_hold_timer, 1, 0);
        return;
    }
    flush_dirty(p);
}

static void on_async(uv_async_t *a)
{
    sv_shard *sh = a->data;
    sv_pubsub_shard *p = sh->pubsub;
    if (sh->stopping) return;
    sv_pmsg *l = atomic_exchange_explicit(&p->inbox, NULL, memory_order_acquire);
    sv_pmsg *fifo = NULL;
    while (l) { /* newest first: reverse (each publisher's order is kept) */
        sv_pmsg *n = l->next;
        l->next = fifo;
        fifo = l;
        l = n;
    }
    while (fifo) {
        sv_pmsg *m = fifo;
        fifo = m->next;
        deliver_local(sh, m->sharded, (sv_str){m->data, m->clen}, (sv_str){m->data + m->clen, m->mlen});
        bump(&p->received);
        free(m);
    }
    if (p->dirty) flush_dirty(p);
}

/* ---- lifecycle ---- */

void sv_pubsub_init_shard(sv_shard *sh)
{
    sv_pubsub_init();
    sv_pubsub_shard *p = sv_calloc(1, sizeof(*p));
    for (int k = 0; k < NKINDS; k++) sv_dict_init(&p->local[k]);
    atomic_init(&p->inbox, NULL);
    int n = sv_cfg.shards;
    p->first = sv_calloc((size_t)n, sizeof(sv_pmsg *));
    p->last = sv_calloc((size_t)n, sizeof(sv_pmsg *));
    p->dirty_t = sv_calloc((size_t)n, sizeof(int));
    uv_async_init(&sh->loop, &p->async, on_async);
    p->async.data = sh;
    uv_check_init(&sh->loop, &p->check);
    p->check.data = sh;
    uv_check_start(&p->check, on_check);
    uv_unref((uv_handle_t *)&p->check);
    uv_timer_init(&sh->loop, &p->hold_timer);
    p->hold_timer.data = sh;
    uv_unref((uv_handle_t *)&p->hold_timer);
    sh->pubsub = p;
}

static void close_noop(uv_handle_t *h) { (void)h; }

void sv_pubsub_close_shard(sv_shard *sh)
{
    sv_pubsub_shard *p = sh->pubsub;
    if (!p) return;
    uv_close((uv_handle_t *)&p->async, close_noop);
    uv_check_stop(&p->check);
    uv_close((uv_handle_t *)&p->check, close_noop);
    uv_timer_stop(&p->hold_timer);
    uv_close((uv_handle_t *)&p->hold_timer, close_noop);
    if (p->dirty) flush_dirty(p); /* a held flush: written before the connections close */
}

static void free_subs(sv_entry *e, void *priv)
{
    (void)priv;
    sv_subs *s = e->val;
    free(s->v);
    free(s);
}

static void free_reg(sv_entry *e, void *priv)
{
    (void)priv;
    free(e->val);
}

static void free_list(sv_pmsg *m)
{
    while (m) {
        sv_pmsg *n = m->next;
        free(m);
        m = n;
    }
}

void sv_pubsub_cleanup(void)
{
    for (int i = 0; sv_shards && i < sv_cfg.shards; i++) {
        sv_pubsub_shard *p = sv_shards[i].pubsub;
        if (!p) continue;
        free_list(atomic_exchange(&p->inbox, NULL));
        for (int t = 0; t < sv_cfg.shards; t++) free_list(p->first[t]);
        for (int k = 0; k < NKINDS; k++) sv_dict_clear(&p->local[k], free_subs, NULL);
        free(p->first);
        free(p->last);
        free(p->dirty_t);
        free(p);
        sv_shards[i].pubsub = NULL;
    }
    sv_pubsub_init();
    for (int k = 0; k < NKINDS; k++) sv_dict_clear(&reg[k], free_reg, NULL);
}

void sv_pubsub_unsubscribe_all(sv_shard *sh, sv_session *s)
{
    sv_psub *ps = s->ps;
    if (!ps) return;
    for (int k = 0; k < NKINDS; k++) {
        while (sv_dict_size(&ps->names[k])) {
            sv_dict_iter it;
            sv_dict_iter_init(&it, &ps->names[k]);
            sv_entry *e = sv_dict_iter_next(&it);
            char *name = sv_memdup(e->key, e->klen);
            do_unsubscribe(sh, ps, k, (sv_str){name, e->klen});
            free(name);
        }
    }
}

void sv_pubsub_conn_closed(sv_conn *c)
{
    sv_psub *ps = c->sess.ps;
    if (!ps) return;
    sv_pubsub_shard *p = c->sh->pubsub;
    if (ps->dirty && p) /* leaves this turn's dirty list */
        for (sv_psub **pp = &p->dirty; *pp; pp = &(*pp)->dirty_next)
            if (*pp == ps) {
                *pp = ps->dirty_next;
                break;
            }
    if (p) sv_pubsub_unsubscribe_all(c->sh, &c->sess);
    for (int k = 0; k < NKINDS; k++) sv_dict_clear(&ps->names[k], NULL, NULL);
    free(ps);
    c->sess.ps = NULL;
}

/* ---- commands ---- */

/* A subscription needs a connection of this shard (not a forwarded request, not the
 * log's replay). */
static sv_psub *need_psub(sv_ctx *c)
{
    if (!c->sess->conn || !c->sh->pubsub) {
        sv_add_error(&c->r, "ERR subscriptions need a client connection");
        return NULL;
    }
    return psub_of(c->sess, 1);
}

static void subscribe_generic(sv_ctx *c, int argc, sv_str *argv, int kind)
{
    sv_psub *ps = need_psub(c);
    if (!ps) return;
    for (int i = 1; i < argc; i++) {
        do_subscribe(c->sh, ps, kind, argv[i]);
        add_push(&c->r, 3);
        sv_add_bulk_cstr(&c->r, sub_names[kind]);
        sv_add_bulk(&c->r, argv[i].p, argv[i].len);
        sv_add_int(&c->r, count_of(ps, kind));
    }
}

static void unsubscribe_generic(sv_ctx *c, int argc, sv_str *argv, int kind)
{
    sv_psub *ps = psub_of(c->sess, 0);
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            if (ps && c->sh->pubsub) do_unsubscribe(c->sh, ps, kind, argv[i]);
            add_push(&c->r, 3);
            sv_add_bulk_cstr(&c->r, unsub_names[kind]);
            sv_add_bulk(&c->r, argv[i].p, argv[i].len);
            sv_add_int(&c->r, count_of(ps, kind));
        }
        return;
    }
    if (!ps || sv_dict_size(&ps->names[kind]) == 0) {
        add_push(&c->r, 3);
        sv_add_bulk_cstr(&c->r, unsub_names[kind]);
        sv_add_null(&c->r);
        sv_add_int(&c->r, count_of(ps, kind));
        return;
    }
    while (sv_dict_size(&ps->names[kind])) {
        sv_dict_iter it;
        sv_dict_iter_init(&it, &ps->names[kind]);
        sv_entry *e = sv_dict_iter_next(&it);
        char *name = sv_memdup(e->key, e->klen);
        size_t len = e->klen;
        do_unsubscribe(c->sh, ps, kind, (sv_str){name, len});
        add_push(&c->r, 3);
        sv_add_bulk_cstr(&c->r, unsub_names[kind]);
        sv_add_bulk(&c->r, name, len);
        sv_add_int(&c->r, count_of(ps, kind));
        free(name);
    }
}

void sv_cmd_subscribe(sv_ctx *c, int argc, sv_str *argv) { subscribe_generic(c, argc, argv, K_CH); }
void sv_cmd_psubscribe(sv_ctx *c, int argc, sv_str *argv) { subscribe_generic(c, argc, argv, K_PAT); }
void sv_cmd_ssubscribe(sv_ctx *c, int argc, sv_str *argv) { subscribe_generic(c, argc, argv, K_SCH); }
void sv_cmd_unsubscribe(sv_ctx *c, int argc, sv_str *argv) { unsubscribe_generic(c, argc, argv, K_CH); }
void sv_cmd_punsubscribe(sv_ctx *c, int argc, sv_str *argv) { unsubscribe_generic(c, argc, argv, K_PAT); }
void sv_cmd_sunsubscribe(sv_ctx *c, int argc, sv_str *argv) { unsubscribe_generic(c, argc, argv, K_SCH); }

void sv_cmd_publish(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_add_int(&c->r, publish_generic(c->sh, 0, argv[1], argv[2]));
}

void sv_cmd_spublish(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_add_int(&c->r, publish_generic(c->sh, 1, argv[1], argv[2]));
}

static void channels_reply(sv_ctx *c, int kind, int argc, sv_str *argv)
{
    sv_buf tmp = {0};
    sv_reply r = {&tmp, c->r.proto};
    long long n = 0;
    rd_lock();
    sv_dict_iter it;
    sv_dict_iter_init(&it, &reg[kind]);
    for (sv_entry *e; (e = sv_dict_iter_next(&it));)
        if (argc < 3 || sv_glob(argv[2].p, argv[2].len, e->key, e->klen, 0)) {
            sv_add_bulk(&r, e->key, e->klen);
            n++;
        }
    rd_unlock();
    sv_add_array(&c->r, n);
    sv_add_raw(&c->r, tmp.data ? tmp.data : "", tmp.len);
    sv_buf_free(&tmp);
}

static void numsub_reply(sv_ctx *c, int kind, int argc, sv_str *argv)
{
    sv_add_array(&c->r, (long long)(argc - 2) * 2);
    rd_lock();
    for (int i = 2; i < argc; i++) {
        sv_entry *e = sv_dict_find(&reg[kind], argv[i].p, argv[i].len);
        sv_add_bulk(&c->r, argv[i].p, argv[i].len);
        sv_add_int(&c->r, e ? ((sv_reg *)e->val)->total : 0);
    }
    rd_unlock();
}

/* PUBSUB CHANNELS/NUMSUB/NUMPAT/SHARDCHANNELS/SHARDNUMSUB: the whole server. */
void sv_cmd_pubsub(sv_ctx *c, int argc, sv_str *argv)
{
    sv_pubsub_init();
    sv_str sub = argv[1];
    const char *bad = NULL;
    if (sv_eq(sub, "channels")) {
        if (argc > 3) bad = "channels";
        else channels_reply(c, K_CH, argc, argv);
    } else if (sv_eq(sub, "shardchannels")) {
        if (argc > 3) bad = "shardchannels";
        else channels_reply(c, K_SCH, argc, argv);
    } else if (sv_eq(sub, "numsub")) {
        numsub_reply(c, K_CH, argc, argv);
    } else if (sv_eq(sub, "shardnumsub")) {
        numsub_reply(c, K_SCH, argc, argv);
    } else if (sv_eq(sub, "numpat")) {
        if (argc != 2) sv_add_error(&c->r, "wrong number of arguments for 'pubsub|numpat' command");
        else {
            rd_lock();
            long long n = (long long)sv_dict_size(&reg[K_PAT]);
            rd_unlock();
            sv_add_int(&c->r, n);
        }
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *lines[] = {
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP",
            "    Prints this help."};
        sv_add_array(&c->r, (long long)(sizeof(lines) / sizeof(lines[0])));
        for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) sv_add_status(&c->r, lines[i]);
    } else {
        int n = (int)(sub.len > 128 ? 128 : sub.len);
        sv_add_errorf(&c->r, "unknown subcommand '%.*s'. Try PUBSUB HELP.", n, sub.p);
    }
    if (bad)
        sv_add_errorf(&c->r, "unknown subcommand or wrong number of arguments for '%.*s'. Try PUBSUB HELP.",
                      (int)(sub.len > 128 ? 128 : sub.len), sub.p);
}

int sv_pubsub_allowed_cmd(sv_cmd_fn *fn)
{
    return fn == sv_cmd_subscribe || fn == sv_cmd_psubscribe || fn == sv_cmd_ssubscribe ||
           fn == sv_cmd_unsubscribe || fn == sv_cmd_punsubscribe || fn == sv_cmd_sunsubscribe ||
           fn == sv_cmd_ping || fn == sv_cmd_quit || fn == sv_cmd_reset;
}

void sv_pubsub_info_counts(long long *channels, long long *patterns, long long *shard_channels)
{
    sv_pubsub_init();
    rd_lock();
    *channels = (long long)sv_dict_size(&reg[K_CH]);
    *patterns = (long long)sv_dict_size(&reg[K_PAT]);
    *shard_channels = (long long)sv_dict_size(&reg[K_SCH]);
    rd_unlock();
}

void sv_pubsub_stats(uint64_t *sent, uint64_t *wakeups, uint64_t *received)
{
    *sent = *wakeups = *received = 0;
    for (int i = 0; sv_shards && i < sv_cfg.shards; i++) {
        sv_pubsub_shard *p = sv_shards[i].pubsub;
        if (!p) continue;
        *sent += atomic_load_explicit(&p->sent, memory_order_relaxed);
        *wakeups += atomic_load_explicit(&p->wakeups, memory_order_relaxed);
        *received += atomic_load_explicit(&p->received, memory_order_relaxed);
    }
}
