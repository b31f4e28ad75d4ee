/* The async engine (slotlane_uv.h) against fake nodes: on a loop the test owns and on the
 * core's loop thread. Many concurrent batches on one client, redirects, a node dying
 * mid-batch, deadlines, cancellation, and shutdown with batches in flight — every
 * callback called exactly once, every handle closed (uv_loop_close succeeds). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "fake_server.h"
#include "slotlane_uv.h"

#define NBATCH 64
#define PER 20

typedef struct job {
    sl_batch *b;
    int calls;      /* callbacks received */
    int status;
    int round;      /* which keys/values the batch used */
    int ok;         /* replies checked */
    uint64_t errors;
} job;

static sl_client *client_for(int port, sl_mode mode)
{
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", port);
    o.url = url;
    o.mode = mode;
    o.connect_timeout_ms = 1000;
    sl_client *c = NULL;
    char err[256];
    if (sl_client_new(&c, &o, err, sizeof err) != 0) fail_msg("sl_client_new: %s", err);
    return c;
}

static void key_of(char *buf, size_t cap, int job, int i)
{
    snprintf(buf, cap, "k:%d:%d", job, i);
}

/* Each batch: PER SETs of its own keys then PER GETs of them. */
static void queue_job(job *j, int id)
{
    char key[32], val[32];
    for (int i = 0; i < PER; i++) {
        key_of(key, sizeof key, id, i);
        snprintf(val, sizeof val, "v%d.%d", id, i);
        const char *a[] = {"SET", key, val};
        assert_int_equal(sl_batch_append_argv(j->b, NULL, 3, a, NULL), 0);
    }
    for (int i = 0; i < PER; i++) {
        key_of(key, sizeof key, id, i);
        const char *a[] = {"GET", key};
        assert_int_equal(sl_batch_append_argv(j->b, NULL, 2, a, NULL), 0);
    }
}

static int check_job(job *j, int id)
{
    size_t n;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(j->b, &n, &d, NULL);
    if (n != 2 * PER) return 0;
    for (int i = 0; i < PER; i++)
        if (r[i].type != SL_REPLY_STATUS) return 0;
    for (int i = 0; i < PER; i++) {
        char val[32];
        snprintf(val, sizeof val, "v%d.%d", id, i);
        const sl_reply *g = &r[PER + i];
        if (g->type != SL_REPLY_STRING || g->len != strlen(val) || memcmp(d + g->offset, val, g->len) != 0) return 0;
    }
    return 1;
}

static job *jobs_base;

static void on_done(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    job *j = arg;
    assert_ptr_equal(b, j->b);
    j->calls++;
    j->status = status;
    j->errors = sizes->errors;
    j->ok = status == 0 && check_job(j, (int)(j - jobs_base));
}

/* ------------------------------------------------------------ caller's loop */

static void run_many(sl_mode mode, int cluster_nodes)
{
    fs_cluster cl;
    fs_node *single = NULL;
    int port;
    if (cluster_nodes) {
        fs_cluster_start(&cl, cluster_nodes);
        port = fs_port(cl.nodes[0]);
    } else {
        single = fs_start();
        port = fs_port(single);
    }
    sl_client *c = client_for(port, mode);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), SL_ESTATE);
    job jobs[NBATCH];
    jobs_base = jobs;
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < NBATCH; i++) {
        assert_int_equal(sl_batch_new(c, &jobs[i].b), 0);
        queue_job(&jobs[i], i);
        assert_int_equal(sl_batch_exec_async(jobs[i].b, 3000, on_done, &jobs[i]), 0);
        /* In flight: a second start is refused. */
        assert_int_equal(sl_batch_exec_async(jobs[i].b, 3000, on_done, &jobs[i]), SL_ESTATE);
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* returns when nothing is in flight: idle polls are unref'd */
    for (int i = 0; i < NBATCH; i++) {
        assert_int_equal(jobs[i].calls, 1);
        if (!jobs[i].ok) fail_msg("batch %d: status %d, errors %llu", i, jobs[i].status, (unsigned long long)jobs[i].errors);
    }
    assert_int_equal(sl_client_detach_loop(c, NULL, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    /* The blocking API works again on the same client. */
    const char *get[] = {"GET", "k:3:4"};
    const sl_reply *r;
    const uint8_t *d;
    assert_int_equal(sl_client_command(c, NULL, 2, get, NULL, &r, &d), 0);
    assert_int_equal(r->type, SL_REPLY_STRING);
    for (int i = 0; i < NBATCH; i++) sl_batch_free(jobs[i].b);
    sl_client_free(c);
    if (cluster_nodes) fs_cluster_stop(&cl);
    else fs_stop(single);
}

static void test_many_batches_plain(void **state)
{
    (void)state;
    run_many(SL_MODE_PLAIN, 0);
}

static void test_many_batches_cluster(void **state)
{
    (void)state;
    run_many(SL_MODE_CLUSTER, 3);
}

/* One batch on the caller's loop, for the failure cases. */
typedef struct one {
    uv_loop_t loop;
    sl_client *c;
    job j;
} one;

static void one_start(one *o, fs_cluster *cl)
{
    o->c = client_for(fs_port(cl->nodes[0]), SL_MODE_CLUSTER);
    assert_int_equal(uv_loop_init(&o->loop), 0);
    assert_int_equal(sl_client_attach_loop(o->c, &o->loop), 0);
    memset(&o->j, 0, sizeof o->j);
    assert_int_equal(sl_batch_new(o->c, &o->j.b), 0);
    jobs_base = &o->j;
}

static void one_stop(one *o)
{
    assert_int_equal(sl_client_detach_loop(o->c, NULL, NULL), 0);
    uv_run(&o->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&o->loop), 0);
    sl_batch_free(o->j.b);
    sl_client_free(o->c);
}

static int count_kind(sl_batch *b, int kind)
{
    size_t n;
    const sl_reply *r = sl_batch_replies(b, &n, NULL, NULL);
    int k = 0;
    for (size_t i = 0; i < n; i++) k += r[i].type == SL_REPLY_ERROR && r[i].flags == kind;
    return k;
}

static void test_redirect_async(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    one o;
    one_start(&o, &cl);
    /* Key k:0:0 lives somewhere; its owner answers MOVED to node 2 once, then node 2 serves. */
    int slot = fs_key_slot("k:0:0", 5);
    int owner = fs_cluster_default_owner(&cl, slot);
    int target = (owner + 1) % 3;
    char moved[64];
    snprintf(moved, sizeof moved, "-MOVED %d 127.0.0.1:%d\r\n", slot, fs_port(cl.nodes[target]));
    fs_add_reply(cl.nodes[owner], "SET", "k:0:0", 1, moved);
    fs_set_enforce(cl.nodes[target], 0);
    queue_job(&o.j, 0);
    assert_int_equal(sl_batch_exec_async(o.j.b, 3000, on_done, &o.j), 0);
    uv_run(&o.loop, UV_RUN_DEFAULT);
    assert_int_equal(o.j.calls, 1);
    assert_int_equal(o.j.status, 0);
    assert_int_equal(count_kind(o.j.b, SL_ERR_SERVER), 0);
    sl_stats st;
    memset(&st, 0, sizeof st);
    st.version = SL_STATS_VERSION;
    st.size = (unsigned)sizeof st;
    sl_client_stats(o.c, &st);
    assert_true(st.moved >= 1);
    assert_true(fs_count(cl.nodes[target], "SET", "k:0:0") >= 1);
    one_stop(&o);
    fs_cluster_stop(&cl);
}

static void test_node_dies_async(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    one o;
    one_start(&o, &cl);
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.action = FS_CLOSE;
    fs_add_rule(cl.nodes[1], &r);
    queue_job(&o.j, 0);
    assert_int_equal(sl_batch_exec_async(o.j.b, 3000, on_done, &o.j), 0);
    uv_run(&o.loop, UV_RUN_DEFAULT);
    assert_int_equal(o.j.calls, 1);
    /* Exactly the GETs owned by node 1 failed with I/O errors; all else answered. */
    int expect = 0;
    for (int i = 0; i < PER; i++) {
        char key[32];
        key_of(key, sizeof key, 0, i);
        expect += fs_cluster_default_owner(&cl, fs_key_slot(key, strlen(key))) == 1;
    }
    assert_true(expect > 0);
    int io = count_kind(o.j.b, SL_ERR_IO);
    assert_int_equal(io, expect);
    assert_int_equal(o.j.errors, (uint64_t)expect);
    one_stop(&o);
    fs_cluster_stop(&cl);
}

static void test_timeout_async(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    one o;
    one_start(&o, &cl);
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 1;
    r.action = FS_STALL;
    fs_add_rule(cl.nodes[2], &r);
    queue_job(&o.j, 0);
    assert_int_equal(sl_batch_exec_async(o.j.b, 50, on_done, &o.j), 0);
    uv_run(&o.loop, UV_RUN_DEFAULT);
    assert_int_equal(o.j.calls, 1);
    assert_int_equal(o.j.status, SL_ETIMEOUT);
    assert_true(count_kind(o.j.b, SL_ERR_TIMEOUT) > 0);
    /* Late replies are swallowed: the next batch gets its own answers. */
    fs_release(cl.nodes[2]);
    o.j.calls = 0;
    queue_job(&o.j, 0);
    assert_int_equal(sl_batch_exec_async(o.j.b, 3000, on_done, &o.j), 0);
    uv_run(&o.loop, UV_RUN_DEFAULT);
    assert_int_equal(o.j.calls, 1);
    assert_true(o.j.ok);
    one_stop(&o);
    fs_cluster_stop(&cl);
}

typedef struct canceller {
    fs_node *node;
    sl_client *c;
} canceller;

static void *cancel_main(void *arg)
{
    canceller *k = arg;
    if (fs_wait_stalled(k->node, 1, 3000) == 0) sl_client_cancel(k->c);
    return NULL;
}

static void test_cancel_async(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    one o;
    one_start(&o, &cl);
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = "GET";
    r.times = 1;
    r.action = FS_STALL;
    fs_add_rule(cl.nodes[1], &r);
    queue_job(&o.j, 0);
    canceller k = {cl.nodes[1], o.c};
    pthread_t th;
    assert_int_equal(sl_batch_exec_async(o.j.b, -1, on_done, &o.j), 0);
    assert_int_equal(pthread_create(&th, NULL, cancel_main, &k), 0);
    /* The cancel pipe's handle is unreferenced; run until the callback came. */
    while (o.j.calls == 0) uv_run(&o.loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
    assert_int_equal(o.j.calls, 1);
    assert_int_equal(o.j.status, SL_ECANCELLED);
    assert_true(count_kind(o.j.b, SL_ERR_CANCELLED) > 0);
    fs_release(cl.nodes[1]);
    one_stop(&o);
    fs_cluster_stop(&cl);
}

static int detach_calls;
static void on_detached(sl_client *c, void *arg)
{
    (void)c;
    (void)arg;
    detach_calls++;
}

static void test_detach_with_batches_in_flight(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    sl_client *c = client_for(fs_port(cl.nodes[0]), SL_MODE_CLUSTER);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.action = FS_STALL; /* every node holds everything */
    for (int i = 0; i < 3; i++) fs_add_rule(cl.nodes[i], &r);
    job jobs[8];
    jobs_base = jobs;
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(sl_batch_new(c, &jobs[i].b), 0);
        queue_job(&jobs[i], i);
        assert_int_equal(sl_batch_exec_async(jobs[i].b, -1, on_done, &jobs[i]), 0);
    }
    for (int i = 0; i < 20; i++) uv_run(&loop, UV_RUN_NOWAIT); /* let the bytes go out */
    detach_calls = 0;
    assert_int_equal(sl_client_detach_loop(c, on_detached, NULL), 0);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(jobs[i].calls, 1); /* before detach returned */
        assert_int_equal(jobs[i].status, SL_ECANCELLED);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(detach_calls, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
    for (int i = 0; i < 8; i++) assert_int_equal(jobs[i].calls, 1);
    for (int i = 0; i < 3; i++) fs_clear_rules(cl.nodes[i]);
    for (int i = 0; i < 3; i++) fs_release(cl.nodes[i]);
    for (int i = 0; i < 8; i++) sl_batch_free(jobs[i].b);
    sl_client_free(c);
    fs_cluster_stop(&cl);
}

/* ------------------------------------------------------------ the core's loop thread */

typedef struct tjob {
    job j;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int id;
} tjob;

static void on_done_thread(sl_batch *b, int status, const sl_sizes *sizes, void *arg)
{
    tjob *t = arg;
    (void)b;
    pthread_mutex_lock(&t->mu);
    t->j.calls++;
    t->j.status = status;
    t->j.errors = sizes->errors;
    t->j.ok = status == 0 && check_job(&t->j, t->id);
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

typedef struct submitter {
    sl_loop *loop;
    int port;
    int base;
    int rounds;
    int failures;
} submitter;

static void *submit_main(void *arg)
{
    submitter *s = arg;
    sl_client *c = client_for(s->port, SL_MODE_CLUSTER);
    tjob t;
    memset(&t, 0, sizeof t);
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    assert_int_equal(sl_batch_new(c, &t.j.b), 0);
    for (int r = 0; r < s->rounds; r++) {
        t.id = s->base + r;
        queue_job(&t.j, t.id);
        pthread_mutex_lock(&t.mu);
        t.j.calls = 0;
        pthread_mutex_unlock(&t.mu);
        assert_int_equal(sl_loop_submit(s->loop, t.j.b, 3000, on_done_thread, &t), 0);
        pthread_mutex_lock(&t.mu);
        while (t.j.calls == 0) pthread_cond_wait(&t.cv, &t.mu);
        if (!t.j.ok || t.j.calls != 1) s->failures++;
        pthread_mutex_unlock(&t.mu);
    }
    assert_int_equal(sl_loop_detach(s->loop, c), 0);
    /* Detached: the blocking API works on it again. */
    const char *get[] = {"GET", "k:0:0"};
    const sl_reply *rep;
    const uint8_t *d;
    if (sl_client_command(c, NULL, 2, get, NULL, &rep, &d) != 0) s->failures++;
    sl_batch_free(t.j.b);
    sl_client_free(c);
    pthread_mutex_destroy(&t.mu);
    pthread_cond_destroy(&t.cv);
    return NULL;
}

static void test_loop_thread(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    sl_loop *l;
    assert_int_equal(sl_loop_new(&l), 0);
    submitter s[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (submitter){l, fs_port(cl.nodes[0]), i * 1000, 50, 0};
        assert_int_equal(pthread_create(&th[i], NULL, submit_main, &s[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(s[i].failures, 0);
    }
    sl_loop_free(l);
    fs_cluster_stop(&cl);
}

static void test_loop_free_with_batches_in_flight(void **state)
{
    (void)state;
    fs_cluster cl;
    fs_cluster_start(&cl, 3);
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.action = FS_STALL;
    sl_client *c = client_for(fs_port(cl.nodes[0]), SL_MODE_CLUSTER);
    for (int i = 0; i < 3; i++) fs_add_rule(cl.nodes[i], &r);
    sl_loop *l;
    assert_int_equal(sl_loop_new(&l), 0);
    tjob t[6];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 6; i++) {
        pthread_mutex_init(&t[i].mu, NULL);
        pthread_cond_init(&t[i].cv, NULL);
        t[i].id = i;
        assert_int_equal(sl_batch_new(c, &t[i].j.b), 0);
        queue_job(&t[i].j, i);
        assert_int_equal(sl_loop_submit(l, t[i].j.b, -1, on_done_thread, &t[i]), 0);
    }
    assert_int_equal(fs_wait_stalled(cl.nodes[0], 1, 3000), 0);
    sl_loop_free(l); /* joins: every callback has run */
    for (int i = 0; i < 6; i++) {
        assert_int_equal(t[i].j.calls, 1);
        assert_int_equal(t[i].j.status, SL_ECANCELLED);
    }
    for (int i = 0; i < 3; i++) fs_clear_rules(cl.nodes[i]);
    for (int i = 0; i < 3; i++) fs_release(cl.nodes[i]);
    /* The client is usable with the blocking API after the loop is gone. */
    const char *ping[] = {"PING"};
    const sl_reply *rep;
    const uint8_t *d;
    assert_int_equal(sl_client_command(c, NULL, 1, ping, NULL, &rep, &d), 0);
    for (int i = 0; i < 6; i++) {
        sl_batch_free(t[i].j.b);
        pthread_mutex_destroy(&t[i].mu);
        pthread_cond_destroy(&t[i].cv);
    }
    sl_client_free(c);
    fs_cluster_stop(&cl);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client *c = client_for(fs_port(n), SL_MODE_PLAIN);
    sl_batch *b;
    assert_int_equal(sl_batch_new(c, &b), 0);
    const char *ping[] = {"PING"};
    assert_int_equal(sl_batch_append_argv(b, NULL, 1, ping, NULL), 0);
    assert_int_equal(sl_batch_exec_async(b, 0, on_done, NULL), SL_ESTATE); /* not attached */
    assert_int_equal(sl_batch_exec_async(NULL, 0, on_done, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_exec_async(b, 0, NULL, NULL), SL_EINVAL);
    assert_int_equal(sl_client_attach_loop(NULL, NULL), SL_EINVAL);
    assert_int_equal(sl_client_detach_loop(c, NULL, NULL), SL_ESTATE);
    assert_int_equal(sl_loop_new(NULL), SL_EINVAL);
    sl_loop_free(NULL);
    sl_batch_free(b);
    sl_client_free(c);
    fs_stop(n);
}

/* ------------------------------------------------------------ a server killed mid-run */

/* Every error reply of batch j must be an I/O error naming the node (addr) and saying
 * what happened, never the "bad file descriptor" libuv reports for any POLLERR; every
 * other reply must be the right answer. Returns how many error replies mention `want`. */
static int check_io_errors(job *j, int id, const char *addr, const char *want)
{
    size_t n;
    const uint8_t *d;
    const sl_reply *r = sl_batch_replies(j->b, &n, &d, NULL);
    assert_int_equal(n, 2 * PER);
    int wanted = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].type == SL_REPLY_ERROR) {
            char msg[256];
            snprintf(msg, sizeof msg, "%.*s", (int)r[i].len, (const char *)d + r[i].offset);
            if (r[i].flags != SL_ERR_IO) fail_msg("batch %d reply %zu: kind %d: %s", id, i, (int)r[i].flags, msg);
            if (!strstr(msg, addr)) fail_msg("batch %d reply %zu does not name %s: %s", id, i, addr, msg);
            for (char *p = msg; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
            if (strstr(msg, "bad file descriptor")) fail_msg("batch %d reply %zu: %s", id, i, msg);
            wanted += want && strstr(msg, want) != NULL;
            if (getenv("SL_TEST_SHOW")) fprintf(stderr, "batch %d reply %zu: %s\n", id, i, msg);
        } else if (i < PER) {
            assert_int_equal(r[i].type, SL_REPLY_STATUS);
        } else {
            char val[32];
            snprintf(val, sizeof val, "v%d.%d", id, (int)(i - PER));
            assert_int_equal(r[i].type, SL_REPLY_STRING);
            assert_int_equal(r[i].len, strlen(val));
            assert_memory_equal(d + r[i].offset, val, r[i].len);
        }
    }
    return wanted;
}

/* Submits every batch, lets the loop turn `turns` times, then `kill`s, and runs the loop
 * until every callback came. Returns how many error replies mention `want`. */
static int kill_round(uv_loop_t *loop, job *jobs, int turns, void (*kill)(void *), void *arg, const char *addr,
                      const char *want)
{
    for (int i = 0; i < NBATCH; i++) {
        jobs[i].calls = 0;
        sl_batch_reset(jobs[i].b);
        queue_job(&jobs[i], i);
        assert_int_equal(sl_batch_exec_async(jobs[i].b, 5000, on_done, &jobs[i]), 0);
    }
    for (int t = 0; t < turns; t++) uv_run(loop, UV_RUN_ONCE);
    if (kill) kill(arg);
    uv_run(loop, UV_RUN_DEFAULT);
    int wanted = 0;
    for (int i = 0; i < NBATCH; i++) {
        assert_int_equal(jobs[i].calls, 1);
        wanted += check_io_errors(&jobs[i], i, addr, want);
    }
    return wanted;
}

static void drop_all(void *arg)
{
    fs_drop_connections(arg);
}

typedef struct killed {
    fs_node *node;
    int port;
    int holder; /* a socket bound to the dead node's port, not listening: connects are refused */
} killed;

static void kill_node(void *arg)
{
    killed *k = arg;
    fs_stop(k->node);
    k->node = NULL;
    k->holder = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(k->holder >= 0);
    int one = 1;
    setsockopt(k->holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)k->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(k->holder, (struct sockaddr *)&sa, sizeof sa) != 0) fail_msg("cannot hold port %d", k->port);
}

/* The "server killed mid-run" case of bench/load/test_load.sh, on a loop the test owns:
 * many batches in flight when the node drops every connection (repeatedly, at different
 * points of the exchange; the client reconnects each time), then when it dies for good and
 * every reconnect is refused. Every callback comes once, every failed command says what
 * happened to which node, and the loop closes (no handle left behind). */
static void test_server_killed_async(void **state)
{
    (void)state;
    killed k = {fs_start(), 0, -1};
    k.port = fs_port(k.node);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", k.port);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = addr;
    o.mode = SL_MODE_PLAIN;
    o.connect_timeout_ms = 1000;
    o.reconnect_min_ms = 1; /* so that every round below connects again */
    o.reconnect_max_ms = 2;
    sl_client *c = NULL;
    char err[256];
    if (sl_client_new(&c, &o, err, sizeof err) != 0) fail_msg("sl_client_new: %s", err);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    job jobs[NBATCH];
    jobs_base = jobs;
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < NBATCH; i++) assert_int_equal(sl_batch_new(c, &jobs[i].b), 0);

    /* Connections dropped mid-batch, 24 times: the next round reconnects. */
    for (int round = 0; round < 24; round++) kill_round(&loop, jobs, round % 6, drop_all, k.node, addr, NULL);
    /* After all that the node serves again, every batch whole. (The first round may
     * still find the connection the last drop closed while it was idle: errors then.) */
    kill_round(&loop, jobs, 0, NULL, NULL, addr, NULL);
    kill_round(&loop, jobs, 0, NULL, NULL, addr, NULL);
    for (int i = 0; i < NBATCH; i++)
        if (!jobs[i].ok) fail_msg("batch %d after the drops: status %d", i, jobs[i].status);
    uint64_t accepted = fs_connections(k.node);
    assert_true(accepted >= 2);

    /* The node dies mid-batch, then every reconnect is refused. */
    kill_round(&loop, jobs, 2, kill_node, &k, addr, NULL);
    int refused = 0;
    for (int round = 0; round < 8; round++) {
        struct timespec ts = {0, 5 * 1000 * 1000}; /* past the reconnect backoff */
        nanosleep(&ts, NULL);
        refused += kill_round(&loop, jobs, 0, NULL, NULL, addr, "refused");
    }
    /* The refused connects were reported as such (libuv says only POLLERR). */
    assert_true(refused > 0);

    assert_int_equal(sl_client_detach_loop(c, NULL, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    for (int i = 0; i < NBATCH; i++) sl_batch_free(jobs[i].b);
    sl_client_free(c);
    close(k.holder);
}

/* A server that resets the connection (SO_LINGER 0, as a killed process with unread
 * requests does): it answers the client's creation PING, then, once told, reads a little
 * of what came and closes with RST. */
typedef struct resetter {
    int lfd, port;
    int go[2]; /* the test writes a byte: reset now */
} resetter;

static void *resetter_main(void *arg)
{
    resetter *r = arg;
    int fd = accept(r->lfd, NULL, NULL);
    if (fd < 0) return NULL;
    char buf[256];
    size_t got = 0;
    while (got < 14) { /* *1\r\n$4\r\nPING\r\n */
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (write(fd, "+PONG\r\n", 7) != 7) fail_msg("resetter: write");
    char go;
    if (read(r->go[0], &go, 1) != 1) fail_msg("resetter: go");
    (void)read(fd, buf, sizeof buf); /* some, not all: the rest stays unread */
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
    return NULL;
}

static void test_server_resets_async(void **state)
{
    (void)state;
    resetter r;
    r.lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(r.lfd >= 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(r.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(r.lfd, 4), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(r.lfd, (struct sockaddr *)&sa, &len), 0);
    r.port = ntohs(sa.sin_port);
    assert_int_equal(pipe(r.go), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, resetter_main, &r), 0);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", r.port);
    sl_client *c = client_for(r.port, SL_MODE_PLAIN);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    job jobs[NBATCH];
    jobs_base = jobs;
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < NBATCH; i++) {
        assert_int_equal(sl_batch_new(c, &jobs[i].b), 0);
        queue_job(&jobs[i], i);
        assert_int_equal(sl_batch_exec_async(jobs[i].b, 5000, on_done, &jobs[i]), 0);
    }
    /* The requests went out in sl_batch_exec_async itself (written at once, without
     * waiting for the loop to report the socket writable). */
    sl_stats st;
    memset(&st, 0, sizeof st);
    st.version = SL_STATS_VERSION;
    st.size = sizeof st;
    assert_int_equal(sl_client_stats(c, &st), 0);
    assert_true(st.bytes_written > 14); /* more than the creation PING */
    assert_int_equal(write(r.go[1], "x", 1), 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    int reset = 0;
    for (int i = 0; i < NBATCH; i++) {
        assert_int_equal(jobs[i].calls, 1);
        assert_int_equal(jobs[i].errors, 2 * PER); /* nothing was answered */
        reset += check_io_errors(&jobs[i], i, addr, "reset");
    }
    assert_true(reset > 0); /* the reset was reported as such */
    assert_int_equal(sl_client_detach_loop(c, NULL, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    for (int i = 0; i < NBATCH; i++) sl_batch_free(jobs[i].b);
    sl_client_free(c);
    pthread_join(th, NULL);
    close(r.lfd);
    close(r.go[0]);
    close(r.go[1]);
}

/* ------------------------------------------------------------ idle connections */

static void tick(uv_timer_t *t)
{
    (void)t;
}

/* Turns the loop until done(arg) or about 2 s passed. The idle polls are unref'd, so the
 * loop is not alive by them alone (uv_run would return without polling): a ticking timer
 * stands for the rest of a program that keeps its loop running. */
static int turn_until(uv_loop_t *loop, int (*done)(void *), void *arg)
{
    uv_timer_t t;
    assert_int_equal(uv_timer_init(loop, &t), 0);
    assert_int_equal(uv_timer_start(&t, tick, 2, 2), 0);
    int ok = 0;
    for (int i = 0; i < 1000 && !(ok = done(arg)); i++) uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return ok;
}

/* Sockets of this process connected to 127.0.0.1:port: the client's connections to a
 * fake node (the node's own ends have the port as their local one, not the peer's). */
static int sockets_to(int port)
{
    int count = 0;
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        if (getpeername(fd, (struct sockaddr *)&sa, &len) == 0 && sa.sin_family == AF_INET && ntohs(sa.sin_port) == port)
            count++;
    }
    return count;
}

static int client_socket_closed(void *arg)
{
    return sockets_to(fs_port(arg)) == 0;
}

/* An idle connection stays polled for reading: when the server closes it between batches,
 * the client closes its end at once (no batch needed to find out), and the next batch
 * reconnects and is answered whole. Before, the idle poll was stopped: the close went
 * unnoticed and the next batch failed on the dead connection. */
static void test_idle_close_noticed(void **state)
{
    (void)state;
    fs_node *n = fs_start();
    sl_client *c = client_for(fs_port(n), SL_MODE_PLAIN);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    job jobs[1];
    jobs_base = jobs;
    memset(jobs, 0, sizeof jobs);
    assert_int_equal(sl_batch_new(c, &jobs[0].b), 0);
    queue_job(&jobs[0], 0);
    assert_int_equal(sl_batch_exec_async(jobs[0].b, 3000, on_done, &jobs[0]), 0);
    uv_run(&loop, UV_RUN_DEFAULT); /* returns: an idle connection does not keep the loop alive */
    assert_int_equal(jobs[0].calls, 1);
    assert_true(jobs[0].ok);

    for (int round = 1; round <= 3; round++) {
        assert_int_equal(fs_open_connections(n), 1);
        assert_int_equal(sockets_to(fs_port(n)), 1);
        fs_drop_connections(n); /* returns with the server's end closed: the FIN is on its way */
        /* The loop, kept turning without a batch, hears of it: the client's end is closed. */
        assert_true(turn_until(&loop, client_socket_closed, n));
        jobs[0].calls = 0;
        sl_batch_reset(jobs[0].b);
        queue_job(&jobs[0], 0);
        assert_int_equal(sl_batch_exec_async(jobs[0].b, 3000, on_done, &jobs[0]), 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        assert_int_equal(jobs[0].calls, 1);
        if (!jobs[0].ok) fail_msg("round %d: status %d, errors %llu", round, jobs[0].status, (unsigned long long)jobs[0].errors);
        sl_stats st;
        memset(&st, 0, sizeof st);
        st.version = SL_STATS_VERSION;
        st.size = sizeof st;
        assert_int_equal(sl_client_stats(c, &st), 0);
        assert_int_equal(st.reconnects, (uint64_t)round);
    }
    assert_int_equal(sl_client_detach_loop(c, NULL, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    sl_batch_free(jobs[0].b);
    sl_client_free(c);
    fs_stop(n);
}

/* A server that answers the creation PING, then, once told, sends bytes nobody asked for
 * on the idle connection and reports when the client closed it. */
typedef struct chatter {
    int lfd, port;
    int go[2];
    volatile int client_closed;
} chatter;

static void *chatter_main(void *arg)
{
    chatter *t = arg;
    int fd = accept(t->lfd, NULL, NULL);
    if (fd < 0) return NULL;
    char buf[256];
    size_t got = 0;
    while (got < 14) { /* *1\r\n$4\r\nPING\r\n */
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (write(fd, "+PONG\r\n", 7) != 7) fail_msg("chatter: write");
    char go;
    if (read(t->go[0], &go, 1) != 1) fail_msg("chatter: go");
    if (write(fd, "+SURPRISE\r\n", 11) != 11) fail_msg("chatter: write");
    while (read(fd, buf, sizeof buf) > 0) {
    }
    __atomic_store_n(&t->client_closed, 1, __ATOMIC_SEQ_CST);
    close(fd);
    return NULL;
}

static int chatter_closed(void *arg)
{
    return __atomic_load_n(&((chatter *)arg)->client_closed, __ATOMIC_SEQ_CST);
}

/* A reply nobody asked for on an idle connection is a protocol error: the client closes
 * the connection (it cannot tell what the stream means any more) while idle, without a
 * batch to notice it, and without crashing. */
static void test_idle_unexpected_bytes(void **state)
{
    (void)state;
    chatter t;
    memset(&t, 0, sizeof t);
    t.lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(t.lfd >= 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(t.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(t.lfd, 4), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(t.lfd, (struct sockaddr *)&sa, &len), 0);
    t.port = ntohs(sa.sin_port);
    assert_int_equal(pipe(t.go), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, chatter_main, &t), 0);
    sl_client *c = client_for(t.port, SL_MODE_PLAIN);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    uv_run(&loop, UV_RUN_DEFAULT); /* returns at once: nothing in flight */
    assert_int_equal(write(t.go[1], "x", 1), 1);
    assert_true(turn_until(&loop, chatter_closed, &t));
    assert_int_equal(sl_client_detach_loop(c, NULL, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    sl_client_free(c);
    pthread_join(th, NULL);
    close(t.lfd);
    close(t.go[0]);
    close(t.go[1]);
}

/* One refused connect is one failure for the reconnect backoff: the first wait is exactly
 * reconnect_min_ms (the connect check used to close the socket itself and the engine then
 * closed it again, counting the failure twice: a first wait of up to twice the minimum). */
static void test_refused_connect_backoff_async(void **state)
{
    (void)state;
    killed k = {fs_start(), 0, -1};
    k.port = fs_port(k.node);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", k.port);
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = addr;
    o.mode = SL_MODE_PLAIN;
    /* 100 s: the steps below take far less than half of it on any machine, so the window
     * (half the minimum, the minimum] cannot be missed by a slow step, and a doubled wait
     * (up to twice the minimum) still falls outside it */
    o.reconnect_min_ms = 100000;
    o.reconnect_max_ms = 600000;
    sl_client *c = NULL;
    char err[256];
    if (sl_client_new(&c, &o, err, sizeof err) != 0) fail_msg("sl_client_new: %s", err);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sl_client_attach_loop(c, &loop), 0);
    kill_node(&k);
    job j;
    memset(&j, 0, sizeof j);
    jobs_base = &j;
    assert_int_equal(sl_batch_new(c, &j.b), 0);
    const char *ping[] = {"PING"};
    const char *want[] = {"closed by the server", "refused", "unavailable (reconnecting in "};
    for (int step = 0; step < 3; step++) {
        /* 0: the old connection finds the server gone; 1: the reconnect is refused;
         * 2: no connect, the backoff is on. */
        sl_batch_reset(j.b);
        assert_int_equal(sl_batch_append_argv(j.b, NULL, 1, ping, NULL), 0);
        j.calls = 0;
        assert_int_equal(sl_batch_exec_async(j.b, 5000, on_done, &j), 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        assert_int_equal(j.calls, 1);
        size_t n;
        const uint8_t *d;
        const sl_reply *r = sl_batch_replies(j.b, &n, &d, NULL);
        assert_int_equal(n, 1);
        assert_int_equal(r->type, SL_REPLY_ERROR);
        char msg[256];
        snprintf(msg, sizeof msg, "%.*s", (int)r->len, (const char *)d + r->offset);
        if (!strstr(msg, want[step]) && !(step == 0 && strstr(msg, "reset")))
            fail_msg("step %d: %s (wanted \"%s\")", step, msg, want[step]);
        if (step == 2) {
            long wait = strtol(strstr(msg, want[2]) + strlen(want[2]), NULL, 10);
            if (wait > 100000 || wait < 50000)
                fail_msg("first backoff %ld ms, wanted 100000 less the time since: %s", wait, msg);
        }
    }
    assert_int_equal(sl_client_detach_loop(c, NULL, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    sl_batch_free(j.b);
    sl_client_free(c);
    close(k.holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_batches_plain),
        cmocka_unit_test(test_many_batches_cluster),
        cmocka_unit_test(test_redirect_async),
        cmocka_unit_test(test_node_dies_async),
        cmocka_unit_test(test_timeout_async),
        cmocka_unit_test(test_cancel_async),
        cmocka_unit_test(test_detach_with_batches_in_flight),
        cmocka_unit_test(test_loop_thread),
        cmocka_unit_test(test_loop_free_with_batches_in_flight),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_server_killed_async),
        cmocka_unit_test(test_server_resets_async),
        cmocka_unit_test(test_refused_connect_backoff_async),
        cmocka_unit_test(test_idle_close_noticed),
        cmocka_unit_test(test_idle_unexpected_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
