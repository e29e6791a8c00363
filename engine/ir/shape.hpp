// Shapes, strides and dimension arguments (1-based at the Lua surface, 0-based here).
//   Shape s{3, 4};  numel(s) == 12;  shape_str(s) == "{3,4}"
//   Shape b = broadcast_shapes(s, Shape{4});    // {3,4}, or throws Error
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tapestry {

using Shape = std::vector<int64_t>;

// The most dims a tensor may have: numpy's NPY_MAXDIMS, and what tp.load reads. Every creator,
// reshape and builder (make_node) holds to it, so nothing recurses over thousands of dims.
inline constexpr int kMaxDims = 64;
using Strides = std::vector<int64_t>;  // in elements, may be 0 (broadcast) or negative

int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "{3,4}", "{}" for a scalar
Strides contiguous_strides(const Shape& s);

// numpy broadcasting of two shapes; throws Error naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);
bool broadcastable_to(const Shape& from, const Shape& to);

// Normalizes a 1-based (negative from the end) dimension of a rank-`rank` tensor
// to 0-based; throws Error "dimension 5 out of range for a 2-D tensor" otherwise.
int normalize_dim(int64_t d, int rank);

}  // namespace tapestry
