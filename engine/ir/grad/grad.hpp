// Reverse-mode gradients over the expression graph: the gradient is more lazy graph.
//   std::vector<NodeRef> g = grad(loss, {w, b});   // g[0] has w's shape and dtype
//   observe_values(session, {g[0], g[1]});           // fused, planned, sharded like any graph
//   NodeRef dx = vjp_inputs(node, g_out)[0];        // one op's vector-Jacobian product
// Every differentiable op has a rule (grad_rules.cpp: maps, reductions, views, matmul;
// grad_window.cpp: correlate, conv2d, pools). Each rule is built from the ordinary builders,
// so a gradient is an expression like any other and nothing here computes a value.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

// The gradients of `loss` (one element, float) with respect to each param, in order, by
// reverse accumulation over the DAG (iterative: graphs of any depth). A param the loss
// does not depend on gets zeros. A complex param (or complex value on the way) gets torch's
// adjoint dL/d(re) + i dL/d(im), so w - lr·g descends. Errors (tapestry::Error): a loss of more
// than one element or not a real float; an integer/bool param; a param that is a folded constant
// (Full: tp.zeros/ones/full), which the graph does not keep as a node of its own.
std::vector<NodeRef> grad(const NodeRef& loss, const std::vector<NodeRef>& params);

// The adjoint of each input of `n` given the adjoint `g` of its output (n's shape and dtype);
// nullptr where an input gets no gradient (integer or bool inputs, piecewise-constant ops,
// condition operands). `need[i]` false skips input i (it does not depend on a param).
std::vector<NodeRef> vjp_inputs(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need);

namespace grad_detail {
// The rules by family; vjp_inputs dispatches on the op kind.
std::vector<NodeRef> map_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need);
std::vector<NodeRef> reduce_vjp(const NodeRef& n, const NodeRef& g);
std::vector<NodeRef> view_vjp(const NodeRef& n, const NodeRef& g);
std::vector<NodeRef> window_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need);
std::vector<NodeRef> line_vjp(const NodeRef& n, const NodeRef& g);
std::vector<NodeRef> index_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need);
std::vector<NodeRef> linalg_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need);
// g (a box of `shape` at `start` with `step`) scattered into zeros of `shape`: the adjoint of
// a slice. Strided dims interleave zeros first, so it needs only pads and a region write.
NodeRef scatter_slice(const NodeRef& g, const Shape& shape, const std::vector<int64_t>& start,
                      const std::vector<int64_t>& step);
// g summed down to `shape` (which broadcasts to g's shape): the adjoint of a broadcast.
NodeRef sum_to(const NodeRef& g, const Shape& shape);
// x reversed along dim d (build::flip: a slice with step -1).
NodeRef flip(const NodeRef& x, int d);
// The complex conjugate of x; x itself when it is real. A complex rule multiplies g by the
// conjugate of the derivative (torch's convention), which this keeps the real rule's graph for
// real x.
NodeRef conj(const NodeRef& x);
}  // namespace grad_detail

}  // namespace tapestry
