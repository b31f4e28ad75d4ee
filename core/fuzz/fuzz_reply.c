/* fuzz_reply: the RESP2/RESP3 reply parser (resp.c) as a node's connection feeds it: a
 * read buffer that keeps the unconsumed tail, more bytes appended, the parser resumed.
 *
 * Input: byte 0 picks the limits (max_depth 1..64, max_bulk_len and max_aggregate_len
 * from small tables, so the limit checks are reached), bytes 1..3 the chunk sizes; the rest
 * is the stream of replies. Checked: the stream parsed all at once and in chunks gives the
 * same results (replies, pushes, the error and its message) and the same records (types,
 * values, payload bytes); every record is well formed: its payload inside the data vector,
 * aggregates within max_aggregate_len and max_depth (an empty one opens no level), payloads within max_bulk_len, the
 * children of each top-level reply exactly its records, booleans 0 or 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_reply: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                           \
        }                                                                      \
    } while (0)

static const uint64_t bulk_limits[4] = {0, 16, 300, (uint64_t)512 << 20};
static const uint64_t agg_limits[4] = {0, 3, 100, (uint64_t)1 << 20};

typedef struct outcome {
    int rc[256];          /* results in order, the last one MORE or BAD (or a full list) */
    int nrc;
    char errmsg[128];
    sl__records recs;
    sl__bytes data;
    size_t tops[256];     /* first record of each top-level reply */
} outcome;

static int is_aggregate(uint8_t t)
{
    return t == SL_REPLY_ARRAY || t == SL_REPLY_MAP || t == SL_REPLY_SET || t == SL_REPLY_PUSH;
}

static int has_payload(uint8_t t)
{
    return t == SL_REPLY_STRING || t == SL_REPLY_STATUS || t == SL_REPLY_ERROR || t == SL_REPLY_DOUBLE ||
           t == SL_REPLY_BIGNUM || t == SL_REPLY_VERB;
}

/* Checks the records of one top-level reply at recs[from, to): returns the records used. */
static size_t check_tree(const outcome *o, const sl__resp_limits *lim, size_t at, size_t to, int depth)
{
    CHECK(at < to);
    const sl_reply *r = &o->recs.ptr[at];
    CHECK(r->type >= SL_REPLY_STRING && r->type <= SL_REPLY_PUSH);
    if (has_payload(r->type)) {
        CHECK(r->offset <= o->data.len && r->len <= o->data.len - r->offset);
        CHECK(r->len <= lim->max_bulk_len || r->type == SL_REPLY_STATUS || r->type == SL_REPLY_ERROR ||
              r->type == SL_REPLY_DOUBLE || r->type == SL_REPLY_BIGNUM);
    }
    if (r->type == SL_REPLY_BOOL) CHECK(r->value.integer == 0 || r->value.integer == 1);
    if (!is_aggregate(r->type)) return 1;
    /* an empty aggregate opens no level (the parser pushes no frame for it) */
    CHECK(depth < lim->max_depth || r->len == 0);
    CHECK(r->len <= lim->max_aggregate_len);
    if (r->type == SL_REPLY_MAP) CHECK(r->len % 2 == 0);
    size_t used = 1;
    for (uint32_t k = 0; k < r->len; k++) used += check_tree(o, lim, at + used, to, depth + 1);
    return used;
}

/* Runs the parser over buf, fed in chunks of the sizes in cut[] (0: everything at once). */
static void run(outcome *o, const sl__resp_limits *lim, const uint8_t *buf, size_t len, const uint8_t *cut)
{
    const sl__alloc *a = &sl__default_alloc;
    sl__resp_parser p;
    sl__resp_parser_init(&p, lim);
    memset(o, 0, sizeof *o);
    size_t have = 0, pos = 0; /* bytes delivered so far; bytes consumed */
    int step = 0;
    for (;;) {
        if (cut) {
            size_t n = (size_t)(cut[step++ % 3] % 17) + 1;
            have = have + n < len ? have + n : len;
        } else {
            have = len;
        }
        /* parse while whole replies are there; the tail waits for more bytes */
        for (;;) {
            size_t consumed = 0;
            int rc = sl__resp_parse(&p, a, buf + pos, have - pos, &consumed, &o->recs, &o->data);
            CHECK(rc == SL__RESP_MORE || rc == SL__RESP_REPLY || rc == SL__RESP_PUSH || rc == SL__RESP_BAD);
            CHECK(consumed <= have - pos);
            pos += consumed;
            if (rc == SL__RESP_BAD) {
                CHECK(memchr(p.errmsg, '\0', sizeof p.errmsg) != NULL && p.errmsg[0] != '\0');
                memcpy(o->errmsg, p.errmsg, sizeof o->errmsg);
                o->rc[o->nrc++] = rc;
                return;
            }
            if (rc == SL__RESP_MORE) break;
            /* not recs.len > first: an attribute begun in an earlier call is dropped now */
            CHECK(p.top_record < o->recs.len);
            o->tops[o->nrc] = p.top_record;
            o->rc[o->nrc++] = rc;
            if (o->nrc == 255) return; /* enough: the comparison covers these */
        }
        if (have == len) {
            o->rc[o->nrc++] = SL__RESP_MORE;
            return;
        }
    }
}

static void free_outcome(outcome *o)
{
    sl__records_free(&sl__default_alloc, &o->recs);
    sl__bytes_free(&sl__default_alloc, &o->data);
}

static outcome whole, chunked;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    sl__resp_limits lim;
    lim.max_depth = (data[0] & 0x3f) + 1;
    lim.max_bulk_len = bulk_limits[(data[0] >> 6) & 3];
    lim.max_aggregate_len = agg_limits[(data[1] >> 6) & 3];
    if (lim.max_bulk_len == 0) lim.max_bulk_len = (uint64_t)512 << 20;
    if (lim.max_aggregate_len == 0) lim.max_aggregate_len = (uint64_t)1 << 30;
    const uint8_t cut[3] = {data[1], data[2], data[3]};
    const uint8_t *buf = data + 4;
    size_t len = size - 4;

    run(&whole, &lim, buf, len, NULL);
    run(&chunked, &lim, buf, len, cut);

    CHECK(whole.nrc == chunked.nrc);
    for (int i = 0; i < whole.nrc; i++) CHECK(whole.rc[i] == chunked.rc[i]);
    if (whole.rc[whole.nrc - 1] == SL__RESP_BAD) CHECK(strcmp(whole.errmsg, chunked.errmsg) == 0);
    /* records of the complete replies: the same types, values and payload bytes (offsets
     * may differ: an attribute split across calls leaves unused bytes in data) */
    int complete = whole.nrc - (whole.rc[whole.nrc - 1] == SL__RESP_REPLY ||
                                whole.rc[whole.nrc - 1] == SL__RESP_PUSH ? 0 : 1);
    for (int i = 0; i < complete; i++) {
        size_t top = whole.tops[i];
        CHECK(top == chunked.tops[i]);
        size_t used = check_tree(&whole, &lim, top, whole.recs.len, 0);
        CHECK(check_tree(&chunked, &lim, top, chunked.recs.len, 0) == used);
        for (size_t k = top; k < top + used; k++) {
            const sl_reply *x = &whole.recs.ptr[k], *y = &chunked.recs.ptr[k];
            CHECK(x->type == y->type && x->flags == y->flags && x->len == y->len);
            if (has_payload(x->type) && x->len)
                CHECK(memcmp(whole.data.ptr + x->offset, chunked.data.ptr + y->offset, x->len) == 0);
            if (x->type == SL_REPLY_INTEGER || x->type == SL_REPLY_BOOL)
                CHECK(x->value.integer == y->value.integer);
            if (x->type == SL_REPLY_DOUBLE)
                CHECK(memcmp(&x->value.dbl, &y->value.dbl, sizeof(double)) == 0);
        }
        if (i + 1 < complete) CHECK(whole.tops[i + 1] == top + used);
    }
    free_outcome(&whole);
    free_outcome(&chunked);
    return 0;
}
