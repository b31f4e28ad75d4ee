/* cluster: the Redis Cluster view of the shards in per-shard port mode — slot
 * ranges, node ids, and the CLUSTER subcommands cluster clients use to route. */
#include <stdio.h>

#include "server.h"

void sv_cluster_ranges(int shard, unsigned *lo, unsigned *hi)
{
    /* inverse of sv_slot_owner: shard i owns the slots s with s*N/16384 == i */
    unsigned n = (unsigned)sv_cfg.shards;
    *lo = (unsigned)(((uint64_t)shard * SL_SLOTS + n - 1) / n);
    *hi = (unsigned)(((uint64_t)(shard + 1) * SL_SLOTS + n - 1) / n) - 1;
}

void sv_cluster_init_shard(sv_shard *sh)
{
    sv_cluster_ranges(sh->index, &sh->slot_lo, &sh->slot_hi);
    /* Stable 40-hex node ids derived from the port, so restarts keep them. */
    uint64_t h1 = sv_hash("slotlane-node-a", 15) ^ ((uint64_t)sh->port * 0x9E3779B97F4A7C15ull);
    uint64_t h2 = h1 * 0xff51afd7ed558ccdull + 0x1234567ull;
    uint64_t h3 = h2 * 0xc4ceb9fe1a85ec53ull + (uint64_t)sh->port;
    snprintf(sh->node_id, sizeof(sh->node_id), "%016llx%016llx%08x", (unsigned long long)h1, (unsigned long long)h2,
             (unsigned)(h3 & 0xffffffffu));
}

static void add_node(sv_ctx *c, int i)
{
    sv_shard *s = &sv_shards[i];
    sv_add_array(&c->r, 4);
    sv_add_bulk_cstr(&c->r, sv_cfg.announce);
    sv_add_int(&c->r, s->port);
    sv_add_bulk_cstr(&c->r, s->node_id);
    sv_add_map(&c->r, 0);
}

/* One-port mode: the clients see one node (every shard's port and node id are the
 * same) owning every slot; the shards forward among themselves. */
static int one_node(void) { return sv_cfg.port_mode == 1; }

static void cluster_slots(sv_ctx *c)
{
    if (one_node()) {
        sv_add_array(&c->r, 1);
        sv_add_array(&c->r, 3);
        sv_add_int(&c->r, 0);
        sv_add_int(&c->r, SL_SLOTS - 1);
        add_node(c, c->sh->index);
        return;
    }
    sv_add_array(&c->r, sv_cfg.shards);
    for (int i = 0; i < sv_cfg.shards; i++) {
        sv_add_array(&c->r, 3);
        sv_add_int(&c->r, sv_shards[i].slot_lo);
        sv_add_int(&c->r, sv_shards[i].slot_hi);
        add_node(c, i);
    }
}

static void cluster_shards(sv_ctx *c)
{
    int n = one_node() ? 1 : sv_cfg.shards;
    sv_add_array(&c->r, n);
    for (int i = 0; i < n; i++) {
        sv_shard *s = one_node() ? c->sh : &sv_shards[i];
        sv_add_map(&c->r, 2);
        sv_add_bulk_cstr(&c->r, "slots");
        sv_add_array(&c->r, 2);
        sv_add_int(&c->r, one_node() ? 0 : s->slot_lo);
        sv_add_int(&c->r, one_node() ? SL_SLOTS - 1 : s->slot_hi);
        sv_add_bulk_cstr(&c->r, "nodes");
        sv_add_array(&c->r, 1);
        sv_add_map(&c->r, 7);
        sv_add_bulk_cstr(&c->r, "id");
        sv_add_bulk_cstr(&c->r, s->node_id);
        sv_add_bulk_cstr(&c->r, "port");
        sv_add_int(&c->r, s->port);
        sv_add_bulk_cstr(&c->r, "ip");
        sv_add_bulk_cstr(&c->r, sv_cfg.announce);
        sv_add_bulk_cstr(&c->r, "endpoint");
        sv_add_bulk_cstr(&c->r, sv_cfg.announce);
        sv_add_bulk_cstr(&c->r, "role");
        sv_add_bulk_cstr(&c->r, "master");
        sv_add_bulk_cstr(&c->r, "replication-offset");
        sv_add_int(&c->r, 0);
        sv_add_bulk_cstr(&c->r, "health");
        sv_add_bulk_cstr(&c->r, "online");
    }
}

/* The exact CLUSTER NODES line format (redis-benchmark --cluster and clients parse it):
 * <id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv> <epoch> <link> <slots> */
static void cluster_nodes(sv_ctx *c)
{
    sv_buf b = {0};
    char line[512];
    if (one_node()) {
        int n = snprintf(line, sizeof(line), "%s %s:%d@%d myself,master - 0 0 1 connected 0-%d\n", c->sh->node_id,
                         sv_cfg.announce, c->sh->port, c->sh->port + 10000, SL_SLOTS - 1);
        sv_add_verbatim(&c->r, line, (size_t)n);
        return;
    }
    for (int i = 0; i < sv_cfg.shards; i++) {
        sv_shard *s = &sv_shards[i];
        int n = snprintf(line, sizeof(line), "%s %s:%d@%d %s - 0 %lld %d connected %u-%u\n", s->node_id, sv_cfg.announce,
                         s->port, s->port + 10000, s == c->sh ? "myself,master" : "master",
                         (long long)(s == c->sh ? 0 : sv_mstime()), i + 1, s->slot_lo, s->slot_hi);
        sv_buf_append(&b, line, (size_t)n);
    }
    sv_add_verbatim(&c->r, b.data, b.len);
    sv_buf_free(&b);
}

static void cluster_info(sv_ctx *c)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf),
                     "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"
                     "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:%d\r\n"
                     "cluster_size:%d\r\ncluster_current_epoch:%d\r\ncluster_my_epoch:%d\r\n"
                     "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
                     "total_cluster_links_buffer_limit_exceeded:0\r\n",
                     one_node() ? 1 : sv_cfg.shards, one_node() ? 1 : sv_cfg.shards, one_node() ? 1 : sv_cfg.shards,
                     one_node() ? 1 : c->sh->index + 1);
    sv_add_verbatim(&c->r, buf, (size_t)n);
}

void sv_cmd_cluster(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    if (sv_eq(sub, "slots") && argc == 2) cluster_slots(c);
    else if (sv_eq(sub, "shards") && argc == 2) cluster_shards(c);
    else if (sv_eq(sub, "nodes") && argc == 2) cluster_nodes(c);
    else if (sv_eq(sub, "myid") && argc == 2) sv_add_bulk_cstr(&c->r, c->sh->node_id);
    else if (sv_eq(sub, "info") && argc == 2) cluster_info(c);
    else if (sv_eq(sub, "keyslot") && argc == 3) sv_add_int(&c->r, sl__key_slot(argv[2].p, argv[2].len));
    else if (sv_eq(sub, "countkeysinslot") && argc == 3) {
        long long slot;
        if (!sv_str2ll(argv[2].p, argv[2].len, &slot) || slot < 0 || slot >= SL_SLOTS) {
            sv_add_error(&c->r, "Invalid slot");
            return;
        }
        sv_add_int(&c->r, c->sh->slot_keys[slot]);
    } else if (sv_eq(sub, "getkeysinslot") && argc == 4) {
        long long slot, max;
        if (!sv_str2ll(argv[2].p, argv[2].len, &slot) || !sv_str2ll(argv[3].p, argv[3].len, &max) || slot < 0 ||
            slot >= SL_SLOTS || max < 0) {
            sv_add_error(&c->r, "Invalid slot or number of keys");
            return;
        }
        long long n = (long long)c->sh->slot_keys[slot];
        if (n > max) n = max;
        sv_add_array(&c->r, n);
        /* a keyspace walk: the per-slot key count makes it stop early, but slot
         * membership lists (as Redis keeps) are not maintained on the hot path */
        sv_dict_iter it;
        sv_dict_iter_init(&it, &c->sh->keys);
        long long got = 0;
        for (sv_entry *e; got < n && (e = sv_dict_iter_next(&it));)
            if (sl__key_slot(e->key, e->klen) == (unsigned)slot) {
                sv_add_bulk(&c->r, e->key, e->klen);
                got++;
            }
    } else if (sv_eq(sub, "help")) {
        const char *lines[] = {"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                               "SLOTS", "SHARDS", "NODES", "MYID", "INFO", "KEYSLOT <key>",
                               "COUNTKEYSINSLOT <slot>", "GETKEYSINSLOT <slot> <count>"};
        sv_add_array(&c->r, 9);
        for (int i = 0; i < 9; i++) sv_add_status(&c->r, lines[i]);
    } else {
        sv_add_errorf(&c->r, "unknown subcommand or wrong number of arguments for '%.*s'. Try CLUSTER HELP.",
                      (int)(sub.len > 128 ? 128 : sub.len), sub.p);
    }
}

void sv_cmd_readonly(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    sv_add_ok(&c->r);
}
