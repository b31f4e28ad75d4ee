/* test_url: every address form of sl_client_options.url and every malformed one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "slotlane.h"
#include "url.h"

static sl__url u;
static char err[128];

static void ok(const char *s)
{
    int rc = sl__url_parse(s, &u, err);
    if (rc != 0) print_error("\"%s\": %d %s\n", s, rc, err);
    assert_int_equal(rc, 0);
}

/* The input must fail with code and a message containing want. */
static void fails(const char *s, int code, const char *want)
{
    memset(err, 'x', sizeof err);
    int rc = sl__url_parse(s, &u, err);
    if (rc != code || !strstr(err, want)) print_error("\"%s\": %d \"%s\" (want %d \"%s\")\n", s, rc, err, code, want);
    assert_int_equal(rc, code);
    assert_true(strlen(err) <= 127);
    assert_non_null(strstr(err, want));
    /* Nothing half-parsed is left behind. */
    assert_int_equal(u.nseeds, 0);
    assert_int_equal(u.password[0], 0);
}

static void test_forms(void **state)
{
    (void)state;
    ok("redis://user:pass@example.com:7000/3");
    assert_int_equal(u.nseeds, 1);
    assert_string_equal(u.seeds[0].host, "example.com");
    assert_int_equal(u.seeds[0].port, 7000);
    assert_string_equal(u.username, "user");
    assert_string_equal(u.password, "pass");
    assert_int_equal(u.has_password, 1);
    assert_int_equal(u.db, 3);

    ok("host:6380");
    assert_string_equal(u.seeds[0].host, "host");
    assert_int_equal(u.seeds[0].port, 6380);
    assert_string_equal(u.username, "");
    assert_int_equal(u.has_password, 0);
    assert_int_equal(u.db, -1);

    ok("localhost");
    assert_string_equal(u.seeds[0].host, "localhost");
    assert_int_equal(u.seeds[0].port, 6379);

    ok("[::1]:7001");
    assert_string_equal(u.seeds[0].host, "::1");
    assert_int_equal(u.seeds[0].port, 7001);
    ok("[fe80::1%eth0]");
    assert_string_equal(u.seeds[0].host, "fe80::1%eth0");
    assert_int_equal(u.seeds[0].port, 6379);
    ok("redis://[2001:db8::2]:6390/0");
    assert_string_equal(u.seeds[0].host, "2001:db8::2");
    assert_int_equal(u.db, 0);

    ok("REDIS://127.0.0.1");
    assert_string_equal(u.seeds[0].host, "127.0.0.1");
    assert_int_equal(u.seeds[0].port, 6379);
    ok("redis://h/");
    assert_int_equal(u.db, -1);
    ok("redis://:secret@h");
    assert_string_equal(u.username, "");
    assert_string_equal(u.password, "secret");
    assert_int_equal(u.has_password, 1);
    ok("redis://alice@h");
    assert_string_equal(u.username, "alice");
    assert_int_equal(u.has_password, 0);
    ok("redis://:@h");
    assert_int_equal(u.has_password, 1);
    assert_string_equal(u.password, "");
    ok("redis://h:1");
    assert_int_equal(u.seeds[0].port, 1);
    ok("redis://h:65535");
    assert_int_equal(u.seeds[0].port, 65535);
}

static void test_percent_decoding(void **state)
{
    (void)state;
    ok("redis://us%40er:p%3Aa%2Fs%25s%20w@h:1");
    assert_string_equal(u.username, "us@er");
    assert_string_equal(u.password, "p:a/s%s w");
    /* The userinfo ends at the last '@'. */
    ok("redis://u:p@ss@h:2");
    assert_string_equal(u.password, "p@ss");
    assert_string_equal(u.seeds[0].host, "h");
    ok("redis://u:p?a#b@h:1");
    assert_string_equal(u.password, "p?a#b");
    ok("redis://u:%c3%a9@h");
    assert_string_equal(u.password, "\xc3\xa9");
}

static void test_seed_lists(void **state)
{
    (void)state;
    ok("h1:7000,h2:7001, [::1]:7002 ,h4");
    assert_int_equal(u.nseeds, 4);
    assert_string_equal(u.seeds[1].host, "h2");
    assert_int_equal(u.seeds[1].port, 7001);
    assert_string_equal(u.seeds[2].host, "::1");
    assert_int_equal(u.seeds[3].port, 6379);
    ok("redis://u:p@a:1,redis://u:p@b:2,c:3");
    assert_int_equal(u.nseeds, 3);
    assert_string_equal(u.password, "p");

    char list[1024] = "";
    for (int i = 0; i < SL__MAX_SEEDS; i++) sprintf(list + strlen(list), "%sh%d:%d", i ? "," : "", i, 7000 + i);
    ok(list);
    assert_int_equal(u.nseeds, SL__MAX_SEEDS);
    assert_int_equal(u.seeds[SL__MAX_SEEDS - 1].port, 7000 + SL__MAX_SEEDS - 1);
    strcat(list, ",one-more:1");
    fails(list, SL_EINVAL, "more than 16 seed");
}

static void test_malformed(void **state)
{
    (void)state;
    ok("rediss://u:p@h:6380/2"); /* TLS: whether this build has it is the client's question */
    assert_int_equal(u.tls, 1);
    assert_string_equal(u.seeds[0].host, "h");
    assert_int_equal(u.seeds[0].port, 6380);
    assert_int_equal(u.db, 2);
    ok("rediss://h1:1,rediss://h2:2");
    assert_int_equal(u.tls, 1);
    ok("redis://h1:1");
    assert_int_equal(u.tls, 0);
    fails("h1:1,rediss://h2:2", SL_EINVAL, "mixed");
    fails("rediss://h1:1,redis://h2:2", SL_EINVAL, "mixed");
    fails(NULL, SL_EINVAL, "no address");
    fails("", SL_EINVAL, "empty address");
    fails("h1:1,,h2:2", SL_EINVAL, "empty address");
    fails("h1:1,", SL_EINVAL, "empty address");
    fails("http://h", SL_EINVAL, "unsupported scheme");
    fails("redis://", SL_EINVAL, "empty host");
    fails("redis://:7000", SL_EINVAL, "empty host");
    fails(":7000", SL_EINVAL, "empty host");
    fails("redis://u:p@", SL_EINVAL, "empty host");
    fails("[]:1", SL_EINVAL, "empty host");
    fails("h:", SL_EINVAL, "missing port");
    fails("h:abc", SL_EINVAL, "bad port");
    fails("h:-1", SL_EINVAL, "bad port");
    fails("h:+1", SL_EINVAL, "bad port");
    fails("h:0", SL_EINVAL, "out of range");
    fails("h:65536", SL_EINVAL, "out of range");
    fails("h:99999999999999999999", SL_EINVAL, "out of range");
    fails("::1", SL_EINVAL, "need brackets");
    fails("::1:6379", SL_EINVAL, "need brackets");
    fails("[::1", SL_EINVAL, "without ']'");
    fails("[::1]x", SL_EINVAL, "after ']'");
    fails("[abc]:1", SL_EINVAL, "no IPv6");
    fails("h o:1", SL_EINVAL, "bad character");
    fails("redis://h:1/x", SL_EINVAL, "bad db");
    fails("redis://h:1/-1", SL_EINVAL, "bad db");
    fails("redis://h:1/99999999999", SL_EINVAL, "db number too large");
    fails("redis://h:1/1?timeout=3", SL_EINVAL, "query");
    fails("redis://u:p@h:1?x", SL_EINVAL, "query");
    fails("h:1/2", SL_EINVAL, "redis:// form");
    fails("u:p@h:1", SL_EINVAL, "redis:// form");
    fails("redis://u:p%4@h", SL_EINVAL, "%-escape");
    fails("redis://u:p%zz@h", SL_EINVAL, "%-escape");
    fails("redis://u:p%00@h", SL_EINVAL, "%00");
    fails("redis://a:1/1,redis://b:2/2", SL_EINVAL, "db differs");
    fails("redis://u:p@a:1,redis://u:q@b:2", SL_EINVAL, "credentials differ");

    /* Overlong parts. */
    char s[2048];
    memset(s, 'a', sizeof s);
    memcpy(s, "redis://", 8);
    s[8 + SL__HOST_MAX] = 0;
    fails(s, SL_EINVAL, "host longer");
    s[8 + SL__HOST_MAX - 1] = 0;
    ok(s);
    assert_int_equal(strlen(u.seeds[0].host), SL__HOST_MAX - 1);
    snprintf(s, sizeof s, "redis://%0300d:p@h", 0);
    fails(s, SL_EINVAL, "username longer");
    snprintf(s, sizeof s, "redis://u:%0256d@h", 0);
    fails(s, SL_EINVAL, "password longer");
    snprintf(s, sizeof s, "redis://u:%0255d@h", 0);
    ok(s);
    assert_int_equal(strlen(u.password), 255);
    /* %-escapes count once each against the limit. */
    char *w = s + sprintf(s, "redis://u:");
    for (int i = 0; i < 255; i++) w += sprintf(w, "%%41");
    strcpy(w, "@h");
    ok(s);
    assert_int_equal(strlen(u.password), 255);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_percent_decoding),
        cmocka_unit_test(test_seed_lists),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
