/* test_commands: command lookup and the key-spec interpreter, by name for the commands
 * routing depends on, and against COMMAND GETKEYS answers recorded from a real
 * redis-server (core/scripts/gen_commands.py -> tests/data/getkeys_vectors.inc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "commands.h"

/* A copy of the generated table, to check its order and that lookup finds every entry. */
#include "commands_table.inc"

#define MAXA 64

typedef struct argv_buf {
    uint8_t buf[4096];
    sl__arg args[MAXA];
    uint32_t argc;
} argv_buf;

static void build(argv_buf *b, int argc, const char *const *argv, const size_t *lens)
{
    size_t off = 0;
    assert_true(argc <= MAXA);
    for (int i = 0; i < argc; i++) {
        size_t l = lens ? lens[i] : strlen(argv[i]);
        assert_true(off + l <= sizeof b->buf);
        memcpy(b->buf + off, argv[i], l);
        b->args[i].off = (uint32_t)off;
        b->args[i].len = (uint32_t)l;
        off += l;
    }
    b->argc = (uint32_t)argc;
}

/* Splits a space-separated command line ("" for an empty argument) and returns the key
 * positions as "1,3,5" ("-" when the command is unknown). */
static const char *keys_of(const char *line)
{
    static char out[512];
    static char copy[1024];
    const char *argv[MAXA];
    int argc = 0;
    strcpy(copy, line);
    for (char *t = strtok(copy, " "); t; t = strtok(NULL, " "))
        argv[argc++] = strcmp(t, "\"\"") == 0 ? "" : t;
    static argv_buf b;
    build(&b, argc, argv, NULL);
    const sl__cmdinfo *c = sl__cmd_lookup(b.buf, b.args, b.argc);
    if (!c) return "-";
    uint32_t pos[MAXA];
    size_t n = sl__cmd_keys(c, b.buf, b.args, b.argc, pos, MAXA);
    char *w = out;
    *w = 0;
    for (size_t i = 0; i < n; i++) w += sprintf(w, "%s%u", i ? "," : "", pos[i]);
    return out;
}

#define KEYS(line, want) assert_string_equal(keys_of(line), want)

static const sl__cmdinfo *lookup(const char *line)
{
    static char copy[1024];
    const char *argv[MAXA];
    int argc = 0;
    strcpy(copy, line);
    for (char *t = strtok(copy, " "); t; t = strtok(NULL, " ")) argv[argc++] = t;
    static argv_buf b;
    build(&b, argc, argv, NULL);
    return sl__cmd_lookup(b.buf, b.args, b.argc);
}

static void test_table(void **state)
{
    (void)state;
    size_t n = sizeof sl__cmd_table / sizeof sl__cmd_table[0];
    assert_int_equal(sl__cmd_count(), n);
    assert_true(n >= 200);
    for (size_t i = 0; i < n; i++) {
        const sl__cmdinfo *c = &sl__cmd_table[i];
        if (i) assert_true(strcmp(sl__cmd_table[i - 1].name, c->name) < 0);
        const sl__cmdinfo *f = lookup(c->name);
        assert_non_null(f);
        assert_string_equal(f->name, c->name);
        assert_int_equal(!!(c->flags & SL__CMD_CONTAINER), c->nsub > 0);
        assert_int_equal(!!(c->flags & SL__CMD_NOKEYS), c->nspecs == 0);
        for (uint16_t s = 0; s < c->nsub; s++) {
            const char *sub = c->subs[s].name;
            if (s) assert_true(strcmp(c->subs[s - 1].name, sub) < 0);
            size_t cl = strlen(c->name);
            assert_int_equal(strncmp(sub, c->name, cl), 0);
            assert_int_equal(sub[cl], '|');
            char line[256];
            snprintf(line, sizeof line, "%s %s", c->name, sub + cl + 1);
            f = lookup(line);
            assert_non_null(f);
            assert_string_equal(f->name, sub);
        }
    }
}

static void test_lookup(void **state)
{
    (void)state;
    assert_string_equal(lookup("get")->name, "GET");
    assert_string_equal(lookup("GeT")->name, "GET");
    assert_string_equal(lookup("zunionstore")->name, "ZUNIONSTORE");
    assert_string_equal(lookup("object encoding k")->name, "OBJECT|ENCODING");
    assert_string_equal(lookup("OBJECT Encoding k")->name, "OBJECT|ENCODING");
    assert_string_equal(lookup("object")->name, "OBJECT");             /* container alone */
    assert_string_equal(lookup("object nosuchsub k")->name, "OBJECT"); /* unknown sub */
    assert_string_equal(lookup("client kill")->name, "CLIENT|KILL");
    assert_string_equal(lookup("CLUSTER COUNT-FAILURE-REPORTS x")->name, "CLUSTER|COUNT-FAILURE-REPORTS");
    assert_null(lookup("nosuchcommand"));
    assert_null(lookup("GETX"));
    assert_null(lookup("GE"));
    assert_null(sl__cmd_lookup(NULL, NULL, 0));
    uint8_t buf[] = "G\0T";
    sl__arg a = { 0, 3 };
    assert_null(sl__cmd_lookup(buf, &a, 1)); /* a NUL byte does not end the name */
    assert_true(lookup("ping")->flags & SL__CMD_NOKEYS);
    assert_true(lookup("set k v")->flags & SL__CMD_WRITE);
    assert_true(lookup("get k")->flags & SL__CMD_READONLY);
    assert_true(lookup("eval")->flags & SL__CMD_MOVABLE);
    assert_true(lookup("blpop")->flags & SL__CMD_BLOCKING);
    assert_true(lookup("config")->flags & SL__CMD_CONTAINER);
    assert_int_equal(lookup("get")->arity, 2);
    assert_int_equal(lookup("mset")->arity, -3);
}

static void test_keys_by_name(void **state)
{
    (void)state;
    KEYS("GET k", "1");
    KEYS("SET k v", "1");
    KEYS("SET k v EX 10 NX GET", "1");
    KEYS("MSET a 1 b 2 c 3", "1,3,5");
    KEYS("MGET a b c", "1,2,3");
    KEYS("DEL a", "1");
    KEYS("DEL a b c d", "1,2,3,4");
    KEYS("EVAL script 2 a b x y", "3,4");
    KEYS("EVAL script 0 x", "");
    KEYS("EVALSHA sha 1 a x", "3");
    KEYS("EVAL_RO s 3 a b c", "3,4,5");
    KEYS("FCALL f 2 a b", "3,4");
    KEYS("FCALL_RO f 1 a x", "3");
    KEYS("ZUNIONSTORE dst 2 a b WEIGHTS 1 2", "1,3,4");
    KEYS("ZINTERSTORE dst 3 a b c", "1,3,4,5");
    KEYS("ZUNION 2 a b", "2,3");
    KEYS("XREAD STREAMS s1 s2 0 0", "2,3");
    KEYS("XREAD COUNT 10 BLOCK 5 STREAMS s1 $", "6");
    KEYS("xread count 1 streams s1 s2 s3 1 2 3", "4,5,6");
    KEYS("XREADGROUP GROUP g c STREAMS s1 s2 > >", "5,6");
    KEYS("SORT src", "1");
    KEYS("SORT src STORE dst", "1,3");
    KEYS("SORT src BY w_* LIMIT 0 10 GET # STORE dst", "1,10");
    KEYS("SORT src STORE d1 STORE d2", "1,5");
    KEYS("SORT_RO src BY x", "1");
    KEYS("MIGRATE host 6379 key 0 1000", "3");
    KEYS("MIGRATE host 6379 key 0 1000 COPY REPLACE", "3");
    KEYS("MIGRATE host 6379 \"\" 0 1000 KEYS a b c", "7,8,9");
    KEYS("MIGRATE host 6379 \"\" 0 1000 AUTH pw KEYS a b", "9,10");
    KEYS("MIGRATE host 6379 \"\" 0 1000 AUTH2 user KEYS KEYS a", "10");
    KEYS("MIGRATE host 6379 notempty 0 1000 KEYS a", ""); /* refused by the server */
    KEYS("LMPOP 2 a b LEFT", "2,3");
    KEYS("LMPOP 1 a RIGHT COUNT 3", "2");
    KEYS("ZMPOP 3 a b c MIN", "2,3,4");
    KEYS("BLMPOP 0 2 a b LEFT", "3,4");
    KEYS("BZMPOP 1.5 1 a MAX", "3");
    KEYS("BLPOP a b 0", "1,2");
    KEYS("OBJECT ENCODING k", "2");
    KEYS("XINFO STREAM s", "2");
    KEYS("XINFO STREAM s FULL COUNT 5", "2");
    KEYS("MEMORY USAGE k", "2");
    KEYS("MEMORY USAGE k SAMPLES 0", "2");
    KEYS("GEORADIUS g 0 0 1 km STORE dst", "1,7");
    KEYS("GEOSEARCHSTORE dst src FROMMEMBER m BYRADIUS 1 km", "1,2");
    KEYS("RENAME a b", "1,2");
    KEYS("BITOP AND dst a b", "2,3,4");
    KEYS("PING", "");
    KEYS("PING hello", "");
    KEYS("INFO", "");
    KEYS("INFO server", "");
    KEYS("CONFIG GET maxmemory", "");
    KEYS("SPUBLISH channel msg", ""); /* a shard channel is not a key */
    KEYS("NOSUCHCOMMAND a b", "-");
}

static void test_malformed_arguments(void **state)
{
    (void)state;
    /* Bad numkeys: not a number, negative, zero, too large, overflowing, signs, zeros. */
    KEYS("EVAL s abc a", "");
    KEYS("EVAL s -1 a", "");
    KEYS("EVAL s 3 a b", "");
    KEYS("EVAL s 99999999999999999999999 a", "");
    KEYS("EVAL s 9223372036854775807 a", "");
    KEYS("EVAL s -9223372036854775808 a", "");
    KEYS("EVAL s +1 a", "");
    KEYS("EVAL s 01 a", "");
    KEYS("EVAL s 1x a", "");
    KEYS("EVAL s \"\" a", "");
    KEYS("ZUNIONSTORE dst 5 a b", "");
    KEYS("ZUNIONSTORE dst x a b", "");
    KEYS("LMPOP 0 LEFT", "");
    KEYS("LMPOP 9 a LEFT", "");
    KEYS("BLMPOP 0 -2 a b LEFT", "");
    /* Wrong argument counts for the arity: no keys, no reads beyond argc. */
    KEYS("GET", "");
    KEYS("GET a b", "");
    KEYS("MSET a", "");
    KEYS("EVAL s", "");
    KEYS("OBJECT ENCODING", "");
    KEYS("XREAD STREAMS", "");
    KEYS("XREAD STREAMS a", "");
    KEYS("SORT", "");

    /* NULL and empty inputs. */
    assert_int_equal(sl__cmd_keys(NULL, NULL, NULL, 0, NULL, 0), 0);
    argv_buf b;
    const char *argv[] = { "MSET", "a", "1", "b", "2", "c", "3" };
    build(&b, 7, argv, NULL);
    const sl__cmdinfo *c = sl__cmd_lookup(b.buf, b.args, b.argc);
    assert_int_equal(sl__cmd_keys(c, b.buf, b.args, 0, NULL, 0), 0);
    /* A short output array: the count of all keys, only cap written. */
    uint32_t out[4] = { 99, 99, 99, 99 };
    assert_int_equal(sl__cmd_keys(c, b.buf, b.args, b.argc, out, 2), 3);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 3);
    assert_int_equal(out[2], 99);
    assert_int_equal(sl__cmd_keys(c, b.buf, b.args, b.argc, NULL, 0), 3);
}

/* The recorded COMMAND GETKEYS answers. */
typedef struct gk {
    int argc;
    const char *argv[16];
    int nkeys;
    const char *keys[16];
} gk;
#define SL_ARGS(...) { __VA_ARGS__ }
#define SL_GETKEYS(argc, argv, nkeys, keys) { argc, argv, nkeys, keys },
static const gk vectors[] = {
#include "../tests/data/getkeys_vectors.inc"
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_getkeys_vectors(void **state)
{
    (void)state;
    size_t n = sizeof vectors / sizeof vectors[0];
    assert_true(n >= 300);
    size_t with_keys = 0, failures = 0;
    for (size_t i = 0; i < n; i++) {
        const gk *v = &vectors[i];
        argv_buf b;
        build(&b, v->argc, v->argv, NULL);
        const sl__cmdinfo *c = sl__cmd_lookup(b.buf, b.args, b.argc);
        assert_non_null(c);
        uint32_t pos[MAXA];
        size_t k = sl__cmd_keys(c, b.buf, b.args, b.argc, pos, MAXA);
        const char *got[MAXA], *want[16];
        for (size_t j = 0; j < k; j++) {
            assert_true(pos[j] >= 1 && pos[j] < b.argc);
            if (j) assert_true(pos[j - 1] < pos[j]); /* argument order */
            got[j] = v->argv[pos[j]];
        }
        for (int j = 0; j < v->nkeys; j++) want[j] = v->keys[j];
        qsort(got, k, sizeof got[0], cmp_str);
        qsort(want, (size_t)v->nkeys, sizeof want[0], cmp_str);
        int same = k == (size_t)v->nkeys;
        for (size_t j = 0; same && j < k; j++) same = strcmp(got[j], want[j]) == 0;
        if (!same) {
            failures++;
            char line[1024] = "";
            for (int j = 0; j < v->argc; j++) snprintf(line + strlen(line), sizeof line - strlen(line), "%s ", v->argv[j]);
            print_error("vector %zu: %s-> %zu keys, server: %d\n", i, line, k, v->nkeys);
        }
        with_keys += v->nkeys > 0;
    }
    assert_int_equal(failures, 0);
    assert_true(with_keys >= 200); /* the vectors do exercise keys, not only refusals */
}

/* Random argument lists for every command: never a position outside the arguments. */
static void test_random_arguments(void **state)
{
    (void)state;
    static const char *words[] = { "0", "1", "2", "3", "-1", "99", "STREAMS", "KEYS", "STORE", "LIMIT",
                                   "GET", "BY", "AUTH", "AUTH2", "", "k", "x", "COUNT", "9999999999" };
    const size_t nw = sizeof words / sizeof words[0];
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t n = sizeof sl__cmd_table / sizeof sl__cmd_table[0];
    for (size_t i = 0; i < n; i++) {
        for (int round = 0; round < 40; round++) {
            const char *argv[24];
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            int argc = 1 + (int)((rng >> 33) % 20);
            argv[0] = sl__cmd_table[i].name;
            int a = 1;
            if (sl__cmd_table[i].nsub && argc > 1) {
                const char *sub = sl__cmd_table[i].subs[(rng >> 40) % sl__cmd_table[i].nsub].name;
                argv[a++] = strchr(sub, '|') + 1;
            }
            for (; a < argc; a++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                argv[a] = words[(rng >> 33) % nw];
            }
            argv_buf b;
            build(&b, argc, argv, NULL);
            const sl__cmdinfo *c = sl__cmd_lookup(b.buf, b.args, b.argc);
            assert_non_null(c);
            uint32_t pos[4];
            size_t k = sl__cmd_keys(c, b.buf, b.args, b.argc, pos, 4);
            for (size_t j = 0; j < k && j < 4; j++) assert_true(pos[j] >= 1 && pos[j] < b.argc);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_keys_by_name),
        cmocka_unit_test(test_malformed_arguments),
        cmocka_unit_test(test_getkeys_vectors),
        cmocka_unit_test(test_random_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
