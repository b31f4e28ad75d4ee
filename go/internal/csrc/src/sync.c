/* sync: the blocking driver of the engine (the libuv one is async.c). One poll() loop per
 * execution over the nodes it waits on and the client's cancel pipe: write every node
 * before reading any, read whichever socket is ready, wait out TRYAGAIN backoff, end at
 * the deadline or on sl_client_cancel(). The steps themselves are the engine's
 * (engine.c); this file only decides when to call them. */
#include "client.h"
#include "conn.h"
#include "engine.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void sl__drain_cancel(sl_client *c)
{
    char buf[64];
    while (read(c->cancel_pipe[0], buf, sizeof buf) > 0) {
    }
}

/* Reads, without waiting, what the nodes batch b waits on have already received: each
 * node until its socket has nothing more (bounded by the replies it still owes). */
static int read_arrived(sl_batch *b)
{
    sl_client *c = b->client;
    for (size_t k = 0; k < c->topo.nnodes && b->inflight > 0; k++) {
        sl__node *n = c->topo.nodes[k];
        while (n->state == SL__CONNECTED && sl__engine_node_busy(n) && b->inflight > 0) {
            struct pollfd p = {n->fd, POLLIN, 0};
            if (!sl__node_pending(n) && (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR)))) break;
            uint64_t got = n->conn_read;
            int rc = sl__engine_read(c, k);
            if (rc) return rc;
            if (n->conn_read == got) break; /* nothing new (TLS: a partial record waits for its rest) */
        }
    }
    return 0;
}

int sl__engine_run_sync(sl_batch *b)
{
    sl_client *c = b->client;

    struct pollfd stack_pfds[17];
    uint16_t stack_map[17];
    struct pollfd *pfds = stack_pfds;
    uint16_t *map = stack_map;
    size_t pcap = 16;
    int status = 0;
    for (;;) {
        if (b->round_over || b->inflight == 0) {
            b->round_over = 0;
            if (b->resends && sl__now_ms() >= b->deadline) {
                sl__set_err(c, "the execution's deadline passed");
                status = SL_ETIMEOUT;
                if (sl__engine_abandon(b, SL_ERR_TIMEOUT, c->errmsg)) status = SL_ENOMEM;
                break;
            }
            uint64_t wait = 0;
            int rc = sl__engine_advance(b, &wait);
            if (rc < 0) {
                status = rc;
                break;
            }
            if (rc == 1) break;
            if (wait > 0) {
                struct pollfd p = {c->cancel_pipe[0], POLLIN, 0};
                (void)poll(&p, 1, (int)wait);
                if (atomic_load(&c->cancel)) goto cancelled;
                continue;
            }
            if (b->inflight == 0) continue;
        }
        if (c->topo.nnodes > pcap) {
            if (pfds != stack_pfds) sl__free(&c->alloc, pfds);
            pcap = c->topo.nnodes;
            pfds = sl__malloc(&c->alloc, (pcap + 1) * (sizeof *pfds + sizeof *map));
            if (!pfds) {
                pfds = stack_pfds;
                pcap = 16;
                status = SL_ENOMEM;
                break;
            }
            map = (uint16_t *)(pfds + pcap + 1);
        }
        /* Write every node before reading any. */
        for (size_t k = 0; k < c->topo.nnodes; k++) {
            sl__node *n = c->topo.nodes[k];
            if (n->state == SL__CONNECTED && sl__engine_node_unwritten(n)) {
                int rc = sl__engine_write(c, k);
                if (rc && (status = sl__engine_node_failed(c, k, SL_ERR_IO, rc)) != 0) goto out;
            }
        }
        if (b->round_over) continue;
        size_t np = 0;
        uint64_t now = sl__now_ms(), wake = b->deadline;
        for (size_t k = 0; k < c->topo.nnodes; k++) {
            sl__node *n = c->topo.nodes[k];
            if (n->state == SL__DISCONNECTED || !sl__engine_node_busy(n)) continue;
            if (n->state == SL__CONNECTING) {
                if (now >= n->connect_deadline_ms) {
                    sl__node_connect_timed_out(c, n);
                    if ((status = sl__engine_node_failed(c, k, SL_ERR_IO, SL_EIO)) != 0) goto out;
                    continue;
                }
                if (n->connect_deadline_ms < wake) wake = n->connect_deadline_ms;
            }
            pfds[np].fd = n->fd;
            /* Connecting: what the TCP connect or the TLS handshake waits for (a handshake
             * waiting to read must not be woken by writability over and over). */
            pfds[np].events = (short)(n->state == SL__CONNECTING ? sl__node_connect_events(n)
                                                               : POLLIN | (sl__engine_node_unwritten(n) ? POLLOUT : 0));
            pfds[np].revents = 0;
            map[np++] = (uint16_t)k;
        }
        if (b->round_over) continue;
        if (np == 0) {
            /* Nothing to wait for, yet the round is not over: cannot happen; do not spin. */
            sl__set_err(c, "internal error: a round with nothing in flight");
            status = SL_EIO;
            (void)sl__engine_abandon(b, SL_ERR_IO, c->errmsg);
            break;
        }
        pfds[np].fd = c->cancel_pipe[0];
        pfds[np].events = POLLIN;
        pfds[np].revents = 0;
        if (atomic_load(&c->cancel)) goto cancelled;
        int timeout = -1;
        if (wake != UINT64_MAX) timeout = wake > now ? (int)(wake - now < 0x7fffffff ? wake - now : 0x7fffffff) : 0;
        int pr = poll(pfds, (nfds_t)np + 1, timeout);
        if (pr < 0 && errno != EINTR) {
            sl__set_err(c, "poll: %s", strerror(errno));
            status = SL_EIO;
            (void)sl__engine_abandon(b, SL_ERR_IO, c->errmsg);
            break;
        }
        if (atomic_load(&c->cancel)) goto cancelled;
        if (pr == 0 && sl__now_ms() >= b->deadline) {
            sl__set_err(c, "the execution's deadline passed");
            status = SL_ETIMEOUT;
            if (sl__engine_abandon(b, SL_ERR_TIMEOUT, c->errmsg)) status = SL_ENOMEM;
            break;
        }
        for (size_t i = 0; i < np && pr > 0; i++) {
            short re = pfds[i].revents;
            if (!re) continue;
            size_t k = map[i];
            sl__node *n = c->topo.nodes[k];
            int rc;
            if (n->state == SL__CONNECTING) {
                if ((rc = sl__node_connect_check(c, n)) < 0) {
                    if ((status = sl__engine_node_failed(c, k, SL_ERR_IO, rc)) != 0) goto out;
                    continue;
                }
                if (rc > 0) continue; /* the TLS handshake goes on */
                re |= POLLOUT;
            }
            if ((re & POLLOUT) && (rc = sl__engine_write(c, k)) != 0) {
                if ((status = sl__engine_node_failed(c, k, SL_ERR_IO, rc)) != 0) goto out;
                continue;
            }
            if ((re & (POLLIN | POLLHUP | POLLERR)) && (status = sl__engine_read(c, k)) != 0) goto out;
        }
    }
    goto out;
cancelled:
    /* Replies that reached the sockets before the cancel are the caller's: read them first,
     * so what a command got is decided by what the server sent, not by which of the
     * socket and the cancel pipe poll() happened to report. */
    if ((status = read_arrived(b)) != 0) goto out;
    if (b->inflight == 0 && b->resends == 0) goto out; /* everything had arrived */
    sl__set_err(c, "the execution was cancelled");
    status = SL_ECANCELLED;
    if (sl__engine_abandon(b, SL_ERR_CANCELLED, c->errmsg)) status = SL_ENOMEM;
out:
    if (pfds != stack_pfds) sl__free(&c->alloc, pfds);
    return status;
}
