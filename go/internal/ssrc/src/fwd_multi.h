/* fwd_multi: cross-shard multi-key commands that cannot be split into independent
 * parts — MSETNX, RENAME, RENAMENX, LMOVE, RPOPLPUSH, SMOVE, SINTER, SUNION, SDIFF,
 * their STORE forms and SINTERCARD — run as a short sequence of steps on the owner
 * shards, coordinated by the shard that received the command. The coordinator
 * holds the connection's reply slot until the last step has answered, and the
 * connection's later commands that use one of its keys (or the whole keyspace)
 * wait for it; values travel as bytes in the messages (RESP2 replies), never as
 * pointers to another shard's objects.
 *
 * Steps (each a command on the key's owner, the usual forwarding transport):
 *   MSETNX            EXISTS per owner; none exists -> MSET per owner
 *   RENAME            slotlane.rename_from src (slotlane.take: value + TTL, deleted) -> slotlane.rename_to dst
 *                     (slotlane.restore), firing Redis's rename_from / rename_to
 *   RENAMENX          EXISTS src, EXISTS dst -> as RENAME
 *   LMOVE RPOPLPUSH   TYPE dst -> LPOP/RPOP src -> LPUSH/RPUSH dst
 *                     (a WRONGTYPE there, after a concurrent change: pushed back;
 *                     a wrong-typed dst: TYPE src decides nil or WRONGTYPE)
 *   SMOVE             TYPE dst -> SREM src -> SADD dst (the same)
 *   SINTER SUNION SDIFF SINTERCARD [*STORE]
 *                     SMEMBERS of each key -> computed here -> slotlane.restore dst
 *   XREAD XREADGROUP  slotlane.xprep of each owner's keys (errors, `$` IDs) -> the
 *                     command per owner shard, parked there with BLOCK, the others
 *                     released once one answers -> the streams served, in key order
 *
 * Guarantees: each step is atomic on its shard; the whole is not atomic against
 * other clients writing the same keys meanwhile (MSETNX may set keys another client
 * set between the check and the write; a reader may see RENAME's source gone and
 * its destination not yet written). Without concurrent writers of those keys the
 * replies and the result are Redis's. */
#ifndef SV_FWD_MULTI_H
#define SV_FWD_MULTI_H

#include "conn.h"

/* Whether the command runs coordinated when its keys live on several shards. */
int sv_fwdm_handles(const sv_cmd *cmd);
/* Starts it (or replies an argument error). */
void sv_fwdm_start(sv_conn *c, const sv_cmd *cmd, int argc, sv_str *argv);
/* The reply of a step (the buffer is taken). */
void sv_fwdm_reply(sv_conn *c, void *state, int step, sv_buf *reply);
void sv_fwdm_free(void *state);
/* Whether a later command must wait for the running one: it uses one of the keys
 * argv[kp[0..nk-1]], and one of the two writes (readonly: the later one does not). */
int sv_fwdm_conflicts(void *state, sv_str *argv, const int *kp, int nk, int readonly);
/* The connection of a blocking coordinated command (sv_fwd_coord_hold) closes: its
 * parts still parked are released (the coordinator ends when they have answered). */
void sv_fwdm_closing(void *state);

#endif
