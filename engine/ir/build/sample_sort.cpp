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

// Padding that, at the end of the line, comes after every value of x and its equals too: in
// ascending order NaN or the type's maximum; in descending order -inf or its minimum.
NodeRef last_value(const Shape& s, DType t, bool descending) {
  if (is_float(t))
    return full(
        s, descending ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN(),
        t);
  return full_int(s, descending ? int_min(t) : int_max(t), t);
}

// x's lines along dim as the rows of a {B, n} matrix: dim moved last (perm), then flattened.
struct Rows {
  NodeRef m;
  std::vector<int> perm;  // empty where dim is already last
  Shape moved;            // x's shape with dim last
};

Rows layout(const Shape& shape, int dim) {
  Rows r;
  const int rank = static_cast<int>(shape.size());
  if (dim != rank - 1) {
    for (int d = 0; d < rank; ++d)
      if (d != dim) r.perm.push_back(d);
    r.perm.push_back(dim);
  }
  for (int d = 0; d < rank; ++d) r.moved.push_back(shape[r.perm.empty() ? d : r.perm[d]]);
  return r;
}

Rows rows_of(const NodeRef& x, int dim) {
  Rows r = layout(x->shape, dim);
  const NodeRef y = r.perm.empty() ? x : permute(x, r.perm);
  const int64_t n = x->shape[dim];
  r.m = reshape(y, {n == 0 ? 0 : numel(x->shape) / n, n});
  return r;
}

// The rows {B, len} back in x's layout (dim of size len).
NodeRef unrows(const NodeRef& m, const Rows& r) {
  Shape s = r.moved;
  s.back() = m->shape[1];
  const NodeRef y = reshape(m, s);
  if (r.perm.empty()) return y;
  std::vector<int> inv(r.perm.size());
  for (size_t d = 0; d < r.perm.size(); ++d) inv[r.perm[d]] = static_cast<int>(d);
  return permute(y, inv);
}

// The rows padded to P·c with `pad` values and cut into {B, P, c} chunks.
NodeRef chunks(const NodeRef& m, int64_t P, int64_t c, bool descending) {
  const int64_t B = m->shape[0], n = m->shape[1];
  NodeRef p = m;
  if (P * c > n) p = cat({m, last_value({B, P * c - n}, m->dtype, descending)}, 1);
  return reshape(p, {B, P, c});
}

// Each chunk's 1-based positions {B, P, w} made positions in the line: chunk p starts at p·c.
NodeRef line_positions(const NodeRef& local, int64_t P, int64_t c) {
  const NodeRef offset = reshape(arange_int(0, (P - 1) * c, c, DType::I64), {1, P, 1});
  return binary(Op::Add, local, offset);
}

}  // namespace

NodeRef sorts_before(const NodeRef& a, const NodeRef& b) { return less(a, b); }
NodeRef line_chunks(const NodeRef& m, int64_t parts, int64_t chunk) { return chunks(m, parts, chunk, false); }

bool sample_sorts(const NodeRef& x, int dim, int ranks, int64_t min_len) {
  if (ranks < 2 || x->dtype == DType::Bool || is_complex(x->dtype) || x->shape.empty()) return false;
  const int64_t n = x->shape[dim];
  return n >= std::max<int64_t>(min_len, 16 * ranks) && numel(x->shape) / n < ranks;
}

SampleSort sample_sort_counts(const NodeRef& x, int dim, int64_t parts, bool descending) {
  SampleSort s;
  s.shape = x->shape;
  s.dim = dim;
  s.descending = descending;
  s.n = x->shape[dim];
  s.lines = numel(x->shape) / s.n;
  s.parts = parts;
  s.chunk = (s.n + parts - 1) / parts;
  const int64_t B = s.lines, P = parts, c = s.chunk;
  NodeRef m = rows_of(x, dim).m;
  if (descending) m = flip(m, {1});
  const std::vector<NodeRef> local = sort(chunks(m, P, c, false), 2, false);
  s.values = local[0];
  s.indices = line_positions(local[1], P, c);
  // Samples: about 8P evenly spaced values of each sorted chunk; the splitters are every k-th
  // of them sorted, k the samples per chunk, so each bucket holds about one chunk.
  const int64_t step = std::max<int64_t>(1, c / (8 * P)), first = step / 2;
  const int64_t k = (c - first + step - 1) / step;
  const NodeRef samples = slice(s.values, {0, 0, first}, {1, 1, step}, {B, P, k});
  const NodeRef sorted = sort(reshape(samples, {B, P * k}), 1, false)[0];
  const NodeRef splitters = slice(sorted, {0, k}, {1, k}, {B, P - 1});
  const NodeRef before = less(reshape(s.values, {B, P, c, 1}), reshape(splitters, {B, 1, 1, P - 1}));
  s.bounds = reduce(Op::Sum, before, {2}, false);  // bools sum to i64
  return s;
}

std::vector<NodeRef> sample_sort_place(const SampleSort& s, const std::vector<int64_t>& bounds) {
  const int64_t B = s.lines, P = s.parts, c = s.chunk;
  internal_check(static_cast<int64_t>(bounds.size()) == B * P * (P - 1));
  std::vector<NodeRef> rows_v, rows_i;
  for (int64_t b = 0; b < B; ++b) {
    const NodeRef values = select(s.values, 0, b), indices = select(s.indices, 0, b);
    const int64_t* bb = bounds.data() + b * P * (P - 1);
    std::vector<NodeRef> vals, idx;
    for (int64_t q = 0; q < P; ++q) {
      std::vector<NodeRef> bv, bi;
      for (int64_t p = 0; p < P; ++p) {
        const int64_t lo = q == 0 ? 0 : bb[p * (P - 1) + q - 1];
        const int64_t hi = q == P - 1 ? c : bb[p * (P - 1) + q];
        internal_check(lo >= 0 && lo <= hi && hi <= c);
        if (hi == lo) continue;
        bv.push_back(narrow(select(values, 0, p), 0, lo, hi - lo));
        bi.push_back(narrow(select(indices, 0, p), 0, lo, hi - lo));
      }
      if (bv.empty()) continue;
      // The bucket's runs in chunk order, so a stable sort of it keeps equal values in line order.
      const std::vector<NodeRef> sorted = sort(cat(bv, 0), 0, false);
      vals.push_back(sorted[0]);
      idx.push_back(gather(cat(bi, 0), 0, sorted[1]));
    }
    NodeRef v = narrow(cat(vals, 0), 0, 0, s.n), i = narrow(cat(idx, 0), 0, 0, s.n);
    if (s.descending) {  // the reversed line's ascending order, reversed: positions n+1-i
      v = flip(v, {0});
      i = binary(Op::Add, unary(Op::Neg, flip(i, {0})), Operand::integer_number(s.n + 1));
    }
    rows_v.push_back(reshape(v, {1, s.n}));
    rows_i.push_back(reshape(i, {1, s.n}));
  }
  const Rows r = layout(s.shape, s.dim);
  return {unrows(cat(rows_v, 0), r), unrows(cat(rows_i, 0), r)};
}

std::vector<NodeRef> topk_chunked(const NodeRef& x, int64_t k, int dim, bool largest, int64_t P) {
  const int64_t n = x->shape[dim], c = (n + P - 1) / P, w = std::min(k, c);
  internal_check(k >= 1 && k <= n && P >= 2);
  const Rows r = rows_of(x, dim);
  const int64_t B = r.m->shape[0];
  // Sorted descending for the largest, so the padding (last either way) is never among the k.
  const std::vector<NodeRef> local = topk(chunks(r.m, P, c, largest), w, 2, largest);
  const NodeRef cand_v = reshape(local[0], {B, P * w});
  const NodeRef cand_i = reshape(line_positions(local[1], P, c), {B, P * w});
  // Candidates in chunk order, each chunk's in its own order: ties stay in x's order.
  const std::vector<NodeRef> best = topk(cand_v, k, 1, largest);
  return {unrows(best[0], r), unrows(gather(cand_i, 1, best[1]), r)};
}

}  // namespace tapestry::build
