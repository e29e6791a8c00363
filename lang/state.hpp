// The Lua side of Tapestry: a lua_State with the standard libraries, the global
// `tp` (also require "tapestry") and the embedded stdlib modules, working in a session.
//   Session session(Config::from_environment());
//   lua_State* L = new_tapestry_state(session);
//   luaL_dostring(L, "print(tp.ones{2,2} * 3)");
#pragma once

struct lua_State;

namespace tapestry {

class Session;

// Every binding of the state uses `s` (lang/state_context.hpp), which must outlive it.
lua_State* new_tapestry_state(Session& s);  // lua_close() it when done
int open_tp(lua_State* L);                  // luaopen-style: pushes the tp table

}  // namespace tapestry
