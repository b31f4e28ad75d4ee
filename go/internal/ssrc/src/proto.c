/* proto: see proto.h. Error strings are Redis 7.0's, since clients and tests match them. */
#include "proto.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sv_parser_init(sv_parser *p)
{
    memset(p, 0, sizeof(*p));
    sv_parser_reset(p);
}

void sv_parser_reset(sv_parser *p)
{
    p->pos = 0;
    p->mbulk = -1;
    p->bulk = -1;
    p->argc = 0;
    p->is_inline = 0;
    p->error = NULL;
}

void sv_parser_free(sv_parser *p)
{
    free(p->off);
    free(p->len);
    free(p->inline_buf);
    p->off = p->len = NULL;
    p->inline_buf = NULL;
    p->cap = 0;
    p->inline_cap = 0;
}

static void push_arg(sv_parser *p, size_t off, size_t len)
{
    if (p->argc == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->off = sv_realloc(p->off, sizeof(size_t) * (size_t)p->cap);
        p->len = sv_realloc(p->len, sizeof(size_t) * (size_t)p->cap);
    }
    p->off[p->argc] = off;
    p->len[p->argc] = len;
    p->argc++;
}

static int fail(sv_parser *p, const char *msg)
{
    p->error = msg;
    return SV_PARSE_ERR;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Redis's sdssplitargs into p->inline_buf; returns 0 on unbalanced quotes. */
static int split_inline(sv_parser *p, const char *line, size_t n)
{
    if (p->inline_cap < n + 1) {
        p->inline_cap = n + 1;
        p->inline_buf = sv_realloc(p->inline_buf, p->inline_cap);
    }
    char *out = p->inline_buf;
    size_t o = 0, i = 0;
    p->argc = 0;
    while (1) {
        while (i < n && isspace((unsigned char)line[i])) i++;
        if (i >= n) return 1;
        int inq = 0, insq = 0, done = 0;
        size_t start = o;
        while (!done) {
            if (inq) {
                if (i >= n) return 0;
                if (line[i] == '\\' && i + 3 < n + 0 && line[i + 1] == 'x' && hexval(line[i + 2]) >= 0 && hexval(line[i + 3]) >= 0) {
                    out[o++] = (char)(hexval(line[i + 2]) * 16 + hexval(line[i + 3]));
                    i += 3;
                } else if (line[i] == '\\' && i + 1 < n) {
                    char c;
                    i++;
                    switch (line[i]) {
                    case 'n': c = '\n'; break;
                    case 'r': c = '\r'; break;
                    case 't': c = '\t'; break;
                    case 'b': c = '\b'; break;
                    case 'a': c = '\a'; break;
                    default: c = line[i]; break;
                    }
                    out[o++] = c;
                } else if (line[i] == '"') {
                    if (i + 1 < n && !isspace((unsigned char)line[i + 1])) return 0;
                    done = 1;
                } else {
                    out[o++] = line[i];
                }
            } else if (insq) {
                if (i >= n) return 0;
                if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
                    i++;
                    out[o++] = '\'';
                } else if (line[i] == '\'') {
                    if (i + 1 < n && !isspace((unsigned char)line[i + 1])) return 0;
                    done = 1;
                } else {
                    out[o++] = line[i];
                }
            } else {
                if (i >= n) { done = 1; break; }
                switch (line[i]) {
                case ' ': case '\n': case '\r': case '\t': case '\0':
                    done = 1;
                    break;
                case '"': inq = 1; break;
                case '\'': insq = 1; break;
                default: out[o++] = line[i]; break;
                }
            }
            if (i < n) i++;
        }
        push_arg(p, start, o - start);
    }
}

static int parse_inline(sv_parser *p, const char *buf, size_t len)
{
    const char *nl = memchr(buf, '\n', len);
    if (!nl) {
        if (len > SV_INLINE_MAX) return fail(p, "Protocol error: too big inline request");
        p->pos = len;
        return SV_PARSE_MORE;
    }
    size_t linelen = (size_t)(nl - buf);
    size_t consumed = linelen + 1;
    if (linelen && buf[linelen - 1] == '\r') linelen--;
    if (!split_inline(p, buf, linelen)) return fail(p, "Protocol error: unbalanced quotes in request");
    p->is_inline = 1;
    p->pos = consumed;
    return SV_PARSE_OK;
}

/* Reads a "<prefix><integer>\r\n" line at buf+pos. Returns 1 with *v, 0 for more, -1 bad. */
static int read_len_line(const char *buf, size_t len, size_t pos, long long *v, size_t *next, int *toobig)
{
    const char *cr = memchr(buf + pos, '\r', len - pos);
    *toobig = 0;
    if (!cr) {
        if (len - pos > SV_INLINE_MAX) *toobig = 1;
        return 0;
    }
    if ((size_t)(cr - buf) + 1 >= len) return 0; /* need the '\n' */
    if (!sv_str2ll(buf + pos + 1, (size_t)(cr - (buf + pos + 1)), v)) return -1;
    *next = (size_t)(cr - buf) + 2;
    return 1;
}

int sv_parse(sv_parser *p, const char *buf, size_t len)
{
    if (len == 0) return SV_PARSE_MORE;
    if (buf[0] != '*') {
        p->pos = 0;
        return parse_inline(p, buf, len);
    }
    if (p->mbulk < 0) {
        long long v;
        size_t next;
        int toobig;
        int r = read_len_line(buf, len, 0, &v, &next, &toobig);
        if (r == 0) {
            if (toobig) return fail(p, "Protocol error: too big mbulk count string");
            return SV_PARSE_MORE;
        }
        if (r < 0 || v > SV_MULTIBULK_MAX) return fail(p, "Protocol error: invalid multibulk length");
        p->pos = next;
        if (v <= 0) {
            p->argc = 0;
            return SV_PARSE_OK;
        }
        p->mbulk = v;
        p->argc = 0;
    }
    while (p->argc < p->mbulk) {
        if (p->bulk < 0) {
            if (p->pos >= len) return SV_PARSE_MORE;
            if (buf[p->pos] != '$') {
                snprintf(p->errbuf, sizeof(p->errbuf), "Protocol error: expected '$', got '%c'", buf[p->pos]);
                return fail(p, p->errbuf);
            }
            long long v;
            size_t next;
            int toobig;
            int r = read_len_line(buf, len, p->pos, &v, &next, &toobig);
            if (r == 0) {
                if (toobig) return fail(p, "Protocol error: too big bulk count string");
                return SV_PARSE_MORE;
            }
            if (r < 0 || v < 0 || v > SV_BULK_MAX) return fail(p, "Protocol error: invalid bulk length");
            p->pos = next;
            p->bulk = v;
        }
        if (len - p->pos < (size_t)p->bulk + 2) return SV_PARSE_MORE;
        /* Redis does not check the CRLF after the bulk, it skips two bytes. */
        push_arg(p, p->pos, (size_t)p->bulk);
        p->pos += (size_t)p->bulk + 2;
        p->bulk = -1;
    }
    return SV_PARSE_OK;
}

void sv_parser_args(sv_parser *p, const char *buf, sv_str *argv)
{
    const char *base = p->is_inline ? p->inline_buf : buf;
    for (int i = 0; i < p->argc; i++) {
        argv[i].p = base + p->off[i];
        argv[i].len = p->len[i];
    }
}

/* ---- reply writer ---- */

static inline void add_prefix_len(sv_reply *r, char prefix, long long n)
{
    sv_buf_reserve(r->out, 24);
    char *d = r->out->data + r->out->len;
    d[0] = prefix;
    size_t k = 1 + sv_ll2str(d + 1, n);
    d[k++] = '\r';
    d[k++] = '\n';
    r->out->len += k;
}

void sv_add_raw(sv_reply *r, const char *s, size_t n) { sv_buf_append(r->out, s, n); }

void sv_add_status(sv_reply *r, const char *s)
{
    size_t n = strlen(s);
    sv_buf_reserve(r->out, n + 3);
    char *d = r->out->data + r->out->len;
    d[0] = '+';
    memcpy(d + 1, s, n);
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    r->out->len += n + 3;
}

void sv_add_ok(sv_reply *r) { sv_buf_append(r->out, "+OK\r\n", 5); }

void sv_add_error(sv_reply *r, const char *msg)
{
    /* As Redis's addReplyError: a message starting with '-' carries its own error
     * code ("-WRONGTYPE ..."); anything else is an "ERR". */
    size_t n = strlen(msg);
    sv_buf_reserve(r->out, n + 8);
    char *d = r->out->data + r->out->len;
    size_t k = 0;
    if (msg[0] == '-') {
        msg++;
        n--;
        d[k++] = '-';
    } else {
        memcpy(d, "-ERR ", 5);
        k = 5;
    }
    /* newlines would break the protocol */
    for (size_t i = 0; i < n; i++) d[k++] = (msg[i] == '\r' || msg[i] == '\n') ? ' ' : msg[i];
    d[k++] = '\r';
    d[k++] = '\n';
    r->out->len += k;
}

void sv_add_errorf(sv_reply *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    sv_add_error(r, buf);
}

void sv_add_int(sv_reply *r, long long v) { add_prefix_len(r, ':', v); }

void sv_add_bulk(sv_reply *r, const void *p, size_t n)
{
    sv_buf_reserve(r->out, n + 26);
    add_prefix_len(r, '$', (long long)n);
    char *d = r->out->data + r->out->len;
    if (n) memcpy(d, p, n);
    d[n] = '\r';
    d[n + 1] = '\n';
    r->out->len += n + 2;
}

void sv_add_bulk_cstr(sv_reply *r, const char *s) { sv_add_bulk(r, s, strlen(s)); }

void sv_add_bulk_ll(sv_reply *r, long long v)
{
    char tmp[24];
    sv_add_bulk(r, tmp, sv_ll2str(tmp, v));
}

void sv_add_null(sv_reply *r)
{
    if (r->proto >= 3) sv_buf_append(r->out, "_\r\n", 3);
    else sv_buf_append(r->out, "$-1\r\n", 5);
}

void sv_add_null_array(sv_reply *r)
{
    if (r->proto >= 3) sv_buf_append(r->out, "_\r\n", 3);
    else sv_buf_append(r->out, "*-1\r\n", 5);
}

void sv_add_array(sv_reply *r, long long n) { add_prefix_len(r, '*', n); }
void sv_add_map(sv_reply *r, long long n)
{
    if (r->proto >= 3) add_prefix_len(r, '%', n);
    else add_prefix_len(r, '*', n * 2);
}
void sv_add_set(sv_reply *r, long long n) { add_prefix_len(r, r->proto >= 3 ? '~' : '*', n); }
void sv_add_empty_array(sv_reply *r) { sv_buf_append(r->out, "*0\r\n", 4); }

void sv_add_double(sv_reply *r, double d)
{
    char tmp[64];
    size_t n = sv_d2str(tmp, sizeof(tmp), d);
    if (r->proto >= 3) {
        sv_buf_reserve(r->out, n + 3);
        r->out->data[r->out->len++] = ',';
        sv_buf_append(r->out, tmp, n);
        sv_buf_append(r->out, "\r\n", 2);
    } else {
        sv_add_bulk(r, tmp, n);
    }
}

void sv_add_bool(sv_reply *r, int b)
{
    if (r->proto >= 3) sv_buf_append(r->out, b ? "#t\r\n" : "#f\r\n", 4);
    else sv_buf_append(r->out, b ? ":1\r\n" : ":0\r\n", 4);
}

void sv_add_verbatim(sv_reply *r, const char *s, size_t n)
{
    if (r->proto >= 3) {
        add_prefix_len(r, '=', (long long)n + 4);
        sv_buf_append(r->out, "txt:", 4);
        sv_buf_append(r->out, s, n);
        sv_buf_append(r->out, "\r\n", 2);
    } else {
        sv_add_bulk(r, s, n);
    }
}

/* "<c><number>\r\n" at p (c the type byte); the number, or -1, and p past it. */
static long long peek_line(const char **p, const char *end, char c)
{
    const char *q = *p;
    if (q >= end || *q != c) return -1;
    long long v = 0;
    for (q++; q < end && *q >= '0' && *q <= '9'; q++) {
        v = v * 10 + (*q - '0');
        if (v > (1LL << 40)) return -1;
    }
    if (end - q < 2 || q[0] != '\r' || q[1] != '\n') return -1;
    *p = q + 2;
    return v;
}

int sv_peek_keys(const char *buf, size_t len, sv_str *keys, int max)
{
    const char *p = buf, *end = buf + len;
    int n = 0;
    while (n < max) {
        long long argc = peek_line(&p, end, '*');
        if (argc < 1) break;
        sv_str key = {"", 0};
        long long i = 0;
        for (; i < argc; i++) {
            long long l = peek_line(&p, end, '$');
            if (l < 0 || end - p < l + 2) break;
            if (i == 1) key = (sv_str){p, (size_t)l};
            p += l + 2;
        }
        if (i < argc) break;
        keys[n++] = key;
    }
    return n;
}
