/* test_failures: what the engine does when nodes misbehave or go away, and how it
 * discovers a cluster, through the public API only, against fake nodes
 * (tests/support/fake_server.h): a node closing mid-reply or before replying, a stalled
 * node against the execution deadline and against sl_client_cancel() from another thread,
 * malformed reply bytes, discovery (seed, empty endpoint host, auto mode, a seed that is
 * down, CLUSTER SHARDS/NODES fallbacks), a dead node at connect time and its backoff, the
 * one-command helper's error reply, and bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_server.h"
#include "sl_test.h"
#include "slotlane.h"

/* ------------------------------------------------------------------ helpers */

/* A library must not kill its host with SIGPIPE when a server goes away: count them and
 * fail the test that raised one, instead of dying. */
static volatile sig_atomic_t sigpipes;
static void on_sigpipe(int sig)
{
    (void)sig;
    sigpipes++;
}

typedef struct fixture {
    fs_cluster cl;
    sl_client *client;
    sl_batch *batch;
    /* 12 keys, 4 per node, in an interleaved order; values stored on their owners */
    char keys[12][32];
    char vals[12][32];
    int owner[12];
} fixture;

static int setup3(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    fs_cluster_start(&f->cl, 3);
    for (int i = 0; i < 12; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "f%d:", i);
        f->owner[i] = i % 3;
        key_on(&f->cl, f->owner[i], prefix, f->keys[i], sizeof f->keys[i]);
        snprintf(f->vals[i], sizeof f->vals[i], "val%d", i);
        fs_store_set(f->cl.nodes[f->owner[i]], f->keys[i], f->vals[i]);
    }
    f->client = new_client(fs_port(f->cl.nodes[0]), SL_MODE_CLUSTER);
    assert_int_equal(sl_batch_new(f->client, &f->batch), 0);
    /* warm up: a connection to every node */
    for (int i = 0; i < 12; i++) append2(f->batch, "GET", f->keys[i]);
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 0);
    for (int i = 0; i < 3; i++) fs_reset_counters(f->cl.nodes[i]);
    sigpipes = 0;
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

static void append_all_gets(fixture *f)
{
    for (int i = 0; i < 12; i++) append2(f->batch, "GET", f->keys[i]);
}

/* Every command of node `bad` has an error record of `kind`; the others their values. */
static void want_node_failed(fixture *f, int bad, sl_err_kind kind)
{
    for (int i = 0; i < 12; i++) {
        if (f->owner[i] == bad)
            want_err(f->batch, (size_t)i, kind);
        else
            want_str(f->batch, (size_t)i, f->vals[i]);
    }
}

static void want_all_values(fixture *f)
{
    for (int i = 0; i < 12; i++) want_str(f->batch, (size_t)i, f->vals[i]);
}

/* ------------------------------------------------------- closing mid-reply */

static void close_case(fixture *f, const fs_rule *rule)
{
    fs_cluster *c = &f->cl;
    fs_add_rule(c->nodes[1], rule);
    sl_stats s0 = stats_of(f->client);
    uint64_t conns0 = fs_connections(c->nodes[1]);

    append_all_gets(f);
    sl_sizes sz;
    int rc = sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz);
    assert_int_equal(rc, 0); /* other nodes answered: the execution as a whole did not fail */
    assert_int_equal(sz.commands, 12);
    assert_int_equal(sz.errors, 4);
    want_node_failed(f, 1, SL_ERR_IO);
    /* the others were sent once */
    for (int i = 0; i < 12; i++)
        if (f->owner[i] != 1) assert_int_equal(fs_cluster_count(c, "GET", f->keys[i]), 1);

    /* the next batch reconnects and succeeds */
    append_all_gets(f);
    rc = sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz);
    assert_int_equal(rc, 0);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
    /* one reconnect for the reads' one retry (failed again), one for the next batch */
    assert_int_equal(fs_connections(c->nodes[1]), conns0 + 2);
    sl_stats s1 = stats_of(f->client);
    assert_int_equal(s1.reconnects - s0.reconnects, 2);
    assert_int_equal(s1.retries - s0.retries, 4);
    assert_int_equal(sigpipes, 0);
}

static void test_close_mid_reply(void **state)
{
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 2; /* the first reply and the one retry of the reads (test_failover: the retry) */
    r.action = FS_CLOSE_AFTER;
    r.close_after = 3; /* "$4\r" of "$4\r\nval1\r\n" */
    close_case(*state, &r);
}

static void test_close_before_reply(void **state)
{
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 2; /* and the reads' one retry */
    r.action = FS_CLOSE;
    close_case(*state, &r);
}

/* Closing in the middle of an aggregate reply (an MGET array cut after its header and
 * part of its first element). */
static void test_close_mid_aggregate(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "MGET";
    r.times = 2; /* and its one retry (a read) */
    r.action = FS_CLOSE_AFTER;
    r.close_after = 8; /* "*1\r\n$4\r\n" of "*1\r\n$4\r\nval1\r\n" */
    fs_add_rule(c->nodes[1], &r);
    append2(f->batch, "GET", f->keys[0]);
    append2(f->batch, "MGET", f->keys[1]);
    append2(f->batch, "GET", f->keys[2]);
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.commands, 3);
    assert_int_equal(sz.errors, 1);
    assert_int_equal(sz.records, 3); /* no stray children of the cut array */
    want_str(f->batch, 0, f->vals[0]);
    want_err(f->batch, 1, SL_ERR_IO);
    want_str(f->batch, 2, f->vals[2]);
    assert_int_equal(sigpipes, 0);
}

/* The node closes after answering the first of its commands completely: that one keeps
 * its value, the rest of that node's commands fail with SL_ERR_IO. */
static void test_close_after_first_reply(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    /* node 1's commands are 1, 4, 7, 10: close on the second one (key 4) */
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.key = f->keys[4];
    r.times = 2; /* and the reads' one retry: 4, 7 and 10 are sent again behind it */
    r.action = FS_CLOSE;
    fs_add_rule(c->nodes[1], &r);
    append_all_gets(f);
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 3);
    for (int i = 0; i < 12; i++) {
        if (f->owner[i] == 1 && i != 1)
            want_err(f->batch, (size_t)i, SL_ERR_IO);
        else
            want_str(f->batch, (size_t)i, f->vals[i]);
    }
    append_all_gets(f);
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    want_all_values(f);
    assert_int_equal(sigpipes, 0);
}

/* A connection the server dropped between two batches (idle close) is re-established. */
static void test_server_dropped_idle_connection(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    append_all_gets(f);
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, NULL), 0);
    want_all_values(f);
    sl_stats s0 = stats_of(f->client);
    fs_drop_connections(c->nodes[2]);
    append_all_gets(f);
    sl_sizes sz;
    int rc = sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz);
    assert_int_equal(rc, 0);
    /* Either the engine noticed the close and reconnected at once, or it failed node 2's
     * commands with SL_ERR_IO; the batch after that must work either way. */
    for (int i = 0; i < 12; i++)
        if (f->owner[i] != 2 || !is_error_kind(f->batch, (size_t)i, SL_ERR_IO))
            want_str(f->batch, (size_t)i, f->vals[i]);
    append_all_gets(f);
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
    assert_int_equal(stats_of(f->client).reconnects - s0.reconnects, 1);
    assert_int_equal(sigpipes, 0);
}

/* ------------------------------------------------------------ stalled node */

static void test_stalled_node_timeout(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 1;
    r.action = FS_STALL; /* until fs_release */
    fs_add_rule(c->nodes[2], &r);

    append_all_gets(f);
    sl_sizes sz;
    int64_t t0 = fs_now_ms();
    int rc = sl_batch_exec(f->batch, 50, &sz);
    int64_t took = fs_now_ms() - t0;
    assert_int_equal(rc, SL_ETIMEOUT); /* the stall is never released: only the deadline ends it */
    assert_true(took >= 45);
    assert_int_equal(sz.commands, 12);
    assert_int_equal(sz.errors, 4);
    want_node_failed(f, 2, SL_ERR_TIMEOUT);
    assert_int_equal(sl_batch_count(f->batch), 0);

    /* The held answers arrive late; they must not be taken for the next batch's replies. */
    fs_release(c->nodes[2]);
    for (int i = 0; i < 12; i++) fs_store_set(c->nodes[f->owner[i]], f->keys[i], "second");
    for (int i = 0; i < 12; i++) snprintf(f->vals[i], sizeof f->vals[i], "second");
    append_all_gets(f);
    rc = sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz);
    assert_int_equal(rc, 0);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
}

/* A reply that never comes (a blocked command) must not hold up the next execution: the
 * connection that owed it is closed at the deadline and the next batch reconnects. */
static void test_timeout_frees_connection(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 1;
    r.action = FS_STALL; /* never released in this test */
    fs_add_rule(c->nodes[2], &r);
    append_all_gets(f);
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(f->batch, 50, &sz), SL_ETIMEOUT);
    want_node_failed(f, 2, SL_ERR_TIMEOUT);
    uint64_t conns = fs_connections(c->nodes[2]);
    append_all_gets(f);
    /* success says it did not wait on the stalled connection (never released: that would
     * be a timeout), and the connection count says it made a new one */
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
    assert_int_equal(fs_connections(c->nodes[2]), conns + 1);
    fs_release(c->nodes[2]);
}

/* A stall shorter than the deadline is just a slow reply. */
static void test_slow_node_within_deadline(void **state)
{
    fixture *f = *state;
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 1;
    r.action = FS_STALL;
    r.stall_ms = 30;
    fs_add_rule(f->cl.nodes[1], &r);
    append_all_gets(f);
    sl_sizes sz;
    int64_t t0 = fs_now_ms();
    assert_int_equal(sl_batch_exec(f->batch, 2000, &sz), 0);
    assert_true(fs_now_ms() - t0 >= 25);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
}

/* The deadline passes while a command waits out TRYAGAIN backoff: SL_ETIMEOUT, that
 * command's record is SL_ERR_TIMEOUT, the others complete. A client of its own with 100
 * redirects allowed: the backoff (10, 20, 40, 80, then 160 ms per retry) outlasts a 2 s
 * deadline by far, so the deadline comes first however slow the machine, and 2 s leaves
 * the other nodes' replies all the time they need. */
static void test_timeout_during_retry_backoff(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(c->nodes[0]));
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_CLUSTER;
    o.max_redirects = 100;
    sl_client *client = NULL;
    assert_int_equal(sl_client_new(&client, &o, NULL, 0), 0);
    sl_batch *b;
    assert_int_equal(sl_batch_new(client, &b), 0);
    fs_add_reply(c->nodes[0], "GET", f->keys[3], 0, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
    for (int i = 0; i < 12; i++) append2(b, "GET", f->keys[i]);
    sl_sizes sz;
    int rc = sl_batch_exec(b, 2000, &sz);
    uint64_t sends = fs_count(c->nodes[0], "GET", f->keys[3]);
    if (rc != SL_ETIMEOUT) {
        const uint8_t *data;
        const sl_reply *r = reply_at(b, 3, &data);
        fprintf(stderr, "exec: rc %d, %llu sends of the TRYAGAIN command, its record: type %d kind %d \"%.*s\"\n", rc,
                (unsigned long long)sends, r->type, r->flags, (int)r->len, (const char *)data + r->offset);
    }
    assert_int_equal(rc, SL_ETIMEOUT);
    /* resent after each wait, never back to back: in 2 s at most 1 + 4 + 2000/160 sends,
     * and no resend once the deadline passed (100 would be the redirect limit) */
    assert_true(sends >= 2 && sends <= 18);
    assert_int_equal(sz.commands, 12);
    assert_int_equal(sz.errors, 1);
    for (int i = 0; i < 12; i++) {
        if (i == 3)
            want_err(b, (size_t)i, SL_ERR_TIMEOUT);
        else
            want_str(b, (size_t)i, f->vals[i]);
    }
    fs_clear_rules(c->nodes[0]);
    for (int i = 0; i < 12; i++) append2(b, "GET", f->keys[i]);
    assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 0);
    sl_batch_free(b);
    sl_client_free(client);
}

/* ------------------------------------------------------------ cancellation */

typedef struct canceller {
    fs_node *node;
    sl_client *client;
    int stalled;
} canceller;

static void *cancel_main(void *arg)
{
    canceller *k = arg;
    k->stalled = fs_wait_stalled(k->node, 1, 3000) == 0;
    sl_client_cancel(k->client);
    return NULL;
}

static void test_cancel_from_other_thread(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 1;
    r.action = FS_STALL;
    fs_add_rule(c->nodes[1], &r);

    canceller k = {c->nodes[1], f->client, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_main, &k), 0);
    append_all_gets(f);
    sl_sizes sz;
    int rc = sl_batch_exec(f->batch, -1, &sz); /* no deadline: only the cancel ends it */
    pthread_join(th, NULL);
    assert_true(k.stalled);
    assert_int_equal(rc, SL_ECANCELLED); /* no deadline, a stall never released: only the cancel */
    assert_int_equal(sz.commands, 12);
    /* node 1's commands were cancelled; the others have their value, or were cancelled if
     * their replies had not been read yet */
    int cancelled = 0;
    for (int i = 0; i < 12; i++) {
        if (f->owner[i] == 1) {
            want_err(f->batch, (size_t)i, SL_ERR_CANCELLED);
            cancelled++;
        } else if (is_error_kind(f->batch, (size_t)i, SL_ERR_CANCELLED)) {
            cancelled++;
        } else {
            want_str(f->batch, (size_t)i, f->vals[i]);
        }
    }
    assert_int_equal(sz.errors, (uint64_t)cancelled);

    /* the cancel was consumed: the next execution runs normally */
    fs_release(c->nodes[1]);
    append_all_gets(f);
    rc = sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz);
    assert_int_equal(rc, 0);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
}

/* A cancel keeps the replies that had reached the client: node 1 answers its first GET
 * (keys[1]) and stalls on its second (keys[4]); the fake server writes the first answer
 * before it reports the stall, so that reply is in the client's socket when the cancel
 * comes and must be a value, whatever poll() reports first. */
static void test_cancel_keeps_arrived_replies(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.key = f->keys[4];
    r.times = 1;
    r.action = FS_STALL;
    fs_add_rule(c->nodes[1], &r);

    canceller k = {c->nodes[1], f->client, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_main, &k), 0);
    append_all_gets(f);
    sl_sizes sz;
    int rc = sl_batch_exec(f->batch, -1, &sz); /* no deadline: only the cancel ends it */
    pthread_join(th, NULL);
    assert_true(k.stalled);
    assert_int_equal(rc, SL_ECANCELLED);
    want_str(f->batch, 1, f->vals[1]);
    for (int i = 4; i < 12; i += 3) want_err(f->batch, (size_t)i, SL_ERR_CANCELLED);
    fs_release(c->nodes[1]);
}

typedef struct retry_canceller {
    fs_node *node;
    const char *key;
    sl_client *client;
    int seen;
} retry_canceller;

static void *cancel_on_retry(void *arg)
{
    retry_canceller *k = arg;
    /* the second TRYAGAIN answer: the engine is now between retries */
    k->seen = fs_wait_count(k->node, "GET", k->key, 2, 3000) == 0;
    sl_client_cancel(k->client);
    return NULL;
}

/* A cancel while the engine waits out TRYAGAIN backoff ends the execution promptly. */
static void test_cancel_during_retry_backoff(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_add_reply(c->nodes[2], "GET", f->keys[5], 0, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
    retry_canceller k = {c->nodes[2], f->keys[5], f->client, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_on_retry, &k), 0);
    append_all_gets(f);
    sl_sizes sz;
    int rc = sl_batch_exec(f->batch, -1, &sz);
    pthread_join(th, NULL);
    assert_true(k.seen);
    /* the cancel came right after the second send, with most of the backoff of the five
     * retries still ahead: the execution was cancelled, not run to the redirect limit */
    assert_int_equal(rc, SL_ECANCELLED);
    want_err(f->batch, 5, SL_ERR_CANCELLED);
    for (int i = 0; i < 12; i++)
        if (i != 5) want_str(f->batch, (size_t)i, f->vals[i]);
    assert_true(fs_count(c->nodes[2], "GET", f->keys[5]) < 6);
}

/* A cancel while nothing runs has no effect: it must not leak into a later execution
 * (a context watcher may fire just after its execution finished). */
static void test_cancel_before_exec(void **state)
{
    fixture *f = *state;
    sl_client_cancel(f->client);
    append_all_gets(f);
    sl_sizes sz;
    int rc = sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz);
    assert_int_equal(rc, 0);
    assert_int_equal(sz.commands, 12);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
}

/* ----------------------------------------------------------- malformed reply */

static void test_malformed_reply(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    /* node 0's first command in the batch is key 0 */
    fs_add_reply(c->nodes[0], "GET", f->keys[0], 1, "?this is not RESP\r\n");
    uint64_t conns0 = fs_connections(c->nodes[0]);
    sl_stats s0 = stats_of(f->client);
    append_all_gets(f);
    sl_sizes sz;
    int rc = sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz);
    assert_int_equal(rc, 0);
    assert_int_equal(sz.errors, 4);
    want_node_failed(f, 0, SL_ERR_PROTOCOL);
    /* the client dropped its connection */
    assert_int_equal(fs_wait_open_connections(c->nodes[0], 0, 2000), 0);
    append_all_gets(f);
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 0);
    want_all_values(f);
    assert_int_equal(fs_connections(c->nodes[0]), conns0 + 1);
    assert_int_equal(stats_of(f->client).reconnects - s0.reconnects, 1);
}

/* A bulk length beyond the client's limit is a protocol error too. */
static void test_reply_over_limit(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    fs_add_reply(c->nodes[2], "GET", f->keys[2], 1, "$99999999999\r\n");
    append_all_gets(f);
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    want_node_failed(f, 2, SL_ERR_PROTOCOL);
    append_all_gets(f);
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), 0);
    want_all_values(f);
}

/* ---------------------------------------------------------------- discovery */

/* Sends one GET per node's key and checks each reached its owner and only it. */
static void check_routing(sl_client *client, fs_cluster *c)
{
    sl_batch *b;
    assert_int_equal(sl_batch_new(client, &b), 0);
    char keys[FS_MAX_NODES][32];
    uint64_t before[FS_MAX_NODES], before_key[FS_MAX_NODES];
    for (int i = 0; i < c->n; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "rt%d:", i);
        key_on(c, i, prefix, keys[i], sizeof keys[i]);
        fs_store_set(c->nodes[i], keys[i], prefix);
        before[i] = fs_count(c->nodes[i], "GET", NULL);
        before_key[i] = fs_cluster_count(c, "GET", keys[i]);
        append2(b, "GET", keys[i]);
    }
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 0);
    for (int i = 0; i < c->n; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "rt%d:", i);
        want_str(b, (size_t)i, prefix);
        assert_int_equal(fs_cluster_count(c, "GET", keys[i]), before_key[i] + 1);
        assert_int_equal(fs_count(c->nodes[i], "GET", NULL), before[i] + 1);
    }
    sl_batch_free(b);
}

static void test_discovery_from_any_seed(void **state)
{
    (void)state;
    fs_cluster c;
    fs_cluster_start(&c, 3);
    sl_client *client = new_client(fs_port(c.nodes[2]), SL_MODE_CLUSTER);
    assert_int_equal(sl_client_mode(client), SL_MODE_CLUSTER);
    assert_int_equal(fs_count(c.nodes[2], "CLUSTER SLOTS", NULL), 1);
    assert_int_equal(fs_count(c.nodes[0], "CLUSTER", NULL) + fs_count(c.nodes[1], "CLUSTER", NULL), 0);
    sl_stats s = stats_of(client);
    assert_int_equal(s.nodes, 3);
    assert_int_equal(s.moved, 0);
    check_routing(client, &c);
    assert_int_equal(stats_of(client).moved, 0);
    sl_client_free(client);
    fs_cluster_stop(&c);
}

/* CLUSTER SLOTS with "" as host: the nodes are at the address the client asked. */
static void test_discovery_empty_host(void **state)
{
    (void)state;
    fs_cluster c;
    fs_cluster_start(&c, 3);
    for (int i = 0; i < 3; i++) fs_set_empty_host(c.nodes[i], 1);
    sl_client *client = new_client(fs_port(c.nodes[1]), SL_MODE_CLUSTER);
    assert_int_equal(sl_client_mode(client), SL_MODE_CLUSTER);
    assert_int_equal(stats_of(client).nodes, 3);
    check_routing(client, &c);
    assert_int_equal(stats_of(client).moved, 0);
    sl_client_free(client);
    fs_cluster_stop(&c);
}

static void test_auto_detects_plain(void **state)
{
    (void)state;
    fs_node *n = fs_start(); /* CLUSTER * answers "ERR ... cluster support disabled" */
    sl_client *client = new_client(fs_port(n), SL_MODE_AUTO);
    assert_int_equal(sl_client_mode(client), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(client, &b), 0);
    /* keys of every slot go to the one node */
    for (int i = 0; i < 16; i++) {
        char k[16], v[16];
        snprintf(k, sizeof k, "p%d", i);
        snprintf(v, sizeof v, "v%d", i);
        append3(b, "SET", k, v);
        append2(b, "GET", k);
    }
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.errors, 0);
    for (int i = 0; i < 16; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        want_str(b, (size_t)(2 * i + 1), v);
    }
    assert_int_equal(fs_count(n, "GET", NULL), 16);
    sl_batch_free(b);
    sl_client_free(client);
    fs_stop(n);
}

static void test_auto_detects_cluster(void **state)
{
    (void)state;
    fs_cluster c;
    fs_cluster_start(&c, 3);
    sl_client *client = new_client(fs_port(c.nodes[0]), SL_MODE_AUTO);
    assert_int_equal(sl_client_mode(client), SL_MODE_CLUSTER);
    check_routing(client, &c);
    sl_client_free(client);
    fs_cluster_stop(&c);
}

/* Plain mode asks no CLUSTER command and sends everything to the one node. */
static void test_plain_mode_no_discovery(void **state)
{
    (void)state;
    fs_cluster c;
    fs_cluster_start(&c, 2);
    for (int i = 0; i < 2; i++) fs_set_enforce(c.nodes[i], 0); /* a forwarding server */
    sl_client *client = new_client(fs_port(c.nodes[1]), SL_MODE_PLAIN);
    assert_int_equal(sl_client_mode(client), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(client, &b), 0);
    char k0[32], k1[32];
    key_on(&c, 0, "pl:", k0, sizeof k0);
    key_on(&c, 1, "pl:", k1, sizeof k1);
    append2(b, "GET", k0);
    append2(b, "GET", k1);
    assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, NULL), 0);
    assert_int_equal(fs_count(c.nodes[1], "GET", NULL), 2);
    assert_int_equal(fs_count(c.nodes[0], "GET", NULL), 0);
    assert_int_equal(fs_cluster_count(&c, "CLUSTER", NULL), 0);
    sl_batch_free(b);
    sl_client_free(client);
    fs_cluster_stop(&c);
}

static void test_seed_down_then_up(void **state)
{
    (void)state;
    fs_cluster c;
    fs_cluster_start(&c, 3);
    fs_dead_port dead;
    fs_dead_port_open(&dead);
    char url[128];
    snprintf(url, sizeof url, "127.0.0.1:%d,127.0.0.1:%d", dead.port, fs_port(c.nodes[1]));
    sl_client *client = new_client_opts(url, SL_MODE_CLUSTER, NULL);
    assert_int_equal(sl_client_mode(client), SL_MODE_CLUSTER);
    assert_true(stats_of(client).nodes >= 3);
    check_routing(client, &c);
    sl_client_free(client);
    /* the same in auto mode */
    client = new_client_opts(url, SL_MODE_AUTO, NULL);
    assert_int_equal(sl_client_mode(client), SL_MODE_CLUSTER);
    check_routing(client, &c);
    sl_client_free(client);
    fs_dead_port_close(&dead);
    fs_cluster_stop(&c);
}

static void test_all_seeds_down(void **state)
{
    (void)state;
    fs_dead_port d1, d2;
    fs_dead_port_open(&d1);
    fs_dead_port_open(&d2);
    char url[128];
    snprintf(url, sizeof url, "127.0.0.1:%d,127.0.0.1:%d", d1.port, d2.port);
    for (int m = 0; m < 3; m++) {
        int rc = 0;
        sl_client *client = new_client_opts(url, m == 0 ? SL_MODE_CLUSTER : m == 1 ? SL_MODE_AUTO : SL_MODE_PLAIN, &rc);
        assert_null(client);
        assert_true(rc == SL_EIO || rc == SL_ECLUSTER);
    }
    /* the message is written */
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_CLUSTER;
    sl_client *client = (sl_client *)&o; /* must be overwritten with NULL */
    char err[256] = "";
    assert_true(sl_client_new(&client, &o, err, sizeof err) < 0);
    assert_null(client);
    assert_true(strlen(err) > 0);
    fs_dead_port_close(&d1);
    fs_dead_port_close(&d2);
}

/* CLUSTER SLOTS refused: the client falls back to CLUSTER SHARDS, then CLUSTER NODES. */
static void test_discovery_fallbacks(void **state)
{
    (void)state;
    for (int level = 1; level <= 2; level++) {
        fs_cluster c;
        fs_cluster_start(&c, 3);
        for (int i = 0; i < 3; i++) {
            fs_add_reply(c.nodes[i], "CLUSTER SLOTS", NULL, 0, "-ERR unknown subcommand 'SLOTS'.\r\n");
            if (level == 2)
                fs_add_reply(c.nodes[i], "CLUSTER SHARDS", NULL, 0, "-ERR unknown subcommand 'SHARDS'.\r\n");
        }
        sl_client *client = new_client(fs_port(c.nodes[0]), SL_MODE_AUTO);
        assert_int_equal(sl_client_mode(client), SL_MODE_CLUSTER);
        assert_int_equal(stats_of(client).nodes, 3);
        if (level == 1)
            assert_int_equal(fs_count(c.nodes[0], "CLUSTER SHARDS", NULL), 1);
        else
            assert_int_equal(fs_count(c.nodes[0], "CLUSTER NODES", NULL), 1);
        check_routing(client, &c);
        assert_int_equal(stats_of(client).moved, 0);
        sl_client_free(client);
        fs_cluster_stop(&c);
    }
}

/* RESP3: HELLO 3 on every connection; discovery reads the RESP3 shapes (CLUSTER SHARDS
 * answers maps there) and nil replies are RESP3 nulls. */
static void test_resp3_cluster(void **state)
{
    (void)state;
    for (int shards = 0; shards < 2; shards++) {
        fs_cluster c;
        fs_cluster_start(&c, 3);
        if (shards)
            for (int i = 0; i < 3; i++)
                fs_add_reply(c.nodes[i], "CLUSTER SLOTS", NULL, 0, "-ERR unknown subcommand 'SLOTS'.\r\n");
        sl_client_options o = SL_CLIENT_OPTIONS_INIT;
        char url[64];
        snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(c.nodes[1]));
        o.url = url;
        o.mode = SL_MODE_AUTO;
        o.resp_version = 3;
        sl_client *client = NULL;
        char err[256] = "";
        int rc = sl_client_new(&client, &o, err, sizeof err);
        if (rc) fprintf(stderr, "resp3 (shards %d): %d %s\n", shards, rc, err);
        assert_int_equal(rc, 0);
        assert_int_equal(sl_client_mode(client), SL_MODE_CLUSTER);
        assert_true(fs_count(c.nodes[1], "HELLO", NULL) >= 1);
        if (shards) assert_int_equal(fs_count(c.nodes[1], "CLUSTER SHARDS", NULL), 1);
        check_routing(client, &c);
        /* every connection the client opened said HELLO 3 first */
        for (int i = 0; i < 3; i++) assert_int_equal(fs_count(c.nodes[i], "HELLO", NULL), fs_connections(c.nodes[i]));
        sl_batch *b;
        assert_int_equal(sl_batch_new(client, &b), 0);
        append2(b, "GET", "no-such-key");
        assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, NULL), 0);
        const uint8_t *data;
        assert_int_equal(reply_at(b, 0, &data)->type, SL_REPLY_NIL);
        sl_batch_free(b);
        sl_client_free(client);
        fs_cluster_stop(&c);
    }
}

/* A password: AUTH (or HELLO AUTH) on every connection, discovery included; a wrong one
 * fails sl_client_new with a message. */
static void test_auth(void **state)
{
    (void)state;
    fs_cluster c;
    fs_cluster_start(&c, 2);
    for (int i = 0; i < 2; i++) fs_set_password(c.nodes[i], "s3cret");
    char url[96];
    snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d", fs_port(c.nodes[0]));
    sl_client *client = new_client_opts(url, SL_MODE_CLUSTER, NULL);
    check_routing(client, &c);
    sl_client_free(client);

    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", fs_port(c.nodes[0]));
    int rc = 0;
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_CLUSTER;
    char err[256] = "";
    client = (sl_client *)&o;
    rc = sl_client_new(&client, &o, err, sizeof err);
    assert_true(rc < 0);
    assert_null(client);
    if (!strstr(err, "WRONGPASS")) fprintf(stderr, "wrong password: rc %d \"%s\"\n", rc, err);
    assert_non_null(strstr(err, "WRONGPASS"));
    fs_cluster_stop(&c);
}

/* ------------------------------------------------------- dead node at connect */

static void test_dead_node_at_connect(void **state)
{
    (void)state;
    fs_node *n0 = fs_start(), *n1 = fs_start();
    fs_dead_port dead;
    fs_dead_port_open(&dead);
    fs_range r[3] = {{0, 5460, fs_port(n0)}, {5461, 10922, fs_port(n1)}, {10923, 16383, dead.port}};
    fs_set_slots(n0, r, 3);
    fs_set_slots(n1, r, 3);
    sl_client *client = new_client(fs_port(n0), SL_MODE_CLUSTER);
    sl_batch *b;
    assert_int_equal(sl_batch_new(client, &b), 0);
    char k[3][32];
    fs_find_key("d0:", 0, 5460, k[0], sizeof k[0]);
    fs_find_key("d1:", 5461, 10922, k[1], sizeof k[1]);
    fs_find_key("d2:", 10923, 16383, k[2], sizeof k[2]);
    fs_store_set(n0, k[0], "zero");
    fs_store_set(n1, k[1], "one");

    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 6; i++) append2(b, "GET", k[i % 3]);
        sl_sizes sz;
        int rc = sl_batch_exec(b, EXEC_TIMEOUT_MS, &sz);
        assert_int_equal(rc, 0);
        assert_int_equal(sz.errors, 2);
        for (int i = 0; i < 6; i++) {
            if (i % 3 == 2)
                want_err(b, (size_t)i, SL_ERR_IO);
            else
                want_str(b, (size_t)i, i % 3 ? "one" : "zero");
        }
        /* refused (an I/O error, not the deadline's timeout); that the backoff window
         * skips the connect is test_async's test_refused_connect_backoff_async */
    }
    assert_int_equal(fs_count(n0, "GET", k[0]), 6);
    assert_int_equal(fs_count(n1, "GET", k[1]), 6);
    sl_batch_free(b);
    sl_client_free(client);
    fs_dead_port_close(&dead);
    fs_stop(n0);
    fs_stop(n1);
}

/* A node whose connect hangs (SYNs dropped): its commands fail when the connect timeout
 * passes (SL_ERR_IO), or when the execution's deadline passes first (SL_ERR_TIMEOUT); the
 * other nodes' commands complete either way. */
static void test_connect_hangs(void **state)
{
    (void)state;
    fs_node *n0 = fs_start();
    fs_dead_port hole;
    fs_blackhole_open(&hole);
    fs_range r[2] = {{0, 8191, fs_port(n0)}, {8192, 16383, hole.port}};
    fs_set_slots(n0, r, 2);
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n0));
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_CLUSTER;
    o.connect_timeout_ms = 100;
    sl_client *client = NULL;
    assert_int_equal(sl_client_new(&client, &o, NULL, 0), 0);
    sl_batch *b;
    assert_int_equal(sl_batch_new(client, &b), 0);
    char k0[32], k1[32];
    fs_find_key("ch0:", 0, 8191, k0, sizeof k0);
    fs_find_key("ch1:", 8192, 16383, k1, sizeof k1);
    fs_store_set(n0, k0, "here");

    /* the connect timeout (100 ms) first */
    append2(b, "GET", k0);
    append2(b, "GET", k1);
    append2(b, "GET", k0);
    sl_sizes sz;
    int64_t t0 = fs_now_ms();
    int rc = sl_batch_exec(b, 600000, &sz); /* a deadline that cannot come first */
    int64_t took = fs_now_ms() - t0;
    assert_int_equal(rc, 0);
    assert_true(took >= 90); /* (and k1's record is an I/O error, not a timeout: below) */
    want_str(b, 0, "here");
    want_err(b, 1, SL_ERR_IO);
    want_str(b, 2, "here");

    /* the deadline (30 ms) first: a fresh client (no backoff from the failed connect) */
    sl_batch_free(b);
    sl_client_free(client);
    o.connect_timeout_ms = 600000; /* a connect timeout that cannot come first */
    assert_int_equal(sl_client_new(&client, &o, NULL, 0), 0);
    assert_int_equal(sl_batch_new(client, &b), 0);
    append2(b, "GET", k1);
    append2(b, "GET", k0);
    rc = sl_batch_exec(b, 30, &sz);
    assert_true(rc == SL_ETIMEOUT); /* the deadline, not the connect timeout (an I/O error) */
    want_err(b, 0, SL_ERR_TIMEOUT);
    want_str(b, 1, "here");

    sl_batch_free(b);
    sl_client_free(client);
    fs_dead_port_close(&hole);
    fs_stop(n0);
}

/* A batch whose every command goes to a dead node: every record is SL_ERR_IO and the
 * execution returns SL_EIO (no node could be reached). */
static void test_only_dead_node(void **state)
{
    (void)state;
    fs_node *n0 = fs_start();
    fs_dead_port dead;
    fs_dead_port_open(&dead);
    fs_range r[2] = {{0, 8191, fs_port(n0)}, {8192, 16383, dead.port}};
    fs_set_slots(n0, r, 2);
    sl_client *client = new_client(fs_port(n0), SL_MODE_CLUSTER);
    sl_batch *b;
    assert_int_equal(sl_batch_new(client, &b), 0);
    char k[32];
    fs_find_key("od:", 8192, 16383, k, sizeof k);
    append2(b, "GET", k);
    append2(b, "GET", k);
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, &sz), SL_EIO);
    assert_int_equal(sz.commands, 2);
    assert_int_equal(sz.errors, 2);
    want_err(b, 0, SL_ERR_IO);
    want_err(b, 1, SL_ERR_IO);
    sl_batch_free(b);
    sl_client_free(client);
    fs_dead_port_close(&dead);
    fs_stop(n0);
}

/* ------------------------------------------------------- one-command helper */

static void test_command_helper(void **state)
{
    fixture *f = *state;
    fs_cluster *c = &f->cl;
    const sl_reply *rep = NULL;
    const uint8_t *data = NULL;
    const char *get[2] = {"GET", f->keys[5]};
    assert_int_equal(sl_client_command(f->client, NULL, 2, get, NULL, &rep, &data), 0);
    assert_non_null(rep);
    assert_int_equal(rep->type, SL_REPLY_STRING);
    assert_int_equal(rep->len, strlen(f->vals[5]));
    assert_memory_equal(data + rep->offset, f->vals[5], rep->len);

    /* an error reply: SL_ESERVER, the record holds the message, so does errmsg */
    fs_add_reply(c->nodes[f->owner[5]], "GET", f->keys[5], 1,
                 "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    rep = NULL;
    assert_int_equal(sl_client_command(f->client, NULL, 2, get, NULL, &rep, &data), SL_ESERVER);
    assert_non_null(rep);
    assert_int_equal(rep->type, SL_REPLY_ERROR);
    assert_int_equal(rep->flags, SL_ERR_SERVER);
    assert_true(rep->len >= 9);
    assert_memory_equal(data + rep->offset, "WRONGTYPE", 9);
    assert_non_null(strstr(sl_client_errmsg(f->client), "WRONGTYPE"));

    /* an integer reply, with explicit lengths (binary-safe key) */
    const char *incr[2] = {"INCR", "cnt\0x"};
    size_t lens[2] = {4, 5};
    assert_int_equal(sl_client_command(f->client, NULL, 2, incr, lens, &rep, &data), 0);
    assert_int_equal(rep->type, SL_REPLY_INTEGER);
    assert_int_equal(rep->value.integer, 1);

    /* a node failure through the helper: a negative code other than SL_ESERVER */
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.key = f->keys[5];
    r.times = 2; /* and the read's one retry */
    r.action = FS_CLOSE;
    fs_add_rule(c->nodes[f->owner[5]], &r);
    int rc = sl_client_command(f->client, NULL, 2, get, NULL, &rep, &data);
    assert_int_equal(rc, SL_EIO);
    assert_int_equal(rep->type, SL_REPLY_ERROR);
    assert_int_equal(rep->flags, SL_ERR_IO);
    assert_int_equal(sl_client_command(f->client, NULL, 2, get, NULL, &rep, &data), 0);
    assert_int_equal(sigpipes, 0);
}

/* ------------------------------------------------------------ bad arguments */

static void test_bad_arguments(void **state)
{
    fixture *f = *state;
    sl_batch *b = f->batch;
    const char *argv[2] = {"GET", "k"};

    /* NULL handles */
    sl_batch *nb = (sl_batch *)f; /* must not be used */
    assert_int_equal(sl_batch_new(NULL, &nb), SL_EINVAL);
    assert_int_equal(sl_batch_new(f->client, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_append_argv(NULL, NULL, 2, argv, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_append(NULL, NULL, "*1\r\n$4\r\nPING\r\n", 14, 1), SL_EINVAL);
    assert_int_equal(sl_batch_exec(NULL, 0, NULL), SL_EINVAL);
    sl_stats st;
    memset(&st, 0, sizeof st);
    st.version = SL_STATS_VERSION;
    st.size = sizeof st;
    assert_int_equal(sl_client_stats(NULL, &st), SL_EINVAL);
    assert_int_equal(sl_client_stats(f->client, NULL), SL_EINVAL);
    const sl_reply *rep;
    const uint8_t *data;
    assert_int_equal(sl_client_command(NULL, NULL, 2, argv, NULL, &rep, &data), SL_EINVAL);
    assert_int_equal(sl_client_command(f->client, NULL, 0, argv, NULL, &rep, &data), SL_EINVAL);
    assert_int_equal(sl_client_new(NULL, NULL, NULL, 0), SL_EINVAL);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    sl_client *nc = (sl_client *)f;
    o.url = "127.0.0.1:notaport"; /* a bad URL */
    assert_int_equal(sl_client_new(&nc, &o, NULL, 0), SL_EINVAL);
    assert_null(nc);
    o.url = "127.0.0.1:6379";
    o.mode = (sl_mode)42; /* a bad option */
    nc = (sl_client *)f;
    assert_int_equal(sl_client_new(&nc, &o, NULL, 0), SL_EINVAL);
    assert_null(nc);
    o.mode = SL_MODE_CLUSTER;
    o.size = 8; /* a struct too small to hold version and url */
    nc = (sl_client *)f;
    assert_int_equal(sl_client_new(&nc, &o, NULL, 0), SL_EINVAL);
    assert_null(nc);
    sl_batch_free(NULL);
    sl_client_free(NULL);
    sl_client_cancel(NULL);

    /* argc 0, NULL argv, NULL argument: nothing queued */
    assert_int_equal(sl_batch_append_argv(b, NULL, 0, argv, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_append_argv(b, NULL, -1, argv, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_append_argv(b, NULL, 2, NULL, NULL), SL_EINVAL);
    const char *withnull[2] = {"GET", NULL};
    assert_int_equal(sl_batch_append_argv(b, NULL, 2, withnull, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_count(b), 0);
    assert_true(strlen(sl_client_errmsg(f->client)) > 0);

    /* one good command queued; malformed RESP never adds to it */
    assert_int_equal(sl_batch_append_argv(b, NULL, 2, argv, NULL), 0);
    assert_int_equal(sl_batch_count(b), 1);
    static const struct {
        const char *bytes;
        size_t count;
    } bad[] = {
        {"*2\r\n$3\r\nGET\r\n", 1},                      /* truncated */
        {"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 2},            /* fewer commands than count */
        {"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", 1},  /* more bytes than count commands */
        {"PING\r\n", 1},                                  /* inline, not an array */
        {"*1\r\n:4\r\n", 1},                              /* not a bulk string */
        {"*0\r\n", 1},                                    /* no arguments */
        {"*-1\r\n", 1},                                   /* null array */
        {"*1\r\n$4\r\nPINGxx", 1},                         /* missing CRLF */
        {"*1\r\n$-3\r\nPING\r\n", 1},                     /* negative length */
        {"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", 2},        /* second truncated */
        {"*1x\r\n$4\r\nPING\r\n", 1},                     /* bad count digits */
        {"*1\r\n$4\r\nPING\r\n", 0},                      /* count 0 with bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = sl_batch_append(b, NULL, bad[i].bytes, strlen(bad[i].bytes), bad[i].count);
        if (rc != SL_EINVAL) fprintf(stderr, "bad[%zu]: rc %d\n", i, rc);
        assert_int_equal(rc, SL_EINVAL);
        assert_int_equal(sl_batch_count(b), 1);
    }
    assert_int_equal(sl_batch_append(b, NULL, NULL, 14, 1), SL_EINVAL);
    assert_int_equal(sl_batch_count(b), 1);
    /* sl_batch_run rejects malformed bytes without sending anything */
    uint64_t sent = fs_cluster_count(&f->cl, NULL, NULL), bytes = 0;
    for (int i = 0; i < 3; i++) bytes += fs_bytes_received(f->cl.nodes[i]);
    sl_sizes sz;
    assert_int_equal(sl_batch_run(b, "*2\r\n$3\r\nGET\r\n", 13, 1, EXEC_TIMEOUT_MS, NULL, 0, NULL, 0, &sz), SL_EINVAL);
    assert_int_equal(fs_cluster_count(&f->cl, NULL, NULL), sent);
    for (int i = 0; i < 3; i++) bytes -= fs_bytes_received(f->cl.nodes[i]);
    assert_int_equal(bytes, 0);

    /* the batch still works afterwards */
    sl_batch_reset(b);
    assert_int_equal(sl_batch_count(b), 0);
    const char *good = "*2\r\n$3\r\nGET\r\n$";
    char cmd[96];
    int len = snprintf(cmd, sizeof cmd, "%s%zu\r\n%s\r\n", good, strlen(f->keys[0]), f->keys[0]);
    assert_int_equal(sl_batch_append(b, NULL, cmd, (size_t)len, 1), 0);
    assert_int_equal(sl_batch_count(b), 1);
    assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, &sz), 0);
    want_str(b, 0, f->vals[0]);
    /* exec of an empty batch: fine, no records */
    assert_int_equal(sl_batch_exec(b, EXEC_TIMEOUT_MS, &sz), 0);
    assert_int_equal(sz.commands, 0);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigpipe;
    sigaction(SIGPIPE, &sa, NULL);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_close_mid_reply, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_close_before_reply, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_close_mid_aggregate, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_close_after_first_reply, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_server_dropped_idle_connection, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_node_timeout, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_slow_node_within_deadline, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_during_retry_backoff, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_from_other_thread, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_keeps_arrived_replies, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_during_retry_backoff, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_before_exec, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_frees_connection, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_reply, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_reply_over_limit, setup3, teardown),
        cmocka_unit_test(test_discovery_from_any_seed),
        cmocka_unit_test(test_discovery_empty_host),
        cmocka_unit_test(test_auto_detects_plain),
        cmocka_unit_test(test_auto_detects_cluster),
        cmocka_unit_test(test_plain_mode_no_discovery),
        cmocka_unit_test(test_seed_down_then_up),
        cmocka_unit_test(test_all_seeds_down),
        cmocka_unit_test(test_discovery_fallbacks),
        cmocka_unit_test(test_resp3_cluster),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_dead_node_at_connect),
        cmocka_unit_test(test_only_dead_node),
        cmocka_unit_test(test_connect_hangs),
        cmocka_unit_test_setup_teardown(test_command_helper, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup3, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
