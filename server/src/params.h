/* params: Redis 7.0's CONFIG parameters — the table of every name CONFIG GET * of
 * redis-server 7.0 lists (aliases included), each value's parser and canonical form,
 * and the few that mean something here applied (server/README.md, "CONFIG").
 *
 * Values are per instance: CONFIG SET on any shard changes them for every shard of it.
 * GET/SET take one mutex; the numeric values the data path reads (encoding
 * thresholds, slowlog) are also kept as relaxed atomics, read without it. */
#ifndef SV_PARAMS_H
#define SV_PARAMS_H

#include "server.h"

/* The numeric parameters other modules read (sv_param_ll). */
enum sv_param_id {
    SV_PARAM_NONE = 0,
    SV_PARAM_HASH_MAX_LISTPACK_ENTRIES,
    SV_PARAM_HASH_MAX_LISTPACK_VALUE,
    SV_PARAM_LIST_MAX_LISTPACK_SIZE,
    SV_PARAM_SET_MAX_INTSET_ENTRIES,
    SV_PARAM_ZSET_MAX_LISTPACK_ENTRIES,
    SV_PARAM_ZSET_MAX_LISTPACK_VALUE,
    SV_PARAM_SLOWLOG_LOG_SLOWER_THAN,
    SV_PARAM_SLOWLOG_MAX_LEN,
    SV_PARAM_LIST_COMPRESS_DEPTH,
    SV_PARAM_LATENCY_MONITOR_THRESHOLD,
    SV_PARAM_HZ,
    SV_PARAM_MAXMEMORY,
    SV_PARAM__COUNT
};

/* The instance's parameter state (sv_server_init_state; free: sv_server_free_state). */
void sv_params_init_state(sv_server *s);
void sv_params_free_state(sv_server *s);
/* After sv_config_load: values from the flags (port, bind, dir, maxclients, ...). */
void sv_params_init(void);
void sv_params_free(void);
long long sv_param_ll(enum sv_param_id id);
/* The current value of a parameter as CONFIG GET shows it ("" when unknown; '_' or '-'). */
void sv_params_value(const char *name, char *out, size_t cap);

/* CONFIG GET: a map of every parameter matching one of the patterns. port is the
 * answering shard's. */
void sv_params_get(sv_ctx *c, int npat, sv_str *pat);
/* CONFIG SET of name value pairs: all or nothing, Redis 7.0's errors. */
void sv_params_set(sv_ctx *c, int npairs, sv_str *kv);
/* CONFIG REWRITE: the --config file gets the parameters CONFIG SET changed. */
void sv_params_rewrite(sv_ctx *c);
/* --config file and flags: a Redis parameter name given as a setting (with '_' or
 * '-'); returns 0 and leaves err empty when name is not a Redis parameter, -1 with
 * err set for a bad value, 1 when stored. */
int sv_params_set_startup(const char *name, const char *value, char *err, size_t cap);

#endif
