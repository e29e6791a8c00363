// build::unique_chunks / unique_buckets / unique_join against a direct count (std::map over the
// values, NaNs one value sorting last): every chunk count, dtype, padding, heavy and no
// duplicates; the second observation is skipped exactly when no bucket merges two chunks.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/unique.hpp"
#include "engine/run/evaluator.hpp"

using namespace tapestry;

namespace {

std::vector<double> values(const NodeRef& n) {
  if (!n->value) evaluate({n});
  std::vector<double> out;
  const View& v = n->value->view();
  REQUIRE(v.rank() <= 2);
  for (int64_t i = 0; i < v.numel(); ++i) {  // row-major, whatever the strides
    const int64_t o = v.rank() == 0   ? 0
                      : v.rank() == 1 ? i * v.strides[0]
                                      : (i / v.shape[1]) * v.strides[0] + (i % v.shape[1]) * v.strides[1];
    if (v.dtype == DType::F64) out.push_back(v.ptr<double>()[o]);
    else if (v.dtype == DType::I32) out.push_back(v.ptr<int32_t>()[o]);
    else if (v.dtype == DType::Bool) out.push_back(v.ptr<bool>()[o] ? 1 : 0);
    else out.push_back(static_cast<double>(v.ptr<int64_t>()[o]));
  }
  return out;
}

std::vector<int64_t> ints(const NodeRef& n) {
  std::vector<int64_t> out;
  for (double d : values(n)) out.push_back(static_cast<int64_t>(d));
  return out;
}

// n values of type t drawn from `distinct` choices (a few NaNs among floats), in a scrambled order.
NodeRef line(DType t, int64_t n, int64_t distinct) {
  auto v = Value::alloc(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 7919 + 13) % distinct - distinct / 2;
    if (t == DType::F64) v->data<double>()[i] = i % 53 == 7 ? NAN : static_cast<double>(k) / 4;
    else if (t == DType::I32) v->data<int32_t>()[i] = static_cast<int32_t>(k);
    else if (t == DType::Bool) v->data<bool>()[i] = k % 2 != 0;
    else v->data<int64_t>()[i] = k == 0 ? INT64_MAX : k;  // the padding's value occurs too
  }
  return make_source(v, {n}, t);
}

struct Result {
  std::vector<double> values;
  std::vector<int64_t> counts;
  bool second_observation = false;
};

Result run(const NodeRef& x, int64_t parts) {
  const build::UniqueChunks c = build::unique_chunks(x, parts);
  CHECK(c.stats->shape == Shape{parts, parts});
  const build::UniqueBuckets b = build::unique_buckets(c, ints(c.stats));
  std::vector<int64_t> sizes;
  if (b.sizes) sizes = ints(b.sizes);
  const std::vector<NodeRef> vc = build::unique_join(b, sizes);
  return {values(vc[0]), ints(vc[1]), static_cast<bool>(b.sizes)};
}

void check_against_count(const NodeRef& x, const Result& r) {
  std::map<double, int64_t> want;
  int64_t nans = 0;
  for (double v : values(x)) std::isnan(v) ? ++nans : ++want[v];
  std::vector<double> wv;
  std::vector<int64_t> wc;
  for (auto [v, k] : want) wv.push_back(v), wc.push_back(k);
  if (nans) wv.push_back(NAN), wc.push_back(nans);
  REQUIRE(r.values.size() == wv.size());
  for (size_t i = 0; i < wv.size(); ++i) {
    CAPTURE(i);
    CHECK(((std::isnan(r.values[i]) && std::isnan(wv[i])) || r.values[i] == wv[i]));
  }
  CHECK(r.counts == wc);
}

}  // namespace

TEST_CASE("engine.ir.build.unique.equals_a_direct_count") {
  for (DType t : {DType::F64, DType::I64, DType::I32}) {
    for (int64_t n : {1, 7, 1000, 997}) {
      for (int64_t distinct : {1, 5, 300, 5000}) {
        for (int64_t parts : {1, 2, 3, 8}) {
          if (parts > n) continue;
          CAPTURE(dtype_name(t));
          CAPTURE(n);
          CAPTURE(distinct);
          CAPTURE(parts);
          const NodeRef x = line(t, n, distinct);
          check_against_count(x, run(x, parts));
        }
      }
    }
  }
}

TEST_CASE("engine.ir.build.unique.bools_and_one_chunk") {
  const NodeRef x = line(DType::Bool, 100, 7);
  const Result r = run(x, 1);
  CHECK(r.values == std::vector<double>{0, 1});
  CHECK(r.counts[0] + r.counts[1] == 100);
  CHECK_FALSE(r.second_observation);  // one chunk: its distinct values are the result
}

TEST_CASE("engine.ir.build.unique.merges_only_buckets_two_chunks_share") {
  // Sorted input: each chunk holds its own range of values, so no bucket merges two chunks.
  auto v = Value::alloc(DType::I64, {400});
  for (int64_t i = 0; i < 400; ++i) v->data<int64_t>()[i] = i / 4;
  const NodeRef sorted = make_source(v, {400}, DType::I64);
  const Result r = run(sorted, 4);
  CHECK(r.values.size() == 100);
  CHECK_FALSE(r.second_observation);
  check_against_count(sorted, r);
  // Scrambled: values recur across chunks, so buckets merge and their counts are observed.
  const NodeRef scrambled = line(DType::I64, 400, 50);
  const Result s = run(scrambled, 4);
  CHECK(s.second_observation);
  check_against_count(scrambled, s);
}
