#include "lang/state.hpp"

#include <new>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <string>

#include "lang/api.hpp"
#include "lang/env_lua.hpp"
#include "lang/lua_args.hpp"
#include "lang/plan_lua.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"
#include "stdlib/stdlib.hpp"

namespace tapestry {

int open_tp(lua_State* L) {
  register_tensor_type(L);
  register_plan_types(L);
  lua_newtable(L);
  for (const ApiEntry& e : api_entries()) {
    if (e.kind != ApiKind::Function || e.name.substr(0, 3) != "tp.") continue;
    std::string_view field = e.name.substr(3);
    const size_t dot = field.find('.');
    if (dot != std::string_view::npos) {  // tp.linalg.solve: a function of the subtable tp.linalg
      luaL_getsubtable(L, -1, std::string(field.substr(0, dot)).c_str());
      field = field.substr(dot + 1);
    }
    push_guarded(L, e.fn, e.name);
    lua_setfield(L, -2, std::string(field).c_str());
    if (dot != std::string_view::npos) lua_pop(L, 1);
  }
  push_env_table(L);
  lua_setfield(L, -2, "env");
  lua_pushstring(L, "0.1.0");
  lua_setfield(L, -2, "version");
  return 1;
}

namespace {

// package.preload["tapestry.nn"] and friends: compile the embedded source (text only, with
// a chunk name that points tracebacks at stdlib/nn.lua) and run it with require's arguments.
int load_stdlib_module(lua_State* L) {
  const EmbeddedModule& m = stdlib_modules()[lua_tointeger(L, lua_upvalueindex(1))];
  if (luaL_loadbufferx(L, m.source.data(), m.source.size(), m.chunkname.data(), "t") != LUA_OK)
    return lua_error(L);
  lua_insert(L, 1);  // the chunk below require's (name, extra) arguments
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

void preload_stdlib(lua_State* L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_Integer i = 0;
  for (const EmbeddedModule& m : stdlib_modules()) {
    lua_pushinteger(L, i++);
    lua_pushcclosure(L, load_stdlib_module, 1);
    lua_setfield(L, -2, std::string(m.name).c_str());
  }
  lua_pop(L, 1);
}

}  // namespace

lua_State* new_tapestry_state(Session& s) {
  lua_State* L = luaL_newstate();
  if (!L) return nullptr;
  // The context lives in a userdata the registry keeps (Lua never moves it) as long as L.
  auto* ctx = new (lua_newuserdatauv(L, sizeof(StateContext), 0)) StateContext{&s, {}};
  lua_createtable(L, 0, 1);  // it holds strings (the print options): destroyed with the state
  lua_pushcfunction(L, [](lua_State* l) {
    static_cast<StateContext*>(lua_touserdata(l, 1))->~StateContext();
    return 0;
  });
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, ctx);
  *static_cast<StateContext**>(lua_getextraspace(L)) = ctx;
  luaL_openlibs(L);
  luaL_requiref(L, "tapestry", open_tp, 0);  // package.loaded.tapestry
  lua_setglobal(L, "tp");
  preload_stdlib(L);
  return L;
}

}  // namespace tapestry
