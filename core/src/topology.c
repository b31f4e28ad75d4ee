/* topology: the nodes, the 16384-entry slot table, discovery from CLUSTER SLOTS (RESP2 and
 * RESP3 shapes) with CLUSTER SHARDS and CLUSTER NODES as fallbacks, and the refresh policy:
 * a MOVED patches the table at once (batch.c) and asks for a refresh, which runs at the
 * start of the next execution, at most once a second. */
#include "batch.h"
#include "client.h"
#include "conn.h"
#include "engine.h"
#include "failover.h"
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl__topo_init(sl__topology *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < SL_SLOTS; i++) t->slot_node[i] = SL__NO_NODE;
    t->default_node = SL__NO_NODE;
}

void sl__topo_free(sl_client *c)
{
    sl__topology *t = &c->topo;
    for (size_t i = 0; i < t->nnodes; i++) {
        sl__node *n = t->nodes[i];
        sl__node_close(c, n, 0);
        sl__bytes_free(&c->alloc, &n->rbuf);
        sl__bytes_free(&c->alloc, &n->obuf);
        sl__bytes_free(&c->alloc, &n->skip_data);
        sl__records_free(&c->alloc, &n->skip_recs);
        sl__free(&c->alloc, n->segs);
        sl__free(&c->alloc, n);
    }
    sl__free(&c->alloc, t->nodes);
    t->nodes = NULL;
    t->nnodes = t->cap = 0;
    sl__free(&c->alloc, t->replicas);
    sl__free(&c->alloc, t->staged);
    t->replicas = t->staged = NULL;
    t->nreplicas = t->nstaged = t->replicas_cap = t->staged_cap = 0;
}

int sl__topo_node(sl_client *c, const char *host, int port, uint16_t *index)
{
    sl__topology *t = &c->topo;
    for (size_t i = 0; i < t->nnodes; i++) {
        if (t->nodes[i]->port == port && strcmp(t->nodes[i]->host, host) == 0) {
            *index = (uint16_t)i;
            return 0;
        }
    }
    if (t->nnodes >= SL__NO_NODE - 1) return SL_ECLUSTER;
    size_t hl = strlen(host);
    if (hl == 0 || hl >= SL__HOST_MAX || port <= 0 || port > 65535) {
        sl__set_err(c, "bad node address %.64s:%d", host, port);
        return SL_ECLUSTER;
    }
    void *p = t->nodes;
    if (sl__grow(&c->alloc, &p, &t->cap, t->nnodes + 1, sizeof(sl__node *))) return SL_ENOMEM;
    t->nodes = p;
    sl__node *n = sl__malloc(&c->alloc, sizeof *n);
    if (!n) return SL_ENOMEM;
    memset(n, 0, sizeof *n);
    memcpy(n->host, host, hl + 1);
    n->port = port;
    if (strchr(host, ':'))
        snprintf(n->addr, sizeof n->addr, "[%s]:%d", host, port);
    else
        snprintf(n->addr, sizeof n->addr, "%s:%d", host, port);
    n->fd = -1;
    t->nodes[t->nnodes] = n;
    *index = (uint16_t)t->nnodes++;
    c->stats.nodes = t->nnodes;
    return 0;
}

/* "host:port" or "[v6]:port" with explicit length (a MOVED message is not NUL-terminated). */
int sl__topo_node_addr(sl_client *c, const char *addr, size_t len, uint16_t *index)
{
    char host[SL__HOST_MAX];
    size_t colon = len;
    while (colon > 0 && addr[colon - 1] != ':') colon--;
    if (colon == 0 || colon == len) return SL_ECLUSTER;
    size_t hs = 0, he = colon - 1;
    if (he >= 2 && addr[0] == '[' && addr[he - 1] == ']') {
        hs = 1;
        he--;
    }
    if (he - hs >= sizeof host) return SL_ECLUSTER;
    int port = 0;
    for (size_t i = colon; i < len; i++) {
        if (addr[i] < '0' || addr[i] > '9' || port > 65535) return SL_ECLUSTER;
        port = port * 10 + (addr[i] - '0');
    }
    memcpy(host, addr + hs, he - hs);
    host[he - hs] = '\0';
    if (host[0] == '\0') {
        /* An empty host means "the node you asked" (Redis announces "" when it does not know
         * its own address); the caller substitutes it. */
        return SL_ECLUSTER;
    }
    return sl__topo_node(c, host, port, index);
}

static int rec_int(const sl_reply *r, int64_t *v)
{
    if (r->type == SL_REPLY_INTEGER) {
        *v = r->value.integer;
        return 0;
    }
    return -1;
}

/* Number of records of the reply starting at r (itself and its descendants). */
static size_t subtree(const sl_reply *r, size_t n)
{
    size_t i = 0, need = 1;
    while (i < n && need > 0) {
        need--;
        if (r[i].type == SL_REPLY_ARRAY || r[i].type == SL_REPLY_MAP || r[i].type == SL_REPLY_SET ||
            r[i].type == SL_REPLY_PUSH)
            need += r[i].len;
        i++;
    }
    return i;
}

/* Resolves a host/port pair from a reply, substituting the asked node for an empty or "?"
 * host, into a node index. */
static int endpoint_node(sl_client *c, uint16_t asked, const uint8_t *host, size_t hl, int64_t port,
                         uint16_t *idx)
{
    char h[SL__HOST_MAX];
    if (hl == 0 || (hl == 1 && host[0] == '?')) {
        if (asked == SL__NO_NODE) return SL_ECLUSTER;
        snprintf(h, sizeof h, "%s", c->topo.nodes[asked]->host);
    } else {
        if (hl >= sizeof h) return SL_ECLUSTER;
        memcpy(h, host, hl);
        h[hl] = '\0';
    }
    if (port <= 0 || port > 65535) return SL_ECLUSTER;
    return sl__topo_node(c, h, (int)port, idx);
}

/* Stages a replica of primary node `primary` for the map being applied (once per address;
 * CLUSTER SLOTS repeats a shard's replicas for each of its ranges). An empty or "?" host is
 * the node asked. */
static int stage_replica(sl_client *c, uint16_t asked, const uint8_t *host, size_t hl, int64_t port,
                         uint16_t primary)
{
    sl__topology *t = &c->topo;
    char h[SL__HOST_MAX];
    if (hl == 0 || (hl == 1 && host[0] == '?')) {
        if (asked == SL__NO_NODE) return 0;
        snprintf(h, sizeof h, "%s", t->nodes[asked]->host);
    } else {
        if (hl >= sizeof h) return 0;
        memcpy(h, host, hl);
        h[hl] = '\0';
    }
    if (port <= 0 || port > 65535) return 0; /* not a usable address: leave it out */
    sl__replica r;
    r.primary = primary;
    snprintf(r.addr, sizeof r.addr, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, (int)port);
    for (size_t i = 0; i < t->nstaged; i++)
        if (strcmp(t->staged[i].addr, r.addr) == 0) return 0;
    /* A replica is a node like any other: replica reads use its connection, and a refresh
     * may ask it for the map. */
    int rc = sl__topo_node(c, h, (int)port, &r.node);
    if (rc) return rc == SL_ENOMEM ? rc : 0;
    void *p = t->staged;
    if (sl__grow(&c->alloc, &p, &t->staged_cap, t->nstaged + 1, sizeof r)) return SL_ENOMEM;
    t->staged = p;
    t->staged[t->nstaged++] = r;
    return 0;
}

/* Whether the staged replicas differ from the current ones (as sets of pairs). */
static int replicas_changed(const sl__topology *t)
{
    if (t->nstaged != t->nreplicas) return 1;
    for (size_t i = 0; i < t->nstaged; i++) {
        size_t j = 0;
        while (j < t->nreplicas && (t->replicas[j].node != t->staged[i].node || t->replicas[j].primary != t->staged[i].primary))
            j++;
        if (j == t->nreplicas) return 1;
    }
    return 0;
}

static void map_commit(sl_client *c, uint16_t asked, const uint16_t *table)
{
    sl__topology *t = &c->topo;
    int changed = memcmp(t->slot_node, table, sizeof t->slot_node) != 0 || replicas_changed(t);
    /* A slot whose new owner replicated its old owner: a promotion (the old replica list is
     * still the current one here). */
    for (size_t s = 0; s < SL_SLOTS && changed; s++)
        if (table[s] != t->slot_node[s] && table[s] != SL__NO_NODE && t->slot_node[s] != SL__NO_NODE)
            sl__failover_promoted(c, t->slot_node[s], table[s]);
    sl__replica *rp = t->replicas;
    size_t rc = t->replicas_cap;
    t->replicas = t->staged;
    t->replicas_cap = t->staged_cap;
    t->nreplicas = t->nstaged;
    t->staged = rp;
    t->staged_cap = rc;
    t->nstaged = 0;
    memcpy(t->slot_node, table, sizeof t->slot_node);
    for (size_t i = 0; i < t->nnodes; i++) t->nodes[i]->primary = t->nodes[i]->replica = 0;
    for (size_t s = 0; s < SL_SLOTS; s++)
        if (table[s] != SL__NO_NODE) t->nodes[table[s]]->primary = 1;
    for (size_t i = 0; i < t->nreplicas; i++) {
        sl__node *n = t->nodes[t->replicas[i].node];
        if (n->primary) continue;
        n->replica = 1;
        n->promoted = 0; /* a replica again: its next promotion is news */
        /* An idle connection made while it was a primary never sent READONLY: the next read
         * for it reconnects with it (a busy one is left alone and not used for reads). */
        if (c->opts.read_from != SL_READ_PRIMARY && n->state != SL__DISCONNECTED && !n->readonly &&
            !sl__engine_node_busy(n))
            sl__node_close(c, n, 0);
    }
    if (changed) sl__event(c, SL_EVENT_TOPOLOGY_CHANGED, asked < t->nnodes ? t->nodes[asked]->addr : "");
}

static void note_hostname(sl_client *c, uint16_t idx, const sl_reply *node, size_t n, const uint8_t *data);

int sl__topo_apply_slots(sl_client *c, uint16_t asked, const sl_reply *r, size_t n, const uint8_t *data)
{
    if (n == 0 || r[0].type != SL_REPLY_ARRAY) return SL_ECLUSTER;
    uint16_t table[SL_SLOTS];
    for (size_t s = 0; s < SL_SLOTS; s++) table[s] = SL__NO_NODE;
    c->topo.nstaged = 0;
    size_t i = 1, ranges = 0;
    for (uint32_t e = 0; e < r[0].len; e++) {
        if (i >= n) return SL_ECLUSTER;
        const sl_reply *ent = &r[i];
        size_t span = subtree(ent, n - i);
        if (ent->type != SL_REPLY_ARRAY || ent->len < 3 || span < 5) return SL_ECLUSTER;
        int64_t lo, hi, port;
        if (rec_int(&ent[1], &lo) || rec_int(&ent[2], &hi)) return SL_ECLUSTER;
        const sl_reply *primary = &ent[3];
        if (primary->type != SL_REPLY_ARRAY || primary->len < 2) return SL_ECLUSTER;
        const sl_reply *host = &ent[4];
        if (host->type != SL_REPLY_STRING && host->type != SL_REPLY_STATUS && host->type != SL_REPLY_NIL)
            return SL_ECLUSTER;
        if (rec_int(&ent[5], &port)) return SL_ECLUSTER;
        if (lo < 0 || hi >= SL_SLOTS || lo > hi) return SL_ECLUSTER;
        uint16_t idx;
        /* no pointer arithmetic on data for an empty host: data is NULL while it holds no bytes */
        int rc = endpoint_node(c, asked, host->type == SL_REPLY_NIL || host->len == 0 ? NULL : data + host->offset,
                               host->type == SL_REPLY_NIL ? 0 : host->len, port, &idx);
        if (rc) return rc;
        note_hostname(c, idx, primary, n - i - 3, data);
        for (int64_t s = lo; s <= hi; s++) table[s] = idx;
        ranges++;
        /* The replicas follow the primary: [host, port, id, ...] each. */
        size_t pos = 3 + subtree(primary, span - 3);
        for (uint32_t k = 3; k < ent->len && pos < span; k++) {
            const sl_reply *rep = &ent[pos];
            size_t rs = subtree(rep, span - pos);
            if (rep->type == SL_REPLY_ARRAY && rep->len >= 2 && rs >= 3 &&
                (rep[1].type == SL_REPLY_STRING || rep[1].type == SL_REPLY_STATUS) && rep[2].type == SL_REPLY_INTEGER &&
                (rc = stage_replica(c, asked, rep[1].len ? data + rep[1].offset : NULL, rep[1].len,
                                    rep[2].value.integer, idx)) != 0)
                return rc;
            pos += rs;
        }
        i += span;
    }
    if (ranges == 0) return SL_ECLUSTER;
    map_commit(c, asked, table);
    return 0;
}

/* A record whose data bytes are text (the only ones whose len counts bytes to read). */
static int is_text(const sl_reply *r)
{
    return r->type == SL_REPLY_STRING || r->type == SL_REPLY_STATUS || r->type == SL_REPLY_VERB;
}

/* Looks up a key in a map given as a RESP3 map or a RESP2 flat array of pairs; returns the
 * record index of the value (relative to m) or 0. */
static size_t map_get(const sl_reply *m, size_t n, const uint8_t *data, const char *key)
{
    if (m->type != SL_REPLY_MAP && m->type != SL_REPLY_ARRAY) return 0;
    size_t kl = strlen(key), i = 1;
    for (uint32_t e = 0; e + 1 < m->len; e += 2) {
        if (i >= n) return 0;
        const sl_reply *k = &m[i];
        size_t ks = subtree(k, n - i);
        if (i + ks >= n) return 0;
        if ((k->type == SL_REPLY_STRING || k->type == SL_REPLY_STATUS) && k->len == kl &&
            memcmp(data + k->offset, key, kl) == 0)
            return i + ks;
        i += ks;
        i += subtree(&m[i], n - i);
    }
    return 0;
}

/* A node entry of CLUSTER SHARDS: its host record (endpoint, else ip; 0 when absent) and
 * port record. Returns 1 for a primary, 2 for a replica, 0 when the role or an integer port
 * is missing. */
static int shard_node(const sl_reply *nd, size_t ns, const uint8_t *data, size_t *host, size_t *port)
{
    size_t role = map_get(nd, ns, data, "role");
    size_t ep = map_get(nd, ns, data, "endpoint");
    *host = ep ? ep : map_get(nd, ns, data, "ip");
    *port = map_get(nd, ns, data, "port");
    if (!role || !*port || nd[*port].type != SL_REPLY_INTEGER || !is_text(&nd[role])) return 0;
    const uint8_t *t = data + nd[role].offset;
    size_t l = nd[role].len;
    if ((l == 6 && memcmp(t, "master", 6) == 0) || (l == 7 && memcmp(t, "primary", 7) == 0)) return 1;
    if (l == 7 && memcmp(t, "replica", 7) == 0) return 2;
    return 0;
}

/* Keeps the host name a CLUSTER SLOTS node entry [ip, port, id, {hostname: ...}] announces
 * (Redis 7 cluster-announce-hostname), which TLS may verify its certificate against. */
static void note_hostname(sl_client *c, uint16_t idx, const sl_reply *node, size_t n, const uint8_t *data)
{
    if (node->type != SL_REPLY_ARRAY || node->len < 4) return;
    size_t i = 1;
    for (int e = 0; e < 3; e++) {
        if (i >= n) return;
        i += subtree(&node[i], n - i);
    }
    if (i >= n) return;
    size_t v = map_get(&node[i], n - i, data, "hostname");
    if (!v) return;
    const sl_reply *h = &node[i + v];
    if (!is_text(h) || h->len == 0 || h->len >= SL__HOST_MAX) return;
    sl__node *nd = c->topo.nodes[idx];
    memcpy(nd->announced, data + h->offset, h->len);
    nd->announced[h->len] = '\0';
}

int sl__topo_apply_shards(sl_client *c, uint16_t asked, const sl_reply *r, size_t n, const uint8_t *data)
{
    if (n == 0 || r[0].type != SL_REPLY_ARRAY) return SL_ECLUSTER;
    uint16_t table[SL_SLOTS];
    for (size_t s = 0; s < SL_SLOTS; s++) table[s] = SL__NO_NODE;
    c->topo.nstaged = 0;
    size_t i = 1, ranges = 0;
    for (uint32_t e = 0; e < r[0].len; e++) {
        if (i >= n) return SL_ECLUSTER;
        const sl_reply *sh = &r[i];
        size_t span = subtree(sh, n - i);
        size_t si = map_get(sh, span, data, "slots");
        size_t ni = map_get(sh, span, data, "nodes");
        if (!si || !ni || sh[si].type != SL_REPLY_ARRAY || sh[ni].type != SL_REPLY_ARRAY) return SL_ECLUSTER;
        /* The primary among the shard's nodes. */
        uint16_t idx = SL__NO_NODE;
        size_t j = ni + 1;
        for (uint32_t k = 0; k < sh[ni].len && j < span; k++) {
            const sl_reply *nd = &sh[j];
            size_t ns = subtree(nd, span - j), h, port;
            if (shard_node(nd, ns, data, &h, &port) == 1) {
                /* a host that is neither text nor nil (an aggregate's len counts children,
                 * not bytes) is a bad reply, not bytes to read */
                if (h && nd[h].type != SL_REPLY_NIL && !is_text(&nd[h])) return SL_ECLUSTER;
                const uint8_t *hp = h && is_text(&nd[h]) && nd[h].len ? data + nd[h].offset : NULL;
                size_t hl = hp ? nd[h].len : 0;
                int rc = endpoint_node(c, asked, hp, hl, nd[port].value.integer, &idx);
                if (rc) return rc;
                break;
            }
            j += ns;
        }
        if (idx == SL__NO_NODE) {
            i += span;
            continue;
        }
        /* The shard's replicas. */
        j = ni + 1;
        for (uint32_t k = 0; k < sh[ni].len && j < span; k++) {
            const sl_reply *nd = &sh[j];
            size_t ns = subtree(nd, span - j), h, port;
            if (shard_node(nd, ns, data, &h, &port) == 2 && h && is_text(&nd[h])) {
                int rc = stage_replica(c, asked, nd[h].len ? data + nd[h].offset : NULL, nd[h].len,
                                       nd[port].value.integer, idx);
                if (rc) return rc;
            }
            j += ns;
        }
        for (uint32_t k = 0; k + 1 < sh[si].len; k += 2) {
            int64_t lo, hi;
            if (rec_int(&sh[si + 1 + k], &lo) || rec_int(&sh[si + 2 + k], &hi)) return SL_ECLUSTER;
            if (lo < 0 || hi >= SL_SLOTS || lo > hi) return SL_ECLUSTER;
            for (int64_t s = lo; s <= hi; s++) table[s] = idx;
            ranges++;
        }
        i += span;
    }
    if (ranges == 0) return SL_ECLUSTER;
    map_commit(c, asked, table);
    return 0;
}

int sl__topo_apply_nodes_text(sl_client *c, uint16_t asked, const uint8_t *text, size_t len)
{
    uint16_t table[SL_SLOTS];
    for (size_t s = 0; s < SL_SLOTS; s++) table[s] = SL__NO_NODE;
    c->topo.nstaged = 0; /* replicas are not read from CLUSTER NODES */
    size_t pos = 0, ranges = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n') end++;
        /* Split the line into fields. */
        const uint8_t *f[64];
        size_t fl[64];
        int nf = 0;
        size_t i = pos;
        while (i < end && nf < 64) {
            while (i < end && (text[i] == ' ' || text[i] == '\r')) i++;
            if (i >= end) break;
            size_t s = i;
            while (i < end && text[i] != ' ' && text[i] != '\r') i++;
            f[nf] = text + s;
            fl[nf] = i - s;
            nf++;
        }
        pos = end + 1;
        if (nf < 8) continue;
        /* flags must include master */
        int master = 0;
        for (size_t k = 0; k + 6 <= fl[2]; k++)
            if (memcmp(f[2] + k, "master", 6) == 0) master = 1;
        if (!master || nf == 8) continue;
        /* ip:port@cport[,hostname] */
        size_t at = 0;
        while (at < fl[1] && f[1][at] != '@' && f[1][at] != ',') at++;
        size_t colon = at;
        while (colon > 0 && f[1][colon - 1] != ':') colon--;
        if (colon == 0) continue;
        int64_t port = 0;
        for (size_t k = colon; k < at; k++) {
            if (f[1][k] < '0' || f[1][k] > '9') { port = -1; break; }
            port = port * 10 + (f[1][k] - '0');
            if (port > 65535) break;
        }
        uint16_t idx;
        if (endpoint_node(c, asked, f[1], colon - 1, port, &idx)) continue;
        for (int k = 8; k < nf; k++) {
            if (fl[k] == 0 || f[k][0] == '[') continue; /* migrating/importing markers */
            int64_t lo = 0, hi = -1, v = 0;
            int dash = 0, bad = 0;
            for (size_t q = 0; q < fl[k]; q++) {
                if (f[k][q] == '-' && !dash) { lo = v; v = 0; dash = 1; }
                else if (f[k][q] >= '0' && f[k][q] <= '9' && v < SL_SLOTS) v = v * 10 + (f[k][q] - '0');
                else bad = 1;
            }
            if (bad) continue;
            if (dash) hi = v; else lo = hi = v;
            if (lo < 0 || hi >= SL_SLOTS || lo > hi) continue;
            for (int64_t s = lo; s <= hi; s++) table[s] = idx;
            ranges++;
        }
    }
    if (ranges == 0) return SL_ECLUSTER;
    map_commit(c, asked, table);
    return 0;
}

uint16_t sl__topo_random_primary(sl_client *c)
{
    sl__topology *t = &c->topo;
    size_t np = 0;
    for (size_t i = 0; i < t->nnodes; i++) np += t->nodes[i]->primary;
    if (np == 0) return t->default_node;
    size_t k = (size_t)(sl__rand(c) % np);
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i]->primary && k-- == 0) return (uint16_t)i;
    return t->default_node;
}

/* Asks one node for the map: CLUSTER SLOTS, then SHARDS, then NODES. Returns 0 when a map
 * was applied, SL__NOT_CLUSTER when every form answered an ERR (cluster support disabled),
 * SL_ESERVER for another error reply (WRONGPASS, NOAUTH, NOPERM...), or another code. */
static int ask_node(sl_client *c, uint16_t idx)
{
    sl_batch *b = c->disco;
    static const char *const forms[3][2] = {{"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}, {"CLUSTER", "NODES"}};
    int not_cluster = 0;
    for (int f = 0; f < 3; f++) {
        sl_batch_reset(b);
        int rc = sl_batch_append_argv(b, NULL, 2, forms[f], NULL);
        if (rc) return rc;
        b->cmds[0].route = SL_ROUTE_NODE; /* straight to the node asked */
        b->cmds[0].node = idx;
        rc = sl__batch_exec(b, c->opts.connect_timeout_ms > 0 ? c->opts.connect_timeout_ms + 1000 : 3000);
        size_t nrec;
        const uint8_t *data;
        const sl_reply *r = sl_batch_replies(b, &nrec, &data, NULL);
        if (nrec == 0) return rc ? rc : SL_EIO;
        if (r[0].type == SL_REPLY_ERROR) {
            if (r[0].flags != SL_ERR_SERVER) {
                sl__set_err(c, "%.*s", (int)r[0].len, (const char *)data + r[0].offset);
                return SL_EIO;
            }
            /* "ERR This instance has cluster support disabled" and unknown subcommands:
             * try the next form; if none answers, the node is not a cluster. Any other
             * error (credentials, permissions) is the answer. */
            if (r[0].len >= 3 && memcmp(data + r[0].offset, "ERR", 3) == 0) {
                not_cluster = 1;
                continue;
            }
            sl__set_err(c, "%.*s", (int)r[0].len, (const char *)data + r[0].offset);
            return SL_ESERVER;
        }
        if (f == 0) rc = sl__topo_apply_slots(c, idx, r, nrec, data);
        else if (f == 1) rc = sl__topo_apply_shards(c, idx, r, nrec, data);
        else rc = (r[0].type == SL_REPLY_STRING || r[0].type == SL_REPLY_VERB) && r[0].len > 0
                      ? sl__topo_apply_nodes_text(c, idx, data + r[0].offset, r[0].len)
                      : SL_ECLUSTER;
        if (rc == 0) return 0;
    }
    return not_cluster ? SL__NOT_CLUSTER : SL_ECLUSTER;
}

/* The pass of sl__topo_discover that asks node i: 0 a replica of a primary reported down,
 * 1 another node not down, 2 a node reported down. */
static int refresh_rank(const sl__topology *t, uint16_t i)
{
    const sl__node *n = t->nodes[i];
    if (n->down) return 2;
    for (size_t r = 0; r < t->nreplicas; r++)
        if (t->replicas[r].node == i && t->replicas[r].primary < t->nnodes && t->nodes[t->replicas[r].primary]->down)
            return 0;
    return 1;
}

int sl__topo_discover(sl_client *c, int *is_cluster)
{
    sl__topology *t = &c->topo;
    int last = SL_EIO;
    /* The seeds first when nothing is known, else the known nodes (primaries and
     * replicas) in three passes: the replicas of a primary reported down (a promoted one
     * knows it first), the other nodes not down, then the down ones, so a lost node is
     * never the only one asked. */
    size_t n = t->nnodes;
    for (size_t k = 0; k < 3 * n; k++) {
        /* Start from the default node so a steady cluster is asked the same node. */
        size_t i = (t->default_node != SL__NO_NODE ? t->default_node + k : k) % n;
        if (refresh_rank(t, (uint16_t)i) != (int)(k / n)) continue;
        int rc = ask_node(c, (uint16_t)i);
        if (rc == 0) {
            if (is_cluster) *is_cluster = 1;
            if (t->slot_node[0] != SL__NO_NODE && t->default_node == SL__NO_NODE) t->default_node = (uint16_t)i;
            if (t->default_node == SL__NO_NODE || !t->nodes[t->default_node]->primary)
                t->default_node = (uint16_t)i;
            if (!t->nodes[t->default_node]->primary) t->default_node = sl__topo_random_primary(c);
            sl__topo_refreshed(c);
            return 0;
        }
        if (rc == SL__NOT_CLUSTER) {
            if (is_cluster) *is_cluster = 0;
            t->default_node = (uint16_t)i;
            return SL__NOT_CLUSTER;
        }
        if (rc == SL_ESERVER) return rc; /* the credentials are wrong everywhere */
        last = rc;
    }
    t->last_refresh_ms = sl__now_ms();
    return last;
}

int sl__topo_refresh_due(const sl_client *c, uint64_t now)
{
    const sl__topology *t = &c->topo;
    int periodic = c->opts.refresh_interval_ms > 0 &&
                   now >= t->last_refresh_ms + (uint64_t)c->opts.refresh_interval_ms;
    if (!(t->refresh_wanted || periodic)) return 0;
    /* At most one a second; while a primary is lost, one every SL__REFRESH_LOST_MS, so its
     * replica's promotion is seen soon after it happens. */
    uint64_t gap = (t->refresh_wanted & SL__REFRESH_LOST) ? SL__REFRESH_LOST_MS : 1000;
    return now >= t->last_refresh_ms + gap;
}

uint16_t sl__topo_refresh_node(sl_client *c)
{
    sl__topology *t = &c->topo;
    if (t->nnodes == 0) return t->default_node;
    /* While a primary is down, its replicas first (a promoted one knows it first); else the
     * default node while it is up (a steady cluster is asked the same node); else the next
     * node not down, in turn (a failed refresh asks another one next time). */
    for (int rank = 0; rank < 3; rank++) {
        if (rank == 1 && t->default_node < t->nnodes && !t->nodes[t->default_node]->down) return t->default_node;
        for (size_t k = 0; k < t->nnodes; k++) {
            uint16_t i = (uint16_t)((t->refresh_next + k) % t->nnodes);
            if (refresh_rank(t, i) == rank) {
                t->refresh_next = (uint16_t)((i + 1) % t->nnodes);
                return i;
            }
        }
    }
    return t->default_node;
}

void sl__topo_refreshed(sl_client *c)
{
    sl__topology *t = &c->topo;
    t->last_refresh_ms = sl__now_ms();
    c->stats.refreshes++;
    if (t->refresh_wanted & SL__REFRESH_LOST) c->stats.refreshes_lost++;
    else if (t->refresh_wanted) c->stats.refreshes_moved++;
    /* A primary of the new map still down: its promotion is yet to come. */
    t->refresh_wanted = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i]->primary && t->nodes[i]->down) t->refresh_wanted = SL__REFRESH_LOST;
}

void sl__topo_maybe_refresh(sl_client *c)
{
    if (!sl__topo_refresh_due(c, sl__now_ms())) return;
    char saved[SL__ERRMSG_MAX];
    memcpy(saved, c->errmsg, sizeof saved);
    (void)sl__topo_discover(c, NULL); /* best effort: the old map stays on failure */
    memcpy(c->errmsg, saved, sizeof saved);
}

/* ------------------------------------------------------------ the node list */

int sl_client_nodes(sl_client *c, sl_node_info **out, size_t *count)
{
    if (!c || !out || !count) return SL_EINVAL;
    *out = NULL;
    *count = 0;
    sl__topology *t = &c->topo;
    int plain = c->mode != SL_MODE_CLUSTER;
    /* The primaries (nodes serving slots; in plain mode the one node, serving every slot),
     * then the replicas; one block holds the entries, the ranges and the addresses. */
    size_t nprim = 0, nranges = 0, strbytes = 0;
    uint16_t *pos = NULL; /* node index -> list position */
    if (t->nnodes) {
        pos = sl__malloc(&c->alloc, t->nnodes * sizeof *pos);
        if (!pos) return SL_ENOMEM;
    }
    for (size_t k = 0; k < t->nnodes; k++) {
        pos[k] = SL__NO_NODE;
        if (plain ? k == (t->default_node == SL__NO_NODE ? 0 : t->default_node) : t->nodes[k]->primary) {
            pos[k] = (uint16_t)nprim++;
            strbytes += strlen(t->nodes[k]->addr) + 1;
        }
    }
    if (plain) nranges = nprim;
    else
        for (size_t s = 0; s < SL_SLOTS; s++)
            if (t->slot_node[s] != SL__NO_NODE && (s == 0 || t->slot_node[s - 1] != t->slot_node[s])) nranges++;
    size_t nrep = plain ? 0 : t->nreplicas;
    for (size_t i = 0; i < nrep; i++) strbytes += strlen(t->replicas[i].addr) + 1;
    size_t n = nprim + nrep;
    size_t bytes = n * sizeof(sl_node_info) + nranges * 2 * sizeof(uint16_t) + strbytes;
    uint8_t *blk = n ? sl__malloc(&c->alloc, bytes) : NULL;
    if (n && !blk) {
        sl__free(&c->alloc, pos);
        return SL_ENOMEM;
    }
    sl_node_info *nodes = (sl_node_info *)blk;
    uint16_t *rng = (uint16_t *)(blk + n * sizeof(sl_node_info));
    char *str = (char *)(rng + nranges * 2);
    for (size_t k = 0; k < t->nnodes; k++) {
        if (pos[k] == SL__NO_NODE) continue;
        sl_node_info *ni = &nodes[pos[k]];
        size_t al = strlen(t->nodes[k]->addr) + 1;
        memcpy(str, t->nodes[k]->addr, al);
        ni->addr = str;
        str += al;
        ni->is_primary = 1;
        ni->primary = -1;
        ni->ranges = rng;
        ni->nranges = 0;
        if (plain) {
            rng[0] = 0;
            rng[1] = SL_SLOTS - 1;
            rng += 2;
            ni->nranges = 1;
            continue;
        }
        for (size_t s = 0; s < SL_SLOTS; s++) {
            if (t->slot_node[s] != k) continue;
            size_t e = s;
            while (e + 1 < SL_SLOTS && t->slot_node[e + 1] == k) e++;
            rng[0] = (uint16_t)s;
            rng[1] = (uint16_t)e;
            rng += 2;
            ni->nranges++;
            s = e;
        }
    }
    for (size_t i = 0; i < nrep; i++) {
        sl_node_info *ni = &nodes[nprim + i];
        size_t al = strlen(t->replicas[i].addr) + 1;
        memcpy(str, t->replicas[i].addr, al);
        ni->addr = str;
        str += al;
        ni->is_primary = 0;
        uint16_t p = t->replicas[i].primary;
        ni->primary = p < t->nnodes && pos[p] != SL__NO_NODE ? (int)pos[p] : -1;
        ni->ranges = NULL;
        ni->nranges = 0;
    }
    sl__free(&c->alloc, pos);
    *out = nodes;
    *count = n;
    return 0;
}

void sl_client_nodes_free(sl_client *c, sl_node_info *nodes)
{
    if (c && nodes) sl__free(&c->alloc, nodes);
}
