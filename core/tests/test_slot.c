/* test_slot: key -> slot against vectors recorded from a real redis-server's
 * CLUSTER KEYSLOT (core/scripts/gen_slot_vectors.py -> tests/data/slot_vectors.inc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "slot.h"
#include "slotlane.h"

typedef struct vec {
    const char *prefix; /* the key, or the prefix of a repeated-byte key */
    size_t prefix_len;
    char fill;          /* 0: no repeated part */
    size_t fill_len;
    unsigned slot;
} vec;

#define SL_SLOT_VECTOR(key, len, slot) { key, len, 0, 0, slot },
#define SL_SLOT_VECTOR_REPEAT(prefix, plen, ch, n, slot) { prefix, plen, ch, n, slot },
static const vec vectors[] = {
#include "../tests/data/slot_vectors.inc"
};

static void test_recorded_vectors(void **state)
{
    (void)state;
    size_t n = sizeof vectors / sizeof vectors[0];
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        const vec *v = &vectors[i];
        size_t len = v->prefix_len + v->fill_len;
        uint8_t *key = malloc(len ? len : 1);
        assert_non_null(key);
        memcpy(key, v->prefix, v->prefix_len);
        memset(key + v->prefix_len, v->fill, v->fill_len);
        unsigned got = sl__key_slot(key, len);
        if (got != v->slot) print_error("vector %zu (len %zu): got %u want %u\n", i, len, got, v->slot);
        assert_int_equal(got, v->slot);
        assert_int_equal(sl_key_slot(key, len), (int)v->slot);
        free(key);
    }
}

static void test_named_cases(void **state)
{
    (void)state;
    /* The cases the cluster specification discusses, checked by name as well. */
    assert_int_equal(sl__key_slot("{user1000}.following", 20), sl__key_slot("user1000", 8));
    assert_int_equal(sl__key_slot("{user1000}.followers", 20), sl__key_slot("user1000", 8));
    assert_int_equal(sl__key_slot("foo{bar}baz", 11), sl__key_slot("bar", 3));
    assert_int_equal(sl__key_slot("{}", 2), sl__crc16("{}", 2) & 16383);          /* empty tag: whole key */
    assert_int_equal(sl__key_slot("{{a}}", 5), sl__key_slot("{a", 2));             /* first '{' to first '}' */
    assert_int_equal(sl__key_slot("a{}{b}", 6), sl__crc16("a{}{b}", 6) & 16383);   /* first tag empty */
    assert_int_equal(sl__key_slot("{a}{b}", 6), sl__key_slot("a", 1));
    assert_int_equal(sl__crc16("123456789", 9), 0x31C3);                           /* XMODEM check value */
    assert_int_equal(sl__key_slot("", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_vectors),
        cmocka_unit_test(test_named_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
