/* Unit tests of the data types and expiry, through the command layer:
 * (shard, argv) -> reply bytes, with no sockets involved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "server.h"

static sv_shard shard;
static sv_session sess;
static sv_buf out;

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
    memset(&shard, 0, sizeof(shard));
    sv_dict_init(&shard.keys);
    shard.slot_keys = sv_calloc(SL_SLOTS, sizeof(uint32_t));
    shard.now_ms = sv_mstime();
    sv_shards = &shard;
    sv_cluster_init_shard(&shard);
    memset(&sess, 0, sizeof(sess));
    sess.proto = 2;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sv_db_free(&shard);
    sv_buf_free(&out);
    free(sess.name);
    return 0;
}

/* Runs a command given as space-separated words; returns the reply text. */
static const char *run(const char *cmdline)
{
    char *copy = strdup(cmdline);
    sv_str argv[64];
    int argc = 0;
    for (char *t = strtok(copy, " "); t && argc < 64; t = strtok(NULL, " ")) {
        argv[argc].p = t;
        argv[argc].len = strcmp(t, "''") == 0 ? 0 : strlen(t);
        argc++;
    }
    out.len = 0;
    sv_ctx c = {.sh = &shard, .sess = &sess, .r = {&out, sess.proto}, .noroute = 0};
    sv_execute(&c, argc, argv);
    free(copy);
    sv_buf_append(&out, "", 1);
    out.len--;
    return out.data;
}

#define EQ(cmd, want) assert_string_equal(run(cmd), want)

static void test_strings(void **state)
{
    (void)state;
    EQ("SET k hello", "+OK\r\n");
    EQ("GET k", "$5\r\nhello\r\n");
    EQ("APPEND k !!", ":7\r\n");
    EQ("STRLEN k", ":7\r\n");
    EQ("GETRANGE k 1 -2", "$5\r\nello!\r\n");
    EQ("SETRANGE k 8 x", ":9\r\n");
    EQ("GETRANGE k 7 -1", "$2\r\n\0x\r\n");
    EQ("SET k v NX", "$-1\r\n");
    EQ("SET k v XX GET", "$9\r\nhello!!\0x\r\n");
    EQ("SET k v NX XX", "-ERR syntax error\r\n");
    EQ("SET k v EX 0", "-ERR invalid expire time in 'set' command\r\n");
    EQ("SET k v EX x", "-ERR value is not an integer or out of range\r\n");
    EQ("GET", "-ERR wrong number of arguments for 'get' command\r\n");
    EQ("SET n 9223372036854775806", "+OK\r\n");
    EQ("INCR n", ":9223372036854775807\r\n");
    EQ("INCR n", "-ERR increment or decrement would overflow\r\n");
    EQ("DECRBY n -9223372036854775808", "-ERR decrement would overflow\r\n");
    EQ("INCR k", "-ERR value is not an integer or out of range\r\n");
    EQ("INCRBYFLOAT f 1.5", "$3\r\n1.5\r\n");
    EQ("INCRBYFLOAT f 0.1", "$3\r\n1.6\r\n");
    EQ("MSET a 1 b 2", "+OK\r\n");
    EQ("MGET a b zz", "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n");
    EQ("MSETNX a 1 c 3", ":0\r\n");
    EQ("MSET a", "-ERR wrong number of arguments for 'mset' command\r\n");
    EQ("GETDEL a", "$1\r\n1\r\n");
    EQ("EXISTS a b", ":1\r\n");
    EQ("FOO bar", "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n");
}

static void test_set_reuses_allocation(void **state)
{
    (void)state;
    EQ("SET r 0123456789", "+OK\r\n");
    sv_str key = {"r", 1};
    sv_entry *e = sv_db_lookup(&shard, key);
    void *before = e->val;
    EQ("SET r abcdefghij", "+OK\r\n");
    e = sv_db_lookup(&shard, key);
    assert_ptr_equal(before, e->val); /* same-size overwrite: no new allocation */
    EQ("GET r", "$10\r\nabcdefghij\r\n");
}

static void test_lists(void **state)
{
    (void)state;
    EQ("RPUSH l a b c", ":3\r\n");
    EQ("LPUSH l z", ":4\r\n");
    EQ("LRANGE l 0 -1", "*4\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    EQ("LINDEX l -1", "$1\r\nc\r\n");
    EQ("LSET l 9 q", "-ERR index out of range\r\n");
    EQ("LINSERT l BEFORE b x", ":5\r\n");
    EQ("LPOS l x", ":2\r\n");
    EQ("LREM l 0 x", ":1\r\n");
    EQ("LPOP l 2", "*2\r\n$1\r\nz\r\n$1\r\na\r\n");
    EQ("LMOVE l l2 LEFT RIGHT", "$1\r\nb\r\n");
    EQ("RPOP l", "$1\r\nc\r\n");
    EQ("EXISTS l", ":0\r\n"); /* an emptied list is deleted */
    EQ("LPOP l 1", "*-1\r\n");
    EQ("GET l2", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    /* a long list grows its ring */
    for (int i = 0; i < 1000; i++) run(i % 2 ? "LPUSH big x" : "RPUSH big y");
    EQ("LLEN big", ":1000\r\n");
    EQ("LTRIM big 10 19", "+OK\r\n");
    EQ("LLEN big", ":10\r\n");
}

static void test_hashes_sets(void **state)
{
    (void)state;
    EQ("HSET h f1 v1 f2 v2", ":2\r\n");
    EQ("HGET h f1", "$2\r\nv1\r\n");
    EQ("HINCRBY h n 5", ":5\r\n");
    EQ("HINCRBY h f1 1", "-ERR hash value is not an integer\r\n");
    EQ("HDEL h f1 f2 n", ":3\r\n");
    EQ("EXISTS h", ":0\r\n");
    EQ("SADD s a b c", ":3\r\n");
    EQ("SADD s2 b c d", ":3\r\n");
    EQ("SINTERCARD 2 s s2", ":2\r\n");
    EQ("SDIFFSTORE d s s2", ":1\r\n");
    EQ("SMEMBERS d", "*1\r\n$1\r\na\r\n");
    EQ("SMOVE s s2 a", ":1\r\n");
    EQ("SCARD s2", ":4\r\n");
    EQ("SISMEMBER s a", ":0\r\n");
}

/* The commands of issue 24 through the command layer (Redis's replies; the
 * differential test covers them in depth). */
static void test_issue24_commands(void **state)
{
    (void)state;
    EQ("SETBIT bm 7 1", ":0\r\n");
    EQ("SETBIT bm 7 1", ":1\r\n");
    EQ("GET bm", "$1\r\n\x01\r\n");
    EQ("BITCOUNT bm", ":1\r\n");
    EQ("BITPOS bm 1", ":7\r\n");
    EQ("BITFIELD bm GET u8 0 INCRBY i8 0 127", "*2\r\n:1\r\n:-128\r\n");
    EQ("SETBIT bm 4294967296 1", "-ERR bit offset is not an integer or out of range\r\n");
    EQ("PFADD h a b c", ":1\r\n");
    EQ("PFCOUNT h", ":3\r\n");
    EQ("PFADD bm x", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    EQ("GEOADD g 13.361389 38.115556 Palermo", ":1\r\n");
    EQ("ZSCORE g Palermo", "$16\r\n3479099956230698\r\n");
    EQ("GEOHASH g Palermo", "*1\r\n$11\r\nsqc8b49rny0\r\n");
    EQ("COPY g g2", ":1\r\n");
    EQ("COPY g g2", ":0\r\n");
    EQ("COPY g g", "-ERR source and destination objects are the same\r\n");
    EQ("MOVE g 1", "-ERR MOVE is not allowed in cluster mode\r\n");
    EQ("SET s1 ohmytext", "+OK\r\n");
    EQ("SET s2 mynewtext", "+OK\r\n");
    EQ("LCS s1 s2", "$6\r\nmytext\r\n");
    EQ("RPUSH l 3 1 2", ":3\r\n");
    EQ("SORT l DESC LIMIT 0 2", "*2\r\n$1\r\n3\r\n$1\r\n2\r\n");
    EQ("ZADD za 1 a 2 b", ":2\r\n");
    EQ("ZADD zb 3 b", ":1\r\n");
    EQ("ZUNIONSTORE zu 2 za zb WEIGHTS 1 2", ":2\r\n");
    EQ("ZRANGE zu 0 -1 WITHSCORES", "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n8\r\n");
    EQ("ZMPOP 2 nokey zu MAX", "*2\r\n$2\r\nzu\r\n*1\r\n*2\r\n$1\r\nb\r\n$1\r\n8\r\n");
    EQ("LMPOP 1 l LEFT COUNT 2", "*2\r\n$1\r\nl\r\n*2\r\n$1\r\n3\r\n$1\r\n1\r\n");
}

static void test_zsets(void **state)
{
    (void)state;
    EQ("ZADD z 1 a 2 b 3 c", ":3\r\n");
    EQ("ZADD z XX CH 5 a", ":1\r\n");
    EQ("ZRANGE z 0 -1 WITHSCORES", "*6\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\na\r\n$1\r\n5\r\n");
    EQ("ZRANK z a", ":2\r\n");
    EQ("ZRANGEBYSCORE z (2 +inf LIMIT 0 1", "*1\r\n$1\r\nc\r\n");
    EQ("ZINCRBY z 0.5 b", "$3\r\n2.5\r\n");
    EQ("ZCOUNT z 2.5 3", ":2\r\n");
    EQ("ZADD z NX GT 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n");
    EQ("ZPOPMIN z", "*2\r\n$1\r\nb\r\n$3\r\n2.5\r\n");
    EQ("ZREMRANGEBYSCORE z -inf +inf", ":2\r\n");
    EQ("EXISTS z", ":0\r\n");
    sess.proto = 3;
    EQ("ZADD z 1 a", ":1\r\n");
    EQ("ZSCORE z a", ",1\r\n");
    EQ("ZRANGE z 0 -1 WITHSCORES", "*1\r\n*2\r\n$1\r\na\r\n,1\r\n");
    EQ("GET nokey", "_\r\n");
    sess.proto = 2;
    /* many members keep the order and ranks */
    char cmd[64];
    for (int i = 0; i < 500; i++) {
        snprintf(cmd, sizeof(cmd), "ZADD zbig %d m%d", (i * 7919) % 500, i);
        run(cmd);
    }
    EQ("ZCARD zbig", ":500\r\n");
    EQ("ZRANGE zbig 0 0", "*1\r\n$2\r\nm0\r\n");
    EQ("ZREMRANGEBYRANK zbig 0 249", ":250\r\n");
    EQ("ZCOUNT zbig -inf 249", ":0\r\n");
}

static void test_expiry_lazy(void **state)
{
    (void)state;
    EQ("SET t v PX 100", "+OK\r\n");
    EQ("PTTL t", ":100\r\n");
    EQ("EXPIRE t 50 LT", ":0\r\n"); /* 50 s is not less than 100 ms */
    EQ("EXPIRE t 50 GT", ":1\r\n");
    EQ("TTL t", ":50\r\n");
    shard.now_ms += 50001; /* time passes: the next access finds it expired */
    EQ("GET t", "$-1\r\n");
    EQ("EXISTS t", ":0\r\n");
    assert_int_equal(shard.nexpiring, 0);
    EQ("SET p v EX 100", "+OK\r\n");
    EQ("PERSIST p", ":1\r\n");
    EQ("TTL p", ":-1\r\n");
    EQ("TTL nokey", ":-2\r\n");
    EQ("SET k v EX 100", "+OK\r\n");
    EQ("SET k v2 KEEPTTL", "+OK\r\n");
    EQ("TTL k", ":100\r\n");
    EQ("SET k v3", "+OK\r\n");
    EQ("TTL k", ":-1\r\n");
    EQ("EXPIRE k -1", ":1\r\n"); /* a past time deletes */
    EQ("EXISTS k", ":0\r\n");
    shard.now_ms = sv_mstime();
}

static void test_expiry_active(void **state)
{
    (void)state;
    run("FLUSHALL");
    char cmd[64];
    /* 2000 keys already past their time and 1000 with a long TTL */
    for (int i = 0; i < 3000; i++) {
        snprintf(cmd, sizeof(cmd), "SET e%d v", i);
        run(cmd);
        snprintf(cmd, sizeof(cmd), "PEXPIREAT e%d %lld", i, (long long)(i < 2000 ? sv_mstime() + 1 : sv_mstime() + 1000000));
        run(cmd);
    }
    EQ("DBSIZE", ":3000\r\n");
    int64_t until = sv_mstime() + 5;
    while (sv_mstime() < until) {
    }
    /* sampling removes expired keys without any access to them */
    for (int i = 0; i < 1000 && shard.nexpiring > 1000; i++) sv_expire_cycle(&shard, 100000);
    assert_int_equal(shard.nexpiring, 1000);
    EQ("DBSIZE", ":1000\r\n");
    run("FLUSHALL");
    assert_int_equal(shard.nexpiring, 0);
}

static void test_cluster_routing(void **state)
{
    (void)state;
    EQ("CLUSTER KEYSLOT foo", ":12182\r\n");
    EQ("CLUSTER KEYSLOT {user1}.a", ":8106\r\n");
    /* with one shard every slot is ours: multi-key across slots is allowed */
    EQ("MSET foo 1 bar 2", "+OK\r\n");
    EQ("CLUSTER COUNTKEYSINSLOT 12182", ":1\r\n");
    EQ("CLUSTER GETKEYSINSLOT 12182 10", "*1\r\n$3\r\nfoo\r\n");
}

/* slotlane.take / slotlane.restore (t_transfer.c): a value leaves in one step and is
 * rebuilt from argv alone, as a replay of a log of write commands would do it. */
static void test_transfer(void **state)
{
    (void)state;
    EQ("RPUSH tl a b a", ":3\r\n");
    EQ("slotlane.take tl", "*5\r\n$4\r\nlist\r\n$1\r\n0\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\na\r\n");
    EQ("EXISTS tl", ":0\r\n");
    EQ("slotlane.take tl", "$-1\r\n");
    EQ("slotlane.restore tl list 0 a b a", "+OK\r\n");
    EQ("LRANGE tl 0 -1", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\na\r\n");
    EQ("TTL tl", ":-1\r\n");
    EQ("ZADD tz 0.1 m -2 n", ":2\r\n");
    EQ("slotlane.take tz",
       "*6\r\n$4\r\nzset\r\n$1\r\n0\r\n$2\r\n-2\r\n$1\r\nn\r\n$19\r\n0.10000000000000001\r\n$1\r\nm\r\n");
    EQ("slotlane.restore tz zset 0 -2 n 0.10000000000000001 m", "+OK\r\n");
    EQ("ZSCORE tz m", "$19\r\n0.10000000000000001\r\n"); /* the same double */
    /* an absolute expiry: kept in the future, the key absent when it has passed */
    EQ("slotlane.restore ts string 99999999999999 v", "+OK\r\n");
    EQ("PEXPIRETIME ts", ":99999999999999\r\n");
    EQ("slotlane.restore ts string 1 v", "+OK\r\n");
    EQ("EXISTS ts", ":0\r\n");
    EQ("HSET th f v", ":1\r\n");
    EQ("slotlane.restore th hash 0 f", "-ERR slotlane.restore: wrong number of elements for the type\r\n");
    EQ("slotlane.restore th blob 0 f", "-ERR slotlane.restore: unknown type\r\n");
    EQ("slotlane.restore th set -5 f", "-ERR slotlane.restore: invalid expire time\r\n");
    EQ("slotlane.restore th zset 0 nan f", "-ERR value is not a valid float\r\n");
    EQ("HGET th f", "$1\r\nv\r\n"); /* rejected: nothing changed */
    EQ("slotlane.restore th set 0", "+OK\r\n");
    EQ("EXISTS th", ":0\r\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings),      cmocka_unit_test(test_set_reuses_allocation),
        cmocka_unit_test(test_lists),        cmocka_unit_test(test_hashes_sets),
        cmocka_unit_test(test_zsets),        cmocka_unit_test(test_issue24_commands),        cmocka_unit_test(test_expiry_lazy),
        cmocka_unit_test(test_expiry_active), cmocka_unit_test(test_cluster_routing),
        cmocka_unit_test(test_transfer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
