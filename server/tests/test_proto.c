/* Unit tests of the request parser (every malformed class, every split point) and
 * the RESP2/RESP3 reply writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto.h"

/* Parses one request from the whole buffer; returns the status, fills argv text. */
static int parse_all(const char *buf, size_t len, sv_parser *p)
{
    sv_parser_reset(p);
    return sv_parse(p, buf, len);
}

/* Feeds the request growing one byte at a time (the bytes arrive split at every
 * position); before the end it must ask for more, at the end give want. */
static void check_split(const char *buf, size_t len, int want, const char *want_err)
{
    sv_parser p;
    sv_parser_init(&p);
    for (size_t n = 1; n < len; n++) {
        int r = sv_parse(&p, buf, n);
        if (r == SV_PARSE_ERR) {
            /* an error may show before the end (e.g. a bad length line), never a success */
            assert_int_equal(want, SV_PARSE_ERR);
            if (want_err) assert_string_equal(p.error, want_err);
            sv_parser_free(&p);
            return;
        }
        assert_int_equal(r, SV_PARSE_MORE);
    }
    int r = sv_parse(&p, buf, len);
    assert_int_equal(r, want);
    if (want == SV_PARSE_ERR && want_err) assert_string_equal(p.error, want_err);
    if (want == SV_PARSE_OK) assert_int_equal(p.pos, len);
    sv_parser_free(&p);
}

static void test_multibulk(void **state)
{
    (void)state;
    const char *req = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
    sv_parser p;
    sv_parser_init(&p);
    assert_int_equal(parse_all(req, strlen(req), &p), SV_PARSE_OK);
    assert_int_equal(p.argc, 3);
    assert_int_equal(p.pos, strlen(req));
    sv_str argv[3];
    sv_parser_args(&p, req, argv);
    assert_memory_equal(argv[0].p, "SET", 3);
    assert_int_equal(argv[2].len, 5);
    assert_memory_equal(argv[2].p, "hello", 5);
    /* binary and empty arguments */
    const char bin[] = "*2\r\n$0\r\n\r\n$3\r\n\0\r\n\r\n";
    assert_int_equal(parse_all(bin, sizeof(bin) - 1, &p), SV_PARSE_OK);
    sv_parser_args(&p, bin, argv);
    assert_int_equal(argv[0].len, 0);
    assert_int_equal(argv[1].len, 3);
    assert_memory_equal(argv[1].p, "\0\r\n", 3);
    sv_parser_free(&p);
}

static void test_empty_requests(void **state)
{
    (void)state;
    sv_parser p;
    sv_parser_init(&p);
    assert_int_equal(parse_all("*0\r\n", 4, &p), SV_PARSE_OK);
    assert_int_equal(p.argc, 0);
    assert_int_equal(p.pos, 4);
    assert_int_equal(parse_all("*-1\r\n", 5, &p), SV_PARSE_OK);
    assert_int_equal(p.argc, 0);
    assert_int_equal(parse_all("\r\n", 2, &p), SV_PARSE_OK);
    assert_int_equal(p.argc, 0);
    assert_int_equal(p.pos, 2);
    assert_int_equal(parse_all("   \n", 4, &p), SV_PARSE_OK);
    assert_int_equal(p.argc, 0);
    sv_parser_free(&p);
}

static void test_inline(void **state)
{
    (void)state;
    sv_parser p;
    sv_parser_init(&p);
    const char *req = "set \"a b\" 'c\\'d' \"\\x41\\n\"\r\n";
    assert_int_equal(parse_all(req, strlen(req), &p), SV_PARSE_OK);
    assert_int_equal(p.argc, 4);
    sv_str argv[4];
    sv_parser_args(&p, req, argv);
    assert_int_equal(argv[1].len, 3);
    assert_memory_equal(argv[1].p, "a b", 3);
    assert_int_equal(argv[2].len, 3);
    assert_memory_equal(argv[2].p, "c'd", 3);
    assert_int_equal(argv[3].len, 2);
    assert_memory_equal(argv[3].p, "A\n", 2);
    /* a bare \n ends an inline request too */
    assert_int_equal(parse_all("PING\n", 5, &p), SV_PARSE_OK);
    assert_int_equal(p.argc, 1);
    assert_int_equal(p.pos, 5);
    sv_parser_free(&p);
}

static void test_split_every_byte(void **state)
{
    (void)state;
    const char *ok[] = {
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n",
        "*1\r\n$4\r\nPING\r\n",
        "*2\r\n$0\r\n\r\n$10\r\n0123456789\r\n",
        "GET \"quoted key\" plain\r\n",
        "*0\r\n",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) check_split(ok[i], strlen(ok[i]), SV_PARSE_OK, NULL);
    /* a pipeline: requests one after another, each split everywhere */
    const char *pipe = "*1\r\n$4\r\nPING\r\nECHO x\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    size_t len = strlen(pipe), off = 0;
    int count = 0;
    sv_parser p;
    sv_parser_init(&p);
    while (off < len) {
        size_t n = 1;
        int r;
        while ((r = sv_parse(&p, pipe + off, n)) == SV_PARSE_MORE) {
            assert_true(n < len - off);
            n++;
        }
        assert_int_equal(r, SV_PARSE_OK);
        assert_int_equal(p.pos, n);
        off += p.pos;
        sv_parser_reset(&p);
        count++;
    }
    assert_int_equal(count, 3);
    sv_parser_free(&p);
}

static char *repeat(char c, size_t n, const char *prefix, const char *suffix)
{
    size_t pl = strlen(prefix), sl = strlen(suffix);
    char *b = malloc(pl + n + sl + 1);
    memcpy(b, prefix, pl);
    memset(b + pl, c, n);
    memcpy(b + pl + n, suffix, sl + 1);
    return b;
}

static void test_malformed(void **state)
{
    (void)state;
    struct {
        const char *in;
        const char *err;
    } bad[] = {
        {"*abc\r\n", "Protocol error: invalid multibulk length"},
        {"*1x\r\n", "Protocol error: invalid multibulk length"},
        {"*2147483648\r\n", "Protocol error: invalid multibulk length"},
        {"*1\r\n:5\r\n", "Protocol error: expected '$', got ':'"},
        {"*2\r\n$1\r\na\r\n+x\r\n", "Protocol error: expected '$', got '+'"},
        {"*1\r\n$-5\r\n", "Protocol error: invalid bulk length"},
        {"*1\r\n$abc\r\n", "Protocol error: invalid bulk length"},
        {"*1\r\n$536870913\r\n", "Protocol error: invalid bulk length"},
        {"*1\r\n$99999999999999999999999\r\n", "Protocol error: invalid bulk length"},
        {"SET \"a b\r\n", "Protocol error: unbalanced quotes in request"},
        {"SET 'a\r\n", "Protocol error: unbalanced quotes in request"},
        {"SET \"a\"b\r\n", "Protocol error: unbalanced quotes in request"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sv_parser p;
        sv_parser_init(&p);
        assert_int_equal(parse_all(bad[i].in, strlen(bad[i].in), &p), SV_PARSE_ERR);
        assert_string_equal(p.error, bad[i].err);
        sv_parser_free(&p);
        check_split(bad[i].in, strlen(bad[i].in), SV_PARSE_ERR, bad[i].err);
    }
    /* the size limits: inline 64 KB, count lines 64 KB */
    char *big = repeat('a', SV_INLINE_MAX + 10, "", "");
    sv_parser p;
    sv_parser_init(&p);
    assert_int_equal(parse_all(big, strlen(big), &p), SV_PARSE_ERR);
    assert_string_equal(p.error, "Protocol error: too big inline request");
    free(big);
    big = repeat('1', SV_INLINE_MAX + 10, "*", "");
    assert_int_equal(parse_all(big, strlen(big), &p), SV_PARSE_ERR);
    assert_string_equal(p.error, "Protocol error: too big mbulk count string");
    free(big);
    big = repeat('1', SV_INLINE_MAX + 10, "*1\r\n$", "");
    assert_int_equal(parse_all(big, strlen(big), &p), SV_PARSE_ERR);
    assert_string_equal(p.error, "Protocol error: too big bulk count string");
    free(big);
    /* just under the limits is fine (still waiting for the end) */
    big = repeat('a', SV_INLINE_MAX - 10, "", "");
    assert_int_equal(parse_all(big, strlen(big), &p), SV_PARSE_MORE);
    free(big);
    /* the largest allowed bulk only asks for more bytes */
    assert_int_equal(parse_all("*1\r\n$536870912\r\n", 17, &p), SV_PARSE_MORE);
    assert_int_equal(p.bulk, 536870912);
    sv_parser_free(&p);
}

/* Random bytes never crash the parser and never make it read past the buffer
 * (run under ASan in the sanitizer build). */
static void test_random_garbage(void **state)
{
    (void)state;
    srand(12345);
    sv_parser p;
    sv_parser_init(&p);
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t)(rand() % 64) + 1;
        char *buf = malloc(n);
        const char alphabet[] = "*$\r\n0123456789-+:ab \"'\\x";
        for (size_t i = 0; i < n; i++) buf[i] = rand() % 3 ? alphabet[rand() % (sizeof(alphabet) - 1)] : (char)rand();
        size_t off = 0;
        while (off < n) {
            sv_parser_reset(&p);
            int r = sv_parse(&p, buf + off, n - off);
            if (r != SV_PARSE_OK) break;
            assert_true(p.pos > 0 && p.pos <= n - off);
            sv_str *argv = malloc(sizeof(sv_str) * (size_t)(p.argc + 1));
            sv_parser_args(&p, buf + off, argv);
            free(argv);
            off += p.pos;
        }
        free(buf);
    }
    sv_parser_free(&p);
}

/* The look-ahead of the prefetch: keys of the complete multibulk requests, never past
 * the buffer, stopping at an incomplete, inline or malformed one. */
static void test_peek_keys(void **state)
{
    (void)state;
    sv_str k[4];
    const char *b = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$2\r\nab\r\n$1\r\nv\r\n";
    assert_int_equal(sv_peek_keys(b, strlen(b), k, 4), 3);
    assert_int_equal(k[0].len, 3);
    assert_memory_equal(k[0].p, "foo", 3);
    assert_int_equal(k[1].len, 0);
    assert_int_equal(k[2].len, 2);
    assert_memory_equal(k[2].p, "ab", 2);
    assert_int_equal(sv_peek_keys(b, strlen(b), k, 2), 2); /* at most max */
    for (size_t cut = 0; cut < strlen(b); cut++) {           /* every prefix: only what is whole */
        int n = sv_peek_keys(b, cut, k, 4);
        assert_true(n >= 0 && n <= 2);
        for (int i = 0; i < n; i++) assert_true(!k[i].len || (k[i].p >= b && k[i].p + k[i].len <= b + cut));
    }
    const char *bad[] = {"PING\r\n", "*x\r\n", "*2\r\n$99999999999999\r\n", "*2\r\n+3\r\nGET\r\n", "*-1\r\n", "*0\r\n", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) assert_int_equal(sv_peek_keys(bad[i], strlen(bad[i]), k, 4), 0);
}

static void test_reply_writer(void **state)
{
    (void)state;
    sv_buf b = {0};
    sv_reply r2 = {&b, 2}, r3 = {&b, 3};
#define EXPECT(s)                                   \
    do {                                            \
        assert_int_equal(b.len, strlen(s));         \
        assert_memory_equal(b.data, s, strlen(s));  \
        b.len = 0;                                  \
    } while (0)
    sv_add_null(&r2);
    EXPECT("$-1\r\n");
    sv_add_null(&r3);
    EXPECT("_\r\n");
    sv_add_null_array(&r2);
    EXPECT("*-1\r\n");
    sv_add_map(&r2, 2);
    EXPECT("*4\r\n");
    sv_add_map(&r3, 2);
    EXPECT("%2\r\n");
    sv_add_set(&r3, 1);
    EXPECT("~1\r\n");
    sv_add_double(&r2, 1.5);
    EXPECT("$3\r\n1.5\r\n");
    sv_add_double(&r3, -2);
    EXPECT(",-2\r\n");
    sv_add_double(&r3, 1.0 / 0.0);
    EXPECT(",inf\r\n");
    sv_add_bool(&r2, 1);
    EXPECT(":1\r\n");
    sv_add_bool(&r3, 0);
    EXPECT("#f\r\n");
    sv_add_int(&r2, -9223372036854775807LL - 1);
    EXPECT(":-9223372036854775808\r\n");
    sv_add_bulk(&r2, "ab", 2);
    EXPECT("$2\r\nab\r\n");
    sv_add_error(&r2, "syntax error");
    EXPECT("-ERR syntax error\r\n");
    sv_add_error(&r2, "-WRONGTYPE x");
    EXPECT("-WRONGTYPE x\r\n");
    sv_add_error(&r2, "bad\r\nline");
    EXPECT("-ERR bad  line\r\n");
    sv_add_verbatim(&r3, "hi", 2);
    EXPECT("=6\r\ntxt:hi\r\n");
    sv_add_verbatim(&r2, "hi", 2);
    EXPECT("$2\r\nhi\r\n");
    sv_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multibulk),     cmocka_unit_test(test_empty_requests),
        cmocka_unit_test(test_inline),        cmocka_unit_test(test_split_every_byte),
        cmocka_unit_test(test_malformed),     cmocka_unit_test(test_random_garbage),
        cmocka_unit_test(test_reply_writer),  cmocka_unit_test(test_peek_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
