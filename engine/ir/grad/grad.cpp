// Reverse accumulation: order the loss's graph, keep the nodes that lie on a path to a param,
// then walk it backwards summing each node's adjoint and handing it to the node's rule.
#include "engine/ir/grad/grad.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

// Postorder (inputs before users) of everything `root` reaches, with an explicit stack:
// a chain of 10^5 nodes must not overflow the C++ stack.
std::vector<const Node*> topo_order(const NodeRef& root) {
  std::vector<const Node*> order;
  std::unordered_map<const Node*, bool> seen;  // true once emitted
  std::vector<std::pair<const Node*, size_t>> stack{{root.get(), 0}};
  seen[root.get()] = false;
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->inputs.size()) {
      const Node* in = n->inputs[next++].get();
      if (seen.emplace(in, false).second) stack.push_back({in, 0});
      continue;
    }
    order.push_back(n);
    seen[n] = true;
    stack.pop_back();
  }
  return order;
}

NodeRef accumulate(const NodeRef& sum, const NodeRef& term) {
  if (!sum) return term;
  return build::binary(Op::Add, sum, term);
}

}  // namespace

std::vector<NodeRef> vjp_inputs(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need) {
  using namespace grad_detail;
  switch (op_kind(n->op)) {
    case OpKind::Source:
    case OpKind::Generate:
    case OpKind::ArgReduce: return std::vector<NodeRef>(n->inputs.size());
    case OpKind::Map: return map_vjp(n, g, need);
    case OpKind::Reduce: return reduce_vjp(n, g);
    case OpKind::Matmul: {
      // Batch dims were broadcast by explicit Expand nodes, so both operands have g's batch.
      const int r = static_cast<int>(g->shape.size());
      std::vector<NodeRef> out(2);
      // Complex: g·b^H and a^H·g (the conjugate transposes).
      if (need[0]) out[0] = build::matmul(g, build::transpose(grad_detail::conj(n->inputs[1]), r - 2, r - 1));
      if (need[1]) out[1] = build::matmul(build::transpose(grad_detail::conj(n->inputs[0]), r - 2, r - 1), g);
      return out;
    }
    case OpKind::View:
    case OpKind::Cat:
    case OpKind::Write: return view_vjp(n, g);
    case OpKind::Window: return window_vjp(n, g, need);
    case OpKind::Line: return line_vjp(n, g);
    case OpKind::Index: return index_vjp(n, g, need);
    case OpKind::Linalg: return linalg_vjp(n, g, need);
    case OpKind::Fused: break;
  }
  // Fusion builds its own graph from a copy; a user graph never holds a fused node.
  internal_check(!"a fused node in a graph being differentiated");
  return {};
}

namespace {

std::vector<NodeRef> grad_of(const NodeRef& loss, const std::vector<NodeRef>& params) {
  user_check(numel(loss->shape) == 1, "the loss must be a scalar (one element), got shape ",
             shape_str(loss->shape), "; reduce it first, e.g. loss:sum() or loss:mean()");
  user_check(is_float(loss->dtype), "the loss must be a real float (f16, bf16, f32, f64), got ",
             dtype_name(loss->dtype));
  std::unordered_map<const Node*, int> param_index;
  for (size_t i = 0; i < params.size(); ++i) {
    const NodeRef& p = params[i];
    user_check(is_inexact(p->dtype), "params[", i + 1, "] is ", dtype_name(p->dtype),
               ": only float and complex tensors (f16, bf16, f32, f64, c64, c128) are differentiable");
    user_check(p->op != Op::Full, "params[", i + 1, "] ", shape_str(p->shape),
               " is a constant (tp.zeros/ones/full), which the graph folds into its users; make "
               "it a leaf first: tp.env.b = tp.detach(tp.zeros{...})");
    param_index.emplace(p.get(), static_cast<int>(i));
  }

  const std::vector<const Node*> order = topo_order(loss);
  std::unordered_map<const Node*, size_t> pos;
  pos.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  // needed[i]: node i is float or complex and a param lies at or below it (inputs come first
  // in order). A complex adjoint is torch's: dL/d(re) + i dL/d(im) (docs/gradients.md).
  std::vector<bool> needed(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    const Node* n = order[i];
    if (!is_inexact(n->dtype)) continue;
    bool need = param_index.count(n) > 0;
    for (const NodeRef& in : n->inputs) need = need || needed[pos[in.get()]];
    needed[i] = need;
  }

  std::vector<NodeRef> adjoint(order.size());
  if (needed.back()) adjoint.back() = build::full(loss->shape, 1.0, loss->dtype);
  for (size_t i = order.size(); i-- > 0;) {
    const Node* n = order[i];
    if (!adjoint[i] || n->inputs.empty()) continue;
    std::vector<bool> need(n->inputs.size());
    bool any = false;
    for (size_t k = 0; k < need.size(); ++k) any |= (need[k] = needed[pos[n->inputs[k].get()]]);
    if (!any) continue;
    const std::vector<NodeRef> gin = vjp_inputs(n->shared_from_this(), adjoint[i], need);
    internal_check(gin.size() == n->inputs.size());
    for (size_t k = 0; k < gin.size(); ++k) {
      if (!need[k] || !gin[k]) continue;
      const NodeRef& in = n->inputs[k];
      internal_check(gin[k]->shape == in->shape && gin[k]->dtype == in->dtype);
      size_t& slot = pos[in.get()];
      adjoint[slot] = accumulate(adjoint[slot], gin[k]);
    }
    // A param keeps its adjoint for the result (and passes it on, for a param below it);
    // any other adjoint is done with, so a long chain holds one at a time.
    if (!param_index.count(n)) adjoint[i] = nullptr;
  }

  std::vector<NodeRef> out;
  for (const NodeRef& p : params) {
    auto it = pos.find(p.get());
    NodeRef g = it == pos.end() ? nullptr : adjoint[it->second];
    out.push_back(g ? g : build::full(p->shape, 0.0, p->dtype));
  }
  return out;
}

}  // namespace

std::vector<NodeRef> grad(const NodeRef& loss, const std::vector<NodeRef>& params) {
  // A param that is a packed tensor's unpack (a declared named tensor, engine/ir/build/packed.hpp)
  // is read by the ops that exploit its properties through its P, not through it: its gradient
  // is P's, spread back (the projection onto its declared structure).
  std::vector<std::optional<build::Unpacked>> packed(params.size());
  std::vector<size_t> at(params.size(), 0);
  std::vector<NodeRef> all = params;
  for (size_t i = 0; i < params.size(); ++i)
    if (is_inexact(params[i]->dtype) && (packed[i] = build::unpacked(params[i]))) {
      at[i] = all.size();
      all.push_back(packed[i]->p);
    }
  std::vector<NodeRef> g = grad_of(loss, all);
  for (size_t i = 0; i < params.size(); ++i)
    if (packed[i]) g[i] = build::spread(g[at[i]], packed[i]->pk);
  g.resize(params.size());
  return g;
}

namespace grad_detail {

NodeRef sum_to(const NodeRef& g, const Shape& shape) {
  if (g->shape == shape) return g;
  const size_t lead = g->shape.size() - shape.size();
  std::vector<int> dims;
  for (size_t d = 0; d < g->shape.size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) dims.push_back(static_cast<int>(d));
  return build::reshape(build::reduce(Op::Sum, g, dims, false), shape);
}

NodeRef scatter_slice(const NodeRef& g, const Shape& shape, const std::vector<int64_t>& start,
                      const std::vector<int64_t>& step) {
  // A negative step reads the rows backwards: flip g there, and scatter from the lowest row.
  std::vector<int> back;
  std::vector<int64_t> lo = start, up = step;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (step[d] > 0) continue;
    back.push_back(static_cast<int>(d));
    lo[d] = start[d] + (g->shape[d] - 1) * step[d];
    up[d] = -step[d];
  }
  NodeRef v = back.empty() ? g : build::flip(g, back);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (up[d] == 1 || v->shape[d] == 1) continue;
    // {.., c, ..} -> {.., c, 1, ..} -> pad to {.., c, s, ..} -> {.., c*s, ..} -> drop the tail.
    const int dd = static_cast<int>(d);
    const int64_t c = v->shape[d];
    NodeRef u = build::unsqueeze(v, dd + 1);
    std::vector<int64_t> before(u->shape.size(), 0), after(u->shape.size(), 0);
    after[d + 1] = up[d] - 1;
    u = build::pad(u, before, after, build::PadMode::Constant, 0);
    Shape flat = v->shape;
    flat[d] = c * up[d];
    v = build::narrow(build::reshape(u, flat), dd, 0, (c - 1) * up[d] + 1);
  }
  if (v->shape == shape) return v;
  return build::write_region(build::full(shape, 0.0, g->dtype), lo, v->shape, v);
}

NodeRef flip(const NodeRef& x, int d) { return build::flip(x, {d}); }

NodeRef conj(const NodeRef& x) { return is_complex(x->dtype) ? build::unary(Op::Conj, x) : x; }

}  // namespace grad_detail

}  // namespace tapestry
