/* split.h: multi-key commands split by slot and all-primaries
 * fan-outs, and the merge of their parts (split.c). Nothing here is part of the ABI. */
#ifndef SL_SPLIT_H
#define SL_SPLIT_H

#include <stdint.h>
#include "batch.h"
#include "commands.h"

int sl__split_plan(sl_batch *b, uint32_t ci, const sl__cmdinfo *info);
int sl__split_fanout(sl_batch *b, uint32_t ci);
int sl__split_merge(sl_batch *b, uint32_t ci);

#define SL__MERGE_NONE 0
#define SL__MERGE_MGET 1
#define SL__MERGE_SUM 2
#define SL__MERGE_MSET 3
#define SL__MERGE_ARRAY 4  /* fan-out: an array of per-node replies */
#define SL__MERGE_CONCAT 5 /* fan-out KEYS */
#define SL__MERGE_FIRST 6  /* fan-out, all_succeeded: the first reply (FLUSHALL's OK, LOAD's SHA) */
#define SL__MERGE_AND 7    /* fan-out SCRIPT EXISTS: per element, the AND */
#define SL__MERGE_OR 8     /* per element, the OR */

#endif
