// The Tensor userdata: a handle on a graph node (or on a pending record, engine/run/pending.hpp),
// with metamethods and methods.
//   push_tensor(L, node);                 // a new Tensor on the stack
//   TensorHandle* h = to_tensor_handle(L, 1);  // nullptr if not a Tensor
//   x:release() / __gc / __close drop the node reference.
#pragma once

#include <string>

#include "engine/ir/node.hpp"
#include "engine/run/pending.hpp"

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
  // Or, instead of node, a small operation on computed tensors not built into the graph yet:
  // check_tensor builds its node (promote) when anything but the record fast path reads it.
  HeldPending rec;
};

void push_tensor(lua_State* L, NodeRef node, std::string name = {});
TensorHandle* to_tensor_handle(lua_State* L, int idx);

// The record fast path (lang/pending_lua.cpp). Each try_* pushes a Tensor on a new record and
// returns true when the call's arguments make a recordable operation in a session that takes
// records (one rank, no device, no spilling, not an MPI driver); else it returns false having
// touched nothing, and the binding builds nodes.
bool try_record_binary(lua_State* L, Op op);
bool try_record_sum(lua_State* L);
bool try_record_matmul(lua_State* L);
// h's node, built from its record if it holds one (the handle then holds the node).
void promote(TensorHandle& h);
// One observation of the records held by the Tensors at stack slots first..last (each holds
// one): computes them, false when one cannot be (a node it reads lost its value); then the
// caller observes their nodes, and the observation is counted there.
bool observe_pending(lua_State* L, int first, int last);

// Creates the metatable (methods from the API registry); called once per state.
void register_tensor_type(lua_State* L);

// Observes in the state's session: makes sure the node holds a value (materializing pending
// env bindings too).
void observe(lua_State* L, const std::vector<NodeRef>& nodes);

}  // namespace tapestry
