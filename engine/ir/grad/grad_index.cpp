// Gradients of gather and scatter, as torch's (the index itself has none):
//   gather y = x[index]:           gx = scatter_add(zeros(x), index, g)
//   scatter_add y = x + P(src):    gx = g,                                gsrc = gather(g, index)
//   scatter y = x with P(src) put: gx = g with the written places zeroed, gsrc = gather(g, index)
// take, index_select and the masked reads and writes are built from these, so their gradients
// (index_add, masked scatter) follow.
#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/grad/grad.hpp"

namespace tapestry::grad_detail {

std::vector<NodeRef> index_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need) {
  std::vector<NodeRef> out(n->inputs.size());
  if (n->op == Op::Nonzero) return out;  // integer positions: piecewise constant
  const IndexAttrs a = attrs_of<IndexAttrs>(*n);
  const NodeRef& x = n->inputs[0];
  const NodeRef& index = n->inputs[1];
  if (n->op == Op::Gather) {
    if (need[0])
      out[0] = build::scatter(Op::ScatterAdd, build::full(x->shape, 0, g->dtype), a.dim, index, g, a.fn);
    return out;
  }
  if (need[0])
    out[0] = n->op == Op::ScatterAdd
                 ? g
                 : build::scatter(Op::Scatter, g, a.dim, index, build::Operand::integer_number(0), a.fn);
  if (need[2]) out[2] = build::gather(g, a.dim, index, a.fn);
  return out;
}

}  // namespace tapestry::grad_detail
