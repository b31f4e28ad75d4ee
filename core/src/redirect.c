/* redirect: what a cluster's error reply asks of the engine. MOVED patches the slot table
 * at once and asks for a (throttled) refresh, ASK resends once to the named node after
 * ASKING, TRYAGAIN and CLUSTERDOWN resend after a backoff; past the redirect limit the
 * reply stays, marked SL_ERR_REDIRECTS; what a failover answers (-LOADING, -MASTERDOWN,
 * -READONLY, -UNBLOCKED) is failover.c's. The engine calls sl__redirect_check on every error
 * reply of a cluster execution and resends the commands it marked in the next round. */
#include "redirect.h"
#include "failover.h"

#include <stdio.h>
#include <string.h>

static int parse_uint(const uint8_t *p, size_t len, size_t *pos, long *out)
{
    long v = 0;
    size_t i = *pos, start = i;
    while (i < len && p[i] >= '0' && p[i] <= '9' && v < 100000000) v = v * 10 + (p[i++] - '0');
    if (i == start) return -1;
    *pos = i;
    *out = v;
    return 0;
}

void sl__redirect_check(sl_batch *b, uint32_t ci, sl_reply *r)
{
    sl_client *c = b->client;
    sl__cmd *cmd = &b->cmds[ci];
    const uint8_t *m = b->data.ptr + r->offset;
    size_t len = r->len;
    int moved = len > 6 && memcmp(m, "MOVED ", 6) == 0;
    int ask = !moved && len > 4 && memcmp(m, "ASK ", 4) == 0;
    int again = !moved && !ask &&
                ((len >= 8 && memcmp(m, "TRYAGAIN", 8) == 0) || (len >= 11 && memcmp(m, "CLUSTERDOWN", 11) == 0));
    if (!(moved || ask || again)) {
        if (sl__failover_reply(b, ci, m, len) < 0) r->flags = SL_ERR_REDIRECTS;
        return;
    }
    if (cmd->redirects >= (uint8_t)c->opts.max_redirects) {
        r->flags = SL_ERR_REDIRECTS;
        return;
    }
    uint16_t node = cmd->node;
    if (moved || ask) {
        size_t pos = moved ? 6 : 4;
        long slot;
        if (parse_uint(m, len, &pos, &slot) || pos >= len || m[pos] != ' ' || slot >= SL_SLOTS) return;
        pos++;
        if (sl__topo_node_addr(c, (const char *)m + pos, len - pos, &node) != 0) {
            /* "MOVED 3999 :6380": an empty host means the node that answered. */
            char addr[SL__HOST_MAX + 8];
            int n = snprintf(addr, sizeof addr, "%s%.*s", c->topo.nodes[cmd->node]->host, (int)(len - pos),
                             (const char *)m + pos);
            if (n <= 0 || (size_t)n >= sizeof addr || sl__topo_node_addr(c, addr, (size_t)n, &node) != 0) return;
        }
        if (moved) {
            /* MOVED to a replica of the slot's owner: a promotion (topology.c keeps who
             * replicates whom). */
            sl__failover_promoted(c, c->topo.slot_node[slot], node);
            c->topo.slot_node[slot] = node;
            c->topo.nodes[node]->primary = 1;
            c->topo.refresh_wanted = 1;
            c->stats.moved++;
            cmd->flags &= (uint16_t)~SL__F_ASKING;
        } else {
            c->stats.ask++;
            cmd->flags |= SL__F_ASKING;
        }
    } else {
        c->stats.tryagain++;
        b->backoff = 1;
        if (len >= 11 && memcmp(m, "CLUSTERDOWN", 11) == 0) c->topo.refresh_wanted = 1;
    }
    cmd->node = node;
    cmd->redirects++;
    cmd->flags |= SL__F_RESEND;
    cmd->flags &= (uint16_t)~SL__F_DONE;
    cmd->src = SL__SRC_NONE;
    b->resends++;
}
