#include "engine/ir/build/unique.hpp"

#include <algorithm>
#include <limits>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/sample_sort.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

// a and b the same value for unique: equal, or both NaN (numpy 2 counts NaNs as one value).
NodeRef same(const NodeRef& a, const NodeRef& b) {
  const NodeRef eq = binary(Op::Eq, a, b);
  if (!is_float(a->dtype)) return eq;
  return binary(Op::LogicalOr, eq, binary(Op::LogicalAnd, binary(Op::Ne, a, a), binary(Op::Ne, b, b)));
}

struct Table {
  NodeRef values, counts, starts;  // starts: {.., n} bool, where each run begins
};

// Sorted lines {B, n} (each weighted by w, {B, n} i64) deduplicated along dim 1: run r (1-based,
// numbered by a running sum of the run starts) goes to slot r - 1 of {B, n+1} tables, its value
// and its summed weight; elements where `valid` is false go to the spare last slot.
Table dedupe(const NodeRef& sorted, const NodeRef& w, const NodeRef& valid) {
  const int64_t B = sorted->shape[0], n = sorted->shape[1];
  NodeRef starts = full({B, 1}, 1, DType::Bool);
  if (n > 1)
    starts = cat(
        {starts, unary(Op::LogicalNot, same(narrow(sorted, 1, 1, n - 1), narrow(sorted, 1, 0, n - 1)))}, 1);
  if (valid) starts = binary(Op::LogicalAnd, starts, valid);
  NodeRef run = scan(Op::Cumsum, starts, 1);  // bools sum in i64
  if (valid) run = where(valid, run, full_int({B, n}, n + 1, DType::I64));
  Table t;
  t.values = scatter(Op::Scatter, full({B, n + 1}, 0, sorted->dtype), 1, run, sorted, IndexFn::Scatter);
  t.counts = scatter(Op::ScatterAdd, full_int({B, n + 1}, 0, DType::I64), 1, run, w, IndexFn::ScatterAdd);
  t.starts = starts;
  return t;
}

}  // namespace

UniqueChunks unique_chunks(const NodeRef& flat, int64_t parts) {
  internal_check(flat->shape.size() == 1 && flat->shape[0] >= 1 && parts >= 1);
  const int64_t n = flat->shape[0], P = parts, c = (n + P - 1) / P;
  UniqueChunks u;
  u.parts = P;
  u.chunk = c;
  const NodeRef sorted = reshape(sort(line_chunks(reshape(flat, {1, n}), P, c), 2, false)[0], {P, c});
  // The padding sorts after every value and its equals, so a chunk's valid elements come first:
  // position i of chunk p is x's when p·c + i < n.
  NodeRef valid;
  if (P * c > n) {
    const NodeRef at = binary(Op::Add, reshape(arange_int(0, c - 1, 1, DType::I64), {1, c}),
                              reshape(arange_int(0, (P - 1) * c, c, DType::I64), {P, 1}));
    valid = binary(Op::Lt, at, Operand::integer_number(n));
  }
  const Table t = dedupe(sorted, full_int({P, c}, 1, DType::I64), valid);
  u.values = t.values;
  u.counts = t.counts;
  NodeRef stats = reduce(Op::Sum, t.starts, {1}, true);  // {P, 1}: each chunk's distinct count
  if (P > 1) {
    // Splitters as the sample sort's (about 8P samples a chunk, every k-th of them sorted), and
    // per chunk the run starts before each: its distinct values before the splitter.
    const int64_t step = std::max<int64_t>(1, c / (8 * P)), first = step / 2;
    const int64_t k = (c - first + step - 1) / step;
    const NodeRef samples = slice(sorted, {0, first}, {1, step}, {P, k});
    const NodeRef ordered = sort(reshape(samples, {1, P * k}), 1, false)[0];
    const NodeRef splitters = slice(ordered, {0, k}, {1, k}, {1, P - 1});
    const NodeRef before =
        binary(Op::LogicalAnd, reshape(t.starts, {P, c, 1}),
               sorts_before(reshape(sorted, {P, c, 1}), reshape(splitters, {1, 1, P - 1})));
    stats = cat({stats, reduce(Op::Sum, before, {1}, false)}, 1);
  }
  u.stats = stats;
  return u;
}

UniqueBuckets unique_buckets(const UniqueChunks& c, const std::vector<int64_t>& stats) {
  const int64_t P = c.parts;
  internal_check(static_cast<int64_t>(stats.size()) == P * P);
  std::vector<std::vector<NodeRef>> vs(P), cs(P);  // per bucket, its pieces
  bool merges = false;
  int64_t L = 1;
  for (int64_t q = 0; q < P; ++q) {
    int64_t len = 0;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t* row = stats.data() + p * P;  // m_p, then the bounds
      const int64_t lo = q == 0 ? 0 : row[q], hi = q == P - 1 ? row[0] : row[q + 1];
      internal_check(lo >= 0 && lo <= hi && hi <= row[0] && row[0] <= c.chunk);
      if (hi == lo) continue;
      // One slice of the stored table, so the plan reads only these slots of row p.
      vs[q].push_back(slice(c.values, {p, lo}, {1, 1}, {1, hi - lo}));
      cs[q].push_back(slice(c.counts, {p, lo}, {1, 1}, {1, hi - lo}));
      len += hi - lo;
    }
    merges = merges || vs[q].size() > 1;
    L = std::max(L, len);
  }
  UniqueBuckets b;
  if (!merges) {  // each bucket one chunk's distinct values: the result as it stands
    for (int64_t q = 0; q < P; ++q) {
      if (vs[q].empty()) continue;
      b.piece_values.push_back(reshape(vs[q][0], {vs[q][0]->shape[1]}));
      b.piece_counts.push_back(reshape(cs[q][0], {cs[q][0]->shape[1]}));
    }
    internal_check(!b.piece_values.empty());
    return b;
  }
  // Every bucket a row, empty ones too: P lines on P ranks, so the running sum of dedupe stays
  // one scan a row (split_scan rewrites a scan only where lines are fewer than ranks).
  const DType t = c.values->dtype;
  std::vector<NodeRef> rows_v, rows_c;
  for (int64_t q = 0; q < P; ++q) {
    int64_t len = 0;
    for (const NodeRef& piece : vs[q]) len += piece->shape[1];
    if (len < L) {  // padding after the values: sorts last, counts nothing
      vs[q].push_back(is_float(t) ? full({1, L - len}, std::numeric_limits<double>::quiet_NaN(), t)
                                  : full_int({1, L - len}, int_max(t), t));
      cs[q].push_back(full_int({1, L - len}, 0, DType::I64));
    }
    rows_v.push_back(vs[q].size() == 1 ? vs[q][0] : cat(vs[q], 1));
    rows_c.push_back(cs[q].size() == 1 ? cs[q][0] : cat(cs[q], 1));
  }
  const NodeRef v = cat(rows_v, 0), w = cat(rows_c, 0);
  // Stable: a value's copies (at most one a chunk) come before padding equal to it (a NaN, the
  // maximum), so a run starts at a value of x; the padding (count 0) goes to the spare slot.
  // One sort (its indices), the values and counts gathered by it: sort's values are a second
  // Sort node, which would sort the buckets again.
  const NodeRef order = sort(v, 1, false)[1];
  const NodeRef sw = gather(w, 1, order);
  const Table tb = dedupe(gather(v, 1, order), sw, binary(Op::Gt, sw, Operand::integer_number(0)));
  b.values = tb.values;
  b.counts = tb.counts;
  b.sizes = reduce(Op::Sum, tb.starts, {1}, false);
  return b;
}

std::vector<NodeRef> unique_join(const UniqueBuckets& b, const std::vector<int64_t>& sizes) {
  std::vector<NodeRef> vs = b.piece_values, cs = b.piece_counts;
  if (b.values) {
    internal_check(static_cast<int64_t>(sizes.size()) == b.values->shape[0]);
    for (size_t q = 0; q < sizes.size(); ++q) {
      const int64_t m = sizes[q], qi = static_cast<int64_t>(q);
      internal_check(m >= 0 && m < b.values->shape[1]);
      if (m == 0) continue;  // an empty bucket
      vs.push_back(reshape(slice(b.values, {qi, 0}, {1, 1}, {1, m}), {m}));
      cs.push_back(reshape(slice(b.counts, {qi, 0}, {1, 1}, {1, m}), {m}));
    }
  }
  internal_check(!vs.empty());
  if (vs.size() == 1) return {vs[0], cs[0]};
  return {cat(vs, 0), cat(cs, 0)};
}

}  // namespace tapestry::build
