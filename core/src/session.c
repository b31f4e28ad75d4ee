/* session: WATCH ... MULTI ... EXEC on one connection pinned to the primary of one slot.
 *
 * A WATCH holds only on the connection that sent it, so a transaction with WATCH cannot
 * use the shared pipeline (another caller's EXEC or UNWATCH would end it). A session
 * leases a connection (lease.c) to the owner of the slot of the first key it sees and
 * runs every batch there; it follows WATCH, MULTI, EXEC, DISCARD and UNWATCH and their
 * replies to know what is open, so that closing it leaves the connection clean. */
#include "batch.h"
#include "client.h"
#include "commands.h"
#include "engine.h"
#include "lease.h"
#include "topology.h"

#include <stdio.h>
#include <string.h>

struct sl_session {
    sl_client *client;
    sl__lease *lease;            /* NULL until the first batch runs (or after an unpin) */
    int slot;                    /* pinned slot, -1 none yet */
    int watching;                /* a WATCH is held */
    int in_multi;                /* a MULTI is open */
    int broken;                  /* the connection's state is unknown: close it */
};

int sl_session_new(sl_client *client, sl_session **out)
{
    if (!out) return SL_EINVAL;
    *out = NULL;
    if (!client) return SL_EINVAL;
    if (client->lease_parent) {
        sl__set_err(client, "a lease's client cannot open sessions");
        return SL_EINVAL;
    }
    sl_session *s = sl__malloc(&client->alloc, sizeof *s);
    if (!s) return SL_ENOMEM;
    memset(s, 0, sizeof *s);
    s->client = client;
    s->slot = -1;
    *out = s;
    return 0;
}

int sl_session_slot(const sl_session *s)
{
    return s ? s->slot : -1;
}

int sl_session_watching(const sl_session *s)
{
    return s ? (s->watching || s->in_multi) : 0;
}

/* "MOVED <slot> <host:port>": the slot's new owner goes into the map at once, so that a
 * retry pins the new owner (the refresh that follows is throttled). */
static void learn_moved(sl_client *c, const uint8_t *m, size_t len)
{
    if (len <= 6 || memcmp(m, "MOVED ", 6) != 0) return;
    size_t pos = 6;
    long slot = 0;
    while (pos < len && m[pos] >= '0' && m[pos] <= '9' && slot < SL_SLOTS) slot = slot * 10 + (m[pos++] - '0');
    if (pos >= len || m[pos] != ' ' || slot >= SL_SLOTS) return;
    pos++;
    uint16_t node;
    if (sl__topo_node_addr(c, (const char *)m + pos, len - pos, &node) != 0) return;
    c->topo.slot_node[slot] = node;
    c->topo.nodes[node]->primary = 1;
}

static const sl_reply *cmd_reply(const sl_batch *b, uint32_t ci)
{
    return b->xrecs.ptr + b->cmds[ci].rec_start;
}

/* Follows what the batch's commands opened and closed, from their replies. Returns 0,
 * SL_EABORTED or SL_EWATCHMOVED (moved set then). */
static int track(sl_session *s, sl_batch *b, int *moved)
{
    int rc = 0, guarded = s->watching || s->in_multi;
    *moved = 0;
    for (uint32_t i = 0; i < b->nuser; i++) {
        const sl__cmd *cmd = &b->cmds[i];
        sl__arg local[SL__LEASE_VIEW];
        const sl__arg *a;
        if (sl__lease_view(b, cmd, local, &a) == 0) continue;
        const uint8_t *nm = sl__cmd_bytes(b, cmd) + a->off;
        const sl_reply *r = cmd_reply(b, i);
        int ok = r->type != SL_REPLY_ERROR;
        if (sl__name_is(nm, a->len, "WATCH")) {
            guarded = 1; /* a WATCH that was redirected did not watch: the transaction cannot hold */
            if (ok) s->watching = 1;
        } else if (sl__name_is(nm, a->len, "MULTI")) {
            guarded = 1;
            if (ok) s->in_multi = 1;
        } else if (sl__name_is(nm, a->len, "EXEC")) {
            guarded = 1;
            if (r->type == SL_REPLY_NIL && rc == 0) rc = SL_EABORTED;
            s->watching = s->in_multi = 0; /* EXEC ends both, also when it answers EXECABORT */
        } else if (sl__name_is(nm, a->len, "DISCARD")) {
            if (ok) s->watching = s->in_multi = 0;
        } else if (sl__name_is(nm, a->len, "UNWATCH")) {
            if (ok) s->watching = 0;
        }
        if (sl__lease_reply_starts(b->data.ptr, r, "MOVED ") || sl__lease_reply_starts(b->data.ptr, r, "ASK ")) {
            *moved = 1;
            learn_moved(s->client, b->data.ptr + r->offset, r->len);
        }
        if (sl__lease_record_broken(r)) s->broken = 1;
    }
    if (*moved && (guarded || s->watching || s->in_multi)) return SL_EWATCHMOVED;
    return rc;
}

int sl_session_exec(sl_session *s, sl_batch *b, int timeout_ms, sl_sizes *sizes)
{
    if (sizes) memset(sizes, 0, sizeof *sizes);
    if (!s || !b) return SL_EINVAL;
    sl_client *c = s->client;
    if (b->client != c) {
        sl__set_err(c, "the batch belongs to another client than the session");
        return SL_EINVAL;
    }
    if (timeout_ms < -1) {
        sl__set_err(c, "timeout_ms must be -1, 0 or positive");
        return SL_EINVAL;
    }
    c->errmsg[0] = '\0';
    int status = 0;
    /* sl_client_cancel reaches a running session (and through the lease, its connection). */
    atomic_store(&c->running, 1);
    if (atomic_exchange(&c->cancel, 0)) sl__drain_cancel(c);
    if (sl__check_fork(c)) {
        status = SL_EFORK;
        goto refused_quiet;
    }
    if (b->nuser == 0) goto done;
    if (s->broken) {
        status = sl__lease_refuse_all(b, SL_ERR_ARGUMENT, SL_ESTATE,
                                      "the session is broken by an earlier failure: close it and open another");
        goto done;
    }
    /* Every key in one slot, the session's: refused before anything is sent. */
    int slot = s->slot, cross = 0;
    int64_t block = -2; /* the longest block time of a blocking command; -2 none */
    for (uint32_t i = 0; i < b->nuser; i++) {
        const sl__cmd *cmd = &b->cmds[i];
        int64_t ms;
        sl__arg local[SL__LEASE_VIEW];
        const sl__arg *args;
        uint32_t argc = sl__lease_view(b, cmd, local, &args);
        if (sl__lease_blocking(sl__cmd_bytes(b, cmd), args, argc, &ms) && !s->in_multi) {
            if (ms == 0 || block == 0) block = 0;
            else if (ms > block) block = ms;
        }
        if (c->mode != SL_MODE_CLUSTER) continue;
        const sl__cmdinfo *info;
        int multi;
        int ks = sl__batch_cmd_slot(b, i, &info, &multi);
        if (ks == -2) {
            status = SL_ENOMEM;
            goto done;
        }
        if (multi || (ks >= 0 && slot >= 0 && ks != slot)) cross = 1;
        if (ks >= 0 && slot < 0) slot = ks;
    }
    char msg[SL__ERRMSG_MAX];
    if (cross) {
        snprintf(msg, sizeof msg,
                 "CROSSSLOT Keys in request don't hash to the same slot (the session is pinned to slot %d; "
                 "nothing was sent)", slot);
        status = sl__lease_refuse_all(b, SL_ERR_CLUSTER, SL_ECLUSTER, msg);
        goto done;
    }
    if (c->mode == SL_MODE_CLUSTER && !c->async_hooks && !s->lease) sl__topo_maybe_refresh(c);
    uint16_t node = c->mode == SL_MODE_CLUSTER && slot >= 0 ? c->topo.slot_node[slot] : c->topo.default_node;
    if (s->lease && slot >= 0 && s->slot < 0 && node < c->topo.nnodes &&
        strcmp(c->topo.nodes[node]->addr, s->lease->addr) != 0) {
        /* Keyless commands went first on another node: a key now decides. */
        if (s->watching || s->in_multi) {
            snprintf(msg, sizeof msg, "CROSSSLOT slot %d is not on the session's node %s (nothing was sent)", slot,
                     s->lease->addr);
            status = sl__lease_refuse_all(b, SL_ERR_CLUSTER, SL_ECLUSTER, msg);
            goto done;
        }
        sl__lease_put(c, s->lease, 0);
        s->lease = NULL;
    }
    if (!s->lease) {
        if (node == SL__NO_NODE || node >= c->topo.nnodes) {
            c->topo.refresh_wanted = 1;
            snprintf(msg, sizeof msg, "CLUSTERDOWN no node serves slot %d", slot);
            status = sl__lease_refuse_all(b, SL_ERR_CLUSTER, SL_ECLUSTER, msg);
            goto done;
        }
        int rc = sl__lease_get(c, node, &s->lease);
        if (rc) {
            snprintf(msg, sizeof msg, "%s", c->errmsg);
            status = rc == SL_ENOMEM ? rc : sl__lease_refuse_all(b, SL_ERR_IO, SL_EIO, msg);
            goto done;
        }
    }
    if (slot >= 0) s->slot = slot;
    /* The batch's commands, as they are, on the session's connection. */
    sl_batch *lb = s->lease->batch;
    sl_batch_reset(lb);
    for (uint32_t i = 0; i < b->nuser; i++) {
        const sl__cmd *cmd = &b->cmds[i];
        if (sl_batch_append(lb, NULL, sl__cmd_bytes(b, cmd), cmd->len, 1)) {
            status = SL_ENOMEM;
            goto done;
        }
    }
    int t = block == -2 ? timeout_ms : sl__lease_timeout(c, timeout_ms, block);
    status = sl__lease_run(c, s->lease, t);
    if (status == SL_ENOMEM) {
        s->broken = 1;
        goto done;
    }
    if (status) s->broken = 1;
    sl__lease_results_reset(b);
    for (uint32_t i = 0; i < b->nuser; i++) {
        int rc = sl__lease_adopt(b, i, lb, i);
        if (rc) {
            s->broken = 1;
            status = rc;
            goto done;
        }
    }
    int moved;
    int trc = track(s, b, &moved);
    if (moved) {
        c->topo.refresh_wanted = 1;
        c->stats.moved++;
        if (trc == SL_EWATCHMOVED) {
            s->broken = 1;
            sl__set_err(c, "slot %d moved while the session watched it (or had a MULTI open): the transaction "
                           "cannot hold; close the session and start over",
                        s->slot);
        } else if (!s->broken) {
            /* Nothing watched: let go of the old owner; the next batch pins the new one. */
            sl__lease_put(c, s->lease, 0);
            s->lease = NULL;
            s->slot = -1;
        }
    }
    if (status == 0) status = trc;
    if (status == SL_EABORTED) sl__set_err(c, "the transaction was aborted: EXEC answered nil (a watched key changed)");
    {
        int frc = sl__batch_finish(b, status);
        if (frc == SL_ENOMEM) status = frc;
        else if (status == 0) status = frc;
    }
done:
    if (status == SL_ENOMEM) {
        s->broken = 1;
        if (b->result == NULL) (void)sl__lease_refuse_all(b, SL_ERR_IO, SL_ENOMEM, "out of memory");
    }
refused_quiet:
    atomic_store(&c->running, 0);
    if (atomic_exchange(&c->cancel, 0)) sl__drain_cancel(c);
    if (sizes) *sizes = b->sizes;
    b->nuser = b->ncmds = 0;
    b->nargs = 0;
    b->input.len = 0;
    b->ext = NULL;
    return status;
}

int sl_session_run(sl_session *s, sl_batch *b, const void *cmds, size_t len, size_t count, int timeout_ms,
                   void *records, size_t records_cap, void *data, size_t data_cap, sl_sizes *sizes)
{
    if (sizes) memset(sizes, 0, sizeof *sizes);
    if (!s || !b) return SL_EINVAL;
    sl_batch_reset(b);
    b->result = NULL;
    b->nresult = 0;
    memset(&b->sizes, 0, sizeof b->sizes);
    if ((!cmds && len) || count == 0) {
        sl__set_err(b->client, "sl_session_run: no commands");
        return SL_EINVAL;
    }
    int rc = sl_batch_append(b, NULL, cmds, len, count);
    if (rc) return rc;
    rc = sl_session_exec(s, b, timeout_ms, sizes);
    if (rc == SL_ENOMEM) return rc;
    if (records || data || records_cap || data_cap) {
        sl_sizes tmp;
        int crc = sl_batch_copy_out(b, records, records_cap, data, data_cap, sizes ? sizes : &tmp);
        if (crc) return crc;
    }
    return rc;
}

int sl_session_close(sl_session *s)
{
    if (!s) return 0;
    sl_client *c = s->client;
    int rc = 0;
    if (s->lease) {
        int close_conn = s->broken;
        if (!close_conn && (s->in_multi || s->watching)) {
            /* DISCARD also ends a WATCH; UNWATCH alone when no MULTI is open. */
            static const char discard[] = "*1\r\n$7\r\nDISCARD\r\n";
            static const char unwatch[] = "*1\r\n$7\r\nUNWATCH\r\n";
            sl_batch *lb = s->lease->batch;
            sl_batch_reset(lb);
            rc = s->in_multi ? sl_batch_append(lb, NULL, discard, sizeof discard - 1, 1)
                             : sl_batch_append(lb, NULL, unwatch, sizeof unwatch - 1, 1);
            if (rc == 0) rc = sl__lease_run(c, s->lease, 0);
            if (rc == 0 && (lb->nresult == 0 || lb->result[0].type != SL_REPLY_STATUS)) {
                sl__set_err(c, "closing the session: %s did not answer OK", s->in_multi ? "DISCARD" : "UNWATCH");
                rc = SL_ESERVER;
            }
            close_conn = rc != 0;
        }
        sl__lease_put(c, s->lease, close_conn);
    }
    sl__free(&c->alloc, s);
    return rc;
}
