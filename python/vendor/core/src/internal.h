/* internal: the structures shared by the engine's modules (conn, topology, batch, split,
 * client). Nothing here is part of the ABI. */
#ifndef SL_INTERNAL_H
#define SL_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "alloc.h"
#include "commands.h"
#include "resp.h"
#include "slot.h"
#include "slotlane.h"
#include "url.h"

#define SL__NO_NODE 0xffffu
#define SL__ERRMSG_MAX 512

/* ----------------------------------------------------------------- conn */

typedef enum sl__conn_state {
    SL__DISCONNECTED = 0,
    SL__CONNECTING = 1,          /* non-blocking connect in progress */
    SL__CONNECTED = 2
} sl__conn_state;

/* One server node and its connection. Owned by the topology; its index never changes. */
typedef struct sl__node {
    char host[SL__HOST_MAX];
    int port;
    char addr[SL__HOST_MAX + 8]; /* "host:port", as MOVED names it */
    struct sockaddr_storage sa;  /* resolved once */
    socklen_t salen;
    int resolved;

    int fd;                      /* -1 when disconnected */
    sl__conn_state state;
    int ever_connected;
    int primary;                 /* serves at least one slot in the current map */
    uint64_t connect_deadline_ms;
    uint64_t retry_at_ms;        /* backoff: no connect attempt before this */
    int failures;                /* consecutive failed connects */
    int handshake_replies;       /* handshake replies still to come on this connection */

    sl__bytes rbuf;              /* bytes read, not yet parsed: rbuf.ptr[rpos, len) */
    size_t rpos;
    sl__resp_parser parser;

    /* What is queued on the connection, shared by the batches in flight (engine.c). */
    sl__bytes obuf;              /* bytes to write: obuf.ptr[opos, len), then oext */
    size_t opos;
    const uint8_t *oext;         /* zero copy: a blocking execution's caller bytes */
    size_t oext_len;
    struct sl_batch *oext_owner;
    struct sl__seg *segs;        /* whose the next replies are, in write order: segs[shead, +slen) */
    size_t shead, slen, scap;
    sl__records skip_recs;       /* replies parsed for nobody (handshakes, abandoned batches) */
    sl__bytes skip_data;
    void *async;                 /* async.c's per-node state */
} sl__node;

/* A run of replies on one connection: the next `left` replies belong to `batch`. */
#define SL__SEG_BATCH 0
#define SL__SEG_HANDSHAKE 1      /* HELLO/AUTH/SELECT of a new connection: an error fails it */
#define SL__SEG_DISCARD 2        /* a batch that gave up: the replies are dropped */
typedef struct sl__seg {
    struct sl_batch *batch;
    uint32_t left;
    uint8_t kind;
} sl__seg;

/* Notifications from the engine to an event-loop driver (async.c). */
typedef struct sl__async_hooks {
    void (*opened)(sl_client *c, size_t k);   /* node k has a new socket (connecting) */
    void (*queued)(sl_client *c, size_t k);   /* node k has bytes to write / replies to wait for */
    void (*closing)(sl_client *c, sl__node *n); /* n's socket is about to be closed (sl__node_close) */
} sl__async_hooks;

/* ------------------------------------------------------------- topology */

typedef struct sl__topology {
    sl__node **nodes;            /* stable pointers */
    size_t nnodes, cap;
    uint16_t slot_node[SL_SLOTS];/* node index per slot, SL__NO_NODE when unknown */
    uint16_t default_node;       /* keyless commands; the seed that answered */
    uint64_t last_refresh_ms;
    int refresh_wanted;          /* a MOVED or a lost node asks for a refresh */
} sl__topology;

/* ---------------------------------------------------------------- client */

struct sl_client {
    sl__alloc alloc;
    sl_client_options opts;      /* strings below are the client's copies */
    sl__url url;
    int mode;                    /* SL_MODE_PLAIN or SL_MODE_CLUSTER */
    sl__topology topo;
    sl_stats stats;
    uint64_t rng;                /* xorshift state for jitter and random routes */
    atomic_int cancel;           /* set by sl_client_cancel while an execution runs */
    atomic_int running;          /* executions running (blocking: 0 or 1; async: in flight) */
    int cancel_pipe[2];          /* wakes poll() on cancel */
    sl_batch *internal;          /* the one-command helper's batch */
    sl_batch *disco;             /* discovery's batch (may run inside another execution) */
    const sl__async_hooks *async_hooks; /* set while an event-loop driver owns the client */
    void *async;                 /* async.c's per-client state */
    atomic_int nbatches;         /* live batches (may change on another thread: slotlane_uv.h) */
    char errmsg[SL__ERRMSG_MAX];
};

/* ----------------------------------------------------------------- batch */

/* Where a command's reply records are. */
#define SL__SRC_NONE 0xfffffffeu
#define SL__SRC_X 0xffffffffu    /* batch->xrecs (client-made records, merges) */

/* Per-command flags. */
#define SL__F_SYNTH      0x0001u /* bytes live in batch->synth, not the input */
#define SL__F_ASKING     0x0002u /* send ASKING first (an ASK redirect) */
#define SL__F_SPLIT      0x0004u /* a parent whose parts are child commands */
#define SL__F_CHILD      0x0008u /* a part of a split or fan-out parent */
#define SL__F_DONE       0x0010u /* has its final reply */
#define SL__F_RESEND     0x0020u /* must be (re)sent this round */
#define SL__F_FANOUT     0x0040u /* all-primaries parent */
#define SL__F_NOSEND     0x0080u /* refused before sending (its record is in xrecs) */
#define SL__F_MULTI      0x0100u /* member of a MULTI...EXEC group */

typedef struct sl__cmd {
    uint32_t off, len;           /* its bytes in the input (or synth) buffer */
    uint32_t arg0, argc;         /* its arguments in batch->args */
    int32_t slot;                /* -1: no key */
    uint16_t node;               /* target node */
    uint8_t route;               /* sl_route_kind */
    uint8_t redirects;
    uint16_t flags;
    uint16_t merge;              /* SL__MERGE_* for parents */
    int32_t parent;              /* -1, or the parent's index */
    uint32_t src;                /* records: node slot in batch->bn, SL__SRC_X, SL__SRC_NONE */
    uint32_t rec_start, rec_count;
    uint32_t aux;                /* parents: first entry in batch->splitmap; route node/slot */
    uint32_t nparts;             /* parents: number of children */
} sl__cmd;

/* What one batch keeps per node for one execution. */
typedef struct sl__bnode {
    uint32_t *pending;           /* FIFO of command indexes awaiting replies (SL__PEND_SKIP: discard) */
    size_t phead, plen, pcap;
    sl__records recs;            /* replies parsed from this node */
    int state;                   /* this round: 0 unused, 1 queued, 2 the node could not be used */
    char why[SL__ERRMSG_MAX];    /* state 2: why */
} sl__bnode;

#define SL__PEND_SKIP 0xffffffffu

/* sl__topo_discover: the node answered that it is not a cluster (positive: not an error). */
#define SL__NOT_CLUSTER 1

/* Split map entry: for key k of a parent, which child and which element of its reply. */
typedef struct sl__splitref {
    uint32_t child;
    uint32_t elem;
} sl__splitref;

struct sl_batch {
    sl_client *client;
    sl__bytes input;             /* copied command bytes (sl_batch_append) */
    const uint8_t *ext;          /* sl_batch_run: the caller's bytes, used in place */
    size_t ext_len;
    sl__bytes synth;             /* bytes the client made: split parts, ASKING */
    sl__arg *args;
    size_t nargs, args_cap;
    sl__cmd *cmds;
    size_t ncmds, cmds_cap;
    size_t nuser;                /* commands the caller queued (the first nuser of cmds) */
    sl__bnode *bn;               /* per node index */
    size_t nbn;
    sl__records xrecs;
    sl__records out;             /* the final records when they had to be reordered */
    const sl_reply *result;      /* the final records: out.ptr or one node's recs */
    size_t nresult;
    sl__bytes data;              /* every reply's payload bytes */
    sl__splitref *splitmap;
    size_t nsplit, split_cap;
    uint32_t *scratch;           /* key positions, sort buffers */
    size_t scratch_cap;
    sl_sizes sizes;
    const sl__cmdinfo *last_info;/* one-entry lookup cache */
    uint32_t last_name_len;
    int16_t last_single_arity;   /* last_info has one key at argument 1: its arity; else 0 */
    uint8_t last_name[24];
    int executed;
    uint32_t resends;            /* commands marked for another round during this one */
    uint32_t parents;            /* split and fan-out parents in this execution */
    uint32_t inflight;           /* nodes whose part of this round is not answered yet */
    int round_over;              /* inflight reached 0: the driver must advance */
    int round;
    int backoff;                 /* a TRYAGAIN/CLUSTERDOWN asks to wait before the next round */
    uint64_t backoff_until;
    uint64_t deadline;           /* UINT64_MAX: none */
    /* The async drivers (async.c). */
    void (*done_cb)(sl_batch *b, int status, const sl_sizes *sizes, void *arg);
    void *done_arg;
    int async_status;            /* the execution's code so far (timeout, cancel) */
    int in_flight;               /* between sl_batch_exec_async and its callback */
    struct sl_batch *async_next; /* the client's list of executions in flight */
    struct sl_batch *submit_next;/* sl_loop's lock-free submission stack */
    int submit_timeout;
};

/* ------------------------------------------------------------ functions */

uint64_t sl__now_ms(void);
void sl__set_err(sl_client *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
uint64_t sl__rand(sl_client *c);

/* conn.c */
int sl__node_connect_start(sl_client *c, sl__node *n);    /* 0, or <0 with errmsg */
int sl__node_connect_check(sl_client *c, sl__node *n);    /* after POLLOUT: 0 connected, <0 failed (the caller fails the node) */
/* failed: 0 a clean close; 1 a failure (backoff unless the connection had been working);
 * 2 a failure that always backs off (the handshake was refused). */
void sl__node_close(sl_client *c, sl__node *n, int failed);
int sl__node_handshake(sl_client *c, sl__node *n, sl__bytes *wbuf); /* appends HELLO/AUTH/SELECT, returns replies to skip */
int sl__node_may_connect(const sl_client *c, const sl__node *n, uint64_t now);

/* topology.c */
void sl__topo_init(sl__topology *t);
void sl__topo_free(sl_client *c);
int sl__topo_node(sl_client *c, const char *host, int port, uint16_t *index); /* find or add */
int sl__topo_node_addr(sl_client *c, const char *addr, size_t len, uint16_t *index);
int sl__topo_apply_slots(sl_client *c, uint16_t asked, const sl_reply *r, size_t n, const uint8_t *data);
int sl__topo_apply_shards(sl_client *c, uint16_t asked, const sl_reply *r, size_t n, const uint8_t *data);
int sl__topo_apply_nodes_text(sl_client *c, uint16_t asked, const uint8_t *text, size_t len);
int sl__topo_discover(sl_client *c, int *is_cluster);      /* from the known nodes, then the seeds */
void sl__topo_maybe_refresh(sl_client *c);                 /* throttled: at most once a second */
uint16_t sl__topo_random_primary(sl_client *c);

/* batch.c */
int sl__batch_exec(sl_batch *b, int timeout_ms);
int sl__batch_prepare(sl_batch *b, int timeout_ms);       /* route; first round queued by the caller */
int sl__batch_finish(sl_batch *b, int status);            /* merge, assemble: the execution's code */

/* engine.c */
int sl__engine_ensure_bn(sl_batch *b, size_t n);
int sl__engine_queue_round(sl_batch *b, int zero_copy);
int sl__engine_node_unwritten(const sl__node *n);
int sl__engine_node_busy(const sl__node *n);
int sl__engine_write(sl_client *c, size_t k);
int sl__engine_read(sl_client *c, size_t k);
int sl__engine_node_failed(sl_client *c, size_t k, sl_err_kind kind, int code);
int sl__engine_abandon(sl_batch *b, sl_err_kind kind, const char *msg);
int sl__engine_advance(sl_batch *b, uint64_t *wait_ms);

/* sync.c: the blocking driver */
int sl__engine_run_sync(sl_batch *b);
void sl__drain_cancel(sl_client *c);                      /* empties the cancel pipe */

/* split.c */
int sl__split_plan(sl_batch *b, uint32_t ci, const sl__cmdinfo *info);
int sl__split_fanout(sl_batch *b, uint32_t ci);
int sl__split_merge(sl_batch *b, uint32_t ci);
int sl__batch_add_error(sl_batch *b, uint32_t ci, sl_err_kind kind, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int sl__batch_push_cmd(sl_batch *b, sl__cmd **out);
const uint8_t *sl__cmd_bytes(const sl_batch *b, const sl__cmd *cmd);

#define SL__MERGE_NONE 0
#define SL__MERGE_MGET 1
#define SL__MERGE_SUM 2
#define SL__MERGE_MSET 3
#define SL__MERGE_ARRAY 4  /* fan-out: an array of per-node replies */
#define SL__MERGE_CONCAT 5 /* fan-out KEYS */
#define SL__MERGE_ALLOK 6  /* fan-out FLUSHALL...: OK when all OK */
#define SL__MERGE_PONG 7   /* fan-out PING */

#endif
