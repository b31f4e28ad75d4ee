/* scan.h: the steps of the cluster-wide SCAN iterator (scan.c), for its drivers: sl_scan_next
 * (blocking, scan.c) and the loop's (uv/async.c). Nothing here is part of the ABI. */
#ifndef SL_SCAN_H
#define SL_SCAN_H

#include "slotlane.h"

/* The scan's client. */
sl_client *sl__scan_client(const sl_scan *s);

/* Checks that batch b may page scan s (SL_EINVAL otherwise, message in both). */
int sl__scan_check(sl_scan *s, sl_batch *b);

/* Puts the command of the scan's next step into b (reset first). *end = 1 instead when every
 * slot has been scanned: b then holds the last, empty page and nothing is to be sent.
 * async_map: a map the scan wants refreshed is asked for by a step of its own (CLUSTER
 * SLOTS), for drivers that cannot call the blocking sl_client_refresh. Returns 0 or a
 * negative code (a failure of the step: the scan's errmsg says it). */
int sl__scan_prepare(sl_scan *s, sl_batch *b, int async_map, int *end);

/* Reads the reply of the prepared step (status: the execution's code). *page = 1: b now
 * holds a page of keys, the caller's answer; 0: prepare the next step. A negative code is a
 * failed step (the pass is abandoned; the next prepare takes its slots up again). */
int sl__scan_feed(sl_scan *s, sl_batch *b, int status, int *page);

#endif
