/* fuzz_command: libFuzzer target for the command layer — sv_execute with routing and
 * every command family, on in-process shards (no loop, no socket, no thread).
 *
 * The input is decoded by a small grammar into a sequence of commands: a command byte
 * picks a name from the command table (or raw bytes, or a control: advance the clock,
 * run active expiry, switch protocol or executing shard), then each argument is a key
 * from a handful (so state builds up), a number from a table of edge values, an
 * option or subcommand word, a short member, or raw bytes. The first byte picks the
 * routing: one shard (standalone rules), three shards with MOVED/CROSSSLOT (Redis
 * Cluster), three shards with the forwarding owner check, or three shards running
 * as the owner of a forwarded command (no routing check).
 *
 * Checked after every command: exactly one well-formed reply in the session's
 * protocol (RESP2 never sees a RESP3 type). Checked after every input: each shard's
 * per-slot key counts, its expiring-key array, no empty list/hash/set/zset, every
 * list's and sorted set's internal order and size. ASan, UBSan and LeakSanitizer
 * (libFuzzer's per-input leak check) see the rest. Arguments are separate
 * allocations of their exact size, so reading past one is caught. State is reset per
 * input (libFuzzer needs one input to give one behaviour). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "shard.h"

#define CHECK(cond)                                                                                    \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "fuzz_command: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                                   \
        }                                                                                              \
    } while (0)

#define NSHARDS 3
#define MAX_ARGS 48
/* Small on purpose: replies that stream until the output limit (SRANDMEMBER with a
 * huge negative count) stop early, and the fuzzer stays fast. */
#define FUZZ_OUTPUT_LIMIT (256 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static int more(reader *r) { return r->n > 0; }
static unsigned byte(reader *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

static const char *const keys[] = {"a", "b", "c", "{t}a", "{t}b", "{t}c", "", "k:1"};
static const char *const numbers[] = {
    "0", "1", "-1", "2", "3", "5", "10", "-2", "-10", "100", "-100", "1000", "65535", "2147483647", "2147483648",
    "-2147483648", "4294967296", "9223372036854775807", "-9223372036854775807", "-9223372036854775808",
    "9223372036854775808", "18446744073709551615", "536870912", "1.5", "-1.5", "0.1", "1e10", "1e308", "-1e308",
    "1e309", "inf", "-inf", "+inf", "nan", "(1", "(1.5", "[a", "(a", "-", "+", "[", "(", "01", "-0", " 1", "1 ",
    "0x10", "3.0", "1e-320", "5e-324", "17", "16383", "16384", "4611686018427387904", "-4611686018427387904",
    "9007199254740993", "100000", "1000000"};
static const char *const words[] = {
    "NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "GET", "PERSIST",
    "WITHSCORES", "LIMIT", "BYSCORE", "BYLEX", "REV", "MATCH", "COUNT", "TYPE", "LEFT", "RIGHT", "BEFORE",
    "AFTER", "RANK", "MAXLEN", "WITHVALUES", "string", "list", "hash", "set", "zset", "*", "a*", "?", "[ab]",
    "[^a]", "\\", "*\\", "[a-", "[", "SLOTS", "SHARDS", "NODES", "MYID", "KEYSLOT", "COUNTKEYSINSLOT",
    "GETKEYSINSLOT", "INFO", "SETNAME", "GETNAME", "ID", "SETINFO", "LIB-NAME", "LIB-VER", "LIST", "HELP",
    "SET", "RESETSTAT", "maxclients", "loglevel", "debug", "warning", "DOCS", "GETKEYS", "FLUSH", "ASYNC",
    "SYNC", "AUTH", "default", "all", "everything", "server", "clients", "stats", "keyspace", "memory",
    "persistence", "replication", "cluster", "default", "2", "3", "4", "ping", "get", "set", "sintercard",
    "mset", "lmove", "zadd", "*0\r\n", "a b", "\n",
    /* the data types of issue 24 */
    "WEIGHTS", "AGGREGATE", "SUM", "MIN", "MAX", "BIT", "BYTE", "AND", "OR", "XOR", "NOT", "OVERFLOW", "WRAP",
    "SAT", "FAIL", "INCRBY", "i8", "u8", "i64", "u63", "#1", "STORE", "STOREDIST", "BY", "nosort", "ALPHA",
    "DESC", "ASC", "WITHDIST", "WITHCOORD", "WITHHASH", "FROMMEMBER", "FROMLONLAT", "BYRADIUS", "BYBOX", "km",
    "ANY", "IDX", "LEN", "MINMATCHLEN", "WITHMATCHLEN", "REPLACE", "DB", "ENCODING", "DECODE", "GETREG",
    "TODENSE", "#", "*->f", "HYLL"};
static const char *const members[] = {"x", "y", "z", "m1", "m2", "f", "v", "1", "2", "a", "b", "c", ""};

static sv_shard shards[NSHARDS];
static sv_buf out;
static int initialised;

static void init_once(void)
{
    sv_server_for_tests();
    memset(&sv_cfg, 0, sizeof(sv_cfg));
    sv_cfg.shards = NSHARDS;
    sv_cfg.port = 7000;
    snprintf(sv_cfg.bind, sizeof(sv_cfg.bind), "127.0.0.1");
    snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "127.0.0.1");
    sv_hash_seed(12345);
    sv_cmdtable_init();
    for (int i = 0; i < NSHARDS; i++) sv_shard_init_data(&shards[i], i);
    sv_shards = shards;
    initialised = 1;
}

/* ---- reply validation ---- */

/* Length of the CRLF-terminated line at p (without CRLF); -1 if none or a bare CR/LF inside. */
static long line_len(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] == '\r') return p[i + 1] == '\n' ? (long)i : -1;
        if (p[i] == '\n') return -1;
    }
    return -1;
}

/* Size of one complete reply at p, or 0 if it is malformed or incomplete. */
static size_t reply_len(const char *p, size_t n, int proto, int depth)
{
    if (n < 3 || depth > 64) return 0;
    long l = line_len(p, n);
    if (l < 1) return 0;
    size_t head = (size_t)l + 2;
    char t = p[0];
    long long v = 0;
    int isnum = sv_str2ll(p + 1, (size_t)l - 1, &v);
    switch (t) {
    case '+':
    case '-':
        return head;
    case ':':
        return isnum ? head : 0;
    case '$':
        if (!isnum || v < -1 || (v == -1 && proto >= 3)) return 0;
        if (v == -1) return head;
        if ((unsigned long long)v > n - head || n - head - (size_t)v < 2) return 0;
        if (p[head + (size_t)v] != '\r' || p[head + (size_t)v + 1] != '\n') return 0;
        return head + (size_t)v + 2;
    case '*':
    case '%':
    case '~':
    case '>': {
        if (t != '*' && proto < 3) return 0;
        if (!isnum || v < -1 || (v == -1 && (proto >= 3 || t != '*'))) return 0;
        if (v == -1) return head;
        long long items = t == '%' ? v * 2 : v;
        size_t off = head;
        for (long long i = 0; i < items; i++) {
            size_t k = reply_len(p + off, n - off, proto, depth + 1);
            if (!k) return 0;
            off += k;
        }
        return off;
    }
    case '_':
        return proto >= 3 && l == 1 ? head : 0;
    case ',': {
        if (proto < 3) return 0;
        double d;
        if (l - 1 == 3 && !memcmp(p + 1, "nan", 3)) return head;
        return sv_str2d(p + 1, (size_t)l - 1, &d) || (l - 1 == 3 && !memcmp(p + 1, "inf", 3)) ||
                       (l - 1 == 4 && !memcmp(p + 1, "-inf", 4))
                   ? head
                   : 0;
    }
    case '#':
        return proto >= 3 && l == 2 && (p[1] == 't' || p[1] == 'f') ? head : 0;
    case '=':
        if (proto < 3 || !isnum || v < 4 || (unsigned long long)v > n - head || n - head - (size_t)v < 2) return 0;
        if (memcmp(p + head, "txt:", 4) != 0) return 0;
        if (p[head + (size_t)v] != '\r' || p[head + (size_t)v + 1] != '\n') return 0;
        return head + (size_t)v + 2;
    default:
        return 0;
    }
}

/* ---- invariants of a shard's data ---- */

static int zless(const sv_entry *a, const sv_entry *b)
{
    if (a->u.d != b->u.d) return a->u.d < b->u.d;
    size_t m = a->klen < b->klen ? a->klen : b->klen;
    int c = memcmp(a->key, b->key, m);
    return c ? c < 0 : a->klen < b->klen;
}

static void check_shard(sv_shard *sh)
{
    static uint32_t counts[SL_SLOTS];
    memset(counts, 0, sizeof(counts));
    size_t with_ttl = 0;
    sv_dict_iter it;
    sv_dict_iter_init(&it, &sh->keys);
    for (sv_entry *e; (e = sv_dict_iter_next(&it));) {
        counts[sl__key_slot(e->key, e->klen)]++;
        if (e->aux) {
            with_ttl++;
            CHECK(e->aux <= sh->nexpiring && sh->expiring[e->aux - 1] == e);
            CHECK(e->u.i != 0);
        } else {
            CHECK(e->u.i == 0);
        }
        sv_obj *o = e->val;
        CHECK(o != NULL);
        switch (o->type) {
        case SV_T_STRING: {
            sv_string *s = (sv_string *)o;
            CHECK(s->len <= s->cap);
            break;
        }
        case SV_T_LIST: {
            sv_list *l = (sv_list *)o;
            CHECK(l->len > 0 && l->len <= l->cap && l->head < l->cap);
            for (size_t i = 0; i < l->len; i++) CHECK(l->a[(l->head + i) % l->cap] != NULL);
            break;
        }
        case SV_T_HASH:
            CHECK(sv_dict_size(&((sv_hashobj *)o)->d) > 0);
            break;
        case SV_T_SET:
            CHECK(sv_dict_size(&((sv_set *)o)->d) > 0);
            break;
        case SV_T_ZSET: {
            sv_zset *z = (sv_zset *)o;
            CHECK(z->zsl.length > 0 && z->zsl.length == sv_dict_size(&z->d));
            size_t i = 0;
            for (sv_zsl_node *x = sv_zsl_first(&z->zsl), *prev = NULL; x; prev = x, x = x->level[0].forward, i++) {
                CHECK(!isnan(x->e->u.d));
                CHECK(sv_dict_find(&z->d, x->e->key, x->e->klen) == x->e);
                CHECK(x->backward == prev);
                if (prev) CHECK(zless(prev->e, x->e));
            }
            CHECK(i == z->zsl.length);
            break;
        }
        default:
            CHECK(!"unknown object type");
        }
    }
    CHECK(with_ttl == sh->nexpiring);
    CHECK(memcmp(counts, sh->slot_keys, sizeof(counts)) == 0);
}

/* ---- the grammar ---- */

static char *dup_exact(const void *p, size_t n)
{
    char *d = malloc(n ? n : 1);
    if (n) memcpy(d, p, n);
    /* for n == 0 the byte is never part of the argument: poison it by freeing and
     * reallocating would be overkill; a 0-length argument is never read */
    return d;
}

static sv_str lit(const char *s) { return (sv_str){dup_exact(s, strlen(s)), strlen(s)}; }

static sv_str raw(reader *r, size_t maxlen)
{
    size_t n = byte(r) % (maxlen + 1);
    if (n > r->n) n = r->n;
    sv_str a = {dup_exact(r->p, n), n};
    r->p += n;
    r->n -= n;
    return a;
}

static sv_str arg(reader *r)
{
    unsigned t = byte(r);
    unsigned pick = t >> 3;
    switch (t & 7) {
    case 0:
    case 1:
    case 2:
        return lit(keys[pick % (sizeof(keys) / sizeof(keys[0]))]);
    case 3:
        return lit(numbers[byte(r) % (sizeof(numbers) / sizeof(numbers[0]))]);
    case 4:
    case 5:
        return lit(words[byte(r) % (sizeof(words) / sizeof(words[0]))]);
    case 6:
        return lit(members[pick % (sizeof(members) / sizeof(members[0]))]);
    default:
        return raw(r, 40);
    }
}

/* A size guard: SETRANGE may legally make a 512 MB string; the fuzzer would spend its
 * time (and memory) filling zeros, so offsets past 1 MB are cut to 1 MB here. */
static void guard(int argc, sv_str *argv)
{
    if (argc == 4 && sv_eq(argv[0], "setrange")) {
        long long off;
        if (sv_str2ll(argv[2].p, argv[2].len, &off) && off > (1 << 20) && off < 536870912) {
            free((void *)argv[2].p);
            argv[2] = lit("1048576");
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!initialised) init_once();
    reader r = {data, size};
    unsigned mode = byte(&r);
    /* routing: 0 one shard, 1 MOVED/CROSSSLOT, 2 forwarding owner check, 3 run as owner */
    int routing = (int)(mode & 3);
    sv_cfg.shards = routing == 0 ? 1 : NSHARDS;
    sv_cfg.misrouted = routing >= 2;
    sv_cfg.port_mode = (mode >> 2) & 1 && routing >= 2; /* one-port: CLUSTER shows one node */
    sv_cfg.maxclients = 10000;
    sv_cfg.loglevel = SV_LOG_WARNING;
    sv_cfg.output_limit = FUZZ_OUTPUT_LIMIT;
    for (int i = 0; i < NSHARDS; i++) {
        sv_cluster_init_shard(&shards[i]);
        shards[i].now_ms = 1700000000000LL;
    }
    int cur = routing == 0 ? 0 : (int)((mode >> 3) % NSHARDS);
    sv_rand_seed(0x12345678u + mode);
    sv_session sess;
    memset(&sess, 0, sizeof(sess));
    sess.id = 1;
    sess.proto = (mode >> 5) & 1 ? 3 : 2;

    size_t ncmds;
    const sv_cmd *table = sv_cmd_table(&ncmds);
    sv_str argv[MAX_ARGS];
    int executed = 0;
    while (more(&r) && executed < 200) {
        unsigned op = byte(&r);
        int argc = 0;
        if (op < 232) {
            const char *n = table[op % ncmds].name;
            argv[argc++] = lit(strcmp(n, "shutdown") ? n : "ping"); /* SHUTDOWN would signal the fuzzer itself */
        } else if (op < 240) {
            argv[argc++] = raw(&r, 16); /* a raw name: unknown commands, odd case */
        } else if (op < 244) { /* the clock moves: lazy expiry on the next access */
            int64_t step = (int64_t)byte(&r) << ((op - 240) * 6);
            for (int i = 0; i < NSHARDS; i++) shards[i].now_ms += step;
            continue;
        } else if (op == 244) {
            sv_expire_cycle(&shards[cur], 1000); /* active expiry (reads the real clock) */
            for (int i = 0; i < NSHARDS; i++) shards[i].now_ms = shards[cur].now_ms;
            continue;
        } else if (op == 245) {
            sess.proto = sess.proto == 2 ? 3 : 2;
            continue;
        } else if (op == 246) {
            if (routing) cur = (int)(byte(&r) % NSHARDS);
            continue;
        } else { /* mixed case: the lookup is case-insensitive */
            const char *n = table[byte(&r) % ncmds].name;
            if (!strcmp(n, "shutdown")) n = "ping"; /* SHUTDOWN would signal the fuzzer itself */
            char up[40];
            size_t l = strlen(n);
            for (size_t i = 0; i < l; i++) up[i] = (char)((i + op) % 2 ? n[i] - 32 * (n[i] >= 'a' && n[i] <= 'z') : n[i]);
            argv[argc++] = (sv_str){dup_exact(up, l), l};
        }
        unsigned na = byte(&r);
        int nargs = na < 224 ? (int)(na % 6) : (int)(na % (MAX_ARGS - 1));
        while (argc < 1 + nargs) argv[argc++] = arg(&r);
        guard(argc, argv);

        int proto_before = sess.proto;
        out.len = 0;
        sv_ctx ctx = {.sh = &shards[cur], .sess = &sess, .r = {&out, sess.proto}, .noroute = routing == 3};
        sv_execute(&ctx, argc, argv);
        executed++;
        /* one reply per command, complete and well formed (unless it was cut at the
         * output limit, where the server drops the client) */
        if ((long long)out.len <= FUZZ_OUTPUT_LIMIT) {
            int proto = proto_before > sess.proto ? proto_before : sess.proto;
            size_t k = reply_len(out.data, out.len, proto, 0);
            /* (UN)SUBSCRIBE answer once per channel: consecutive replies */
            const sv_cmd *cmd = sv_cmd_lookup(argv[0].p, argv[0].len);
            if (cmd && (cmd->flags & SV_CMD_PUBSUB) && cmd->arity < 0)
                for (size_t more; k && k < out.len && (more = reply_len(out.data + k, out.len - k, proto, 0));) k += more;
            if (k == 0 || k != out.len) {
                fprintf(stderr, "fuzz_command: bad reply to '%.*s' (%zu bytes, parsed %zu): %.*s\n",
                        (int)argv[0].len, argv[0].p, out.len, k, (int)(out.len > 300 ? 300 : out.len), out.data);
                abort();
            }
        }
        for (int i = 0; i < argc; i++) free((void *)argv[i].p);
        if (ctx.close_after) break; /* QUIT: the connection would close here */
    }

    /* the connection closes: its transaction (queue and watches) goes, as conn.c does;
     * the harness's shards share one session, so each watch is released on its shard */
    if (sess.tx) {
        for (int i = 0; i < sess.tx->nw; i++) {
            sv_txwatch *w = &sess.tx->w[i];
            if (!w->released && w->shard >= 0 && w->shard < NSHARDS) {
                sv_watch_release(&shards[w->shard], (sv_str){w->key, w->len});
                w->released = 1;
            }
        }
        sv_tx_free(&shards[cur], &sess);
    }
    for (int i = 0; i < NSHARDS; i++) {
        check_shard(&shards[i]);
        sv_db_flush(&shards[i]);
        shards[i].stats = (sv_stats){0};
    }
    if (sess.tx) { /* the session ends: its transaction state and watches on every shard go */
        for (int i = 0; i < NSHARDS; i++) sv_tx_drop_watches(&shards[i], sess.tx, i);
        sv_tx_free(&shards[0], &sess);
    }
    free(sess.name);
    free(sess.lib_name);
    free(sess.lib_ver);
    if (out.cap > (1 << 20)) sv_buf_free(&out);
    return 0;
}
