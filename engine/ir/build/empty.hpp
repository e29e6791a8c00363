// Empty tensors (a size-0 dim) in the graph: an op whose result has no element becomes the
// constant Full of its shape, so nothing downstream ever computes over an empty index space.
//   NodeRef y = op_node(Op::Add, {a, b}, Attrs{}, {0, 3}, DType::F32);  // Full {0,3}, no inputs
// Builders fold the ops that read an empty input into a non-empty result themselves (sum to 0,
// prod to 1, matmul with k = 0 to zeros, cat drops empty parts) before calling op_node.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::build {

inline bool is_empty(const Shape& s) {
  for (int64_t d : s)
    if (d == 0) return true;
  return false;
}

// make_node for an op with inputs. An empty result is the constant Full {shape} (its value
// cannot depend on the inputs). An empty input feeding a non-empty result is refused with an
// Error naming the op and the shapes: every builder that numpy or torch gives a meaning for
// that case folds it first, so what reaches here has none in Tapestry.
NodeRef op_node(Op op, std::vector<NodeRef> inputs, Attrs attrs, Shape shape, DType dtype);

}  // namespace tapestry::build
