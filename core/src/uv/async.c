/* async: the engine (engine.c) driven by a libuv loop. One uv_poll_t per connection
 * (read and write interest merged in it, never two polls on one fd) and one uv_timer_t per
 * client for deadlines, connect timeouts and TRYAGAIN backoff; a uv_poll_t on the client's
 * cancel pipe. Handles are freed only in their close callbacks. A connected node's bytes
 * are written as soon as process() has queued them (no wake for writability first); the
 * poll asks for UV_WRITABLE only when the socket could not take them all. A connected node
 * stays polled for UV_READABLE while idle (unref'd), so the next batch costs no epoll_ctl
 * and a server-side close is noticed at once. Uses only the libuv 1.44 API, so that Node's
 * bundled libuv (1.46) serves as well. */
#include "batch.h"
#include "client.h"
#include "conn.h"
#include "cq.h"
#include "engine.h"
#include "scan.h"
#include "script.h"
#include "lease.h"
#include "redirect.h"
#include "topology.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "slotlane_uv.h"

#include <sys/socket.h>

typedef struct uv_client {
    uv_loop_t *loop;
    uv_timer_t timer;
    uv_poll_t cancel_poll;
    sl_batch *inflight;          /* executions in flight, newest first */
    int handles;                 /* open handles, the client's and its nodes' */
    int detaching;
    int refreshing;
    int walking;                 /* process() is walking the executions (a lease may end inside) */
    sl_detach_cb done_cb;
    void *done_arg;
    struct sl_loop *owner;       /* the sl_loop driving it, or NULL */
    struct uv_client *next_in_owner;
    sl_client *client;
} uv_client;

typedef struct uv_node {
    uv_poll_t poll;
    sl_client *client;
    size_t k;
    int events;                  /* what the poll is started with; 0: stopped */
} uv_node;

static void process(sl_client *c);
static void flush_touched(struct sl_loop *l);

/* ------------------------------------------------------------ node handles */

/* One of the client's handles finished closing; after the last one of a detach, the
 * client is free of the loop and the detach callback runs. */
static void handle_gone(uv_client *uc)
{
    sl_client *c = uc->client;
    if (--uc->handles != 0 || !uc->detaching) return;
    sl_detach_cb cb = uc->done_cb;
    void *arg = uc->done_arg;
    c->async = NULL;
    c->async_hooks = NULL;
    sl__free(&c->alloc, uc);
    if (cb) cb(c, arg);
}

static void node_closed(uv_handle_t *h)
{
    uv_node *un = h->data;
    sl_client *c = un->client;
    uv_client *uc = c->async;
    sl__free(&c->alloc, un);
    if (uc) handle_gone(uc);
}

static void on_node(uv_poll_t *p, int status, int events);

static void set_events(sl_client *c, size_t k)
{
    sl__node *n = c->topo.nodes[k];
    uv_node *un = n->async;
    if (!un) return;
    int want = 0;
    /* A connected node is always read, idle or not: re-adding it to epoll for every batch
     * cost two epoll_ctl a round trip, and an idle read hears a server-side close (or
     * bytes nobody asked for: a protocol error) at once. Writability is asked for only
     * while bytes are left over that the socket did not take (process() writes eagerly). */
    if (n->state == SL__CONNECTING) /* what the TCP connect or the TLS handshake waits for */
        want = (sl__node_connect_events(n) & POLLOUT) ? UV_WRITABLE | UV_READABLE : UV_READABLE;
    else if (n->state == SL__CONNECTED) want = UV_READABLE | (sl__engine_node_unwritten(n) ? UV_WRITABLE : 0);
    /* Waiting only to swallow the late replies of executions that gave up is idle too:
     * it must not keep the loop alive. */
    int owed = sl__engine_node_unwritten(n) || n->state == SL__CONNECTING;
    for (size_t s = 0; s < n->slen && !owed; s++) owed = n->segs[n->shead + s].kind != SL__SEG_DISCARD;
    if (owed) uv_ref((uv_handle_t *)&un->poll);
    else uv_unref((uv_handle_t *)&un->poll);
    if (want == un->events) return;
    un->events = want;
    if (want) uv_poll_start(&un->poll, want, on_node);
    else uv_poll_stop(&un->poll); /* not connected: nothing to watch */
}

static void hook_opened(sl_client *c, size_t k)
{
    uv_client *uc = c->async;
    sl__node *n = c->topo.nodes[k];
    uv_node *un = sl__malloc(&c->alloc, sizeof *un);
    if (!un) return; /* the node then never becomes writable: its commands time out */
    memset(un, 0, sizeof *un);
    un->client = c;
    un->k = k;
    if (uv_poll_init_socket(uc->loop, &un->poll, n->fd) != 0) {
        sl__free(&c->alloc, un);
        return;
    }
    un->poll.data = un;
    uc->handles++;
    n->async = un;
    set_events(c, k);
}

/* Bytes were queued on node k. Every queueing is followed by process(), which writes them
 * and sets the poll's events after: arming UV_WRITABLE here would make libuv re-register
 * the fd (epoll_ctl) for a want that the eager write usually takes back at once. Only a
 * node still connecting (its bytes wait for the connect) is set here. */
static void hook_queued(sl_client *c, size_t k)
{
    if (c->topo.nodes[k]->state != SL__CONNECTED) set_events(c, k);
}

/* Lifetime of a node's poll handle: made when the engine opens a socket (hook_opened),
 * stopped and closed when sl__node_close is about to close that socket (here, always
 * before close(fd): libuv must not poll a closed fd, and the next connect may get the same
 * fd number), freed in its close callback. A reconnect gets a new handle, so a handle
 * still closing never watches the new socket. */
static void hook_closing(sl_client *c, sl__node *n)
{
    (void)c;
    uv_node *un = n->async;
    if (!un) return;
    n->async = NULL;
    uv_poll_stop(&un->poll);
    uv_close((uv_handle_t *)&un->poll, node_closed);
}

static void hook_release(sl_client *c);

static const sl__async_hooks hooks = {hook_opened, hook_queued, hook_closing, hook_release};

/* libuv hands any POLLERR to the poll callback as UV_EBADF ("bad file descriptor"), though
 * the fd is fine: the socket has an error pending (a refused connect, a reset by a server
 * that died). As the blocking driver does, let the socket say what it is: a connect check
 * for a connecting node, else a read (replies that arrived before the error still count;
 * recv reports the reset or the close). If neither fails the node, fail it with the
 * pending error. */
static void socket_error(sl_client *c, size_t k, int status)
{
    sl__node *n = c->topo.nodes[k];
    if (n->state == SL__CONNECTING) {
        int rc = sl__node_connect_check(c, n);
        if (rc < 0) (void)sl__engine_node_failed(c, k, SL_ERR_IO, rc);
        if (rc != 0) return;
    } else if (n->state == SL__CONNECTED) {
        if (sl__engine_read(c, k) == SL_ENOMEM || n->state == SL__DISCONNECTED) return;
    } else {
        return;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(n->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err) sl__set_err(c, "connection to %s lost: %s", n->addr, strerror(err));
    else if (status == UV_EBADF) sl__set_err(c, "connection to %s lost: the socket reported an error", n->addr);
    else sl__set_err(c, "connection to %s lost: %s", n->addr, uv_strerror(status));
    (void)sl__engine_node_failed(c, k, SL_ERR_IO, SL_EIO);
}

static void on_node(uv_poll_t *p, int status, int events)
{
    uv_node *un = p->data;
    sl_client *c = un->client;
    size_t k = un->k;
    sl__node *n = c->topo.nodes[k];
    if (status < 0) {
        un->events = 0; /* libuv stopped the poll itself */
        socket_error(c, k, status);
        process(c);
        return;
    }
    if (n->state == SL__CONNECTING) {
        int rc = sl__node_connect_check(c, n);
        if (rc < 0) (void)sl__engine_node_failed(c, k, SL_ERR_IO, rc);
        if (rc != 0) { /* failed, or the TLS handshake goes on: process() sets the events */
            process(c);
            return;
        }
        events |= UV_WRITABLE;
    }
    if ((events & UV_WRITABLE) && n->fd >= 0 && sl__engine_write(c, k) != 0) {
        (void)sl__engine_node_failed(c, k, SL_ERR_IO, SL_EIO);
        process(c);
        return;
    }
    if ((events & UV_READABLE) && n->fd >= 0) (void)sl__engine_read(c, k);
    process(c);
}

/* ------------------------------------------------------------ executions */

static void unlink_batch(uv_client *uc, sl_batch *b)
{
    for (sl_batch **pp = &uc->inflight; *pp; pp = &(*pp)->async_next) {
        if (*pp == b) {
            *pp = b->async_next;
            break;
        }
    }
    b->async_next = NULL;
}

static void complete(sl_batch *b)
{
    int status = sl__batch_finish(b, b->async_status);
    sl_exec_cb cb = (sl_exec_cb)b->done_cb;
    void *arg = b->done_arg;
    sl_sizes sizes = b->sizes;
    b->in_flight = 0;
    atomic_fetch_sub(&b->client->running, 1);
    b->nuser = b->ncmds = 0;
    b->nargs = 0;
    b->input.len = 0;
    b->done_cb = NULL;
    if (cb) cb(b, status, &sizes, arg);
}

static void refresh_done(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    (void)sizes;
    (void)arg;
    sl_client *c = b->client;
    uv_client *uc = c->async;
    if (uc) uc->refreshing = 0;
    c->topo.last_refresh_ms = sl__now_ms();
    if (status != 0) return;
    size_t n;
    const uint8_t *data;
    const sl_reply *r = sl_batch_replies(b, &n, &data, NULL);
    if (n && sl__topo_apply_slots(c, b->cmds[0].node, r, n, data) == 0) sl__topo_refreshed(c);
}

static int start(sl_batch *b, int timeout_ms, sl_exec_cb cb, void *arg);
static int exec_async_start(sl_batch *b, int timeout_ms, sl_exec_cb cb, void *arg);

/* ------------------------------------------------------------ leased executions */

/* A batch whose one command blocks runs it on a lease (lease.c): a plain-mode client of its
 * own on the command's node, attached to the same loop. The batch stays in its client's
 * list (lease_state 1) without a deadline of its own; the lease's execution has it and,
 * at the deadline or a cancel, closes the lease's connection. lease_done hands the reply
 * over and wakes the batch's client. */
static void lease_done(sl_batch *lb, int status, const sl_sizes *sizes, void *arg);

static void lease_fail(sl_batch *b, sl_err_kind kind, const char *msg)
{
    if (sl__batch_add_error(b, 0, kind, "%s", msg)) b->async_status = SL_ENOMEM;
    else if (kind == SL_ERR_IO) b->async_status = SL_EIO;
    b->lease_state = 3;
}

/* Sends command 0 of b on a lease for its node (lease_state 1), or gives it its error
 * record (lease_state 2). */
static void lease_launch(sl_batch *b)
{
    sl_client *c = b->client;
    uv_client *uc = c->async;
    sl__cmd *cmd = &b->cmds[0];
    cmd->flags &= (uint16_t)~SL__F_RESEND;
    sl__lease *l;
    int rc = sl__lease_get(c, cmd->node, &l);
    if (rc) {
        lease_fail(b, rc == SL_ECLUSTER ? SL_ERR_CLUSTER : SL_ERR_IO, rc == SL_ENOMEM ? "out of memory" : c->errmsg);
        return;
    }
    sl_client *lc = l->conn;
    if (!lc->async && sl_client_attach_loop(lc, uc->loop) != 0) {
        sl__lease_put(c, l, 0);
        lease_fail(b, SL_ERR_IO, lc->errmsg);
        return;
    }
    sl_batch *lb = l->batch;
    sl_batch_reset(lb);
    b->lease_asking = (cmd->flags & SL__F_ASKING) != 0;
    cmd->flags &= (uint16_t)~SL__F_ASKING;
    static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
    if ((b->lease_asking && sl_batch_append(lb, NULL, asking, sizeof asking - 1, 1)) ||
        sl_batch_append(lb, NULL, sl__cmd_bytes(b, cmd), cmd->len, 1) ||
        exec_async_start(lb, b->lease_timeout, lease_done, b) != 0) {
        sl__lease_put(c, l, 0);
        lease_fail(b, SL_ERR_IO, "out of memory");
        return;
    }
    b->lease = l;
    b->lease_state = 1;
    process(lc);
}

static void lease_begin(sl_batch *b, int timeout_ms)
{
    sl__cmd *cmd = &b->cmds[0];
    int64_t block_ms;
    sl__arg local[SL__LEASE_VIEW];
    const sl__arg *args;
    uint32_t argc = sl__lease_view(b, cmd, local, &args);
    (void)sl__lease_blocking(sl__cmd_bytes(b, cmd), args, argc, &block_ms);
    b->lease_timeout = sl__lease_timeout(b->client, timeout_ms, block_ms);
    b->deadline = UINT64_MAX; /* the lease's execution has the deadline */
    b->inflight = 1;
    b->lease_state = 3;
    if (cmd->flags & SL__F_RESEND) lease_launch(b); /* else routing gave it its record */
}

static void lease_done(sl_batch *lb, int status, const sl_sizes *sizes, void *arg)
{
    (void)sizes;
    sl_batch *b = arg;
    sl_client *c = b->client;
    sl__lease *l = b->lease;
    sl__cmd *cmd = &b->cmds[0];
    b->lease = NULL;
    int rc = sl__lease_adopt(b, 0, lb, b->lease_asking ? 1 : 0);
    sl_reply *r = rc ? NULL : &b->xrecs.ptr[cmd->rec_start];
    sl__lease_put(c, l, status != 0 || rc != 0 || sl__lease_record_broken(r));
    if (status && lb->client->errmsg[0]) sl__set_err(c, "%s", lb->client->errmsg);
    b->lease_state = 2;
    b->async_status = rc ? rc : status;
    if (!rc && !status && r->type == SL_REPLY_ERROR && c->mode == SL_MODE_CLUSTER && c->async &&
        !((uv_client *)c->async)->detaching) {
        /* Not executed: MOVED, ASK, TRYAGAIN (resent at once), or -UNBLOCKED (once). */
        sl__redirect_check(b, 0, r);
        b->backoff = 0;
        b->resends = 0;
        if (!(cmd->flags & SL__F_RESEND) && r->len >= 9 && memcmp(b->data.ptr + r->offset, "UNBLOCKED", 9) == 0 &&
            cmd->slot >= 0 && cmd->redirects < (uint8_t)c->opts.max_redirects) {
            cmd->redirects++;
            c->topo.refresh_wanted = 1;
            cmd->node = c->topo.slot_node[cmd->slot];
            cmd->flags |= SL__F_RESEND;
        }
        if (cmd->flags & SL__F_RESEND) lease_launch(b);
    }
    uv_client *uc = c->async;
    if (b->lease_state >= 2 && uc && !uc->walking) process(c);
}

/* Cancels b's lease execution now: the lease's client abandons it (closing its
 * connection), and lease_done runs inside this call. */
static void lease_cancel(sl_batch *b)
{
    sl__lease *l = b->lease;
    if (!l) return;
    atomic_store(&l->batch->cancel_req, 1);
    process(l->conn);
}

static void lease_detached(sl_client *lc, void *arg)
{
    (void)lc;
    handle_gone(arg);
}

/* A MOVED or a lost node asked for a fresh map: ask a node in the background (the default
 * one while it is up, else another known node, in turn), as often as sl__topo_refresh_due
 * allows; the table was already patched for a redirected slot. */
static void maybe_refresh(sl_client *c)
{
    uv_client *uc = c->async;
    uint64_t now = sl__now_ms();
    if (c->mode != SL_MODE_CLUSTER || uc->refreshing || uc->detaching || !sl__topo_refresh_due(c, now) ||
        c->disco->in_flight)
        return;
    static const char *const argv[] = {"CLUSTER", "SLOTS"};
    sl_batch_reset(c->disco);
    if (sl_batch_append_argv(c->disco, NULL, 2, argv, NULL) != 0) return;
    c->disco->cmds[0].route = SL_ROUTE_NODE;
    c->disco->cmds[0].node = sl__topo_refresh_node(c); /* not a node reported down, when any is up */
    uc->refreshing = 1;
    c->topo.last_refresh_ms = now;
    if (start(c->disco, c->opts.connect_timeout_ms + 1000, refresh_done, NULL) != 0) {
        uc->refreshing = 0;
        return;
    }
    process(c); /* writes the query (maybe_refresh runs after process's writes) */
}

static void on_timer(uv_timer_t *t)
{
    uv_client *uc = t->data;
    sl_client *c = uc->client;
    uint64_t now = sl__now_ms();
    for (size_t k = 0; k < c->topo.nnodes; k++) {
        sl__node *n = c->topo.nodes[k];
        if (n->state == SL__CONNECTING && now >= n->connect_deadline_ms) {
            sl__node_connect_timed_out(c, n);
            (void)sl__engine_node_failed(c, k, SL_ERR_IO, SL_EIO);
        }
    }
    process(c);
}

static void rearm(sl_client *c)
{
    uv_client *uc = c->async;
    uint64_t now = sl__now_ms(), wake = UINT64_MAX;
    for (sl_batch *b = uc->inflight; b; b = b->async_next) {
        if (b->deadline < wake) wake = b->deadline;
        if (b->backoff_until && b->backoff_until < wake) wake = b->backoff_until;
    }
    for (size_t k = 0; k < c->topo.nnodes; k++) {
        sl__node *n = c->topo.nodes[k];
        if (n->state == SL__CONNECTING && n->connect_deadline_ms < wake) wake = n->connect_deadline_ms;
    }
    if (wake == UINT64_MAX) uv_timer_stop(&uc->timer);
    else uv_timer_start(&uc->timer, on_timer, wake > now ? wake - now : 0, 0);
}

/* Writes what the walk queued on connected nodes now, instead of waiting for libuv to
 * report them writable (a wake and two epoll_ctl a round trip). A node that is already
 * waiting for writability is left to on_node. Returns 1 when a write failed a node: the
 * executions on it have rounds over that the caller must advance in the same pass. */
static int write_queued(sl_client *c)
{
    int failed = 0;
    for (size_t k = 0; k < c->topo.nnodes; k++) {
        sl__node *n = c->topo.nodes[k];
        uv_node *un = n->async;
        if (!un || n->state != SL__CONNECTED || (un->events & UV_WRITABLE) || !sl__engine_node_unwritten(n)) continue;
        if (sl__engine_write(c, k) != 0) {
            (void)sl__engine_node_failed(c, k, SL_ERR_IO, SL_EIO);
            failed = 1;
        }
    }
    return failed;
}

/* Moves every execution along after an event: rounds that are over advance, deadlines
 * and cancels end executions, what was queued is written, finished ones get their
 * callbacks (after the walk, since a callback may start new executions). */
static void process(sl_client *c)
{
    uv_client *uc = c->async;
    if (!uc) return;
    struct sl_loop *owner = uc->owner;
    uint64_t now = sl__now_ms();
    int cancel = atomic_exchange(&c->cancel, 0);
    sl_batch *done = NULL, **tail = &done;
    /* A failed write ends rounds, so walk again. This ends: a failed node is no longer
     * CONNECTED, and nothing in a pass makes a node CONNECTED (only on_node does). */
    int rewake = 0;
    uc->walking++;
    for (;;) {
        for (sl_batch *b = uc->inflight, *next; b; b = next) {
            next = b->async_next;
            int over = 0;
            if (b->lease_state == 3 && !uc->detaching) {
                /* Done when it started (refused, or no lease): completed on a later walk, so
                 * that no callback runs inside sl_batch_exec_async. */
                b->lease_state = 2;
                rewake = 1;
            } else if (b->lease_state) {
                /* A blocking command on its lease: the lease's client ends it (lease_done). */
                if (b->lease_state == 1 && (uc->detaching || cancel || atomic_exchange(&b->cancel_req, 0)))
                    lease_cancel(b);
                over = b->lease_state >= 2;
            } else if (uc->detaching || cancel || atomic_exchange(&b->cancel_req, 0)) {
                /* The connections stay in step: the replies still owed are read and
                 * dropped (a detach then closes the connections that still owe some).
                 * A lease's connection is closed instead: a blocking command still armed
                 * on the server must never take an element for nobody. */
                const char *why = uc->detaching ? "the execution was cancelled: the client was detached from its loop"
                                  : cancel      ? "the execution was cancelled (sl_client_cancel)"
                                                : "the batch was cancelled (sl_batch_cancel)";
                if (c->lease_parent) (void)sl__engine_abandon(b, SL_ERR_CANCELLED, why);
                else (void)sl__engine_cancel(b, why);
                b->async_status = SL_ECANCELLED;
                over = 1;
            } else if (now >= b->deadline && (b->inflight > 0 || b->resends)) {
                sl__set_err(c, "the execution's deadline passed");
                (void)sl__engine_abandon(b, SL_ERR_TIMEOUT, c->errmsg);
                b->async_status = SL_ETIMEOUT;
                over = 1;
            } else if (b->round_over || b->inflight == 0) {
                b->round_over = 0;
                uint64_t wait = 0;
                int rc = sl__engine_advance(b, &wait);
                if (rc < 0) {
                    (void)sl__engine_abandon(b, SL_ERR_IO, "out of memory");
                    b->async_status = rc;
                    over = 1;
                } else if (rc == 1) {
                    over = 1;
                }
            }
            if (over) {
                unlink_batch(uc, b);
                *tail = b;
                tail = &b->async_next;
                b->async_next = NULL;
            }
        }
        if (uc->detaching || !write_queued(c)) break;
    }
    uc->walking--;
    if (rewake && c->cancel_pipe[1] >= 0) { /* on_cancel walks again from the loop */
        char x = 1;
        ssize_t w = write(c->cancel_pipe[1], &x, 1);
        (void)w;
    }
    if (!uc->detaching) {
        for (size_t k = 0; k < c->topo.nnodes; k++) set_events(c, k);
        rearm(c);
    }
    while (done) {
        sl_batch *b = done;
        done = b->async_next;
        b->async_next = NULL;
        complete(b);
    }
    if (owner) flush_touched(owner); /* one signal per queue for the whole walk */
    if (c->async && !uc->detaching) maybe_refresh(c);
}

static int start(sl_batch *b, int timeout_ms, sl_exec_cb cb, void *arg)
{
    sl_client *c = b->client;
    uv_client *uc = c->async;
    int rc = sl__batch_prepare(b, timeout_ms);
    b->async_status = 0;
    b->lease_state = 0;
    b->done_cb = (void (*)(sl_batch *, int, const sl_sizes *, void *))cb;
    b->done_arg = arg;
    b->in_flight = 1;
    atomic_fetch_add(&c->running, 1);
    b->async_next = uc->inflight;
    uc->inflight = b;
    if (rc == 0 && atomic_exchange(&b->cancel_req, 0)) {
        /* Cancelled before it started: nothing is sent, every command gets its record. */
        (void)sl__engine_cancel(b, "the batch was cancelled (sl_batch_cancel) before it was sent");
        b->async_status = SL_ECANCELLED;
        return 0;
    }
    /* Blocking commands run on leased connections, never on the shared pipeline. */
    int lk = rc == 0 && !c->lease_parent && b != c->disco ? sl__lease_classify(b) : 0;
    if (lk < 0) {
        rc = sl__lease_refuse_records(b);
        b->async_status = rc ? rc : SL_EBLOCKING;
        b->lease_state = 3;
        return 0;
    }
    if (lk > 0) {
        lease_begin(b, timeout_ms);
        return 0;
    }
    if (rc == 0) rc = sl__engine_queue_round(b, 0);
    if (rc) {
        (void)sl__engine_abandon(b, SL_ERR_IO, "out of memory");
        b->async_status = rc;
    }
    return 0;
}

/* ------------------------------------------------- chains: scan pages, scripts */

/* A scan's page, or EVALSHA with its reload, is a chain of executions of one batch, all on
 * the loop thread: each step is started when the previous one's reply has been read, and
 * the chain's callback runs once, at its end. A cancel (sl_batch_cancel) between two steps
 * is taken by the next step's start, so it ends the chain as well. */

static void chain_finish(sl_batch *b, int status)
{
    sl_exec_cb cb = (sl_exec_cb)b->chain_cb;
    void *arg = b->chain_arg;
    b->chain = SL__CHAIN_NONE;
    b->chain_cb = NULL;
    b->scan = NULL;
    b->script_body = NULL;
    sl_sizes sizes = b->sizes;
    cb(b, status, &sizes, arg);
}

/* Whether a chain may go on after a step that completed with status. */
static int chain_goes_on(sl_batch *b, int status)
{
    uv_client *uc = b->client->async;
    return status != SL_ECANCELLED && uc && !uc->detaching;
}

static void scan_step_done(sl_batch *b, int status, const sl_sizes *sizes, void *arg);

/* Starts the page's next step (the caller walks the client), or ends the page. */
static void scan_run(sl_batch *b)
{
    for (;;) {
        int end = 0;
        int rc = sl__scan_prepare(b->scan, b, 1, &end);
        if (rc == 0 && end) {
            chain_finish(b, 0);
            return;
        }
        if (rc == 0) {
            start(b, b->chain_timeout, scan_step_done, NULL);
            return;
        }
        if (rc == SL_ENOMEM || ++b->scan_failures == 2) {
            chain_finish(b, rc);
            return;
        }
    }
}

static void scan_step_done(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    (void)sizes;
    (void)arg;
    int page = 0;
    int rc = sl__scan_feed(b->scan, b, status, &page);
    if (!chain_goes_on(b, status)) rc = SL_ECANCELLED;
    if (rc == 0 && page) {
        chain_finish(b, 0);
        return;
    }
    if (rc && (rc == SL_ENOMEM || rc == SL_ECANCELLED || ++b->scan_failures == 2)) {
        chain_finish(b, rc);
        return;
    }
    scan_run(b);
    process(b->client); /* callbacks run after process's walk: this step is written now */
}

static void script_step_done(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    (void)arg;
    int step = b->script_step++;
    int rc = 0;
    if (chain_goes_on(b, status)) {
        if (step == 0 && sl__script_noscript(b)) {
            rc = sl__script_put_load(b, b->script_body, b->script_len);
        } else if (step == 1 && status == 0 && sizes->errors == 0) {
            sl_batch_reset(b);
            rc = sl_batch_append(b, NULL, b->script_cmd.ptr, b->script_cmd.len, 1);
        } else {
            rc = 1; /* the answer: the first reply, or the failed SCRIPT LOAD's (it says why) */
        }
        if (rc == 0) {
            start(b, b->chain_timeout, script_step_done, NULL);
            process(b->client);
            return;
        }
    }
    chain_finish(b, rc < 0 ? rc : status);
}

/* Starts a checked chain (the caller walks the client). */
static int chain_begin(sl_batch *b, int kind, int timeout_ms, sl_exec_cb cb, void *arg)
{
    b->chain = kind;
    b->chain_cb = (void (*)(sl_batch *, int, const sl_sizes *, void *))cb;
    b->chain_arg = arg;
    b->chain_timeout = timeout_ms;
    if (kind == SL__CHAIN_SCAN) {
        b->scan_failures = 0;
        scan_run(b);
        return 0;
    }
    b->script_step = 0;
    b->script_cmd.len = 0;
    if (sl__bytes_append(&b->client->alloc, &b->script_cmd, b->input.ptr, b->input.len)) {
        b->chain = SL__CHAIN_NONE;
        return SL_ENOMEM;
    }
    start(b, timeout_ms, script_step_done, NULL);
    return 0;
}

/* ------------------------------------------------------------ public: caller's loop */

static void on_cancel(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    uv_client *uc = p->data;
    char buf[64];
    while (read(uc->client->cancel_pipe[0], buf, sizeof buf) > 0) {
    }
    process(uc->client);
}

int sl_client_attach_loop(sl_client *c, uv_loop_t *loop)
{
    if (!c || !loop) return SL_EINVAL;
    if (c->async) {
        sl__set_err(c, "the client is already attached to a loop");
        return SL_ESTATE;
    }
    uv_client *uc = sl__malloc(&c->alloc, sizeof *uc);
    if (!uc) return SL_ENOMEM;
    memset(uc, 0, sizeof *uc);
    uc->loop = loop;
    uc->client = c;
    if (uv_timer_init(loop, &uc->timer) != 0 || uv_poll_init(loop, &uc->cancel_poll, c->cancel_pipe[0]) != 0) {
        sl__free(&c->alloc, uc);
        sl__set_err(c, "libuv could not make the client's handles");
        return SL_EIO;
    }
    uc->timer.data = uc;
    uc->cancel_poll.data = uc;
    uc->handles = 2;
    uv_poll_start(&uc->cancel_poll, UV_READABLE, on_cancel);
    uv_unref((uv_handle_t *)&uc->cancel_poll); /* an idle client does not keep the loop alive */
    c->async = uc;
    c->async_hooks = &hooks;
    /* Connections opened by the blocking API get their poll handles now. */
    for (size_t k = 0; k < c->topo.nnodes; k++)
        if (c->topo.nodes[k]->fd >= 0) hook_opened(c, k);
    return 0;
}

/* sl_batch_exec_async without the walk: the loop thread's drain starts every submitted
 * batch first and walks each client once, so what many callers submitted between two
 * wake-ups leaves in one write per node. */
static int exec_async_start(sl_batch *b, int timeout_ms, sl_exec_cb cb, void *arg)
{
    if (!b || !cb) return SL_EINVAL;
    sl_client *c = b->client;
    uv_client *uc = c->async;
    if (!uc || uc->detaching) {
        sl__set_err(c, "sl_batch_exec_async: the client is not attached to a loop");
        return SL_ESTATE;
    }
    if (b->in_flight) {
        sl__set_err(c, "sl_batch_exec_async: the batch is already executing");
        return SL_ESTATE;
    }
    if (timeout_ms < -1) {
        sl__set_err(c, "timeout_ms must be -1, 0 or positive");
        return SL_EINVAL;
    }
    if (b->nuser == 0) {
        sl__set_err(c, "sl_batch_exec_async: no commands queued");
        return SL_EINVAL;
    }
    start(b, timeout_ms, cb, arg);
    return 0;
}

int sl_batch_exec_async(sl_batch *b, int timeout_ms, sl_exec_cb cb, void *arg)
{
    int rc = exec_async_start(b, timeout_ms, cb, arg);
    if (rc == 0) process(b->client);
    return rc;
}

/* The checks of a chain on an attached client (the loop's thread). */
static int chain_check(sl_batch *b, int kind, sl_scan *scan, int timeout_ms, sl_exec_cb cb)
{
    if (!b || !cb) return SL_EINVAL;
    sl_client *c = b->client;
    if (kind == SL__CHAIN_SCAN) {
        int rc = sl__scan_check(scan, b);
        if (rc) return rc;
    }
    uv_client *uc = c->async;
    const char *what = kind == SL__CHAIN_SCAN ? "sl_scan_next_async" : "sl_script_exec_async";
    if (!uc || uc->detaching) {
        sl__set_err(c, "%s: the client is not attached to a loop", what);
        return SL_ESTATE;
    }
    if (b->in_flight || b->chain) {
        sl__set_err(c, "%s: the batch is already executing", what);
        return SL_ESTATE;
    }
    if (timeout_ms < -1) {
        sl__set_err(c, "timeout_ms must be -1, 0 or positive");
        return SL_EINVAL;
    }
    if (kind == SL__CHAIN_SCRIPT && b->nuser != 1) {
        sl__set_err(c, "%s: the batch must hold one command (EVALSHA or EVALSHA_RO), not %zu", what, b->nuser);
        return SL_EINVAL;
    }
    return 0;
}

int sl_scan_next_async(sl_scan *s, sl_batch *b, int timeout_ms, sl_exec_cb cb, void *arg)
{
    int rc = chain_check(b, SL__CHAIN_SCAN, s, timeout_ms, cb);
    if (rc) return rc;
    atomic_store(&b->cancel_req, 0);
    b->scan = s;
    chain_begin(b, SL__CHAIN_SCAN, timeout_ms, cb, arg);
    process(b->client);
    return 0;
}

int sl_script_exec_async(sl_batch *b, const void *body, size_t body_len, int timeout_ms, sl_exec_cb cb, void *arg)
{
    if (!body && body_len) return SL_EINVAL;
    int rc = chain_check(b, SL__CHAIN_SCRIPT, NULL, timeout_ms, cb);
    if (rc) return rc;
    atomic_store(&b->cancel_req, 0);
    b->script_body = body;
    b->script_len = body_len;
    if ((rc = chain_begin(b, SL__CHAIN_SCRIPT, timeout_ms, cb, arg)) != 0) return rc;
    process(b->client);
    return 0;
}

static void client_handle_closed(uv_handle_t *h)
{
    handle_gone(h->data);
}

int sl_client_detach_loop(sl_client *c, sl_detach_cb done_cb, void *arg)
{
    if (!c) return SL_EINVAL;
    uv_client *uc = c->async;
    if (!uc || uc->detaching) return SL_ESTATE;
    uc->detaching = 1;
    uc->done_cb = done_cb;
    uc->done_arg = arg;
    process(c); /* every execution completes with SL_ECANCELLED */
    /* The leases attached to this loop go with it; the detach is done when they are. */
    for (size_t i = 0; c->leases && i < c->leases->n; i++) {
        sl_client *lc = c->leases->v[i]->conn;
        if (!lc->async || ((uv_client *)lc->async)->detaching) continue;
        uc->handles++;
        if (sl_client_detach_loop(lc, lease_detached, uc) != 0) uc->handles--;
    }
    /* Connections stay open for the blocking API, and only their handles go, except those
     * still owed replies of the cancelled executions: closed, as nobody waits for those. */
    for (size_t k = 0; k < c->topo.nnodes; k++) {
        sl__node *n = c->topo.nodes[k];
        if (sl__engine_node_busy(n)) (void)sl__engine_node_failed(c, k, SL_ERR_CANCELLED, SL_ECANCELLED);
        uv_node *un = n->async;
        if (!un) continue;
        n->async = NULL;
        uv_poll_stop(&un->poll);
        uv_close((uv_handle_t *)&un->poll, node_closed);
    }
    uv_timer_stop(&uc->timer);
    uv_poll_stop(&uc->cancel_poll);
    uv_close((uv_handle_t *)&uc->timer, client_handle_closed);
    uv_close((uv_handle_t *)&uc->cancel_poll, client_handle_closed);
    return 0;
}

/* ------------------------------------------------------------ public: the core's loop thread */

typedef struct ctl_msg {
    struct ctl_msg *next;
    sl_client *client;           /* detach this client; NULL: stop the loop */
    int done;
} ctl_msg;

struct sl_loop {
    uv_loop_t loop;
    uv_async_t wake;
    pthread_t thread;
    _Atomic(sl_batch *) inbox;   /* lock-free stack of submitted batches */
    pthread_mutex_t mu;          /* control messages (detach, stop) and their completion */
    pthread_cond_t cv;
    ctl_msg *ctl;
    atomic_int stopping;
    uv_client *clients;          /* attached clients */
    int started;
    unsigned fork_gen;           /* sl__fork_generation() at sl_loop_new */
    sl_cq *touched[16];          /* loop thread: queues given completions quietly, to signal */
    int ntouched;
    pthread_cond_t room;         /* SL_SUBMIT_WAIT submitters: a completion freed room */
    atomic_int room_waiters;
};

static void finish_ctl(sl_loop *l, ctl_msg *m)
{
    pthread_mutex_lock(&l->mu);
    m->done = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

typedef struct detach_wait {
    sl_loop *loop;
    ctl_msg *msg;
} detach_wait;

static void detached_signal(sl_client *c, void *arg)
{
    (void)c;
    detach_wait *w = arg;
    finish_ctl(w->loop, w->msg);
    sl__free(&sl__default_alloc, w);
}

static void forget_client(sl_loop *l, sl_client *c)
{
    for (uv_client **pp = &l->clients; *pp; pp = &(*pp)->next_in_owner) {
        if ((*pp)->client == c) {
            *pp = (*pp)->next_in_owner;
            return;
        }
    }
}

static void detach_one(sl_loop *l, sl_client *c, ctl_msg *m)
{
    forget_client(l, c);
    detach_wait *w = sl__malloc(&sl__default_alloc, sizeof *w);
    if (!w) { /* cannot wait for the close callbacks: detach anyway and signal now */
        (void)sl_client_detach_loop(c, NULL, NULL);
        if (m) finish_ctl(l, m);
        return;
    }
    w->loop = l;
    w->msg = m;
    if (!m) {
        sl__free(&sl__default_alloc, w);
        (void)sl_client_detach_loop(c, NULL, NULL);
        return;
    }
    if (sl_client_detach_loop(c, detached_signal, w) != 0) {
        sl__free(&sl__default_alloc, w);
        finish_ctl(l, m);
    }
}

/* Signals every queue that got completions since the last flush (sl__cq_push_quiet). */
static void flush_touched(sl_loop *l)
{
    for (int i = 0; i < l->ntouched; i++) sl__cq_signal(l->touched[i]);
    l->ntouched = 0;
}

/* A submitted batch that cannot start: the submitter was told 0, so the callback carries
 * the failure. Ended by sl_loop_free before it was sent, its commands get SL_ERR_CANCELLED
 * records, as a batch cancelled in flight does; any other failure (the client could not
 * be attached) leaves no records. */
static void complete_unstarted(sl_batch *b, int rc, sl_exec_cb cb, void *arg)
{
    sl_sizes sizes;
    memset(&sizes, 0, sizeof sizes);
    if (rc == SL_ECANCELLED && sl__batch_prepare(b, b->submit_timeout) == 0) {
        (void)sl__engine_cancel(b, "the execution was cancelled: sl_loop_free before it was sent");
        rc = sl__batch_finish(b, SL_ECANCELLED);
        sizes = b->sizes;
    }
    b->nuser = b->ncmds = 0;
    b->nargs = 0;
    b->input.len = 0;
    b->in_flight = 0;
    cb(b, rc, &sizes, arg);
}

static void drain(sl_loop *l)
{
    sl_client *walk[32];             /* clients with batches started: walked once at the end */
    int nwalk = 0;
    for (;;) {
        sl_batch *list = atomic_exchange(&l->inbox, NULL);
        if (!list) break;
        /* The stack is newest first: reverse it to keep submission order. */
        sl_batch *fifo = NULL;
        while (list) {
            sl_batch *next = list->submit_next;
            list->submit_next = fifo;
            fifo = list;
            list = next;
        }
        while (fifo) {
            sl_batch *b = fifo;
            fifo = b->submit_next;
            b->submit_next = NULL;
            sl_client *c = b->client;
            sl_exec_cb cb = (sl_exec_cb)b->done_cb;
            void *arg = b->done_arg;
            b->done_cb = NULL;
            int rc = 0;
            if (atomic_load(&l->stopping)) {
                rc = SL_ECANCELLED;
            } else if (!c->async) {
                rc = sl_client_attach_loop(c, &l->loop);
                if (rc == 0) {
                    uv_client *uc = c->async;
                    uc->owner = l;
                    uc->next_in_owner = l->clients;
                    l->clients = uc;
                }
            }
            int chain = b->chain;
            b->chain = SL__CHAIN_NONE;
            if (rc == 0 && chain) rc = chain_check(b, chain, b->scan, b->submit_timeout, cb);
            if (rc == 0 && chain) rc = chain_begin(b, chain, b->submit_timeout, cb, arg);
            else if (rc == 0) rc = exec_async_start(b, b->submit_timeout, cb, arg);
            if (rc == 0) {
                int seen = 0;
                for (int i = 0; i < nwalk && !seen; i++) seen = walk[i] == c;
                if (!seen && nwalk == (int)(sizeof walk / sizeof walk[0])) {
                    for (int i = 0; i < nwalk; i++) process(walk[i]);
                    nwalk = 0;
                }
                if (!seen) walk[nwalk++] = c;
            } else {
                complete_unstarted(b, rc, cb, arg);
            }
        }
    }
    for (int i = 0; i < nwalk; i++) process(walk[i]);
    flush_touched(l);
}

static void on_wake(uv_async_t *a)
{
    sl_loop *l = a->data;
    drain(l);
    pthread_mutex_lock(&l->mu);
    ctl_msg *ctl = l->ctl;
    l->ctl = NULL;
    pthread_mutex_unlock(&l->mu);
    while (ctl) {
        ctl_msg *m = ctl;
        ctl = m->next;
        m->next = NULL;
        if (m->client) {
            if (m->client->async && ((uv_client *)m->client->async)->owner == l)
                detach_one(l, m->client, m);
            else
                finish_ctl(l, m);
        } else {
            /* Stop: detach every client (their executions complete with SL_ECANCELLED),
             * close the wake handle; uv_run returns once every handle is closed. */
            while (l->clients) detach_one(l, l->clients->client, NULL);
            drain(l); /* late submissions get SL_ECANCELLED */
            uv_close((uv_handle_t *)&l->wake, NULL);
            finish_ctl(l, m);
        }
    }
}

static void *loop_main(void *arg)
{
    sl_loop *l = arg;
    uv_run(&l->loop, UV_RUN_DEFAULT);
    return NULL;
}

int sl_loop_new(sl_loop **out)
{
    if (!out) return SL_EINVAL;
    *out = NULL;
    sl_loop *l = sl__malloc(&sl__default_alloc, sizeof *l);
    if (!l) return SL_ENOMEM;
    memset(l, 0, sizeof *l);
    atomic_init(&l->inbox, NULL);
    atomic_init(&l->stopping, 0);
    if (uv_loop_init(&l->loop) != 0) {
        sl__free(&sl__default_alloc, l);
        return SL_EIO;
    }
    if (uv_async_init(&l->loop, &l->wake, on_wake) != 0) {
        uv_loop_close(&l->loop);
        sl__free(&sl__default_alloc, l);
        return SL_EIO;
    }
    l->wake.data = l;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    pthread_cond_init(&l->room, NULL);
    atomic_init(&l->room_waiters, 0);
    l->fork_gen = sl__fork_generation();
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0) {
        uv_close((uv_handle_t *)&l->wake, NULL);
        uv_run(&l->loop, UV_RUN_DEFAULT);
        uv_loop_close(&l->loop);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        pthread_cond_destroy(&l->room);
        sl__free(&sl__default_alloc, l);
        return SL_EIO;
    }
    l->started = 1;
    *out = l;
    return 0;
}

/* A loop or client made before a fork() is the parent's: its loop thread does not exist
 * in this process. */
static int forked(const sl_loop *l, const sl_client *c)
{
    unsigned now = sl__fork_generation();
    return l->fork_gen != now || c->fork_gen != now;
}

static void push_inbox(sl_loop *l, sl_batch *b)
{
    sl_batch *head = atomic_load(&l->inbox);
    do {
        b->submit_next = head;
    } while (!atomic_compare_exchange_weak(&l->inbox, &head, b));
    uv_async_send(&l->wake); /* coalesced: on_wake drains until empty */
}

int sl_loop_submit(sl_loop *l, sl_batch *b, int timeout_ms, sl_exec_cb cb, void *arg)
{
    if (!l || !b || !cb) return SL_EINVAL;
    if (forked(l, b->client)) return SL_EFORK;
    if (atomic_load(&l->stopping)) return SL_ESTATE;
    if (timeout_ms < -1) return SL_EINVAL;
    if (b->nuser == 0) {
        sl__set_err(b->client, "sl_loop_submit: no commands queued");
        return SL_EINVAL;
    }
    b->cq = NULL;
    atomic_store(&b->cancel_req, 0);
    b->done_cb = (void (*)(sl_batch *, int, const sl_sizes *, void *))cb;
    b->done_arg = arg;
    b->submit_timeout = timeout_ms;
    push_inbox(l, b);
    return 0;
}

/* ------------------------------------------------------------ completion queues */

/* Takes a place in the client's in-flight bounds (a batch and its bytes). One batch is
 * always admitted when nothing else is in flight, however large. */
static int admit(sl_loop *l, sl_client *c, uint64_t bytes, int flags)
{
    for (;;) {
        unsigned nb = atomic_fetch_add(&c->q_batches, 1) + 1;
        uint64_t nby = atomic_fetch_add(&c->q_bytes, bytes) + bytes;
        if (nb == 1 || (nb <= c->opts.max_inflight_batches && nby <= c->opts.max_inflight_bytes)) return 0;
        atomic_fetch_sub(&c->q_batches, 1);
        atomic_fetch_sub(&c->q_bytes, bytes);
        if ((flags & SL_SUBMIT_FAIL_FAST) || pthread_equal(pthread_self(), l->thread)) return SL_EBUSY;
        /* Waits for a completion (release() broadcasts after giving its place back, and
         * sees this waiter, counted before the check, so no wake-up is lost). */
        pthread_mutex_lock(&l->mu);
        atomic_fetch_add(&l->room_waiters, 1);
        unsigned cb = atomic_load(&c->q_batches);
        uint64_t cby = atomic_load(&c->q_bytes);
        if (cb != 0 && (cb + 1 > c->opts.max_inflight_batches || cby + bytes > c->opts.max_inflight_bytes))
            pthread_cond_wait(&l->room, &l->mu);
        atomic_fetch_sub(&l->room_waiters, 1);
        pthread_mutex_unlock(&l->mu);
        if (atomic_load(&l->stopping)) return SL_ESTATE;
    }
}

static void release(sl_loop *l, sl_batch *b)
{
    sl_client *c = b->client;
    atomic_fetch_sub(&c->q_batches, 1);
    atomic_fetch_sub(&c->q_bytes, b->q_bytes);
    if (atomic_load(&l->room_waiters) > 0) {
        pthread_mutex_lock(&l->mu);
        pthread_cond_broadcast(&l->room);
        pthread_mutex_unlock(&l->mu);
    }
}

/* The callback of every sl_loop_submit_cq submission, on the loop thread, once: the place
 * in the bounds is given back, then the completion goes into the queue — after which the
 * batch is the submitter's again and is not touched here. */
static void cq_done(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    sl_loop *l = arg;
    sl_completion done;
    memset(&done, 0, sizeof done);
    done.batch = b;
    done.token = b->token;
    done.status = status;
    done.sizes = *sizes;
    sl_cq *q = b->cq;
    release(l, b);
    /* Quietly: the walk that completed it signals each queue once (flush_touched). */
    int seen = 0;
    for (int i = 0; i < l->ntouched && !seen; i++) seen = l->touched[i] == q;
    if (!seen && l->ntouched == (int)(sizeof l->touched / sizeof l->touched[0])) flush_touched(l);
    if (!seen) l->touched[l->ntouched++] = q;
    sl__cq_push_quiet(q, &done);
}

/* sl_loop_submit_cq of a batch (chain SL__CHAIN_NONE), of a scan's page into the batch or
 * of the batch's EVALSHA with reload (b->scan / b->script_body set by the caller). */
static int submit_cq(sl_loop *l, sl_batch *b, int chain, int timeout_ms, sl_cq *q, void *token, int flags)
{
    if (!l || !b || !q || timeout_ms < -1 || (flags & ~SL_SUBMIT_FAIL_FAST)) return SL_EINVAL;
    sl_client *c = b->client;
    if (forked(l, c)) return SL_EFORK;
    if (atomic_load(&l->stopping)) return SL_ESTATE;
    if (chain != SL__CHAIN_SCAN && b->nuser == 0) return SL_EINVAL;
    if (b->in_flight || b->done_cb || b->chain) return SL_ESTATE;
    uint64_t bytes = chain == SL__CHAIN_SCAN ? 0 : (uint64_t)b->input.len;
    int rc = admit(l, c, bytes, flags);
    if (rc) return rc;
    b->q_bytes = bytes;
    b->cq = q;
    b->token = token;
    atomic_store(&b->cancel_req, 0);
    b->done_cb = cq_done;
    b->done_arg = l;
    b->submit_timeout = timeout_ms;
    b->chain = chain;
    push_inbox(l, b);
    return 0;
}

int sl_loop_submit_cq(sl_loop *l, sl_batch *b, int timeout_ms, sl_cq *q, void *token, int flags)
{
    return submit_cq(l, b, SL__CHAIN_NONE, timeout_ms, q, token, flags);
}

int sl_loop_submit_scan_cq(sl_loop *l, sl_scan *s, sl_batch *b, int timeout_ms, sl_cq *q, void *token, int flags)
{
    if (!s || !b || sl__scan_client(s) != b->client) return SL_EINVAL;
    if (b->in_flight || b->done_cb || b->chain) return SL_ESTATE;
    b->scan = s;
    return submit_cq(l, b, SL__CHAIN_SCAN, timeout_ms, q, token, flags);
}

int sl_loop_submit_script_cq(sl_loop *l, sl_batch *b, const void *body, size_t body_len, int timeout_ms, sl_cq *q,
                             void *token, int flags)
{
    if (!b || (!body && body_len) || b->nuser != 1) return SL_EINVAL;
    if (b->in_flight || b->done_cb || b->chain) return SL_ESTATE;
    b->script_body = body;
    b->script_len = body_len;
    return submit_cq(l, b, SL__CHAIN_SCRIPT, timeout_ms, q, token, flags);
}

int sl_batch_cancel(sl_batch *b)
{
    if (!b) return SL_EINVAL;
    sl_client *c = b->client;
    atomic_store(&b->cancel_req, 1);
    /* Wakes the loop's process() through the client's cancel pipe (its handle is on the
     * loop while the client is attached); a batch still in the inbox sees the flag when
     * it starts. */
    if (c->cancel_pipe[1] >= 0) {
        char x = 1;
        ssize_t w = write(c->cancel_pipe[1], &x, 1); /* a full pipe already wakes the loop */
        (void)w;
    }
    return 0;
}

/* sl_client_free of a client a loop thread drives: detach it first (its executions
 * complete with SL_ECANCELLED). Not from the loop thread (slotlane_uv.h). */
static void hook_release(sl_client *c)
{
    uv_client *uc = c->async;
    if (uc && uc->owner && !pthread_equal(pthread_self(), uc->owner->thread)) (void)sl_loop_detach(uc->owner, c);
}

static void send_ctl(sl_loop *l, ctl_msg *m)
{
    pthread_mutex_lock(&l->mu);
    m->next = l->ctl;
    l->ctl = m;
    pthread_mutex_unlock(&l->mu);
    uv_async_send(&l->wake);
    pthread_mutex_lock(&l->mu);
    while (!m->done) pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
}

int sl_loop_detach(sl_loop *l, sl_client *c)
{
    if (!l || !c) return SL_EINVAL;
    if (pthread_equal(pthread_self(), l->thread)) return SL_ESTATE;
    if (atomic_load(&l->stopping)) return SL_ESTATE;
    ctl_msg m = {NULL, c, 0};
    send_ctl(l, &m);
    return 0;
}

void sl_loop_free(sl_loop *l)
{
    if (!l) return;
    /* In a fork()ed child the thread is the parent's: there is nothing to stop or join,
     * and the loop's handles may not be touched; only the memory is this process's. */
    if (l->fork_gen != sl__fork_generation()) {
        sl__free(&sl__default_alloc, l);
        return;
    }
    atomic_store(&l->stopping, 1);
    pthread_mutex_lock(&l->mu);
    pthread_cond_broadcast(&l->room); /* SL_SUBMIT_WAIT submitters give up */
    pthread_mutex_unlock(&l->mu);
    ctl_msg m = {NULL, NULL, 0};
    send_ctl(l, &m);
    pthread_join(l->thread, NULL);
    uv_loop_close(&l->loop);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    pthread_cond_destroy(&l->room);
    sl__free(&sl__default_alloc, l);
}
