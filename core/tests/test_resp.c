/* test_resp: the RESP2/RESP3 reply parser, the encoder and the request scanner.
 * Every valid input is also fed split at every byte and one byte at a time, and must give
 * the same records; every malformed class must give SL__RESP_BAD (and truncation MORE). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "resp.h"

static const sl__alloc *A = &sl__default_alloc;

/* ------------------------------------------------------------ helpers */

static void dump_bytes(char **w, const uint8_t *p, size_t n)
{
    *(*w)++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\') *(*w)++ = (char)p[i];
        else *w += sprintf(*w, "\\x%02x", p[i]);
    }
    *(*w)++ = '"';
}

/* A compact text form of records [from, to), e.g. `*2 s"a" :1`. */
static void dump(char *out, const sl_reply *r, size_t from, size_t to, const uint8_t *data)
{
    char *w = out;
    for (size_t i = from; i < to; i++) {
        const sl_reply *x = &r[i];
        if (i > from) *w++ = ' ';
        assert_int_equal(x->reserved, 0);
        switch (x->type) {
        case SL_REPLY_STRING: *w++ = 's'; dump_bytes(&w, data + x->offset, x->len); break;
        case SL_REPLY_STATUS: *w++ = '+'; dump_bytes(&w, data + x->offset, x->len); break;
        case SL_REPLY_ERROR:
            w += sprintf(w, "-%d", x->flags);
            dump_bytes(&w, data + x->offset, x->len);
            break;
        case SL_REPLY_INTEGER: w += sprintf(w, ":%lld", (long long)x->value.integer); break;
        case SL_REPLY_NIL: *w++ = '_'; break;
        case SL_REPLY_ARRAY: w += sprintf(w, "*%u", x->len); break;
        case SL_REPLY_MAP: w += sprintf(w, "%%%u", x->len); break;
        case SL_REPLY_SET: w += sprintf(w, "~%u", x->len); break;
        case SL_REPLY_PUSH: w += sprintf(w, ">%u", x->len); break;
        case SL_REPLY_DOUBLE:
            w += sprintf(w, ",%.17g", x->value.dbl);
            dump_bytes(&w, data + x->offset, x->len);
            break;
        case SL_REPLY_BOOL: w += sprintf(w, "#%lld", (long long)x->value.integer); break;
        case SL_REPLY_BIGNUM: *w++ = '('; dump_bytes(&w, data + x->offset, x->len); break;
        case SL_REPLY_VERB: {
            int64_t f = x->value.integer;
            w += sprintf(w, "=%c%c%c", (char)(f & 0xff), (char)((f >> 8) & 0xff), (char)((f >> 16) & 0xff));
            dump_bytes(&w, data + x->offset, x->len);
            break;
        }
        default: w += sprintf(w, "?%d", x->type); break;
        }
    }
    *w = 0;
}

/* Feeds input to one parser as a caller would, revealing `step` more bytes at a time
 * (0: everything at once; (size_t)-1 as first chunk then the rest: split at `split`).
 * Writes every top-level reply as "R[...]" / "P[...]" lines into out; returns the last
 * result (SL__RESP_MORE when everything was consumed cleanly). */
static int feed(const sl__resp_limits *lim, const uint8_t *in, size_t len, size_t split,
                size_t step, char *out, size_t *consumed_total)
{
    sl__resp_parser p;
    sl__resp_parser_init(&p, lim);
    sl__records recs = { 0 };
    sl__bytes data = { 0 };
    size_t start = 0, avail = 0;
    char *w = out;
    *w = 0;
    int last = SL__RESP_MORE;
    while (1) {
        /* Reveal more input. */
        if (avail < len) {
            if (split && avail < split) avail = split;
            else if (step) avail = avail + step > len ? len : avail + step;
            else avail = len;
        }
        for (;;) {
            size_t used = 0;
            int rc = sl__resp_parse(&p, A, in + start, avail - start, &used, &recs, &data);
            assert_true(used <= avail - start);
            start += used;
            last = rc;
            if (rc == SL__RESP_BAD) {
                assert_true(p.errmsg[0] != 0);
                goto done;
            }
            assert_true(rc >= 0);
            if (rc == SL__RESP_MORE) break;
            assert_int_equal(p.depth, 0);
            w += sprintf(w, "%s[", rc == SL__RESP_PUSH ? "P" : "R");
            dump(w, recs.ptr, p.top_record, recs.len, data.ptr);
            w += strlen(w);
            w += sprintf(w, "]\n");
        }
        if (avail == len) break;
    }
    if (consumed_total) *consumed_total = start;
done:
    sl__records_free(A, &recs);
    sl__bytes_free(A, &data);
    return last;
}

static const sl__resp_limits default_limits = { (uint64_t)512 << 20, (uint64_t)1 << 30, 32 };

/* Checks one valid input: whole, split at every byte, one byte at a time. */
static void check_valid(const char *in, size_t len, const char *expect)
{
    static char whole[1 << 16], other[1 << 16];
    size_t used = 0;
    int rc = feed(&default_limits, (const uint8_t *)in, len, 0, 0, whole, &used);
    if (strcmp(whole, expect) != 0) print_error("input %s\n got: %s\nwant: %s\n", in, whole, expect);
    assert_string_equal(whole, expect);
    assert_int_equal(rc, SL__RESP_MORE);
    assert_int_equal(used, len);
    for (size_t s = 1; s < len; s++) {
        rc = feed(&default_limits, (const uint8_t *)in, len, s, 0, other, &used);
        assert_int_equal(rc, SL__RESP_MORE);
        assert_int_equal(used, len);
        assert_string_equal(other, whole);
    }
    rc = feed(&default_limits, (const uint8_t *)in, len, 0, 1, other, &used);
    assert_int_equal(rc, SL__RESP_MORE);
    assert_int_equal(used, len);
    assert_string_equal(other, whole);
    /* Every proper prefix is MORE (never BAD) and yields no extra reply. */
    for (size_t n = 0; n < len; n++) {
        rc = feed(&default_limits, (const uint8_t *)in, n, 0, 0, other, NULL);
        assert_int_equal(rc, SL__RESP_MORE);
    }
}

#define VALID(lit, expect) check_valid(lit, sizeof(lit) - 1, expect)

/* Checks one malformed input: BAD whole and one byte at a time. */
static void check_bad_lim(const sl__resp_limits *lim, const char *in, size_t len)
{
    static char out[1 << 16];
    int rc = feed(lim, (const uint8_t *)in, len, 0, 0, out, NULL);
    if (rc != SL__RESP_BAD) print_error("expected BAD for %s\n", in);
    assert_int_equal(rc, SL__RESP_BAD);
    rc = feed(lim, (const uint8_t *)in, len, 0, 1, out, NULL);
    assert_int_equal(rc, SL__RESP_BAD);
}

#define BAD(lit) check_bad_lim(&default_limits, lit, sizeof(lit) - 1)
#define BAD_LIM(lim, lit) check_bad_lim(lim, lit, sizeof(lit) - 1)

/* --------------------------------------------------------------- tests */

static void test_resp2_types(void **state)
{
    (void)state;
    VALID("+OK\r\n", "R[+\"OK\"]\n");
    VALID("+\r\n", "R[+\"\"]\n");
    VALID("-ERR unknown command\r\n", "R[-0\"ERR unknown command\"]\n");
    VALID("-MOVED 3999 127.0.0.1:6381\r\n", "R[-0\"MOVED 3999 127.0.0.1:6381\"]\n");
    VALID(":0\r\n", "R[:0]\n");
    VALID(":-1\r\n", "R[:-1]\n");
    VALID(":9223372036854775807\r\n", "R[:9223372036854775807]\n");
    VALID(":-9223372036854775808\r\n", "R[:-9223372036854775808]\n");
    VALID("$3\r\nfoo\r\n", "R[s\"foo\"]\n");
    VALID("$0\r\n\r\n", "R[s\"\"]\n");
    VALID("$4\r\na\r\nb\r\n", "R[s\"a\\x0d\\x0ab\"]\n");
    VALID("$3\r\n\x00\xff\r\r\n", "R[s\"\\x00\\xff\\x0d\"]\n");
    VALID("$-1\r\n", "R[_]\n");
    VALID("*-1\r\n", "R[_]\n");
    VALID("*0\r\n", "R[*0]\n");
    VALID("*3\r\n:1\r\n$1\r\na\r\n*2\r\n+x\r\n-E y\r\n", "R[*3 :1 s\"a\" *2 +\"x\" -0\"E y\"]\n");
    VALID("*2\r\n*-1\r\n$-1\r\n", "R[*2 _ _]\n");
    VALID("*2\r\n*0\r\n*1\r\n*0\r\n", "R[*2 *0 *1 *0]\n");
    /* A pipeline of replies: each is its own top-level reply. */
    VALID("+OK\r\n:5\r\n$2\r\nhi\r\n*1\r\n$-1\r\n", "R[+\"OK\"]\nR[:5]\nR[s\"hi\"]\nR[*1 _]\n");
}

static void test_resp3_types(void **state)
{
    (void)state;
    VALID("_\r\n", "R[_]\n");
    VALID("#t\r\n", "R[#1]\n");
    VALID("#f\r\n", "R[#0]\n");
    VALID(",3.14\r\n", "R[,3.1400000000000001\"3.14\"]\n");
    VALID(",-0.5\r\n", "R[,-0.5\"-0.5\"]\n");
    VALID(",10\r\n", "R[,10\"10\"]\n");
    VALID(",1e10\r\n", "R[,10000000000\"1e10\"]\n");
    VALID(",1.5E-3\r\n", "R[,0.0015\"1.5E-3\"]\n");
    VALID(",inf\r\n", "R[,inf\"inf\"]\n");
    VALID(",-inf\r\n", "R[,-inf\"-inf\"]\n");
    VALID(",nan\r\n", "R[,nan\"nan\"]\n");
    VALID(",1.7976931348623157e+308\r\n", "R[,1.7976931348623157e+308\"1.7976931348623157e+308\"]\n");
    VALID(",0.30000000000000004\r\n", "R[,0.30000000000000004\"0.30000000000000004\"]\n");
    VALID("(3492890328409238509324850943850943825024385\r\n",
          "R[(\"3492890328409238509324850943850943825024385\"]\n");
    VALID("(-12\r\n", "R[(\"-12\"]\n");
    VALID("=15\r\ntxt:Some string\r\n", "R[=txt\"Some string\"]\n");
    VALID("=4\r\nmkd:\r\n", "R[=mkd\"\"]\n");
    VALID("!21\r\nSYNTAX invalid syntax\r\n", "R[-0\"SYNTAX invalid syntax\"]\n");
    VALID("%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", "R[%4 +\"a\" :1 +\"b\" :2]\n");
    VALID("%0\r\n", "R[%0]\n");
    VALID("~2\r\n:1\r\n:2\r\n", "R[~2 :1 :2]\n");
    VALID("*2\r\n%1\r\n$1\r\nk\r\n~1\r\n#t\r\n_\r\n", "R[*2 %2 s\"k\" ~1 #1 _]\n");
    /* Push, alone and between replies. */
    VALID(">3\r\n+message\r\n+ch\r\n$2\r\nhi\r\n", "P[>3 +\"message\" +\"ch\" s\"hi\"]\n");
    VALID(":1\r\n>2\r\n+invalidate\r\n*1\r\n$1\r\nk\r\n:2\r\n",
          "R[:1]\nP[>2 +\"invalidate\" *1 s\"k\"]\nR[:2]\n");
}

static void test_verbatim_format(void **state)
{
    (void)state;
    sl__resp_parser p;
    sl__resp_parser_init(&p, NULL);
    sl__records recs = { 0 };
    sl__bytes data = { 0 };
    const char *in = "=15\r\ntxt:Some string\r\n";
    size_t used;
    assert_int_equal(sl__resp_parse(&p, A, (const uint8_t *)in, strlen(in), &used, &recs, &data), SL__RESP_REPLY);
    assert_int_equal(recs.ptr[0].type, SL_REPLY_VERB);
    assert_int_equal(recs.ptr[0].value.integer, 't' | 'x' << 8 | 't' << 16);
    assert_int_equal(recs.ptr[0].len, 11);
    assert_memory_equal(data.ptr + recs.ptr[0].offset, "Some string", 11);
    sl__records_free(A, &recs);
    sl__bytes_free(A, &data);
}

static void test_attributes_dropped(void **state)
{
    (void)state;
    /* The example of the RESP3 specification. */
    VALID("|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
          "*2\r\n:2039123\r\n:9543892\r\n",
          "R[*2 :2039123 :9543892]\n");
    /* Inside an aggregate: not a child. */
    VALID("*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", "R[*2 :1 :2]\n");
    VALID("*2\r\n:1\r\n|1\r\n+a\r\n*1\r\n+b\r\n:2\r\n", "R[*2 :1 :2]\n");
    /* An attribute inside an attribute, an empty one, before a push. */
    VALID("|1\r\n|1\r\n+x\r\n+y\r\n+k\r\n+v\r\n:5\r\n", "R[:5]\n");
    VALID("|0\r\n$1\r\nz\r\n", "R[s\"z\"]\n");
    VALID("|1\r\n+a\r\n+b\r\n>1\r\n+p\r\n", "P[>1 +\"p\"]\n");

    /* Their records and data bytes are removed, not only hidden. */
    sl__resp_parser p;
    sl__resp_parser_init(&p, NULL);
    sl__records recs = { 0 };
    sl__bytes data = { 0 };
    const char *in = "|1\r\n+key-popularity\r\n$5\r\nvalue\r\n$2\r\nok\r\n";
    size_t used;
    assert_int_equal(sl__resp_parse(&p, A, (const uint8_t *)in, strlen(in), &used, &recs, &data), SL__RESP_REPLY);
    assert_int_equal(used, strlen(in));
    assert_int_equal(recs.len, 1);
    assert_int_equal(data.len, 2);
    assert_int_equal(p.top_record, 0);
    assert_int_equal(recs.ptr[0].offset, 0);
    sl__records_free(A, &recs);
    sl__bytes_free(A, &data);
}

/* Two parsers sharing one data vector (as a batch's nodes do): an attribute that spans
 * calls must not take the other parser's bytes with it. */
static void test_shared_data_attribute(void **state)
{
    (void)state;
    sl__resp_parser pa, pb;
    sl__resp_parser_init(&pa, NULL);
    sl__resp_parser_init(&pb, NULL);
    sl__records ra = { 0 }, rb = { 0 };
    sl__bytes data = { 0 };
    size_t used;
    const char *a1 = "|1\r\n+attrkey\r\n";
    const char *a2 = "+attrval\r\n$3\r\nAAA\r\n";
    const char *b1 = "$3\r\nBBB\r\n";
    assert_int_equal(sl__resp_parse(&pa, A, (const uint8_t *)a1, strlen(a1), &used, &ra, &data), SL__RESP_MORE);
    assert_int_equal(used, strlen(a1));
    assert_int_equal(sl__resp_parse(&pb, A, (const uint8_t *)b1, strlen(b1), &used, &rb, &data), SL__RESP_REPLY);
    assert_int_equal(sl__resp_parse(&pa, A, (const uint8_t *)a2, strlen(a2), &used, &ra, &data), SL__RESP_REPLY);
    assert_int_equal(ra.len, 1);
    assert_int_equal(rb.len, 1);
    assert_true(rb.ptr[0].offset + 3 <= data.len && ra.ptr[0].offset + 3 <= data.len);
    assert_true(ra.ptr[0].offset >= rb.ptr[0].offset + 3); /* nothing of B's was reused */
    assert_memory_equal(data.ptr + rb.ptr[0].offset, "BBB", 3);
    assert_memory_equal(data.ptr + ra.ptr[0].offset, "AAA", 3);
    sl__records_free(A, &ra);
    sl__records_free(A, &rb);
    sl__bytes_free(A, &data);
}

static void test_malformed(void **state)
{
    (void)state;
    /* bad type bytes, streamed types */
    BAD("?x\r\n");
    BAD("\x00\r\n");
    BAD("x\r\n");
    BAD(".\r\n");
    BAD("$?\r\n;4\r\nabcd\r\n;0\r\n");
    BAD("*?\r\n:1\r\n.\r\n");
    /* bad and negative lengths */
    BAD("$abc\r\n");
    BAD("$\r\n");
    BAD("$+3\r\nfoo\r\n");
    BAD("$ 3\r\nfoo\r\n");
    BAD("$-2\r\n");
    BAD("*-2\r\n");
    BAD("%-1\r\n");
    BAD("=-1\r\n");
    BAD("!-1\r\n");
    BAD("*1x\r\n");
    /* overflowing integers and lengths */
    BAD(":9223372036854775808\r\n");
    BAD(":-9223372036854775809\r\n");
    BAD(":99999999999999999999999\r\n");
    BAD("$99999999999999999999\r\n");
    BAD("*18446744073709551616\r\n");
    /* bad scalars */
    BAD(":\r\n");
    BAD(":1.5\r\n");
    BAD(":-\r\n");
    BAD("#x\r\n");
    BAD("#tt\r\n");
    BAD("_x\r\n");
    BAD(",abc\r\n");
    BAD(",\r\n");
    BAD(",1e\r\n");
    BAD(",0x10\r\n");
    BAD(",1.5 \r\n");
    BAD("(12a\r\n");
    BAD("(\r\n");
    BAD("=3\r\nabc\r\n");
    BAD("=5\r\ntxt-x\r\n");
    /* missing CRLF */
    BAD("+OK\rX");
    BAD(":1\rx");
    BAD("$3\r\nfooXY");
    BAD("$3\r\nfoo\rX");
    BAD("$3\r\nfoo\n\r");
    BAD(":1\n:2\n:3\n:4\n:5\n:6\n:7\n:8\n:9\n:10\n:11\n:12\n");
    BAD("+a\nb\r\n");
    BAD("*2\r\n:1\r\n$1\r\nab\r\n");
}

static void test_limits(void **state)
{
    (void)state;
    sl__resp_limits lim = { 10, 4, 3 };
    /* A too-long bulk is refused at its header, before its bytes arrive. */
    BAD_LIM(&lim, "$11\r\n");
    BAD_LIM(&lim, "=11\r\n");
    BAD_LIM(&lim, "!11\r\n");
    /* A simple line longer than the bulk limit without its CR. */
    BAD_LIM(&lim, "+aaaaaaaaaaaaaaaaaaaa");
    BAD_LIM(&lim, "-aaaaaaaaaaaaaaaaaaaa");
    /* Aggregates: elements (a map counts keys and values). */
    BAD_LIM(&lim, "*5\r\n");
    BAD_LIM(&lim, "~5\r\n");
    BAD_LIM(&lim, ">5\r\n");
    BAD_LIM(&lim, "%3\r\n");
    BAD_LIM(&lim, "|3\r\n");
    /* Depth. */
    BAD_LIM(&lim, "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n");
    BAD_LIM(&lim, "*1\r\n|1\r\n*1\r\n*1\r\n:1\r\n:1\r\n:1\r\n"); /* attributes count */

    /* At the limits: accepted. */
    static char out[4096];
    size_t used;
    const char *ok = "*1\r\n*1\r\n*4\r\n$10\r\n0123456789\r\n*0\r\n:1\r\n:2\r\n"
                     "%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n";
    assert_int_equal(feed(&lim, (const uint8_t *)ok, strlen(ok), 0, 1, out, &used), SL__RESP_MORE);
    assert_int_equal(used, strlen(ok));
    assert_string_equal(out, "R[*1 *1 *4 s\"0123456789\" *0 :1 :2]\nR[%4 :1 :2 :3 :4]\n");

    /* Truncated data is MORE (consumed only whole elements), never BAD. */
    sl__resp_parser p;
    sl__resp_parser_init(&p, NULL);
    sl__records recs = { 0 };
    sl__bytes data = { 0 };
    const char *t = "*2\r\n$10\r\nabc";
    assert_int_equal(sl__resp_parse(&p, A, (const uint8_t *)t, strlen(t), &used, &recs, &data), SL__RESP_MORE);
    assert_int_equal(used, 4); /* the array header only */
    assert_int_equal(p.depth, 1);
    sl__records_free(A, &recs);
    sl__bytes_free(A, &data);

    /* A depth limit above the hard cap is clamped; no limits: defaults. */
    sl__resp_limits big = { 100, 100, 1000 };
    sl__resp_parser_init(&p, &big);
    assert_int_equal(p.limits.max_depth, SL__RESP_MAX_DEPTH);
    sl__resp_parser_init(&p, NULL);
    assert_int_equal(p.limits.max_depth, 32);
}

static void test_deep_nesting_at_cap(void **state)
{
    (void)state;
    sl__resp_limits lim = { 100, 100, SL__RESP_MAX_DEPTH };
    static char in[4096], out[8192];
    size_t n = 0;
    for (int i = 0; i < SL__RESP_MAX_DEPTH; i++) n += (size_t)sprintf(in + n, "*1\r\n");
    n += (size_t)sprintf(in + n, ":7\r\n");
    size_t used;
    assert_int_equal(feed(&lim, (const uint8_t *)in, n, 0, 0, out, &used), SL__RESP_MORE);
    assert_int_equal(used, n);
    /* One more level: refused. */
    n = 0;
    for (int i = 0; i <= SL__RESP_MAX_DEPTH; i++) n += (size_t)sprintf(in + n, "*1\r\n");
    n += (size_t)sprintf(in + n, ":7\r\n");
    assert_int_equal(feed(&lim, (const uint8_t *)in, n, 0, 0, out, &used), SL__RESP_BAD);
}

/* Counts allocations, to show the steady state allocates nothing. */
typedef struct counting {
    int calls;
} counting;
static void *c_malloc(size_t n, void *ctx) { ((counting *)ctx)->calls++; return malloc(n); }
static void *c_realloc(void *p, size_t n, void *ctx) { ((counting *)ctx)->calls++; return realloc(p, n); }
static void c_free(void *p, void *ctx) { (void)ctx; free(p); }

static void test_pipeline_64_bulks(void **state)
{
    (void)state;
    counting cnt = { 0 };
    sl__alloc ca = { c_malloc, c_realloc, c_free, &cnt };
    static uint8_t in[64 * 64];
    size_t n = 0;
    for (int i = 0; i < 64; i++) {
        memcpy(in + n, "$32\r\n", 5);
        n += 5;
        for (int j = 0; j < 32; j++) in[n++] = (uint8_t)('a' + (i + j) % 26);
        in[n++] = '\r';
        in[n++] = '\n';
    }
    sl__resp_parser p;
    sl__records recs = { 0 };
    sl__bytes data = { 0 };
    for (int round = 0; round < 200; round++) {
        if (round == 1) cnt.calls = 0;
        recs.len = data.len = 0;
        sl__resp_parser_init(&p, NULL);
        size_t pos = 0, replies = 0, used;
        int rc;
        while ((rc = sl__resp_parse(&p, &ca, in + pos, n - pos, &used, &recs, &data)) == SL__RESP_REPLY) {
            pos += used;
            replies++;
        }
        assert_int_equal(rc, SL__RESP_MORE);
        assert_int_equal(replies, 64);
        assert_int_equal(pos, n);
        assert_int_equal(recs.len, 64);
        assert_int_equal(data.len, 64 * 32);
        assert_int_equal(recs.ptr[63].type, SL_REPLY_STRING);
        assert_int_equal(recs.ptr[63].offset, 63 * 32);
        assert_memory_equal(data.ptr + 5 * 32, in + 5 * 39 + 5, 32);
    }
    assert_int_equal(cnt.calls, 0); /* vectors reused: nothing allocated after round 0 */
    sl__records_free(&ca, &recs);
    sl__bytes_free(&ca, &data);
}

/* Mutated valid inputs: any result is fine but a crash, an out-of-bounds access (under
 * ASan), or a record pointing outside the data. */
static void test_mutations(void **state)
{
    (void)state;
    static const char *corpus[] = {
        "*3\r\n:1\r\n$1\r\na\r\n*2\r\n+x\r\n-E y\r\n",
        "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
        ">3\r\n+message\r\n+ch\r\n$2\r\nhi\r\n=15\r\ntxt:Some string\r\n",
        "%2\r\n+a\r\n(123\r\n~1\r\n#t\r\n_\r\n!3\r\nERR\r\n",
    };
    sl__resp_limits lim = { 64, 16, 4 };
    uint64_t rng = 42;
    uint8_t buf[256];
    sl__records recs = { 0 };
    sl__bytes data = { 0 };
    for (int it = 0; it < 4000; it++) {
        const char *src = corpus[it % 4];
        size_t n = strlen(src);
        memcpy(buf, src, n);
        for (int m = 0; m < 1 + it % 3; m++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(rng >> 33) % n;
            static const uint8_t pick[] = { '\r', '\n', '*', '$', '|', '>', '%', '-', '0', '9', 'x', 0xff };
            buf[at] = pick[(rng >> 20) % sizeof pick];
        }
        sl__resp_parser p;
        sl__resp_parser_init(&p, &lim);
        recs.len = data.len = 0;
        size_t pos = 0, used;
        int rc;
        for (size_t avail = (it & 1) ? 1 : n; ; avail = avail < n ? avail + 1 : n) {
            while ((rc = sl__resp_parse(&p, A, buf + pos, avail - pos, &used, &recs, &data)) > 0) pos += used;
            if (rc == SL__RESP_BAD) break;
            assert_int_equal(rc, SL__RESP_MORE);
            pos += used;
            if (avail == n) break;
        }
        assert_true(pos <= n);
        for (size_t i = 0; i < recs.len; i++) {
            const sl_reply *r = &recs.ptr[i];
            assert_true(r->type >= SL_REPLY_STRING && r->type <= SL_REPLY_PUSH);
            if (r->type != SL_REPLY_ARRAY && r->type != SL_REPLY_MAP && r->type != SL_REPLY_SET &&
                r->type != SL_REPLY_PUSH)
                assert_true(r->offset + r->len <= data.len);
        }
    }
    sl__records_free(A, &recs);
    sl__bytes_free(A, &data);
}

/* An allocator that fails after `left` successful calls. */
typedef struct failing {
    int left;
} failing;
static void *f_malloc(size_t n, void *ctx)
{
    failing *f = ctx;
    return f->left-- > 0 ? malloc(n) : NULL;
}
static void *f_realloc(void *p, size_t n, void *ctx)
{
    failing *f = ctx;
    return f->left-- > 0 ? realloc(p, n) : NULL;
}

static void test_out_of_memory(void **state)
{
    (void)state;
    static char big[5000];
    memset(big, 'b', sizeof big);
    static char in[8192];
    int n = snprintf(in, sizeof in, "*3\r\n$%zu\r\n%.*s\r\n%%1\r\n+k\r\n,1.5\r\n|1\r\n+a\r\n+b\r\n:1\r\n",
                     sizeof big, (int)sizeof big, big);
    for (int budget = 0; budget < 40; budget++) {
        failing f = { budget };
        sl__alloc fa = { f_malloc, f_realloc, c_free, &f };
        sl__resp_parser p;
        sl__resp_parser_init(&p, NULL);
        sl__records recs = { 0 };
        sl__bytes data = { 0 };
        size_t used;
        int rc = sl__resp_parse(&p, &fa, (const uint8_t *)in, (size_t)n, &used, &recs, &data);
        assert_true(rc == SL_ENOMEM || rc == SL__RESP_REPLY);
        if (rc == SL__RESP_REPLY) assert_int_equal(used, (size_t)n);
        sl__records_free(&fa, &recs);
        sl__bytes_free(&fa, &data);

        sl__bytes out = { 0 };
        const char *argv[] = { "SET", big };
        const size_t lens[] = { 3, sizeof big };
        f.left = budget;
        rc = sl__resp_encode_argv(&fa, &out, 2, argv, lens);
        assert_true(rc == SL_ENOMEM || rc == 0);
        assert_true(rc == 0 || out.len == 0); /* nothing half-written */
        sl__bytes_free(&fa, &out);

        sl__arg *args = NULL;
        size_t alen = 0, acap = 0;
        uint32_t argc;
        const char *req = "*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n";
        f.left = budget;
        rc = sl__resp_scan_request(&fa, (const uint8_t *)req, strlen(req), &used, &args, &alen, &acap, &argc, NULL);
        assert_true(rc == SL_ENOMEM || rc == 1);
        assert_true(rc == 1 ? alen == 3 : alen == 0);
        sl__free(&fa, args);
    }
}

/* ------------------------------------------------------------ encoder */

static void test_fmt_i64(void **state)
{
    (void)state;
    const int64_t vals[] = { 0, 1, -1, 9, 10, -10, 99, 100, 123456789, -987654321,
                             INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, 1000000000000LL };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char a[32], b[32];
        size_t n = sl__fmt_i64(a, vals[i]);
        int m = snprintf(b, sizeof b, "%lld", (long long)vals[i]);
        assert_int_equal(n, (size_t)m);
        assert_memory_equal(a, b, n);
    }
}

static void test_encode_exact(void **state)
{
    (void)state;
    sl__bytes out = { 0 };
    const char *argv[] = { "SET", "key", "" };
    assert_int_equal(sl__resp_encode_argv(A, &out, 3, argv, NULL), 0);
    const char *want = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$0\r\n\r\n";
    assert_int_equal(out.len, strlen(want));
    assert_memory_equal(out.ptr, want, out.len);
    /* Appends. */
    const char *ping[] = { "PING" };
    assert_int_equal(sl__resp_encode_argv(A, &out, 1, ping, NULL), 0);
    assert_int_equal(out.len, strlen(want) + 14);
    assert_memory_equal(out.ptr + strlen(want), "*1\r\n$4\r\nPING\r\n", 14);
    /* Bad arguments. */
    assert_int_equal(sl__resp_encode_argv(A, &out, 0, argv, NULL), SL_EINVAL);
    assert_int_equal(sl__resp_encode_argv(A, &out, 1, NULL, NULL), SL_EINVAL);
    const char *nul[] = { "GET", NULL };
    assert_int_equal(sl__resp_encode_argv(A, &out, 2, nul, NULL), SL_EINVAL);
    sl__bytes_free(A, &out);
}

static void test_encode_scan_roundtrip(void **state)
{
    (void)state;
    sl__bytes out = { 0 };
    static char big[70000];
    memset(big, 'v', sizeof big);
    const char *argv[] = { "MSET", "k\x00\xff", "", big, "{tag}x", "\r\n" };
    const size_t lens[] = { 4, 3, 0, sizeof big, 6, 2 };
    const int argc = 6;
    for (int copies = 0; copies < 3; copies++)
        assert_int_equal(sl__resp_encode_argv(A, &out, argc, argv, lens), 0);
    sl__arg *args = NULL;
    size_t alen = 0, acap = 0, pos = 0, used;
    uint32_t n;
    char err[128];
    for (int copies = 0; copies < 3; copies++) {
        assert_int_equal(sl__resp_scan_request(A, out.ptr + pos, out.len - pos, &used, &args, &alen,
                                               &acap, &n, err), 1);
        assert_int_equal(n, argc);
        for (int i = 0; i < argc; i++) {
            sl__arg *x = &args[alen - (size_t)argc + (size_t)i];
            assert_int_equal(x->len, lens[i]);
            if (lens[i]) assert_memory_equal(out.ptr + pos + x->off, argv[i], lens[i]);
        }
        pos += used;
    }
    assert_int_equal(pos, out.len);
    assert_int_equal(alen, 3 * (size_t)argc);
    /* Every proper prefix of one request is incomplete and appends nothing. */
    size_t one = out.len / 3;
    for (size_t k = 0; k < one; k += (k < 200 ? 1 : 997)) {
        size_t before = alen;
        assert_int_equal(sl__resp_scan_request(A, out.ptr, k, &used, &args, &alen, &acap, &n, err), 0);
        assert_int_equal(alen, before);
    }
    sl__free(A, args);
    sl__bytes_free(A, &out);
}

static int scan(const char *in, size_t len, uint32_t *argc, size_t *used)
{
    sl__arg *args = NULL;
    size_t alen = 0, acap = 0;
    char err[128];
    err[0] = 0;
    int rc = sl__resp_scan_request(A, (const uint8_t *)in, len, used, &args, &alen, &acap, argc, err);
    if (rc == SL_EINVAL) assert_true(err[0] != 0 && strlen(err) < 128);
    if (rc != 1) assert_int_equal(alen, 0);
    sl__free(A, args);
    /* The framing-only mode (no argument views, for plain clients) agrees on everything. */
    uint32_t argc2 = 0;
    size_t used2 = 0, alen2 = 0;
    int rc2 = sl__resp_scan_request(A, (const uint8_t *)in, len, &used2, NULL, &alen2, NULL, &argc2, err);
    assert_int_equal(rc2, rc);
    assert_int_equal(used2, *used);
    if (rc == 1) assert_int_equal(argc2, *argc);
    return rc;
}

#define SCAN(lit, argc, used) scan(lit, sizeof(lit) - 1, argc, used)

static void test_scanner_malformed(void **state)
{
    (void)state;
    uint32_t argc;
    size_t used;
    assert_int_equal(SCAN("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n", &argc, &used), 1);
    assert_int_equal(argc, 2);
    assert_int_equal(used, 20);
    assert_int_equal(SCAN("", &argc, &used), 0);
    assert_int_equal(SCAN("*", &argc, &used), 0);
    assert_int_equal(SCAN("*2\r\n$3\r\nGET\r\n", &argc, &used), 0);
    assert_int_equal(SCAN("*1\r\n$3\r\nfo", &argc, &used), 0);
    assert_int_equal(SCAN("*1\r\n$3\r\nfoo\r", &argc, &used), 0);
    /* inline commands, empty and null arrays, non-bulk arguments */
    assert_int_equal(SCAN("PING\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*0\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*-1\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n:1\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n+OK\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n$-1\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n*1\r\n$1\r\na\r\n", &argc, &used), SL_EINVAL);
    /* bad headers and framing */
    assert_int_equal(SCAN("*x\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*+1\r\n$1\r\na\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\n$1\na\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n$1\na\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n$3\r\nfooXY", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n$\r\n\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n$ 1\r\na\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*99999999999\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n$99999999999\r\n", &argc, &used), SL_EINVAL);
    assert_int_equal(SCAN("*1\r\n$4294967295\r\n", &argc, &used), SL_EINVAL); /* > 4 GiB request */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resp2_types),
        cmocka_unit_test(test_resp3_types),
        cmocka_unit_test(test_verbatim_format),
        cmocka_unit_test(test_attributes_dropped),
        cmocka_unit_test(test_shared_data_attribute),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_deep_nesting_at_cap),
        cmocka_unit_test(test_pipeline_64_bulks),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_fmt_i64),
        cmocka_unit_test(test_encode_exact),
        cmocka_unit_test(test_encode_scan_roundtrip),
        cmocka_unit_test(test_scanner_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
