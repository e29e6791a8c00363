// What a tapestry lua_State keeps in its extra space: the session its bindings work in and the
// print options.
//   Session& s = session_of(L);     // a binding that observes, binds a name or reads counters
// new_tapestry_state (lang/state.hpp) sets it up; coroutines share their main state's.
#pragma once

#include <lauxlib.h>
#include <lua.h>

#include "lang/format.hpp"

namespace tapestry {

class Session;

struct StateContext {
  Session* session = nullptr;
  FormatOptions print;  // tp.set_printoptions
  // The Tensor metatable and methods table as registry references (lang/tensor_lua.cpp): an
  // integer key is read from the registry's array part; the light-userdata keys they replace
  // cost a hash lookup (~140 instructions) on every new Tensor and every method call.
  int tensor_meta = LUA_NOREF;
  int tensor_methods = LUA_NOREF;
};

inline StateContext& state_context(lua_State* L) {
  return **static_cast<StateContext**>(lua_getextraspace(L));
}
inline Session& session_of(lua_State* L) { return *state_context(L).session; }

}  // namespace tapestry
