/* engine.h: the round engine shared by both drivers (engine.c) and
 * the blocking driver (sync.c). Nothing here is part of the ABI. */
#ifndef SL_ENGINE_H
#define SL_ENGINE_H

#include "batch.h"
#include "client.h"

/* engine.c */
int sl__engine_ensure_bn(sl_batch *b, size_t n);
int sl__engine_queue_round(sl_batch *b, int zero_copy);
int sl__engine_node_unwritten(const sl__node *n);
int sl__engine_node_busy(const sl__node *n);
int sl__engine_write(sl_client *c, size_t k);
int sl__engine_read(sl_client *c, size_t k);
int sl__engine_node_failed(sl_client *c, size_t k, sl_err_kind kind, int code);
int sl__engine_abandon(sl_batch *b, sl_err_kind kind, const char *msg);
int sl__engine_cancel(sl_batch *b, const char *msg);      /* abandon, keeping the connections */
int sl__engine_advance(sl_batch *b, uint64_t *wait_ms);

/* sync.c: the blocking driver */
int sl__engine_run_sync(sl_batch *b);
void sl__drain_cancel(sl_client *c);                      /* empties the cancel pipe */

#endif
