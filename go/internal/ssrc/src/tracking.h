/* tracking: CLIENT TRACKING / CACHING / TRACKINGINFO / GETREDIR, Redis 7.0's client
 * side caching, per shard as per node in Redis Cluster: a shard remembers which of its
 * clients read which of its keys (or, BCAST, which prefixes they want), and when such
 * a key is modified (sv_signal_modified_key: a write, an expiry, a flush) sends
 * `invalidate` — a RESP3 push on the client's connection, or through REDIRECT to a
 * client of the same shard: a RESP3 push, or to a RESP2 client with subscriptions
 * the `message` of `__redis__:invalidate`. With forwarding (one-port mode,
 * --misrouted forward) a read that runs on another shard is remembered there with the
 * client's home shard, whose thread writes the invalidation; REDIRECT and BCAST then
 * reach clients of any shard (tracking.c: the shared registries). */
#ifndef SV_TRACKING_H
#define SV_TRACKING_H

#include "server.h"

struct sv_conn;

/* CLIENT TRACKING|CACHING|TRACKINGINFO|GETREDIR (argv[1] the subcommand). */
void sv_client_tracking(sv_ctx *c, int argc, sv_str *argv);
void sv_client_caching(sv_ctx *c, int argc, sv_str *argv);
void sv_client_trackinginfo(sv_ctx *c);
void sv_client_getredir(sv_ctx *c);
/* After a command of a tracking session: remembers the keys a read-only command
 * read (unless BCAST, or OPTIN without CACHING yes, or OPTOUT with CACHING no). */
void sv_tracking_after_call(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv);
/* Before a command runs: who runs it (NOLOOP), its invalidations of its own
 * connection wait until its reply is written (after_command). */
void sv_tracking_before_command(sv_shard *sh, sv_session *s);
void sv_tracking_after_command(sv_shard *sh, sv_session *s, int argc, sv_str *argv, sv_buf *out);
/* A key of the shard was modified / the whole keyspace flushed. */
void sv_tracking_invalidate(sv_shard *sh, sv_str key);
void sv_tracking_flush(sv_shard *sh);
/* Forwarding: whether the session's next read is to be remembered (tracking on, not
 * BCAST, OPTIN/OPTOUT and CACHING allowing it) — the sender decides, the owner
 * remembers; the stand-in state a forwarded request's session carries at the owner
 * (its reads remembered for client ID `s.id` of shard `home`; the shard thread's own
 * static, valid until the next call). */
int sv_tracking_wants_reads(const sv_session *s);
struct sv_trk *sv_tracking_standin(int home);
/* An invalidation a shard sent for its client `id` (sv_fwd_send_tracking; key NULL:
 * a flush): how is SV_TRK_* — for a key that client read (or matching its BCAST
 * prefix: SV_TRK_BCAST), caused by its own command (SV_TRK_SELF: NOLOOP), or for it as
 * the REDIRECT client of another (SV_TRK_REDIRECT). Nothing happens if it left. */
enum { SV_TRK_SELF = 1, SV_TRK_BCAST = 2, SV_TRK_REDIRECT = 4 };
void sv_tracking_deliver(sv_shard *sh, uint64_t id, int how, const sv_str *key);
/* The shared registry of connections (forwarding with several shards only). */
void sv_tracking_conn_opened(sv_shard *sh, uint64_t id);
void sv_tracking_conn_closed(sv_shard *sh, sv_session *s);
/* BCAST clients registered in the server (forwarding): a modified key is checked
 * against their prefixes even on a shard without tracking state. */
/* CLIENT TRACKING OFF (and RESET). */
void sv_tracking_off(sv_shard *sh, sv_session *s);
/* A session's tracking state is freed with it. */
void sv_tracking_free_session(sv_shard *sh, sv_session *s);
/* Sessions of this shard with tracking on (INFO clients tracking_clients). */
int sv_tracking_clients(sv_shard *sh);
void sv_tracking_free_shard(sv_shard *sh);

#endif
