/* t_bitops: the bitmap commands on string values — SETBIT GETBIT BITCOUNT BITPOS
 * BITOP BITFIELD BITFIELD_RO — with Redis 7.0's bit order (bit 0 is the most
 * significant bit of byte 0), argument order and errors. Strings grow zero-filled,
 * through sv_string_reserve, as SETRANGE's do. */
#include <limits.h>
#include <stdint.h>

#include "server.h"
#include "notify.h"

static const char *ERR_BITOFFSET = "bit offset is not an integer or out of range";

/* A bit offset: a number, or #N (N * bits) for BITFIELD; below 512 MB * 8. */
static int get_bit_offset(sv_ctx *c, sv_str a, int hash, int bits, uint64_t *out)
{
    long long v;
    int usehash = hash && a.len > 0 && a.p[0] == '#';
    sv_str n = usehash ? (sv_str){a.p + 1, a.len - 1} : a;
    if (!sv_str2ll(n.p, n.len, &v) || v < 0 || (usehash && v > LLONG_MAX / bits)) {
        sv_add_error(&c->r, ERR_BITOFFSET);
        return 0;
    }
    if (usehash) v *= bits;
    if ((v >> 3) >= SV_BULK_MAX) {
        sv_add_error(&c->r, ERR_BITOFFSET);
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

/* The string at key grown (zero-filled) to hold bit maxbit, created if missing;
 * NULL after WRONGTYPE. *grown (if given): it was created or grown. */
static sv_entry *string_for_bits(sv_ctx *c, sv_str key, uint64_t maxbit, int *grown)
{
    size_t need = (size_t)(maxbit >> 3) + 1;
    sv_entry *e = sv_db_lookup_write(c->sh, key);
    if (!e) {
        e = sv_db_add(c->sh, key, &sv_string_new("", 0)->h);
    } else if (((sv_obj *)e->val)->type != SV_T_STRING) {
        sv_add_error(&c->r, SV_ERR_WRONGTYPE);
        return NULL;
    }
    sv_string *s = e->val;
    if (grown) *grown = s->len < need;
    if (s->len < need) {
        s = sv_string_reserve(e, need);
        memset(s->data + s->len, 0, need - s->len);
        s->len = need;
    }
    return e;
}

/* Read access: 1 with the bytes, 0 missing, -1 after WRONGTYPE. */
static int read_string(sv_ctx *c, sv_str key, const unsigned char **p, size_t *len)
{
    sv_entry *e = NULL;
    int r = sv_db_get_typed(c, key, SV_T_STRING, &e);
    if (r == 1) {
        sv_string *s = e->val;
        *p = (const unsigned char *)s->data;
        *len = s->len;
    }
    return r;
}

void sv_cmd_setbit(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    uint64_t off;
    if (!get_bit_offset(c, argv[2], 0, 0, &off)) return;
    long long on;
    if (!sv_str2ll(argv[3].p, argv[3].len, &on) || (on & ~1LL)) {
        sv_add_error(&c->r, "bit is not an integer or out of range");
        return;
    }
    sv_entry *e = string_for_bits(c, argv[1], off, NULL);
    if (!e) return;
    sv_string *s = e->val;
    unsigned char *b = (unsigned char *)s->data + (off >> 3);
    int bit = 7 - (int)(off & 7);
    int old = (*b >> bit) & 1;
    *b = (unsigned char)((*b & ~(1 << bit)) | ((int)on << bit));
    sv_add_int(&c->r, old);
}

void sv_cmd_getbit(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    uint64_t off;
    if (!get_bit_offset(c, argv[2], 0, 0, &off)) return;
    const unsigned char *p;
    size_t len;
    int r = read_string(c, argv[1], &p, &len);
    if (r < 0) return;
    int v = r == 1 && (off >> 3) < len ? (p[off >> 3] >> (7 - (off & 7))) & 1 : 0;
    sv_add_int(&c->r, v);
}

static long long popcount(const unsigned char *p, size_t n)
{
    long long bits = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        bits += __builtin_popcountll(w);
    }
    for (; i < n; i++) bits += __builtin_popcount(p[i]);
    return bits;
}

/* Clamps [start, end] to [0, total) as Redis's BITCOUNT/BITPOS; 0 when empty. */
static int clamp_range(long long *start, long long *end, long long total)
{
    if (*start < 0) *start = total + *start;
    if (*end < 0) *end = total + *end;
    if (*start < 0) *start = 0;
    if (*end < 0) *end = 0;
    if (*end >= total) *end = total - 1;
    return *start <= *end;
}

static int bit_at(const unsigned char *p, long long i) { return (p[i >> 3] >> (7 - (i & 7))) & 1; }

void sv_cmd_bitcount(sv_ctx *c, int argc, sv_str *argv)
{
    const unsigned char *p;
    size_t len;
    int r = read_string(c, argv[1], &p, &len);
    if (r == 0) sv_add_int(&c->r, 0);
    if (r != 1) return;
    long long start = 0, end = (long long)len - 1;
    int isbit = 0;
    if (argc == 4 || argc == 5) {
        if (!sv_get_ll(c, argv[2], &start) || !sv_get_ll(c, argv[3], &end)) return;
        if (start < 0 && end < 0 && start > end) { /* Redis answers this before the unit */
            sv_add_int(&c->r, 0);
            return;
        }
        if (argc == 5) {
            if (sv_eq(argv[4], "bit")) isbit = 1;
            else if (!sv_eq(argv[4], "byte")) {
                sv_add_error(&c->r, SV_ERR_SYNTAX);
                return;
            }
        }
        long long total = isbit ? (long long)len * 8 : (long long)len;
        if (!clamp_range(&start, &end, total)) {
            sv_add_int(&c->r, 0);
            return;
        }
    } else if (argc != 2) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (len == 0 || start > end) {
        sv_add_int(&c->r, 0);
        return;
    }
    if (!isbit) {
        sv_add_int(&c->r, popcount(p + start, (size_t)(end - start + 1)));
        return;
    }
    /* bits: the partial bytes at both ends bit by bit, whole bytes between */
    long long n = 0, i = start;
    for (; i <= end && (i & 7); i++) n += bit_at(p, i);
    long long whole = (end + 1 - i) / 8;
    if (whole > 0) {
        n += popcount(p + (i >> 3), (size_t)whole);
        i += whole * 8;
    }
    for (; i <= end; i++) n += bit_at(p, i);
    sv_add_int(&c->r, n);
}

void sv_cmd_bitpos(sv_ctx *c, int argc, sv_str *argv)
{
    long long bit;
    if (!sv_get_ll(c, argv[2], &bit)) return;
    if (bit != 0 && bit != 1) {
        sv_add_error(&c->r, "The bit argument must be 1 or 0.");
        return;
    }
    const unsigned char *p;
    size_t len;
    int r = read_string(c, argv[1], &p, &len);
    if (r == 0) sv_add_int(&c->r, bit ? -1 : 0); /* a missing key: infinitely many zeros */
    if (r != 1) return;
    long long start = 0, end = (long long)len - 1;
    int isbit = 0, end_given = 0;
    if (argc >= 4 && argc <= 6) {
        if (!sv_get_ll(c, argv[3], &start)) return;
        if (argc == 6) {
            if (sv_eq(argv[5], "bit")) isbit = 1;
            else if (!sv_eq(argv[5], "byte")) {
                sv_add_error(&c->r, SV_ERR_SYNTAX);
                return;
            }
        }
        if (argc >= 5) {
            if (!sv_get_ll(c, argv[4], &end)) return;
            end_given = 1;
        } else {
            end = isbit ? (long long)len * 8 + 7 : (long long)len - 1;
        }
        long long total = isbit ? (long long)len * 8 : (long long)len;
        if (start < 0) start = total + start;
        if (end < 0) end = total + end;
        if (start < 0) start = 0;
        if (end < 0) end = 0;
        if (end >= total) end = total - 1;
    } else if (argc != 3) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (start > end) {
        sv_add_int(&c->r, -1); /* an empty range has neither a 0 nor a 1 */
        return;
    }
    long long from = isbit ? start : start * 8, to = isbit ? end : end * 8 + 7; /* bits, inclusive */
    long long i = from;
    unsigned char skip = bit ? 0x00 : 0xff; /* whole bytes without the bit sought */
    while (i <= to) {
        if ((i & 7) == 0 && i + 7 <= to && p[i >> 3] == skip) {
            i += 8;
            continue;
        }
        if (bit_at(p, i) == bit) {
            sv_add_int(&c->r, i);
            return;
        }
        i++;
    }
    /* a clear bit sought without an explicit end: the string continues with zeros */
    sv_add_int(&c->r, bit == 0 && !end_given ? to + 1 : -1);
}

void sv_cmd_bitop(sv_ctx *c, int argc, sv_str *argv)
{
    enum { AND, OR, XOR, NOT } op;
    if (sv_eq(argv[1], "and")) op = AND;
    else if (sv_eq(argv[1], "or")) op = OR;
    else if (sv_eq(argv[1], "xor")) op = XOR;
    else if (sv_eq(argv[1], "not")) op = NOT;
    else {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    int n = argc - 3;
    if (op == NOT && n != 1) {
        sv_add_error(&c->r, "BITOP NOT must be called with a single source key.");
        return;
    }
    const unsigned char **src = sv_calloc((size_t)n, sizeof(*src));
    size_t *len = sv_calloc((size_t)n, sizeof(size_t));
    size_t maxlen = 0;
    for (int i = 0; i < n; i++) {
        int r = read_string(c, argv[3 + i], &src[i], &len[i]);
        if (r < 0) {
            free(src);
            free(len);
            return;
        }
        if (len[i] > maxlen) maxlen = len[i];
    }
    sv_string *res = NULL;
    if (maxlen) {
        res = sv_string_new("", 0);
        res = sv_realloc(res, sizeof(sv_string) + maxlen);
        res->len = res->cap = maxlen;
        unsigned char *d = (unsigned char *)res->data;
        for (size_t j = 0; j < maxlen; j++) {
            unsigned char out = j < len[0] ? src[0][j] : 0;
            if (op == NOT) out = (unsigned char)~out;
            for (int i = 1; i < n; i++) {
                unsigned char b = j < len[i] ? src[i][j] : 0;
                if (op == AND) out &= b;
                else if (op == OR) out |= b;
                else out ^= b;
            }
            d[j] = out;
        }
    }
    free(src);
    free(len);
    if (res) sv_db_set(c->sh, argv[2], &res->h, 0);
    else sv_db_delete_notify(c->sh, argv[2]);
    sv_add_int(&c->r, (long long)maxlen);
}

/* ---- BITFIELD ---- */

enum { BF_GET, BF_SET, BF_INCRBY };
enum { OW_WRAP, OW_SAT, OW_FAIL };

typedef struct bfop {
    uint64_t offset;
    int64_t i64;
    int opcode, owtype, bits, sign;
} bfop;

static uint64_t get_ubits(const unsigned char *p, size_t len, uint64_t off, int bits)
{
    uint64_t v = 0;
    for (int j = 0; j < bits; j++, off++) {
        uint64_t byte = off >> 3;
        int b = byte < len ? (p[byte] >> (7 - (off & 7))) & 1 : 0;
        v = (v << 1) | (uint64_t)b;
    }
    return v;
}

static int64_t get_sbits(const unsigned char *p, size_t len, uint64_t off, int bits)
{
    uint64_t u = get_ubits(p, len, off, bits);
    if (bits < 64 && (u & ((uint64_t)1 << (bits - 1)))) u |= UINT64_MAX << bits; /* sign extension */
    return (int64_t)u;
}

static void set_ubits(unsigned char *p, uint64_t off, int bits, uint64_t v)
{
    for (int j = 0; j < bits; j++, off++) {
        int bitval = (int)((v >> (bits - 1 - j)) & 1);
        unsigned char *b = p + (off >> 3);
        int sh = 7 - (int)(off & 7);
        *b = (unsigned char)((*b & ~(1 << sh)) | (bitval << sh));
    }
}

/* Redis's checkUnsignedBitfieldOverflow: 1 overflow, -1 underflow, 0 fits; *limit
 * is the value to store under WRAP or SAT. Unsigned arithmetic throughout. */
static int u_overflow(uint64_t value, int64_t incr, int bits, int owtype, uint64_t *limit)
{
    uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    int64_t maxincr = (int64_t)(max - value);
    int64_t minincr = (int64_t)(0 - value);
    int r = 0;
    if (value > max || (incr > 0 && incr > maxincr)) r = 1;
    else if (incr < 0 && incr < minincr) r = -1;
    if (!r) return 0;
    if (owtype == OW_WRAP) *limit = (value + (uint64_t)incr) & max;
    else if (owtype == OW_SAT) *limit = r > 0 ? max : 0;
    return r;
}

static int s_overflow(int64_t value, int64_t incr, int bits, int owtype, int64_t *limit)
{
    int64_t max = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    int64_t min = -max - 1;
    int64_t maxincr = (int64_t)((uint64_t)max - (uint64_t)value);
    int64_t minincr = (int64_t)((uint64_t)min - (uint64_t)value);
    int r = 0;
    if (value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr)) r = 1;
    else if (value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr)) r = -1;
    if (!r) return 0;
    if (owtype == OW_WRAP) {
        uint64_t cv = (uint64_t)value + (uint64_t)incr;
        if (bits < 64) {
            uint64_t mask = UINT64_MAX << bits;
            if (cv & ((uint64_t)1 << (bits - 1))) cv |= mask;
            else cv &= ~mask;
        }
        *limit = (int64_t)cv;
    } else if (owtype == OW_SAT) {
        *limit = r > 0 ? max : min;
    }
    return r;
}

static int get_bf_type(sv_ctx *c, sv_str a, int *sign, int *bits)
{
    long long n;
    int ok = a.len >= 2 && (a.p[0] == 'i' || a.p[0] == 'u' || a.p[0] == 'I' || a.p[0] == 'U') &&
             sv_str2ll(a.p + 1, a.len - 1, &n);
    if (ok) {
        *sign = a.p[0] == 'i' || a.p[0] == 'I';
        ok = n >= 1 && n <= (*sign ? 64 : 63);
        *bits = (int)n;
    }
    if (!ok) sv_add_error(&c->r, "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.");
    return ok;
}

static void bitfield_generic(sv_ctx *c, int argc, sv_str *argv, int ro)
{
    bfop *ops = sv_malloc(sizeof(bfop) * (size_t)(argc / 3 + 1));
    int nops = 0, owtype = OW_WRAP, readonly = 1;
    uint64_t highest = 0;
    for (int j = 2; j < argc; j++) {
        int rem = argc - j - 1;
        int opcode;
        if (sv_eq(argv[j], "get") && rem >= 2) opcode = BF_GET;
        else if (sv_eq(argv[j], "set") && rem >= 3) opcode = BF_SET;
        else if (sv_eq(argv[j], "incrby") && rem >= 3) opcode = BF_INCRBY;
        else if (sv_eq(argv[j], "overflow") && rem >= 1) {
            sv_str t = argv[++j];
            if (sv_eq(t, "wrap")) owtype = OW_WRAP;
            else if (sv_eq(t, "sat")) owtype = OW_SAT;
            else if (sv_eq(t, "fail")) owtype = OW_FAIL;
            else {
                sv_add_error(&c->r, "Invalid OVERFLOW type specified");
                goto out;
            }
            continue;
        } else {
            sv_add_error(&c->r, SV_ERR_SYNTAX);
            goto out;
        }
        bfop *op = &ops[nops];
        if (!get_bf_type(c, argv[j + 1], &op->sign, &op->bits)) goto out;
        if (!get_bit_offset(c, argv[j + 2], 1, op->bits, &op->offset)) goto out;
        op->i64 = 0;
        if (opcode != BF_GET) {
            readonly = 0;
            if (highest < op->offset + (uint64_t)op->bits - 1) highest = op->offset + (uint64_t)op->bits - 1;
            long long v;
            if (!sv_get_ll(c, argv[j + 3], &v)) goto out;
            op->i64 = v;
        }
        op->opcode = opcode;
        op->owtype = owtype;
        nops++;
        j += 2 + (opcode != BF_GET);
    }
    sv_string *s = NULL;
    int grown = 0;
    if (readonly) {
        sv_entry *e = NULL;
        int reads = sv_notify_reads;
        sv_notify_reads = 1; /* only GETs: a read of the key, as Redis ("keymiss") */
        int r = sv_db_get_typed(c, argv[1], SV_T_STRING, &e);
        sv_notify_reads = reads;
        if (r < 0) goto out;
        if (r == 1) s = e->val;
    } else {
        if (ro) {
            sv_add_error(&c->r, "BITFIELD_RO only supports the GET subcommand");
            goto out;
        }
        sv_entry *e = string_for_bits(c, argv[1], highest, &grown);
        if (!e) goto out;
        s = e->val;
    }
    sv_add_array(&c->r, nops);
    int changes = 0; /* SET and INCRBY ops that changed the value (Redis's rule for "setbit") */
    for (int i = 0; i < nops; i++) {
        bfop *op = &ops[i];
        const unsigned char *p = s ? (const unsigned char *)s->data : NULL;
        size_t len = s ? s->len : 0;
        if (op->opcode == BF_GET) {
            if (op->sign) sv_add_int(&c->r, get_sbits(p, len, op->offset, op->bits));
            else sv_add_int(&c->r, (long long)get_ubits(p, len, op->offset, op->bits));
            continue;
        }
        int overflow;
        if (op->sign) {
            int64_t oldval = get_sbits(p, len, op->offset, op->bits), newval, retval, wrapped = 0;
            if (op->opcode == BF_INCRBY) {
                overflow = s_overflow(oldval, op->i64, op->bits, op->owtype, &wrapped);
                newval = overflow ? wrapped : (int64_t)((uint64_t)oldval + (uint64_t)op->i64);
                retval = newval;
            } else {
                newval = op->i64;
                overflow = s_overflow(newval, 0, op->bits, op->owtype, &wrapped);
                if (overflow) newval = wrapped;
                retval = oldval;
            }
            if (overflow && op->owtype == OW_FAIL) {
                sv_add_null(&c->r);
                continue;
            }
            sv_add_int(&c->r, retval);
            set_ubits((unsigned char *)s->data, op->offset, op->bits, (uint64_t)newval);
            changes += grown || oldval != newval;
        } else {
            uint64_t oldval = get_ubits(p, len, op->offset, op->bits), newval, retval, wrapped = 0;
            if (op->opcode == BF_INCRBY) {
                overflow = u_overflow(oldval, op->i64, op->bits, op->owtype, &wrapped);
                newval = overflow ? wrapped : oldval + (uint64_t)op->i64;
                retval = newval;
            } else {
                newval = (uint64_t)op->i64;
                overflow = u_overflow(newval, 0, op->bits, op->owtype, &wrapped);
                if (overflow) newval = wrapped;
                retval = oldval;
            }
            if (overflow && op->owtype == OW_FAIL) {
                sv_add_null(&c->r);
                continue;
            }
            sv_add_int(&c->r, (long long)retval);
            set_ubits((unsigned char *)s->data, op->offset, op->bits, newval);
            changes += grown || oldval != newval;
        }
    }
    if (changes) sv_notify(c->sh, SV_N_STRING, "setbit", argv[1]);
out:
    free(ops);
}

void sv_cmd_bitfield(sv_ctx *c, int argc, sv_str *argv) { bitfield_generic(c, argc, argv, 0); }
void sv_cmd_bitfield_ro(sv_ctx *c, int argc, sv_str *argv) { bitfield_generic(c, argc, argv, 1); }
