/* split: multi-key commands across slots, and commands fanned out to every primary.
 *
 * MGET, MSET, DEL, EXISTS, UNLINK and TOUCH whose keys span slots become one part per
 * slot (keys keep their order inside a part); the parts are routed and resent like any
 * command, and merged when all have answered:
 *   MGET                      an array of the values in the caller's key order;
 *   DEL EXISTS UNLINK TOUCH   the sum of the parts' integers;
 *   MSET                      +OK when every part answered OK.
 * When a part fails, the command's reply is that part's error, its message followed by
 * " (<CMD> part for slot N)", with the part's error kind.
 *
 * A command routed to all primaries is sent once per primary and merged as the command
 * table's response policy says (Redis's tips; slotlane.h lists them: sums, the first reply
 * when all succeeded, AND/OR per element, KEYS concatenated, else an array of per-node
 * replies in node order). */
#include "batch.h"
#include "client.h"
#include "split.h"
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_is(const sl__cmdinfo *info, const char *n)
{
    return info && strcmp(info->name, n) == 0;
}

static int grow_splitmap(sl_batch *b, size_t need)
{
    void *p = b->splitmap;
    int rc = sl__grow(&b->client->alloc, &p, &b->split_cap, need, sizeof(sl__splitref));
    b->splitmap = p;
    return rc;
}

/* Appends "$len\r\n<bytes>\r\n" to synth. */
static int put_bulk(sl_batch *b, const uint8_t *p, size_t len)
{
    char hdr[32];
    hdr[0] = '$';
    size_t h = 1 + sl__fmt_i64(hdr + 1, (int64_t)len);
    hdr[h++] = '\r';
    hdr[h++] = '\n';
    const sl__alloc *a = &b->client->alloc;
    if (sl__bytes_reserve(a, &b->synth, h + len + 2)) return SL_ENOMEM;
    memcpy(b->synth.ptr + b->synth.len, hdr, h);
    memcpy(b->synth.ptr + b->synth.len + h, p, len);
    memcpy(b->synth.ptr + b->synth.len + h + len, "\r\n", 2);
    b->synth.len += h + len + 2;
    return 0;
}

static int put_header(sl_batch *b, int64_t argc)
{
    char hdr[32];
    hdr[0] = '*';
    size_t h = 1 + sl__fmt_i64(hdr + 1, argc);
    hdr[h++] = '\r';
    hdr[h++] = '\n';
    return sl__bytes_append(&b->client->alloc, &b->synth, hdr, h);
}

/* Sorting keys by (slot, position) with qsort needs a context; the pairs carry it. */
typedef struct keyslot {
    uint32_t slot;
    uint32_t pos;
} keyslot;

static int cmp_keyslot(const void *x, const void *y)
{
    const keyslot *a = x, *b = y;
    if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Returns 0 when command ci was split into parts, 1 when it cannot be split (route it by
 * its first key), or a negative code. */
int sl__split_plan(sl_batch *b, uint32_t ci, const sl__cmdinfo *info)
{
    uint16_t merge;
    size_t step = 1;
    if (name_is(info, "MGET")) merge = SL__MERGE_MGET;
    else if (name_is(info, "MSET")) {
        merge = SL__MERGE_MSET;
        step = 2;
    } else if (name_is(info, "DEL") || name_is(info, "EXISTS") || name_is(info, "UNLINK") || name_is(info, "TOUCH"))
        merge = SL__MERGE_SUM;
    else
        return 1;
    sl_client *c = b->client;
    sl__cmd *cmd = &b->cmds[ci];
    uint32_t argc = cmd->argc;
    if (argc < 2 || (argc - 1) % step != 0) return 1; /* let the server answer the arity error */
    size_t nkeys = (argc - 1) / step;
    /* The batch's scratch buffer holds the (slot, position) pairs: no allocation per command. */
    void *sp = b->scratch;
    if (sl__grow(&c->alloc, &sp, &b->scratch_cap, nkeys * 2, sizeof(uint32_t))) return SL_ENOMEM;
    b->scratch = sp;
    keyslot *ks = (keyslot *)b->scratch;
    const uint8_t *bytes = sl__cmd_bytes(b, cmd);
    const sl__arg *args = b->args + cmd->arg0;
    for (size_t k = 0; k < nkeys; k++) {
        const sl__arg *a = &args[1 + k * step];
        ks[k].slot = sl__key_slot(bytes + a->off, a->len);
        ks[k].pos = (uint32_t)k;
    }
    qsort(ks, nkeys, sizeof *ks, cmp_keyslot);
    if (grow_splitmap(b, b->nsplit + nkeys)) return SL_ENOMEM;
    uint32_t map_off = (uint32_t)b->nsplit;
    b->nsplit += nkeys;
    uint32_t first_child = (uint32_t)b->ncmds, nparts = 0;
    const sl__arg *name = &args[0];
    int rc = 0;
    for (size_t g = 0; g < nkeys && rc == 0;) {
        size_t e = g;
        while (e < nkeys && ks[e].slot == ks[g].slot) e++;
        /* One part: the command name, then this slot's keys (and values) in order. */
        uint32_t off = (uint32_t)b->synth.len;
        bytes = sl__cmd_bytes(b, &b->cmds[ci]); /* synth may have moved; input has not */
        if ((rc = put_header(b, (int64_t)(1 + (e - g) * step))) != 0) break;
        if ((rc = put_bulk(b, bytes + name->off, name->len)) != 0) break;
        for (size_t k = g; k < e && rc == 0; k++) {
            for (size_t s = 0; s < step && rc == 0; s++) {
                const sl__arg *a = &args[1 + ks[k].pos * step + s];
                rc = put_bulk(b, bytes + a->off, a->len);
            }
            b->splitmap[map_off + ks[k].pos].child = (uint32_t)b->ncmds;
            b->splitmap[map_off + ks[k].pos].elem = (uint32_t)(k - g);
        }
        if (rc) break;
        sl__cmd *part;
        if ((rc = sl__batch_push_cmd(b, &part)) != 0) break;
        part->off = off;
        part->len = (uint32_t)(b->synth.len - off);
        part->flags = SL__F_SYNTH | SL__F_CHILD;
        part->parent = (int32_t)ci;
        part->route = SL_ROUTE_KEY;
        uint16_t node = c->topo.slot_node[ks[g].slot];
        part->slot = (int32_t)ks[g].slot;
        if (node == SL__NO_NODE) {
            c->topo.refresh_wanted = 1;
            rc = sl__batch_add_error(b, (uint32_t)(b->ncmds - 1), SL_ERR_CLUSTER, "CLUSTERDOWN no node serves slot %u",
                                     ks[g].slot);
        } else {
            part->node = node;
            part->flags |= SL__F_RESEND;
        }
        nparts++;
        g = e;
    }
    if (rc) return rc;
    cmd = &b->cmds[ci];
    cmd->flags = (uint16_t)((cmd->flags | SL__F_SPLIT) & ~SL__F_RESEND);
    b->parents++;
    cmd->merge = merge;
    cmd->aux = first_child;
    cmd->nparts = nparts;
    cmd->rec_start = map_off; /* until the merge writes the reply */
    return 0;
}

/* The merge of a fan-out: the command table's response policy (Redis's tips). */
static uint16_t fanout_merge(const sl__cmdinfo *info)
{
    switch (info ? info->merge : SL__RESP_NONE) {
    case SL__RESP_SUM: return SL__MERGE_SUM;
    case SL__RESP_ALL_SUCCEEDED: return SL__MERGE_FIRST;
    case SL__RESP_AND: return SL__MERGE_AND;
    case SL__RESP_OR: return SL__MERGE_OR;
    case SL__RESP_CONCAT: return SL__MERGE_CONCAT;
    default: return SL__MERGE_ARRAY;
    }
}

int sl__split_fanout(sl_batch *b, uint32_t ci)
{
    sl_client *c = b->client;
    sl__cmd *cmd = &b->cmds[ci];
    const sl__cmdinfo *info = sl__cmd_lookup(sl__cmd_bytes(b, cmd), b->args + cmd->arg0, cmd->argc);
    uint16_t merge = fanout_merge(info);
    uint32_t first = (uint32_t)b->ncmds, nparts = 0;
    for (size_t k = 0; k < c->topo.nnodes; k++) {
        if (!c->topo.nodes[k]->primary) continue;
        sl__cmd *part;
        if (sl__batch_push_cmd(b, &part)) return SL_ENOMEM;
        cmd = &b->cmds[ci];
        part->off = cmd->off;
        part->len = cmd->len;
        part->arg0 = cmd->arg0;
        part->argc = cmd->argc;
        part->flags = SL__F_CHILD | SL__F_RESEND;
        part->parent = (int32_t)ci;
        part->route = SL_ROUTE_NODE;
        part->node = (uint16_t)k;
        nparts++;
    }
    cmd = &b->cmds[ci];
    if (nparts == 0)
        return sl__batch_add_error(b, ci, SL_ERR_CLUSTER, "CLUSTERDOWN no primary is known");
    cmd->flags = (uint16_t)((cmd->flags | SL__F_FANOUT) & ~SL__F_RESEND);
    b->parents++;
    cmd->merge = merge;
    cmd->aux = first;
    cmd->nparts = nparts;
    return 0;
}

static const sl_reply *part_records(const sl_batch *b, const sl__cmd *p)
{
    if (p->src == SL__SRC_X) return b->xrecs.ptr + p->rec_start;
    if (p->src == SL__SRC_NONE) return NULL;
    return b->bn[p->src].recs.ptr + p->rec_start;
}

static int push_rec(sl_batch *b, const sl_reply *r)
{
    if (sl__records_reserve(&b->client->alloc, &b->xrecs, 1)) return SL_ENOMEM;
    b->xrecs.ptr[b->xrecs.len++] = *r;
    return 0;
}

static int push_status(sl_batch *b, const char *s)
{
    sl_reply r;
    memset(&r, 0, sizeof r);
    r.type = SL_REPLY_STATUS;
    r.len = (uint32_t)strlen(s);
    r.offset = b->data.len;
    if (sl__bytes_append(&b->client->alloc, &b->data, s, r.len)) return SL_ENOMEM;
    return push_rec(b, &r);
}

static const char *merge_name(uint16_t merge)
{
    switch (merge) {
    case SL__MERGE_MGET: return "MGET";
    case SL__MERGE_MSET: return "MSET";
    default: return NULL;
    }
}

int sl__split_merge(sl_batch *b, uint32_t ci)
{
    sl__cmd *cmd = &b->cmds[ci];
    uint32_t first = cmd->aux, nparts = cmd->nparts, map_off = cmd->rec_start;
    uint16_t merge = cmd->merge;
    int fanout = (cmd->flags & SL__F_FANOUT) != 0;
    /* A failed part fails the command. */
    for (uint32_t p = 0; p < nparts; p++) {
        const sl__cmd *part = &b->cmds[first + p];
        const sl_reply *r = part_records(b, part);
        if (!r) return sl__batch_add_error(b, ci, SL_ERR_PROTOCOL, "a part of the command has no reply");
        if (r->type == SL_REPLY_ERROR && merge != SL__MERGE_ARRAY) {
            const char *nm = merge_name(merge);
            char what[SL__HOST_MAX + 32];
            if (fanout)
                snprintf(what, sizeof what, "on node %s", b->client->topo.nodes[part->node]->addr);
            else
                snprintf(what, sizeof what, "%s part for slot %d", nm ? nm : "command", (int)part->slot);
            return sl__batch_add_error(b, ci, (sl_err_kind)r->flags, "%.*s (%s)", (int)r->len,
                                       (const char *)b->data.ptr + r->offset, what);
        }
    }
    uint32_t start = (uint32_t)b->xrecs.len;
    sl_reply head;
    memset(&head, 0, sizeof head);
    switch (merge) {
    case SL__MERGE_SUM: {
        int64_t sum = 0;
        for (uint32_t p = 0; p < nparts; p++) {
            const sl_reply *r = part_records(b, &b->cmds[first + p]);
            if (r->type != SL_REPLY_INTEGER)
                return sl__batch_add_error(b, ci, SL_ERR_PROTOCOL, "a part answered a non-integer");
            sum += r->value.integer;
        }
        head.type = SL_REPLY_INTEGER;
        head.value.integer = sum;
        if (push_rec(b, &head)) return SL_ENOMEM;
        break;
    }
    case SL__MERGE_MSET:
        if (push_status(b, "OK")) return SL_ENOMEM;
        break;
    case SL__MERGE_FIRST: { /* every node succeeded: the first node's reply stands for all */
        const sl__cmd *part = &b->cmds[first];
        for (uint32_t i = 0; i < part->rec_count; i++) {
            sl_reply copy = part_records(b, part)[i];
            if (push_rec(b, &copy)) return SL_ENOMEM;
        }
        break;
    }
    case SL__MERGE_AND:
    case SL__MERGE_OR: {
        /* SCRIPT EXISTS: arrays of 0/1 of one length; element i is the AND (OR) of the
         * nodes' element i. */
        const sl_reply *r0 = part_records(b, &b->cmds[first]);
        for (uint32_t p = 0; p < nparts; p++) {
            const sl__cmd *part = &b->cmds[first + p];
            const sl_reply *r = part_records(b, part);
            if (r->type != SL_REPLY_ARRAY || r->len != r0->len || part->rec_count != 1 + r->len)
                return sl__batch_add_error(b, ci, SL_ERR_PROTOCOL, "the nodes answered arrays of different shapes");
            for (uint32_t i = 1; i <= r->len; i++)
                if (r[i].type != SL_REPLY_INTEGER && r[i].type != SL_REPLY_BOOL)
                    return sl__batch_add_error(b, ci, SL_ERR_PROTOCOL, "a node answered a non-integer element");
        }
        head.type = SL_REPLY_ARRAY;
        head.len = r0->len;
        if (push_rec(b, &head)) return SL_ENOMEM;
        for (uint32_t i = 1; i <= r0->len; i++) {
            int v = merge == SL__MERGE_AND;
            for (uint32_t p = 0; p < nparts; p++) {
                int e = part_records(b, &b->cmds[first + p])[i].value.integer != 0;
                v = merge == SL__MERGE_AND ? (v && e) : (v || e);
            }
            sl_reply el = r0[i];
            el.value.integer = v;
            if (push_rec(b, &el)) return SL_ENOMEM;
        }
        break;
    }
    case SL__MERGE_MGET: {
        size_t nkeys = b->cmds[ci].argc - 1;
        head.type = SL_REPLY_ARRAY;
        head.len = (uint32_t)nkeys;
        if (push_rec(b, &head)) return SL_ENOMEM;
        for (size_t k = 0; k < nkeys; k++) {
            const sl__splitref *ref = &b->splitmap[map_off + k];
            const sl__cmd *part = &b->cmds[ref->child];
            const sl_reply *r = part_records(b, part);
            if (r->type != SL_REPLY_ARRAY || ref->elem >= r->len || ref->elem + 1 >= part->rec_count) {
                b->xrecs.len = start;
                return sl__batch_add_error(b, ci, SL_ERR_PROTOCOL, "an MGET part answered an unexpected shape");
            }
            /* MGET elements are flat (strings or nils), one record each. */
            sl_reply copy = r[1 + ref->elem];
            if (push_rec(b, &copy)) return SL_ENOMEM;
        }
        break;
    }
    case SL__MERGE_CONCAT: {
        uint32_t total = 0;
        for (uint32_t p = 0; p < nparts; p++) {
            const sl_reply *r = part_records(b, &b->cmds[first + p]);
            if (r->type != SL_REPLY_ARRAY && r->type != SL_REPLY_SET)
                return sl__batch_add_error(b, ci, SL_ERR_PROTOCOL, "a part answered a non-array");
            total += r->len;
        }
        head.type = SL_REPLY_ARRAY;
        head.len = total;
        if (push_rec(b, &head)) return SL_ENOMEM;
        for (uint32_t p = 0; p < nparts; p++) {
            const sl__cmd *part = &b->cmds[first + p];
            for (uint32_t i = 1; i < part->rec_count; i++) {
                sl_reply copy = part_records(b, part)[i];
                if (push_rec(b, &copy)) return SL_ENOMEM;
            }
        }
        break;
    }
    default: { /* SL__MERGE_ARRAY: one element per node, in node order */
        head.type = SL_REPLY_ARRAY;
        head.len = nparts;
        if (push_rec(b, &head)) return SL_ENOMEM;
        for (uint32_t p = 0; p < nparts; p++) {
            const sl__cmd *part = &b->cmds[first + p];
            for (uint32_t i = 0; i < part->rec_count; i++) {
                sl_reply copy = part_records(b, part)[i];
                if (push_rec(b, &copy)) return SL_ENOMEM;
            }
        }
    }
    }
    cmd = &b->cmds[ci];
    cmd->src = SL__SRC_X;
    cmd->rec_start = start;
    cmd->rec_count = (uint32_t)(b->xrecs.len - start);
    cmd->flags |= SL__F_DONE;
    return 0;
}
