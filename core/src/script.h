/* script.h: the steps of EVALSHA with reload (script.c), for its drivers: sl_batch_run_script
 * (blocking, script.c) and the loop's (uv/async.c). Nothing here is part of the ABI. */
#ifndef SL_SCRIPT_H
#define SL_SCRIPT_H

#include "slotlane.h"

/* 1 when the finished execution's first reply is a NOSCRIPT error. */
int sl__script_noscript(const sl_batch *b);

/* After a NOSCRIPT: resets b and queues SCRIPT LOAD body for the node that answered.
 * Returns 0, 1 when that node is not known (the NOSCRIPT stands), or a negative code. */
int sl__script_put_load(sl_batch *b, const void *body, size_t body_len);

#endif
