/* engine: runs executions. Each node has one output queue and one FIFO of reply segments
 * shared by every batch in flight on it ("the next n replies belong to batch b"), so
 * several batches may use one connection at once (the async drivers) and a batch that
 * gives up (deadline, cancel) leaves its segment behind to swallow late replies instead
 * of breaking the connection. An execution goes in rounds: queue every command to its
 * node, write every node before reading any, dispatch replies as they are parsed; when a
 * round's replies are in, redirected commands form the next round.
 *
 * The drivers: sl__engine_run_sync (sync.c: a poll loop, the blocking API) and async.c
 * (libuv). Both call the same step functions here: sl__engine_write, sl__engine_read,
 * sl__engine_node_failed, sl__engine_abandon and sl__engine_advance. */
#include "batch.h"
#include "client.h"
#include "conn.h"
#include "engine.h"
#include "failover.h"
#include "topology.h"
#include "redirect.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ per-batch node state */

int sl__engine_ensure_bn(sl_batch *b, size_t n)
{
    if (n <= b->nbn) return 0;
    size_t cap = b->nbn;
    void *p = sl__realloc(&b->client->alloc, b->bn, n * sizeof(sl__bnode));
    if (!p) return SL_ENOMEM;
    b->bn = p;
    memset(b->bn + cap, 0, (n - cap) * sizeof(sl__bnode));
    b->nbn = n;
    return 0;
}

static int pend_push(sl_batch *b, sl__bnode *bn, uint32_t v)
{
    if (bn->plen == bn->pcap) {
        void *p = bn->pending;
        if (sl__grow(&b->client->alloc, &p, &bn->pcap, bn->plen + 1, sizeof(uint32_t))) return SL_ENOMEM;
        bn->pending = p;
    }
    bn->pending[bn->plen++] = v;
    return 0;
}

/* Every command of batch b still waiting on node k gets an error record — or, when the
 * node was lost (sent: 0 its connection never carried them, 1 it may have), failover.c
 * may schedule it again. sent -1: the batch gives up, no retry. */
static int fail_pending(sl_batch *b, size_t k, sl_err_kind kind, const char *msg, int sent)
{
    sl__bnode *bn = &b->bn[k];
    for (size_t i = bn->phead; i < bn->plen; i++) {
        uint32_t ci = bn->pending[i];
        if (ci == SL__PEND_SKIP) continue;
        int rc = sent < 0 ? sl__batch_add_error(b, ci, kind, "%s", msg) : sl__failover_lost_cmd(b, ci, sent, kind, msg);
        if (rc) return SL_ENOMEM;
    }
    bn->phead = bn->plen = 0;
    return 0;
}

/* ------------------------------------------------------------ node queues */

static int seg_push(sl_client *c, sl__node *n, uint8_t kind, sl_batch *b, uint32_t count)
{
    if (n->slen > 0) {
        sl__seg *tail = &n->segs[n->shead + n->slen - 1];
        if (tail->kind == kind && tail->batch == b) {
            tail->left += count;
            return 0;
        }
    }
    if (n->shead + n->slen == n->scap) {
        if (n->shead > 0) { /* compact before growing */
            memmove(n->segs, n->segs + n->shead, n->slen * sizeof(sl__seg));
            n->shead = 0;
        }
        if (n->slen == n->scap) {
            void *p = n->segs;
            if (sl__grow(&c->alloc, &p, &n->scap, n->slen + 1, sizeof(sl__seg))) return SL_ENOMEM;
            n->segs = p;
        }
    }
    n->segs[n->shead + n->slen++] = (sl__seg){b, count, kind};
    return 0;
}

int sl__engine_node_unwritten(const sl__node *n)
{
    return n->opos < n->obuf.len + (n->oext ? n->oext_len : 0);
}

int sl__engine_node_busy(const sl__node *n)
{
    return n->slen > 0 || sl__engine_node_unwritten(n);
}

/* Opens node k's connection if needed and queues its handshake first. Returns 0 when the
 * node can take commands, SL_EIO when it cannot now (c->errmsg says why), SL_ENOMEM. */
static int open_node(sl_client *c, size_t k, uint64_t now)
{
    sl__node *n = c->topo.nodes[k];
    if (n->state != SL__DISCONNECTED) return 0;
    if (!sl__node_may_connect(c, n, now)) {
        sl__set_err(c, "node %s is unavailable (reconnecting in %llu ms)", n->addr,
                    (unsigned long long)(n->retry_at_ms - now));
        return SL_EIO;
    }
    if (sl__node_connect_start(c, n) != 0) return SL_EIO;
    n->obuf.len = n->opos = 0;
    n->oext = NULL;
    n->oext_len = 0;
    int hs = sl__node_handshake(c, n, &n->obuf);
    if (hs < 0) return hs;
    if (hs > 0 && seg_push(c, n, SL__SEG_HANDSHAKE, NULL, (uint32_t)hs)) return SL_ENOMEM;
    if (c->async_hooks) c->async_hooks->opened(c, k);
    return 0;
}

/* Queues command i on its node if it is marked for this round. */
static int queue_one(sl_batch *b, uint32_t i, uint64_t now)
{
    sl_client *c = b->client;
    sl__cmd *cmd = &b->cmds[i];
    if (!(cmd->flags & SL__F_RESEND)) return 0;
    cmd->flags &= (uint16_t)~SL__F_RESEND;
    if (cmd->flags & SL__F_REROUTE) sl__failover_reroute(b, cmd);
    uint16_t k = cmd->node;
    if (k == SL__NO_NODE || k >= c->topo.nnodes)
        return sl__batch_add_error(b, i, SL_ERR_CLUSTER, "no node for the command");
    if (sl__engine_ensure_bn(b, c->topo.nnodes)) return SL_ENOMEM;
    sl__bnode *bn = &b->bn[k];
    if (bn->state == 0) {
        int rc = open_node(c, k, now);
        if (rc == SL_ENOMEM) return rc;
        bn->state = rc ? 2 : 1; /* 2: the node cannot be used this round */
        if (rc) snprintf(bn->why, sizeof bn->why, "%s", c->errmsg);
    }
    if (bn->state == 2) return sl__failover_lost_cmd(b, i, 0, SL_ERR_IO, bn->why); /* never sent */
    sl__node *n = c->topo.nodes[k];
    if (n->oext) {
        /* Another execution's caller bytes are queued: copy what is not out yet, so
         * these bytes can follow them. */
        if (n->opos >= n->obuf.len) {
            size_t done = n->opos - n->obuf.len;
            n->obuf.len = n->opos = 0;
            if (sl__bytes_append(&c->alloc, &n->obuf, n->oext + done, n->oext_len - done)) return SL_ENOMEM;
        } else if (sl__bytes_append(&c->alloc, &n->obuf, n->oext, n->oext_len)) {
            return SL_ENOMEM;
        }
        n->oext = NULL;
        n->oext_len = 0;
        n->oext_owner = NULL;
    }
    if (cmd->flags & SL__F_ASKING) {
        static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
        if (sl__bytes_append(&c->alloc, &n->obuf, asking, sizeof asking - 1)) return SL_ENOMEM;
        if (pend_push(b, bn, SL__PEND_SKIP)) return SL_ENOMEM;
        cmd->flags &= (uint16_t)~SL__F_ASKING;
    }
    if (sl__bytes_append(&c->alloc, &n->obuf, sl__cmd_bytes(b, cmd), cmd->len)) return SL_ENOMEM;
    return pend_push(b, bn, i);
}

/* Queues one round of batch b: every command marked RESEND goes to its node. */
int sl__engine_queue_round(sl_batch *b, int zero_copy)
{
    sl_client *c = b->client;
    uint64_t now = sl__now_ms();
    if (sl__engine_ensure_bn(b, c->topo.nnodes)) return SL_ENOMEM;
    for (size_t k = 0; k < b->nbn; k++) {
        b->bn[k].phead = b->bn[k].plen = 0;
        b->bn[k].state = 0;
    }
    b->resends = 0;
    b->inflight = 0;
    /* Zero copy: when every caller command goes, in order, to one idle node, the node
     * writes the caller's bytes as they are (the blocking driver only: the bytes must
     * outlive the writing). */
    if (zero_copy && b->ncmds == b->nuser && b->nuser > 0) {
        uint16_t node = b->cmds[0].node;
        size_t i;
        for (i = 0; i < b->nuser; i++) {
            const sl__cmd *cmd = &b->cmds[i];
            if (cmd->node != node || !(cmd->flags & SL__F_RESEND) || (cmd->flags & (SL__F_ASKING | SL__F_SYNTH)))
                break;
        }
        if (i == b->nuser && node < c->topo.nnodes) {
            sl__node *n = c->topo.nodes[node];
            sl__bnode *bn = &b->bn[node];
            int rc = open_node(c, node, now);
            if (rc == SL_ENOMEM) return rc;
            char why[SL__ERRMSG_MAX];
            if (rc) snprintf(why, sizeof why, "%s", c->errmsg);
            for (i = 0; i < b->nuser; i++) {
                b->cmds[i].flags &= (uint16_t)~SL__F_RESEND;
                if (rc) {
                    if (sl__failover_lost_cmd(b, (uint32_t)i, 0, SL_ERR_IO, why)) return SL_ENOMEM; /* never sent */
                } else if (pend_push(b, bn, (uint32_t)i)) {
                    return SL_ENOMEM;
                }
            }
            if (rc) return 0;
            const sl__cmd *last = &b->cmds[b->nuser - 1];
            const uint8_t *base = sl__cmd_bytes(b, &b->cmds[0]);
            size_t total = last->off + last->len - b->cmds[0].off;
            if (n->opos == n->obuf.len && !n->oext) {
                n->obuf.len = n->opos = 0;
                n->oext = base;
                n->oext_len = total;
                n->oext_owner = b;
            } else if (sl__bytes_append(&c->alloc, &n->obuf, base, total)) {
                return SL_ENOMEM;
            }
            if (seg_push(c, n, SL__SEG_BATCH, b, (uint32_t)bn->plen)) return SL_ENOMEM;
            bn->state = 1;
            b->inflight = 1;
            if (c->async_hooks) c->async_hooks->queued(c, node);
            return 0;
        }
    }
    /* In the caller's order, a split or fan-out parent's parts in its place: replies on
     * each connection come back in the order the commands were meant to run. */
    for (uint32_t i = 0; i < b->nuser; i++) {
        const sl__cmd *cmd = &b->cmds[i];
        if (cmd->flags & (SL__F_SPLIT | SL__F_FANOUT)) {
            uint32_t first = cmd->aux, nparts = cmd->nparts;
            for (uint32_t p = first; p < first + nparts; p++) {
                int rc = queue_one(b, p, now);
                if (rc) return rc;
            }
        } else {
            int rc = queue_one(b, i, now);
            if (rc) return rc;
        }
    }
    /* One segment per node, pushed after the bytes: the replies will come in that order. */
    for (size_t k = 0; k < b->nbn; k++) {
        sl__bnode *bn = &b->bn[k];
        if (bn->state != 1 || bn->plen == 0) continue;
        if (seg_push(c, c->topo.nodes[k], SL__SEG_BATCH, b, (uint32_t)bn->plen)) return SL_ENOMEM;
        b->inflight++;
        if (c->async_hooks) c->async_hooks->queued(c, k);
    }
    return 0;
}

/* ------------------------------------------------------------ I/O steps */

int sl__engine_write(sl_client *c, size_t k)
{
    sl__node *n = c->topo.nodes[k];
    for (;;) {
        const uint8_t *p;
        size_t left;
        if (n->opos < n->obuf.len) {
            p = n->obuf.ptr + n->opos;
            left = n->obuf.len - n->opos;
        } else if (n->oext && n->opos - n->obuf.len < n->oext_len) {
            size_t done = n->opos - n->obuf.len;
            p = n->oext + done;
            left = n->oext_len - done;
        } else {
            /* Everything is out: start the buffer over. */
            n->obuf.len = n->opos = 0;
            n->oext = NULL;
            n->oext_len = 0;
            n->oext_owner = NULL;
            return 0;
        }
        ssize_t w = sl__node_send(n, p, left);
        if (w > 0) {
            n->opos += (size_t)w;
            c->stats.bytes_written += (uint64_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && n->tls && errno == EPROTO) c->tls_failed = 1; /* an alert: e.g. our certificate refused */
        sl__set_err(c, "write to %s: %s", n->addr, w < 0 ? sl__node_io_error(n, errno) : "closed");
        return SL_EIO;
    }
}

/* Marks batch b's part on node k done for this round. */
static void part_done(sl_batch *b)
{
    if (b->inflight > 0 && --b->inflight == 0) b->round_over = 1;
}

/* A plaintext connection that a server broke before it answered anything, or a reply that
 * opens with a TLS record's first byte (a handshake or an alert): most likely a TLS port. */
static const char *tls_port_hint(const sl_client *c, const sl__node *n, int first_byte)
{
    if (c->tls) return "";
    if (first_byte < 0 ? n->conn_read > 0 : (first_byte != 0x15 && first_byte != 0x16)) return "";
    return " (the server sent no reply: if the port speaks TLS, use rediss:// or a TLS configuration)";
}

/* Parses every complete reply in node k's read buffer and hands it to its owner. */
static int parse_node(sl_client *c, size_t k)
{
    sl__node *n = c->topo.nodes[k];
    int cluster = c->mode == SL_MODE_CLUSTER;
    while (n->rpos < n->rbuf.len) {
        /* a RESP3 push may come while nothing is owed (an idle connection's "invalidate") */
        int idle_push = n->slen == 0 && n->parser.depth == 0 && n->rbuf.ptr[n->rpos] == '>';
        if (n->slen == 0 && !idle_push && n->parser.depth == 0) {
            sl__set_err(c, "%s sent a reply nobody asked for", n->addr);
            return SL_EPROTO;
        }
        sl__seg *seg = n->slen ? &n->segs[n->shead] : NULL;
        sl_batch *b = seg && seg->kind == SL__SEG_BATCH ? seg->batch : NULL;
        sl__records *recs = b ? &b->bn[k].recs : &n->skip_recs;
        sl__bytes *data = b ? &b->data : &n->skip_data;
        size_t used = 0;
        int rc = sl__resp_parse(&n->parser, &c->alloc, n->rbuf.ptr + n->rpos, n->rbuf.len - n->rpos, &used, recs,
                                data);
        n->rpos += used;
        if (rc == SL__RESP_MORE) break;
        if (rc == SL__RESP_BAD) {
            sl__set_err(c, "protocol error from %s: %s%s", n->addr, n->parser.errmsg,
                        tls_port_hint(c, n, n->rpos < n->rbuf.len ? n->rbuf.ptr[n->rpos] : -1));
            return SL_EPROTO;
        }
        if (rc < 0) return rc;
        size_t start = n->parser.top_record;
        if (rc == SL__RESP_PUSH) { /* out of band: the push handler's, else dropped */
            if (c->push_fn) c->push_fn(c->push_ctx, n->addr, recs->ptr + start, recs->len - start, data->ptr);
            recs->len = start;
            if (!b && n->slen == 0) data->len = 0;
            continue;
        }
        if (!b) {
            if (seg && seg->kind == SL__SEG_HANDSHAKE && recs->ptr[start].type == SL_REPLY_ERROR) {
                sl__set_err(c, "connection setup on %s failed: %.*s", n->addr, (int)recs->ptr[start].len,
                            (const char *)data->ptr + recs->ptr[start].offset);
                return SL_ESERVER;
            }
            n->skip_recs.len = 0;
            n->skip_data.len = 0;
        } else {
            sl__bnode *bn = &b->bn[k];
            uint32_t ci = bn->pending[bn->phead++];
            if (ci == SL__PEND_SKIP) {
                recs->len = start; /* ASKING's +OK */
            } else {
                sl__cmd *cmd = &b->cmds[ci];
                cmd->src = (uint32_t)k;
                cmd->rec_start = (uint32_t)start;
                cmd->rec_count = (uint32_t)(recs->len - start);
                cmd->flags |= SL__F_DONE;
                sl_reply *r = &recs->ptr[start];
                if (cluster && r->type == SL_REPLY_ERROR && !(cmd->flags & SL__F_MULTI)) sl__redirect_check(b, ci, r);
            }
        }
        if (--seg->left == 0) {
            n->shead++;
            n->slen--;
            if (n->slen == 0) n->shead = 0;
            if (b) part_done(b);
        }
    }
    if (n->rpos == n->rbuf.len) n->rpos = n->rbuf.len = 0;
    return 0;
}

/* Reads what the socket has. Over TLS, also what OpenSSL already holds decrypted: poll()
 * never reports those bytes again, so the read goes on while any are pending. */
static int read_node(sl_client *c, size_t k)
{
    sl__node *n = c->topo.nodes[k];
    for (int loops = 0; loops < 64 || sl__node_pending(n); loops++) {
        if (n->rpos > 0 && n->rbuf.cap - n->rbuf.len < 4096) {
            memmove(n->rbuf.ptr, n->rbuf.ptr + n->rpos, n->rbuf.len - n->rpos);
            n->rbuf.len -= n->rpos;
            n->rpos = 0;
        }
        if (sl__bytes_reserve(&c->alloc, &n->rbuf, n->rbuf.cap < 16384 ? 16384 : 4096)) return SL_ENOMEM;
        size_t room = n->rbuf.cap - n->rbuf.len;
        ssize_t r = sl__node_recv(n, n->rbuf.ptr + n->rbuf.len, room);
        if (r > 0) {
            n->rbuf.len += (size_t)r;
            n->conn_read += (uint64_t)r;
            c->stats.bytes_read += (uint64_t)r;
            if ((size_t)r < room && !sl__node_pending(n)) return 0; /* drained for now */
            continue;
        }
        if (r == 0) {
            sl__set_err(c, "connection to %s closed by the server%s", n->addr, tls_port_hint(c, n, -1));
            return SL_EIO;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        if (errno == EINTR) continue;
        if (n->tls && errno == EPROTO) c->tls_failed = 1; /* an alert: e.g. our certificate refused */
        sl__set_err(c, "read from %s: %s%s", n->addr, sl__node_io_error(n, errno), tls_port_hint(c, n, -1));
        return SL_EIO;
    }
    return 0;
}

/* Node k failed: every batch waiting on it gets error records for its commands there, the
 * queues are emptied and the connection closed (a broken reply stream cannot resume). */
int sl__engine_node_failed(sl_client *c, size_t k, sl_err_kind kind, int code)
{
    sl__node *n = c->topo.nodes[k];
    char msg[SL__ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", c->errmsg);
    int err = 0;
    /* A lost node's commands may be sent again (failover.c); those of a connection closed
     * on purpose (a deadline, a cancel) are not. Before it connected, nothing was sent. */
    int sent = code == SL_ETIMEOUT || code == SL_ECANCELLED ? -1 : n->state == SL__CONNECTED;
    for (size_t s = 0; s < n->slen; s++) {
        sl__seg *seg = &n->segs[n->shead + s];
        if (seg->kind != SL__SEG_BATCH) continue;
        sl_batch *b = seg->batch;
        if (fail_pending(b, k, kind, msg, sent)) err = SL_ENOMEM;
        part_done(b);
    }
    n->shead = n->slen = 0;
    n->obuf.len = n->opos = 0;
    n->oext = NULL;
    n->oext_len = 0;
    n->oext_owner = NULL;
    int failed = code == SL_ESERVER ? 2 : (kind == SL_ERR_IO || kind == SL_ERR_PROTOCOL);
    if (code == SL_ETIMEOUT || code == SL_ECANCELLED) failed = 0; /* the node did nothing wrong */
    sl__node_close(c, n, failed);
    return err;
}

int sl__engine_read(sl_client *c, size_t k)
{
    int rc = read_node(c, k);
    int prc = parse_node(c, k); /* replies read before a close still count */
    if (prc == SL_ENOMEM) return prc;
    if (prc) return sl__engine_node_failed(c, k, prc == SL_EPROTO ? SL_ERR_PROTOCOL : SL_ERR_SERVER, prc);
    if (rc == SL_ENOMEM) return rc;
    if (rc) {
        if (sl__engine_node_busy(c->topo.nodes[k])) return sl__engine_node_failed(c, k, SL_ERR_IO, rc);
        sl__node_close(c, c->topo.nodes[k], 1); /* every reply arrived before the close */
    }
    return 0;
}

/* Batch b gives up: its waiting commands get error records and its segments on every
 * node become SL__SEG_DISCARD, which read and drop the replies still owed, so the
 * connection stays in step for whatever follows. With close_conns, every connection that
 * still owes it replies is closed as well (abandon). */
static int give_up(sl_batch *b, sl_err_kind kind, const char *why, int close_conns)
{
    sl_client *c = b->client;
    int err = 0;
    char msg[SL__ERRMSG_MAX]; /* why may be c->errmsg, which this function rewrites */
    snprintf(msg, sizeof msg, "%s", why);
    for (size_t k = 0; k < b->nbn && k < c->topo.nnodes; k++) {
        sl__node *n = c->topo.nodes[k];
        int mine = n->oext_owner == b && sl__engine_node_unwritten(n);
        for (size_t s = 0; s < n->slen && !mine; s++)
            mine = n->segs[n->shead + s].kind == SL__SEG_BATCH && n->segs[n->shead + s].batch == b;
        if (!mine) continue;
        if (fail_pending(b, k, kind, msg, -1)) err = SL_ENOMEM;
        for (size_t s = 0; s < n->slen; s++) {
            sl__seg *seg = &n->segs[n->shead + s];
            if (seg->kind == SL__SEG_BATCH && seg->batch == b) {
                seg->kind = SL__SEG_DISCARD;
                seg->batch = NULL;
            }
        }
        if (!close_conns) continue;
        sl__set_err(c, "%s", msg);
        if (sl__engine_node_failed(c, k, SL_ERR_IO, kind == SL_ERR_TIMEOUT ? SL_ETIMEOUT : SL_ECANCELLED))
            err = SL_ENOMEM;
    }
    /* Commands that wanted another round keep the redirect they got, marked unfollowed. */
    for (uint32_t i = 0; i < b->ncmds; i++)
        if ((b->cmds[i].flags & SL__F_RESEND) && sl__batch_add_error(b, i, kind, "%s", msg)) err = SL_ENOMEM;
    b->inflight = 0;
    b->round_over = 0;
    b->resends = 0;
    return err;
}

/* Batch b gives up (deadline, or the blocking driver's cancel): every connection that
 * still owes it replies is closed — a reply that is late (or a blocking command still
 * waiting) would otherwise hold up or reach whatever comes next on that connection.
 * Other executions queued on those connections get I/O errors. */
int sl__engine_abandon(sl_batch *b, sl_err_kind kind, const char *why)
{
    return give_up(b, kind, why, 1);
}

/* Batch b is cancelled (sl_batch_cancel, or sl_client_cancel in the libuv driver): its
 * commands get records now, and the replies it is still owed are read and dropped on
 * their connections, so the other executions sharing them are untouched. Its bytes not
 * yet written are still written (they may sit between other executions' bytes), their
 * replies dropped too. */
int sl__engine_cancel(sl_batch *b, const char *why)
{
    return give_up(b, SL_ERR_CANCELLED, why, 0);
}

/* After a round: returns 1 when the execution is over, 0 when a new round was queued,
 * or a negative code. *wait_ms > 0 asks the driver to wait (TRYAGAIN backoff) and call
 * again. */
int sl__engine_advance(sl_batch *b, uint64_t *wait_ms)
{
    *wait_ms = 0;
    for (;;) {
        if (b->resends == 0) return 1;
        if (b->backoff) {
            uint64_t now = sl__now_ms();
            if (b->backoff_until == 0) {
                b->backoff_until = now + ((uint64_t)10 << (b->round < 4 ? b->round : 4));
                if (b->deadline != UINT64_MAX && b->backoff_until > b->deadline) b->backoff_until = b->deadline;
            }
            if (now < b->backoff_until) {
                *wait_ms = b->backoff_until - now;
                return 0;
            }
            b->backoff = 0;
            b->backoff_until = 0;
        }
        b->round++;
        sl__failover_before_round(b);
        int rc = sl__engine_queue_round(b, 0);
        if (rc) return rc;
        if (b->inflight > 0) return 0;
        /* Everything failed at once (no node reachable): maybe nothing left to resend. */
    }
}
