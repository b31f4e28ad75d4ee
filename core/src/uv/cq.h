/* cq.h: what the libuv driver (async.c) uses of the completion queue (cq.c). Nothing here is
 * part of the ABI. */
#ifndef SL_CQ_H
#define SL_CQ_H

#include "slotlane_uv.h"

/* From the loop thread: appends one completion and signals the queue's descriptor when it
 * was empty. Never fails (an allocation failure is retried: a completion is never lost). */
void sl__cq_push(sl_cq *q, const sl_completion *c);

/* The same without the signal, for a burst: the loop thread pushes every completion of one
 * event quietly, then signals each queue it touched once (sl__cq_signal), so a burst is one
 * wake-up of the watcher, not one per completion it happened to drain in between. */
void sl__cq_push_quiet(sl_cq *q, const sl_completion *c);
void sl__cq_signal(sl_cq *q);

/* How often the descriptor was signalled (the tests' proof of "only on empty -> non-empty"). */
uint64_t sl__cq_signals(sl_cq *q);

#endif
