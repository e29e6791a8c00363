// Tensors put on disk from Lua: tp.place(x, {storage = "disk"}), and the creators' option
// storage = "disk" (tp.zeros({n, n}, {storage = "disk", name = "w"})).
//   const NodeRef d = put_on_disk(L, x, "tp.env.w", "it stays where it was");
// Both go through engine/session/placement.hpp: computed where it will be written from (on N
// ranks each rank writes its own boxes), then a lazy read of the file stands for it.
#pragma once

#include <string>

#include "engine/ir/node.hpp"

struct lua_State;

namespace tapestry::lua {

// x computed and written under the spill directory; the lazy read of the file. `label` names x
// in errors; `otherwise` says what a failed write left.
NodeRef put_on_disk(lua_State* L, const NodeRef& x, const std::string& label, const std::string& otherwise);
// "tp.env.w" (every name x is bound to), or "the f32 {3, 4} tensor".
std::string tensor_label(lua_State* L, const NodeRef& x);

}  // namespace tapestry::lua
