/* Routing overrides and default fan-out against a fake 3-node cluster: all primaries
 * (merged DBSIZE, FLUSHALL, PING; an array of per-node replies otherwise), a given node, a
 * slot, a random primary; DBSIZE, FLUSHALL and the SCRIPT/FUNCTION commands that change or
 * ask every node's scripts fan out by default (SCRIPT EXISTS merged as an AND per script,
 * LOAD as the one SHA or library name); bad routes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_server.h"
#include "slotlane.h"

typedef struct fx {
    fs_cluster cl;
    sl_client *c;
} fx;

static int setup(void **state)
{
    fx *f = test_calloc(1, sizeof *f);
    fs_cluster_start(&f->cl, 3);
    /* Keys on every node: 10 on node 0, 20 on node 1, 30 on node 2. */
    char key[32];
    for (int n = 0; n < 3; n++)
        for (int i = 0; i < 10 * (n + 1); i++) {
            int lo = n * 5461, hi = n == 2 ? 16383 : lo + 5460;
            char prefix[16];
            snprintf(prefix, sizeof prefix, "n%d:%d:", n, i);
            fs_find_key(prefix, lo, hi, key, sizeof key);
            fs_store_set(f->cl.nodes[n], key, "v");
        }
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(f->cl.nodes[1]));
    o.url = url;
    o.mode = SL_MODE_CLUSTER;
    char err[256];
    if (sl_client_new(&f->c, &o, err, sizeof err) != 0) fail_msg("%s", err);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    sl_client_free(f->c);
    fs_cluster_stop(&f->cl);
    test_free(f);
    return 0;
}

static const sl_reply *run(fx *f, const sl_route *route, int argc, const char *const *argv, const uint8_t **data)
{
    const sl_reply *r = NULL;
    int rc = sl_client_command(f->c, route, argc, argv, NULL, &r, data);
    if (rc != 0 && rc != SL_ESERVER) fail_msg("command failed: %d %s", rc, sl_client_errmsg(f->c));
    return r;
}

static void test_dbsize_fans_out_by_default(void **state)
{
    fx *f = *state;
    const uint8_t *d;
    const char *argv[] = {"DBSIZE"};
    const sl_reply *r = run(f, NULL, 1, argv, &d);
    assert_int_equal(r->type, SL_REPLY_INTEGER);
    assert_int_equal(r->value.integer, 60);
    for (int n = 0; n < 3; n++) assert_int_equal(fs_count(f->cl.nodes[n], "DBSIZE", NULL), 1);
}

static void test_flushall_fans_out_by_default(void **state)
{
    fx *f = *state;
    const uint8_t *d;
    const char *argv[] = {"FLUSHALL"};
    const sl_reply *r = run(f, NULL, 1, argv, &d);
    assert_int_equal(r->type, SL_REPLY_STATUS);
    assert_int_equal(r->len, 2);
    assert_memory_equal(d + r->offset, "OK", 2);
    const char *dbsize[] = {"DBSIZE"};
    r = run(f, NULL, 1, dbsize, &d);
    assert_int_equal(r->value.integer, 0);
}

static void test_all_primaries_ping_and_array(void **state)
{
    fx *f = *state;
    const uint8_t *d;
    sl_route all = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_ALL_PRIMARIES, 0, NULL};
    const char *ping[] = {"PING"};
    const sl_reply *r = run(f, &all, 1, ping, &d);
    assert_int_equal(r->type, SL_REPLY_STATUS);
    assert_memory_equal(d + r->offset, "PONG", 4);
    for (int n = 0; n < 3; n++) assert_int_equal(fs_count(f->cl.nodes[n], "PING", NULL), 1);
    /* ECHO has no merge rule: an array with one reply per primary. */
    const char *echo[] = {"ECHO", "hi"};
    r = run(f, &all, 2, echo, &d);
    assert_int_equal(r->type, SL_REPLY_ARRAY);
    assert_int_equal(r->len, 3);
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(r[i].type, SL_REPLY_STRING);
        assert_memory_equal(d + r[i].offset, "hi", 2);
    }
    /* Without the override, a keyless command goes to one node only. */
    run(f, NULL, 1, ping, &d);
    uint64_t total = 0;
    for (int n = 0; n < 3; n++) total += fs_count(f->cl.nodes[n], "PING", NULL);
    assert_int_equal(total, 4);
}

static void test_route_node_slot_random(void **state)
{
    fx *f = *state;
    const uint8_t *d;
    char node[64];
    snprintf(node, sizeof node, "127.0.0.1:%d", fs_port(f->cl.nodes[2]));
    sl_route to_node = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_NODE, 0, node};
    const char *ping[] = {"PING"};
    run(f, &to_node, 1, ping, &d);
    assert_int_equal(fs_count(f->cl.nodes[2], "PING", NULL), 1);
    sl_route to_slot = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_SLOT, 6000, NULL}; /* node 1's range */
    run(f, &to_slot, 1, ping, &d);
    assert_int_equal(fs_count(f->cl.nodes[1], "PING", NULL), 1);
    sl_route random = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_RANDOM, 0, NULL};
    for (int i = 0; i < 30; i++) run(f, &random, 1, ping, &d);
    uint64_t total = 0;
    for (int n = 0; n < 3; n++) total += fs_count(f->cl.nodes[n], "PING", NULL);
    assert_int_equal(total, 32);
    /* 30 random picks over 3 primaries: each got at least one (chance of a miss ~ 3e-6). */
    for (int n = 0; n < 3; n++) assert_true(fs_count(f->cl.nodes[n], "PING", NULL) >= 1);
}

static void test_script_commands_fan_out(void **state)
{
    fx *f = *state;
    const uint8_t *d;
    const char *sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    char load_reply[64];
    snprintf(load_reply, sizeof load_reply, "$40\r\n%s\r\n", sha);
    for (int n = 0; n < 3; n++) {
        fs_add_reply(f->cl.nodes[n], "SCRIPT LOAD", NULL, 0, load_reply);
        /* script 1 is everywhere, script 2 is missing on node 1 */
        fs_add_reply(f->cl.nodes[n], "SCRIPT EXISTS", NULL, 0, n == 1 ? "*2\r\n:1\r\n:0\r\n" : "*2\r\n:1\r\n:1\r\n");
        fs_add_reply(f->cl.nodes[n], "FUNCTION LOAD", NULL, 0, "$3\r\nlib\r\n");
        fs_add_reply(f->cl.nodes[n], "FUNCTION DELETE", NULL, 0, "+OK\r\n");
    }
    const char *load[] = {"script", "load", "return 1"};
    const sl_reply *r = run(f, NULL, 3, load, &d);
    assert_int_equal(r->type, SL_REPLY_STRING);
    assert_int_equal(r->len, 40);
    assert_memory_equal(d + r->offset, sha, 40);
    const char *exists[] = {"SCRIPT", "EXISTS", sha, "0000000000000000000000000000000000000000"};
    r = run(f, NULL, 4, exists, &d);
    assert_int_equal(r->type, SL_REPLY_ARRAY);
    assert_int_equal(r->len, 2);
    assert_int_equal(r[1].type, SL_REPLY_INTEGER);
    assert_int_equal(r[1].value.integer, 1);
    assert_int_equal(r[2].value.integer, 0);
    const char *fload[] = {"FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"};
    r = run(f, NULL, 3, fload, &d);
    assert_int_equal(r->type, SL_REPLY_STRING);
    assert_memory_equal(d + r->offset, "lib", 3);
    const char *fdel[] = {"FUNCTION", "DELETE", "lib"};
    r = run(f, NULL, 3, fdel, &d);
    assert_int_equal(r->type, SL_REPLY_STATUS);
    for (int n = 0; n < 3; n++) {
        assert_int_equal(fs_count(f->cl.nodes[n], "SCRIPT LOAD", NULL), 1);
        assert_int_equal(fs_count(f->cl.nodes[n], "SCRIPT EXISTS", NULL), 1);
        assert_int_equal(fs_count(f->cl.nodes[n], "FUNCTION LOAD", NULL), 1);
        assert_int_equal(fs_count(f->cl.nodes[n], "FUNCTION DELETE", NULL), 1);
    }
    /* One node's error is the command's reply, naming the node. */
    fs_add_reply(f->cl.nodes[2], "FUNCTION RESTORE", NULL, 0, "-ERR payload version or checksum are wrong\r\n");
    fs_add_reply(f->cl.nodes[0], "FUNCTION RESTORE", NULL, 0, "+OK\r\n");
    fs_add_reply(f->cl.nodes[1], "FUNCTION RESTORE", NULL, 0, "+OK\r\n");
    const char *restore[] = {"FUNCTION", "RESTORE", "xx"};
    r = run(f, NULL, 3, restore, &d);
    assert_int_equal(r->type, SL_REPLY_ERROR);
    char want[96];
    snprintf(want, sizeof want, "(on node 127.0.0.1:%d)", fs_port(f->cl.nodes[2]));
    assert_non_null(strstr((const char *)d + r->offset, "payload version"));
    assert_true(r->len >= strlen(want));
    assert_memory_equal(d + r->offset + r->len - strlen(want), want, strlen(want));
    /* Arrays of different lengths cannot be ANDed: a protocol error, not a guess. */
    fs_clear_rules(f->cl.nodes[0]);
    fs_add_reply(f->cl.nodes[0], "SCRIPT EXISTS", NULL, 0, "*1\r\n:1\r\n");
    assert_int_equal(sl_client_command(f->c, NULL, 4, exists, NULL, &r, &d), SL_EPROTO);
    assert_int_equal(r->type, SL_REPLY_ERROR);
    assert_int_equal(r->flags, SL_ERR_PROTOCOL);
}

static void test_bad_routes(void **state)
{
    fx *f = *state;
    sl_batch *b;
    assert_int_equal(sl_batch_new(f->c, &b), 0);
    const char *ping[] = {"PING"};
    sl_route bad_slot = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_SLOT, 16384, NULL};
    assert_int_equal(sl_batch_append_argv(b, &bad_slot, 1, ping, NULL), SL_EINVAL);
    sl_route no_node = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_NODE, 0, NULL};
    assert_int_equal(sl_batch_append_argv(b, &no_node, 1, ping, NULL), SL_EINVAL);
    sl_route bad_node = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_NODE, 0, "not an address"};
    assert_int_equal(sl_batch_append_argv(b, &bad_node, 1, ping, NULL), SL_EINVAL);
    sl_route bad_kind = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), (sl_route_kind)42, 0, NULL};
    assert_int_equal(sl_batch_append_argv(b, &bad_kind, 1, ping, NULL), SL_EINVAL);
    /* Version and size are checked before anything else of the route is read. */
    sl_route old = {0, 0, SL_ROUTE_RANDOM, 0, NULL}; /* zeroed, as a caller of the layout without them */
    assert_int_equal(sl_batch_append_argv(b, &old, 1, ping, NULL), SL_EINVAL);
    assert_non_null(strstr(sl_client_errmsg(f->c), "route version 0 size 0 not supported"));
    sl_route newer = SL_ROUTE_INIT;
    newer.version = SL_ROUTE_VERSION + 1;
    assert_int_equal(sl_batch_append_argv(b, &newer, 1, ping, NULL), SL_EINVAL);
    assert_non_null(strstr(sl_client_errmsg(f->c), "SL_ROUTE_INIT"));
    sl_route small = SL_ROUTE_INIT;
    small.size = (unsigned)offsetof(sl_route, node);
    assert_int_equal(sl_batch_append(b, &small, "*1\r\n$4\r\nPING\r\n", 14, 1), SL_EINVAL);
    const sl_reply *r = NULL;
    const uint8_t *d;
    assert_int_equal(sl_client_command(f->c, &small, 1, ping, NULL, &r, &d), SL_EINVAL);
    assert_int_equal(sl_batch_count(b), 0);
    /* SL_ROUTE_INIT itself routes by key. */
    sl_route by_key = SL_ROUTE_INIT;
    assert_int_equal(sl_batch_append_argv(b, &by_key, 1, ping, NULL), 0);
    assert_int_equal(sl_batch_count(b), 1);
    sl_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dbsize_fans_out_by_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flushall_fans_out_by_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_primaries_ping_and_array, setup, teardown),
        cmocka_unit_test_setup_teardown(test_route_node_slot_random, setup, teardown),
        cmocka_unit_test_setup_teardown(test_script_commands_fan_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_routes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
