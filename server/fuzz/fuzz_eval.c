/* fuzz_eval: libFuzzer target for scripting — random short Lua programs run
 * through EVAL (and as the body of a function through FUNCTION LOAD + FCALL) on an
 * in-process shard (no loop, no socket, no thread).
 *
 * The input is decoded into a program: each byte picks a fragment from a table of
 * Lua that Redis scripts use (redis.call/pcall with commands and keys, the reply
 * tables {err=} {ok=} {double=} {map=} {set=} {big_number=} {verbatim_string=},
 * cjson/cmsgpack/struct/bit calls, pcall/error, tables, loops with small bounds,
 * sandbox escapes: rawset, setmetatable, loadstring, globals), or, with the high bit
 * set, the next few bytes raw. The first byte picks RESP2/RESP3, EVAL or FCALL and
 * one shard or three (Redis Cluster's key checks inside scripts).
 *
 * Checked: exactly one complete, well-formed reply in the session's protocol; the
 * shard answers PING afterwards; no leak (LeakSanitizer per input; the Lua state is
 * closed after every input). Two limits keep the fuzzer fast: each Lua state may
 * hold 32 MB (beyond it Lua raises "not enough memory", as a script meeting
 * maxmemory would fail), and a script is stopped after 20 count-hook calls (2
 * million instructions) as by SCRIPT KILL, so loops end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"
#include "server.h"
#include "shard.h"

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "fuzz_eval: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                                \
        }                                                                                           \
    } while (0)

#define NSHARDS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sv_shard shards[NSHARDS];
static int initialised;

static const char *const frags[] = {
    "return ", "redis.call(", "redis.pcall(", "'set'", "'get'", "'incr'", "'hset'", "'hgetall'", "'lpush'",
    "'lrange'", "'zadd'", "'zscore'", "'sadd'", "'smembers'", "'del'", "'exists'", "'eval'", "'ping'", "'nosuch'",
    "'a'", "'b'", "'{t}a'", "'{t}b'", "KEYS[1]", "KEYS[2]", "ARGV[1]", "ARGV", "KEYS", ",", ")", "(", "{", "}",
    "[", "]", "=", "==", "local x = ", "x", "y", "..", "+", "-", "*", "/", "%", "#", "1", "-1", "0", "0.5", "1e308",
    "2^53", "'1.5'", "'10'", "nil", "true", "false", "not ", " and ", " or ", "cjson.encode(", "cjson.decode(",
    "'[1,2,{\"a\":3}]'", "'{\"a\":'", "cmsgpack.pack(", "cmsgpack.unpack(", "cmsgpack.unpack_one(",
    "cmsgpack.unpack_limit(", "struct.pack(", "struct.unpack(", "struct.size(", "'>I2'", "'<i4d'", "'!4bi4'",
    "'c0'", "'s'", "'i40'", "bit.band(", "bit.bor(", "bit.tohex(", "bit.lshift(", "redis.sha1hex(",
    "redis.error_reply(", "redis.status_reply(", "redis.setresp(3) ", "redis.setresp(2) ", "redis.log(redis.LOG_DEBUG,",
    "redis.set_repl(", "redis.breakpoint()", "{err='x'}", "{err='-CODE y'}", "{ok='y'}", "{double=1.5}",
    "{double=0/0}", "{map={a=1,b={2}}}", "{set={a=true}}", "{big_number='12345678901234567890'}",
    "{verbatim_string={format='txt',string='s'}}", "{1,2,{3,{4}}}", "{1,nil,3}", "pcall(", "xpcall(", "error(",
    "function() ", " end", "for i=1,5 do ", "while x do x = nil ", "if x then ", " else ", " do ", "string.rep('x', 100)",
    "string.rep('ab', 1000)", "tostring(", "tonumber(", "type(", "[1]", ".a", ".err", ".map", "setmetatable(",
    "getmetatable(", "rawset(", "rawget(", "_G", "loadstring(", "'return 1'", "unpack(", "select('#', ",
    "table.concat(", "table.insert(", "string.format('%d', ", "string.sub(", "math.floor(", "coroutine.wrap(",
    "redis", "string", "os", "io", "print(", "; ", " ", "\n", "'", "\"", "local t = {} t[1] = t ", "t", "return t",
    "{KEYS[1], ARGV[1]}", "redis.call('set', KEYS[1], ARGV[1]) ", "redis.call('get', KEYS[1])",
    "redis.call('set', 'x', 1) ", "redis.pcall('incr', KEYS[1])", "#!lua flags=no-writes\n",
    "#!lua flags=allow-cross-slot-keys\n", "#!lua\n", "redis.REDIS_VERSION", "collectgarbage('step')"};
#define NFRAGS (sizeof(frags) / sizeof(frags[0]))

static void init_once(void)
{
    sv_server_for_tests();
    memset(&sv_cfg, 0, sizeof(sv_cfg));
    sv_cfg.shards = 1;
    sv_cfg.port = 7000;
    sv_cfg.busy_reply_ms = 5000;
    sv_cfg.output_limit = 1 << 20;
    sv_cfg.loglevel = SV_LOG_WARNING + 1; /* redis.log writes nothing */
    snprintf(sv_cfg.bind, sizeof(sv_cfg.bind), "127.0.0.1");
    snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "127.0.0.1");
    sv_hash_seed(12345);
    sv_cmdtable_init();
    for (int i = 0; i < NSHARDS; i++) sv_shard_init_data(&shards[i], i);
    sv_shards = shards;
    sv_script_mem_limit = 32u << 20;
    sv_script_hook_budget = 20;
    initialised = 1;
}

/* ---- reply validation: one value, consumed exactly ---- */

static long line_len(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] == '\r') return p[i + 1] == '\n' ? (long)i : -1;
        if (p[i] == '\n') return -1;
    }
    return -1;
}

static int parse_ll(const char *p, long n, long long *v)
{
    char tmp[32];
    if (n <= 0 || n >= (long)sizeof(tmp)) return 0;
    memcpy(tmp, p, (size_t)n);
    tmp[n] = 0;
    char *end;
    *v = strtoll(tmp, &end, 10);
    return *end == 0;
}

/* Returns the size of the value at p, or 0 when malformed. */
static size_t value(const char *p, size_t n, int proto, int depth)
{
    CHECK(depth < 2000);
    if (n < 3) return 0;
    long l = line_len(p + 1, n - 1);
    if (l < 0) return 0;
    size_t hdr = (size_t)l + 3;
    long long v;
    switch (p[0]) {
    case '+': case '-': case ':':
        return hdr;
    case '_': case ',': case '#': case '(':
        return proto == 3 ? hdr : 0;
    case '$': case '=':
        if (p[0] == '=' && proto != 3) return 0;
        if (!parse_ll(p + 1, l, &v)) return 0;
        if (v < 0) return v == -1 && p[0] == '$' ? hdr : 0;
        if (n - hdr < (size_t)v + 2 || p[hdr + v] != '\r' || p[hdr + v + 1] != '\n') return 0;
        return hdr + (size_t)v + 2;
    case '*': case '%': case '~': {
        if (p[0] != '*' && proto != 3) return 0;
        if (!parse_ll(p + 1, l, &v)) return 0;
        if (v < 0) return v == -1 && p[0] == '*' ? hdr : 0;
        size_t at = hdr;
        long long items = p[0] == '%' ? 2 * v : v;
        for (long long i = 0; i < items; i++) {
            size_t m = value(p + at, n - at, proto, depth + 1);
            if (!m) return 0;
            at += m;
        }
        return at;
    }
    }
    return 0;
}

static void run(sv_shard *sh, sv_session *sess, int argc, sv_str *argv, sv_buf *out)
{
    out->len = 0;
    sv_ctx ctx = {.sh = sh, .sess = sess, .r = {out, sess->proto}, .noroute = 1};
    sv_execute(&ctx, argc, argv);
    CHECK(out->len > 0);
    CHECK(value(out->data, out->len, sess->proto, 0) == out->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!initialised) init_once();
    if (size == 0) return 0;
    unsigned mode = data[0];
    sv_cfg.shards = mode & 1 ? NSHARDS : 1;
    sv_session sess;
    memset(&sess, 0, sizeof(sess));
    sess.id = 1;
    sess.proto = mode & 2 ? 3 : 2;
    int fcall = (mode & 4) != 0;
    sv_shard *sh = &shards[0];
    sh->now_ms = 1700000000000LL;

    sv_buf prog = {0};
    if (fcall) {
        static const char head[] = "#!lua name=fz\nredis.register_function('f', function(KEYS, ARGV) ";
        sv_buf_append(&prog, head, sizeof(head) - 1);
    }
    for (size_t i = 1; i < size; i++) {
        uint8_t b = data[i];
        if (b & 0x80) { /* raw bytes: the low bits say how many follow */
            size_t n = (b & 7) + 1;
            if (n > size - i - 1) n = size - i - 1;
            sv_buf_append(&prog, data + i + 1, n);
            i += n;
        } else {
            const char *f = frags[b % NFRAGS];
            sv_buf_append(&prog, f, strlen(f));
        }
    }
    if (fcall) sv_buf_append(&prog, "\nend)", 5);
    /* arguments as separate allocations of their exact size */
    char *p = malloc(prog.len ? prog.len : 1);
    memcpy(p, prog.data ? prog.data : "", prog.len);
    sv_buf out = {0};
    if (fcall) {
        sv_str load[3] = {{"FUNCTION", 8}, {"LOAD", 4}, {p, prog.len}};
        run(sh, &sess, 3, load, &out);
        sv_str call[6] = {{"FCALL", 5}, {"f", 1}, {"2", 1}, {"{t}a", 4}, {"{t}b", 4}, {"1", 1}};
        run(sh, &sess, 6, call, &out);
    } else {
        sv_str ev[6] = {{"EVAL", 4}, {p, prog.len}, {"2", 1}, {"{t}a", 4}, {"{t}b", 4}, {"1", 1}};
        run(sh, &sess, 6, ev, &out);
        /* the same again through the cache */
        sv_str ev2[6] = {{"EVAL", 4}, {p, prog.len}, {"1", 1}, {"{t}a", 4}, {"x", 1}, {"2", 1}};
        run(sh, &sess, 6, ev2, &out);
    }
    sv_str ping[1] = {{"PING", 4}};
    run(sh, &sess, 1, ping, &out);
    CHECK(out.len == 7 && !memcmp(out.data, "+PONG\r\n", 7));
    free(p);
    sv_buf_free(&prog);
    sv_buf_free(&out);
    /* state is per input */
    sv_db_flush(sh);
    sv_script_free_shard(sh);
    return 0;
}
