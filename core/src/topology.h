/* topology.h: the nodes and the slot map (topology.c). Nothing here is part of the ABI. */
#ifndef SL_TOPOLOGY_H
#define SL_TOPOLOGY_H

#include <stdint.h>
#include "conn.h"
#include "slot.h"

#define SL__NO_NODE 0xffffu

/* sl__topo_discover: the node answered that it is not a cluster (positive: not an error). */
#define SL__NOT_CLUSTER 1

/* A replica as the slot map names it; node is its entry in the node list (its connection
 * serves read-only commands under read_from, failover.c). */
typedef struct sl__replica {
    uint16_t primary;            /* node index of its primary */
    uint16_t node;               /* node index of the replica itself */
    char addr[SL__HOST_MAX + 8]; /* "host:port" */
} sl__replica;

/* Why a refresh is wanted (sl__topology.refresh_wanted, bits). */
#define SL__REFRESH_MOVED 1      /* a MOVED, CLUSTERDOWN, -READONLY...: at most once a second */
#define SL__REFRESH_LOST  2      /* a primary was lost: every SL__REFRESH_LOST_MS while one is down */
#define SL__REFRESH_LOST_MS 100

typedef struct sl__topology {
    sl__node **nodes;            /* stable pointers */
    size_t nnodes, cap;
    uint16_t slot_node[SL_SLOTS];/* node index per slot, SL__NO_NODE when unknown */
    uint16_t default_node;       /* keyless commands; the seed that answered */
    uint64_t last_refresh_ms;
    int refresh_wanted;          /* SL__REFRESH_* bits: a MOVED or a lost node asks for a refresh */
    uint64_t read_rr;            /* SL_READ_REPLICAS_ROUND_ROBIN's counter */
    uint16_t refresh_next;       /* the event-loop driver's next node to ask */
    sl__replica *replicas;       /* of the current map (CLUSTER SLOTS / SHARDS; none from NODES) */
    size_t nreplicas, replicas_cap;
    sl__replica *staged;         /* the map being applied; swapped in when it is committed */
    size_t nstaged, staged_cap;
} sl__topology;

void sl__topo_init(sl__topology *t);
void sl__topo_free(sl_client *c);
int sl__topo_node(sl_client *c, const char *host, int port, uint16_t *index); /* find or add */
int sl__topo_node_addr(sl_client *c, const char *addr, size_t len, uint16_t *index);
int sl__topo_apply_slots(sl_client *c, uint16_t asked, const sl_reply *r, size_t n, const uint8_t *data);
int sl__topo_apply_shards(sl_client *c, uint16_t asked, const sl_reply *r, size_t n, const uint8_t *data);
int sl__topo_apply_nodes_text(sl_client *c, uint16_t asked, const uint8_t *text, size_t len);
int sl__topo_discover(sl_client *c, int *is_cluster);      /* from the known nodes, then the seeds */
void sl__topo_maybe_refresh(sl_client *c);                 /* throttled: sl__topo_refresh_due */
/* A refresh is wanted (or periodic) and its rate limit allows one now. */
int sl__topo_refresh_due(const sl_client *c, uint64_t now);
/* The node the event-loop driver asks next: one not down, another one after each call. */
uint16_t sl__topo_refresh_node(sl_client *c);
/* A map from a refresh was applied: counts it by cause; still wanted while a primary is down. */
void sl__topo_refreshed(sl_client *c);
uint16_t sl__topo_random_primary(sl_client *c);

#endif
