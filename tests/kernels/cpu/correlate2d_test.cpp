// run_correlate in 2-D f32 against the definition summed in the same order in f32 by fused
// multiply-adds: bit for bit, at the edges, for band origins (a block, or a band of rows run
// inside the map that consumes the stencil, passes where it starts), odd widths, strided rows,
// NaN/inf where taps are skipped; with each instruction set's kernels (AVX2, AVX-512).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

// out[y, z] = sum over taps (i, j) in row-major order of x[y + i + o0, z + j + o1] * k[i, j],
// taps outside x and taps of weight 0 skipped, each a fused multiply-add in f32.
std::vector<float> naive(const View& x, const View& k, int64_t o0, int64_t o1, int64_t oh, int64_t ow) {
  std::vector<float> out(static_cast<size_t>(oh * ow));
  auto xv = values<float>(x);
  auto kv = values<float>(k);
  const int64_t xh = x.shape[0], xw = x.shape[1], kh = k.shape[0], kw = k.shape[1];
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t z = 0; z < ow; ++z) {
      float acc = 0;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t r = y + i + o0, c = z + j + o1;
          if (r < 0 || r >= xh || c < 0 || c >= xw || kv[i * kw + j] == 0.0f) continue;
          acc = std::fma(xv[r * xw + c], kv[i * kw + j], acc);
        }
      out[static_cast<size_t>(y * ow + z)] = acc;
    }
  return out;
}

std::shared_ptr<Value> random_matrix(int64_t h, int64_t w, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  auto v = Value::alloc(DType::F32, {h, w});
  for (int64_t i = 0; i < h * w; ++i) v->data<float>()[i] = d(g);
  return v;
}

void check(const View& x, const View& k, int64_t o0, int64_t o1, int64_t oh, int64_t ow) {
  const auto want = naive(x, k, o0, o1, oh, ow);
  for_each_isa([&](const char* isa) {
    auto out = Value::alloc(DType::F32, {oh, ow});
    cpu::run_correlate(x, k, {o0, o1}, out->view());
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < oh * ow; ++i) {
      const float a = out->data<float>()[i], b = want[static_cast<size_t>(i)];
      const bool same =
          (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
      if (!same && wrong++ == 0) first = i;
    }
    CAPTURE(isa);
    CAPTURE(first);
    CHECK(wrong == 0);
  });
}

}  // namespace

TEST_CASE("kernels.cpu.correlate2d.bit_identical_to_the_definition") {
  auto x = random_matrix(67, 203, 1);
  for (auto [kh, kw] : {std::pair<int64_t, int64_t>{3, 3}, {5, 3}, {1, 7}, {7, 1}, {3, 5}}) {
    auto k = random_matrix(kh, kw, 2 + static_cast<unsigned>(kh * 10 + kw));
    CAPTURE(kh);
    CAPTURE(kw);
    const int64_t ph = kh / 2, pw = kw / 2;
    check(x->view(), k->view(), -ph, -pw, 67, 203);                // zero boundary, same shape
    check(x->view(), k->view(), 0, 0, 67 - kh + 1, 203 - kw + 1);  // valid only
    check(x->view(), k->view(), -ph + 20, -pw, 16, 203);           // a band of rows 20..35
    check(x->view(), k->view(), -ph + 60, -pw, 7, 203);            // the last band, reading past x
    check(x->view(), k->view(), -ph, -pw - 3, 67, 190);            // shifted columns
  }
}

TEST_CASE("kernels.cpu.correlate2d.strided_rows_and_non_finite_values") {
  auto big = random_matrix(40, 300, 3);
  const View x = big->view().sliced({2, 5}, {1, 1}, {30, 250});  // rows 300 apart
  auto k = random_matrix(3, 3, 4);
  check(x, k->view(), -1, -1, 30, 250);
  // Non-finite values: taps outside x are skipped, so an inf in the kernel must not reach
  // outputs whose tap falls in the padding (0 * inf would be NaN); NaN/inf in x spread through
  // nonzero weights only.
  auto k2 = tensor<float>({3, 3}, {std::numeric_limits<float>::infinity(), 1, 0, 1, -4, 1, 0, 1, 2});
  auto y = random_matrix(20, 64, 5);
  y->data<float>()[5 * 64 + 17] = std::numeric_limits<float>::quiet_NaN();
  y->data<float>()[19 * 64 + 63] = std::numeric_limits<float>::infinity();
  check(y->view(), k2->view(), -1, -1, 20, 64);
  // The NaN at (5, 17) lies under k2's zero corners for outputs (4, 18) and (6, 16).
  auto out = Value::alloc(DType::F32, {20, 64});
  cpu::run_correlate(y->view(), k2->view(), {-1, -1}, out->view());
  CHECK_FALSE(std::isnan(out->data<float>()[4 * 64 + 18]));  // inf: k2 holds one
  CHECK_FALSE(std::isnan(out->data<float>()[6 * 64 + 16]));
  CHECK(std::isnan(out->data<float>()[5 * 64 + 17]));
}

TEST_CASE("kernels.cpu.correlate2d.axpy_epilogue_matches_the_separate_passes") {
  // u + c * s, with s the stencil rounded to f32, the product rounded, then the sum: what the
  // map program Add(u, Mul(c, s)) computes after run_correlate. Bit for bit, streamed or not.
  auto x = random_matrix(37, 203, 7);
  auto u = random_matrix(37, 203, 8);
  auto k = tensor<float>({3, 3}, {0, 1, 0, 1, -4, 1, 0, 1, 0});
  const float c = 0.1f;
  auto s = Value::alloc(DType::F32, {37, 203});
  cpu::run_correlate(x->view(), k->view(), {-1, -1}, s->view());
  for_each_isa([&](const char* isa) {
    for (bool stream : {false, true}) {
      auto out = Value::alloc(DType::F32, {37, 203});
      REQUIRE(cpu::run_correlate_axpy(x->view(), k->view(), {-1, -1}, u->view(), c, out->view(), stream));
      int64_t wrong = 0;
      for (int64_t i = 0; i < 37 * 203; ++i) {
        volatile float t = c * s->data<float>()[i];  // rounded on its own
        const float want = u->data<float>()[i] + t;
        wrong += std::bit_cast<uint32_t>(out->data<float>()[i]) != std::bit_cast<uint32_t>(want);
      }
      CAPTURE(isa);
      CAPTURE(stream);
      CHECK(wrong == 0);
    }
  });
  // Not a 2-D f32 block it handles: nothing written, the caller runs the two passes.
  auto d = Value::alloc(DType::F64, {37, 203});
  CHECK_FALSE(cpu::run_correlate_axpy(x->view(), k->view(), {-1, -1}, u->view(), c, d->view(), false));
}
