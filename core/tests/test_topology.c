/* Unit tests of topology: CLUSTER SLOTS (RESP2 and RESP3 shapes), CLUSTER SHARDS, CLUSTER
 * NODES parsing into the slot table, empty endpoints, node addresses, malformed maps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client.h"
#include "topology.h"

typedef struct fixture {
    sl_client c;
    sl__records recs;
    sl__bytes data;
} fixture;

static int setup(void **state)
{
    fixture *f = test_calloc(1, sizeof *f);
    f->c.alloc = sl__default_alloc;
    sl__topo_init(&f->c.topo);
    f->c.opts.connect_timeout_ms = 100;
    f->c.mode = SL_MODE_CLUSTER;
    uint16_t idx;
    assert_int_equal(sl__topo_node(&f->c, "10.0.0.1", 7000, &idx), 0); /* the node asked */
    assert_int_equal(idx, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sl__topo_free(&f->c);
    sl__records_free(&sl__default_alloc, &f->recs);
    sl__bytes_free(&sl__default_alloc, &f->data);
    test_free(f);
    return 0;
}

/* Parses one reply from RESP text into the fixture's records. */
static void parse(fixture *f, const char *resp)
{
    sl__resp_parser p;
    sl__resp_limits lim = {1 << 20, 1 << 20, 32};
    sl__resp_parser_init(&p, &lim);
    f->recs.len = 0;
    f->data.len = 0;
    size_t used = 0;
    int rc = sl__resp_parse(&p, &sl__default_alloc, (const uint8_t *)resp, strlen(resp), &used, &f->recs, &f->data);
    assert_int_equal(rc, SL__RESP_REPLY);
    assert_int_equal(used, strlen(resp));
}

static const char *node_of(fixture *f, int slot)
{
    uint16_t k = f->c.topo.slot_node[slot];
    return k == SL__NO_NODE ? "none" : f->c.topo.nodes[k]->addr;
}


static void test_slots_resp2(void **state)
{
    fixture *f = *state;
    parse(f, "*3\r\n"
             "*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$3\r\nid0\r\n"
             "*4\r\n:5461\r\n:10922\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$3\r\nid1\r\n*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$3\r\nrep\r\n"
             "*3\r\n:10923\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7002\r\n$3\r\nid2\r\n");
    assert_int_equal(sl__topo_apply_slots(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), 0);
    assert_string_equal(node_of(f, 0), "127.0.0.1:7000");
    assert_string_equal(node_of(f, 5460), "127.0.0.1:7000");
    assert_string_equal(node_of(f, 5461), "127.0.0.1:7001");
    assert_string_equal(node_of(f, 16383), "127.0.0.1:7002");
    /* The replica is a node of its own (for replica reads), a replica of 7001's, never a
     * primary; the seed (node 0) serves nothing. */
    int replicas = 0;
    for (size_t i = 0; i < f->c.topo.nnodes; i++) {
        const sl__node *n = f->c.topo.nodes[i];
        int is_rep = strcmp(n->addr, "127.0.0.1:7004") == 0;
        assert_int_equal(n->primary, i != 0 && !is_rep);
        assert_int_equal(n->replica, is_rep);
        replicas += is_rep;
    }
    assert_int_equal(replicas, 1);
    assert_int_equal(f->c.topo.nreplicas, 1);
    assert_string_equal(f->c.topo.nodes[f->c.topo.replicas[0].primary]->addr, "127.0.0.1:7001");
    assert_string_equal(f->c.topo.nodes[f->c.topo.replicas[0].node]->addr, "127.0.0.1:7004");
}

static void test_slots_resp3_and_empty_host(void **state)
{
    fixture *f = *state;
    /* RESP3: the node entry carries a metadata map; "" host means the node asked. */
    parse(f, "*2\r\n"
             "*3\r\n:0\r\n:8191\r\n*4\r\n$0\r\n\r\n:7000\r\n$3\r\nid0\r\n%1\r\n+hostname\r\n+h0\r\n"
             "*3\r\n:8192\r\n:16383\r\n*4\r\n$9\r\n127.0.0.2\r\n:7001\r\n$3\r\nid1\r\n%0\r\n");
    assert_int_equal(sl__topo_apply_slots(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), 0);
    assert_string_equal(node_of(f, 0), "10.0.0.1:7000");
    assert_string_equal(node_of(f, 8192), "127.0.0.2:7001");
}

static void test_slots_malformed_keeps_table(void **state)
{
    fixture *f = *state;
    parse(f, "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$3\r\nid0\r\n");
    assert_int_equal(sl__topo_apply_slots(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), 0);
    const char *bad[] = {
        "*0\r\n",                                                         /* no ranges */
        "*1\r\n*3\r\n:5\r\n:2\r\n*2\r\n$1\r\nh\r\n:1\r\n",                 /* start > end */
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",             /* slot out of range */
        "*1\r\n*3\r\n:0\r\n:10\r\n*2\r\n$1\r\nh\r\n:70000\r\n",            /* port out of range */
        "*1\r\n*3\r\n+x\r\n:10\r\n*2\r\n$1\r\nh\r\n:1\r\n",                /* not an integer */
        "*1\r\n*2\r\n:0\r\n:10\r\n",                                      /* no node */
        "+OK\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        parse(f, bad[i]);
        assert_int_equal(sl__topo_apply_slots(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), SL_ECLUSTER);
        assert_string_equal(node_of(f, 100), "127.0.0.1:7000");
    }
}

static void test_shards_resp2_and_resp3(void **state)
{
    fixture *f = *state;
    /* RESP2: maps are flat arrays of pairs. */
    parse(f, "*1\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:99\r\n:200\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n"
             "*8\r\n$2\r\nid\r\n$1\r\na\r\n$4\r\nport\r\n:7005\r\n$2\r\nip\r\n$9\r\n127.0.0.5\r\n$4\r\nrole\r\n$7\r\nreplica\r\n"
             "*8\r\n$2\r\nid\r\n$1\r\nb\r\n$4\r\nport\r\n:7006\r\n$2\r\nip\r\n$9\r\n127.0.0.6\r\n$4\r\nrole\r\n$6\r\nmaster\r\n");
    assert_int_equal(sl__topo_apply_shards(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), 0);
    assert_string_equal(node_of(f, 0), "127.0.0.6:7006");
    assert_string_equal(node_of(f, 150), "none");
    assert_string_equal(node_of(f, 16383), "127.0.0.6:7006");
    /* RESP3 maps, endpoint preferred over ip, empty endpoint = the node asked. */
    parse(f, "*1\r\n%2\r\n+slots\r\n*2\r\n:0\r\n:16383\r\n+nodes\r\n*1\r\n"
             "%4\r\n+port\r\n:7007\r\n+ip\r\n+127.0.0.7\r\n+endpoint\r\n$0\r\n\r\n+role\r\n+master\r\n");
    assert_int_equal(sl__topo_apply_shards(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), 0);
    assert_string_equal(node_of(f, 42), "10.0.0.1:7007");
}

static void test_nodes_text(void **state)
{
    fixture *f = *state;
    const char *text =
        "07c3 127.0.0.1:30004@31004,host4 slave e7d1 0 1 4 connected\n"
        "67ed 127.0.0.1:30002@31002 master - 0 1 2 connected 5461-10922 [10923->-e7d1]\n"
        "e7d1 :30003@31003 myself,master - 0 0 3 connected 10923-16383\n"
        "292f 127.0.0.1:30001@31001 master - 0 1 1 connected 0-5460 7000\n"
        "dead 127.0.0.1:30009@31009 master,fail - 0 1 1 disconnected\n";
    assert_int_equal(sl__topo_apply_nodes_text(&f->c, 0, (const uint8_t *)text, strlen(text)), 0);
    assert_string_equal(node_of(f, 0), "127.0.0.1:30001");
    assert_string_equal(node_of(f, 5461), "127.0.0.1:30002");
    assert_string_equal(node_of(f, 10923), "10.0.0.1:30003");
    assert_string_equal(node_of(f, 16383), "10.0.0.1:30003");
    const char *none = "abc 127.0.0.1:1@2 slave x 0 0 0 connected\n";
    assert_int_equal(sl__topo_apply_nodes_text(&f->c, 0, (const uint8_t *)none, strlen(none)), SL_ECLUSTER);
    assert_string_equal(node_of(f, 0), "127.0.0.1:30001");
}

/* The node list: primaries in node order with their ranges, then the replicas with their
 * primary's position; replicas of a primary repeated per range are listed once. */
static void test_node_list(void **state)
{
    fixture *f = *state;
    parse(f, "*3\r\n"
             "*4\r\n:0\r\n:99\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$3\r\nid1\r\n*3\r\n$0\r\n\r\n:7004\r\n$3\r\nrep\r\n"
             "*3\r\n:100\r\n:16000\r\n*3\r\n$9\r\n127.0.0.1\r\n:7002\r\n$3\r\nid2\r\n"
             "*4\r\n:16001\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$3\r\nid1\r\n*3\r\n$0\r\n\r\n:7004\r\n$3\r\nrep\r\n");
    assert_int_equal(sl__topo_apply_slots(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), 0);
    sl_node_info *nodes;
    size_t n;
    assert_int_equal(sl_client_nodes(&f->c, &nodes, &n), 0);
    assert_int_equal(n, 3);
    /* node order: 10.0.0.1:7000 (asked, serves nothing: not listed), 7001, 7002 */
    assert_string_equal(nodes[0].addr, "127.0.0.1:7001");
    assert_int_equal(nodes[0].is_primary, 1);
    assert_int_equal(nodes[0].primary, -1);
    assert_int_equal(nodes[0].nranges, 2);
    assert_int_equal(nodes[0].ranges[0], 0);
    assert_int_equal(nodes[0].ranges[1], 99);
    assert_int_equal(nodes[0].ranges[2], 16001);
    assert_int_equal(nodes[0].ranges[3], 16383);
    assert_string_equal(nodes[1].addr, "127.0.0.1:7002");
    assert_int_equal(nodes[1].nranges, 1);
    assert_int_equal(nodes[1].ranges[0], 100);
    assert_int_equal(nodes[1].ranges[1], 16000);
    assert_string_equal(nodes[2].addr, "10.0.0.1:7004"); /* empty host: the node asked */
    assert_int_equal(nodes[2].is_primary, 0);
    assert_int_equal(nodes[2].primary, 0);
    assert_int_equal(nodes[2].nranges, 0);
    sl_client_nodes_free(&f->c, nodes);
    /* A replica named by CLUSTER SHARDS; a map from CLUSTER NODES names none. */
    parse(f, "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n"
             "*8\r\n$2\r\nid\r\n$1\r\na\r\n$4\r\nport\r\n:7005\r\n$2\r\nip\r\n$9\r\n127.0.0.5\r\n$4\r\nrole\r\n$7\r\nreplica\r\n"
             "*8\r\n$2\r\nid\r\n$1\r\nb\r\n$4\r\nport\r\n:7006\r\n$2\r\nip\r\n$9\r\n127.0.0.6\r\n$4\r\nrole\r\n$6\r\nmaster\r\n");
    assert_int_equal(sl__topo_apply_shards(&f->c, 0, f->recs.ptr, f->recs.len, f->data.ptr), 0);
    assert_int_equal(sl_client_nodes(&f->c, &nodes, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(nodes[0].addr, "127.0.0.6:7006");
    assert_string_equal(nodes[1].addr, "127.0.0.5:7005");
    assert_int_equal(nodes[1].primary, 0);
    sl_client_nodes_free(&f->c, nodes);
    const char *text = "b 127.0.0.6:7006@17006 myself,master - 0 0 1 connected 0-16383\n"
                       "a 127.0.0.5:7005@17005 slave b 0 0 1 connected\n";
    assert_int_equal(sl__topo_apply_nodes_text(&f->c, 0, (const uint8_t *)text, strlen(text)), 0);
    assert_int_equal(sl_client_nodes(&f->c, &nodes, &n), 0);
    assert_int_equal(n, 1);
    sl_client_nodes_free(&f->c, nodes);
    /* Plain mode: the one node, serving every slot. */
    f->c.mode = SL_MODE_PLAIN;
    f->c.topo.default_node = 0;
    assert_int_equal(sl_client_nodes(&f->c, &nodes, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0].addr, "10.0.0.1:7000");
    assert_int_equal(nodes[0].ranges[1], 16383);
    sl_client_nodes_free(&f->c, nodes);
    assert_int_equal(sl_client_nodes(NULL, &nodes, &n), SL_EINVAL);
}

static void test_node_addresses(void **state)
{
    fixture *f = *state;
    uint16_t a, b;
    assert_int_equal(sl__topo_node_addr(&f->c, "127.0.0.1:6379", 14, &a), 0);
    assert_int_equal(sl__topo_node_addr(&f->c, "127.0.0.1:6379 trailing", 14, &b), 0);
    assert_int_equal(a, b); /* found, not added twice */
    assert_int_equal(sl__topo_node_addr(&f->c, "[::1]:7000", 10, &a), 0);
    assert_string_equal(f->c.topo.nodes[a]->host, "::1");
    assert_string_equal(f->c.topo.nodes[a]->addr, "[::1]:7000");
    const char *bad[] = {"nocolon", "host:", ":7000", "host:70000", "host:12x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_not_equal(sl__topo_node_addr(&f->c, bad[i], strlen(bad[i]), &a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slots_resp2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slots_resp3_and_empty_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slots_malformed_keeps_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shards_resp2_and_resp3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodes_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_addresses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
