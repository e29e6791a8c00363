#include "tests/fuzz/expected.hpp"

#include <algorithm>
#include <cmath>

#include "engine/ir/error.hpp"
#include "engine/run/evaluator.hpp"
#include "tests/fuzz/naive.hpp"

namespace tapestry::fuzz {

namespace {

// How far a value of dtype t may round differently when a sum was split: in its real dtype's
// precision (an f16 or bf16 result may land on a neighbouring 16-bit value).
double split_tol(DType t) {
  const DType r = real_dtype(t);
  return r == DType::F64 ? 1e-9 : r == DType::F16 ? 2e-3 : r == DType::BF16 ? 1.6e-2 : 1e-4;
}

// How far each step's float results may round differently in a sharded run: split sums and
// their users, by the coarsest float a split sum rounded in upstream (an f32 matmul cast to f64
// keeps the f32 sum's rounding); 0 where it must be exact.
std::vector<double> inexact_steps(const Program& p, const std::vector<NodeRef>& nodes) {
  std::vector<double> tol(p.steps.size(), 0);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    double t = reorders(s, nodes[i]->dtype) ? split_tol(nodes[i]->dtype) : 0;
    for (int j : s.in) t = std::max(t, tol[j]);
    // A 16-bit result of an inexact input may round to a neighbouring value at its own precision.
    if (t > 0) t = std::max(t, split_tol(nodes[i]->dtype));
    // sin and cos turn a relative error e of x into an absolute one of up to |x| e: the tolerance
    // grows with the input's magnitude (seed 43 graph 14066: cos of a product of 14 values).
    if (t > 0 && s.kind == Kind::Unary && (s.op == Op::Sin || s.op == Op::Cos) && nodes[s.in[0]]->value) {
      double biggest = 1;
      for (double v : to_doubles(nodes[s.in[0]]->value->view()))
        if (std::isfinite(v)) biggest = std::max(biggest, std::abs(v));
      t *= biggest;
    }
    tol[i] = is_inexact(nodes[i]->dtype) ? t : 0;
  }
  return tol;
}

// A trusted antisymmetric or Hermitian declaration is false where its input is not finite: x -
// x^T is NaN on the diagonal where x holds a NaN or an infinity, and the packed form stores that
// diagonal as 0 (seed 37 graph 12344: rsqrt of a negative). The declared program's values may
// then differ from the undeclared one's, sorted rows and all. And a block-sparse operand's zero
// tiles stay zero in a product whatever the other operand holds there (docs/properties.md:
// "values are taken finite"), where the dense product of a NaN or an infinity with 0 is NaN
// (seed 64 graph 24043: 0 // 0 times a tiled tensor): a program with a block-sparse declaration
// and any non-finite value is not compared with its undeclared twin either.
bool declares_non_finite(const Program& p, const std::vector<NodeRef>& nodes) {
  auto non_finite = [](const NodeRef& x) {
    if (!x->value) return true;  // not computed here: cannot tell
    for (double v : to_doubles(x->value->view()))
      if (!std::isfinite(v)) return true;
    return false;
  };
  bool tiled = false;
  for (const Step& s : p.steps) {
    if (s.kind != Kind::Declare || s.in.empty()) continue;
    tiled = tiled || s.n == 1;
    const bool anti_or_herm = s.n == 2 || (s.n != 1 && s.flag);
    if (anti_or_herm && non_finite(nodes[s.in[0]])) return true;
  }
  if (tiled)
    for (const NodeRef& n : nodes)
      if (is_inexact(n->dtype) && non_finite(n)) return true;
  return false;
}

// A product of products (a matmul of a matmul, as built by matmul or einsum steps) may run in
// another order sharded (plan/reassociate.hpp: (A B) C as A (B C)). With a non-finite factor,
// where an inf meets a 0 (NaN) or not (inf) then depends on that order, as a chain's overflow
// does: such a chain's result is compared like an overflowing product's (seed 62 graph 11032:
// 1/x of a bool, times two matrices, NaN left to right and -inf reassociated).
bool is_product(const Step& s) { return s.kind == Kind::Matmul || s.kind == Kind::Einsum; }

// Whether x holds a non-finite value (or has no value to look at).
bool may_be_nonfinite(const NodeRef& x) {
  if (!x->value) return true;
  for (double v : to_doubles(x->value->view()))
    if (!std::isfinite(v)) return true;
  return false;
}

// Which steps a product that may leave the finite range feeds: a product whose partial products
// can overflow gives inf, NaN (inf * 0, inf - inf in complex products) or a finite value depending
// on the order it multiplies in (single-rank left to right, sharded by pieces), as numpy's does.
// Such a result is compared where both runs are finite; where either is not, the order decided.
// A product may overflow when the product of its input's magnitudes above 1 does (over the whole
// input: conservative); underflow needs no rule, the comparison's absolute floor covers it.
std::vector<bool> overflow_steps(const Program& p, const std::vector<NodeRef>& nodes) {
  std::vector<bool> overflow(p.steps.size(), false), nonfinite_factor(p.steps.size(), false);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    for (int j : s.in) overflow[i] = overflow[i] || overflow[j];
    if (is_product(s)) {  // a factor of its own or of a product it multiplies is not finite
      bool chain = false;
      for (int j : s.in) {
        const bool inner = is_product(p.steps[static_cast<size_t>(j)]);
        chain = chain || inner;
        nonfinite_factor[i] =
            nonfinite_factor[i] || (inner ? nonfinite_factor[j] : may_be_nonfinite(nodes[j]));
      }
      if (chain && nonfinite_factor[i]) overflow[i] = true;
    }
    const bool product =
        (s.kind == Kind::Reduce && s.op == Op::Prod) || (s.kind == Kind::Line && s.op == Op::Cumprod);
    if (!product || overflow[i] || !is_inexact(nodes[i]->dtype) || s.in.empty()) continue;
    const NodeRef& x = nodes[s.in[0]];
    if (!x->value) continue;
    const std::vector<double> v = to_doubles(x->value->view());
    const bool complex = is_complex(x->dtype);
    const double max_exp = real_dtype(nodes[i]->dtype) == DType::F64 ? 1023 : 127;
    double log2_big = 0;
    for (size_t k = 0; k < v.size(); k += complex ? 2 : 1) {
      const double m = complex ? std::hypot(v[k], v[k + 1]) : std::abs(v[k]);
      if (!std::isfinite(m)) log2_big = max_exp;  // already out of range
      else if (m > 1) log2_big += std::log2(m);
    }
    overflow[i] = log2_big >= max_exp - 1;
  }
  return overflow;
}

}  // namespace

Expected reference(const Program& p, NaiveTally* tally, std::string* naive_failure) {
  std::vector<NodeRef> nodes = build(p);
  evaluate(nodes);
  if (naive_failure) {
    for (const NodeRef& n : nodes) {
      std::string why;
      const NaiveResult r = naive_check(*n, why);
      if (n->op == Op::Source) continue;
      if (r == NaiveResult::Unsupported) ++tally->unsupported;
      else ++tally->checked;
      if (r == NaiveResult::Mismatch && naive_failure->empty()) *naive_failure = why;
    }
  }
  const std::vector<double> inexact = inexact_steps(p, nodes);
  const std::vector<bool> overflow = overflow_steps(p, nodes);
  Expected e;
  for (int r : p.roots) {
    const NodeRef& n = nodes[r];
    e.values.push_back(to_doubles(n->value->view()));
    e.tol.push_back(inexact[r]);
    e.overflow.push_back(overflow[r]);
    e.shapes.push_back(n->shape);
    e.dtypes.push_back(n->dtype);
  }
  if (naive_failure && naive_failure->empty() && has_declare(p) && !declares_non_finite(p, nodes)) {
    // Declared properties change the graph (packed tensors, fewer products), never the values:
    // the same program with nothing declared must agree (within rounding: sums reorder).
    struct Undeclared {  // declarations back on however this leaves
      Undeclared() { set_declarations(false); }
      ~Undeclared() { set_declarations(true); }
    };
    std::vector<NodeRef> dense;
    {
      const Undeclared off;
      dense = build(p);
    }
    evaluate(dense);
    for (size_t k = 0; k < p.roots.size() && naive_failure->empty(); ++k) {
      const std::vector<double> d = to_doubles(dense[p.roots[k]]->value->view());
      const double tol = is_inexact(e.dtypes[k]) ? split_tol(e.dtypes[k]) : 0;  // complex too
      double scale = 1;
      for (double x : d)
        if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
      for (size_t i = 0; i < d.size(); ++i) {
        const double g = e.values[k][i];
        if ((std::isnan(g) && std::isnan(d[i])) || g == d[i] || std::abs(g - d[i]) <= tol * scale) continue;
        *naive_failure =
            cat_str("root ", p.roots[k], " element ", i, ": ", g, " with declarations, ", d[i], " without");
        break;
      }
    }
  }
  return e;
}

bool finite_at(const std::vector<double>& v, size_t i, bool complex) {
  const size_t lo = complex ? i - i % 2 : i, hi = complex ? lo + 1 : i;
  return std::isfinite(v[lo]) && std::isfinite(v[hi]);
}

double scale_of(const std::vector<double>& v) {
  double s = 1;
  for (double d : v)
    if (std::isfinite(d)) s = std::max(s, std::abs(d));
  return s;
}

}  // namespace tapestry::fuzz
