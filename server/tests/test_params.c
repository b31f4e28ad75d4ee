/* Unit tests of the CONFIG parameter store (params.c): parsing to Redis 7.0's
 * canonical forms, aliases sharing one value, range and type errors, and the numeric
 * values the data path reads (sv_param_ll). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "params.h"

static char err[512];

static const char *get(const char *name)
{
    static char v[1024];
    sv_params_value(name, v, sizeof(v));
    return v;
}

/* sets a value as the config file would; returns the stored value or "ERR <why>" */
static const char *set(const char *name, const char *value)
{
    static char out[1100];
    int r = sv_params_set_startup(name, value, err, sizeof(err));
    if (r == 0) return "UNKNOWN";
    if (r < 0) {
        snprintf(out, sizeof(out), "ERR %s", err);
        return out;
    }
    return get(name);
}

static void test_memory_and_ints(void **state)
{
    (void)state;
    assert_string_equal(set("maxmemory", "1gb"), "1073741824");
    assert_string_equal(set("maxmemory", "1g"), "1000000000");
    assert_string_equal(set("maxmemory", "3KB"), "3072");
    assert_string_equal(set("maxmemory", "100"), "100");
    assert_non_null(strstr(set("maxmemory", "1.5gb"), "argument must be a memory value"));
    assert_non_null(strstr(set("maxmemory", "-1"), "between 0 and 9223372036854775807"));
    assert_string_equal(set("hz", "0"), "1"); /* clamped as Redis */
    assert_string_equal(set("hz", "100000"), "500");
    assert_non_null(strstr(set("timeout", "-1"), "argument must be between 0 and 2147483647 inclusive"));
    assert_non_null(strstr(set("timeout", "x"), "couldn't be parsed into an integer"));
    assert_string_equal(set("slowlog_log_slower_than", "-1"), "-1"); /* '_' as the file writes it */
    assert_int_equal(sv_param_ll(SV_PARAM_SLOWLOG_LOG_SLOWER_THAN), -1);
    assert_string_equal(set("no-such-parameter", "1"), "UNKNOWN");
}

static void test_aliases_share_one_value(void **state)
{
    (void)state;
    assert_string_equal(set("hash-max-ziplist-entries", "77"), "77");
    assert_string_equal(get("hash-max-listpack-entries"), "77");
    assert_int_equal(sv_param_ll(SV_PARAM_HASH_MAX_LISTPACK_ENTRIES), 77);
    assert_string_equal(set("list-max-listpack-size", "128"), "128");
    assert_string_equal(get("list-max-ziplist-size"), "128");
    assert_string_equal(set("lua-time-limit", "9000"), "9000");
    assert_string_equal(get("busy-reply-threshold"), "9000");
}

static void test_bool_and_enum(void **state)
{
    (void)state;
    assert_string_equal(set("lazyfree-lazy-eviction", "YES"), "yes");
    assert_non_null(strstr(set("lazyfree-lazy-eviction", "1"), "argument must be 'yes' or 'no'"));
    assert_string_equal(set("maxmemory-policy", "AllKeys-LRU"), "allkeys-lru");
    assert_non_null(strstr(set("appendfsync", "x"), "one of the following: everysec, always, no"));
}

static void test_special_forms(void **state)
{
    (void)state;
    assert_string_equal(set("notify-keyspace-events", "KEA"), "AKE");
    assert_string_equal(set("notify-keyspace-events", "mnKE"), "nKEm");
    assert_string_equal(set("notify-keyspace-events", "Eg$lshzxetd"), "AE");
    assert_string_equal(set("notify-keyspace-events", "tn"), "tn");
    assert_non_null(strstr(set("notify-keyspace-events", "Q"), "Invalid event class character"));
    assert_string_equal(set("client-output-buffer-limit", "normal 1mb 2mb 3"),
                        "normal 1048576 2097152 3 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
    assert_string_equal(set("client-output-buffer-limit", "replica 1 2 3"),
                        "normal 1048576 2097152 3 slave 1 2 3 pubsub 33554432 8388608 60");
    assert_non_null(strstr(set("client-output-buffer-limit", "normal 1 2"), "Wrong number of arguments"));
    assert_non_null(strstr(set("client-output-buffer-limit", "x 1 2 3"), "Invalid client class"));
    assert_string_equal(set("save", "900 1 300 10"), "900 1 300 10");
    assert_string_equal(set("save", ""), "");
    assert_non_null(strstr(set("save", "900"), "Invalid save parameters"));
    assert_string_equal(set("maxmemory-clients", "10%"), "10%");
    assert_non_null(strstr(set("maxmemory-clients", "x"), "memory or percent value"));
}

int main(void)
{
    sv_server_for_tests();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_and_ints),
        cmocka_unit_test(test_aliases_share_one_value),
        cmocka_unit_test(test_bool_and_enum),
        cmocka_unit_test(test_special_forms),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    sv_params_free();
    return r;
}
