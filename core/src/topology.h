/* topology.h: the nodes and the slot map (topology.c). Nothing here is part of the ABI. */
#ifndef SL_TOPOLOGY_H
#define SL_TOPOLOGY_H

#include <stdint.h>
#include "conn.h"
#include "slot.h"

#define SL__NO_NODE 0xffffu

/* sl__topo_discover: the node answered that it is not a cluster (positive: not an error). */
#define SL__NOT_CLUSTER 1

/* A replica as the slot map names it (no connection: commands go to primaries). */
typedef struct sl__replica {
    uint16_t primary;            /* node index of its primary */
    char addr[SL__HOST_MAX + 8]; /* "host:port" */
} sl__replica;

typedef struct sl__topology {
    sl__node **nodes;            /* stable pointers */
    size_t nnodes, cap;
    uint16_t slot_node[SL_SLOTS];/* node index per slot, SL__NO_NODE when unknown */
    uint16_t default_node;       /* keyless commands; the seed that answered */
    uint64_t last_refresh_ms;
    int refresh_wanted;          /* a MOVED or a lost node asks for a refresh */
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
void sl__topo_maybe_refresh(sl_client *c);                 /* throttled: at most once a second */
uint16_t sl__topo_random_primary(sl_client *c);

#endif
