/* lease.h: leased connections (lease.c) and the sessions built on them (session.c).
 * Nothing here is part of the ABI. */
#ifndef SL_LEASE_H
#define SL_LEASE_H

#include <stdint.h>
#include "batch.h"
#include "client.h"

/* One leased connection: a plain-mode client of its own on one node, and its batch. */
typedef struct sl__lease {
    sl_client *conn;
    sl_batch *batch;
    char addr[SL__HOST_MAX + 8]; /* its node, "host:port" as the parent names it */
    int busy;                    /* in use by a blocking command or a session */
} sl__lease;

/* The client's pool (client.h: c->leases). */
struct sl__leases {
    sl__lease **v;
    size_t n, cap;
};

/* 1 when the command blocks (outside MULTI): the BLPOP family, XREAD/XREADGROUP with
 * BLOCK, WAIT; *block_ms is its block time (0: forever), -1 when unreadable. */
int sl__lease_blocking(const uint8_t *bytes, const sl__arg *args, uint32_t argc, int64_t *block_ms);
/* The arguments of a queued command: the batch's views (cluster mode), or, for a plain
 * client that keeps none, the first SL__LEASE_VIEW - 1 and the last read into local.
 * Returns how many *args holds. */
#define SL__LEASE_VIEW 16
uint32_t sl__lease_view(const sl_batch *b, const sl__cmd *cmd, sl__arg local[SL__LEASE_VIEW], const sl__arg **args);
/* The deadline of a leased execution: the caller's (!= 0), else block time + grace. */
int sl__lease_timeout(const sl_client *c, int timeout_ms, int64_t block_ms);

/* A lease on node k of c (an idle one of the pool, or a new one): 0, SL_ENOMEM, SL_ECLUSTER. */
int sl__lease_get(sl_client *c, uint16_t k, sl__lease **out);
/* Gives it back; close_conn (or bytes or replies still owed) closes its connection first.
 * Past lease_idle_max idle ones on that node, it is freed. */
void sl__lease_put(sl_client *c, sl__lease *l, int close_conn);
size_t sl__lease_count(const sl_client *c, int busy);    /* leases busy (1) or idle (0) */
/* Runs the lease's batch (cancel of c reaches it); the execution's code, message in c. */
int sl__lease_run(sl_client *c, sl__lease *l, int timeout_ms);

/* Results of b as if nothing had run yet (every user command without a record). */
void sl__lease_results_reset(sl_batch *b);
/* Command j's records of `from` (an executed batch) become command ci's reply in b. */
int sl__lease_adopt(sl_batch *b, uint32_t ci, const sl_batch *from, uint32_t j);
/* Every command of b gets an error record msg; the execution's code is `code`. */
int sl__lease_refuse_all(sl_batch *b, sl_err_kind kind, int code, const char *msg);
/* The records of sl__lease_refuse (a blocking command in a pipeline), without finishing. */
int sl__lease_refuse_records(sl_batch *b);
/* r is an error reply whose message starts with prefix ("MOVED ", "UNBLOCKED"). */
int sl__lease_reply_starts(const uint8_t *data, const sl_reply *r, const char *prefix);
/* An error record that leaves the connection in an unknown state (I/O, timeout, cancel...). */
int sl__lease_record_broken(const sl_reply *r);

#endif
