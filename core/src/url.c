/* url: see url.h. Runs once per client, so clarity of the error messages matters more
 * than speed; it still never allocates and never reads past the string. */
#include "url.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "slotlane.h"

static int fail(char *errmsg, int code, const char *fmt, ...)
{
    if (errmsg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errmsg, 128, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }

/* Case-insensitive prefix test on s[0, n). */
static int has_prefix(const char *s, size_t n, const char *p)
{
    size_t m = strlen(p);
    if (n < m) return 0;
    for (size_t i = 0; i < m; i++)
        if (lower((unsigned char)s[i]) != p[i]) return 0;
    return 1;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Percent-decodes s[0, n) into out (cap bytes with the NUL). */
static int decode(const char *s, size_t n, char *out, size_t cap, const char *what, char *errmsg)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n) return fail(errmsg, SL_EINVAL, "truncated %%-escape in the %s", what);
            int hi = hexval((unsigned char)s[i + 1]), lo = hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0) return fail(errmsg, SL_EINVAL, "bad %%-escape in the %s", what);
            c = hi * 16 + lo;
            if (c == 0) return fail(errmsg, SL_EINVAL, "%%00 in the %s", what);
            i += 2;
        }
        if (o + 1 >= cap) return fail(errmsg, SL_EINVAL, "%s longer than %zu bytes", what, cap - 1);
        out[o++] = (char)c;
    }
    out[o] = 0;
    return 0;
}

static int parse_port(const char *s, size_t n, int *port, int k, char *errmsg)
{
    if (n == 0) return fail(errmsg, SL_EINVAL, "address %d: missing port after ':'", k);
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return fail(errmsg, SL_EINVAL, "address %d: bad port \"%.*s\"", k, (int)(n > 16 ? 16 : n), s);
        if (v <= 65535) v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return fail(errmsg, SL_EINVAL, "address %d: port %.*s out of range 1-65535", k,
                    (int)(n > 16 ? 16 : n), s);
    *port = (int)v;
    return 0;
}

static int host_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
}

/* host[:port], [v6][:port] at s[0, n) -> *ep. */
static int parse_hostport(const char *s, size_t n, sl__endpoint *ep, int k, char *errmsg)
{
    const char *host;
    size_t hlen;
    const char *rest;
    size_t rlen;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) return fail(errmsg, SL_EINVAL, "address %d: '[' without ']'", k);
        host = s + 1;
        hlen = (size_t)(close - host);
        if (hlen == 0) return fail(errmsg, SL_EINVAL, "address %d: empty host", k);
        for (size_t i = 0; i < hlen; i++) {
            int c = (unsigned char)host[i];
            if (!(hexval(c) >= 0 || c == ':' || c == '.' || c == '%' || host_char(c)))
                return fail(errmsg, SL_EINVAL, "address %d: bad character in IPv6 address", k);
        }
        if (!memchr(host, ':', hlen))
            return fail(errmsg, SL_EINVAL, "address %d: brackets hold no IPv6 address", k);
        rest = close + 1;
        rlen = n - (size_t)(rest - s);
        if (rlen && rest[0] != ':')
            return fail(errmsg, SL_EINVAL, "address %d: unexpected text after ']'", k);
    } else {
        const char *colon = memchr(s, ':', n);
        host = s;
        hlen = colon ? (size_t)(colon - s) : n;
        rest = colon ? colon : s + n;
        rlen = n - hlen;
        if (colon && memchr(colon + 1, ':', n - hlen - 1))
            return fail(errmsg, SL_EINVAL, "address %d: IPv6 addresses need brackets: [addr]:port", k);
        if (hlen == 0) return fail(errmsg, SL_EINVAL, "address %d: empty host", k);
        for (size_t i = 0; i < hlen; i++)
            if (!host_char((unsigned char)host[i]))
                return fail(errmsg, SL_EINVAL, "address %d: bad character '%c' in host", k,
                            host[i] > 32 && host[i] < 127 ? host[i] : '?');
    }
    if (hlen >= SL__HOST_MAX)
        return fail(errmsg, SL_EINVAL, "address %d: host longer than %d bytes", k, SL__HOST_MAX - 1);
    memcpy(ep->host, host, hlen);
    ep->host[hlen] = 0;
    ep->port = 6379;
    if (rlen) return parse_port(rest + 1, rlen - 1, &ep->port, k, errmsg);
    return 0;
}

/* One element of the list, s[0, n), trimmed. */
static int parse_one(const char *s, size_t n, sl__url *out, int k, int *creds_seen, char *errmsg)
{
    int scheme = 0, tls = 0;
    if (has_prefix(s, n, "rediss://")) {
        s += 9;
        n -= 9;
        scheme = 1;
        tls = 1;
    } else if (has_prefix(s, n, "redis://")) {
        s += 8;
        n -= 8;
        scheme = 1;
    } else {
        const char *sep = NULL;
        for (size_t i = 0; i + 2 < n; i++)
            if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/') {
                sep = s + i;
                break;
            }
        if (sep)
            return fail(errmsg, SL_EINVAL, "address %d: unsupported scheme \"%.*s\" (use redis:// or rediss://)", k,
                        (int)((sep - s) > 16 ? 16 : (sep - s)), s);
    }
    if (k > 1 && tls != out->tls)
        return fail(errmsg, SL_EINVAL, "address %d: rediss:// and plain addresses mixed in one list", k);
    out->tls = tls;

    /* The authority ends at the path; the userinfo ends at the authority's last '@'. */
    const char *slash = memchr(s, '/', n);
    size_t alen = slash ? (size_t)(slash - s) : n;
    const char *at = NULL;
    for (size_t i = alen; i > 0; i--)
        if (s[i - 1] == '@') {
            at = s + i - 1;
            break;
        }
    if (at) {
        if (!scheme)
            return fail(errmsg, SL_EINVAL, "address %d: credentials need the redis:// form", k);
        sl__url tmp;
        const char *ui = s;
        size_t ulen = (size_t)(at - s);
        const char *colon = memchr(ui, ':', ulen);
        size_t namelen = colon ? (size_t)(colon - ui) : ulen;
        int rc = decode(ui, namelen, tmp.username, sizeof tmp.username, "username", errmsg);
        if (rc) return rc;
        tmp.has_password = colon != NULL;
        tmp.password[0] = 0;
        if (colon) {
            rc = decode(colon + 1, ulen - namelen - 1, tmp.password, sizeof tmp.password, "password", errmsg);
            if (rc) return rc;
        }
        if (*creds_seen && (strcmp(tmp.username, out->username) || strcmp(tmp.password, out->password) ||
                            tmp.has_password != out->has_password))
            return fail(errmsg, SL_EINVAL, "address %d: credentials differ between seeds", k);
        memcpy(out->username, tmp.username, sizeof tmp.username);
        memcpy(out->password, tmp.password, sizeof tmp.password);
        out->has_password = tmp.has_password;
        *creds_seen = 1;
        alen -= (size_t)(at + 1 - s);
        n -= (size_t)(at + 1 - s);
        s = at + 1;
    }

    /* Only after the userinfo: a password may hold '?' or '#'. */
    if (memchr(s, '?', n) || memchr(s, '#', n))
        return fail(errmsg, SL_EINVAL, "address %d: query parameters are not supported", k);
    if (out->nseeds == SL__MAX_SEEDS)
        return fail(errmsg, SL_EINVAL, "more than %d seed addresses", SL__MAX_SEEDS);
    int rc = parse_hostport(s, alen, &out->seeds[out->nseeds], k, errmsg);
    if (rc) return rc;
    out->nseeds++;

    if (alen < n) { /* "/db" */
        if (!scheme) return fail(errmsg, SL_EINVAL, "address %d: a /db needs the redis:// form", k);
        const char *d = s + alen + 1;
        size_t dlen = n - alen - 1;
        if (dlen == 0) return 0; /* "redis://host/" : no db */
        long v = 0;
        for (size_t i = 0; i < dlen; i++) {
            if (d[i] < '0' || d[i] > '9')
                return fail(errmsg, SL_EINVAL, "address %d: bad db \"%.*s\" (a number expected)", k,
                            (int)(dlen > 16 ? 16 : dlen), d);
            v = v * 10 + (d[i] - '0');
            if (v > 1000000) return fail(errmsg, SL_EINVAL, "address %d: db number too large", k);
        }
        if (out->db >= 0 && out->db != (int)v)
            return fail(errmsg, SL_EINVAL, "address %d: db differs between seeds", k);
        out->db = (int)v;
    }
    return 0;
}

int sl__url_parse(const char *s, sl__url *out, char *errmsg)
{
    if (errmsg) errmsg[0] = 0;
    if (!out) return fail(errmsg, SL_EINVAL, "no output");
    memset(out, 0, sizeof *out);
    out->db = -1;
    if (!s) return fail(errmsg, SL_EINVAL, "no address given");
    size_t total = strlen(s);
    if (total > 64 * 1024) return fail(errmsg, SL_EINVAL, "address list too long");
    int creds_seen = 0, k = 0;
    const char *p = s, *end = s + total;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        const char *a = p, *b = e;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        k++;
        if (a == b) {
            int rc = fail(errmsg, SL_EINVAL, total ? "address %d: empty address in the list" : "empty address", k);
            memset(out, 0, sizeof *out);
            out->db = -1;
            return rc;
        }
        int rc = parse_one(a, (size_t)(b - a), out, k, &creds_seen, errmsg);
        if (rc) {
            /* Leave nothing half-parsed (and no password copy) behind. */
            memset(out, 0, sizeof *out);
            out->db = -1;
            return rc;
        }
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}
