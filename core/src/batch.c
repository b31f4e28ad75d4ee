/* batch: the pipeline engine. Queued commands are routed by their key's slot into one
 * buffer per node; every node is written before any is read; replies are read from
 * whichever socket is ready and parsed incrementally into per-node record vectors; MOVED,
 * ASK, TRYAGAIN and CLUSTERDOWN resend only the affected commands, again written per node
 * before reading; at the end the records are put in the caller's order (or, when one
 * node answered everything in order, handed out as they are). */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ small helpers */

const uint8_t *sl__cmd_bytes(const sl_batch *b, const sl__cmd *cmd)
{
    if (cmd->flags & SL__F_SYNTH) return b->synth.ptr + cmd->off;
    return (b->ext ? b->ext : b->input.ptr) + cmd->off;
}

int sl__batch_push_cmd(sl_batch *b, sl__cmd **out)
{
    if (b->ncmds == b->cmds_cap) {
        void *p = b->cmds;
        if (sl__grow(&b->client->alloc, &p, &b->cmds_cap, b->ncmds + 1, sizeof(sl__cmd))) return SL_ENOMEM;
        b->cmds = p;
    }
    sl__cmd *cmd = &b->cmds[b->ncmds++];
    memset(cmd, 0, sizeof *cmd);
    cmd->parent = -1;
    cmd->slot = -1;
    cmd->src = SL__SRC_NONE;
    cmd->node = SL__NO_NODE;
    *out = cmd;
    return 0;
}

/* Appends a client-made error record as command ci's reply. */
int sl__batch_add_error(sl_batch *b, uint32_t ci, sl_err_kind kind, const char *fmt, ...)
{
    char msg[SL__ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof msg) n = (int)sizeof msg - 1;
    const sl__alloc *a = &b->client->alloc;
    if (sl__records_reserve(a, &b->xrecs, 1)) return SL_ENOMEM;
    uint64_t off = b->data.len;
    if (sl__bytes_append(a, &b->data, msg, (size_t)n)) return SL_ENOMEM;
    sl_reply *r = &b->xrecs.ptr[b->xrecs.len];
    memset(r, 0, sizeof *r);
    r->type = SL_REPLY_ERROR;
    r->flags = (uint8_t)kind;
    r->len = (uint32_t)n;
    r->offset = off;
    sl__cmd *cmd = &b->cmds[ci];
    cmd->src = SL__SRC_X;
    cmd->rec_start = (uint32_t)b->xrecs.len;
    cmd->rec_count = 1;
    cmd->flags |= SL__F_DONE;
    cmd->flags &= (uint16_t)~SL__F_RESEND;
    b->xrecs.len++;
    return 0;
}

static const sl_reply *cmd_records(const sl_batch *b, const sl__cmd *cmd)
{
    if (cmd->src == SL__SRC_X) return b->xrecs.ptr + cmd->rec_start;
    if (cmd->src == SL__SRC_NONE) return NULL;
    return b->bn[cmd->src].recs.ptr + cmd->rec_start;
}

/* ------------------------------------------------------------ life cycle */

int sl_batch_new(sl_client *client, sl_batch **out)
{
    if (!out) return SL_EINVAL;
    *out = NULL;
    if (!client) return SL_EINVAL;
    sl_batch *b = sl__malloc(&client->alloc, sizeof *b);
    if (!b) return SL_ENOMEM;
    memset(b, 0, sizeof *b);
    b->client = client;
    client->nbatches++;
    *out = b;
    return 0;
}

void sl_batch_free(sl_batch *b)
{
    if (!b) return;
    const sl__alloc *a = &b->client->alloc;
    sl__bytes_free(a, &b->input);
    sl__bytes_free(a, &b->synth);
    sl__bytes_free(a, &b->data);
    sl__records_free(a, &b->xrecs);
    sl__records_free(a, &b->out);
    for (size_t i = 0; i < b->nbn; i++) {
        sl__bytes_free(a, &b->bn[i].wbuf);
        sl__records_free(a, &b->bn[i].recs);
        sl__free(a, b->bn[i].pending);
    }
    sl__free(a, b->bn);
    sl__free(a, b->args);
    sl__free(a, b->cmds);
    sl__free(a, b->splitmap);
    sl__free(a, b->scratch);
    b->client->nbatches--;
    sl__free(a, b);
}

void sl_batch_reset(sl_batch *b)
{
    if (!b) return;
    b->input.len = 0;
    b->ext = NULL;
    b->ext_len = 0;
    b->nargs = 0;
    b->ncmds = 0;
    b->nuser = 0;
}

size_t sl_batch_count(const sl_batch *b)
{
    return b ? b->nuser : 0;
}

/* ------------------------------------------------------------ queueing */

static int set_route(sl_batch *b, sl__cmd *cmd, const sl_route *route)
{
    if (!route) {
        cmd->route = SL_ROUTE_KEY;
        return 0;
    }
    cmd->route = (uint8_t)route->kind;
    switch (route->kind) {
    case SL_ROUTE_KEY:
    case SL_ROUTE_ALL_PRIMARIES:
    case SL_ROUTE_RANDOM:
        return 0;
    case SL_ROUTE_SLOT:
        if (route->slot < 0 || route->slot >= SL_SLOTS) {
            sl__set_err(b->client, "route slot %d out of range 0..16383", route->slot);
            return SL_EINVAL;
        }
        cmd->aux = (uint32_t)route->slot;
        return 0;
    case SL_ROUTE_NODE: {
        if (!route->node) {
            sl__set_err(b->client, "SL_ROUTE_NODE needs route.node (\"host:port\")");
            return SL_EINVAL;
        }
        uint16_t idx;
        int rc = sl__topo_node_addr(b->client, route->node, strlen(route->node), &idx);
        if (rc) {
            sl__set_err(b->client, "bad route node address \"%.100s\"", route->node);
            return SL_EINVAL;
        }
        cmd->node = idx;
        return 0;
    }
    }
    sl__set_err(b->client, "unknown route kind %d", (int)route->kind);
    return SL_EINVAL;
}

/* Scans count requests at buf (which is the batch's base buffer at offset base). */
static int queue_scanned(sl_batch *b, const sl_route *route, const uint8_t *buf, size_t len,
                         size_t count, size_t base)
{
    sl_client *c = b->client;
    size_t save_cmds = b->ncmds, save_args = b->nargs, pos = 0;
    char why[128];
    if (len > UINT32_MAX || base + len > UINT32_MAX) {
        sl__set_err(c, "command bytes over 4 GiB");
        return SL_EINVAL;
    }
    for (size_t i = 0; i < count; i++) {
        size_t used = 0, arg0 = b->nargs;
        uint32_t argc = 0;
        why[0] = '\0';
        int rc = sl__resp_scan_request(&c->alloc, buf + pos, len - pos, &used, &b->args, &b->nargs,
                                       &b->args_cap, &argc, why);
        if (rc != 1) {
            b->ncmds = save_cmds;
            b->nargs = save_args;
            if (rc == SL_ENOMEM) return rc;
            if (rc == 0)
                sl__set_err(c, "command %zu of %zu is incomplete (the bytes end inside it)", i + 1, count);
            else
                sl__set_err(c, "command %zu of %zu is not a RESP array of bulk strings: %s", i + 1, count, why);
            return SL_EINVAL;
        }
        sl__cmd *cmd;
        if (sl__batch_push_cmd(b, &cmd)) {
            b->ncmds = save_cmds;
            b->nargs = save_args;
            return SL_ENOMEM;
        }
        cmd->off = (uint32_t)(base + pos);
        cmd->len = (uint32_t)used;
        cmd->arg0 = (uint32_t)arg0;
        cmd->argc = argc;
        rc = set_route(b, cmd, route);
        if (rc) {
            b->ncmds = save_cmds;
            b->nargs = save_args;
            return rc;
        }
        pos += used;
    }
    if (pos != len) {
        b->ncmds = save_cmds;
        b->nargs = save_args;
        sl__set_err(c, "%zu bytes after the %zu commands", len - pos, count);
        return SL_EINVAL;
    }
    b->nuser = b->ncmds;
    return 0;
}

int sl_batch_append(sl_batch *b, const sl_route *route, const void *cmds, size_t len, size_t count)
{
    if (!b) return SL_EINVAL;
    if ((!cmds && len) || count == 0) {
        sl__set_err(b->client, "sl_batch_append: no commands");
        return SL_EINVAL;
    }
    if (b->ext) {
        sl__set_err(b->client, "sl_batch_append after sl_batch_run without a reset");
        return SL_ESTATE;
    }
    if (b->ncmds != b->nuser) b->ncmds = b->nuser; /* drop parts of the last execution */
    size_t base = b->input.len;
    if (sl__bytes_append(&b->client->alloc, &b->input, cmds, len)) return SL_ENOMEM;
    int rc = queue_scanned(b, route, b->input.ptr + base, len, count, base);
    if (rc) b->input.len = base;
    return rc;
}

int sl_batch_append_argv(sl_batch *b, const sl_route *route, int argc, const char *const *argv,
                         const size_t *argvlen)
{
    if (!b) return SL_EINVAL;
    if (argc <= 0 || !argv) {
        sl__set_err(b->client, "sl_batch_append_argv: argc must be at least 1");
        return SL_EINVAL;
    }
    for (int i = 0; i < argc; i++) {
        if (!argv[i]) {
            sl__set_err(b->client, "sl_batch_append_argv: argv[%d] is NULL", i);
            return SL_EINVAL;
        }
    }
    if (b->ext) {
        sl__set_err(b->client, "sl_batch_append_argv after sl_batch_run without a reset");
        return SL_ESTATE;
    }
    if (b->ncmds != b->nuser) b->ncmds = b->nuser;
    size_t base = b->input.len;
    int rc = sl__resp_encode_argv(&b->client->alloc, &b->input, argc, argv, argvlen);
    if (rc) {
        b->input.len = base;
        return rc;
    }
    rc = queue_scanned(b, route, b->input.ptr + base, b->input.len - base, 1, base);
    if (rc) b->input.len = base;
    return rc;
}

/* ------------------------------------------------------------ routing */

static int is_name(const uint8_t *p, size_t len, const char *upper)
{
    size_t n = strlen(upper);
    if (len != n) return 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = p[i];
        if (ch >= 'a' && ch <= 'z') ch = (uint8_t)(ch - 32);
        if (ch != (uint8_t)upper[i]) return 0;
    }
    return 1;
}

static const sl__cmdinfo *lookup(sl_batch *b, const uint8_t *bytes, const sl__arg *args, uint32_t argc)
{
    const sl__arg *name = &args[0];
    /* One-entry cache: pipelines mostly repeat one command. Containers are not cached
     * since their subcommand decides. */
    if (b->last_info && name->len == b->last_name_len) {
        const uint8_t *p = bytes + name->off;
        uint32_t i = 0;
        while (i < name->len && p[i] == b->last_name[i]) i++;
        if (i == name->len) return b->last_info;
    }
    const sl__cmdinfo *info = sl__cmd_lookup(bytes, args, argc);
    if (info && !(info->flags & SL__CMD_CONTAINER) && !strchr(info->name, '|') &&
        name->len <= sizeof b->last_name) {
        memcpy(b->last_name, bytes + name->off, name->len);
        b->last_name_len = name->len;
        b->last_info = info;
        b->last_single_arity = (info->nspecs == 1 && info->specs[0].bs_type == SL__BS_INDEX &&
                                info->specs[0].bs_pos == 1 && info->specs[0].fk_type == SL__FK_RANGE &&
                                info->specs[0].fk_a == 0 && !(info->flags & SL__CMD_NOKEYS))
                                   ? info->arity
                                   : 0;
    }
    return info;
}

static int ensure_scratch(sl_batch *b, size_t n)
{
    if (n <= b->scratch_cap) return 0;
    void *p = b->scratch;
    int rc = sl__grow(&b->client->alloc, &p, &b->scratch_cap, n, sizeof(uint32_t));
    b->scratch = p;
    return rc;
}

/* The slot of command ci's keys: -1 without keys; *multi set when keys span slots. */
static int cmd_slot(sl_batch *b, uint32_t ci, const sl__cmdinfo **infop, int *multi)
{
    sl__cmd *cmd = &b->cmds[ci];
    const uint8_t *bytes = sl__cmd_bytes(b, cmd);
    const sl__arg *args = b->args + cmd->arg0;
    const sl__cmdinfo *info = lookup(b, bytes, args, cmd->argc);
    *infop = info;
    *multi = 0;
    if (!info || (info->flags & SL__CMD_NOKEYS)) return -1;
    /* Fast path: one key at argument 1 (GET, SET, INCR...), most of every pipeline; the
     * lookup cache knows the shape. */
    int16_t ar = info == b->last_info ? b->last_single_arity : 0;
    if (ar && cmd->argc >= 2 && (ar > 0 ? cmd->argc == (uint32_t)ar : cmd->argc >= (uint32_t)-ar))
        return (int)sl__key_slot(bytes + args[1].off, args[1].len);
    if (ensure_scratch(b, 16)) return -2;
    size_t nk = sl__cmd_keys(info, bytes, args, cmd->argc, b->scratch, b->scratch_cap);
    if (nk > b->scratch_cap) {
        if (ensure_scratch(b, nk)) return -2;
        nk = sl__cmd_keys(info, bytes, args, cmd->argc, b->scratch, b->scratch_cap);
    }
    if (nk == 0) return -1;
    const sl__arg *k0 = &args[b->scratch[0]];
    int slot = (int)sl__key_slot(bytes + k0->off, k0->len);
    for (size_t i = 1; i < nk; i++) {
        const sl__arg *k = &args[b->scratch[i]];
        if ((int)sl__key_slot(bytes + k->off, k->len) != slot) {
            *multi = 1;
            break;
        }
    }
    return slot;
}

static int route_to_slot(sl_batch *b, uint32_t ci, int slot)
{
    sl_client *c = b->client;
    uint16_t node = c->topo.slot_node[slot];
    if (node == SL__NO_NODE) {
        c->topo.refresh_wanted = 1;
        return sl__batch_add_error(b, ci, SL_ERR_CLUSTER, "CLUSTERDOWN no node serves slot %d", slot);
    }
    b->cmds[ci].node = node;
    b->cmds[ci].slot = slot;
    b->cmds[ci].flags |= SL__F_RESEND;
    return 0;
}

static int route_multi_group(sl_batch *b, uint32_t first)
{
    /* MULTI ... EXEC/DISCARD: every member must be in one slot; the group goes to that
     * slot's node as it is, in order. */
    uint32_t last = (uint32_t)b->nuser - 1;
    int slot = -1, cross = 0;
    for (uint32_t i = first + 1; i < b->nuser; i++) {
        sl__cmd *cmd = &b->cmds[i];
        const uint8_t *bytes = sl__cmd_bytes(b, cmd);
        const sl__arg *name = &b->args[cmd->arg0];
        if (is_name(bytes + name->off, name->len, "EXEC") || is_name(bytes + name->off, name->len, "DISCARD")) {
            last = i;
            break;
        }
        const sl__cmdinfo *info;
        int multi;
        int s = cmd_slot(b, i, &info, &multi);
        if (s == -2) return SL_ENOMEM;
        if (multi || (s >= 0 && slot >= 0 && s != slot)) cross = 1;
        if (s >= 0 && slot < 0) slot = s;
    }
    for (uint32_t i = first; i <= last; i++) {
        int rc;
        b->cmds[i].flags |= SL__F_MULTI;
        if (cross)
            rc = sl__batch_add_error(b, i, SL_ERR_CLUSTER,
                                     "CROSSSLOT Keys in request don't hash to the same slot (the transaction was not sent)");
        else if (slot >= 0)
            rc = route_to_slot(b, i, slot);
        else {
            b->cmds[i].node = b->client->topo.default_node;
            b->cmds[i].flags |= SL__F_RESEND;
            rc = 0;
        }
        if (rc) return rc;
    }
    return (int)(last - first);
}

static int route_all(sl_batch *b)
{
    sl_client *c = b->client;
    size_t n = b->nuser;
    /* Commands may be executed again (a batch reused after a failed exec): start clean. */
    for (size_t i = 0; i < n; i++) {
        sl__cmd *cmd = &b->cmds[i];
        cmd->flags = SL__F_RESEND;
        cmd->redirects = 0;
        cmd->src = SL__SRC_NONE;
        cmd->rec_count = 0;
        cmd->merge = SL__MERGE_NONE;
        if (cmd->route != SL_ROUTE_NODE) cmd->node = c->topo.default_node;
    }
    if (c->mode != SL_MODE_CLUSTER) return 0;
    for (uint32_t i = 0; i < n; i++) {
        sl__cmd *cmd = &b->cmds[i];
        int rc = 0;
        switch (cmd->route) {
        case SL_ROUTE_NODE:
            cmd->flags |= SL__F_RESEND;
            break;
        case SL_ROUTE_SLOT:
            rc = route_to_slot(b, i, (int)cmd->aux);
            break;
        case SL_ROUTE_RANDOM:
            cmd->node = sl__topo_random_primary(c);
            cmd->flags |= SL__F_RESEND;
            break;
        case SL_ROUTE_ALL_PRIMARIES:
            rc = sl__split_fanout(b, i);
            break;
        default: {
            const sl__cmdinfo *info;
            int multi;
            int slot = cmd_slot(b, i, &info, &multi);
            if (slot == -2) return SL_ENOMEM;
            if (info && info->name[0] == 'M' && strcmp(info->name, "MULTI") == 0) {
                rc = route_multi_group(b, i);
                if (rc < 0) return rc;
                i += (uint32_t)rc;
                rc = 0;
            } else if (multi) {
                rc = sl__split_plan(b, i, info);
                if (rc == 1) rc = route_to_slot(b, i, slot); /* not splittable: the server decides */
            } else if (slot >= 0) {
                rc = route_to_slot(b, i, slot);
            } else {
                b->cmds[i].node = c->topo.default_node;
                b->cmds[i].flags |= SL__F_RESEND;
            }
        }
        }
        if (rc) return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ per-node state */

static int ensure_bn(sl_batch *b, size_t n)
{
    if (n <= b->nbn) return 0;
    void *p = b->bn;
    size_t cap = b->nbn;
    /* bn is indexed by node; grow to the node count and clear the new entries. */
    size_t want = n;
    p = sl__realloc(&b->client->alloc, b->bn, want * sizeof(sl__bnode));
    if (!p) return SL_ENOMEM;
    b->bn = p;
    memset(b->bn + cap, 0, (want - cap) * sizeof(sl__bnode));
    b->nbn = want;
    return 0;
}

static int pend_push(sl_batch *b, sl__bnode *bn, uint32_t v)
{
    if (bn->plen == bn->pcap) {
        void *p = bn->pending;
        if (sl__grow(&b->client->alloc, &p, &bn->pcap, bn->plen + 1, sizeof(uint32_t))) return SL_ENOMEM;
        bn->pending = p;
    }
    bn->pending[bn->plen++] = v;
    return 0;
}

/* Fails every command still waiting on node k with an error record of the given kind. */
static int fail_node(sl_batch *b, size_t k, sl_err_kind kind, const char *msg)
{
    sl__bnode *bn = &b->bn[k];
    for (size_t i = bn->phead; i < bn->plen; i++) {
        uint32_t ci = bn->pending[i];
        if (ci == SL__PEND_SKIP) continue;
        if (sl__batch_add_error(b, ci, kind, "%s", msg)) return SL_ENOMEM;
    }
    bn->phead = bn->plen = 0;
    bn->wbuf.len = bn->wpos = 0;
    bn->wext = NULL;
    bn->wext_len = 0;
    bn->active = 0;
    bn->failed = 1;
    return 0;
}

/* Opens node k's connection if needed and queues its handshake. 0, or the node failed
 * (its commands will get error records when they are queued). */
static int begin_node(sl_batch *b, size_t k, uint64_t now)
{
    sl_client *c = b->client;
    sl__bnode *bn = &b->bn[k];
    sl__node *n = c->topo.nodes[k];
    if (bn->active || bn->failed) return 0;
    bn->active = 1;
    bn->wbuf.len = bn->wpos = 0;
    bn->wext = NULL;
    bn->phead = bn->plen = 0;
    if (n->state != SL__DISCONNECTED) return 0;
    if (!sl__node_may_connect(c, n, now)) {
        bn->active = 0;
        bn->failed = 1;
        sl__set_err(c, "node %s is unavailable (reconnecting in %llu ms)", n->addr,
                    (unsigned long long)(n->retry_at_ms - now));
        return 0;
    }
    if (sl__node_connect_start(c, n) != 0) {
        bn->active = 0;
        bn->failed = 1;
        return 0;
    }
    int hs = sl__node_handshake(c, n, &bn->wbuf);
    if (hs < 0) return hs;
    n->handshake_replies = hs;
    for (int i = 0; i < hs; i++)
        if (pend_push(b, bn, SL__PEND_SKIP)) return SL_ENOMEM;
    return 0;
}

/* ------------------------------------------------------------ redirects */

static int parse_uint(const uint8_t *p, size_t len, size_t *pos, long *out)
{
    long v = 0;
    size_t i = *pos, start = i;
    while (i < len && p[i] >= '0' && p[i] <= '9' && v < 100000000) v = v * 10 + (p[i++] - '0');
    if (i == start) return -1;
    *pos = i;
    *out = v;
    return 0;
}

/* Looks at command ci's error reply: a redirect schedules a resend. */
static void check_redirect(sl_batch *b, uint32_t ci, const sl_reply *r, int *backoff)
{
    sl_client *c = b->client;
    sl__cmd *cmd = &b->cmds[ci];
    const uint8_t *m = b->data.ptr + r->offset;
    size_t len = r->len;
    int moved = len > 6 && memcmp(m, "MOVED ", 6) == 0;
    int ask = !moved && len > 4 && memcmp(m, "ASK ", 4) == 0;
    int again = !moved && !ask &&
                ((len >= 8 && memcmp(m, "TRYAGAIN", 8) == 0) || (len >= 11 && memcmp(m, "CLUSTERDOWN", 11) == 0));
    if (!(moved || ask || again)) return;
    if (cmd->redirects >= (uint8_t)c->opts.max_redirects) {
        ((sl_reply *)r)->flags = SL_ERR_REDIRECTS;
        return;
    }
    uint16_t node = cmd->node;
    if (moved || ask) {
        size_t pos = moved ? 6 : 4;
        long slot;
        if (parse_uint(m, len, &pos, &slot) || pos >= len || m[pos] != ' ' || slot >= SL_SLOTS) return;
        pos++;
        if (sl__topo_node_addr(c, (const char *)m + pos, len - pos, &node) != 0) {
            /* "MOVED 3999 :6380": an empty host means the node that answered. */
            char addr[SL__HOST_MAX + 8];
            int n = snprintf(addr, sizeof addr, "%s%.*s", c->topo.nodes[cmd->node]->host, (int)(len - pos),
                             (const char *)m + pos);
            if (n <= 0 || (size_t)n >= sizeof addr || sl__topo_node_addr(c, addr, (size_t)n, &node) != 0) return;
        }
        if (moved) {
            c->topo.slot_node[slot] = node;
            c->topo.nodes[node]->primary = 1;
            c->topo.refresh_wanted = 1;
            c->stats.moved++;
            cmd->flags &= (uint16_t)~SL__F_ASKING;
        } else {
            c->stats.ask++;
            cmd->flags |= SL__F_ASKING;
        }
    } else {
        c->stats.tryagain++;
        *backoff = 1;
        if (len >= 11 && memcmp(m, "CLUSTERDOWN", 11) == 0) c->topo.refresh_wanted = 1;
    }
    cmd->node = node;
    cmd->redirects++;
    cmd->flags |= SL__F_RESEND;
    b->resends++;
    cmd->flags &= (uint16_t)~SL__F_DONE;
    cmd->src = SL__SRC_NONE;
}

/* ------------------------------------------------------------ I/O */

static int write_node(sl_batch *b, size_t k)
{
    sl_client *c = b->client;
    sl__bnode *bn = &b->bn[k];
    sl__node *n = c->topo.nodes[k];
    for (;;) {
        const uint8_t *p;
        size_t left;
        if (bn->wpos < bn->wbuf.len) {
            p = bn->wbuf.ptr + bn->wpos;
            left = bn->wbuf.len - bn->wpos;
        } else if (bn->wext && bn->wpos - bn->wbuf.len < bn->wext_len) {
            size_t done = bn->wpos - bn->wbuf.len;
            p = bn->wext + done;
            left = bn->wext_len - done;
        } else {
            return 0;
        }
        ssize_t w = send(n->fd, p, left, MSG_NOSIGNAL);
        if (w > 0) {
            bn->wpos += (size_t)w;
            c->stats.bytes_written += (uint64_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (w < 0 && errno == EINTR) continue;
        sl__set_err(c, "write to %s: %s", n->addr, w < 0 ? strerror(errno) : "closed");
        return SL_EIO;
    }
}

static int node_unwritten(const sl__bnode *bn)
{
    return bn->wpos < bn->wbuf.len + (bn->wext ? bn->wext_len : 0);
}

/* Parses every complete reply in node k's read buffer and hands it to its command. */
static int parse_node(sl_batch *b, size_t k, int *backoff)
{
    sl_client *c = b->client;
    sl__bnode *bn = &b->bn[k];
    sl__node *n = c->topo.nodes[k];
    int cluster = c->mode == SL_MODE_CLUSTER;
    while (n->rpos < n->rbuf.len) {
        size_t used = 0, start = bn->recs.len;
        int rc = sl__resp_parse(&n->parser, &c->alloc, n->rbuf.ptr + n->rpos, n->rbuf.len - n->rpos, &used,
                                &bn->recs, &b->data);
        n->rpos += used;
        if (rc == SL__RESP_MORE) break;
        if (rc == SL__RESP_BAD) {
            sl__set_err(c, "protocol error from %s: %s", n->addr, n->parser.errmsg);
            return SL_EPROTO;
        }
        if (rc < 0) return rc;
        start = n->parser.top_record;
        if (rc == SL__RESP_PUSH || bn->phead == bn->plen) {
            /* An out-of-band push (or a reply nobody asked for): drop it. */
            bn->recs.len = start;
            continue;
        }
        uint32_t ci = bn->pending[bn->phead++];
        if (ci == SL__PEND_SKIP) {
            const sl_reply *r = &bn->recs.ptr[start];
            if (n->handshake_replies > 0) {
                n->handshake_replies--;
                if (r->type == SL_REPLY_ERROR) {
                    sl__set_err(c, "connection setup on %s failed: %.*s", n->addr, (int)r->len,
                                (const char *)b->data.ptr + r->offset);
                    bn->recs.len = start;
                    return SL_ESERVER;
                }
            }
            bn->recs.len = start;
            continue;
        }
        sl__cmd *cmd = &b->cmds[ci];
        cmd->src = (uint32_t)k;
        cmd->rec_start = (uint32_t)start;
        cmd->rec_count = (uint32_t)(bn->recs.len - start);
        cmd->flags |= SL__F_DONE;
        const sl_reply *r = &bn->recs.ptr[start];
        if (cluster && r->type == SL_REPLY_ERROR && !(cmd->flags & SL__F_MULTI))
            check_redirect(b, ci, r, backoff);
    }
    if (n->rpos == n->rbuf.len) n->rpos = n->rbuf.len = 0;
    return 0;
}

static int read_node(sl_batch *b, size_t k)
{
    sl_client *c = b->client;
    sl__node *n = c->topo.nodes[k];
    for (int loops = 0; loops < 64; loops++) {
        if (n->rpos > 0 && n->rbuf.cap - n->rbuf.len < 4096) {
            memmove(n->rbuf.ptr, n->rbuf.ptr + n->rpos, n->rbuf.len - n->rpos);
            n->rbuf.len -= n->rpos;
            n->rpos = 0;
        }
        if (sl__bytes_reserve(&c->alloc, &n->rbuf, n->rbuf.cap < 16384 ? 16384 : 4096)) return SL_ENOMEM;
        size_t room = n->rbuf.cap - n->rbuf.len;
        ssize_t r = recv(n->fd, n->rbuf.ptr + n->rbuf.len, room, 0);
        if (r > 0) {
            n->rbuf.len += (size_t)r;
            c->stats.bytes_read += (uint64_t)r;
            if ((size_t)r < room) return 0; /* drained for now */
            continue;
        }
        if (r == 0) {
            sl__set_err(c, "connection to %s closed by the server", n->addr);
            return SL_EIO;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        if (errno == EINTR) continue;
        sl__set_err(c, "read from %s: %s", n->addr, strerror(errno));
        return SL_EIO;
    }
    return 0;
}

static int node_busy(const sl__bnode *bn)
{
    return bn->active && (bn->phead < bn->plen || node_unwritten(bn));
}

/* Node k failed: its waiting commands get error records and its connection is dropped
 * (a half-read reply stream cannot be resumed). */
static int drop_node(sl_batch *b, size_t k, sl_err_kind kind, int rc)
{
    sl_client *c = b->client;
    int err = fail_node(b, k, kind, c->errmsg);
    sl__node_close(c, c->topo.nodes[k], kind == SL_ERR_IO || kind == SL_ERR_PROTOCOL || rc == SL_ESERVER);
    return err;
}

static void drain_cancel(sl_client *c)
{
    char buf[64];
    while (read(c->cancel_pipe[0], buf, sizeof buf) > 0) {
    }
}

/* Runs the I/O of one round until every active node has answered everything, the
 * deadline passes or the execution is cancelled. */
static int run_io(sl_batch *b, uint64_t deadline, int *backoff)
{
    sl_client *c = b->client;
    struct pollfd stack_pfds[17];
    uint16_t stack_map[17];
    struct pollfd *pfds = stack_pfds;
    uint16_t *map = stack_map;
    size_t nn = c->topo.nnodes;
    int status = 0;
    if (nn + 1 > 17) {
        pfds = sl__malloc(&c->alloc, (nn + 1) * (sizeof *pfds + sizeof *map));
        if (!pfds) return SL_ENOMEM;
        map = (uint16_t *)(pfds + nn + 1);
    }
    /* Write every node before reading any. */
    for (size_t k = 0; k < b->nbn; k++) {
        sl__bnode *bn = &b->bn[k];
        if (bn->active && c->topo.nodes[k]->state == SL__CONNECTED) {
            int rc = write_node(b, k);
            if (rc && (status = drop_node(b, k, SL_ERR_IO, rc))) goto out;
        }
    }
    for (;;) {
        size_t np = 0;
        uint64_t now = sl__now_ms(), wake = deadline;
        for (size_t k = 0; k < b->nbn; k++) {
            sl__bnode *bn = &b->bn[k];
            if (!node_busy(bn)) continue;
            sl__node *n = c->topo.nodes[k];
            if (n->state == SL__CONNECTING) {
                if (now >= n->connect_deadline_ms) {
                    sl__set_err(c, "connect to %s timed out", n->addr);
                    if ((status = drop_node(b, k, SL_ERR_IO, SL_EIO))) goto out;
                    continue;
                }
                if (n->connect_deadline_ms < wake) wake = n->connect_deadline_ms;
            }
            pfds[np].fd = n->fd;
            pfds[np].events = (short)(POLLIN | ((n->state == SL__CONNECTING || node_unwritten(bn)) ? POLLOUT : 0));
            pfds[np].revents = 0;
            map[np++] = (uint16_t)k;
        }
        if (np == 0) break;
        pfds[np].fd = c->cancel_pipe[0];
        pfds[np].events = POLLIN;
        pfds[np].revents = 0;
        if (atomic_load(&c->cancel)) goto cancelled;
        int timeout = -1;
        if (wake != UINT64_MAX) timeout = wake > now ? (int)(wake - now < 0x7fffffff ? wake - now : 0x7fffffff) : 0;
        int pr = poll(pfds, (nfds_t)np + 1, timeout);
        if (pr < 0 && errno != EINTR) {
            sl__set_err(c, "poll: %s", strerror(errno));
            status = SL_EIO;
            goto out;
        }
        if (atomic_load(&c->cancel)) goto cancelled;
        if (pr == 0 && sl__now_ms() >= deadline) {
            sl__set_err(c, "the execution's deadline passed");
            for (size_t k = 0; k < b->nbn; k++)
                if (node_busy(&b->bn[k]) && (status = drop_node(b, k, SL_ERR_TIMEOUT, SL_ETIMEOUT))) goto out;
            status = SL_ETIMEOUT;
            goto out;
        }
        for (size_t i = 0; i < np && pr > 0; i++) {
            short re = pfds[i].revents;
            if (!re) continue;
            size_t k = map[i];
            sl__node *n = c->topo.nodes[k];
            int rc = 0;
            if (n->state == SL__CONNECTING) {
                if (!(re & (POLLOUT | POLLERR | POLLHUP))) continue;
                if ((rc = sl__node_connect_check(c, n)) != 0) {
                    if ((status = drop_node(b, k, SL_ERR_IO, rc))) goto out;
                    continue;
                }
                re |= POLLOUT;
            }
            if ((re & POLLOUT) && (rc = write_node(b, k)) != 0) {
                if ((status = drop_node(b, k, SL_ERR_IO, rc))) goto out;
                continue;
            }
            if (re & (POLLIN | POLLHUP | POLLERR)) {
                rc = read_node(b, k);
                int prc = parse_node(b, k, backoff); /* replies read before a close still count */
                if (prc == SL_ENOMEM) {
                    status = prc;
                    goto out;
                }
                if (prc) {
                    if ((status = drop_node(b, k, prc == SL_EPROTO ? SL_ERR_PROTOCOL : SL_ERR_SERVER, prc))) goto out;
                    continue;
                }
                if (rc == SL_ENOMEM) {
                    status = rc;
                    goto out;
                }
                if (rc && node_busy(&b->bn[k])) {
                    if ((status = drop_node(b, k, SL_ERR_IO, rc))) goto out;
                } else if (rc && n->fd >= 0) {
                    sl__node_close(c, n, 1); /* every reply arrived before the close */
                }
            }
        }
    }
    goto out;
cancelled:
    sl__set_err(c, "the execution was cancelled");
    for (size_t k = 0; k < b->nbn; k++)
        if (node_busy(&b->bn[k]) && (status = drop_node(b, k, SL_ERR_CANCELLED, SL_ECANCELLED))) goto out;
    status = SL_ECANCELLED;
out:
    if (pfds != stack_pfds) sl__free(&c->alloc, pfds);
    return status;
}

/* ------------------------------------------------------------ one execution */

static int queue_round(sl_batch *b, int first_round, uint64_t now)
{
    sl_client *c = b->client;
    if (ensure_bn(b, c->topo.nnodes)) return SL_ENOMEM;
    for (size_t k = 0; k < b->nbn; k++) {
        b->bn[k].active = 0;
        b->bn[k].failed = 0;
        b->bn[k].phead = b->bn[k].plen = 0;
        b->bn[k].wbuf.len = b->bn[k].wpos = 0;
        b->bn[k].wext = NULL;
        b->bn[k].wext_len = 0;
    }
    /* Zero copy: when every caller command goes, in order, to one node, write the caller's
     * bytes as they are. */
    if (first_round && b->ncmds == b->nuser && b->nuser > 0) {
        uint16_t node = b->cmds[0].node;
        size_t i;
        for (i = 0; i < b->nuser; i++) {
            const sl__cmd *cmd = &b->cmds[i];
            if (cmd->node != node || !(cmd->flags & SL__F_RESEND) || (cmd->flags & (SL__F_ASKING | SL__F_SYNTH)))
                break;
        }
        if (i == b->nuser && node != SL__NO_NODE) {
            int rc = begin_node(b, node, now);
            if (rc) return rc;
            sl__bnode *bn = &b->bn[node];
            const sl__cmd *last = &b->cmds[b->nuser - 1];
            for (i = 0; i < b->nuser; i++) {
                b->cmds[i].flags &= (uint16_t)~SL__F_RESEND;
                if (bn->failed) {
                    if (sl__batch_add_error(b, (uint32_t)i, SL_ERR_IO, "%s", c->errmsg)) return SL_ENOMEM;
                } else if (pend_push(b, bn, (uint32_t)i)) {
                    return SL_ENOMEM;
                }
            }
            if (!bn->failed) {
                const uint8_t *base = sl__cmd_bytes(b, &b->cmds[0]);
                size_t total = last->off + last->len - b->cmds[0].off;
                if (bn->wbuf.len == 0) {
                    bn->wext = base;
                    bn->wext_len = total;
                } else if (sl__bytes_append(&c->alloc, &bn->wbuf, base, total)) {
                    return SL_ENOMEM;
                }
            }
            return 0;
        }
    }
    for (uint32_t i = 0; i < b->ncmds; i++) {
        sl__cmd *cmd = &b->cmds[i];
        if (!(cmd->flags & SL__F_RESEND)) continue;
        cmd->flags &= (uint16_t)~SL__F_RESEND;
        uint16_t k = cmd->node;
        if (k == SL__NO_NODE || k >= c->topo.nnodes) {
            if (sl__batch_add_error(b, i, SL_ERR_CLUSTER, "no node for the command")) return SL_ENOMEM;
            continue;
        }
        if (ensure_bn(b, c->topo.nnodes)) return SL_ENOMEM;
        int rc = begin_node(b, k, now);
        if (rc) return rc;
        sl__bnode *bn = &b->bn[k];
        if (bn->failed) {
            if (sl__batch_add_error(b, i, SL_ERR_IO, "%s", c->errmsg)) return SL_ENOMEM;
            continue;
        }
        if (cmd->flags & SL__F_ASKING) {
            static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
            if (sl__bytes_append(&c->alloc, &bn->wbuf, asking, sizeof asking - 1)) return SL_ENOMEM;
            if (pend_push(b, bn, SL__PEND_SKIP)) return SL_ENOMEM;
            cmd->flags &= (uint16_t)~SL__F_ASKING;
        }
        if (sl__bytes_append(&c->alloc, &bn->wbuf, sl__cmd_bytes(b, cmd), cmd->len)) return SL_ENOMEM;
        if (pend_push(b, bn, i)) return SL_ENOMEM;
    }
    return 0;
}

/* Puts the records in the caller's order. Returns 1 when some command had no reply
 * (which the engine never leaves; it gets an error record here), else 0, or SL_ENOMEM. */
static int assemble(sl_batch *b)
{
    size_t n = b->nuser;
    int missing = 0;
    b->sizes.errors = 0;
    /* Fast path: one node answered every caller command, in order, with nothing else. */
    uint32_t src = n ? b->cmds[0].src : SL__SRC_NONE;
    int direct = src != SL__SRC_NONE && src != SL__SRC_X;
    if (direct) {
        const sl_reply *recs = b->bn[src].recs.ptr;
        uint32_t expect = 0;
        uint64_t errors = 0;
        for (size_t i = 0; i < n; i++) {
            const sl__cmd *cmd = &b->cmds[i];
            if (cmd->src != src || cmd->rec_start != expect) {
                direct = 0;
                break;
            }
            errors += recs[expect].type == SL_REPLY_ERROR;
            expect += cmd->rec_count;
        }
        if (direct && expect == b->bn[src].recs.len) {
            b->result = recs;
            b->nresult = expect;
            b->sizes.errors = errors;
        } else {
            direct = 0;
        }
    }
    if (!direct) {
        b->out.len = 0;
        for (size_t i = 0; i < n; i++) {
            const sl__cmd *cmd = &b->cmds[i];
            if (cmd->src == SL__SRC_NONE) {
                /* Cannot happen: every path leaves a record. Keep the promise anyway. */
                if (sl__batch_add_error(b, (uint32_t)i, SL_ERR_PROTOCOL, "no reply was recorded")) return SL_ENOMEM;
                cmd = &b->cmds[i];
                missing = 1;
            }
            if (sl__records_reserve(&b->client->alloc, &b->out, cmd->rec_count)) return SL_ENOMEM;
            const sl_reply *r = cmd_records(b, cmd);
            b->sizes.errors += r[0].type == SL_REPLY_ERROR;
            memcpy(b->out.ptr + b->out.len, r, cmd->rec_count * sizeof(sl_reply));
            b->out.len += cmd->rec_count;
        }
        b->result = b->out.ptr;
        b->nresult = b->out.len;
    }
    b->sizes.records = b->nresult;
    b->sizes.data = b->data.len;
    b->sizes.commands = n;
    return missing;
}

static void sleep_ms(sl_client *c, uint64_t ms)
{
    struct pollfd p = {c->cancel_pipe[0], POLLIN, 0};
    (void)poll(&p, 1, (int)ms);
}

int sl__batch_exec(sl_batch *b, int timeout_ms)
{
    sl_client *c = b->client;
    int status = 0;
    if (b != c->disco && c->mode == SL_MODE_CLUSTER) sl__topo_maybe_refresh(c);
    b->data.len = 0;
    b->xrecs.len = 0;
    b->out.len = 0;
    b->result = NULL;
    b->nresult = 0;
    b->synth.len = 0;
    b->nsplit = 0;
    b->ncmds = b->nuser;
    for (size_t k = 0; k < b->nbn; k++) b->bn[k].recs.len = 0;
    b->parents = 0;
    uint64_t start = sl__now_ms();
    int t = timeout_ms == 0 ? c->opts.command_timeout_ms : timeout_ms;
    uint64_t deadline = t > 0 ? start + (uint64_t)t : UINT64_MAX;

    int rc = route_all(b);
    if (rc) {
        status = rc;
        goto finish;
    }
    for (int round = 0;; round++) {
        uint64_t now = sl__now_ms();
        if ((rc = queue_round(b, round == 0, now)) != 0) {
            status = rc;
            goto finish;
        }
        int backoff = 0;
        b->resends = 0;
        rc = run_io(b, deadline, &backoff);
        if (rc) {
            status = rc;
            if (rc == SL_ENOMEM) goto finish;
        }
        if (b->resends == 0) break;
        if (status) {
            /* Out of time (or cancelled): the commands that wanted another round keep the
             * redirect they got, marked as not followed. */
            for (uint32_t i = 0; i < b->ncmds; i++) {
                if (b->cmds[i].flags & SL__F_RESEND) {
                    if (sl__batch_add_error(b, i, status == SL_ECANCELLED ? SL_ERR_CANCELLED : SL_ERR_TIMEOUT,
                                            "%s", c->errmsg))
                        return SL_ENOMEM;
                }
            }
            break;
        }
        if (backoff) {
            uint64_t wait = (uint64_t)10 << (round < 4 ? round : 4);
            uint64_t n2 = sl__now_ms();
            if (deadline != UINT64_MAX && n2 + wait > deadline) wait = deadline > n2 ? deadline - n2 : 0;
            sleep_ms(c, wait);
            if (atomic_load(&c->cancel)) {
                sl__set_err(c, "the execution was cancelled");
                for (uint32_t i = 0; i < b->ncmds; i++)
                    if ((b->cmds[i].flags & SL__F_RESEND) &&
                        sl__batch_add_error(b, i, SL_ERR_CANCELLED, "the execution was cancelled"))
                        return SL_ENOMEM;
                status = SL_ECANCELLED;
                break;
            }
        }
        /* Routing may have changed the node count (MOVED to a new node). */
        if (ensure_bn(b, c->topo.nnodes)) {
            status = SL_ENOMEM;
            goto finish;
        }
    }
finish:
    /* A cancel is consumed by the caller's execution, not by a refresh running inside it. */
    if (b != c->disco && (status == SL_ECANCELLED || atomic_load(&c->cancel))) {
        atomic_store(&c->cancel, 0);
        drain_cancel(c);
    }
    /* Parents of split and fan-out commands. */
    for (uint32_t i = 0; i < b->nuser && b->parents; i++) {
        if ((b->cmds[i].flags & (SL__F_SPLIT | SL__F_FANOUT)) && !(b->cmds[i].flags & SL__F_NOSEND)) {
            int mrc = sl__split_merge(b, i);
            if (mrc) return mrc;
        }
    }
    rc = assemble(b);
    if (rc < 0) return rc;
    if (rc > 0 && !status) status = SL_EIO;
    c->stats.commands += b->nuser;
    b->executed = 1;
    if (status == 0 && b->sizes.errors == b->nuser && b->nuser > 0) {
        /* Every command failed without a server reply: report the execution as failed. */
        int all_io = 1;
        size_t ri = 0;
        for (size_t i = 0; i < b->nuser; i++) {
            if (b->result[ri].flags != SL_ERR_IO) all_io = 0;
            ri += b->cmds[i].rec_count;
        }
        if (all_io) status = SL_EIO;
    }
    return status;
}

int sl_batch_exec(sl_batch *b, int timeout_ms, sl_sizes *sizes)
{
    if (!b) return SL_EINVAL;
    if (timeout_ms < -1) {
        sl__set_err(b->client, "timeout_ms must be -1, 0 or positive");
        return SL_EINVAL;
    }
    b->client->errmsg[0] = '\0';
    int rc = sl__batch_exec(b, timeout_ms);
    if (sizes) *sizes = b->sizes;
    b->nuser = b->ncmds = 0;
    b->nargs = 0;
    b->input.len = 0;
    b->ext = NULL;
    return rc;
}

const sl_reply *sl_batch_replies(const sl_batch *b, size_t *nrecords, const uint8_t **data, size_t *data_len)
{
    if (nrecords) *nrecords = b ? b->nresult : 0;
    if (data) *data = b ? b->data.ptr : NULL;
    if (data_len) *data_len = b ? b->data.len : 0;
    return b ? b->result : NULL;
}

int sl_batch_copy_out(const sl_batch *b, void *records, size_t records_cap, void *data, size_t data_cap,
                      sl_sizes *sizes)
{
    if (!b || !sizes) return SL_EINVAL;
    *sizes = b->sizes;
    size_t rb = b->nresult * sizeof(sl_reply);
    if (rb > records_cap || b->data.len > data_cap) return SL_ETOOSMALL;
    if (rb) memcpy(records, b->result, rb);
    if (b->data.len) memcpy(data, b->data.ptr, b->data.len);
    return 0;
}

int sl_batch_run(sl_batch *b, const void *cmds, size_t len, size_t count, int timeout_ms, void *records,
                 size_t records_cap, void *data, size_t data_cap, sl_sizes *sizes)
{
    if (!b) return SL_EINVAL;
    sl_batch_reset(b);
    if ((!cmds && len) || count == 0) {
        sl__set_err(b->client, "sl_batch_run: no commands");
        return SL_EINVAL;
    }
    if (timeout_ms < -1) {
        sl__set_err(b->client, "timeout_ms must be -1, 0 or positive");
        return SL_EINVAL;
    }
    b->client->errmsg[0] = '\0';
    /* The caller's bytes are used in place for the duration of the call. */
    b->ext = cmds;
    b->ext_len = len;
    int rc = queue_scanned(b, NULL, cmds, len, count, 0);
    if (rc) {
        b->ext = NULL;
        return rc;
    }
    rc = sl__batch_exec(b, timeout_ms);
    b->nuser = b->ncmds = 0;
    b->nargs = 0;
    b->ext = NULL;
    if (sizes) *sizes = b->sizes;
    if (rc == SL_ENOMEM) return rc;
    if (records || data || records_cap || data_cap) {
        sl_sizes tmp;
        int crc = sl_batch_copy_out(b, records, records_cap, data, data_cap, sizes ? sizes : &tmp);
        if (crc) return crc;
    }
    return rc;
}
