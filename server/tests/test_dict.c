/* Unit tests of the hash table: growth and shrink with incremental rehashing, the
 * SCAN guarantee across resizes, random sampling, iteration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dict.h"
#include "util.h"

static int keyname(char *buf, int i) { return sprintf(buf, "key:%d", i); }

static void test_add_find_delete(void **state)
{
    (void)state;
    sv_dict d;
    sv_dict_init(&d);
    char k[32];
    const int N = 50000;
    for (int i = 0; i < N; i++) {
        int n = keyname(k, i);
        sv_entry *e = sv_dict_add(&d, k, (size_t)n, NULL);
        assert_non_null(e);
        e->u.i = i;
        /* every key stays findable while the table rehashes */
        if (i % 997 == 0)
            for (int j = 0; j <= i; j += 101) {
                int m = keyname(k, j);
                sv_entry *f = sv_dict_find(&d, k, (size_t)m);
                assert_non_null(f);
                assert_int_equal(f->u.i, j);
            }
    }
    assert_int_equal(sv_dict_size(&d), N);
    sv_entry *ex = NULL;
    int n = keyname(k, 7);
    assert_null(sv_dict_add(&d, k, (size_t)n, &ex));
    assert_non_null(ex);
    assert_int_equal(ex->u.i, 7);
    for (int i = 0; i < N; i += 2) {
        n = keyname(k, i);
        sv_entry *e = sv_dict_unlink(&d, k, (size_t)n);
        assert_non_null(e);
        free(e);
        sv_dict_maybe_shrink(&d);
    }
    assert_int_equal(sv_dict_size(&d), N / 2);
    for (int i = 0; i < N; i++) {
        n = keyname(k, i);
        assert_int_equal(sv_dict_find(&d, k, (size_t)n) != NULL, i % 2 == 1);
    }
    /* shrink: delete nearly everything, the table gets smaller and still works */
    for (int i = 1; i < N - 10; i += 2) {
        n = keyname(k, i);
        free(sv_dict_unlink(&d, k, (size_t)n));
        sv_dict_maybe_shrink(&d);
    }
    assert_int_equal(sv_dict_size(&d), 5);
    for (int i = 0; i < 1000; i++) { /* drive the shrink's rehash to the end */
        n = keyname(k, 1000000 + i);
        sv_dict_add(&d, k, (size_t)n, NULL);
        free(sv_dict_unlink(&d, k, (size_t)n));
    }
    assert_true(d.ht[0].mask + 1 < 1024);
    sv_dict_clear(&d, NULL, NULL);
    assert_int_equal(sv_dict_size(&d), 0);
}

static void count_seen(sv_entry *e, void *priv)
{
    unsigned char *seen = priv;
    int i = atoi(e->key + 4);
    if (i < 20000) seen[i] = 1;
}

static void test_scan_across_resize(void **state)
{
    (void)state;
    sv_dict d;
    sv_dict_init(&d);
    char k[32];
    for (int i = 0; i < 1000; i++) sv_dict_add(&d, k, (size_t)keyname(k, i), NULL);
    unsigned char *seen = calloc(20000, 1);
    uint64_t cursor = 0;
    int step = 0, next = 1000;
    do {
        cursor = sv_dict_scan(&d, cursor, count_seen, seen);
        /* the table grows (and rehashes) while the scan runs */
        for (int j = 0; j < 20 && next < 20000; j++, next++) sv_dict_add(&d, k, (size_t)keyname(k, next), NULL);
        step++;
    } while (cursor != 0 && step < 1000000);
    assert_int_equal(cursor, 0);
    for (int i = 0; i < 1000; i++) assert_true(seen[i]); /* every key present throughout */
    /* and while it shrinks */
    memset(seen, 0, 20000);
    for (int i = 1000; i < next; i++) free(sv_dict_unlink(&d, k, (size_t)keyname(k, i)));
    cursor = 0;
    int del = 999;
    do {
        cursor = sv_dict_scan(&d, cursor, count_seen, seen);
        if (del >= 500) {
            free(sv_dict_unlink(&d, k, (size_t)keyname(k, del)));
            sv_dict_maybe_shrink(&d);
            del--;
        }
    } while (cursor != 0);
    for (int i = 0; i < 500; i++) assert_true(seen[i]);
    free(seen);
    sv_dict_clear(&d, NULL, NULL);
}

/* The batch prefetch reads buckets and entries only: on an empty table, mid-rehash
 * and over present and missing keys (ASan checks every read), the lookups after it
 * find what they found before. */
static void test_prefetch(void **state)
{
    (void)state;
    sv_dict d;
    sv_dict_init(&d);
    char names[20][32];
    sv_str keys[20];
    for (int i = 0; i < 20; i++) keys[i] = (sv_str){names[i], (size_t)keyname(names[i], i * 7)};
    sv_dict_prefetch(&d, keys, 20); /* no table yet */
    for (int i = 0; i < 3000; i++) {
        char k[32];
        int n = keyname(k, i);
        sv_entry *e = sv_dict_add(&d, k, (size_t)n, NULL);
        e->val = e; /* a value pointer the third pass reads */
        sv_dict_prefetch(&d, keys, 20); /* growing: mid-rehash now and then */
    }
    for (int i = 0; i < 20; i++) {
        sv_entry *e = sv_dict_find(&d, keys[i].p, keys[i].len);
        assert_true((i * 7 < 3000) == (e != NULL));
    }
    sv_dict_clear(&d, NULL, NULL);
}

static void test_random_and_iter(void **state)
{
    (void)state;
    sv_dict d;
    sv_dict_init(&d);
    assert_null(sv_dict_random(&d));
    char k[32];
    for (int i = 0; i < 100; i++) sv_dict_add(&d, k, (size_t)keyname(k, i), NULL);
    int hits[100] = {0};
    for (int i = 0; i < 20000; i++) {
        sv_entry *e = sv_dict_random(&d);
        assert_non_null(e);
        hits[atoi(e->key + 4)]++;
    }
    for (int i = 0; i < 100; i++) assert_true(hits[i] > 0);
    sv_dict_iter it;
    sv_dict_iter_init(&it, &d);
    int n = 0;
    while (sv_dict_iter_next(&it)) n++;
    assert_int_equal(n, 100);
    sv_dict_clear(&d, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_find_delete),
        cmocka_unit_test(test_scan_across_resize),
        cmocka_unit_test(test_random_and_iter),
        cmocka_unit_test(test_prefetch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
