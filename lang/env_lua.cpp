// tp.env: the named tensors of the environment, as a Lua table-like object.
//   tp.env.w = tp.rand{4,4}   -- bind (computed at the next observation)
//   print(tp.env.w)           -- read; tp.env.w = nil drops; pairs(tp.env) lists names
// Its metatable is protected (__metatable): setmetatable(tp.env, nil) cannot turn it into a
// plain table whose fields save_env would never see.
#include "lang/env_lua.hpp"

#include "engine/ir/build/packed.hpp"

#include <lauxlib.h>
#include <lua.h>

#include "engine/session/observe.hpp"
#include "engine/session/recovery.hpp"
#include "engine/session/session.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry {

namespace {

// The key as given, NUL bytes included (lua_tostring would cut "a\0x" to "a"), and an
// identifier: reading and binding refuse the same names.
std::string check_name(lua_State* L, int arg) {
  if (lua_type(L, arg) != LUA_TSTRING) type_error(L, arg, "tensor name (string)");
  size_t n = 0;
  const char* p = lua_tolstring(L, arg, &n);
  std::string name(p, n);
  user_check(is_identifier(name), quoted(name), " is not a valid tensor name (use an identifier)");
  return name;
}

int env_index(lua_State* L) {
  const std::string name = check_name(L, 2);
  const Environment& env = session_of(L).env();
  NodeRef n = env.get(name);
  // A declared tensor is kept packed (engine/ir/build/packed.hpp): it reads back unpacked.
  if (n) n = build::read_form(n, env.declared(name));
  if (!n) lua_pushnil(L);
  else push_tensor(L, std::move(n), name);
  return 1;
}

int env_newindex(lua_State* L) {
  const std::string name = check_name(L, 2);
  Session& s = session_of(L);
  if (lua_isnil(L, 3)) {
    s.env().drop(name);
    release_unreferenced(s);  // its shards, on every rank, unless something still reads them
    return 0;
  }
  NodeRef value = build::stored_form(check_tensor_like(L, 3));  // declared: kept packed
  // A stored tensor bound as it is (a detached one has its replica already): copied to the
  // buddies before the old binding, and with it maybe the lineage's inputs, goes.
  replicate_for_binding(s, value);
  s.env().bind(name, std::move(value));
  if (s.env().overdue(name)) {  // a long unobserved chain of rebinds: computed now
    s.telemetry().clear_cancel();
    materialize(s);
  }
  return 0;
}

// pairs(tp.env): name, Tensor in name order; each step finds the next name after the last
// (O(log n)), so a walk over n names is O(n log n) and survives bindings made during it.
int env_next(lua_State* L) {
  const auto& entries = session_of(L).env().entries();
  auto it = entries.begin();
  if (!lua_isnil(L, 2)) it = entries.upper_bound(check_name(L, 2));
  if (it == entries.end()) return 0;
  lua_pushlstring(L, it->first.data(), it->first.size());
  push_tensor(L, build::read_form(it->second.current(), session_of(L).env().declared(it->first)), it->first);
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
  lua_createtable(L, 0, 5);
  push_guarded(L, env_index, "tp.env");
  lua_setfield(L, -2, "__index");
  push_guarded(L, env_newindex, "tp.env");
  lua_setfield(L, -2, "__newindex");
  push_guarded(L, env_pairs, "tp.env");
  lua_setfield(L, -2, "__pairs");
  lua_pushstring(L, "tp.env");
  lua_setfield(L, -2, "__name");
  lua_pushstring(L, "tp.env");  // getmetatable(tp.env) gives this; setmetatable refuses
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
}

}  // namespace tapestry
