/* failover: replica reads and what a lost node or a failover asks of the engine
 * (failover.c). Nothing here is part of the ABI. */
#ifndef SL_FAILOVER_H
#define SL_FAILOVER_H

#include "batch.h"

/* How long never-sent commands keep being routed again after their node was lost, when the
 * execution has no deadline: longer than a cluster-node-timeout plus a promotion. */
#define SL__FAILOVER_WAIT_MS 20000

/* Reports an event to the client's on_event callback, if any. */
void sl__event(sl_client *c, sl_event_type type, const char *addr);

/* conn.c: node n's working connection broke, or a connect to it failed (once per outage:
 * SL_EVENT_NODE_DOWN; a primary asks for a fast refresh). */
void sl__failover_node_lost(sl_client *c, sl__node *n);
/* conn.c: node n connected; reports SL_EVENT_NODE_UP when it was down. */
void sl__failover_node_up(sl_client *c, sl__node *n);

/* topology.c and redirect.c: node `to`, a replica of `from` in the map, serves a slot of
 * `from` now: SL_EVENT_FAILOVER once per promotion, counted in stats.failovers. */
void sl__failover_promoted(sl_client *c, uint16_t from, uint16_t to);

/* batch.c: where a read-only command of the slot served by `primary` goes under the
 * client's read_from: one of the primary's usable replicas, else the primary. */
uint16_t sl__failover_read_node(sl_client *c, uint16_t primary);

/* engine.c: command ci lost its node (kind/msg: why; sent: its bytes may have reached the
 * socket). Either schedules it again (routed by slot in a later round, with backoff) or
 * gives it its error record. Returns 0 or SL_ENOMEM. */
int sl__failover_lost_cmd(sl_batch *b, uint32_t ci, int sent, sl_err_kind kind, const char *msg);

/* engine.c: before a round of b, when a command waits to be routed again: the blocking
 * driver refreshes the map (rate-limited; the event-loop driver refreshes in the
 * background). */
void sl__failover_before_round(sl_batch *b);

/* engine.c: a command flagged SL__F_REROUTE is routed again by its slot now. */
void sl__failover_reroute(sl_batch *b, sl__cmd *cmd);

/* redirect.c: -LOADING, -MASTERDOWN, -READONLY, -UNBLOCKED on command ci: 1 when the
 * reply asked for a resend (the command is flagged for the next round), -1 when it would
 * have but the command reached the redirect limit, 0 for any other reply. */
int sl__failover_reply(sl_batch *b, uint32_t ci, const uint8_t *m, size_t len);

#endif
