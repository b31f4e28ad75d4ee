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
 * A client or loop is not usable after fork(): in a child every submission fails with
 * SL_EFORK (the loop thread is the parent's), and sl_loop_free only releases memory.
 *
 * Thread rules while a client is attached (either way): the executions run on the loop
 * thread; other threads may still call sl_batch_new, sl_batch_free, sl_batch_reset and
 * sl_batch_append / sl_batch_append_argv with a NULL route on batches that are not in
 * flight (they touch only the batch), serialized per batch by the caller, sl_scan_new /
 * sl_scan_free / sl_scan_done / sl_scan_errmsg on scans with no page in flight (they touch
 * only the scan and the client's allocator), plus sl_client_cancel and sl_loop_submit*.
 * Everything else on the client belongs to the loop.
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

/* ------------------------------------------------------ completion queues */

/* A completion queue: batches submitted with sl_loop_submit_cq complete into it on the
 * loop thread, and any thread takes them out — by waiting (sl_cq_wait), or from an event
 * loop that watches sl_cq_fd() (asyncio's add_reader, an epoll set) and drains. The
 * descriptor becomes readable only when the queue goes from empty to non-empty and is
 * cleared when a drain empties it, so a burst of completions costs one wake-up and one
 * drain takes many. Every submission that sl_loop_submit_cq accepted (returned 0)
 * completes exactly once: with its replies, its error (SL_ETIMEOUT, SL_EIO...), or
 * SL_ECANCELLED (sl_batch_cancel, sl_client_cancel, sl_loop_detach, sl_loop_free,
 * sl_client_free). Thread rules: every sl_cq_* call is safe from any thread at once. */
typedef struct sl_cq sl_cq;

/* One completion: the batch (its replies are read with sl_batch_replies /
 * sl_batch_copy_out, and it may be appended to and submitted again once its completion
 * has been taken), the token given at submission, the execution's code and sizes. */
typedef struct sl_completion {
    sl_batch *batch;
    void *token;
    int status;            /* as sl_batch_exec returns it */
    int reserved;          /* 0 */
    sl_sizes sizes;
} sl_completion;

/* Makes an empty queue (*out NULL on failure: SL_ENOMEM, SL_EIO when no eventfd). */
SL_EXTERN int sl_cq_new(sl_cq **out);

/* Frees the queue and the completions still in it. No submission into it may be
 * pending (every one must have completed: free the loop, or detach its clients, first).
 * NULL is a no-op. */
SL_EXTERN void sl_cq_free(sl_cq *cq);

/* The descriptor to watch for readability (an eventfd, owned by the queue: do not read
 * or close it). Readable while completions wait; the drain that empties the queue clears it. */
SL_EXTERN int sl_cq_fd(const sl_cq *cq);

/* Moves up to cap completions, oldest first, into out and returns how many (0: none
 * waiting). Never blocks. */
SL_EXTERN size_t sl_cq_drain(sl_cq *cq, sl_completion *out, size_t cap);

/* As sl_cq_drain, but waits up to timeout_ms (-1: without limit) for the first
 * completion when none is waiting. Returns how many were moved (0 after the timeout). */
SL_EXTERN size_t sl_cq_wait(sl_cq *cq, sl_completion *out, size_t cap, int timeout_ms);

/* What sl_loop_submit_cq does when the client's in-flight bound
 * (sl_client_options.max_inflight_batches / max_inflight_bytes) is reached: */
#define SL_SUBMIT_WAIT 0       /* block the submitting thread until completions make room
                                  (on the loop thread itself it fails fast instead) */
#define SL_SUBMIT_FAIL_FAST 1  /* return SL_EBUSY at once; nothing is queued */

/* From any thread: queues the batch for execution on the loop thread, like
 * sl_loop_submit, and completes it into cq with token. Until its completion is taken from
 * cq the batch belongs to the engine: do not append to, reset, free or resubmit it (only
 * sl_batch_cancel is allowed). Returns 0 (then it completes exactly once), or, with
 * nothing queued: SL_EINVAL (NULL argument, no commands, bad timeout or flags),
 * SL_ESTATE (sl_loop_free started, or the batch is still in flight), SL_EBUSY (the
 * bound is reached and flags has SL_SUBMIT_FAIL_FAST), SL_EFORK (the client or the
 * loop was made before a fork()). No error message is written to the client (another
 * thread may own it): the code says it. */
SL_EXTERN int sl_loop_submit_cq(sl_loop *loop, sl_batch *batch, int timeout_ms, sl_cq *cq, void *token,
                                int flags);

/* From any thread: cancels the batch's current execution (sl_loop_submit_cq,
 * sl_loop_submit or sl_batch_exec_async) and no other. Its commands without a reply get
 * SL_ERR_CANCELLED records and it completes with SL_ECANCELLED (replies that had already
 * arrived are kept); the replies it is still owed are read and dropped on their
 * connections, so the other batches sharing them are untouched and no connection is
 * closed. A cancel of a batch that is not in flight has no effect, except when it races
 * with the batch's next submission, which it may then cancel: cancel only what you
 * submitted and have not taken the completion of. Returns 0, or SL_EINVAL for NULL. */
SL_EXTERN int sl_batch_cancel(sl_batch *batch);

/* ------------------------------------------------------ cluster-wide SCAN on a loop */

/* sl_scan_next for a client driven by a loop: the steps of one page (CLUSTER NODES,
 * SCAN, CLUSTER SLOTS after a failure — the map is refreshed by a step of its own, never
 * by blocking) run on the loop's thread, and cb runs once, when the page is in batch (the
 * scan's client's; status 0: read it as sl_scan_next's page; sl_scan_done() says whether
 * it was the last) or when the page failed (status as sl_scan_next returns it, the message
 * in sl_scan_errmsg; a failed pass is taken up again once within the call, and the scan
 * stays usable). Until cb the scan and the batch belong to the engine. On the caller's
 * loop, on its thread; timeout_ms applies to each step. SL_EINVAL (NULL, another client's
 * batch), SL_ESTATE (not attached, the batch in flight): cb is then not called. */
SL_EXTERN int sl_scan_next_async(sl_scan *scan, sl_batch *batch, int timeout_ms, sl_exec_cb cb, void *arg);

/* From any thread: the next page of the scan as one sl_loop_submit_cq submission: it
 * completes into cq once (with token), as sl_scan_next_async calls back. sl_batch_cancel
 * of the batch cancels the page (SL_ECANCELLED; the scan stays usable: the next page takes
 * the cancelled page's node up again from its first cursor, so keys of that node already
 * returned may come again — at least once, as across a topology change). Until the
 * completion is taken,
 * neither the scan nor the batch may be touched. Codes as sl_loop_submit_cq (a scan
 * counts as one batch of no bytes in the in-flight bounds); SL_EINVAL also for another
 * client's batch. */
SL_EXTERN int sl_loop_submit_scan_cq(sl_loop *loop, sl_scan *scan, sl_batch *batch, int timeout_ms, sl_cq *cq,
                                     void *token, int flags);

/* ------------------------------------------------------ scripts on a loop */

/* sl_batch_run_script for a client driven by a loop: the batch holds one queued command
 * (EVALSHA or EVALSHA_RO, by sl_batch_append*), which is executed; when its reply is
 * NOSCRIPT, body is loaded (SCRIPT LOAD) on the node that answered and the command is sent
 * once more — each step on the loop's thread — and cb runs once with the answer (the
 * second reply, or the failed SCRIPT LOAD's error record), status as sl_batch_run_script.
 * body is the caller's and must stay valid until cb. On the caller's loop, on its thread.
 * SL_EINVAL (NULL, not exactly one command), SL_ESTATE (not attached, in flight): cb is
 * then not called. */
SL_EXTERN int sl_script_exec_async(sl_batch *batch, const void *body, size_t body_len, int timeout_ms,
                                   sl_exec_cb cb, void *arg);

/* From any thread: sl_script_exec_async as one sl_loop_submit_cq submission (completes into
 * cq once, with token; sl_batch_cancel ends it with SL_ECANCELLED, also between its steps).
 * body must stay valid until the completion is taken. Codes as sl_loop_submit_cq;
 * SL_EINVAL also when the batch does not hold exactly one command. */
SL_EXTERN int sl_loop_submit_script_cq(sl_loop *loop, sl_batch *batch, const void *body, size_t body_len,
                                       int timeout_ms, sl_cq *cq, void *token, int flags);

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
