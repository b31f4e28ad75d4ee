/* shard: one thread, one libuv loop, one listener and one keyspace per shard. */
#ifndef SV_SHARD_H
#define SV_SHARD_H

#include "server.h"

/* The shard's data without its loop: keyspace, slot range, node id. sv_shard_init
 * starts with it; the fuzz targets use it alone to run commands in-process (free
 * with sv_db_free). */
void sv_shard_init_data(sv_shard *sh, int index);
/* Prepares shard i in the calling thread: loop, keyspace, listener bound to its
 * port. Returns 0, or a libuv error code (the port is busy, the address is bad). */
int sv_shard_init(sv_shard *sh, int index);
/* Binds and listens (after the log was replayed): 0 or a libuv error code. */
int sv_shard_listen(sv_shard *sh);
/* Starts the shard's thread (pinned to its CPU when --cpus was given). */
int sv_shard_start(sv_shard *sh);
/* Asks the shard to close its connections and stop; safe from any thread. */
void sv_shard_stop(sv_shard *sh);
/* Waits for the thread and frees everything the shard owns. */
void sv_shard_join(sv_shard *sh);
/* The two halves of sv_shard_join: with forwarding, every thread must have exited
 * before any loop is closed (another shard may still wake this one). */
void sv_shard_wait(sv_shard *sh);
void sv_shard_free(sv_shard *sh);
/* Frees a shard that was initialised but never started. */
void sv_shard_destroy(sv_shard *sh);

#endif
