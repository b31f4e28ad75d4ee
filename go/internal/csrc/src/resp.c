/* resp: see resp.h. The parser is on the path of every reply, so it works on whole
 * elements with memchr and a hand-written integer parser, appends records and payloads
 * to the caller's vectors (which only grow), and keeps no per-reply allocations. */
#include "resp.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest header line of a length or number ("$<len>", ":<int>", "*<n>" ...): 20
 * digits and a sign fit; more is malformed, and lets a bad peer be caught before the
 * caller buffers a lot waiting for a CR. */
#define NUM_LINE_MAX 32
/* The longest RESP3 double text we accept ("%.17g" needs 24; decimal forms more). */
#define DBL_LINE_MAX 512

static int bad(sl__resp_parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->errmsg, sizeof p->errmsg, fmt, ap);
    va_end(ap);
    return SL__RESP_BAD;
}

void sl__resp_parser_init(sl__resp_parser *p, const sl__resp_limits *limits)
{
    memset(p, 0, sizeof *p);
    if (limits) {
        p->limits = *limits;
    } else {
        p->limits.max_bulk_len = (uint64_t)512 << 20;
        p->limits.max_aggregate_len = (uint64_t)1 << 30;
        p->limits.max_depth = 32;
    }
    if (p->limits.max_depth > SL__RESP_MAX_DEPTH) p->limits.max_depth = SL__RESP_MAX_DEPTH;
    if (p->limits.max_depth < 0) p->limits.max_depth = 0;
    /* A record's len is 32 bits: longer payloads and aggregates cannot be represented. */
    if (p->limits.max_bulk_len > UINT32_MAX) p->limits.max_bulk_len = UINT32_MAX;
    if (p->limits.max_aggregate_len > UINT32_MAX) p->limits.max_aggregate_len = UINT32_MAX;
}

/* Parses a decimal int64 from s[0, n): optional sign, at least one digit, no overflow. */
int sl__parse_i64(const uint8_t *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n || n - i > 19 + 1) return 0; /* no digits, or too many even with zeros */
    uint64_t v = 0;
    /* Up to 19 digits cannot overflow 64 bits: no check (and no division) per digit on
     * the path of every length and integer. */
    size_t safe = n - i <= 19 ? n : i + 19;
    for (; i < safe; i++) {
        unsigned d = (unsigned)s[i] - '0';
        if (d > 9) return 0;
        v = v * 10 + d;
    }
    for (; i < n; i++) {
        unsigned d = (unsigned)s[i] - '0';
        if (d > 9) return 0;
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return 0;
        *out = (int64_t)(0 - v);
    } else {
        if (v > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)v;
    }
    return 1;
}

static int ieq(const uint8_t *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    if (n != m) return 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c >= 'A' && c <= 'Z') c = (uint8_t)(c + 32);
        if (c != (uint8_t)lit[i]) return 0;
    }
    return 1;
}

/* RESP3 double: inf, -inf, nan, or [+-]digits[.digits][(e|E)[+-]digits]. Exact powers of
 * ten up to 1e22 and mantissas up to 2^53 give a correctly rounded result with one
 * multiplication or division (Clinger's fast path); other texts go through strtod with
 * the locale's decimal point, so a caller's setlocale() cannot break parsing. */
static int parse_double(const uint8_t *s, size_t n, double *out)
{
    static const double pow10[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
    if (ieq(s, n, "inf") || ieq(s, n, "+inf")) { *out = INFINITY; return 1; }
    if (ieq(s, n, "-inf")) { *out = -INFINITY; return 1; }
    if (ieq(s, n, "nan") || ieq(s, n, "-nan") || ieq(s, n, "+nan")) { *out = NAN; return 1; }
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    uint64_t mant = 0;
    int digits = 0, frac = 0, sig = 0, exact = 1;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (mant || s[i] != '0') sig++;
        if (sig > 19) exact = 0; /* more digits than 64 bits hold: strtod below */
        else mant = mant * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
            if (mant || s[i] != '0') sig++;
            if (sig <= 19) { mant = mant * 10 + (uint64_t)(s[i] - '0'); frac++; }
            else exact = 0;
        }
    }
    if (digits == 0) return 0;
    int64_t e = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
        if (i == n) return 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 100000) e = e * 10 + (s[i] - '0');
        if (eneg) e = -e;
    }
    if (i != n) return 0;
    int64_t scale = e - frac;
    if (exact && mant <= ((uint64_t)1 << 53) && scale >= -22 && scale <= 22) {
        double d = (double)mant;
        d = scale >= 0 ? d * pow10[scale] : d / pow10[-scale];
        *out = neg ? -d : d;
        return 1;
    }
    char tmp[DBL_LINE_MAX + 1];
    if (n > DBL_LINE_MAX) return 0;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && dp[1] == 0) {
        char *dot = memchr(tmp, '.', n);
        if (dot) *dot = dp[0];
    }
    char *end;
    *out = strtod(tmp, &end);
    return end == tmp + n;
}

static inline sl_reply *new_record(sl__records *recs, uint8_t type, uint32_t len, uint64_t off)
{
    sl_reply *r = &recs->ptr[recs->len++];
    r->type = type;
    r->flags = 0;
    r->reserved = 0;
    r->len = len;
    r->value.integer = 0;
    r->offset = off;
    return r;
}

int sl__resp_parse(sl__resp_parser *p, const sl__alloc *a, const uint8_t *buf, size_t len,
                   size_t *consumed, sl__records *recs, sl__bytes *data)
{
    size_t pos = 0;
    /* Whether the outermost attribute began in this call: only then are its payload bytes
     * surely the last ones in data (which several parsers may share) and can be dropped. */
    int attr_here = 0;
    *consumed = 0;
    /* Fast path for the commonest replies of a pipeline, a whole top-level bulk string
     * ("$32\r\n...\r\n"), status ("+OK\r\n") or non-negative integer (":1\r\n"). Anything
     * unusual (signs, nulls, partial input, limits) falls through to the general parser,
     * which decides. */
    if (p->depth == 0 && p->in_attribute == 0 && len >= 4) {
        const uint8_t t = buf[0];
        if (t == '$' || t == ':') {
            size_t i = 1;
            uint64_t v = 0;
            while (i < len && i < 11 && (unsigned)(buf[i] - '0') <= 9) v = v * 10 + (uint64_t)(buf[i++] - '0');
            if (i > 1 && i + 1 < len && buf[i] == '\r' && buf[i + 1] == '\n') {
                size_t next = i + 2;
                if (t == ':') {
                    if (sl__records_reserve(a, recs, 1)) return SL_ENOMEM;
                    p->top_record = recs->len;
                    p->top_type = t;
                    new_record(recs, SL_REPLY_INTEGER, 0, data->len)->value.integer = (int64_t)v;
                    *consumed = next;
                    return SL__RESP_REPLY;
                }
                if (v <= p->limits.max_bulk_len && len - next >= v + 2 && buf[next + v] == '\r' &&
                    buf[next + v + 1] == '\n') {
                    if (sl__records_reserve(a, recs, 1)) return SL_ENOMEM;
                    uint64_t off = data->len;
                    if (sl__bytes_append(a, data, buf + next, (size_t)v)) return SL_ENOMEM;
                    p->top_record = recs->len;
                    p->top_type = t;
                    new_record(recs, SL_REPLY_STRING, (uint32_t)v, off);
                    *consumed = next + (size_t)v + 2;
                    return SL__RESP_REPLY;
                }
            }
        } else if (t == '+') {
            size_t i = 1;
            while (i < len && i < 32 && buf[i] != '\r' && buf[i] != '\n') i++;
            /* within max_bulk_len, as the general parser checks (found by fuzz_reply: a
             * short status line over a small limit passed or failed by how bytes arrived) */
            if (i + 1 < len && buf[i] == '\r' && buf[i + 1] == '\n' && i - 1 <= p->limits.max_bulk_len) {
                if (sl__records_reserve(a, recs, 1)) return SL_ENOMEM;
                uint64_t off = data->len;
                if (sl__bytes_append(a, data, buf + 1, i - 1)) return SL_ENOMEM;
                p->top_record = recs->len;
                p->top_type = t;
                new_record(recs, SL_REPLY_STATUS, (uint32_t)(i - 1), off);
                *consumed = i + 2;
                return SL__RESP_REPLY;
            }
        }
    }
    while (pos < len) {
        const uint8_t *line = buf + pos + 1;
        const uint8_t type = buf[pos];
        size_t avail = len - pos - 1;

        /* Bound the search for the CR by what this type may hold. */
        size_t maxline;
        switch (type) {
        case '+': case '-': case '(':
            maxline = (size_t)p->limits.max_bulk_len;
            break;
        case ',':
            maxline = DBL_LINE_MAX;
            break;
        case ':': case '$': case '*': case '%': case '~': case '>': case '|':
        case '=': case '!': case '#': case '_':
            maxline = NUM_LINE_MAX;
            break;
        default:
            if (type == '.' || type == ';')
                return bad(p, "streamed RESP3 types are not supported (type byte '%c')", type);
            if (type >= 0x20 && type < 0x7f)
                return bad(p, "bad RESP type byte '%c'", type);
            return bad(p, "bad RESP type byte 0x%02x", type);
        }
        size_t scan = avail <= maxline ? avail : maxline + 1;
        /* Most lines are short ("$32", ":1", "+OK"): look at a few bytes before calling
         * memchr. */
        const uint8_t *cr = NULL;
        size_t q = 0, quick = scan < 8 ? scan : 8;
        while (q < quick && line[q] != '\r') q++;
        if (q < quick) cr = line + q;
        else if (scan > quick) cr = memchr(line + quick, '\r', scan - quick);
        if (!cr) {
            if (avail > maxline) return bad(p, "RESP line of type '%c' too long", type);
            return SL__RESP_MORE;
        }
        size_t n = (size_t)(cr - line);
        if (n + 1 >= avail) return SL__RESP_MORE;                  /* the LF is not here yet */
        if (cr[1] != '\n') return bad(p, "RESP line not ended by CRLF");
        size_t next = pos + 1 + n + 2;                                 /* after the line */

        if (p->depth == 0 && type != '|' && p->in_attribute == 0) {
            p->top_record = recs->len;
            p->top_type = type;
        }
        if (sl__records_reserve(a, recs, 1)) return SL_ENOMEM;

        int64_t v;
        int aggregate = 0;     /* 1: a non-empty aggregate, whose children follow */
        uint8_t agg_type = 0;
        switch (type) {
        case '+':
        case '-':
        case '(': {
            if (type == '(') {
                size_t i = (n && line[0] == '-') ? 1 : 0;
                if (i == n) return bad(p, "empty RESP3 big number");
                for (; i < n; i++)
                    if (line[i] < '0' || line[i] > '9') return bad(p, "bad RESP3 big number");
            }
            if (memchr(line, '\n', n)) return bad(p, "LF inside a RESP simple line");
            uint64_t off = data->len;
            if (sl__bytes_append(a, data, line, n)) return SL_ENOMEM;
            sl_reply *r = new_record(recs, type == '+' ? SL_REPLY_STATUS
                                         : type == '-' ? SL_REPLY_ERROR : SL_REPLY_BIGNUM,
                                     (uint32_t)n, off);
            if (type == '-') r->flags = SL_ERR_SERVER;
            break;
        }
        case ':':
            if (!sl__parse_i64(line, n, &v)) return bad(p, "bad RESP integer");
            new_record(recs, SL_REPLY_INTEGER, 0, data->len)->value.integer = v;
            break;
        case '#':
            if (n != 1 || (line[0] != 't' && line[0] != 'f')) return bad(p, "bad RESP3 boolean");
            new_record(recs, SL_REPLY_BOOL, 0, data->len)->value.integer = line[0] == 't';
            break;
        case '_':
            if (n != 0) return bad(p, "bad RESP3 null");
            new_record(recs, SL_REPLY_NIL, 0, data->len);
            break;
        case ',': {
            double d;
            if (!parse_double(line, n, &d)) return bad(p, "bad RESP3 double");
            uint64_t off = data->len;
            if (sl__bytes_append(a, data, line, n)) return SL_ENOMEM;
            new_record(recs, SL_REPLY_DOUBLE, (uint32_t)n, off)->value.dbl = d;
            break;
        }
        case '$':
        case '=':
        case '!': {
            if (n == 1 && line[0] == '?') return bad(p, "streamed RESP3 strings are not supported");
            if (!n || line[0] == '+' || !sl__parse_i64(line, n, &v)) return bad(p, "bad RESP bulk length");
            if (v == -1 && type == '$') {
                new_record(recs, SL_REPLY_NIL, 0, data->len);
                break;
            }
            if (v < 0) return bad(p, "negative RESP bulk length %lld", (long long)v);
            if ((uint64_t)v > p->limits.max_bulk_len)
                return bad(p, "RESP bulk of %lld bytes exceeds the limit of %llu", (long long)v,
                           (unsigned long long)p->limits.max_bulk_len);
            size_t blen = (size_t)v;
            if (len - next < blen + 2) return SL__RESP_MORE;
            const uint8_t *payload = buf + next;
            if (payload[blen] != '\r' || payload[blen + 1] != '\n')
                return bad(p, "RESP bulk not followed by CRLF");
            next += blen + 2;
            uint8_t rt = SL_REPLY_STRING;
            int64_t fmt = 0;
            if (type == '=') {
                if (blen < 4 || payload[3] != ':') return bad(p, "RESP3 verbatim string without a format");
                fmt = (int64_t)payload[0] | (int64_t)payload[1] << 8 | (int64_t)payload[2] << 16;
                payload += 4;
                blen -= 4;
                rt = SL_REPLY_VERB;
            } else if (type == '!') {
                rt = SL_REPLY_ERROR;
            }
            uint64_t off = data->len;
            if (sl__bytes_append(a, data, payload, blen)) return SL_ENOMEM;
            sl_reply *r = new_record(recs, rt, (uint32_t)blen, off);
            r->value.integer = fmt;
            if (rt == SL_REPLY_ERROR) r->flags = SL_ERR_SERVER;
            break;
        }
        case '*':
        case '%':
        case '~':
        case '>':
        case '|': {
            if (n == 1 && line[0] == '?') return bad(p, "streamed RESP3 aggregates are not supported");
            if (!n || line[0] == '+' || !sl__parse_i64(line, n, &v)) return bad(p, "bad RESP aggregate length");
            if (v == -1 && type == '*') {
                new_record(recs, SL_REPLY_NIL, 0, data->len);
                break;
            }
            if (v < 0) return bad(p, "negative RESP aggregate length %lld", (long long)v);
            uint64_t elems = (uint64_t)v;
            if (type == '%' || type == '|') {
                if (elems > UINT32_MAX) return bad(p, "RESP3 map too large");
                elems *= 2;
            }
            if (elems > p->limits.max_aggregate_len)
                return bad(p, "RESP aggregate of %llu elements exceeds the limit of %llu",
                           (unsigned long long)elems, (unsigned long long)p->limits.max_aggregate_len);
            agg_type = type == '*' ? SL_REPLY_ARRAY : type == '%' ? SL_REPLY_MAP
                     : type == '~' ? SL_REPLY_SET : type == '>' ? SL_REPLY_PUSH : 0;
            if (elems > 0) {
                if (p->depth >= p->limits.max_depth)
                    return bad(p, "RESP nesting deeper than %d", p->limits.max_depth);
                aggregate = 1;
            }
            if (type == '|') {
                if (!aggregate) { /* an empty attribute: nothing to drop, nothing to wait for */
                    pos = next;
                    *consumed = pos;
                    continue;
                }
                if (p->in_attribute == 0) {
                    p->attr_records = recs->len;
                    p->attr_data = data->len;
                    attr_here = 1;
                }
                p->in_attribute++;
                sl__resp_frame *f = &p->stack[p->depth++];
                f->remaining = elems;
                f->record = SIZE_MAX;
                pos = next;
                *consumed = pos;
                continue;
            }
            new_record(recs, agg_type, (uint32_t)elems, data->len);
            if (aggregate) {
                sl__resp_frame *f = &p->stack[p->depth++];
                f->remaining = elems;
                f->record = recs->len - 1;
                if (p->in_attribute) p->in_attribute++;
                pos = next;
                *consumed = pos;
                continue;
            }
            break;
        }
        }

        /* One element is complete: count it against its parents, closing the aggregates
         * it completes. A closed attribute is not an element of its parent. */
        pos = next;
        *consumed = pos;
        int top_done = 1;
        while (p->depth > 0) {
            sl__resp_frame *f = &p->stack[p->depth - 1];
            if (--f->remaining > 0) {
                top_done = 0;
                break;
            }
            p->depth--;
            if (p->in_attribute) p->in_attribute--;
            if (f->record == SIZE_MAX) {
                if (p->in_attribute == 0) { /* the outermost attribute: drop all of it */
                    recs->len = p->attr_records;
                    if (attr_here) data->len = p->attr_data;
                }
                top_done = 0;
                break;
            }
        }
        if (top_done)
            return p->top_type == '>' ? SL__RESP_PUSH : SL__RESP_REPLY;
    }
    return SL__RESP_MORE;
}

/* ------------------------------------------------------------- encoder */

size_t sl__fmt_i64(char *buf, int64_t v)
{
    char tmp[20];
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t o = 0;
    if (v < 0) buf[o++] = '-';
    while (n) buf[o++] = tmp[--n];
    buf[o] = 0;
    return o;
}

static inline size_t digits_u64(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static inline uint8_t *put_header(uint8_t *w, char type, uint64_t v)
{
    *w++ = (uint8_t)type;
    w += sl__fmt_i64((char *)w, (int64_t)v);
    *w++ = '\r';
    *w++ = '\n';
    return w;
}

int sl__resp_encode_argv(const sl__alloc *a, sl__bytes *out, int argc,
                         const char *const *argv, const size_t *argvlen)
{
    if (argc < 1 || !argv || !out) return SL_EINVAL;
    /* Size first, so the buffer grows at most once and nothing is half-written. */
    size_t total = 1 + digits_u64((uint64_t)argc) + 2;
    for (int i = 0; i < argc; i++) {
        if (!argv[i]) return SL_EINVAL;
        size_t l = argvlen ? argvlen[i] : strlen(argv[i]);
        size_t add = 1 + digits_u64(l) + 2 + l + 2;
        if (l > SIZE_MAX / 2 || add > SIZE_MAX - total) return SL_ENOMEM;
        total += add;
    }
    /* +1: sl__fmt_i64 writes a NUL after the digits, overwritten by the CR. */
    if (sl__bytes_reserve(a, out, total + 1)) return SL_ENOMEM;
    uint8_t *w = out->ptr + out->len;
    w = put_header(w, '*', (uint64_t)argc);
    for (int i = 0; i < argc; i++) {
        size_t l = argvlen ? argvlen[i] : strlen(argv[i]);
        w = put_header(w, '$', l);
        if (l) memcpy(w, argv[i], l);
        w += l;
        *w++ = '\r';
        *w++ = '\n';
    }
    out->len += total;
    return 0;
}

/* -------------------------------------------------------- request scanner */

static int scan_fail(char *errmsg, const char *fmt, ...)
{
    if (errmsg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errmsg, 128, fmt, ap);
        va_end(ap);
    }
    return SL_EINVAL;
}

#if defined(__GNUC__)
#define SL__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define SL__LIKELY(x) (x)
#endif

/* Reads "<type><digits>\r\n" at buf[pos, len): 1 and *v, 0 when incomplete, -1 malformed.
 * Inlined: it runs three times per GET on the path of every request. */
static inline int scan_header(const uint8_t *buf, size_t len, size_t pos, uint8_t type, uint64_t *v,
                              size_t *after)
{
    if (pos >= len) return 0;
    if (buf[pos] != type) return -1;
    size_t i = pos + 1;
    uint64_t x = 0;
    size_t end = len - i > 11 ? i + 11 : len; /* at most 10 digits, then '\r' */
    while (i < end && (unsigned)(buf[i] - '0') <= 9) x = x * 10 + (uint64_t)(buf[i++] - '0');
    if (i == len) return 0;
    if (i == pos + 1 || i - pos - 1 > 10 || buf[i] != '\r') return -1;
    if (i + 1 == len) return 0;
    if (buf[i + 1] != '\n') return -1;
    *v = x;
    *after = i + 2;
    return 1;
}

int sl__resp_scan_request(const sl__alloc *a, const uint8_t *buf, size_t len, size_t *used,
                          sl__arg **args, size_t *args_len, size_t *args_cap, uint32_t *argc,
                          char *errmsg)
{
    *used = 0;
    if (len == 0) return 0;
    if (buf[0] != '*')
        return scan_fail(errmsg, "a command must be a RESP array of bulk strings (inline commands are not accepted)");
    uint64_t n;
    size_t pos;
    int h = scan_header(buf, len, 0, '*', &n, &pos);
    if (h < 0) return scan_fail(errmsg, "bad command array header");
    if (h == 0) return 0;
    if (n < 1) return scan_fail(errmsg, "empty command array");
    if (n > UINT32_MAX) return scan_fail(errmsg, "too many arguments");
    if (!args) {
        /* Framing only (a plain client needs no argument views): count and check. */
        for (uint64_t k = 0; k < n; k++) {
            uint64_t l;
            size_t after;
            h = scan_header(buf, len, pos, '$', &l, &after);
            if (h == 0) return 0;
            if (h < 0) return scan_fail(errmsg, "argument %llu is not a bulk string", (unsigned long long)k + 1);
            if (l > UINT32_MAX || after + l > UINT32_MAX) return scan_fail(errmsg, "request longer than 4 GiB");
            if (len - after < l + 2) return 0;
            if (buf[after + l] != '\r' || buf[after + l + 1] != '\n')
                return scan_fail(errmsg, "argument %llu not followed by CRLF", (unsigned long long)k + 1);
            pos = after + l + 2;
        }
        *used = pos;
        *argc = (uint32_t)n;
        return 1;
    }
    size_t start = *args_len;
    /* Room for every argument at once; a request cannot have more arguments than bytes. */
    if (*args_cap - start < n) {
        void *ptr = *args;
        uint64_t want = n <= (len - pos) / 4 + 1 ? n : (len - pos) / 4 + 1;
        int rc = sl__grow(a, &ptr, args_cap, start + (size_t)want, sizeof(sl__arg));
        *args = ptr;
        if (rc) return SL_ENOMEM;
    }
    sl__arg *out = *args + start;
    size_t room = *args_cap - start;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t l;
        size_t after;
        h = scan_header(buf, len, pos, '$', &l, &after);
        if (SL__LIKELY(h > 0 && l <= UINT32_MAX && after + l <= UINT32_MAX && len - after >= l + 2 &&
                       buf[after + l] == '\r' && buf[after + l + 1] == '\n' && k < room)) {
            out[k] = (sl__arg){ (uint32_t)after, (uint32_t)l };
            pos = after + l + 2;
            continue;
        }
        /* The slow path: incomplete, malformed, or (a huge count) more room needed. */
        if (h == 0) return 0;
        if (h < 0) return scan_fail(errmsg, "argument %llu is not a bulk string", (unsigned long long)k + 1);
        if (l > UINT32_MAX || after + l > UINT32_MAX) return scan_fail(errmsg, "request longer than 4 GiB");
        if (len - after < l + 2) return 0;
        if (buf[after + l] != '\r' || buf[after + l + 1] != '\n')
            return scan_fail(errmsg, "argument %llu not followed by CRLF", (unsigned long long)k + 1);
        void *ptr = *args;
        int rc = sl__grow(a, &ptr, args_cap, start + (size_t)k + 1, sizeof(sl__arg));
        *args = ptr;
        if (rc) return SL_ENOMEM;
        out = *args + start;
        room = *args_cap - start;
        k--; /* retry this argument with room */
    }
    *args_len = start + (size_t)n;
    *used = pos;
    *argc = (uint32_t)n;
    return 1;
}
