/* Unit tests of the waiter module (blocking.c) through its API, with a recording
 * owner instead of a connection: parking, FIFO service after a signal, a try that
 * keeps waiting, a custom try callback (what streams' XREAD BLOCK will use), CLIENT
 * UNBLOCK, cancel, and a deadline served by the shard's libuv timer (the loop runs
 * until the timeout reply arrives: decided by the event, not by a clock). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "blocking.h"
#include "server.h"
#include "shard.h"

static sv_shard shard;

/* A recording owner: its reply buffer and how often / how it was completed. */
typedef struct rec {
    sv_buf reply;
    int done, how;
    int gone;
} rec;

static sv_buf *rec_buf(void *o) { return &((rec *)o)->reply; }
static void rec_done(void *o, int how)
{
    rec *r = o;
    r->done++;
    r->how = how;
}
static int rec_gone(void *o) { return ((rec *)o)->gone; }
static const sv_block_owner rec_ops = {rec_buf, rec_done, rec_gone};

static int setup(void **state)
{
    (void)state;
    sv_server_for_tests();
    memset(&sv_cfg, 0, sizeof(sv_cfg));
    sv_cfg.shards = 1;
    sv_cfg.port = 7000;
    sv_cfg.output_limit = 1 << 30;
    snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "127.0.0.1");
    sv_cmdtable_init();
    sv_shards = &shard;
    sv_shard_init_data(&shard, 0);
    assert_int_equal(uv_loop_init(&shard.loop), 0);
    sv_block_init_shard(&shard);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sv_block_close_shard(&shard);
    uv_run(&shard.loop, UV_RUN_DEFAULT); /* the timer's close */
    assert_int_equal(uv_loop_close(&shard.loop), 0);
    sv_db_free(&shard);
    return 0;
}

static int split(char *line, sv_str *argv)
{
    int argc = 0;
    for (char *t = strtok(line, " "); t && argc < 16; t = strtok(NULL, " ")) {
        argv[argc].p = t;
        argv[argc].len = strlen(t);
        argc++;
    }
    return argc;
}

/* Runs a command as a connection would (it may park: the waiter gets owner r). */
static const char *run(const char *cmdline, rec *r, uint64_t client_id)
{
    static sv_buf out;
    static char copy[256];
    snprintf(copy, sizeof copy, "%s", cmdline);
    sv_str argv[16];
    int argc = split(copy, argv);
    sv_session s;
    memset(&s, 0, sizeof s);
    s.id = client_id;
    s.proto = 2;
    out.len = 0;
    sv_ctx c = {.sh = &shard, .sess = &s, .r = {&out, 2}, .can_block = r != NULL};
    sv_execute(&c, argc, argv);
    if (c.blocked) sv_block_attach(c.blocked, &rec_ops, r, argc, argv, NULL);
    sv_block_serve(&shard);
    sv_buf_append(&out, "", 1);
    out.len--;
    return out.data;
}

static const char *got(rec *r)
{
    sv_buf_append(&r->reply, "", 1);
    r->reply.len--;
    return r->reply.data;
}

static void test_fifo_and_keep_waiting(void **state)
{
    (void)state;
    rec a = {0}, b = {0};
    assert_string_equal(run("BLPOP q 0", &a, 1), "");
    assert_string_equal(run("BLPOP q 0", &b, 2), "");
    assert_int_equal(sv_block_count(&shard), 2);
    /* one element: the first waiter only; the second keeps waiting */
    assert_string_equal(run("RPUSH q x", NULL, 9), ":1\r\n");
    assert_int_equal(a.done, 1);
    assert_int_equal(a.how, SV_BLOCK_SERVED);
    assert_string_equal(got(&a), "*2\r\n$1\r\nq\r\n$1\r\nx\r\n");
    assert_int_equal(b.done, 0);
    assert_int_equal(sv_block_count(&shard), 1);
    assert_string_equal(run("LPUSH q y", NULL, 9), ":1\r\n");
    assert_int_equal(b.done, 1);
    assert_string_equal(got(&b), "*2\r\n$1\r\nq\r\n$1\r\ny\r\n");
    assert_int_equal(sv_block_count(&shard), 0);
    sv_buf_free(&a.reply);
    sv_buf_free(&b.reply);
}

static void test_unblock_cancel_and_gone(void **state)
{
    (void)state;
    rec a = {0}, b = {0}, g = {0};
    run("BZPOPMIN z 0", &a, 11);
    run("BLMOVE s d LEFT LEFT 0", &b, 12);
    run("BLPOP gone 0", &g, 13);
    assert_int_equal(sv_block_count(&shard), 3);
    assert_int_equal(sv_block_unblock_client(&shard, 11, 0), 1);
    assert_string_equal(got(&a), "*-1\r\n");
    assert_int_equal(sv_block_unblock_client(&shard, 11, 0), 0); /* not parked any more */
    assert_int_equal(sv_block_unblock_client(&shard, 12, 1), 1);
    assert_string_equal(got(&b), "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
    /* an owner whose client left: dropped at the next try, without a reply */
    g.gone = 1;
    run("RPUSH gone v", NULL, 9);
    assert_int_equal(g.done, 0);
    assert_int_equal(sv_block_count(&shard), 0);
    assert_string_equal(run("LLEN gone", NULL, 9), ":1\r\n"); /* nothing popped for it */
    /* a cancelled waiter (its connection closed) is forgotten */
    rec c = {0};
    sv_str k = {"k", 1};
    sv_session s = {0};
    s.proto = 2;
    sv_buf o = {0};
    sv_ctx ctx = {.sh = &shard, .sess = &s, .r = {&o, 2}, .can_block = 1};
    sv_block_on_keys(&ctx, 1, &k, 0, NULL, NULL);
    sv_str argv[3] = {{"blpop", 5}, {"k", 1}, {"0", 1}};
    sv_block_attach(ctx.blocked, &rec_ops, &c, 3, argv, NULL);
    sv_block_cancel(ctx.blocked);
    assert_int_equal(sv_block_count(&shard), 0);
    run("RPUSH k v", NULL, 9);
    assert_int_equal(c.done, 0);
    sv_buf_free(&o);
    sv_buf_free(&a.reply);
    sv_buf_free(&b.reply);
}

/* A custom try (streams: XREAD BLOCK): serves only when the key's list has 2 elements. */
static int tries;
static void free_priv(void *p) { free(p); }
static void try_two(sv_ctx *c, sv_waiter *w, int argc, sv_str *argv)
{
    (void)argc;
    tries++;
    assert_string_equal(sv_waiter_priv(w), "state");
    sv_entry *e = sv_db_lookup(c->sh, argv[1]);
    if (!e || ((sv_list *)e->val)->len < 2) {
        sv_block_on_keys(c, 1, &argv[1], 0, NULL, NULL); /* keep waiting: writes nothing */
        return;
    }
    sv_add_status(&c->r, "TWO");
}
static const sv_block_type two_type = {try_two, NULL, free_priv};

static void test_custom_try_callback(void **state)
{
    (void)state;
    rec r = {0};
    sv_str k = {"stream", 6};
    sv_session s = {0};
    s.proto = 2;
    s.id = 21;
    sv_buf o = {0};
    sv_ctx ctx = {.sh = &shard, .sess = &s, .r = {&o, 2}, .can_block = 1};
    sv_block_on_keys(&ctx, 1, &k, 0, &two_type, strdup("state"));
    sv_str argv[2] = {{"xread", 5}, {"stream", 6}};
    sv_block_attach(ctx.blocked, &rec_ops, &r, 2, argv, NULL);
    assert_int_equal(sv_waiter_client_id(ctx.blocked), 21);
    run("RPUSH stream a", NULL, 9); /* signalled: tried, keeps waiting */
    assert_int_equal(tries, 1);
    assert_int_equal(r.done, 0);
    /* an existing key is not signalled by the keyspace: the writer signals it */
    run("RPUSH stream b", NULL, 9);
    assert_int_equal(tries, 1);
    sv_signal_key_ready(&shard, k);
    sv_block_serve(&shard);
    assert_int_equal(tries, 2);
    assert_int_equal(r.done, 1);
    assert_string_equal(got(&r), "+TWO\r\n");
    assert_int_equal(sv_block_count(&shard), 0);
    sv_buf_free(&o);
    sv_buf_free(&r.reply);
}

static void test_deadline_fires_on_the_loop(void **state)
{
    (void)state;
    rec a = {0}, b = {0};
    run("BLPOP t1 0.005", &a, 31);
    run("BZPOPMAX t2 0.001", &b, 32);
    while (!(a.done && b.done)) uv_run(&shard.loop, UV_RUN_ONCE);
    assert_string_equal(got(&a), "*-1\r\n");
    assert_string_equal(got(&b), "*-1\r\n");
    assert_int_equal(sv_block_count(&shard), 0);
    /* not allowed to park (MULTI's noblock, replay): the timeout answer at once */
    assert_string_equal(run("BLPOP t1 0", NULL, 33), "*-1\r\n");
    assert_string_equal(run("BRPOPLPUSH t1 t3 0", NULL, 33), "$-1\r\n");
    sv_buf_free(&a.reply);
    sv_buf_free(&b.reply);
}

/* Parks "BLPOP key 0" for client id with owner r and returns its waiter. */
static sv_waiter *park(const char *key, rec *r, uint64_t id)
{
    sv_str k = {key, strlen(key)};
    sv_session s = {0};
    s.proto = 2;
    s.id = id;
    sv_buf o = {0};
    sv_ctx ctx = {.sh = &shard, .sess = &s, .r = {&o, 2}, .can_block = 1};
    sv_block_on_keys(&ctx, 1, &k, 0, NULL, NULL);
    sv_str argv[3] = {{"blpop", 5}, k, {"0", 1}};
    sv_block_attach(ctx.blocked, &rec_ops, r, 3, argv, NULL);
    sv_buf_free(&o);
    return ctx.blocked;
}

/* A try records the key it was signalled for. */
static char ready_seen[16];
static void try_ready(sv_ctx *c, sv_waiter *w, int argc, sv_str *argv)
{
    (void)w;
    (void)argc;
    (void)argv;
    sv_str k = sv_block_ready_key(c->sh);
    snprintf(ready_seen, sizeof ready_seen, "%.*s", (int)k.len, k.p ? k.p : "");
    sv_add_status(&c->r, "SEEN");
}
static const sv_block_type ready_type = {try_ready, NULL, NULL};

/* Coordinated parts (a cross-shard XREAD BLOCK): a secondary part is not a blocked
 * client and CLIENT UNBLOCK passes it by; the coordinator's release answers either
 * as on timeout; a try sees the key that was signalled, and none outside a try. */
static void test_parts_and_ready_key(void **state)
{
    (void)state;
    rec p1 = {0}, p2 = {0}, q = {0};
    sv_waiter *w1 = park("pa", &p1, 41), *w2 = park("pb", &p2, 41);
    sv_waiter_set_part(w1, 0);
    sv_waiter_set_part(w2, 1);
    sv_waiter_set_part(w2, 1); /* a retry sets it again: counted once */
    assert_int_equal(sv_block_count(&shard), 1);
    /* CLIENT UNBLOCK reaches the primary alone */
    assert_int_equal(sv_block_unblock_client(&shard, 41, 0), 1);
    assert_string_equal(got(&p1), "*-1\r\n");
    assert_int_equal(sv_block_unblock_client(&shard, 41, 0), 0);
    assert_int_equal(p2.done, 0);
    /* the release answers the secondary as on timeout, once */
    assert_int_equal(sv_block_release_part(&shard, 41), 1);
    assert_int_equal(p2.done, 1);
    assert_string_equal(got(&p2), "*-1\r\n");
    assert_int_equal(sv_block_release_part(&shard, 41), 0);
    assert_int_equal(sv_block_count(&shard), 0);
    /* a plain waiter is not a part: the release passes it by */
    sv_waiter *w3 = park("pc", &q, 43);
    assert_int_equal(sv_block_release_part(&shard, 43), 0);
    sv_block_cancel(w3);
    /* the signalled key during a try */
    rec r = {0};
    sv_str k = {"rk", 2};
    sv_session s = {0};
    s.proto = 2;
    sv_buf o = {0};
    sv_ctx ctx = {.sh = &shard, .sess = &s, .r = {&o, 2}, .can_block = 1};
    sv_block_on_keys(&ctx, 1, &k, 0, &ready_type, NULL);
    sv_str argv[2] = {{"x", 1}, k};
    sv_block_attach(ctx.blocked, &rec_ops, &r, 2, argv, NULL);
    assert_null(sv_block_ready_key(&shard).p);
    run("RPUSH rk v", NULL, 9);
    assert_int_equal(r.done, 1);
    assert_string_equal(ready_seen, "rk");
    assert_null(sv_block_ready_key(&shard).p);
    sv_buf_free(&o);
    sv_buf_free(&r.reply);
    sv_buf_free(&p1.reply);
    sv_buf_free(&p2.reply);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_keep_waiting),
        cmocka_unit_test(test_unblock_cancel_and_gone),
        cmocka_unit_test(test_custom_try_callback),
        cmocka_unit_test(test_deadline_fires_on_the_loop),
        cmocka_unit_test(test_parts_and_ready_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
