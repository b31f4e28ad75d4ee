/* t_lcs: LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN], Redis 7.0's reply
 * (the same dynamic-programming table and walk back from the end, so the same
 * string and the same ranges are chosen among equal-length answers). */
#include <stdint.h>

#include "server.h"

typedef struct lcs_range {
    uint32_t a0, a1, b0, b1;
} lcs_range;

void sv_cmd_lcs(sv_ctx *c, int argc, sv_str *argv)
{
    sv_entry *ea = sv_db_lookup(c->sh, argv[1]), *eb = sv_db_lookup(c->sh, argv[2]);
    if ((ea && ((sv_obj *)ea->val)->type != SV_T_STRING) || (eb && ((sv_obj *)eb->val)->type != SV_T_STRING)) {
        sv_add_error(&c->r, "The specified keys must contain string values");
        return;
    }
    const char *a = ea ? ((sv_string *)ea->val)->data : "", *b = eb ? ((sv_string *)eb->val)->data : "";
    size_t alen0 = ea ? ((sv_string *)ea->val)->len : 0, blen0 = eb ? ((sv_string *)eb->val)->len : 0;
    int getlen = 0, getidx = 0, withmatchlen = 0;
    long long minmatchlen = 0;
    for (int j = 3; j < argc; j++) {
        if (sv_eq(argv[j], "idx")) getidx = 1;
        else if (sv_eq(argv[j], "len")) getlen = 1;
        else if (sv_eq(argv[j], "withmatchlen")) withmatchlen = 1;
        else if (sv_eq(argv[j], "minmatchlen") && j + 1 < argc) {
            if (!sv_get_ll(c, argv[j + 1], &minmatchlen)) return;
            if (minmatchlen < 0) minmatchlen = 0;
            j++;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            return;
        }
    }
    if (getlen && getidx) {
        sv_add_error(&c->r, "If you want both the length and indexes, please just use IDX.");
        return;
    }
    if (alen0 >= UINT32_MAX - 1 || blen0 >= UINT32_MAX - 1) {
        sv_add_error(&c->r, "String too long for LCS");
        return;
    }
    uint32_t alen = (uint32_t)alen0, blen = (uint32_t)blen0;
    unsigned long long cells = (unsigned long long)(alen + 1) * (blen + 1);
    if (cells * sizeof(uint32_t) > (unsigned long long)SV_BULK_MAX) {
        sv_add_error(&c->r, "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
        return;
    }
    uint32_t *t = sv_malloc((size_t)cells * sizeof(uint32_t));
#define T(i, j) t[(size_t)(j) + (size_t)(i) * (blen + 1)]
    for (uint32_t i = 0; i <= alen; i++)
        for (uint32_t j = 0; j <= blen; j++) {
            if (i == 0 || j == 0) T(i, j) = 0;
            else if (a[i - 1] == b[j - 1]) T(i, j) = T(i - 1, j - 1) + 1;
            else T(i, j) = T(i - 1, j) > T(i, j - 1) ? T(i - 1, j) : T(i, j - 1);
        }
    uint32_t total = T(alen, blen), idx = total;
    char *result = sv_malloc(total + 1);
    lcs_range *ranges = NULL;
    size_t nranges = 0, capranges = 0;
    int compute = getidx || !getlen;
    uint32_t as = alen, ae = 0, bs = 0, be = 0; /* as == alen: no range open */
    uint32_t i = alen, j = blen;
    while (compute && i > 0 && j > 0) {
        int emit = 0;
        if (a[i - 1] == b[j - 1]) {
            result[idx - 1] = a[i - 1];
            if (as == alen) {
                as = ae = i - 1;
                bs = be = j - 1;
            } else if (as == i && bs == j) {
                as--;
                bs--;
            } else {
                emit = 1;
            }
            if (as == 0 || bs == 0) emit = 1;
            idx--;
            i--;
            j--;
        } else {
            if (T(i - 1, j) > T(i, j - 1)) i--;
            else j--;
            if (as != alen) emit = 1;
        }
        if (emit) {
            uint32_t mlen = ae - as + 1;
            if (getidx && (minmatchlen == 0 || mlen >= minmatchlen)) {
                if (nranges == capranges) {
                    capranges = capranges ? capranges * 2 : 16;
                    ranges = sv_realloc(ranges, capranges * sizeof(*ranges));
                }
                ranges[nranges++] = (lcs_range){as, ae, bs, be};
            }
            as = alen;
        }
    }
#undef T
    if (getidx) {
        sv_add_map(&c->r, 2);
        sv_add_bulk_cstr(&c->r, "matches");
        sv_add_array(&c->r, (long long)nranges);
        for (size_t k = 0; k < nranges; k++) {
            sv_add_array(&c->r, 2 + withmatchlen);
            sv_add_array(&c->r, 2);
            sv_add_int(&c->r, ranges[k].a0);
            sv_add_int(&c->r, ranges[k].a1);
            sv_add_array(&c->r, 2);
            sv_add_int(&c->r, ranges[k].b0);
            sv_add_int(&c->r, ranges[k].b1);
            if (withmatchlen) sv_add_int(&c->r, ranges[k].a1 - ranges[k].a0 + 1);
        }
        sv_add_bulk_cstr(&c->r, "len");
        sv_add_int(&c->r, total);
    } else if (getlen) {
        sv_add_int(&c->r, total);
    } else {
        sv_add_bulk(&c->r, result, total);
    }
    free(result);
    free(ranges);
    free(t);
}
