#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/sample_sort.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/run_sharded.hpp"

using namespace tapestry;

namespace {

NodeRef line(DType t, int64_t n) {
  auto v = Value::alloc(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 7919) % 211 - 100;  // ties everywhere
    if (t == DType::F64) v->data<double>()[i] = i % 97 == 5 ? NAN : static_cast<double>(k) / 8;
    else v->data<int64_t>()[i] = k;
  }
  return make_source(v, {n}, t);
}

std::vector<double> values(const NodeRef& n) {
  if (!n->value) evaluate({n});
  std::vector<double> out;
  const View& v = n->value->view();
  for (int64_t i = 0; i < v.numel(); ++i)
    out.push_back(v.dtype == DType::F64 ? v.ptr<double>()[i] : static_cast<double>(v.ptr<int64_t>()[i]));
  return out;
}

void same(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i]));
  }
}

std::vector<int64_t> bounds_of(const build::SampleSort& s) {
  std::vector<int64_t> bounds;
  for (double b : values(s.bounds)) bounds.push_back(static_cast<int64_t>(b));
  return bounds;
}

}  // namespace

TEST_CASE("engine.ir.build.sample_sort.equals_the_stable_sort") {
  for (DType t : {DType::F64, DType::I64}) {
    for (int64_t n : {1000, 997}) {
      for (int64_t parts : {2, 3, 8}) {
        for (bool descending : {false, true}) {
          CAPTURE(n);
          CAPTURE(parts);
          CAPTURE(descending);
          const NodeRef x = line(t, n);
          const build::SampleSort s = build::sample_sort_counts(x, 0, parts, descending);
          CHECK(s.bounds->shape == Shape{1, parts, parts - 1});
          const std::vector<NodeRef> got = build::sample_sort_place(s, bounds_of(s));
          const std::vector<NodeRef> want = build::sort(x, 0, descending);
          same(values(got[1]), values(want[1]));  // the indices: stable, exactly
          same(values(got[0]), values(want[0]));
        }
      }
    }
  }
}

// Several lines along a dim that is not the last: each line sorted apart, in x's layout.
TEST_CASE("engine.ir.build.sample_sort.batches_of_lines") {
  const NodeRef x = build::permute(build::reshape(line(DType::F64, 3 * 400), {3, 400}), {1, 0});  // {400, 3}
  for (bool descending : {false, true}) {
    CAPTURE(descending);
    const build::SampleSort s = build::sample_sort_counts(x, 0, 4, descending);
    CHECK(s.bounds->shape == Shape{3, 4, 3});
    const std::vector<NodeRef> got = build::sample_sort_place(s, bounds_of(s));
    const std::vector<NodeRef> want = build::sort(x, 0, descending);
    CHECK(got[0]->shape == Shape{400, 3});
    same(values(got[1]), values(want[1]));
    same(values(got[0]), values(want[0]));
  }
}

// topk from each chunk's k best: the same values and indices as topk of whole lines, ties in
// x's order, for k below, at and above the chunk size, largest and smallest, with NaNs.
TEST_CASE("engine.ir.build.sample_sort.topk_chunked_equals_topk") {
  for (DType t : {DType::F64, DType::I64}) {
    const NodeRef x = build::reshape(line(t, 2 * 997), {2, 997});
    for (int64_t k : {1, 5, 250, 997}) {
      for (bool largest : {true, false}) {
        for (int64_t parts : {2, 3, 8}) {
          CAPTURE(k);
          CAPTURE(largest);
          CAPTURE(parts);
          const std::vector<NodeRef> got = build::topk_chunked(x, k, 1, largest, parts);
          const std::vector<NodeRef> want = build::topk(x, k, 1, largest);
          CHECK(got[0]->shape == Shape{2, k});
          same(values(got[1]), values(want[1]));
          same(values(got[0]), values(want[0]));
        }
      }
    }
  }
}

TEST_CASE("engine.ir.build.sample_sort.which_sorts") {
  const NodeRef x = line(DType::F64, 1000);
  CHECK(build::sample_sorts(x, 0, 4, 64));
  CHECK(!build::sample_sorts(x, 0, 1, 64));    // one rank
  CHECK(!build::sample_sorts(x, 0, 4, 4096));  // shorter than the minimum
  CHECK(!build::sample_sorts(x, 0, 100, 64));  // fewer than 16 values per rank
  CHECK(build::sample_sorts(build::reshape(line(DType::F64, 1000), {2, 500}), 1, 4, 64));  // 2 lines
  // As many lines as ranks: whole lines give every rank work.
  CHECK(!build::sample_sorts(build::reshape(line(DType::F64, 1000), {10, 100}), 1, 4, 64));
  CHECK(!build::sample_sorts(build::cast(x, DType::Bool), 0, 4, 64));
}

TEST_CASE("engine.ir.build.sample_sort.buckets_run_apart") {
  // Placed on 4 virtual ranks, the buckets are sorted on several ranks, and the result is the
  // single-rank one.
  const NodeRef x = line(DType::I64, 4000);
  const build::SampleSort s = build::sample_sort_counts(x, 0, 4, false);
  const NodeRef v = build::sample_sort_place(s, bounds_of(s))[1];
  const std::vector<double> want = values(build::sort(x, 0, false)[1]);
  run_sharded({v}, plan::Mesh::modelled(4), {}, /*verify_plan=*/true);
  same(values(v), want);
}
