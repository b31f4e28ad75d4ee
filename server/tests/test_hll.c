/* Unit tests of the HyperLogLog encoding (hll.c) against bytes and counts Redis
 * 7.0.15 produced for the same elements (captured with redis-cli GET/PFCOUNT), the
 * dense register packing, sparse -> dense promotion and merge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hll.h"

/* Adds elements the way PFADD does: sparse until promotion, then dense. */
typedef struct hll {
    uint8_t buf[SV_HLL_DENSE_SIZE + 8];
    size_t len;
} hll;

static void add(hll *h, const char *ele)
{
    long index;
    int count = sv_hll_patlen(ele, strlen(ele), &index);
    if (h->buf[4] == SV_HLL_DENSE) {
        if (sv_hll_dense_get(h->buf + SV_HLL_HDR, index) < (unsigned)count) sv_hll_dense_set(h->buf + SV_HLL_HDR, index, (unsigned)count);
        return;
    }
    int r = sv_hll_sparse_set(h->buf, &h->len, index, (unsigned)count);
    assert_true(r >= 0);
    if (r == 2) {
        uint8_t dense[SV_HLL_DENSE_SIZE];
        assert_int_equal(sv_hll_to_dense(h->buf, h->len, dense), 0);
        memcpy(h->buf, dense, sizeof(dense));
        h->len = SV_HLL_DENSE_SIZE;
        sv_hll_dense_set(h->buf + SV_HLL_HDR, index, (unsigned)count);
    }
}

static void test_sparse_bytes_as_redis(void **state)
{
    (void)state;
    hll h;
    h.len = sv_hll_init(h.buf);
    assert_int_equal(h.len, 18);
    add(&h, "a");
    add(&h, "b");
    add(&h, "c");
    h.buf[15] |= 0x80; /* PFADD marks the cache stale */
    /* redis-cli PFADD fx a b c; GET fx */
    static const uint8_t want[] = {0x48, 0x59, 0x4c, 0x4c, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80,
                                   0x60, 0xf3, 0x80, 0x50, 0xb1, 0x84, 0x4b, 0xfb, 0x80, 0x42, 0x5a};
    assert_int_equal(h.len, sizeof(want));
    assert_memory_equal(h.buf, want, sizeof(want));
    int invalid = 0;
    assert_int_equal(sv_hll_count(h.buf, h.len, &invalid), 3);
    assert_int_equal(invalid, 0);
}

static void test_counts_as_redis(void **state)
{
    (void)state;
    static hll h;
    h.len = sv_hll_init(h.buf);
    char e[16];
    for (int i = 0; i < 300; i++) {
        snprintf(e, sizeof(e), "%d", i);
        add(&h, e);
    }
    assert_int_equal(h.buf[4], SV_HLL_SPARSE);
    assert_int_equal(h.len, 698);                       /* Redis: STRLEN 698 */
    assert_int_equal(sv_hll_count(h.buf, h.len, NULL), 302); /* Redis: PFCOUNT 302 */
    for (int i = 300; i < 10000; i++) {
        snprintf(e, sizeof(e), "%d", i);
        add(&h, e);
    }
    assert_int_equal(h.buf[4], SV_HLL_DENSE); /* past 3000 bytes */
    assert_int_equal(sv_hll_count(h.buf, SV_HLL_DENSE_SIZE, NULL), 9987); /* Redis: 9987 */
    assert_true(sv_hll_valid(h.buf, SV_HLL_DENSE_SIZE));
    assert_false(sv_hll_valid(h.buf, SV_HLL_DENSE_SIZE - 1));
}

static void test_dense_registers(void **state)
{
    (void)state;
    static uint8_t regs[SV_HLL_DENSE_SIZE - SV_HLL_HDR];
    static uint8_t ref[SV_HLL_REGISTERS];
    srand(3);
    for (int round = 0; round < 5; round++) {
        for (long i = 0; i < SV_HLL_REGISTERS; i++) {
            ref[i] = (uint8_t)(rand() & 63);
            sv_hll_dense_set(regs, i, ref[i]);
        }
        for (long i = 0; i < SV_HLL_REGISTERS; i++) assert_int_equal(sv_hll_dense_get(regs, i), ref[i]);
    }
}

static void test_merge_and_corrupt(void **state)
{
    (void)state;
    static hll a, b;
    a.len = sv_hll_init(a.buf);
    b.len = sv_hll_init(b.buf);
    char e[16];
    for (int i = 0; i < 2000; i++) {
        snprintf(e, sizeof(e), "x%d", i);
        add(i % 2 ? &a : &b, e);
    }
    static uint8_t max[SV_HLL_REGISTERS];
    memset(max, 0, sizeof(max));
    assert_int_equal(sv_hll_merge(max, a.buf, a.len), 0);
    assert_int_equal(sv_hll_merge(max, b.buf, b.len), 0);
    uint64_t n = sv_hll_count_raw(max);
    assert_true(n > 1900 && n < 2100);
    /* a sparse form whose runs do not cover 16384 registers is refused */
    uint8_t bad[SV_HLL_HDR + 1];
    memcpy(bad, a.buf, SV_HLL_HDR);
    bad[4] = SV_HLL_SPARSE;
    bad[SV_HLL_HDR] = 0x05; /* ZERO of 6 */
    assert_int_equal(sv_hll_merge(max, bad, sizeof(bad)), -1);
    int invalid = 0;
    sv_hll_count(bad, sizeof(bad), &invalid);
    assert_int_equal(invalid, 1);
    size_t len = sizeof(bad);
    assert_int_equal(sv_hll_sparse_set(bad, &len, 100, 3), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_bytes_as_redis),
        cmocka_unit_test(test_counts_as_redis),
        cmocka_unit_test(test_dense_registers),
        cmocka_unit_test(test_merge_and_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
