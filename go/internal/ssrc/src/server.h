/* server: the types shared by the modules of slotlane-server — settings, shards,
 * command context, objects and the keyspace API.
 *
 * Execution model: a command is a function of (shard, session, argv) that appends
 * its reply to a buffer (sv_ctx). It never touches the connection that received
 * it, so the next issue's forwarding can run a command on its owner shard and ship
 * the reply bytes back to the receiving connection in order. */
#ifndef SV_SERVER_H
#define SV_SERVER_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "dict.h"
#include "proto.h"
#include "slot.h"
#include "util.h"
#include "zskiplist.h"

#define SV_VERSION "7.0.15"  /* the Redis version we answer as (clients read it) */
#define SV_MAX_SHARDS 256

enum { SV_LOG_DEBUG, SV_LOG_VERBOSE, SV_LOG_NOTICE, SV_LOG_WARNING };

typedef struct sv_config {
    int shards;
    int ncpus;
    int *cpus;            /* CPU list expanded; shard i -> cpus[i % ncpus] */
    char bind[64];
    char announce[64];
    int port;
    int port_mode;        /* 0 per-shard, 1 one-port */
    int misrouted;        /* 0 moved, 1 forward (to the owner shard's thread) */
    int durability;       /* 0 memory, 1 everysec, 2 always */
    char dir[1024];
    int aof_rewrite_pct;       /* automatic rewrite at this growth over the base size */
    long long aof_rewrite_min; /* ... and not below this size in bytes */
    int maxclients;
    int loglevel;
    long long output_limit; /* bytes of unsent replies before a client is dropped */
    int forward_queue;      /* requests in flight per ordered pair of shards (backpressure) */
    long long busy_reply_ms; /* busy-reply-threshold (lua-time-limit): a script running longer gets others -BUSY */
    int enable_debug;       /* DEBUG: 0 no, 1 yes, 2 local (loopback clients only), as Redis's enable-debug-command */
    char *config_file;      /* --config FILE (absolute after sv_params_init): CONFIG REWRITE's target */
} sv_config;

/* The settings of the server instance the calling thread works for (sv_cur, below). */
#define sv_cfg (sv_cur->cfg)

void sv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- objects ---- */
enum { SV_T_STRING = 0, SV_T_LIST, SV_T_HASH, SV_T_SET, SV_T_ZSET, SV_T_STREAM };

typedef struct sv_obj {
    uint8_t type;
    uint8_t lfu;     /* OBJECT FREQ: Redis's logarithmic access counter (kept with an LFU maxmemory-policy) */
    uint8_t oflags;  /* SV_OBJ_* */
    uint32_t atime;  /* last access, unix seconds (OBJECT IDLETIME); fills the padding before the next field */
} sv_obj;
enum {
    SV_OBJ_BIG = 1 << 0, /* grew past its type's compact-encoding thresholds: stays "hashtable"/"skiplist" as in Redis */
};

/* A string value: one allocation holding its bytes; cap lets SET/APPEND reuse it. */
typedef struct sv_string {
    sv_obj h;
    size_t len, cap;
    char data[];
} sv_string;

/* A list element or hash value: length-prefixed bytes. */
typedef struct sv_blob {
    size_t len;
    char data[];
} sv_blob;

/* A list: a ring of element pointers (O(1) push/pop at both ends, O(1) index). */
typedef struct sv_list {
    sv_obj h;
    sv_blob **a;
    size_t head, len, cap;
} sv_list;

typedef struct sv_hash {
    sv_obj h;
    sv_dict d; /* field -> sv_blob* */
} sv_hashobj;

typedef struct sv_set {
    sv_obj h;
    sv_dict d; /* member -> (nothing) */
} sv_set;

/* A sorted set: member -> score in the dict (u.d), plus the entries ordered by
 * (score, member) in a skiplist for ranks and ranges (O(log n) insert, delete,
 * rank; zskiplist.h). */
typedef struct sv_zset {
    sv_obj h;
    sv_dict d;
    sv_zsl zsl;
} sv_zset;

/* A value just stored under a key: accessed now, Redis's initial LFU counter. */
static inline void sv_obj_stored(int64_t now_ms, sv_obj *o)
{
    o->atime = (uint32_t)(now_ms / 1000);
    o->lfu = 5;
}

sv_blob *sv_blob_new(const void *p, size_t n);
sv_string *sv_string_new(const void *p, size_t n);
sv_obj *sv_obj_new(int type);
sv_obj *sv_obj_dup(const sv_obj *o); /* a deep copy (t_copy.c) */
/* Makes the string value at e writable with room for need bytes (e->val may move). */
sv_string *sv_string_reserve(sv_entry *e, size_t need);
void sv_obj_free(sv_obj *o);

/* ---- transactions (multi.c) ---- */
typedef struct sv_txcmd {
    const struct sv_cmd *cmd;
    int argc;
    sv_str *argv; /* with the argument bytes, one allocation */
} sv_txcmd;

typedef struct sv_txwatch {
    char *key;
    size_t len;
    int shard;        /* the shard keeping its version (another one: forwarding) */
    uint64_t version; /* at WATCH time */
    int released;     /* another shard's watch to release (fwd.c sends slotlane.unwatch) */
} sv_txwatch;

typedef struct sv_tx {
    int in_multi;
    int failed;   /* a command was refused while queuing: EXEC replies EXECABORT */
    sv_txcmd *q;  /* the queued commands */
    int nq, capq;
    size_t queued_bytes;
    sv_txwatch *w; /* the watched keys */
    int nw, capw;
    int nreleased; /* watches marked released */
} sv_tx;

/* ---- shards ---- */
typedef struct sv_session {
    uint64_t id;
    int proto;
    int db_selected;
    char *name;
    char *lib_name, *lib_ver;
    char addr[64], laddr[64];
    int64_t ctime_ms;
    const char *last_cmd;
    struct sv_psub *ps;    /* subscriptions (pubsub.c), NULL until the first */
    struct sv_conn *conn;  /* the connection, NULL for forwarded requests and replay */
    sv_tx *tx; /* MULTI/WATCH state, made by the first MULTI or WATCH */
    /* CLIENT REPLY (conn.c drops the muted replies): OFF until ON; SKIP mutes the
     * command after it (skip_next becomes skip once CLIENT REPLY SKIP has run) */
    int reply_off, reply_skip, reply_skip_next;
    struct sv_trk *trk; /* CLIENT TRACKING (tracking.c), NULL until the first ON */
} sv_session;

/* Per command and shard (INFO commandstats, latencystats, LATENCY HISTOGRAM): written
 * by the shard's thread only. hist[i] counts calls that took < 2^i µs (the last: more). */
#define SV_LAT_BUCKETS 24
typedef struct sv_cmdstat {
    uint64_t calls, usec, rejected, failed;
    uint64_t hist[SV_LAT_BUCKETS];
} sv_cmdstat;
#define SV_MAX_ERRSTATS 128 /* as Redis: more distinct error prefixes are counted as one */
typedef struct sv_errstat {
    char name[32];
    uint64_t count;
} sv_errstat;
typedef struct sv_slowentry {
    uint64_t id;
    int64_t time_s, usec;
    int argc;
    sv_str *argv; /* one allocation with the (truncated) bytes */
    char addr[64];
    char *name;
} sv_slowentry;

typedef struct sv_stats {
    uint64_t commands;
    uint64_t connections;
    uint64_t rejected;
    uint64_t expired_keys;
    uint64_t keyspace_hits, keyspace_misses;
    uint64_t net_in, net_out;
    uint64_t error_replies;   /* total_error_replies */
    uint64_t errstats_overflow;
} sv_stats;

struct sv_conn;
struct sv_server;

typedef struct sv_shard {
    struct sv_server *srv; /* the instance it belongs to */
    int index;
    unsigned slot_lo, slot_hi; /* inclusive */
    int port;
    char node_id[41];
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t stop;
    uv_timer_t cron;
    uv_thread_t thread;
    int listening, stopping;

    sv_dict keys;
    sv_entry **expiring; /* entries with a TTL; entry->aux = index + 1 */
    size_t nexpiring, capexpiring;
    uint32_t *slot_keys; /* key count per slot (COUNTKEYSINSLOT) */
    int64_t now_ms;      /* cached per read batch, as Redis caches mstime per command */

    struct sv_conn *conns; /* doubly linked list of open connections */
    int nclients;
    sv_stats stats;
    int64_t start_ms;
    sv_cmdstat *cmdstats;  /* one per command and subcommand (sv_cmdstat_slot) */
    sv_errstat errstats[SV_MAX_ERRSTATS];
    int nerrstats;
    sv_slowentry *slowlog; /* ring of sv_param(slowlog-max-len) entries, newest at slow_head-1 */
    size_t slow_cap, slow_len, slow_head;
    uint64_t slow_next_id;
    /* instantaneous_*: the last 16 cron samples of commands, input and output bytes per second */
    double inst[3][16];
    int inst_idx;
    int64_t inst_last_ms;
    uint64_t inst_last[3];

    /* forwarding (fwd.c), only with --misrouted forward and several shards */
    int fwd_on;
    uv_async_t fwd_async;          /* woken by other shards: drain fwd_in */
    uv_check_t fwd_check;          /* end of loop turn: publish batches, wake targets */
    struct sv_fmsg *_Atomic *fwd_in; /* per source shard: SPSC queue head (newest first) */
    struct sv_fmsg **fwd_first, **fwd_last; /* per target: this turn's batch (newest first) */
    int *fwd_dirty;                /* targets with a batch this turn */
    int nfwd_dirty;
    struct sv_conn *flush_list;    /* connections that got forwarded replies this turn */
    atomic_uint_fast64_t fwd_commands, fwd_wakeups, fwd_executed, fwd_busy_replies;
    /* backpressure: requests sent to each shard whose replies have not come back
     * (this thread only), the connections paused because a target was at
     * --forward-queue, and how often that happened */
    int *fwd_inflight;
    struct sv_conn *fwd_paused;
    atomic_uint_fast64_t fwd_queue_full;

    /* durability (aof.c): NULL with --durability memory */
    struct sv_aof *aof;
    int loading; /* replaying the log: nothing expires, nothing is logged */

    struct sv_fwd_pool *fwd_pool;  /* recycled messages and reply slots (fwd.c) */

    struct sv_blk *blk; /* clients parked on keys (blocking.c) */
    struct sv_pubsub_shard *pubsub; /* subscriptions and messages between shards (pubsub.c) */
    struct sv_nq *ntf;  /* keyspace notifications queued by the running command (notify.c) */
    struct sv_lua *lua; /* scripting (script.c): this shard's Lua state, made at first use */
    /* WATCH (db.c): watched key -> version (u.i) and watchers (aux); the dict is
     * made on first use, nwatched keeps the no-watcher path to one test */
    sv_dict watched;
    int watched_init;
    uint64_t nwatched;
    uint64_t watch_seq;
    struct sv_pause_shard *pause; /* CLIENT PAUSE's held connections (pause.c) */
    struct sv_trk_shard *trk;     /* CLIENT TRACKING's table (tracking.c), NULL until used */
} sv_shard;

/* ---- the server instance ----
 * Everything one server shares between its shards: settings, the shard array, the
 * CONFIG parameters, the pub/sub registry, CLIENT PAUSE, ... Several instances run in
 * one process (slotlane_server.h); nothing below is shared between two of them.
 *
 * How code reaches it: sv_cur, a thread-local pointer. Every thread that runs server
 * code works for exactly one instance for its whole life — a shard thread sets it
 * once when it starts (shard.c), and the thread calling sl_server_start/stop sets it
 * for the duration of that call (instance.c) — so the pointer is right by
 * construction. A pointer passed down instead would add a parameter to ~150
 * functions that have no shard at hand (sv_slot_owner, the params getters, sv_log,
 * the reply helpers' limits) for the same value; each shard also keeps sh->srv for
 * code that has a shard. libuv's threadpool work (aof.c's fsync and close jobs)
 * touches no instance state. */
typedef struct sv_server {
    sv_config cfg;
    sv_shard *shards;
    /* set at shutdown: a running script is stopped so its shard's loop can close (script.c) */
    atomic_int stop_requested;
    atomic_uint_fast64_t next_client_id;
    atomic_int active_expire;          /* DEBUG SET-ACTIVE-EXPIRE (t_admin.c) */
    atomic_int lfu_on;                 /* an LFU maxmemory-policy is set (db.c) */
    _Atomic long long lfu_log_factor;
    _Atomic int notify_flags;          /* notify-keyspace-events (notify.c) */
    _Atomic int pause_type;            /* CLIENT PAUSE (pause.c) */
    _Atomic long long pause_end;
    uv_mutex_t pause_lock;
    _Atomic long long pubsub_limit, pubsub_soft_limit, pubsub_soft_secs; /* pubsub.c */
    struct sv_pubsub_reg *pubsub_reg;  /* channel -> subscribing shards (pubsub.c) */
    struct sv_tracking_reg *tracking_reg; /* client ID -> shard, BCAST clients (tracking.c, forwarding) */
    _Atomic int tracking_bcast_any;    /* BCAST clients registered there (tracking.c, db.c) */
    struct sv_params_state *params;    /* CONFIG parameters (params.c) */
    struct ub_chan *ub_chan_arr;        /* CLIENT UNBLOCK between shards (blocking.c) */
    int aof_lock_fd;                   /* the flock of --dir (aof_load.c), -1 */
    size_t script_mem_limit;           /* fuzz-only limits (script.h) */
    long long script_hook_budget;
    int embedded; /* started through slotlane_server.h: SHUTDOWN is refused (t_admin.c) */
    /* where sv_log writes: NULL is stderr in the executable's format */
    void (*log_fn)(void *ud, int level, const char *msg);
    void *log_ud;
} sv_server;

extern _Thread_local sv_server *sv_cur;
#define sv_shards (sv_cur->shards)
#define sv_stop_requested (sv_cur->stop_requested)
#define sv_next_client_id (sv_cur->next_client_id)

/* The instance's state with its defaults (settings as the executable's defaults);
 * sv_server_free_state frees what the modules made, not the struct. */
void sv_server_init_state(sv_server *s);
void sv_server_free_state(sv_server *s);
void sv_tracking_init_state(sv_server *s); /* tracking.c */
void sv_tracking_free_state(sv_server *s);
/* For the unit tests and fuzz targets that run commands without starting shards: one
 * instance with its state, made on the first call, set as the calling thread's sv_cur. */
sv_server *sv_server_for_tests(void);

/* ---- command execution ---- */
typedef struct sv_ctx {
    sv_shard *sh;
    sv_session *sess;
    sv_reply r;
    int close_after; /* QUIT */
    int noroute;     /* forwarding: run here without the cluster routing check */
    int noblock;     /* EXEC runs its queued commands (and scripts theirs): a blocking
                      * command must behave as its non-blocking form */
    /* blocking (blocking.c): set by callers that can park a command (a connection, a
     * forwarded request); the command's waiter, if it parked, for the caller to
     * attach; the waiter being retried when the command runs from a serve pass */
    int can_block;
    struct sv_waiter *blocked;
    struct sv_waiter *retry;
    int coord_part; /* a part of a coordinated XREAD (fwd_multi.c): its keys were checked before */
} sv_ctx;

typedef void sv_cmd_fn(sv_ctx *c, int argc, sv_str *argv);

enum {
    SV_CMD_WRITE = 1 << 0,
    SV_CMD_READONLY = 1 << 1,
    SV_CMD_FAST = 1 << 2,
    SV_CMD_NOKEYS_ROUTE = 1 << 3, /* runs locally whatever shard owns its args */
    SV_CMD_MOVABLE = 1 << 4,
    SV_CMD_DENYOOM = 1 << 5,
    SV_CMD_LOADING = 1 << 6,
    SV_CMD_STALE = 1 << 7,
    SV_CMD_NOSCRIPT = 1 << 8,
    SV_CMD_ADMIN = 1 << 9,
    SV_CMD_PUBSUB = 1 << 10,
    SV_CMD_INTERNAL = 1 << 11, /* slotlane.*: used between shards, hidden from COMMAND */
    SV_CMD_BLOCKING = 1 << 12, /* may park the client (blocking.c): a forwarded one holds its connection */
};

typedef struct sv_cmd {
    const char *name; /* lowercase */
    sv_cmd_fn *fn;
    int arity;
    int flags;
    int first, last, step;
    const char *acl; /* space-separated categories, e.g. "@read @string @fast" */
    /* movable keys: fills key indexes, returns the count (or -1 on a syntax problem) */
    int (*getkeys)(int argc, sv_str *argv, int *keys, int max);
    /* ---- policy: how the server treats the command beyond running it. Zero is the
     * default everywhere, so an entry written with C(...) has the default policy;
     * give another one with CP(..., .field = value) in cmdtable.c. One line each in
     * server/README.md, "Command policies". ---- */
    uint8_t aof;    /* sv_aof_policy: what the log gets after it ran (WRITE commands) */
    uint8_t split;  /* sv_split_policy: keys on several shards, split per owner and merged */
    uint8_t fan;    /* sv_fan_policy: a keyless command about the keyspace of every shard */
    uint8_t coord;  /* sv_coord_policy: keys on several shards, run as steps (fwd_multi.c) */
    uint8_t touch;  /* sv_touch_policy: which keys a successful WRITE modified (WATCH) */
    uint8_t multi;  /* sv_multi_policy: what it does while a connection is in MULTI */
    uint16_t pflags; /* SV_P_* bits */
    /* keyspace notifications (notify.c): the event the command fires on argv[1] when
     * its reply says it changed something (ev_rule); or ev_fire chooses the events from
     * the arguments and the reply. ev_class 0: the command fires nothing, or fires what
     * depends on its work itself (sv_notify inside it). */
    uint16_t ev_class;  /* SV_N_* (notify.h) */
    uint8_t ev_rule;    /* SV_EV_ANY: any reply but an error; _POS: a positive integer; _NONNULL: not null or empty */
    const char *event;
    void (*ev_fire)(sv_ctx *c, int argc, sv_str *argv, const char *reply, size_t rlen);
} sv_cmd;

/* The log record of a WRITE command that did not reply an error (aof.c). */
enum sv_aof_policy {
    SV_AOF_ARGV = 0,   /* the command as the client sent it */
    SV_AOF_TTL,        /* EXPIRE family: the key's TTL state after it (PEXPIREAT/PERSIST/DEL); nothing on :0 */
    SV_AOF_GETEX,      /* as SV_AOF_TTL, nothing without an option or for a missing key */
    SV_AOF_STRING,     /* SETEX PSETEX: SET key value [PXAT abs] as the key is now */
    SV_AOF_SET,        /* SET: as SV_AOF_STRING when EX/PX made the TTL relative, else verbatim */
    SV_AOF_SREM_REPLY, /* SPOP: SREM of the members in its reply */
    SV_AOF_NONE,       /* nothing (its effect is logged another way) */
    SV_AOF_FUNCTION,   /* FUNCTION: verbatim for LOAD DELETE FLUSH RESTORE, nothing for the reads */
};
/* Keys on several shards (forwarding): one part per owner shard, replies merged. */
enum sv_split_policy {
    SV_SPLIT_NONE = 0, /* not split: CROSSSLOT, or coordinated (.coord) */
    SV_SPLIT_MGET,     /* replies merged in key order */
    SV_SPLIT_PAIRS_OK, /* key value pairs (MSET): +OK */
    SV_SPLIT_SUM,      /* integer replies summed (DEL UNLINK EXISTS TOUCH) */
};
/* Keyless commands that cover every shard's keyspace (forwarding). */
enum sv_fan_policy {
    SV_FAN_NONE = 0,
    SV_FAN_SUM,        /* run on every shard, integers summed (DBSIZE) */
    SV_FAN_OK,         /* run on every shard, +OK (FLUSHALL FLUSHDB) */
    SV_FAN_CONCAT,     /* run on every shard, arrays concatenated (KEYS) */
    SV_FAN_SLOT_ARG,   /* CLUSTER COUNTKEYSINSLOT/GETKEYSINSLOT <slot>: to the slot's owner */
    SV_FAN_SAME,       /* FUNCTION LOAD/DELETE/FLUSH/RESTORE, SCRIPT LOAD/FLUSH: run on every shard,
                        * which all answer the same (the library name, the sha, +OK); other
                        * subcommands run where they arrive */
};
/* Keys on several shards run as a sequence of steps (fwd_multi.c). */
enum sv_coord_policy {
    SV_COORD_NONE = 0, SV_COORD_MSETNX, SV_COORD_RENAME, SV_COORD_RENAMENX, SV_COORD_LMOVE,
    SV_COORD_RPOPLPUSH, SV_COORD_SMOVE, SV_COORD_SINTER, SV_COORD_SUNION, SV_COORD_SDIFF,
    SV_COORD_SINTERSTORE, SV_COORD_SUNIONSTORE, SV_COORD_SDIFFSTORE, SV_COORD_SINTERCARD,
    SV_COORD_GATHER, /* the copies of every key, the command itself here, changed keys written back */
    SV_COORD_XREAD, /* XREAD and XREADGROUP, BLOCK or not */
    SV_COORD_WATCH, /* WATCH of another shard's keys: slotlane.watch there, versions kept here */
};
/* Which keys a WRITE command that replied no error modified: sv_signal_modified_key
 * is called for them (WATCH). Bits. */
enum sv_touch_policy {
    SV_TOUCH_ALL = 0,         /* every key argument */
    SV_TOUCH_FIRST = 1 << 0,  /* only the first key (the destination of *STORE) */
    SV_TOUCH_NOOP_ZERO = 1 << 1, /* a reply :0, null or an empty array: nothing changed */
    SV_TOUCH_SET = 1 << 2,    /* SET: a null reply without GET (NX/XX not met): nothing changed */
    SV_TOUCH_NONE = 1 << 3,   /* it signals what it changes itself (FLUSHALL, EXEC) */
    SV_TOUCH_OPTIONS = 1 << 4, /* GETEX: modifies only with an option */
};
/* While the connection is in MULTI. */
enum sv_multi_policy {
    SV_MULTI_QUEUE = 0,  /* queued, +QUEUED; runs at EXEC */
    SV_MULTI_NOW,        /* runs at once (EXEC DISCARD MULTI WATCH QUIT RESET) */
    SV_MULTI_DENY,       /* "Command not allowed inside a transaction", the transaction fails */
};
enum {
    SV_P_KEYSPACE = 1 << 0, /* uses the whole keyspace: waits for the connection's coordinated commands */
    SV_P_TX_EXEC = 1 << 1,    /* EXEC: forwarding sends the transaction to its keys' shard as a unit */
    SV_P_TX_RELEASE = 1 << 2, /* forwarding: first releases the watches taken on other shards (UNWATCH DISCARD RESET) */
    SV_P_KEYMISS = 1 << 8,    /* a WRITE whose key lookups are reads in Redis (lookupKeyRead: sources of a STORE): a missing key fires "keymiss" */
};

const sv_cmd *sv_cmd_lookup(const char *name, size_t len);
size_t sv_cmd_index(const sv_cmd *cmd);  /* its position in the table (sv_shard.cmdstats) */
size_t sv_cmd_count(void);               /* entries in the table, internal ones included */
const sv_cmd *sv_cmd_at(size_t i);
/* The counters of sv_shard.cmdstats: one slot per command, then one per Redis 7.0
 * subcommand (named `container|sub`, as INFO commandstats shows them). */
size_t sv_cmdstat_count(void);
const char *sv_cmdstat_name(size_t i);
int sv_cmdstat_listed(size_t i); /* not an internal command */
/* The slot a call counts in: its subcommand's for a container with argv[1], SIZE_MAX
 * for an unknown subcommand (counted nowhere but errorstats, as Redis rejects it). */
size_t sv_cmdstat_slot(const sv_cmd *cmd, int argc, const sv_str *argv);
/* The slots a name means (LATENCY HISTOGRAM): `config|get` one, a container all of
 * its subcommands', another command its own; *n = 0 for an unknown name. */
size_t sv_cmdstat_lookup(const char *name, size_t len, size_t *n);
/* The same, NULL for internal commands (what COMMAND INFO/DOCS/GETKEYS see). */
const sv_cmd *sv_cmd_lookup_public(const char *name, size_t len);
void sv_cmdtable_init(void);
const sv_cmd *sv_cmd_table(size_t *n); /* the public commands (COMMAND lists them) */
/* Fills key argument indexes of a command; returns count (0 if none). */
int sv_cmd_keypos(const sv_cmd *cmd, int argc, sv_str *argv, int *keys, int max);

/* Runs one request: lookup, arity, cluster routing (MOVED/CROSSSLOT), dispatch. */
void sv_execute(sv_ctx *c, int argc, sv_str *argv);
/* Runs a command that passed those checks, then logs it (.aof) and signals the keys
 * it modified (.touch). */
void sv_call(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv);

/* ---- statistics (t_admin.c) ---- */
void sv_stats_init(sv_shard *sh);
void sv_stats_free(sv_shard *sh);
/* CONFIG RESETSTAT: counters, commandstats, errorstats of the shard. */
void sv_stats_reset(sv_shard *sh);
/* An error reply (its first word is the errorstats key). */
void sv_stats_error(sv_shard *sh, const char *reply, size_t len);
/* A call that ran usec µs: SLOWLOG when over slowlog-log-slower-than. */
void sv_slowlog_push(sv_ctx *c, int argc, sv_str *argv, int64_t usec);
/* INFO memory: the allocator's figures (glibc mallinfo2) and the RSS, process-wide. */
typedef struct sv_meminfo {
    long long used, active, rss, peak, startup, total_system;
} sv_meminfo;
void sv_meminfo_read(sv_meminfo *m);
/* What the answering shard's structures take beside the data (MEMORY STATS, INFO
 * memory): its clients' buffers, the keyspace's entries and buckets, the TTL index
 * and the per-slot counts; total adds the startup memory, dataset is the rest. */
typedef struct sv_memover {
    sv_meminfo m;
    long long clients, keys, main, expires, slot_to_keys, total, dataset;
} sv_memover;
void sv_memory_overhead(sv_shard *sh, sv_memover *o);
/* The cron's samples (every 100 ms, 16 kept, as Redis): ops/s, input and output kbps. */
void sv_stats_sample(sv_shard *sh);
void sv_stats_instantaneous(sv_shard *sh, double *ops, double *in_kbps, double *out_kbps);
/* DEBUG SET-ACTIVE-EXPIRE: 0 stops the active expiry cycle (every shard). */
#define sv_active_expire (sv_cur->active_expire)
/* An LFU maxmemory-policy is set: accesses keep OBJECT FREQ's counter (db.c). */
#define sv_lfu_on (sv_cur->lfu_on)
#define sv_lfu_log_factor (sv_cur->lfu_log_factor)
void sv_lfu_incr(sv_obj *o);

/* ---- keyspace (db.c) ---- */
sv_entry *sv_db_lookup(sv_shard *sh, sv_str key);        /* NULL if missing/expired */
sv_entry *sv_db_lookup_write(sv_shard *sh, sv_str key);  /* same, for writes */
/* The same without counting a hit or touching its access time (OBJECT, DEBUG OBJECT). */
sv_entry *sv_db_lookup_notouch(sv_shard *sh, sv_str key);
/* Looks the key up and checks its type: returns -1 after replying WRONGTYPE,
 * 0 when missing, 1 when found (*e set). */
int sv_db_get_typed(sv_ctx *c, sv_str key, int type, sv_entry **e);
sv_entry *sv_db_add(sv_shard *sh, sv_str key, sv_obj *o); /* key must not exist */
/* Replaces or adds the value; keeps no TTL unless keepttl. */
sv_entry *sv_db_set(sv_shard *sh, sv_str key, sv_obj *o, int keepttl);
int sv_db_delete(sv_shard *sh, sv_str key);
/* The same, firing "del" when the key existed: a STORE command whose result is empty. */
int sv_db_delete_notify(sv_shard *sh, sv_str key);
void sv_db_delete_entry(sv_shard *sh, sv_entry *e);
void sv_db_set_expire(sv_shard *sh, sv_entry *e, int64_t when_ms);
void sv_db_persist(sv_shard *sh, sv_entry *e);
void sv_db_flush(sv_shard *sh);
void sv_db_free(sv_shard *sh);
int sv_db_expired(sv_shard *sh, sv_entry *e);
/* Every write path calls it when a key's value changed or the key was removed
 * (commands through sv_call by their .touch policy, expiry, FLUSHALL/FLUSHDB,
 * forwarded and coordinated steps, which run through sv_call on the owner).
 * WATCH (multi.c) keeps a version per watched key here; nothing watched: returns at
 * once. Hook other per-key reactions in here. */
void sv_signal_modified_key(sv_shard *sh, sv_str key);
/* WATCH's versions (db.c): a watched key's entry counts its watchers. */
uint64_t sv_watch_add(sv_shard *sh, sv_str key);      /* +1 watcher; the current version */
uint64_t sv_watch_version(sv_shard *sh, sv_str key);  /* of a key with watchers */
void sv_watch_release(sv_shard *sh, sv_str key);      /* -1 watcher */
/* An expired key found: logs it as deleted (DEL in the log), counts it. */
void sv_db_note_expired(sv_shard *sh, sv_entry *e);
/* ... and deletes it. */
void sv_db_expire_entry(sv_shard *sh, sv_entry *e);
/* Deletes an aggregate key that became empty. */
void sv_db_delete_if_empty(sv_shard *sh, sv_entry *e);
/* Active expiry: samples the expiring keys; returns how many were removed. */
size_t sv_expire_cycle(sv_shard *sh, int64_t budget_us);

/* ---- shared reply helpers and argument parsing (cmdutil in db.c) ---- */
extern const char *SV_ERR_WRONGTYPE;
extern const char *SV_ERR_NOTINT;
extern const char *SV_ERR_NOTFLOAT;
extern const char *SV_ERR_SYNTAX;
extern const char *SV_ERR_OVERFLOW;
extern const char *SV_ERR_NOSUCHKEY;
extern const char *SV_ERR_OUTOFRANGE;
int sv_get_ll(sv_ctx *c, sv_str a, long long *v);              /* replies error on failure */
int sv_get_ll_range(sv_ctx *c, sv_str a, long long min, long long max, long long *v, const char *msg);
/* A timeout in milliseconds as Redis's getTimeoutFromObjectOrReply (WAIT, CLIENT
 * PAUSE): an integer >= 0, else its error replied and 0 returned. */
int sv_get_ms_timeout(sv_ctx *c, sv_str a, long long *ms);
int sv_get_double(sv_ctx *c, sv_str a, double *v);
void sv_add_arity_error(sv_ctx *c, const char *cmdname);
/* Parses the SCAN family's options (COUNT, MATCH, TYPE when allowtype). */
typedef struct sv_scanopts {
    long long count;
    sv_str match;
    int has_match;
    int type; /* -1 any */
} sv_scanopts;
/* [B]LMPOP/[B]ZMPOP's numkeys key... FIRST|SECOND [COUNT n], numkeys at argv[ni]
 * (1, or 2 after the blocking forms' timeout), the keys after it (which: 0 first,
 * 1 second); replies the error and returns 0 on bad arguments. */
typedef struct sv_mpop {
    long long numkeys, count;
    int which;
} sv_mpop;
int sv_parse_mpop(sv_ctx *c, int argc, sv_str *argv, int ni, const char *first, const char *second, sv_mpop *o);
/* Key positions of a command with numkeys at argv[ni] and that many keys after it,
 * followed by at least `after` more arguments: -1 when numkeys is bad (routing). */
int sv_numkeys_keys(int argc, sv_str *argv, int ni, int after, int *keys, int max);
int sv_parse_scan_cursor(sv_ctx *c, sv_str a, uint64_t *cursor);
int sv_parse_scanopts(sv_ctx *c, int argc, sv_str *argv, int start, int allowtype, sv_scanopts *o);

/* ---- cluster (cluster.c) ---- */
static inline int sv_slot_owner(unsigned slot) { return (int)((uint64_t)slot * (uint64_t)sv_cfg.shards / SL_SLOTS); }
void sv_cluster_ranges(int shard, unsigned *lo, unsigned *hi);
void sv_cluster_init_shard(sv_shard *sh);
void sv_cmd_cluster(sv_ctx *c, int argc, sv_str *argv);
void sv_cmd_readonly(sv_ctx *c, int argc, sv_str *argv);

/* ---- command families ---- */
#define SV_DECL(name) void sv_cmd_##name(sv_ctx *c, int argc, sv_str *argv)
/* connection/server (t_server.c) */
SV_DECL(ping); SV_DECL(echo); SV_DECL(quit); SV_DECL(select); SV_DECL(hello); SV_DECL(auth);
SV_DECL(client); SV_DECL(info); SV_DECL(config); SV_DECL(command); SV_DECL(dbsize);
SV_DECL(flushall); SV_DECL(time); SV_DECL(reset); SV_DECL(bgrewriteaof);
/* client-output-buffer-limit's canonical value applied (t_server.c); NULL or Redis's message */
const char *sv_set_output_limits(sv_str v);
/* introspection (t_admin.c) */
SV_DECL(object); SV_DECL(debug); SV_DECL(slowlog); SV_DECL(latency); SV_DECL(role); SV_DECL(wait);
SV_DECL(lastsave); SV_DECL(memory); SV_DECL(shutdown);
/* strings */
SV_DECL(get); SV_DECL(set); SV_DECL(setnx); SV_DECL(setex); SV_DECL(psetex); SV_DECL(getset);
SV_DECL(getdel); SV_DECL(getex); SV_DECL(mget); SV_DECL(mset); SV_DECL(msetnx); SV_DECL(append);
SV_DECL(strlen); SV_DECL(getrange); SV_DECL(setrange); SV_DECL(incr); SV_DECL(decr);
SV_DECL(incrby); SV_DECL(decrby); SV_DECL(incrbyfloat);
/* bitmaps (t_bitops.c) */
SV_DECL(setbit); SV_DECL(getbit); SV_DECL(bitcount); SV_DECL(bitpos); SV_DECL(bitop); SV_DECL(bitfield);
SV_DECL(bitfield_ro);
/* HyperLogLog (t_hll.c) */
SV_DECL(pfadd); SV_DECL(pfcount); SV_DECL(pfmerge); SV_DECL(pfdebug); SV_DECL(pfselftest);
/* geo (t_geo.c) */
SV_DECL(geoadd); SV_DECL(geopos); SV_DECL(geodist); SV_DECL(geohash); SV_DECL(georadius); SV_DECL(georadius_ro);
SV_DECL(georadiusbymember); SV_DECL(georadiusbymember_ro); SV_DECL(geosearch); SV_DECL(geosearchstore);
/* keys */
SV_DECL(del); SV_DECL(exists); SV_DECL(type); SV_DECL(rename); SV_DECL(renamenx); SV_DECL(keys);
SV_DECL(scan); SV_DECL(randomkey); SV_DECL(touch); SV_DECL(expire); SV_DECL(pexpire);
SV_DECL(expireat); SV_DECL(pexpireat); SV_DECL(ttl); SV_DECL(pttl); SV_DECL(persist);
SV_DECL(expiretime); SV_DECL(pexpiretime); SV_DECL(copy); SV_DECL(move); SV_DECL(lcs); SV_DECL(sort); SV_DECL(sort_ro);
/* lists */
SV_DECL(lpush); SV_DECL(rpush); SV_DECL(lpushx); SV_DECL(rpushx); SV_DECL(lpop); SV_DECL(rpop);
SV_DECL(llen); SV_DECL(lrange); SV_DECL(lindex); SV_DECL(lset); SV_DECL(linsert); SV_DECL(lrem);
SV_DECL(ltrim); SV_DECL(lpos); SV_DECL(lmove); SV_DECL(rpoplpush); SV_DECL(lmpop);
/* hashes */
SV_DECL(hset); SV_DECL(hsetnx); SV_DECL(hget); SV_DECL(hmget); SV_DECL(hdel); SV_DECL(hlen);
SV_DECL(hexists); SV_DECL(hgetall); SV_DECL(hkeys); SV_DECL(hvals); SV_DECL(hincrby);
SV_DECL(hincrbyfloat); SV_DECL(hstrlen); SV_DECL(hrandfield); SV_DECL(hscan); SV_DECL(hmset);
/* sets */
SV_DECL(sadd); SV_DECL(srem); SV_DECL(smembers); SV_DECL(sismember); SV_DECL(smismember);
SV_DECL(scard); SV_DECL(spop); SV_DECL(srandmember); SV_DECL(smove); SV_DECL(sinter);
SV_DECL(sunion); SV_DECL(sdiff); SV_DECL(sinterstore); SV_DECL(sunionstore); SV_DECL(sdiffstore);
SV_DECL(sintercard); SV_DECL(sscan);
/* sorted sets */
SV_DECL(zadd); SV_DECL(zrem); SV_DECL(zscore); SV_DECL(zmscore); SV_DECL(zincrby); SV_DECL(zcard);
SV_DECL(zcount); SV_DECL(zrank); SV_DECL(zrevrank); SV_DECL(zrange); SV_DECL(zrangebyscore);
SV_DECL(zrevrangebyscore); SV_DECL(zrangebylex); SV_DECL(zrevrangebylex); SV_DECL(zpopmin); SV_DECL(zpopmax);
SV_DECL(zremrangebyrank); SV_DECL(zremrangebyscore); SV_DECL(zremrangebylex); SV_DECL(zscan);
SV_DECL(zrevrange); SV_DECL(zlexcount);
SV_DECL(zrevrange); SV_DECL(zlexcount); SV_DECL(zrangestore);
SV_DECL(zrandmember); SV_DECL(zmpop); SV_DECL(zunion); SV_DECL(zinter); SV_DECL(zdiff); SV_DECL(zunionstore);
SV_DECL(zinterstore); SV_DECL(zdiffstore); SV_DECL(zintercard);
/* streams (t_stream.c) */
SV_DECL(xadd); SV_DECL(xlen); SV_DECL(xrange); SV_DECL(xrevrange); SV_DECL(xdel); SV_DECL(xtrim);
SV_DECL(xread); SV_DECL(xreadgroup); SV_DECL(xgroup); SV_DECL(xack); SV_DECL(xpending);
SV_DECL(xclaim); SV_DECL(xautoclaim); SV_DECL(xinfo); SV_DECL(xsetid);
SV_DECL(slotlane_xmeta); SV_DECL(slotlane_xpel); SV_DECL(slotlane_xprep); SV_DECL(slotlane_xcancel);
/* For the cross-shard XREAD/XREADGROUP (fwd_multi.c): the option errors, as Redis
 * gives them before looking at any key (0 after replying one), and what the options
 * say; then each key's ID error (after the key's own checks, as Redis orders them). */
typedef struct sv_xread_opts {
    int sarg, nstreams; /* keys argv[sarg ..], their IDs after them */
    long long count;    /* COUNT (0: none) */
    int block;          /* BLOCK was given */
    sv_str group;       /* XREADGROUP's group */
} sv_xread_opts;
int sv_xread_check(sv_ctx *c, int argc, sv_str *argv, int group_cmd, sv_xread_opts *o);
int sv_xread_check_id(sv_ctx *c, sv_str ida, int group_cmd);
/* blocking lists and sorted sets (t_block.c) */
SV_DECL(blpop); SV_DECL(brpop); SV_DECL(blmove); SV_DECL(brpoplpush); SV_DECL(blmpop);
SV_DECL(bzpopmin); SV_DECL(bzpopmax); SV_DECL(bzmpop);
/* pub/sub (pubsub.c) */
SV_DECL(subscribe); SV_DECL(psubscribe); SV_DECL(ssubscribe); SV_DECL(unsubscribe); SV_DECL(punsubscribe);
SV_DECL(sunsubscribe); SV_DECL(publish); SV_DECL(spublish); SV_DECL(pubsub);
/* internal, between shards (t_transfer.c) */
SV_DECL(slotlane_take); SV_DECL(slotlane_restore); SV_DECL(slotlane_dump);
SV_DECL(slotlane_rename_from); SV_DECL(slotlane_rename_to);
/* transactions (multi.c) */
SV_DECL(multi); SV_DECL(exec); SV_DECL(discard); SV_DECL(watch); SV_DECL(unwatch);
SV_DECL(slotlane_watch); SV_DECL(slotlane_unwatch); SV_DECL(slotlane_exec);

/* multi.c: sv_execute's side of MULTI — a refused command fails the transaction; a
 * command to queue (+QUEUED). */
void sv_tx_flag_error(sv_ctx *c);
sv_tx *sv_tx_get(sv_session *s); /* made on first use */
void sv_tx_queue(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv);
/* The connection is gone: the queue and the watches kept on sh go. */
void sv_tx_free(sv_shard *sh, sv_session *s);
/* Watches (forwarding records the versions another shard answered). */
int sv_tx_watching(const sv_tx *tx, sv_str key);
void sv_tx_add_watch(sv_tx *tx, sv_str key, int shard, uint64_t version);
/* Forgets the watches kept by shard `shard` (-1: all): those kept on sh are
 * released, another shard's are marked released (fwd.c tells that shard). */
void sv_tx_drop_watches(sv_shard *sh, sv_tx *tx, int shard);
/* Forgets the queue (EXEC sent it elsewhere, DISCARD, EXECABORT). */
void sv_tx_clear_queue(sv_tx *tx);

/* HSCAN/SSCAN/ZSCAN over a collection's dict; kind is SV_T_HASH/SET/ZSET. */
void sv_scan_collection(sv_ctx *c, sv_dict *d, uint64_t cursor, int argc, sv_str *argv, int kind);
/* HRANDFIELD/ZRANDMEMBER key [count [withname]] of a hash or sorted set (type): one
 * random entry, count distinct ones, or -count with repeats; add_value replies an
 * entry's value (the field's value, the member's score) for withname. */
void sv_random_entries(sv_ctx *c, int argc, sv_str *argv, int type, const char *withname,
                       void (*add_value)(sv_ctx *c, sv_entry *e));
/* Writes an empty [ "0", [] ] scan reply. */
void sv_add_empty_scan(sv_ctx *c);

/* set/zset helpers used by the keyspace */
void sv_zset_free(sv_zset *z);
void sv_list_free(sv_list *l);

#endif
