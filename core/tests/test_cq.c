/* Completion queues (slotlane_uv.h: sl_cq_*, sl_loop_submit_cq, sl_batch_cancel) against
 * fake nodes: the descriptor's empty -> non-empty rule, every completion path (replies, a
 * dead node, a deadline, a per-batch cancel before and during the execution, sl_loop_detach,
 * sl_loop_free, sl_client_free), a cancel leaving the shared connection in step, one
 * connection per node for many callers, the in-flight bounds, fork(), and the stress run:
 * 10 000 batches from 8 threads, every tenth cancelled, a node's connections dropped, the
 * loop freed with batches in flight. Every wait is for an event (a completion, a stall the
 * fake server reports); its limit only turns a hang into a failure. */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cmocka.h>

#include "client.h"
#include "fake_server.h"
#include "sl_test.h"
#include "slotlane_uv.h"
#include "uv/cq.h"

#define WAIT_MS 5000 /* a hang fails instead of hanging */

static int fd_readable(sl_cq *q)
{
    struct pollfd p = {sl_cq_fd(q), POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Takes exactly n completions (waiting for each), failing after WAIT_MS without one. */
static void take_n(sl_cq *q, sl_completion *out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t k = sl_cq_wait(q, out + got, n - got, WAIT_MS);
        if (k == 0) fail_msg("no completion within %d ms (%zu of %zu)", WAIT_MS, got, n);
        got += k;
    }
}

static fs_rule stall_rule(const char *cmd, const char *key)
{
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = cmd;
    r.key = key;
    r.action = FS_STALL;
    return r;
}

/* ------------------------------------------------------------ the queue itself */

static void test_signal_on_empty_to_nonempty(void **state)
{
    (void)state;
    sl_cq *q;
    assert_int_equal(sl_cq_new(&q), 0);
    assert_true(sl_cq_fd(q) >= 0);
    assert_false(fd_readable(q));
    sl_completion c, out[8];
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 5; i++) {
        c.token = (void *)(uintptr_t)(i + 1);
        sl__cq_push(q, &c);
    }
    assert_int_equal(sl__cq_signals(q), 1); /* five pushes, one wake-up */
    assert_true(fd_readable(q));
    assert_int_equal(sl_cq_drain(q, out, 2), 2);
    assert_ptr_equal(out[0].token, (void *)1);
    assert_ptr_equal(out[1].token, (void *)2);
    assert_true(fd_readable(q)); /* three still waiting */
    assert_int_equal(sl_cq_drain(q, out, 8), 3);
    assert_ptr_equal(out[2].token, (void *)5);
    assert_false(fd_readable(q)); /* the drain that emptied it cleared it */
    assert_int_equal(sl_cq_drain(q, out, 8), 0);
    assert_int_equal(sl_cq_wait(q, out, 8, 0), 0);
    /* The ring grows past its first size and keeps the order. */
    for (int i = 0; i < 200; i++) {
        c.token = (void *)(uintptr_t)(i + 1);
        sl__cq_push(q, &c);
        if (i % 3 == 2) {
            assert_int_equal(sl_cq_drain(q, out, 1), 1);
        }
    }
    assert_int_equal(sl__cq_signals(q), 2);
    size_t left = 0;
    uintptr_t last = 0;
    for (size_t k; (k = sl_cq_drain(q, out, 8)) > 0;) {
        for (size_t i = 0; i < k; i++) {
            assert_true((uintptr_t)out[i].token > last);
            last = (uintptr_t)out[i].token;
        }
        left += k;
    }
    assert_int_equal(left, 200 - 66);
    assert_int_equal(last, 200);
    sl_cq_free(q);
    sl_cq_free(NULL);
    assert_int_equal(sl_cq_new(NULL), SL_EINVAL);
}

/* ------------------------------------------------------------ completion paths */

typedef struct fixture {
    fs_cluster cl;
    sl_client *c;
    sl_loop *l;
    sl_cq *q;
} fixture;

static void fx_start(fixture *f, int nodes, unsigned max_batches)
{
    fs_cluster_start(&f->cl, nodes);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(f->cl.nodes[0]));
    o.url = url;
    o.mode = SL_MODE_CLUSTER;
    o.connect_timeout_ms = 1000;
    if (max_batches) o.max_inflight_batches = max_batches;
    char err[256];
    if (sl_client_new(&f->c, &o, err, sizeof err) != 0) fail_msg("sl_client_new: %s", err);
    assert_int_equal(sl_loop_new(&f->l), 0);
    assert_int_equal(sl_cq_new(&f->q), 0);
}

static void fx_stop(fixture *f)
{
    sl_loop_free(f->l);
    sl_client_free(f->c);
    sl_completion left[4];
    assert_int_equal(sl_cq_drain(f->q, left, 4), 0); /* nothing completes twice */
    sl_cq_free(f->q);
    for (int i = 0; i < f->cl.n; i++) {
        if (!f->cl.nodes[i]) continue;
        fs_clear_rules(f->cl.nodes[i]);
        fs_release(f->cl.nodes[i]);
    }
    fs_cluster_stop(&f->cl);
}

static sl_batch *set_get(sl_client *c, const char *key, const char *val)
{
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    append3(b, "SET", key, val);
    append2(b, "GET", key);
    return b;
}

static void test_replies_complete_once(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 3, 0);
    enum { N = 40 };
    sl_batch *b[N];
    char key[32], val[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "r:%d", i);
        snprintf(val, sizeof val, "v%d", i);
        b[i] = set_get(f.c, key, val);
        assert_int_equal(sl_loop_submit_cq(f.l, b[i], -1, f.q, (void *)(uintptr_t)(i + 1), SL_SUBMIT_WAIT), 0);
    }
    sl_completion out[N];
    take_n(f.q, out, N);
    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        int t = (int)(uintptr_t)out[i].token - 1;
        assert_true(t >= 0 && t < N);
        seen[t]++;
        assert_ptr_equal(out[i].batch, b[t]);
        assert_int_equal(out[i].status, 0);
        assert_int_equal(out[i].sizes.commands, 2);
        assert_int_equal(out[i].sizes.errors, 0);
        snprintf(val, sizeof val, "v%d", t);
        want_str(b[t], 1, val);
    }
    for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
    /* Fewer wake-ups than completions is the common case but not a guarantee; at most one
     * per completion is. */
    assert_true(sl__cq_signals(f.q) <= N);
    /* A batch whose completion was taken may be submitted again. */
    sl_batch_reset(b[0]);
    append2(b[0], "GET", "r:1");
    assert_int_equal(sl_loop_submit_cq(f.l, b[0], -1, f.q, NULL, 0), 0);
    take_n(f.q, out, 1);
    want_str(b[0], 0, "v1");
    for (int i = 0; i < N; i++) sl_batch_free(b[i]);
    fx_stop(&f);
}

static void test_bad_submissions(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 1, 0);
    sl_batch *b;
    assert_int_equal(sl_batch_new(f.c, &b), 0);
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, NULL, 0), SL_EINVAL); /* no commands */
    append2(b, "GET", "x");
    assert_int_equal(sl_loop_submit_cq(NULL, b, -1, f.q, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_loop_submit_cq(f.l, NULL, -1, f.q, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, NULL, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_loop_submit_cq(f.l, b, -2, f.q, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, NULL, 0x10), SL_EINVAL);
    assert_int_equal(sl_batch_cancel(NULL), SL_EINVAL);
    assert_int_equal(sl_batch_cancel(b), 0); /* not in flight: no effect on the next one */
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, NULL, 0), 0);
    sl_completion out[2];
    take_n(f.q, out, 1);
    assert_int_equal(out[0].status, 0);
    want_nil(b, 0);
    assert_int_equal(sl_cq_drain(NULL, out, 2), 0);
    assert_int_equal(sl_cq_wait(NULL, out, 2, 0), 0);
    assert_int_equal(sl_cq_fd(NULL), SL_EINVAL);
    assert_string_equal(sl_strerror(SL_EBUSY), "the client's in-flight limit is reached");
    assert_string_equal(sl_strerror(SL_EFORK), "used in a child after fork()");
    sl_batch_free(b);
    fx_stop(&f);
}

static void test_dead_node_completes(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 2, 0);
    char key[32];
    key_on(&f.cl, 1, "dead:", key, sizeof key);
    fs_stop(f.cl.nodes[1]); /* the slot map still names it: connects are refused */
    f.cl.nodes[1] = NULL;
    sl_batch *b;
    assert_int_equal(sl_batch_new(f.c, &b), 0);
    append2(b, "GET", key);
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, b, 0), 0);
    sl_completion out[1];
    take_n(f.q, out, 1);
    assert_ptr_equal(out[0].token, b);
    assert_int_equal(out[0].sizes.errors, 1);
    want_err(b, 0, SL_ERR_IO);
    sl_batch_free(b);
    fx_stop(&f);
}

static void test_timeout_completes(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 1, 0);
    fs_rule r = stall_rule("GET", NULL);
    fs_add_rule(f.cl.nodes[0], &r);
    sl_batch *b;
    assert_int_equal(sl_batch_new(f.c, &b), 0);
    append2(b, "GET", "slow");
    assert_int_equal(sl_loop_submit_cq(f.l, b, 100, f.q, NULL, 0), 0);
    sl_completion out[1];
    take_n(f.q, out, 1);
    assert_int_equal(out[0].status, SL_ETIMEOUT);
    want_err(b, 0, SL_ERR_TIMEOUT);
    sl_batch_free(b);
    fx_stop(&f);
}

/* The heart of it: batch A stalls on the shared connection, B and C are queued behind it;
 * cancelling A completes it at once (the server still holds its reply), B and C get their
 * own replies after the release, on the same connection, and so does a later batch. */
static void test_cancel_keeps_connection_in_step(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 1, 0);
    fs_node *n = f.cl.nodes[0];
    fs_store_set(n, "a", "va");
    fs_store_set(n, "b", "vb");
    fs_store_set(n, "c", "vc");
    /* Warm the connection, so the count of connections below is about the cancel. */
    sl_batch *w = set_get(f.c, "w", "vw");
    assert_int_equal(sl_loop_submit_cq(f.l, w, -1, f.q, NULL, 0), 0);
    sl_completion out[4];
    take_n(f.q, out, 1);
    uint64_t conns = fs_connections(n);
    fs_rule r = stall_rule("GET", "a");
    r.times = 1;
    fs_add_rule(n, &r);
    sl_batch *a, *b, *c;
    assert_int_equal(sl_batch_new(f.c, &a), 0);
    assert_int_equal(sl_batch_new(f.c, &b), 0);
    assert_int_equal(sl_batch_new(f.c, &c), 0);
    append2(a, "GET", "a");
    append2(a, "GET", "b");
    append2(b, "GET", "b");
    append2(c, "GET", "c");
    append2(c, "GET", "a");
    assert_int_equal(sl_loop_submit_cq(f.l, a, -1, f.q, a, 0), 0);
    assert_int_equal(fs_wait_stalled(n, 1, WAIT_MS), 0);
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, b, 0), 0);
    assert_int_equal(sl_loop_submit_cq(f.l, c, -1, f.q, c, 0), 0);
    /* B and C are behind A on the one connection (the server parses nothing after a
     * stalled request), whether the cancel reaches the loop before or after them. */
    assert_int_equal(sl_batch_cancel(a), 0);
    take_n(f.q, out, 1); /* with the stall still on: the cancel did not wait for the server */
    assert_ptr_equal(out[0].token, a);
    assert_int_equal(out[0].status, SL_ECANCELLED);
    assert_int_equal(out[0].sizes.commands, 2);
    want_err(a, 0, SL_ERR_CANCELLED);
    want_err(a, 1, SL_ERR_CANCELLED);
    assert_int_equal(fs_stalled(n), 1);
    fs_release(n);
    take_n(f.q, out, 2);
    for (int i = 0; i < 2; i++) assert_int_equal(out[i].status, 0);
    want_str(b, 0, "vb");
    want_str(c, 0, "vc");
    want_str(c, 1, "va");
    /* The connection is still in step and still the same one. */
    sl_batch_reset(a);
    append2(a, "GET", "a");
    append2(a, "GET", "c");
    assert_int_equal(sl_loop_submit_cq(f.l, a, -1, f.q, a, 0), 0);
    take_n(f.q, out, 1);
    assert_int_equal(out[0].status, 0);
    want_str(a, 0, "va");
    want_str(a, 1, "vc");
    assert_int_equal(fs_connections(n), conns);
    assert_int_equal(fs_open_connections(n), 1);
    sl_batch_free(a);
    sl_batch_free(b);
    sl_batch_free(c);
    sl_batch_free(w);
    fx_stop(&f);
}

static void test_cancel_before_start(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 3, 0);
    /* Every node stalls: a batch cancelled right after its submission either never started
     * or is held by the server, so its completion can only be the cancel. */
    fs_rule r = stall_rule(NULL, NULL);
    for (int i = 0; i < 3; i++) fs_add_rule(f.cl.nodes[i], &r);
    sl_batch *b;
    assert_int_equal(sl_batch_new(f.c, &b), 0);
    append3(b, "MSET", "x1", "1");
    append2(b, "MGET", "x1");
    const char *mset[] = {"MSET", "{a}1", "1", "{b}1", "2", "{c}1", "3"};
    assert_int_equal(sl_batch_append_argv(b, NULL, 7, mset, NULL), 0); /* split over slots */
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, NULL, 0), 0);
    assert_int_equal(sl_batch_cancel(b), 0);
    sl_completion out[1];
    take_n(f.q, out, 1);
    assert_int_equal(out[0].status, SL_ECANCELLED);
    assert_int_equal(out[0].sizes.commands, 3);
    for (size_t i = 0; i < 3; i++) want_err(b, i, SL_ERR_CANCELLED);
    sl_batch_free(b);
    fx_stop(&f);
}

static void test_detach_and_free_complete(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 2, 0);
    fs_rule r = stall_rule("GET", NULL);
    for (int i = 0; i < 2; i++) fs_add_rule(f.cl.nodes[i], &r);
    enum { N = 8 };
    sl_batch *b[N];
    char key[16];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "d%d", i);
        assert_int_equal(sl_batch_new(f.c, &b[i]), 0);
        append2(b[i], "GET", key);
        assert_int_equal(sl_loop_submit_cq(f.l, b[i], -1, f.q, b[i], 0), 0);
    }
    /* d0 is the first request on its node's connection: counted, then held. */
    fs_node *owner = f.cl.nodes[fs_cluster_default_owner(&f.cl, fs_key_slot("d0", 2))];
    assert_int_equal(fs_wait_count(owner, "GET", "d0", 1, WAIT_MS), 0);
    assert_int_equal(sl_loop_detach(f.l, f.c), 0); /* every execution completes first */
    sl_completion out[N];
    assert_int_equal(sl_cq_drain(f.q, out, N), N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(out[i].status, SL_ECANCELLED);
        want_err(out[i].batch, 0, SL_ERR_CANCELLED);
    }
    /* Attached again by the next submission; then sl_loop_free ends what is in flight. */
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "d%d", i);
        append2(b[i], "GET", key); /* an execution leaves the queue empty */
        assert_int_equal(sl_loop_submit_cq(f.l, b[i], -1, f.q, b[i], 0), 0);
    }
    if (fs_wait_count(owner, "GET", "d0", 2, WAIT_MS) != 0) fail_msg("d0 count %llu, all GET %llu / %llu, conns %llu open %llu", (unsigned long long)fs_count(owner, "GET", "d0"), (unsigned long long)fs_count(f.cl.nodes[0], "GET", NULL), (unsigned long long)fs_count(f.cl.nodes[1], "GET", NULL), (unsigned long long)fs_connections(owner), (unsigned long long)fs_open_connections(owner));
    sl_loop_free(f.l);
    assert_int_equal(sl_cq_drain(f.q, out, N), N);
    for (int i = 0; i < N; i++) assert_int_equal(out[i].status, SL_ECANCELLED);
    assert_int_equal(sl_loop_new(&f.l), 0);
    for (int i = 0; i < N; i++) sl_batch_free(b[i]);
    /* sl_client_free of a client still attached (idle) to a loop detaches it first. */
    fs_clear_rules(f.cl.nodes[0]);
    fs_clear_rules(f.cl.nodes[1]);
    fs_release(f.cl.nodes[0]);
    fs_release(f.cl.nodes[1]);
    sl_batch *x = set_get(f.c, "x", "1");
    assert_int_equal(sl_loop_submit_cq(f.l, x, -1, f.q, NULL, 0), 0);
    take_n(f.q, out, 1);
    assert_int_equal(out[0].status, 0);
    sl_batch_free(x);
    sl_client_free(f.c);
    f.c = NULL;
    fx_stop(&f);
}

/* Many callers, one connection per node. */
typedef struct caller {
    fixture *f;
    int id;
    int failures;
} caller;

static void *caller_main(void *arg)
{
    caller *k = arg;
    sl_cq *q;
    if (sl_cq_new(&q) != 0) {
        k->failures++;
        return NULL;
    }
    sl_batch *b;
    if (sl_batch_new(k->f->c, &b) != 0) {
        k->failures++;
        return NULL;
    }
    char key[32], val[32];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "m:%d:%d", k->id, i);
        snprintf(val, sizeof val, "%d.%d", k->id, i);
        sl_batch_reset(b);
        append3(b, "SET", key, val);
        append2(b, "GET", key);
        sl_completion c;
        if (sl_loop_submit_cq(k->f->l, b, -1, q, NULL, 0) != 0 || sl_cq_wait(q, &c, 1, WAIT_MS) != 1 ||
            c.status != 0) {
            k->failures++;
            break;
        }
        const uint8_t *d;
        const sl_reply *r = reply_at(b, 1, &d);
        if (r->type != SL_REPLY_STRING || r->len != strlen(val) || memcmp(d + r->offset, val, r->len) != 0)
            k->failures++;
    }
    sl_batch_free(b);
    sl_cq_free(q);
    return NULL;
}

static void test_one_connection_per_node(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 3, 0);
    uint64_t before[3];
    for (int i = 0; i < 3; i++) before[i] = fs_connections(f.cl.nodes[i]);
    enum { T = 8 };
    caller k[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        k[i] = (caller){&f, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, caller_main, &k[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(k[i].failures, 0);
    }
    /* The blocking client's connections from discovery are reused or one new one made:
     * never one per caller. */
    for (int i = 0; i < 3; i++) assert_true(fs_connections(f.cl.nodes[i]) - before[i] <= 1);
    fx_stop(&f);
}

/* ------------------------------------------------------------ backpressure */

typedef struct waiter {
    fixture *f;
    sl_batch *b;
    int rc;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    w->rc = sl_loop_submit_cq(w->f->l, w->b, -1, w->f->q, w->b, SL_SUBMIT_WAIT);
    return NULL;
}

static void test_inflight_bound(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 1, 2);
    fs_rule r = stall_rule("GET", NULL);
    fs_add_rule(f.cl.nodes[0], &r);
    sl_batch *b[4];
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sl_batch_new(f.c, &b[i]), 0);
        append2(b[i], "GET", "k");
    }
    assert_int_equal(sl_loop_submit_cq(f.l, b[0], -1, f.q, b[0], SL_SUBMIT_FAIL_FAST), 0);
    assert_int_equal(sl_loop_submit_cq(f.l, b[1], -1, f.q, b[1], SL_SUBMIT_FAIL_FAST), 0);
    assert_int_equal(sl_loop_submit_cq(f.l, b[2], -1, f.q, b[2], SL_SUBMIT_FAIL_FAST), SL_EBUSY);
    assert_int_equal(atomic_load(&f.c->q_batches), 2); /* the refused one took no place */
    /* A waiting submitter gets in once a completion frees a place. */
    waiter w = {&f, b[2], 99};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    assert_int_equal(fs_wait_stalled(f.cl.nodes[0], 1, WAIT_MS), 0);
    assert_int_equal(sl_batch_cancel(b[0]), 0);
    sl_completion out[4];
    take_n(f.q, out, 1);
    assert_ptr_equal(out[0].token, b[0]);
    assert_int_equal(out[0].status, SL_ECANCELLED);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    assert_int_equal(sl_loop_submit_cq(f.l, b[3], -1, f.q, b[3], SL_SUBMIT_FAIL_FAST), SL_EBUSY);
    fs_clear_rules(f.cl.nodes[0]);
    fs_release(f.cl.nodes[0]);
    take_n(f.q, out, 2);
    for (int i = 0; i < 2; i++) assert_int_equal(out[i].status, 0);
    assert_int_equal(atomic_load(&f.c->q_batches), 0);
    assert_int_equal(atomic_load(&f.c->q_bytes), 0);
    for (int i = 0; i < 4; i++) sl_batch_free(b[i]);
    fx_stop(&f);
}

/* ------------------------------------------------------------ fork */

static void test_fork_fails_clearly(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 1, 0);
    sl_batch *b = set_get(f.c, "f", "1");
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, NULL, 0), 0);
    sl_completion out[1];
    take_n(f.q, out, 1);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The child: every use fails with SL_EFORK at once, the blocking one naming the fork. */
        int bad = 0;
        sl_batch_reset(b);
        append2(b, "GET", "f");
        if (sl_loop_submit_cq(f.l, b, -1, f.q, NULL, 0) != SL_EFORK) bad |= 1;
        sl_batch_reset(b);
        append2(b, "GET", "f");
        sl_sizes sz;
        if (sl_batch_exec(b, 1000, &sz) != SL_EFORK || sz.commands != 0) bad |= 2;
        if (!strstr(sl_client_errmsg(f.c), "fork()")) bad |= 4;
        sl_loop_free(f.l); /* must not wait for the parent's thread */
        _exit(bad);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* The parent's client is untouched. */
    sl_batch_reset(b);
    append2(b, "GET", "f");
    assert_int_equal(sl_loop_submit_cq(f.l, b, -1, f.q, NULL, 0), 0);
    take_n(f.q, out, 1);
    want_str(b, 0, "1");
    sl_batch_free(b);
    fx_stop(&f);
}

/* ------------------------------------------------------------ stress */

#define S_THREADS 8
#define S_PER 1250 /* 8 x 1250 = 10 000 batches */
#define S_DEPTH 16

typedef struct stress {
    fixture *f;
    int id;
    pthread_barrier_t *submitted;/* every thread has submitted all but its last batch */
    pthread_barrier_t *lasts;    /* every thread has submitted its last batch */
    pthread_barrier_t *freed;    /* the loop is freed */
    unsigned char seen[S_PER];   /* completions per submission */
    int wrong;                   /* a reply that is neither right nor an error record */
    char why[160];               /* the first wrong one */
    int ok, cancelled, errors;
} stress;

#define WRONG(s, ...) do { if (!(s)->wrong++) snprintf((s)->why, sizeof (s)->why, __VA_ARGS__); } while (0)

static void stress_check(stress *s, const sl_completion *c)
{
    int i = (int)(uintptr_t)c->token;
    if (i < 0 || i >= S_PER) {
        WRONG(s, "token %d", i);
        return;
    }
    s->seen[i]++;
    sl_batch *b = c->batch;
    if (c->status == SL_ECANCELLED) s->cancelled++;
    size_t n;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(b, &n, &d, NULL);
    if (c->sizes.commands != 2 || n < 2) {
        WRONG(s, "batch %d: status %d, %llu commands, %zu records", i, c->status,
              (unsigned long long)c->sizes.commands, n);
        return;
    }
    char val[32];
    snprintf(val, sizeof val, "%d.%d", s->id, i);
    if (r[1].type == SL_REPLY_STRING) {
        if (r[1].len != strlen(val) || memcmp(d + r[1].offset, val, r[1].len) != 0)
            WRONG(s, "batch %d: GET gave %.*s", i, (int)r[1].len, (const char *)d + r[1].offset);
        else if (c->status == 0) s->ok++;
    } else if (r[1].type == SL_REPLY_ERROR) {
        s->errors++;
    } else if (r[1].type == SL_REPLY_NIL && r[0].type == SL_REPLY_ERROR) {
        /* the SET was lost with its connection (a write is not sent again); the GET, a read,
         * was retried on the new one and saw no value */
        s->errors++;
    } else {
        WRONG(s, "batch %d: GET record type %d", i, r[1].type);
    }
    if (r[0].type != SL_REPLY_STATUS && r[0].type != SL_REPLY_ERROR) WRONG(s, "batch %d: SET record type %d", i, r[0].type);
}

static void stress_queue(stress *s, sl_batch *b, int i)
{
    char key[48], val[32];
    sl_batch_reset(b);
    if (i == S_PER - 1) snprintf(key, sizeof key, "stall:%d", s->id);
    else snprintf(key, sizeof key, "s:%d:%d", s->id, i);
    snprintf(val, sizeof val, "%d.%d", s->id, i);
    append3(b, "SET", key, val);
    append2(b, "GET", key);
}

static void *stress_main(void *arg)
{
    stress *s = arg;
    fixture *f = s->f;
    sl_cq *q;
    sl_batch *pool[S_DEPTH], *last;
    int free_n = S_DEPTH;
    if (sl_cq_new(&q) != 0 || sl_batch_new(f->c, &last) != 0) abort();
    for (int i = 0; i < S_DEPTH; i++)
        if (sl_batch_new(f->c, &pool[i]) != 0) abort();
    sl_completion out[S_DEPTH + 1];
    for (int i = 0; i < S_PER - 1; i++) {
        while (free_n == 0) {
            size_t k = sl_cq_wait(q, out, S_DEPTH, WAIT_MS);
            if (k == 0) {
                WRONG(s, "no completion within %d ms at batch %d", WAIT_MS, i);
                break;
            }
            for (size_t j = 0; j < k; j++) {
                stress_check(s, &out[j]);
                pool[free_n++] = out[j].batch;
            }
        }
        if (free_n == 0) break;
        sl_batch *b = pool[--free_n];
        stress_queue(s, b, i);
        int rc = sl_loop_submit_cq(f->l, b, -1, q, (void *)(uintptr_t)i, SL_SUBMIT_WAIT);
        if (rc != 0) {
            WRONG(s, "submit %d: %d", i, rc);
            pool[free_n++] = b;
            break;
        }
        if (i % 10 == 9) sl_batch_cancel(b); /* mid-flight: before, during or after its round */
    }
    pthread_barrier_wait(s->submitted);
    /* The last one is held by the server (the main thread stalled its key): in flight
     * when the loop is freed, with whatever else is still on that connection. */
    stress_queue(s, last, S_PER - 1);
    int rc = sl_loop_submit_cq(f->l, last, -1, q, (void *)(uintptr_t)(S_PER - 1), SL_SUBMIT_FAIL_FAST);
    if (rc != 0) WRONG(s, "the last submit: %d", rc);
    pthread_barrier_wait(s->lasts);
    pthread_barrier_wait(s->freed);
    for (size_t k; (k = sl_cq_drain(q, out, S_DEPTH + 1)) > 0;) {
        for (size_t j = 0; j < k; j++) {
            stress_check(s, &out[j]);
            if (out[j].batch != last) pool[free_n++] = out[j].batch;
        }
    }
    if (free_n != S_DEPTH) WRONG(s, "%d of %d batches came back", free_n, S_DEPTH);
    for (int i = 0; i < free_n; i++) sl_batch_free(pool[i]);
    sl_batch_free(last);
    sl_cq_free(q);
    return NULL;
}

static void test_stress_threads_cancel_node_dies_loop_freed(void **state)
{
    (void)state;
    fixture f;
    fx_start(&f, 3, 0);
    pthread_barrier_t submitted, lasts, freed;
    pthread_barrier_init(&submitted, NULL, S_THREADS + 1);
    pthread_barrier_init(&lasts, NULL, S_THREADS + 1);
    pthread_barrier_init(&freed, NULL, S_THREADS + 1);
    static stress s[S_THREADS];
    pthread_t th[S_THREADS];
    for (int t = 0; t < S_THREADS; t++) {
        memset(&s[t], 0, sizeof s[t]);
        s[t].f = &f;
        s[t].id = t;
        s[t].submitted = &submitted;
        s[t].lasts = &lasts;
        s[t].freed = &freed;
        assert_int_equal(pthread_create(&th[t], NULL, stress_main, &s[t]), 0);
    }
    /* A node dies on the way (about a third of its share of the GETs): its connection
     * drops under the batches on it, and the next ones reconnect. */
    assert_int_equal(fs_wait_count(f.cl.nodes[1], "GET", NULL, S_THREADS * S_PER / 9, 4 * WAIT_MS), 0);
    fs_drop_connections(f.cl.nodes[1]);
    fs_node *owner[S_THREADS];
    for (int t = 0; t < S_THREADS; t++) {
        char key[32];
        snprintf(key, sizeof key, "stall:%d", t);
        owner[t] = f.cl.nodes[fs_cluster_default_owner(&f.cl, fs_key_slot(key, strlen(key)))];
        fs_rule r = stall_rule("SET", key);
        fs_add_rule(owner[t], &r);
    }
    pthread_barrier_wait(&submitted); /* the stall keys are used only after this */
    pthread_barrier_wait(&lasts);
    /* Each last SET is held (the first one on a connection is counted, the ones behind it
     * there are not parsed): wait until every node with a last batch holds one. A last
     * batch still in the loop's inbox when it is freed completes cancelled too, with a
     * cancelled record per command. */
    for (int t = 0; t < S_THREADS; t++) assert_int_equal(fs_wait_stalled(owner[t], 1, WAIT_MS), 0);
    sl_loop_free(f.l);
    f.l = NULL;
    pthread_barrier_wait(&freed);
    int ok = 0, cancelled = 0, errors = 0;
    for (int t = 0; t < S_THREADS; t++) {
        pthread_join(th[t], NULL);
        if (s[t].wrong) fail_msg("thread %d: %d wrong, the first: %s", t, s[t].wrong, s[t].why);
        for (int i = 0; i < S_PER; i++)
            if (s[t].seen[i] != 1) fail_msg("thread %d batch %d completed %d times", t, i, s[t].seen[i]);
        ok += s[t].ok;
        cancelled += s[t].cancelled;
        errors += s[t].errors;
    }
    assert_true(cancelled >= S_THREADS); /* at least the held last batches */
    assert_true(ok > S_THREADS * S_PER / 2);
    print_message("stress: %d ok, %d cancelled, %d with error records\n", ok, cancelled, errors);
    pthread_barrier_destroy(&submitted);
    pthread_barrier_destroy(&lasts);
    pthread_barrier_destroy(&freed);
    fx_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_on_empty_to_nonempty),
        cmocka_unit_test(test_replies_complete_once),
        cmocka_unit_test(test_bad_submissions),
        cmocka_unit_test(test_dead_node_completes),
        cmocka_unit_test(test_timeout_completes),
        cmocka_unit_test(test_cancel_keeps_connection_in_step),
        cmocka_unit_test(test_cancel_before_start),
        cmocka_unit_test(test_detach_and_free_complete),
        cmocka_unit_test(test_one_connection_per_node),
        cmocka_unit_test(test_inflight_bound),
        cmocka_unit_test(test_fork_fails_clearly),
        cmocka_unit_test(test_stress_threads_cancel_node_dies_loop_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
