/* test_lease: blocking commands on leased connections and transaction sessions (lease.c,
 * session.c), against fake nodes (tests/support/fake_server.h). A blocking command stalls
 * on purpose (an FS_STALL rule holds its answer), and every verdict comes from events: the
 * node's counters of connections and commands, the records, the codes; no sleeps.
 *  - which commands block and their deadlines (block time + grace, block 0: none);
 *  - a lone BLPOP runs on a connection of its own: its deadline or a cancel closes only
 *    that connection, the shared one keeps serving (no reconnect), and the next BLPOP
 *    gets a fresh lease;
 *  - a blocking command in a pipeline is refused before anything is sent; inside
 *    MULTI ... EXEC it is not;
 *  - MOVED, ASK and -UNBLOCKED resend a blocking command once; an I/O error never does;
 *  - sessions: pinned to the key's owner, CROSSSLOT refused before sending, EXEC nil is
 *    SL_EABORTED, MOVED while watching is SL_EWATCHMOVED (the connection closed, no
 *    UNWATCH), close sends UNWATCH or DISCARD and returns the connection for reuse;
 *  - version-3 option structs get the defaults of the new fields;
 *  - sl_command_blocking, the public form of the classification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_server.h"
#include "sl_test.h"
#include "slotlane.h"

#include "client.h"
#include "lease.h"


static int run_argv(sl_batch *b, int argc, const char *const *argv, int timeout_ms)
{
    sl_batch_reset(b);
    assert_int_equal(sl_batch_append_argv(b, NULL, argc, argv, NULL), 0);
    return sl_batch_exec(b, timeout_ms, NULL);
}

static int get_ok(sl_batch *b, const char *key)
{
    const char *argv[] = {"GET", key};
    return run_argv(b, 2, argv, 0);
}

/* ------------------------------------------------------------ classification */

static int blocks(const char *const *argv, int argc, int64_t *ms)
{
    /* The command as the batch keeps it: its bytes and argument spans. */
    char buf[512];
    sl__arg args[16];
    size_t off = 0;
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        memcpy(buf + off, argv[i], n);
        args[i].off = (uint32_t)off;
        args[i].len = (uint32_t)n;
        off += n;
    }
    return sl__lease_blocking((const uint8_t *)buf, args, (uint32_t)argc, ms);
}

static void test_which_commands_block(void **state)
{
    (void)state;
    int64_t ms;
    const char *blpop[] = {"blpop", "a", "b", "1.5"};
    assert_int_equal(blocks(blpop, 4, &ms), 1);
    assert_int_equal(ms, 1500);
    const char *bzmpop[] = {"BZMPOP", "0", "1", "z", "MIN"};
    assert_int_equal(blocks(bzmpop, 5, &ms), 1);
    assert_int_equal(ms, 0);
    const char *blmove[] = {"BLMOVE", "a", "b", "LEFT", "RIGHT", "2"};
    assert_int_equal(blocks(blmove, 6, &ms), 1);
    assert_int_equal(ms, 2000);
    const char *xread[] = {"XREAD", "COUNT", "2", "BLOCK", "250", "STREAMS", "s", "$"};
    assert_int_equal(blocks(xread, 8, &ms), 1);
    assert_int_equal(ms, 250);
    const char *xread_noblock[] = {"XREAD", "STREAMS", "BLOCK", "0"}; /* a stream named BLOCK */
    assert_int_equal(blocks(xread_noblock, 4, &ms), 0);
    const char *wait[] = {"WAIT", "1", "100"};
    assert_int_equal(blocks(wait, 3, &ms), 1);
    assert_int_equal(ms, 100);
    const char *lpop[] = {"LPOP", "a"};
    assert_int_equal(blocks(lpop, 2, &ms), 0);
    const char *bad[] = {"BLPOP", "a", "soon"};
    assert_int_equal(blocks(bad, 3, &ms), 1);
    assert_int_equal(ms, -1);

    sl_client c;
    memset(&c, 0, sizeof c);
    c.opts.blocking_grace_ms = 1000;
    c.opts.command_timeout_ms = 5000;
    assert_int_equal(sl__lease_timeout(&c, 0, 1500), 2500);  /* block time + grace */
    assert_int_equal(sl__lease_timeout(&c, 0, 0), -1);       /* block 0: no deadline */
    assert_int_equal(sl__lease_timeout(&c, 300, 0), 300);    /* unless the caller gives one */
    assert_int_equal(sl__lease_timeout(&c, -1, 1500), -1);
    assert_int_equal(sl__lease_timeout(&c, 0, -1), 5000);    /* unreadable: the client's default */
}

/* The public form (sl_command_blocking): the same answers, binary-safe lengths, which
 * names' answers depend on their arguments, and bad input refused. */
static void test_command_blocking_public(void **state)
{
    (void)state;
    int64_t ms = 7;
    int by = 7;
    const char *blpop[] = {"blpop", "a", "b", "1.5"};
    assert_int_equal(sl_command_blocking(4, blpop, NULL, &ms, &by), 1);
    assert_int_equal(ms, 1500);
    assert_int_equal(by, 0);
    const char *brpop1[] = {"BRPOP", "k"}; /* the name alone decides: cached by name */
    assert_int_equal(sl_command_blocking(2, brpop1, NULL, NULL, &by), 1);
    assert_int_equal(by, 0);
    const char *bzmpop[] = {"BZMPOP", "0", "1", "z", "MIN"};
    assert_int_equal(sl_command_blocking(5, bzmpop, NULL, &ms, NULL), 1);
    assert_int_equal(ms, 0);
    const char *get[] = {"GET", "k"};
    assert_int_equal(sl_command_blocking(2, get, NULL, &ms, &by), 0);
    assert_int_equal(ms, -1);
    assert_int_equal(by, 0);
    const char *ping[] = {"BLPOP"}; /* no argument: never blocks */
    assert_int_equal(sl_command_blocking(1, ping, NULL, &ms, &by), 0);
    const char *xread[] = {"xread", "COUNT", "2", "block", "250", "STREAMS", "s", "$"};
    assert_int_equal(sl_command_blocking(8, xread, NULL, &ms, &by), 1);
    assert_int_equal(ms, 250);
    assert_int_equal(by, 1);
    const char *xread_nb[] = {"XREAD", "STREAMS", "BLOCK", "0"};
    assert_int_equal(sl_command_blocking(4, xread_nb, NULL, &ms, &by), 0);
    assert_int_equal(by, 1);
    const char *xrg[] = {"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"};
    assert_int_equal(sl_command_blocking(9, xrg, NULL, &ms, &by), 1);
    assert_int_equal(ms, 0);
    assert_int_equal(by, 1);
    const char *wait3[] = {"WAIT", "1", "100"};
    assert_int_equal(sl_command_blocking(3, wait3, NULL, &ms, &by), 1);
    assert_int_equal(by, 1);
    const char *wait2[] = {"WAIT", "1"};
    assert_int_equal(sl_command_blocking(2, wait2, NULL, &ms, &by), 0);
    assert_int_equal(by, 1);
    /* lengths given: "BLPOPX" cut to "BLPOP", an argument holding a NUL */
    const char *cut[] = {"BLPOPX", "a\0b", "0"};
    size_t lens[] = {5, 3, 1};
    assert_int_equal(sl_command_blocking(3, cut, lens, &ms, NULL), 1);
    assert_int_equal(ms, 0);
    lens[0] = 6;
    assert_int_equal(sl_command_blocking(3, cut, lens, &ms, NULL), 0);
    /* more arguments than the stack holds: the heap path, same answer */
    enum { N = 3000 };
    const char **many = malloc(sizeof *many * N);
    assert_non_null(many);
    many[0] = "XREAD";
    many[1] = "BLOCK";
    many[2] = "40";
    many[3] = "STREAMS";
    for (int i = 4; i < N; i++) many[i] = "some-stream-name-or-id";
    assert_int_equal(sl_command_blocking(N, many, NULL, &ms, &by), 1);
    assert_int_equal(ms, 40);
    many[1] = "COUNT";
    assert_int_equal(sl_command_blocking(N, many, NULL, &ms, &by), 0);
    free(many);
    /* bad input */
    assert_int_equal(sl_command_blocking(0, blpop, NULL, &ms, &by), SL_EINVAL);
    assert_int_equal(sl_command_blocking(-1, blpop, NULL, &ms, &by), SL_EINVAL);
    assert_int_equal(sl_command_blocking(2, NULL, NULL, &ms, &by), SL_EINVAL);
    const char *hole[] = {"BLPOP", NULL, "0"};
    assert_int_equal(sl_command_blocking(3, hole, NULL, &ms, &by), SL_EINVAL);
}

/* ------------------------------------------------------------ a lone BLPOP */

typedef struct blocker {
    sl_client *client;
    sl_batch *batch;
    const char *timeout;
    int exec_timeout;
    int rc;
} blocker;

static void *blpop_main(void *arg)
{
    blocker *k = arg;
    const char *argv[] = {"BLPOP", "q", k->timeout};
    k->rc = run_argv(k->batch, 3, argv, k->exec_timeout);
    return NULL;
}

static void test_blpop_cancel_closes_only_its_lease(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client *c = new_client(fs_port(n), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    assert_int_equal(get_ok(b, "k"), 0); /* the shared connection */
    assert_int_equal(fs_open_connections(n), 1);
    uint64_t accepted = fs_connections(n);

    stall_once(n, "BLPOP", "q");
    blocker k = {c, b, "0", 0, 99};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, blpop_main, &k), 0);
    assert_int_equal(fs_wait_stalled(n, 1, 3000), 0);
    assert_int_equal(fs_open_connections(n), 2); /* the BLPOP has a connection of its own */
    sl_client_cancel(c);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(k.rc, SL_ECANCELLED);
    want_err(b, 0, SL_ERR_CANCELLED);
    /* its connection is closed (a still-armed pop dies with it); the shared one stays */
    assert_int_equal(fs_wait_open_connections(n, 1, 3000), 0);
    fs_release(n);
    assert_int_equal(get_ok(b, "k"), 0);
    assert_int_equal(fs_connections(n), accepted + 1); /* the shared one never reconnected */

    /* the next BLPOP gets a fresh lease and its answer */
    fs_add_reply(n, "BLPOP", "q", 1, "*2\r\n$1\r\nq\r\n$1\r\nv\r\n");
    const char *argv[] = {"BLPOP", "q", "0"};
    assert_int_equal(run_argv(b, 3, argv, 0), 0);
    const uint8_t *data;
    const sl_reply *r = reply_at(b, 0, &data);
    assert_int_equal(r->type, SL_REPLY_ARRAY);
    assert_int_equal(r[2].len, 1);
    assert_memory_equal(data + r[2].offset, "v", 1);
    assert_int_equal(fs_count(n, "BLPOP", "q"), 2);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

static void test_blpop_deadline_closes_only_its_lease(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n));
    o.url = url;
    o.mode = SL_MODE_PLAIN;
    o.blocking_grace_ms = 20;
    o.command_timeout_ms = 60000; /* not the BLPOP's deadline: block time + grace is */
    sl_client *c;
    char err[256];
    assert_int_equal(sl_client_new(&c, &o, err, sizeof err), 0);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    assert_int_equal(get_ok(b, "k"), 0);
    uint64_t accepted = fs_connections(n);
    stall_once(n, "BLPOP", "q");
    const char *argv[] = {"BLPOP", "q", "0.05"};
    sl_sizes sz;
    sl_batch_reset(b);
    assert_int_equal(sl_batch_append_argv(b, NULL, 3, argv, NULL), 0);
    assert_int_equal(sl_batch_exec(b, 0, &sz), SL_ETIMEOUT);
    assert_int_equal(sz.errors, 1);
    want_err(b, 0, SL_ERR_TIMEOUT);
    assert_int_equal(fs_wait_open_connections(n, 1, 3000), 0);
    fs_release(n);
    assert_int_equal(get_ok(b, "k"), 0);
    assert_int_equal(fs_connections(n), accepted + 1); /* only the lease was ever added */

    /* The caller's own deadline wins over block 0's "none". */
    stall_once(n, "BLPOP", "q");
    const char *forever[] = {"BLPOP", "q", "0"};
    assert_int_equal(run_argv(b, 3, forever, 50), SL_ETIMEOUT);
    assert_int_equal(fs_wait_open_connections(n, 1, 3000), 0);
    fs_release(n);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

/* The pool: a lease is reused while it is clean, and no more than lease_idle_max stay. */
static void test_lease_pool_reuse(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client *c = new_client(fs_port(n), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    fs_add_reply(n, "BRPOP", NULL, 0, "*2\r\n$1\r\nq\r\n$1\r\nv\r\n");
    const char *argv[] = {"BRPOP", "q", "1"};
    for (int i = 0; i < 5; i++) assert_int_equal(run_argv(b, 3, argv, 0), 0);
    assert_int_equal(fs_count(n, "BRPOP", "q"), 5);
    assert_int_equal(sl__lease_count(c, 0), 1); /* one lease served all five */
    assert_int_equal(sl__lease_count(c, 1), 0);
    /* the probe of sl_client_new, then the lease: nothing else was opened */
    assert_int_equal(fs_connections(n), 2);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

/* ------------------------------------------------------------ pipelines */

static void test_blocking_in_pipeline_refused(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client *c = new_client(fs_port(n), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    append2(b, "GET", "k");
    append3(b, "BLPOP", "q", "0");
    sl_sizes sz;
    assert_int_equal(sl_batch_exec(b, 0, &sz), SL_EBLOCKING);
    assert_int_equal(sz.commands, 2);
    assert_int_equal(sz.errors, 2);
    want_err_prefix(b, 0, SL_ERR_ARGUMENT, "BLPOP blocks and cannot run in a pipeline");
    want_err_prefix(b, 1, SL_ERR_ARGUMENT, "BLPOP blocks");
    assert_non_null(strstr(sl_client_errmsg(c), "sl_session_exec"));
    assert_int_equal(fs_count(n, NULL, "k"), 0); /* nothing was sent */
    assert_int_equal(fs_count(n, "BLPOP", NULL), 0);

    /* XREAD without BLOCK is an ordinary read */
    fs_add_reply(n, "XREAD", NULL, 0, "*-1\r\n");
    append2(b, "GET", "k");
    const char *xr[] = {"XREAD", "STREAMS", "s", "0"};
    assert_int_equal(sl_batch_append_argv(b, NULL, 4, xr, NULL), 0);
    assert_int_equal(sl_batch_exec(b, 0, &sz), 0);
    want_nil(b, 1);

    /* inside MULTI ... EXEC the server never blocks: the group runs as today */
    fs_add_reply(n, "MULTI", NULL, 0, "+OK\r\n");
    fs_add_reply(n, "BLPOP", NULL, 0, "+QUEUED\r\n");
    fs_add_reply(n, "EXEC", NULL, 0, "*1\r\n*-1\r\n");
    const char *multi[] = {"MULTI"}, *exec[] = {"EXEC"};
    assert_int_equal(sl_batch_append_argv(b, NULL, 1, multi, NULL), 0);
    append3(b, "BLPOP", "q", "0");
    assert_int_equal(sl_batch_append_argv(b, NULL, 1, exec, NULL), 0);
    assert_int_equal(sl_batch_exec(b, 0, &sz), 0);
    assert_int_equal(sz.errors, 0);
    assert_int_equal(fs_count(n, "BLPOP", NULL), 1);
    assert_int_equal(sl__lease_count(c, 0) + sl__lease_count(c, 1), 0); /* no lease for it */
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

/* ------------------------------------------------------------ redirects */

static void test_blocking_redirects(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 2);
    sl_client *c = new_client(fs_port(cl.nodes[0]), SL_MODE_CLUSTER);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    char key[32];
    int slot = key_on(&cl, 0, "q", key, sizeof key);
    char moved[96];
    snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:%d\r\n", slot, fs_port(cl.nodes[1]));
    fs_add_reply(cl.nodes[0], "BLPOP", key, 1, moved);
    fs_add_reply(cl.nodes[1], "BLPOP", key, 0, "*2\r\n$1\r\nq\r\n$1\r\nv\r\n");
    const char *argv[] = {"BLPOP", key, "1"};
    assert_int_equal(run_argv(b, 3, argv, 0), 0);
    const uint8_t *data;
    const sl_reply *rr = reply_at(b, 0, &data);
    assert_int_equal(rr->type, SL_REPLY_ARRAY);
    assert_memory_equal(data + rr[2].offset, "v", 1);
    assert_int_equal(fs_count(cl.nodes[0], "BLPOP", key), 1);
    assert_int_equal(fs_count(cl.nodes[1], "BLPOP", key), 1);
    assert_int_equal(stats_of(c).moved, 1);

    /* -UNBLOCKED: not executed, sent once more (after a refresh: node 1 owns the slot now) */
    fs_range map[] = {{0, 16383, fs_port(cl.nodes[1])}};
    fs_cluster_set_map(&cl, map, 1);
    fs_clear_rules(cl.nodes[1]); /* rules match in order: the -UNBLOCKED first */
    fs_add_reply(cl.nodes[1], "BLPOP", key, 1, "-UNBLOCKED force unblock from blocking operation\r\n");
    fs_add_reply(cl.nodes[1], "BLPOP", key, 0, "*2\r\n$1\r\nq\r\n$1\r\nv\r\n");
    assert_int_equal(run_argv(b, 3, argv, 0), 0);
    assert_int_equal(fs_count(cl.nodes[1], "BLPOP", key), 3);

    /* a connection lost after sending: maybe executed, never sent again */
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "BLPOP";
    r.times = 1;
    r.action = FS_CLOSE;
    fs_clear_rules(cl.nodes[1]);
    fs_add_rule(cl.nodes[1], &r);
    assert_int_equal(run_argv(b, 3, argv, 0), SL_EIO);
    want_err(b, 0, SL_ERR_IO);
    assert_int_equal(fs_count(cl.nodes[1], "BLPOP", key), 4);
    sl_batch_free(b);
    sl_client_free(c);
    fs_cluster_stop(&cl);
}

/* ------------------------------------------------------------ sessions */

static void tx_replies(fs_node *n)
{
    fs_add_reply(n, "WATCH", NULL, 0, "+OK\r\n");
    fs_add_reply(n, "UNWATCH", NULL, 0, "+OK\r\n");
    fs_add_reply(n, "MULTI", NULL, 0, "+OK\r\n");
    fs_add_reply(n, "DISCARD", NULL, 0, "+OK\r\n");
}

static int cmd1(sl_batch *b, const char *a0)
{
    const char *argv[] = {a0};
    return sl_batch_append_argv(b, NULL, 1, argv, NULL);
}

static void test_session_transaction(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 2);
    for (int i = 0; i < 2; i++) tx_replies(cl.nodes[i]);
    sl_client *c = new_client(fs_port(cl.nodes[0]), SL_MODE_CLUSTER);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    char key[32], other[32];
    int slot = key_on(&cl, 1, "w", key, sizeof key);
    key_on(&cl, 0, "o", other, sizeof other);

    sl_session *s;
    assert_int_equal(sl_session_new(c, &s), 0);
    assert_int_equal(sl_session_slot(s), -1);
    append2(b, "WATCH", key);
    append2(b, "GET", key);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    assert_int_equal(sl_session_slot(s), slot);
    assert_int_equal(sl_session_watching(s), 1);
    assert_int_equal(fs_count(cl.nodes[1], "WATCH", key), 1); /* pinned to the key's owner */

    /* another slot's key is refused before anything is sent */
    append2(b, "GET", other);
    sl_sizes sz;
    assert_int_equal(sl_session_exec(s, b, 0, &sz), SL_ECLUSTER);
    want_err_prefix(b, 0, SL_ERR_CLUSTER, "CROSSSLOT");
    assert_int_equal(fs_count(cl.nodes[0], "GET", other) + fs_count(cl.nodes[1], "GET", other), 0);

    /* EXEC answers nil: aborted */
    fs_add_reply(cl.nodes[1], "EXEC", NULL, 1, "*-1\r\n");
    assert_int_equal(cmd1(b, "MULTI"), 0);
    append3(b, "SET", key, "1");
    assert_int_equal(cmd1(b, "EXEC"), 0);
    assert_int_equal(sl_session_exec(s, b, 0, &sz), SL_EABORTED);
    want_nil(b, 2);
    assert_int_equal(sl_session_watching(s), 0);

    /* a committed one */
    fs_add_reply(cl.nodes[1], "EXEC", NULL, 1, "*1\r\n+OK\r\n");
    append2(b, "WATCH", key);
    assert_int_equal(cmd1(b, "MULTI"), 0);
    append3(b, "SET", key, "2");
    assert_int_equal(cmd1(b, "EXEC"), 0);
    assert_int_equal(sl_session_exec(s, b, 0, &sz), 0);
    assert_int_equal(sz.errors, 0);
    assert_int_equal(sl_session_close(s), 0);
    assert_int_equal(fs_count(cl.nodes[1], "UNWATCH", NULL) + fs_count(cl.nodes[1], "DISCARD", NULL), 0);
    assert_int_equal(fs_count(cl.nodes[1], "WATCH", key), 2);
    sl_batch_free(b);
    sl_client_free(c);
    fs_cluster_stop(&cl);
}

static void test_session_abandoned_comes_back_clean(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    tx_replies(n);
    sl_client *c = new_client(fs_port(n), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    sl_session *s;
    assert_int_equal(sl_session_new(c, &s), 0);
    append2(b, "WATCH", "k");
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    uint64_t accepted = fs_connections(n);
    assert_int_equal(sl_session_close(s), 0); /* without EXEC: UNWATCH */
    assert_int_equal(fs_count(n, "UNWATCH", NULL), 1);

    /* the next session gets the same connection back, and a MULTI left open is discarded */
    assert_int_equal(sl_session_new(c, &s), 0);
    append2(b, "WATCH", "k");
    assert_int_equal(cmd1(b, "MULTI"), 0);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    assert_int_equal(sl_session_close(s), 0);
    assert_int_equal(fs_count(n, "DISCARD", NULL), 1);
    assert_int_equal(fs_count(n, "UNWATCH", NULL), 1);
    assert_int_equal(fs_connections(n), accepted);
    assert_int_equal(sl__lease_count(c, 0), 1);

    /* a session that never watched sends nothing at close */
    assert_int_equal(sl_session_new(c, &s), 0);
    append2(b, "GET", "k");
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    assert_int_equal(sl_session_close(s), 0);
    assert_int_equal(fs_count(n, "DISCARD", NULL) + fs_count(n, "UNWATCH", NULL), 2);
    sl_session_close(NULL);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

static void test_session_moved_while_watched(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 2);
    for (int i = 0; i < 2; i++) tx_replies(cl.nodes[i]);
    sl_client *c = new_client(fs_port(cl.nodes[0]), SL_MODE_CLUSTER);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    char key[32];
    int slot = key_on(&cl, 0, "m", key, sizeof key);
    sl_session *s;
    assert_int_equal(sl_session_new(c, &s), 0);
    append2(b, "WATCH", key);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    uint64_t open_before = fs_open_connections(cl.nodes[0]);

    /* the slot moves to node 1 while it is watched */
    char moved[96];
    snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:%d\r\n", slot, fs_port(cl.nodes[1]));
    fs_add_reply(cl.nodes[0], "GET", key, 1, moved);
    append2(b, "GET", key);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), SL_EWATCHMOVED);
    want_err_prefix(b, 0, SL_ERR_SERVER, "MOVED");
    assert_non_null(strstr(sl_client_errmsg(c), "moved while the session watched"));
    /* broken: refused from now on, and closed (not UNWATCHed) */
    append2(b, "GET", key);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), SL_ESTATE);
    assert_int_equal(sl_session_close(s), 0);
    assert_int_equal(fs_count(cl.nodes[0], "UNWATCH", NULL), 0);
    assert_int_equal(fs_wait_open_connections(cl.nodes[0], open_before - 1, 3000), 0);

    /* the MOVED taught the map: a new session pins the new owner at once */
    fs_range to1[] = {{0, 16383, fs_port(cl.nodes[1])}};
    fs_cluster_set_map(&cl, to1, 1);
    assert_int_equal(sl_session_new(c, &s), 0);
    append2(b, "WATCH", key);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    assert_int_equal(fs_count(cl.nodes[1], "WATCH", key), 1);
    assert_int_equal(sl_session_close(s), 0);

    /* without a watch, a MOVED only unpins: the next batch goes to the new owner */
    assert_int_equal(sl_session_new(c, &s), 0);
    char back[96];
    snprintf(back, sizeof back, "-MOVED %d 127.0.0.1:%d\r\n", slot, fs_port(cl.nodes[0]));
    fs_add_reply(cl.nodes[1], "GET", key, 1, back);
    append2(b, "GET", key);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    want_err_prefix(b, 0, SL_ERR_SERVER, "MOVED");
    assert_int_equal(sl_session_slot(s), -1);
    fs_range to0[] = {{0, 16383, fs_port(cl.nodes[0])}};
    fs_cluster_set_map(&cl, to0, 1);
    uint64_t gets0 = fs_count(cl.nodes[0], "GET", key);
    append2(b, "GET", key);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), 0);
    assert_int_equal(fs_count(cl.nodes[0], "GET", key), gets0 + 1);
    assert_int_equal(sl_session_close(s), 0);
    sl_batch_free(b);
    sl_client_free(c);
    fs_cluster_stop(&cl);
}

static void *cancel_when_stalled(void *arg)
{
    void **a = arg;
    if (fs_wait_stalled(a[0], 1, 3000) == 0) sl_client_cancel(a[1]);
    return NULL;
}

static void test_session_cancel_breaks_it(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    tx_replies(n);
    sl_client *c = new_client(fs_port(n), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    sl_session *s;
    assert_int_equal(sl_session_new(c, &s), 0);
    stall_once(n, "BLPOP", "q");
    append2(b, "WATCH", "k");
    append3(b, "BLPOP", "q", "0");
    void *args[2] = {n, c};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_when_stalled, args), 0);
    assert_int_equal(sl_session_exec(s, b, 0, NULL), SL_ECANCELLED); /* block 0: only the cancel ends it */
    assert_int_equal(pthread_join(th, NULL), 0);
    want_err(b, 1, SL_ERR_CANCELLED);
    append2(b, "GET", "k");
    assert_int_equal(sl_session_exec(s, b, 0, NULL), SL_ESTATE);
    assert_int_equal(sl_session_close(s), 0);
    fs_release(n);
    assert_int_equal(fs_wait_open_connections(n, 1, 3000), 0); /* the probe's; the lease is gone */
    assert_int_equal(fs_count(n, "UNWATCH", NULL), 0);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

/* ------------------------------------------------------------ options */

static void test_options_v3_get_defaults(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(n));
    sl_client_options o;
    memset(&o, 0x7f, sizeof o); /* what follows a version-3 struct is garbage to the library */
    sl_client_options d = SL_CLIENT_OPTIONS_INIT;
    memcpy(&o, &d, offsetof(sl_client_options, blocking_grace_ms));
    o.version = 3;
    o.size = (unsigned)offsetof(sl_client_options, blocking_grace_ms);
    o.url = url;
    o.mode = SL_MODE_PLAIN;
    sl_client *c;
    char err[256];
    assert_int_equal(sl_client_new(&c, &o, err, sizeof err), 0);
    assert_int_equal(c->opts.blocking_grace_ms, 1000);
    assert_int_equal(c->opts.lease_idle_max, 4);
    sl_client_free(c);
    /* sl_client_options_init for version 3 writes a version-3 struct's bytes, no more */
    memset(&o, 0x7f, sizeof o);
    assert_int_equal(sl_client_options_init(&o, 3), 0);
    assert_int_equal(o.version, 3);
    assert_int_equal(o.size, offsetof(sl_client_options, blocking_grace_ms));
    assert_int_equal(o.blocking_grace_ms, 0x7f7f7f7f);
    assert_int_equal(sl_client_options_init(&o, SL_CLIENT_OPTIONS_VERSION), 0);
    assert_int_equal(o.size, sizeof o);
    assert_int_equal(o.blocking_grace_ms, 1000);
    d.blocking_grace_ms = -5;
    d.url = url;
    assert_int_equal(sl_client_new(&c, &d, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "blocking_grace_ms"));
    fs_stop(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which_commands_block),
        cmocka_unit_test(test_command_blocking_public),
        cmocka_unit_test(test_blpop_cancel_closes_only_its_lease),
        cmocka_unit_test(test_blpop_deadline_closes_only_its_lease),
        cmocka_unit_test(test_lease_pool_reuse),
        cmocka_unit_test(test_blocking_in_pipeline_refused),
        cmocka_unit_test(test_blocking_redirects),
        cmocka_unit_test(test_session_transaction),
        cmocka_unit_test(test_session_abandoned_comes_back_clean),
        cmocka_unit_test(test_session_moved_while_watched),
        cmocka_unit_test(test_session_cancel_breaks_it),
        cmocka_unit_test(test_options_v3_get_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
