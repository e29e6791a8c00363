// A naive reference for one node: its op interpreted over doubles from its inputs' values,
// written from op.hpp's and node.hpp's descriptions, independent of kernels/cpu.
//   std::string err;  NaiveResult r = naive_check(*n, err);   // n and its inputs hold values
//   if (r == NaiveResult::Mismatch) report(err);
// Covered: generators full/arange/eye, every map (cast, unary, binary, where), every reduce,
// argmax/argmin, matmul (equal ranks >= 2), reshape, permute, expand, slice, constrain, cat,
// write_region, gather, scatter, scatter_add. Not covered (the single-rank evaluator is their only
// reference): rand, randn, linspace, correlate, conv2d, the pools and the fused ops.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"

namespace tapestry::fuzz {

enum class NaiveResult { Match, Mismatch, Unsupported };

NaiveResult naive_check(const Node& n, std::string& why);

// Row-major values of any (strided) view, as doubles.
std::vector<double> to_doubles(const View& v);

}  // namespace tapestry::fuzz
