#include "lang/state.hpp"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lang/api.hpp"
#include "lang/env_lua.hpp"
#include "lang/lua_args.hpp"
#include "lang/plan_lua.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry {

int open_tp(lua_State* L) {
  register_tensor_type(L);
  register_plan_types(L);
  lua_newtable(L);
  for (const ApiEntry& e : api_entries()) {
    if (e.kind != ApiKind::Function || e.name.substr(0, 3) != "tp.") continue;
    push_guarded(L, e.fn, e.name);
    lua_setfield(L, -2, std::string(e.name.substr(3)).c_str());
  }
  push_env_table(L);
  lua_setfield(L, -2, "env");
  lua_pushstring(L, "0.1.0");
  lua_setfield(L, -2, "version");
  return 1;
}

lua_State* new_tapestry_state() {
  lua_State* L = luaL_newstate();
  if (!L) return nullptr;
  luaL_openlibs(L);
  luaL_requiref(L, "tapestry", open_tp, 0);  // package.loaded.tapestry
  lua_setglobal(L, "tp");
  return L;
}

}  // namespace tapestry
