// tp.env: the named tensors of the environment, as a Lua table-like object.
//   tp.env.w = tp.rand{4,4}   -- bind (computed at the next observation)
//   print(tp.env.w)           -- read; tp.env.w = nil drops; pairs(tp.env) lists names
#include "lang/env_lua.hpp"

#include <lauxlib.h>
#include <lua.h>

#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry {

namespace {

std::string check_name(lua_State* L) {
  if (lua_type(L, 2) != LUA_TSTRING) type_error(L, 2, "tensor name (string)");
  return lua_tostring(L, 2);
}

int env_index(lua_State* L) {
  const std::string name = check_name(L);
  NodeRef n = session_of(L).env().get(name);
  if (!n) lua_pushnil(L);
  else push_tensor(L, std::move(n), name);
  return 1;
}

int env_newindex(lua_State* L) {
  const std::string name = check_name(L);
  Session& s = session_of(L);
  if (lua_isnil(L, 3)) {
    s.env().drop(name);
    release_unreferenced(s);  // its shards, on every rank, unless something still reads them
    return 0;
  }
  s.env().bind(name, check_tensor_like(L, 3));
  return 0;
}

// pairs(tp.env): name, Tensor in name order (a snapshot of the names).
int env_next(lua_State* L) {
  const Environment& env = session_of(L).env();
  const auto names = env.names();
  size_t i = 0;
  if (!lua_isnil(L, 2)) {
    const std::string prev = lua_tostring(L, 2);
    while (i < names.size() && names[i] <= prev) ++i;
  }
  if (i >= names.size()) return 0;
  lua_pushstring(L, names[i].c_str());
  push_tensor(L, env.get(names[i]), names[i]);
  return 2;
}

int env_pairs(lua_State* L) {
  push_guarded(L, env_next, "tp.env");
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

}  // namespace

void push_env_table(lua_State* L) {
  lua_newtable(L);
  lua_createtable(L, 0, 4);
  push_guarded(L, env_index, "tp.env");
  lua_setfield(L, -2, "__index");
  push_guarded(L, env_newindex, "tp.env");
  lua_setfield(L, -2, "__newindex");
  push_guarded(L, env_pairs, "tp.env");
  lua_setfield(L, -2, "__pairs");
  lua_pushstring(L, "tp.env");
  lua_setfield(L, -2, "__name");
  lua_setmetatable(L, -2);
}

}  // namespace tapestry
