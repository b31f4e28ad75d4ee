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
 * KEYS (concatenated), FLUSHALL/FLUSHDB (OK) fan out to every shard. Other
 * multi-key commands whose keys live on different shards get CROSSSLOT. */
#ifndef SV_FWD_H
#define SV_FWD_H

#include "conn.h"

void sv_fwd_init_shard(sv_shard *sh);  /* in the shard's loop, before it runs */
void sv_fwd_close_shard(sv_shard *sh); /* in on_stop */
/* After every shard thread has exited: frees the messages still queued. */
void sv_fwd_cleanup(void);

/* Runs or forwards one request of the connection. */
void sv_fwd_process(sv_conn *c, int argc, sv_str *argv);
/* Where a reply produced now must go to stay in order (out, or a new slot). */
sv_buf *sv_fwd_reply_buf(sv_conn *c);
void sv_fwd_free_pending(sv_conn *c);

#endif
