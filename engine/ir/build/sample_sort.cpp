#include "engine/ir/build/sample_sort.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

// a before b in the sort order: NaN after every number (kernels/scan.hpp's less).
NodeRef less(const NodeRef& a, const NodeRef& b) {
  const NodeRef lt = binary(Op::Lt, a, b);
  if (!is_float(a->dtype)) return lt;
  const NodeRef a_num = binary(Op::Eq, a, a), b_nan = binary(Op::Ne, b, b);
  return binary(Op::LogicalAnd, a_num, binary(Op::LogicalOr, b_nan, lt));
}

// Padding that sorts after every value of x and, being last in the line, after its equals too.
NodeRef last_value(const Shape& s, DType t) {
  if (is_float(t)) return full(s, std::numeric_limits<double>::quiet_NaN(), t);
  return full_int(s, t == DType::I32 ? INT32_MAX : INT64_MAX, t);
}

}  // namespace

bool sample_sorts(const NodeRef& x, int dim, bool descending, int ranks, int64_t min_len) {
  if (ranks < 2 || descending || x->dtype == DType::Bool || x->shape.empty()) return false;
  const int64_t n = x->shape[dim];
  return numel(x->shape) == n && n >= std::max<int64_t>(min_len, 16 * ranks);
}

SampleSort sample_sort_counts(const NodeRef& x, int dim, int64_t parts) {
  SampleSort s;
  s.shape = x->shape;
  s.n = x->shape[dim];
  s.parts = parts;
  s.chunk = (s.n + parts - 1) / parts;
  const int64_t P = parts, c = s.chunk, m = P * c;
  NodeRef line = reshape(x, {s.n});
  if (m > s.n) line = cat({line, last_value({m - s.n}, x->dtype)}, 0);
  const std::vector<NodeRef> local = sort(reshape(line, {P, c}), 1, false);
  s.values = local[0];
  const NodeRef offset = reshape(arange_int(0, (P - 1) * c, c, DType::I64), {P, 1});
  s.indices = binary(Op::Add, local[1], offset);
  // Samples: about 8P evenly spaced values of each sorted chunk; the splitters are every k-th
  // of them sorted, k the samples per chunk, so each bucket holds about one chunk.
  const int64_t step = std::max<int64_t>(1, c / (8 * P)), first = step / 2;
  const int64_t k = (c - first + step - 1) / step;
  const NodeRef samples = slice(s.values, {0, first}, {1, step}, {P, k});
  const NodeRef sorted = sort(reshape(samples, {P * k}), 0, false)[0];
  const NodeRef splitters = slice(sorted, {k}, {k}, {P - 1});
  const NodeRef before = less(reshape(s.values, {P, c, 1}), reshape(splitters, {1, 1, P - 1}));
  s.bounds = reduce(Op::Sum, before, {1}, false);  // bools sum to i64
  return s;
}

std::vector<NodeRef> sample_sort_place(const SampleSort& s, const std::vector<int64_t>& bounds) {
  const int64_t P = s.parts, c = s.chunk;
  internal_check(static_cast<int64_t>(bounds.size()) == P * (P - 1));
  std::vector<NodeRef> vals, idx;
  for (int64_t q = 0; q < P; ++q) {
    std::vector<NodeRef> bv, bi;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t lo = q == 0 ? 0 : bounds[p * (P - 1) + q - 1];
      const int64_t hi = q == P - 1 ? c : bounds[p * (P - 1) + q];
      internal_check(lo >= 0 && lo <= hi && hi <= c);
      if (hi == lo) continue;
      bv.push_back(narrow(select(s.values, 0, p), 0, lo, hi - lo));
      bi.push_back(narrow(select(s.indices, 0, p), 0, lo, hi - lo));
    }
    if (bv.empty()) continue;
    // The bucket's runs in chunk order, so a stable sort of it keeps equal values in line order.
    const std::vector<NodeRef> sorted = sort(cat(bv, 0), 0, false);
    vals.push_back(sorted[0]);
    idx.push_back(gather(cat(bi, 0), 0, sorted[1]));
  }
  const NodeRef v = narrow(cat(vals, 0), 0, 0, s.n), i = narrow(cat(idx, 0), 0, 0, s.n);
  return {reshape(v, s.shape), reshape(i, s.shape)};
}

}  // namespace tapestry::build
