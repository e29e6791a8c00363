// Row-major reshape as groups of dims whose cumulative products align.
//   reshape_groups({4, 6}, {2, 2, 6})  // {in {0} -> out {0, 1}}, {in {1} -> out {2}}
//   reshape_groups({2, 3}, {3, 2})     // one group with no common factors: no dim of it splits
//   reshape_groups({1, 6}, {6})        // size-1 dims join no group: they are always [0..0]
// Within a group, when the cumulative products of both sides divide one another in a chain,
// both sides are products of the same factors ({4,6} -> {2,12} is {2,2,6} -> {2,2*6}): each
// factor is an index dim and both projections are affine (row-major strides). Otherwise
// ({2,3} -> {3,2}) the group is one index dim that no block may split.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/ir/shape.hpp"

namespace tapestry::poly {

struct ReshapeGroup {
  std::vector<int> in_dims;   // consecutive dims of the input, all of size > 1
  std::vector<int> out_dims;  // consecutive dims of the output, same element count
  // The common refinement, outer to inner; empty when there is none.
  std::vector<int64_t> factors;
  // Per dim of in_dims / out_dims: its factors [first, last] (when factors is not empty).
  std::vector<std::pair<int, int>> in_runs, out_runs;
};

// The minimal groups, in order; internal error if the element counts differ.
std::vector<ReshapeGroup> reshape_groups(const Shape& in, const Shape& out);

}  // namespace tapestry::poly
