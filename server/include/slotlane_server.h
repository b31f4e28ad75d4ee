/*
 * slotlane_server.h — slotlane-server as a library: start a sharded Redis-protocol
 * server inside your process (for tests: a real cluster on loopback with slots, MOVED
 * and forwarding as in production), learn its ports, stop it.
 *
 * Conventions (as slotlane.h):
 *  - Calls that can fail return int: 0 or a negative SL_SERVER_E* code, with a message
 *    in the caller's buffer (errmsg, errmsg_cap; NULL/0 for none).
 *  - Several servers run in one process at once; nothing is shared between two of them
 *    (settings, CONFIG SET, keyspaces, pub/sub, CLIENT PAUSE are per server).
 *  - A server runs one thread per shard. The library installs no signal handler and
 *    changes no process setting: its threads block SIGPIPE, SIGINT and SIGTERM (writes
 *    to a closed socket fail with EPIPE; the host's handlers run on the host's threads).
 *  - The process is the host's: SHUTDOWN from a client is refused with an error (the host
 *    stops the server), and nothing here exits or aborts on bad input or a bad client.
 *  - A handle is used by one thread at a time (any thread); sl_server_stop waits for
 *    the shard threads, so it must not be called from a callback of this server.
 *  - Option structs carry their version and their size; fields are only appended.
 *  - Not usable in a child after fork() (the shard threads are not there).
 */
#ifndef SLOTLANE_SERVER_H
#define SLOTLANE_SERVER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SL_SERVER_EXTERN __attribute__((visibility("default")))
#else
#define SL_SERVER_EXTERN
#endif

typedef enum sl_server_error {
    SL_SERVER_OK = 0,
    SL_SERVER_EINVAL = -1,   /* a bad option (message names it) */
    SL_SERVER_EBIND = -2,    /* a port could not be bound (in use, bad address) */
    SL_SERVER_EDIR = -3,     /* the durability directory cannot be used, is locked by another
                                server, or its logs are damaged */
    SL_SERVER_ESTATE = -4,   /* the call does not fit the server's state (stopped, NULL handle) */
} sl_server_error;

enum { SL_SERVER_PER_SHARD = 0, SL_SERVER_ONE_PORT = 1 };                 /* port_mode */
enum { SL_SERVER_MOVED = 0, SL_SERVER_FORWARD = 1 };                      /* misrouted */
enum { SL_SERVER_MEMORY = 0, SL_SERVER_EVERYSEC = 1, SL_SERVER_ALWAYS = 2 }; /* durability */
enum { SL_SERVER_LOG_DEBUG = 0, SL_SERVER_LOG_VERBOSE, SL_SERVER_LOG_NOTICE, SL_SERVER_LOG_WARNING,
       SL_SERVER_LOG_NONE };

#define SL_SERVER_OPTIONS_VERSION 1

/* Initialise with SL_SERVER_OPTIONS_INIT or sl_server_options_init(); strings are only
 * read during sl_server_start (copied). */
typedef struct sl_server_options {
    unsigned int version;   /* SL_SERVER_OPTIONS_VERSION */
    unsigned int size;      /* sizeof(sl_server_options) as the caller compiled it */
    int shards;             /* 1..256; default 1 */
    int port_mode;          /* SL_SERVER_PER_SHARD (shard i on its own port, answers like a Redis
                               Cluster primary) or SL_SERVER_ONE_PORT (every shard on one port,
                               keys forwarded to their owner) */
    int misrouted;          /* per-shard mode, a key of another shard: SL_SERVER_MOVED (-MOVED, the
                               default) or SL_SERVER_FORWARD */
    int durability;         /* SL_SERVER_MEMORY (default), _EVERYSEC or _ALWAYS: a log per shard in
                               dir, replayed at start */
    const char *dir;        /* the logs' directory (created if missing); NULL: "." */
    const char *bind;       /* listen address; NULL: "127.0.0.1" */
    int port;               /* 0 (default): ephemeral ports chosen by the kernel (per shard, or one
                               for all in one-port mode); else the base port, shard i on port+i */
    int log_level;          /* SL_SERVER_LOG_*; default SL_SERVER_LOG_WARNING */
    /* where log lines go; NULL: stderr, as the executable writes them. Called from the shard
       threads (and the starting thread), never with a lock of the caller held. */
    void (*log_fn)(void *ud, int level, const char *msg);
    void *log_ud;
    /* any other setting of the executable, as name/value pairs of its flags without the
       dashes ("maxclients", "100", "hash-max-listpack-entries", "64", ...): nsettings
       strings, name then value; NULL/0 for none. */
    const char *const *settings;
    size_t nsettings;
} sl_server_options;

#define SL_SERVER_OPTIONS_INIT { SL_SERVER_OPTIONS_VERSION, (unsigned int)sizeof(sl_server_options), \
        1, SL_SERVER_PER_SHARD, SL_SERVER_MOVED, SL_SERVER_MEMORY, NULL, NULL, 0,                  \
        SL_SERVER_LOG_WARNING, NULL, NULL, NULL, 0 }

/* Fills opts with the defaults of the given version and sets size. SL_SERVER_EINVAL for an
 * unknown version. For bindings that cannot use the macro. */
SL_SERVER_EXTERN int sl_server_options_init(sl_server_options *opts, unsigned int version);

typedef struct sl_server sl_server;

/* Starts a server: replays the logs (durability), binds every port, starts the shard threads;
 * returns when every shard accepts connections. *out is the caller's (free with
 * sl_server_free). On failure *out is NULL, nothing is left running and errmsg says why. */
SL_SERVER_EXTERN int sl_server_start(sl_server **out, const sl_server_options *opts, char *errmsg,
                                     size_t errmsg_cap);

/* The number of shards; 0 for NULL. */
SL_SERVER_EXTERN int sl_server_shards(const sl_server *s);
/* The port of shard i (in one-port mode every shard's port is the same); 0 when i is out of
 * range. Valid after start, also after stop. */
SL_SERVER_EXTERN int sl_server_port(const sl_server *s, int i);
/* "redis://ADDR:PORT" of shard 0 (a cluster client discovers the others from it) into buf;
 * returns the length it needs without the NUL (as snprintf), or SL_SERVER_ESTATE. */
SL_SERVER_EXTERN int sl_server_url(const sl_server *s, char *buf, size_t cap);

/* Stops the server and waits for its threads: every connection is closed (its clients see
 * the connection end: I/O errors, not hangs), logs are flushed, ports are released. A second
 * call is a no-op. Not from a shard thread of this server. */
SL_SERVER_EXTERN void sl_server_stop(sl_server *s);

/* Stops the server if it runs, then frees the handle. NULL is a no-op. */
SL_SERVER_EXTERN void sl_server_free(sl_server *s);

#ifdef __cplusplus
}
#endif

#endif
