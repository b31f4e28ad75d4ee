/* lua_struct: the `struct` library of Redis scripts — pack(fmt, ...),
 * unpack(fmt, data [, pos]) and size(fmt), with Roberto Ierusalimschy's format
 * language as Redis ships it: '<' '>' endianness, '!n' maximum alignment, 'x' a pad
 * byte, b/B h/H l/L T i/In I/In integers (lower case signed), f d floats, cn a
 * fixed string (c0: the whole string when packing, the previous number as length
 * when unpacking), s a zero-terminated string, spaces ignored. Our own code; the
 * results and error texts match Redis's (server/tests/integration). */
#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "script_libs.h"

#define MAX_INT_BYTES 32
#define MAX_ALIGN 8 /* offsetof(struct {char c; double d;}, d) on the platforms we build on */

typedef struct {
    int big;   /* big endian */
    int align; /* maximum alignment */
} fmt_state;

static int host_big(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 0;
}

static int read_count(lua_State *L, const char **f, int dflt)
{
    if (!isdigit((unsigned char)**f)) return dflt;
    int v = 0;
    while (isdigit((unsigned char)**f)) {
        int d = *(*f)++ - '0';
        if (v > (INT_MAX - d) / 10) luaL_error(L, "integral size overflow");
        v = v * 10 + d;
    }
    return v;
}

/* The size of option op (reading its count); 0 for options that take no room. */
static size_t opt_size(lua_State *L, int op, const char **f)
{
    switch (op) {
    case 'b': case 'B': return 1;
    case 'h': case 'H': return sizeof(short);
    case 'l': case 'L': return sizeof(long);
    case 'T': return sizeof(size_t);
    case 'f': return sizeof(float);
    case 'd': return sizeof(double);
    case 'x': return 1;
    case 'c': return (size_t)read_count(L, f, 1);
    case 'i': case 'I': {
        int n = read_count(L, f, (int)sizeof(int));
        if (n > MAX_INT_BYTES) luaL_error(L, "integral size %d is larger than limit of %d", n, MAX_INT_BYTES);
        return (size_t)n;
    }
    }
    return 0;
}

static size_t padding(size_t at, const fmt_state *st, int op, size_t size)
{
    if (size == 0 || op == 'c') return 0;
    size_t a = size < (size_t)st->align ? size : (size_t)st->align;
    return (a - (at & (a - 1))) & (a - 1);
}

/* '<' '>' '!' and ' '; anything else is an invalid option */
static void set_option(lua_State *L, int op, const char **f, fmt_state *st)
{
    if (op == ' ') return;
    if (op == '>') {
        st->big = 1;
        return;
    }
    if (op == '<') {
        st->big = 0;
        return;
    }
    if (op == '!') {
        int a = read_count(L, f, MAX_ALIGN);
        if (a <= 0 || (a & (a - 1))) luaL_error(L, "alignment %d is not a power of 2", a);
        st->align = a;
        return;
    }
    luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", op));
}

static void put_bytes(luaL_Buffer *b, const void *p, size_t n, int big)
{
    char tmp[16];
    memcpy(tmp, p, n);
    if (big != host_big())
        for (size_t i = 0; i < n / 2; i++) {
            char t = tmp[i];
            tmp[i] = tmp[n - 1 - i];
            tmp[n - 1 - i] = t;
        }
    luaL_addlstring(b, tmp, n);
}

static int s_pack(lua_State *L)
{
    const char *f = luaL_checkstring(L, 1);
    fmt_state st = {host_big(), 1};
    int arg = 2;
    size_t total = 0;
    luaL_Buffer b;
    lua_pushnil(L); /* keeps the buffer's stack use apart from the arguments */
    luaL_buffinit(L, &b);
    while (*f) {
        int op = (unsigned char)*f++;
        size_t size = opt_size(L, op, &f);
        size_t pad = padding(total, &st, op, size);
        total += pad;
        while (pad--) luaL_addchar(&b, '\0');
        switch (op) {
        case 'b': case 'B': case 'h': case 'H': case 'l': case 'L': case 'T': case 'i': case 'I': {
            lua_Number n = luaL_checknumber(L, arg++);
            uint64_t v;
            /* negative numbers as their two's complement; a larger unsigned range
             * through the unsigned conversion (what the 64-bit C casts give) */
            if (n < 0) v = (uint64_t)(n >= -9.2233720368547758e18 ? (int64_t)n : INT64_MIN);
            else v = n < 1.8446744073709552e19 ? (uint64_t)n : UINT64_MAX;
            char tmp[MAX_INT_BYTES];
            uint64_t x = v;
            for (size_t i = 0; i < size; i++) {
                tmp[st.big ? size - 1 - i : i] = (char)(x & 0xff);
                x = i < 7 ? x >> 8 : 0;
            }
            luaL_addlstring(&b, tmp, size);
            break;
        }
        case 'x':
            luaL_addchar(&b, '\0');
            break;
        case 'f': {
            float v = (float)luaL_checknumber(L, arg++);
            put_bytes(&b, &v, sizeof(v), st.big);
            break;
        }
        case 'd': {
            double v = luaL_checknumber(L, arg++);
            put_bytes(&b, &v, sizeof(v), st.big);
            break;
        }
        case 'c': case 's': {
            size_t len;
            const char *s = luaL_checklstring(L, arg++, &len);
            if (size == 0) size = len;
            luaL_argcheck(L, len >= size, arg, "string too short");
            luaL_addlstring(&b, s, size);
            if (op == 's') {
                luaL_addchar(&b, '\0');
                size++;
            }
            break;
        }
        default:
            set_option(L, op, &f, &st);
        }
        total += size;
    }
    luaL_pushresult(&b);
    return 1;
}

static lua_Number get_int(const char *p, int big, int is_signed, size_t n)
{
    uint64_t v = 0;
    if (n == 0) return 0; /* 'i0': no bytes, the value 0 (Redis reads none either) */
    for (size_t i = 0; i < n; i++) v = v << 8 | (unsigned char)p[big ? i : n - 1 - i];
    if (!is_signed) return (lua_Number)v;
    if (n < 8 && (v >> (n * 8 - 1)) & 1) v |= ~(uint64_t)0 << (n * 8); /* sign extension */
    return (lua_Number)(int64_t)v;
}

static void get_bytes(void *dst, const char *p, size_t n, int big)
{
    memcpy(dst, p, n);
    if (big != host_big()) {
        char *d = dst;
        for (size_t i = 0; i < n / 2; i++) {
            char t = d[i];
            d[i] = d[n - 1 - i];
            d[n - 1 - i] = t;
        }
    }
}

static int s_unpack(lua_State *L)
{
    const char *f = luaL_checkstring(L, 1);
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    lua_Integer start = luaL_optinteger(L, 3, 1);
    luaL_argcheck(L, start > 0, 3, "offset must be 1 or greater");
    size_t pos = (size_t)start - 1;
    fmt_state st = {host_big(), 1};
    int results = 0;
    while (*f) {
        int op = (unsigned char)*f++;
        size_t size = opt_size(L, op, &f);
        pos += padding(pos, &st, op, size);
        luaL_argcheck(L, size <= len && pos <= len - size, 2, "data string too short");
        luaL_checkstack(L, 2, "too many results");
        switch (op) {
        case 'b': case 'B': case 'h': case 'H': case 'l': case 'L': case 'T': case 'i': case 'I':
            lua_pushnumber(L, get_int(data + pos, st.big, islower(op), size));
            results++;
            break;
        case 'x':
            break;
        case 'f': {
            float v;
            get_bytes(&v, data + pos, sizeof(v), st.big);
            lua_pushnumber(L, v);
            results++;
            break;
        }
        case 'd': {
            double v;
            get_bytes(&v, data + pos, sizeof(v), st.big);
            lua_pushnumber(L, v);
            results++;
            break;
        }
        case 'c':
            if (size == 0) { /* the length is the number unpacked just before */
                if (results == 0 || !lua_isnumber(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
                lua_Number n = lua_tonumber(L, -1);
                size = n > 0 ? (n < 1e18 ? (size_t)n : SIZE_MAX) : 0; /* too large: "too short" below */
                lua_pop(L, 1);
                results--;
                luaL_argcheck(L, size <= len && pos <= len - size, 2, "data string too short");
            }
            lua_pushlstring(L, data + pos, size);
            results++;
            break;
        case 's': {
            const char *z = memchr(data + pos, '\0', len - pos);
            if (!z) luaL_error(L, "unfinished string in data");
            size = (size_t)(z - (data + pos)) + 1;
            lua_pushlstring(L, data + pos, size - 1);
            results++;
            break;
        }
        default:
            set_option(L, op, &f, &st);
        }
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)pos + 1);
    return results + 1;
}

static int s_size(lua_State *L)
{
    const char *f = luaL_checkstring(L, 1);
    fmt_state st = {host_big(), 1};
    size_t pos = 0;
    while (*f) {
        int op = (unsigned char)*f++;
        size_t size = opt_size(L, op, &f);
        pos += padding(pos, &st, op, size);
        if (op == 's') luaL_argerror(L, 1, "option 's' has no fixed size");
        if (op == 'c' && size == 0) luaL_argerror(L, 1, "option 'c0' has no fixed size");
        if (!isalnum(op)) set_option(L, op, &f, &st);
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)pos);
    return 1;
}

int sv_luaopen_struct(lua_State *L)
{
    static const luaL_Reg fns[] = {{"pack", s_pack}, {"unpack", s_unpack}, {"size", s_size}, {NULL, NULL}};
    luaL_register(L, "struct", fns);
    return 1;
}
