// The tensors a save writes, computed where they will be written from.
//   std::vector<NodeRef> parts = computed_for_save(L, {x, y});
//   // each part holds a value (this process writes it) or is a stored leaf (its ranks do)
// On one rank every part is observed to a value. On N ranks a part stays sharded where the
// plan computed it (or where it is stored), so nothing passes through rank 0 but headers.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"

struct lua_State;

namespace tapestry::lua {

std::vector<NodeRef> computed_for_save(lua_State* L, const std::vector<NodeRef>& xs);

}  // namespace tapestry::lua
