/* script: Lua scripting (EVAL family, SCRIPT, FUNCTION, FCALL) with Lua 5.1 as
 * Redis 7.0 embeds it. One Lua state per shard, created on the shard's thread at
 * its first script, so nothing is shared between shards: a script runs atomically
 * on its shard. See server/README.md, "Scripting". */
#ifndef SV_SCRIPT_H
#define SV_SCRIPT_H

#include "server.h"

SV_DECL(eval); SV_DECL(evalsha); SV_DECL(eval_ro); SV_DECL(evalsha_ro);
SV_DECL(fcall); SV_DECL(fcall_ro); SV_DECL(script);
/* FUNCTION: replaces the FLUSH-only version t_server.c had */
SV_DECL(function);

/* EVAL/EVALSHA/FCALL key positions (numkeys at argv[2]). */
int sv_script_getkeys(int argc, sv_str *argv, int *keys, int max);

/* After the shard's thread exited: closes its Lua state. */
void sv_script_free_shard(sv_shard *sh);

/* The code of the shard's i-th function library (1), or 0 past the last: the AOF
 * rewrite writes them as FUNCTION LOAD REPLACE records, so they survive it. Reads
 * only, allocates nothing (the rewrite child calls it). */
int sv_script_library(sv_shard *sh, int i, const char **code, size_t *len);

/* Test hooks for the fuzz target (0: off): a cap on the bytes each Lua state may
 * hold, and a number of count-hook calls (100,000 instructions each) after which a
 * script is stopped as by SCRIPT KILL. */
#define sv_script_mem_limit (sv_cur->script_mem_limit)
#define sv_script_hook_budget (sv_cur->script_hook_budget)

/* Default busy-reply-threshold (lua-time-limit) in milliseconds, as Redis. */
#define SV_BUSY_REPLY_DEFAULT 5000

#endif
