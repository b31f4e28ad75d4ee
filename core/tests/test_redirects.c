/* test_redirects: the engine's cluster redirect handling, through the public API only,
 * against fake nodes (tests/support/fake_server.h): MOVED (resend, slot table patched at
 * once, throttled refresh), ASK (ASKING + command once, table not patched), TRYAGAIN and
 * CLUSTERDOWN (retried with backoff), the redirect limit, resending only the affected
 * commands, and the caller's order over several nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_server.h"
#include "sl_test.h"
#include "slotlane.h"

/* ------------------------------------------------------------------ helpers */

static int exec_batch(sl_batch *b, sl_sizes *sz)
{
    sl_sizes local;
    return sl_batch_exec(b, EXEC_TIMEOUT_MS, sz ? sz : &local);
}

/* The even split of c with the given slots handed to other nodes: moves[k] = {slot, node}. */
typedef struct slot_move {
    int slot;
    int node;
} slot_move;

static void set_map_with_moves(fs_cluster *c, const slot_move *moves, size_t nmoves)
{
    /* per-slot owner, then compress into ranges */
    static int owner[16384];
    for (int s = 0; s < 16384; s++) owner[s] = fs_cluster_default_owner(c, s);
    for (size_t k = 0; k < nmoves; k++) owner[moves[k].slot] = moves[k].node;
    fs_range r[64];
    size_t nr = 0;
    for (int s = 0; s < 16384;) {
        int e = s;
        while (e + 1 < 16384 && owner[e + 1] == owner[s]) e++;
        assert_true(nr < 64);
        r[nr].start = s;
        r[nr].end = e;
        r[nr].port = fs_port(c->nodes[owner[s]]);
        nr++;
        s = e + 1;
    }
    fs_cluster_set_map(c, r, nr);
}

typedef struct fixture {
    fs_cluster cl;
    sl_client *client;
    sl_batch *batch;
    int64_t created_ms; /* just before the client was made: at or before its discovery */
} fixture;

static int setup3(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    fs_cluster_start(&f->cl, 3);
    f->created_ms = fs_now_ms();
    f->client = new_client(fs_port(f->cl.nodes[0]), SL_MODE_CLUSTER);
    assert_int_equal(sl_batch_new(f->client, &f->batch), 0);
    for (int i = 0; i < 3; i++) fs_reset_counters(f->cl.nodes[i]);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sl_batch_free(f->batch);
    sl_client_free(f->client);
    fs_cluster_stop(&f->cl);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------ MOVED */

/* A slot migrated from node 0 to node 1 after discovery: the command is answered MOVED by
 * node 0, resent to node 1, its reply is node 1's; the other commands were sent once; the
 * next batch for that slot goes straight to node 1. */
static void test_moved_resends_and_patches(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k[32], a[32], z[32];
    int slot = key_on(c, 0, "mv:", k, sizeof k);
    key_on(c, 0, "a:", a, sizeof a);
    key_on(c, 2, "z:", z, sizeof z);
    fs_store_set(c->nodes[1], k, "at-node-1");
    fs_store_set(c->nodes[0], a, "va");
    fs_store_set(c->nodes[2], z, "vz");
    slot_move mv = {slot, 1};
    set_map_with_moves(c, &mv, 1);
    sl_stats s0 = stats_of(f->client);

    append2(f->batch, "GET", a);
    append2(f->batch, "GET", k);
    append2(f->batch, "GET", z);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.commands, 3);
    assert_int_equal(sz.errors, 0);
    want_str(f->batch, 0, "va");
    want_str(f->batch, 1, "at-node-1");
    want_str(f->batch, 2, "vz");

    assert_int_equal(fs_count(c->nodes[0], "GET", k), 1);
    assert_int_equal(fs_count(c->nodes[1], "GET", k), 1);
    assert_int_equal(fs_count(c->nodes[0], "GET", a), 1);
    assert_int_equal(fs_count(c->nodes[2], "GET", z), 1);
    assert_int_equal(fs_cluster_count(c, "GET", NULL), 4);
    assert_int_equal(fs_cluster_count(c, "ASKING", NULL), 0);
    sl_stats s1 = stats_of(f->client);
    assert_int_equal(s1.moved - s0.moved, 1);
    assert_int_equal(s1.ask - s0.ask, 0);

    /* the table was patched: straight to node 1 now */
    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    want_str(f->batch, 0, "at-node-1");
    assert_int_equal(fs_count(c->nodes[0], "GET", k), 1);
    assert_int_equal(fs_count(c->nodes[1], "GET", k), 2);
    sl_stats s2 = stats_of(f->client);
    assert_int_equal(s2.moved - s1.moved, 0);
}

/* "-MOVED 3999 :6380" (Redis 7 with an unknown preferred endpoint): an empty host means
 * the host of the node that answered. */
static void test_moved_empty_host(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k[32], msg[96];
    int slot = key_on(c, 0, "eh:", k, sizeof k);
    fs_store_set(c->nodes[1], k, "moved-here");
    slot_move mv = {slot, 1};
    set_map_with_moves(c, &mv, 1);
    snprintf(msg, sizeof msg, "-MOVED %d :%d\r\n", slot, fs_port(c->nodes[1]));
    fs_add_reply(c->nodes[0], "GET", k, 1, msg);
    sl_stats s0 = stats_of(f->client);
    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_str(f->batch, 0, "moved-here");
    assert_int_equal(fs_count(c->nodes[1], "GET", k), 1);
    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_str(f->batch, 0, "moved-here");
    assert_int_equal(fs_count(c->nodes[0], "GET", k), 1);
    assert_int_equal(fs_count(c->nodes[1], "GET", k), 2);
    sl_stats s1 = stats_of(f->client);
    assert_int_equal(s1.moved - s0.moved, 1);
    assert_int_equal(s1.nodes, s0.nodes); /* no "host-less" phantom node */
}

/* MOVED to a node the client did not know (a new node joined): it is added and used. */
static void test_moved_to_new_node(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_node *extra = fs_start();
    char k[32];
    int slot = key_on(c, 2, "new:", k, sizeof k);
    fs_store_set(extra, k, "at-extra");
    /* the map every node reports: the even split with that slot on the extra node */
    static int owner_port[16384];
    for (int s = 0; s < 16384; s++) owner_port[s] = fs_port(c->nodes[fs_cluster_default_owner(c, s)]);
    owner_port[slot] = fs_port(extra);
    fs_range r[8];
    size_t nr = 0;
    for (int s = 0; s < 16384;) {
        int e = s;
        while (e + 1 < 16384 && owner_port[e + 1] == owner_port[s]) e++;
        r[nr].start = s;
        r[nr].end = e;
        r[nr].port = owner_port[s];
        nr++;
        s = e + 1;
    }
    fs_cluster_set_map(c, r, nr);
    fs_set_slots(extra, r, nr);

    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_str(f->batch, 0, "at-extra");
    assert_int_equal(fs_count(c->nodes[2], "GET", k), 1);
    assert_int_equal(fs_count(extra, "GET", k), 1);
    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_str(f->batch, 0, "at-extra");
    assert_int_equal(fs_count(c->nodes[2], "GET", k), 1);
    assert_int_equal(fs_count(extra, "GET", k), 2);
    sl_stats s = stats_of(f->client);
    assert_true(s.nodes >= 4);
    /* the client's connection must go before the node does */
    sl_batch_free(f->batch);
    sl_client_free(f->client);
    f->batch = NULL;
    f->client = NULL;
    fs_stop(extra);
}

/* MOVED schedules a refresh: CLUSTER SLOTS is asked again, but at most once a second (the
 * discovery at creation counts). The test runs batches until the refresh is seen, about
 * one second, then checks the throttle holds for a second MOVED right after it. */
static void test_moved_schedules_throttled_refresh(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    /* (taken before the client's discovery, so a busy machine cannot make the throttle
     * look shorter than it was) */
    int64_t created = f->created_ms;
    char k[32], k2[32];
    int slot = key_on(c, 0, "rf:", k, sizeof k);
    int slot2 = key_on(c, 1, "rg:", k2, sizeof k2);
    slot_move mv[2] = {{slot, 2}, {slot2, 2}};
    set_map_with_moves(c, mv, 1);
    uint64_t slots0 = fs_cluster_count(c, "CLUSTER SLOTS", NULL);
    sl_stats s0 = stats_of(f->client);

    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_nil(f->batch, 0);
    assert_int_equal(fs_count(c->nodes[2], "GET", k), 1);
    assert_int_equal(stats_of(f->client).moved - s0.moved, 1);

    /* right after: the refresh waits for the throttle */
    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    if (fs_now_ms() - created < 800)
        assert_int_equal(fs_cluster_count(c, "CLUSTER SLOTS", NULL), slots0);

    /* batches until the scheduled refresh has run (state, bounded by 3 s) */
    int64_t t0 = fs_now_ms();
    while (fs_cluster_count(c, "CLUSTER SLOTS", NULL) == slots0 && fs_now_ms() - t0 < 3000) {
        append2(f->batch, "GET", k);
        assert_int_equal(exec_batch(f->batch, NULL), 0);
        want_nil(f->batch, 0);
        if (fs_cluster_count(c, "CLUSTER SLOTS", NULL) == slots0) {
            fs_wait_count(c->nodes[0], "CLUSTER SLOTS", NULL, 1u << 30, 10); /* a 10 ms pause */
        }
    }
    int64_t refreshed = fs_now_ms();
    assert_int_equal(fs_cluster_count(c, "CLUSTER SLOTS", NULL), slots0 + 1);
    assert_true(refreshed - created >= 950); /* not before the throttle allowed it */
    sl_stats s1 = stats_of(f->client);
    assert_int_equal(s1.refreshes - s0.refreshes, 1);
    /* every GET of k after the MOVED went straight to node 2 */
    assert_int_equal(fs_count(c->nodes[0], "GET", k), 1);

    /* a second MOVED right after the refresh: no second refresh within the second */
    set_map_with_moves(c, mv, 2);
    append2(f->batch, "GET", k2);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_nil(f->batch, 0);
    append2(f->batch, "GET", k2);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    assert_int_equal(fs_count(c->nodes[1], "GET", k2), 1);
    assert_int_equal(fs_count(c->nodes[2], "GET", k2), 2);
    if (fs_now_ms() - refreshed < 800)
        assert_int_equal(fs_cluster_count(c, "CLUSTER SLOTS", NULL), slots0 + 1);
    assert_int_equal(stats_of(f->client).moved - s0.moved, 2);
}

/* -------------------------------------------------------------------- ASK */

/* ASK: ASKING then the command on the target, once; the table is not patched. */
static void test_ask_once_without_patch(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k[32], a[32], msg[96];
    int slot = key_on(c, 0, "ask:", k, sizeof k);
    key_on(c, 1, "b:", a, sizeof a);
    fs_store_set(c->nodes[2], k, "importing");
    fs_store_set(c->nodes[1], a, "vb");
    snprintf(msg, sizeof msg, "-ASK %d 127.0.0.1:%d\r\n", slot, fs_port(c->nodes[2]));
    fs_add_reply(c->nodes[0], "GET", k, 1, msg);
    sl_stats s0 = stats_of(f->client);

    append2(f->batch, "GET", a);
    append2(f->batch, "GET", k);
    append2(f->batch, "GET", a);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.errors, 0);
    want_str(f->batch, 0, "vb");
    want_str(f->batch, 1, "importing");
    want_str(f->batch, 2, "vb");
    /* node 2 got ASKING and, right after it on the same connection, the GET: once */
    assert_int_equal(fs_count(c->nodes[2], "ASKING", NULL), 1);
    assert_int_equal(fs_count(c->nodes[2], "GET", k), 1);
    assert_int_equal(fs_count_asking(c->nodes[2], "GET", k), 1);
    assert_int_equal(fs_count(c->nodes[0], "GET", k), 1);
    assert_int_equal(fs_count(c->nodes[1], "GET", a), 2);
    assert_int_equal(fs_count(c->nodes[0], "ASKING", NULL) + fs_count(c->nodes[1], "ASKING", NULL), 0);
    sl_stats s1 = stats_of(f->client);
    assert_int_equal(s1.ask - s0.ask, 1);
    assert_int_equal(s1.moved - s0.moved, 0);

    /* not patched: the next command goes to the old owner again */
    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_nil(f->batch, 0); /* node 0's own (empty) store */
    assert_int_equal(fs_count(c->nodes[0], "GET", k), 2);
    assert_int_equal(fs_count(c->nodes[2], "GET", k), 1);
    assert_int_equal(fs_count(c->nodes[2], "ASKING", NULL), 1);
    /* and no refresh was asked for by an ASK */
    assert_int_equal(stats_of(f->client).refreshes, s0.refreshes);
}

/* ------------------------------------------------------ TRYAGAIN, CLUSTERDOWN */

static void retry_case(fixture *f, const char *errline, int times, int tryagain_expected)
{
    fs_cluster *c = &f->cl;
    char k[32], a[32];
    key_on(c, 1, "ta:", k, sizeof k);
    key_on(c, 2, "tb:", a, sizeof a);
    fs_store_set(c->nodes[1], k, "finally");
    fs_store_set(c->nodes[2], a, "other");
    int rule = fs_add_reply(c->nodes[1], "GET", k, times, errline);
    sl_stats s0 = stats_of(f->client);

    append2(f->batch, "GET", k);
    append2(f->batch, "GET", a);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.errors, 0);
    want_str(f->batch, 0, "finally");
    want_str(f->batch, 1, "other");
    assert_int_equal(fs_rule_hits(c->nodes[1], rule), (uint64_t)times);
    assert_int_equal(fs_count(c->nodes[1], "GET", k), (uint64_t)times + 1);
    assert_int_equal(fs_count(c->nodes[2], "GET", a), 1);
    assert_int_equal(fs_cluster_count(c, "GET", k), (uint64_t)times + 1);
    sl_stats s1 = stats_of(f->client);
    assert_int_equal(s1.tryagain - s0.tryagain, (uint64_t)tryagain_expected);
    assert_int_equal(s1.moved - s0.moved, 0);
    /* with backoff: each resend came at least 1 ms after the answer before it (an
     * immediate resend over loopback takes well under 1 ms) */
    int64_t at[16];
    assert_int_equal(fs_times(c->nodes[1], "GET", k, at, 16), (size_t)times + 1);
    for (int i = 1; i <= times; i++) {
        if (at[i] - at[i - 1] < 1000) fprintf(stderr, "resend %d after %lld us\n", i, (long long)(at[i] - at[i - 1]));
        assert_true(at[i] - at[i - 1] >= 1000);
    }
}

static void test_tryagain_retried(void **state)
{
    retry_case(*state, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n", 3, 3);
}

static void test_clusterdown_retried(void **state)
{
    retry_case(*state, "-CLUSTERDOWN The cluster is down\r\n", 2, 2);
}

/* A TRYAGAIN that never stops ends, after 5 retries, in an SL_ERR_REDIRECTS record holding
 * the last answer; the batch's other command completes. */
static void test_tryagain_forever_hits_limit(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k[32], a[32];
    key_on(c, 0, "tf:", k, sizeof k);
    key_on(c, 1, "tg:", a, sizeof a);
    fs_store_set(c->nodes[1], a, "fine");
    fs_add_reply(c->nodes[0], "GET", k, 0, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");

    append2(f->batch, "GET", k);
    append2(f->batch, "GET", a);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.errors, 1);
    want_err_prefix(f->batch, 0, SL_ERR_REDIRECTS, "TRYAGAIN");
    want_str(f->batch, 1, "fine");
    assert_int_equal(fs_count(c->nodes[0], "GET", k), 6); /* the first send + 5 retries */
}

/* ---------------------------------------------------------- redirect limit */

/* Node 0 says MOVED to node 1, node 1 says MOVED back, forever: after 5 redirects the
 * command's record is an SL_ERR_REDIRECTS error holding the last redirect; the other
 * commands of the batch complete normally. */
static void test_redirect_limit(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k[32], a[32], z[32], to1[96], to0[96];
    int slot = key_on(c, 0, "pp:", k, sizeof k);
    key_on(c, 1, "a:", a, sizeof a);
    key_on(c, 2, "z:", z, sizeof z);
    fs_store_set(c->nodes[1], a, "va");
    fs_store_set(c->nodes[2], z, "vz");
    snprintf(to1, sizeof to1, "-MOVED %d 127.0.0.1:%d\r\n", slot, fs_port(c->nodes[1]));
    snprintf(to0, sizeof to0, "-MOVED %d 127.0.0.1:%d\r\n", slot, fs_port(c->nodes[0]));
    fs_add_reply(c->nodes[0], "GET", k, 0, to1);
    fs_add_reply(c->nodes[1], "GET", k, 0, to0);
    sl_stats s0 = stats_of(f->client);

    append2(f->batch, "GET", a);
    append2(f->batch, "GET", k);
    append2(f->batch, "GET", z);
    append3(f->batch, "SET", z, "vz2");
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.commands, 4);
    assert_int_equal(sz.errors, 1);
    want_str(f->batch, 0, "va");
    want_err_prefix(f->batch, 1, SL_ERR_REDIRECTS, "MOVED");
    want_str(f->batch, 2, "vz");
    {
        const uint8_t *data;
        const sl_reply *r = reply_at(f->batch, 3, &data);
        assert_int_equal(r->type, SL_REPLY_STATUS);
    }
    /* 1 send + 5 redirects followed, the 6th answer is the error */
    assert_int_equal(fs_count(c->nodes[0], "GET", k) + fs_count(c->nodes[1], "GET", k), 6);
    assert_int_equal(fs_count(c->nodes[0], "GET", k), 3);
    assert_int_equal(fs_count(c->nodes[1], "GET", a), 1);
    assert_int_equal(fs_count(c->nodes[2], "GET", z), 1);
    assert_int_equal(fs_count(c->nodes[2], "SET", z), 1);
    sl_stats s1 = stats_of(f->client);
    assert_int_equal(s1.moved - s0.moved, 5);

    /* the one-command helper reports it as SL_EREDIRECT */
    const sl_reply *rep = NULL;
    const uint8_t *data = NULL;
    const char *argv[2] = {"GET", k};
    int rc = sl_client_command(f->client, NULL, 2, argv, NULL, &rep, &data);
    assert_int_equal(rc, SL_EREDIRECT);
    assert_non_null(rep);
    assert_int_equal(rep->type, SL_REPLY_ERROR);
    assert_int_equal(rep->flags, SL_ERR_REDIRECTS);
}

/* ASK to a node whose ASKING+command answers ASK again: also bounded by the limit. */
static void test_ask_loop_hits_limit(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k[32], to1[96], to0[96];
    int slot = key_on(c, 0, "al:", k, sizeof k);
    snprintf(to1, sizeof to1, "-ASK %d 127.0.0.1:%d\r\n", slot, fs_port(c->nodes[1]));
    snprintf(to0, sizeof to0, "-ASK %d 127.0.0.1:%d\r\n", slot, fs_port(c->nodes[0]));
    fs_add_reply(c->nodes[0], "GET", k, 0, to1);
    fs_add_reply(c->nodes[1], "GET", k, 0, to0);
    append2(f->batch, "GET", k);
    assert_int_equal(exec_batch(f->batch, NULL), 0);
    want_err_prefix(f->batch, 0, SL_ERR_REDIRECTS, "ASK");
    assert_int_equal(fs_cluster_count(c, "GET", k), 6);
    assert_int_equal(fs_cluster_count(c, "ASKING", NULL), 5);
}

/* ------------------------------------------------- only affected commands */

static void test_only_affected_resent(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    enum { N = 30 };
    char keys[N][32], vals[N][32];
    int owner[N];
    for (int i = 0; i < N; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "oa%d:", i);
        owner[i] = i % 3;
        key_on(c, owner[i], prefix, keys[i], sizeof keys[i]);
        snprintf(vals[i], sizeof vals[i], "v%d", i);
    }
    /* keys[3] (node 0) moved to node 2; keys[7] (node 1) ASKed to node 0 */
    slot_move mv = {fs_key_slot(keys[3], strlen(keys[3])), 2};
    owner[3] = 2;
    set_map_with_moves(c, &mv, 1);
    char msg[96];
    snprintf(msg, sizeof msg, "-ASK %d 127.0.0.1:%d\r\n", fs_key_slot(keys[7], strlen(keys[7])),
             fs_port(c->nodes[0]));
    fs_add_reply(c->nodes[1], "GET", keys[7], 1, msg);
    for (int i = 0; i < N; i++) fs_store_set(c->nodes[i == 7 ? 0 : owner[i]], keys[i], vals[i]);

    for (int i = 0; i < N; i++) append2(f->batch, "GET", keys[i]);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.errors, 0);
    for (int i = 0; i < N; i++) want_str(f->batch, (size_t)i, vals[i]);
    for (int i = 0; i < N; i++) {
        if (i == 3) {
            assert_int_equal(fs_count(c->nodes[0], "GET", keys[i]), 1);
            assert_int_equal(fs_count(c->nodes[2], "GET", keys[i]), 1);
        } else if (i == 7) {
            assert_int_equal(fs_count(c->nodes[1], "GET", keys[i]), 1);
            assert_int_equal(fs_count_asking(c->nodes[0], "GET", keys[i]), 1);
        } else {
            assert_int_equal(fs_count(c->nodes[owner[i]], "GET", keys[i]), 1);
            assert_int_equal(fs_cluster_count(c, "GET", keys[i]), 1);
        }
    }
    assert_int_equal(fs_cluster_count(c, "GET", NULL), N + 2);
    assert_int_equal(fs_cluster_count(c, "ASKING", NULL), 1);
}

/* ------------------------------------------------------------------ order */

/* 64 commands over 3 nodes, some redirected (MOVED, ASK, TRYAGAIN): replies in the
 * caller's order. */
static void test_order_64_with_redirects(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    enum { N = 64 };
    static char keys[N][32], vals[N][32];
    int owner[N], holder[N];
    for (int i = 0; i < N; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "ord%d:", i);
        owner[i] = (i * 7 + i / 5) % 3; /* an irregular interleaving */
        key_on(c, owner[i], prefix, keys[i], sizeof keys[i]);
        snprintf(vals[i], sizeof vals[i], "value-%02d", i);
        holder[i] = owner[i];
    }
    /* MOVED: keys 5 and 40 to another node; ASK: key 17; TRYAGAIN twice: key 33 */
    slot_move mv[2] = {{fs_key_slot(keys[5], strlen(keys[5])), (owner[5] + 1) % 3},
                       {fs_key_slot(keys[40], strlen(keys[40])), (owner[40] + 2) % 3}};
    holder[5] = mv[0].node;
    holder[40] = mv[1].node;
    set_map_with_moves(c, mv, 2);
    for (int i = 0; i < N; i++) /* keys sharing a moved slot (unlikely) move too */
        if (i != 5 && i != 40) {
            int s = fs_key_slot(keys[i], strlen(keys[i]));
            if (s == mv[0].slot) holder[i] = mv[0].node;
            if (s == mv[1].slot) holder[i] = mv[1].node;
        }
    char msg[96];
    holder[17] = (owner[17] + 1) % 3;
    snprintf(msg, sizeof msg, "-ASK %d 127.0.0.1:%d\r\n", fs_key_slot(keys[17], strlen(keys[17])),
             fs_port(c->nodes[holder[17]]));
    fs_add_reply(c->nodes[owner[17]], "GET", keys[17], 1, msg);
    fs_add_reply(c->nodes[holder[33]], "GET", keys[33], 2, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
    for (int i = 0; i < N; i++) fs_store_set(c->nodes[holder[i]], keys[i], vals[i]);
    fs_store_set(c->nodes[owner[17]], keys[17], vals[17]); /* ASK is one-off: later runs ask the owner */

    for (int i = 0; i < N; i++) append2(f->batch, "GET", keys[i]);
    assert_int_equal(sl_batch_count(f->batch), N);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.commands, N);
    assert_int_equal(sz.errors, 0);
    assert_int_equal(sz.records, N);
    for (int i = 0; i < N; i++) want_str(f->batch, (size_t)i, vals[i]);
    assert_int_equal(sl_batch_count(f->batch), 0);
    /* each command got exactly one reply: a second run gives the same, in order */
    for (int i = N; i-- > 0;) append2(f->batch, "GET", keys[i]);
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    for (int i = 0; i < N; i++) want_str(f->batch, (size_t)(N - 1 - i), vals[i]);
}

/* Mixed command types redirected in one batch keep their order and their reply types. */
static void test_order_mixed_types(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k0[32], k1[32], k2[32];
    key_on(c, 0, "mx0:", k0, sizeof k0);
    key_on(c, 1, "mx1:", k1, sizeof k1);
    key_on(c, 2, "mx2:", k2, sizeof k2);
    /* the first INCR k0 is answered TRYAGAIN once and retried after the second one ran */
    fs_add_reply(c->nodes[0], "INCR", k0, 1, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
    append3(f->batch, "SET", k1, "one");
    append2(f->batch, "INCR", k0);
    append2(f->batch, "GET", k1);
    append2(f->batch, "INCR", k0);
    append2(f->batch, "GET", k2);
    append2(f->batch, "ECHO", "hi");
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.errors, 0);
    const uint8_t *data;
    const sl_reply *r = reply_at(f->batch, 0, &data);
    assert_int_equal(r->type, SL_REPLY_STATUS);
    r = reply_at(f->batch, 1, &data);
    assert_int_equal(r->type, SL_REPLY_INTEGER);
    r = reply_at(f->batch, 3, &data);
    assert_int_equal(r->type, SL_REPLY_INTEGER);
    /* each INCR ran once on node 0 (the TRYAGAIN one after its retry): 1 and 2 */
    int64_t a = reply_at(f->batch, 1, &data)->value.integer;
    int64_t b = reply_at(f->batch, 3, &data)->value.integer;
    assert_true((a == 1 && b == 2) || (a == 2 && b == 1));
    want_str(f->batch, 2, "one");
    want_nil(f->batch, 4);
    want_str(f->batch, 5, "hi");
    assert_int_equal(fs_count(c->nodes[0], "INCR", k0), 3);
}

/* ------------------------------------------------ split commands, zero-copy */

/* A multi-key command split per slot where one part is answered MOVED and another ASK:
 * only those parts are resent, and the merged reply keeps the caller's key order. */
static void test_split_parts_redirected(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char k0[32], k1[32], k2[32], k3[32], msg[96];
    key_on(c, 0, "sp0:", k0, sizeof k0);
    int s1 = key_on(c, 1, "sp1:", k1, sizeof k1);
    int s2 = key_on(c, 2, "sp2:", k2, sizeof k2);
    key_on(c, 0, "sp3:", k3, sizeof k3);
    slot_move mv = {s1, 2};                                 /* k1: MOVED to node 2 */
    set_map_with_moves(c, &mv, 1);
    snprintf(msg, sizeof msg, "-ASK %d 127.0.0.1:%d\r\n", s2, fs_port(c->nodes[0]));
    fs_add_reply(c->nodes[2], "MGET", k2, 1, msg);          /* k2: ASK to node 0 */
    fs_store_set(c->nodes[0], k0, "v0");
    fs_store_set(c->nodes[2], k1, "v1");
    fs_store_set(c->nodes[0], k2, "v2");
    fs_store_set(c->nodes[0], k3, "v3");

    const char *argv[5] = {"MGET", k0, k1, k2, k3};
    assert_int_equal(sl_batch_append_argv(f->batch, NULL, 5, argv, NULL), 0);
    append2(f->batch, "ECHO", "after");
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.commands, 2);
    assert_int_equal(sz.errors, 0);
    size_t n;
    const uint8_t *data;
    const sl_reply *r = sl_batch_replies(f->batch, &n, &data, NULL);
    assert_int_equal(n, 6);
    assert_int_equal(r[0].type, SL_REPLY_ARRAY);
    assert_int_equal(r[0].len, 4);
    const char *want[4] = {"v0", "v1", "v2", "v3"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[1 + i].type, SL_REPLY_STRING);
        assert_int_equal(r[1 + i].len, 2);
        assert_memory_equal(data + r[1 + i].offset, want[i], 2);
    }
    want_str(f->batch, 1, "after");
    /* the parts: k1 to node 1 then node 2; k2 to node 2 then (ASKING) node 0 */
    assert_int_equal(fs_count(c->nodes[1], "MGET", k1), 1);
    assert_int_equal(fs_count(c->nodes[2], "MGET", k1), 1);
    assert_int_equal(fs_count(c->nodes[2], "MGET", k2), 1);
    assert_int_equal(fs_count_asking(c->nodes[0], "MGET", k2), 1);
    assert_int_equal(fs_cluster_count(c, "MGET", NULL), 6);
    assert_int_equal(fs_cluster_count(c, "ASKING", NULL), 1);
}

/* sl_batch_run with every command owned by one node (the zero-copy path: the caller's
 * bytes written unchanged) where one command is answered MOVED: only that one is resent. */
static void test_zero_copy_batch_redirected(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    enum { N = 8 };
    char keys[N][32], cmds[N * 64];
    size_t len = 0;
    int moved_slot = -1;
    for (int i = 0; i < N; i++) {
        char prefix[16], val[16];
        snprintf(prefix, sizeof prefix, "zc%d:", i);
        int slot = key_on(c, 1, prefix, keys[i], sizeof keys[i]);
        if (i == 5) moved_slot = slot;
        snprintf(val, sizeof val, "z%d", i);
        fs_store_set(c->nodes[i == 5 ? 0 : 1], keys[i], val);
        len += (size_t)snprintf(cmds + len, sizeof cmds - len, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
                                strlen(keys[i]), keys[i]);
    }
    slot_move mv = {moved_slot, 0};
    set_map_with_moves(c, &mv, 1);
    for (int i = 0; i < N; i++) /* (these keys happen to have distinct slots) */
        if (i != 5) assert_true(fs_key_slot(keys[i], strlen(keys[i])) != moved_slot);
    uint64_t bytes0 = fs_bytes_received(c->nodes[1]);
    sl_sizes sz;
    int rc = sl_batch_run(f->batch, cmds, len, N, EXEC_TIMEOUT_MS, NULL, 0, NULL, 0, &sz);
    assert_int_equal(rc, 0);
    assert_int_equal(sz.commands, N);
    assert_int_equal(sz.errors, 0);
    for (int i = 0; i < N; i++) {
        char val[16];
        snprintf(val, sizeof val, "z%d", i);
        want_str(f->batch, (size_t)i, val);
    }
    assert_int_equal(fs_count(c->nodes[1], "GET", NULL), N);
    assert_int_equal(fs_count(c->nodes[0], "GET", keys[5]), 1);
    assert_int_equal(fs_count(c->nodes[0], "GET", NULL), 1);
    /* node 1 got exactly the caller's bytes */
    assert_int_equal(fs_bytes_received(c->nodes[1]) - bytes0, len);
    /* and copy_out gives the same records */
    sl_reply recs[N];
    uint8_t data[256];
    assert_int_equal(sl_batch_copy_out(f->batch, recs, sizeof recs, data, sizeof data, &sz), 0);
    assert_int_equal(recs[5].type, SL_REPLY_STRING);
    assert_memory_equal(data + recs[5].offset, "z5", 2);
}

/* MOVED to a node that is down: that command fails with SL_ERR_IO, the others complete. */
static void test_moved_to_dead_node(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_dead_port dead;
    fs_dead_port_open(&dead);
    char k[32], a[32], msg[96];
    int slot = key_on(c, 0, "md:", k, sizeof k);
    key_on(c, 1, "mda:", a, sizeof a);
    fs_store_set(c->nodes[1], a, "alive");
    snprintf(msg, sizeof msg, "-MOVED %d 127.0.0.1:%d\r\n", slot, dead.port);
    fs_add_reply(c->nodes[0], "GET", k, 1, msg);
    append2(f->batch, "GET", k);
    append2(f->batch, "GET", a);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0); /* refused: an I/O error, not a timeout */
    assert_int_equal(sz.errors, 1);
    want_err_prefix(f->batch, 0, SL_ERR_IO, NULL);
    want_str(f->batch, 1, "alive");
    fs_dead_port_close(&dead);
}

/* Many commands with 1 KiB values over 3 nodes (partial writes and reads), a few of them
 * redirected: every reply in order. */
static void test_large_batch_with_redirects(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    enum { N = 1500 };
    static char keys[N][24];
    static char val[1025];
    for (int i = 0; i < 1024; i++) val[i] = (char)('a' + i % 26);
    val[1024] = 0;
    int owner[N];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "lb:%d", i);
        owner[i] = fs_cluster_default_owner(c, fs_key_slot(keys[i], strlen(keys[i])));
    }
    /* the slots of keys 10 and 700 move to the next node */
    slot_move mv[2] = {{fs_key_slot(keys[10], strlen(keys[10])), (owner[10] + 1) % 3},
                       {fs_key_slot(keys[700], strlen(keys[700])), (owner[700] + 1) % 3}};
    set_map_with_moves(c, mv, 2);
    for (int i = 0; i < N; i++) {
        int s = fs_key_slot(keys[i], strlen(keys[i]));
        int h = s == mv[0].slot ? mv[0].node : s == mv[1].slot ? mv[1].node : owner[i];
        val[0] = (char)('A' + i % 26);
        fs_store_set(c->nodes[h], keys[i], val);
    }
    for (int i = 0; i < N; i++) append2(f->batch, "GET", keys[i]);
    sl_sizes sz;
    assert_int_equal(exec_batch(f->batch, &sz), 0);
    assert_int_equal(sz.errors, 0);
    assert_int_equal(sz.commands, N);
    for (int i = 0; i < N; i++) {
        val[0] = (char)('A' + i % 26);
        want_str(f->batch, (size_t)i, val);
    }
    uint64_t resent = 0;
    for (int i = 0; i < N; i++) {
        int sl = fs_key_slot(keys[i], strlen(keys[i]));
        resent += sl == mv[0].slot || sl == mv[1].slot;
    }
    assert_int_equal(fs_cluster_count(c, "GET", NULL), N + resent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_moved_resends_and_patches, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_moved_empty_host, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_moved_to_new_node, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_ask_once_without_patch, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_tryagain_retried, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_clusterdown_retried, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_tryagain_forever_hits_limit, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_redirect_limit, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_ask_loop_hits_limit, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_only_affected_resent, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_order_64_with_redirects, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_order_mixed_types, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_split_parts_redirected, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_zero_copy_batch_redirected, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_moved_to_dead_node, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_large_batch_with_redirects, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_moved_schedules_throttled_refresh, setup3, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
