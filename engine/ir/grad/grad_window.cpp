// Vector-Jacobian rules for the window ops, built from the window ops themselves:
//   correlate:  dx = correlate(g, flipped k),  dk = correlate(x, g)
//   conv2d:     dx = a stride-1 conv of the zero-dilated g with the flipped, transposed w;
//               dw = a conv of x by g with batch and channels swapped (stride <-> dilation)
//   maxpool2d:  g routed to the window's maxima (ties split evenly); avgpool2d: a transposed
//               conv with a constant kernel
// So a gradient shards and runs on the same kernels as the forward pass.
#include <cmath>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/grad/grad.hpp"

namespace tapestry::grad_detail {

namespace {

using build::Operand;

NodeRef pad_zero(const NodeRef& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                 double value = 0) {
  for (size_t d = 0; d < before.size(); ++d)
    if (before[d] || after[d]) return build::pad(x, before, after, build::PadMode::Constant, value);
  return x;
}

NodeRef correlate_grad_x(const NodeRef& n, const NodeRef& g) {
  const NodeRef& k = n->inputs[1];
  const size_t r = k->shape.size();
  const CorrelateAttrs a = attrs_of<CorrelateAttrs>(*n);
  NodeRef kf = k;
  std::vector<int64_t> before(r), after(r);
  for (size_t d = 0; d < r; ++d) {
    kf = flip(kf, static_cast<int>(d));
    before[d] = k->shape[d] - 1 - a.pad_before[d];
    after[d] = k->shape[d] - 1 - a.pad_after[d];
  }
  return build::correlate(g, kf, before, after);
}

NodeRef correlate_grad_k(const NodeRef& n, const NodeRef& g) {
  const NodeRef& x = n->inputs[0];
  const size_t r = x->shape.size();
  const auto [before, after] = attrs_of<CorrelateAttrs>(*n);
  bool fits = true;  // the op's own padding must be narrower than its kernel (here g)
  for (size_t d = 0; d < r; ++d) fits = fits && before[d] < g->shape[d] && after[d] < g->shape[d];
  if (fits) return build::correlate(x, g, before, after);
  const std::vector<int64_t> none(r, 0);
  return build::correlate(pad_zero(x, before, after), g, none, none);
}

// dx of a convolution c, given wt {C, O/groups, KH, KW}: w transposed per group and flipped.
NodeRef conv_grad_x(const NodeRef& g, const NodeRef& wt, const Shape& xs, const Conv2dAttrs& c) {
  const auto& [stride, pad, dil, groups] = c;
  const Shape& gs = g->shape;
  // g with stride-1 zeros between its samples: {N, O, (OH-1)s+1, (OW-1)s+1}.
  const Shape dilated{gs[0], gs[1], (gs[2] - 1) * stride[0] + 1, (gs[3] - 1) * stride[1] + 1};
  NodeRef gd = scatter_slice(g, dilated, {0, 0, 0, 0}, {1, 1, stride[0], stride[1]});
  std::vector<int64_t> before{0, 0, 0, 0}, after{0, 0, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t k = wt->shape[2 + i], span = dil[i] * (k - 1) + 1;
    const int64_t rem = (xs[2 + i] + 2 * pad[i] - span) % stride[i];  // rows the stride skipped
    before[2 + i] = dil[i] * (k - 1) - pad[i];
    after[2 + i] = before[2 + i] + rem;
  }
  build::Conv2dOptions o;
  o.dilation[0] = dil[0];
  o.dilation[1] = dil[1];
  o.groups = groups;
  return build::conv2d(pad_zero(gd, before, after), wt, o);
}

std::vector<NodeRef> conv2d_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need) {
  const NodeRef& x = n->inputs[0];
  const NodeRef& w = n->inputs[1];
  const Conv2dAttrs c = attrs_of<Conv2dAttrs>(*n);
  const auto& [stride, pad, dil, G] = c;
  const int64_t O = w->shape[0], Cg = w->shape[1], KH = w->shape[2], KW = w->shape[3];
  std::vector<NodeRef> out(2);
  if (need[0]) {
    NodeRef wt = build::reshape(w, {G, O / G, Cg, KH, KW});
    wt = build::reshape(build::permute(wt, {0, 2, 1, 3, 4}), {G * Cg, O / G, KH, KW});
    out[0] = conv_grad_x(g, flip(flip(wt, 2), 3), x->shape, c);
  }
  if (need[1]) {
    // dw[o,c,kh,kw] = sum_{n,i,j} g[n,o,i,j] xp[n,c,i*s+kh*d,j*s+kw*d]: a conv over the batch.
    const NodeRef xp = pad_zero(x, {0, 0, pad[0], pad[1]}, {0, 0, pad[0], pad[1]});
    build::Conv2dOptions o;
    for (int i = 0; i < 2; ++i) {
      o.stride[i] = dil[i];
      o.dilation[i] = stride[i];
    }
    std::vector<NodeRef> parts;
    for (int64_t gi = 0; gi < G; ++gi) {
      const NodeRef xg = build::permute(build::narrow(xp, 1, gi * Cg, Cg), {1, 0, 2, 3});
      const NodeRef gg = build::permute(build::narrow(g, 1, gi * (O / G), O / G), {1, 0, 2, 3});
      NodeRef dw = build::conv2d(xg, gg, o);  // {Cg, O/G, >= KH, >= KW}
      dw = build::slice(dw, {0, 0, 0, 0}, {1, 1, 1, 1}, {Cg, O / G, KH, KW});
      parts.push_back(build::permute(dw, {1, 0, 2, 3}));
    }
    out[1] = build::cat(parts, 0);
  }
  return out;
}

NodeRef maxpool_grad(const NodeRef& n, const NodeRef& g) {
  const NodeRef& x = n->inputs[0];
  const auto [kernel, stride, pad] = attrs_of<PoolAttrs>(*n);
  const NodeRef xp = pad_zero(x, {0, 0, pad[0], pad[1]}, {0, 0, pad[0], pad[1]}, -INFINITY);
  const std::vector<int64_t> step{1, 1, stride[0], stride[1]};
  std::vector<NodeRef> hits;
  std::vector<std::vector<int64_t>> starts;
  NodeRef count;
  for (int64_t i = 0; i < kernel[0]; ++i) {
    for (int64_t j = 0; j < kernel[1]; ++j) {
      starts.push_back({0, 0, i, j});
      const NodeRef patch = build::slice(xp, starts.back(), step, n->shape);
      hits.push_back(build::binary(Op::Eq, patch, n));
      const NodeRef c = build::cast(hits.back(), n->dtype);
      count = count ? build::binary(Op::Add, count, c) : c;
    }
  }
  // Every window position adds its share of g where it holds the maximum.
  const NodeRef share = build::binary(Op::Div, g, count);
  NodeRef dxp;
  for (size_t k = 0; k < hits.size(); ++k) {
    const NodeRef part = build::where(hits[k], share, Operand::number(0));
    const NodeRef s = scatter_slice(part, xp->shape, starts[k], step);
    dxp = dxp ? build::binary(Op::Add, dxp, s) : s;
  }
  if (dxp->shape == x->shape) return dxp;
  return build::slice(dxp, {0, 0, pad[0], pad[1]}, {1, 1, 1, 1}, x->shape);
}

NodeRef avgpool_grad(const NodeRef& n, const NodeRef& g) {
  const NodeRef& x = n->inputs[0];
  const PoolAttrs p = attrs_of<PoolAttrs>(*n);
  const int64_t C = x->shape[1], KH = p.kernel[0], KW = p.kernel[1];
  // avgpool = a depthwise conv with the constant kernel 1/(kh·kw) (padding counted).
  const NodeRef wt = build::full({C, 1, KH, KW}, 1.0 / static_cast<double>(KH * KW), g->dtype);
  return conv_grad_x(g, wt, x->shape, Conv2dAttrs{p.stride, p.padding, {1, 1}, C});
}

}  // namespace

std::vector<NodeRef> window_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need) {
  switch (n->op) {
    case Op::Correlate: {
      std::vector<NodeRef> out(2);
      if (need[0]) out[0] = correlate_grad_x(n, g);
      if (need[1]) out[1] = correlate_grad_k(n, g);
      return out;
    }
    case Op::Conv2d: return conv2d_vjp(n, g, need);
    case Op::MaxPool2d: return {maxpool_grad(n, g)};
    case Op::AvgPool2d: return {avgpool_grad(n, g)};
    default: internal_check(!"window op without a gradient rule"); return {};
  }
}

}  // namespace tapestry::grad_detail
