/* pubsub: the subscriber of slotlane.h ("pub/sub"). A subscriber has a private client (its
 * options, its topology and the command connections that refresh it), its own subscriber
 * connections (sl__node structs that are not in the topology: the command connections never
 * carry a subscription) and one thread that drives them with poll(). The caller states the
 * wanted set (ops, under the lock); the thread keeps the servers equal to it: it places
 * every subscription (classic and pattern on one connection, shard channels on their slot
 * owner's), sends what is missing, resubscribes after a loss, and queues the messages and
 * the events in one bounded queue that drains copy out. Only the core part: every binding,
 * libuv or not, gets the same subscriber. */
#include "client.h"
#include "conn.h"
#include "resp.h"
#include "topology.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define REC_OVERHEAD 32u /* bytes a queued record counts beside its own (sizeof(sl_message)) */

enum { ST_NONE = 0, ST_SENT = 1, ST_CONFIRMED = 2 };

typedef struct sub_conn sub_conn;

/* One wanted (or leaving) subscription. */
typedef struct sub_entry {
    uint8_t kind;                /* sl_sub_kind */
    uint8_t want;                /* in the caller's set */
    uint8_t state;               /* ST_*: what its connection's server has */
    uint8_t ever;                /* confirmed before on some connection: the next is a RESUBSCRIBED */
    uint8_t unsub_sent;          /* an UNSUBSCRIBE for it is on the wire */
    uint8_t pending;             /* reconcile: to be sent in this pass */
    uint16_t slot;               /* SL_SUB_SHARD: the name's slot */
    sub_conn *conn;              /* where it is placed (NULL: nowhere yet) */
    uint8_t *name;
    size_t len;
} sub_entry;

/* A subscriber connection. */
struct sub_conn {
    sl__node node;               /* address, socket, read buffer, parser (conn.c does the I/O) */
    int classic;                 /* the connection of classic and pattern subscriptions */
    int ready;                   /* connected, handshake written: subscriptions may be sent */
    int handshake_left;          /* handshake replies still to come */
    int refs;                    /* entries placed on it (reconcile) */
    sl__bytes out;               /* bytes to write: out.ptr[opos, len) */
    size_t opos;
    sl__records recs;            /* the reply being parsed */
    sl__bytes data;
    uint64_t last_read_ms;
    uint64_t ping_sent_ms;
    int ping_out;
    uint64_t hold_until_ms;      /* a subscription command was refused: send again after this */
};

typedef struct sub_op {
    uint8_t subscribe;
    uint8_t kind;
    uint8_t all;                 /* unsubscribe every subscription of kind */
    uint8_t *name;
    size_t len;
} sub_op;

typedef struct qrec {
    uint8_t kind, flags;
    uint32_t chl, patl, payl;
    int64_t count;
    size_t off;                  /* of its bytes in qdata */
} qrec;

struct sl_subscriber {
    sl_client *c;                /* private: options, topology, refreshes; the thread's after new */
    uint64_t max_queue;
    int hc_ms;                   /* health-check interval, 0: none */

    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int wake_fd;                 /* eventfd: ops or close for the thread */
    int q_fd;                    /* eventfd: the queue is not empty */
    atomic_int fd_wanted;        /* sl_subscriber_fd was asked: only then is q_fd written (a
                                    blocking drain needs only the condition variable) */
    int waiters;                 /* drains blocked on cond (under mu) */

    /* under mu */
    int closing;
    sub_op *ops;
    size_t nops, capops;
    qrec *q;
    size_t qhead, qlen, qcap;
    sl__bytes qdata;
    int q_signalled;             /* the queue went non-empty since the last drain emptied it */
    int q_written;               /* ... and q_fd holds a count */
    sl_subscriber_stats st;

    /* the thread's */
    sub_entry *ents;
    size_t nents, capents;
    sub_conn **conns;
    size_t nconns, capconns;
    size_t classic_pick;         /* which primary the classic connection goes to */
    int dirty;                   /* reconcile: something changed */
    uint64_t dirty_at_ms;        /* ... or will be due then (a refused subscription's retry); 0: none */
    int refresh_wanted;
    uint64_t refresh_at;
    int refresh_fails;
    const char **argv;           /* reconcile's command scratch */
    size_t *argl;
    size_t capargv;
};

/* ------------------------------------------------------------------ the queue */

/* Appends one record (under mu). A message past the bound is dropped and counted in an
 * OVERFLOW record at the queue's tail (one per run of drops). */
static void q_push(sl_subscriber *s, int is_message, uint8_t kind, uint8_t flags, int64_t count,
                   const uint8_t *ch, size_t chl, const uint8_t *pat, size_t patl, const uint8_t *pay,
                   size_t payl)
{
    const sl__alloc *a = &s->c->alloc;
    size_t need = chl + patl + payl;
    if (is_message && s->st.queued_bytes + need + REC_OVERHEAD > s->max_queue) {
        s->st.dropped++;
        if (s->qlen > s->qhead && s->q[s->qlen - 1].kind == SL_MSG_OVERFLOW) {
            s->q[s->qlen - 1].count++;
            return;
        }
        kind = SL_MSG_OVERFLOW;
        flags = 0;
        count = 1;
        chl = patl = payl = need = 0;
        is_message = 0;
    }
    if (s->qlen == s->qcap && sl__grow(a, (void **)&s->q, &s->qcap, s->qlen + 1, sizeof *s->q)) goto oom;
    if (sl__bytes_reserve(a, &s->qdata, need)) goto oom;
    qrec *r = &s->q[s->qlen++];
    r->kind = kind;
    r->flags = flags;
    r->count = count;
    r->chl = (uint32_t)chl;
    r->patl = (uint32_t)patl;
    r->payl = (uint32_t)payl;
    r->off = s->qdata.len;
    if (chl) memcpy(s->qdata.ptr + s->qdata.len, ch, chl);
    if (patl) memcpy(s->qdata.ptr + s->qdata.len + chl, pat, patl);
    if (payl) memcpy(s->qdata.ptr + s->qdata.len + chl + patl, pay, payl);
    s->qdata.len += need;
    s->st.queued_bytes += need + REC_OVERHEAD;
    if (is_message) s->st.messages++;
    if (!s->q_signalled) { /* empty -> non-empty: wake whoever waits, once */
        s->q_signalled = 1;
        if (atomic_load_explicit(&s->fd_wanted, memory_order_relaxed)) {
            uint64_t one = 1;
            ssize_t w = write(s->q_fd, &one, sizeof one);
            (void)w;
            s->q_written = 1;
        }
        if (s->waiters) pthread_cond_broadcast(&s->cond);
    }
    return;
oom:
    /* Out of memory is an overflow too: the record is lost and counted. */
    s->st.dropped++;
}

static void q_event(sl_subscriber *s, uint8_t kind, uint8_t flags, int64_t count, const uint8_t *ch, size_t chl,
                    const char *text)
{
    q_push(s, 0, kind, flags, count, ch, chl, NULL, 0, (const uint8_t *)text, text ? strlen(text) : 0);
}

/* ------------------------------------------------------------------ entries */

static sub_entry *find_entry(sl_subscriber *s, int kind, const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < s->nents; i++) {
        sub_entry *e = &s->ents[i];
        if (e->kind == kind && e->len == len && (len == 0 || memcmp(e->name, name, len) == 0)) return e;
    }
    return NULL;
}

static void remove_entry(sl_subscriber *s, sub_entry *e)
{
    sl__free(&s->c->alloc, e->name);
    *e = s->ents[--s->nents];
}

static uint8_t unsub_kind(int kind)
{
    return kind == SL_SUB_PATTERN ? SL_MSG_PUNSUBSCRIBE : kind == SL_SUB_SHARD ? SL_MSG_SUNSUBSCRIBE : SL_MSG_UNSUBSCRIBE;
}

static void apply_ops(sl_subscriber *s)
{
    for (size_t i = 0; i < s->nops; i++) {
        sub_op *op = &s->ops[i];
        if (op->all) {
            for (size_t k = 0; k < s->nents; k++)
                if (s->ents[k].kind == op->kind) s->ents[k].want = 0;
        } else {
            sub_entry *e = find_entry(s, op->kind, op->name, op->len);
            if (op->subscribe && !e) {
                if (s->nents == s->capents &&
                    sl__grow(&s->c->alloc, (void **)&s->ents, &s->capents, s->nents + 1, sizeof *s->ents)) {
                    q_event(s, SL_MSG_ERROR, op->kind, 0, op->name, op->len, "out of memory");
                    sl__free(&s->c->alloc, op->name);
                    continue;
                }
                e = &s->ents[s->nents++];
                memset(e, 0, sizeof *e);
                e->kind = op->kind;
                e->name = op->name; /* the op's copy becomes the entry's */
                e->len = op->len;
                e->slot = (uint16_t)sl_key_slot(op->name, op->len);
                op->name = NULL;
            }
            if (e) e->want = op->subscribe;
        }
        sl__free(&s->c->alloc, op->name);
    }
    s->nops = 0;
    s->dirty = 1;
}

/* ---------------------------------------------------------------- connections */

static sub_conn *conn_new(sl_subscriber *s, const sl__node *like, int classic)
{
    const sl__alloc *a = &s->c->alloc;
    if (s->nconns == s->capconns && sl__grow(a, (void **)&s->conns, &s->capconns, s->nconns + 1, sizeof *s->conns))
        return NULL;
    sub_conn *k = sl__malloc(a, sizeof *k);
    if (!k) return NULL;
    memset(k, 0, sizeof *k);
    k->node.fd = -1;
    memcpy(k->node.host, like->host, sizeof k->node.host);
    k->node.port = like->port;
    memcpy(k->node.addr, like->addr, sizeof k->node.addr);
    memcpy(k->node.announced, like->announced, sizeof k->node.announced);
    k->node.seed = like->seed;
    k->classic = classic;
    s->conns[s->nconns++] = k;
    return k;
}

static void conn_free(sl_subscriber *s, size_t i)
{
    const sl__alloc *a = &s->c->alloc;
    sub_conn *k = s->conns[i];
    sl__node_close(s->c, &k->node, 0);
    sl__bytes_free(a, &k->node.rbuf);
    sl__bytes_free(a, &k->out);
    sl__records_free(a, &k->recs);
    sl__bytes_free(a, &k->data);
    sl__free(a, k);
    s->conns[i] = s->conns[--s->nconns];
}

/* The connection broke (or never came up): its subscriptions are in a gap. */
static void conn_failed(sl_subscriber *s, sub_conn *k, const char *why, int failed)
{
    int was_up = k->ready && k->handshake_left == 0; /* a refused handshake is no loss */
    char msg[SL__ERRMSG_MAX + SL__HOST_MAX + 16];
    snprintf(msg, sizeof msg, "%s: %s", k->node.addr, why);
    sl__node_close(s->c, &k->node, failed);
    k->ready = 0;
    k->handshake_left = 0;
    k->ping_out = 0;
    k->out.len = k->opos = 0;
    k->recs.len = 0;
    k->data.len = 0;
    for (size_t i = 0; i < s->nents;) {
        sub_entry *e = &s->ents[i];
        if (e->conn == k) {
            if (e->state == ST_CONFIRMED && s->st.confirmed) s->st.confirmed--;
            e->state = ST_NONE;
            e->unsub_sent = 0;
            if (!e->want) {
                q_event(s, unsub_kind(e->kind), 0, 0, e->name, e->len, NULL);
                remove_entry(s, e);
                continue;
            }
        }
        i++;
    }
    if (was_up) {
        s->st.connection_losses++;
        q_event(s, SL_MSG_CONNECTION_LOST, 0, 0, NULL, 0, msg);
    }
    if (k->classic) s->classic_pick++;
    if (s->c->mode == SL_MODE_CLUSTER) s->refresh_wanted = 1;
    s->dirty = 1;
}

static int conn_write(sl_subscriber *s, sub_conn *k)
{
    while (k->opos < k->out.len) {
        ssize_t w = sl__node_send(&k->node, k->out.ptr + k->opos, k->out.len - k->opos);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            char why[256];
            snprintf(why, sizeof why, "write: %s", sl__node_io_error(&k->node, errno));
            conn_failed(s, k, why, 1);
            return -1;
        }
        k->opos += (size_t)w;
    }
    k->out.len = k->opos = 0;
    return 0;
}

static int send_argv(sl_subscriber *s, sub_conn *k, int argc, const char *const *argv, const size_t *argl)
{
    return sl__resp_encode_argv(&s->c->alloc, &k->out, argc, argv, argl);
}

static void conn_up(sl_subscriber *s, sub_conn *k, uint64_t now)
{
    int hs = sl__node_handshake(s->c, &k->node, &k->out);
    if (hs < 0) {
        conn_failed(s, k, "out of memory", 1);
        return;
    }
    k->handshake_left = hs;
    k->ready = 1;
    k->last_read_ms = now;
    s->dirty = 1;
}

/* ------------------------------------------------------------------ replies */

static int rec_is(const sl__records *r, const sl__bytes *d, size_t i, const char *word)
{
    const sl_reply *x = &r->ptr[i];
    size_t n = strlen(word);
    if ((x->type != SL_REPLY_STRING && x->type != SL_REPLY_STATUS) || x->len != n) return 0;
    for (size_t j = 0; j < n; j++) {
        uint8_t ch = d->ptr[x->offset + j];
        if (ch >= 'A' && ch <= 'Z') ch = (uint8_t)(ch - 'A' + 'a');
        if (ch != (uint8_t)word[j]) return 0;
    }
    return 1;
}

#define REC_BYTES(i) (k->data.ptr + k->recs.ptr[i].offset), ((size_t)k->recs.ptr[i].len)

/* A confirmation of a subscription (kind) or of its end. */
static void on_sub_reply(sl_subscriber *s, sub_conn *k, int kind, int subscribed)
{
    const sl_reply *r = k->recs.ptr;
    const uint8_t *name = r[2].type == SL_REPLY_NIL ? NULL : k->data.ptr + r[2].offset;
    size_t len = r[2].type == SL_REPLY_NIL ? 0 : r[2].len;
    int64_t count = r[0].len >= 3 && r[3].type == SL_REPLY_INTEGER ? r[3].value.integer : 0;
    sub_entry *e = name ? find_entry(s, kind, name, len) : NULL;
    if (e && e->conn != k) e = NULL;
    if (subscribed) {
        uint8_t ev = (uint8_t)(SL_MSG_SUBSCRIBE + kind);
        if (e && e->state == ST_SENT) {
            e->state = ST_CONFIRMED;
            s->st.confirmed++;
            if (e->ever) {
                ev = SL_MSG_RESUBSCRIBED;
                s->st.resubscribed++;
            }
            e->ever = 1;
        }
        q_event(s, ev, ev == SL_MSG_RESUBSCRIBED ? (uint8_t)kind : 0, count, name, len, NULL);
        return;
    }
    if (e && e->state == ST_CONFIRMED && s->st.confirmed) s->st.confirmed--;
    if (e && e->unsub_sent) {
        e->unsub_sent = 0;
        e->state = ST_NONE;
        e->ever = 0; /* a gap the caller asked for is no gap */
        q_event(s, unsub_kind(kind), 0, count, name, len, NULL);
        if (!e->want) remove_entry(s, e);
        s->dirty = 1;
    } else if (e && e->want) {
        /* Unsolicited: the server dropped it (Redis does for shard channels whose slot left
         * the node). Find where it lives now and subscribe there; RESUBSCRIBED reports it. */
        e->state = ST_NONE;
        e->ever = 1;
        if (s->c->mode == SL_MODE_CLUSTER) s->refresh_wanted = 1;
        s->dirty = 1;
    } else {
        q_event(s, unsub_kind(kind), 0, count, name, len, NULL);
    }
}

/* One whole reply or push in k->recs / k->data. */
static void on_reply(sl_subscriber *s, sub_conn *k)
{
    const sl_reply *r = k->recs.ptr;
    if (k->handshake_left > 0) {
        if (r[0].type != SL_REPLY_ERROR) {
            k->handshake_left--;
        } else {
            char why[300];
            snprintf(why, sizeof why, "connection setup failed: %.*s", (int)(r[0].len > 200 ? 200 : r[0].len),
                     (const char *)k->data.ptr + r[0].offset);
            conn_failed(s, k, why, 2);
        }
        return;
    }
    if (r[0].type == SL_REPLY_ERROR) {
        const char *t = (const char *)k->data.ptr + r[0].offset;
        size_t tl = r[0].len;
        if (tl > 6 && memcmp(t, "MOVED ", 6) == 0) {
            /* SSUBSCRIBE to a node that lost the slot: "MOVED slot host:port" */
            int64_t slot = -1;
            size_t end = 6;
            while (end < tl && t[end] != ' ') end++;
            sl__parse_i64((const uint8_t *)t + 6, end - 6, &slot);
            for (size_t i = 0; i < s->nents; i++) {
                sub_entry *e = &s->ents[i];
                if (e->conn == k && e->kind == SL_SUB_SHARD && e->slot == slot && e->state == ST_SENT)
                    e->state = ST_NONE;
            }
            s->refresh_wanted = 1;
            s->dirty = 1;
            return;
        }
        /* Refused (CLUSTERDOWN while a restarted node rejoins, LOADING...): report it, and
         * send what is still unconfirmed here again after a backoff. */
        char msg[300];
        snprintf(msg, sizeof msg, "%.*s (from %s)", (int)(tl > 200 ? 200 : tl), t, k->node.addr);
        q_event(s, SL_MSG_ERROR, 0, 0, NULL, 0, msg);
        for (size_t i = 0; i < s->nents; i++)
            if (s->ents[i].conn == k && s->ents[i].state == ST_SENT) s->ents[i].state = ST_NONE;
        uint64_t wait = (uint64_t)(s->c->opts.reconnect_max_ms > 0 ? s->c->opts.reconnect_max_ms : 100);
        k->hold_until_ms = sl__now_ms() + wait;
        if (!s->dirty_at_ms || s->dirty_at_ms > k->hold_until_ms) s->dirty_at_ms = k->hold_until_ms;
        if (s->c->mode == SL_MODE_CLUSTER) s->refresh_wanted = 1;
        return;
    }
    if (r[0].type != SL_REPLY_ARRAY && r[0].type != SL_REPLY_PUSH) return; /* +PONG, +OK */
    uint32_t n = r[0].len;
    if (n < 2 || k->recs.len != (size_t)n + 1) return; /* nothing of ours (nested) */
    if (n == 3 && rec_is(&k->recs, &k->data, 1, "message")) {
        q_push(s, 1, SL_MSG_MESSAGE, 0, 0, REC_BYTES(2), NULL, 0, REC_BYTES(3));
    } else if (n == 3 && rec_is(&k->recs, &k->data, 1, "smessage")) {
        q_push(s, 1, SL_MSG_SMESSAGE, 0, 0, REC_BYTES(2), NULL, 0, REC_BYTES(3));
    } else if (n == 4 && rec_is(&k->recs, &k->data, 1, "pmessage")) {
        q_push(s, 1, SL_MSG_PMESSAGE, 0, 0, REC_BYTES(3), REC_BYTES(2), REC_BYTES(4));
    } else if (n == 3) {
        static const char *const words[] = {"subscribe", "psubscribe", "ssubscribe",
                                            "unsubscribe", "punsubscribe", "sunsubscribe"};
        for (int w = 0; w < 6; w++)
            if (rec_is(&k->recs, &k->data, 1, words[w])) {
                on_sub_reply(s, k, w % 3, w < 3);
                break;
            }
    }
    /* ["pong", ""]: RESP2's PING reply on a subscribed connection; reading it was enough */
}

/* Reads what the socket has and handles every whole reply (under mu). */
static void conn_read(sl_subscriber *s, sub_conn *k, uint64_t now)
{
    const sl__alloc *a = &s->c->alloc;
    sl__node *n = &k->node;
    for (int round = 0; round < 8; round++) {
        if (sl__bytes_reserve(a, &n->rbuf, 65536)) {
            conn_failed(s, k, "out of memory", 1);
            return;
        }
        ssize_t got = sl__node_recv(n, n->rbuf.ptr + n->rbuf.len, n->rbuf.cap - n->rbuf.len);
        if (got == 0) {
            conn_failed(s, k, "connection closed by the server", 1);
            return;
        }
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            char why[256];
            snprintf(why, sizeof why, "read: %s", sl__node_io_error(n, errno));
            conn_failed(s, k, why, 1);
            return;
        }
        n->rbuf.len += (size_t)got;
        s->st.bytes_read += (uint64_t)got;
        k->last_read_ms = now;
        k->ping_out = 0;
        while (n->rpos < n->rbuf.len) {
            size_t used = 0;
            int rc = sl__resp_parse(&n->parser, a, n->rbuf.ptr + n->rpos, n->rbuf.len - n->rpos, &used, &k->recs,
                                    &k->data);
            n->rpos += used;
            if (rc == SL__RESP_MORE) break;
            if (rc < 0) {
                char why[200];
                snprintf(why, sizeof why, "protocol error: %s",
                         rc == SL__RESP_BAD ? n->parser.errmsg : "out of memory");
                conn_failed(s, k, why, 1);
                return;
            }
            on_reply(s, k);
            if (n->fd < 0) return; /* on_reply failed the connection */
            k->recs.len = 0;
            k->data.len = 0;
        }
        if (n->rpos == n->rbuf.len) {
            n->rbuf.len = n->rpos = 0;
        } else if (n->rpos > 0) {
            memmove(n->rbuf.ptr, n->rbuf.ptr + n->rpos, n->rbuf.len - n->rpos);
            n->rbuf.len -= n->rpos;
            n->rpos = 0;
        }
        if ((size_t)got < 65536 && !sl__node_pending(n)) break;
    }
}

/* ------------------------------------------------------------------ reconcile */

/* The node a subscription belongs on now (NULL: unknown; a refresh is wanted). */
static const sl__node *owner_of(sl_subscriber *s, const sub_entry *e)
{
    sl__topology *t = &s->c->topo;
    if (t->nnodes == 0) return NULL;
    if (e->kind == SL_SUB_SHARD && s->c->mode == SL_MODE_CLUSTER) {
        uint16_t i = t->slot_node[e->slot];
        if (i == SL__NO_NODE || i >= t->nnodes) {
            s->refresh_wanted = 1;
            return NULL;
        }
        return t->nodes[i];
    }
    /* classic and pattern: one primary (the next one after a failure) */
    size_t primaries = 0;
    for (size_t i = 0; i < t->nnodes; i++) primaries += t->nodes[i]->primary || s->c->mode != SL_MODE_CLUSTER;
    if (primaries == 0) return t->nodes[s->classic_pick % t->nnodes];
    size_t want = s->classic_pick % primaries;
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i]->primary || s->c->mode != SL_MODE_CLUSTER) {
            if (want == 0) return t->nodes[i];
            want--;
        }
    return t->nodes[0];
}

static sub_conn *place(sl_subscriber *s, sub_entry *e)
{
    int classic = e->kind != SL_SUB_SHARD || s->c->mode != SL_MODE_CLUSTER;
    if (classic) {
        for (size_t i = 0; i < s->nconns; i++)
            if (s->conns[i]->classic) {
                sub_conn *k = s->conns[i];
                /* a classic connection that is down may move to another node */
                if (k->node.fd < 0 && k->node.failures > 0) {
                    const sl__node *o = owner_of(s, e);
                    if (o && strcmp(o->addr, k->node.addr) != 0) {
                        memcpy(k->node.host, o->host, sizeof k->node.host);
                        k->node.port = o->port;
                        memcpy(k->node.addr, o->addr, sizeof k->node.addr);
                        memcpy(k->node.announced, o->announced, sizeof k->node.announced);
                        k->node.seed = o->seed;
                        k->node.resolved = 0;
                    }
                }
                return k;
            }
    }
    const sl__node *o = owner_of(s, e);
    if (!o) return NULL;
    if (!classic)
        for (size_t i = 0; i < s->nconns; i++)
            if (!s->conns[i]->classic && strcmp(s->conns[i]->node.addr, o->addr) == 0) return s->conns[i];
    return conn_new(s, o, classic);
}

static const char *sub_word(int kind, int subscribe)
{
    static const char *const w[2][3] = {{"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"},
                                        {"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"}};
    return w[subscribe ? 1 : 0][kind];
}

/* Sends one command of every pending entry like *first (its connection, kind and — for shard
 * channels — slot) and marks them sent. */
static int send_group(sl_subscriber *s, size_t first, int subscribe)
{
    sub_entry *f = &s->ents[first];
    size_t n = 0;
    for (size_t i = first; i < s->nents; i++) {
        sub_entry *e = &s->ents[i];
        if (!e->pending || e->conn != f->conn || e->kind != f->kind || (f->kind == SL_SUB_SHARD && e->slot != f->slot))
            continue;
        if (n + 2 > s->capargv) {
            size_t cap1 = s->capargv, cap2 = s->capargv;
            if (sl__grow(&s->c->alloc, (void **)&s->argv, &cap1, n + 2, sizeof *s->argv) ||
                sl__grow(&s->c->alloc, (void **)&s->argl, &cap2, n + 2, sizeof *s->argl))
                return SL_ENOMEM;
            s->capargv = cap1 < cap2 ? cap1 : cap2;
        }
        s->argv[n + 1] = (const char *)e->name;
        s->argl[n + 1] = e->len;
        n++;
        e->pending = 0;
        if (subscribe)
            e->state = ST_SENT;
        else
            e->unsub_sent = 1;
    }
    s->argv[0] = sub_word(f->kind, subscribe);
    s->argl[0] = strlen(s->argv[0]);
    return send_argv(s, f->conn, (int)n + 1, s->argv, s->argl);
}

static void connections(sl_subscriber *s, uint64_t now);

static void reconcile(sl_subscriber *s, uint64_t now)
{
    if (s->dirty_at_ms && now >= s->dirty_at_ms) {
        s->dirty_at_ms = 0;
        s->dirty = 1;
    }
    if (!s->dirty) {
        connections(s, now); /* reconnects whose backoff ended */
        return;
    }
    s->dirty = 0;
    for (size_t i = 0; i < s->nconns; i++) s->conns[i]->refs = 0;
    int any_pending = 0;
    for (size_t i = 0; i < s->nents;) {
        sub_entry *e = &s->ents[i];
        e->pending = 0;
        if (!e->want) {
            if (e->state == ST_NONE || !e->conn || !e->conn->ready) {
                q_event(s, unsub_kind(e->kind), 0, 0, e->name, e->len, NULL);
                remove_entry(s, e);
                continue;
            }
            e->conn->refs++;
            if (!e->unsub_sent) {
                e->pending = 2;
                any_pending = 1;
            }
            i++;
            continue;
        }
        if (e->state == ST_NONE) e->conn = place(s, e);
        if (e->conn) {
            e->conn->refs++;
            if (e->state == ST_NONE && e->conn->ready && now >= e->conn->hold_until_ms) {
                e->pending = 1;
                any_pending = 1;
            }
        }
        i++;
    }
    if (any_pending)
        for (size_t i = 0; i < s->nents; i++) {
            int p = s->ents[i].pending;
            if (!p) continue;
            sub_conn *k = s->ents[i].conn;
            if (send_group(s, i, p == 1)) {
                conn_failed(s, k, "out of memory", 1);
                s->dirty = 1;
                return;
            }
        }
    /* drop the connections nothing is placed on */
    for (size_t i = 0; i < s->nconns;) {
        if (s->conns[i]->refs == 0) {
            conn_free(s, i);
            continue;
        }
        i++;
    }
    connections(s, now);
}

/* Connects the wanted connections that are down (when their backoff allows), writes what is
 * queued. */
static void connections(sl_subscriber *s, uint64_t now)
{
    for (size_t i = 0; i < s->nconns;) {
        sub_conn *k = s->conns[i];
        if (k->node.fd < 0 && sl__node_may_connect(s->c, &k->node, now)) {
            if (sl__node_connect_start(s->c, &k->node) != 0 && s->c->mode == SL_MODE_CLUSTER) s->refresh_wanted = 1;
        }
        if (k->ready && k->opos < k->out.len) conn_write(s, k);
        i++;
    }
}

static void maybe_refresh(sl_subscriber *s, uint64_t now)
{
    if (!s->refresh_wanted || s->c->mode != SL_MODE_CLUSTER || now < s->refresh_at) return;
    pthread_mutex_lock(&s->mu);
    s->st.refreshes++;
    pthread_mutex_unlock(&s->mu);
    int rc = sl_client_refresh(s->c);
    if (rc == 0) {
        s->refresh_wanted = 0;
        s->refresh_fails = 0;
        s->dirty = 1;
    } else {
        int lo = s->c->opts.reconnect_min_ms > 0 ? s->c->opts.reconnect_min_ms : 10;
        int hi = s->c->opts.reconnect_max_ms > lo ? s->c->opts.reconnect_max_ms : lo;
        uint64_t d = (uint64_t)lo << (s->refresh_fails < 16 ? s->refresh_fails : 16);
        if (d > (uint64_t)hi) d = (uint64_t)hi;
        s->refresh_fails++;
        s->refresh_at = sl__now_ms() + d;
    }
    /* nodes whose connection broke while refreshing: the map may have moved on */
    s->dirty = 1;
}

/* ------------------------------------------------------------------ the thread */

static void *sub_main(void *arg)
{
    sl_subscriber *s = arg;
    struct pollfd *pfds = NULL;
    sub_conn **pconn = NULL;
    size_t cappfds = 0, cappconn = 0;
    const sl__alloc *a = &s->c->alloc;
    for (;;) {
        uint64_t now = sl__now_ms();
        pthread_mutex_lock(&s->mu);
        if (s->closing) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        if (s->nops) apply_ops(s);
        pthread_mutex_unlock(&s->mu);

        maybe_refresh(s, now);
        now = sl__now_ms();
        pthread_mutex_lock(&s->mu);
        reconcile(s, now);
        /* health checks and connect deadlines */
        int timeout = 1000;
        for (size_t i = 0; i < s->nconns; i++) {
            sub_conn *k = s->conns[i];
            uint64_t due = UINT64_MAX;
            if (k->node.state == SL__CONNECTING) {
                if (now >= k->node.connect_deadline_ms) {
                    sl__node_connect_timed_out(s->c, &k->node);
                    conn_failed(s, k, s->c->errmsg, 1);
                    continue;
                }
                due = k->node.connect_deadline_ms;
            } else if (k->node.fd < 0) {
                due = k->node.retry_at_ms > now ? k->node.retry_at_ms : now + 1;
            } else if (k->ready && s->hc_ms > 0) {
                if (k->ping_out && now >= k->ping_sent_ms + (uint64_t)s->hc_ms) {
                    char why[96];
                    snprintf(why, sizeof why, "no reply to the health-check PING within %d ms", s->hc_ms);
                    conn_failed(s, k, why, 1);
                    continue;
                }
                if (!k->ping_out && now >= k->last_read_ms + (uint64_t)s->hc_ms) {
                    static const char *const ping[] = {"PING"};
                    if (send_argv(s, k, 1, ping, NULL) == 0) {
                        k->ping_out = 1;
                        k->ping_sent_ms = now;
                        s->st.pings++;
                        conn_write(s, k);
                    }
                }
                due = k->ping_out ? k->ping_sent_ms + (uint64_t)s->hc_ms : k->last_read_ms + (uint64_t)s->hc_ms;
            }
            if (due != UINT64_MAX) {
                uint64_t wait = due > now ? due - now : 0;
                if (wait < (uint64_t)timeout) timeout = (int)wait;
            }
        }
        if (s->refresh_wanted && s->c->mode == SL_MODE_CLUSTER) {
            uint64_t wait = s->refresh_at > now ? s->refresh_at - now : 0;
            if (wait < (uint64_t)timeout) timeout = (int)wait;
        }
        if (s->dirty_at_ms) {
            uint64_t wait = s->dirty_at_ms > now ? s->dirty_at_ms - now : 0;
            if (wait < (uint64_t)timeout) timeout = (int)wait;
        }
        if (s->dirty) timeout = 0;
        size_t np = 1;
        if (s->nconns + 1 > cappfds) {
            size_t c1 = cappfds, c2 = cappconn;
            if (sl__grow(a, (void **)&pfds, &c1, s->nconns + 1, sizeof *pfds) ||
                sl__grow(a, (void **)&pconn, &c2, s->nconns + 1, sizeof *pconn)) {
                pthread_mutex_unlock(&s->mu);
                break;
            }
            cappfds = c1 < c2 ? c1 : c2;
        }
        pfds[0].fd = s->wake_fd;
        pfds[0].events = POLLIN;
        for (size_t i = 0; i < s->nconns; i++) {
            sub_conn *k = s->conns[i];
            if (k->node.fd < 0) continue;
            short ev = 0;
            if (k->node.state == SL__CONNECTING)
                ev = (short)sl__node_connect_events(&k->node);
            else
                ev = (short)(POLLIN | (k->opos < k->out.len ? POLLOUT : 0));
            pfds[np].fd = k->node.fd;
            pfds[np].events = ev;
            pconn[np] = k;
            np++;
        }
        pthread_mutex_unlock(&s->mu);

        int rc = poll(pfds, (nfds_t)np, timeout);
        if (rc < 0 && errno != EINTR) break;
        now = sl__now_ms();
        pthread_mutex_lock(&s->mu);
        if (pfds[0].revents) {
            uint64_t v;
            ssize_t r = read(s->wake_fd, &v, sizeof v);
            (void)r;
        }
        for (size_t i = 1; rc > 0 && i < np; i++) {
            sub_conn *k = pconn[i];
            if (!pfds[i].revents || k->node.fd != pfds[i].fd) continue;
            if (k->node.state == SL__CONNECTING) {
                int c = sl__node_connect_check(s->c, &k->node);
                if (c == 0)
                    conn_up(s, k, now);
                else if (c < 0)
                    conn_failed(s, k, s->c->errmsg, 1);
                continue;
            }
            if (pfds[i].revents & (POLLIN | POLLERR | POLLHUP)) conn_read(s, k, now);
            if (k->node.fd >= 0 && k->opos < k->out.len && (pfds[i].revents & POLLOUT)) conn_write(s, k);
        }
        pthread_mutex_unlock(&s->mu);
    }
    sl__free(a, pfds);
    sl__free(a, pconn);
    pthread_mutex_lock(&s->mu);
    while (s->nconns) conn_free(s, s->nconns - 1);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------------ the API */

static void set_errbuf(char *buf, size_t cap, const char *msg)
{
    if (buf && cap) snprintf(buf, cap, "%s", msg);
}

static void wake(sl_subscriber *s)
{
    uint64_t one = 1;
    ssize_t w = write(s->wake_fd, &one, sizeof one);
    (void)w;
}

int sl_subscriber_new(sl_subscriber **out, const sl_client_options *copts, const sl_subscriber_options *sopts,
                      char *errmsg, size_t errmsg_cap)
{
    if (!out) return SL_EINVAL;
    *out = NULL;
    sl_subscriber_options so = SL_SUBSCRIBER_OPTIONS_INIT;
    if (sopts) {
        if (sopts->version == 0 || sopts->size < offsetof(sl_subscriber_options, health_check_interval_ms) +
                                                     sizeof sopts->health_check_interval_ms) {
            set_errbuf(errmsg, errmsg_cap, "sl_subscriber_options: bad version or size; initialise it with "
                                           "SL_SUBSCRIBER_OPTIONS_INIT");
            return SL_EINVAL;
        }
        so.max_queue_bytes = sopts->max_queue_bytes ? sopts->max_queue_bytes : so.max_queue_bytes;
        so.health_check_interval_ms = sopts->health_check_interval_ms ? sopts->health_check_interval_ms
                                                                      : so.health_check_interval_ms;
        if (so.health_check_interval_ms < -1) {
            set_errbuf(errmsg, errmsg_cap, "health_check_interval_ms must be -1, 0 or positive");
            return SL_EINVAL;
        }
    }
    sl_client *c = NULL;
    int rc = sl_client_new(&c, copts, errmsg, errmsg_cap);
    if (rc) return rc;
    sl_subscriber *s = sl__malloc(&c->alloc, sizeof *s);
    if (!s) {
        sl_client_free(c);
        set_errbuf(errmsg, errmsg_cap, "out of memory");
        return SL_ENOMEM;
    }
    memset(s, 0, sizeof *s);
    s->c = c;
    s->max_queue = so.max_queue_bytes;
    s->hc_ms = so.health_check_interval_ms > 0 ? so.health_check_interval_ms : 0;
    s->st.version = SL_SUBSCRIBER_STATS_VERSION;
    s->st.size = sizeof s->st;
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->q_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (s->wake_fd < 0 || s->q_fd < 0 || pthread_create(&s->thread, NULL, sub_main, s) != 0) {
        set_errbuf(errmsg, errmsg_cap, "cannot start the subscriber's thread or its eventfds");
        sl_subscriber_free(s);
        return SL_ENOMEM;
    }
    s->thread_started = 1;
    *out = s;
    return 0;
}

static int push_op(sl_subscriber *s, int subscribe, int kind, const void *name, size_t len)
{
    if (!s || kind < SL_SUB_CHANNEL || kind > SL_SUB_SHARD || (!name && (subscribe || len))) return SL_EINVAL;
    const sl__alloc *a = &s->c->alloc;
    uint8_t *copy = NULL;
    if (name) {
        copy = sl__malloc(a, len ? len : 1);
        if (!copy) return SL_ENOMEM;
        if (len) memcpy(copy, name, len);
    }
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        pthread_mutex_unlock(&s->mu);
        sl__free(a, copy);
        return SL_ESTATE;
    }
    if (s->nops == s->capops && sl__grow(a, (void **)&s->ops, &s->capops, s->nops + 1, sizeof *s->ops)) {
        pthread_mutex_unlock(&s->mu);
        sl__free(a, copy);
        return SL_ENOMEM;
    }
    s->ops[s->nops++] = (sub_op){(uint8_t)subscribe, (uint8_t)kind, (uint8_t)(name == NULL), copy, len};
    pthread_mutex_unlock(&s->mu);
    wake(s);
    return 0;
}

int sl_subscriber_subscribe(sl_subscriber *s, int kind, const void *name, size_t len)
{
    return push_op(s, 1, kind, name, len);
}

int sl_subscriber_unsubscribe(sl_subscriber *s, int kind, const void *name, size_t len)
{
    return push_op(s, 0, kind, name, len);
}

int sl_subscriber_fd(const sl_subscriber *s)
{
    if (!s) return -1;
    sl_subscriber *m = (sl_subscriber *)s;
    if (!atomic_exchange(&m->fd_wanted, 1)) {
        /* from now on the fd follows the queue: signal it if records are waiting already */
        pthread_mutex_lock(&m->mu);
        if (m->qhead < m->qlen && !m->q_written) {
            uint64_t one = 1;
            ssize_t w = write(m->q_fd, &one, sizeof one);
            (void)w;
            m->q_written = 1;
        }
        pthread_mutex_unlock(&m->mu);
    }
    return s->q_fd;
}

static void deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int sl_subscriber_drain(sl_subscriber *s, int timeout_ms, sl_message *msgs, size_t cap, void *data,
                        size_t data_cap, size_t *count, size_t *data_len)
{
    if (count) *count = 0;
    if (data_len) *data_len = 0;
    if (!s || !count || !data_len || (!msgs && cap) || (!data && data_cap)) return SL_EINVAL;
    pthread_mutex_lock(&s->mu);
    if (s->qhead == s->qlen && timeout_ms != 0 && !s->closing) {
        struct timespec dl;
        if (timeout_ms > 0) deadline_after(&dl, timeout_ms);
        s->waiters++;
        while (s->qhead == s->qlen && !s->closing) {
            if (timeout_ms < 0)
                pthread_cond_wait(&s->cond, &s->mu);
            else if (pthread_cond_timedwait(&s->cond, &s->mu, &dl) == ETIMEDOUT)
                break;
        }
        s->waiters--;
    }
    if (s->qhead == s->qlen) {
        int closed = s->closing;
        pthread_mutex_unlock(&s->mu);
        return closed ? SL_ESTATE : 0;
    }
    size_t n = 0, used = 0;
    int rc = 0;
    while (n < cap && s->qhead < s->qlen) {
        qrec *r = &s->q[s->qhead];
        size_t need = (size_t)r->chl + r->patl + r->payl;
        if (used + need > data_cap) {
            if (n == 0) {
                used = need;
                rc = SL_ETOOSMALL;
            }
            break;
        }
        if (need) memcpy((uint8_t *)data + used, s->qdata.ptr + r->off, need);
        msgs[n] = (sl_message){r->kind, r->flags, 0, r->chl, r->patl, r->payl, r->count, (uint64_t)used};
        used += need;
        s->st.queued_bytes -= need + REC_OVERHEAD;
        s->qhead++;
        n++;
    }
    if (s->qhead == s->qlen) {
        s->qhead = s->qlen = 0;
        s->qdata.len = 0;
        if (s->q_written) {
            uint64_t v;
            ssize_t r = read(s->q_fd, &v, sizeof v);
            (void)r;
            s->q_written = 0;
        }
        s->q_signalled = 0;
    } else if (s->qhead > 1024 && s->qhead * 2 > s->qlen) {
        size_t off = s->q[s->qhead].off;
        memmove(s->qdata.ptr, s->qdata.ptr + off, s->qdata.len - off);
        s->qdata.len -= off;
        memmove(s->q, s->q + s->qhead, (s->qlen - s->qhead) * sizeof *s->q);
        s->qlen -= s->qhead;
        s->qhead = 0;
        for (size_t i = 0; i < s->qlen; i++) s->q[i].off -= off;
    }
    pthread_mutex_unlock(&s->mu);
    *count = n;
    *data_len = used;
    return rc;
}

int sl_subscriber_stats_get(const sl_subscriber *s, sl_subscriber_stats *stats)
{
    if (!s || !stats || stats->version == 0 || stats->size < offsetof(sl_subscriber_stats, messages)) return SL_EINVAL;
    sl_subscriber_stats copy;
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    copy = s->st;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    size_t n = stats->size < sizeof copy ? stats->size : sizeof copy;
    unsigned int v = stats->version, sz = stats->size;
    memcpy(stats, &copy, n);
    stats->version = v;
    stats->size = sz;
    return 0;
}

void sl_subscriber_close(sl_subscriber *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->closing = 1;
    pthread_cond_broadcast(&s->cond);
    if (atomic_load(&s->fd_wanted) && !s->q_written) { /* a watcher wakes and sees SL_ESTATE */
        uint64_t one = 1;
        ssize_t w = write(s->q_fd, &one, sizeof one);
        (void)w;
        s->q_written = 1;
    }
    pthread_mutex_unlock(&s->mu);
    wake(s);
}

void sl_subscriber_free(sl_subscriber *s)
{
    if (!s) return;
    sl_subscriber_close(s);
    if (s->thread_started) pthread_join(s->thread, NULL);
    const sl__alloc *a = &s->c->alloc;
    for (size_t i = 0; i < s->nops; i++) sl__free(a, s->ops[i].name);
    for (size_t i = 0; i < s->nents; i++) sl__free(a, s->ents[i].name);
    while (s->nconns) conn_free(s, s->nconns - 1);
    sl__free(a, s->ops);
    sl__free(a, s->ents);
    sl__free(a, s->conns);
    sl__free(a, s->q);
    sl__free(a, s->argv);
    sl__free(a, s->argl);
    sl__bytes_free(a, &s->qdata);
    if (s->wake_fd >= 0) close(s->wake_fd);
    if (s->q_fd >= 0) close(s->q_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    sl_client *c = s->c;
    sl__free(a, s);
    sl_client_free(c);
}
