/* commands: see commands.h. The table is static const data generated from Redis's own
 * COMMAND INFO; lookup is a binary search over the sorted upper-case names and the key
 * finder interprets the key specs the way Redis's getKeysUsingKeySpecs() does, so that
 * it agrees with COMMAND GETKEYS (test_commands.c checks recorded vectors). */
#include "commands.h"

#include <string.h>

#include "commands_table.inc"

#define TABLE_LEN (sizeof(sl__cmd_table) / sizeof(sl__cmd_table[0]))

static inline unsigned char upper(unsigned char c)
{
    return (c >= 'a' && c <= 'z') ? (unsigned char)(c - ('a' - 'A')) : c;
}

/* Compares the bytes s[0, n) (any case) with the NUL-terminated upper-case name, in the
 * byte order the generator sorted by. */
static int cmp_name(const uint8_t *s, size_t n, const char *name)
{
    const unsigned char *u = (const unsigned char *)name;
    for (size_t i = 0; i < n; i++) {
        if (u[i] == 0) return 1; /* name is a proper prefix of s */
        unsigned char c = upper(s[i]);
        if (c != u[i]) return c < u[i] ? -1 : 1;
    }
    return u[n] == 0 ? 0 : -1;
}

/* Binary search; skip is the length of the "CONTAINER|" prefix of subcommand names. */
static const sl__cmdinfo *search(const sl__cmdinfo *tab, size_t n, size_t skip,
                                 const uint8_t *s, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_name(s, len, tab[mid].name + skip);
        if (c == 0) return &tab[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

const sl__cmdinfo *sl__cmd_lookup(const uint8_t *buf, const sl__arg *args, uint32_t argc)
{
    if (!buf || !args || argc == 0) return NULL;
    const sl__cmdinfo *c = search(sl__cmd_table, TABLE_LEN, 0, buf + args[0].off, args[0].len);
    if (c && c->nsub && argc >= 2) {
        const sl__cmdinfo *sub = search(c->subs, c->nsub, (size_t)args[0].len + 1,
                                        buf + args[1].off, args[1].len);
        if (sub) return sub;
    }
    return c;
}

size_t sl__cmd_count(void) { return TABLE_LEN; }

/* ------------------------------------------------------------------ keys */

static int arg_is(const uint8_t *buf, const sl__arg *a, const char *word)
{
    size_t n = strlen(word);
    return a->len == n && cmp_name(buf + a->off, n, word) == 0;
}

/* Redis's string2ll: an optional '-', then "0" or a digit 1-9 and more digits, no
 * overflow. Anything else (spaces, '+', leading zeros) is not a number. */
static int parse_ll(const uint8_t *s, size_t n, int64_t *out)
{
    if (n == 0 || s[0] == '+') return 0;
    size_t first = s[0] == '-';
    /* "0" alone; no leading zeros, no "-0". */
    if (first < n && s[first] == '0' && (n - first != 1 || first)) return 0;
    return sl__parse_i64(s, n, out);
}

static inline void put(uint32_t *out, size_t cap, size_t *n, uint32_t pos)
{
    if (*n < cap) out[*n] = pos;
    (*n)++;
}

/* SORT's getkeys procedure (Redis sortGetKeys): the sorted key, and the last STORE's
 * destination, skipping the arguments of LIMIT, GET and BY. */
static size_t sort_keys(const uint8_t *buf, const sl__arg *args, uint32_t argc,
                        uint32_t *out, size_t cap)
{
    size_t n = 0;
    int64_t store = -1;
    put(out, cap, &n, 1);
    for (int64_t i = 2; i < (int64_t)argc; i++) {
        const sl__arg *a = &args[i];
        if (arg_is(buf, a, "LIMIT")) i += 2;
        else if (arg_is(buf, a, "GET") || arg_is(buf, a, "BY")) i += 1;
        else if (arg_is(buf, a, "STORE") && i + 1 < (int64_t)argc) store = i + 1;
    }
    if (store > 0) put(out, cap, &n, (uint32_t)store);
    return n;
}

/* MIGRATE's getkeys procedure (Redis migrateGetKeys): argv[3], or with KEYS (after the
 * options; AUTH takes 1 argument, AUTH2 2) every argument after it, when argv[3] is "". */
static size_t migrate_keys(const uint8_t *buf, const sl__arg *args, uint32_t argc,
                           uint32_t *out, size_t cap)
{
    uint32_t first = 3, num = 1;
    for (uint32_t i = 6; i < argc; i++) {
        if (arg_is(buf, &args[i], "KEYS")) {
            if (args[3].len > 0) return 0; /* the server refuses this form */
            first = i + 1;
            num = argc - first;
            break;
        }
        if (arg_is(buf, &args[i], "AUTH")) i += 1;
        else if (arg_is(buf, &args[i], "AUTH2")) i += 2;
    }
    size_t n = 0;
    for (uint32_t k = 0; k < num; k++) put(out, cap, &n, first + k);
    return n;
}

/* One key spec. Returns -1 when the spec does not fit the arguments. */
static int spec_keys(const sl__keyspec *ks, int16_t arity, const uint8_t *buf,
                     const sl__arg *args, int64_t argc, uint32_t *out, size_t cap, size_t *n)
{
    int64_t first = 0, last, step;
    if (ks->bs_type == SL__BS_INDEX) {
        first = ks->bs_pos;
    } else if (ks->bs_type == SL__BS_KEYWORD) {
        if (!ks->bs_keyword) return -1;
        /* Forward from startfrom, or backward from argc + startfrom, like Redis (which
         * does not test the end index itself: a keyword there has no keys after it). */
        int64_t start = ks->bs_pos > 0 ? ks->bs_pos : argc + ks->bs_pos;
        int64_t end = ks->bs_pos > 0 ? argc - 1 : 0;
        for (int64_t i = start; i != end; i = start <= end ? i + 1 : i - 1) {
            if (i >= argc || i < 1) break;
            if (arg_is(buf, &args[i], ks->bs_keyword)) {
                first = i + 1;
                break;
            }
        }
        if (!first) return 0; /* keyword absent: this spec has no keys */
    } else {
        return 0; /* inert (unknown or not-a-key) spec */
    }

    if (ks->fk_type == SL__FK_RANGE) {
        int64_t lastkey = ks->fk_a, limit = ks->fk_c;
        step = ks->fk_b;
        if (lastkey >= 0) {
            last = first + lastkey;
        } else if (limit == 0) {
            last = argc + lastkey;
        } else {
            if (lastkey != -1 || limit < 0) return -1;
            last = first + ((argc - first) / limit + lastkey);
        }
    } else if (ks->fk_type == SL__FK_KEYNUM) {
        int64_t idx = ks->fk_a, numkeys;
        step = ks->fk_c;
        if (idx < 0 || idx >= argc - first) return -1;
        const sl__arg *a = &args[first + idx];
        if (!parse_ll(buf + a->off, a->len, &numkeys) || numkeys < 0 || numkeys > argc)
            return -1;
        first += ks->fk_b;
        last = first + numkeys - 1;
    } else {
        return 0;
    }
    if (step < 1) return -1;
    if (first < 1 || last >= argc || last < first || first >= argc) return -1;
    for (int64_t i = first; i <= last; i += step) {
        if (i >= argc) {
            if (arity < 0) continue;
            return -1;
        }
        put(out, cap, n, (uint32_t)i);
    }
    return 0;
}

size_t sl__cmd_keys(const sl__cmdinfo *info, const uint8_t *buf, const sl__arg *args,
                    uint32_t argc, uint32_t *out, size_t cap)
{
    if (!info || !buf || !args || argc == 0 || (!out && cap)) return 0;
    if (info->arity > 0 ? argc != (uint32_t)info->arity
                        : argc < (uint32_t)-(int32_t)info->arity)
        return 0;
    if (info->flags & SL__CMD_INCOMPLETE) {
        if (strcmp(info->name, "SORT") == 0) return sort_keys(buf, args, argc, out, cap);
        if (strcmp(info->name, "MIGRATE") == 0) return migrate_keys(buf, args, argc, out, cap);
    }
    size_t n = 0;
    for (uint8_t s = 0; s < info->nspecs; s++)
        if (spec_keys(&info->specs[s], info->arity, buf, args, argc, out, cap, &n) < 0)
            return 0;
    /* Specs come in spec order; callers want argument order. Usually already sorted. */
    size_t w = n < cap ? n : cap;
    for (size_t i = 1; i < w; i++) {
        uint32_t v = out[i];
        size_t j = i;
        while (j > 0 && out[j - 1] > v) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = v;
    }
    return n;
}
