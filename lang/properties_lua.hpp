// The creators' `symmetry`, `tiles` and `nonzero` options (properties_lua.cpp).
//   std::vector<SymmetryGroup> g = read_symmetry(L, opts_index);   // {} without the option
//   NodeRef y = with_properties(L, opts_index, x, g, Creator::Random, 0);  // mirrored, declared
#pragma once

#include <vector>

#include "engine/ir/attrs.hpp"

struct lua_State;

namespace tapestry::lua {

// How a creator's values relate to declared properties: data is checked when evaluated, a
// constant is symmetric (antisymmetric, and zero in tiles, only if 0), the identity is
// symmetric and zero off the tiles its diagonal crosses, random values are mirrored from one
// triangle and kept in their nonzero tiles only.
enum class Creator { Data, Constant, Eye, Random };

std::vector<SymmetryGroup> read_symmetry(lua_State* L, int opts);
// x with opts.symmetry (groups) and opts.tiles / opts.nonzero declared (opts: the options
// table's index, 0 for none), kept as its packed form's unpack where it packs; nonzero may be
// left out for tp.zeros (no nonzero tile) and tp.eye (the diagonal's tiles).
NodeRef with_properties(lua_State* L, int opts, const NodeRef& x, std::vector<SymmetryGroup> groups,
                        Creator kind, double value);

}  // namespace tapestry::lua
