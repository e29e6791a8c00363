// Attributes and chunk shapes of stored arrays (HDF5, zarr), between Lua and engine/io.
//   push_attrs(L, info.attrs);                        // {units = "K", step = 10, origin = {0.5, -1.5}}
//   io::Attrs a = check_attrs(L, 4);                  // opts.attrs of argument 4
//   std::vector<int64_t> c = check_chunks(L, 4, x->shape);   // opts.chunks, or empty
#pragma once

#include <cstdint>
#include <vector>

#include "engine/io/attrs.hpp"
#include "engine/ir/shape.hpp"

struct lua_State;

namespace tapestry::lua {

// A table: strings, numbers (integral ones as integers), sequences of numbers.
void push_attrs(lua_State* L, const io::Attrs& attrs);
// opts.attrs of the options at `opts`: name -> number, string or sequence of numbers.
io::Attrs check_attrs(lua_State* L, int opts);
// opts.chunks: one positive size per dimension of `shape` (clamped to it); empty when absent.
std::vector<int64_t> check_chunks(lua_State* L, int opts, const Shape& shape);

}  // namespace tapestry::lua
