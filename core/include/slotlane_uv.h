/*
 * slotlane_uv.h — the asynchronous API of libslotlane: the same batch engine as
 * sl_batch_exec (routing, per-node buffers, every node written before any is read,
 * redirects, reply records), driven by a libuv loop instead of a blocking poll.
 *
 * Two ways to run it:
 *  - on a loop the caller owns (Node's own loop): sl_client_attach_loop, then
 *    sl_batch_exec_async and sl_client_detach_loop, all on that loop's thread;
 *  - on a loop thread the core runs itself: sl_loop_new, then sl_loop_submit from any
 *    thread (a lock-free queue and uv_async_send), sl_loop_free to stop and join.
 *
 * It uses only the libuv 1.44 API. Callbacks run on the loop's thread, exactly once per
 * execution, also when the execution is cut short (SL_ETIMEOUT, SL_ECANCELLED at
 * detach or sl_loop_free). During an execution the batch belongs to the engine: do not
 * touch it until its callback. Idle connections do not keep the loop alive.
 * A client is not usable after fork(), in the parent's loop thread or otherwise.
 *
 * Thread rules while a client is attached (either way): the executions run on the loop
 * thread; other threads may still call sl_batch_new, sl_batch_free, sl_batch_reset and
 * sl_batch_append / sl_batch_append_argv with a NULL route on batches that are not in
 * flight (they touch only the batch), serialized per batch by the caller, plus
 * sl_client_cancel and sl_loop_submit. Everything else on the client belongs to the loop.
 */
#ifndef SLOTLANE_UV_H
#define SLOTLANE_UV_H

#include <uv.h>

#include "slotlane.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called once per execution, on the loop thread: status as sl_batch_exec returns it,
 * sizes as sl_batch_exec fills them; read the replies with sl_batch_replies or
 * sl_batch_copy_out from inside the callback or later (until the batch's next use). */
typedef void (*sl_exec_cb)(sl_batch *batch, int status, const sl_sizes *sizes, void *arg);

/* ------------------------------------------------------ on the caller's loop */

/* Drives the client from `loop` from now on. The client must be idle (no execution);
 * afterwards only the calls of this header may run executions on it, on the loop's
 * thread. SL_ESTATE if already attached. */
SL_EXTERN int sl_client_attach_loop(sl_client *client, uv_loop_t *loop);

/* Starts executing the batch's queued commands (sl_batch_append*) and returns at once;
 * cb runs when every command has its reply record. timeout_ms as in sl_batch_exec.
 * Several batches of one client may be in flight at once; they share the connections.
 * SL_ESTATE if the client is not attached or the batch is already in flight, SL_EINVAL
 * for NULL arguments or no commands (cb is then not called). */
SL_EXTERN int sl_batch_exec_async(sl_batch *batch, int timeout_ms, sl_exec_cb cb, void *arg);

/* Called when detaching is complete: every handle is closed; the client may be freed or
 * used with the blocking API again. */
typedef void (*sl_detach_cb)(sl_client *client, void *arg);

/* Stops driving the client: executions in flight complete with SL_ECANCELLED (their
 * callbacks run before this returns), then the loop handles are closed; done_cb (may be
 * NULL) runs from the loop once the last close callback has run. */
SL_EXTERN int sl_client_detach_loop(sl_client *client, sl_detach_cb done_cb, void *arg);

/* ------------------------------------------------------ on the core's loop thread */

typedef struct sl_loop sl_loop;

/* Starts a thread running its own libuv loop. Free with sl_loop_free. */
SL_EXTERN int sl_loop_new(sl_loop **out);

/* From any thread: queues the batch for execution on the loop thread (the client is
 * attached to the loop on first use and stays attached until sl_loop_detach or
 * sl_loop_free). cb runs on the loop thread. Between submitting and the callback, the
 * client must not be used by other threads except through sl_loop_submit and
 * sl_client_cancel. SL_ESTATE after sl_loop_free started. */
SL_EXTERN int sl_loop_submit(sl_loop *loop, sl_batch *batch, int timeout_ms, sl_exec_cb cb, void *arg);

/* From any thread but the loop's: detaches the client from the loop and waits until
 * that is done (its executions complete with SL_ECANCELLED first). Afterwards the client
 * may be used with the blocking API or freed. */
SL_EXTERN int sl_loop_detach(sl_loop *loop, sl_client *client);

/* From any thread but the loop's: stops the loop — every execution in flight completes
 * with SL_ECANCELLED, every client is detached, every handle closed — joins the thread
 * and frees the loop. NULL is a no-op. */
SL_EXTERN void sl_loop_free(sl_loop *loop);

#ifdef __cplusplus
}
#endif

#endif /* SLOTLANE_UV_H */
