/* batch.h: a batch of commands, its routing state per command and
 * per node (batch.c). Nothing here is part of the ABI. */
#ifndef SL_BATCH_H
#define SL_BATCH_H

#include <stdint.h>
#include "alloc.h"
#include "client.h"
#include "commands.h"
#include "resp.h"

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
#define SL__F_READ       0x0200u /* read-only by the command table (replica reads, read retries) */
#define SL__F_RETRIED    0x0400u /* sent once more after its connection broke (failover.c) */
#define SL__F_REROUTE    0x0800u /* route again by its slot when it is queued (failover.c) */
#define SL__F_TOPRIMARY  0x1000u /* from now on to the slot's primary, never a replica */

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
    int reroute;                 /* a command waits to be routed again (failover.c): the
                                    blocking driver refreshes the map (rate-limited) first */
    uint64_t retry_until;        /* failover.c: no resend of never-sent commands after this */
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
    /* sl_loop_submit_cq (async.c, cq.c). */
    struct sl_cq *cq;            /* where this submission completes; NULL: a callback */
    void *token;                 /* the submitter's, handed back in its completion */
    uint64_t q_bytes;            /* what this submission counts in the client's bounds */
    atomic_int cancel_req;       /* sl_batch_cancel: set by any thread, taken by the loop */
    /* Chains of executions that answer as one (async.c): a scan's page (sl_scan_next_async,
     * sl_loop_submit_scan_cq) or EVALSHA with reload (sl_script_exec_async,
     * sl_loop_submit_script_cq); the chain's callback runs once, at its end. */
    int chain;                   /* SL__CHAIN_NONE, _SCAN, _SCRIPT */
    void (*chain_cb)(struct sl_batch *b, int status, const sl_sizes *sizes, void *arg);
    void *chain_arg;
    int chain_timeout;
    struct sl_scan *scan;        /* SL__CHAIN_SCAN: the scan paged */
    int scan_failures;           /* failed steps of this page: the second one is its answer */
    const void *script_body;     /* SL__CHAIN_SCRIPT: the caller's, until the callback */
    size_t script_len;
    sl__bytes script_cmd;        /* a copy of the EVALSHA, sent again after a SCRIPT LOAD */
    int script_step;             /* 0 EVALSHA, 1 SCRIPT LOAD, 2 EVALSHA again */
    /* A blocking command on a lease (async.c; lease.c): 0 none, 1 running there, 2 done. */
    int lease_state;
    int lease_asking;            /* the lease's batch is ASKING + the command */
    int lease_timeout;
    struct sl__lease *lease;
};

enum { SL__CHAIN_NONE = 0, SL__CHAIN_SCAN = 1, SL__CHAIN_SCRIPT = 2 };

/* batch.c */
int sl__batch_exec(sl_batch *b, int timeout_ms);
int sl__batch_prepare(sl_batch *b, int timeout_ms);       /* route; first round queued by the caller */
int sl__batch_finish(sl_batch *b, int status);            /* merge, assemble: the execution's code */

void sl__batch_results_reset(sl_batch *b);                /* no records, ncmds = nuser */
int sl__batch_run_engine(sl_batch *b, int timeout_ms);    /* prepare, rounds, finish (no cancel bookkeeping) */
/* 1 when p[0, len) is the upper-case word `upper`, in any case (command names, keywords). */
int sl__name_is(const uint8_t *p, size_t len, const char *upper);
/* The slot of command ci's keys: -1 without keys, -2 out of memory; *multi set when they span slots. */
int sl__batch_cmd_slot(sl_batch *b, uint32_t ci, const sl__cmdinfo **infop, int *multi);
int sl__batch_add_error(sl_batch *b, uint32_t ci, sl_err_kind kind, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int sl__batch_push_cmd(sl_batch *b, sl__cmd **out);
const uint8_t *sl__cmd_bytes(const sl_batch *b, const sl__cmd *cmd);

#endif
