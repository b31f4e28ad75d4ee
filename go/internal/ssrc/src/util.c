/* util: see util.h. */
#define _GNU_SOURCE
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

void *sv_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fputs("slotlane-server: out of memory\n", stderr); abort(); }
    return p;
}
void *sv_realloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) { fputs("slotlane-server: out of memory\n", stderr); abort(); }
    return p;
}
void *sv_calloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) { fputs("slotlane-server: out of memory\n", stderr); abort(); }
    return p;
}
char *sv_memdup(const void *p, size_t n)
{
    char *d = sv_malloc(n + 1);
    if (n) memcpy(d, p, n);
    d[n] = 0;
    return d;
}

void sv_buf_grow(sv_buf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    b->data = sv_realloc(b->data, cap);
    b->cap = cap;
}
void sv_buf_free(sv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

size_t sv_ull2str(char *dst, unsigned long long v)
{
    char tmp[24];
    size_t n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (size_t i = 0; i < n; i++) dst[i] = tmp[n - 1 - i];
    return n;
}
size_t sv_ll2str(char *dst, long long v)
{
    if (v < 0) {
        dst[0] = '-';
        return 1 + sv_ull2str(dst + 1, (unsigned long long)0 - (unsigned long long)v);
    }
    return sv_ull2str(dst, (unsigned long long)v);
}

int sv_str2ll(const char *s, size_t len, long long *out)
{
    const char *p = s;
    size_t plen = 0;
    int neg = 0;
    unsigned long long v;
    if (len == 0 || len > 20) return 0;
    if (len == 1 && p[0] == '0') { *out = 0; return 1; }
    if (p[0] == '-') { neg = 1; p++; plen++; if (plen == len) return 0; }
    if (p[0] >= '1' && p[0] <= '9') { v = (unsigned long long)(p[0] - '0'); p++; plen++; }
    else return 0;
    while (plen < len && p[0] >= '0' && p[0] <= '9') {
        if (v > ULLONG_MAX / 10) return 0;
        v *= 10;
        if (v > ULLONG_MAX - (unsigned long long)(p[0] - '0')) return 0;
        v += (unsigned long long)(p[0] - '0');
        p++; plen++;
    }
    if (plen < len) return 0;
    if (neg) {
        if (v > ((unsigned long long)(-(LLONG_MIN + 1)) + 1)) return 0;
        *out = (long long)(0 - v);
    } else {
        if (v > LLONG_MAX) return 0;
        *out = (long long)v;
    }
    return 1;
}

int sv_str2ld(const char *s, size_t len, long double *out)
{
    char buf[5120];
    char *eptr;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = 0;
    if (isspace((unsigned char)buf[0])) return 0;
    errno = 0;
    long double v = strtold(buf, &eptr);
    if (eptr != buf + len || errno == ERANGE || isnan(v)) return 0;
    *out = v;
    return 1;
}

int sv_str2d(const char *s, size_t len, double *out)
{
    char buf[5120];
    char *eptr;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = 0;
    if (isspace((unsigned char)buf[0])) return 0;
    errno = 0;
    double v = strtod(buf, &eptr);
    if (eptr != buf + len || (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) || isnan(v))
        return 0;
    *out = v;
    return 1;
}

size_t sv_d2str(char *dst, size_t cap, double v)
{
    if (isinf(v)) {
        const char *t = v > 0 ? "inf" : "-inf";
        size_t n = strlen(t);
        memcpy(dst, t, n);
        return n;
    }
    /* Integers that a double holds exactly print without exponent, as in Redis. */
    int n = snprintf(dst, cap, "%.17g", v);
    return n < 0 ? 0 : (size_t)n;
}

size_t sv_ld2str(char *dst, size_t cap, long double v)
{
    if (isinf(v)) {
        const char *t = v > 0 ? "inf" : "-inf";
        size_t n = strlen(t);
        memcpy(dst, t, n);
        return n;
    }
    int n = snprintf(dst, cap, "%.17Lf", v);
    if (n < 0) return 0;
    if (memchr(dst, '.', (size_t)n)) {
        char *p = dst + n - 1;
        while (*p == '0') { p--; n--; }
        if (*p == '.') n--;
    }
    if (n == 2 && dst[0] == '-' && dst[1] == '0') { dst[0] = '0'; n = 1; }
    return (size_t)n;
}

int sv_eq(sv_str a, const char *lit)
{
    size_t n = strlen(lit);
    if (a.len != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a.p[i]) != lit[i]) return 0;
    return 1;
}

/* Redis's stringmatchlen, with two changes for arguments that are not NUL-terminated
 * (they point into the read buffer): no byte past patternLen is ever read, where Redis
 * reads its terminator; and Redis 7.0.9's fix for CVE-2022-36021 (skip_longer: once
 * the rest of the pattern matched nowhere in the rest of the string, an earlier '*'
 * cannot help, so "*a*a*a*...b" is not exponential). */
static int glob_impl(const char *pattern, size_t patternLen, const char *string, size_t stringLen, int nocase,
                     int *skip_longer)
{
    while (patternLen && stringLen) {
        switch (pattern[0]) {
        case '*':
            while (patternLen > 1 && pattern[1] == '*') { pattern++; patternLen--; }
            if (patternLen == 1) return 1;
            while (stringLen) {
                if (glob_impl(pattern + 1, patternLen - 1, string, stringLen, nocase, skip_longer)) return 1;
                if (*skip_longer) return 0;
                string++; stringLen--;
            }
            *skip_longer = 1;
            return 0;
        case '?':
            string++; stringLen--;
            break;
        case '[': {
            int not, match;
            pattern++; patternLen--;
            not = patternLen && pattern[0] == '^';
            if (not) { pattern++; patternLen--; }
            match = 0;
            while (1) {
                if (patternLen == 0) { /* unterminated class: Redis reads its NUL here */
                    pattern--; patternLen++;
                    break;
                } else if (pattern[0] == '\\' && patternLen >= 2) {
                    pattern++; patternLen--;
                    if (pattern[0] == string[0]) match = 1;
                } else if (pattern[0] == ']') {
                    break;
                } else if (patternLen >= 3 && pattern[1] == '-') {
                    int start = (unsigned char)pattern[0], end = (unsigned char)pattern[2], c = (unsigned char)string[0];
                    if (start > end) { int t = start; start = end; end = t; }
                    if (nocase) { start = tolower(start); end = tolower(end); c = tolower(c); }
                    pattern += 2; patternLen -= 2;
                    if (c >= start && c <= end) match = 1;
                } else {
                    if (!nocase) { if (pattern[0] == string[0]) match = 1; }
                    else if (tolower((unsigned char)pattern[0]) == tolower((unsigned char)string[0])) match = 1;
                }
                pattern++; patternLen--;
            }
            if (not) match = !match;
            if (!match) return 0;
            string++; stringLen--;
            break;
        }
        case '\\':
            if (patternLen >= 2) { pattern++; patternLen--; }
            /* fall through */
        default:
            if (!nocase) { if (pattern[0] != string[0]) return 0; }
            else if (tolower((unsigned char)pattern[0]) != tolower((unsigned char)string[0])) return 0;
            string++; stringLen--;
            break;
        }
        pattern++; patternLen--;
        if (stringLen == 0) {
            while (patternLen && *pattern == '*') { pattern++; patternLen--; }
            break;
        }
    }
    return patternLen == 0 && stringLen == 0;
}

int sv_glob(const char *pattern, size_t patternLen, const char *string, size_t stringLen, int nocase)
{
    int skip_longer = 0;
    return glob_impl(pattern, patternLen, string, stringLen, nocase, &skip_longer);
}

int64_t sv_ustime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
int64_t sv_mstime(void) { return sv_ustime() / 1000; }
int sv_use_tsc;
static double tsc_per_us;

/* Calibrates the TSC against CLOCK_MONOTONIC over 20 ms; used only when the CPU says it
 * is invariant (constant rate, not stopped in idle states: CPUID 0x80000007 EDX bit 8). */
void sv_clock_init(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8))) return;
    int64_t t0 = sv_monotonic_us();
    uint64_t c0 = __rdtsc();
    struct timespec ts = {0, 20 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0) {}
    int64_t t1 = sv_monotonic_us();
    uint64_t c1 = __rdtsc();
    if (t1 <= t0 || c1 <= c0) return;
    tsc_per_us = (double)(c1 - c0) / (double)(t1 - t0);
    sv_use_tsc = tsc_per_us > 1;
#endif
}

int64_t sv_ticks_us(uint64_t ticks) { return sv_use_tsc ? (int64_t)((double)ticks / tsc_per_us) : (int64_t)ticks; }

int64_t sv_monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static _Thread_local uint64_t rng_state = 0x9E3779B97F4A7C15ull;
void sv_rand_seed(uint64_t seed) { rng_state = seed ? seed : 0x9E3779B97F4A7C15ull; }
uint64_t sv_rand64(void)
{
    uint64_t x = rng_state;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}
