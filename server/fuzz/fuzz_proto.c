/* fuzz_proto: libFuzzer target for the request parser (proto.c) and the number
 * conversions requests go through (util.c).
 *
 * The input is a byte stream a client could send. It is parsed twice the way
 * conn.c does it (a read buffer, the request restarting at rstart, the parser
 * resumed with more bytes each time): once with all the bytes at once, once cut
 * into chunks whose sizes come from the input's first four bytes. Both must give
 * the same requests, the same error and the same unconsumed tail. Each request is
 * then written back as RESP by the reply writer and parsed again (same arguments),
 * and every argument goes through the integer and double conversions (an integer
 * that parses prints back to the same text; a double prints and re-parses to the
 * same value) and through sv_add_error (one line, whatever the message holds).
 *
 * Any mismatch aborts, which libFuzzer reports as a crash. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_proto: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void log_bytes(sv_buf *log, const void *p, size_t n)
{
    sv_buf_append(log, &n, sizeof(n));
    sv_buf_append(log, p, n);
}

/* Every argument through the conversions and the error writer. */
static void check_arg(sv_str a)
{
    long long v;
    if (sv_str2ll(a.p, a.len, &v)) {
        char tmp[32];
        size_t n = sv_ll2str(tmp, v);
        CHECK(n == a.len && memcmp(tmp, a.p, n) == 0); /* string2ll accepts only the canonical form */
    }
    double d;
    if (sv_str2d(a.p, a.len, &d)) {
        CHECK(!isnan(d));
        char tmp[64];
        size_t n = sv_d2str(tmp, sizeof(tmp), d);
        double back;
        CHECK(sv_str2d(tmp, n, &back));
        CHECK(back == d || (d == 0 && back == 0));
    }
    long double ld;
    if (sv_str2ld(a.p, a.len, &ld)) {
        char tmp[5200];
        size_t n = sv_ld2str(tmp, sizeof(tmp), ld);
        CHECK(n > 0 && n < sizeof(tmp));
    }
    /* an error message from client bytes (unknown command, option names) stays one line */
    char msg[300];
    size_t m = a.len < sizeof(msg) - 1 ? a.len : sizeof(msg) - 1;
    memcpy(msg, a.p, m);
    msg[m] = 0;
    sv_buf out = {0};
    sv_reply r = {&out, 2};
    sv_add_error(&r, msg);
    CHECK(out.len >= 3 && out.data[0] == '-' && out.data[out.len - 2] == '\r' && out.data[out.len - 1] == '\n');
    for (size_t i = 0; i + 2 < out.len; i++) CHECK(out.data[i] != '\r' && out.data[i] != '\n');
    sv_buf_free(&out);
}

/* Writes the request back as a RESP multibulk and parses it again. */
static void check_roundtrip(int argc, const sv_str *argv)
{
    sv_buf enc = {0};
    sv_reply r = {&enc, 2};
    sv_add_array(&r, argc);
    for (int i = 0; i < argc; i++) sv_add_bulk(&r, argv[i].p, argv[i].len);
    sv_parser p;
    sv_parser_init(&p);
    int rc = sv_parse(&p, enc.data, enc.len);
    CHECK(rc == SV_PARSE_OK);
    CHECK(p.pos == enc.len);
    CHECK(p.argc == argc);
    sv_str *back = malloc(sizeof(sv_str) * (size_t)(argc ? argc : 1));
    sv_parser_args(&p, enc.data, back);
    for (int i = 0; i < argc; i++) CHECK(back[i].len == argv[i].len && memcmp(back[i].p, argv[i].p, argv[i].len) == 0);
    free(back);
    sv_parser_free(&p);
    sv_buf_free(&enc);
}

/* Feeds data to a parser as conn.c does, the bytes arriving in chunks (cut == NULL:
 * all at once). Appends what happened to log: each request's arguments, the error,
 * and the size of the unconsumed tail. */
static void run_stream(const uint8_t *data, size_t size, uint64_t *cut, int extra_checks, sv_buf *log)
{
    sv_parser p;
    sv_parser_init(&p);
    sv_buf rbuf = {0};
    size_t rstart = 0, fed = 0;
    sv_str *argv = NULL;
    int argv_cap = 0;
    int failed = 0;
    while (fed < size && !failed) {
        size_t chunk = size - fed;
        if (cut) {
            uint64_t x = rng_next(cut);
            size_t want = 1 + (size_t)(x % ((size_t)1 << ((x >> 32) % 12)));
            if (want < chunk) chunk = want;
        }
        /* a fresh allocation per chunk of the exact size: ASan sees any read past the data */
        char *nb = malloc(rbuf.len - rstart + chunk);
        if (rbuf.len - rstart) memcpy(nb, rbuf.data + rstart, rbuf.len - rstart);
        memcpy(nb + rbuf.len - rstart, data + fed, chunk);
        size_t nlen = rbuf.len - rstart + chunk;
        free(rbuf.data);
        rbuf.data = nb;
        rbuf.len = rbuf.cap = nlen;
        rstart = 0;
        fed += chunk;
        while (rstart < rbuf.len) {
            const char *base = rbuf.data + rstart;
            size_t avail = rbuf.len - rstart;
            int rc = sv_parse(&p, base, avail);
            if (rc == SV_PARSE_MORE) {
                CHECK(p.pos <= avail);
                break;
            }
            if (rc == SV_PARSE_ERR) {
                CHECK(p.error != NULL);
                sv_buf_append(log, "E", 1);
                log_bytes(log, p.error, strlen(p.error));
                failed = 1;
                break;
            }
            CHECK(rc == SV_PARSE_OK);
            CHECK(p.pos > 0 && p.pos <= avail);
            CHECK(p.argc >= 0);
            if (p.argc > argv_cap) {
                argv_cap = p.argc;
                argv = realloc(argv, sizeof(sv_str) * (size_t)argv_cap);
            }
            sv_parser_args(&p, base, argv);
            sv_buf_append(log, "R", 1);
            sv_buf_append(log, &p.argc, sizeof(p.argc));
            for (int i = 0; i < p.argc; i++) {
                if (!p.is_inline) CHECK(p.off[i] + p.len[i] <= p.pos);
                else CHECK(p.off[i] + p.len[i] <= p.inline_cap);
                log_bytes(log, argv[i].p, argv[i].len);
                if (extra_checks) check_arg(argv[i]);
            }
            if (extra_checks) check_roundtrip(p.argc, argv);
            rstart += p.pos;
            sv_parser_reset(&p);
        }
    }
    if (!failed) {
        size_t tail = rbuf.len - rstart;
        sv_buf_append(log, "T", 1);
        sv_buf_append(log, &tail, sizeof(tail));
    }
    free(argv);
    free(rbuf.data);
    sv_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    if (size >= 4) {
        uint32_t s;
        memcpy(&s, data, 4);
        seed ^= (uint64_t)s * 0xff51afd7ed558ccdull;
    }
    if (!seed) seed = 1;
    sv_buf whole = {0}, pieces = {0};
    run_stream(data, size, NULL, 1, &whole);
    run_stream(data, size, &seed, 0, &pieces);
    /* The limits (64 KB inline and count lines) depend on how much is buffered, as in
     * Redis: below them, chunking must not change anything. */
    if (size <= SV_INLINE_MAX) {
        if (whole.len != pieces.len || memcmp(whole.data, pieces.data, whole.len) != 0) {
            fprintf(stderr, "fuzz_proto: all-at-once and chunked parses differ\n");
            abort();
        }
    }
    sv_buf_free(&whole);
    sv_buf_free(&pieces);
    return 0;
}
