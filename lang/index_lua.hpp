// The tensor keys of x[...] and tp.env.w[...] = v (index_lua.cpp), for shape_lua.cpp's
// __index and __newindex: an integer tensor picks along one dim, a bool mask selects.
//   if (index_by_tensor(L, x)) return 1;           // pushed x[t]
//   if (auto w = write_by_tensor(L, x)) rebind(*w);  // w[t] = v
#pragma once

#include <optional>

#include "engine/ir/node.hpp"

struct lua_State;

namespace tapestry::lua {

// When argument 2 is a tensor key, pushes x[key] and returns true.
bool index_by_tensor(lua_State* L, const NodeRef& x);
// When argument 2 is a tensor key, x with argument 3 written there.
std::optional<NodeRef> write_by_tensor(lua_State* L, const NodeRef& x);

}  // namespace tapestry::lua
