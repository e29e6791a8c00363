// Vector-Jacobian rules for maps, reductions, views, cat and region writes.
//   map_vjp(exp_node, g, {true})  ->  {g * exp_node}
// Conventions (docs/gradients.md): relu'(0) = 0, |x|'(0) = 0; maximum/minimum and max/min
// reductions split the gradient evenly between tied operands, which is what a central
// difference measures; piecewise-constant ops (floor, round, sign, floordiv, comparisons)
// have zero gradient. Complex values follow torch: the adjoint of z is dL/d(re) + i dL/d(im), so
// a holomorphic f passes g·conj(f'(z)) (conj() is the identity on a real x, so each rule's
// real graph is what it was); real, imag, abs, angle and complex have rules of their own.
#include <cmath>
#include <numbers>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/grad/grad.hpp"

namespace tapestry::grad_detail {

namespace {

using build::Operand;
NodeRef add(const Operand& a, const Operand& b) { return build::binary(Op::Add, a, b); }
NodeRef sub(const Operand& a, const Operand& b) { return build::binary(Op::Sub, a, b); }
NodeRef mul(const Operand& a, const Operand& b) { return build::binary(Op::Mul, a, b); }
NodeRef div(const Operand& a, const Operand& b) { return build::binary(Op::Div, a, b); }
NodeRef un(Op op, const NodeRef& x) { return build::unary(op, x); }
NodeRef cj(const NodeRef& x) { return conj(x); }
NodeRef where(const NodeRef& c, const Operand& a, const Operand& b) { return build::where(c, a, b); }
Operand num(double v) { return Operand::number(v); }

// The share of g that goes to `a` of max(a, b) (or min, with `wins` = Lt): all of it where
// a wins, half where they tie.
NodeRef route(Op wins, const NodeRef& g, const NodeRef& a, const NodeRef& b) {
  return where(build::binary(wins, a, b), g, where(build::binary(Op::Eq, a, b), mul(g, num(0.5)), num(0)));
}

// Unary rules: dy/dx * g, with y the node itself where that is cheaper.
NodeRef unary_vjp(const NodeRef& n, const NodeRef& x, const NodeRef& g) {
  switch (n->op) {
    case Op::Cast:
      // float or complex to float or complex: the adjoint goes back to the source type (a real
      // source keeps the real part of a complex adjoint; a complex source of a real cast,
      // which kept the real part, gets g + 0i).
      return is_inexact(x->dtype) ? build::cast(g, x->dtype) : nullptr;
    case Op::Neg: return un(Op::Neg, g);
    case Op::Abs:
      if (is_complex(x->dtype))  // g·z/|z|, 0 at 0 (torch's sgn)
        return where(build::binary(Op::Eq, n, num(0)), num(0),
                     div(mul(build::cast(g, x->dtype), x), build::cast(n, x->dtype)));
      return mul(g, un(Op::Sign, x));
    case Op::Exp: return mul(g, cj(n));
    case Op::Log: return div(g, cj(x));
    case Op::Sqrt: return div(mul(g, num(0.5)), cj(n));
    case Op::Rsqrt:  // -x^(-3/2) / 2 = -y^3 / 2
      return mul(mul(g, num(-0.5)), mul(n, un(Op::Square, n)));
    case Op::Sin: return mul(g, cj(un(Op::Cos, x)));
    case Op::Cos: return un(Op::Neg, mul(g, cj(un(Op::Sin, x))));
    case Op::Tanh: return mul(g, sub(num(1), un(Op::Square, n)));
    case Op::Sigmoid: return mul(g, mul(n, sub(num(1), n)));
    // relu(x) > 0 exactly where x > 0 (NaN in both is not); reading the output leaves x
    // needed by relu alone, so the op that made x fuses into relu instead of being stored.
    case Op::Relu: return where(build::binary(Op::Gt, n, num(0)), g, num(0));
    case Op::Gelu: {
      // d/dx x·Phi(x) = Phi(x) + x·phi(x). There is no erf op, but Phi(x) = gelu(x)/x
      // away from 0 (and 1/2 at 0), and phi is a plain Gaussian.
      const NodeRef zero = build::binary(Op::Eq, x, num(0));
      const NodeRef cdf = where(zero, num(0.5), div(n, x));
      const NodeRef pdf =
          mul(un(Op::Exp, mul(un(Op::Square, x), num(-0.5))), num(1 / std::sqrt(2 * std::numbers::pi)));
      return mul(g, add(cdf, mul(x, pdf)));
    }
    case Op::Square: return mul(g, mul(cj(x), num(2)));
    case Op::Reciprocal: return un(Op::Neg, mul(g, cj(un(Op::Square, n))));
    // Complex parts (a real x never makes these nodes: its real and conj are x itself).
    case Op::Real: return build::cast(g, x->dtype);        // g + 0i
    case Op::Imag: return build::make_complex(num(0), g);  // 0 + i g
    case Op::Conj: return un(Op::Conj, g);
    case Op::Angle: {  // atan2(b, a): g·(-b + i a)/|z|^2 = g·i z/|z|^2, 0 at 0 (torch)
      const NodeRef re = build::complex_part(Op::Real, x), im = build::complex_part(Op::Imag, x);
      const NodeRef r2 = add(un(Op::Square, re), un(Op::Square, im));
      const NodeRef at0 = build::binary(Op::Eq, r2, num(0));
      const NodeRef s = div(g, r2);
      return build::make_complex(where(at0, num(0), un(Op::Neg, mul(s, im))), where(at0, num(0), mul(s, re)));
    }
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Sign:
    case Op::LogicalNot: return nullptr;
    default: internal_check(!"unary op without a gradient rule"); return nullptr;
  }
}

}  // namespace

std::vector<NodeRef> map_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need) {
  std::vector<NodeRef> out(n->inputs.size());
  if (n->inputs.size() == 1) {
    out[0] = unary_vjp(n, n->inputs[0], g);
    return out;
  }
  const NodeRef& a = n->inputs[0];
  const NodeRef& b = n->inputs[1];
  auto set = [&](size_t i, auto&& f) {
    if (need[i]) out[i] = f();
  };
  switch (n->op) {
    case Op::Add:
      set(0, [&] { return g; });
      set(1, [&] { return g; });
      break;
    case Op::Sub:
      set(0, [&] { return g; });
      set(1, [&] { return un(Op::Neg, g); });
      break;
    case Op::Mul:
      set(0, [&] { return mul(g, cj(b)); });
      set(1, [&] { return mul(g, cj(a)); });
      break;
    case Op::Div:
      set(0, [&] { return div(g, cj(b)); });
      set(1, [&] { return un(Op::Neg, div(mul(g, cj(n)), cj(b))); });
      break;
    case Op::Complex:  // re + i im: the parts of g
      set(0, [&] { return build::complex_part(Op::Real, g); });
      set(1, [&] { return build::complex_part(Op::Imag, g); });
      break;
    case Op::Mod:  // a - floor(a/b)·b: 1 for a, -floor(a/b) for b
      set(0, [&] { return g; });
      set(1, [&] { return un(Op::Neg, mul(g, un(Op::Floor, div(a, b)))); });
      break;
    case Op::FloorDiv: break;  // piecewise constant
    case Op::Pow:
      set(0, [&] { return mul(mul(g, cj(b)), cj(build::binary(Op::Pow, a, sub(b, num(1))))); });
      // d(a^b)/db = a^b·log(a); 0 where a == 0 (the limit for b > 0), as Torch.
      set(1, [&] {
        return where(build::binary(Op::Eq, a, num(0)), num(0), mul(mul(g, cj(n)), cj(un(Op::Log, a))));
      });
      break;
    case Op::Maximum:
      set(0, [&] { return route(Op::Gt, g, a, b); });
      set(1, [&] { return route(Op::Gt, g, b, a); });
      break;
    case Op::Minimum:
      set(0, [&] { return route(Op::Lt, g, a, b); });
      set(1, [&] { return route(Op::Lt, g, b, a); });
      break;
    case Op::Atan2: {  // atan2(a, b): (b, -a) / (a^2 + b^2)
      const NodeRef r2 = add(un(Op::Square, a), un(Op::Square, b));
      set(0, [&] { return div(mul(g, b), r2); });
      set(1, [&] { return un(Op::Neg, div(mul(g, a), r2)); });
      break;
    }
    case Op::Where: {
      const NodeRef& c = n->inputs[0];
      if (need[1]) out[1] = where(c, g, num(0));
      if (need[2]) out[2] = where(c, num(0), g);
      break;
    }
    default: break;  // comparisons and logic: bool results, never reached with an adjoint
  }
  return out;
}

std::vector<NodeRef> reduce_vjp(const NodeRef& n, const NodeRef& g) {
  const NodeRef& x = n->inputs[0];
  if (!is_inexact(n->dtype) || !is_inexact(x->dtype)) return {nullptr};
  const std::vector<int> dims = attrs_of<ReduceAttrs>(*n).dims;
  Shape kept = x->shape;  // the output with reduced dims kept as 1
  for (int d : dims) kept[d] = 1;
  auto back = [&](const NodeRef& v) { return build::broadcast_to(build::reshape(v, kept), x->shape); };
  const NodeRef gb = back(g);
  switch (n->op) {
    case Op::Sum: return {gb};
    case Op::Prod: {
      // Exact with zeros: the gradient at x_i is the product of the others. With no zero it
      // is prod/x_i; with one zero only that zero gets the product of the rest; with two or
      // more every gradient is 0.
      const NodeRef is0 = build::binary(Op::Eq, x, num(0));
      const NodeRef nonzero = build::reduce(Op::Prod, where(is0, num(1), x), dims, true);
      const NodeRef zeros = build::reduce(Op::Sum, build::cast(is0, x->dtype), dims, true);
      const NodeRef pz = build::broadcast_to(nonzero, x->shape);
      const NodeRef nz = build::broadcast_to(zeros, x->shape);
      const NodeRef at0 = where(build::binary(Op::Eq, nz, num(1)), pz, num(0));
      const NodeRef other = where(build::binary(Op::Eq, nz, num(0)), div(pz, x), num(0));
      return {mul(gb, cj(where(is0, at0, other)))};
    }
    case Op::Max:
    case Op::Min: {
      // Ties split evenly among the positions holding the extremum.
      const NodeRef hit = build::binary(Op::Eq, x, back(n));
      const NodeRef count = build::reduce(Op::Sum, build::cast(hit, x->dtype), dims, true);
      return {where(hit, div(gb, build::broadcast_to(count, x->shape)), num(0))};
    }
    default: return {nullptr};  // all / any: bool
  }
}

std::vector<NodeRef> view_vjp(const NodeRef& n, const NodeRef& g) {
  const NodeRef& x = n->inputs[0];
  switch (n->op) {
    case Op::Reshape: return {build::reshape(g, x->shape)};
    case Op::Permute: {
      const std::vector<int> perm = attrs_of<PermuteAttrs>(*n).perm;
      std::vector<int> inv(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int>(i);
      return {build::permute(g, inv)};
    }
    case Op::Expand: return {sum_to(g, x->shape)};
    case Op::Constrain:
    case Op::Declare: return {g};
    case Op::Slice: {
      const SliceAttrs a = attrs_of<SliceAttrs>(*n);
      return {scatter_slice(g, x->shape, a.starts, a.steps)};
    }
    case Op::Cat: {
      const int d = attrs_of<CatAttrs>(*n).dim;
      std::vector<NodeRef> out;
      int64_t at = 0;
      for (const NodeRef& in : n->inputs) {
        out.push_back(is_inexact(in->dtype) ? build::narrow(g, d, at, in->shape[d]) : nullptr);
        at += in->shape[d];
      }
      return out;
    }
    case Op::WriteRegion: {
      // The base keeps g outside the box; the value (already of the box's shape) gets the box.
      const NodeRef& v = n->inputs[1];
      const std::vector<int64_t> start = attrs_of<WriteAttrs>(*n).start;
      const NodeRef base = build::write_region(g, start, v->shape, num(0));
      const std::vector<int64_t> ones(start.size(), 1);
      return {base, build::slice(g, start, ones, v->shape)};
    }
    default: internal_check(!"view op without a gradient rule"); return {};
  }
}

}  // namespace tapestry::grad_detail
