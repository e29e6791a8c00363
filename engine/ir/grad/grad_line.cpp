// Gradients of the Line ops, as torch's:
//   cumsum        gx = the reverse cumsum of g
//   cumprod       gx = revcumsum(g * y) / x          (exact where x has no zeros)
//   cummax/min    gx = g added at each output's running-extreme index (a scatter-add)
//   logcumsumexp  gx = e^(x + revlcse(log g+ - y)) - e^(x + revlcse(log g- - y)), g = g+ - g-
//   sort values   gx = g added back at each value's original index (topk: g padded with zeros)
//   fft           gx = the unnormalized transform of g the other way (F^H g); r2c: Re(F^H g, padded);
//                 c2r: the r2c of g, doubled where a frequency stands for itself and its mirror
// Indices (sort, cummax, searchsorted) are piecewise constant: no gradient, as argmax.
#include <optional>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/grad/grad.hpp"

namespace tapestry::grad_detail {

namespace {

using build::Operand;

NodeRef mul(const NodeRef& a, const NodeRef& b) { return build::binary(Op::Mul, a, b); }
NodeRef add(const NodeRef& a, const NodeRef& b) { return build::binary(Op::Add, a, b); }
NodeRef sub(const NodeRef& a, const NodeRef& b) { return build::binary(Op::Sub, a, b); }
NodeRef mul_number(const NodeRef& a, double v) { return build::binary(Op::Mul, a, Operand::number(v)); }

// e^(x + reverse-lcse(log(part) - y)) for a nonnegative part of g: log 0 = -inf adds nothing.
NodeRef lcse_part(const NodeRef& part, const NodeRef& x, const NodeRef& y, int dim, bool reverse) {
  const NodeRef inner = sub(build::unary(Op::Log, part), y);
  return build::unary(Op::Exp, add(x, build::scan(Op::Logcumsumexp, inner, dim, !reverse)));
}

}  // namespace

std::vector<NodeRef> line_vjp(const NodeRef& n, const NodeRef& g) {
  const LineAttrs a = attrs_of<LineAttrs>(*n);
  const int dim = static_cast<int>(a.dim);
  const NodeRef& x = n->inputs[0];
  std::vector<NodeRef> out(n->inputs.size());
  if (a.indices || n->op == Op::Searchsorted) return out;
  switch (n->op) {
    case Op::Cumsum: out[0] = build::scan(Op::Cumsum, g, dim, !a.reverse); return out;
    case Op::Cumprod:
      out[0] = build::binary(Op::Div, build::scan(Op::Cumsum, mul(g, n), dim, !a.reverse), x);
      return out;
    case Op::Cummax:
    case Op::Cummin:
      out[0] = build::line_scatter_add(g, build::scan_extreme(n->op, x, dim)[1], dim);
      return out;
    case Op::Logcumsumexp: {
      const NodeRef pos = build::unary(Op::Relu, g), neg = build::unary(Op::Relu, build::unary(Op::Neg, g));
      out[0] = sub(lcse_part(pos, x, n, dim, a.reverse), lcse_part(neg, x, n, dim, a.reverse));
      return out;
    }
    case Op::Sort: {
      // topk keeps the first k of the sort: the rest of the line gets no adjoint.
      NodeRef gl = g;
      if (n->shape[dim] < x->shape[dim]) {
        std::vector<int64_t> before(x->shape.size(), 0), after(x->shape.size(), 0);
        after[dim] = x->shape[dim] - n->shape[dim];
        gl = build::pad(g, before, after, build::PadMode::Constant, 0.0);
      }
      out[0] = build::line_scatter_add(gl, build::sort(x, dim, a.reverse)[1], dim);
      return out;
    }
    case Op::Fft:
      if (!is_complex(n->dtype)) {
        // c2r of X (h = len/2+1 frequencies) to len reals: y_j = Re sum_k c_k X_k w^(jk), with
        // c_k = 2 for the frequencies that stand for their mirror too (1 .. len-h) and 1 for X_0
        // (and X_(len/2) for an even len), so gX_k = c_k (F g)_k, F unnormalized: torch's rule.
        const int64_t len = n->shape[dim], h = x->shape[dim], twice = len - h;
        const NodeRef f = build::rfft(g, dim, std::nullopt, build::FftNorm::Backward);
        std::vector<NodeRef> parts{build::narrow(f, dim, 0, 1)};
        if (twice > 0) parts.push_back(mul_number(build::narrow(f, dim, 1, twice), 2));
        if (h - 1 - twice > 0) parts.push_back(build::narrow(f, dim, 1 + twice, h - 1 - twice));
        out[0] = parts.size() == 1 ? parts[0] : build::cat(parts, dim);
        return out;
      }
      if (!is_complex(x->dtype)) {
        // r2c: y = the first n/2+1 of F x, so gx = Re(F^H g padded with zeros to n).
        out[0] = build::unary(Op::Real, build::fft(g, dim, x->shape[dim], build::FftNorm::Forward, true));
        return out;
      }
      // y = F x is complex-linear, so gx = F^H g: the unnormalized transform the other way
      // (conj(F) is the unnormalized inverse). The norm that scales by 1 in that direction.
      out[0] = build::fft(g, dim, std::nullopt,
                          a.reverse ? build::FftNorm::Backward : build::FftNorm::Forward, !a.reverse);
      return out;
    default: user_error("the gradient of a gradient through ", op_def(n->op).name, " is not supported");
  }
}

}  // namespace tapestry::grad_detail
