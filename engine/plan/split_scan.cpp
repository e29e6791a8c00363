#include "engine/plan/split_scan.hpp"

#include <cmath>
#include <limits>
#include <unordered_map>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::plan {

namespace {

using build::Operand;

bool is_scan(Op op) {
  return op == Op::Cumsum || op == Op::Cumprod || op == Op::Cummax || op == Op::Cummin ||
         op == Op::Logcumsumexp;
}

// The monoid's identity as a tensor of `shape`: what padding and the first chunk's carry hold.
NodeRef identity(Op op, const Shape& shape, DType t) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (op) {
    case Op::Cumsum: return build::full(shape, 0, t);
    case Op::Cumprod: return build::full(shape, 1, t);
    case Op::Logcumsumexp: return build::full(shape, -inf, t);
    case Op::Cummax:
      if (is_float(t)) return build::full(shape, -inf, t);
      return build::full_int(shape, int_min(t), t);  // i8: -128, u8: 0
    case Op::Cummin:
      if (is_float(t)) return build::full(shape, inf, t);
      return build::full_int(shape, int_max(t), t);
    default: internal_check(!"identity of a non-scan op"); return {};
  }
}

// Whether x takes over the running extreme acc (kernels/scan.hpp's takes_over): a tie moves to
// the later element, and the first NaN stays.
NodeRef takes_over(Op op, const NodeRef& acc, const NodeRef& x) {
  NodeRef beats = build::binary(op == Op::Cummax ? Op::Ge : Op::Le, x, acc);
  if (!is_float(x->dtype)) return beats;
  const NodeRef acc_nan = build::binary(Op::Ne, acc, acc), x_nan = build::binary(Op::Ne, x, x);
  return build::binary(Op::LogicalAnd, build::unary(Op::LogicalNot, acc_nan),
                       build::binary(Op::LogicalOr, x_nan, beats));
}

// log(e^a + e^b) as kernels/scan.hpp computes it: -inf is the identity, NaN propagates.
NodeRef logaddexp(const NodeRef& a, const NodeRef& b) {
  const NodeRef m = build::binary(Op::Maximum, a, b);
  const NodeRef d = build::unary(Op::Neg, build::unary(Op::Abs, build::binary(Op::Sub, a, b)));
  // log1p(e^d) as log(1 + e^d): d <= 0, so 1 + e^d is in [1, 2] and loses nothing that matters.
  const NodeRef tail =
      build::unary(Op::Log, build::binary(Op::Add, build::unary(Op::Exp, d), Operand::number(1)));
  const NodeRef same = build::binary(Op::Add, a, Operand::number(0.69314718055994530942));
  return build::where(build::binary(Op::Eq, a, b), same, build::binary(Op::Add, m, tail));
}

Shape with_dim(Shape s, int d, int64_t n) {
  s[d] = n;
  return s;
}

// The rewrite of one forward scan of x along d in P chunks of c (see the header).
NodeRef chunked_scan(Op op, const NodeRef& x, int d, bool indices, int64_t P) {
  const Shape& S = x->shape;
  const int64_t n = S[d], c = (n + P - 1) / P, m = P * c;
  const DType t = x->dtype;
  const NodeRef xp = m > n ? build::cat({x, identity(op, with_dim(S, d, m - n), t)}, d) : x;
  Shape chunked = with_dim(S, d, P);
  chunked.insert(chunked.begin() + d + 1, c);
  const NodeRef xr = build::reshape(xp, chunked);
  // Phase 1: each chunk's own scan; phase 2: the chunks' totals scanned, shifted to carries.
  const NodeRef local = build::scan(op, xr, d + 1);
  const NodeRef totals = build::select(local, d + 1, c - 1);
  const NodeRef incl = build::scan(op, totals, d);
  const auto exclusive = [&](const NodeRef& v, const NodeRef& first) {
    return build::unsqueeze(build::cat({first, build::narrow(v, d, 0, P - 1)}, d), d + 1);
  };
  const NodeRef carry = exclusive(incl, identity(op, with_dim(totals->shape, d, 1), t));
  NodeRef y;
  switch (op) {
    case Op::Cumsum: y = build::binary(Op::Add, carry, local); break;
    case Op::Cumprod: y = build::binary(Op::Mul, carry, local); break;
    case Op::Logcumsumexp: y = logaddexp(carry, local); break;
    default: {
      const NodeRef wins = takes_over(op, carry, local);
      if (!indices) {
        y = build::where(wins, local, carry);
        break;
      }
      // Indices: a chunk's own (1-based within it) plus its offset; the carry's is the index of
      // the chunk total it came from, looked up by the totals' own running index.
      Shape one(chunked.size(), 1);
      one[d] = P;
      const NodeRef offset = build::reshape(build::arange_int(0, (P - 1) * c, c, DType::I64), one);
      const NodeRef local_i = build::binary(Op::Add, build::scan_extreme(op, xr, d + 1)[1], offset);
      const NodeRef totals_i = build::select(local_i, d + 1, c - 1);
      const NodeRef at = build::scan_extreme(op, totals, d)[1];
      const NodeRef carry_i = exclusive(build::gather(totals_i, d, at),
                                        build::full_int(with_dim(totals->shape, d, 1), 1, DType::I64));
      y = build::where(wins, local_i, carry_i);
    }
  }
  y = build::reshape(y, with_dim(S, d, m));
  return m > n ? build::narrow(y, d, 0, n) : y;
}

NodeRef rewrite(const Node& n, const NodeRef& x, int ranks) {
  const LineAttrs a = attrs_of<LineAttrs>(n);
  const int d = static_cast<int>(a.dim);
  if (!a.reverse) return chunked_scan(n.op, x, d, a.indices, ranks);
  // A reverse scan (the gradients') is the forward scan of x flipped, flipped back.
  return build::flip(chunked_scan(n.op, build::flip(x, {d}), d, false, ranks), {d});
}

}  // namespace

bool splits_scan(const Node& n, int ranks) {
  if (ranks < 2 || !is_scan(n.op) || n.value || n.inputs.size() != 1) return false;
  const LineAttrs a = attrs_of<LineAttrs>(n);
  const Node& x = *n.inputs[0];
  if (x.dtype == DType::Bool) return false;
  if (a.reverse && (n.op == Op::Cummax || n.op == Op::Cummin)) return false;
  const int64_t len = x.shape[a.dim], lines = numel(x.shape) / std::max<int64_t>(len, 1);
  return len >= 2 * ranks && lines < ranks;
}

std::vector<NodeRef> split_scans(const std::vector<NodeRef>& roots, int ranks) {
  if (ranks < 2) return roots;
  std::unordered_map<const Node*, NodeRef> done;
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const NodeRef& r : roots) {
    if (done.count(r.get())) continue;
    stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (n->value) {  // computed: a leaf of the plan, nothing below it runs
        done[n] = n->shared_from_this();
        stack.pop_back();
        continue;
      }
      if (next < n->inputs.size()) {
        const Node* in = n->inputs[next++].get();
        if (!done.count(in)) stack.push_back({in, 0});
        continue;
      }
      std::vector<NodeRef> ins;
      bool same = true;
      for (const NodeRef& in : n->inputs) {
        ins.push_back(done.at(in.get()));
        same = same && ins.back() == in;
      }
      NodeRef out;
      if (splits_scan(*n, ranks)) out = rewrite(*n, ins[0], ranks);
      else
        out = same ? n->shared_from_this() : make_node(n->op, std::move(ins), n->attrs, n->shape, n->dtype);
      internal_check(out->shape == n->shape && out->dtype == n->dtype);
      done[n] = std::move(out);
      stack.pop_back();
    }
  }
  std::vector<NodeRef> out;
  for (const NodeRef& r : roots) out.push_back(done.at(r.get()));
  return out;
}

}  // namespace tapestry::plan
