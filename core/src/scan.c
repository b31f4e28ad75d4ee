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
 * The pages land in the caller's batch as one array of keys, read like any reply.
 *
 * The iterator is a state machine of steps (scan.h): sl__scan_prepare puts the one command
 * the next step needs into the batch, the driver executes it, sl__scan_feed reads its
 * reply. sl_scan_next below is the blocking driver; async.c drives the same steps on a
 * loop (sl_scan_next_async, sl_loop_submit_scan_cq), where the map is refreshed by a
 * CLUSTER SLOTS step instead of the blocking sl_client_refresh. */
#include "scan.h"

#include "batch.h"
#include "client.h"
#include "topology.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STEP_NONE, STEP_MAP, STEP_START_VIEW, STEP_END_VIEW, STEP_PAGE };

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
    int need_map;                /* a pass failed or a slot moved: refresh the map first */
    int step;                    /* the step whose command the batch holds */
    uint16_t first;              /* STEP_START_VIEW: the first unfinished slot */
    uint16_t asked;              /* STEP_MAP: the node asked */
    uint16_t node;
    char addr[SL__HOST_MAX + 8];
    char cursor[32];
    char errmsg[SL__ERRMSG_MAX]; /* the last failure (sl_scan_errmsg) */
};

/* Failures are written to the scan, not the client: a loop thread may drive the scan while
 * another thread owns the client (sl_scan_next copies the message to the client). */
static void scan_err(sl_scan *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
    va_end(ap);
}

const char *sl_scan_errmsg(const sl_scan *s) { return s ? s->errmsg : ""; }

sl_client *sl__scan_client(const sl_scan *s) { return s->client; }

int sl_scan_done(const sl_scan *s) { return s ? s->left == 0 : 0; }

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

/* Puts one command (argv) for the node addr into batch b, the step's only command. */
static int put_on_node(sl_scan *s, sl_batch *b, const char *addr, int step, int argc, const char *const *argv,
                       const size_t *lens)
{
    sl_route route = SL_ROUTE_INIT;
    route.kind = SL_ROUTE_NODE;
    route.node = addr;
    sl_batch_reset(b);
    int rc = sl_batch_append_argv(b, &route, argc, argv, lens);
    if (rc) {
        scan_err(s, "%s", s->client->errmsg);
        return rc;
    }
    s->step = step;
    return 0;
}

/* The step's reply: its first record, or NULL (with *rc the code) when the execution left none. */
static const sl_reply *step_reply(sl_batch *b, int status, int *rc)
{
    size_t n = 0;
    const sl_reply *r = sl_batch_replies(b, &n, NULL, NULL);
    *rc = status ? status : SL_EIO;
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

/* The pass's node's CLUSTER NODES reply (the step's): 0 with own/migrating filled, or a
 * negative code. */
static int node_view(sl_scan *s, sl_batch *b, int status, uint8_t *own, uint8_t *migrating)
{
    int rc;
    const sl_reply *r = step_reply(b, status, &rc);
    const uint8_t *data;
    sl_batch_replies(b, NULL, &data, NULL);
    if (!r) {
        scan_err(s, "CLUSTER NODES on %s: %s", s->addr, sl_strerror(rc));
        return rc;
    }
    if (r->type == SL_REPLY_ERROR) {
        scan_err(s, "CLUSTER NODES on %s: %.*s", s->addr, (int)r->len, (const char *)data + r->offset);
        return r->flags == SL_ERR_SERVER ? SL_ESERVER : r->flags == SL_ERR_CANCELLED ? SL_ECANCELLED : SL_EIO;
    }
    if ((r->type != SL_REPLY_STRING && r->type != SL_REPLY_VERB) || r->len == 0 ||
        myself_slots(data + r->offset, r->len, own, migrating) != 0) {
        scan_err(s, "CLUSTER NODES on %s: no \"myself\" line", s->addr);
        return SL_EPROTO;
    }
    return 0;
}

/* A pass that cannot go on: its slots stay unfinished; the next pass finds their owner in
 * a fresh map (the driver refreshes it before the next step). */
static void abandon(sl_scan *s)
{
    s->active = 0;
    s->ending = 0;
    s->need_map = 1;
}

/* The end of a pass (its cursor came back to 0), from the node's CLUSTER NODES: the claimed
 * slots it still serves (and is not migrating away) are finished. */
static int end_pass(sl_scan *s, sl_batch *b, int status)
{
    uint8_t own[SL_SLOTS], mig[SL_SLOTS];
    int rc = node_view(s, b, status, own, mig);
    if (rc) {
        abandon(s);
        return rc;
    }
    int moved = 0;
    for (size_t sl = 0; sl < SL_SLOTS; sl++) {
        if (!s->claimed[sl]) continue;
        if (own[sl] && !mig[sl]) {
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

/* Plain mode finishes a pass without asking: the one node serves every slot. */
static void end_plain_pass(sl_scan *s)
{
    memset(s->finished, 1, sizeof s->finished);
    s->left = 0;
    s->active = 0;
    s->ending = 0;
}

/* Starts a pass on the owner of the first unfinished slot: in plain mode at once, in a
 * cluster by asking the owner for its slots (STEP_START_VIEW). */
static int start_pass(sl_scan *s, sl_batch *b)
{
    sl_client *c = s->client;
    size_t first = 0;
    while (first < SL_SLOTS && s->finished[first]) first++;
    memset(s->claimed, 0, sizeof s->claimed);
    s->partial = 0;
    strcpy(s->cursor, "0");
    if (c->mode != SL_MODE_CLUSTER) {
        uint16_t k = c->topo.default_node == SL__NO_NODE ? 0 : c->topo.default_node;
        if (k >= c->topo.nnodes) {
            scan_err(s, "no node to scan");
            return SL_ECLUSTER;
        }
        s->node = k;
        snprintf(s->addr, sizeof s->addr, "%s", c->topo.nodes[k]->addr);
        memset(s->claimed, 1, sizeof s->claimed);
        s->active = 1;
        return 0;
    }
    uint16_t k = c->topo.slot_node[first];
    if (k == SL__NO_NODE) {
        scan_err(s, "CLUSTERDOWN no node serves slot %zu: the scan cannot cover it", first);
        abandon(s);
        return SL_ECLUSTER;
    }
    s->node = k;
    s->first = (uint16_t)first;
    snprintf(s->addr, sizeof s->addr, "%s", c->topo.nodes[k]->addr);
    static const char *const argv[] = {"CLUSTER", "NODES"};
    return put_on_node(s, b, s->addr, STEP_START_VIEW, 2, argv, NULL);
}

/* The node's answer to a pass's start: it claims its unfinished slots. */
static int claim(sl_scan *s, sl_batch *b, int status)
{
    uint8_t own[SL_SLOTS], mig[SL_SLOTS];
    int rc = node_view(s, b, status, own, mig);
    if (rc) {
        abandon(s);
        return rc;
    }
    if (!own[s->first]) { /* the map is behind the node: ask again */
        scan_err(s, "slot %u: %s does not serve it, and no fresher map says who does", (unsigned)s->first, s->addr);
        abandon(s);
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

/* Puts the pass's next SCAN into the batch. */
static int put_scan(sl_scan *s, sl_batch *b)
{
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
    return put_on_node(s, b, s->addr, STEP_PAGE, argc, argv, lens);
}

/* The SCAN's reply: on success the batch holds the page. */
static int take_page(sl_scan *s, sl_batch *b, int status)
{
    int rc;
    const sl_reply *r = step_reply(b, status, &rc);
    size_t n = 0;
    const uint8_t *data;
    sl_batch_replies(b, &n, &data, NULL);
    if (!r) {
        scan_err(s, "SCAN on %s: %s", s->addr, sl_strerror(rc));
        abandon(s);
        return rc;
    }
    if (r->type == SL_REPLY_ERROR) {
        scan_err(s, "SCAN on %s: %.*s", s->addr, (int)r->len, (const char *)data + r->offset);
        int kind = r->flags;
        abandon(s);
        return kind == SL_ERR_SERVER      ? SL_ESERVER
               : kind == SL_ERR_TIMEOUT   ? SL_ETIMEOUT
               : kind == SL_ERR_CANCELLED ? SL_ECANCELLED
                                          : SL_EIO;
    }
    /* [cursor, [key...]]: flat strings only */
    int ok = r[0].type == SL_REPLY_ARRAY && r[0].len == 2 && n >= 3 && r[1].type == SL_REPLY_STRING &&
             r[1].len > 0 && r[1].len < sizeof s->cursor && r[2].type == SL_REPLY_ARRAY && n == 3 + (size_t)r[2].len;
    for (size_t i = 3; ok && i < n; i++) ok = r[i].type == SL_REPLY_STRING;
    if (!ok) {
        scan_err(s, "SCAN on %s: the reply is not [cursor, [key...]]", s->addr);
        abandon(s);
        return SL_EPROTO;
    }
    memcpy(s->cursor, data + r[1].offset, r[1].len);
    s->cursor[r[1].len] = '\0';
    if (strcmp(s->cursor, "0") == 0) s->ending = 1;
    if (s->ending && s->client->mode != SL_MODE_CLUSTER) end_plain_pass(s); /* nothing to confirm */
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

/* A node to ask for the map: the default node, unless its pass just failed. */
static uint16_t map_node(sl_scan *s)
{
    sl_client *c = s->client;
    uint16_t k = c->topo.default_node;
    if (k < c->topo.nnodes && k != s->node) return k;
    for (uint16_t i = 0; i < c->topo.nnodes; i++)
        if (i != s->node && c->topo.nodes[i]->primary) return i;
    return k < c->topo.nnodes ? k : 0;
}

int sl__scan_prepare(sl_scan *s, sl_batch *b, int async_map, int *end)
{
    *end = 0;
    s->step = STEP_NONE;
    sl_client *c = s->client;
    if (s->need_map && async_map && c->mode == SL_MODE_CLUSTER && c->topo.nnodes) {
        static const char *const argv[] = {"CLUSTER", "SLOTS"};
        uint16_t k = map_node(s);
        char addr[sizeof s->addr];
        snprintf(addr, sizeof addr, "%s", c->topo.nodes[k]->addr);
        s->need_map = 0;
        s->asked = k;
        return put_on_node(s, b, addr, STEP_MAP, 2, argv, NULL);
    }
    s->need_map = 0;
    if (s->active && s->ending) {
        if (c->mode != SL_MODE_CLUSTER) {
            end_plain_pass(s);
        } else {
            static const char *const argv[] = {"CLUSTER", "NODES"};
            return put_on_node(s, b, s->addr, STEP_END_VIEW, 2, argv, NULL);
        }
    }
    if (!s->active) {
        if (s->left == 0) {
            *end = 1;
            return empty_page(b);
        }
        int rc = start_pass(s, b);
        if (rc || s->step == STEP_START_VIEW) return rc;
    }
    return put_scan(s, b);
}

int sl__scan_feed(sl_scan *s, sl_batch *b, int status, int *page)
{
    *page = 0;
    int step = s->step;
    s->step = STEP_NONE;
    switch (step) {
    case STEP_MAP: { /* best effort: the old map stays when this fails */
        size_t n = 0;
        const uint8_t *data;
        const sl_reply *r = sl_batch_replies(b, &n, &data, NULL);
        sl_client *c = s->client;
        if (status == 0 && n && r->type != SL_REPLY_ERROR) (void)sl__topo_apply_slots(c, s->asked, r, n, data);
        return 0;
    }
    case STEP_START_VIEW:
        return claim(s, b, status);
    case STEP_END_VIEW:
        return end_pass(s, b, status);
    case STEP_PAGE: {
        int rc = take_page(s, b, status);
        if (rc == 0) *page = 1;
        return rc;
    }
    default:
        scan_err(s, "sl_scan: no step was prepared");
        return SL_ESTATE;
    }
}

int sl__scan_check(sl_scan *s, sl_batch *b)
{
    if (!s || !b) return SL_EINVAL;
    if (b->client != s->client) {
        scan_err(s, "the batch belongs to another client");
        sl__set_err(s->client, "sl_scan_next: the batch belongs to another client");
        return SL_EINVAL;
    }
    return 0;
}

int sl_scan_next(sl_scan *s, sl_batch *b, int *done)
{
    if (done) *done = 0;
    if (!done) return SL_EINVAL;
    int rc = sl__scan_check(s, b);
    if (rc) return rc;
    sl_client *c = s->client;
    /* A pass ends, another starts, a page comes. A failed pass (its node died, or the map
     * was behind) is taken up once more at once, from the refreshed map — a failover that
     * the cluster has finished costs the caller nothing; a second failure is the caller's
     * answer (the iterator stays usable: the next call takes the slots up again). */
    for (int failures = 0;;) {
        if (s->need_map) {
            (void)sl_client_refresh(c); /* best effort: the old map stays on failure */
            s->need_map = 0;
        }
        int end = 0, page = 0;
        rc = sl__scan_prepare(s, b, 0, &end);
        if (rc == 0 && end) {
            *done = 1;
            return 0;
        }
        if (rc == 0) rc = sl__scan_feed(s, b, sl_batch_exec(b, 0, NULL), &page);
        if (rc == 0 && page) return 0;
        if (rc == 0) continue;
        if (rc == SL_ENOMEM || rc == SL_ECANCELLED || ++failures == 2) {
            sl__set_err(c, "%s", s->errmsg);
            return rc;
        }
    }
}
