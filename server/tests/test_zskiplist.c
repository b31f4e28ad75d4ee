/* Unit tests of the sorted-set skiplist: random inserts, deletes and score updates
 * checked after every step against a sorted array (order, ranks, the element at
 * each rank, spans through count_below, backward links). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"
#include "zskiplist.h"

static sv_entry *entry(const char *m, double score)
{
    size_t n = strlen(m);
    sv_entry *e = calloc(1, sizeof(*e) + n);
    memcpy(e->key, m, n);
    e->klen = (uint32_t)n;
    e->u.d = score;
    return e;
}

static int cmp_entries(const void *a, const void *b)
{
    const sv_entry *x = *(sv_entry *const *)a, *y = *(sv_entry *const *)b;
    return sv_zsl_cmp(x->u.d, x->key, x->klen, y->u.d, y->key, y->klen);
}

static int below_score(const sv_zsl_node *n, const void *arg) { return n->score < *(const double *)arg; }

static void check(sv_zsl *l, sv_entry **ref, size_t n)
{
    qsort(ref, n, sizeof(*ref), cmp_entries);
    assert_int_equal(l->length, n);
    sv_zsl_node *x = sv_zsl_first(l), *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        assert_non_null(x);
        assert_ptr_equal(x->e, ref[i]);
        assert_true(x->score == ref[i]->u.d);
        assert_ptr_equal(x->backward, prev);
        assert_int_equal(sv_zsl_rank(l, ref[i]), i + 1);
        assert_ptr_equal(sv_zsl_at(l, i + 1)->e, ref[i]);
        prev = x;
        x = x->level[0].forward;
    }
    assert_null(x);
    assert_ptr_equal(l->tail, prev);
    /* every level's spans add up to the ranks of the nodes it links */
    for (int i = 0; i < l->level; i++) {
        size_t r = 0;
        for (sv_zsl_node *y = l->header; y->level[i].forward; y = y->level[i].forward) {
            r += y->level[i].span;
            assert_true(r >= 1 && r <= n);
            assert_ptr_equal(y->level[i].forward->e, ref[r - 1]);
            assert_true(y->level[i].fscore == y->level[i].forward->score); /* the link's copy of it */
        }
    }
    assert_null(sv_zsl_at(l, 0));
    assert_null(sv_zsl_at(l, n + 1));
    for (double s = -1; s <= 21; s += 2.5) {
        size_t want = 0;
        while (want < n && ref[want]->u.d < s) want++;
        assert_int_equal(sv_zsl_count_below(l, below_score, &s), want);
    }
}

static void test_random_ops(void **state)
{
    (void)state;
    sv_rand_seed(42);
    sv_zsl l;
    sv_zsl_init(&l);
    enum { N = 400 };
    sv_entry *ref[N];
    size_t n = 0;
    srand(7);
    for (int step = 0; step < 3000; step++) {
        int op = rand() % 6;
        if ((op <= 1 || n == 0) && n < N) {
            char m[16];
            snprintf(m, sizeof(m), "m%d", step);
            sv_entry *e = entry(m, (double)(rand() % 20)); /* many equal scores: member order */
            sv_zsl_insert(&l, e);
            ref[n++] = e;
        } else if (op == 2) {
            size_t i = (size_t)rand() % n;
            assert_int_equal(sv_zsl_delete(&l, ref[i]), 1);
            assert_int_equal(sv_zsl_delete(&l, ref[i]), 0);
            free(ref[i]);
            ref[i] = ref[--n];
        } else if (op == 3) {
            size_t i = (size_t)rand() % n;
            sv_zsl_delete(&l, ref[i]);
            ref[i]->u.d = (double)(rand() % 20) + 0.5;
            sv_zsl_insert(&l, ref[i]);
        } else {
            /* the update in one descent: a new score anywhere (op 4), or a nudge that
             * mostly keeps the rank (op 5: the in-place path) */
            size_t i = (size_t)rand() % n;
            double to = op == 4 ? (double)(rand() % 20) + 0.25 * (rand() % 4) : ref[i]->u.d + 0.001 * (rand() % 3 + 1);
            assert_int_equal(sv_zsl_update_score(&l, ref[i], to), 1);
            ref[i]->u.d = to;
        }
        if (step % 50 == 0 || step > 2950) check(&l, ref, n);
    }
    check(&l, ref, n);
    sv_entry *absent = entry("absent", 3);
    assert_int_equal(sv_zsl_rank(&l, absent), 0);
    assert_int_equal(sv_zsl_update_score(&l, absent, 4), 0);
    check(&l, ref, n);
    free(absent);
    for (size_t i = 0; i < n; i++) free(ref[i]);
    sv_zsl_free(&l);
}

static void test_levels_and_empty(void **state)
{
    (void)state;
    sv_zsl l;
    sv_zsl_init(&l);
    assert_null(sv_zsl_first(&l));
    assert_null(l.tail);
    double s = 0;
    assert_int_equal(sv_zsl_count_below(&l, below_score, &s), 0);
    /* 100k ascending inserts: the levels grow logarithmically */
    enum { M = 100000 };
    sv_entry **all = malloc(sizeof(*all) * M);
    for (int i = 0; i < M; i++) {
        char m[16];
        snprintf(m, sizeof(m), "%07d", i);
        all[i] = entry(m, 1.0);
        sv_zsl_insert(&l, all[i]);
    }
    assert_true(l.level >= 5 && l.level <= 20);
    assert_int_equal(sv_zsl_rank(&l, all[M / 2]), M / 2 + 1);
    for (int i = 0; i < M; i += 2) assert_int_equal(sv_zsl_delete(&l, all[i]), 1);
    assert_int_equal(l.length, M / 2);
    assert_ptr_equal(sv_zsl_at(&l, 1)->e, all[1]);
    assert_int_equal(sv_zsl_rank(&l, all[M - 1]), M / 2);
    for (int i = 1; i < M; i += 2) assert_int_equal(sv_zsl_delete(&l, all[i]), 1);
    assert_int_equal(l.length, 0);
    assert_int_equal(l.level, 1);
    assert_null(l.tail);
    for (int i = 0; i < M; i++) free(all[i]);
    free(all);
    sv_zsl_free(&l);
}

/* Updates in small lists, where the moved node is often the tallest (the list's
 * level drops on its unlink and rises again) or the neighbour of its new place. */
static void test_update_small(void **state)
{
    (void)state;
    sv_rand_seed(3);
    srand(11);
    for (int round = 0; round < 300; round++) {
        sv_zsl l;
        sv_zsl_init(&l);
        enum { K = 6 };
        sv_entry *ref[K];
        int n = 1 + round % K;
        for (int i = 0; i < n; i++) {
            char m[16];
            snprintf(m, sizeof(m), "k%d", i);
            ref[i] = entry(m, (double)(rand() % 5));
            sv_zsl_insert(&l, ref[i]);
        }
        for (int step = 0; step < 20; step++) {
            int i = rand() % n;
            sv_zsl_node *before = NULL;
            for (sv_zsl_node *x = sv_zsl_first(&l); x; x = x->level[0].forward)
                if (x->e == ref[i]) before = x;
            double to = (double)(rand() % 7) - 1 + (rand() % 2) * 0.5;
            if (to == ref[i]->u.d) to += 0.25;
            assert_int_equal(sv_zsl_update_score(&l, ref[i], to), 1);
            ref[i]->u.d = to;
            /* the node is reused, moved or not */
            sv_zsl_node *after = NULL;
            for (sv_zsl_node *x = sv_zsl_first(&l); x; x = x->level[0].forward)
                if (x->e == ref[i]) after = x;
            assert_ptr_equal(before, after);
            check(&l, ref, (size_t)n);
        }
        for (int i = 0; i < n; i++) free(ref[i]);
        sv_zsl_free(&l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_ops),
        cmocka_unit_test(test_levels_and_empty),
        cmocka_unit_test(test_update_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
