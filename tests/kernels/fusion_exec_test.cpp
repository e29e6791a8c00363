// The evaluator's kernel-level fusions, end to end through evaluate():
//  - a variance (build::var) runs as one pass of cpu::run_moments: same value as the two-pass
//    definition, on awkward data, per row, and where x is not contiguous (the two-pass path);
//  - a stencil read only by a map (u + c * stencil(u, k)) runs band by band inside that map:
//    bit for bit what the separate ops give.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/telemetry/stats.hpp"

using namespace tapestry;
using build::Operand;

namespace {

NodeRef source(const Shape& s, const std::vector<float>& xs) {
  auto v = Value::alloc(DType::F32, s);
  std::memcpy(v->data<float>(), xs.data(), xs.size() * sizeof(float));
  return make_source(v, s, DType::F32);
}

std::vector<float> normal(int64_t n, double mean, double sd, unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<float> xs(static_cast<size_t>(n));
  for (float& x : xs) x = static_cast<float>(d(g));
  return xs;
}

// The variance of each of `rows` rows of xs, two passes in long double.
std::vector<double> two_pass_var(const std::vector<float>& xs, int64_t rows, double correction) {
  const int64_t len = static_cast<int64_t>(xs.size()) / rows;
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    long double s = 0, q = 0;
    for (int64_t i = 0; i < len; ++i) s += xs[r * len + i];
    const long double m = s / len;
    for (int64_t i = 0; i < len; ++i) q += (xs[r * len + i] - m) * (xs[r * len + i] - m);
    out.push_back(static_cast<double>(q / (len - correction)));
  }
  return out;
}

std::vector<float> data(const NodeRef& n) {
  const float* p = n->value->data<float>();
  return std::vector<float>(p, p + numel(n->shape));
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]) &&
        !(std::isnan(a[i]) && std::isnan(b[i])))
      return false;
  return true;
}

}  // namespace

TEST_CASE("kernels.fusion.variance_is_one_pass_and_matches_two_passes") {
  struct Case {
    Shape shape;
    std::vector<int> dims;
    double mean, sd, correction;
  };
  for (const Case& c : {Case{{(1 << 20) + 3}, {}, 1e4, 1e-2, 0},  // large mean, small spread
                        Case{{300001}, {0}, -5, 3, 1}, Case{{37, 5000}, {1}, 100, 0.5, 1},  // per row
                        Case{{6, 7, 3001}, {1, 2}, 3e3, 1, 0}}) {                           // trailing dims
    CAPTURE(shape_str(c.shape));
    const auto xs = normal(numel(c.shape), c.mean, c.sd, 11);
    NodeRef x = source(c.shape, xs);
    NodeRef v = build::var(x, c.dims, c.correction, false);
    const Stats before = stats();
    evaluate({v});
    // One pass: the sum and the centred sum, the mean's division, the final division.
    CHECK(stats().kernels - before.kernels <= 4);
    const int64_t rows = numel(v->shape);
    const auto want = two_pass_var(xs, rows, c.correction);
    for (int64_t r = 0; r < rows; ++r) {
      CAPTURE(r);
      CHECK(v->value->data<float>()[r] == doctest::Approx(want[r]).epsilon(1e-6));
    }
  }
}

TEST_CASE("kernels.fusion.variance_of_a_transposed_view_takes_two_passes") {
  const auto xs = normal(400 * 300, 50, 2, 12);
  NodeRef x = source({400, 300}, xs);
  NodeRef v = build::var(build::transpose(x, 0, 1), {1}, 1, false);  // rows of x^T: x's columns
  evaluate({v});
  std::vector<float> cols;
  for (int64_t c = 0; c < 300; ++c)
    for (int64_t r = 0; r < 400; ++r) cols.push_back(xs[static_cast<size_t>(r * 300 + c)]);
  const auto want = two_pass_var(cols, 300, 1);
  for (int64_t c = 0; c < 300; ++c)
    CHECK(v->value->data<float>()[c] == doctest::Approx(want[c]).epsilon(1e-5));
}

TEST_CASE("kernels.fusion.variance_with_the_mean_observed_too") {
  auto xs = normal(200000, 1, 1, 13);
  xs[777] = std::numeric_limits<float>::infinity();
  NodeRef x = source({200000}, xs);
  NodeRef m = build::mean(x, {}, false);
  NodeRef v = build::var(x, {}, 0, false);
  evaluate({m, v});
  CHECK(std::isinf(m->value->data<float>()[0]));
  CHECK(std::isnan(v->value->data<float>()[0]));
}

TEST_CASE("kernels.fusion.stencil_step_in_bands_equals_the_separate_ops") {
  const int64_t h = 700, w = 1001;  // large enough to run in bands; 700 rows: a short last band
  const auto us = normal(h * w, 0, 1, 14);
  NodeRef k = source({3, 3}, {0, 1, 0, 1, -4, 1, 0, 1, 0});
  NodeRef k2 = source({5, 3}, {1, 2, 0, 1, 1, 0.5f, -4, 1, 1, 1, 0, 1, 0.25f, 1, 3});
  auto step = [&](const NodeRef& u, const NodeRef& s) {
    return build::binary(Op::Add, u, build::binary(Op::Mul, Operand::number(0.1), s));
  };
  // Fused: the stencil lives only inside the map.
  NodeRef u1 = source({h, w}, us);
  NodeRef y1 = step(u1, build::stencil(u1, k, build::Boundary::Zero));
  const Stats before = stats();
  evaluate({y1});
  CHECK(stats().kernels == before.kernels + 1);
  // Separate: the stencil is a root of its own evaluation first.
  NodeRef u2 = source({h, w}, us);
  NodeRef s2 = build::stencil(u2, k, build::Boundary::Zero);
  evaluate({s2});
  NodeRef y2 = step(u2, s2);
  evaluate({y2});
  CHECK(same_bits(data(y1), data(y2)));
  // Two stencils of different kernels in one map, one of them periodic (pad + correlate).
  NodeRef u3 = source({h, w}, us);
  NodeRef y3 = build::binary(Op::Sub, step(u3, build::stencil(u3, k, build::Boundary::Zero)),
                             build::stencil(u3, k2, build::Boundary::Periodic));
  evaluate({y3});
  NodeRef u4 = source({h, w}, us);
  NodeRef a4 = build::stencil(u4, k, build::Boundary::Zero);
  NodeRef b4 = build::stencil(u4, k2, build::Boundary::Periodic);
  evaluate({a4, b4});
  NodeRef y4 = build::binary(Op::Sub, step(u4, a4), b4);
  evaluate({y4});
  CHECK(same_bits(data(y3), data(y4)));
  // A stencil that is also a root is computed whole (and the map reads it).
  NodeRef u5 = source({h, w}, us);
  NodeRef s5 = build::stencil(u5, k, build::Boundary::Zero);
  NodeRef y5 = step(u5, s5);
  evaluate({y5, s5});
  CHECK(same_bits(data(y5), data(y2)));
  CHECK(same_bits(data(s5), data(s2)));
}
