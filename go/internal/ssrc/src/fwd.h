/* fwd: --misrouted forward. A shard runs commands for keys it does not own on the
 * owner shard's thread and writes the replies back in command order.
 *
 * Transport: one lock-free single-producer/single-consumer queue per ordered pair
 * of shards (an intrusive list: the producer pushes a whole batch with one CAS, the
 * consumer takes everything with one exchange). A loop turn collects its messages
 * per target and publishes them in a uv_check callback at the end of the turn; the
 * target is woken (uv_async_send) only when its queue from us was empty, so at most
 * once per target per turn and not at all while it still has our previous batch.
 * Replies travel back the same way in the same message.
 *
 * Order: a connection with a command waiting for another shard collects the replies
 * of later commands in a queue of slots (sv_pend); the completed prefix is moved to
 * the output buffer as replies return, and a read batch's replies are written once,
 * when its last slot drains (sv_conn.hold).
 *
 * Cost: messages and slots are recycled on the receiving shard's thread with their
 * buffers, so forwarding allocates nothing per command once warm.
 *
 * Multi-key commands across shards: MGET (merged in key order), MSET (OK; atomic per
 * shard only), DEL UNLINK EXISTS TOUCH (sum) are split per owner; DBSIZE (sum),
 * KEYS (concatenated), FLUSHALL/FLUSHDB (OK) fan out to every shard. MSETNX RENAME
 * RENAMENX LMOVE RPOPLPUSH SMOVE and the set operations run as a sequence of steps
 * coordinated by the receiving shard (fwd_multi.c), holding the connection's slot.
 *
 * Backpressure: a shard keeps at most --forward-queue requests in flight to each
 * other shard. A command that would exceed it stays in the read buffer and its
 * connection stops reading until that shard's replies come back. Replies and the
 * later steps of a coordinated command are never held back, and a shard runs the
 * requests it receives without waiting for anything, so two shards cannot wait
 * for each other. */
#ifndef SV_FWD_H
#define SV_FWD_H

#include "conn.h"

void sv_fwd_init_shard(sv_shard *sh);  /* in the shard's loop, before it runs */
void sv_fwd_close_shard(sv_shard *sh); /* in on_stop */
/* After every shard thread has exited: frees the messages still queued. */
void sv_fwd_cleanup(void);

/* Runs or forwards one request of the connection. Returns 1 (nothing done, the
 * connection paused) when a shard it needs has --forward-queue requests in flight:
 * the caller keeps the request and runs it again from sv_conn_resume. */
int sv_fwd_process(sv_conn *c, int argc, sv_str *argv);
/* Tells the shards keeping the connection's watches that were released (all:
 * every one of them, the connection is closing) to drop them (slotlane.unwatch). */
void sv_fwd_release_watches(sv_conn *c, int all);
/* A closing connection leaves the paused list. */
void sv_fwd_unpause(sv_conn *c);

/* For the coordinator (fwd_multi.c): a reply slot of the connection computed by a
 * coordinator (state is freed with sv_fwdm_free when the slot is), the steps it
 * sends (each a request to the owner shard, answered in RESP2 through
 * sv_fwdm_reply with the same step number), and the end (the reply is in
 * sv_fwd_coord_out). While a coordinator runs, the connection's later commands that
 * use one of its keys or the whole keyspace wait (its steps go to several shards; such
 * a command must not overtake them); the others run, their replies in order. */
struct sv_pend *sv_fwd_coord_slot(sv_conn *c, void *state);
void sv_fwd_coord_send(sv_conn *c, struct sv_pend *p, int step, int owner, int argc, sv_str *argv);
/* A step that may park at the owner (a part of a cross-shard XREAD BLOCK; blocking.h's
 * primary or secondary part), answered in the client's protocol; skipped (an empty
 * reply) for a client dropped at its output limit. */
void sv_fwd_coord_park(sv_conn *c, struct sv_pend *p, int step, int owner, int argc, sv_str *argv, int secondary);
/* A blocking coordinated command: the connection runs nothing else until unhold (as
 * a parked command holds it); state is what sv_fwdm_closing gets if it closes first. */
void sv_fwd_coord_hold(sv_conn *c, void *state);
void sv_fwd_coord_unhold(sv_conn *c);
/* After a coordinator finished outside a step reply (a part parked on this shard
 * answered): its reply leaves when it is the first owed. */
void sv_fwd_coord_settle(sv_conn *c, struct sv_pend *p);
sv_buf *sv_fwd_coord_out(struct sv_pend *p);
void sv_fwd_coord_finish(sv_conn *c, struct sv_pend *p);
/* A slot for a reply produced later (a parked command behind forwarded ones): its
 * buffer, and its completion (drains it when it is the first owed). */
struct sv_pend *sv_fwd_later_slot(sv_conn *c);
sv_buf *sv_fwd_later_out(struct sv_pend *p);
void sv_fwd_later_done(sv_conn *c, struct sv_pend *p);
/* CLIENT TRACKING (tracking.c): an invalidation for client `id` of shard `target`
 * (key NULL: a flush), in this turn's batch to it, handed to sv_tracking_deliver there
 * (how: SV_TRK_*). */
void sv_fwd_send_tracking(sv_shard *sh, int target, uint64_t id, int how, const sv_str *key);
/* Takes the tracking messages other shards sent here now (the rest of what arrived
 * runs in the next on_async, in order). */
void sv_fwd_take_tracking(sv_shard *sh);
/* Where a reply produced now must go to stay in order (out, or a new slot). */
sv_buf *sv_fwd_reply_buf(sv_conn *c);
/* CLIENT REPLY OFF/SKIP: drops the reply of the command just processed — what it
 * wrote past len into the slot that was last (tail; NULL: the output buffer) and
 * every slot made after tail, whose replies are dropped when they come back. */
void sv_fwd_mute_since(sv_conn *c, struct sv_pend *tail, size_t len);
void sv_fwd_free_pending(sv_conn *c);

/* A script past busy-reply-threshold on this shard (script.c's busy mode): the
 * requests other shards forwarded here are answered now by answer (-BUSY, or the
 * SCRIPT/FUNCTION KILL they carry) and sent back at once, as the shard's own clients
 * are; replies arriving for this shard's connections and coordinated steps (which
 * must run) wait until the script is over. */
typedef int sv_fwd_busy_fn(void *ud, uint64_t client_id, sv_reply *r, int argc, sv_str *argv); /* 0: wait too */
void sv_fwd_busy_service(sv_shard *sh, sv_fwd_busy_fn *answer, void *ud);

#endif
