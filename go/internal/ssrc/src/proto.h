/* proto: the request parser (RESP multibulk and inline, incremental, with Redis's
 * limits and error strings) and the RESP2/RESP3 reply writer. Neither knows about
 * sockets: the parser reads a byte range, the writer appends to an sv_buf. */
#ifndef SV_PROTO_H
#define SV_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define SV_INLINE_MAX (64 * 1024)              /* PROTO_INLINE_MAX_SIZE */
#define SV_BULK_MAX (512LL * 1024 * 1024)       /* proto-max-bulk-len */
#define SV_MULTIBULK_MAX 2147483647LL          /* Redis 7.0: INT_MAX arguments */
#define SV_QUERYBUF_MAX (1024LL * 1024 * 1024)  /* client-query-buffer-limit */

enum { SV_PARSE_MORE = 0, SV_PARSE_OK = 1, SV_PARSE_ERR = -1 };

/* Parser state for one request. The caller passes the bytes from the start of the
 * request each time (more of them as they arrive); the parser resumes at pos. */
typedef struct sv_parser {
    size_t pos;       /* bytes of the request examined so far */
    long long mbulk;  /* -1: header not read yet; else argument count */
    long long bulk;   /* -1: next bulk header not read yet; else its length */
    int argc;
    int cap;
    size_t *off;      /* argument offsets relative to the request start */
    size_t *len;
    int is_inline;
    char *inline_buf; /* inline arguments are unquoted into this copy */
    size_t inline_cap;
    const char *error; /* set on SV_PARSE_ERR: the error line without "-ERR " */
    char errbuf[64];
} sv_parser;

void sv_parser_init(sv_parser *p);
void sv_parser_reset(sv_parser *p);
/* Frees the argument arrays (the parser may be used again: they grow back). */
void sv_parser_free(sv_parser *p);
/* Parses one request from buf[0..len). SV_PARSE_OK: p->pos is the request size and
 * the arguments are available through sv_parser_args; argc may be 0 (empty request,
 * to be skipped). SV_PARSE_MORE: need more bytes; p->bulk hints how many. */
int sv_parse(sv_parser *p, const char *buf, size_t len);
/* A quick look ahead (no state, no limits beyond the buffer): the first argument
 * after the command name of each of the next complete multibulk requests in buf, at
 * most max of them (an empty key for a request with one argument); stops at the first
 * incomplete or inline request. Returns how many requests it saw. For prefetching
 * only: sv_parse still parses, checks and rejects every request. */
int sv_peek_keys(const char *buf, size_t len, sv_str *keys, int max);
/* Fills argv for the request just parsed (pointers into buf or into the inline copy). */
void sv_parser_args(sv_parser *p, const char *buf, sv_str *argv);

/* The reply writer. proto is 2 or 3. */
typedef struct sv_reply {
    sv_buf *out;
    int proto;
} sv_reply;

void sv_add_raw(sv_reply *r, const char *s, size_t n);
void sv_add_status(sv_reply *r, const char *s);
void sv_add_ok(sv_reply *r);
/* "-CODE message" is sent as is; any other message gets "-ERR " in front. */
void sv_add_error(sv_reply *r, const char *msg);
void sv_add_errorf(sv_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sv_add_int(sv_reply *r, long long v);
void sv_add_bulk(sv_reply *r, const void *p, size_t n);
void sv_add_bulk_cstr(sv_reply *r, const char *s);
void sv_add_bulk_ll(sv_reply *r, long long v);
void sv_add_null(sv_reply *r);       /* $-1 / _ */
void sv_add_null_array(sv_reply *r); /* *-1 / _ */
void sv_add_array(sv_reply *r, long long n);
void sv_add_map(sv_reply *r, long long n);  /* RESP2: array of 2n */
void sv_add_set(sv_reply *r, long long n);  /* RESP2: array */
void sv_add_double(sv_reply *r, double d);  /* RESP3 ',' ; RESP2 bulk */
void sv_add_bool(sv_reply *r, int b);        /* RESP3 '#'; RESP2 :1/:0 */
void sv_add_verbatim(sv_reply *r, const char *s, size_t n); /* RESP3 '=' txt; RESP2 bulk */
void sv_add_empty_array(sv_reply *r);

#endif
