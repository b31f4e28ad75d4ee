/* lua_cmsgpack: the `cmsgpack` library of Redis scripts — pack(...) and
 * unpack(s), unpack_one(s [, offset]), unpack_limit(s, limit [, offset]) — with
 * the encoding choices of Redis's bundled lua-cmsgpack: the smallest integer form
 * for numbers that are exact 64-bit integers, float32 when a number survives the
 * round trip through float, else float64; strings as str8/16/32; a table whose keys
 * are exactly 1..n as an array, any other as a map; tables nested deeper than 16
 * (a cycle) and other types as nil. Our own code; results and error texts match
 * Redis's (the differential test compares them). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "script_libs.h"

#define MAX_NESTING 16

/* The output buffer: a userdata with a __gc that frees its bytes, so a Lua error
 * raised mid-encoding (stack overflow in a deep table) leaks nothing. luaL_Buffer
 * cannot be used: it keeps pieces on the stack, where the table walk works too. */
typedef struct {
    char *p;
    size_t len, cap;
} mbuf;

static int mbuf_gc(lua_State *L)
{
    mbuf *m = lua_touserdata(L, 1);
    free(m->p);
    m->p = NULL;
    return 0;
}

static mbuf *mbuf_new(lua_State *L)
{
    mbuf *m = lua_newuserdata(L, sizeof(*m));
    memset(m, 0, sizeof(*m));
    if (luaL_newmetatable(L, "slotlane.mbuf")) {
        lua_pushcfunction(L, mbuf_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return m;
}

static void add(lua_State *L, mbuf *m, const void *p, size_t n)
{
    if (m->cap - m->len < n) {
        size_t cap = m->cap ? m->cap : 64;
        while (cap - m->len < n) {
            if (cap > SIZE_MAX / 2) luaL_error(L, "not enough memory");
            cap *= 2;
        }
        char *q = realloc(m->p, cap);
        if (!q) luaL_error(L, "not enough memory");
        m->p = q;
        m->cap = cap;
    }
    memcpy(m->p + m->len, p, n);
    m->len += n;
}

static void add_byte(lua_State *L, mbuf *m, int c)
{
    char ch = (char)c;
    add(L, m, &ch, 1);
}

static void put_be(lua_State *L, mbuf *m, int tag, uint64_t v, int n)
{
    char t[9];
    t[0] = (char)tag;
    for (int i = 0; i < n; i++) t[1 + i] = (char)(v >> (8 * (n - 1 - i)));
    add(L, m, t, (size_t)n + 1);
}

static void put_int(lua_State *L, mbuf *m, int64_t n)
{
    if (n >= 0) {
        if (n <= 127) add_byte(L, m, (int)n);
        else if (n <= 0xff) put_be(L, m, 0xcc, (uint64_t)n, 1);
        else if (n <= 0xffff) put_be(L, m, 0xcd, (uint64_t)n, 2);
        else if (n <= 0xffffffffLL) put_be(L, m, 0xce, (uint64_t)n, 4);
        else put_be(L, m, 0xcf, (uint64_t)n, 8);
    } else {
        if (n >= -32) add_byte(L, m, (int)(n & 0xff));
        else if (n >= -128) put_be(L, m, 0xd0, (uint64_t)n & 0xff, 1);
        else if (n >= -32768) put_be(L, m, 0xd1, (uint64_t)n & 0xffff, 2);
        else if (n >= -2147483648LL) put_be(L, m, 0xd2, (uint64_t)n & 0xffffffffu, 4);
        else put_be(L, m, 0xd3, (uint64_t)n, 8);
    }
}

static void put_number(lua_State *L, mbuf *m, lua_Number d)
{
    /* an exact 64-bit integer (the range check keeps the cast defined) */
    if (d >= -9.2233720368547758e18 && d < 9.2233720368547758e18 && (lua_Number)(int64_t)d == d) {
        put_int(L, m, (int64_t)d);
        return;
    }
    float f = (float)d;
    if ((double)f == d) {
        uint32_t u;
        memcpy(&u, &f, 4);
        put_be(L, m, 0xca, u, 4);
    } else {
        uint64_t u;
        memcpy(&u, &d, 8);
        put_be(L, m, 0xcb, u, 8);
    }
}

static void put_len(lua_State *L, mbuf *m, size_t n, int fix, size_t fixmax, int t8, int t16, int t32)
{
    if (n <= fixmax) add_byte(L, m, fix | (int)n);
    else if (t8 && n <= 0xff) put_be(L, m, t8, n, 1);
    else if (n <= 0xffff) put_be(L, m, t16, n, 2);
    else put_be(L, m, t32, n, 4);
}

/* keys exactly 1..n (numbers, no holes) */
static int is_array(lua_State *L, int t)
{
    lua_Number max = 0, count = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        lua_Number k;
        if (lua_type(L, -1) != LUA_TNUMBER || (k = lua_tonumber(L, -1)) <= 0 || k >= 2147483648.0 ||
            k != (lua_Number)(long long)k) {
            lua_pop(L, 1);
            return 0;
        }
        if (k > max) max = k;
        count++;
    }
    return max == count;
}

/* Encodes the value at the top and pops it. */
static void encode(lua_State *L, mbuf *m, int level)
{
    int t = lua_type(L, -1);
    if (t == LUA_TTABLE && level == MAX_NESTING) t = LUA_TNIL;
    switch (t) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        put_len(L, m, n, 0xa0, 31, 0xd9, 0xda, 0xdb);
        add(L, m, s, n);
        break;
    }
    case LUA_TBOOLEAN:
        add_byte(L, m, lua_toboolean(L, -1) ? 0xc3 : 0xc2);
        break;
    case LUA_TNUMBER:
        put_number(L, m, lua_tonumber(L, -1));
        break;
    case LUA_TTABLE: {
        luaL_checkstack(L, 4, "in function mp_encode_lua_table");
        int tb = lua_gettop(L);
        if (is_array(L, tb)) {
            size_t n = lua_objlen(L, tb);
            put_len(L, m, n, 0x90, 15, 0, 0xdc, 0xdd);
            for (size_t i = 1; i <= n; i++) {
                lua_pushnumber(L, (lua_Number)i);
                lua_gettable(L, tb);
                encode(L, m, level + 1);
            }
        } else {
            size_t n = 0;
            lua_pushnil(L);
            while (lua_next(L, tb)) {
                lua_pop(L, 1);
                n++;
            }
            put_len(L, m, n, 0x80, 15, 0, 0xde, 0xdf);
            lua_pushnil(L);
            while (lua_next(L, tb)) {
                lua_pushvalue(L, -2);
                encode(L, m, level + 1); /* the key */
                encode(L, m, level + 1); /* the value */
            }
        }
        break;
    }
    default:
        add_byte(L, m, 0xc0);
    }
    lua_pop(L, 1);
}

static int mp_pack(lua_State *L)
{
    int n = lua_gettop(L);
    if (n == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
    if (!lua_checkstack(L, n + 8)) return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
    mbuf *m = mbuf_new(L);
    for (int i = 1; i <= n; i++) {
        lua_pushvalue(L, i);
        encode(L, m, 0);
    }
    lua_pushlstring(L, m->p ? m->p : "", m->len);
    return 1;
}

/* ---- decoding ---- */

typedef struct {
    const unsigned char *p;
    size_t left;
    int err; /* 1 missing bytes, 2 bad format */
} cur;

static uint64_t get_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static int need(cur *c, size_t n)
{
    if (c->left < n) {
        c->err = 1;
        return 0;
    }
    return 1;
}

static void decode(lua_State *L, cur *c);

static void decode_str(lua_State *L, cur *c, size_t hdr, size_t n)
{
    if (!need(c, hdr + n)) return;
    lua_pushlstring(L, (const char *)c->p + hdr, n);
    c->p += hdr + n;
    c->left -= hdr + n;
}

static void decode_array(lua_State *L, cur *c, size_t hdr, size_t n)
{
    c->p += hdr;
    c->left -= hdr;
    luaL_checkstack(L, 4, "in function mp_decode_to_lua_array");
    lua_newtable(L);
    for (size_t i = 1; i <= n; i++) {
        decode(L, c);
        if (c->err) return;
        lua_rawseti(L, -2, (int)i);
    }
}

static void decode_map(lua_State *L, cur *c, size_t hdr, size_t n)
{
    c->p += hdr;
    c->left -= hdr;
    luaL_checkstack(L, 4, "in function mp_decode_to_lua_hash");
    lua_newtable(L);
    for (size_t i = 0; i < n; i++) {
        decode(L, c);
        if (c->err) return;
        decode(L, c);
        if (c->err) return;
        lua_settable(L, -3); /* a nil key is Lua's own error, as in Redis */
    }
}

static void advance(cur *c, size_t n)
{
    c->p += n;
    c->left -= n;
}

static void decode(lua_State *L, cur *c)
{
    if (!need(c, 1)) return;
    luaL_checkstack(L, 2, "in function mp_decode_to_lua_type");
    unsigned t = c->p[0];
    if (t <= 0x7f) {
        lua_pushnumber(L, t);
        advance(c, 1);
    } else if (t >= 0xe0) {
        lua_pushnumber(L, (signed char)t);
        advance(c, 1);
    } else if ((t & 0xe0) == 0xa0) {
        decode_str(L, c, 1, t & 0x1f);
    } else if ((t & 0xf0) == 0x90) {
        decode_array(L, c, 1, t & 0x0f);
    } else if ((t & 0xf0) == 0x80) {
        decode_map(L, c, 1, t & 0x0f);
    } else {
        static const int width[] = {[0xcc - 0xc0] = 1, [0xcd - 0xc0] = 2, [0xce - 0xc0] = 4, [0xcf - 0xc0] = 8,
                                    [0xd0 - 0xc0] = 1, [0xd1 - 0xc0] = 2, [0xd2 - 0xc0] = 4, [0xd3 - 0xc0] = 8,
                                    [0xca - 0xc0] = 4, [0xcb - 0xc0] = 8};
        switch (t) {
        case 0xc0: lua_pushnil(L); advance(c, 1); return;
        case 0xc2: lua_pushboolean(L, 0); advance(c, 1); return;
        case 0xc3: lua_pushboolean(L, 1); advance(c, 1); return;
        case 0xcc: case 0xcd: case 0xce: case 0xcf:
        case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
            int w = width[t - 0xc0];
            if (!need(c, 1 + (size_t)w)) return;
            uint64_t v = get_be(c->p + 1, w);
            if (t >= 0xd0 && w < 8 && (v >> (w * 8 - 1)) & 1) v |= ~(uint64_t)0 << (w * 8);
            lua_pushnumber(L, t >= 0xd0 ? (lua_Number)(int64_t)v : (lua_Number)v);
            advance(c, 1 + (size_t)w);
            return;
        }
        case 0xca: {
            if (!need(c, 5)) return;
            uint32_t u = (uint32_t)get_be(c->p + 1, 4);
            float f;
            memcpy(&f, &u, 4);
            lua_pushnumber(L, f);
            advance(c, 5);
            return;
        }
        case 0xcb: {
            if (!need(c, 9)) return;
            uint64_t u = get_be(c->p + 1, 8);
            double d;
            memcpy(&d, &u, 8);
            lua_pushnumber(L, d);
            advance(c, 9);
            return;
        }
        case 0xc4: case 0xd9: /* bin8, str8 */
            if (need(c, 2)) decode_str(L, c, 2, c->p[1]);
            return;
        case 0xc5: case 0xda:
            if (need(c, 3)) decode_str(L, c, 3, (size_t)get_be(c->p + 1, 2));
            return;
        case 0xc6: case 0xdb:
            if (need(c, 5)) decode_str(L, c, 5, (size_t)get_be(c->p + 1, 4));
            return;
        case 0xdc:
            if (need(c, 3)) decode_array(L, c, 3, (size_t)get_be(c->p + 1, 2));
            return;
        case 0xdd:
            if (need(c, 5)) decode_array(L, c, 5, (size_t)get_be(c->p + 1, 4));
            return;
        case 0xde:
            if (need(c, 3)) decode_map(L, c, 3, (size_t)get_be(c->p + 1, 2));
            return;
        case 0xdf:
            if (need(c, 5)) decode_map(L, c, 5, (size_t)get_be(c->p + 1, 4));
            return;
        }
        c->err = 2;
    }
}

static int unpack_full(lua_State *L, lua_Integer limit, lua_Integer offset)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    int all = !limit && !offset;
    if (offset < 0 || limit < 0)
        return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.", (int)offset, (int)len);
    if ((size_t)offset > len) return luaL_error(L, "Start offset %d greater than input length %d.", (int)offset, (int)len);
    if (all) limit = INT_MAX;
    cur c = {(const unsigned char *)s + offset, len - (size_t)offset, 0};
    int n = 0;
    while (c.left > 0 && n < limit) {
        decode(L, &c);
        if (c.err == 1) return luaL_error(L, "Missing bytes in input.");
        if (c.err == 2) return luaL_error(L, "Bad data format in input.");
        n++;
    }
    if (!all) {
        luaL_checkstack(L, 1, "in function mp_unpack_full");
        lua_pushinteger(L, c.left == 0 ? -1 : (lua_Integer)(len - c.left));
        lua_insert(L, 2); /* the next offset comes first */
        n++;
    }
    return n;
}

static int mp_unpack(lua_State *L) { return unpack_full(L, 0, 0); }

static int mp_unpack_one(lua_State *L)
{
    lua_Integer off = luaL_optinteger(L, 2, 0);
    lua_settop(L, 1);
    return unpack_full(L, 1, off);
}

static int mp_unpack_limit(lua_State *L)
{
    lua_Integer limit = luaL_checkinteger(L, 2);
    lua_Integer off = luaL_optinteger(L, 3, 0);
    lua_settop(L, 1);
    return unpack_full(L, limit, off);
}

int sv_luaopen_cmsgpack(lua_State *L)
{
    static const luaL_Reg fns[] = {{"pack", mp_pack}, {"unpack", mp_unpack}, {"unpack_one", mp_unpack_one},
                                   {"unpack_limit", mp_unpack_limit}, {NULL, NULL}};
    luaL_register(L, "cmsgpack", fns);
    lua_pushliteral(L, "lua-cmsgpack 0.4.0");
    lua_setfield(L, -2, "_VERSION");
    lua_pushliteral(L, "Copyright (C) 2012, Salvatore Sanfilippo");
    lua_setfield(L, -2, "_COPYRIGHT");
    lua_pushliteral(L, "MessagePack C implementation for Lua");
    lua_setfield(L, -2, "_DESCRIPTION");
    return 1;
}
