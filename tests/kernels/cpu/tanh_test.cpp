// fn::tanh_f32 (kernels/tanh_f32.hpp), the inlined float tanh the map kernel vectorizes, against
// double tanh over a dense sample of every float bit pattern, and its special values; then
// through run_map, which must take the same (vector) path for every element.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "helpers.hpp"
#include "kernels/functors.hpp"
#include "kernels/tanh_f32.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

// |got - tanh(x)| in units of the float spacing at the correctly rounded result.
double ulps(float x, float got) {
  const double want = std::tanh(static_cast<double>(x));
  const float wf = static_cast<float>(want);
  const double ulp = std::nextafter(std::fabs(wf), std::numeric_limits<float>::infinity()) - std::fabs(wf);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

__attribute__((noinline)) void tanh_loop(float* __restrict o, const float* __restrict a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fn::tanh_f32(a[i]);  // vectorized, as in the map kernel
}

}  // namespace

TEST_CASE("kernels.cpu.tanh_f32.within_2_ulp_over_all_floats") {
  constexpr uint64_t kStep = 251;  // ~17M patterns, every exponent and sign, both branches
  constexpr int64_t kBatch = 1 << 16;
  std::vector<float> in(kBatch), out(kBatch);
  double worst = 0;
  float worst_x = 0;
  int64_t nan_wrong = 0, sign_wrong = 0;
  for (uint64_t b = 0; b < (uint64_t(1) << 32);) {
    int64_t n = 0;
    for (; n < kBatch && b < (uint64_t(1) << 32); ++n, b += kStep) in[n] = std::bit_cast<float>(uint32_t(b));
    tanh_loop(out.data(), in.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float x = in[i], y = out[i];
      if (std::isnan(x) || std::isnan(y)) {
        nan_wrong += std::isnan(x) != std::isnan(y);
        continue;
      }
      sign_wrong += std::signbit(x) != std::signbit(y);
      const double e = ulps(x, y);
      if (e > worst) worst = e, worst_x = x;
    }
  }
  CAPTURE(worst_x);
  CHECK(worst <= 2.0);
  CHECK(nan_wrong == 0);
  CHECK(sign_wrong == 0);
}

TEST_CASE("kernels.cpu.tanh_f32.special_values_and_branch_edges") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(fn::tanh_f32(inf) == 1.0f);
  CHECK(fn::tanh_f32(-inf) == -1.0f);
  CHECK(std::isnan(fn::tanh_f32(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(fn::tanh_f32(-std::numeric_limits<float>::quiet_NaN())));
  CHECK(fn::tanh_f32(0.0f) == 0.0f);
  CHECK(std::signbit(fn::tanh_f32(-0.0f)));
  const float den = std::numeric_limits<float>::denorm_min();
  CHECK(fn::tanh_f32(den) == den);
  CHECK(fn::tanh_f32(-1e-30f) == -1e-30f);
  for (float x : {1e3f, 9.0f, 9.5f, 20.0f, 3e38f}) {
    CHECK(fn::tanh_f32(x) >= 0.99999994f);
    CHECK(fn::tanh_f32(-x) <= -0.99999994f);
  }
  // Dense around where the reduction's k first leaves 0 (|x| = ln2 / 4: the numerator stops
  // being -q alone), the old formula switch (0.625), where 1 + 2^k stops being exact (k = -24)
  // and the clamp (9).
  for (float c : {0.17328680f, 0.625f, 8.1444794f, 9.0f}) {
    float x = c;
    for (int i = 0; i < 2000; ++i) x = std::nextafter(x, 0.0f);
    for (int i = 0; i < 4000; ++i, x = std::nextafter(x, inf)) {
      CAPTURE(x);
      CHECK(ulps(x, fn::tanh_f32(x)) <= 2.0);
      CHECK(ulps(-x, fn::tanh_f32(-x)) <= 2.0);
    }
  }
}

TEST_CASE("kernels.cpu.tanh_f32.run_map_matches_the_function") {
  std::vector<float> xs;
  for (int i = -5000; i <= 5000; ++i) xs.push_back(static_cast<float>(i) * 0.0037f);
  xs.push_back(std::numeric_limits<float>::infinity());
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  xs.push_back(-0.0f);
  const Shape s{static_cast<int64_t>(xs.size())};
  auto in = tensor<float>(s, xs);
  auto out = Value::alloc(DType::F32, s);
  cpu::run_map(single(Op::Tanh, DType::F32, DType::F32, {in->view()}), out->view());
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(xs[i]);
    const float want = fn::tanh_f32(xs[i]);
    const float got = out->data<float>()[i];
    CHECK(
        (std::isnan(want) ? std::isnan(got) : std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want)));
  }
}
