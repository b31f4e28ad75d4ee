/* resp: RESP2/RESP3 encoder, incremental reply parser and request scanner, with hard limits.
 *
 * The reply parser turns bytes into the flat reply records of slotlane.h (children
 * follow their aggregate depth-first) and appends string payloads to a data vector.
 * It is incremental: it consumes only whole elements (a header line, or a bulk with its
 * payload and CRLF) and keeps its place in the aggregate stack across calls, so input may
 * be split at any byte. It never allocates beyond growing the caller's vectors. */
#ifndef SL_RESP_H
#define SL_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

#define SL__RESP_MAX_DEPTH 64          /* the hard cap on max_depth */

typedef struct sl__resp_limits {
    uint64_t max_bulk_len;             /* longest bulk/verbatim/blob error payload */
    uint64_t max_aggregate_len;        /* most elements of one aggregate */
    int max_depth;                     /* deepest nesting, <= SL__RESP_MAX_DEPTH */
} sl__resp_limits;

typedef struct sl__resp_frame {
    uint64_t remaining;                /* children still to come */
    size_t record;                     /* index of the aggregate's record (SIZE_MAX: an attribute) */
} sl__resp_frame;

typedef struct sl__resp_parser {
    sl__resp_limits limits;
    int depth;                         /* frames in use */
    int in_attribute;                  /* frames belonging to an attribute being skipped */
    size_t attr_records;               /* records.len when the attribute started (to drop it) */
    size_t attr_data;                  /* data.len when the attribute started (to drop its bytes) */
    size_t top_record;                 /* index of the current top-level reply's first record */
    uint8_t top_type;                  /* its type byte ('>' for push) */
    char errmsg[128];                  /* set when a call returns SL__RESP_BAD */
    sl__resp_frame stack[SL__RESP_MAX_DEPTH];
} sl__resp_parser;

/* Results of sl__resp_parse. */
#define SL__RESP_MORE 0                /* need more input; everything usable was consumed */
#define SL__RESP_REPLY 1               /* one complete top-level reply was appended */
#define SL__RESP_PUSH 2                /* one complete top-level RESP3 push was appended
                                          (the caller may keep or drop it: records from
                                          parser.top_record on) */
#define SL__RESP_BAD (-1)              /* malformed input or a limit exceeded: errmsg says
                                          which; the connection must be dropped */

void sl__resp_parser_init(sl__resp_parser *p, const sl__resp_limits *limits);

/* Parses from buf[0, len): appends records to *recs and payload bytes to *data (record
 * offsets are offsets into data). *consumed receives the bytes used. Stops after one
 * complete top-level reply (or push). SL_ENOMEM (negative, != SL__RESP_BAD) if a vector
 * cannot grow.
 * recs belongs to this parser while a reply is incomplete (its aggregate records are
 * already there); data may be shared by several parsers. Attributes are dropped: their
 * records always, their payload bytes when the attribute was parsed within one call
 * (otherwise another parser may have appended after them, and they stay as unused bytes). */
int sl__resp_parse(sl__resp_parser *p, const sl__alloc *a, const uint8_t *buf, size_t len,
                   size_t *consumed, sl__records *recs, sl__bytes *data);

/* ------------------------------------------------------------- encoder */

/* Appends one command "*argc\r\n$len\r\narg\r\n..." to out, without printf. */
int sl__resp_encode_argv(const sl__alloc *a, sl__bytes *out, int argc,
                         const char *const *argv, const size_t *argvlen);

/* Parses a decimal int64 from s[0, n): an optional sign, at least one digit, no overflow.
 * 1 on success (*out set), else 0. */
int sl__parse_i64(const uint8_t *s, size_t n, int64_t *out);

/* Writes the decimal form of v into buf (at least 21 bytes); returns its length. */
size_t sl__fmt_i64(char *buf, int64_t v);

/* -------------------------------------------------------- request scanner */

/* One argument of a scanned request: its bytes are buf[off, off + len). */
typedef struct sl__arg {
    uint32_t off;
    uint32_t len;
} sl__arg;

/* Scans one request, an array of bulk strings, at buf[0, len): appends its argc argument
 * views to *args (offsets relative to buf; args NULL: check the framing only) and sets
 * *used to the request's length.
 * Returns 1 for a whole request, 0 when buf ends inside it, SL_EINVAL when the bytes are
 * not an array of bulk strings with argc >= 1 (errmsg, if not NULL, gets a reason of at
 * most 127 bytes), SL_ENOMEM. Offsets are 32-bit: a request is at most 4 GiB. */
int sl__resp_scan_request(const sl__alloc *a, const uint8_t *buf, size_t len, size_t *used,
                          sl__arg **args, size_t *args_len, size_t *args_cap, uint32_t *argc,
                          char *errmsg);

#endif
