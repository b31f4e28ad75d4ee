/* pubsub: PUBLISH/SUBSCRIBE/PSUBSCRIBE/UNSUBSCRIBE/PUNSUBSCRIBE, the sharded
 * SPUBLISH/SSUBSCRIBE/SUNSUBSCRIBE, PUBSUB, and the delivery keyspace notifications
 * use (sv_pubsub_publish).
 *
 * A subscription lives on the shard of its connection (which never forwards these
 * commands). A message published on any shard reaches the subscribers of every shard:
 * a registry shared by the shards (one read-write lock; written only by
 * (un)subscribes) says how many subscribers each channel and pattern has on each
 * shard, so a publisher knows the receivers' count (its reply, PUBSUB NUMSUB, ...)
 * and which shards to send the message to. Messages for another shard are batched
 * per loop turn and target, published at the end of the turn with one CAS, and the
 * target is woken only when its inbox was empty — as forwarding does (fwd.c).
 *
 * Subscribers get their messages at the end of the loop turn (one write each per
 * turn). One whose unsent output passes `client-output-buffer-limit pubsub` (hard
 * limit) is dropped: its shard stops writing to it at once and closes it at the end
 * of the turn. */
#ifndef SV_PUBSUB_H
#define SV_PUBSUB_H

#include "server.h"

struct sv_conn;

/* Delivers msg on a classic channel to every subscriber of the server (channel and
 * patterns); returns the number of receivers. */
long long sv_pubsub_publish(sv_shard *sh, sv_str channel, sv_str msg);

/* Whether the session is in RESP2 subscribed mode (only (P|S)SUBSCRIBE,
 * (P|S)UNSUBSCRIBE, PING, QUIT, RESET allowed). */
int sv_pubsub_resp2_restricted(const sv_session *s);
/* PING in RESP2 subscribed mode answers ["pong", arg]. */
int sv_pubsub_subscribed(const sv_session *s);
/* RESET and a closing connection: every subscription dropped. */
void sv_pubsub_unsubscribe_all(sv_shard *sh, sv_session *s);
void sv_pubsub_conn_closed(struct sv_conn *c);

/* What a RESP2 connection with subscriptions may still send. */
int sv_pubsub_allowed_cmd(sv_cmd_fn *fn);
/* INFO stats: messages sent to other shards, wakeups, messages taken (all shards). */
void sv_pubsub_stats(uint64_t *sent, uint64_t *wakeups, uint64_t *received);

/* INFO stats pubsub_channels, pubsub_patterns, pubsubshard_channels: the channels and
 * patterns with subscribers in the whole server (as PUBSUB CHANNELS / NUMPAT count). */
void sv_pubsub_info_counts(long long *channels, long long *patterns, long long *shard_channels);

/* Subscriptions of the session (CLIENT LIST sub/psub/ssub). */
void sv_pubsub_counts(const sv_session *s, int *sub, int *psub, int *ssub);

/* Hard output limit of subscribers in bytes (0: none); CONFIG SET/GET. */
#define sv_pubsub_limit (sv_cur->pubsub_limit)
#define sv_pubsub_soft_limit (sv_cur->pubsub_soft_limit) /* kept for CONFIG GET */
#define sv_pubsub_soft_secs (sv_cur->pubsub_soft_secs)

void sv_pubsub_init(void);   /* before the shards start (sv_server_init_state) */
void sv_pubsub_free_state(sv_server *s); /* the registry, after sv_pubsub_cleanup */
void sv_pubsub_cleanup(void); /* after every shard thread has exited */
void sv_pubsub_init_shard(sv_shard *sh);
void sv_pubsub_close_shard(sv_shard *sh);

#endif
