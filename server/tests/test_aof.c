#define _GNU_SOURCE /* memmem */
/* Unit tests of the log's encoder and scanner (aof.c): the exact RESP of a logged
 * command; a clean image; a cut at every byte (a torn last record: dropped, never an
 * error); damage in the middle (an error at the record's offset, also when a length
 * field was made larger so the record seems to run past the end); headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>


#include "aof.h"

#define HDR "*4\r\n$12\r\nSLOTLANE.AOF\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n4\r\n" /* shard 2 of 4 */

typedef struct rec {
    int n;
    char last[64];
    int fail_at; /* the callback refuses record number fail_at (1-based), 0 never */
} rec;

static int on_record(void *priv, int argc, sv_str *argv, char *err, size_t cap)
{
    rec *r = priv;
    r->n++;
    snprintf(r->last, sizeof(r->last), "%.*s/%d", (int)argv[0].len, argv[0].p, argc);
    if (r->n == r->fail_at) {
        snprintf(err, cap, "refused");
        return -1;
    }
    return 0;
}

static int scan(const char *data, size_t len, rec *r, size_t *end, char *err)
{
    return sv_aof_scan(data, len, 2, 4, on_record, r, end, err, 256);
}

static void build(sv_buf *b, size_t *offs)
{
    sv_str set[3] = {{"SET", 3}, {"key", 3}, {"value\r\nwith*3\r\n", 15}};
    sv_str del[2] = {{"DEL", 3}, {"key", 3}};
    sv_str empty[3] = {{"SET", 3}, {"e", 1}, {"", 0}};
    sv_buf_append(b, HDR, strlen(HDR));
    offs[0] = b->len;
    sv_aof_append_command(b, 3, set);
    offs[1] = b->len;
    sv_aof_append_command(b, 2, del);
    offs[2] = b->len;
    sv_aof_append_command(b, 3, empty);
    offs[3] = b->len;
}

static void test_encode(void **state)
{
    (void)state;
    sv_buf b = {0};
    sv_str argv[3] = {{"SET", 3}, {"k", 1}, {"", 0}};
    sv_aof_append_command(&b, 3, argv);
    const char *want = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    sv_buf_free(&b);
}

static void test_clean(void **state)
{
    (void)state;
    sv_buf b = {0};
    size_t offs[4], end;
    build(&b, offs);
    rec r = {0};
    char err[256] = "";
    assert_int_equal(scan(b.data, b.len, &r, &end, err), 0);
    assert_int_equal(end, b.len);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.last, "SET/3");
    /* only a header: no record */
    rec r2 = {0};
    assert_int_equal(scan(HDR, strlen(HDR), &r2, &end, err), 0);
    assert_int_equal(r2.n, 0);
    /* an empty file is a torn header: nothing kept */
    assert_int_equal(scan("", 0, &r2, &end, err), 0);
    assert_int_equal(end, 0);
    sv_buf_free(&b);
}

static void test_every_cut_is_a_torn_tail(void **state)
{
    (void)state;
    sv_buf b = {0};
    size_t offs[4], end;
    build(&b, offs);
    for (size_t cut = 0; cut <= b.len; cut++) {
        rec r = {0};
        char err[256] = "";
        int rc = scan(b.data, cut, &r, &end, err);
        assert_int_equal(rc, 0);
        /* kept: every record that ends at or before the cut */
        size_t want = cut < offs[0] ? 0 : offs[0];
        int n = 0;
        for (int i = 1; i < 4; i++)
            if (offs[i] <= cut) {
                want = offs[i];
                n = i;
            }
        assert_int_equal(end, want);
        assert_int_equal(r.n, n);
    }
    sv_buf_free(&b);
}

static void test_damage_in_the_middle(void **state)
{
    (void)state;
    sv_buf b = {0};
    size_t offs[4], end;
    build(&b, offs);
    char err[256];
    /* garbage where a record starts */
    char *bad = sv_memdup(b.data, b.len);
    memcpy(bad + offs[1], "XX", 2);
    rec r = {0};
    assert_int_equal(scan(bad, b.len, &r, &end, err), -1);
    assert_int_equal(end, offs[1]);
    assert_int_equal(r.n, 1);
    assert_non_null(strstr(err, "expected '*'"));
    /* a bulk length made larger: the record seems to need more bytes, but a complete
     * record follows it, so it is damage and not a torn tail */
    memcpy(bad, b.data, b.len);
    char *len15 = memmem(bad + offs[0], offs[1] - offs[0], "$15\r\n", 5);
    assert_non_null(len15);
    len15[1] = '9'; /* the value's "$15" -> "$95": past the end of the image */
    r.n = 0;
    int rc = scan(bad, b.len, &r, &end, err);
    assert_int_equal(rc, -1);
    assert_int_equal(end, offs[0]);
    assert_non_null(strstr(err, "followed by more records"));
    /* the same with nothing after it is a torn tail */
    r.n = 0;
    assert_int_equal(scan(bad, offs[1], &r, &end, err), 0);
    assert_int_equal(end, offs[0]);
    /* a length made larger inside the file: the parser's error at that record */
    memcpy(bad, b.data, b.len);
    bad[offs[1] + 5] = '9'; /* "*2\r\n$3\r\nDEL" -> "$9" */
    r.n = 0;
    assert_int_equal(scan(bad, b.len, &r, &end, err), -1);
    assert_int_equal(end, offs[1]);
    /* a count made wrong: the parser's own error */
    memcpy(bad, b.data, b.len);
    bad[offs[1] + 1] = 'x';
    r.n = 0;
    assert_int_equal(scan(bad, b.len, &r, &end, err), -1);
    assert_int_equal(end, offs[1]);
    /* a record the command layer refuses */
    rec f = {0};
    f.fail_at = 2;
    assert_int_equal(scan(b.data, b.len, &f, &end, err), -1);
    assert_int_equal(end, offs[1]);
    assert_string_equal(err, "refused");
    free(bad);
    sv_buf_free(&b);
}

static void test_headers(void **state)
{
    (void)state;
    size_t end;
    char err[256];
    rec r = {0};
    const char *other = "*4\r\n$12\r\nSLOTLANE.AOF\r\n$1\r\n1\r\n$1\r\n1\r\n$1\r\n4\r\n";
    assert_int_equal(scan(other, strlen(other), &r, &end, err), -1);
    assert_non_null(strstr(err, "header says shard 1 of 4"));
    const char *v2 = "*4\r\n$12\r\nSLOTLANE.AOF\r\n$1\r\n2\r\n$1\r\n2\r\n$1\r\n4\r\n";
    assert_int_equal(scan(v2, strlen(v2), &r, &end, err), -1);
    assert_non_null(strstr(err, "version 2"));
    const char *none = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
    assert_int_equal(scan(none, strlen(none), &r, &end, err), -1);
    assert_int_equal(end, 0);
    assert_non_null(strstr(err, "no SLOTLANE.AOF header"));
    const char *inl = HDR "SET k v\r\n";
    assert_int_equal(scan(inl, strlen(inl), &r, &end, err), -1);
    assert_int_equal(end, strlen(HDR));
}

/* A transaction's unit: MULTI, records, EXEC. Cut anywhere inside it, the scan ends
 * where the unit starts (dropped whole); cut after it, the unit is all there. */
static void test_units(void **state)
{
    (void)state;
    sv_buf b = {0};
    sv_str set[3] = {{"SET", 3}, {"k", 1}, {"v", 1}};
    sv_str incr[2] = {{"INCR", 4}, {"n", 1}};
    sv_str multi[1] = {{"MULTI", 5}}, exec[1] = {{"EXEC", 4}};
    sv_buf_append(&b, HDR, strlen(HDR));
    sv_aof_append_command(&b, 3, set);
    size_t unit = b.len;
    sv_aof_append_command(&b, 1, multi);
    sv_aof_append_command(&b, 3, set);
    sv_aof_append_command(&b, 2, incr);
    sv_aof_append_command(&b, 1, exec);
    size_t after = b.len;
    sv_aof_append_command(&b, 2, incr);
    for (size_t cut = unit; cut <= b.len; cut++) {
        rec r = {0};
        size_t end;
        char err[256] = "";
        assert_int_equal(scan(b.data, cut, &r, &end, err), 0);
        if (cut < after) assert_int_equal(end, unit);
        else assert_true(end == after || end == b.len);
    }
    /* a MULTI inside a unit, an EXEC without one: damage, at the record */
    sv_buf bad = {0};
    sv_buf_append(&bad, HDR, strlen(HDR));
    sv_aof_append_command(&bad, 1, multi);
    size_t second = bad.len;
    sv_aof_append_command(&bad, 1, multi);
    sv_aof_append_command(&bad, 1, exec);
    rec r = {0};
    size_t end;
    char err[256] = "";
    assert_int_equal(scan(bad.data, bad.len, &r, &end, err), -1);
    assert_int_equal(end, second);
    assert_non_null(strstr(err, "MULTI"));
    bad.len = 0;
    sv_buf_append(&bad, HDR, strlen(HDR));
    second = bad.len;
    sv_aof_append_command(&bad, 1, exec);
    assert_int_equal(scan(bad.data, bad.len, &r, &end, err), -1);
    assert_int_equal(end, second);
    sv_buf_free(&bad);
    sv_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_clean),
        cmocka_unit_test(test_every_cut_is_a_torn_tail),
        cmocka_unit_test(test_damage_in_the_middle),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
