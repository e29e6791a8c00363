// Gradients of the LAPACK ops, as torch's (Giles, "Collected matrix derivative results"):
//   solve  X = A^-1 B:   gB = A^-T g,  gA = -gB X^T
//   det    d = |A|:      gA = g d A^-T
//   slogdet (s, l):      gA = g_l A^-T   (the sign is piecewise constant)
//   cholesky A = L L^T:  gA = sym(L^-T Phi(L^T g) L^-1), Phi = lower triangle, diagonal halved
// qr, svd and eigh have none yet: tp.grad says so instead of returning zeros.
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/grad/grad.hpp"

namespace tapestry::grad_detail {

namespace {

using build::Operand;

NodeRef mT(const NodeRef& x) {
  const int r = static_cast<int>(x->shape.size());
  return build::transpose(x, r - 2, r - 1);
}

// g of shape batch, as {batch, 1, 1}: it then broadcasts over each matrix.
NodeRef per_matrix(const NodeRef& g) {
  const int r = static_cast<int>(g->shape.size());
  return build::unsqueeze(build::unsqueeze(g, r), r + 1);
}

// {n, n} weights of Phi: 1 below the diagonal, 1/2 on it, 0 above.
NodeRef phi_weights(int64_t n, DType t) {
  const NodeRef i = build::reshape(build::arange_int(0, n - 1, 1, DType::I64), {n, 1});
  const NodeRef j = build::reshape(build::arange_int(0, n - 1, 1, DType::I64), {1, n});
  const NodeRef below = build::cast(build::binary(Op::Gt, i, j), t);
  const NodeRef diag = build::cast(build::binary(Op::Eq, i, j), t);
  return build::binary(Op::Add, below, build::binary(Op::Mul, diag, Operand::number(0.5)));
}

}  // namespace

std::vector<NodeRef> linalg_vjp(const NodeRef& n, const NodeRef& g, const std::vector<bool>& need) {
  const NodeRef& a = n->inputs[0];
  std::vector<NodeRef> out(n->inputs.size());
  switch (n->op) {
    case Op::CheckDeclared: out[0] = g; return out;  // an identity
    case Op::Solve: {
      const NodeRef gb = build::solve(mT(a), g);
      if (need.size() > 1 && need[1]) out[1] = gb;
      if (need[0]) out[0] = build::unary(Op::Neg, build::matmul(gb, mT(n)));
      return out;
    }
    case Op::Det:
      out[0] = build::binary(Op::Mul, per_matrix(build::binary(Op::Mul, g, n)), mT(build::inv(a)));
      return out;
    case Op::Slogdet: {
      const int last = static_cast<int>(g->shape.size()) - 1;
      out[0] = build::binary(Op::Mul, per_matrix(build::select(g, last, 1)), mT(build::inv(a)));
      return out;
    }
    case Op::Cholesky: {
      const NodeRef p =
          build::binary(Op::Mul, build::matmul(mT(n), g), phi_weights(a->shape.back(), g->dtype));
      const NodeRef y = build::solve(mT(n), p);          // L^-T P
      const NodeRef s = mT(build::solve(mT(n), mT(y)));  // (L^-T (L^-T P)^T)^T = L^-T P L^-1
      out[0] = build::binary(Op::Mul, build::binary(Op::Add, s, mT(s)), Operand::number(0.5));
      return out;
    }
    default:
      user_error("linalg.", op_def(n->op).name,
                 " has no gradient yet (solve, inv, det, slogdet and cholesky do)");
  }
}

}  // namespace tapestry::grad_detail
