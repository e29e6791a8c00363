// Lua values <-> tensor data.
//   NodeRef t = tensor_from_lua(L, 1, DType::F64);   // {{1,2},{3,4}} -> a {2,2} source
//   push_totable(L, value->view());                  // the reverse, nested tables
//   push_element(L, view, 0);                        // one element as a Lua number/boolean
#pragma once

#include <optional>

#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"

struct lua_State;

namespace tapestry {

// A number, boolean or (nested, rectangular) table at `idx` as a tensor. Without a
// dtype: bool if every leaf is a boolean, else f32 (the default dtype).
NodeRef tensor_from_lua(lua_State* L, int idx, std::optional<DType> dtype);

void push_totable(lua_State* L, const View& v);
void push_element(lua_State* L, const View& v, int64_t flat_index);  // row-major index

}  // namespace tapestry
