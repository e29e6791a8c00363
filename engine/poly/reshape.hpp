// Row-major reshape as groups of dims whose cumulative products align.
//   reshape_groups({4, 6}, {2, 2, 6})  // {in {0} -> out {0, 1}}, {in {1} -> out {2}}
//   reshape_groups({2, 3}, {3, 2})     // one group {0, 1} -> {0, 1}: no dim of it can be split
//   reshape_groups({1, 6}, {6})        // size-1 dims join no group: they are always [0..0]
// signature_of(Reshape) turns each group into index dims: where one side of a group is a
// single dim the space takes the finer side's dims (an affine map, row-major strides); where
// both sides have several dims the group is one index dim that no block may split.
#pragma once

#include <vector>

#include "engine/ir/shape.hpp"

namespace tapestry::poly {

struct ReshapeGroup {
  std::vector<int> in_dims;   // consecutive dims of the input, all of size > 1
  std::vector<int> out_dims;  // consecutive dims of the output, same element count
};

// The minimal groups, in order; internal error if the element counts differ.
std::vector<ReshapeGroup> reshape_groups(const Shape& in, const Shape& out);

}  // namespace tapestry::poly
