// Builders for the Line ops: scans, sort and its relatives, searchsorted.
//   NodeRef c = build::scan(Op::Cumsum, x, 0);          // running sum down the rows
//   auto [v, i] = build::sort(x, 1, /*descending=*/true);  // values and 1-based indices
// Each op reads whole lines along one dim (engine/poly/signature_of.cpp: that dim is never split).
#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

void check_line(const NodeRef& x, int dim) {
  user_check(!x->shape.empty(), "x must have at least 1 dimension, got a scalar {}");
  internal_check(dim >= 0 && dim < static_cast<int>(x->shape.size()));
  user_check(!is_complex(x->dtype), "x is ", dtype_name(x->dtype),
             ": sorts and scans take real numbers only (complex numbers have no order here)");
}

// f16 and bf16 lines run in f32 (exactly for sorts and running extremes), stored back.
NodeRef narrow_to(const NodeRef& r, DType t) { return r->dtype == DType::F32 ? cast(r, t) : r; }

NodeRef line(Op op, std::vector<NodeRef> in, LineAttrs a, Shape shape, DType t) {
  return op_node(op, std::move(in), a.encode(), std::move(shape), t);
}

}  // namespace

NodeRef scan(Op op, const NodeRef& x0, int dim, bool reverse) {
  internal_check(op == Op::Cumsum || op == Op::Cumprod || op == Op::Cummax || op == Op::Cummin ||
                 op == Op::Logcumsumexp);
  check_line(x0, dim);
  if (is_half(x0->dtype)) return cast(scan(op, cast(x0, DType::F32), dim, reverse), x0->dtype);
  NodeRef x = x0;
  if ((op == Op::Cumsum || op == Op::Cumprod) && !is_float(x->dtype)) x = cast(x, DType::I64);  // as numpy
  if (op == Op::Logcumsumexp && !is_float(x->dtype)) x = cast(x, float_result(x->dtype));       // as exp
  return line(op, {x}, LineAttrs{dim, reverse, false, false}, x->shape, x->dtype);
}

std::vector<NodeRef> scan_extreme(Op op, const NodeRef& x, int dim) {
  internal_check(op == Op::Cummax || op == Op::Cummin);
  check_line(x, dim);
  if (is_half(x->dtype)) {
    std::vector<NodeRef> r = scan_extreme(op, cast(x, DType::F32), dim);
    return {narrow_to(r[0], x->dtype), r[1]};
  }
  return {line(op, {x}, LineAttrs{dim, false, false, false}, x->shape, x->dtype),
          line(op, {x}, LineAttrs{dim, false, true, false}, x->shape, DType::I64)};
}

std::vector<NodeRef> sort(const NodeRef& x, int dim, bool descending) {
  check_line(x, dim);
  if (is_half(x->dtype)) {
    std::vector<NodeRef> r = sort(cast(x, DType::F32), dim, descending);
    return {narrow_to(r[0], x->dtype), r[1]};
  }
  return {line(Op::Sort, {x}, LineAttrs{dim, descending, false, false}, x->shape, x->dtype),
          line(Op::Sort, {x}, LineAttrs{dim, descending, true, false}, x->shape, DType::I64)};
}

std::vector<NodeRef> topk(const NodeRef& x, int64_t k, int dim, bool largest) {
  check_line(x, dim);
  const int64_t n = x->shape[dim];
  user_check(k >= 0 && k <= n, "k must be in 0..", n, " (the size of dim ", dim + 1, " of x ",
             shape_str(x->shape), "), got ", k);
  if (k == n) return sort(x, dim, largest);
  if (is_half(x->dtype)) {
    std::vector<NodeRef> r = topk(cast(x, DType::F32), k, dim, largest);
    return {narrow_to(r[0], x->dtype), r[1]};
  }
  // A Sort node whose line is shorter than x's: the first k of the stable sort, selected by the
  // kernel (a partial sort, O(n log k) a line) rather than sorting all of it.
  Shape s = x->shape;
  s[dim] = k;
  return {line(Op::Sort, {x}, LineAttrs{dim, largest, false, false}, s, x->dtype),
          line(Op::Sort, {x}, LineAttrs{dim, largest, true, false}, s, DType::I64)};
}

NodeRef line_scatter_add(const NodeRef& g, const NodeRef& idx, int dim) {
  internal_check(g->shape == idx->shape && idx->dtype == DType::I64);
  check_line(g, dim);
  return line(Op::LineScatterAdd, {g, idx}, LineAttrs{dim, false, false, false}, g->shape, g->dtype);
}

NodeRef searchsorted(const NodeRef& sorted, const NodeRef& values, bool right) {
  user_check(sorted->shape.size() == 1, "sorted_sequence must be 1-D, got ", shape_str(sorted->shape));
  user_check((sorted->dtype == DType::Bool) == (values->dtype == DType::Bool), "sorted_sequence (",
             dtype_name(sorted->dtype), ") and values (", dtype_name(values->dtype),
             ") must both be bool or both numeric");
  user_check(!is_complex(sorted->dtype) && !is_complex(values->dtype),
             "sorted_sequence and values must be real (complex numbers have no order here), got ",
             dtype_name(sorted->dtype), " and ", dtype_name(values->dtype));
  const DType t = compute_dtype(promote(sorted->dtype, values->dtype));  // compared in their common dtype
  if (sorted->shape[0] == 0) return full(values->shape, 1, DType::I64);  // before every element of none
  return line(Op::Searchsorted, {cast(sorted, t), cast(values, t)}, LineAttrs{0, false, false, right},
              values->shape, DType::I64);
}

}  // namespace tapestry::build
