// Plans, layouts and the mesh in Lua (see plan_lua.cpp), and the shell's shard map.
//   register_plan_types(L);                       // Plan and Layout metatables
//   std::cout << describe_layout_map(session, node);   // :layout, a coloured map of who holds what
#pragma once

#include <string>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/plan/sharded_graph.hpp"

struct lua_State;

namespace tapestry {

class Session;

void register_plan_types(lua_State* L);

// The shard map of a tensor (planned on the session's mesh if it is an expression).
std::string describe_layout_map(Session& s, const NodeRef& x);

// Draws which rank holds which box: 1-D as a bar, 2-D as a grid, n-D as 2-D faces of the
// last two dims, one per index of the leading dims (up to a few), `width` columns wide at
// most, in ANSI colours when `colour`. Up to 62 ranks each has a symbol; past that, and past
// 16 blocks, the map summarizes each dim and the rank order instead of listing every block.
std::string render_layout(const Shape& shape, const std::vector<plan::Shard>& shards,
                          const std::string& summary, bool colour = true, int width = 52);

}  // namespace tapestry
