#include "engine/ir/build/empty.hpp"

#include <string>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

NodeRef op_node(Op op, std::vector<NodeRef> inputs, Attrs attrs, Shape shape, DType dtype) {
  // Why fold rather than run: an empty result has no value to compute, and keeping empty index
  // spaces out of the graph means the planner, the cost model and every kernel keep their
  // invariant that a block has at least one point.
  if (is_empty(shape))
    return make_node(Op::Full, {}, FullAttrs{dtype, 0, 0}.encode(), std::move(shape), dtype);
  for (const NodeRef& in : inputs)
    if (is_empty(in->shape)) {
      std::string ins;
      for (const NodeRef& i : inputs) ins += (ins.empty() ? "" : ", ") + shape_str(i->shape);
      user_error(op_def(op).name, " of the empty tensor ", shape_str(in->shape), " (inputs ", ins,
                 ") into a non-empty result ", shape_str(shape), " is not supported");
    }
  return make_node(op, std::move(inputs), std::move(attrs), std::move(shape), dtype);
}

}  // namespace tapestry::build
