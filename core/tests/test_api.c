/* Public API checks that need no server: version, error strings, options (version, size,
 * validation), NULL handling, URL errors surfaced by sl_client_new, sl_key_slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "slotlane.h"

static void test_version_matches_file(void **state)
{
    (void)state;
    char path[1024], buf[64] = {0};
    snprintf(path, sizeof path, "%s/VERSION", SL_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    assert_string_equal(sl_version(), buf);
    char macro[64];
    snprintf(macro, sizeof macro, "%d.%d.%d", SL_VERSION_MAJOR, SL_VERSION_MINOR, SL_VERSION_PATCH);
    assert_string_equal(macro, buf);
}

static void test_strerror_every_code(void **state)
{
    (void)state;
    for (int code = SL_ESTATE; code <= SL_OK; code++) {
        const char *s = sl_strerror(code);
        assert_non_null(s);
        assert_string_not_equal(s, "unknown error");
    }
    assert_string_equal(sl_strerror(-1000), "unknown error");
}

static void test_reply_record_layout(void **state)
{
    (void)state;
    /* The layout every binding reads: 24 bytes, these offsets. */
    assert_int_equal(sizeof(sl_reply), 24);
    assert_int_equal(offsetof(sl_reply, type), 0);
    assert_int_equal(offsetof(sl_reply, flags), 1);
    assert_int_equal(offsetof(sl_reply, len), 4);
    assert_int_equal(offsetof(sl_reply, value), 8);
    assert_int_equal(offsetof(sl_reply, offset), 16);
    assert_int_equal(sizeof(sl_sizes), 32);
}

static void test_options_init(void **state)
{
    (void)state;
    sl_client_options a = SL_CLIENT_OPTIONS_INIT, b;
    memset(&b, 0xff, sizeof b);
    assert_int_equal(sl_client_options_init(&b, SL_CLIENT_OPTIONS_VERSION), 0);
    /* Field by field: padding bytes are not part of the contract. */
    assert_int_equal(a.version, b.version);
    assert_int_equal(a.size, b.size);
    assert_null(b.url);
    assert_int_equal(a.mode, b.mode);
    assert_null(b.username);
    assert_null(b.password);
    assert_int_equal(a.db, b.db);
    assert_int_equal(a.resp_version, b.resp_version);
    assert_int_equal(a.connect_timeout_ms, b.connect_timeout_ms);
    assert_int_equal(a.command_timeout_ms, b.command_timeout_ms);
    assert_int_equal(a.max_redirects, b.max_redirects);
    assert_int_equal(a.refresh_interval_ms, b.refresh_interval_ms);
    assert_int_equal(a.reconnect_min_ms, b.reconnect_min_ms);
    assert_int_equal(a.reconnect_max_ms, b.reconnect_max_ms);
    assert_null(b.allocator);
    assert_int_equal(a.max_bulk_len, b.max_bulk_len);
    assert_int_equal(a.max_aggregate_len, b.max_aggregate_len);
    assert_int_equal(a.max_depth, b.max_depth);
    assert_int_equal(a.size, sizeof(sl_client_options));
    assert_int_equal(a.max_redirects, 5);
    assert_int_equal(sl_client_options_init(&b, 0), SL_EINVAL);
    assert_int_equal(sl_client_options_init(&b, SL_CLIENT_OPTIONS_VERSION + 1), SL_EINVAL);
    assert_int_equal(sl_client_options_init(NULL, 1), SL_EINVAL);
}

static void expect_new_fails(const sl_client_options *o, int code, const char *needle)
{
    sl_client *c = (sl_client *)0x1;
    char err[256] = "";
    assert_int_equal(sl_client_new(&c, o, err, sizeof err), code);
    assert_null(c);
    if (!strstr(err, needle)) fail_msg("message \"%s\" lacks \"%s\"", err, needle);
}

static void test_options_rejected(void **state)
{
    (void)state;
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.version = 99;
    expect_new_fails(&o, SL_EINVAL, "version");
    o = (sl_client_options)SL_CLIENT_OPTIONS_INIT;
    o.size = 8; /* an older, smaller struct than any version had: refused before any copy */
    expect_new_fails(&o, SL_EINVAL, "size");
    o = (sl_client_options)SL_CLIENT_OPTIONS_INIT;
    o.resp_version = 4;
    expect_new_fails(&o, SL_EINVAL, "resp_version");
    o = (sl_client_options)SL_CLIENT_OPTIONS_INIT;
    o.mode = (sl_mode)7;
    expect_new_fails(&o, SL_EINVAL, "mode");
    o = (sl_client_options)SL_CLIENT_OPTIONS_INIT;
    o.max_depth = 0;
    expect_new_fails(&o, SL_EINVAL, "max_depth");
    o = (sl_client_options)SL_CLIENT_OPTIONS_INIT;
    o.url = "redis://127.0.0.1:notaport";
    expect_new_fails(&o, SL_EINVAL, "port");
    o.url = "127.0.0.1:1"; /* nothing listens on port 1 */
    o.mode = SL_MODE_PLAIN;
    o.connect_timeout_ms = 500;
    expect_new_fails(&o, SL_EIO, "127.0.0.1:1");
    assert_int_equal(sl_client_new(NULL, &o, NULL, 0), SL_EINVAL);
}

/* An allocator is checked like the options: version and size before its functions. */
static void test_allocator_rejected(void **state)
{
    (void)state;
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    sl_allocator al = SL_ALLOCATOR_INIT;
    o.allocator = &al;
    expect_new_fails(&o, SL_EINVAL, "malloc_fn"); /* the right version, no functions */
    al.version = 0; /* a caller of the layout without version and size */
    expect_new_fails(&o, SL_EINVAL, "allocator version 0");
    al = (sl_allocator)SL_ALLOCATOR_INIT;
    al.version = SL_ALLOCATOR_VERSION + 1;
    expect_new_fails(&o, SL_EINVAL, "allocator version 2");
    al = (sl_allocator)SL_ALLOCATOR_INIT;
    al.size = (unsigned)offsetof(sl_allocator, ctx); /* ends before ctx */
    expect_new_fails(&o, SL_EINVAL, "SL_ALLOCATOR_INIT");
}

static void test_null_handles(void **state)
{
    (void)state;
    sl_batch *b = (sl_batch *)0x1;
    assert_int_equal(sl_batch_new(NULL, &b), SL_EINVAL);
    assert_null(b);
    assert_int_equal(sl_batch_append(NULL, NULL, "x", 1, 1), SL_EINVAL);
    assert_int_equal(sl_batch_append_argv(NULL, NULL, 1, (const char *const[]){"PING"}, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_exec(NULL, 0, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_run(NULL, "x", 1, 1, 0, NULL, 0, NULL, 0, NULL), SL_EINVAL);
    assert_int_equal(sl_batch_count(NULL), 0);
    size_t n = 7;
    assert_null(sl_batch_replies(NULL, &n, NULL, NULL));
    assert_int_equal(n, 0);
    sl_sizes s;
    assert_int_equal(sl_batch_copy_out(NULL, NULL, 0, NULL, 0, &s), SL_EINVAL);
    sl_batch_free(NULL);
    sl_batch_reset(NULL);
    sl_client_free(NULL);
    sl_client_cancel(NULL);
    assert_int_equal(sl_client_refresh(NULL), SL_EINVAL);
    assert_int_equal(sl_client_mode(NULL), SL_EINVAL);
    assert_non_null(sl_client_errmsg(NULL));
    sl_stats st;
    memset(&st, 0, sizeof st);
    st.version = SL_STATS_VERSION;
    st.size = (unsigned)sizeof st;
    assert_int_equal(sl_client_stats(NULL, &st), SL_EINVAL);
    const sl_reply *r = (const sl_reply *)0x1;
    const uint8_t *d = (const uint8_t *)0x1;
    assert_int_equal(sl_client_command(NULL, NULL, 1, (const char *const[]){"PING"}, NULL, &r, &d), SL_EINVAL);
    assert_null(r);
    assert_null(d);
}

static void test_key_slot(void **state)
{
    (void)state;
    assert_int_equal(sl_key_slot("123456789", 9), 12739);
    assert_int_equal(sl_key_slot("{user1000}.following", 20), sl_key_slot("user1000", 8));
    assert_int_equal(sl_key_slot("", 0), 0);
    assert_int_equal(sl_key_slot(NULL, 0), 0);
    assert_int_equal(sl_key_slot(NULL, 3), SL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_matches_file),
        cmocka_unit_test(test_strerror_every_code),
        cmocka_unit_test(test_reply_record_layout),
        cmocka_unit_test(test_options_init),
        cmocka_unit_test(test_options_rejected),
        cmocka_unit_test(test_allocator_rejected),
        cmocka_unit_test(test_null_handles),
        cmocka_unit_test(test_key_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
