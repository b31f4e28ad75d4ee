/*
 * slotlane.h — the whole public API of libslotlane, the C core of the slotlane
 * Redis-protocol client SDK: cluster routing, the slot cache and per-node
 * batched pipelining, for C and for the six language bindings.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *  - Every call that can fail returns int: 0 (SL_OK) or a negative SL_E* code.
 *    The message of the last failure is sl_client_errmsg(); the library never
 *    prints, aborts or exits on bad input or a bad server.
 *  - Handles are opaque. A handle and everything made from it is used by one
 *    thread at a time; sl_client_cancel() is the one call that any thread may make
 *    at any time. There is no global mutable state and no hidden thread.
 *  - Input buffers are only read during the call and never retained.
 *  - Reply memory (records and data) belongs to the batch and stays valid until
 *    the batch's next execution, reset or free.
 *  - Option structs carry their version and their size; fields are only appended.
 *  - A client is not usable in a child after fork(); create clients after forking. Every
 *    execution or submission in a child fails with SL_EFORK, never hangs or shares sockets.
 */
#ifndef SLOTLANE_H
#define SLOTLANE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SL_EXTERN __declspec(dllexport)
#elif defined(__GNUC__)
#define SL_EXTERN __attribute__((visibility("default")))
#else
#define SL_EXTERN
#endif

/* ------------------------------------------------------------------ version */

#define SL_VERSION_MAJOR 0
#define SL_VERSION_MINOR 1
#define SL_VERSION_PATCH 0

/* The library's version as "MAJOR.MINOR.PATCH" (the repository's VERSION file).
 * Static storage; never NULL. */
SL_EXTERN const char *sl_version(void);

/* ------------------------------------------------------------------- errors */

/* Return codes. New codes are only appended. */
typedef enum sl_error_code {
    SL_OK = 0,
    SL_EINVAL = -1,       /* a bad argument: NULL handle, bad option, malformed command bytes, bad URL */
    SL_ENOMEM = -2,       /* an allocation failed (the handle stays usable) */
    SL_EIO = -3,          /* connecting, writing or reading failed */
    SL_ETIMEOUT = -4,     /* a connect or execution deadline passed */
    SL_EPROTO = -5,       /* the server sent bytes that are not RESP, or exceeded a limit */
    SL_ESERVER = -6,      /* the server answered an error (one-command helper only) */
    SL_EREDIRECT = -7,    /* too many MOVED/ASK/TRYAGAIN/CLUSTERDOWN for one command */
    SL_ECANCELLED = -8,   /* sl_client_cancel() was called during the execution */
    SL_ECLUSTER = -9,     /* discovery failed, no node for a slot, or CROSSSLOT refused */
    SL_ETOOSMALL = -10,   /* caller buffers too small: the sizes say how much is needed */
    SL_EUNSUPPORTED = -11,/* a feature this build does not have (e.g. TLS in a build without OpenSSL) */
    SL_ESTATE = -12,      /* the call is not valid in the handle's state */
    SL_EBUSY = -13,       /* the client's in-flight bound (max_inflight_batches / _bytes) is
                             reached and the submission asked to fail fast (slotlane_uv.h) */
    SL_EFORK = -14,      /* the client (or loop) was made in another process: it was used in
                             a child after fork(); make a new one in the child */
    SL_ETLS = -15,        /* TLS failed: a certificate, key or CA that cannot be loaded, a
                             handshake or verification that failed (the message says what) */
    /* -16..-23 are taken by other parts of this version (pub/sub, replicas). */
    SL_EBLOCKING = -24,   /* a blocking command (BLPOP, XREAD BLOCK, WAIT...) in a pipeline of
                             several commands: refused, nothing sent. Run it alone (it leases a
                             connection of its own) or in an sl_session */
    SL_EWATCHMOVED = -25, /* the slot of a session moved (MOVED/ASK) while its keys were
                             watched or a MULTI was open: the transaction cannot hold; the
                             session is broken (close it and start over on the new owner) */
    SL_EABORTED = -26     /* EXEC answered nil: a watched key changed, nothing was applied */
} sl_error_code;

/* A short static description of a code, e.g. "I/O error". Never NULL. */
SL_EXTERN const char *sl_strerror(int code);

/* --------------------------------------------------------------- allocator */

#define SL_ALLOCATOR_VERSION 1

/* Allocator hooks: every allocation of a client and its batches goes through them.
 * realloc(NULL, n) must behave as malloc; free(NULL) must be a no-op.
 * Initialise with SL_ALLOCATOR_INIT and set the three functions (and ctx).
 * sl_client_new() checks version and size before reading the rest (SL_EINVAL otherwise)
 * and copies the struct; ctx is kept and passed to every call. */
typedef struct sl_allocator {
    unsigned int version;       /* SL_ALLOCATOR_VERSION */
    unsigned int size;          /* sizeof(sl_allocator) as the caller compiled it */
    void *(*malloc_fn)(size_t size, void *ctx);
    void *(*realloc_fn)(void *ptr, size_t size, void *ctx);
    void (*free_fn)(void *ptr, void *ctx);
    void *ctx;
} sl_allocator;

#define SL_ALLOCATOR_INIT { SL_ALLOCATOR_VERSION, (unsigned int)sizeof(sl_allocator), NULL, NULL, NULL, NULL }

/* ------------------------------------------------------------------ options */

typedef enum sl_mode {
    SL_MODE_AUTO = 0,     /* ask the seed: CLUSTER SLOTS answers -> cluster, an error -> plain */
    SL_MODE_PLAIN = 1,    /* one node, no discovery, no routing: the server sees every command */
    SL_MODE_CLUSTER = 2   /* discover the slot map and route every command by its key */
} sl_mode;

/* ---------------------------------------------------------------------- TLS */

/* A TLS configuration (OpenSSL 3): made once, shared by any number of clients on any
 * threads. It is immutable after sl_tls_new(); each client holds a reference of its own,
 * so the caller may sl_tls_free() its reference at once after sl_client_new(). */
typedef struct sl_tls sl_tls;

typedef enum sl_tls_verify {
    SL_TLS_VERIFY_FULL = 0,          /* the chain to a trusted CA and the host name (default) */
    SL_TLS_VERIFY_CHAIN = 1,         /* the chain only: a certificate of the CA for any name */
    SL_TLS_VERIFY_NONE_INSECURE = 2  /* nothing: whoever is on the path can read and change
                                        the traffic. For tests only. */
} sl_tls_verify;

/* The name a node learned from the cluster's topology (not a seed) is verified against. */
typedef enum sl_tls_node_names {
    SL_TLS_NODES_ADDRESS = 0,        /* the address the cluster announced it by, IP or host
                                        name (an IP is matched against the IP SANs) (default) */
    SL_TLS_NODES_HOSTNAME = 1,       /* the host name the node announces (Redis 7
                                        cluster-announce-hostname), else its address */
    SL_TLS_NODES_SERVER_NAME = 2,    /* server_name for every node: one certificate for all */
    SL_TLS_NODES_CHAIN_ONLY = 3      /* the chain only (seeds are still verified by name) */
} sl_tls_node_names;

#define SL_TLS_OPTIONS_VERSION 1

/* TLS options. Initialise with SL_TLS_OPTIONS_INIT or sl_tls_options_init(). Strings and
 * PEM bytes are only read during sl_tls_new(). Trusted CAs: any of ca_file, ca_dir and
 * ca_pem, and the system's store when system_roots says so. A client certificate (mutual
 * TLS) is cert_file or cert_pem (the leaf first, then its chain) with key_file or key_pem
 * (unencrypted PEM). */
typedef struct sl_tls_options {
    unsigned int version;       /* SL_TLS_OPTIONS_VERSION */
    unsigned int size;          /* sizeof(sl_tls_options) as the caller compiled it */
    const char *ca_file;        /* PEM file of trusted CAs; NULL: none */
    const char *ca_dir;         /* directory of hashed CA certificates (c_rehash); NULL: none */
    const char *ca_pem;         /* PEM bytes of trusted CAs; NULL: none */
    size_t ca_pem_len;          /* 0: strlen(ca_pem) */
    int system_roots;           /* 1: trust the system's store too; 0: never;
                                   -1 (default): only when no CA above is given */
    const char *cert_file;      /* client certificate chain, PEM; NULL: none */
    const char *key_file;       /* its private key, PEM */
    const char *cert_pem;       /* or the same as bytes */
    size_t cert_pem_len;        /* 0: strlen(cert_pem) */
    const char *key_pem;
    size_t key_pem_len;         /* 0: strlen(key_pem) */
    sl_tls_verify verify;       /* default SL_TLS_VERIFY_FULL */
    const char *server_name;    /* the name the seeds are verified against and sent as SNI,
                                   instead of their address; NULL: the address */
    sl_tls_node_names node_names; /* default SL_TLS_NODES_ADDRESS */
} sl_tls_options;

#define SL_TLS_OPTIONS_INIT { SL_TLS_OPTIONS_VERSION, (unsigned int)sizeof(sl_tls_options), NULL, NULL, \
        NULL, 0, -1, NULL, NULL, NULL, 0, NULL, 0, SL_TLS_VERIFY_FULL, NULL, SL_TLS_NODES_ADDRESS }

/* Fills opts with the defaults of the given version; SL_EINVAL for an unknown version. */
SL_EXTERN int sl_tls_options_init(sl_tls_options *opts, unsigned int version);

/* 1 when this build has TLS (OpenSSL), else 0 (sl_tls_new then answers SL_EUNSUPPORTED). */
SL_EXTERN int sl_tls_supported(void);

/* Makes a TLS configuration: loads the CAs, the client certificate and key now, so a bad
 * file fails here (SL_ETLS, or SL_EINVAL for contradictory options, SL_EUNSUPPORTED in a
 * build without TLS) with a message in errmsg (at most errmsg_cap bytes, NUL-terminated).
 * *out is the caller's reference: release it with sl_tls_free(). Any thread. */
SL_EXTERN int sl_tls_new(sl_tls **out, const sl_tls_options *opts, char *errmsg, size_t errmsg_cap);

/* Releases the caller's reference; the configuration is freed when no client holds it any
 * more. NULL is a no-op. Any thread. */
SL_EXTERN void sl_tls_free(sl_tls *tls);

/* Where read-only commands go (sl_client_options.read_from, version 4). A command is
 * read-only when Redis's command table flags it so (GET, MGET, HGETALL, ZRANGE, SCAN's
 * per-node passes are not affected: they name their node). Replica connections send
 * READONLY in their handshake, so a replica serves its primary's slots; a replica's data
 * may lag its primary's (replication is asynchronous). */
typedef enum sl_read_from {
    SL_READ_PRIMARY = 0,              /* every command to the slot's primary (default) */
    SL_READ_PREFER_REPLICA = 1,       /* read-only commands to the first usable replica of the
                                         slot's primary (the same one while it works), else
                                         to the primary */
    SL_READ_REPLICAS_ROUND_ROBIN = 2  /* read-only commands rotate over the primary's usable
                                         replicas, else go to the primary */
} sl_read_from;

/* What the event callback (sl_client_options.on_event, version 4) reports. */
typedef enum sl_event_type {
    SL_EVENT_TOPOLOGY_CHANGED = 1, /* a refresh changed the slot map or the replicas; addr: the
                                      node that answered the refresh */
    SL_EVENT_NODE_DOWN = 2,        /* a working connection to addr broke, or a connect to a node
                                      that had worked failed: once per outage */
    SL_EVENT_NODE_UP = 3,          /* addr, reported down, connected again */
    SL_EVENT_FAILOVER = 4          /* addr, a replica of a slot's primary, owns the slot now (a
                                      refresh or a MOVED showed it); once per promotion */
} sl_event_type;

/* The event callback: ctx is on_event_ctx; addr ("host:port", NUL-terminated) is valid only
 * during the call. It runs on the thread that runs the client's executions — the caller's
 * thread inside a blocking call (sl_batch_exec, sl_client_refresh, sl_client_new...), the
 * loop's thread with slotlane_uv.h — from inside the library: it must return quickly and
 * must not call the client, its batches or its loop (hand the event to another thread or
 * queue instead). */
typedef void (*sl_event_fn)(void *ctx, sl_event_type type, const char *addr);

#define SL_CLIENT_OPTIONS_VERSION 4

/* Client options. Initialise with SL_CLIENT_OPTIONS_INIT or sl_client_options_init()
 * and set what differs. Strings are only read during sl_client_new() (copied). */
typedef struct sl_client_options {
    unsigned int version;       /* SL_CLIENT_OPTIONS_VERSION */
    unsigned int size;          /* sizeof(sl_client_options) as the caller compiled it */

    /* Where to connect: "redis://[user:password@]host:port[/db]", "host:port", or several
     * seeds separated by commas ("h1:p1,h2:p2"); NULL means "127.0.0.1:6379".
     * "rediss://..." connects with TLS: with the tls field's configuration, or one with the
     * defaults (the system's CAs, full verification) when tls is NULL; SL_EUNSUPPORTED in
     * a build without TLS. Every seed of a list has the same scheme.
     * Credentials and db in the URL are used unless the fields below are set. */
    const char *url;
    sl_mode mode;
    const char *username;       /* NULL: none (or the URL's) */
    const char *password;       /* NULL: none (or the URL's) */
    int db;                     /* SELECT in plain mode; -1: the URL's, else 0 */
    int resp_version;           /* 2 (default) or 3 (HELLO 3 on every connection) */
    int connect_timeout_ms;     /* per connection attempt; default 2000 */
    int command_timeout_ms;     /* default deadline of one execution; 0 = none; default 5000 */
    int max_redirects;          /* per command; default 5 */
    int refresh_interval_ms;    /* periodic slot-map refresh; 0 (default) = only after MOVED */
    int reconnect_min_ms;       /* backoff after a failed connect: first wait; default 10 */
    int reconnect_max_ms;       /* backoff ceiling (with jitter); default 1000 */
    const sl_allocator *allocator; /* NULL: malloc/realloc/free; copied, ctx kept */
    /* Reply limits: exceeding one is a protocol error on that connection. */
    uint64_t max_bulk_len;      /* default 512 MiB */
    uint64_t max_aggregate_len; /* elements of one array/map/set; default 2^30 */
    int max_depth;              /* nesting; default 32 */
    /* Version 2. Backpressure of the asynchronous API (slotlane_uv.h, sl_loop_submit_cq):
     * at most this many batches, and this many command bytes, submitted and not yet
     * completed at once; a submission past either bound waits or fails with SL_EBUSY, as
     * its flags ask. A single batch larger than max_inflight_bytes is admitted when
     * nothing else is in flight. Callers of version 1 get the defaults. */
    unsigned int max_inflight_batches; /* default 4096; 0 = the default */
    uint64_t max_inflight_bytes;       /* default 64 MiB; 0 = the default */
    /* Version 3. */
    sl_tls *tls;                /* not NULL: every connection the client opens (seeds,
                                   discovered nodes, reconnects) uses TLS with it, whatever the
                                   URL's scheme; the client takes its own reference. The
                                   handshake runs within connect_timeout_ms, and nothing is
                                   sent before the server's certificate is verified. */
    /* v4 (blocking): leased connections (blocking commands and sessions, see "Blocking
     * commands and sessions" below). Callers of versions 1-3 get the defaults. */
    int blocking_grace_ms;      /* a leased blocking command's deadline is its block time plus
                                   this; default 1000; 0 = the default */
    int lease_idle_max;         /* idle leased connections kept per node for reuse; default 4;
                                   0 = the default, -1 = none (close each after use) */
    /* v4 (replicas): replica reads and failover. Callers of versions 1-3 get the defaults.
     * In a cluster, when a node's connection is lost: commands that never reached its socket
     * (its connect failed, or it was down) are routed again by their slot and resent, with
     * backoff and a rate-limited refresh of the map from another known node, until the
     * execution's deadline (then SL_ERR_TIMEOUT); a read-only command that was sent is
     * retried once the same way; a write that was sent fails with SL_ERR_IO and a message
     * ending "(the command was sent: it may have been executed)", unless retry_writes. */
    sl_read_from read_from;     /* default SL_READ_PRIMARY */
    int retry_writes;           /* 1: a sent write whose connection broke is sent once more:
                                   it may then run twice (INCR counted twice...). 0: default */
    sl_event_fn on_event;       /* NULL: no events */
    void *on_event_ctx;         /* handed to on_event */
} sl_client_options;

#define SL_CLIENT_OPTIONS_INIT { SL_CLIENT_OPTIONS_VERSION, (unsigned int)sizeof(sl_client_options), \
        NULL, SL_MODE_AUTO, NULL, NULL, -1, 2, 2000, 5000, 5, 0, 10, 1000, NULL,                     \
        (uint64_t)512 << 20, (uint64_t)1 << 30, 32, 4096, (uint64_t)64 << 20, NULL, 1000, 4,           \
        SL_READ_PRIMARY, 0, NULL, NULL }

/* Fills opts with the defaults of the given version (SL_CLIENT_OPTIONS_VERSION, or an
 * older one for a caller whose struct is that version's) and sets version to it and size to
 * that version's size; nothing past that size is written. Returns SL_EINVAL for an
 * unknown version. For bindings that cannot use the macro. */
SL_EXTERN int sl_client_options_init(sl_client_options *opts, unsigned int version);

/* ------------------------------------------------------------------- client */

typedef struct sl_client sl_client;
typedef struct sl_batch sl_batch;

/* Creates a client: parses the URL, connects to a seed, and in cluster (or detected
 * cluster) mode discovers the slot map. *out is set on success and NULL on failure.
 * On failure, when errmsg is not NULL, a message is written there (at most errmsg_cap
 * bytes, NUL-terminated). Free with sl_client_free(). */
SL_EXTERN int sl_client_new(sl_client **out, const sl_client_options *opts,
                            char *errmsg, size_t errmsg_cap);

/* Closes every connection and frees the client. The client's batches must be freed
 * first, so a client with executions in flight on an sl_loop is detached first with
 * sl_loop_detach (they complete with SL_ECANCELLED); one still attached but idle is
 * detached here (not from the loop's thread). NULL is a no-op. */
SL_EXTERN void sl_client_free(sl_client *client);

/* The message of the client's last failure ("" when none). Valid until the next call
 * on the client or one of its batches. Never NULL for a non-NULL client. */
SL_EXTERN const char *sl_client_errmsg(const sl_client *client);

/* SL_MODE_PLAIN or SL_MODE_CLUSTER: what the client is (after auto-detection). */
SL_EXTERN int sl_client_mode(const sl_client *client);

/* Asks the execution running on this client now to stop as soon as possible:
 * unfinished commands get SL_ERR_CANCELLED records, the execution returns SL_ECANCELLED,
 * and connections that still owed replies are closed (the next execution reconnects).
 * When no execution is running, it has no effect (it never reaches a later execution).
 * The one call that is safe from any thread, concurrently with the client's own thread;
 * with the async API it cancels every execution of the client in flight, and there the
 * connections stay open: the replies still owed are read and dropped (to cancel one
 * execution only: sl_batch_cancel, slotlane_uv.h). */
SL_EXTERN void sl_client_cancel(sl_client *client);

/* Re-reads the slot map from the known nodes now. */
SL_EXTERN int sl_client_refresh(sl_client *client);

#define SL_STATS_VERSION 2
typedef struct sl_stats {
    unsigned int version;       /* set by the caller: SL_STATS_VERSION */
    unsigned int size;          /* set by the caller: sizeof(sl_stats) */
    uint64_t commands;          /* commands executed (a split command counts once) */
    uint64_t moved;             /* MOVED redirects followed */
    uint64_t ask;               /* ASK redirects followed */
    uint64_t tryagain;          /* TRYAGAIN / CLUSTERDOWN retries */
    uint64_t refreshes;         /* slot-map refreshes */
    uint64_t connects;          /* successful connects, the first ones included */
    uint64_t reconnects;        /* successful connects after a connection was lost */
    uint64_t bytes_written;     /* bytes written to sockets */
    uint64_t bytes_read;        /* bytes read from sockets */
    uint64_t nodes;             /* nodes currently known (primaries and replicas) */
    /* Version 2 (replicas). */
    uint64_t failovers;         /* promotions seen (SL_EVENT_FAILOVER) */
    uint64_t refreshes_moved;   /* refreshes asked for by a MOVED, CLUSTERDOWN, READONLY... */
    uint64_t refreshes_lost;    /* refreshes asked for by a lost node */
    uint64_t retries;           /* commands sent again after a lost connection or a -LOADING,
                                   -MASTERDOWN, -READONLY, -UNBLOCKED reply */
    uint64_t replica_reads;     /* read-only commands routed to a replica */
    uint64_t nodes_down;        /* SL_EVENT_NODE_DOWN events */
} sl_stats;

/* Copies the client's counters into *stats (fields up to stats->size). */
SL_EXTERN int sl_client_stats(const sl_client *client, sl_stats *stats);

/* ----------------------------------------------------------------- routing */

typedef enum sl_route_kind {
    SL_ROUTE_KEY = 0,           /* by the command's key; in cluster mode DBSIZE, KEYS, FLUSHALL,
                                   FLUSHDB, SCRIPT LOAD/EXISTS/FLUSH and FUNCTION
                                   LOAD/DELETE/FLUSH/RESTORE go to every primary (merged as
                                   below); other keyless commands: the default node (the seed
                                   that answered discovery) */
    SL_ROUTE_ALL_PRIMARIES = 1, /* to every primary; see "all-primaries replies" below */
    SL_ROUTE_NODE = 2,          /* to the node "host:port" named by route.node */
    SL_ROUTE_SLOT = 3,          /* to the owner of route.slot */
    SL_ROUTE_RANDOM = 4         /* to a random primary */
} sl_route_kind;

/* A routing override for the commands of one sl_batch_append*() call.
 * All-primaries replies are merged as Redis's response_policy tip of the command says
 * (COMMAND DOCS; the core's command table holds them): DBSIZE, SLOWLOG LEN -> the sum;
 * all_succeeded (FLUSHALL, FLUSHDB, SCRIPT LOAD/FLUSH, FUNCTION LOAD/DELETE/FLUSH/RESTORE,
 * PING, CONFIG SET...) -> the first primary's reply (the one SHA of SCRIPT LOAD, the library
 * name of FUNCTION LOAD, +OK) when no node answered an error; SCRIPT EXISTS -> per script
 * the AND of the nodes' answers (1 only when every primary has it); KEYS -> one array, the
 * concatenation; every other command -> an array with one element per primary, in the
 * client's node order (the order it learned them). Any node's error reply (or I/O error)
 * becomes the command's reply, " (on node host:port)" appended. Replicas are not asked. */
#define SL_ROUTE_VERSION 1

/* Initialise with SL_ROUTE_INIT (by key) and set kind and its field. Every call taking a
 * route checks version and size before reading the rest: an unknown version or a size
 * smaller than version 1's is SL_EINVAL (nothing queued; the message says both sizes). */
typedef struct sl_route {
    unsigned int version;       /* SL_ROUTE_VERSION */
    unsigned int size;          /* sizeof(sl_route) as the caller compiled it */
    sl_route_kind kind;
    int slot;                   /* SL_ROUTE_SLOT: 0..16383 */
    const char *node;           /* SL_ROUTE_NODE: "host:port" (only read during the call) */
} sl_route;
#define SL_ROUTE_INIT { SL_ROUTE_VERSION, (unsigned int)sizeof(sl_route), SL_ROUTE_KEY, 0, NULL }

/* ------------------------------------------------------------- the node list */

/* One node of the client's current topology. */
typedef struct sl_node_info {
    const char *addr;           /* "host:port" ("[v6]:port"), NUL-terminated: an SL_ROUTE_NODE target */
    int is_primary;             /* 1: a primary (serves slots); 0: a replica */
    int primary;                /* a replica's primary: its index in this list; -1 for a primary
                                   (or when the primary is not in the map) */
    size_t nranges;             /* slot ranges the node serves (0 for a replica) */
    const uint16_t *ranges;     /* nranges pairs {first, last} (inclusive), ascending */
} sl_node_info;

/* Copies the current topology out: *nodes (count entries) lists the primaries in the
 * client's node order (the order of the all-primaries replies), then the replicas the slot
 * map names (from CLUSTER SLOTS or SHARDS; none when only CLUSTER NODES answered). In plain
 * mode: the one node, a primary serving 0-16383. Nothing is asked of the servers (call
 * sl_client_refresh() first for a fresh map). The list is one allocation owned by the
 * caller, independent of the client's later changes: free it with sl_client_nodes_free()
 * (with the same client, before sl_client_free). *nodes is NULL when count is 0.
 * Returns 0, SL_EINVAL or SL_ENOMEM. Same thread rule as every client call. */
SL_EXTERN int sl_client_nodes(sl_client *client, sl_node_info **nodes, size_t *count);

/* Frees a list of sl_client_nodes(). NULL is a no-op. */
SL_EXTERN void sl_client_nodes_free(sl_client *client, sl_node_info *nodes);

/* --------------------------------------------------------------- the batch */

/* Reply record types. */
typedef enum sl_reply_type {
    SL_REPLY_STRING = 1,   /* bulk string: data[offset, len) */
    SL_REPLY_STATUS = 2,   /* simple string (+OK): data[offset, len) */
    SL_REPLY_ERROR = 3,    /* error: data[offset, len) is the message; flags is the sl_err_kind */
    SL_REPLY_INTEGER = 4,  /* value.integer */
    SL_REPLY_NIL = 5,      /* RESP2 null bulk/array, RESP3 null */
    SL_REPLY_ARRAY = 6,    /* len children follow (flattened depth-first) */
    SL_REPLY_MAP = 7,      /* len children follow: key, value, key, value... (len = 2 x pairs) */
    SL_REPLY_SET = 8,      /* len children follow */
    SL_REPLY_DOUBLE = 9,   /* value.dbl; data[offset, len) holds the server's text */
    SL_REPLY_BOOL = 10,    /* value.integer is 0 or 1 */
    SL_REPLY_BIGNUM = 11,  /* data[offset, len) holds the decimal digits */
    SL_REPLY_VERB = 12,    /* verbatim string: data[offset, len) without the "fmt:" prefix;
                              value.integer holds the 3 format bytes, little-endian */
    SL_REPLY_PUSH = 13     /* len children follow (a RESP3 push that answered a command) */
} sl_reply_type;

/* Kinds of error records (sl_reply.flags when type == SL_REPLY_ERROR). */
typedef enum sl_err_kind {
    SL_ERR_SERVER = 0,     /* the server's error reply; the message starts with its prefix
                              (ERR, WRONGTYPE, MOVED, CROSSSLOT...) */
    SL_ERR_IO = 1,         /* the command's node failed (connect, write or read) */
    SL_ERR_TIMEOUT = 2,    /* the execution's deadline passed before the reply */
    SL_ERR_REDIRECTS = 3,  /* the redirect limit was reached; the message is the last redirect */
    SL_ERR_PROTOCOL = 4,   /* the node sent malformed RESP or exceeded a limit */
    SL_ERR_CANCELLED = 5,  /* sl_client_cancel(), or sl_batch_cancel() for this batch */
    SL_ERR_CLUSTER = 6,    /* no node owns the slot, or the client refused the command
                              (CROSSSLOT transaction, split part failed) */
    SL_ERR_ARGUMENT = 7    /* the client refused the command's bytes or arguments */
} sl_err_kind;

/* One reply record: 24 bytes, fixed layout, little- or native-endian as the host.
 * Records of one execution form a flat array in the caller's command order; an
 * aggregate's children follow it depth-first. RESP3 attributes are dropped. */
typedef struct sl_reply {
    uint8_t type;          /* sl_reply_type */
    uint8_t flags;         /* sl_err_kind for errors; 0 otherwise */
    uint16_t reserved;     /* 0 */
    uint32_t len;          /* data bytes, or the child count of an aggregate */
    union {
        int64_t integer;
        double dbl;
    } value;
    uint64_t offset;       /* of the data bytes in the data buffer */
} sl_reply;

/* Sizes of an execution's results, in records and data bytes. */
typedef struct sl_sizes {
    uint64_t records;      /* records of all replies */
    uint64_t data;         /* data bytes */
    uint64_t commands;     /* commands executed = top-level replies */
    uint64_t errors;       /* top-level error records */
} sl_sizes;

/* Creates a batch for the client. Free with sl_batch_free() before the client. */
SL_EXTERN int sl_batch_new(sl_client *client, sl_batch **out);

/* Frees the batch and its reply memory. NULL is a no-op. */
SL_EXTERN void sl_batch_free(sl_batch *batch);

/* Drops queued commands and replies; keeps the buffers for reuse. */
SL_EXTERN void sl_batch_reset(sl_batch *batch);

/* Queues count commands given as concatenated RESP arrays of bulk strings
 * ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n..."), copied. route may be NULL (by key).
 * SL_EINVAL if the bytes are not exactly count well-formed commands (nothing is queued). */
SL_EXTERN int sl_batch_append(sl_batch *batch, const sl_route *route,
                              const void *cmds, size_t len, size_t count);

/* Queues one command given as arguments, copied. argvlen may be NULL for NUL-terminated
 * arguments. route may be NULL (by key). */
SL_EXTERN int sl_batch_append_argv(sl_batch *batch, const sl_route *route, int argc,
                                   const char *const *argv, const size_t *argvlen);

/* Commands queued and not yet executed. */
SL_EXTERN size_t sl_batch_count(const sl_batch *batch);

/* Executes the queued commands: routes each by its key, writes every node's buffer
 * before reading any, follows redirects, and leaves one reply per command, in order,
 * in the batch. timeout_ms: the deadline of the whole execution (0: the client's
 * command_timeout_ms; -1: none); when it passes, the connections that still owe replies
 * are closed, so a slow or blocked reply never reaches a later execution. Returns 0 when every command has a reply record —
 * a failed command's record is an error, so 0 does not mean every command succeeded
 * (sizes->errors counts error records) — or a negative code when the execution as a
 * whole failed (SL_ETIMEOUT, SL_ECANCELLED, SL_EIO when no node could be reached...);
 * even then, every command has a record. The queue is empty afterwards.
 * sizes may be NULL; when not, it is filled on every return (zeros when nothing ran). */
SL_EXTERN int sl_batch_exec(sl_batch *batch, int timeout_ms, sl_sizes *sizes);

/* The records and data of the last execution, in the batch's memory (valid until the
 * batch's next exec, reset or free). Either out pointer may be NULL. */
SL_EXTERN const sl_reply *sl_batch_replies(const sl_batch *batch, size_t *nrecords,
                                           const uint8_t **data, size_t *data_len);

/* Copies the last execution's records and data into caller buffers (records_cap in
 * bytes, a multiple of 24). sizes (not NULL) always receives the sizes; when a buffer is
 * too small nothing is copied and SL_ETOOSMALL is returned: grow and call again — the
 * replies stay in the batch, nothing is re-sent. */
SL_EXTERN int sl_batch_copy_out(const sl_batch *batch, void *records, size_t records_cap,
                                void *data, size_t data_cap, sl_sizes *sizes);

/* One crossing for bindings: sl_batch_reset + sl_batch_append(route = NULL) +
 * sl_batch_exec + sl_batch_copy_out. records/data may be NULL with zero caps to
 * leave the results in the batch (read them with sl_batch_replies). Returns the code
 * of exec, or SL_ETOOSMALL (results kept in the batch; use sl_batch_copy_out), or
 * SL_EINVAL for malformed command bytes (nothing sent, sizes all zero, and
 * sl_batch_replies then gives no records). sizes, when not NULL, is filled on every return. */
SL_EXTERN int sl_batch_run(sl_batch *batch, const void *cmds, size_t len, size_t count,
                           int timeout_ms, void *records, size_t records_cap,
                           void *data, size_t data_cap, sl_sizes *sizes);

/* ----------------------------------------------------------- one command */

/* Runs one command through the client's internal batch: *reply points to its first
 * record (children follow) and *data to the data buffer, both valid until the next
 * call on the client. Returns 0, SL_ESERVER for an error reply (the record holds the
 * message, also in sl_client_errmsg), or another negative code. */
SL_EXTERN int sl_client_command(sl_client *client, const sl_route *route, int argc,
                                const char *const *argv, const size_t *argvlen,
                                const sl_reply **reply, const uint8_t **data);

/* ------------------------------------------------------- cluster-wide SCAN */

#define SL_SCAN_OPTIONS_VERSION 1

/* What a scan returns. Initialise with SL_SCAN_OPTIONS_INIT; strings are copied by
 * sl_scan_new. Fields are only appended (version and size as in sl_client_options). */
typedef struct sl_scan_options {
    unsigned int version;       /* SL_SCAN_OPTIONS_VERSION */
    unsigned int size;          /* sizeof(sl_scan_options) as the caller compiled it */
    const char *match;          /* MATCH pattern; NULL: every key */
    size_t match_len;           /* bytes of match; 0: strlen(match) */
    const char *type;           /* TYPE filter ("string", "hash"...); NULL: any type */
    int count;                  /* COUNT hint of each SCAN call; 0: the server's default (10) */
} sl_scan_options;

#define SL_SCAN_OPTIONS_INIT { SL_SCAN_OPTIONS_VERSION, (unsigned int)sizeof(sl_scan_options), \
        NULL, 0, NULL, 0 }

typedef struct sl_scan sl_scan;

/* Creates an iterator over every key of the client's cluster (every primary; in plain
 * mode the one node). opts may be NULL (every key). It tracks slots, not node cursors: a
 * node's slots count as scanned only when its SCAN reached its end and the node still
 * serves them (CLUSTER NODES) and is not migrating them away; a slot that moved during
 * its node's pass (reshard, failover) is scanned again where it lives now. So a key that
 * existed for the whole iteration is returned at least once, a key may be returned twice
 * (moved slots), and keys added or removed meanwhile may or may not appear — SCAN's own
 * guarantee, kept across topology changes. Free with sl_scan_free() before the client.
 * Returns 0, SL_EINVAL (bad options) or SL_ENOMEM. */
SL_EXTERN int sl_scan_new(sl_client *client, const sl_scan_options *opts, sl_scan **out);

/* Fetches the next page into batch (the scan's client's; its queue is reset): one reply, an
 * array of keys (bulk strings), read with sl_batch_replies / sl_batch_copy_out and valid
 * like any reply. A page may be empty before the end. *done becomes 1 with the last
 * (empty) page, when every slot has been scanned; later calls return empty pages.
 * When a node fails during a call, the slot map is refreshed and its unfinished slots are
 * taken up again from their current owners within the call, once. A negative code (SL_EIO,
 * SL_ETIMEOUT, SL_ESERVER, SL_EPROTO, SL_ECLUSTER...: the node failed again or no node
 * serves a slot; message in sl_client_errmsg) leaves the iterator usable: the next call
 * tries again. Each call is one to three round trips to one node (more after a failure). */
SL_EXTERN int sl_scan_next(sl_scan *scan, sl_batch *batch, int *done);

/* 1 once every slot has been scanned: no later page holds a key (sl_scan_next still
 * answers the last, empty page with *done = 1), else 0 (NULL: 0). Read it after a page,
 * never while the scan is paged on a loop (slotlane_uv.h). */
SL_EXTERN int sl_scan_done(const sl_scan *scan);

/* The last failure of the scan's pages, also of those paged on a loop (the loop does not
 * write the client's message); "" when none. Owned by the scan, valid until its next page. */
SL_EXTERN const char *sl_scan_errmsg(const sl_scan *scan);

/* Frees the iterator (not while a page of it is in flight on a loop). NULL is a no-op. */
SL_EXTERN void sl_scan_free(sl_scan *scan);

/* ----------------------------------------------------------------- scripts */

/* The SHA1 of a script body as 40 lowercase hex digits and a NUL into out (41 bytes): the name
 * SCRIPT LOAD answers and EVALSHA takes. */
SL_EXTERN void sl_script_sha1(const void *body, size_t len, char *out);

/* sl_batch_run for one EVALSHA or EVALSHA_RO command (cmd: its RESP bytes, routed by its
 * keys as usual) that survives a node without the script: when the reply is a NOSCRIPT
 * error, body (the script, only read during the call) is loaded with SCRIPT LOAD on the
 * node that answered, and the command is sent once more; the second reply is the answer
 * (or the failed SCRIPT LOAD's error reply). Results, buffers and codes as sl_batch_run. */
SL_EXTERN int sl_batch_run_script(sl_batch *batch, const void *body, size_t body_len,
                                  const void *cmd, size_t len, int timeout_ms,
                                  void *records, size_t records_cap, void *data, size_t data_cap,
                                  sl_sizes *sizes);

/* -------------------------------------------------------------- pub/sub */
/* Out-of-band RESP3 pushes on the client's command connections (client-side caching's
 * "invalidate", and any other push that answers no command) are given to fn instead of
 * being dropped: records[0] is the push (SL_REPLY_PUSH), its children follow, offsets into
 * data; all of it valid only during the call. fn runs on the thread that drives the
 * connection (the executing thread, or the sl_loop's thread) and must not call into the
 * client. fn NULL: pushes are dropped again. Set it before executions start (not
 * concurrently with one). SL_EINVAL for a NULL client. */
typedef void (*sl_push_fn)(void *ctx, const char *node, const sl_reply *records, size_t count,
                           const uint8_t *data);
SL_EXTERN int sl_client_set_push_handler(sl_client *client, sl_push_fn fn, void *ctx);


/* A subscriber: connections of its own, never the command connections (classic and pattern
 * subscriptions on one connection to one node — a Redis Cluster delivers PUBLISH on every
 * node —, sharded ones on a connection to each slot's owner, one SSUBSCRIBE per slot), and
 * one thread of its own that drives them (poll(), the core part only: every binding has it).
 * The caller states what it wants subscribed; the subscriber keeps the servers equal to it
 * across reconnects, failovers, slot moves (an unsolicited SUNSUBSCRIBE, a MOVED) and
 * topology refreshes, and reports each such event in-band. Messages and events are records
 * in one bounded queue, read in batches with sl_subscriber_drain. Every sl_subscriber_*
 * call may be made from any thread (the subscriber locks), except sl_subscriber_free. */
typedef struct sl_subscriber sl_subscriber;

/* What a subscription is. */
typedef enum sl_sub_kind {
    SL_SUB_CHANNEL = 0,          /* SUBSCRIBE channel */
    SL_SUB_PATTERN = 1,          /* PSUBSCRIBE pattern */
    SL_SUB_SHARD = 2             /* SSUBSCRIBE shard channel (routed by its slot) */
} sl_sub_kind;

/* What a record of the queue is. */
typedef enum sl_message_kind {
    SL_MSG_MESSAGE = 1,          /* channel, payload */
    SL_MSG_PMESSAGE = 2,         /* pattern, channel, payload */
    SL_MSG_SMESSAGE = 3,         /* channel, payload (a shard channel) */
    SL_MSG_SUBSCRIBE = 4,        /* the server confirmed channel; count = its subscriptions
                                    on that connection */
    SL_MSG_PSUBSCRIBE = 5,       /* ... pattern (in channel) */
    SL_MSG_SSUBSCRIBE = 6,
    SL_MSG_UNSUBSCRIBE = 7,      /* channel is no longer subscribed (asked for) */
    SL_MSG_PUNSUBSCRIBE = 8,
    SL_MSG_SUNSUBSCRIBE = 9,
    SL_MSG_RESUBSCRIBED = 10,    /* channel (flags: its sl_sub_kind) is subscribed again after
                                    a gap — a lost connection, a failover, a slot that moved:
                                    messages published in the gap were missed */
    SL_MSG_OVERFLOW = 11,        /* the queue was full: count messages were dropped here (the
                                    newest ones: the policy is "drop newest, report") */
    SL_MSG_CONNECTION_LOST = 12, /* a subscriber connection broke (payload: node and why;
                                    a PING of the health check unanswered counts): its
                                    subscriptions are in a gap until RESUBSCRIBED */
    SL_MSG_ERROR = 13            /* a server refused a subscription command (payload: its
                                    error reply); flags: the sl_sub_kind asked */
} sl_message_kind;

/* One record: 32 bytes, fixed layout. Its bytes in the drain's data buffer are, from
 * offset: channel, then pattern, then payload (each may be empty). */
typedef struct sl_message {
    uint8_t kind;                /* sl_message_kind */
    uint8_t flags;               /* SL_MSG_RESUBSCRIBED, SL_MSG_ERROR: an sl_sub_kind; else 0 */
    uint16_t reserved;
    uint32_t channel_len;
    uint32_t pattern_len;
    uint32_t payload_len;
    int64_t count;               /* (un)subscribe: the server's count; OVERFLOW: messages dropped */
    uint64_t offset;             /* of the channel bytes in the data buffer */
} sl_message;

#define SL_SUBSCRIBER_OPTIONS_VERSION 1

/* Initialise with SL_SUBSCRIBER_OPTIONS_INIT; fields are only appended (version and size as
 * in sl_client_options). */
typedef struct sl_subscriber_options {
    unsigned int version;        /* SL_SUBSCRIBER_OPTIONS_VERSION */
    unsigned int size;           /* sizeof(sl_subscriber_options) as the caller compiled it */
    uint64_t max_queue_bytes;    /* queued message bytes (channel + pattern + payload + 32 per
                                    record) past which new messages are dropped and counted in
                                    an SL_MSG_OVERFLOW record; events are always queued.
                                    Default 64 MiB; 0 = the default */
    int health_check_interval_ms;/* a connection that read nothing for this long is sent a PING;
                                    no reply within as long again: it is dead (CONNECTION_LOST,
                                    reconnect). Default 30000; 0 = the default; -1 = never */
} sl_subscriber_options;

#define SL_SUBSCRIBER_OPTIONS_INIT { SL_SUBSCRIBER_OPTIONS_VERSION, (unsigned int)sizeof(sl_subscriber_options), \
        (uint64_t)64 << 20, 30000 }

/* Makes a subscriber for the servers of copts (a client's options: URL or seeds, mode,
 * credentials, RESP version, TLS, timeouts and backoff, reply limits; the command timeout
 * is not used). It connects and discovers the topology now, on the caller's thread (errors
 * as sl_client_new: SL_EINVAL, SL_EIO, SL_ECLUSTER, SL_ETLS..., message in errmsg), and
 * starts its thread. sopts may be NULL (defaults). Free with sl_subscriber_free(). */
SL_EXTERN int sl_subscriber_new(sl_subscriber **out, const sl_client_options *copts,
                                const sl_subscriber_options *sopts, char *errmsg, size_t errmsg_cap);

/* Adds name (len bytes, copied; binary-safe) of kind to the wanted set; the subscriber's thread
 * subscribes it and queues the server's confirmation. Subscribing what is already wanted is a
 * no-op. Returns 0, SL_EINVAL (bad kind, NULL name), SL_ENOMEM, SL_ESTATE (closed). */
SL_EXTERN int sl_subscriber_subscribe(sl_subscriber *sub, int kind, const void *name, size_t len);

/* Removes name of kind from the wanted set (name NULL: every subscription of that kind); an
 * unsubscribe record follows the server's answer (at once when its connection is down).
 * Not wanted: a no-op. Returns 0, SL_EINVAL, SL_ESTATE (closed). */
SL_EXTERN int sl_subscriber_unsubscribe(sl_subscriber *sub, int kind, const void *name, size_t len);

/* A file descriptor an event loop can watch for reading: from the first call on, readable
 * while the queue holds records (signalled when it goes from empty to non-empty, cleared by
 * the drain that empties it) and after sl_subscriber_close. A subscriber read only with
 * blocking drains never calls it, and its queue then writes no fd at all. Owned by the
 * subscriber: never close or read it. */
SL_EXTERN int sl_subscriber_fd(const sl_subscriber *sub);

/* Moves whole records from the queue, oldest first, into msgs (cap records) and data
 * (data_cap bytes), as many as fit; waits up to timeout_ms for the first one (0: never
 * waits; -1: no limit). *count (and *data_len, the bytes used) say what was copied; 0 records
 * on a timeout. Returns 0; SL_ETOOSMALL when the oldest record alone needs more than data_cap
 * (*data_len says how much; nothing is taken); SL_ESTATE when the subscriber is closed and
 * its queue is empty; SL_EINVAL. */
SL_EXTERN int sl_subscriber_drain(sl_subscriber *sub, int timeout_ms, sl_message *msgs, size_t cap,
                                  void *data, size_t data_cap, size_t *count, size_t *data_len);

#define SL_SUBSCRIBER_STATS_VERSION 1
typedef struct sl_subscriber_stats {
    unsigned int version;        /* set by the caller: SL_SUBSCRIBER_STATS_VERSION */
    unsigned int size;           /* set by the caller: sizeof(sl_subscriber_stats) */
    uint64_t messages;           /* messages queued (message, pmessage, smessage) */
    uint64_t dropped;            /* messages dropped by the queue bound */
    uint64_t connection_losses;  /* CONNECTION_LOST records */
    uint64_t resubscribed;       /* RESUBSCRIBED records */
    uint64_t pings;              /* health-check PINGs sent */
    uint64_t refreshes;          /* topology refreshes the subscriber asked for */
    uint64_t confirmed;          /* subscriptions the servers confirm now */
    uint64_t queued_bytes;       /* bytes in the queue now */
    uint64_t bytes_read;         /* bytes read from the subscriber's connections */
} sl_subscriber_stats;

/* Copies the counters (fields up to stats->size). 0 or SL_EINVAL. */
SL_EXTERN int sl_subscriber_stats_get(const sl_subscriber *sub, sl_subscriber_stats *stats);

/* Stops the subscriber: its thread closes the connections and ends; waiting drains return
 * (SL_ESTATE once the queue is empty; what is queued can still be drained). Idempotent. */
SL_EXTERN void sl_subscriber_close(sl_subscriber *sub);

/* Closes (if needed), joins the thread and frees. No call on sub may be running or follow.
 * NULL is a no-op. */
SL_EXTERN void sl_subscriber_free(sl_subscriber *sub);
/* ------------------------------------------------ blocking commands and sessions */

/*
 * Blocking commands — BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX,
 * BZMPOP, XREAD and XREADGROUP with BLOCK, WAIT — never run on the shared per-node
 * pipeline (one waiting command would stall every command behind it). A batch whose only
 * command is a blocking one (sl_batch_exec, sl_batch_run, sl_client_command) runs it on a
 * connection leased for it from a small per-node pool (lease_idle_max idle ones kept), to
 * the node of its key. Its deadline: timeout_ms when the caller gives one (> 0), none for
 * -1; for 0 (the default) the command's block time plus blocking_grace_ms, and none for a
 * block time of 0. At the deadline or a cancel (sl_client_cancel) the leased connection is
 * closed, so a pop still armed on the server can never hand its element to anyone: the
 * server puts it back (the pop never happened). A blocking command is not sent again once
 * sent, except after MOVED, ASK, TRYAGAIN or -UNBLOCKED (the server did not execute it).
 * In a batch of several commands a blocking command (outside MULTI ... EXEC, where the
 * server never blocks) makes the execution fail with SL_EBLOCKING before anything is sent:
 * every command gets an SL_ERR_ARGUMENT record naming this API.
 * The asynchronous API (slotlane_uv.h) does the same: a batch of one blocking command runs
 * on a lease attached to the same loop, so a BLPOP 0 never stalls the node's shared
 * connection; sl_batch_cancel, a deadline, a detach or sl_loop_free closes its lease.
 * Sessions are synchronous only (slotlane.h).
 *
 * A session pins one leased connection to the primary of one slot (the slot of the first
 * key it sees; in plain mode, the one node) for WATCH ... MULTI ... EXEC: every command
 * of a session's batch must hash to that slot (keyless ones — MULTI, EXEC, UNWATCH, WAIT
 * — go with them), a batch that does not is refused before sending (SL_ECLUSTER,
 * SL_ERR_CLUSTER records "CROSSSLOT ..."). A MOVED or ASK while keys are watched or a
 * MULTI is open fails with SL_EWATCHMOVED (the session is broken: close it); without a
 * watch the session is unpinned and the caller may retry (the slot map is refreshed). EXEC
 * answering nil makes the execution return SL_EABORTED (the record is the nil). WAIT in
 * a session waits for the session's own writes.
 */
typedef struct sl_session sl_session;

/* Whether the command argv[0..argc) is a blocking one as the core classifies it (the list
 * above: a batch of it alone runs on a lease, a pipeline holding it fails with
 * SL_EBLOCKING), for bindings that must send such a command alone. argvlen may be NULL
 * for NUL-terminated arguments; arguments are only read during the call (binary-safe,
 * names case-insensitive). Returns 1 (it blocks), 0 (it does not: a command with no
 * argument, argc 1, never does), or SL_EINVAL (argc < 1, argv NULL or an argument NULL),
 * SL_ENOMEM. block_ms (may be NULL) gets its block time in ms when it blocks (0: forever;
 * -1: unreadable, the server will refuse it), else -1. by_args (may be NULL) gets 1 when
 * the answer for this command name may differ with its other arguments (XREAD and
 * XREADGROUP: BLOCK before STREAMS; WAIT: exactly two arguments), 0 when every call of
 * this name with at least one argument gets the same answer, so a binding may cache it by
 * name. No I/O, no client: any thread. */
SL_EXTERN int sl_command_blocking(int argc, const char *const *argv, const size_t *argvlen,
                                  int64_t *block_ms, int *by_args);


/* Opens a session on the client (nothing is sent yet: the connection is leased when the
 * first batch runs). *out is freed by sl_session_close, before the client. Returns 0,
 * SL_EINVAL or SL_ENOMEM. Same thread rule as the client (one thread at a time). */
SL_EXTERN int sl_session_new(sl_client *client, sl_session **out);

/* Executes the batch's queued commands on the session's connection, in order, as one
 * pipeline: results and the batch's queue as sl_batch_exec. batch must be a batch of the
 * session's client. timeout_ms as sl_batch_exec (0: the client's command_timeout_ms, or
 * for a blocking command its block time plus the grace). Returns 0, SL_EABORTED (EXEC
 * answered nil), SL_EWATCHMOVED, SL_ECLUSTER (refused: keys of another slot, nothing
 * sent), SL_ESTATE (the session is broken by an earlier failure: close it), or an
 * execution's code (SL_ETIMEOUT, SL_ECANCELLED, SL_EIO: the session is broken then too:
 * the server may have applied part of it). */
SL_EXTERN int sl_session_exec(sl_session *session, sl_batch *batch, int timeout_ms, sl_sizes *sizes);

/* One crossing for bindings: sl_batch_reset + sl_batch_append + sl_session_exec +
 * sl_batch_copy_out, buffers and codes as sl_batch_run. */
SL_EXTERN int sl_session_run(sl_session *session, sl_batch *batch, const void *cmds, size_t len, size_t count,
                             int timeout_ms, void *records, size_t records_cap, void *data, size_t data_cap,
                             sl_sizes *sizes);

/* The slot the session is pinned to, or -1 (not pinned yet, or plain mode). */
SL_EXTERN int sl_session_slot(const sl_session *session);

/* 1 while the session holds a WATCH or an open MULTI (close would send UNWATCH/DISCARD). */
SL_EXTERN int sl_session_watching(const sl_session *session);

/* Ends the session: sends DISCARD (a MULTI open) or UNWATCH (keys watched) when needed and
 * returns the connection to the pool, clean; a broken session's connection (an error, a
 * timeout, a cancel, a moved slot) is closed instead. Frees the session. Returns 0, or
 * the code of a failed DISCARD/UNWATCH (the connection was closed; nothing is lost).
 * NULL is a no-op. */
SL_EXTERN int sl_session_close(sl_session *session);

/* ----------------------------------------------------------- helpers */

/* The cluster slot of a key (CRC16-XMODEM with {hash tag}s, mod 16384). */
SL_EXTERN int sl_key_slot(const void *key, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SLOTLANE_H */
