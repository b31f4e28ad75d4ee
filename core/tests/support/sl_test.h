/* sl_test.h: the helpers the core's cmocka suites share — a client for a fake (or real)
 * node, the client's counters, appending argv commands, and checks of one command's reply
 * record. Include after <cmocka.h> (and its prerequisites), and after fake_server.h for
 * key_on.
 *
 * Header-only (static inline): each test program gets its own copy and an unused helper
 * costs nothing, so the tests link exactly as before. A test that wants another deadline
 * defines EXEC_TIMEOUT_MS before including this. */
#ifndef SL_TEST_H
#define SL_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "slotlane.h"

#ifndef EXEC_TIMEOUT_MS
#define EXEC_TIMEOUT_MS 3000 /* generous: a hung engine fails the test instead of hanging */
#endif

/* A client of url in mode (connect timeout 1 s, command timeout EXEC_TIMEOUT_MS). With
 * rc_out the result of sl_client_new goes there (and NULL may come back); without, any
 * failure fails the test. */
static inline sl_client *new_client_opts(const char *url, sl_mode mode, int *rc_out)
{
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = url;
    o.mode = mode;
    o.connect_timeout_ms = 1000;
    o.command_timeout_ms = EXEC_TIMEOUT_MS;
    sl_client *c = NULL;
    char err[256] = "";
    int rc = sl_client_new(&c, &o, err, sizeof err);
    if (rc_out) {
        *rc_out = rc;
        return c;
    }
    if (rc != 0) fprintf(stderr, "sl_client_new(%s): %d %s\n", url, rc, err);
    assert_int_equal(rc, 0);
    assert_non_null(c);
    return c;
}

static inline sl_client *new_client_url(const char *url, sl_mode mode)
{
    return new_client_opts(url, mode, NULL);
}

/* A client of 127.0.0.1:port. */
static inline sl_client *new_client(int port, sl_mode mode)
{
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", port);
    return new_client_opts(url, mode, NULL);
}

static inline sl_stats stats_of(sl_client *c)
{
    sl_stats s;
    memset(&s, 0, sizeof s);
    s.version = SL_STATS_VERSION;
    s.size = (unsigned)sizeof s;
    assert_int_equal(sl_client_stats(c, &s), 0);
    return s;
}

static inline void append2(sl_batch *b, const char *a0, const char *a1)
{
    const char *argv[2] = {a0, a1};
    assert_int_equal(sl_batch_append_argv(b, NULL, 2, argv, NULL), 0);
}

static inline void append3(sl_batch *b, const char *a0, const char *a1, const char *a2)
{
    const char *argv[3] = {a0, a1, a2};
    assert_int_equal(sl_batch_append_argv(b, NULL, 3, argv, NULL), 0);
}

/* The number of records of the reply at r[i] and its children (depth first). */
static inline size_t reply_subtree(const sl_reply *r, size_t n, size_t i)
{
    size_t k = 1;
    if (i < n && (r[i].type == SL_REPLY_ARRAY || r[i].type == SL_REPLY_MAP ||
                  r[i].type == SL_REPLY_SET || r[i].type == SL_REPLY_PUSH)) {
        size_t j = i + 1;
        for (uint32_t c = 0; c < r[i].len && j < n; c++) {
            size_t s = reply_subtree(r, n, j);
            j += s;
            k += s;
        }
    }
    return k;
}

/* The top-level record of command idx of the last execution. */
static inline const sl_reply *reply_at(sl_batch *b, size_t idx, const uint8_t **data)
{
    size_t n = 0;
    const sl_reply *r = sl_batch_replies(b, &n, data, NULL);
    assert_non_null(r);
    size_t i = 0;
    for (size_t k = 0; k < idx; k++) {
        assert_true(i < n);
        i += reply_subtree(r, n, i);
    }
    assert_true(i < n);
    return &r[i];
}

static inline void want_str(sl_batch *b, size_t idx, const char *want)
{
    const uint8_t *data;
    const sl_reply *r = reply_at(b, idx, &data);
    if (r->type != SL_REPLY_STRING || r->len != strlen(want) ||
        memcmp(data + r->offset, want, r->len) != 0) {
        fprintf(stderr, "reply %zu: type %d flags %d \"%.*s\", want string \"%s\"\n", idx, r->type,
                r->flags, (int)r->len, (const char *)data + r->offset, want);
        fail();
    }
}

static inline void want_nil(sl_batch *b, size_t idx)
{
    const uint8_t *data;
    const sl_reply *r = reply_at(b, idx, &data);
    if (r->type != SL_REPLY_NIL) {
        fprintf(stderr, "reply %zu: type %d \"%.*s\", want nil\n", idx, r->type, (int)r->len,
                (const char *)data + r->offset);
        fail();
    }
}

static inline int is_error_kind(sl_batch *b, size_t idx, sl_err_kind kind)
{
    const uint8_t *data;
    const sl_reply *r = reply_at(b, idx, &data);
    return r->type == SL_REPLY_ERROR && r->flags == kind;
}

/* An error record of kind whose message starts with prefix (any message when NULL). */
static inline void want_err_prefix(sl_batch *b, size_t idx, sl_err_kind kind, const char *prefix)
{
    const uint8_t *data;
    const sl_reply *r = reply_at(b, idx, &data);
    if (r->type != SL_REPLY_ERROR || r->flags != kind ||
        (prefix && (r->len < strlen(prefix) || memcmp(data + r->offset, prefix, strlen(prefix)) != 0))) {
        fprintf(stderr, "reply %zu: type %d flags %d \"%.*s\", want error kind %d \"%s...\"\n", idx,
                r->type, r->flags, (int)r->len, (const char *)data + r->offset, kind,
                prefix ? prefix : "");
        fail();
    }
}

/* An error record of kind, with a message (errors carry one). */
static inline void want_err(sl_batch *b, size_t idx, sl_err_kind kind)
{
    want_err_prefix(b, idx, kind, NULL);
    const uint8_t *data;
    assert_true(reply_at(b, idx, &data)->len > 0);
}

#ifdef SL_FAKE_SERVER_H
/* The next cmd (key: any when NULL) on node n is held (FS_STALL) until fs_release(n). */
static inline void stall_once(fs_node *n, const char *cmd, const char *key)
{
    fs_rule r;
    memset(&r, 0, sizeof r);
    r.cmd = cmd;
    r.key = key;
    r.times = 1;
    r.action = FS_STALL;
    fs_add_rule(n, &r);
}

/* A key "<prefix>N" owned by node i of fake cluster c's even split; returns its slot. */
static inline int key_on(const fs_cluster *c, int i, const char *prefix, char *buf, size_t cap)
{
    int lo = (int)((long)16384 * i / c->n), hi = (int)((long)16384 * (i + 1) / c->n) - 1;
    return fs_find_key(prefix, lo, hi, buf, cap);
}
#endif

#endif
