/* fuzz_topology: the slot-map parsers of topology.c fed by a hostile server. The input is
 * RESP bytes parsed by the core's reply parser (as discovery gets them, RESP2 or RESP3
 * shapes alike) and given to the parser the first byte picks: CLUSTER SLOTS, CLUSTER
 * SHARDS, or CLUSTER NODES (its bulk or verbatim string); a fourth choice gives the bytes
 * after the first as CLUSTER NODES text directly, so the line parser is reached without
 * the framing. The client is a zeroed sl_client with one node (the node asked, which an
 * empty or "?" host means) and no socket: only the topology is used.
 *
 * Checked: the result is 0 or SL_ECLUSTER (or SL_ENOMEM); on success every slot points to
 * a node that exists, at least one slot is mapped, and each node has a non-empty host, a
 * port in 1..65535 and its "host:port" address; a failure leaves the slot table as it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "conn.h"
#include "topology.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_topology: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                           \
        }                                                                      \
    } while (0)

static sl_client client;

static void check_nodes(sl_client *c)
{
    for (size_t i = 0; i < c->topo.nnodes; i++) {
        const sl__node *n = c->topo.nodes[i];
        size_t hl = strnlen(n->host, sizeof n->host);
        CHECK(hl > 0 && hl < sizeof n->host);
        CHECK(n->port >= 1 && n->port <= 65535);
        CHECK(strnlen(n->addr, sizeof n->addr) < sizeof n->addr);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    sl_client *c = &client;
    memset(c, 0, sizeof *c);
    c->alloc = sl__default_alloc;
    c->mode = SL_MODE_CLUSTER;
    sl__topo_init(&c->topo);
    uint16_t asked;
    CHECK(sl__topo_node(c, "10.0.0.1", 7000, &asked) == 0);
    static uint16_t before[SL_SLOTS];
    memcpy(before, c->topo.slot_node, sizeof before);

    int form = data[0] & 3, rc = SL_ECLUSTER;
    sl__records recs = {0};
    sl__bytes bytes = {0};
    if (form == 3) {
        rc = sl__topo_apply_nodes_text(c, asked, data + 1, size - 1);
    } else {
        sl__resp_parser p;
        sl__resp_parser_init(&p, &(sl__resp_limits){(uint64_t)512 << 20, (uint64_t)1 << 30, 32});
        size_t consumed = 0;
        int prc = sl__resp_parse(&p, &c->alloc, data + 1, size - 1, &consumed, &recs, &bytes);
        if (prc == SL__RESP_REPLY) {
            /* the records of the one reply, as sl_batch_replies hands them to discovery */
            const sl_reply *r = recs.ptr + p.top_record;
            size_t n = recs.len - p.top_record;
            if (form == 0) rc = sl__topo_apply_slots(c, asked, r, n, bytes.ptr);
            else if (form == 1) rc = sl__topo_apply_shards(c, asked, r, n, bytes.ptr);
            else if ((r[0].type == SL_REPLY_STRING || r[0].type == SL_REPLY_VERB) && r[0].len > 0) /* as discovery */
                rc = sl__topo_apply_nodes_text(c, asked, bytes.ptr + r[0].offset, r[0].len);
        }
    }
    CHECK(rc == 0 || rc == SL_ECLUSTER || rc == SL_ENOMEM);
    check_nodes(c);
    if (rc == 0) {
        size_t mapped = 0;
        for (size_t s = 0; s < SL_SLOTS; s++) {
            uint16_t v = c->topo.slot_node[s];
            CHECK(v == SL__NO_NODE || v < c->topo.nnodes);
            if (v != SL__NO_NODE) {
                CHECK(c->topo.nodes[v]->primary);
                mapped++;
            }
        }
        CHECK(mapped > 0);
    } else {
        CHECK(memcmp(before, c->topo.slot_node, sizeof before) == 0);
    }
    sl__records_free(&c->alloc, &recs);
    sl__bytes_free(&c->alloc, &bytes);
    sl__topo_free(c);
    return 0;
}
