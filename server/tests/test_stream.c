/* Unit tests of the stream type (stream.c) and its commands (t_stream.c) that the
 * differential test cannot see: the ID parser's edge cases, the block layout (100
 * entries per block, tombstones kept, a block removed with its last live entry),
 * seeks across blocks both ways, the trim rules, the PEL's order under acks from
 * anywhere, COPY's deep copy, and the rewrite's records replayed into a fresh shard
 * giving the same XINFO STREAM FULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aof.h"
#include "server.h"
#include "stream.h"
#include "stream_int.h"

static sv_shard shard;
static sv_session sess;
static sv_buf out;

static void shard_init(sv_shard *sh)
{
    memset(sh, 0, sizeof(*sh));
    sv_dict_init(&sh->keys);
    sh->slot_keys = sv_calloc(SL_SLOTS, sizeof(uint32_t));
    sh->now_ms = 1700000000000LL;
    sv_cluster_init_shard(sh);
}

static int setup(void **state)
{
    (void)state;
    sv_server_for_tests();
    memset(&sv_cfg, 0, sizeof(sv_cfg));
    sv_cfg.shards = 1;
    sv_cfg.port = 7000;
    sv_cfg.maxclients = 100;
    sv_cfg.output_limit = 1 << 30;
    snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "127.0.0.1");
    sv_cmdtable_init();
    shard_init(&shard);
    sv_shards = &shard;
    memset(&sess, 0, sizeof(sess));
    sess.proto = 2;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sv_db_free(&shard);
    sv_buf_free(&out);
    return 0;
}

static const char *run_on(sv_shard *sh, const char *cmdline)
{
    char *copy = strdup(cmdline);
    sv_str argv[64];
    int argc = 0;
    for (char *t = strtok(copy, " "); t && argc < 64; t = strtok(NULL, " ")) {
        argv[argc].p = t;
        argv[argc].len = strlen(t);
        argc++;
    }
    out.len = 0;
    sv_ctx c = {.sh = sh, .sess = &sess, .r = {&out, sess.proto}};
    sv_execute(&c, argc, argv);
    sv_buf_append(&out, "", 1);
    out.len--;
    free(copy);
    return out.data;
}

static const char *run(const char *cmdline) { return run_on(&shard, cmdline); }

static sv_stream *stream_of(sv_shard *sh, const char *key)
{
    sv_entry *e = sv_dict_find(&sh->keys, key, strlen(key));
    assert_non_null(e);
    assert_int_equal(((sv_obj *)e->val)->type, SV_T_STREAM);
    return e->val;
}

static int parse(const char *s, sv_sid *id, int strict, int *seq_given)
{
    return sv_sid_parse((sv_str){s, strlen(s)}, id, 0, strict, seq_given);
}

static void test_id_parsing(void **state)
{
    (void)state;
    sv_sid id;
    int sg;
    assert_true(parse("5-3", &id, 1, NULL) && id.ms == 5 && id.seq == 3);
    assert_true(parse("5", &id, 1, NULL) && id.ms == 5 && id.seq == 0);
    assert_true(sv_sid_parse((sv_str){"5", 1}, &id, UINT64_MAX, 0, NULL) && id.seq == UINT64_MAX);
    assert_true(parse("18446744073709551615-18446744073709551615", &id, 1, NULL) && id.ms == UINT64_MAX &&
                id.seq == UINT64_MAX);
    assert_false(parse("18446744073709551616", &id, 1, NULL));
    assert_true(parse("-", &id, 0, NULL) && id.ms == 0 && id.seq == 0);
    assert_true(parse("+", &id, 0, NULL) && id.ms == UINT64_MAX);
    assert_false(parse("-", &id, 1, NULL));
    assert_false(parse("+", &id, 1, NULL));
    assert_true(parse("7-*", &id, 1, &sg) && id.ms == 7 && sg == 0);
    assert_false(parse("7-*", &id, 1, NULL)); /* only XADD accepts ms-* */
    assert_true(parse("7-1", &id, 1, &sg) && sg == 1);
    /* Redis's string2ull: strtoull's leniency beyond what string2ll takes */
    assert_true(parse("007-01", &id, 1, NULL) && id.ms == 7 && id.seq == 1);
    assert_true(parse(" 1", &id, 1, NULL) && id.ms == 1);
    assert_false(parse("-1", &id, 1, NULL));
    assert_false(parse("1-2-3", &id, 1, NULL));
    assert_false(parse("1-", &id, 1, NULL));
    assert_false(parse("", &id, 1, NULL));
    assert_false(parse("x", &id, 1, NULL));
    char b[48];
    id = (sv_sid){UINT64_MAX, 0};
    assert_int_equal(sv_sid_fmt(b, &id), 22);
    assert_memory_equal(b, "18446744073709551615-0", 22);
    id = (sv_sid){UINT64_MAX, UINT64_MAX};
    assert_int_equal(sid_incr(&id), -1);
    id = (sv_sid){0, 0};
    assert_int_equal(sid_decr(&id), -1);
}

static void test_blocks_and_seeks(void **state)
{
    (void)state;
    char cmd[64];
    for (int i = 1; i <= 250; i++) {
        snprintf(cmd, sizeof(cmd), "XADD s %d-1 f %d", i, i);
        run(cmd);
    }
    sv_stream *s = stream_of(&shard, "s");
    assert_int_equal(s->nblocks, 3); /* 100 + 100 + 50, as Redis's nodes */
    assert_int_equal(blk(s, 0)->n, 100);
    assert_int_equal(blk(s, 2)->n, 50);
    /* ranges across block edges, both ways */
    assert_string_equal(run("XRANGE s 99 101-1"), "*3\r\n*2\r\n$4\r\n99-1\r\n*2\r\n$1\r\nf\r\n$2\r\n99\r\n"
                                                   "*2\r\n$5\r\n100-1\r\n*2\r\n$1\r\nf\r\n$3\r\n100\r\n"
                                                   "*2\r\n$5\r\n101-1\r\n*2\r\n$1\r\nf\r\n$3\r\n101\r\n");
    assert_string_equal(run("XREVRANGE s 201-0 (199-1 COUNT 5"), "*1\r\n*2\r\n$5\r\n200-1\r\n*2\r\n$1\r\nf\r\n$3\r\n200\r\n");
    assert_string_equal(run("XRANGE s 251 +"), "*0\r\n");
    assert_string_equal(run("XREVRANGE s 0 -"), "*0\r\n");
    /* tombstones stay; the block goes with its last live entry */
    for (int i = 1; i <= 99; i++) {
        snprintf(cmd, sizeof(cmd), "XDEL s %d-1", i);
        assert_string_equal(run(cmd), ":1\r\n");
    }
    assert_int_equal(s->nblocks, 3);
    assert_int_equal(blk(s, 0)->live, 1);
    assert_string_equal(run("XDEL s 100-1 100-1"), ":1\r\n");
    assert_int_equal(s->nblocks, 2);
    assert_int_equal(s->length, 150);
    assert_int_equal(s->first_id.ms, 101);
    assert_int_equal(s->max_deleted.ms, 100);
    /* an approximate trim removes whole blocks only; an exact one marks entries */
    assert_string_equal(run("XTRIM s MAXLEN ~ 120"), ":0\r\n"); /* 150 - 100 < 120: nothing whole */
    assert_string_equal(run("XTRIM s MAXLEN ~ 50"), ":100\r\n");
    assert_int_equal(s->nblocks, 1);
    assert_string_equal(run("XTRIM s MAXLEN 45"), ":5\r\n");
    assert_int_equal(s->nblocks, 1);
    assert_int_equal(blk(s, 0)->live, 45);
    assert_int_equal(s->first_id.ms, 206);
    assert_string_equal(run("XTRIM s MINID ~ 300"), ":45\r\n");
    assert_int_equal(s->nblocks, 0);
    assert_int_equal(s->length, 0);
    assert_string_equal(run("XADD s 1-1 a b"), "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n");
}

static void test_pel_order(void **state)
{
    (void)state;
    char cmd[64];
    for (int i = 1; i <= 40; i++) {
        snprintf(cmd, sizeof(cmd), "XADD q %d-0 f v", i);
        run(cmd);
    }
    run("XGROUP CREATE q g 0");
    run("XREADGROUP GROUP g a COUNT 20 STREAMS q >");
    run("XREADGROUP GROUP g b STREAMS q >");
    /* acks from the front, the back and the middle */
    assert_string_equal(run("XACK q g 1-0 40-0 20-0 21-0 5-0 99-0"), ":5\r\n");
    sv_cgroup *g = stream_of(&shard, "q")->groups[0];
    assert_int_equal(g->pel.len, 35);
    for (size_t i = 1; i < g->pel.len; i++) assert_true(sv_sid_cmp(&PEL_AT(&g->pel, i - 1)->id, &PEL_AT(&g->pel, i)->id) < 0);
    assert_int_equal(g->cons[0]->pel.len, 17);
    assert_int_equal(g->cons[1]->pel.len, 18);
    /* a claim moves entries between consumers keeping both lists sorted */
    run("XCLAIM q g a 0 30-0 22-0 39-0 JUSTID");
    assert_int_equal(g->cons[0]->pel.len, 20);
    for (size_t i = 1; i < g->cons[0]->pel.len; i++)
        assert_true(sv_sid_cmp(&PEL_AT(&g->cons[0]->pel, i - 1)->id, &PEL_AT(&g->cons[0]->pel, i)->id) < 0);
    assert_string_equal(run("XGROUP DELCONSUMER q g b"), ":15\r\n");
    assert_int_equal(g->pel.len, 20);
}

static void test_copy_is_deep(void **state)
{
    (void)state;
    run("XADD c 1-1 f v");
    run("XADD c 2-1 f w");
    run("XGROUP CREATE c g 0");
    run("XREADGROUP GROUP g x STREAMS c >");
    sv_stream *orig = stream_of(&shard, "c");
    sv_stream *copy = sv_stream_dup(orig);
    run("XDEL c 1-1");
    run("XACK c g 2-1");
    assert_int_equal(copy->length, 2);
    assert_int_equal(copy->groups[0]->pel.len, 2);
    assert_ptr_equal(PEL_AT(&copy->groups[0]->pel, 0)->consumer, copy->groups[0]->cons[0]);
    sv_stream_free(copy);
}

/* The rewrite's records, replayed into another shard, give the same stream. */
typedef struct emitbuf {
    sv_buf b;
} emitbuf;
static void em_len(void *p, char t, size_t n)
{
    char h[32];
    int k = snprintf(h, sizeof(h), "%c%zu\r\n", t, n);
    sv_buf_append(&((emitbuf *)p)->b, h, (size_t)k);
}
static void em_bulk(void *p, const void *d, size_t n)
{
    em_len(p, '$', n);
    sv_buf_append(&((emitbuf *)p)->b, d, n);
    sv_buf_append(&((emitbuf *)p)->b, "\r\n", 2);
}
static int replay_record(void *priv, int argc, sv_str *argv, char *err, size_t errcap)
{
    (void)err;
    (void)errcap;
    sv_shard *sh = priv;
    out.len = 0;
    sv_ctx c = {.sh = sh, .sess = &sess, .r = {&out, 2}};
    sv_execute(&c, argc, argv);
    assert_true(out.len > 0 && out.data[0] != '-');
    return 0;
}

static void test_rewrite_round_trip(void **state)
{
    (void)state;
    char cmd[80];
    for (int i = 1; i <= 230; i++) {
        snprintf(cmd, sizeof(cmd), "XADD r %d-1 f %d g x", i, i);
        run(cmd);
    }
    run("XDEL r 150-1 3-1");
    run("XTRIM r MINID 50");
    run("XGROUP CREATE r g1 0");
    run("XREADGROUP GROUP g1 alice COUNT 7 STREAMS r >");
    run("XCLAIM r g1 bob 0 52-1 TIME 1000 RETRYCOUNT 4");
    run("XGROUP CREATECONSUMER r g1 idle");
    run("XGROUP CREATE r g2 $ ENTRIESREAD 3");
    run("XSETID r 999-0 ENTRIESADDED 500 MAXDELETEDID 150-1");
    run("XGROUP CREATE e g $ MKSTREAM");
    sv_buf want = {0};
    for (int k = 0; k < 2; k++) {
        run(k ? "XINFO STREAM e FULL" : "XINFO STREAM r FULL");
        sv_buf_append(&want, out.data, out.len);
    }
    emitbuf eb = {{0}};
    const char *hdr = "*4\r\n$12\r\nSLOTLANE.AOF\r\n$1\r\n1\r\n$1\r\n0\r\n$1\r\n1\r\n";
    sv_buf_append(&eb.b, hdr, strlen(hdr));
    sv_stream_emit em = {&eb, em_len, em_bulk};
    sv_stream_rewrite(stream_of(&shard, "r"), "r", 1, &em);
    sv_stream_rewrite(stream_of(&shard, "e"), "e", 1, &em);
    sv_shard other;
    shard_init(&other);
    other.loading = 1;
    size_t end;
    char err[128];
    assert_int_equal(sv_aof_scan(eb.b.data, eb.b.len, 0, 1, replay_record, &other, &end, err, sizeof(err)), 0);
    assert_int_equal(end, eb.b.len);
    other.loading = 0;
    sv_buf got = {0};
    for (int k = 0; k < 2; k++) {
        run_on(&other, k ? "XINFO STREAM e FULL" : "XINFO STREAM r FULL");
        sv_buf_append(&got, out.data, out.len);
    }
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    assert_int_equal(stream_of(&other, "r")->nblocks, stream_of(&shard, "r")->nblocks);
    sv_buf_free(&want);
    sv_buf_free(&got);
    sv_buf_free(&eb.b);
    sv_db_free(&other);
}

static void test_errors(void **state)
{
    (void)state;
    run("SET str x");
    assert_string_equal(run("XADD str * a b"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    assert_string_equal(run("XADD k 0-0 a b"), "-ERR The ID specified in XADD must be greater than 0-0\r\n");
    assert_string_equal(run("XADD k * a"), "-ERR wrong number of arguments for 'xadd' command\r\n");
    assert_string_equal(run("XADD k LIMIT 5 * a b"),
                        "-ERR syntax error, LIMIT cannot be used without specifying a trimming strategy\r\n");
    assert_string_equal(run("XADD k MAXLEN 5 LIMIT 5 * a b"),
                        "-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n");
    assert_string_equal(run("XLEN k"), ":0\r\n");
    assert_string_equal(run("XADD k 18446744073709551615-18446744073709551615 a b"),
                        "$41\r\n18446744073709551615-18446744073709551615\r\n");
    assert_string_equal(run("XADD k * a b"),
                        "-ERR The stream has exhausted the last possible ID, unable to add more items\r\n");
    assert_string_equal(run("XREADGROUP GROUP g c STREAMS k >"),
                        "-NOGROUP No such key 'k' or consumer group 'g' in XREADGROUP with GROUP option\r\n");
    assert_string_equal(run("XINFO STREAM nokey"), "-ERR no such key\r\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_parsing),
        cmocka_unit_test_setup_teardown(test_blocks_and_seeks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pel_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_is_deep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
