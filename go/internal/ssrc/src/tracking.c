/* tracking: see tracking.h. A shard's state is made by its first TRACKING ON (or a
 * key read through forwarding), so a shard without tracking clients pays one NULL
 * test per modified key (and, with forwarding, one load of sv_cur->tracking_bcast_any). The table
 * maps each key read by a tracking client to the IDs of the clients that read it;
 * an invalidation sends to each and forgets the key (as Redis's TrackingTable). */
#include "tracking.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "fwd.h"

typedef struct sv_trk {
    int on, bcast, optin, optout, noloop, caching;
    int broken; /* an invalidation found the REDIRECT client gone (TRACKINGINFO broken_redirect, as Redis) */
    int home; /* the shard of the client's connection (a forwarded read's stand-in: its sender's) */
    uint64_t redir;
    int nprefix;
    sv_str *prefix; /* owned copies, sorted */
} sv_trk;

/* A client that read a key: its ID and the shard its connection lives on. */
typedef struct trk_ref {
    uint64_t id;
    int home;
} trk_ref;

typedef struct trk_ids {
    trk_ref *v;
    size_t n, cap;
} trk_ids;

typedef struct sv_trk_shard {
    sv_dict keys;     /* key -> trk_ids */
    int nbcast;       /* sessions of this shard in BCAST mode */
    int nclients;     /* sessions of this shard with tracking on (INFO tracking_clients) */
    sv_session *cur;  /* the session whose command runs (NOLOOP; its own pushes wait) */
    sv_buf pending;   /* invalidations for cur, written after its reply */
} sv_trk_shard;

static sv_trk_shard *shard_state(sv_shard *sh)
{
    if (!sh->trk) {
        sh->trk = sv_calloc(1, sizeof(*sh->trk));
        sv_dict_init(&sh->trk->keys);
    }
    return sh->trk;
}

static void free_ids(sv_entry *e, void *priv)
{
    (void)priv;
    trk_ids *t = e->val;
    if (t) free(t->v);
    free(t);
}

/* ---- forwarding: clients of other shards ----
 * With forwarding (one-port mode, --misrouted forward) a client's reads run on the
 * shards owning their keys, and its REDIRECT client may live on another shard. The
 * owner remembers (client ID, home shard) for a key read through forwarding; an
 * invalidation for a client of another shard travels there in the forwarding
 * transport's batch (sv_fwd_send_tracking) and is written by the client's own shard
 * (sv_tracking_deliver), which knows its options. Two registries shared by the
 * shards, used only in that mode: which shard each connection lives on (REDIRECT's
 * check and delivery, tracking-redir-broken), and the BCAST clients' prefixes (a key
 * modified on any shard reaches them). Each has a lock, taken by connects and
 * closes, TRACKING ON/OFF, and — the BCAST one, for reading — by modified keys while
 * a BCAST client exists in the server (sv_cur->tracking_bcast_any). */
typedef struct bcast_ent {
    uint64_t id;
    int home, nprefix;
    sv_str *prefix; /* owned copies */
} bcast_ent;

/* The instance's registries (sv_server.tracking_reg), made with it (sv_tracking_init_state):
 * two servers in one process never share a client ID's shard or a BCAST client. */
typedef struct sv_tracking_reg {
    uv_mutex_t r_conns_lock;
    sv_dict r_conns_reg; /* 8-byte client ID -> shard (u.i) */
    uv_rwlock_t r_bcast_lock;
    bcast_ent *r_bcast_v;
    int r_bcast_n, r_bcast_cap;
} sv_tracking_reg;
#define conns_lock (sv_cur->tracking_reg->r_conns_lock)
#define conns_reg (sv_cur->tracking_reg->r_conns_reg)
#define bcast_lock (sv_cur->tracking_reg->r_bcast_lock)
#define bcast_v (sv_cur->tracking_reg->r_bcast_v)
#define bcast_n (sv_cur->tracking_reg->r_bcast_n)
#define bcast_cap (sv_cur->tracking_reg->r_bcast_cap)

void sv_tracking_init_state(sv_server *s)
{
    sv_tracking_reg *r = sv_calloc(1, sizeof(*r));
    uv_mutex_init(&r->r_conns_lock);
    sv_dict_init(&r->r_conns_reg);
    uv_rwlock_init(&r->r_bcast_lock);
    s->tracking_reg = r;
}

void sv_tracking_free_state(sv_server *s)
{
    sv_tracking_reg *r = s->tracking_reg;
    if (!r) return;
    sv_dict_clear(&r->r_conns_reg, NULL, NULL);
    for (int i = 0; i < r->r_bcast_n; i++) {
        for (int k = 0; k < r->r_bcast_v[i].nprefix; k++) free((char *)r->r_bcast_v[i].prefix[k].p);
        free(r->r_bcast_v[i].prefix);
    }
    free(r->r_bcast_v);
    uv_rwlock_destroy(&r->r_bcast_lock);
    uv_mutex_destroy(&r->r_conns_lock);
    free(r);
    s->tracking_reg = NULL;
}

static int shared_mode(sv_shard *sh) { return sh->fwd_on && sv_cfg.shards > 1; }

void sv_tracking_conn_opened(sv_shard *sh, uint64_t id)
{
    if (!shared_mode(sh)) return;
    uv_mutex_lock(&conns_lock);
    sv_entry *e = sv_dict_add(&conns_reg, &id, sizeof(id), NULL);
    if (e) e->u.i = sh->index;
    uv_mutex_unlock(&conns_lock);
}

static void bcast_unregister(uint64_t id)
{
    uv_rwlock_wrlock(&bcast_lock);
    for (int i = 0; i < bcast_n; i++)
        if (bcast_v[i].id == id) {
            for (int k = 0; k < bcast_v[i].nprefix; k++) free((char *)bcast_v[i].prefix[k].p);
            free(bcast_v[i].prefix);
            bcast_v[i] = bcast_v[--bcast_n];
            atomic_fetch_sub(&sv_cur->tracking_bcast_any, 1);
            break;
        }
    uv_rwlock_wrunlock(&bcast_lock);
}

static void bcast_register(sv_shard *sh, uint64_t id, const sv_trk *t)
{
    bcast_unregister(id);
    uv_rwlock_wrlock(&bcast_lock);
    if (bcast_n == bcast_cap) {
        bcast_cap = bcast_cap ? bcast_cap * 2 : 8;
        bcast_v = sv_realloc(bcast_v, sizeof(bcast_ent) * (size_t)bcast_cap);
    }
    bcast_ent *b = &bcast_v[bcast_n++];
    b->id = id;
    b->home = sh->index;
    b->nprefix = t->nprefix;
    b->prefix = sv_malloc(sizeof(sv_str) * (size_t)t->nprefix);
    for (int k = 0; k < t->nprefix; k++) {
        b->prefix[k].p = t->prefix[k].len ? sv_memdup(t->prefix[k].p, t->prefix[k].len) : sv_calloc(1, 1);
        b->prefix[k].len = t->prefix[k].len;
    }
    atomic_fetch_add(&sv_cur->tracking_bcast_any, 1);
    uv_rwlock_wrunlock(&bcast_lock);
}

void sv_tracking_conn_closed(sv_shard *sh, sv_session *s)
{
    if (!shared_mode(sh)) return;
    uv_mutex_lock(&conns_lock);
    sv_entry *e = sv_dict_unlink(&conns_reg, &s->id, sizeof(s->id));
    free(e);
    uv_mutex_unlock(&conns_lock);
    if (s->trk && s->trk->on && s->trk->bcast) bcast_unregister(s->id);
}

/* The shard of a live client (-1: none), in the shared mode. */
static int conn_shard(uint64_t id)
{
    uv_mutex_lock(&conns_lock);
    sv_entry *e = sv_dict_find(&conns_reg, &id, sizeof(id));
    int at = e ? (int)e->u.i : -1;
    uv_mutex_unlock(&conns_lock);
    return at;
}

void sv_tracking_free_shard(sv_shard *sh)
{
    if (!sh->trk) return;
    sv_dict_clear(&sh->trk->keys, free_ids, NULL);
    sv_buf_free(&sh->trk->pending);
    free(sh->trk);
    sh->trk = NULL;
}

static void clear_prefixes(sv_trk *t)
{
    for (int i = 0; i < t->nprefix; i++) free((char *)t->prefix[i].p);
    free(t->prefix);
    t->prefix = NULL;
    t->nprefix = 0;
}

int sv_tracking_clients(sv_shard *sh) { return sh->trk ? sh->trk->nclients : 0; }

void sv_tracking_free_session(sv_shard *sh, sv_session *s)
{
    if (!s->trk) return;
    if (s->trk->on && s->trk->bcast && shared_mode(sh)) bcast_unregister(s->id);
    if (s->trk->on && sh->trk) {
        sh->trk->nclients--;
        if (s->trk->bcast) sh->trk->nbcast--;
    }
    clear_prefixes(s->trk);
    free(s->trk);
    s->trk = NULL;
}

static sv_conn *conn_by_id(sv_shard *sh, uint64_t id)
{
    for (sv_conn *k = sh->conns; k; k = k->next)
        if (k->sess.id == id && !k->closing) return k;
    return NULL;
}

static int has_prefix(sv_str s, sv_str p) { return s.len >= p.len && memcmp(s.p, p.p, p.len) == 0; }

/* ---- invalidation ---- */

static void add_payload(sv_buf *b, const sv_str *key, int proto)
{
    char hdr[32];
    if (key) {
        int n = snprintf(hdr, sizeof(hdr), "*1\r\n$%zu\r\n", key->len);
        sv_buf_append(b, hdr, (size_t)n);
        sv_buf_append(b, key->p, key->len);
        sv_buf_append(b, "\r\n", 2);
    } else if (proto >= 3) {
        sv_buf_append(b, "_\r\n", 3);
    } else {
        sv_buf_append(b, "$-1\r\n", 5);
    }
}

/* Writes a message for the connection `to`: after the reply of the command it runs
 * (its own write), else behind the replies it is owed (forwarding's slots). */
static void put(sv_shard *sh, sv_conn *to, const sv_buf *msg)
{
    sv_trk_shard *ts = sh->trk;
    if (ts && ts->cur == &to->sess) {
        sv_buf_append(&ts->pending, msg->data, msg->len); /* after the reply it is building */
        return;
    }
    sv_buf_append(sh->fwd_on ? sv_fwd_reply_buf(to) : &to->out, msg->data, msg->len);
    if (sh->aof) sv_conn_queue_flush(to); /* after the log, at the end of the turn */
    else sv_conn_flush(to);
}

/* `invalidate [key]` (key NULL: everything, a flush) for the connection `to`, which
 * receives it for itself or as the REDIRECT client of another (redirected). */
static void write_inval(sv_shard *sh, sv_conn *to, int redirected, const sv_str *key)
{
    sv_buf msg = {0};
    if (to->sess.proto >= 3) {
        static const char h[] = ">2\r\n$10\r\ninvalidate\r\n";
        sv_buf_append(&msg, h, sizeof(h) - 1);
    } else if (redirected && to->sess.ps) {
        static const char h[] = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n";
        sv_buf_append(&msg, h, sizeof(h) - 1);
    } else {
        return; /* RESP2 without a subscribed redirect: RESP2 has no pushes */
    }
    add_payload(&msg, key, to->sess.proto);
    put(sh, to, &msg);
    sv_buf_free(&msg);
}

/* One invalidation for the tracking client k of this shard (key NULL: everything, a
 * flush); self: caused by k's own command (NOLOOP). */
static void send_to(sv_shard *sh, sv_conn *k, const sv_str *key, int self)
{
    sv_trk *t = k->sess.trk;
    if (!t || !t->on) return;
    if (key && t->noloop && self) return; /* its own write */
    if (!t->redir) {
        write_inval(sh, k, 0, key);
        return;
    }
    sv_conn *to = conn_by_id(sh, t->redir);
    if (to) {
        write_inval(sh, to, 1, key);
        return;
    }
    int at = shared_mode(sh) ? conn_shard(t->redir) : -1;
    if (at >= 0 && at != sh->index) {
        sv_fwd_send_tracking(sh, at, t->redir, SV_TRK_REDIRECT, key);
        return;
    }
    /* the redirect client left: the tracking client is told so (RESP3), as Redis */
    t->broken = 1;
    if (k->sess.proto >= 3) {
        char m[80];
        int n = snprintf(m, sizeof(m), ">2\r\n$21\r\ntracking-redir-broken\r\n:%llu\r\n", (unsigned long long)t->redir);
        sv_buf b = {m, (size_t)n, sizeof(m)};
        put(sh, k, &b);
    }
}

void sv_tracking_deliver(sv_shard *sh, uint64_t id, int how, const sv_str *key)
{
    sv_conn *k = conn_by_id(sh, id);
    if (!k) return;
    if (how & SV_TRK_REDIRECT) {
        write_inval(sh, k, 1, key);
        return;
    }
    sv_trk *t = k->sess.trk;
    /* a key read before BCAST was switched on, or a prefix of a BCAST client since switched off */
    if (!t || !t->on || !t->bcast != !(how & SV_TRK_BCAST)) return;
    send_to(sh, k, key, (how & SV_TRK_SELF) != 0);
}

/* The session whose command runs on this thread, tracking state or not (a forwarded
 * write's own invalidations are marked SV_TRK_SELF for its client's NOLOOP). */
static _Thread_local const sv_session *running;
static int is_self(uint64_t id) { return running && running->id == id; }

void sv_tracking_invalidate(sv_shard *sh, sv_str key)
{
    sv_trk_shard *ts = sh->trk;
    sv_session *cur = ts ? ts->cur : NULL;
    sv_entry *e = ts ? sv_dict_find(&ts->keys, key.p, key.len) : NULL;
    if (e) {
        trk_ids *ids = e->val;
        e->val = NULL;
        sv_entry *gone = sv_dict_unlink(&ts->keys, key.p, key.len);
        free(gone);
        for (size_t i = 0; i < ids->n; i++) {
            trk_ref r = ids->v[i];
            if (r.home != sh->index) { /* read through forwarding: its own shard writes it */
                sv_fwd_send_tracking(sh, r.home, r.id, is_self(r.id) ? SV_TRK_SELF : 0, &key);
                continue;
            }
            sv_conn *k = conn_by_id(sh, r.id);
            if (k && k->sess.trk && !k->sess.trk->bcast) send_to(sh, k, &key, cur == &k->sess);
        }
        free(ids->v);
        free(ids);
    }
    if (ts && ts->nbcast)
        for (sv_conn *k = sh->conns; k; k = k->next) {
            sv_trk *t = k->sess.trk;
            if (!t || !t->on || !t->bcast) continue;
            for (int i = 0; i < t->nprefix; i++)
                if (has_prefix(key, t->prefix[i])) {
                    send_to(sh, k, &key, cur == &k->sess);
                    break;
                }
        }
    if (!atomic_load_explicit(&sv_cur->tracking_bcast_any, memory_order_relaxed) || !shared_mode(sh)) return;
    uv_rwlock_rdlock(&bcast_lock);
    for (int j = 0; j < bcast_n; j++) {
        bcast_ent *b = &bcast_v[j];
        if (b->home == sh->index) continue; /* this shard's own, above */
        for (int i = 0; i < b->nprefix; i++)
            if (has_prefix(key, b->prefix[i])) {
                sv_fwd_send_tracking(sh, b->home, b->id, SV_TRK_BCAST | (is_self(b->id) ? SV_TRK_SELF : 0), &key);
                break;
            }
    }
    uv_rwlock_rdunlock(&bcast_lock);
}

void sv_tracking_flush(sv_shard *sh)
{
    sv_dict_clear(&sh->trk->keys, free_ids, NULL);
    for (sv_conn *k = sh->conns; k; k = k->next)
        if (k->sess.trk && k->sess.trk->on) send_to(sh, k, NULL, 0);
}

/* ---- remembering reads ---- */

int sv_tracking_wants_reads(const sv_session *s)
{
    const sv_trk *t = s->trk;
    return t && t->on && !t->bcast && !((t->optin && !t->caching) || (t->optout && t->caching));
}

struct sv_trk *sv_tracking_standin(int home)
{
    static _Thread_local sv_trk standin;
    standin.on = 1;
    standin.home = home;
    return &standin;
}

void sv_tracking_after_call(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv)
{
    sv_trk *t = c->sess->trk;
    if (!(cmd->flags & SV_CMD_READONLY) || !sv_tracking_wants_reads(c->sess)) return;
    int keys[64];
    int *kp = argc > 64 ? sv_malloc(sizeof(int) * (size_t)argc) : keys;
    int n = sv_cmd_keypos(cmd, argc, argv, kp, argc > 64 ? argc : 64);
    sv_trk_shard *ts = shard_state(c->sh);
    for (int i = 0; i < n; i++) {
        sv_str k = argv[kp[i]];
        sv_entry *e = sv_dict_find(&ts->keys, k.p, k.len);
        if (!e) {
            e = sv_dict_add(&ts->keys, k.p, k.len, NULL);
            e->val = sv_calloc(1, sizeof(trk_ids));
        }
        trk_ids *ids = e->val;
        size_t j = 0;
        while (j < ids->n && ids->v[j].id != c->sess->id) j++;
        if (j < ids->n) continue;
        if (ids->n == ids->cap) {
            ids->cap = ids->cap ? ids->cap * 2 : 2;
            ids->v = sv_realloc(ids->v, ids->cap * sizeof(trk_ref));
        }
        ids->v[ids->n++] = (trk_ref){c->sess->id, t->home};
    }
    if (kp != keys) free(kp);
}

void sv_tracking_before_command(sv_shard *sh, sv_session *s)
{
    running = s;
    if (sh->trk) sh->trk->cur = s;
}

void sv_tracking_after_command(sv_shard *sh, sv_session *s, int argc, sv_str *argv, sv_buf *out)
{
    running = NULL;
    sv_trk_shard *ts = sh->trk;
    if (!ts) return;
    ts->cur = NULL;
    if (ts->pending.len) {
        if (!out) out = sv_fwd_reply_buf(s->conn); /* forwarding: behind the replies owed */
        sv_buf_append(out, ts->pending.data, ts->pending.len);
        ts->pending.len = 0;
    }
    /* CACHING yes|no covers the command after it (a whole transaction: until EXEC) */
    sv_trk *t = s->trk;
    if (t && t->caching && !(s->tx && s->tx->in_multi) &&
        !(argc >= 2 && sv_eq(argv[0], "client") && sv_eq(argv[1], "caching")))
        t->caching = 0;
}

/* ---- the CLIENT subcommands ---- */

static int cmp_str(const void *a, const void *b)
{
    const sv_str *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = memcmp(x->p, y->p, n);
    return r ? r : (x->len > y->len) - (x->len < y->len);
}

static int overlap(sv_str a, sv_str b) { return has_prefix(a, b) || has_prefix(b, a); }

void sv_client_tracking(sv_ctx *c, int argc, sv_str *argv)
{
    sv_session *s = c->sess;
    long long redir = 0;
    int bcast = 0, optin = 0, optout = 0, noloop = 0, np = 0;
    sv_str *pfx = sv_malloc(sizeof(sv_str) * (size_t)argc);
    for (int j = 3; j < argc; j++) {
        int more = argc - 1 - j;
        if (sv_eq(argv[j], "redirect") && more) {
            j++;
            if (redir) {
                sv_add_error(&c->r, "A client can only redirect to a single other client");
                goto out;
            }
            if (!sv_get_ll(c, argv[j], &redir)) goto out;
            if (redir <= 0 || (!conn_by_id(c->sh, (uint64_t)redir) &&
                               !(shared_mode(c->sh) && conn_shard((uint64_t)redir) >= 0))) {
                sv_add_error(&c->r, "The client ID you want redirect to does not exist");
                goto out;
            }
        } else if (sv_eq(argv[j], "bcast")) {
            bcast = 1;
        } else if (sv_eq(argv[j], "optin")) {
            optin = 1;
        } else if (sv_eq(argv[j], "optout")) {
            optout = 1;
        } else if (sv_eq(argv[j], "noloop")) {
            noloop = 1;
        } else if (sv_eq(argv[j], "prefix") && more) {
            pfx[np++] = argv[++j];
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            goto out;
        }
    }
    sv_trk *t = s->trk;
    if (sv_eq(argv[2], "on")) {
        if (!bcast && np) {
            sv_add_error(&c->r, "PREFIX option requires BCAST mode to be enabled");
            goto out;
        }
        if (t && t->on && t->bcast != bcast) {
            sv_add_error(&c->r, "You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
            goto out;
        }
        if (bcast && (optin || optout)) {
            sv_add_error(&c->r, "OPTIN and OPTOUT are not compatible with BCAST");
            goto out;
        }
        if (optin && optout) {
            sv_add_error(&c->r, "You can't specify both OPTIN mode and OPTOUT mode");
            goto out;
        }
        if (t && t->on && ((optin && t->optout) || (optout && t->optin))) {
            sv_add_error(&c->r, "You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
            goto out;
        }
        for (int i = 0; bcast && i < np; i++) {
            for (int k = 0; t && t->on && k < t->nprefix; k++)
                if (overlap(pfx[i], t->prefix[k]) && !(pfx[i].len == t->prefix[k].len)) {
                    sv_add_errorf(&c->r, "Prefix '%.*s' overlaps with an existing prefix '%.*s'. Prefixes for a single client must not overlap.",
                                  (int)pfx[i].len, pfx[i].p, (int)t->prefix[k].len, t->prefix[k].p);
                    goto out;
                }
            for (int k = i + 1; k < np; k++)
                if (overlap(pfx[i], pfx[k])) {
                    sv_add_errorf(&c->r, "Prefix '%.*s' overlaps with another provided prefix '%.*s'. Prefixes for a single client must not overlap.",
                                  (int)pfx[i].len, pfx[i].p, (int)pfx[k].len, pfx[k].p);
                    goto out;
                }
        }
        if (!t) t = s->trk = sv_calloc(1, sizeof(*t));
        sv_trk_shard *ts = shard_state(c->sh);
        if (t->on && t->bcast) ts->nbcast--;
        if (!t->on) ts->nclients++;
        t->on = 1;
        t->bcast = bcast;
        t->optin = optin;
        t->optout = optout;
        t->noloop = noloop;
        t->redir = (uint64_t)redir;
        t->broken = 0;
        t->home = c->sh->index;
        if (bcast) {
            ts->nbcast++;
            sv_str all = {"", 0};
            for (int i = 0; i < (np ? np : 1); i++) {
                sv_str p = np ? pfx[i] : all;
                int k = 0;
                while (k < t->nprefix && cmp_str(&t->prefix[k], &p) != 0) k++;
                if (k < t->nprefix) continue;
                t->prefix = sv_realloc(t->prefix, sizeof(sv_str) * (size_t)(t->nprefix + 1));
                t->prefix[t->nprefix].p = p.len ? sv_memdup(p.p, p.len) : sv_calloc(1, 1);
                t->prefix[t->nprefix++].len = p.len;
            }
            qsort(t->prefix, (size_t)t->nprefix, sizeof(sv_str), cmp_str);
            if (shared_mode(c->sh)) bcast_register(c->sh, s->id, t); /* every shard's keys */
        }
    } else if (sv_eq(argv[2], "off")) {
        sv_tracking_off(c->sh, s);
    } else {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        goto out;
    }
    sv_add_ok(&c->r);
out:
    free(pfx);
}

void sv_tracking_off(sv_shard *sh, sv_session *s)
{
    sv_trk *t = s->trk;
    if (!t) return;
    if (t->on && t->bcast && shared_mode(sh)) bcast_unregister(s->id);
    if (t->on && sh->trk) {
        sh->trk->nclients--;
        if (t->bcast) sh->trk->nbcast--;
    }
    clear_prefixes(t);
    memset(t, 0, sizeof(*t));
}

void sv_client_caching(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    sv_trk *t = c->sess->trk;
    if (!t || !t->on) {
        sv_add_error(&c->r, "CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
        return;
    }
    if (sv_eq(argv[2], "yes")) {
        if (!t->optin) {
            sv_add_error(&c->r, "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
            return;
        }
    } else if (sv_eq(argv[2], "no")) {
        if (!t->optout) {
            sv_add_error(&c->r, "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
            return;
        }
    } else {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    t->caching = 1;
    sv_add_ok(&c->r);
}

void sv_client_getredir(sv_ctx *c)
{
    sv_trk *t = c->sess->trk;
    sv_add_int(&c->r, t && t->on ? (long long)t->redir : -1);
}

void sv_client_trackinginfo(sv_ctx *c)
{
    sv_trk *t = c->sess->trk;
    int on = t && t->on;
    const char *flags[8];
    int n = 0;
    flags[n++] = on ? "on" : "off";
    if (on && t->bcast) flags[n++] = "bcast";
    if (on && t->optin) {
        flags[n++] = "optin";
        if (t->caching) flags[n++] = "caching-yes";
    }
    if (on && t->optout) {
        flags[n++] = "optout";
        if (t->caching) flags[n++] = "caching-no";
    }
    if (on && t->noloop) flags[n++] = "noloop";
    if (on && t->broken) flags[n++] = "broken_redirect";
    sv_add_map(&c->r, 3);
    sv_add_bulk_cstr(&c->r, "flags");
    sv_add_set(&c->r, n);
    for (int i = 0; i < n; i++) sv_add_bulk_cstr(&c->r, flags[i]);
    sv_add_bulk_cstr(&c->r, "redirect");
    sv_add_int(&c->r, on ? (long long)t->redir : -1);
    sv_add_bulk_cstr(&c->r, "prefixes");
    int np = on ? t->nprefix : 0;
    sv_add_array(&c->r, np);
    for (int i = 0; i < np; i++) sv_add_bulk(&c->r, t->prefix[i].p, t->prefix[i].len);
}
