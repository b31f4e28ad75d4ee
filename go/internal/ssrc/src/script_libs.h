/* script_libs: the two Lua libraries Redis scripts use that Debian does not
 * package — struct (binary packing, lua_struct.c) and cmsgpack (MessagePack,
 * lua_cmsgpack.c) — written for slotlane with Redis 7.0's behaviour (formats,
 * results and error messages; the differential test compares them). */
#ifndef SV_SCRIPT_LIBS_H
#define SV_SCRIPT_LIBS_H

#include <lua.h>

int sv_luaopen_struct(lua_State *L);
int sv_luaopen_cmsgpack(lua_State *L);

#endif
