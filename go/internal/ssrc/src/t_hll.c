/* t_hll: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST over hll.c, on string values (a
 * HyperLogLog is a string, as in Redis: GET/SET/APPEND see its bytes). */
#include <stdio.h>

#include "hll.h"
#include "server.h"
#include "notify.h"

static const char *ERR_NOTHLL = "-WRONGTYPE Key is not a valid HyperLogLog string value.";
static const char *ERR_CORRUPT = "-INVALIDOBJ Corrupted HLL object detected";

/* The HLL at key for writing: created (sparse) when missing (*created = 1); NULL
 * after replying WRONGTYPE or not-an-HLL. Leaves room for a sparse update. */
static sv_entry *hll_for_write(sv_ctx *c, sv_str key, int *created)
{
    *created = 0;
    int reads = sv_notify_reads;
    sv_notify_reads = 0; /* PFMERGE read its destination already ("keymiss" once, as Redis) */
    sv_entry *e = sv_db_lookup_write(c->sh, key);
    sv_notify_reads = reads;
    if (!e) {
        uint8_t buf[SV_HLL_HDR + 2];
        size_t n = sv_hll_init(buf);
        e = sv_db_add(c->sh, key, &sv_string_new(buf, n)->h);
        *created = 1;
        return e;
    }
    sv_string *s = e->val;
    if (s->h.type != SV_T_STRING) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        return NULL;
    }
    if (!sv_hll_valid((const uint8_t *)s->data, s->len)) {
        sv_add_error(&c->r, ERR_NOTHLL);
        return NULL;
    }
    return e;
}

/* Read access: 1 with the string, 0 missing, -1 after an error reply. */
static int hll_for_read(sv_ctx *c, sv_str key, sv_string **s)
{
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, key, SV_T_STRING, &e);
    if (r != 1) return r;
    *s = e->val;
    if (!sv_hll_valid((const uint8_t *)(*s)->data, (*s)->len)) {
        sv_add_error(&c->r, ERR_NOTHLL);
        return -1;
    }
    return 1;
}

static int to_dense(sv_entry *e)
{
    sv_string *s = e->val;
    sv_string *d = sv_string_new("", 0);
    d = sv_realloc(d, sizeof(sv_string) + SV_HLL_DENSE_SIZE);
    d->len = d->cap = SV_HLL_DENSE_SIZE;
    if (sv_hll_to_dense((const uint8_t *)s->data, s->len, (uint8_t *)d->data) < 0) {
        free(d);
        return -1;
    }
    free(s);
    e->val = d;
    return 0;
}

/* Sets a register (max), in whichever encoding the value has: 1 changed, 0 not, -1 corrupt. */
static int hll_set(sv_entry *e, long index, unsigned count)
{
    sv_string *s = e->val;
    if (s->data[4] == SV_HLL_DENSE) {
        uint8_t *regs = (uint8_t *)s->data + SV_HLL_HDR;
        if (sv_hll_dense_get(regs, index) >= count) return 0;
        sv_hll_dense_set(regs, index, count);
        return 1;
    }
    s = sv_string_reserve(e, s->len + 3);
    int r = sv_hll_sparse_set((uint8_t *)s->data, &s->len, index, count);
    if (r != 2) return r;
    /* promotion: a register above 32 or the sparse form past 3000 bytes */
    if (to_dense(e) < 0) return -1;
    s = e->val;
    sv_hll_dense_set((uint8_t *)s->data + SV_HLL_HDR, index, count);
    return 1;
}

static void invalidate(sv_entry *e) { ((sv_string *)e->val)->data[15] |= (char)0x80; }

void sv_cmd_pfadd(sv_ctx *c, int argc, sv_str *argv)
{
    int created;
    sv_entry *e = hll_for_write(c, argv[1], &created);
    if (!e) return;
    int updated = created;
    for (int j = 2; j < argc; j++) {
        long index;
        int count = sv_hll_patlen(argv[j].p, argv[j].len, &index);
        int r = hll_set(e, index, (unsigned)count);
        if (r < 0) {
            sv_add_error(&c->r, ERR_CORRUPT);
            return;
        }
        updated += r;
    }
    if (updated) invalidate(e);
    sv_add_int(&c->r, updated ? 1 : 0);
}

void sv_cmd_pfcount(sv_ctx *c, int argc, sv_str *argv)
{
    if (argc > 2) {
        /* the cardinality of the union, from the max of every register */
        uint8_t *max = sv_calloc(SV_HLL_REGISTERS, 1);
        for (int j = 1; j < argc; j++) {
            sv_string *s = NULL;
            int r = hll_for_read(c, argv[j], &s);
            if (r < 0) {
                free(max);
                return;
            }
            if (r == 0) continue;
            if (sv_hll_merge(max, (const uint8_t *)s->data, s->len) < 0) {
                sv_add_error(&c->r, ERR_CORRUPT);
                free(max);
                return;
            }
        }
        sv_add_int(&c->r, (long long)sv_hll_count_raw(max));
        free(max);
        return;
    }
    sv_string *s = NULL;
    int r = hll_for_read(c, argv[1], &s);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    uint8_t *h = (uint8_t *)s->data;
    uint64_t card = 0;
    if (!(h[15] & 0x80)) {
        for (int i = 7; i >= 0; i--) card = card << 8 | h[8 + i];
    } else {
        int invalid = 0;
        card = sv_hll_count(h, s->len, &invalid);
        if (invalid) {
            sv_add_error(&c->r, ERR_CORRUPT);
            return;
        }
        /* the cache is part of the value (Redis writes it too, in a read command) */
        for (int i = 0; i < 8; i++) h[8 + i] = (uint8_t)(card >> (8 * i));
        sv_signal_modified_key(c->sh, argv[1]); /* as Redis: the value changed (WATCH sees it) */
    }
    sv_add_int(&c->r, (long long)card);
}

void sv_cmd_pfmerge(sv_ctx *c, int argc, sv_str *argv)
{
    uint8_t *max = sv_calloc(SV_HLL_REGISTERS, 1);
    int use_dense = 0;
    for (int j = 1; j < argc; j++) { /* the destination is one of the inputs */
        sv_string *s = NULL;
        int r = hll_for_read(c, argv[j], &s);
        if (r < 0) goto out;
        if (r == 0) continue;
        if (s->data[4] == SV_HLL_DENSE) use_dense = 1;
        if (sv_hll_merge(max, (const uint8_t *)s->data, s->len) < 0) {
            sv_add_error(&c->r, ERR_CORRUPT);
            goto out;
        }
    }
    int created;
    sv_entry *e = hll_for_write(c, argv[1], &created);
    if (!e) goto out;
    if (use_dense && ((sv_string *)e->val)->data[4] != SV_HLL_DENSE && to_dense(e) < 0) {
        sv_add_error(&c->r, ERR_CORRUPT);
        goto out;
    }
    for (long j = 0; j < SV_HLL_REGISTERS; j++)
        if (max[j]) hll_set(e, j, max[j]);
    invalidate(e);
    sv_add_ok(&c->r);
out:
    free(max);
}

void sv_cmd_pfselftest(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    /* the register packing: random values read back, neighbours untouched */
    uint8_t *regs = sv_calloc(SV_HLL_DENSE_SIZE, 1), *ref = sv_calloc(SV_HLL_REGISTERS, 1);
    int ok = 1;
    for (int round = 0; round < 20 && ok; round++) {
        for (long i = 0; i < SV_HLL_REGISTERS; i++) {
            ref[i] = (uint8_t)(sv_rand64() & 63);
            sv_hll_dense_set(regs, i, ref[i]);
        }
        for (long i = 0; i < SV_HLL_REGISTERS && ok; i++)
            if (sv_hll_dense_get(regs, i) != ref[i]) ok = 0;
    }
    free(regs);
    free(ref);
    if (ok) sv_add_ok(&c->r);
    else sv_add_error(&c->r, "TESTFAILED Register error");
}

void sv_cmd_pfdebug(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    sv_entry *e = sv_db_lookup_write(c->sh, argv[2]);
    if (!e) {
        sv_add_error(&c->r, "The specified key does not exist");
        return;
    }
    int created;
    if (!hll_for_write(c, argv[2], &created)) return;
    int known = sv_eq(sub, "getreg") || sv_eq(sub, "decode") || sv_eq(sub, "encoding") || sv_eq(sub, "todense");
    if (known && argc != 3) {
        sv_add_errorf(&c->r, "Wrong number of arguments for the '%.*s' subcommand", (int)sub.len, sub.p);
        return;
    }
    sv_string *s = e->val;
    if (sv_eq(sub, "getreg") || sv_eq(sub, "todense")) {
        int conv = 0;
        if (s->data[4] == SV_HLL_SPARSE) {
            if (to_dense(e) < 0) {
                sv_add_error(&c->r, ERR_CORRUPT);
                return;
            }
            conv = 1;
        }
        if (sv_eq(sub, "todense")) {
            sv_add_int(&c->r, conv);
            return;
        }
        s = e->val;
        sv_add_array(&c->r, SV_HLL_REGISTERS);
        for (long j = 0; j < SV_HLL_REGISTERS; j++) sv_add_int(&c->r, sv_hll_dense_get((uint8_t *)s->data + SV_HLL_HDR, j));
    } else if (sv_eq(sub, "encoding")) {
        sv_add_status(&c->r, s->data[4] == SV_HLL_DENSE ? "dense" : "sparse");
    } else if (sv_eq(sub, "decode")) {
        if (s->data[4] != SV_HLL_SPARSE) {
            sv_add_error(&c->r, "HLL encoding is not sparse");
            return;
        }
        sv_buf out = {0};
        const uint8_t *p = (const uint8_t *)s->data + SV_HLL_HDR, *end = (const uint8_t *)s->data + s->len;
        char tmp[32];
        while (p < end) {
            int n;
            if ((*p & 0xc0) == 0) {
                n = snprintf(tmp, sizeof(tmp), "z:%d ", (*p & 0x3f) + 1);
                p++;
            } else if ((*p & 0xc0) == 0x40) {
                n = snprintf(tmp, sizeof(tmp), "Z:%d ", p + 1 < end ? (((*p & 0x3f) << 8) | p[1]) + 1 : 0);
                p += 2;
            } else {
                n = snprintf(tmp, sizeof(tmp), "v:%d,%d ", ((*p >> 2) & 0x1f) + 1, (*p & 3) + 1);
                p++;
            }
            sv_buf_append(&out, tmp, (size_t)n);
        }
        sv_add_bulk(&c->r, out.data, out.len ? out.len - 1 : 0);
        sv_buf_free(&out);
    } else {
        sv_add_errorf(&c->r, "Unknown PFDEBUG subcommand '%.*s'", (int)sub.len, sub.p);
    }
}
