// The Lua side of Tapestry: a lua_State with the standard libraries, the global
// `tp` (also require "tapestry") and the embedded stdlib modules.
//   lua_State* L = new_tapestry_state();
//   luaL_dostring(L, "print(tp.ones{2,2} * 3)");
#pragma once

struct lua_State;

namespace tapestry {

lua_State* new_tapestry_state();   // lua_close() it when done
int open_tp(lua_State* L);         // luaopen-style: pushes the tp table

}  // namespace tapestry
