/* test_failover: replica reads and failover (failover.c), through the public API against
 * fake nodes: read_from (a replica that sent READONLY serves the reads, round robin, the
 * primary when the replica is down or -LOADING / -MASTERDOWN), a read retried once after
 * its connection broke, a sent write failing with the documented error (or sent again
 * with retry_writes), never-sent commands re-routed after a refresh shows the promotion,
 * -READONLY / -UNBLOCKED / -LOADING on a primary resent, MOVED to a promoted replica, and
 * the events. Every verdict is a reply, a server's count or a counter. */
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

/* ------------------------------------------------------------------ events */

#define MAX_EVENTS 64
typedef struct events {
    int n;
    sl_event_type type[MAX_EVENTS];
    char addr[MAX_EVENTS][64];
} events;

static void on_event(void *ctx, sl_event_type type, const char *addr)
{
    events *e = ctx;
    if (e->n >= MAX_EVENTS) return;
    e->type[e->n] = type;
    snprintf(e->addr[e->n], sizeof e->addr[e->n], "%s", addr);
    e->n++;
}

static int count_events(const events *e, sl_event_type type, const char *addr)
{
    int n = 0;
    for (int i = 0; i < e->n; i++)
        if (e->type[i] == type && (!addr || strcmp(e->addr[i], addr) == 0)) n++;
    return n;
}

/* ------------------------------------------------------------------ fixture */

/* Three fake primaries (the even split) and up to two fake replicas of primary 0. A
 * replica is a plain fake node (no ownership checks: it answers any key from its own
 * store); every node answers CLUSTER SLOTS with the map naming the replicas. */
typedef struct fixture {
    fs_cluster cl;
    fs_node *rep[2];
    int nrep;
    events ev;
    sl_client *client;
    sl_batch *batch;
    char k0[32];  /* a key of primary 0's slots */
    int slot0;
} fixture;

static char addr_buf[64];
static const char *addr_of(fs_node *n)
{
    snprintf(addr_buf, sizeof addr_buf, "127.0.0.1:%d", fs_port(n));
    return addr_buf;
}

/* CLUSTER SLOTS naming owner[i] for the even split's range i and the replicas of range 0
 * (reps[0..nreps)). */
static void slots_reply(fixture *f, const int *owner, const int *reps, int nreps, char *out, size_t cap)
{
    size_t pos = (size_t)snprintf(out, cap, "*3\r\n");
    for (int i = 0; i < 3; i++) {
        int lo = 16384 * i / 3, hi = 16384 * (i + 1) / 3 - 1;
        int extra = i == 0 ? nreps : 0;
        pos += (size_t)snprintf(out + pos, cap - pos, "*%d\r\n:%d\r\n:%d\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$2\r\nn%d\r\n",
                                3 + extra, lo, hi, owner[i], i);
        for (int r = 0; r < extra; r++)
            pos += (size_t)snprintf(out + pos, cap - pos, "*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$2\r\nr%d\r\n", reps[r], r);
    }
    (void)f;
}

static int rule_ids[FS_MAX_NODES + 2];

/* Every node (primaries and replicas) answers CLUSTER SLOTS with this map from now on. */
static void set_map(fixture *f, const int *owner, const int *reps, int nreps)
{
    static char reply[4096];
    slots_reply(f, owner, reps, nreps, reply, sizeof reply);
    for (int i = 0; i < 3; i++) {
        if (rule_ids[i] >= 0) fs_remove_rule(f->cl.nodes[i], rule_ids[i]);
        rule_ids[i] = fs_add_reply(f->cl.nodes[i], "CLUSTER SLOTS", NULL, 0, reply);
    }
    for (int r = 0; r < f->nrep; r++) {
        if (!f->rep[r]) continue;
        if (rule_ids[3 + r] >= 0) fs_remove_rule(f->rep[r], rule_ids[3 + r]);
        rule_ids[3 + r] = fs_add_reply(f->rep[r], "CLUSTER SLOTS", NULL, 0, reply);
    }
}

static void default_map(fixture *f)
{
    int owner[3] = {fs_port(f->cl.nodes[0]), fs_port(f->cl.nodes[1]), fs_port(f->cl.nodes[2])};
    int reps[2] = {f->rep[0] ? fs_port(f->rep[0]) : 0, f->rep[1] ? fs_port(f->rep[1]) : 0};
    set_map(f, owner, reps, f->nrep);
}

static sl_client *client_with(fixture *f, int seed, sl_read_from rf, int retry_writes)
{
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", fs_port(f->cl.nodes[seed]));
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = SL_MODE_CLUSTER;
    o.connect_timeout_ms = 1000;
    o.command_timeout_ms = EXEC_TIMEOUT_MS;
    o.read_from = rf;
    o.retry_writes = retry_writes;
    o.on_event = on_event;
    o.on_event_ctx = &f->ev;
    sl_client *c = NULL;
    char err[256] = "";
    int rc = sl_client_new(&c, &o, err, sizeof err);
    if (rc) fprintf(stderr, "sl_client_new: %d %s\n", rc, err);
    assert_int_equal(rc, 0);
    return c;
}

static fixture *start(int nrep, int seed, sl_read_from rf, int retry_writes)
{
    fixture *f = calloc(1, sizeof *f);
    for (size_t i = 0; i < sizeof rule_ids / sizeof rule_ids[0]; i++) rule_ids[i] = -1;
    fs_cluster_start(&f->cl, 3);
    f->nrep = nrep;
    for (int r = 0; r < nrep; r++) f->rep[r] = fs_start();
    default_map(f);
    f->slot0 = key_on(&f->cl, 0, "fo:", f->k0, sizeof f->k0);
    /* the replicas hold what the primary holds (replication, as far as the tests care) */
    fs_store_set(f->cl.nodes[0], f->k0, "v0");
    for (int r = 0; r < nrep; r++) fs_store_set(f->rep[r], f->k0, "v0");
    f->client = client_with(f, seed, rf, retry_writes);
    assert_int_equal(sl_batch_new(f->client, &f->batch), 0);
    for (int i = 0; i < 3; i++) fs_reset_counters(f->cl.nodes[i]);
    for (int r = 0; r < nrep; r++) fs_reset_counters(f->rep[r]);
    return f;
}

static void stop(fixture *f)
{
    sl_batch_free(f->batch);
    sl_client_free(f->client);
    fs_cluster_stop(&f->cl);
    for (int r = 0; r < f->nrep; r++) fs_stop(f->rep[r]);
    free(f);
}

static void exec_ok(fixture *f, sl_sizes *sz)
{
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, sz), 0);
}

/* ------------------------------------------------------------ replica reads */

/* read_from = primary (the default): nothing goes to the replica, no READONLY anywhere. */
static void test_reads_primary_by_default(void **state)
{
    (void)state;
    fixture *f = start(1, 0, SL_READ_PRIMARY, 0);
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    want_str(f->batch, 0, "v0");
    assert_int_equal(fs_count(f->cl.nodes[0], "GET", f->k0), 1);
    assert_int_equal(fs_connections(f->rep[0]), 0);
    assert_int_equal(stats_of(f->client).replica_reads, 0);
    /* the node list names the replica of primary 0 */
    sl_node_info *nodes;
    size_t n;
    assert_int_equal(sl_client_nodes(f->client, &nodes, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(nodes[3].is_primary, 0);
    assert_string_equal(nodes[3].addr, addr_of(f->rep[0]));
    assert_int_equal(nodes[3].primary, 0);
    sl_client_nodes_free(f->client, nodes);
    stop(f);
}

/* prefer-replica: reads to the replica (which got READONLY first on its connection),
 * writes and read-write commands to the primary. */
static void test_prefer_replica_reads(void **state)
{
    (void)state;
    fixture *f = start(1, 0, SL_READ_PREFER_REPLICA, 0);
    fs_store_set(f->rep[0], f->k0, "from-replica");
    append2(f->batch, "GET", f->k0);
    append3(f->batch, "SET", f->k0, "w");
    append2(f->batch, "STRLEN", f->k0);
    append2(f->batch, "INCR", "fo:cnt{fo:}");
    sl_sizes sz;
    exec_ok(f, &sz);
    want_str(f->batch, 0, "from-replica");
    assert_int_equal(fs_count(f->rep[0], "READONLY", NULL), 1);
    assert_int_equal(fs_count(f->rep[0], "GET", f->k0), 1);
    assert_int_equal(fs_count(f->rep[0], "STRLEN", f->k0), 1);
    assert_int_equal(fs_count(f->cl.nodes[0], "GET", f->k0), 0);
    assert_int_equal(fs_cluster_count(&f->cl, "SET", f->k0), 1);
    assert_int_equal(fs_count(f->rep[0], "SET", NULL) + fs_count(f->rep[0], "INCR", NULL), 0);
    assert_int_equal(stats_of(f->client).replica_reads, 2);
    /* primaries never get READONLY */
    assert_int_equal(fs_cluster_count(&f->cl, "READONLY", NULL), 0);
    stop(f);
}

/* round robin over two replicas: 10 reads, 5 each. */
static void test_round_robin_replicas(void **state)
{
    (void)state;
    fixture *f = start(2, 0, SL_READ_REPLICAS_ROUND_ROBIN, 0);
    for (int i = 0; i < 10; i++) append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    for (int i = 0; i < 10; i++) want_str(f->batch, (size_t)i, "v0");
    assert_int_equal(fs_count(f->rep[0], "GET", f->k0), 5);
    assert_int_equal(fs_count(f->rep[1], "GET", f->k0), 5);
    assert_int_equal(fs_count(f->cl.nodes[0], "GET", f->k0), 0);
    stop(f);
}

/* A replica that is down: its reads go to the primary and succeed; no read fails. */
static void test_replica_down_falls_back(void **state)
{
    (void)state;
    fixture *f = start(1, 0, SL_READ_PREFER_REPLICA, 0);
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    assert_int_equal(fs_count(f->rep[0], "GET", f->k0), 1);
    fs_stop(f->rep[0]);
    f->rep[0] = NULL;
    f->nrep = 0;
    for (int round = 0; round < 3; round++) {
        append2(f->batch, "GET", f->k0);
        append2(f->batch, "GET", f->k0);
        exec_ok(f, &sz);
        assert_int_equal(sz.errors, 0);
        want_str(f->batch, 0, "v0");
        want_str(f->batch, 1, "v0");
    }
    assert_int_equal(fs_count(f->cl.nodes[0], "GET", f->k0), 6);
    assert_true(count_events(&f->ev, SL_EVENT_NODE_DOWN, NULL) == 1);
    stop(f);
}

/* -LOADING and -MASTERDOWN from a replica: the read goes to the primary at once. */
static void replica_error_case(const char *reply)
{
    fixture *f = start(1, 0, SL_READ_PREFER_REPLICA, 0);
    fs_add_reply(f->rep[0], "GET", f->k0, 1, reply);
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    assert_int_equal(sz.errors, 0);
    want_str(f->batch, 0, "v0");
    assert_int_equal(fs_count(f->rep[0], "GET", f->k0), 1);
    assert_int_equal(fs_count(f->cl.nodes[0], "GET", f->k0), 1);
    assert_int_equal(stats_of(f->client).retries, 1);
    stop(f);
}

static void test_replica_loading(void **state)
{
    (void)state;
    replica_error_case("-LOADING Redis is loading the dataset in memory\r\n");
}

static void test_replica_masterdown(void **state)
{
    (void)state;
    replica_error_case("-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n");
}

/* ------------------------------------------------------------ error replies of a primary */

/* -LOADING (a restarted primary), -READONLY (it was demoted), -UNBLOCKED (released, not
 * run): the command is sent again and answered. */
static void primary_error_case(const char *cmd, const char *reply, uint64_t want_sent)
{
    fixture *f = start(1, 0, SL_READ_PRIMARY, 0);
    fs_add_reply(f->cl.nodes[0], cmd, f->k0, 1, reply);
    if (strcmp(cmd, "GET") == 0) append2(f->batch, "GET", f->k0);
    else append3(f->batch, "SET", f->k0, "w");
    sl_sizes sz;
    exec_ok(f, &sz);
    assert_int_equal(sz.errors, 0);
    if (strcmp(cmd, "GET") == 0) want_str(f->batch, 0, "v0");
    assert_int_equal(fs_count(f->cl.nodes[0], cmd, f->k0), want_sent);
    assert_int_equal(stats_of(f->client).retries, 1);
    stop(f);
}

static void test_primary_loading(void **state)
{
    (void)state;
    primary_error_case("GET", "-LOADING Redis is loading the dataset in memory\r\n", 2);
}

static void test_primary_readonly(void **state)
{
    (void)state;
    primary_error_case("SET", "-READONLY You can't write against a read only replica.\r\n", 2);
}

static void test_primary_unblocked(void **state)
{
    (void)state;
    primary_error_case("GET", "-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n", 2);
}

/* -LOADING for ever: past the redirect limit the reply stays, marked SL_ERR_REDIRECTS. */
static void test_loading_hits_limit(void **state)
{
    (void)state;
    fixture *f = start(1, 0, SL_READ_PRIMARY, 0);
    fs_add_reply(f->cl.nodes[0], "GET", f->k0, 0, "-LOADING Redis is loading the dataset in memory\r\n");
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    want_err_prefix(f->batch, 0, SL_ERR_REDIRECTS, "LOADING");
    assert_int_equal(fs_count(f->cl.nodes[0], "GET", f->k0), 6); /* 1 + max_redirects (5) */
    stop(f);
}

/* MOVED to the slot owner's replica: a promotion, reported once. */
static void test_moved_to_promoted_replica(void **state)
{
    (void)state;
    fixture *f = start(1, 0, SL_READ_PRIMARY, 0);
    char moved[96];
    snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:%d\r\n", f->slot0, fs_port(f->rep[0]));
    fs_add_reply(f->cl.nodes[0], "GET", f->k0, 1, moved);
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    want_str(f->batch, 0, "v0");
    assert_int_equal(fs_count(f->rep[0], "GET", f->k0), 1);
    assert_int_equal(count_events(&f->ev, SL_EVENT_FAILOVER, addr_of(f->rep[0])), 1);
    assert_int_equal(stats_of(f->client).failovers, 1);
    stop(f);
}

/* ------------------------------------------------------------ lost connections */

/* A read whose connection broke after it was sent is sent once more, and answered. */
static void test_read_retried_once(void **state)
{
    (void)state;
    fixture *f = start(0, 0, SL_READ_PRIMARY, 0);
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.key = f->k0;
    r.times = 1;
    r.action = FS_CLOSE;
    fs_add_rule(f->cl.nodes[0], &r);
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    want_str(f->batch, 0, "v0");
    assert_int_equal(fs_count(f->cl.nodes[0], "GET", f->k0), 2);
    assert_int_equal(stats_of(f->client).retries, 1);
    stop(f);
}

/* A write whose connection broke after it was sent fails with SL_ERR_IO saying it may have
 * run, and is not sent again; with retry_writes it is sent again (and ran twice here). */
static void write_lost_case(int retry_writes)
{
    fixture *f = start(0, 0, SL_READ_PRIMARY, retry_writes);
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "INCR";
    r.times = 1;
    r.action = FS_CLOSE_AFTER; /* the server ran it; the reply is cut */
    r.close_after = 1;
    fs_add_rule(f->cl.nodes[0], &r);
    char k[32];
    key_on(&f->cl, 0, "fw:", k, sizeof k);
    append2(f->batch, "INCR", k);
    sl_sizes sz;
    /* every command failed without a reply: the execution says SL_EIO */
    assert_int_equal(sl_batch_exec(f->batch, EXEC_TIMEOUT_MS, &sz), retry_writes ? 0 : SL_EIO);
    if (retry_writes) {
        assert_int_equal(sz.errors, 0);
        assert_int_equal(fs_count(f->cl.nodes[0], "INCR", k), 2);
        const uint8_t *data;
        const sl_reply *rep = sl_batch_replies(f->batch, NULL, &data, NULL);
        assert_int_equal(rep[0].type, SL_REPLY_INTEGER);
        assert_int_equal(rep[0].value.integer, 2); /* it ran twice, as documented */
    } else {
        want_err_prefix(f->batch, 0, SL_ERR_IO, NULL);
        const uint8_t *data;
        const sl_reply *rep = sl_batch_replies(f->batch, NULL, &data, NULL);
        assert_non_null(strstr((const char *)data + rep[0].offset, "(the command was sent: it may have been executed)"));
        assert_int_equal(fs_count(f->cl.nodes[0], "INCR", k), 1);
    }
    stop(f);
}

static void test_sent_write_fails(void **state)
{
    (void)state;
    write_lost_case(0);
}

static void test_sent_write_retry_opt_in(void **state)
{
    (void)state;
    write_lost_case(1);
}

/* Primary 0 dies and the cluster promotes replica 0: every live node's CLUSTER SLOTS names
 * it as the owner of range 0 from now on. Returns the dead primary's port. */
static int kill_primary0_promote_replica(fixture *f)
{
    int dead = fs_port(f->cl.nodes[0]);
    fs_stop(f->cl.nodes[0]);
    f->cl.nodes[0] = NULL;
    int owner[3] = {fs_port(f->rep[0]), fs_port(f->cl.nodes[1]), fs_port(f->cl.nodes[2])};
    static char reply[4096];
    slots_reply(f, owner, NULL, 0, reply, sizeof reply);
    for (int i = 1; i < 3; i++) {
        fs_clear_rules(f->cl.nodes[i]);
        fs_add_reply(f->cl.nodes[i], "CLUSTER SLOTS", NULL, 0, reply);
    }
    fs_clear_rules(f->rep[0]);
    fs_add_reply(f->rep[0], "CLUSTER SLOTS", NULL, 0, reply);
    return dead;
}

/* Primary 0 dies; the cluster promotes its replica (the map every node answers names it
 * from now on). Commands queued after the death never reached a socket: they wait, are
 * routed again once a refresh shows the promotion, and succeed; the read in flight on the
 * dead connection is retried and succeeds; the write in flight fails with the documented
 * error. The events: node down, failover, topology changed. */
static void test_failover_reroutes_unsent(void **state)
{
    (void)state;
    fixture *f = start(1, 1, SL_READ_PRIMARY, 0);
    char kw[32];
    key_on(&f->cl, 0, "fx:", kw, sizeof kw);
    /* connect to primary 0 (so its loss is a "node down") */
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    want_str(f->batch, 0, "v0");
    /* primary 0 dies; the replica is promoted */
    int old0 = kill_primary0_promote_replica(f);
    /* in flight on the dead connection: a read and a write */
    append2(f->batch, "GET", f->k0);
    append2(f->batch, "INCR", kw);
    exec_ok(f, &sz);
    want_str(f->batch, 0, "v0");
    want_err_prefix(f->batch, 1, SL_ERR_IO, NULL);
    assert_int_equal(count_events(&f->ev, SL_EVENT_FAILOVER, addr_of(f->rep[0])), 1);
    /* after: everything to the new primary, nothing fails */
    for (int i = 0; i < 5; i++) {
        append2(f->batch, "GET", f->k0);
        append2(f->batch, "INCR", kw);
    }
    exec_ok(f, &sz);
    assert_int_equal(sz.errors, 0);
    assert_int_equal(fs_count(f->rep[0], "INCR", kw), 5);
    char dead[64];
    snprintf(dead, sizeof dead, "127.0.0.1:%d", old0);
    sl_stats st = stats_of(f->client);
    assert_int_equal(st.failovers, 1);
    assert_true(st.refreshes_lost >= 1);
    assert_true(st.retries >= 1);
    assert_int_equal(count_events(&f->ev, SL_EVENT_NODE_DOWN, dead), 1);
    assert_int_equal(count_events(&f->ev, SL_EVENT_NODE_DOWN, NULL), 1);
    assert_true(count_events(&f->ev, SL_EVENT_TOPOLOGY_CHANGED, NULL) >= 1);
    stop(f);
}

/* The same with the primary dead before the client ever used it: the first commands never
 * reach a socket, wait for the refresh that shows the promotion, and none fails. */
static void test_failover_before_first_use(void **state)
{
    (void)state;
    fixture *f = start(1, 1, SL_READ_PRIMARY, 0);
    (void)kill_primary0_promote_replica(f);
    append2(f->batch, "GET", f->k0);
    append3(f->batch, "SET", f->k0, "new");
    append2(f->batch, "GET", f->k0);
    sl_sizes sz;
    exec_ok(f, &sz);
    assert_int_equal(sz.errors, 0);
    want_str(f->batch, 0, "v0");
    want_str(f->batch, 2, "new");
    assert_int_equal(count_events(&f->ev, SL_EVENT_FAILOVER, addr_of(f->rep[0])), 1);
    stop(f);
}

/* A lone primary (no replica) that is down: its commands fail at once with SL_ERR_IO, as
 * before; nothing waits for a promotion that cannot come. */
static void test_lone_primary_down_fails_fast(void **state)
{
    (void)state;
    fixture *f = start(0, 1, SL_READ_PRIMARY, 0);
    fs_stop(f->cl.nodes[0]);
    f->cl.nodes[0] = NULL;
    char k1[32];
    key_on(&f->cl, 1, "fl:", k1, sizeof k1);
    fs_store_set(f->cl.nodes[1], k1, "v1");
    append2(f->batch, "GET", f->k0);
    append2(f->batch, "GET", k1);
    sl_sizes sz;
    exec_ok(f, &sz);
    want_err_prefix(f->batch, 0, SL_ERR_IO, NULL);
    want_str(f->batch, 1, "v1");
    assert_int_equal(stats_of(f->client).retries, 0);
    stop(f);
}

/* ------------------------------------------------------------ the libuv driver */

/* One batch through a loop thread (sl_loop_submit_cq): its completion's status. */
static int run_async(fixture *f, sl_loop *loop, sl_cq *q)
{
    assert_int_equal(sl_loop_submit_cq(loop, f->batch, EXEC_TIMEOUT_MS, q, NULL, SL_SUBMIT_WAIT), 0);
    sl_completion done;
    assert_int_equal(sl_cq_wait(q, &done, 1, 2 * EXEC_TIMEOUT_MS), 1);
    return done.status;
}

/* The same rules in the event-loop driver: replica reads (READONLY in its handshake), and
 * never-sent commands re-routed once the background refresh shows the promotion. */
static void test_async_replica_reads_and_failover(void **state)
{
    (void)state;
    fixture *f = start(1, 1, SL_READ_PREFER_REPLICA, 0);
    fs_store_set(f->rep[0], f->k0, "from-replica");
    sl_loop *loop;
    sl_cq *q;
    assert_int_equal(sl_loop_new(&loop), 0);
    assert_int_equal(sl_cq_new(&q), 0);
    append2(f->batch, "GET", f->k0);
    assert_int_equal(run_async(f, loop, q), 0);
    want_str(f->batch, 0, "from-replica");
    assert_int_equal(fs_count(f->rep[0], "READONLY", NULL), 1);
    /* primary 0 dies, its replica is promoted: a write to its slot waits and succeeds */
    (void)kill_primary0_promote_replica(f);
    append3(f->batch, "SET", f->k0, "after");
    assert_int_equal(run_async(f, loop, q), 0);
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(f->batch, NULL, &d, NULL);
    assert_int_equal(r[0].type, SL_REPLY_STATUS);
    assert_int_equal(count_events(&f->ev, SL_EVENT_FAILOVER, addr_of(f->rep[0])), 1);
    assert_int_equal(fs_count(f->rep[0], "SET", f->k0), 1);
    sl_loop_free(loop);
    sl_cq_free(q);
    stop(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_primary_by_default),
        cmocka_unit_test(test_prefer_replica_reads),
        cmocka_unit_test(test_round_robin_replicas),
        cmocka_unit_test(test_replica_down_falls_back),
        cmocka_unit_test(test_replica_loading),
        cmocka_unit_test(test_replica_masterdown),
        cmocka_unit_test(test_primary_loading),
        cmocka_unit_test(test_primary_readonly),
        cmocka_unit_test(test_primary_unblocked),
        cmocka_unit_test(test_loading_hits_limit),
        cmocka_unit_test(test_moved_to_promoted_replica),
        cmocka_unit_test(test_read_retried_once),
        cmocka_unit_test(test_sent_write_fails),
        cmocka_unit_test(test_sent_write_retry_opt_in),
        cmocka_unit_test(test_failover_reroutes_unsent),
        cmocka_unit_test(test_failover_before_first_use),
        cmocka_unit_test(test_lone_primary_down_fails_fast),
        cmocka_unit_test(test_async_replica_reads_and_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
