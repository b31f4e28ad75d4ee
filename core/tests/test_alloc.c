/* Zero allocation per command in steady state: every allocation of the client goes through
 * the allocator hooks; after a warmup, 10 000 pipelined commands (plain and cluster, argv
 * and RESP-bytes input, copy-out and in-batch results) allocate nothing. Also: the hooks
 * see every allocation (none leak), and a failing allocator gives SL_ENOMEM, not a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_server.h"
#include "slotlane.h"

typedef struct counting {
    long allocs;   /* malloc + realloc calls */
    long live;     /* blocks currently allocated */
    long fail_after; /* > 0: the fail_after-th allocation from now fails */
} counting;

static void *c_malloc(size_t n, void *ctx)
{
    counting *k = ctx;
    if (k->fail_after > 0 && --k->fail_after == 0) return NULL;
    k->allocs++;
    k->live++;
    return malloc(n);
}

static void *c_realloc(void *p, size_t n, void *ctx)
{
    counting *k = ctx;
    if (k->fail_after > 0 && --k->fail_after == 0) return NULL;
    k->allocs++;
    if (!p) k->live++;
    return realloc(p, n);
}

static void c_free(void *p, void *ctx)
{
    counting *k = ctx;
    if (p) k->live--;
    free(p);
}

static sl_client *connect_counting(counting *k, const char *url, sl_mode mode, const sl_allocator *al)
{
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = mode;
    o.allocator = al;
    sl_client *c = NULL;
    char err[256];
    int rc = sl_client_new(&c, &o, err, sizeof err);
    if (rc) fail_msg("sl_client_new: %s", err);
    (void)k;
    return c;
}

/* 100 commands: SET/GET over keys spread across all slots, as argv. */
static void queue_argv(sl_batch *b, int round)
{
    char key[32], val[32];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "key:%d", (i * 97 + round) % 4096);
        snprintf(val, sizeof val, "value-%d", i);
        const char *set[] = {"SET", key, val};
        assert_int_equal(sl_batch_append_argv(b, NULL, 3, set, NULL), 0);
        const char *get[] = {"GET", key};
        assert_int_equal(sl_batch_append_argv(b, NULL, 2, get, NULL), 0);
    }
}

static void check_replies(sl_batch *b, size_t ncmds)
{
    size_t n;
    const uint8_t *data;
    const sl_reply *r = sl_batch_replies(b, &n, &data, NULL);
    assert_int_equal(n, ncmds);
    for (size_t i = 0; i < n; i++) assert_int_not_equal(r[i].type, SL_REPLY_ERROR);
}

static void run_steady_state(const char *url, sl_mode mode)
{
    counting k = {0, 0, 0};
    sl_allocator al = {SL_ALLOCATOR_VERSION, (unsigned)sizeof(sl_allocator), c_malloc, c_realloc, c_free, &k};
    sl_client *c = connect_counting(&k, url, mode, &al);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);

    /* Pre-encoded RESP bytes for the one-crossing path. */
    char *resp = malloc(1 << 16);
    size_t len = 0;
    for (int i = 0; i < 100; i++) {
        char key[32];
        int kl = snprintf(key, sizeof key, "key:%d", (i * 31) % 4096);
        len += (size_t)snprintf(resp + len, 1024, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, key);
    }
    static uint8_t recs[100 * 24 * 4], data[1 << 16];
    sl_sizes sz;

    /* The same workload twice: the first pass grows the buffers to their size (they only
     * grow, once); the second must not allocate at all. */
    long before = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) before = k.allocs;
        for (int round = 0; round < 100; round++) { /* 100 x 100 = 10 000 commands per form */
            queue_argv(b, round);
            assert_int_equal(sl_batch_exec(b, 0, &sz), 0);
            assert_int_equal(sz.errors, 0);
            check_replies(b, 100);
        }
        for (int round = 0; round < 100; round++) {
            assert_int_equal(sl_batch_run(b, resp, len, 100, 0, recs, sizeof recs, data, sizeof data, &sz), 0);
            assert_int_equal(sz.commands, 100);
            assert_int_equal(sl_batch_run(b, resp, len, 100, 0, NULL, 0, NULL, 0, &sz), 0);
            check_replies(b, 100);
        }
    }
    assert_int_equal(k.allocs - before, 0);
    assert_true(k.allocs > 0); /* the hooks were used at all */
    free(resp);
    sl_batch_free(b);
    sl_client_free(c);
    assert_int_equal(k.live, 0); /* everything allocated through the hooks was freed through them */
}

static void test_plain_steady_state(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n));
    run_steady_state(url, SL_MODE_PLAIN);
    fs_stop(n);
}

static void test_cluster_steady_state(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(cl.nodes[0]));
    run_steady_state(url, SL_MODE_CLUSTER);
    fs_cluster_stop(&cl);
}

static void test_failing_allocator(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n));
    /* Fail the i-th allocation for every i until creation and one batch succeed: each
     * failure must surface as SL_ENOMEM (or a clean error), never a crash or a leak. */
    for (long i = 1; i < 200; i++) {
        counting k = {0, 0, i};
        sl_allocator al = {SL_ALLOCATOR_VERSION, (unsigned)sizeof(sl_allocator), c_malloc, c_realloc, c_free, &k};
        sl_client_options o = SL_CLIENT_OPTIONS_INIT;
        o.url = url;
        o.mode = SL_MODE_PLAIN;
        o.allocator = &al;
        sl_client *c = NULL;
        int rc = sl_client_new(&c, &o, NULL, 0);
        if (rc) {
            assert_null(c);
            assert_int_equal(k.live, 0);
            continue;
        }
        sl_batch *b = NULL;
        rc = sl_batch_new(c, &b);
        if (rc == 0) {
            const char *get[] = {"GET", "k"};
            rc = sl_batch_append_argv(b, NULL, 2, get, NULL);
            if (rc == 0) rc = sl_batch_exec(b, 0, NULL);
            assert_true(rc == 0 || rc == SL_ENOMEM || rc == SL_EIO);
            sl_batch_free(b);
        } else {
            assert_int_equal(rc, SL_ENOMEM);
        }
        sl_client_free(c);
        assert_int_equal(k.live, 0);
    }
    fs_stop(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_steady_state),
        cmocka_unit_test(test_cluster_steady_state),
        cmocka_unit_test(test_failing_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
