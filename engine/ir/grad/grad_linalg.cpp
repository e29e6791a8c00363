// Gradients of the LAPACK ops, as torch's (Giles, "Collected matrix derivative results"):
//   solve  X = A^-1 B:   gB = A^-T g,  gA = -gB X^T
//   det    d = |A|:      gA = g d A^-T
//   slogdet (s, l):      gA = g_l A^-T   (the sign is piecewise constant)
//   cholesky A = L L^T:  gA = sym(L^-T Phi(L^T g) L^-1), Phi = lower triangle, diagonal halved
//   eigh A = V diag(w) V^T:  gA = V (diag(gw) + skew(V^T gV) / E) V^T, E_ij = w_j - w_i,
//                            skew(X) = (X - X^T) / 2 (torch's linalg_eig_backward, hermitian)
//   svd A = U diag(S) Vh:    torch's svd_backward: gA = U (skew(U^T gU) S + S skew(V^T gV)) / E
//                            + diag(gS)) Vh, E_jk = S_k^2 - S_j^2, skew(X) = X - X^T, plus the
//                            terms of the complement of U (m > k) or V (n > k); full_matrices
//                            reads only U's first k columns and Vh's first k rows, as torch.
// As torch, eigh's and svd's are exact only for distinct eigenvalues (singular values, nonzero
// for U and Vh): where two coincide, E is 0 and a term with a nonzero numerator is inf or NaN.
// A term whose numerator is exactly 0 is 0 (torch skips it when U, V are not used at all), so
// the gradient through w or S alone is finite for repeated values too. qr has none yet.
#include <algorithm>

#include "engine/ir/attrs.hpp"
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

NodeRef row(const NodeRef& v) {
  return build::unsqueeze(v, static_cast<int>(v->shape.size()) - 1);
}  // {.., 1, k}
NodeRef col(const NodeRef& v) {
  return build::unsqueeze(v, static_cast<int>(v->shape.size()));
}  // {.., k, 1}
NodeRef mul(const Operand& a, const Operand& b) { return build::binary(Op::Mul, a, b); }
NodeRef add(const NodeRef& a, const NodeRef& b) { return build::binary(Op::Add, a, b); }
NodeRef sub(const NodeRef& a, const NodeRef& b) { return build::binary(Op::Sub, a, b); }
NodeRef mm(const NodeRef& a, const NodeRef& b) { return build::matmul(a, b); }
NodeRef diag_embed(const NodeRef& v) {  // {.., k} -> {.., k, k}
  const int64_t k = v->shape.back();
  return mul(build::eye(k, k, v->dtype), row(v));
}
// num / den, and 0 where num is exactly 0: a term that nothing depends on stays 0 at repeated
// eigenvalues (see the header comment).
NodeRef quotient(const NodeRef& num, const NodeRef& den) {
  return build::where(build::binary(Op::Eq, num, Operand::number(0)), Operand::number(0),
                      build::binary(Op::Div, num, den));
}

// The parts of a packed node (or of its adjoint): runs of the last dim, as the builders pack them.
std::vector<NodeRef> unpacked(const NodeRef& packed, const std::vector<Shape>& parts) {
  const Shape batch(packed->shape.begin(), packed->shape.end() - 1);
  const int last = static_cast<int>(packed->shape.size()) - 1;
  std::vector<NodeRef> out;
  int64_t at = 0;
  for (const Shape& p : parts) {
    Shape s = batch;
    s.insert(s.end(), p.begin(), p.end());
    out.push_back(build::reshape(build::narrow(packed, last, at, numel(p)), s));
    at += numel(p);
  }
  return out;
}

NodeRef eigh_vjp(const NodeRef& n, const NodeRef& g) {
  const NodeRef& a = n->inputs[0];
  const int64_t k = a->shape.back();
  const bool vectors = attrs_of<LinalgAttrs>(*n).mode != 0;
  if (!vectors) {  // eigvalsh: the vectors are needed here, so factor again with them
    const std::vector<NodeRef> wv = build::eigh(a, true);
    return mm(mul(wv[1], row(unpacked(g, {Shape{k}})[0])), mT(wv[1]));
  }
  const std::vector<NodeRef> wv = unpacked(n, {Shape{k}, Shape{k, k}}),
                             gwv = unpacked(g, {Shape{k}, Shape{k, k}});
  const NodeRef& w = wv[0];
  const NodeRef& v = wv[1];
  const NodeRef vgv = mm(mT(v), gwv[1]);
  const NodeRef skew = mul(sub(vgv, mT(vgv)), Operand::number(0.5));
  const NodeRef e = sub(row(w), col(w));  // e_ij = w_j - w_i
  const NodeRef inner = add(quotient(skew, e), diag_embed(gwv[0]));
  return mm(v, mm(inner, mT(v)));
}

NodeRef svd_vjp(const NodeRef& n, const NodeRef& g) {
  const NodeRef& a = n->inputs[0];
  const int64_t m = a->shape[a->shape.size() - 2], cols = a->shape.back(), k = std::min(m, cols);
  const int64_t mode = attrs_of<LinalgAttrs>(*n).mode;
  if (mode == 0) {  // the values alone: gA = U diag(gS) Vh, with U, Vh factored again
    const std::vector<NodeRef> usv = build::svd(a, 1);
    return mm(mul(usv[0], row(unpacked(g, {Shape{k}})[0])), usv[2]);
  }
  const int64_t u = mode == 2 ? m : k, v = mode == 2 ? cols : k;
  const std::vector<Shape> parts{Shape{m, u}, Shape{k}, Shape{v, cols}};
  std::vector<NodeRef> usv = unpacked(n, parts), gusv = unpacked(g, parts);
  if (mode == 2) {  // full_matrices: as torch, only the first k columns of U and rows of Vh count
    const int r = static_cast<int>(a->shape.size());
    for (std::vector<NodeRef>* x : {&usv, &gusv}) {
      (*x)[0] = build::narrow((*x)[0], r - 1, 0, k);
      (*x)[2] = build::narrow((*x)[2], r - 2, 0, k);
    }
  }
  const NodeRef &U = usv[0], &S = usv[1], &Vh = usv[2], &gU = gusv[0], &gS = gusv[1], &gVh = gusv[2];
  const auto skew = [](const NodeRef& x) { return sub(x, mT(x)); };
  const NodeRef uhgu = skew(mm(mT(U), gU)), vhgv = skew(mm(Vh, mT(gVh)));
  const NodeRef s2 = mul(S, S);
  const NodeRef e = sub(row(s2), col(s2));  // e_jk = S_k^2 - S_j^2
  const NodeRef inner = add(quotient(add(mul(uhgu, row(S)), mul(col(S), vhgv)), e), diag_embed(gS));
  if (m > k) {  // U's complement: (I - U U^T) gU S^-1
    const NodeRef gu_s = build::binary(Op::Div, gU, row(S));
    return mm(sub(add(mm(U, inner), gu_s), mm(U, mm(mT(U), gu_s))), Vh);
  }
  if (cols > k) {  // V's complement: S^-1 gVh (I - V Vh)
    const NodeRef s_gvh = build::binary(Op::Div, gVh, col(S));
    return mm(U, sub(add(mm(inner, Vh), s_gvh), mm(mm(s_gvh, mT(Vh)), Vh)));
  }
  return mm(U, mm(inner, Vh));
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
    case Op::Eigh: out[0] = eigh_vjp(n, g); return out;
    case Op::Svd: out[0] = svd_vjp(n, g); return out;
    default:
      user_error("linalg.", op_def(n->op).name,
                 " has no gradient yet (solve, inv, det, slogdet, cholesky, eigh and svd do)");
  }
}

}  // namespace tapestry::grad_detail
