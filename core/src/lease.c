/* lease: connections leased for one purpose, never the shared per-node pipeline.
 *
 * A blocking command (BLPOP, XREAD BLOCK, WAIT...) on the shared connection would stall
 * every command queued behind it, and a deadline or cancel would have to close that
 * connection under everyone else. So a batch whose one command blocks runs it on a lease:
 * a plain-mode client of its own on the command's node (the parent's options, its
 * allocator, credentials and TLS), taken from a small per-node pool. At a deadline or a
 * cancel the lease's execution is abandoned, which closes the lease's connection: a pop
 * still armed on the server dies with it and can never hand its element to anyone.
 * Sessions (session.c) pin a lease for WATCH ... EXEC. */
#include "lease.h"
#include "batch.h"
#include "client.h"
#include "conn.h"
#include "engine.h"
#include "redirect.h"
#include "topology.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ which commands block */

/* Seconds as BLPOP takes them ("0", "1.5") into ms; -1 when it is not a number (the
 * server will refuse it at once). */
static int64_t parse_secs(const uint8_t *p, size_t len)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (*end != '\0' || !(v >= 0) || v > 1e12) return -1;
    return (int64_t)(v * 1000.0 + 0.5);
}

static int64_t parse_ms(const uint8_t *p, size_t len)
{
    int64_t v = 0;
    if (len == 0 || len > 15) return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

int sl__lease_blocking(const uint8_t *bytes, const sl__arg *args, uint32_t argc, int64_t *block_ms)
{
    *block_ms = -1;
    if (argc < 2) return 0;
    const uint8_t *nm = bytes + args[0].off;
    size_t nl = args[0].len;
    const sl__arg *last = &args[argc - 1];
    switch (nl ? nm[0] | 0x20 : 0) {
    case 'b':
        if (sl__name_is(nm, nl, "BLPOP") || sl__name_is(nm, nl, "BRPOP") || sl__name_is(nm, nl, "BLMOVE") ||
            sl__name_is(nm, nl, "BRPOPLPUSH") || sl__name_is(nm, nl, "BZPOPMIN") || sl__name_is(nm, nl, "BZPOPMAX")) {
            *block_ms = parse_secs(bytes + last->off, last->len);
            return 1;
        }
        if (sl__name_is(nm, nl, "BLMPOP") || sl__name_is(nm, nl, "BZMPOP")) {
            *block_ms = parse_secs(bytes + args[1].off, args[1].len);
            return 1;
        }
        return 0;
    case 'x':
        if (!sl__name_is(nm, nl, "XREAD") && !sl__name_is(nm, nl, "XREADGROUP")) return 0;
        /* Only with BLOCK, which comes before STREAMS. */
        for (uint32_t i = 1; i + 1 < argc; i++) {
            const uint8_t *a = bytes + args[i].off;
            if (sl__name_is(a, args[i].len, "STREAMS")) return 0;
            if (sl__name_is(a, args[i].len, "BLOCK")) {
                *block_ms = parse_ms(bytes + args[i + 1].off, args[i + 1].len);
                return 1;
            }
        }
        return 0;
    case 'w':
        if (argc != 3 || !sl__name_is(nm, nl, "WAIT")) return 0;
        *block_ms = parse_ms(bytes + last->off, last->len);
        return 1;
    default:
        return 0;
    }
}

/* The names whose answer above depends on more than the name (and argc >= 2): keep in
 * step with sl__lease_blocking. */
static int blocking_by_args(const uint8_t *nm, size_t nl)
{
    return sl__name_is(nm, nl, "XREAD") || sl__name_is(nm, nl, "XREADGROUP") || sl__name_is(nm, nl, "WAIT");
}

int sl_command_blocking(int argc, const char *const *argv, const size_t *argvlen, int64_t *block_ms,
                        int *by_args)
{
    int64_t ms = -1;
    if (block_ms) *block_ms = -1;
    if (by_args) *by_args = 0;
    if (argc < 1 || !argv) return SL_EINVAL;
    /* The arguments side by side as a batch keeps them (bytes and spans). */
    uint8_t sbuf[1024];
    sl__arg sargs[32];
    size_t total = 0;
    for (int i = 0; i < argc; i++) {
        if (!argv[i]) return SL_EINVAL;
        size_t n = argvlen ? argvlen[i] : strlen(argv[i]);
        if (n > UINT32_MAX - total) return SL_EINVAL;
        total += n;
    }
    uint8_t *buf = sbuf;
    sl__arg *args = sargs;
    if (total > sizeof sbuf || (size_t)argc > sizeof sargs / sizeof sargs[0]) {
        buf = malloc(total ? total : 1);
        args = malloc(sizeof *args * (size_t)argc);
        if (!buf || !args) {
            free(buf);
            free(args);
            return SL_ENOMEM;
        }
    }
    size_t off = 0;
    for (int i = 0; i < argc; i++) {
        size_t n = argvlen ? argvlen[i] : strlen(argv[i]);
        if (n) memcpy(buf + off, argv[i], n);
        args[i].off = (uint32_t)off;
        args[i].len = (uint32_t)n;
        off += n;
    }
    int r = sl__lease_blocking(buf, args, (uint32_t)argc, &ms);
    if (by_args) *by_args = blocking_by_args(buf, args[0].len);
    if (buf != sbuf) {
        free(buf);
        free(args);
    }
    if (block_ms) *block_ms = ms;
    return r;
}

/* Reads one "$len\r\n" header at p[*pos, end) (the framing was checked when queued). */
static int bulk_at(const uint8_t *p, size_t end, size_t *pos, sl__arg *out)
{
    size_t i = *pos;
    if (i >= end || p[i] != '$') return -1;
    uint64_t n = 0;
    for (i++; i < end && p[i] >= '0' && p[i] <= '9'; i++) n = n * 10 + (uint64_t)(p[i] - '0');
    i += 2; /* \r\n */
    if (i + n + 2 > end) return -1;
    out->off = (uint32_t)i;
    out->len = (uint32_t)n;
    *pos = i + n + 2;
    return 0;
}

uint32_t sl__lease_view(const sl_batch *b, const sl__cmd *cmd, sl__arg local[SL__LEASE_VIEW],
                        const sl__arg **args)
{
    if (b->client->mode == SL_MODE_CLUSTER && b->args) { /* cluster batches keep argument views */
        *args = &b->args[cmd->arg0];
        return cmd->argc;
    }
    /* A plain client keeps none (it routes nothing): read the first ones and the last. */
    const uint8_t *p = sl__cmd_bytes(b, cmd);
    size_t pos = 0, end = cmd->len;
    while (pos < end && p[pos] != '\n') pos++;
    pos++;
    uint32_t argc = cmd->argc, i;
    sl__arg a;
    for (i = 0; i < argc; i++) {
        if (bulk_at(p, end, &pos, &a)) break;
        if (i < SL__LEASE_VIEW - 1) local[i] = a;
        else if (i == argc - 1) local[SL__LEASE_VIEW - 1] = a;
    }
    *args = local;
    if (i < argc) return i < SL__LEASE_VIEW - 1 ? i : SL__LEASE_VIEW - 1; /* cannot happen: framed */
    return argc < SL__LEASE_VIEW ? argc : SL__LEASE_VIEW;
}

int sl__lease_classify(sl_batch *b)
{
    /* A cheap look at the first letter first: most pipelines have no command that may block. */
    int maybe = 0;
    for (size_t i = 0; i < b->nuser && !maybe; i++) {
        const sl__cmd *cmd = &b->cmds[i];
        /* "*N\r\n$L\r\n" then the name: its first byte follows the second '\n'. */
        const uint8_t *p = sl__cmd_bytes(b, cmd);
        size_t j = 0, nl = 0;
        while (j < cmd->len && nl < 2) nl += p[j++] == '\n';
        if (j >= cmd->len) continue;
        uint8_t ch = p[j] | 0x20;
        maybe = ch == 'b' || ch == 'x' || ch == 'w';
    }
    if (!maybe) return 0;
    int in_multi = 0;
    for (size_t i = 0; i < b->nuser; i++) {
        const sl__cmd *cmd = &b->cmds[i];
        const uint8_t *bytes = sl__cmd_bytes(b, cmd);
        sl__arg local[SL__LEASE_VIEW];
        const sl__arg *args;
        uint32_t argc = sl__lease_view(b, cmd, local, &args);
        if (argc == 0) continue;
        const uint8_t *nm = bytes + args[0].off;
        int64_t ms;
        if (sl__name_is(nm, args[0].len, "MULTI")) {
            in_multi = 1;
        } else if (sl__name_is(nm, args[0].len, "EXEC") || sl__name_is(nm, args[0].len, "DISCARD")) {
            in_multi = 0;
        } else if (!in_multi && sl__lease_blocking(bytes, args, argc, &ms)) {
            return b->nuser == 1 ? 1 : -1;
        }
    }
    return 0;
}

int sl__lease_timeout(const sl_client *c, int timeout_ms, int64_t block_ms)
{
    if (timeout_ms != 0) return timeout_ms;
    if (block_ms < 0) return c->opts.command_timeout_ms > 0 ? c->opts.command_timeout_ms : -1;
    if (block_ms == 0) return -1;
    int64_t t = block_ms + c->opts.blocking_grace_ms;
    return t > 0x7fffffff ? -1 : (int)t;
}

/* ------------------------------------------------------------ results */

void sl__lease_results_reset(sl_batch *b)
{
    sl__batch_results_reset(b);
    for (size_t i = 0; i < b->nuser; i++) {
        sl__cmd *cmd = &b->cmds[i];
        cmd->flags = 0;
        cmd->src = SL__SRC_NONE;
        cmd->rec_count = 0;
    }
}

int sl__lease_adopt(sl_batch *b, uint32_t ci, const sl_batch *from, uint32_t j)
{
    const sl__alloc *a = &b->client->alloc;
    size_t start = 0;
    for (uint32_t i = 0; i < j; i++) start += from->cmds[i].rec_count;
    size_t n = from->cmds[j].rec_count;
    if (start + n > from->nresult || n == 0)
        return sl__batch_add_error(b, ci, SL_ERR_PROTOCOL, "no reply was recorded");
    uint64_t base = b->data.len;
    if (from->data.len && sl__bytes_append(a, &b->data, from->data.ptr, from->data.len)) return SL_ENOMEM;
    if (sl__records_reserve(a, &b->xrecs, n)) return SL_ENOMEM;
    sl_reply *dst = b->xrecs.ptr + b->xrecs.len;
    memcpy(dst, from->result + start, n * sizeof(sl_reply));
    for (size_t i = 0; i < n; i++) dst[i].offset += base;
    sl__cmd *cmd = &b->cmds[ci];
    cmd->src = SL__SRC_X;
    cmd->rec_start = (uint32_t)b->xrecs.len;
    cmd->rec_count = (uint32_t)n;
    cmd->flags |= SL__F_DONE;
    cmd->flags &= (uint16_t)~SL__F_RESEND;
    b->xrecs.len += n;
    return 0;
}

int sl__lease_refuse_all(sl_batch *b, sl_err_kind kind, int code, const char *msg)
{
    sl__lease_results_reset(b);
    for (uint32_t i = 0; i < b->nuser; i++)
        if (sl__batch_add_error(b, i, kind, "%s", msg)) return SL_ENOMEM;
    sl__set_err(b->client, "%s", msg);
    int rc = sl__batch_finish(b, code);
    return rc == SL_ENOMEM ? rc : code;
}

static int refuse_msg(sl_batch *b, char *msg, size_t cap)
{
    const char *name = "a blocking command";
    char nm[32];
    for (size_t i = 0; i < b->nuser; i++) {
        const sl__cmd *cmd = &b->cmds[i];
        sl__arg local[SL__LEASE_VIEW];
        const sl__arg *args;
        uint32_t argc = sl__lease_view(b, cmd, local, &args);
        int64_t ms;
        if (sl__lease_blocking(sl__cmd_bytes(b, cmd), args, argc, &ms)) {
            snprintf(nm, sizeof nm, "%.*s", (int)(args[0].len < 20 ? args[0].len : 20),
                     (const char *)sl__cmd_bytes(b, cmd) + args[0].off);
            name = nm;
            break;
        }
    }
    return snprintf(msg, cap,
                    "%s blocks and cannot run in a pipeline (it would stall every command behind it): run it "
                    "alone, which leases a connection for it, or in a session (sl_session_exec); nothing was sent",
                    name);
}

int sl__lease_refuse(sl_batch *b)
{
    char msg[SL__ERRMSG_MAX];
    refuse_msg(b, msg, sizeof msg);
    return sl__lease_refuse_all(b, SL_ERR_ARGUMENT, SL_EBLOCKING, msg);
}

int sl__lease_refuse_records(sl_batch *b)
{
    char msg[SL__ERRMSG_MAX];
    refuse_msg(b, msg, sizeof msg);
    sl__lease_results_reset(b);
    for (uint32_t i = 0; i < b->nuser; i++)
        if (sl__batch_add_error(b, i, SL_ERR_ARGUMENT, "%s", msg)) return SL_ENOMEM;
    sl__set_err(b->client, "%s", msg);
    return 0;
}

/* ------------------------------------------------------------ the pool */

void sl__leases_free(sl_client *c)
{
    struct sl__leases *p = c->leases;
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) {
        sl_batch_free(p->v[i]->batch);
        sl_client_free(p->v[i]->conn);
        sl__free(&c->alloc, p->v[i]);
    }
    sl__free(&c->alloc, p->v);
    sl__free(&c->alloc, p);
    c->leases = NULL;
}

/* A lease's client: the parent's options on one node, plain mode, not connected yet. */
static int lease_new(sl_client *c, const sl__node *n, sl__lease **out)
{
    char url[SL__HOST_MAX + 16];
    if (strchr(n->host, ':'))
        snprintf(url, sizeof url, "[%s]:%d", n->host, n->port);
    else
        snprintf(url, sizeof url, "%s:%d", n->host, n->port);
    sl_allocator al = SL_ALLOCATOR_INIT;
    al.malloc_fn = c->alloc.malloc_fn;
    al.realloc_fn = c->alloc.realloc_fn;
    al.free_fn = c->alloc.free_fn;
    al.ctx = c->alloc.ctx;
    sl_client_options o = c->opts;
    o.version = SL_CLIENT_OPTIONS_VERSION;
    o.size = (unsigned)sizeof o;
    o.url = url;
    o.mode = SL_MODE_PLAIN;
    o.tls = c->tls;
    o.allocator = &al;
    o.refresh_interval_ms = 0;
    sl__lease *l = sl__malloc(&c->alloc, sizeof *l);
    if (!l) return SL_ENOMEM;
    memset(l, 0, sizeof *l);
    char why[SL__ERRMSG_MAX];
    int rc = sl__client_make(&l->conn, &o, 0, why, sizeof why);
    if (rc == 0) rc = sl_batch_new(l->conn, &l->batch);
    if (rc) {
        sl__set_err(c, "a leased connection to %s: %s", n->addr, rc == SL_ENOMEM ? "out of memory" : why);
        sl_client_free(l->conn);
        sl__free(&c->alloc, l);
        return rc;
    }
    l->conn->lease_parent = c;
    snprintf(l->addr, sizeof l->addr, "%s", n->addr);
    *out = l;
    return 0;
}

int sl__lease_get(sl_client *c, uint16_t k, sl__lease **out)
{
    *out = NULL;
    if (k >= c->topo.nnodes) {
        sl__set_err(c, "no node for the command");
        return SL_ECLUSTER;
    }
    const sl__node *n = c->topo.nodes[k];
    if (!c->leases) {
        c->leases = sl__malloc(&c->alloc, sizeof *c->leases);
        if (!c->leases) return SL_ENOMEM;
        memset(c->leases, 0, sizeof *c->leases);
    }
    struct sl__leases *p = c->leases;
    for (size_t i = 0; i < p->n; i++) {
        if (!p->v[i]->busy && strcmp(p->v[i]->addr, n->addr) == 0) {
            p->v[i]->busy = 1;
            *out = p->v[i];
            return 0;
        }
    }
    if (p->n == p->cap) {
        void *v = p->v;
        if (sl__grow(&c->alloc, &v, &p->cap, p->n + 1, sizeof *p->v)) return SL_ENOMEM;
        p->v = v;
    }
    sl__lease *l;
    int rc = lease_new(c, n, &l);
    if (rc) return rc;
    l->busy = 1;
    p->v[p->n++] = l;
    *out = l;
    return 0;
}

void sl__lease_put(sl_client *c, sl__lease *l, int close_conn)
{
    sl_client *lc = l->conn;
    if (close_conn || sl__engine_node_busy(lc->topo.nodes[0])) {
        /* Close what is left: nothing of this use may reach the next one. */
        sl__engine_node_failed(lc, 0, SL_ERR_IO, SL_ECANCELLED);
    }
    l->busy = 0;
    struct sl__leases *p = c->leases;
    size_t idle = 0;
    for (size_t i = 0; i < p->n; i++) idle += !p->v[i]->busy && strcmp(p->v[i]->addr, l->addr) == 0;
    int keep = c->opts.lease_idle_max < 0 ? 0 : c->opts.lease_idle_max;
    /* One attached to a loop stays (it is put back from inside its own callback). */
    if (idle <= (size_t)keep || lc->async) return;
    for (size_t i = 0; i < p->n; i++) {
        if (p->v[i] != l) continue;
        p->v[i] = p->v[--p->n];
        break;
    }
    sl_batch_free(l->batch);
    sl_client_free(lc);
    sl__free(&c->alloc, l);
}

size_t sl__lease_count(const sl_client *c, int busy)
{
    size_t n = 0;
    for (size_t i = 0; c->leases && i < c->leases->n; i++) n += c->leases->v[i]->busy == busy;
    return n;
}

/* ------------------------------------------------------------ running on a lease */

int sl__lease_run(sl_client *c, sl__lease *l, int timeout_ms)
{
    sl_client *lc = l->conn;
    atomic_store(&lc->running, 1);
    if (atomic_exchange(&lc->cancel, 0)) sl__drain_cancel(lc);
    lc->errmsg[0] = '\0';
    /* sl_client_cancel(c) reaches lc through lease_active; a cancel that came before it was
     * set is seen here (both sides use sequentially consistent atomics). */
    atomic_store(&c->lease_active, lc);
    if (atomic_load(&c->cancel)) sl_client_cancel(lc);
    int rc = sl__batch_run_engine(l->batch, timeout_ms);
    atomic_store(&c->lease_active, NULL);
    atomic_store(&lc->running, 0);
    if (atomic_exchange(&lc->cancel, 0)) sl__drain_cancel(lc);
    if (rc && lc->errmsg[0]) sl__set_err(c, "%s", lc->errmsg);
    return rc;
}

int sl__lease_reply_starts(const uint8_t *data, const sl_reply *r, const char *prefix)
{
    size_t n = strlen(prefix);
    return r->type == SL_REPLY_ERROR && r->len >= n && memcmp(data + r->offset, prefix, n) == 0;
}

/* A record that says the lease's connection is not in a known state any more. */
int sl__lease_record_broken(const sl_reply *r)
{
    return r->type == SL_REPLY_ERROR && r->flags != SL_ERR_SERVER && r->flags != SL_ERR_CLUSTER &&
           r->flags != SL_ERR_ARGUMENT && r->flags != SL_ERR_REDIRECTS;
}

/* Waits out a TRYAGAIN/CLUSTERDOWN backoff, or until the client is cancelled (1). */
static int backoff_wait(sl_client *c, uint64_t ms)
{
    struct pollfd p = {c->cancel_pipe[0], POLLIN, 0};
    (void)poll(&p, 1, (int)(ms > 1000 ? 1000 : ms));
    return atomic_load(&c->cancel) != 0;
}

int sl__lease_exec(sl_batch *b, int timeout_ms)
{
    sl_client *c = b->client;
    int status = sl__batch_prepare(b, timeout_ms); /* routes the command to its node */
    if (status) {
        (void)sl__engine_abandon(b, SL_ERR_IO, status == SL_ENOMEM ? "out of memory" : c->errmsg);
        return sl__batch_finish(b, status);
    }
    sl__cmd *cmd = &b->cmds[0];
    const uint8_t *bytes = sl__cmd_bytes(b, cmd);
    int64_t block_ms;
    sl__arg local[SL__LEASE_VIEW];
    const sl__arg *args;
    uint32_t argc = sl__lease_view(b, cmd, local, &args);
    (void)sl__lease_blocking(bytes, args, argc, &block_ms);
    int t = sl__lease_timeout(c, timeout_ms, block_ms);
    int unblocked = 0;
    while (status == 0 && (cmd->flags & SL__F_RESEND)) {
        cmd->flags &= (uint16_t)~SL__F_RESEND;
        sl__lease *l;
        int rc = sl__lease_get(c, cmd->node, &l);
        if (rc) {
            if (rc == SL_ENOMEM) status = rc;
            else if (sl__batch_add_error(b, 0, rc == SL_ECLUSTER ? SL_ERR_CLUSTER : SL_ERR_IO, "%s", c->errmsg))
                status = SL_ENOMEM;
            break;
        }
        sl_batch *lb = l->batch;
        sl_batch_reset(lb);
        int asking = (cmd->flags & SL__F_ASKING) != 0;
        cmd->flags &= (uint16_t)~SL__F_ASKING;
        static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
        if ((asking && sl_batch_append(lb, NULL, asking_cmd, sizeof asking_cmd - 1, 1)) ||
            sl_batch_append(lb, NULL, bytes, cmd->len, 1)) {
            sl__lease_put(c, l, 0);
            status = SL_ENOMEM;
            break;
        }
        status = sl__lease_run(c, l, t);
        if (status == SL_ENOMEM) {
            sl__lease_put(c, l, 1);
            break;
        }
        rc = sl__lease_adopt(b, 0, lb, asking ? 1 : 0);
        const sl_reply *r = &b->xrecs.ptr[cmd->rec_start];
        sl__lease_put(c, l, status != 0 || rc != 0 || sl__lease_record_broken(r));
        if (rc) {
            status = rc;
            break;
        }
        if (status || r->type != SL_REPLY_ERROR || c->mode != SL_MODE_CLUSTER) break;
        /* Not executed by the server: MOVED, ASK, TRYAGAIN (redirect.c marks the resend), or
         * -UNBLOCKED (the slot moved or the node changed role while it waited). */
        sl__redirect_check(b, 0, &b->xrecs.ptr[cmd->rec_start]);
        if (!(cmd->flags & SL__F_RESEND) && sl__lease_reply_starts(b->data.ptr, r, "UNBLOCKED") && !unblocked++ && cmd->slot >= 0) {
            c->topo.refresh_wanted = 1;
            sl__topo_maybe_refresh(c);
            cmd->node = c->topo.slot_node[cmd->slot];
            cmd->flags |= SL__F_RESEND;
        }
        if ((cmd->flags & SL__F_RESEND) && b->backoff) {
            b->backoff = 0;
            if (backoff_wait(c, (uint64_t)10 << (cmd->redirects < 5 ? cmd->redirects : 5))) {
                sl__set_err(c, "the execution was cancelled");
                if (sl__batch_add_error(b, 0, SL_ERR_CANCELLED, "%s", c->errmsg)) status = SL_ENOMEM;
                else status = SL_ECANCELLED;
            }
        }
        if (cmd->flags & SL__F_RESEND) b->resends = 0;
    }
    return sl__batch_finish(b, status);
}
