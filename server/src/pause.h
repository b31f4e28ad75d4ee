/* pause: CLIENT PAUSE / UNPAUSE, as Redis 7.0 — a server-wide state every shard
 * obeys. While a pause holds, a client's next command that it covers (ALL: any
 * command; WRITE: a write or a command that may replicate — EVAL EVALSHA FCALL
 * PFCOUNT PUBLISH SPUBLISH, an EXEC with a write queued) is not run: it stays in
 * the connection's read buffer with what follows it, the replies before it leave,
 * and it runs when the pause ends (UNPAUSE from any shard, or its timeout), in the
 * order the clients were held. Keys do not expire while paused (a key past its
 * time reads as missing but is not deleted, as Redis's expireIfNeeded). */
#ifndef SV_PAUSE_H
#define SV_PAUSE_H

#include "server.h"

struct sv_conn;

enum { SV_PAUSE_OFF = 0, SV_PAUSE_WRITE = 1, SV_PAUSE_ALL = 2 };

/* The pause in force (OFF once its end time passed); one relaxed load while none. */
#define sv_pause_type (sv_cur->pause_type)
int sv_pause_now(void);
/* Whether the pause in force holds this command of this session. */
int sv_pause_holds(sv_session *s, int argc, sv_str *argv);
/* Keeps the connection's current request (and what follows) for the pause's end. */
void sv_pause_hold(struct sv_conn *c);
/* Connections the shard holds (INFO blocked_clients counts them, as Redis counts
 * its postponed clients); read by any thread. */
int sv_pause_held(sv_shard *sh);
/* A closing connection leaves the shard's held list. */
void sv_pause_forget(struct sv_conn *c);
/* Per shard: the wake-up other shards send at UNPAUSE, the timer of the end time. */
void sv_pause_init_shard(sv_shard *sh);
void sv_pause_close_shard(sv_shard *sh);
/* CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE (argv[1] the subcommand). */
void sv_client_pause(sv_ctx *c, int argc, sv_str *argv);
void sv_client_unpause(sv_ctx *c);

#endif
