// The creators' `symmetry` option (properties_lua.cpp).
//   std::vector<SymmetryGroup> g = read_symmetry(L, opts_index);   // {} without the option
//   NodeRef y = with_symmetry(x, g, Creator::Random, 0);          // mirrored and declared
#pragma once

#include <vector>

#include "engine/ir/attrs.hpp"

struct lua_State;

namespace tapestry::lua {

// How a creator's values relate to a declared symmetry: data is checked when evaluated, a
// constant is symmetric (antisymmetric only if 0), the identity is symmetric, random values
// are made so by mirroring one triangle.
enum class Creator { Data, Constant, Eye, Random };

std::vector<SymmetryGroup> read_symmetry(lua_State* L, int opts);
NodeRef with_symmetry(const NodeRef& x, std::vector<SymmetryGroup> groups, Creator kind, double value);

}  // namespace tapestry::lua
