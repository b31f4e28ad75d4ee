/* client.h: the client object (client.c) and its small shared helpers. Nothing here is part of the ABI. */
#ifndef SL_CLIENT_H
#define SL_CLIENT_H

#include <stdatomic.h>
#include <stdint.h>
#include "alloc.h"
#include "conn.h"
#include "slotlane.h"
#include "topology.h"
#include "url.h"

struct sl_client {
    sl__alloc alloc;
    sl_client_options opts;      /* strings below are the client's copies */
    sl__url url;
    sl_tls *tls;                 /* the client's reference to its TLS configuration, or NULL */
    int tls_failed;              /* a TLS handshake, verification or record failed (SL_ETLS) */
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
    unsigned fork_gen;           /* sl__fork_generation() when made: another one means a fork()ed child */
    atomic_uint q_batches;       /* sl_loop_submit_cq: batches submitted, not yet completed */
    _Atomic uint64_t q_bytes;    /* ... and their command bytes (the in-flight bounds) */
    sl_push_fn push_fn;          /* out-of-band pushes on command connections (or NULL: dropped) */
    void *push_ctx;
    /* Leased connections (lease.c): each is a plain-mode client of its own on one node. */
    struct sl__leases *leases;   /* the pool, NULL until the first lease */
    sl_client *lease_parent;     /* a lease's client: the client it serves (it never leases) */
    _Atomic(sl_client *) lease_active; /* the lease running a blocking call now (cancel reaches it) */
    char errmsg[SL__ERRMSG_MAX];
};

/* client.c */
uint64_t sl__now_ms(void);
void sl__set_err(sl_client *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
uint64_t sl__rand(sl_client *c);
/* How many fork()s this process descends from (pthread_atfork counts them in each child):
 * a handle made under another generation is used in a child and fails with SL_EFORK. */
unsigned sl__fork_generation(void);
int sl__check_fork(sl_client *c);                         /* 0, or SL_EFORK with errmsg */
/* client.c: sl_client_new without the probe PING (a lease connects when first used). */
int sl__client_make(sl_client **out, const sl_client_options *opts, int probe, char *errmsg, size_t errmsg_cap);

/* lease.c */
void sl__leases_free(sl_client *c);
struct sl_batch;
/* A batch with a blocking command outside MULTI: 0 none (run as usual), 1 it is the batch's
 * one command (run it on a lease: sl__lease_exec), -1 a pipeline holding one (refused). */
int sl__lease_classify(struct sl_batch *b);
int sl__lease_exec(struct sl_batch *b, int timeout_ms);   /* the execution's code */
int sl__lease_refuse(struct sl_batch *b);                 /* SL_EBLOCKING, records for all */

#endif
