// Small exact inputs and reference values shared by the executor tests.
//   NodeRef x = test::source({11, 7}, 1);              // values (i*37 + seed*11) % 17 - 8, in quarters
//   std::vector<float> want = test::reference(y);      // the single-rank evaluator's, y forgotten after
//   run_plan(g);  test::check_close(y, want, 0);       // 0: exact
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"
#include "engine/run/evaluator.hpp"

namespace tapestry::test {

inline NodeRef source(const Shape& s, int seed) {
  auto v = Value::alloc(DType::F32, s);
  for (int64_t i = 0; i < numel(s); ++i)
    v->data<float>()[i] = static_cast<float>((i * 37 + seed * 11) % 17 - 8) / 4;
  return make_source(v, s, DType::F32);
}

// The evaluator's value of y, then y forgotten so a sharded run computes it afresh.
inline std::vector<float> reference(const NodeRef& y) {
  evaluate({y});
  std::vector<float> out(y->value->data<float>(), y->value->data<float>() + numel(y->shape));
  set_value(*y, nullptr);
  return out;
}

inline void check_close(const NodeRef& y, const std::vector<float>& want, double rel) {
  REQUIRE(y->value);
  REQUIRE(y->value->view().is_contiguous());
  const float* got = y->value->data<float>();
  for (size_t i = 0; i < want.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= rel * (1 + std::abs(want[i])));
}

// Rows lo..hi (inclusive, 0-based) of a tensor of shape s.
inline poly::Box rows(const Shape& s, int64_t lo, int64_t hi) {
  poly::Box b = poly::Box::of_shape(s);
  b.lo[0] = lo;
  b.hi[0] = hi;
  return b;
}

}  // namespace tapestry::test
