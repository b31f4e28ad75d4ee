/* test_headers: every public header compiles alone, as C11 -pedantic and as C++, with
 * -Wall -Wextra -Werror, and its initialisers (options, route, allocator) are usable: slotlane.h and
 * slotlane_uv.h. (core/CMakeLists.txt builds header_c/header_cxx for slotlane.h at
 * configure time; this covers both headers with the compilers a user would run.)
 * slotlane_uv.h includes <uv.h>, which itself needs POSIX types (pthread_rwlock_t) that
 * strict -std=c11 hides: its C run defines _POSIX_C_SOURCE, as any libuv user must. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SL_SOURCE_DIR
#error "SL_SOURCE_DIR (the checkout) is defined by core/CMakeLists.txt for every test"
#endif

/* Writes a file that includes header and uses SL_CLIENT_OPTIONS_INIT, SL_ROUTE_INIT and
 * SL_ALLOCATOR_INIT, compiles it with compiler and flags, and returns the compiler's exit status (its messages go to stderr). */
static int compile(const char *header, const char *compiler, const char *ext, const char *flags)
{
    char dir[] = "/tmp/sl-header-test.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char src[128], cmd[1024];
    snprintf(src, sizeof src, "%s/use.%s", dir, ext);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fprintf(f, "#include \"%s\"\n"
               "int main(void) {\n"
               "    sl_client_options o = SL_CLIENT_OPTIONS_INIT;\n"
               "    sl_route r = SL_ROUTE_INIT;\n"
               "    sl_allocator a = SL_ALLOCATOR_INIT;\n"
               "    return (int)(o.version + r.version + a.version) - 3 + (int)(r.size + a.size != sizeof r + sizeof a);\n"
               "}\n",
            header);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s -Wall -Wextra -Werror -fsyntax-only -I'%s/core/include' '%s'", compiler, flags,
             SL_SOURCE_DIR, src);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "failed (%d): %s\n", rc, cmd);
    unlink(src);
    rmdir(dir);
    return rc;
}

static void test_slotlane_h_c11(void **state)
{
    (void)state;
    assert_int_equal(compile("slotlane.h", "cc", "c", "-std=c11 -pedantic"), 0);
}

static void test_slotlane_h_cxx(void **state)
{
    (void)state;
    assert_int_equal(compile("slotlane.h", "c++", "cpp", "-std=c++11 -pedantic"), 0);
}

static void test_slotlane_uv_h_c11(void **state)
{
    (void)state;
    assert_int_equal(compile("slotlane_uv.h", "cc", "c", "-std=c11 -pedantic -D_POSIX_C_SOURCE=200809L"), 0);
}

static void test_slotlane_uv_h_cxx(void **state)
{
    (void)state;
    assert_int_equal(compile("slotlane_uv.h", "c++", "cpp", "-std=c++11 -pedantic"), 0);
}

/* The check can fail: a header with a C++-only construct is refused by the C11 run. */
static void test_a_bad_header_fails(void **state)
{
    (void)state;
    assert_int_not_equal(compile("slotlane.h\"\nclass not_c {}; //", "cc", "c", "-std=c11 -pedantic 2>/dev/null"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slotlane_h_c11),    cmocka_unit_test(test_slotlane_h_cxx),
        cmocka_unit_test(test_slotlane_uv_h_c11), cmocka_unit_test(test_slotlane_uv_h_cxx),
        cmocka_unit_test(test_a_bad_header_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
