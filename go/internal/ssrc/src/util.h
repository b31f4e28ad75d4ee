/* util: the growable byte buffer and the number <-> text conversions every module uses.
 * Conversions follow Redis's rules exactly (string2ll rejects leading '+', spaces, "-0"),
 * because clients and the differential test see their error replies. */
#ifndef SV_UTIL_H
#define SV_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Allocation failure is fatal: a server that cannot allocate cannot answer anyway. */
void *sv_malloc(size_t n);
void *sv_realloc(void *p, size_t n);
void *sv_calloc(size_t n, size_t sz);
char *sv_memdup(const void *p, size_t n);

/* A byte buffer that only grows (doubling), so a steady state allocates nothing. */
typedef struct sv_buf {
    char *data;
    size_t len, cap;
} sv_buf;

void sv_buf_grow(sv_buf *b, size_t need);
void sv_buf_free(sv_buf *b);

static inline void sv_buf_reserve(sv_buf *b, size_t extra)
{
    if (b->cap - b->len < extra) sv_buf_grow(b, b->len + extra);
}
static inline void sv_buf_append(sv_buf *b, const void *p, size_t n)
{
    sv_buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

/* A borrowed string (an argument points into the connection's read buffer). */
typedef struct sv_str {
    const char *p;
    size_t len;
} sv_str;

/* Writes the decimal form of v into dst (at least 21 bytes); returns its length. */
size_t sv_ll2str(char *dst, long long v);
size_t sv_ull2str(char *dst, unsigned long long v);
/* Redis's string2ll: exact decimal long long, no spaces, no '+', no leading zeros. */
int sv_str2ll(const char *s, size_t len, long long *out);
/* Redis's string2ld/strtold rules for floats given by clients ("inf" allowed, no NaN, no spaces). */
int sv_str2ld(const char *s, size_t len, long double *out);
int sv_str2d(const char *s, size_t len, double *out);
/* %.17g as Redis prints doubles in replies (RESP2 bulk, ZSCORE, etc.). */
size_t sv_d2str(char *dst, size_t cap, double v);
/* Long double in the human form of INCRBYFLOAT (%.17Lf, trailing zeros stripped). */
size_t sv_ld2str(char *dst, size_t cap, long double v);

/* Case-insensitive equality of a client argument and a lowercase literal. */
int sv_eq(sv_str a, const char *lit);

/* Redis's stringmatchlen glob (KEYS, SCAN MATCH, CONFIG GET). */
int sv_glob(const char *pat, size_t plen, const char *s, size_t slen, int nocase);

int64_t sv_mstime(void);
int64_t sv_monotonic_us(void);
/* Durations of commands (commandstats, SLOWLOG): the CPU's invariant time-stamp counter
 * where sv_clock_init found one (a few ns a read, where clock_gettime costs 25-70 ns in
 * this VM: two reads per command would show in the CPU per request), else
 * CLOCK_MONOTONIC in µs. */
extern int sv_use_tsc;
void sv_clock_init(void);
int64_t sv_ticks_us(uint64_t ticks);
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t sv_ticks(void) { return sv_use_tsc ? __rdtsc() : (uint64_t)sv_monotonic_us(); }
#else
static inline uint64_t sv_ticks(void) { return (uint64_t)sv_monotonic_us(); }
#endif
int64_t sv_ustime(void);

/* Per-thread xorshift generator for sampling (expiry, RANDOMKEY, SPOP). */
uint64_t sv_rand64(void);
void sv_rand_seed(uint64_t seed);

#endif
