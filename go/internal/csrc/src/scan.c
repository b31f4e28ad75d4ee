/* scan: SCAN over a whole cluster as one iterator that tracks slots, not node cursors.
 *
 * The iterator keeps which of the 16384 slots are finished. Each pass takes the owner N of
 * the first unfinished slot, asks N which slots it serves (its CLUSTER NODES "myself" line),
 * claims those that are unfinished, and runs N's SCAN cursor to its end. Only then, and only
 * if N's own view still says it serves a claimed slot and is not migrating it away, is that
 * slot finished: a slot that moved during the pass (reshard, failover) stays unfinished and
 * is scanned again where it lives now, so a key that existed throughout the iteration is
 * returned at least once, and a key of a moved slot may be returned twice. A pass whose
 * node fails (I/O, an error reply, a malformed reply) finishes nothing; the map is
 * refreshed and its slots are taken up again (at once, once, within the same call). When a pass claims only some of N's slots
 * (the others were finished by an earlier pass), its keys are filtered to the claimed slots,
 * so the rescan of a moved slot does not repeat the keys of the rest of N.
 *
 * The pages land in the caller's batch as one array of keys, read like any reply. */
#include "batch.h"
#include "client.h"
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sl_scan {
    sl_client *client;
    char *match;                 /* copies of the options */
    size_t match_len;
    char *type;
    char count[24];              /* COUNT's argument, "" for none */
    uint8_t finished[SL_SLOTS];
    uint8_t claimed[SL_SLOTS];   /* the current pass's slots */
    size_t left;                 /* unfinished slots */
    int active;                  /* a pass is running on node */
    int ending;                  /* the pass's cursor came back to 0: confirm, then finish */
    int partial;                 /* the pass claimed only some of the node's slots: filter */
    uint16_t node;
    char addr[SL__HOST_MAX + 8];
    char cursor[32];
};

static char *dup_bytes(sl_client *c, const char *s, size_t n)
{
    char *p = sl__malloc(&c->alloc, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

int sl_scan_new(sl_client *c, const sl_scan_options *opts, sl_scan **out)
{
    if (out) *out = NULL;
    if (!c || !out) return SL_EINVAL;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    if (opts) {
        if (opts->version == 0 || opts->version > SL_SCAN_OPTIONS_VERSION || opts->size < offsetof(sl_scan_options, count) + sizeof(int)) {
            sl__set_err(c, "sl_scan_options: unknown version %u or size %u", opts->version, opts->size);
            return SL_EINVAL;
        }
        memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    }
    if (o.count < 0) {
        sl__set_err(c, "sl_scan_options.count must be 0 (the server's default) or positive, not %d", o.count);
        return SL_EINVAL;
    }
    sl_scan *s = sl__malloc(&c->alloc, sizeof *s);
    if (!s) return SL_ENOMEM;
    memset(s, 0, sizeof *s);
    s->client = c;
    if (o.match) {
        s->match_len = o.match_len ? o.match_len : strlen(o.match);
        if (!(s->match = dup_bytes(c, o.match, s->match_len))) goto nomem;
    }
    if (o.type && !(s->type = dup_bytes(c, o.type, strlen(o.type)))) goto nomem;
    if (o.count > 0) snprintf(s->count, sizeof s->count, "%d", o.count);
    s->left = SL_SLOTS;
    *out = s;
    return 0;
nomem:
    sl_scan_free(s);
    return SL_ENOMEM;
}

void sl_scan_free(sl_scan *s)
{
    if (!s) return;
    sl__alloc *a = &s->client->alloc;
    sl__free(a, s->match);
    sl__free(a, s->type);
    sl__free(a, s);
}

/* Runs one command (argv) on the pass's node in batch b. Returns the reply's first record
 * (NULL when the execution left none) and the execution's code in *rc. */
static const sl_reply *run_on_node(sl_scan *s, sl_batch *b, int argc, const char *const *argv,
                                   const size_t *lens, int *rc)
{
    sl_route route = SL_ROUTE_INIT;
    route.kind = SL_ROUTE_NODE;
    route.node = s->addr;
    sl_batch_reset(b);
    *rc = sl_batch_append_argv(b, &route, argc, argv, lens);
    if (*rc) return NULL;
    *rc = sl_batch_exec(b, 0, NULL);
    size_t n = 0;
    const sl_reply *r = sl_batch_replies(b, &n, NULL, NULL);
    return n ? r : NULL;
}

/* The slots the node says it serves (own) and of those the ones it is migrating away,
 * from its CLUSTER NODES "myself" line. Returns 0, or -1 when the text has no such line. */
static int myself_slots(const uint8_t *t, size_t len, uint8_t *own, uint8_t *migrating)
{
    memset(own, 0, SL_SLOTS);
    memset(migrating, 0, SL_SLOTS);
    size_t pos = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && t[end] != '\n') end++;
        const uint8_t *f[3] = {0};
        size_t fl[3] = {0};
        int nf = 0;
        size_t i = pos;
        while (i < end && nf < 3) {
            while (i < end && t[i] == ' ') i++;
            size_t st = i;
            while (i < end && t[i] != ' ' && t[i] != '\r') i++;
            if (i > st) {
                f[nf] = t + st;
                fl[nf++] = i - st;
            }
        }
        int myself = 0;
        for (size_t k = 0; nf == 3 && k + 6 <= fl[2]; k++)
            if (memcmp(f[2] + k, "myself", 6) == 0) myself = 1;
        if (!myself) {
            pos = end + 1;
            continue;
        }
        /* fields 4..8 (primary, ping, pong, epoch, link state), then the slots */
        for (int skip = 0; skip < 5; skip++) {
            while (i < end && t[i] == ' ') i++;
            while (i < end && t[i] != ' ' && t[i] != '\r') i++;
        }
        while (i < end) {
            while (i < end && t[i] == ' ') i++;
            size_t st = i;
            while (i < end && t[i] != ' ' && t[i] != '\r') i++;
            if (i == st) break;
            int mig = 0;
            size_t a = st, e = i;
            if (t[a] == '[') {
                /* "[slot->-id]" migrating away, "[slot-<-id]" importing (not ours) */
                a++;
                size_t q = a;
                while (q < e && t[q] >= '0' && t[q] <= '9') q++;
                if (q + 2 < e && t[q] == '-' && t[q + 1] == '>') mig = 1;
                else continue;
                e = q;
            }
            long lo = -1, hi = -1, v = 0;
            int digits = 0, bad = 0;
            for (size_t q = a; q < e; q++) {
                if (t[q] >= '0' && t[q] <= '9') {
                    v = v * 10 + (t[q] - '0');
                    digits++;
                    if (v >= SL_SLOTS) bad = 1;
                } else if (t[q] == '-' && lo < 0 && digits) {
                    lo = v;
                    v = 0;
                    digits = 0;
                } else {
                    bad = 1;
                }
            }
            if (bad || !digits) continue;
            if (lo < 0) lo = v;
            hi = v;
            for (long sl = lo; sl <= hi && sl < SL_SLOTS; sl++) {
                if (mig) migrating[sl] = 1;
                else own[sl] = 1;
            }
        }
        return 0;
    }
    return -1;
}

/* Asks the pass's node for its slots. Returns 0 with own/migrating filled, or a negative code. */
static int node_view(sl_scan *s, sl_batch *b, uint8_t *own, uint8_t *migrating)
{
    static const char *const argv[] = {"CLUSTER", "NODES"};
    int rc;
    const sl_reply *r = run_on_node(s, b, 2, argv, NULL, &rc);
    const uint8_t *data;
    sl_batch_replies(b, NULL, &data, NULL);
    if (!r) return rc ? rc : SL_EIO;
    if (r->type == SL_REPLY_ERROR) {
        sl__set_err(s->client, "CLUSTER NODES on %s: %.*s", s->addr, (int)r->len, (const char *)data + r->offset);
        return r->flags == SL_ERR_SERVER ? SL_ESERVER : SL_EIO;
    }
    if ((r->type != SL_REPLY_STRING && r->type != SL_REPLY_VERB) || r->len == 0 ||
        myself_slots(data + r->offset, r->len, own, migrating) != 0) {
        sl__set_err(s->client, "CLUSTER NODES on %s: no \"myself\" line", s->addr);
        return SL_EPROTO;
    }
    return 0;
}

/* A pass that cannot go on: its slots stay unfinished; the next pass finds their owner in
 * a fresh map. */
static void abandon(sl_scan *s)
{
    s->active = 0;
    s->ending = 0;
    char saved[SL__ERRMSG_MAX];
    memcpy(saved, s->client->errmsg, sizeof saved);
    (void)sl_client_refresh(s->client); /* best effort: the old map stays on failure */
    memcpy(s->client->errmsg, saved, sizeof saved);
}

/* The cursor came back to 0: the claimed slots the node still serves (and is not migrating
 * away) are finished. */
static int end_pass(sl_scan *s, sl_batch *b)
{
    uint8_t own[SL_SLOTS], mig[SL_SLOTS];
    int cluster = s->client->mode == SL_MODE_CLUSTER;
    int rc = cluster ? node_view(s, b, own, mig) : 0;
    if (rc) {
        abandon(s);
        return rc;
    }
    int moved = 0;
    for (size_t sl = 0; sl < SL_SLOTS; sl++) {
        if (!s->claimed[sl]) continue;
        if (!cluster || (own[sl] && !mig[sl])) {
            s->finished[sl] = 1;
            s->left--;
        } else {
            moved = 1;
        }
    }
    s->active = 0;
    s->ending = 0;
    if (moved) abandon(s);
    return 0;
}

/* Starts a pass on the owner of the first unfinished slot. Returns 0, or a negative code. */
static int start_pass(sl_scan *s, sl_batch *b)
{
    sl_client *c = s->client;
    size_t first = 0;
    while (first < SL_SLOTS && s->finished[first]) first++;
    memset(s->claimed, 0, sizeof s->claimed);
    s->partial = 0;
    strcpy(s->cursor, "0");
    if (c->mode != SL_MODE_CLUSTER) {
        /* One node: it serves every slot. */
        uint16_t k = c->topo.default_node == SL__NO_NODE ? 0 : c->topo.default_node;
        if (k >= c->topo.nnodes) {
            sl__set_err(c, "no node to scan");
            return SL_ECLUSTER;
        }
        s->node = k;
        snprintf(s->addr, sizeof s->addr, "%s", c->topo.nodes[k]->addr);
        memset(s->claimed, 1, sizeof s->claimed);
        s->active = 1;
        return 0;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        uint16_t k = c->topo.slot_node[first];
        if (k == SL__NO_NODE) {
            if (attempt == 0) {
                abandon(s);
                continue;
            }
            sl__set_err(c, "CLUSTERDOWN no node serves slot %zu: the scan cannot cover it", first);
            return SL_ECLUSTER;
        }
        s->node = k;
        snprintf(s->addr, sizeof s->addr, "%s", c->topo.nodes[k]->addr);
        uint8_t own[SL_SLOTS], mig[SL_SLOTS];
        int rc = node_view(s, b, own, mig);
        if (rc) {
            abandon(s);
            if (attempt == 0) continue;
            return rc;
        }
        if (!own[first]) { /* the map is behind the node: ask again */
            abandon(s);
            if (attempt == 0) continue;
            sl__set_err(c, "slot %zu: %s does not serve it, and no fresher map says who does", first, s->addr);
            return SL_ECLUSTER;
        }
        for (size_t sl = 0; sl < SL_SLOTS; sl++) {
            if (!own[sl]) continue;
            if (s->finished[sl]) s->partial = 1;
            else s->claimed[sl] = 1;
        }
        s->active = 1;
        return 0;
    }
    return SL_ECLUSTER;
}

/* Makes the batch's result one array of the given key records (already in the batch's
 * data); keys may alias b->out. */
static int set_page(sl_batch *b, const sl_reply *keys, size_t n)
{
    sl_client *c = b->client;
    if (keys != b->out.ptr + 1) {
        if (!(keys >= b->out.ptr && keys < b->out.ptr + b->out.cap)) {
            b->out.len = 0;
            if (sl__records_reserve(&c->alloc, &b->out, n + 1)) return SL_ENOMEM;
        }
        memmove(b->out.ptr + 1, keys, n * sizeof *keys);
    }
    sl_reply *head = b->out.ptr;
    memset(head, 0, sizeof *head);
    head->type = SL_REPLY_ARRAY;
    head->len = (uint32_t)n;
    b->out.len = n + 1;
    b->result = b->out.ptr;
    b->nresult = n + 1;
    b->sizes.records = n + 1;
    b->sizes.commands = 1;
    b->sizes.errors = 0;
    return 0;
}

static int empty_page(sl_batch *b)
{
    sl_batch_reset(b);
    b->data.len = 0;
    b->sizes.data = 0;
    b->out.len = 0;
    if (sl__records_reserve(&b->client->alloc, &b->out, 1)) return SL_ENOMEM;
    return set_page(b, b->out.ptr + 1, 0);
}

/* Runs the pass's next SCAN; on success the batch holds the page. */
static int scan_page(sl_scan *s, sl_batch *b)
{
    sl_client *c = s->client;
    const char *argv[9];
    size_t lens[9];
    int argc = 0;
    argv[argc] = "SCAN", lens[argc++] = 4;
    argv[argc] = s->cursor, lens[argc++] = strlen(s->cursor);
    if (s->match) {
        argv[argc] = "MATCH", lens[argc++] = 5;
        argv[argc] = s->match, lens[argc++] = s->match_len;
    }
    if (s->count[0]) {
        argv[argc] = "COUNT", lens[argc++] = 5;
        argv[argc] = s->count, lens[argc++] = strlen(s->count);
    }
    if (s->type) {
        argv[argc] = "TYPE", lens[argc++] = 4;
        argv[argc] = s->type, lens[argc++] = strlen(s->type);
    }
    int rc;
    const sl_reply *r = run_on_node(s, b, argc, argv, lens, &rc);
    size_t n = 0;
    const uint8_t *data;
    sl_batch_replies(b, &n, &data, NULL);
    if (!r) {
        abandon(s);
        return rc ? rc : SL_EIO;
    }
    if (r->type == SL_REPLY_ERROR) {
        sl__set_err(c, "SCAN on %s: %.*s", s->addr, (int)r->len, (const char *)data + r->offset);
        int kind = r->flags;
        abandon(s);
        return kind == SL_ERR_SERVER ? SL_ESERVER : kind == SL_ERR_TIMEOUT ? SL_ETIMEOUT : SL_EIO;
    }
    /* [cursor, [key...]]: flat strings only */
    int ok = r[0].type == SL_REPLY_ARRAY && r[0].len == 2 && n >= 3 && r[1].type == SL_REPLY_STRING &&
             r[1].len > 0 && r[1].len < sizeof s->cursor && r[2].type == SL_REPLY_ARRAY && n == 3 + (size_t)r[2].len;
    for (size_t i = 3; ok && i < n; i++) ok = r[i].type == SL_REPLY_STRING;
    if (!ok) {
        sl__set_err(c, "SCAN on %s: the reply is not [cursor, [key...]]", s->addr);
        abandon(s);
        return SL_EPROTO;
    }
    memcpy(s->cursor, data + r[1].offset, r[1].len);
    s->cursor[r[1].len] = '\0';
    if (strcmp(s->cursor, "0") == 0) s->ending = 1;
    size_t nkeys = r[2].len;
    sl_reply *keys = (sl_reply *)&r[3]; /* the batch's own records */
    if (s->partial) {
        size_t m = 0;
        for (size_t i = 0; i < nkeys; i++)
            if (s->claimed[sl__key_slot(data + keys[i].offset, keys[i].len)]) keys[m++] = keys[i];
        nkeys = m;
    }
    return set_page(b, keys, nkeys);
}

int sl_scan_next(sl_scan *s, sl_batch *b, int *done)
{
    if (done) *done = 0;
    if (!s || !b || !done) return SL_EINVAL;
    if (b->client != s->client) {
        sl__set_err(s->client, "sl_scan_next: the batch belongs to another client");
        return SL_EINVAL;
    }
    /* A pass ends, another starts, a page comes. A failed pass (its node died, or the map
     * was behind) is taken up once more at once, from the refreshed map — a failover that
     * the cluster has finished costs the caller nothing; a second failure is the caller's
     * answer (the iterator stays usable: the next call takes the slots up again). */
    int rc = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (s->active && s->ending && (rc = end_pass(s, b)) != 0) continue;
        if (!s->active) {
            if (s->left == 0) {
                *done = 1;
                return empty_page(b);
            }
            if ((rc = start_pass(s, b)) != 0) continue;
        }
        if ((rc = scan_page(s, b)) == 0) return 0;
        if (rc == SL_ENOMEM || rc == SL_ECANCELLED) return rc;
    }
    return rc;
}
