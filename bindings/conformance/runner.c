/*
 * sl_conformance — runs the language-neutral conformance cases (cases/NAME.json) through
 * libslotlane's public API and compares the reply records with the recorded replies.
 *
 *   sl_conformance [--resp 2|3] [--only SUBSTRING] [--verbose] URL CASEFILE...
 *
 * The client is created from URL in SL_MODE_AUTO; a case of mode "cluster" runs only
 * when the client is in cluster mode, one of mode "plain" only when it is plain. Each
 * case runs once per RESP version it lists (with resp_version set on a client of its
 * own), after FLUSHALL on every primary; its setup commands run as one batch (their
 * replies must not be errors), its commands as one more batch (one pipeline). Prints
 * one line per case and version, then "N passed, M failed"; exits 1 when
 * a case failed, 2 on bad usage or unreadable cases.
 *
 * The JSON reader below is small and strict (RFC 8259, UTF-8 in, \u escapes with
 * surrogate pairs), enough for the case files.
 */
#include "slotlane.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ JSON */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    int b;
    char *s;            /* J_STR: bytes (NUL-terminated, may hold NULs: slen); J_NUM: the token text */
    size_t slen;
    struct jval *items; /* J_ARR: n values; J_OBJ: 2n values, key, value... */
    size_t n;
} jval;

typedef struct {
    const char *p, *end;
    const char *err;
    int line;
} jparser;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "sl_conformance: out of memory\n");
        exit(2);
    }
    return q;
}

static void jfree(jval *v)
{
    if (!v)
        return;
    free(v->s);
    if (v->type == J_ARR || v->type == J_OBJ) {
        size_t cnt = v->type == J_OBJ ? 2 * v->n : v->n;
        for (size_t i = 0; i < cnt; i++)
            jfree(&v->items[i]);
        free(v->items);
    }
}

static void jws(jparser *jp)
{
    while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r')) {
        if (*jp->p == '\n')
            jp->line++;
        jp->p++;
    }
}

static int jfail(jparser *jp, const char *msg)
{
    if (!jp->err)
        jp->err = msg;
    return -1;
}

static int jparse(jparser *jp, jval *out, int depth);

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(char **buf, size_t *len, size_t *cap, unsigned cp)
{
    if (*len + 5 > *cap) {
        *cap = *cap * 2 + 16;
        *buf = xrealloc(*buf, *cap);
    }
    char *b = *buf + *len;
    if (cp < 0x80) { b[0] = (char)cp; *len += 1; }
    else if (cp < 0x800) { b[0] = (char)(0xC0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3F)); *len += 2; }
    else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F)); *len += 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); *len += 4;
    }
}

static int jstring(jparser *jp, char **s, size_t *slen)
{
    size_t len = 0, cap = 32;
    char *buf = xrealloc(NULL, cap);
    jp->p++; /* opening quote */
    for (;;) {
        if (jp->p >= jp->end) { free(buf); return jfail(jp, "unterminated string"); }
        unsigned char c = (unsigned char)*jp->p++;
        if (c == '"')
            break;
        if (c < 0x20) { free(buf); return jfail(jp, "control character in string"); }
        if (c != '\\') {
            if (len + 2 > cap) { cap *= 2; buf = xrealloc(buf, cap); }
            buf[len++] = (char)c;
            continue;
        }
        if (jp->p >= jp->end) { free(buf); return jfail(jp, "bad escape"); }
        char e = *jp->p++;
        unsigned cp;
        switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (jp->end - jp->p < 4 || hex4(jp->p, &cp)) { free(buf); return jfail(jp, "bad \\u escape"); }
            jp->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (jp->end - jp->p < 6 || jp->p[0] != '\\' || jp->p[1] != 'u' || hex4(jp->p + 2, &lo)
                    || lo < 0xDC00 || lo > 0xDFFF) { free(buf); return jfail(jp, "bad surrogate pair"); }
                jp->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            break;
        default: free(buf); return jfail(jp, "bad escape");
        }
        put_utf8(&buf, &len, &cap, cp);
    }
    buf = xrealloc(buf, len + 1);
    buf[len] = '\0';
    *s = buf;
    *slen = len;
    return 0;
}

static int jparse(jparser *jp, jval *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > 64)
        return jfail(jp, "nesting too deep");
    jws(jp);
    if (jp->p >= jp->end)
        return jfail(jp, "unexpected end");
    char c = *jp->p;
    if (c == '"') {
        out->type = J_STR;
        return jstring(jp, &out->s, &out->slen);
    }
    if (c == '[' || c == '{') {
        int obj = c == '{';
        size_t cap = 0;
        out->type = obj ? J_OBJ : J_ARR;
        jp->p++;
        jws(jp);
        if (jp->p < jp->end && *jp->p == (obj ? '}' : ']')) { jp->p++; return 0; }
        for (;;) {
            size_t need = obj ? 2 * out->n + 2 : out->n + 1;
            if (need > cap) { cap = need * 2; out->items = xrealloc(out->items, cap * sizeof(jval)); }
            if (obj) {
                jws(jp);
                if (jp->p >= jp->end || *jp->p != '"') return jfail(jp, "expected a key");
                jval *k = &out->items[2 * out->n];
                memset(k, 0, sizeof *k);
                k->type = J_STR;
                if (jstring(jp, &k->s, &k->slen)) return -1;
                jws(jp);
                if (jp->p >= jp->end || *jp->p != ':') { out->n++; memset(&out->items[2 * out->n - 1], 0, sizeof(jval)); return jfail(jp, "expected ':'"); }
                jp->p++;
                if (jparse(jp, &out->items[2 * out->n + 1], depth + 1)) { out->n++; return -1; }
            } else if (jparse(jp, &out->items[out->n], depth + 1)) {
                out->n++;
                return -1;
            }
            out->n++;
            jws(jp);
            if (jp->p < jp->end && *jp->p == ',') { jp->p++; continue; }
            if (jp->p < jp->end && *jp->p == (obj ? '}' : ']')) { jp->p++; return 0; }
            return jfail(jp, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    if (c == 't' && jp->end - jp->p >= 4 && !memcmp(jp->p, "true", 4)) { out->type = J_BOOL; out->b = 1; jp->p += 4; return 0; }
    if (c == 'f' && jp->end - jp->p >= 5 && !memcmp(jp->p, "false", 5)) { out->type = J_BOOL; jp->p += 5; return 0; }
    if (c == 'n' && jp->end - jp->p >= 4 && !memcmp(jp->p, "null", 4)) { out->type = J_NULL; jp->p += 4; return 0; }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const char *s = jp->p;
        while (jp->p < jp->end && (isdigit((unsigned char)*jp->p) || strchr("+-.eE", *jp->p)))
            jp->p++;
        out->type = J_NUM;
        out->slen = (size_t)(jp->p - s);
        out->s = xrealloc(NULL, out->slen + 1);
        memcpy(out->s, s, out->slen);
        out->s[out->slen] = '\0';
        return 0;
    }
    return jfail(jp, "unexpected character");
}

static const jval *jget(const jval *obj, const char *key)
{
    if (!obj || obj->type != J_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->items[2 * i].s, key))
            return &obj->items[2 * i + 1];
    return NULL;
}

static const char *jstr(const jval *obj, const char *key)
{
    const jval *v = jget(obj, key);
    return v && v->type == J_STR ? v->s : NULL;
}

/* ------------------------------------------------------------ helpers */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes hex into a new buffer; returns NULL on bad hex. */
static char *unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2)
        return NULL;
    char *out = xrealloc(NULL, n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        int a = hexval(hex[2 * i]), b = hexval(hex[2 * i + 1]);
        if (a < 0 || b < 0) { free(out); return NULL; }
        out[i] = (char)(a << 4 | b);
    }
    *len = n / 2;
    return out;
}

/* The expected bytes of a string-like expected node ("value" or "hex"). */
static int expected_bytes(const jval *e, char **buf, size_t *len)
{
    const jval *v = jget(e, "value");
    if (v && v->type == J_STR) {
        *buf = xrealloc(NULL, v->slen + 1);
        memcpy(*buf, v->s, v->slen);
        *len = v->slen;
        return 0;
    }
    const char *h = jstr(e, "hex");
    if (h && (*buf = unhex(h, len)) != NULL)
        return 0;
    return -1;
}

typedef struct {
    char msg[1024];
} failure;

static void failf(failure *f, const char *fmt, ...)
{
    if (f->msg[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
}

static const char *type_name(int t)
{
    static const char *names[] = {"?", "string", "status", "error", "integer", "nil", "array", "map",
                                  "set", "double", "bool", "bignum", "verb", "push"};
    return t >= 1 && t <= 13 ? names[t] : "?";
}

static int type_from_name(const char *s)
{
    for (int t = 1; t <= 13; t++)
        if (s && !strcmp(s, type_name(t)))
            return t;
    return -1;
}

static const char *kind_name(int k)
{
    static const char *names[] = {"server", "io", "timeout", "redirects", "protocol", "cancelled", "cluster", "argument"};
    return k >= 0 && k <= 7 ? names[k] : "?";
}

/* A short printable rendering of a record, for messages. */
static void describe(const sl_reply *r, const uint8_t *data, char *out, size_t cap)
{
    char text[96];
    size_t n = 0;
    if (r->type == SL_REPLY_STRING || r->type == SL_REPLY_STATUS || r->type == SL_REPLY_ERROR
        || r->type == SL_REPLY_DOUBLE || r->type == SL_REPLY_BIGNUM || r->type == SL_REPLY_VERB) {
        for (uint32_t i = 0; i < r->len && n + 5 < sizeof text; i++) {
            unsigned char c = data[r->offset + i];
            if (c >= 0x20 && c < 0x7f && c != '"') text[n++] = (char)c;
            else n += (size_t)snprintf(text + n, sizeof text - n, "\\x%02x", c);
        }
    }
    text[n] = '\0';
    switch (r->type) {
    case SL_REPLY_INTEGER: snprintf(out, cap, "integer %lld", (long long)r->value.integer); break;
    case SL_REPLY_BOOL: snprintf(out, cap, "bool %lld", (long long)r->value.integer); break;
    case SL_REPLY_NIL: snprintf(out, cap, "nil"); break;
    case SL_REPLY_ARRAY: case SL_REPLY_MAP: case SL_REPLY_SET: case SL_REPLY_PUSH:
        snprintf(out, cap, "%s of %u", type_name(r->type), r->len); break;
    case SL_REPLY_ERROR: snprintf(out, cap, "error(%s) \"%s\"", kind_name(r->flags), text); break;
    default: snprintf(out, cap, "%s \"%s\"", type_name(r->type), text); break;
    }
}

/* Records of the subtree at *i (the record and its descendants). */
static size_t subtree_size(const sl_reply *recs, size_t nrec, size_t i)
{
    size_t pending = 1, j = i;
    while (pending && j < nrec) {
        const sl_reply *r = &recs[j++];
        pending--;
        if (r->type == SL_REPLY_ARRAY || r->type == SL_REPLY_MAP || r->type == SL_REPLY_SET || r->type == SL_REPLY_PUSH)
            pending += r->len;
    }
    return j - i;
}

/* Compares the expected node e with the records at *i; advances *i past the subtree. */
static int match(const jval *e, const sl_reply *recs, size_t nrec, const uint8_t *data, size_t *i,
                 const char *path, failure *f)
{
    char got[160];
    if (*i >= nrec) {
        failf(f, "%s: missing record", path);
        return -1;
    }
    const sl_reply *r = &recs[*i];
    size_t start = *i;
    describe(r, data, got, sizeof got);
    const char *tname = jstr(e, "type");
    int t = type_from_name(tname);
    if (t < 0) {
        failf(f, "%s: bad expected type %s", path, tname ? tname : "(none)");
        return -1;
    }
    *i = start + subtree_size(recs, nrec, start);
    if (r->type != t) {
        failf(f, "%s: expected %s, got %s", path, tname, got);
        return -1;
    }
    /* A "loose" reply (record.py: a time, an id, server text) is kept by its type only. */
    if (t != SL_REPLY_ERROR && t != SL_REPLY_NIL && !jget(e, "value") && !jget(e, "hex") && !jget(e, "children"))
        return 0;
    switch (t) {
    case SL_REPLY_STRING: case SL_REPLY_STATUS: case SL_REPLY_BIGNUM: case SL_REPLY_VERB: {
        char *want;
        size_t wlen;
        if (expected_bytes(e, &want, &wlen)) {
            failf(f, "%s: the expected %s has no value/hex", path, tname);
            return -1;
        }
        int ok = wlen == r->len && (wlen == 0 || memcmp(want, data + r->offset, wlen) == 0); /* data may be NULL when empty */
        free(want);
        if (!ok) {
            failf(f, "%s: expected %s \"%.60s%s\", got %s", path, tname, jstr(e, "value") ? jstr(e, "value") : jstr(e, "hex"),
                  (jstr(e, "value") && strlen(jstr(e, "value")) > 60) ? "..." : "", got);
            return -1;
        }
        if (t == SL_REPLY_VERB) {
            const char *fmt = jstr(e, "format");
            char have[4] = {(char)(r->value.integer & 0xff), (char)((r->value.integer >> 8) & 0xff),
                            (char)((r->value.integer >> 16) & 0xff), 0};
            if (!fmt || strcmp(fmt, have)) {
                failf(f, "%s: expected verbatim format %s, got %s", path, fmt ? fmt : "?", have);
                return -1;
            }
        }
        return 0;
    }
    case SL_REPLY_ERROR: {
        const char *prefix = jstr(e, "prefix");
        const char *kind = jstr(e, "kind");
        size_t pl = prefix ? strlen(prefix) : 0;
        if (prefix && (r->len < pl || memcmp(data + r->offset, prefix, pl) != 0)) {
            failf(f, "%s: expected an error starting with \"%s\", got %s", path, prefix, got);
            return -1;
        }
        if (kind && strcmp(kind, kind_name(r->flags))) {
            failf(f, "%s: expected an error of kind %s, got %s", path, kind, got);
            return -1;
        }
        return 0;
    }
    case SL_REPLY_INTEGER: {
        const jval *v = jget(e, "value");
        if (!v || v->type != J_NUM) { failf(f, "%s: the expected integer has no value", path); return -1; }
        errno = 0;
        long long want = strtoll(v->s, NULL, 10);
        if (errno || want != r->value.integer) {
            failf(f, "%s: expected integer %s, got %s", path, v->s, got);
            return -1;
        }
        return 0;
    }
    case SL_REPLY_BOOL: {
        const jval *v = jget(e, "value");
        if (!v || v->type != J_BOOL || v->b != (r->value.integer != 0)) {
            failf(f, "%s: expected bool %s, got %s", path, v && v->type == J_BOOL && v->b ? "true" : "false", got);
            return -1;
        }
        return 0;
    }
    case SL_REPLY_DOUBLE: {
        const char *v = jstr(e, "value");
        double want = v ? strtod(v, NULL) : NAN;
        double have = r->value.dbl;
        if (!v || !((isnan(want) && isnan(have)) || want == have)) {
            failf(f, "%s: expected double %s, got %s (%.17g)", path, v ? v : "?", got, have);
            return -1;
        }
        return 0;
    }
    case SL_REPLY_NIL:
        return 0;
    default: break;
    }
    /* aggregates */
    const jval *ch = jget(e, "children");
    size_t want_n = ch && ch->type == J_ARR ? ch->n : 0;
    if (r->len != want_n) {
        failf(f, "%s: expected %s of %zu, got %s", path, tname, want_n, got);
        return -1;
    }
    const jval *un = jget(e, "unordered");
    int unordered = un && un->type == J_BOOL && un->b;
    char sub[256];
    if (!unordered) {
        size_t j = start + 1;
        for (size_t k = 0; k < want_n; k++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, k);
            if (match(&ch->items[k], recs, nrec, data, &j, sub, f))
                return -1;
        }
        return 0;
    }
    /* Order-insensitive: match each expected child (a key-value pair for maps) with an
     * unused actual one. */
    size_t group = t == SL_REPLY_MAP ? 2 : 1;
    size_t ngroups = want_n / group;
    size_t *pos = xrealloc(NULL, (ngroups + 1) * sizeof *pos);
    char *used = calloc(ngroups + 1, 1);
    size_t j = start + 1;
    for (size_t g = 0; g < ngroups; g++) {
        pos[g] = j;
        for (size_t m = 0; m < group; m++)
            j += subtree_size(recs, nrec, j);
    }
    int rc = 0;
    for (size_t g = 0; g < ngroups && rc == 0; g++) {
        int found = 0;
        for (size_t a = 0; a < ngroups && !found; a++) {
            if (used[a])
                continue;
            failure scratch = {{0}};
            size_t q = pos[a];
            int ok = 1;
            for (size_t m = 0; m < group && ok; m++)
                ok = match(&ch->items[g * group + m], recs, nrec, data, &q, path, &scratch) == 0;
            if (ok) { used[a] = 1; found = 1; }
        }
        if (!found) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, g * group);
            failf(f, "%s: no element of the %s matches the expected one (compared unordered)", sub, tname);
            rc = -1;
        }
    }
    free(pos);
    free(used);
    return rc;
}

/* ------------------------------------------------------------- running */

typedef struct {
    const char *url;
    int verbose;
    const char *only;
    int resp_only;
    sl_client *clients[4];      /* by RESP version */
    int passed, failed, skipped;
} runner;

static sl_client *client_for(runner *rn, int resp, char *err, size_t errcap)
{
    if (rn->clients[resp])
        return rn->clients[resp];
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    o.url = rn->url;
    o.resp_version = resp;
    o.command_timeout_ms = 10000;
    if (sl_client_new(&rn->clients[resp], &o, err, errcap) != 0)
        return NULL;
    return rn->clients[resp];
}

/* Appends the commands of a JSON array of argument arrays; returns how many. */
static int append_commands(sl_batch *b, const jval *cmds, char *err, size_t errcap)
{
    for (size_t c = 0; c < cmds->n; c++) {
        const jval *cmd = &cmds->items[c];
        if (cmd->type != J_ARR || cmd->n == 0) {
            snprintf(err, errcap, "command #%zu is not a non-empty array", c);
            return -1;
        }
        const char **argv = xrealloc(NULL, cmd->n * sizeof *argv);
        size_t *lens = xrealloc(NULL, cmd->n * sizeof *lens);
        char **owned = calloc(cmd->n, sizeof *owned);
        int bad = 0;
        for (size_t a = 0; a < cmd->n; a++) {
            const jval *arg = &cmd->items[a];
            if (arg->type == J_STR) {
                argv[a] = arg->s;
                lens[a] = arg->slen;
            } else if (arg->type == J_OBJ && jstr(arg, "hex") && (owned[a] = unhex(jstr(arg, "hex"), &lens[a]))) {
                argv[a] = owned[a];
            } else {
                bad = 1;
            }
        }
        int rc = bad ? SL_EINVAL : sl_batch_append_argv(b, NULL, (int)cmd->n, argv, lens);
        for (size_t a = 0; a < cmd->n; a++)
            free(owned[a]);
        free(owned);
        free(argv);
        free(lens);
        if (rc) {
            snprintf(err, errcap, "command #%zu: %s", c,
                     bad ? "bad argument (a string or {\"hex\": ...})" : sl_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static int flush_all(sl_client *cl, char *err, size_t errcap)
{
    const char *argv[] = {"FLUSHALL"};
    const sl_reply *r;
    const uint8_t *d;
    sl_route route = {SL_ROUTE_VERSION, (unsigned)sizeof(sl_route), SL_ROUTE_ALL_PRIMARIES, 0, NULL};
    int rc = sl_client_command(cl, sl_client_mode(cl) == SL_MODE_CLUSTER ? &route : NULL, 1, argv, NULL, &r, &d);
    if (rc) {
        snprintf(err, errcap, "FLUSHALL failed: %s (%s)", sl_strerror(rc), sl_client_errmsg(cl));
        return -1;
    }
    return 0;
}

static void run_case(runner *rn, const jval *c, const char *file)
{
    const char *name = jstr(c, "name");
    const char *mode = jstr(c, "mode");
    const jval *cmds = jget(c, "commands");
    const jval *setup = jget(c, "setup");
    const jval *expected = jget(c, "expected");
    const jval *resps = jget(c, "resp");
    if (!name || !cmds || cmds->type != J_ARR || !expected || expected->type != J_OBJ) {
        printf("FAIL %s (%s): malformed case (name, commands and expected are required)\n", name ? name : "?", file);
        rn->failed++;
        return;
    }
    if (rn->only && !strstr(name, rn->only))
        return;
    int versions[2], nv = 0;
    if (resps && resps->type == J_NUM) versions[nv++] = atoi(resps->s);
    else if (resps && resps->type == J_ARR)
        for (size_t k = 0; k < resps->n && nv < 2; k++)
            if (resps->items[k].type == J_NUM) versions[nv++] = atoi(resps->items[k].s);
    if (!resps) { versions[0] = 2; versions[1] = 3; nv = 2; }

    for (int vi = 0; vi < nv; vi++) {
        int resp = versions[vi];
        char err[512] = "";
        if (resp != 2 && resp != 3) {
            printf("FAIL %s: bad resp %d\n", name, resp);
            rn->failed++;
            continue;
        }
        if (rn->resp_only && resp != rn->resp_only)
            continue;
        sl_client *cl = client_for(rn, resp, err, sizeof err);
        if (!cl) {
            printf("FAIL %s (resp%d): cannot create the client: %s\n", name, resp, err);
            rn->failed++;
            continue;
        }
        int cluster = sl_client_mode(cl) == SL_MODE_CLUSTER;
        if (mode && ((!strcmp(mode, "cluster") && !cluster) || (!strcmp(mode, "plain") && cluster))) {
            if (rn->verbose)
                printf("skip %s (resp%d): mode %s\n", name, resp, mode);
            rn->skipped++;
            continue;
        }
        char key[4];
        snprintf(key, sizeof key, "%d", resp);
        const jval *want = jget(expected, key);
        if (!want || want->type != J_ARR || want->n != cmds->n) {
            printf("FAIL %s (resp%d): no recorded replies for RESP%d (re-run record.py)\n", name, resp, resp);
            rn->failed++;
            continue;
        }
        sl_batch *b = NULL;
        int rc = sl_batch_new(cl, &b);
        if (rc) {
            printf("FAIL %s (resp%d): sl_batch_new: %s\n", name, resp, sl_strerror(rc));
            rn->failed++;
            continue;
        }
        failure fl = {{0}};
        if (flush_all(cl, err, sizeof err)) {
            failf(&fl, "%s", err);
        } else if (setup && setup->type == J_ARR && setup->n) {
            sl_sizes sz;
            if (append_commands(b, setup, err, sizeof err)) failf(&fl, "setup: %s", err);
            else if ((rc = sl_batch_exec(b, 0, &sz)) != 0) failf(&fl, "setup: sl_batch_exec: %s (%s)", sl_strerror(rc), sl_client_errmsg(cl));
            else if (sz.errors) failf(&fl, "setup: %llu command(s) failed", (unsigned long long)sz.errors);
        }
        if (!fl.msg[0]) {
            sl_sizes sz;
            if (append_commands(b, cmds, err, sizeof err)) {
                failf(&fl, "%s", err);
            } else {
                rc = sl_batch_exec(b, 0, &sz);
                if (rc != 0) {
                    failf(&fl, "sl_batch_exec: %s (%s)", sl_strerror(rc), sl_client_errmsg(cl));
                } else if (sz.commands != cmds->n) {
                    failf(&fl, "%llu replies for %zu commands", (unsigned long long)sz.commands, cmds->n);
                } else {
                    size_t nrec = 0, dlen = 0;
                    const uint8_t *data = NULL;
                    const sl_reply *recs = sl_batch_replies(b, &nrec, &data, &dlen);
                    size_t i = 0;
                    for (size_t k = 0; k < want->n && !fl.msg[0]; k++) {
                        char path[64];
                        snprintf(path, sizeof path, "command #%zu", k);
                        const jval *cmd = &cmds->items[k];
                        if (match(&want->items[k], recs, nrec, data, &i, path, &fl) != 0 && cmd->n && cmd->items[0].type == J_STR) {
                            size_t l = strlen(fl.msg);
                            snprintf(fl.msg + l, sizeof fl.msg - l, " [%s%s]", cmd->items[0].s,
                                     cmd->n > 1 && cmd->items[1].type == J_STR ? " ..." : "");
                        }
                    }
                    if (!fl.msg[0] && i != nrec)
                        failf(&fl, "%zu records left over after the last reply", nrec - i);
                }
            }
        }
        sl_batch_free(b);
        if (fl.msg[0]) {
            printf("FAIL %s (resp%d, %s): %s\n", name, resp, file, fl.msg);
            rn->failed++;
        } else {
            printf("ok   %s (resp%d)\n", name, resp);
            rn->passed++;
        }
        fflush(stdout);
    }
}

static char *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = xrealloc(NULL, cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += got;
        if (n == cap) { cap *= 2; buf = xrealloc(buf, cap); }
    }
    fclose(fp);
    *len = n;
    return buf;
}

static void usage(void)
{
    fprintf(stderr, "usage: sl_conformance [--resp 2|3] [--only SUBSTRING] [--verbose] URL CASEFILE...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    runner rn;
    memset(&rn, 0, sizeof rn);
    int a = 1;
    for (; a < argc && argv[a][0] == '-' && argv[a][1] == '-'; a++) {
        if (!strcmp(argv[a], "--resp") && a + 1 < argc) rn.resp_only = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--only") && a + 1 < argc) rn.only = argv[++a];
        else if (!strcmp(argv[a], "--verbose")) rn.verbose = 1;
        else usage();
    }
    if (argc - a < 2)
        usage();
    rn.url = argv[a++];
    int bad_files = 0;
    for (; a < argc; a++) {
        size_t len;
        char *text = read_file(argv[a], &len);
        if (!text) {
            fprintf(stderr, "sl_conformance: cannot read %s: %s\n", argv[a], strerror(errno));
            bad_files++;
            continue;
        }
        jparser jp = {text, text + len, NULL, 1};
        jval doc;
        int rc = jparse(&jp, &doc, 0);
        if (rc == 0) {
            jws(&jp);
            if (jp.p != jp.end)
                rc = jfail(&jp, "trailing bytes");
        }
        const jval *cases = rc == 0 ? jget(&doc, "cases") : NULL;
        if (rc || !cases || cases->type != J_ARR) {
            fprintf(stderr, "sl_conformance: %s:%d: %s\n", argv[a], jp.line, jp.err ? jp.err : "no \"cases\" array");
            bad_files++;
        } else {
            const char *base = strrchr(argv[a], '/');
            base = base ? base + 1 : argv[a];
            for (size_t c = 0; c < cases->n; c++)
                run_case(&rn, &cases->items[c], base);
        }
        jfree(&doc);
        free(text);
    }
    for (int v = 0; v < 4; v++)
        sl_client_free(rn.clients[v]);
    if (rn.skipped)
        printf("(%d skipped: mode or RESP version not selected)\n", rn.skipped);
    printf("%d passed, %d failed\n", rn.passed, rn.failed + bad_files);
    if (bad_files)
        return 2;
    return rn.failed ? 1 : 0;
}
