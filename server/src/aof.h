/* aof: durability — one append-only log per shard, in RESP, of every write.
 *
 * Files in --dir: `shard-<i>-of-<N>.aof` (the log of shard i of N) and
 * `slotlane.manifest` (the shard count the logs were written with; replacing it is
 * the commit point of a re-split). Each log starts with the header record
 * `SLOTLANE.AOF 1 <i> <N>`, then one RESP command per write, as the shard ran it:
 * relative expiry is written as absolute (PEXPIREAT, SET ... PXAT), SPOP as the
 * SREM of what it popped, expiry deletions as DEL.
 *
 * The log is written (write(2)) before any reply of the loop turn leaves, and with
 * --durability always also fdatasync'd first (group commit: once per loop turn, not
 * per command). With everysec a libuv work item fdatasyncs once a second.
 *
 * Rewrite: the shard thread forks; the child writes the shard's keyspace as it was
 * at the fork (only the forking thread touches that keyspace, so it is consistent)
 * while the shard keeps running and keeps every write it logs in a diff buffer; when
 * the child is done the shard appends the diff and renames the new file over the
 * log. See server/README.md, "Durability".
 *
 * Three files, one job each: aof.c (the records, group commit, fsync), aof_rewrite.c
 * (the rewrite), aof_load.c (startup: lock, manifest, replay, re-split); what they
 * share is in aof_int.h. */
#ifndef SV_AOF_H
#define SV_AOF_H

#include "conn.h"

/* Before any shard listens: takes the directory lock, re-splits logs written with
 * another shard count, replays every shard's log into its keyspace, opens the logs
 * for appending. Returns 0, or 1 with why the server must not start in err (the replay
 * and re-split steps log their details).
 * Does nothing with --durability memory. */
int sv_aof_startup(char *err, size_t cap);

/* After a WRITE-flagged command ran in sv_execute; reply_off is where its reply
 * starts in c->r.out (an error reply means nothing changed: not logged). */
void sv_aof_feed(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t reply_off);
/* A transaction's records, logged between these two calls, form one unit of the log
 * (MULTI ... EXEC records around them when there are two or more): replayed whole,
 * or dropped whole when the log ends inside it. */
void sv_aof_unit_begin(sv_shard *sh);
void sv_aof_unit_end(sv_shard *sh);
int sv_aof_in_unit(sv_shard *sh);
/* The key is being removed because it expired (lazy or active expiry). */
void sv_aof_log_del(sv_shard *sh, const char *key, size_t klen);
/* A record a command writes itself (the stream commands with .aof SV_AOF_NONE);
 * nothing without a log or while replaying. */
void sv_aof_log(sv_shard *sh, int argc, const sv_str *argv);

/* Writes what was logged (and fdatasyncs with always) before replies leave. */
void sv_aof_before_reply(sv_shard *sh);

void sv_aof_cron(sv_shard *sh);        /* every 100 ms on the shard's thread */
void sv_aof_close_shard(sv_shard *sh); /* in on_stop: last write and fsync, stop a rewrite */
void sv_aof_free(sv_shard *sh);        /* after the thread exited */

/* INFO persistence (sums over the shards). */
void sv_aof_info(sv_buf *out);

/* Exposed for the unit test: a command as a RESP multibulk. */
void sv_aof_append_command(sv_buf *b, int argc, const sv_str *argv);
/* Scans a log image: calls fn for every record after the header. Returns 0 with
 * *end == len (clean), 0 with *end < len (torn last record dropped), or -1 with
 * *end = offset of the corrupt record and why in err. */
typedef int sv_aof_record_fn(void *priv, int argc, sv_str *argv, char *err, size_t errcap);
int sv_aof_scan(const char *data, size_t len, int index, int shards, sv_aof_record_fn *fn, void *priv,
                size_t *end, char *err, size_t errcap);

#endif
