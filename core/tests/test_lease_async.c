/* test_lease_async: blocking commands on leased connections in the libuv engine (the loop
 * thread and its completion queues, slotlane_uv.h), against fake nodes. A BLPOP held by
 * an FS_STALL rule waits on its own connection while 200 GETs of the same client to the
 * same node complete; sl_batch_cancel, a deadline or sl_loop_free end it and close only
 * its lease (the shared connection is never reconnected); a pipeline holding one is
 * refused; a MOVED resends it. Verdicts from completions and the node's counters. */
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
#include "slotlane_uv.h"

#include "lease.h"

#define WAIT_MS 5000


static sl_completion take(sl_cq *q)
{
    sl_completion c;
    memset(&c, 0, sizeof c);
    assert_int_equal(sl_cq_wait(q, &c, 1, WAIT_MS), 1);
    return c;
}

static sl_batch *blpop_batch(sl_client *c, const char *key, const char *timeout)
{
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    append3(b, "BLPOP", key, timeout);
    return b;
}

static void test_async_blpop_does_not_stall_the_node(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client *c = new_client(fs_port(n), SL_MODE_PLAIN);
    sl_loop *l;
    sl_cq *q;
    assert_int_equal(sl_loop_new(&l), 0);
    assert_int_equal(sl_cq_new(&q), 0);
    fs_store_set(n, "k", "v");
    uint64_t accepted = fs_connections(n);

    stall_once(n, "BLPOP", "q");
    sl_batch *bp = blpop_batch(c, "q", "0");
    assert_int_equal(sl_loop_submit_cq(l, bp, 0, q, (void *)1, 0), 0);
    assert_int_equal(fs_wait_stalled(n, 1, WAIT_MS), 0);

    /* 200 GETs to the same node, on the shared connection, while the BLPOP waits */
    sl_batch *g[200];
    for (int i = 0; i < 200; i++) {
        assert_int_equal(sl_batch_new(c, &g[i]), 0);
        append2(g[i], "GET", "k");
        assert_int_equal(sl_loop_submit_cq(l, g[i], 0, q, (void *)2, 0), 0);
    }
    for (int i = 0; i < 200; i++) {
        sl_completion done = take(q);
        assert_ptr_equal(done.token, (void *)2);
        assert_int_equal(done.status, 0);
        want_str(done.batch, 0, "v");
    }
    assert_int_equal(fs_open_connections(n), 2); /* the shared one (the probe made it), the lease */

    /* cancelled: its lease is closed, the other connections stay */
    assert_int_equal(sl_batch_cancel(bp), 0);
    sl_completion done = take(q);
    assert_ptr_equal(done.batch, bp);
    assert_int_equal(done.status, SL_ECANCELLED);
    want_err(bp, 0, SL_ERR_CANCELLED);
    assert_int_equal(fs_wait_open_connections(n, 1, WAIT_MS), 0);
    fs_release(n);

    /* the next BLPOP on a fresh lease gets the element pushed for it */
    fs_add_reply(n, "BLPOP", "q", 1, "*2\r\n$1\r\nq\r\n$1\r\ne\r\n");
    sl_batch_reset(bp);
    append3(bp, "BLPOP", "q", "0");
    assert_int_equal(sl_loop_submit_cq(l, bp, 0, q, (void *)3, 0), 0);
    done = take(q);
    assert_int_equal(done.status, 0);
    const uint8_t *data;
    const sl_reply *r = reply_at(bp, 0, &data);
    assert_int_equal(r->type, SL_REPLY_ARRAY);
    assert_memory_equal(data + r[2].offset, "e", 1);
    assert_int_equal(fs_connections(n), accepted + 2); /* two leases; the shared one never reconnected */

    sl_loop_free(l);
    for (int i = 0; i < 200; i++) sl_batch_free(g[i]);
    sl_batch_free(bp);
    sl_cq_free(q);
    sl_client_free(c);
    fs_stop(n);
}

static void test_async_deadline_and_refusal(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client *c = new_client(fs_port(n), SL_MODE_PLAIN);
    sl_loop *l;
    sl_cq *q;
    assert_int_equal(sl_loop_new(&l), 0);
    assert_int_equal(sl_cq_new(&q), 0);

    stall_once(n, "BLPOP", "q");
    sl_batch *bp = blpop_batch(c, "q", "0");
    assert_int_equal(sl_loop_submit_cq(l, bp, 60, q, NULL, 0), 0); /* the caller's deadline */
    sl_completion done = take(q);
    assert_int_equal(done.status, SL_ETIMEOUT);
    want_err(bp, 0, SL_ERR_TIMEOUT);
    assert_int_equal(fs_wait_open_connections(n, 1, WAIT_MS), 0); /* only the probe's is left */
    fs_release(n);

    sl_batch_reset(bp);
    append2(bp, "GET", "k");
    append3(bp, "BRPOP", "q", "1");
    assert_int_equal(sl_loop_submit_cq(l, bp, 0, q, NULL, 0), 0);
    done = take(q);
    assert_int_equal(done.status, SL_EBLOCKING);
    assert_int_equal(done.sizes.errors, 2);
    want_err_prefix(bp, 1, SL_ERR_ARGUMENT, "BRPOP blocks");
    assert_int_equal(fs_count(n, NULL, "k") + fs_count(n, "BRPOP", NULL), 0);

    /* sl_loop_free with a BLPOP in flight: it completes cancelled, its lease goes */
    stall_once(n, "BLPOP", "q");
    sl_batch_reset(bp);
    append3(bp, "BLPOP", "q", "0");
    assert_int_equal(sl_loop_submit_cq(l, bp, 0, q, NULL, 0), 0);
    assert_int_equal(fs_wait_stalled(n, 1, WAIT_MS), 0);
    sl_loop_free(l);
    done = take(q);
    assert_int_equal(done.status, SL_ECANCELLED);
    assert_int_equal(fs_wait_open_connections(n, 1, WAIT_MS), 0);
    fs_release(n);
    /* the client works with the blocking API afterwards, its leases included */
    fs_add_reply(n, "BLPOP", "q", 1, "*-1\r\n");
    sl_batch_reset(bp);
    append3(bp, "BLPOP", "q", "1");
    assert_int_equal(sl_batch_exec(bp, 0, NULL), 0);
    want_nil(bp, 0);
    sl_batch_free(bp);
    sl_cq_free(q);
    sl_client_free(c);
    fs_stop(n);
}

static void test_async_blocking_moved(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 2);
    sl_client *c = new_client(fs_port(cl.nodes[0]), SL_MODE_CLUSTER);
    sl_loop *l;
    sl_cq *q;
    assert_int_equal(sl_loop_new(&l), 0);
    assert_int_equal(sl_cq_new(&q), 0);
    char key[32];
    int slot = key_on(&cl, 0, "q", key, sizeof key);
    char moved[96];
    snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:%d\r\n", slot, fs_port(cl.nodes[1]));
    fs_add_reply(cl.nodes[0], "BZPOPMIN", key, 1, moved);
    fs_add_reply(cl.nodes[1], "BZPOPMIN", key, 1, "*-1\r\n");
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    append3(b, "BZPOPMIN", key, "0.5");
    assert_int_equal(sl_loop_submit_cq(l, b, 0, q, NULL, 0), 0);
    sl_completion done = take(q);
    assert_int_equal(done.status, 0);
    want_nil(b, 0);
    assert_int_equal(fs_count(cl.nodes[0], "BZPOPMIN", key), 1);
    assert_int_equal(fs_count(cl.nodes[1], "BZPOPMIN", key), 1);
    sl_loop_free(l);
    sl_batch_free(b);
    sl_cq_free(q);
    sl_client_free(c);
    fs_cluster_stop(&cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_blpop_does_not_stall_the_node),
        cmocka_unit_test(test_async_deadline_and_refusal),
        cmocka_unit_test(test_async_blocking_moved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
