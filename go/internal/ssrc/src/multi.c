/* multi: transactions — MULTI, EXEC, DISCARD, WATCH, UNWATCH with Redis 7.0's
 * replies, and the internal commands that run a transaction on the shard owning its
 * keys when it was received by another one (one-port mode, --misrouted forward).
 *
 * While a connection is in MULTI, sv_execute checks each command (unknown, arity,
 * routing: an error fails the transaction, EXEC then replies EXECABORT) and queues
 * it here with a copy of its arguments. EXEC runs the queue through sv_call, so each
 * command is logged and signals its keys as it would alone, inside one log unit
 * (MULTI ... EXEC in the log, replayed whole or not at all: aof.c, aof_load.c).
 *
 * WATCH keeps a version per watched key on the key's owner shard (db.c); every
 * modification of the key (sv_signal_modified_key) changes it, and EXEC runs only
 * when every watched key still has the version it had at WATCH time and has not
 * expired since. A watch of another shard's key (forwarding) is taken on that shard
 * by `slotlane.watch` (fwd_multi.c records the versions it answers); the
 * transaction then runs there as `slotlane.exec`, which checks and releases them. */
#include <stdio.h>

#include "server.h"
#include "aof.h"

static const char *ERR_EXECABORT = "-EXECABORT Transaction discarded because of previous errors.";

sv_tx *sv_tx_get(sv_session *s)
{
    if (!s->tx) s->tx = sv_calloc(1, sizeof(sv_tx));
    return s->tx;
}

void sv_tx_flag_error(sv_ctx *c)
{
    if (c->sess->tx && c->sess->tx->in_multi) c->sess->tx->failed = 1;
}

/* ---- the queue ---- */

void sv_tx_queue(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv)
{
    sv_tx *tx = c->sess->tx;
    if (tx->nq == tx->capq) {
        tx->capq = tx->capq ? tx->capq * 2 : 8;
        tx->q = sv_realloc(tx->q, sizeof(sv_txcmd) * (size_t)tx->capq);
    }
    /* the arguments live in the read buffer, which the next read reuses: one copy,
     * each NUL-terminated as the parser's are followed by a CR */
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) bytes += argv[i].len + 1;
    sv_txcmd *q = &tx->q[tx->nq++];
    q->cmd = cmd;
    q->argc = argc;
    q->argv = sv_malloc(sizeof(sv_str) * (size_t)argc + bytes);
    char *p = (char *)(q->argv + argc);
    for (int i = 0; i < argc; i++) {
        if (argv[i].len) memcpy(p, argv[i].p, argv[i].len);
        q->argv[i].p = p;
        q->argv[i].len = argv[i].len;
        p += argv[i].len;
        *p++ = 0;
    }
    tx->queued_bytes += bytes;
    sv_add_status(&c->r, "QUEUED");
}

void sv_tx_clear_queue(sv_tx *tx)
{
    for (int i = 0; i < tx->nq; i++) free(tx->q[i].argv);
    tx->nq = 0;
    tx->queued_bytes = 0;
    if (tx->capq > 64) {
        free(tx->q);
        tx->q = NULL;
        tx->capq = 0;
    }
    tx->in_multi = 0;
    tx->failed = 0;
}

/* ---- watches ---- */

int sv_tx_watching(const sv_tx *tx, sv_str key)
{
    for (int i = 0; i < tx->nw; i++)
        if (!tx->w[i].released && tx->w[i].len == key.len && memcmp(tx->w[i].key, key.p, key.len) == 0) return 1;
    return 0;
}

void sv_tx_add_watch(sv_tx *tx, sv_str key, int shard, uint64_t version)
{
    if (tx->nw == tx->capw) {
        tx->capw = tx->capw ? tx->capw * 2 : 4;
        tx->w = sv_realloc(tx->w, sizeof(sv_txwatch) * (size_t)tx->capw);
    }
    sv_txwatch *w = &tx->w[tx->nw++];
    w->key = sv_malloc(key.len + 1);
    if (key.len) memcpy(w->key, key.p, key.len);
    w->key[key.len] = 0;
    w->len = key.len;
    w->shard = shard;
    w->version = version;
    w->released = 0;
}

void sv_tx_drop_watches(sv_shard *sh, sv_tx *tx, int shard)
{
    int k = 0;
    for (int i = 0; i < tx->nw; i++) {
        sv_txwatch *w = &tx->w[i];
        if (shard >= 0 && w->shard != shard) {
            tx->w[k++] = *w;
        } else if (w->shard == sh->index) {
            sv_watch_release(sh, (sv_str){w->key, w->len});
            free(w->key);
        } else {
            /* kept by another shard: fwd.c sends it slotlane.unwatch after this command */
            if (!w->released) tx->nreleased++;
            w->released = 1;
            tx->w[k++] = *w;
        }
    }
    tx->nw = k;
}

/* Was a key watched at `version` modified since, or has its TTL passed? */
static int watch_broken(sv_shard *sh, sv_str key, uint64_t version)
{
    if (sv_watch_version(sh, key) != version) return 1;
    /* a key whose time passed is gone for EXEC, even if no access expired it yet */
    sv_entry *e = sv_dict_find(&sh->keys, key.p, key.len);
    return e && e->u.i != 0 && e->u.i <= sh->now_ms;
}

void sv_tx_free(sv_shard *sh, sv_session *s)
{
    sv_tx *tx = s->tx;
    if (!tx) return;
    sv_tx_clear_queue(tx);
    for (int i = 0; i < tx->nw; i++) { /* another shard's watches: fwd.c released them */
        sv_txwatch *w = &tx->w[i];
        if (w->shard == sh->index && !w->released) sv_watch_release(sh, (sv_str){w->key, w->len});
        free(w->key);
    }
    free(tx->q);
    free(tx->w);
    free(tx);
    s->tx = NULL;
}

/* ---- running a transaction ---- */

/* Runs the commands as one unit: one array reply, one unit in the log. */
static void run_unit(sv_ctx *c, int n, sv_txcmd *q)
{
    int noblock = c->noblock;
    c->noblock = 1; /* a blocking command inside EXEC behaves as its non-blocking form */
    sv_aof_unit_begin(c->sh);
    sv_add_array(&c->r, n);
    for (int i = 0; i < n; i++) {
        c->sess->last_cmd = q[i].cmd->name;
        sv_call(c, q[i].cmd, q[i].argc, q[i].argv);
    }
    sv_aof_unit_end(c->sh);
    c->noblock = noblock;
}

/* Per-shard mode with several shards: the keys of all queued commands must share a
 * slot, as Redis Cluster checks at EXEC (each was routed to this shard when queued). */
static int one_slot(sv_tx *tx)
{
    int have = 0;
    unsigned slot = 0;
    for (int i = 0; i < tx->nq; i++) {
        int keys[64];
        int argc = tx->q[i].argc;
        int *kp = argc > 64 ? sv_malloc(sizeof(int) * (size_t)argc) : keys;
        int nk = sv_cmd_keypos(tx->q[i].cmd, argc, tx->q[i].argv, kp, argc > 64 ? argc : 64);
        int ok = 1;
        for (int k = 0; k < nk && ok; k++) {
            unsigned s = sl__key_slot(tx->q[i].argv[kp[k]].p, tx->q[i].argv[kp[k]].len);
            if (!have) {
                slot = s;
                have = 1;
            } else if (s != slot) {
                ok = 0;
            }
        }
        if (kp != keys) free(kp);
        if (!ok) return 0;
    }
    return 1;
}

void sv_cmd_multi(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_tx *tx = sv_tx_get(c->sess);
    if (tx->in_multi) {
        sv_add_error(&c->r, "MULTI calls can not be nested");
        return;
    }
    tx->in_multi = 1;
    tx->failed = 0;
    sv_add_ok(&c->r);
}

void sv_cmd_discard(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_tx *tx = c->sess->tx;
    if (!tx || !tx->in_multi) {
        sv_add_error(&c->r, "DISCARD without MULTI");
        return;
    }
    sv_tx_clear_queue(tx);
    sv_tx_drop_watches(c->sh, tx, -1);
    sv_add_ok(&c->r);
}

void sv_cmd_exec(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_shard *sh = c->sh;
    sv_tx *tx = c->sess->tx;
    if (!tx || !tx->in_multi) {
        sv_add_error(&c->r, "EXEC without MULTI");
        return;
    }
    if (tx->failed) {
        sv_tx_clear_queue(tx);
        sv_tx_drop_watches(sh, tx, -1);
        sv_add_error(&c->r, ERR_EXECABORT);
        return;
    }
    if (sv_cfg.shards > 1 && !sv_cfg.misrouted && !c->noroute && !sh->loading && !one_slot(tx)) {
        sv_tx_clear_queue(tx);
        sv_tx_drop_watches(sh, tx, -1);
        sv_add_error(&c->r, "-CROSSSLOT Keys in request don't hash to the same slot");
        return;
    }
    int broken = 0;
    for (int i = 0; i < tx->nw && !broken; i++)
        broken = !tx->w[i].released &&
                 (tx->w[i].shard != sh->index || watch_broken(sh, (sv_str){tx->w[i].key, tx->w[i].len}, tx->w[i].version));
    sv_tx_drop_watches(sh, tx, -1); /* EXEC unwatches, whatever happens */
    if (broken) {
        sv_tx_clear_queue(tx);
        sv_add_null_array(&c->r);
        return;
    }
    /* the queue leaves the session first: its commands run on a connection that is
     * out of MULTI, as each would have run alone */
    int n = tx->nq;
    sv_txcmd *q = tx->q;
    tx->q = NULL;
    tx->nq = tx->capq = 0;
    tx->queued_bytes = 0;
    tx->in_multi = 0;
    run_unit(c, n, q);
    for (int i = 0; i < n; i++) free(q[i].argv);
    free(q);
}

void sv_cmd_watch(sv_ctx *c, int argc, sv_str *argv)
{
    sv_tx *tx = sv_tx_get(c->sess);
    if (tx->in_multi) {
        sv_add_error(&c->r, "WATCH inside MULTI is not allowed");
        return;
    }
    for (int i = 1; i < argc; i++) {
        if (sv_tx_watching(tx, argv[i])) continue;
        sv_db_lookup_write(c->sh, argv[i]); /* a key already past its time goes first */
        sv_tx_add_watch(tx, argv[i], c->sh->index, sv_watch_add(c->sh, argv[i]));
    }
    sv_add_ok(&c->r);
}

void sv_cmd_unwatch(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    if (c->sess->tx) sv_tx_drop_watches(c->sh, c->sess->tx, -1);
    sv_add_ok(&c->r);
}

/* ---- on the owner shard, for a transaction received by another one ----
 *
 * slotlane.watch KEY...   takes a watch of each key here; replies their versions
 * slotlane.unwatch KEY... releases one watch of each key
 * slotlane.exec NWATCH [KEY VERSION]... NCMDS [ARGC ARG...]...
 *                         checks and releases the watches, then runs the commands as
 *                         EXEC would (the client's protocol) */

void sv_cmd_slotlane_watch(sv_ctx *c, int argc, sv_str *argv)
{
    sv_add_array(&c->r, argc - 1);
    for (int i = 1; i < argc; i++) {
        sv_db_lookup_write(c->sh, argv[i]);
        sv_add_bulk_ll(&c->r, (long long)sv_watch_add(c->sh, argv[i]));
    }
}

void sv_cmd_slotlane_unwatch(sv_ctx *c, int argc, sv_str *argv)
{
    for (int i = 1; i < argc; i++) sv_watch_release(c->sh, argv[i]);
    sv_add_ok(&c->r);
}

static int get_count(sv_str a, long long max, long long *v)
{
    return sv_str2ll(a.p, a.len, v) && *v >= 0 && *v <= max;
}

void sv_cmd_slotlane_exec(sv_ctx *c, int argc, sv_str *argv)
{
    sv_shard *sh = c->sh;
    long long nw, ncmd;
    int i = 1;
    if (!get_count(argv[i++], (argc - 2) / 2, &nw) || i + 2 * nw >= argc) {
        sv_add_error(&c->r, "slotlane.exec: malformed watch list");
        return;
    }
    int wpos = i, broken = 0;
    for (long long k = 0; k < nw; k++, i += 2) {
        long long ver;
        if (!sv_str2ll(argv[i + 1].p, argv[i + 1].len, &ver)) {
            sv_add_error(&c->r, "slotlane.exec: malformed watch list");
            return;
        }
        if (!broken) broken = watch_broken(sh, argv[i], (uint64_t)ver);
    }
    if (!get_count(argv[i++], argc, &ncmd)) {
        sv_add_error(&c->r, "slotlane.exec: malformed command list");
        return;
    }
    /* check every command before anything runs or is released */
    sv_txcmd *q = sv_calloc((size_t)(ncmd ? ncmd : 1), sizeof(sv_txcmd));
    int ok = 1;
    for (long long k = 0; k < ncmd && ok; k++) {
        long long n;
        ok = i < argc && get_count(argv[i], argc - i - 1, &n) && n >= 1;
        if (!ok) break;
        const sv_cmd *cmd = sv_cmd_lookup(argv[i + 1].p, argv[i + 1].len);
        ok = cmd && cmd->multi == SV_MULTI_QUEUE && !(cmd->flags & SV_CMD_INTERNAL) &&
             !((cmd->arity > 0 && n != cmd->arity) || n < -cmd->arity);
        q[k].cmd = cmd;
        q[k].argc = (int)n;
        q[k].argv = argv + i + 1;
        i += 1 + (int)n;
    }
    if (!ok || i != argc) {
        free(q);
        sv_add_error(&c->r, "slotlane.exec: malformed command list");
        return;
    }
    for (long long k = 0; k < nw; k++) sv_watch_release(sh, argv[wpos + 2 * k]);
    if (broken) sv_add_null_array(&c->r);
    else run_unit(c, (int)ncmd, q);
    free(q);
}
