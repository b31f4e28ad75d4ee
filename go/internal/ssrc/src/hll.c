/* hll: see hll.h. */
#include "hll.h"

#include <math.h>
#include <string.h>

#define REG_MAX ((1u << SV_HLL_BITS) - 1)
#define IS_ZERO(p) ((*(p)&0xc0) == 0)      /* 00xxxxxx: xxxxxx+1 zero registers */
#define IS_XZERO(p) ((*(p)&0xc0) == 0x40)  /* 01xxxxxx yyyyyyyy: 14 bits + 1 zeros */
#define IS_VAL(p) (*(p)&0x80)              /* 1vvvvvxx: xx+1 registers of vvvvv+1 */
#define ZERO_LEN(p) ((*(p)&0x3f) + 1)
#define XZERO_LEN(p) ((((*(p)&0x3f) << 8) | *((p) + 1)) + 1)
#define VAL_VALUE(p) ((unsigned)((*(p) >> 2) & 0x1f) + 1)
#define VAL_LEN(p) ((unsigned)(*(p)&0x3) + 1)
#define VAL_MAX_VALUE 32
#define VAL_MAX_LEN 4
#define ZERO_MAX_LEN 64
#define XZERO_MAX_LEN 16384

static void val_set(uint8_t *p, unsigned val, unsigned len) { *p = (uint8_t)(((val - 1) << 2 | (len - 1)) | 0x80); }
static void zero_set(uint8_t *p, unsigned len) { *p = (uint8_t)(len - 1); }
static void xzero_set(uint8_t *p, unsigned len)
{
    unsigned l = len - 1;
    p[0] = (uint8_t)((l >> 8) | 0x40);
    p[1] = (uint8_t)(l & 0xff);
}

uint64_t sv_murmur64a(const void *key, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    const int r = 47;
    uint64_t h = seed ^ ((uint64_t)(int)len * m);
    const uint8_t *data = key, *end = data + (len - (len & 7));
    while (data != end) {
        uint64_t k;
        memcpy(&k, data, 8); /* little-endian machines, as Redis reads it */
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
        data += 8;
    }
    switch (len & 7) {
    case 7: h ^= (uint64_t)data[6] << 48; /* fall through */
    case 6: h ^= (uint64_t)data[5] << 40; /* fall through */
    case 5: h ^= (uint64_t)data[4] << 32; /* fall through */
    case 4: h ^= (uint64_t)data[3] << 24; /* fall through */
    case 3: h ^= (uint64_t)data[2] << 16; /* fall through */
    case 2: h ^= (uint64_t)data[1] << 8;  /* fall through */
    case 1:
        h ^= (uint64_t)data[0];
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

int sv_hll_patlen(const void *ele, size_t len, long *index)
{
    uint64_t hash = sv_murmur64a(ele, len, 0xadc83b19ULL);
    *index = (long)(hash & (SV_HLL_REGISTERS - 1));
    hash >>= SV_HLL_P;
    hash |= (uint64_t)1 << SV_HLL_Q; /* the run ends by Q+1 */
    int count = 1;
    for (uint64_t bit = 1; (hash & bit) == 0; bit <<= 1) count++;
    return count;
}

size_t sv_hll_init(uint8_t *buf)
{
    memset(buf, 0, SV_HLL_HDR);
    memcpy(buf, "HYLL", 4);
    buf[4] = SV_HLL_SPARSE;
    xzero_set(buf + SV_HLL_HDR, XZERO_MAX_LEN); /* one XZERO covers all 16384 */
    return SV_HLL_HDR + 2;
}

int sv_hll_valid(const uint8_t *p, size_t len)
{
    if (len < SV_HLL_HDR || memcmp(p, "HYLL", 4) != 0 || p[4] > SV_HLL_SPARSE) return 0;
    return p[4] != SV_HLL_DENSE || len == SV_HLL_DENSE_SIZE;
}

/* The registers end at byte 12287; the last one never needs a following byte (its
 * 6 bits are the top of byte 12287), which Redis reads from the string's NUL. */
unsigned sv_hll_dense_get(const uint8_t *regs, long i)
{
    unsigned long byte = (unsigned long)i * SV_HLL_BITS / 8, fb = (unsigned long)i * SV_HLL_BITS & 7;
    unsigned long b0 = regs[byte], b1 = byte + 1 < SV_HLL_DENSE_SIZE - SV_HLL_HDR ? regs[byte + 1] : 0;
    return (unsigned)(((b0 >> fb) | (b1 << (8 - fb))) & REG_MAX);
}

void sv_hll_dense_set(uint8_t *regs, long i, unsigned v)
{
    unsigned long byte = (unsigned long)i * SV_HLL_BITS / 8, fb = (unsigned long)i * SV_HLL_BITS & 7, fb8 = 8 - fb;
    regs[byte] = (uint8_t)((regs[byte] & ~(REG_MAX << fb)) | (v << fb));
    if (byte + 1 < SV_HLL_DENSE_SIZE - SV_HLL_HDR)
        regs[byte + 1] = (uint8_t)((regs[byte + 1] & ~(REG_MAX >> fb8)) | (v >> fb8));
}

int sv_hll_to_dense(const uint8_t *sparse, size_t len, uint8_t *out)
{
    memset(out, 0, SV_HLL_DENSE_SIZE);
    memcpy(out, sparse, SV_HLL_HDR); /* magic and cached cardinality */
    out[4] = SV_HLL_DENSE;
    const uint8_t *p = sparse + SV_HLL_HDR, *end = sparse + len;
    long idx = 0;
    while (p < end) {
        if (IS_ZERO(p)) {
            idx += ZERO_LEN(p);
            p++;
        } else if (IS_XZERO(p)) {
            if (p + 1 >= end) return -1;
            idx += XZERO_LEN(p);
            p += 2;
        } else {
            long runlen = VAL_LEN(p);
            unsigned v = VAL_VALUE(p);
            if (runlen + idx > SV_HLL_REGISTERS) break;
            while (runlen--) sv_hll_dense_set(out + SV_HLL_HDR, idx++, v);
            p++;
        }
    }
    return idx == SV_HLL_REGISTERS ? 0 : -1;
}

int sv_hll_sparse_set(uint8_t *buf, size_t *lenp, long index, unsigned count)
{
    if (count > VAL_MAX_VALUE) return 2;
    uint8_t *sparse = buf + SV_HLL_HDR, *p = sparse, *end = buf + *lenp, *prev = NULL, *next;
    long first = 0, span = 0;
    /* the opcode covering the register */
    while (p < end) {
        long oplen = 1;
        if (IS_ZERO(p)) span = ZERO_LEN(p);
        else if (IS_VAL(p)) span = VAL_LEN(p);
        else {
            if (p + 1 >= end) return -1;
            span = XZERO_LEN(p);
            oplen = 2;
        }
        if (index <= first + span - 1) break;
        prev = p;
        p += oplen;
        first += span;
    }
    if (span == 0 || p >= end) return -1;
    next = IS_XZERO(p) ? p + 2 : p + 1;
    if (next >= end) next = NULL;
    int is_zero = 0, is_xzero = 0, is_val = 0;
    long runlen;
    if (IS_ZERO(p)) {
        is_zero = 1;
        runlen = ZERO_LEN(p);
    } else if (IS_XZERO(p)) {
        is_xzero = 1;
        runlen = XZERO_LEN(p);
    } else {
        is_val = 1;
        runlen = VAL_LEN(p);
    }
    if (is_val) {
        if (VAL_VALUE(p) >= count) return 0;
        if (runlen == 1) {
            val_set(p, count, 1);
            goto updated;
        }
    }
    if (is_zero && runlen == 1) {
        val_set(p, count, 1);
        goto updated;
    }
    {
        /* split the run: [before] VAL(count) [after], at most 5 bytes */
        uint8_t seq[5], *n = seq;
        long last = first + span - 1;
        if (is_zero || is_xzero) {
            if (index != first) {
                long len = index - first;
                if (len > ZERO_MAX_LEN) {
                    xzero_set(n, (unsigned)len);
                    n += 2;
                } else {
                    zero_set(n++, (unsigned)len);
                }
            }
            val_set(n++, count, 1);
            if (index != last) {
                long len = last - index;
                if (len > ZERO_MAX_LEN) {
                    xzero_set(n, (unsigned)len);
                    n += 2;
                } else {
                    zero_set(n++, (unsigned)len);
                }
            }
        } else {
            unsigned cur = VAL_VALUE(p);
            if (index != first) val_set(n++, cur, (unsigned)(index - first));
            val_set(n++, count, 1);
            if (index != last) val_set(n++, cur, (unsigned)(last - index));
        }
        long seqlen = n - seq, oldlen = is_xzero ? 2 : 1, delta = seqlen - oldlen;
        if (delta > 0 && *lenp + (size_t)delta > SV_HLL_SPARSE_MAX_BYTES) return 2;
        if (delta && next) memmove(next + delta, next, (size_t)(end - next));
        *lenp += (size_t)delta;
        memcpy(p, seq, (size_t)seqlen);
        end += delta;
    }
updated:
    /* merge neighbouring VAL runs of one value, in the 5 opcodes from prev */
    p = prev ? prev : sparse;
    for (int scan = 5; p < end && scan--;) {
        if (IS_XZERO(p)) {
            p += 2;
            continue;
        }
        if (IS_ZERO(p)) {
            p++;
            continue;
        }
        if (p + 1 < end && IS_VAL(p + 1) && VAL_VALUE(p) == VAL_VALUE(p + 1)) {
            unsigned len = VAL_LEN(p) + VAL_LEN(p + 1);
            if (len <= VAL_MAX_LEN) {
                val_set(p + 1, VAL_VALUE(p), len);
                memmove(p, p + 1, (size_t)(end - p));
                (*lenp)--;
                end--;
                continue; /* the merged run may merge again on its right */
            }
        }
        p++;
    }
    buf[15] |= 0x80; /* the cached cardinality is stale */
    return 1;
}

int sv_hll_merge(uint8_t *max, const uint8_t *p0, size_t len)
{
    if (p0[4] == SV_HLL_DENSE) {
        for (long i = 0; i < SV_HLL_REGISTERS; i++) {
            unsigned v = sv_hll_dense_get(p0 + SV_HLL_HDR, i);
            if (v > max[i]) max[i] = (uint8_t)v;
        }
        return 0;
    }
    const uint8_t *p = p0 + SV_HLL_HDR, *end = p0 + len;
    long i = 0;
    while (p < end) {
        if (IS_ZERO(p)) {
            i += ZERO_LEN(p);
            p++;
        } else if (IS_XZERO(p)) {
            if (p + 1 >= end) return -1;
            i += XZERO_LEN(p);
            p += 2;
        } else {
            long runlen = VAL_LEN(p);
            unsigned v = VAL_VALUE(p);
            if (runlen + i > SV_HLL_REGISTERS) break;
            while (runlen--) {
                if (v > max[i]) max[i] = (uint8_t)v;
                i++;
            }
            p++;
        }
    }
    return i == SV_HLL_REGISTERS ? 0 : -1;
}

/* Ertl, "New cardinality estimation algorithms for HyperLogLog sketches" (the
 * estimator of Redis 7.0), from the histogram of register values. */
static double sigma(double x)
{
    if (x == 1.) return INFINITY;
    double zp, y = 1, z = x;
    do {
        x *= x;
        zp = z;
        z += x * y;
        y += y;
    } while (zp != z);
    return z;
}

static double tau(double x)
{
    if (x == 0. || x == 1.) return 0.;
    double zp, y = 1.0, z = 1 - x;
    do {
        x = sqrt(x);
        zp = z;
        y *= 0.5;
        z -= pow(1 - x, 2) * y;
    } while (zp != z);
    return z / 3;
}

static uint64_t estimate(const int *histo)
{
    double m = SV_HLL_REGISTERS;
    double z = m * tau((m - histo[SV_HLL_Q + 1]) / m);
    for (int j = SV_HLL_Q; j >= 1; --j) {
        z += histo[j];
        z *= 0.5;
    }
    z += m * sigma(histo[0] / m);
    return (uint64_t)llroundl(0.721347520444481703680 * m * m / z); /* 0.5 / ln 2 */
}

uint64_t sv_hll_count(const uint8_t *p0, size_t len, int *invalid)
{
    int histo[64] = {0};
    if (p0[4] == SV_HLL_DENSE) {
        for (long i = 0; i < SV_HLL_REGISTERS; i++) histo[sv_hll_dense_get(p0 + SV_HLL_HDR, i)]++;
    } else {
        const uint8_t *p = p0 + SV_HLL_HDR, *end = p0 + len;
        long idx = 0;
        while (p < end) {
            long runlen;
            if (IS_ZERO(p)) {
                runlen = ZERO_LEN(p);
                histo[0] += (int)runlen;
                p++;
            } else if (IS_XZERO(p)) {
                runlen = p + 1 < end ? XZERO_LEN(p) : 0;
                histo[0] += (int)runlen;
                p += 2;
            } else {
                runlen = VAL_LEN(p);
                histo[VAL_VALUE(p)] += (int)runlen;
                p++;
            }
            idx += runlen;
        }
        if (idx != SV_HLL_REGISTERS && invalid) *invalid = 1;
    }
    return estimate(histo);
}

uint64_t sv_hll_count_raw(const uint8_t *regs)
{
    int histo[64] = {0};
    for (long i = 0; i < SV_HLL_REGISTERS; i++) histo[regs[i] & 63]++;
    return estimate(histo);
}
