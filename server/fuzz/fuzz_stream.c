/* fuzz_stream: libFuzzer target for stream IDs and the stream commands' arguments.
 *
 * The first byte picks the part:
 *  - even: the input is one stream ID argument. sv_sid_parse (strict or not, with or
 *    without the ms-* form) must not read past it; a parsed ID prints ("ms-seq") and
 *    parses back to itself; an input already in that canonical form prints unchanged.
 *  - odd: a sequence of stream commands on one in-process shard — XADD with trim
 *    options (MAXLEN/MINID, = ~, LIMIT, NOMKSTREAM) and IDs from a table of edge
 *    values (0-0, ms-*, the maximum ID, partial, invalid), XTRIM, XDEL, XRANGE,
 *    XREVRANGE, XLEN, XGROUP, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM, XSETID, XINFO,
 *    and the rewrite's slotlane.xmeta/xpel, with the shard's clock moving.
 *    Checked after every command: exactly one well-formed RESP2 reply. After every
 *    input, every stream: blocks in ID order, at most 100 entries each, live counts
 *    and the length agree with the tombstone flags, first/last IDs, every block's
 *    last ID; every PEL sorted, each consumer's PEL the group's entries it owns.
 *    ASan/UBSan/LeakSanitizer see the rest. State is reset per input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "shard.h"
#include "stream.h"
#include "stream_int.h"

#define CHECK(cond)                                                                                   \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            fprintf(stderr, "fuzz_stream: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                                  \
        }                                                                                             \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sv_shard shard;
static int initialised;

static void init_once(void)
{
    sv_server_for_tests();
    memset(&sv_cfg, 0, sizeof(sv_cfg));
    sv_cfg.shards = 1;
    sv_cfg.port = 7000;
    sv_cfg.maxclients = 10000;
    sv_cfg.loglevel = SV_LOG_WARNING;
    sv_cfg.output_limit = 1 << 20;
    snprintf(sv_cfg.bind, sizeof(sv_cfg.bind), "127.0.0.1");
    snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "127.0.0.1");
    sv_hash_seed(1);
    sv_cmdtable_init();
    sv_shard_init_data(&shard, 0);
    sv_shards = &shard;
    sv_cluster_init_shard(&shard);
    initialised = 1;
}

/* ---- part 1: IDs ---- */

/* digits '-' digits, no sign, no leading zero (but "0") */
static int canonical(const char *p, size_t n)
{
    size_t i = 0;
    for (int part = 0; part < 2; part++) {
        size_t st = i;
        while (i < n && p[i] >= '0' && p[i] <= '9') i++;
        if (i == st || (p[st] == '0' && i - st > 1)) return 0;
        if (part == 0) {
            if (i >= n || p[i] != '-') return 0;
            i++;
        }
    }
    return i == n;
}

static void fuzz_id(const uint8_t *data, size_t size, unsigned mode)
{
    char *exact = malloc(size ? size : 1);
    if (size) memcpy(exact, data, size);
    sv_str a = {exact, size};
    sv_sid id;
    int seq_given = 1;
    int strict = (mode >> 1) & 1, want_seq = (mode >> 2) & 1;
    uint64_t missing = (mode >> 3) & 1 ? UINT64_MAX : 0;
    if (sv_sid_parse(a, &id, missing, strict, want_seq ? &seq_given : NULL)) {
        char b[48];
        size_t n = sv_sid_fmt(b, &id);
        sv_sid back;
        CHECK(sv_sid_parse((sv_str){b, n}, &back, 0, 1, NULL));
        CHECK(sv_sid_cmp(&back, &id) == 0);
        /* a canonical "ms-seq" prints as itself */
        if (canonical(exact, size)) CHECK(n == size && memcmp(b, exact, n) == 0);
    }
    free(exact);
}

/* ---- part 2: commands ---- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static unsigned byte(reader *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

static const char *const ids[] = {
    "0-0", "0-1", "1", "1-0", "1-1", "1-*", "2", "2-*", "3-5", "5", "10-0", "10-*", "100", "1000-2",
    "18446744073709551615", "18446744073709551615-18446744073709551615", "18446744073709551615-*",
    "18446744073709551614-18446744073709551615", "18446744073709551616", "-", "+", "(1", "(0-0", "(+", "(-",
    "*", "$", ">", "x", "1-x", "-1", "", "01", " 1", "+1", "1-2-3", "1-", "0", "(18446744073709551615-18446744073709551615"};
static const char *const words[] = {"MAXLEN", "MINID", "~", "=", "LIMIT", "NOMKSTREAM", "COUNT", "STREAMS",
                                    "GROUP", "NOACK", "BLOCK", "MKSTREAM", "ENTRIESREAD", "CREATE", "SETID",
                                    "DESTROY", "CREATECONSUMER", "DELCONSUMER", "HELP", "IDLE", "TIME",
                                    "RETRYCOUNT", "FORCE", "JUSTID", "LASTID", "FULL", "STREAM", "GROUPS",
                                    "CONSUMERS", "ENTRIESADDED", "MAXDELETEDID"};
static const char *const nums[] = {"0", "1", "2", "3", "5", "10", "99", "100", "101", "250", "-1", "-5",
                                   "3600000", "9223372036854775807", "-9223372036854775808", "x", "1.5"};
static const char *const names[] = {"s", "t", "g", "h", "alice", "bob", ""};
static const char *const cmds[] = {"XADD", "XADD", "XADD", "XADD", "XTRIM", "XDEL", "XRANGE", "XREVRANGE",
                                   "XLEN", "XGROUP", "XREADGROUP", "XREAD", "XACK", "XPENDING", "XCLAIM",
                                   "XAUTOCLAIM", "XSETID", "XINFO", "slotlane.xmeta", "slotlane.xpel", "DEL",
                                   "SET"};
#define N(a) (sizeof(a) / sizeof(a[0]))

static sv_str lit(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n ? n : 1);
    if (n) memcpy(d, s, n);
    return (sv_str){d, n};
}

static sv_str arg(reader *r)
{
    unsigned t = byte(r);
    switch (t & 3) {
    case 0: return lit(ids[(t >> 2) % N(ids)]);
    case 1: return lit(words[(t >> 2) % N(words)]);
    case 2: return lit(nums[(t >> 2) % N(nums)]);
    default: return lit(names[(t >> 2) % N(names)]);
    }
}

static long line_len(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] == '\r') return p[i + 1] == '\n' ? (long)i : -1;
        if (p[i] == '\n') return -1;
    }
    return -1;
}

/* Size of one complete RESP2 reply at p, 0 if malformed. */
static size_t reply_len(const char *p, size_t n, int depth)
{
    if (n < 3 || depth > 32) return 0;
    long l = line_len(p, n);
    if (l < 1) return 0;
    size_t head = (size_t)l + 2;
    long long v = 0;
    int isnum = sv_str2ll(p + 1, (size_t)l - 1, &v);
    switch (p[0]) {
    case '+':
    case '-': return head;
    case ':': return isnum ? head : 0;
    case '$':
        if (!isnum || v < -1) return 0;
        if (v == -1) return head;
        if ((unsigned long long)v > n - head || n - head - (size_t)v < 2) return 0;
        return memcmp(p + head + v, "\r\n", 2) ? 0 : head + (size_t)v + 2;
    case '*': {
        if (!isnum || v < -1) return 0;
        size_t off = head;
        for (long long i = 0; i < v; i++) {
            size_t k = reply_len(p + off, n - off, depth + 1);
            if (!k) return 0;
            off += k;
        }
        return off;
    }
    default: return 0;
    }
}

static void check_pel(const sv_pel *p)
{
    for (size_t i = 1; i < p->len; i++) CHECK(sv_sid_cmp(&PEL_AT(p, i - 1)->id, &PEL_AT(p, i)->id) < 0);
}

static void check_stream(const sv_stream *s)
{
    uint64_t live = 0;
    sv_sid prev = {0, 0};
    int any = 0;
    sv_sid first_live = {0, 0};
    int have_first = 0;
    for (size_t bi = 0; bi < s->nblocks; bi++) {
        const sv_sblock *b = blk(s, bi);
        CHECK(b->n >= 1 && b->n <= SV_SBLOCK_MAX && b->live <= b->n);
        uint32_t l = 0;
        for (uint32_t i = 0; i < b->n; i++) {
            const char *e = b->data.data + b->off[i];
            sv_sid id = ent_id(e);
            if (any) CHECK(sv_sid_cmp(&prev, &id) < 0);
            prev = id;
            any = 1;
            CHECK(ent_nfields(e) >= 1);
            if (!(e[16] & ENT_DELETED)) {
                l++;
                if (!have_first) first_live = id, have_first = 1;
            }
        }
        CHECK(l == b->live);
        CHECK(sv_sid_cmp(&b->last, &prev) == 0);
        live += l;
    }
    CHECK(live == s->length);
    /* XSETID may put last_id below deleted entries at the end, never below a live one */
    if (have_first) {
        sv_sid last_live = stream_edge(s, 0, 0);
        CHECK(sv_sid_cmp(&s->last_id, &last_live) >= 0);
    }
    if (s->length) CHECK(sv_sid_cmp(&s->first_id, &first_live) == 0);
    else CHECK(s->first_id.ms == 0 && s->first_id.seq == 0);
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        const sv_cgroup *g = s->groups[gi];
        if (gi) { /* sorted by name, as Redis's rax */
            const sv_cgroup *p = s->groups[gi - 1];
            size_t m = p->nlen < g->nlen ? p->nlen : g->nlen;
            int r = memcmp(p->name, g->name, m);
            CHECK(r < 0 || (r == 0 && p->nlen < g->nlen));
        }
        check_pel(&g->pel);
        size_t owned = 0;
        for (size_t ci = 0; ci < g->ncons; ci++) {
            const sv_consumer *c = g->cons[ci];
            check_pel(&c->pel);
            for (size_t i = 0; i < c->pel.len; i++) {
                sv_nack *n = PEL_AT(&c->pel, i);
                CHECK(n->consumer == c);
                CHECK(pel_find(&g->pel, &n->id, NULL) == n);
            }
            owned += c->pel.len;
        }
        CHECK(owned == g->pel.len);
        for (size_t i = 0; i < g->pel.len; i++) CHECK(PEL_AT(&g->pel, i)->consumer != NULL);
    }
}

static void fuzz_commands(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    shard.now_ms = 1700000000000LL;
    sv_session sess;
    memset(&sess, 0, sizeof(sess));
    sess.id = 1;
    sess.proto = 2;
    sv_buf out = {0};
    sv_str argv[24];
    for (int executed = 0; r.n && executed < 100; executed++) {
        unsigned op = byte(&r);
        if (op >= 250) { /* the clock moves */
            shard.now_ms += (int64_t)byte(&r) << (op - 250) * 8;
            continue;
        }
        int argc = 0;
        argv[argc++] = lit(cmds[op % N(cmds)]);
        argv[argc++] = lit(names[byte(&r) % 2]); /* the key: s or t */
        int nargs = (int)(byte(&r) % 12);
        for (int i = 0; i < nargs; i++) argv[argc++] = arg(&r);
        out.len = 0;
        sv_ctx c = {.sh = &shard, .sess = &sess, .r = {&out, 2}};
        sv_execute(&c, argc, argv);
        CHECK(out.len > 0);
        CHECK(reply_len(out.data, out.len, 0) == out.len);
        for (int i = 0; i < argc; i++) free((void *)argv[i].p);
    }
    sv_dict_iter it;
    sv_dict_iter_init(&it, &shard.keys);
    for (sv_entry *e; (e = sv_dict_iter_next(&it));)
        if (((sv_obj *)e->val)->type == SV_T_STREAM) check_stream(e->val);
    sv_buf_free(&out);
    sv_db_flush(&shard);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!initialised) init_once();
    if (size == 0) return 0;
    unsigned mode = data[0];
    if (mode & 1) fuzz_commands(data + 1, size - 1);
    else fuzz_id(data + 1, size - 1, mode);
    return 0;
}
