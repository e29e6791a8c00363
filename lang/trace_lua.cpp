// tp.trace(path) / tp.trace(nil): the Lua face of engine/telemetry/trace.hpp (tp.trace(x) of a
// Tensor is the matrix trace, structure_lua.cpp).
#include <lauxlib.h>
#include <lua.h>

#include <string>

#include "engine/session/session.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"

namespace tapestry::lua {

// A path starts the session's trace (finishing any running one); nil or no argument stops it
// and returns the finished file's path (nil when none ran). Starting returns the path too.
int l_trace(lua_State* L) {
  if (is_tensor(L, 1)) return l_matrix_trace(L);  // tp.trace(x): the sum of x's diagonal
  trace::State& trace = session_of(L).telemetry().trace;
  if (lua_isnoneornil(L, 1)) {
    const std::string done = trace::stop(trace);
    if (done.empty()) lua_pushnil(L);
    else lua_pushlstring(L, done.data(), done.size());
    return 1;
  }
  size_t len = 0;
  const char* p = lua_tolstring(L, 1, &len);
  if (p == nullptr || lua_type(L, 1) != LUA_TSTRING)
    return luaL_error(L, "bad argument #1 to 'trace' (string or nil expected, got %s)", luaL_typename(L, 1));
  trace::start(trace, std::string(p, len));
  lua_pushvalue(L, 1);
  return 1;
}

}  // namespace tapestry::lua
