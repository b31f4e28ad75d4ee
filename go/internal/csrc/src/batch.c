/* batch: the pipeline engine. Queued commands are routed by their key's slot into one
 * buffer per node; every node is written before any is read; replies are read from
 * whichever socket is ready and parsed incrementally into per-node record vectors; MOVED,
 * ASK, TRYAGAIN and CLUSTERDOWN resend only the affected commands, again written per node
 * before reading; at the end the records are put in the caller's order (or, when one
 * node answered everything in order, handed out as they are). */
#include "batch.h"
#include "client.h"
#include "conn.h"
#include "engine.h"
#include "failover.h"
#include "split.h"
#include "topology.h"

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
    sl__bytes_free(a, &b->script_cmd);
    sl__bytes_free(a, &b->data);
    sl__records_free(a, &b->xrecs);
    sl__records_free(a, &b->out);
    for (size_t i = 0; i < b->nbn; i++) {
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
    /* Version and size first: nothing past them is read from a struct they do not vouch for. */
    if (route->version == 0 || route->version > SL_ROUTE_VERSION ||
        route->size < offsetof(sl_route, node) + sizeof route->node) {
        sl__set_err(b->client, "route version %u size %u not supported (this library: version %u, size %zu);"
                    " initialise it with SL_ROUTE_INIT", route->version, route->size, SL_ROUTE_VERSION, sizeof(sl_route));
        return SL_EINVAL;
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
        /* A plain client routes nothing: it needs the framing checked, not argument views. */
        int views = c->mode == SL_MODE_CLUSTER;
        int rc = sl__resp_scan_request(&c->alloc, buf + pos, len - pos, &used, views ? &b->args : NULL,
                                       &b->nargs, &b->args_cap, &argc, why);
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

int sl__name_is(const uint8_t *p, size_t len, const char *upper)
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
int sl__batch_cmd_slot(sl_batch *b, uint32_t ci, const sl__cmdinfo **infop, int *multi)
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
    /* A read-only command may go to a replica (read_from). */
    if (b->cmds[ci].flags & SL__F_READ) node = sl__failover_read_node(c, node);
    b->cmds[ci].node = node;
    b->cmds[ci].slot = slot;
    b->cmds[ci].flags |= SL__F_RESEND;
    return 0;
}

/* Keyless commands whose answer from one node would be wrong in a cluster go to every
 * primary by default and are merged (slotlane.h, "All-primaries replies"); the command
 * table marks them (core/scripts/gen_commands.py, DEFAULT_FANOUT). */
static int fans_out(const sl__cmdinfo *info)
{
    return (info->flags & SL__CMD_FANOUT) != 0;
}

/* Commands may be executed again (a batch reused after a failed exec): start clean. */
static inline void reset_cmd(const sl_client *c, sl__cmd *cmd)
{
    cmd->flags = SL__F_RESEND;
    cmd->redirects = 0;
    cmd->src = SL__SRC_NONE;
    cmd->rec_count = 0;
    cmd->merge = SL__MERGE_NONE;
    if (cmd->route != SL_ROUTE_NODE) cmd->node = c->topo.default_node;
}

static int route_multi_group(sl_batch *b, uint32_t first)
{
    /* MULTI ... EXEC/DISCARD: every member must be in one slot; the group goes to that
     * slot's node as it is, in order. */
    uint32_t last = (uint32_t)b->nuser - 1;
    int slot = -1, cross = 0;
    for (uint32_t i = first + 1; i < b->nuser; i++) {
        sl__cmd *cmd = &b->cmds[i];
        reset_cmd(b->client, cmd);
        const uint8_t *bytes = sl__cmd_bytes(b, cmd);
        const sl__arg *name = &b->args[cmd->arg0];
        if (sl__name_is(bytes + name->off, name->len, "EXEC") || sl__name_is(bytes + name->off, name->len, "DISCARD")) {
            last = i;
            break;
        }
        const sl__cmdinfo *info;
        int multi;
        int s = sl__batch_cmd_slot(b, i, &info, &multi);
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
    if (c->mode != SL_MODE_CLUSTER) {
        for (size_t i = 0; i < n; i++) reset_cmd(c, &b->cmds[i]);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        sl__cmd *cmd = &b->cmds[i];
        reset_cmd(c, cmd);
        int rc = 0;
        if (cmd->route == SL_ROUTE_KEY && b->last_single_arity && cmd->argc >= 2) {
            /* Fast path: the same single-key command as the last one (GET after GET...):
             * the key is argument 1; no lookup, no key-spec walk. */
            const uint8_t *bytes = sl__cmd_bytes(b, cmd);
            const sl__arg *args = b->args + cmd->arg0;
            int16_t ar = b->last_single_arity;
            if (args[0].len == b->last_name_len &&
                (ar > 0 ? cmd->argc == (uint32_t)ar : cmd->argc >= (uint32_t)-ar)) {
                const uint8_t *nm = bytes + args[0].off;
                uint32_t k = 0;
                while (k < args[0].len && nm[k] == b->last_name[k]) k++;
                if (k == args[0].len) {
                    int slot = (int)sl__key_slot(bytes + args[1].off, args[1].len);
                    uint16_t node = c->topo.slot_node[slot];
                    if (node != SL__NO_NODE) {
                        if (b->last_info->flags & SL__CMD_READONLY) {
                            cmd->flags |= SL__F_READ;
                            node = sl__failover_read_node(c, node);
                        }
                        cmd->node = node;
                        cmd->slot = slot;
                        continue;
                    }
                }
            }
        }
        switch (cmd->route) {
        case SL_ROUTE_NODE:
            break;
        case SL_ROUTE_SLOT:
            rc = route_to_slot(b, i, (int)cmd->aux);
            break;
        case SL_ROUTE_RANDOM:
            cmd->node = sl__topo_random_primary(c);
            break;
        case SL_ROUTE_ALL_PRIMARIES:
            rc = sl__split_fanout(b, i);
            break;
        default: {
            const sl__cmdinfo *info;
            int multi;
            int slot = sl__batch_cmd_slot(b, i, &info, &multi);
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
                if (info && (info->flags & SL__CMD_READONLY)) cmd->flags |= SL__F_READ;
                rc = route_to_slot(b, i, slot);
            } else if (info && fans_out(info)) {
                rc = sl__split_fanout(b, i); /* one node's answer would be wrong */
            }
        }
        }
        if (rc) return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ per-node state */

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

/* Starts an execution: resets the results, refreshes the map if asked, routes every
 * command (its first round is queued by the driver). */
void sl__batch_results_reset(sl_batch *b)
{
    b->data.len = 0;
    b->xrecs.len = 0;
    b->out.len = 0;
    b->result = NULL;
    b->nresult = 0;
    b->synth.len = 0;
    b->nsplit = 0;
    b->ncmds = b->nuser;
    for (size_t k = 0; k < b->nbn; k++) {
        b->bn[k].recs.len = 0;
        b->bn[k].phead = b->bn[k].plen = 0;
    }
    b->parents = 0;
    b->resends = 0;
    b->inflight = 0;
    b->round_over = 0;
    b->round = 0;
    b->backoff = 0;
    b->backoff_until = 0;
    b->reroute = 0;
    b->retry_until = 0;
}

int sl__batch_prepare(sl_batch *b, int timeout_ms)
{
    sl_client *c = b->client;
    if (b != c->disco && c->mode == SL_MODE_CLUSTER && !c->async_hooks) sl__topo_maybe_refresh(c);
    sl__batch_results_reset(b);
    int t = timeout_ms == 0 ? c->opts.command_timeout_ms : timeout_ms;
    b->deadline = t > 0 ? sl__now_ms() + (uint64_t)t : UINT64_MAX;
    return route_all(b);
}

/* Ends an execution: merges split and fan-out parents and puts the records in order.
 * Returns the execution's code given the driver's status. */
int sl__batch_finish(sl_batch *b, int status)
{
    sl_client *c = b->client;
    for (uint32_t i = 0; i < b->nuser && b->parents; i++) {
        if ((b->cmds[i].flags & (SL__F_SPLIT | SL__F_FANOUT)) && !(b->cmds[i].flags & SL__F_NOSEND)) {
            int mrc = sl__split_merge(b, i);
            if (mrc) return mrc;
        }
    }
    int rc = assemble(b);
    if (rc < 0) return rc;
    if (rc > 0 && !status) status = SL_EIO;
    c->stats.commands += b->nuser;
    b->executed = 1;
    if (status == 0 && b->sizes.errors == b->nuser && b->nuser > 0) {
        /* Every command failed without a server reply: report the execution as failed. */
        int all_io = 1;
        size_t ri = 0;
        for (size_t i = 0; i < b->nuser; i++) {
            if (b->result[ri].flags != SL_ERR_IO || b->result[ri].type != SL_REPLY_ERROR) all_io = 0;
            ri += b->cmds[i].rec_count;
        }
        if (all_io) status = SL_EIO;
    }
    return status;
}

/* The engine's part of an execution: route, rounds, records. */
int sl__batch_run_engine(sl_batch *b, int timeout_ms)
{
    int status = sl__batch_prepare(b, timeout_ms);
    if (status == 0) status = sl__engine_queue_round(b, 1);
    if (status == 0) status = sl__engine_run_sync(b);
    if (status == SL_ENOMEM) {
        /* Whatever could not run still needs its record. */
        (void)sl__engine_abandon(b, SL_ERR_IO, "out of memory");
    }
    return sl__batch_finish(b, status);
}

int sl__batch_exec(sl_batch *b, int timeout_ms)
{
    sl_client *c = b->client;
    int outer = b != c->disco; /* discovery runs inside the caller's execution */
    if (outer && sl__check_fork(c)) {
        memset(&b->sizes, 0, sizeof b->sizes);
        b->result = NULL;
        b->nresult = 0;
        return SL_EFORK;
    }
    if (outer) {
        atomic_store(&c->running, 1);
        /* A cancel aimed at an execution that already ended must not reach this one. */
        if (atomic_exchange(&c->cancel, 0)) sl__drain_cancel(c);
    }
    int status;
    /* Blocking commands run on leased connections, never on the shared pipeline (lease.c). */
    int lease = outer && !c->lease_parent ? sl__lease_classify(b) : 0;
    if (lease > 0)
        status = sl__lease_exec(b, timeout_ms);
    else if (lease < 0)
        status = sl__lease_refuse(b);
    else
        status = sl__batch_run_engine(b, timeout_ms);
    if (outer) {
        atomic_store(&c->running, 0);
        if (atomic_exchange(&c->cancel, 0)) sl__drain_cancel(c);
    }
    return status;
}

int sl_batch_exec(sl_batch *b, int timeout_ms, sl_sizes *sizes)
{
    if (sizes) memset(sizes, 0, sizeof *sizes);
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
    if (sizes) memset(sizes, 0, sizeof *sizes);
    if (!b) return SL_EINVAL;
    sl_batch_reset(b);
    /* Until this run executes, there are no results: a failed call leaves none behind. */
    b->result = NULL;
    b->nresult = 0;
    memset(&b->sizes, 0, sizeof b->sizes);
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
