// tp.env as a Lua object over the Environment (engine/store/environment.hpp).
//   push_env_table(L); lua_setfield(L, -2, "env");
#pragma once

struct lua_State;

namespace tapestry {

void push_env_table(lua_State* L);

}  // namespace tapestry
