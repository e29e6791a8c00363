// The window kernels against naive loops: correlation with padding and offset origins (what a
// block's slice passes), conv2d through BLAS (f32) and the direct loop (i64) with stride,
// padding, dilation and groups, and both pools with padding and NaN.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

// Small integers, so that f32 sums are exact and f32 and i64 results compare equal.
template <class T> std::shared_ptr<Value> filled(const Shape& s, int seed) {
  auto v = Value::alloc(cpu::dtype_of<T>(), s);
  for (int64_t i = 0; i < numel(s); ++i) v->template data<T>()[i] = T((i * 31 + seed * 17) % 9 - 4);
  return v;
}

// Naive conv: every output element from its definition, zeros outside x.
std::vector<int64_t> conv_ref(const View& x, const View& w, const int64_t s[2], const int64_t p[2],
                              const int64_t d[2], int64_t groups, const Shape& out) {
  const auto xv = values<int64_t>(x), wv = values<int64_t>(w);
  const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], Cg = w.shape[1];
  const int64_t KH = w.shape[2], KW = w.shape[3], Og = out[1] / groups;
  std::vector<int64_t> r;
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t o = 0; o < out[1]; ++o)
      for (int64_t y = 0; y < out[2]; ++y)
        for (int64_t z = 0; z < out[3]; ++z) {
          int64_t acc = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t iy = s[0] * y - p[0] + d[0] * i, ix = s[1] * z - p[1] + d[1] * j;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const int64_t ch = (o / Og) * Cg + c;
                acc += xv[((n * C + ch) * H + iy) * W + ix] * wv[((o * Cg + c) * KH + i) * KW + j];
              }
          r.push_back(acc);
        }
  return r;
}

}  // namespace

TEST_CASE("kernels.cpu.window.correlate_matches_naive") {
  auto x = filled<float>({6, 7}, 1), k = filled<float>({3, 5}, 2);
  auto out = Value::alloc(DType::F32, {6, 7});
  cpu::run_correlate(x->view(), k->view(), {-1, -2}, out->view());
  const auto xv = values<float>(x->view()), kv = values<float>(k->view()), ov = values<float>(out->view());
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      double want = 0;
      for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < 5; ++b) {
          const int64_t y = i + a - 1, z = j + b - 2;
          if (y >= 0 && y < 6 && z >= 0 && z < 7) want += xv[y * 7 + z] * kv[a * 5 + b];
        }
      CHECK(ov[i * 7 + j] == doctest::Approx(want));
    }
  // A block of rows 2..4 given the slice of rows 1..5: origin -1 + 2 - 1 = 0 relative to it.
  auto part = Value::alloc(DType::F32, {3, 7});
  cpu::run_correlate(x->view().sliced({1, 0}, {1, 1}, {5, 7}), k->view(), {0, -2}, part->view());
  const auto pv = values<float>(part->view());
  for (int64_t e = 0; e < 21; ++e) CHECK(pv[e] == ov[2 * 7 + e]);
}

TEST_CASE("kernels.cpu.window.conv2d_blas_and_direct") {
  struct Cfg {
    Shape x, w;
    int64_t s[2], p[2], d[2], groups;
  };
  for (const Cfg& c : {Cfg{{2, 3, 9, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                       Cfg{{1, 4, 11, 10}, {6, 2, 3, 2}, {2, 3}, {2, 1}, {2, 1}, 2},
                       Cfg{{2, 2, 5, 6}, {2, 1, 1, 1}, {1, 2}, {0, 0}, {1, 1}, 2}}) {
    Shape out{c.x[0], c.w[0], 0, 0};
    for (int i = 0; i < 2; ++i)
      out[2 + i] = (c.x[2 + i] + 2 * c.p[i] - c.d[i] * (c.w[2 + i] - 1) - 1) / c.s[i] + 1;
    const auto xi = filled<int64_t>(c.x, 3), wi = filled<int64_t>(c.w, 4);
    const std::vector<int64_t> want = conv_ref(xi->view(), wi->view(), c.s, c.p, c.d, c.groups, out);
    const int64_t per_group = c.groups > 1 ? c.w[0] / c.groups : std::numeric_limits<int64_t>::max();
    const cpu::WindowAxis h{c.s[0], c.d[0], -c.p[0]}, w{c.s[1], c.d[1], -c.p[1]};
    auto oi = Value::alloc(DType::I64, out);
    cpu::run_conv2d(xi->view(), wi->view(), h, w, per_group, 0, oi->view());
    const auto xf = filled<float>(c.x, 3), wf = filled<float>(c.w, 4);
    auto of = Value::alloc(DType::F32, out);
    cpu::run_conv2d(xf->view(), wf->view(), h, w, per_group, 0, of->view());
    const auto gi = values<int64_t>(oi->view());
    const auto gf = values<float>(of->view());
    for (size_t e = 0; e < want.size(); ++e) {
      CHECK(gi[static_cast<int64_t>(e)] == want[e]);
      CHECK(gf[static_cast<int64_t>(e)] == static_cast<float>(want[e]));
    }
  }
}

TEST_CASE("kernels.cpu.window.pools") {
  // 1 x 1 x 3 x 4, 2x2 windows, stride 2, padding 1: windows hang over every border.
  auto x = tensor<float>({1, 1, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const cpu::WindowAxis a{2, 1, -1};
  auto mx = Value::alloc(DType::F32, {1, 1, 2, 3});
  cpu::run_pool2d(Op::MaxPool2d, x->view(), 2, 2, a, a, mx->view());
  const auto m = values<float>(mx->view());
  const float want_max[6] = {1, 3, 4, 9, 11, 12};
  for (int e = 0; e < 6; ++e) CHECK(m[e] == want_max[e]);
  auto av = Value::alloc(DType::F32, {1, 1, 2, 3});
  cpu::run_pool2d(Op::AvgPool2d, x->view(), 2, 2, a, a, av->view());
  const auto v = values<float>(av->view());
  const float want_avg[6] = {0.25f, 1.25f, 1.0f, 3.5f, 8.5f, 5.0f};  // divided by 4 always
  for (int e = 0; e < 6; ++e) CHECK(v[e] == doctest::Approx(want_avg[e]));
  x->data<float>()[5] = std::nanf("");
  cpu::run_pool2d(Op::MaxPool2d, x->view(), 2, 2, a, a, mx->view());
  CHECK(std::isnan(values<float>(mx->view())[4]));  // x[1][1] lies in window (1, 1)
}
