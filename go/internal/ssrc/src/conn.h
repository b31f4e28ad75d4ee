/* conn: one client connection — read buffer and parser, the output buffer with its
 * limit, writes batched per read (one write per pipeline batch). */
#ifndef SV_CONN_H
#define SV_CONN_H

#include "server.h"

typedef struct sv_conn {
    uv_tcp_t tcp;
    sv_shard *sh;
    struct sv_conn *prev, *next;
    sv_session sess;
    sv_buf rbuf;        /* bytes read; the current request starts at rbuf.data[rstart] */
    size_t rstart;
    sv_parser parser;
    sv_str *argv;       /* scratch argument vector, grown to the largest request */
    int argv_cap;
    sv_buf out;         /* replies not yet handed to the kernel */
    sv_buf inflight;    /* bytes of the write in progress (must stay put until it ends) */
    uv_write_t wreq;
    int writing;
    int closing;        /* uv_close called */
    int close_when_flushed; /* QUIT or protocol error: close once out is written */
    int64_t last_interaction_ms;
    /* forwarding: replies are owed in command order; pend_head..pend_tail hold the
     * commands after the first one still waiting for another shard */
    struct sv_pend *pend_head, *pend_tail;
    int fwd_outstanding;  /* messages at other shards that point at this connection */
    int handle_closed;    /* uv_close finished; freed once fwd_outstanding is 0 */
    int flush_queued;
    struct sv_conn *flush_next;
    /* backpressure: reading stopped until shard blocked_on has room (fwd.c) */
    int fwd_paused;
    int blocked_on;     /* a shard, or -1: a running coordinated command of its own */
    int coord_active;   /* coordinated commands still running their steps */
    int coord_changed;  /* one of them finished since the connection paused */
    struct sv_conn *paused_next;
    struct sv_pend *hold; /* last slot of the earliest read batch still owed replies:
                           * output waits until it is drained (one write per batch) */
    /* set (by the connection's shard) when it is dropped at the output limit; other
     * shards read it to skip the forwarded commands still queued for it, as Redis
     * stops running the commands of a client it is about to close */
    atomic_int dropped;
    /* reply bytes other shards computed for this connection that are not back yet:
     * unsent replies too, so they count against the output limit (the owner shard
     * adds, this shard subtracts on delivery) */
    atomic_llong fwd_bytes;
    size_t pend_bytes; /* reply bytes waiting in pend slots behind a forwarded command */
    /* blocking: a command of this connection is parked (here: blk, its reply going to
     * blk_slot when earlier replies are still owed, else to out; or at another shard:
     * blk_remote, the slot its reply comes back to). Meanwhile the connection reads
     * (so a disconnect is seen) but runs nothing: later requests wait in rbuf. */
    int blk_wait;
    struct sv_waiter *blk;
    struct sv_pend *blk_slot;
    struct sv_pend *blk_remote;
    void *blk_coord; /* a coordinated XREAD BLOCK with parts on several shards (fwd_multi.c) */
    /* CLIENT PAUSE (pause.c): the request at rstart waits for the pause's end, with
     * what follows it; the connection keeps reading (a disconnect is seen) */
    int cpause_wait;
    struct sv_conn *cpause_next;
} sv_conn;

/* Output held for forwarded replies is written anyway past this size. */
#define SV_FLUSH_EARLY (256 * 1024)

/* Reply bytes this shard holds for the client and has not handed to the kernel. */
static inline size_t sv_conn_unsent(const sv_conn *c) { return c->out.len + c->inflight.len + c->pend_bytes; }

/* Accepts a pending connection on the shard's listener. */
void sv_conn_accept(sv_shard *sh);
/* The same for a socket accepted outside the loop (the busy-script mode). */
void sv_conn_adopt(sv_shard *sh, int fd);
void sv_conn_close(sv_conn *c);
/* Closes a client whose unsent replies passed --output-limit (logged). */
void sv_conn_drop_over_limit(sv_conn *c);
/* Hands out to the kernel (one write; the rest asynchronously). */
void sv_conn_flush(sv_conn *c);
/* The same without writing the shard's log first: only for output that acknowledges
 * no write (the busy-script mode's replies, while a script's log unit is open). */
void sv_conn_flush_unlogged(sv_conn *c);
/* The shard's flush list: connections whose replies wait for the end of the loop
 * turn — for the log's group commit (aof.c) or for forwarded replies that came
 * back (fwd.c). Queued once; sv_conn_flush_queued writes them all (a read batch
 * still owed forwarded replies waits for them) and drops those past the limit. */
void sv_conn_queue_flush(sv_conn *c);
void sv_conn_flush_queued(sv_shard *sh);
/* Frees a connection whose handle is closed (forwarding: after the last reply). */
void sv_conn_free(sv_conn *c);
/* Backpressure: runs the requests still buffered and reads again (fwd.c calls it
 * when the shard the connection waited for has room). */
void sv_conn_resume(sv_conn *c);
/* A command run on the connection parked (ctx.blocked): the connection waits for
 * its reply (slot: where it goes when earlier replies are still owed, or NULL). */
void sv_conn_park(sv_conn *c, struct sv_waiter *w, struct sv_pend *slot, int argc, sv_str *argv);
/* Writes a CLIENT LIST line for the connection. */
void sv_conn_describe(sv_conn *c, sv_buf *out, int64_t now_ms);

#endif
