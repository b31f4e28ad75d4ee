/* Cluster-wide SCAN (sl_scan_*), scripts (sl_script_sha1, sl_batch_run_script) against the
 * fake cluster: every key once on a steady cluster; MATCH/TYPE/COUNT; plain mode; a slot
 * moved in the middle of its node's pass (its keys come again from the new owner, no other
 * key twice); a node that dies mid-pass, its slots taken over by a new node (every key,
 * the dead node's keys at most twice, no error: the pass is retried from the new map); an uncovered slot; bad arguments; EVALSHA reloading
 * a script on the node that answered NOSCRIPT. The "async" cases run the same scans paged on
 * a loop thread (sl_loop_submit_scan_cq, completions from a queue), where the map is refreshed
 * by a CLUSTER SLOTS step; a page cancelled while its SCAN is held by the node completes at
 * once with SL_ECANCELLED, and the scan goes on over the same connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_server.h"
#include "sl_test.h"
#include "slotlane_uv.h"

#define NKEYS 600

typedef struct fx {
    fs_cluster cl;
    sl_client *c;
    sl_batch *b;
    char keys[NKEYS][32];
    int seen[NKEYS];
    int hooked;
    sl_loop *loop;               /* the async cases: pages on a loop thread, into q */
    sl_cq *q;
} fx;

#define WAIT_MS 60000 /* only turns a lost completion into a failure */

/* One page, by sl_scan_next or (async cases) by a submission to the loop. */
static int next_page(fx *f, sl_scan *s, int *done)
{
    if (!f->loop) return sl_scan_next(s, f->b, done);
    int token = 7;
    int rc = sl_loop_submit_scan_cq(f->loop, s, f->b, 0, f->q, &token, 0);
    if (rc) return rc;
    sl_completion c;
    if (sl_cq_wait(f->q, &c, 1, WAIT_MS) != 1) fail_msg("no completion of the page");
    assert_ptr_equal(c.batch, f->b);
    assert_ptr_equal(c.token, &token);
    *done = c.status == 0 && sl_scan_done(s);
    return c.status;
}

static int run_script(fx *f, const char *body, const char *cmd, size_t len, sl_sizes *sz);

static const char *scan_msg(fx *f, sl_scan *s) { return f->loop ? sl_scan_errmsg(s) : sl_client_errmsg(f->c); }

static int key_index(fx *f, const uint8_t *k, size_t len)
{
    /* keys are "key:<i>" */
    if (len < 5 || memcmp(k, "key:", 4) != 0) return -1;
    int v = 0;
    for (size_t i = 4; i < len; i++) v = v * 10 + (k[i] - '0');
    return v < NKEYS && strlen(f->keys[v]) == len && memcmp(f->keys[v], k, len) == 0 ? v : -1;
}

static int setup(void **state)
{
    fx *f = test_calloc(1, sizeof *f);
    fs_cluster_start(&f->cl, 3);
    for (int i = 0; i < NKEYS; i++) {
        snprintf(f->keys[i], sizeof f->keys[i], "key:%d", i);
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        fs_store_set(f->cl.nodes[fs_cluster_default_owner(&f->cl, slot)], f->keys[i], "v");
    }
    f->c = new_client(fs_port(f->cl.nodes[0]), SL_MODE_CLUSTER);
    assert_int_equal(sl_batch_new(f->c, &f->b), 0);
    *state = f;
    return 0;
}

static int setup_async(void **state)
{
    setup(state);
    fx *f = *state;
    assert_int_equal(sl_loop_new(&f->loop), 0);
    assert_int_equal(sl_cq_new(&f->q), 0);
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    sl_loop_free(f->loop);
    sl_cq_free(f->q);
    sl_batch_free(f->b);
    sl_client_free(f->c);
    fs_cluster_stop(&f->cl);
    test_free(f);
    return 0;
}

/* Counts the keys of the batch's page into f->seen; returns how many it held. */
static size_t take_page(fx *f)
{
    size_t n;
    const uint8_t *data;
    const sl_reply *r = sl_batch_replies(f->b, &n, &data, NULL);
    assert_true(n >= 1);
    assert_int_equal(r[0].type, SL_REPLY_ARRAY);
    assert_int_equal(n, 1 + (size_t)r[0].len);
    for (size_t i = 1; i < n; i++) {
        assert_int_equal(r[i].type, SL_REPLY_STRING);
        int k = key_index(f, data + r[i].offset, r[i].len);
        if (k < 0) fail_msg("unexpected key %.*s", (int)r[i].len, (const char *)data + r[i].offset);
        f->seen[k]++;
    }
    return r[0].len;
}

/* Runs a scan to its end; hook (may be NULL) runs after every page. Returns the pages. */
static int scan_all(fx *f, const sl_scan_options *o, void (*hook)(fx *))
{
    sl_scan *s;
    assert_int_equal(sl_scan_new(f->c, o, &s), 0);
    int done = 0, pages = 0;
    while (!done) {
        int rc = next_page(f, s, &done);
        if (rc != 0) fail_msg("sl_scan_next: %d %s", rc, scan_msg(f, s));
        take_page(f);
        pages++;
        if (hook) hook(f);
        assert_true(pages < 10000);
    }
    /* after the end: empty pages, still done */
    assert_int_equal(next_page(f, s, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(take_page(f), 0);
    sl_scan_free(s);
    return pages;
}

static void test_every_key_once(void **state)
{
    fx *f = *state;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.count = 50;
    scan_all(f, &o, NULL);
    for (int i = 0; i < NKEYS; i++) assert_int_equal(f->seen[i], 1);
    /* one pass per node: CLUSTER NODES before and after its SCANs */
    for (int n = 0; n < 3; n++) {
        assert_int_equal(fs_count(f->cl.nodes[n], "CLUSTER NODES", NULL), 2);
        assert_true(fs_count(f->cl.nodes[n], "SCAN", NULL) >= 2);
    }
}

static void test_match_type_and_plain(void **state)
{
    fx *f = *state;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.match = "key:1*";
    scan_all(f, &o, NULL);
    for (int i = 0; i < NKEYS; i++) assert_int_equal(f->seen[i], f->keys[i][4] == '1');
    memset(f->seen, 0, sizeof f->seen);
    o.match = NULL;
    o.type = "hash"; /* the fake holds strings only */
    scan_all(f, &o, NULL);
    for (int i = 0; i < NKEYS; i++) assert_int_equal(f->seen[i], 0);
    o.type = "string";
    scan_all(f, &o, NULL);
    for (int i = 0; i < NKEYS; i++) assert_int_equal(f->seen[i], 1);
    /* plain mode: the one node, no CLUSTER NODES */
    sl_batch_free(f->b);
    sl_client_free(f->c);
    f->c = new_client(fs_port(f->cl.nodes[1]), SL_MODE_PLAIN);
    assert_int_equal(sl_batch_new(f->c, &f->b), 0);
    memset(f->seen, 0, sizeof f->seen);
    fs_reset_counters(f->cl.nodes[1]);
    scan_all(f, NULL, NULL);
    for (int i = 0; i < NKEYS; i++) {
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        assert_int_equal(f->seen[i], fs_cluster_default_owner(&f->cl, slot) == 1);
    }
    assert_int_equal(fs_count(f->cl.nodes[1], "CLUSTER NODES", NULL), 0);
}

/* After node 0's first page: the upper half of its slots moves to node 1, keys included. */
static void move_half_of_node0(fx *f)
{
    if (f->hooked || fs_count(f->cl.nodes[0], "SCAN", NULL) != 1) return;
    f->hooked = 1;
    int lo = 0, hi = 16384 / 3 - 1, mid = (lo + hi) / 2;
    fs_range map[4] = {{lo, mid, fs_port(f->cl.nodes[0])},
                       {mid + 1, hi, fs_port(f->cl.nodes[1])},
                       {hi + 1, 2 * 16384 / 3 - 1, fs_port(f->cl.nodes[1])},
                       {2 * 16384 / 3, 16383, fs_port(f->cl.nodes[2])}};
    for (int i = 0; i < NKEYS; i++) {
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        if (slot > mid && slot <= hi) {
            fs_store_del(f->cl.nodes[0], f->keys[i]);
            fs_store_set(f->cl.nodes[1], f->keys[i], "v");
        }
    }
    fs_cluster_set_map(&f->cl, map, 4);
}

static void test_slot_moved_mid_pass(void **state)
{
    fx *f = *state;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.count = 20;
    /* node 0 is scanned first (slot 0): the move comes after its first page */
    scan_all(f, &o, move_half_of_node0);
    int mid = (16384 / 3 - 1) / 2, twice = 0;
    for (int i = 0; i < NKEYS; i++) {
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        int moved = slot > mid && slot < 16384 / 3;
        if (f->seen[i] < 1) fail_msg("key %s (slot %d) missed", f->keys[i], slot);
        if (!moved && f->seen[i] != 1) fail_msg("key %s (slot %d) of a steady slot seen %d times", f->keys[i], slot, f->seen[i]);
        assert_true(f->seen[i] <= 2);
        twice += f->seen[i] == 2;
    }
    /* Only keys of node 0's first page can come twice. */
    assert_true(twice <= 20);
    /* Node 1's one pass took its own slots and the moved ones (nothing was finished there). */
    assert_int_equal(fs_count(f->cl.nodes[1], "CLUSTER NODES", NULL), 2);
}

/* During node 1's pass (node 0 is finished): the upper half of node 1's slots moves to
 * node 0, keys included. */
static void move_half_of_node1_to_node0(fx *f)
{
    if (f->hooked || fs_count(f->cl.nodes[1], "SCAN", NULL) != 1) return;
    f->hooked = 1;
    int lo = 16384 / 3, hi = 2 * 16384 / 3 - 1, mid = (lo + hi) / 2;
    fs_range map[4] = {{0, lo - 1, fs_port(f->cl.nodes[0])},
                       {lo, mid, fs_port(f->cl.nodes[1])},
                       {mid + 1, hi, fs_port(f->cl.nodes[0])},
                       {hi + 1, 16383, fs_port(f->cl.nodes[2])}};
    for (int i = 0; i < NKEYS; i++) {
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        if (slot > mid && slot <= hi) {
            fs_store_del(f->cl.nodes[1], f->keys[i]);
            fs_store_set(f->cl.nodes[0], f->keys[i], "v");
        }
    }
    fs_cluster_set_map(&f->cl, map, 4);
}

static void test_slot_moved_to_a_finished_node(void **state)
{
    fx *f = *state;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.count = 20;
    scan_all(f, &o, move_half_of_node1_to_node0);
    int lo = 16384 / 3, mid = (lo + 2 * 16384 / 3 - 1) / 2;
    for (int i = 0; i < NKEYS; i++) {
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        int moved = slot > mid && slot < 2 * 16384 / 3;
        if (f->seen[i] < 1) fail_msg("key %s (slot %d) missed", f->keys[i], slot);
        /* node 0's second pass is filtered to the moved slots: its own keys come once */
        if (!moved && f->seen[i] != 1) fail_msg("key %s (slot %d) of a steady slot seen %d times", f->keys[i], slot, f->seen[i]);
        assert_true(f->seen[i] <= 2);
    }
    assert_int_equal(fs_count(f->cl.nodes[0], "CLUSTER NODES", NULL), 4);
}

static void kill_node0_and_promote(fx *f)
{
    /* node 0 dies; a new node (its "replica") holds its keys and takes its slots */
    fs_node *repl = fs_start();
    for (int i = 0; i < NKEYS; i++) {
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        if (fs_cluster_default_owner(&f->cl, slot) == 0) fs_store_set(repl, f->keys[i], "v");
    }
    fs_stop(f->cl.nodes[0]);
    f->cl.nodes[0] = repl; /* stopped with the cluster */
    fs_range map[3] = {{0, 16384 / 3 - 1, fs_port(repl)},
                       {16384 / 3, 2 * 16384 / 3 - 1, fs_port(f->cl.nodes[1])},
                       {2 * 16384 / 3, 16383, fs_port(f->cl.nodes[2])}};
    fs_cluster_set_map(&f->cl, map, 3);
}

static void test_node_fails_mid_pass(void **state)
{
    fx *f = *state;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.count = 20;
    sl_scan *s;
    assert_int_equal(sl_scan_new(f->c, &o, &s), 0);
    int done = 0, pages = 0, failures = 0;
    while (!done) {
        int rc = next_page(f, s, &done);
        if (rc != 0) { /* the map names the new node at once: no failure reaches the caller */
            fprintf(stderr, "sl_scan_next: %d %s\n", rc, scan_msg(f, s));
            failures++;
            assert_true(failures <= 1);
            continue;
        }
        take_page(f);
        if (++pages == 1) kill_node0_and_promote(f);
    }
    sl_scan_free(s);
    assert_int_equal(failures, 0);
    /* the dead node's pass was retried within the call, from the new node */
    assert_true(fs_count(f->cl.nodes[0], "SCAN", NULL) >= 1);
    for (int i = 0; i < NKEYS; i++) {
        int slot = fs_key_slot(f->keys[i], strlen(f->keys[i]));
        if (f->seen[i] < 1) fail_msg("key %s missed", f->keys[i]);
        assert_true(f->seen[i] <= (fs_cluster_default_owner(&f->cl, slot) == 0 ? 2 : 1));
    }
}

static void test_uncovered_slot_and_bad_arguments(void **state)
{
    fx *f = *state;
    sl_scan *s;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.count = -1;
    assert_int_equal(sl_scan_new(f->c, &o, &s), SL_EINVAL);
    assert_null(s);
    o.count = 0;
    o.version = 99;
    assert_int_equal(sl_scan_new(f->c, &o, &s), SL_EINVAL);
    assert_int_equal(sl_scan_new(NULL, NULL, &s), SL_EINVAL);
    assert_int_equal(sl_scan_new(f->c, NULL, &s), 0);
    int done;
    assert_int_equal(sl_scan_next(s, NULL, &done), SL_EINVAL);
    sl_client *other = new_client(fs_port(f->cl.nodes[0]), SL_MODE_CLUSTER);
    sl_batch *ob;
    assert_int_equal(sl_batch_new(other, &ob), 0);
    assert_int_equal(sl_scan_next(s, ob, &done), SL_EINVAL);
    sl_batch_free(ob);
    sl_client_free(other);
    /* Nobody serves the first slots: a clear error, not a silent gap. */
    fs_range map[2] = {{100, 16383 / 2, fs_port(f->cl.nodes[1])}, {16383 / 2 + 1, 16383, fs_port(f->cl.nodes[2])}};
    fs_cluster_set_map(&f->cl, map, 2);
    assert_int_equal(sl_client_refresh(f->c), 0);
    assert_int_equal(sl_scan_next(s, f->b, &done), SL_ECLUSTER);
    assert_non_null(strstr(sl_client_errmsg(f->c), "slot 0"));
    assert_int_equal(done, 0);
    sl_scan_free(s);
    sl_scan_free(NULL);
}

/* A page whose SCAN the node holds is cancelled: it completes at once (the cancel does not
 * wait for the server), the held reply is read and dropped when it comes, and the scan goes
 * on over the same connection to every key once. */
static void test_async_page_cancelled(void **state)
{
    fx *f = *state;
    fs_node *n0 = f->cl.nodes[0];
    fs_rule r = {0};
    r.cmd = "SCAN";
    r.times = 1;
    r.action = FS_STALL;
    fs_add_rule(n0, &r);
    sl_scan *s;
    sl_scan_options o = SL_SCAN_OPTIONS_INIT;
    o.count = 50;
    assert_int_equal(sl_scan_new(f->c, &o, &s), 0);
    assert_int_equal(sl_loop_submit_scan_cq(f->loop, s, f->b, 0, f->q, NULL, 0), 0);
    assert_int_equal(fs_wait_stalled(n0, 1, WAIT_MS), 0);
    assert_int_equal(sl_loop_submit_scan_cq(f->loop, s, f->b, 0, f->q, NULL, 0), SL_ESTATE); /* in flight */
    assert_int_equal(sl_batch_cancel(f->b), 0);
    sl_completion c;
    assert_int_equal(sl_cq_wait(f->q, &c, 1, WAIT_MS), 1);
    assert_int_equal(c.status, SL_ECANCELLED);
    assert_int_equal(fs_stalled(n0), 1); /* still held: the cancel did not wait for it */
    fs_release(n0);
    uint64_t conns = fs_connections(n0);
    int done = 0, pages = 0;
    while (!done) {
        int rc = next_page(f, s, &done);
        if (rc != 0) fail_msg("page: %d %s", rc, sl_scan_errmsg(s));
        take_page(f);
        assert_true(++pages < 10000);
    }
    sl_scan_free(s);
    for (int i = 0; i < NKEYS; i++) assert_int_equal(f->seen[i], 1);
    assert_int_equal(fs_connections(n0), conns); /* the same connection went on */
}

static void test_async_bad_arguments(void **state)
{
    fx *f = *state;
    sl_scan *s;
    assert_int_equal(sl_scan_new(f->c, NULL, &s), 0);
    assert_int_equal(sl_loop_submit_scan_cq(f->loop, NULL, f->b, 0, f->q, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_loop_submit_scan_cq(f->loop, s, NULL, 0, f->q, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_loop_submit_scan_cq(f->loop, s, f->b, -2, f->q, NULL, 0), SL_EINVAL);
    sl_client *other = new_client(fs_port(f->cl.nodes[0]), SL_MODE_CLUSTER);
    sl_batch *ob;
    assert_int_equal(sl_batch_new(other, &ob), 0);
    assert_int_equal(sl_loop_submit_scan_cq(f->loop, s, ob, 0, f->q, NULL, 0), SL_EINVAL);
    /* not attached to a caller's loop */
    assert_int_equal(sl_scan_next_async(s, f->b, 0, NULL, NULL), SL_EINVAL);
    sl_batch_free(ob);
    sl_client_free(other);
    assert_int_equal(sl_scan_done(NULL), 0);
    assert_string_equal(sl_scan_errmsg(NULL), "");
    sl_scan_free(s);
}

static void test_async_script_cancelled(void **state)
{
    fx *f = *state;
    fs_node *n2 = f->cl.nodes[2];
    fs_rule r = {0};
    r.cmd = "EVALSHA";
    r.times = 1;
    r.action = FS_STALL;
    r.reply = "-NOSCRIPT No matching script.\r\n";
    fs_add_rule(n2, &r);
    char key[32], cmd[256];
    key_on(&f->cl, 2, "k", key, sizeof key);
    int len = snprintf(cmd, sizeof cmd, "*4\r\n$7\r\nEVALSHA\r\n$40\r\n%040d\r\n$1\r\n1\r\n$%zu\r\n%s\r\n", 0,
                       strlen(key), key);
    assert_int_equal(sl_batch_append(f->b, NULL, cmd, (size_t)len, 1), 0);
    assert_int_equal(sl_loop_submit_script_cq(f->loop, f->b, "return 1", 8, 0, f->q, NULL, 0), 0);
    assert_int_equal(fs_wait_stalled(n2, 1, WAIT_MS), 0);
    assert_int_equal(sl_batch_cancel(f->b), 0);
    sl_completion c;
    assert_int_equal(sl_cq_wait(f->q, &c, 1, WAIT_MS), 1);
    assert_int_equal(c.status, SL_ECANCELLED);
    fs_release(n2);
    /* no reload followed the cancelled EVALSHA, and the connection answers the next one */
    sl_sizes sz;
    fs_add_reply(n2, "EVALSHA", NULL, 0, ":7\r\n");
    assert_int_equal(run_script(f, "return 1", cmd, (size_t)len, &sz), 0);
    const uint8_t *d;
    assert_int_equal(reply_at(f->b, 0, &d)->value.integer, 7);
    assert_int_equal(fs_count(n2, "SCRIPT LOAD", NULL), 0);
    /* bad arguments */
    sl_batch_reset(f->b);
    assert_int_equal(sl_loop_submit_script_cq(f->loop, f->b, "x", 1, 0, f->q, NULL, 0), SL_EINVAL); /* no command */
    assert_int_equal(sl_script_exec_async(f->b, "x", 1, 0, NULL, NULL), SL_EINVAL);
}

static void test_sha1(void **state)
{
    (void)state;
    char out[41];
    sl_script_sha1("abc", 3, out);
    assert_string_equal(out, "a9993e364706816aba3e25717850c26c9cd0d89d");
    sl_script_sha1("", 0, out);
    assert_string_equal(out, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: two pad blocks */
    sl_script_sha1(two, strlen(two), out);
    assert_string_equal(out, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    sl_script_sha1("return 1", 8, out); /* as SCRIPT LOAD of redis-server 7.0 answers */
    assert_string_equal(out, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

/* sl_batch_run_script, or (async cases) the same as one submission to the loop. */
static int run_script(fx *f, const char *body, const char *cmd, size_t len, sl_sizes *sz)
{
    if (!f->loop) return sl_batch_run_script(f->b, body, strlen(body), cmd, len, 0, NULL, 0, NULL, 0, sz);
    sl_batch_reset(f->b);
    int rc = sl_batch_append(f->b, NULL, cmd, len, 1);
    if (rc) return rc;
    if ((rc = sl_loop_submit_script_cq(f->loop, f->b, body, strlen(body), 0, f->q, NULL, 0)) != 0) return rc;
    sl_completion c;
    if (sl_cq_wait(f->q, &c, 1, WAIT_MS) != 1) fail_msg("no completion of the script");
    *sz = c.sizes;
    return c.status;
}

static void test_evalsha_reloads_once(void **state)
{
    fx *f = *state;
    const char *body = "return 42";
    char sha[41];
    sl_script_sha1(body, strlen(body), sha);
    char key[32];
    key_on(&f->cl, 2, "k", key, sizeof key);
    char cmd[256];
    int len = snprintf(cmd, sizeof cmd, "*4\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$%zu\r\n%s\r\n", sha, strlen(key), key);
    fs_node *n2 = f->cl.nodes[2];
    fs_add_reply(n2, "EVALSHA", NULL, 1, "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    fs_add_reply(n2, "EVALSHA", NULL, 0, ":42\r\n");
    char load[64];
    snprintf(load, sizeof load, "$40\r\n%s\r\n", sha);
    fs_add_reply(n2, "SCRIPT LOAD", NULL, 0, load);
    sl_sizes sz;
    assert_int_equal(run_script(f, body, cmd, (size_t)len, &sz), 0);
    assert_int_equal(sz.commands, 1);
    const uint8_t *d;
    const sl_reply *r = reply_at(f->b, 0, &d);
    assert_int_equal(r->type, SL_REPLY_INTEGER);
    assert_int_equal(r->value.integer, 42);
    assert_int_equal(fs_count(n2, "SCRIPT LOAD", NULL), 1);
    assert_int_equal(fs_count(n2, "EVALSHA", NULL), 2);
    /* loaded now: one EVALSHA, no LOAD */
    assert_int_equal(run_script(f, body, cmd, (size_t)len, &sz), 0);
    assert_int_equal(fs_count(n2, "SCRIPT LOAD", NULL), 1);
    assert_int_equal(fs_count(n2, "EVALSHA", NULL), 3);
    /* a LOAD that fails is the answer; no third EVALSHA */
    fs_clear_rules(n2);
    fs_add_reply(n2, "EVALSHA", NULL, 0, "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    fs_add_reply(n2, "SCRIPT LOAD", NULL, 0, "-ERR Error compiling script\r\n");
    assert_int_equal(run_script(f, body, cmd, (size_t)len, &sz), 0);
    want_err_prefix(f->b, 0, SL_ERR_SERVER, "ERR Error compiling script");
    assert_int_equal(fs_count(n2, "EVALSHA", NULL), 4);
    /* other errors pass through without a LOAD */
    fs_clear_rules(n2);
    fs_add_reply(n2, "EVALSHA", NULL, 0, "-ERR boom\r\n");
    assert_int_equal(run_script(f, body, cmd, (size_t)len, &sz), 0);
    want_err_prefix(f->b, 0, SL_ERR_SERVER, "ERR boom");
    assert_int_equal(fs_count(n2, "SCRIPT LOAD", NULL), 2);
    assert_int_equal(run_script(f, body, "*1\r\n", 4, &sz), SL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_key_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_match_type_and_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slot_moved_mid_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slot_moved_to_a_finished_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_fails_mid_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uncovered_slot_and_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_key_once, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_match_type_and_plain, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_slot_moved_mid_pass, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_slot_moved_to_a_finished_node, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_node_fails_mid_pass, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_async_page_cancelled, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_async_bad_arguments, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_evalsha_reloads_once, setup_async, teardown),
        cmocka_unit_test_setup_teardown(test_async_script_cancelled, setup_async, teardown),
        cmocka_unit_test(test_sha1),
        cmocka_unit_test_setup_teardown(test_evalsha_reloads_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
