/* blocking: clients parked on keys until a write makes their command servable, a
 * deadline passes, or CLIENT UNBLOCK releases them (BLPOP, BLMOVE, BZPOPMIN, ...;
 * streams' XREAD BLOCK use the same module).
 *
 * A blocking command that finds nothing to serve calls sv_block_on_keys instead of
 * replying (when sv_block_allowed says it may block: not inside MULTI, not during
 * the log's replay, not from a context that cannot park). The waiter keeps a copy of
 * the command. Every write that can make a key servable calls sv_signal_key_ready
 * (the keyspace does it for every new list or sorted set, as Redis's dbAdd does);
 * after the current top-level command the shard serves its ready keys
 * (sv_block_serve, as Redis's handleClientsBlockedOnKeys): the waiters of each key in
 * FIFO order try their command again, through the command's try callback (default:
 * run the command again with the same arguments). A try that replies has served the
 * waiter; one that calls sv_block_on_keys again keeps waiting, with nothing written.
 *
 * Who waits is abstract (sv_block_owner): a local connection (conn.c/fwd.c), or a
 * request forwarded from another shard (fwd.c) whose reply travels back when served.
 * The owner learns when the reply is written (done) and is asked whether its client
 * is still there (gone). */
#ifndef SV_BLOCKING_H
#define SV_BLOCKING_H

#include "server.h"

typedef struct sv_waiter sv_waiter;

/* A shard's waiters (sv_shard.blk). */
typedef struct sv_blk {
    int nready;              /* keys signalled and not served yet */
    sv_str *ready;           /* their names (owned copies) */
    int capready;
    sv_dict keys;            /* key -> struct sv_bkey (its FIFO of waiters) */
    sv_waiter *all;          /* every waiter of the shard (CLIENT UNBLOCK, cron, close) */
    sv_waiter *tfirst, *tlast; /* waiters with a deadline, earliest first */
    uv_timer_t timer;        /* fires at tfirst's deadline */
    int64_t timer_at;        /* when it is armed for, 0 when stopped */
    int serving;             /* inside sv_block_serve_ready */
    struct sv_conn **resume; /* connections to resume after the serve pass */
    int nresume, capresume;
    sv_buf scratch;          /* a try's reply before it is known to be served */
    sv_str serving_key;      /* the key whose waiters are being tried (sv_block_ready_key) */
    atomic_int nwaiters;     /* every waiter */
    atomic_int nsecondary;   /* of which secondary parts (INFO blocked_clients counts the others) */
    atomic_int nparts;       /* of which parts, primary or secondary (INFO blocked_parts) */
} sv_blk;

/* Tries the blocked command again (in c: reply, shard, session of the waiter).
 * Replies when it can be served; otherwise calls sv_block_on_keys (keeps waiting)
 * and writes nothing. */
typedef void sv_block_try_fn(sv_ctx *c, sv_waiter *w, int argc, sv_str *argv);

typedef struct sv_block_type {
    sv_block_try_fn *try_again;           /* NULL: run the command again (sv_execute) */
    void (*timeout_reply)(sv_reply *r);   /* NULL: a null array (BLPOP's *-1 / _) */
    void (*free_priv)(void *priv);        /* frees the priv given to sv_block_on_keys */
} sv_block_type;

enum { SV_BLOCK_SERVED, SV_BLOCK_CANCELLED };

typedef struct sv_block_owner {
    /* where the reply goes (the try writes into a scratch buffer first) */
    sv_buf *(*reply_buf)(void *owner);
    /* the reply is in reply_buf (SERVED), or the waiter is gone without one at
     * shutdown (CANCELLED: the owner answers as it can) */
    void (*done)(void *owner, int how);
    /* the client is gone: the waiter is dropped without a reply (may be NULL) */
    int (*gone)(void *owner);
} sv_block_owner;

/* Whether the command running in c may park (otherwise it answers as on timeout). */
static inline int sv_block_allowed(const sv_ctx *c) { return c->can_block && !c->noblock; }

/* Redis's timeout argument in seconds (fractions allowed, 0 = for ever): sets the
 * absolute deadline in ms (0 for ever) or replies Redis's error and returns 0. */
int sv_block_parse_timeout(sv_ctx *c, sv_str a, int64_t *deadline_ms);

/* Parks the command running in c on keys (type may be NULL for the defaults; priv
 * is freed with type->free_priv when the waiter goes). Writes no reply. When called
 * from a try, keeps that waiter waiting instead (keys, deadline and priv unchanged;
 * priv given here is then freed at once). */
void sv_block_on_keys(sv_ctx *c, int nkeys, const sv_str *keys, int64_t deadline_ms, const sv_block_type *type,
                      void *priv);

/* For the callers that run commands (conn.c, fwd.c): after a command with
 * c->can_block set, c->blocked is the new waiter, to be given its owner, a copy of
 * the command (the caller's buffers are reused meanwhile) and the session the retries
 * run with (NULL: a copy of the id and protocol of the one it ran with). */
void sv_block_attach(sv_waiter *w, const sv_block_owner *ops, void *owner, int argc, sv_str *argv,
                     sv_session *sess);
/* The owner goes away: the waiter is dropped without a reply. */
void sv_block_cancel(sv_waiter *w);

/* The key may now serve waiters: queued, served after the current command. */
void sv_signal_key_ready(sv_shard *sh, sv_str key);
/* Serves the ready keys (and resumes the connections it unblocked); cheap when there
 * are none. Called after every top-level command. */
void sv_block_serve_ready(sv_shard *sh);
static inline void sv_block_serve(sv_shard *sh)
{
    if (sh->blk && (sh->blk->nready || sh->blk->nresume)) sv_block_serve_ready(sh);
}

/* CLIENT UNBLOCK: the shard's waiter of that client, answered with its timeout reply
 * or with -UNBLOCKED. Returns 1 when there was one. */
int sv_block_unblock_client(sv_shard *sh, uint64_t client_id, int error);
/* CLIENT UNBLOCK from a client: this shard's waiter of that client; else, in per-shard
 * mode with several shards, the request goes to every other shard (client ids are
 * unique in the server) and the asking client waits, as a parked command does, for
 * their answers: the reply is :1 when one of them unblocked it. Replies into c. */
void sv_block_unblock_any(sv_ctx *c, uint64_t client_id, int error);

/* What a waiter carries (for a type's try callback). */
void *sv_waiter_priv(sv_waiter *w);
uint64_t sv_waiter_client_id(sv_waiter *w);

/* A connection that a waiter answered asks to be resumed (its later requests run)
 * once the current serve pass is over. conn is a struct sv_conn. */
void sv_block_resume_later(sv_shard *sh, struct sv_conn *conn);

/* The signalled key whose waiters are being tried (a try serves that key, as Redis
 * 7.0 serves a parked XREAD from the key that got data); p NULL outside such a try. */
sv_str sv_block_ready_key(sv_shard *sh);

/* Parts of a command coordinated across shards (fwd_multi.c: XREAD/XREADGROUP BLOCK
 * with keys on several shards), one waiter per owner shard. The primary is counted
 * in blocked_clients and answers CLIENT UNBLOCK; a secondary is neither (the client
 * is one blocked client). Call once, after the waiter parked. */
void sv_waiter_set_part(sv_waiter *w, int secondary);
/* The coordinator has its answer: the part of client_id parked on this shard (if it
 * still is) answers as on timeout. Returns 1 when there was one. */
int sv_block_release_part(sv_shard *sh, uint64_t client_id);

/* Parked clients on the shard (INFO blocked_clients), readable from any thread. */
int sv_block_count(sv_shard *sh);
/* Coordinated parts parked on the shard (INFO blocked_parts), from any thread: a
 * cross-shard XREAD BLOCK is parked everywhere once it counts one per owner shard. */
int sv_block_parts_count(sv_shard *sh);

/* The instance's CLIENT UNBLOCK channels, one per shard (sv_server_init_state). */
void sv_block_init_state(sv_server *s);
void sv_block_free_state(sv_server *s);
void sv_block_init_shard(sv_shard *sh);
/* At shutdown (in the loop, before forwarding closes): every waiter is cancelled. */
void sv_block_close_shard(sv_shard *sh);
/* Periodic (cron): drops waiters whose client has gone (gone() of their owner). */
void sv_block_cron(sv_shard *sh);

#endif
