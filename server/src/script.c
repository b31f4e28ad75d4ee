/* script: see script.h. The pieces, in the order a script meets them:
 *
 *  - the sandbox: a Lua 5.1 state with Redis 7.0's libraries (base without the
 *    file and module functions, table, string, math, coroutine, cjson, bit, struct,
 *    cmsgpack) whose globals and library tables are read-only. Redis patches its Lua
 *    for read-only tables; we use Debian's stock liblua5.1, so the globals the
 *    scripts see are an empty proxy whose metatable reads through to the real table
 *    (a miss is Redis's "nonexistent global variable" error) and refuses every write
 *    with Redis's "Attempt to modify a readonly table";
 *  - the script cache (EVAL/EVALSHA, sha1 of the body) and the function libraries
 *    (FUNCTION LOAD, `#!lua name=` and redis.register_function);
 *  - the `redis` object: call/pcall run a command through sv_execute on this shard
 *    (so its writes reach the AOF as the commands they are) and convert the RESP
 *    reply into Lua values; the script's return value is converted back;
 *  - the busy rule: a count hook notices a script that runs longer than
 *    busy-reply-threshold and then serves the shard's other connections in a
 *    restricted mode (-BUSY, SCRIPT/FUNCTION KILL, SHUTDOWN NOSAVE) from inside
 *    the hook, as Redis's processEventsWhileBlocked does. */
#define _GNU_SOURCE /* accept4 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <lua-bitop.h>
#include <lua-cjson.h>

#include "aof.h"
#include "conn.h"
#include "fwd.h"
#include "script.h"
#include "script_libs.h"

/* flags of scripts (shebang) and functions (register_function) */
enum {
    SF_NO_WRITES = 1 << 0,
    SF_ALLOW_OOM = 1 << 1,
    SF_ALLOW_STALE = 1 << 2,
    SF_NO_CLUSTER = 1 << 3,
    SF_CROSS_SLOT = 1 << 4,
    SF_EVAL_COMPAT = 1 << 5, /* EVAL without a shebang: Redis 6 rules */
};

static const struct {
    const char *name;
    int flag;
} flag_names[] = {{"no-writes", SF_NO_WRITES},         {"allow-oom", SF_ALLOW_OOM},
                  {"allow-stale", SF_ALLOW_STALE},     {"no-cluster", SF_NO_CLUSTER},
                  {"allow-cross-slot-keys", SF_CROSS_SLOT}};
#define NFLAGS (sizeof(flag_names) / sizeof(flag_names[0]))

typedef struct sv_script {
    int ref; /* the compiled body in the registry */
    int flags;
    char sha[41];
    char *body;
    size_t len;
} sv_script;

typedef struct sv_lib sv_lib;
typedef struct sv_func {
    char *name;
    char *desc;
    int ref;
    int flags;
    sv_lib *lib;
} sv_func;

struct sv_lib {
    char *name;
    char *code;
    size_t codelen;
    sv_func **funcs;
    int nfuncs;
};

#define LUA_POOL_MAX 256                   /* blocks up to this size are pooled */
#define LUA_POOL_CLASSES (LUA_POOL_MAX / 16)
#define LUA_POOL_KEEP 4096                 /* free blocks kept per class */
#if defined(__SANITIZE_ADDRESS__)
#define LUA_POOL_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define LUA_POOL_ON 0
#endif
#endif
#ifndef LUA_POOL_ON
#define LUA_POOL_ON 1
#endif

typedef struct sv_lua {
    lua_State *L;
    sv_shard *sh;
    int globals_ref;  /* the real globals table (G) */
    int redis_ref;    /* the real redis table */
    int loadapi_ref;  /* the globals library code sees while FUNCTION LOAD runs it */
    int pmeta_ref;    /* the metatable of the globals proxy: its __index is G or those */
    int errh_ref;     /* the error handler */
    sv_dict scripts;  /* sha -> sv_script* */
    sv_dict funcs;    /* name -> sv_func* */
    sv_lib **libs;
    int nlibs;
    sv_session sess;  /* the session redis.call's commands run with */
    sv_buf reply;     /* their reply */
    /* the run in progress */
    int running;
    int is_eval;
    int resp;          /* setresp */
    int flags;         /* of the running script or function */
    int ro;            /* EVAL_RO / FCALL_RO */
    int wrote;         /* ran a write command: cannot be killed */
    int killed;
    int busy;          /* past the threshold: other clients get -BUSY */
    int slot;          /* cluster: the slot the script's keys are in (-1 none yet) */
    int64_t start_ms;
    const char *run_name; /* sha or function name, for error messages */
    const char *run_cmd;  /* "eval", "fcall", ... */
    int run_argc;         /* the running command as sent (FUNCTION STATS while busy) */
    sv_str *run_argv;
    sv_session *caller;
    /* FUNCTION LOAD in progress: the library being built */
    sv_lib *loading;
    int ncalls;
    size_t mem;       /* bytes the Lua state holds (INFO used_memory_lua) */
    long long hooks;  /* count-hook calls of the running script (the fuzz budget) */
    /* small blocks Lua freed, per 16-byte size class, kept for its next allocations */
    void *freed[LUA_POOL_CLASSES];
    int nfreed[LUA_POOL_CLASSES];
} sv_lua;


/* Small blocks come from per-engine free lists of 16-byte size classes: every call
 * of a script makes and drops a dozen small strings and tables (its KEYS and ARGV,
 * each redis.call's arguments and reply), and malloc/free of those was the largest
 * cost around the interpreter in a callgrind profile of FCALL. Lua always passes a
 * block's size (osize), so a block of at most LUA_POOL_MAX bytes is always one of a
 * class's size, whoever freed it. Not under a sanitizer: ASan must see every free. */
static size_t pool_class(size_t n) { return (n + 15) / 16 - 1; }

static void *pool_get(sv_lua *e, size_t n)
{
    size_t k = pool_class(n);
    void *b = e->freed[k];
    if (!b) return malloc((k + 1) * 16);
    e->freed[k] = *(void **)b;
    e->nfreed[k]--;
    return b;
}

static void pool_put(sv_lua *e, void *b, size_t n)
{
    size_t k = pool_class(n);
    if (e->nfreed[k] >= LUA_POOL_KEEP) {
        free(b);
        return;
    }
    *(void **)b = e->freed[k];
    e->freed[k] = b;
    e->nfreed[k]++;
}

static void pool_free_all(sv_lua *e)
{
    for (int k = 0; k < LUA_POOL_CLASSES; k++)
        while (e->freed[k]) {
            void *b = e->freed[k];
            e->freed[k] = *(void **)b;
            free(b);
        }
}

/* Lua's allocator: counts what the state holds, and with a limit set (the fuzz
 * target) refuses beyond it, which Lua turns into a "not enough memory" error. */
static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sv_lua *e = ud;
    int small_o = LUA_POOL_ON && ptr && osize <= LUA_POOL_MAX, small_n = LUA_POOL_ON && nsize <= LUA_POOL_MAX;
    if (nsize == 0) {
        if (small_o) pool_put(e, ptr, osize);
        else free(ptr);
        e->mem -= osize;
        return NULL;
    }
    if (sv_script_mem_limit && nsize > osize && e->mem + (nsize - osize) > sv_script_mem_limit) return NULL;
    void *q;
    if (!small_o && !small_n) {
        q = realloc(ptr, nsize);
    } else if (small_o && small_n && pool_class(osize) == pool_class(nsize)) {
        q = ptr; /* the block has room already */
    } else {
        q = small_n ? pool_get(e, nsize) : malloc(nsize);
        if (q && ptr) {
            memcpy(q, ptr, osize < nsize ? osize : nsize);
            if (small_o) pool_put(e, ptr, osize);
            else free(ptr);
        }
    }
    if (q) e->mem = e->mem - osize + nsize;
    return q;
}

/* ---- sha1 (FIPS 180-1), for script names ---- */

typedef struct {
    uint32_t h[5];
    uint64_t n;
    unsigned char buf[64];
    size_t blen;
} sha1_ctx;

#define ROL(v, b) (((v) << (b)) | ((v) >> (32 - (b))))

static void sha1_block(sha1_ctx *s, const unsigned char *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++) w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999;
        else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
        else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
        else f = b ^ c ^ d, k = 0xCA62C1D6;
        uint32_t t = ROL(a, 5) + f + e + k + w[i];
        e = d, d = c, c = ROL(b, 30), b = a, a = t;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e;
}

static void sha1_hex(const void *data, size_t len, char out[41])
{
    sha1_ctx s = {{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0}, 0, {0}, 0};
    const unsigned char *p = data;
    s.n = (uint64_t)len * 8;
    while (len >= 64) {
        sha1_block(&s, p);
        p += 64;
        len -= 64;
    }
    unsigned char last[128] = {0};
    memcpy(last, p, len);
    last[len] = 0x80;
    size_t tot = len + 9 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++) last[tot - 1 - i] = (unsigned char)(s.n >> (8 * i));
    sha1_block(&s, last);
    if (tot == 128) sha1_block(&s, last + 64);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 20; i++) {
        unsigned char byte = (unsigned char)(s.h[i / 4] >> (24 - 8 * (i % 4)));
        out[2 * i] = hex[byte >> 4];
        out[2 * i + 1] = hex[byte & 15];
    }
    out[40] = 0;
}

/* ---- the sandbox ---- */

static const char engine_key = 0; /* its address keys the engine in the registry */

static sv_lua *engine_of(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&engine_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    sv_lua *e = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return e;
}

/* t[k] = top, popped, without metamethods (G's __newindex refuses writes) */
static void rawsetfield(lua_State *L, int t, const char *k)
{
    if (t < 0) t = lua_gettop(L) + t + 1;
    lua_pushstring(L, k);
    lua_insert(L, -2);
    lua_rawset(L, t);
}

static int readonly_newindex(lua_State *L) { return luaL_error(L, "Attempt to modify a readonly table"); }

static int global_missing(lua_State *L)
{
    lua_Debug ar;
    /* from C (a library looking a global up) a missing global is nil, as Redis */
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar) && strcmp(ar.what, "C") != 0)
        return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                          lua_isstring(L, 2) ? lua_tostring(L, 2) : "?");
    return 0;
}

static int is_readonly(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx)) return 0;
    lua_pushliteral(L, "__newindex");
    lua_rawget(L, -2);
    int ro = lua_tocfunction(L, -1) == readonly_newindex;
    lua_pop(L, 2);
    return ro;
}

/* rawset that respects the read-only tables (Redis's patched Lua refuses it too;
 * the message has no position, as there) */
static int safe_rawset(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    if (is_readonly(L, 1)) {
        lua_pushliteral(L, "Attempt to modify a readonly table");
        return lua_error(L);
    }
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

/* Redis 7's pcall: an error raised as a table (redis.call's) reaches the script
 * as its message string, as in older versions */
static int redis_pcall(lua_State *L)
{
    int argc = lua_gettop(L);
    luaL_checkany(L, 1);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    if (lua_pcall(L, argc - 1, LUA_MULTRET, 0)) {
        lua_remove(L, 1);
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) lua_replace(L, -2);
            else lua_pop(L, 1);
        }
        lua_pushboolean(L, 0);
        lua_insert(L, 1);
    }
    return lua_gettop(L);
}

/* A metatable whose __index raises the missing-global error and which refuses writes. */
static void push_missing_meta(lua_State *L)
{
    lua_newtable(L);
    lua_pushcfunction(L, global_missing);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, readonly_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
}

/* Replaces the table at the top of the stack by an empty read-only proxy of it. */
static void make_readonly_proxy(lua_State *L)
{
    lua_newtable(L);             /* proxy */
    lua_newtable(L);             /* its metatable */
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, readonly_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_remove(L, -2);
}

/* The error handler every run goes through (Redis's __redis__err__handler): turns
 * the error into a table {err=, source=, line=} naming where the script failed. */
static int error_handler(lua_State *L)
{
    lua_Debug ar;
    int have = lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar);
    if (have && !strcmp(ar.what, "C")) have = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
    if (!lua_istable(L, 1)) {
        const char *m = lua_tostring(L, 1);
        lua_newtable(L);
        lua_pushfstring(L, "ERR %s", m ? m : (lua_isnil(L, 1) ? "nil" : "?"));
        lua_setfield(L, -2, "err");
        lua_replace(L, 1);
        lua_settop(L, 1);
    }
    if (have) {
        lua_pushstring(L, ar.source);
        lua_setfield(L, 1, "source");
        lua_pushinteger(L, ar.currentline);
        lua_setfield(L, 1, "line");
    }
    lua_settop(L, 1);
    return 1;
}

/* Pushes Redis's error table for an error reply or message: "-CODE msg" keeps its
 * code, a message without one gets ERR (luaPushErrorBuff). */
static void push_error_table(lua_State *L, const char *s, size_t n)
{
    while (n && (s[n - 1] == '\r' || s[n - 1] == '\n')) n--;
    luaL_Buffer b;
    lua_newtable(L);
    luaL_buffinit(L, &b);
    if (n && s[0] == '-') {
        const char *sp = memchr(s, ' ', n);
        if (!sp) {
            luaL_addstring(&b, "ERR ");
            luaL_addlstring(&b, s + 1, n - 1);
        } else {
            luaL_addlstring(&b, s + 1, n - 1);
        }
    } else {
        luaL_addstring(&b, "ERR ");
        luaL_addlstring(&b, s, n);
    }
    luaL_pushresult(&b);
    lua_setfield(L, -2, "err");
}

static int raise_error(lua_State *L, const char *msg)
{
    push_error_table(L, msg, strlen(msg));
    return lua_error(L);
}

/* ---- RESP reply -> Lua ---- */

static const char *line_end(const char *p, const char *end)
{
    const char *q = memchr(p, '\r', (size_t)(end - p));
    return q && q + 1 < end ? q : NULL;
}

/* Pushes the value encoded at p; returns the byte after it (NULL: malformed). */
static const char *resp_to_lua(lua_State *L, const char *p, const char *end, int depth)
{
    if (p >= end || depth > 200 || !lua_checkstack(L, 8)) return NULL;
    char t = *p++;
    const char *e = line_end(p, end);
    if (!e) return NULL;
    size_t n = (size_t)(e - p);
    const char *next = e + 2;
    long long v = 0;
    switch (t) {
    case '+':
        lua_newtable(L);
        lua_pushlstring(L, p, n);
        lua_setfield(L, -2, "ok");
        return next;
    case '-':
        push_error_table(L, p - 1, n + 1);
        return next;
    case ':':
        sv_str2ll(p, n, &v);
        lua_pushnumber(L, (lua_Number)v);
        return next;
    case '#':
        lua_pushboolean(L, n && *p == 't');
        return next;
    case '_':
        lua_pushnil(L);
        return next;
    case ',': {
        char tmp[64];
        size_t m = n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1;
        memcpy(tmp, p, m);
        tmp[m] = 0;
        lua_newtable(L);
        lua_pushnumber(L, strtod(tmp, NULL));
        lua_setfield(L, -2, "double");
        return next;
    }
    case '(':
        lua_newtable(L);
        lua_pushlstring(L, p, n);
        lua_setfield(L, -2, "big_number");
        return next;
    case '$':
    case '=':
        if (!sv_str2ll(p, n, &v)) return NULL;
        if (v < 0) {
            lua_pushboolean(L, 0);
            return next;
        }
        if ((long long)(end - next) < v + 2) return NULL;
        if (t == '$') {
            lua_pushlstring(L, next, (size_t)v);
        } else {
            lua_newtable(L);
            lua_pushlstring(L, next + 4, v >= 4 ? (size_t)v - 4 : 0);
            lua_setfield(L, -2, "string");
            lua_pushlstring(L, next, v >= 3 ? 3 : (size_t)v);
            lua_setfield(L, -2, "format");
            lua_newtable(L);
            lua_insert(L, -2);
            lua_setfield(L, -2, "verbatim_string");
        }
        return next + v + 2;
    case '*':
    case '~':
    case '%':
    case '|':
        if (!sv_str2ll(p, n, &v)) return NULL;
        if (v < 0) {
            lua_pushboolean(L, 0);
            return next;
        }
        if (t == '|') { /* attributes: skipped, the value follows */
            for (long long i = 0; i < 2 * v && next; i++) {
                next = resp_to_lua(L, next, end, depth + 1);
                if (next) lua_pop(L, 1);
            }
            return next ? resp_to_lua(L, next, end, depth + 1) : NULL;
        }
        lua_newtable(L);
        for (long long i = 0; i < v; i++) {
            if (t == '*') {
                if (!(next = resp_to_lua(L, next, end, depth + 1))) return NULL;
                lua_rawseti(L, -2, (int)i + 1);
            } else if (t == '~') {
                if (!(next = resp_to_lua(L, next, end, depth + 1))) return NULL;
                lua_pushboolean(L, 1);
                lua_rawset(L, -3);
            } else {
                if (!(next = resp_to_lua(L, next, end, depth + 1))) return NULL;
                if (!(next = resp_to_lua(L, next, end, depth + 1))) return NULL;
                if (lua_isnil(L, -2)) lua_pop(L, 2);
                else lua_rawset(L, -3);
            }
        }
        if (t != '*') {
            lua_newtable(L);
            lua_insert(L, -2);
            lua_setfield(L, -2, t == '~' ? "set" : "map");
        }
        return next;
    }
    return NULL;
}

/* ---- Lua -> reply ---- */

/* A Lua number as C integers the way Redis's casts come out on x86-64 (its casts
 * are undefined for NaN, infinities and out-of-range values; the hardware gives the
 * minimum): `return 1/0` replies :-9223372036854775808 on both servers. */
static long long num_to_ll(lua_Number d)
{
    return d >= -9.2233720368547758e18 && d < 9.2233720368547758e18 ? (long long)d : LLONG_MIN;
}

static int num_to_int(lua_Number d) { return d > -2147483649.0 && d < 2147483648.0 ? (int)d : INT_MIN; }

static void add_sanitized(sv_buf *b, const char *s, size_t n)
{
    size_t at = b->len;
    sv_buf_append(b, s, n);
    for (size_t i = at; i < b->len; i++)
        if (b->data[i] == '\r' || b->data[i] == '\n') b->data[i] = ' ';
}

/* Appends an error reply built from the Lua error table at idx (err, source, line),
 * naming the script or function as Redis does. */
static void add_error_from_table(sv_lua *e, sv_reply *r, int idx, int with_where)
{
    lua_State *L = e->L;
    lua_getfield(L, idx, "err");
    size_t n;
    const char *msg = lua_tolstring(L, -1, &n);
    sv_buf tmp = {0};
    sv_buf_append(&tmp, "-", 1);
    if (msg) add_sanitized(&tmp, msg, n);
    lua_pop(L, 1);
    if (with_where) {
        lua_getfield(L, idx, "source");
        lua_getfield(L, idx, "line");
        if (lua_isstring(L, -2) && lua_isnumber(L, -1)) {
            char w[512];
            int m = snprintf(w, sizeof(w), " script: %s, on %s:%d.", e->run_name ? e->run_name : "?", lua_tostring(L, -2),
                             (int)lua_tointeger(L, -1));
            add_sanitized(&tmp, w, (size_t)(m < (int)sizeof(w) ? m : (int)sizeof(w) - 1));
        }
        lua_pop(L, 2);
    }
    sv_buf_append(&tmp, "\r\n", 2);
    if (tmp.len == 3) sv_add_error(r, "ERR"); /* {err=""} */
    else sv_add_raw(r, tmp.data, tmp.len);
    sv_buf_free(&tmp);
}

static int lua_to_reply(sv_lua *e, sv_reply *r, int depth)
{
    lua_State *L = e->L;
    if (depth > 1000 || !lua_checkstack(L, 8)) {
        sv_add_error(r, "reached lua stack limit");
        return -1;
    }
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        sv_add_bulk(r, s, n);
        return 0;
    }
    case LUA_TBOOLEAN:
        if (e->resp == 2) {
            if (lua_toboolean(L, -1)) sv_add_int(r, 1);
            else sv_add_null(r);
        } else {
            sv_add_bool(r, lua_toboolean(L, -1));
        }
        return 0;
    case LUA_TNUMBER:
        sv_add_int(r, num_to_ll(lua_tonumber(L, -1)));
        return 0;
    case LUA_TTABLE:
        break;
    default:
        sv_add_null(r);
        return 0;
    }
    int t = lua_gettop(L);
    lua_getfield(L, t, "err");
    if (lua_type(L, -1) == LUA_TSTRING) {
        lua_pop(L, 1);
        add_error_from_table(e, r, t, 0);
        return 0;
    }
    lua_pop(L, 1);
    lua_getfield(L, t, "ok");
    if (lua_type(L, -1) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        sv_buf tmp = {0};
        sv_buf_append(&tmp, "+", 1);
        add_sanitized(&tmp, s, n);
        sv_buf_append(&tmp, "\r\n", 2);
        sv_add_raw(r, tmp.data, tmp.len);
        sv_buf_free(&tmp);
        lua_pop(L, 1);
        return 0;
    }
    lua_pop(L, 1);
    lua_getfield(L, t, "double");
    if (lua_type(L, -1) == LUA_TNUMBER) {
        sv_add_double(r, lua_tonumber(L, -1));
        lua_pop(L, 1);
        return 0;
    }
    lua_pop(L, 1);
    lua_getfield(L, t, "big_number");
    if (lua_type(L, -1) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        sv_buf tmp = {0};
        add_sanitized(&tmp, s, n);
        if (r->proto == 3) {
            sv_add_raw(r, "(", 1);
            sv_add_raw(r, tmp.data ? tmp.data : "", tmp.len);
            sv_add_raw(r, "\r\n", 2);
        } else {
            sv_add_bulk(r, tmp.data ? tmp.data : "", tmp.len);
        }
        sv_buf_free(&tmp);
        lua_pop(L, 1);
        return 0;
    }
    lua_pop(L, 1);
    lua_getfield(L, t, "map");
    if (lua_type(L, -1) == LUA_TTABLE) {
        int m = lua_gettop(L);
        long long n = 0;
        lua_pushnil(L);
        while (lua_next(L, m)) {
            n++;
            lua_pop(L, 1);
        }
        sv_add_map(r, n);
        lua_pushnil(L);
        while (lua_next(L, m)) {
            lua_pushvalue(L, -2);
            if (lua_to_reply(e, r, depth + 1) < 0) {
                lua_settop(L, t);
                return -1;
            }
            lua_pop(L, 1);
            if (lua_to_reply(e, r, depth + 1) < 0) {
                lua_settop(L, t);
                return -1;
            }
            lua_pop(L, 1);
        }
        lua_settop(L, t);
        return 0;
    }
    lua_pop(L, 1);
    lua_getfield(L, t, "set");
    if (lua_type(L, -1) == LUA_TTABLE) {
        int m = lua_gettop(L);
        long long n = 0;
        lua_pushnil(L);
        while (lua_next(L, m)) {
            n++;
            lua_pop(L, 1);
        }
        sv_add_set(r, n);
        lua_pushnil(L);
        while (lua_next(L, m)) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            if (lua_to_reply(e, r, depth + 1) < 0) {
                lua_settop(L, t);
                return -1;
            }
            lua_pop(L, 1);
        }
        lua_settop(L, t);
        return 0;
    }
    lua_pop(L, 1);
    lua_getfield(L, t, "verbatim_string");
    if (lua_type(L, -1) == LUA_TTABLE) {
        lua_getfield(L, -1, "format");
        lua_getfield(L, -2, "string");
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
            size_t fl, sl;
            const char *f = lua_tolstring(L, -2, &fl);
            const char *s = lua_tolstring(L, -1, &sl);
            if (r->proto == 3 && fl == 3) {
                char hdr[64];
                int hn = snprintf(hdr, sizeof(hdr), "=%zu\r\n", sl + 4);
                sv_add_raw(r, hdr, (size_t)hn);
                sv_add_raw(r, f, 3);
                sv_add_raw(r, ":", 1);
                sv_add_raw(r, s, sl);
                sv_add_raw(r, "\r\n", 2);
            } else {
                sv_add_bulk(r, s, sl);
            }
            lua_settop(L, t);
            return 0;
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    /* an array: 1..n up to the first nil */
    int n = 0;
    for (;;) {
        lua_rawgeti(L, t, n + 1);
        int nil = lua_isnil(L, -1);
        lua_pop(L, 1);
        if (nil) break;
        n++;
    }
    sv_add_array(r, n);
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, t, i);
        if (lua_to_reply(e, r, depth + 1) < 0) {
            lua_settop(L, t);
            return -1;
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* ---- the redis object ---- */

static int cluster_check(sv_lua *e, const sv_cmd *cmd, int argc, sv_str *argv, const char **err)
{
    if (sv_cfg.shards <= 1) return 0;
    int keys[64];
    int *kp = argc > 64 ? sv_malloc(sizeof(int) * (size_t)argc) : keys;
    int n = sv_cmd_keypos(cmd, argc, argv, kp, argc > 64 ? argc : 64);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        unsigned slot = sl__key_slot(argv[kp[i]].p, argv[kp[i]].len);
        if (sv_slot_owner(slot) != e->sh->index) {
            *err = "Script attempted to access a non local key in a cluster node";
            rc = -1;
        } else if (!(e->flags & SF_CROSS_SLOT)) {
            if (e->slot < 0) e->slot = (int)slot;
            else if (e->slot != (int)slot) {
                *err = "Script attempted to access keys that do not hash to the same slot";
                rc = -1;
            }
        }
    }
    if (kp != keys) free(kp);
    return rc;
}

static const char *const denied_names[] = {
    "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "script", "function", "multi", "exec",
    "discard", "watch", "unwatch", "hello", "auth", "quit", "reset", "client", "shutdown", "bgrewriteaof", "config",
    "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "blpop", "brpop",
    "blmove", "brpoplpush", "bzpopmin", "bzpopmax", "blmpop", "bzmpop", "xread", "xreadgroup", "wait", "monitor",
    "sync", "psync", "readonly", "readwrite", "asking"};

/* Which commands a script may not run (Redis's noscript flag and the ones that make
 * no sense inside a script), by table index: computed once, a lookup per call. */
static uint8_t *denied_map;
static size_t denied_n;
static pthread_once_t denied_once = PTHREAD_ONCE_INIT;

static void denied_init(void)
{
    const sv_cmd *t = sv_cmd_table(&denied_n);
    denied_map = sv_calloc(denied_n ? denied_n : 1, 1);
    for (size_t i = 0; i < denied_n; i++) {
        if (t[i].flags & SV_CMD_NOSCRIPT) denied_map[i] = 1;
        for (size_t j = 0; j < sizeof(denied_names) / sizeof(denied_names[0]); j++)
            if (!strcmp(t[i].name, denied_names[j])) denied_map[i] = 1;
    }
}

static int is_denied_in_script(const sv_cmd *cmd)
{
    size_t n;
    const sv_cmd *t = sv_cmd_table(&n);
    if (cmd < t || cmd >= t + denied_n) return 1; /* not a public command */
    return denied_map[cmd - t];
}

static int generic_call(lua_State *L, int raise)
{
    sv_lua *e = engine_of(L);
    int argc = lua_gettop(L);
    if (!e || !e->running) return raise_error(L, "redis.call/pcall can only be called inside a script invocation");
    if (argc == 0) return raise_error(L, "Please specify at least one argument for this redis lib call");
    sv_str argvs[16];
    sv_str *argv = argc > 16 ? sv_malloc(sizeof(sv_str) * (size_t)argc) : argvs;
    for (int i = 0; i < argc; i++) {
        int t = lua_type(L, i + 1);
        if (t == LUA_TNUMBER) {
            char num[64];
            int m = snprintf(num, sizeof(num), "%.17g", (double)lua_tonumber(L, i + 1));
            lua_pushlstring(L, num, (size_t)m);
            lua_replace(L, i + 1); /* the string stays on the stack: argv points into it */
        } else if (t != LUA_TSTRING) {
            if (argv != argvs) free(argv);
            return raise_error(L, "Lua redis lib command arguments must be strings or integers");
        }
        argv[i].p = lua_tolstring(L, i + 1, &argv[i].len);
    }
    const char *err = NULL;
    const sv_cmd *cmd = sv_cmd_lookup_public(argv[0].p, argv[0].len);
    if (!cmd) err = "Unknown Redis command called from script";
    else if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity)
        err = "Wrong number of args calling Redis command from script";
    else if (is_denied_in_script(cmd)) err = "This Redis command is not allowed from script";
    else if ((cmd->flags & SV_CMD_WRITE) && (e->flags & SF_NO_WRITES || e->ro))
        err = "Write commands are not allowed from read-only scripts.";
    else cluster_check(e, cmd, argc, argv, &err);
    if (err) {
        if (argv != argvs) free(argv);
        if (raise) return raise_error(L, err);
        push_error_table(L, err, strlen(err));
        return 1;
    }
    if (cmd->flags & SV_CMD_WRITE) e->wrote = 1;
    e->reply.len = 0;
    e->sess.proto = e->resp;
    sv_ctx ic;
    memset(&ic, 0, sizeof(ic));
    ic.sh = e->sh;
    ic.sess = &e->sess;
    ic.r.out = &e->reply;
    ic.r.proto = e->resp;
    ic.noroute = 1;
    ic.noblock = 1; /* blocking commands do not block in a script */
    /* looked up, arity-checked and routed above: straight to the call (stats, the
     * log, the keys it modified) */
    e->sess.last_cmd = cmd->name;
    sv_call(&ic, cmd, argc, argv);
    if (argv != argvs) free(argv);
    if (!resp_to_lua(L, e->reply.data, e->reply.data + e->reply.len, 0)) {
        lua_pushboolean(L, 0);
    }
    if (e->reply.cap > 1024 * 1024) sv_buf_free(&e->reply);
    if (raise && e->reply.len && lua_istable(L, -1)) {
        lua_getfield(L, -1, "err");
        int iserr = lua_type(L, -1) == LUA_TSTRING;
        lua_pop(L, 1);
        if (iserr) return lua_error(L);
    }
    return 1;
}

static int l_call(lua_State *L) { return generic_call(L, 1); }
static int l_pcall(lua_State *L) { return generic_call(L, 0); }

static int l_error_reply(lua_State *L)
{
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) return raise_error(L, "wrong number or type of arguments");
    size_t n;
    const char *s = lua_tolstring(L, 1, &n);
    if (n && s[0] == '-') {
        push_error_table(L, s, n);
    } else {
        lua_pushfstring(L, "-%s", s);
        size_t m;
        const char *t = lua_tolstring(L, -1, &m);
        push_error_table(L, t, m);
    }
    return 1;
}

static int l_status_reply(lua_State *L)
{
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) return raise_error(L, "wrong number or type of arguments");
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "ok");
    return 1;
}

static int l_sha1hex(lua_State *L)
{
    if (lua_gettop(L) != 1) return luaL_error(L, "wrong number of arguments");
    size_t n;
    const char *s = lua_tolstring(L, 1, &n);
    char hex[41];
    sha1_hex(s ? s : "", s ? n : 0, hex);
    lua_pushstring(L, hex);
    return 1;
}

static int l_log(lua_State *L)
{
    int argc = lua_gettop(L);
    if (argc < 2) return raise_error(L, "redis.log() requires two arguments or more.");
    if (!lua_isnumber(L, 1)) return raise_error(L, "First argument must be a number (log level).");
    int level = num_to_int(lua_tonumber(L, 1));
    if (level < SV_LOG_DEBUG || level > SV_LOG_WARNING) return raise_error(L, "Invalid debug level.");
    sv_buf b = {0};
    for (int i = 2; i <= argc; i++) {
        size_t n;
        const char *s = lua_tolstring(L, i, &n);
        if (!s) continue;
        if (b.len) sv_buf_append(&b, " ", 1);
        sv_buf_append(&b, s, n);
    }
    sv_log(level, "%.*s", (int)b.len, b.data ? b.data : "");
    sv_buf_free(&b);
    return 0;
}

static int l_setresp(lua_State *L)
{
    sv_lua *e = engine_of(L);
    if (lua_gettop(L) != 1) return raise_error(L, "redis.setresp() requires one argument.");
    int v = num_to_int(lua_tonumber(L, 1));
    if (v != 2 && v != 3) return raise_error(L, "RESP version must be 2 or 3.");
    e->resp = v;
    return 0;
}

static int l_set_repl(lua_State *L)
{
    if (lua_gettop(L) != 1) return raise_error(L, "redis.set_repl() requires one argument.");
    int v = num_to_int(lua_tonumber(L, 1));
    if (v < 0 || v > 3) return raise_error(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
    return 0; /* accepted: there is no replication, and the AOF logs effects anyway */
}

static int l_replicate_commands(lua_State *L)
{
    lua_pushboolean(L, 1);
    return 1;
}

static int l_breakpoint(lua_State *L)
{
    lua_pushboolean(L, 0); /* no debugger session: as Redis outside SCRIPT DEBUG */
    return 1;
}

static int l_debug(lua_State *L)
{
    (void)L;
    return 0;
}

static int l_acl_check_cmd(lua_State *L)
{
    if (lua_gettop(L) < 1 || lua_type(L, 1) != LUA_TSTRING) return raise_error(L, "Please specify at least one argument for this redis lib call");
    size_t n;
    const char *s = lua_tolstring(L, 1, &n);
    if (!sv_cmd_lookup_public(s, n)) return raise_error(L, "Invalid command passed to redis.acl_check_cmd()");
    lua_pushboolean(L, 1); /* no ACL users: the default user may run everything */
    return 1;
}

static int l_register_function(lua_State *L);

static void set_constants(lua_State *L)
{
    static const struct {
        const char *n;
        int v;
    } k[] = {{"LOG_DEBUG", SV_LOG_DEBUG}, {"LOG_VERBOSE", SV_LOG_VERBOSE}, {"LOG_NOTICE", SV_LOG_NOTICE},
             {"LOG_WARNING", SV_LOG_WARNING}, {"REPL_NONE", 0}, {"REPL_AOF", 1}, {"REPL_SLAVE", 2},
             {"REPL_REPLICA", 2}, {"REPL_ALL", 3}};
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        lua_pushinteger(L, k[i].v);
        lua_setfield(L, -2, k[i].n);
    }
    lua_pushstring(L, SV_VERSION);
    lua_setfield(L, -2, "REDIS_VERSION");
    lua_pushinteger(L, 7 << 16 | 0 << 8 | 15);
    lua_setfield(L, -2, "REDIS_VERSION_NUM");
}

static void count_hook(lua_State *L, lua_Debug *ar);

static int open_lib(lua_State *L, lua_CFunction f, const char *name)
{
    lua_pushcfunction(L, f);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    return 0;
}

static sv_lua *engine_get(sv_shard *sh)
{
    if (sh->lua) return sh->lua;
    pthread_once(&denied_once, denied_init);
    sv_lua *e = sv_calloc(1, sizeof(*e));
    e->sh = sh;
    e->resp = 2;
    e->sess.proto = 2;
    sv_dict_init(&e->scripts);
    sv_dict_init(&e->funcs);
    lua_State *L = e->L = lua_newstate(lua_alloc, e);
    if (!L) {
        sv_log(SV_LOG_WARNING, "cannot create a Lua state");
        abort();
    }
    lua_pushlightuserdata(L, (void *)&engine_key);
    lua_pushlightuserdata(L, e);
    lua_rawset(L, LUA_REGISTRYINDEX);
    /* the libraries Redis 7.0 loads (no io, os, package, debug for scripts) */
    open_lib(L, luaopen_base, "");
    lua_pop(L, 2); /* base pushes _G and coroutine */
    open_lib(L, luaopen_table, LUA_TABLIBNAME);
    open_lib(L, luaopen_string, LUA_STRLIBNAME);
    open_lib(L, luaopen_math, LUA_MATHLIBNAME);
    lua_settop(L, 0);
    open_lib(L, luaopen_cjson, "cjson");
    lua_setglobal(L, "cjson");
    open_lib(L, luaopen_bit, "bit");
    lua_setglobal(L, "bit");
    open_lib(L, sv_luaopen_cmsgpack, "cmsgpack");
    lua_setglobal(L, "cmsgpack");
    open_lib(L, sv_luaopen_struct, "struct");
    lua_setglobal(L, "struct");
    lua_settop(L, 0);

    /* the real globals: only what Redis allows */
    static const char *allowed[] = {"assert", "collectgarbage", "coroutine", "error", "gcinfo", "getmetatable",
                                    "ipairs", "load", "loadstring", "next", "pairs", "pcall", "rawequal", "rawget",
                                    "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "unpack",
                                    "xpcall", "_VERSION", "string", "table", "math", "cjson", "bit", "struct",
                                    "cmsgpack"};
    static const char *libtables[] = {"coroutine", "string", "table", "math", "cjson", "bit", "struct", "cmsgpack"};
    lua_newtable(L); /* G */
    int G = lua_gettop(L);
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
        lua_getglobal(L, allowed[i]);
        lua_setfield(L, G, allowed[i]);
    }
    lua_pushcfunction(L, safe_rawset);
    lua_setfield(L, G, "rawset");
    lua_pushcfunction(L, redis_pcall);
    lua_setfield(L, G, "pcall");
    for (size_t i = 0; i < sizeof(libtables) / sizeof(libtables[0]); i++) {
        lua_getfield(L, G, libtables[i]);
        if (lua_istable(L, -1)) {
            make_readonly_proxy(L);
            if (!strcmp(libtables[i], "string")) { /* ("x"):upper() reads the same table */
                lua_pushliteral(L, "");
                lua_getmetatable(L, -1);
                lua_pushvalue(L, -3);
                lua_setfield(L, -2, "__index");
                lua_pop(L, 2);
            }
            lua_setfield(L, G, libtables[i]);
        } else {
            lua_pop(L, 1);
        }
    }
    /* redis */
    static const luaL_Reg redis_fns[] = {{"call", l_call}, {"pcall", l_pcall}, {"error_reply", l_error_reply},
                                         {"status_reply", l_status_reply}, {"sha1hex", l_sha1hex}, {"log", l_log},
                                         {"setresp", l_setresp}, {"set_repl", l_set_repl},
                                         {"replicate_commands", l_replicate_commands}, {"breakpoint", l_breakpoint},
                                         {"debug", l_debug}, {"acl_check_cmd", l_acl_check_cmd}, {NULL, NULL}};
    lua_newtable(L);
    for (const luaL_Reg *r = redis_fns; r->name; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, -2, r->name);
    }
    set_constants(L);
    lua_pushvalue(L, -1);
    e->redis_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    make_readonly_proxy(L);
    lua_setfield(L, G, "redis");
    /* what library code sees while FUNCTION LOAD runs it: only `redis`, with
     * register_function, log and the constants; anything else is a missing global */
    static const luaL_Reg load_fns[] = {{"register_function", l_register_function}, {"log", l_log}, {NULL, NULL}};
    lua_newtable(L); /* the load globals */
    lua_newtable(L); /* their redis */
    for (const luaL_Reg *r = load_fns; r->name; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, -2, r->name);
    }
    set_constants(L);
    lua_pushnil(L);
    lua_setfield(L, -2, "REPL_NONE"); /* only the log levels and versions, as Redis */
    static const char *repl[] = {"REPL_AOF", "REPL_SLAVE", "REPL_REPLICA", "REPL_ALL"};
    for (size_t i = 0; i < 4; i++) {
        lua_pushnil(L);
        lua_setfield(L, -2, repl[i]);
    }
    push_missing_meta(L);
    lua_setmetatable(L, -2);
    make_readonly_proxy(L);
    lua_setfield(L, -2, "redis");
    push_missing_meta(L);
    lua_setmetatable(L, -2);
    e->loadapi_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushcfunction(L, error_handler);
    lua_pushvalue(L, -1);
    e->errh_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_setfield(L, G, "__redis__err__handler");
    /* a miss in G is an error from Lua code */
    push_missing_meta(L);
    lua_setmetatable(L, G);
    lua_pushvalue(L, G);
    e->globals_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    /* the proxy becomes the globals of everything compiled from now on */
    lua_pushvalue(L, G);
    make_readonly_proxy(L);
    lua_getmetatable(L, -1);
    e->pmeta_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, -1);
    rawsetfield(L, G, "_G");
    lua_replace(L, LUA_GLOBALSINDEX);
    lua_settop(L, 0);
    sh->lua = e;
    return e;
}

/* ---- running ---- */

/* FUNCTION STATS: the running function (while busy) and the engine's counts. */
static void function_stats(sv_lua *e, sv_reply *r)
{
    sv_add_map(r, 2);
    sv_add_bulk_cstr(r, "running_script");
    if (e->running && !e->is_eval) {
        sv_add_map(r, 3);
        sv_add_bulk_cstr(r, "name");
        sv_add_bulk_cstr(r, e->run_name);
        sv_add_bulk_cstr(r, "command");
        sv_add_array(r, e->run_argc);
        for (int i = 0; i < e->run_argc; i++) sv_add_bulk(r, e->run_argv[i].p, e->run_argv[i].len);
        sv_add_bulk_cstr(r, "duration_ms");
        sv_add_int(r, sv_mstime() - e->start_ms);
    } else {
        sv_add_null(r);
    }
    sv_add_bulk_cstr(r, "engines");
    sv_add_map(r, 1);
    sv_add_bulk_cstr(r, "LUA");
    sv_add_map(r, 2);
    sv_add_bulk_cstr(r, "libraries_count");
    sv_add_int(r, e->nlibs);
    sv_add_bulk_cstr(r, "functions_count");
    sv_add_int(r, (long long)sv_dict_size(&e->funcs));
}

static int64_t busy_threshold(void) { return sv_cfg.busy_reply_ms; }

static void busy_reply(sv_lua *e, uint64_t client_id, sv_reply *r, int argc, sv_str *argv)
{
    if (argc >= 2 && (sv_eq(argv[0], "script") || sv_eq(argv[0], "function")) && sv_eq(argv[1], "kill")) {
        int is_eval = sv_eq(argv[0], "script");
        if (e->wrote)
            sv_add_error(r, "-UNKILLABLE Sorry the script already executed write commands against the dataset. "
                            "You can either wait the script termination or kill the server in a hard way using the "
                            "SHUTDOWN NOSAVE command.");
        else if (is_eval && !e->is_eval)
            sv_add_error(r, "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.");
        else if (!is_eval && e->is_eval)
            sv_add_error(r, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.");
        else {
            e->killed = 1;
            sv_add_ok(r);
        }
        return;
    }
    if (argc >= 1 && sv_eq(argv[0], "shutdown")) {
        int nosave = 0;
        for (int i = 1; i < argc; i++)
            if (sv_eq(argv[i], "nosave")) nosave = 1;
        if (nosave || !e->wrote) {
            /* as Redis: the script cannot be stopped, so the process ends here without
             * returning to it (nothing of its partial effects is acknowledged) */
            sv_log(SV_LOG_WARNING, "SHUTDOWN NOSAVE while a script runs (client %llu): exiting now",
                   (unsigned long long)client_id);
            _exit(0);
        }
        sv_add_error(r, "-ERR Errors trying to SHUTDOWN. Check logs.");
        return;
    }
    if (argc == 2 && sv_eq(argv[0], "function") && sv_eq(argv[1], "stats")) {
        function_stats(e, r); /* allowed while busy, as in Redis */
        return;
    }
    sv_add_error(r, e->is_eval ? "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
                               : "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.");
}

static int busy_reply_forwarded(void *ud, uint64_t client_id, sv_reply *r, int argc, sv_str *argv)
{
    sv_lua *e = ud;
    if (e->caller && e->caller->id == client_id) return 0; /* the script's own client: after it, in order */
    busy_reply(e, client_id, r, argc, argv);
    return 1;
}

/* Serves the shard's other connections while a script is busy: reads what they
 * sent, answers each complete request in the restricted mode, writes the replies;
 * and the requests other shards forwarded here (one-port mode) the same way. */
static void busy_service(sv_lua *e)
{
    sv_shard *sh = e->sh;
    /* new clients are accepted too (as Redis does while busy): they get -BUSY */
    uv_os_fd_t lfd = -1;
    if (sh->listening && uv_fileno((uv_handle_t *)&sh->listener, &lfd) == 0 && lfd >= 0)
        for (int i = 0; i < 64; i++) {
            int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) break;
            sv_conn_adopt(sh, fd);
        }
    sv_fwd_busy_service(sh, busy_reply_forwarded, e);
    for (sv_conn *c = sh->conns, *next; c; c = next) {
        next = c->next;
        if (&c->sess == e->caller || c->closing || c->close_when_flushed || c->fwd_paused) continue;
        /* With a log, the running script's unit is open and must not be written
         * half: only a client with nothing else owed gets its busy replies now
         * (they acknowledge no write); the others get them, in order, after it. */
        int direct = !sh->aof || (c->out.len == 0 && !c->writing && !c->pend_head);
        uv_os_fd_t fd = -1;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0 || fd < 0) continue;
        for (;;) {
            sv_buf_reserve(&c->rbuf, 16 * 1024);
            ssize_t n = recv(fd, c->rbuf.data + c->rbuf.len, c->rbuf.cap - c->rbuf.len, MSG_DONTWAIT);
            if (n <= 0) break; /* EOF and errors: libuv sees them again after the script */
            c->rbuf.len += (size_t)n;
            sh->stats.net_in += (uint64_t)n;
        }
        int any = 0;
        while (c->rbuf.len > c->rstart) {
            const char *base = c->rbuf.data + c->rstart;
            int r = sv_parse(&c->parser, base, c->rbuf.len - c->rstart);
            if (r != SV_PARSE_OK) break; /* incomplete or malformed: the loop handles it later */
            int argc = c->parser.argc;
            if (argc > 0) {
                if (argc > c->argv_cap) {
                    c->argv_cap = argc < 16 ? 16 : argc;
                    c->argv = sv_realloc(c->argv, sizeof(sv_str) * (size_t)c->argv_cap);
                }
                sv_parser_args(&c->parser, base, c->argv);
                sv_reply rep = {sv_fwd_reply_buf(c), c->sess.proto};
                busy_reply(e, c->sess.id, &rep, argc, c->argv);
                any = 1;
            }
            c->rstart += c->parser.pos;
            sv_parser_reset(&c->parser);
        }
        if (c->rstart == c->rbuf.len) c->rbuf.len = c->rstart = 0;
        if (any && !c->pend_head) {
            if (!sh->aof) sv_conn_flush(c);
            else if (direct) sv_conn_flush_unlogged(c);
        }
    }
}

static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    sv_lua *e = engine_of(L);
    if (e->killed) {
        /* every line from now on raises it again, so pcall cannot swallow the kill */
        lua_sethook(L, count_hook, LUA_MASKLINE, 0);
        raise_error(L, "Script killed by user with SCRIPT KILL..."); /* also for functions, as Redis */
        return;
    }
    if (atomic_load_explicit(&sv_stop_requested, memory_order_relaxed)) {
        /* SIGTERM: the script ends here (even one that wrote), so the shard can stop */
        e->killed = 1;
        lua_sethook(L, count_hook, LUA_MASKLINE, 0);
        raise_error(L, "Script killed by user with SCRIPT KILL...");
        return;
    }
    if (sv_script_hook_budget && ++e->hooks > sv_script_hook_budget) {
        e->killed = 1; /* the fuzz target's stand-in for a SCRIPT KILL */
        lua_sethook(L, count_hook, LUA_MASKLINE, 0);
        raise_error(L, "Script killed by user with SCRIPT KILL...");
        return;
    }
    if (!e->sh->conns && !e->sh->fwd_on) return; /* replay, fuzzing: nobody to answer */
    int64_t now = sv_mstime();
    if (!e->busy && now - e->start_ms >= busy_threshold()) {
        e->busy = 1;
        sv_log(SV_LOG_WARNING, "Slow script detected: still in execution after %lld milliseconds. "
                               "You can try killing the script using the %s command.",
               (long long)(now - e->start_ms), e->is_eval ? "SCRIPT KILL" : "FUNCTION KILL");
    }
    if (e->busy) {
        busy_service(e);
        if (e->killed) {
            lua_sethook(L, count_hook, LUA_MASKLINE, 0);
            raise_error(L, "Script killed by user with SCRIPT KILL..."); /* also for functions, as Redis */
        }
    }
}

/* Runs the function at the top of the stack with nargs arguments under it... the
 * caller pushed: error handler, function, args. Writes the reply. */
static void run(sv_lua *e, sv_ctx *c, int nargs)
{
    lua_State *L = e->L;
    int base = lua_gettop(L) - nargs - 1; /* the error handler sits below the function */
    e->running = 1;
    e->killed = e->busy = e->wrote = 0;
    e->resp = 2;
    e->start_ms = sv_mstime();
    e->hooks = 0;
    e->caller = c->sess;
    /* the commands the script runs are one unit of the log, as EXEC's: replayed
     * whole or not at all (inside EXEC the transaction's unit holds them) */
    int unit = c->sh->aof && !c->sh->loading && !sv_aof_in_unit(c->sh);
    if (unit) sv_aof_unit_begin(c->sh);
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 100000);
    int err = lua_pcall(L, nargs, 1, base);
    lua_sethook(L, NULL, 0, 0);
    if (unit) sv_aof_unit_end(c->sh);
    if (err) {
        if (lua_istable(L, -1)) {
            add_error_from_table(e, &c->r, lua_gettop(L), 1);
        } else {
            const char *m = lua_tostring(L, -1);
            sv_add_errorf(&c->r, "Error running script %s, %.100s", e->run_name, m ? m : "execution failure");
        }
    } else {
        lua_to_reply(e, &c->r, 0);
    }
    lua_settop(L, base - 1);
    if (e->busy) sv_log(SV_LOG_WARNING, "Slow script finished after %lld milliseconds", (long long)(sv_mstime() - e->start_ms));
    e->running = 0;
    e->busy = 0;
    e->resp = 2;
    e->caller = NULL;
    if (++e->ncalls % 50 == 0) lua_gc(L, LUA_GCSTEP, 1); /* Redis: an incremental step every 50 calls */
}

/* Parses the shebang line of an EVAL body: 0 and *flags, or -1 after replying. */
static int eval_shebang(sv_ctx *c, const char *body, size_t len, int *flags, size_t *shebang_len)
{
    *flags = SF_EVAL_COMPAT;
    *shebang_len = 0;
    if (len < 2 || body[0] != '#' || body[1] != '!') return 0;
    const char *nl = memchr(body, '\n', len);
    size_t sl = nl ? (size_t)(nl - body) : len;
    *shebang_len = sl;
    *flags = 0;
    char *line = sv_memdup(body, sl);
    line[sl] = 0;
    int rc = 0, first = 1;
    char *save = NULL;
    for (char *part = strtok_r(line, " ", &save); part; part = strtok_r(NULL, " ", &save)) {
        if (first) {
            first = 0;
            if (strcmp(part, "#!lua") != 0) {
                sv_add_errorf(&c->r, "Unexpected engine in script shebang: %s", part);
                rc = -1;
                break;
            }
            continue;
        }
        if (strncmp(part, "flags=", 6) != 0) {
            sv_add_errorf(&c->r, "Unknown lua shebang option: %s", part);
            rc = -1;
            break;
        }
        char *s2 = NULL;
        for (char *f = strtok_r(part + 6, ",", &s2); f; f = strtok_r(NULL, ",", &s2)) {
            size_t i = 0;
            while (i < NFLAGS && strcmp(f, flag_names[i].name) != 0) i++;
            if (i == NFLAGS) {
                sv_add_errorf(&c->r, "Unexpected flag in script shebang: %s", f);
                rc = -1;
                break;
            }
            *flags |= flag_names[i].flag;
        }
        if (rc) break;
    }
    if (first && rc == 0) { /* "#!" alone */
        sv_add_errorf(&c->r, "Unexpected engine in script shebang: %s", line);
        rc = -1;
    }
    free(line);
    return rc;
}

/* Compiles and caches a script body; returns it, or NULL after replying the error. */
static sv_script *script_add(sv_lua *e, sv_ctx *c, const char *body, size_t len, const char *sha)
{
    int flags;
    size_t shl;
    if (eval_shebang(c, body, len, &flags, &shl) < 0) return NULL;
    lua_State *L = e->L;
    /* the shebang line is blanked, not removed, so line numbers stay Redis's */
    char *code = sv_memdup(body, len);
    memset(code, ' ', shl);
    int rc = luaL_loadbuffer(L, code, len, "@user_script");
    free(code);
    if (rc) {
        const char *m = lua_tostring(L, -1);
        sv_add_errorf(&c->r, "Error compiling script (new function): %s", m ? m : "?");
        lua_pop(L, 1);
        return NULL;
    }
    sv_script *s = sv_calloc(1, sizeof(*s));
    s->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    s->flags = flags;
    memcpy(s->sha, sha, 41);
    s->body = sv_memdup(body, len);
    s->len = len;
    sv_entry *en = sv_dict_add(&e->scripts, sha, 40, NULL);
    en->val = s;
    return s;
}

static void script_free_entry(sv_entry *en, void *priv)
{
    sv_lua *e = priv;
    sv_script *s = en->val;
    luaL_unref(e->L, LUA_REGISTRYINDEX, s->ref);
    free(s->body);
    free(s); /* the dict frees the entry */
}

static int get_numkeys(sv_ctx *c, int argc, sv_str *argv, long long *nk)
{
    if (!sv_str2ll(argv[2].p, argv[2].len, nk)) {
        sv_add_error(&c->r, SV_ERR_NOTINT);
        return -1;
    }
    if (*nk < 0) {
        sv_add_error(&c->r, "Number of keys can't be negative");
        return -1;
    }
    if (*nk > argc - 3) {
        sv_add_error(&c->r, "Number of keys can't be greater than number of args");
        return -1;
    }
    return 0;
}

int sv_script_getkeys(int argc, sv_str *argv, int *keys, int max)
{
    long long nk;
    if (argc < 3 || !sv_str2ll(argv[2].p, argv[2].len, &nk) || nk < 0 || nk > argc - 3) return 0;
    int k = 0;
    for (long long i = 0; i < nk && k < max; i++) keys[k++] = 3 + (int)i;
    return k;
}

/* The declared keys' slot (they were checked to share one by the routing). */
static int declared_slot(int nk, sv_str *keys)
{
    if (sv_cfg.shards <= 1 || nk == 0) return -1;
    return (int)sl__key_slot(keys[0].p, keys[0].len);
}

static void push_strings(lua_State *L, int n, sv_str *v)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushlstring(L, v[i].p, v[i].len);
        lua_rawseti(L, -2, i + 1);
    }
}

static int check_run_flags(sv_ctx *c, int flags, int ro)
{
    if (flags & SF_NO_CLUSTER) {
        sv_add_error(&c->r, "Can not run script on cluster, 'no-cluster' flag is set.");
        return -1;
    }
    if (ro && !(flags & (SF_NO_WRITES | SF_EVAL_COMPAT))) {
        sv_add_error(&c->r, "Can not execute a script with write flag using *_ro command.");
        return -1;
    }
    return 0;
}

static void eval_generic(sv_ctx *c, int argc, sv_str *argv, int by_sha, int ro)
{
    long long nk;
    if (get_numkeys(c, argc, argv, &nk) < 0) return;
    sv_lua *e = engine_get(c->sh);
    char sha[41];
    if (by_sha) {
        size_t n = argv[1].len < 40 ? argv[1].len : 40;
        for (size_t i = 0; i < n; i++) sha[i] = (char)tolower((unsigned char)argv[1].p[i]);
        sha[n] = 0;
        if (argv[1].len != 40) {
            sv_add_error(&c->r, "-NOSCRIPT No matching script. Please use EVAL.");
            return;
        }
    } else {
        sha1_hex(argv[1].p, argv[1].len, sha);
    }
    sv_entry *en = sv_dict_find(&e->scripts, sha, 40);
    sv_script *s = en ? en->val : NULL;
    if (!s && by_sha) {
        sv_add_error(&c->r, "-NOSCRIPT No matching script. Please use EVAL.");
        return;
    }
    if (!s && !(s = script_add(e, c, argv[1].p, argv[1].len, sha))) return;
    if (check_run_flags(c, s->flags, ro) < 0) return;
    lua_State *L = e->L;
    /* KEYS and ARGV are globals of the real table (the proxy refuses writes) */
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->globals_ref);
    push_strings(L, (int)nk, argv + 3);
    rawsetfield(L, -2, "KEYS");
    push_strings(L, argc - 3 - (int)nk, argv + 3 + nk);
    rawsetfield(L, -2, "ARGV");
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->errh_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref);
    e->is_eval = 1;
    e->flags = s->flags;
    e->ro = ro;
    e->slot = declared_slot((int)nk, argv + 3);
    e->run_name = s->sha;
    e->run_cmd = by_sha ? (ro ? "evalsha_ro" : "evalsha") : (ro ? "eval_ro" : "eval");
    e->run_argc = argc;
    e->run_argv = argv;
    run(e, c, 0);
}

void sv_cmd_eval(sv_ctx *c, int argc, sv_str *argv) { eval_generic(c, argc, argv, 0, 0); }
void sv_cmd_evalsha(sv_ctx *c, int argc, sv_str *argv) { eval_generic(c, argc, argv, 1, 0); }
void sv_cmd_eval_ro(sv_ctx *c, int argc, sv_str *argv) { eval_generic(c, argc, argv, 0, 1); }
void sv_cmd_evalsha_ro(sv_ctx *c, int argc, sv_str *argv) { eval_generic(c, argc, argv, 1, 1); }

static void unknown_sub(sv_ctx *c, sv_str sub, const char *cmd)
{
    sv_add_errorf(&c->r, "unknown subcommand '%.*s'. Try %s HELP.", (int)(sub.len > 128 ? 128 : sub.len), sub.p, cmd);
}

static void add_help(sv_ctx *c, const char *cmd, const char **lines)
{
    long long n = 1;
    for (const char **l = lines; *l; l++) n++;
    sv_add_array(&c->r, n + 2);
    char first[128];
    snprintf(first, sizeof(first), "%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", cmd);
    sv_add_status(&c->r, first);
    for (const char **l = lines; *l; l++) sv_add_status(&c->r, *l);
    sv_add_status(&c->r, "HELP");
    sv_add_status(&c->r, "    Prints this help.");
}

void sv_cmd_script(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    sv_lua *e = engine_get(c->sh);
    if (sv_eq(sub, "load") && argc == 3) {
        char sha[41];
        sha1_hex(argv[2].p, argv[2].len, sha);
        if (!sv_dict_find(&e->scripts, sha, 40) && !script_add(e, c, argv[2].p, argv[2].len, sha)) return;
        sv_add_bulk(&c->r, sha, 40);
    } else if (sv_eq(sub, "exists") && argc >= 3) {
        sv_add_array(&c->r, argc - 2);
        for (int i = 2; i < argc; i++) {
            char sha[41];
            size_t n = argv[i].len;
            int found = 0;
            if (n == 40) {
                for (size_t j = 0; j < 40; j++) sha[j] = (char)tolower((unsigned char)argv[i].p[j]);
                found = sv_dict_find(&e->scripts, sha, 40) != NULL;
            }
            sv_add_int(&c->r, found);
        }
    } else if (sv_eq(sub, "flush") && argc <= 3) {
        if (argc == 3 && !sv_eq(argv[2], "async") && !sv_eq(argv[2], "sync")) {
            sv_add_error(&c->r, "SCRIPT FLUSH only support SYNC|ASYNC option");
            return;
        }
        sv_dict_clear(&e->scripts, script_free_entry, e);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "kill") && argc == 2) {
        /* a script runs to its end or is killed from the busy mode's replies, so a
         * SCRIPT KILL that reaches the command layer found none running */
        sv_add_error(&c->r, "-NOTBUSY No scripts in execution right now.");
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *h[] = {"DEBUG (YES|SYNC|NO)", "    Set the debug mode for subsequent scripts executed.",
                                  "EXISTS <sha1> [<sha1> ...]",
                                  "    Return information about the existence of the scripts in the script cache.",
                                  "FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache. Very dangerous on replicas.",
                                  "    When called without the optional mode argument, the behavior is determined by the",
                                  "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                                  "    * ASYNC: Asynchronously flush the scripts cache.",
                                  "    * SYNC: Synchronously flush the scripts cache.", "KILL",
                                  "    Kill the currently executing Lua script.", "LOAD <script>",
                                  "    Load a script into the scripts cache without executing it.", NULL};
        add_help(c, "SCRIPT", h);
    } else if (sv_eq(sub, "debug")) {
        sv_add_error(&c->r, "SCRIPT DEBUG is not supported by slotlane-server");
    } else if (sv_eq(sub, "load") || sv_eq(sub, "exists") || sv_eq(sub, "flush") || sv_eq(sub, "kill") ||
               sv_eq(sub, "help")) {
        sv_add_errorf(&c->r, "unknown subcommand or wrong number of arguments for '%.*s'. Try SCRIPT HELP.",
                      (int)(sub.len > 128 ? 128 : sub.len), sub.p);
    } else {
        unknown_sub(c, sub, "SCRIPT");
    }
}

/* ---- functions ---- */

static void lib_free(sv_lua *e, sv_lib *l)
{
    for (int i = 0; i < l->nfuncs; i++) {
        if (e) luaL_unref(e->L, LUA_REGISTRYINDEX, l->funcs[i]->ref);
        free(l->funcs[i]->name);
        free(l->funcs[i]->desc);
        free(l->funcs[i]);
    }
    free(l->funcs);
    free(l->name);
    free(l->code);
    free(l);
}

static sv_lib *lib_find(sv_lua *e, const char *name, size_t n, int *idx)
{
    for (int i = 0; i < e->nlibs; i++)
        if (strlen(e->libs[i]->name) == n && !memcmp(e->libs[i]->name, name, n)) {
            if (idx) *idx = i;
            return e->libs[i];
        }
    return NULL;
}

static void lib_unlink(sv_lua *e, sv_lib *l)
{
    for (int i = 0; i < l->nfuncs; i++) {
        sv_entry *en = sv_dict_unlink(&e->funcs, l->funcs[i]->name, strlen(l->funcs[i]->name));
        free(en);
    }
    for (int i = 0; i < e->nlibs; i++)
        if (e->libs[i] == l) {
            memmove(e->libs + i, e->libs + i + 1, sizeof(*e->libs) * (size_t)(e->nlibs - i - 1));
            e->nlibs--;
            break;
        }
}

static void lib_link(sv_lua *e, sv_lib *l)
{
    e->libs = sv_realloc(e->libs, sizeof(*e->libs) * (size_t)(e->nlibs + 1));
    e->libs[e->nlibs++] = l;
    for (int i = 0; i < l->nfuncs; i++) {
        sv_entry *en = sv_dict_add(&e->funcs, l->funcs[i]->name, strlen(l->funcs[i]->name), NULL);
        en->val = l->funcs[i];
    }
}

static int parse_flags_table(lua_State *L, int idx, int *flags)
{
    *flags = 0;
    if (!lua_istable(L, idx)) return -1;
    for (int i = 1;; i++) {
        lua_rawgeti(L, idx, i);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return 0;
        }
        const char *f = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        size_t k = 0;
        while (f && k < NFLAGS && strcmp(f, flag_names[k].name) != 0) k++;
        lua_pop(L, 1);
        if (!f || k == NFLAGS) return -1;
        *flags |= flag_names[k].flag;
    }
}

static int valid_func_name(const char *s, size_t n)
{
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return 0;
    return 1;
}

static int l_register_function(lua_State *L)
{
    sv_lua *e = engine_of(L);
    sv_lib *lib = e->loading;
    if (!lib) return raise_error(L, "redis.register_function can only be called on FUNCTION LOAD command");
    int argc = lua_gettop(L);
    const char *name = NULL, *desc = NULL;
    size_t nlen = 0;
    int flags = 0, fn = 0;
    if (argc == 1) {
        if (!lua_istable(L, 1)) return raise_error(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            if (lua_type(L, -2) != LUA_TSTRING) return raise_error(L, "named argument key given to redis.register_function is not a string");
            const char *k = lua_tostring(L, -2);
            if (!strcmp(k, "function_name")) {
                if (lua_type(L, -1) != LUA_TSTRING) return raise_error(L, "function_name argument given to redis.register_function must be a string");
                name = lua_tolstring(L, -1, &nlen);
                lua_pushvalue(L, -1);
                lua_setfield(L, LUA_REGISTRYINDEX, "slotlane.fname"); /* keeps the string alive */
            } else if (!strcmp(k, "description")) {
                if (lua_type(L, -1) != LUA_TSTRING) return raise_error(L, "description argument given to redis.register_function must be a string");
                desc = lua_tostring(L, -1);
                lua_pushvalue(L, -1);
                lua_setfield(L, LUA_REGISTRYINDEX, "slotlane.fdesc");
            } else if (!strcmp(k, "callback")) {
                if (!lua_isfunction(L, -1)) return raise_error(L, "callback argument given to redis.register_function must be a function");
                lua_pushvalue(L, -1);
                lua_setfield(L, LUA_REGISTRYINDEX, "slotlane.fcb");
                fn = 1;
            } else if (!strcmp(k, "flags")) {
                if (parse_flags_table(L, lua_gettop(L), &flags) < 0) return raise_error(L, "unknown flag given");
            } else {
                return raise_error(L, "unknown argument given to redis.register_function");
            }
            lua_pop(L, 1);
        }
        if (!name) return raise_error(L, "redis.register_function must get a function name argument");
        if (!fn) return raise_error(L, "redis.register_function must get a callback argument");
        lua_getfield(L, LUA_REGISTRYINDEX, "slotlane.fcb");
    } else if (argc == 2) {
        if (lua_type(L, 1) != LUA_TSTRING) return raise_error(L, "first argument to redis.register_function must be a string");
        if (!lua_isfunction(L, 2)) return raise_error(L, "second argument to redis.register_function must be a function");
        name = lua_tolstring(L, 1, &nlen);
        lua_pushvalue(L, 2);
    } else {
        return raise_error(L, "wrong number of arguments to redis.register_function");
    }
    if (!valid_func_name(name, nlen))
        return raise_error(L, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"); /* sic, Redis 7.0 */
    for (int i = 0; i < lib->nfuncs; i++)
        if (!strcmp(lib->funcs[i]->name, name)) return raise_error(L, "Function already exists in the library");
    sv_func *f = sv_calloc(1, sizeof(*f));
    f->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    f->name = sv_memdup(name, nlen);
    f->name[nlen] = 0;
    f->desc = desc ? sv_memdup(desc, strlen(desc)) : NULL;
    if (f->desc) f->desc[strlen(desc)] = 0;
    f->flags = flags;
    f->lib = lib;
    lib->funcs = sv_realloc(lib->funcs, sizeof(*lib->funcs) * (size_t)(lib->nfuncs + 1));
    lib->funcs[lib->nfuncs++] = f;
    return 0;
}

static void load_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    sv_lua *e = engine_of(L);
    if (sv_mstime() - e->start_ms > 500) {
        lua_sethook(L, load_hook, LUA_MASKLINE, 0);
        luaL_error(L, "FUNCTION LOAD timeout");
    }
}

/* Builds a library from its code (running it with the load API); returns it or
 * NULL with *err set (static text or err_buf). */
static sv_lib *lib_create(sv_lua *e, const char *code, size_t len, char *err_buf, size_t errcap)
{
    lua_State *L = e->L;
    /* the shebang: "#!lua name=<lib>" */
    if (len < 2 || code[0] != '#' || code[1] != '!') {
        snprintf(err_buf, errcap, "Missing library metadata");
        return NULL;
    }
    const char *nl = memchr(code, '\n', len);
    size_t sl = nl ? (size_t)(nl - code) : len;
    char *line = sv_memdup(code, sl);
    line[sl] = 0;
    char *save = NULL, *name = NULL;
    int first = 1, bad = 0;
    for (char *part = strtok_r(line, " ", &save); part && !bad; part = strtok_r(NULL, " ", &save)) {
        if (first) {
            first = 0;
            if (strcmp(part, "#!lua") != 0) {
                snprintf(err_buf, errcap, "Engine '%s' not found", part + 2);
                bad = 1;
            }
            continue;
        }
        if (!strncmp(part, "name=", 5)) name = part + 5;
        else {
            snprintf(err_buf, errcap, "Invalid metadata value given: %s", part);
            bad = 1;
        }
    }
    if (!bad && !name) {
        snprintf(err_buf, errcap, "Library name was not given");
        bad = 1;
    }
    if (!bad && !valid_func_name(name, strlen(name))) {
        snprintf(err_buf, errcap, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long");
        bad = 1;
    }
    if (bad) {
        free(line);
        return NULL;
    }
    sv_lib *lib = sv_calloc(1, sizeof(*lib));
    lib->name = sv_memdup(name, strlen(name));
    lib->name[strlen(name)] = 0;
    free(line);
    lib->code = sv_memdup(code, len);
    lib->codelen = len;
    char *body = sv_memdup(code, len);
    memset(body, ' ', sl);
    int rc = luaL_loadbuffer(L, body, len, "@user_function");
    free(body);
    if (rc) {
        snprintf(err_buf, errcap, "Error compiling function: %s", lua_tostring(L, -1));
        lua_pop(L, 1);
        lib_free(e, lib);
        return NULL;
    }
    /* run it with the load globals behind the proxy */
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->pmeta_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->loadapi_ref);
    rawsetfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->errh_ref);
    lua_insert(L, -2);
    e->loading = lib;
    e->start_ms = sv_mstime();
    lua_sethook(L, load_hook, LUA_MASKCOUNT, 100000);
    rc = lua_pcall(L, 0, 0, -2);
    lua_sethook(L, NULL, 0, 0);
    e->loading = NULL;
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->pmeta_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->globals_ref);
    rawsetfield(L, -2, "__index");
    lua_pop(L, 1);
    if (rc) {
        const char *m = NULL;
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            m = lua_tostring(L, -1);
        } else {
            m = lua_tostring(L, -1);
        }
        snprintf(err_buf, errcap, "Error registering functions: %s", m ? m : "?");
        lua_settop(L, 0);
        lib_free(e, lib);
        return NULL;
    }
    lua_settop(L, 0);
    if (lib->nfuncs == 0) {
        snprintf(err_buf, errcap, "No functions registered");
        lib_free(e, lib);
        return NULL;
    }
    return lib;
}

/* Adds a built library, replacing one of the same name when replace; 0, or -1
 * with the error in err_buf (nothing changed). */
static int lib_install(sv_lua *e, sv_lib *lib, int replace, char *err_buf, size_t errcap)
{
    sv_lib *old = lib_find(e, lib->name, strlen(lib->name), NULL);
    if (old && !replace) {
        snprintf(err_buf, errcap, "Library '%s' already exists", lib->name);
        return -1;
    }
    for (int i = 0; i < lib->nfuncs; i++) {
        sv_entry *en = sv_dict_find(&e->funcs, lib->funcs[i]->name, strlen(lib->funcs[i]->name));
        if (en && ((sv_func *)en->val)->lib != old) {
            snprintf(err_buf, errcap, "Function %s already exists", lib->funcs[i]->name);
            return -1;
        }
    }
    if (old) {
        lib_unlink(e, old);
        lib_free(e, old);
    }
    lib_link(e, lib);
    return 0;
}

static void functions_flush(sv_lua *e)
{
    while (e->nlibs) {
        sv_lib *l = e->libs[0];
        lib_unlink(e, l);
        lib_free(e, l);
    }
}

/* FUNCTION DUMP payload: "SLFN" 1, then per library a 4-byte big-endian length and
 * its code, then an 8-byte FNV-1a checksum of everything before it. */
static uint64_t fnv64(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static void dump_libs(sv_lua *e, sv_buf *b)
{
    sv_buf_append(b, "SLFN\x01", 5);
    for (int i = 0; i < e->nlibs; i++) {
        uint32_t n = (uint32_t)e->libs[i]->codelen;
        unsigned char h[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8), (unsigned char)n};
        sv_buf_append(b, h, 4);
        sv_buf_append(b, e->libs[i]->code, n);
    }
    uint64_t h = fnv64(b->data, b->len);
    unsigned char t[8];
    for (int i = 0; i < 8; i++) t[i] = (unsigned char)(h >> (56 - 8 * i));
    sv_buf_append(b, t, 8);
}

static void function_restore(sv_ctx *c, sv_lua *e, int argc, sv_str *argv)
{
    int policy = 0; /* 0 append, 1 replace, 2 flush */
    if (argc > 4) {
        sv_add_error(&c->r, SV_ERR_SYNTAX);
        return;
    }
    if (argc == 4) {
        if (sv_eq(argv[3], "append")) policy = 0;
        else if (sv_eq(argv[3], "replace")) policy = 1;
        else if (sv_eq(argv[3], "flush")) policy = 2;
        else {
            sv_add_error(&c->r, "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
            return;
        }
    }
    const char *p = argv[2].p;
    size_t n = argv[2].len;
    uint64_t h = 0;
    if (n >= 13)
        for (int i = 0; i < 8; i++) h = h << 8 | (unsigned char)p[n - 8 + i];
    if (n < 13 || memcmp(p, "SLFN\x01", 5) != 0 || fnv64(p, n - 8) != h) {
        sv_add_error(&c->r, "DUMP payload version or checksum are wrong");
        return;
    }
    /* build every library first: a failure changes nothing */
    sv_lib **libs = NULL;
    int nl = 0;
    size_t off = 5, end = n - 8;
    char err[512];
    int bad = 0;
    while (off < end && !bad) {
        if (end - off < 4) {
            bad = 1;
            snprintf(err, sizeof(err), "DUMP payload version or checksum are wrong");
            break;
        }
        uint32_t len = (uint32_t)(unsigned char)p[off] << 24 | (uint32_t)(unsigned char)p[off + 1] << 16 |
                       (uint32_t)(unsigned char)p[off + 2] << 8 | (unsigned char)p[off + 3];
        off += 4;
        if (len > end - off) {
            bad = 1;
            snprintf(err, sizeof(err), "DUMP payload version or checksum are wrong");
            break;
        }
        sv_lib *l = lib_create(e, p + off, len, err, sizeof(err));
        off += len;
        if (!l) {
            bad = 1;
            break;
        }
        libs = sv_realloc(libs, sizeof(*libs) * (size_t)(nl + 1));
        libs[nl++] = l;
    }
    /* collisions among the payload itself, then with what stays */
    for (int i = 0; i < nl && !bad; i++)
        for (int j = 0; j < i && !bad; j++) {
            if (!strcmp(libs[i]->name, libs[j]->name)) {
                snprintf(err, sizeof(err), "Library '%s' already exists", libs[i]->name);
                bad = 1;
            }
            for (int a = 0; a < libs[i]->nfuncs && !bad; a++)
                for (int b = 0; b < libs[j]->nfuncs && !bad; b++)
                    if (!strcmp(libs[i]->funcs[a]->name, libs[j]->funcs[b]->name)) {
                        snprintf(err, sizeof(err), "Function %s already exists", libs[i]->funcs[a]->name);
                        bad = 1;
                    }
        }
    if (!bad && policy != 2) {
        for (int i = 0; i < nl && !bad; i++) {
            sv_lib *old = lib_find(e, libs[i]->name, strlen(libs[i]->name), NULL);
            if (old && policy == 0) {
                snprintf(err, sizeof(err), "Library %s already exists", libs[i]->name);
                bad = 1;
            }
            for (int a = 0; a < libs[i]->nfuncs && !bad; a++) {
                sv_entry *en = sv_dict_find(&e->funcs, libs[i]->funcs[a]->name, strlen(libs[i]->funcs[a]->name));
                if (en && ((sv_func *)en->val)->lib != old) {
                    snprintf(err, sizeof(err), "Function %s already exists", libs[i]->funcs[a]->name);
                    bad = 1;
                }
            }
        }
    }
    if (bad) {
        for (int i = 0; i < nl; i++) lib_free(e, libs[i]);
        free(libs);
        sv_add_error(&c->r, err);
        return;
    }
    if (policy == 2) functions_flush(e);
    for (int i = 0; i < nl; i++) {
        sv_lib *old = lib_find(e, libs[i]->name, strlen(libs[i]->name), NULL);
        if (old) {
            lib_unlink(e, old);
            lib_free(e, old);
        }
        lib_link(e, libs[i]);
    }
    free(libs);
    sv_add_ok(&c->r);
}

static void add_flags_set(sv_ctx *c, int flags)
{
    int n = 0;
    for (size_t i = 0; i < NFLAGS; i++)
        if (flags & flag_names[i].flag) n++;
    sv_add_set(&c->r, n);
    for (size_t i = 0; i < NFLAGS; i++)
        if (flags & flag_names[i].flag) sv_add_status(&c->r, flag_names[i].name);
}

static void function_list(sv_ctx *c, sv_lua *e, int argc, sv_str *argv)
{
    int withcode = 0;
    sv_str pat = {NULL, 0};
    for (int i = 2; i < argc; i++) {
        if (sv_eq(argv[i], "withcode") && !withcode) withcode = 1;
        else if (sv_eq(argv[i], "libraryname") && !pat.p && i + 1 < argc) pat = argv[++i];
        else {
            sv_add_errorf(&c->r, "Unknown argument %.*s", (int)(argv[i].len > 128 ? 128 : argv[i].len), argv[i].p);
            return;
        }
    }
    int n = 0;
    for (int i = 0; i < e->nlibs; i++)
        if (!pat.p || sv_glob(pat.p, pat.len, e->libs[i]->name, strlen(e->libs[i]->name), 0)) n++;
    sv_add_array(&c->r, n);
    for (int i = 0; i < e->nlibs; i++) {
        sv_lib *l = e->libs[i];
        if (pat.p && !sv_glob(pat.p, pat.len, l->name, strlen(l->name), 0)) continue;
        sv_add_map(&c->r, withcode ? 4 : 3);
        sv_add_bulk_cstr(&c->r, "library_name");
        sv_add_bulk_cstr(&c->r, l->name);
        sv_add_bulk_cstr(&c->r, "engine");
        sv_add_bulk_cstr(&c->r, "LUA");
        sv_add_bulk_cstr(&c->r, "functions");
        sv_add_array(&c->r, l->nfuncs);
        for (int j = 0; j < l->nfuncs; j++) {
            sv_func *f = l->funcs[j];
            sv_add_map(&c->r, 3);
            sv_add_bulk_cstr(&c->r, "name");
            sv_add_bulk_cstr(&c->r, f->name);
            sv_add_bulk_cstr(&c->r, "description");
            if (f->desc) sv_add_bulk_cstr(&c->r, f->desc);
            else sv_add_null(&c->r);
            sv_add_bulk_cstr(&c->r, "flags");
            add_flags_set(c, f->flags);
        }
        if (withcode) {
            sv_add_bulk_cstr(&c->r, "library_code");
            sv_add_bulk(&c->r, l->code, l->codelen);
        }
    }
}

void sv_cmd_function(sv_ctx *c, int argc, sv_str *argv)
{
    sv_str sub = argv[1];
    sv_lua *e = engine_get(c->sh);
    char err[512];
    if (sv_eq(sub, "load") && (argc == 3 || argc == 4)) {
        int replace = 0;
        if (argc == 4) {
            if (!sv_eq(argv[2], "replace")) {
                sv_add_errorf(&c->r, "Unknown option given: %.*s", (int)(argv[2].len > 128 ? 128 : argv[2].len), argv[2].p);
                return;
            }
            replace = 1;
        }
        sv_str code = argv[argc - 1];
        sv_lib *lib = lib_create(e, code.p, code.len, err, sizeof(err));
        if (!lib || lib_install(e, lib, replace, err, sizeof(err)) < 0) {
            if (lib) lib_free(e, lib);
            sv_add_error(&c->r, err);
            return;
        }
        sv_add_bulk_cstr(&c->r, lib->name);
    } else if (sv_eq(sub, "delete") && argc == 3) {
        sv_lib *l = lib_find(e, argv[2].p, argv[2].len, NULL);
        if (!l) {
            sv_add_error(&c->r, "Library not found");
            return;
        }
        lib_unlink(e, l);
        lib_free(e, l);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "flush") && argc <= 3) {
        if (argc == 3 && !sv_eq(argv[2], "async") && !sv_eq(argv[2], "sync")) {
            sv_add_error(&c->r, "FUNCTION FLUSH only supports SYNC|ASYNC option");
            return;
        }
        functions_flush(e);
        sv_add_ok(&c->r);
    } else if (sv_eq(sub, "list")) {
        function_list(c, e, argc, argv);
    } else if (sv_eq(sub, "dump") && argc == 2) {
        sv_buf b = {0};
        dump_libs(e, &b);
        sv_add_bulk(&c->r, b.data, b.len);
        sv_buf_free(&b);
    } else if (sv_eq(sub, "restore") && argc >= 3) {
        function_restore(c, e, argc, argv);
    } else if (sv_eq(sub, "stats") && argc == 2) {
        function_stats(e, &c->r); /* nothing runs now: the busy mode answers while one does */
    } else if (sv_eq(sub, "kill") && argc == 2) {
        sv_add_error(&c->r, "-NOTBUSY No scripts in execution right now.");
    } else if (sv_eq(sub, "help") && argc == 2) {
        static const char *h[] = {
            "LOAD [REPLACE] <FUNCTION CODE>", "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>", "    Delete the given library.", "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:", "    * Library name",
            "    * The engine used to run the Library", "    * Library description", "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.", "STATS",
            "    Return information about the current function running:", "    * Function name",
            "    * Command used to run the function", "    * Duration in MS that the function is running",
            "    If no function is running, return nil", "    In addition, returns a list of available engines.",
            "KILL", "    Kill the current running function.", "FLUSH [ASYNC|SYNC]", "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.", "    * SYNC: Synchronously flush the libraries.", "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):", "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).", NULL};
        add_help(c, "FUNCTION", h);
    } else if (sv_eq(sub, "load") || sv_eq(sub, "delete") || sv_eq(sub, "flush") || sv_eq(sub, "dump") ||
               sv_eq(sub, "restore") || sv_eq(sub, "stats") || sv_eq(sub, "kill") || sv_eq(sub, "help")) {
        sv_add_errorf(&c->r, "unknown subcommand or wrong number of arguments for '%.*s'. Try FUNCTION HELP.",
                      (int)(sub.len > 128 ? 128 : sub.len), sub.p);
    } else {
        unknown_sub(c, sub, "FUNCTION");
    }
}

static void fcall_generic(sv_ctx *c, int argc, sv_str *argv, int ro)
{
    long long nk;
    if (get_numkeys(c, argc, argv, &nk) < 0) return;
    sv_lua *e = engine_get(c->sh);
    sv_entry *en = sv_dict_find(&e->funcs, argv[1].p, argv[1].len);
    if (!en) {
        sv_add_error(&c->r, "Function not found");
        return;
    }
    sv_func *f = en->val;
    if (check_run_flags(c, f->flags, ro) < 0) return;
    lua_State *L = e->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->errh_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref);
    push_strings(L, (int)nk, argv + 3);
    push_strings(L, argc - 3 - (int)nk, argv + 3 + nk);
    e->is_eval = 0;
    e->flags = f->flags;
    e->ro = ro;
    e->slot = declared_slot((int)nk, argv + 3);
    e->run_name = f->name;
    e->run_cmd = ro ? "fcall_ro" : "fcall";
    e->run_argc = argc;
    e->run_argv = argv;
    run(e, c, 2);
}

void sv_cmd_fcall(sv_ctx *c, int argc, sv_str *argv) { fcall_generic(c, argc, argv, 0); }
void sv_cmd_fcall_ro(sv_ctx *c, int argc, sv_str *argv) { fcall_generic(c, argc, argv, 1); }

int sv_script_library(sv_shard *sh, int i, const char **code, size_t *len)
{
    sv_lua *e = sh->lua;
    if (!e || i < 0 || i >= e->nlibs) return 0;
    *code = e->libs[i]->code;
    *len = e->libs[i]->codelen;
    return 1;
}

void sv_script_free_shard(sv_shard *sh)
{
    sv_lua *e = sh->lua;
    if (!e) return;
    sv_dict_clear(&e->scripts, script_free_entry, e);
    while (e->nlibs) {
        sv_lib *l = e->libs[0];
        lib_unlink(e, l);
        lib_free(e, l);
    }
    free(e->libs);
    sv_dict_clear(&e->funcs, NULL, NULL);
    lua_close(e->L);
    pool_free_all(e);
    sv_buf_free(&e->reply);
    free(e);
    sh->lua = NULL;
}
