/* failover: replica reads and what the engine does when a node is lost or fails over.
 *
 * Replica reads: with read_from other than SL_READ_PRIMARY, a read-only command (the
 * command table's flag) of a slot goes to one of its primary's replicas whose connection
 * sends READONLY (conn.c's handshake), else to the primary. A replica that cannot be used
 * now (its connect failed and it is in backoff, or it is reported down) is skipped; a
 * replica whose connect fails while a read waits for it sends the read to the primary.
 *
 * A lost node: commands that never reached its socket are routed again by their slot in
 * a later round (after a backoff and, in the blocking driver, a rate-limited refresh of
 * the map from another known node) while the map may move their slot (the owner has a
 * replica, or the map names another owner), until the execution's deadline; a read-only command
 * that was sent is retried once, on the primary; a sent write fails with SL_ERR_IO, said
 * to be possibly executed, unless retry_writes. Error replies a failover produces
 * (-LOADING, -MASTERDOWN, -READONLY, -UNBLOCKED) resend as Redis Cluster documents. */
#include "failover.h"
#include "client.h"
#include "topology.h"

#include <stdio.h>
#include <string.h>

void sl__event(sl_client *c, sl_event_type type, const char *addr)
{
    if (c->opts.on_event) c->opts.on_event(c->opts.on_event_ctx, type, addr ? addr : "");
}

void sl__failover_node_lost(sl_client *c, sl__node *n)
{
    if (c->mode != SL_MODE_CLUSTER) return;
    /* A lost primary asks for the fast refresh (topology.c); any other node the usual one. */
    c->topo.refresh_wanted |= n->primary ? SL__REFRESH_LOST : SL__REFRESH_MOVED;
    if (n->down || !n->ever_connected) return;
    n->down = 1;
    c->stats.nodes_down++;
    sl__event(c, SL_EVENT_NODE_DOWN, n->addr);
}

void sl__failover_node_up(sl_client *c, sl__node *n)
{
    if (!n->down) return;
    n->down = 0;
    sl__event(c, SL_EVENT_NODE_UP, n->addr);
}

void sl__failover_promoted(sl_client *c, uint16_t from, uint16_t to)
{
    sl__topology *t = &c->topo;
    if (from >= t->nnodes || to >= t->nnodes || from == to || t->nodes[to]->promoted) return;
    int was_replica = 0;
    for (size_t i = 0; i < t->nreplicas && !was_replica; i++)
        was_replica = t->replicas[i].node == to && t->replicas[i].primary == from;
    if (!was_replica) return;
    t->nodes[to]->promoted = 1;
    c->stats.failovers++;
    sl__event(c, SL_EVENT_FAILOVER, t->nodes[to]->addr);
}

/* A replica a read may go to now. */
static int usable(const sl_client *c, const sl__node *n, uint64_t now)
{
    if (!n->replica || n->primary || !sl__node_may_connect(c, n, now)) return 0;
    /* A connection made before the node was a replica did not send READONLY: it would only
     * answer MOVED. */
    return n->state == SL__DISCONNECTED || n->readonly;
}

uint16_t sl__failover_read_node(sl_client *c, uint16_t primary)
{
    sl__topology *t = &c->topo;
    if (c->opts.read_from == SL_READ_PRIMARY || t->nreplicas == 0) return primary;
    uint64_t now = sl__now_ms();
    size_t count = 0;
    for (size_t i = 0; i < t->nreplicas; i++)
        if (t->replicas[i].primary == primary && usable(c, t->nodes[t->replicas[i].node], now)) count++;
    if (count == 0) return primary;
    size_t pick = c->opts.read_from == SL_READ_REPLICAS_ROUND_ROBIN ? (size_t)(t->read_rr++ % count) : 0;
    for (size_t i = 0; i < t->nreplicas; i++) {
        const sl__replica *r = &t->replicas[i];
        if (r->primary == primary && usable(c, t->nodes[r->node], now) && pick-- == 0) {
            c->stats.replica_reads++;
            return r->node;
        }
    }
    return primary;
}

static int has_replica(const sl_client *c, uint16_t primary)
{
    for (size_t i = 0; i < c->topo.nreplicas; i++)
        if (c->topo.replicas[i].primary == primary) return 1;
    return 0;
}

/* Flags command ci for another round, routed again by its slot. */
static void schedule(sl_batch *b, sl__cmd *cmd, int backoff)
{
    cmd->flags |= SL__F_RESEND | SL__F_REROUTE;
    cmd->flags &= (uint16_t)~(SL__F_DONE | SL__F_ASKING);
    cmd->src = SL__SRC_NONE;
    cmd->rec_count = 0;
    b->resends++;
    b->reroute = 1;
    if (backoff) b->backoff = 1;
    b->client->stats.retries++;
}

int sl__failover_lost_cmd(sl_batch *b, uint32_t ci, int sent, sl_err_kind kind, const char *msg)
{
    sl_client *c = b->client;
    sl__cmd *cmd = &b->cmds[ci];
    uint64_t now = sl__now_ms();
    int retry = c->mode == SL_MODE_CLUSTER && b != c->disco && kind == SL_ERR_IO && cmd->slot >= 0 &&
                (cmd->route == SL_ROUTE_KEY || cmd->route == SL_ROUTE_SLOT) && !(cmd->flags & SL__F_MULTI) &&
                now < b->deadline;
    int maybe_ran = 0;
    if (retry && sent) {
        /* Sent: the server may have run it. A read runs again harmlessly, once; a write only
         * when the caller accepted that it may run twice. */
        if (cmd->flags & SL__F_RETRIED) retry = 0;
        else if (!(cmd->flags & SL__F_READ) && !c->opts.retry_writes) retry = 0, maybe_ran = 1;
    } else if (retry) {
        /* Never sent: worth waiting for when the map may move the slot — its owner has a
         * replica to promote, or the map names another owner already. A lone primary that
         * is down fails its commands at once. */
        uint16_t owner = c->topo.slot_node[cmd->slot];
        if (owner == cmd->node && !has_replica(c, owner)) retry = 0;
        if (b->retry_until == 0) b->retry_until = now + SL__FAILOVER_WAIT_MS;
        if (now >= b->retry_until) retry = 0;
    } else if (sent && !(cmd->flags & SL__F_READ) && kind == SL_ERR_IO) {
        maybe_ran = 1;
    }
    if (!retry)
        return sl__batch_add_error(b, ci, kind, "%s%s", msg,
                                   maybe_ran ? " (the command was sent: it may have been executed)" : "");
    uint16_t was = cmd->node;
    int on_replica = was < c->topo.nnodes && !c->topo.nodes[was]->primary;
    if (sent) cmd->flags |= SL__F_RETRIED | SL__F_TOPRIMARY;
    /* A read that lost a replica goes to the primary at once; a lost primary is waited for
     * (its replica's promotion takes the cluster's node timeout). */
    schedule(b, cmd, !on_replica);
    return 0;
}

void sl__failover_before_round(sl_batch *b)
{
    sl_client *c = b->client;
    if (!b->reroute || c->async_hooks || b == c->disco) return;
    sl__topo_maybe_refresh(c);
}

void sl__failover_reroute(sl_batch *b, sl__cmd *cmd)
{
    sl_client *c = b->client;
    cmd->flags &= (uint16_t)~SL__F_REROUTE;
    if (cmd->slot < 0 || cmd->slot >= SL_SLOTS) return;
    uint16_t node = c->topo.slot_node[cmd->slot];
    if (node == SL__NO_NODE) return; /* keep the old target: it answers or fails again */
    if ((cmd->flags & SL__F_READ) && !(cmd->flags & SL__F_TOPRIMARY)) node = sl__failover_read_node(c, node);
    cmd->node = node;
}

static int starts(const uint8_t *m, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len >= n && memcmp(m, word, n) == 0 && (len == n || m[n] == ' ');
}

int sl__failover_reply(sl_batch *b, uint32_t ci, const uint8_t *m, size_t len)
{
    sl_client *c = b->client;
    sl__cmd *cmd = &b->cmds[ci];
    int loading = starts(m, len, "LOADING"), masterdown = starts(m, len, "MASTERDOWN");
    int readonly = starts(m, len, "READONLY"), unblocked = starts(m, len, "UNBLOCKED");
    if (!(loading || masterdown || readonly || unblocked) || cmd->slot < 0) return 0;
    if (cmd->redirects >= (uint8_t)c->opts.max_redirects) return -1; /* the reply stays */
    cmd->redirects++;
    const sl__node *n = cmd->node < c->topo.nnodes ? c->topo.nodes[cmd->node] : NULL;
    if ((loading || masterdown) && n && !n->primary) {
        /* A replica still loading its data, or cut off from its primary (and told not to
         * serve stale data): the primary answers instead, now. */
        cmd->flags |= SL__F_TOPRIMARY;
        schedule(b, cmd, 0);
        return 1;
    }
    /* A loading primary: wait and try again. -READONLY: the node we took for the primary
     * is a replica now (a failover demoted it); -UNBLOCKED: a blocked command was released
     * because its node changed role, not run. Both: the map is stale. */
    if (readonly || unblocked || masterdown) c->topo.refresh_wanted |= SL__REFRESH_MOVED;
    if (readonly || unblocked) cmd->flags |= SL__F_TOPRIMARY;
    schedule(b, cmd, 1);
    return 1;
}
