// The registry's table (lang/api.hpp), written in three files by the reference's sections:
// api_tensors.cpp (create .. windows), api_io.cpp (observe, io, plans), api_library.cpp
// (operators, gradients, linalg, fft, the standard library, shell commands). api.cpp joins them
// in that order. This header is their shared shorthand; include it only there.
#pragma once

#include <span>

#include "lang/api.hpp"
#include "lang/bindings.hpp"

namespace tapestry::api_table {

using lua::l_argreduce;
using lua::l_binary;
using lua::l_reduce;
using lua::l_unary;
using K = ApiKind;
constexpr bool M = true;  // also a Tensor method

#define UNARY(name, op, doc) \
  { "tp." name, K::Function, "map", "tp." name "(x) / x:" name "()", doc, l_unary<Op::op>, M }
#define BINARY(name, op, sym, doc) \
  { "tp." name, K::Function, "map", "tp." name "(a, b) / a:" name "(b)" sym, doc, l_binary<Op::op>, M }
#define META(name, op, usage, doc) \
  { "Tensor." name, K::Metamethod, "operators", usage, doc, op }

std::span<const ApiEntry> tensor_entries();
std::span<const ApiEntry> io_entries();
std::span<const ApiEntry> library_entries();

}  // namespace tapestry::api_table
