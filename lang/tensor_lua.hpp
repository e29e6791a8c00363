// The Tensor userdata: a handle on a graph node, with metamethods and methods.
//   push_tensor(L, node);                 // a new Tensor on the stack
//   TensorHandle* h = to_tensor_handle(L, 1);  // nullptr if not a Tensor
//   x:release() / __gc / __close drop the node reference.
#pragma once

#include <string>

#include "engine/ir/node.hpp"

struct lua_State;

namespace tapestry {

inline constexpr const char* kTensorMeta = "tapestry.Tensor";

// The address that marks a Tensor userdata (TensorHandle::tag): no other userdata holds it.
const void* tensor_tag();

struct TensorHandle {
  HeldNode node;     // nullptr after release(); holding keeps the value (node.hpp)
  std::string name;  // set when read from (or created into) tp.env
  // Asking "is this a Tensor?" (tens of times a CG iteration) by a tag inside the userdata
  // costs three Lua API calls instead of five (fetching and comparing its metatable).
  const void* tag = tensor_tag();
};

void push_tensor(lua_State* L, NodeRef node, std::string name = {});
TensorHandle* to_tensor_handle(lua_State* L, int idx);

// Creates the metatable (methods from the API registry); called once per state.
void register_tensor_type(lua_State* L);

// Observes in the state's session: makes sure the node holds a value (materializing pending
// env bindings too).
void observe(lua_State* L, const std::vector<NodeRef>& nodes);

}  // namespace tapestry
