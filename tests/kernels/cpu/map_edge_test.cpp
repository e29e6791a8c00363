// Map edge cases, with expected values taken from numpy 1.24.
#include <doctest/doctest.h>

#include <bit>
#include <climits>
#include <cmath>
#include <limits>

#include "helpers.hpp"
#include "kernels/functors.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

template <class T> std::vector<T> binary(Op op, DType rt, const std::vector<T>& a, const std::vector<T>& b) {
  const DType t = cpu::dtype_of<T>();
  const Shape s{int64_t(a.size())};
  auto va = tensor<T>(s, a), vb = tensor<T>(s, b);
  auto out = Value::alloc(rt, s);
  cpu::run_map(single(op, rt, t, {va->view(), vb->view()}), out->view());
  return std::vector<T>(out->template data<T>(), out->template data<T>() + a.size());
}

template <class T> std::vector<T> unary(Op op, const std::vector<T>& a) {
  const DType t = cpu::dtype_of<T>();
  auto va = tensor<T>({int64_t(a.size())}, a);
  auto out = Value::alloc(t, va->view().shape);
  cpu::run_map(single(op, t, t, {va->view()}), out->view());
  return std::vector<T>(out->template data<T>(), out->template data<T>() + a.size());
}

template <class T> void check_all(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CAPTURE(double(got[i]));
    CAPTURE(double(want[i]));
    CHECK(close<T>(got[i], want[i], 1e-6));
    if constexpr (std::is_floating_point_v<T>) {
      if (want[i] == 0) CHECK(std::signbit(got[i]) == std::signbit(want[i]));
    }
  }
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("kernels.cpu.map.float_floordiv_mod_as_numpy") {
  const std::vector<float> a{7.5, -7.5, 7.5, -7.5, 1, -1, 1, 0, -0.0f, 5, 3};
  const std::vector<float> b{2, 2, -2, -2, kInf, kInf, -kInf, -3, 3, 0, 0.1f};
  check_all(binary<float>(Op::FloorDiv, DType::F32, a, b), {3, -4, -4, 3, 0, -1, -1, -0.0f, -0.0f, kInf, 29});
  check_all(binary<float>(Op::Mod, DType::F32, a, b),
            {1.5, 0.5, -0.5, -1.5, 1, kInf, -kInf, -0.0f, 0, kNaN, 0.09999995678663254f});
}

TEST_CASE("kernels.cpu.map.int_division_never_traps") {
  const int32_t mn = INT32_MIN;
  const std::vector<int32_t> a{7, -7, 7, -7, 0, 5, mn, mn, 3};
  const std::vector<int32_t> b{2, 2, -2, -2, 3, 0, -1, 1, 0};
  check_all(binary<int32_t>(Op::FloorDiv, DType::I32, a, b), {3, -4, -4, 3, 0, 0, mn, mn, 0});
  check_all(binary<int32_t>(Op::Mod, DType::I32, a, b), {1, 1, -1, -1, 0, 0, 0, 0, 0});
  const int64_t mn64 = INT64_MIN;
  check_all(binary<int64_t>(Op::FloorDiv, DType::I64, {mn64, 9, -9}, {-1, 0, 4}), {mn64, 0, -3});
  check_all(binary<int64_t>(Op::Mod, DType::I64, {mn64, 9, -9}, {-1, 0, 4}), {0, 0, 3});
}

TEST_CASE("kernels.cpu.map.int_pow") {
  check_all(
      binary<int32_t>(Op::Pow, DType::I32, {2, 2, 1, -1, -1, 3, 0, 0, 5}, {10, -1, -5, -3, -4, 0, 0, 3, 1}),
      {1024, 0, 1, -1, 1, 1, 1, 0, 5});
  // Overflow wraps: 3^40 mod 2^64.
  uint64_t w = 1;
  for (int i = 0; i < 40; ++i) w *= 3;
  check_all(binary<int64_t>(Op::Pow, DType::I64, {3, 2}, {40, 62}),
            {static_cast<int64_t>(w), int64_t(1) << 62});
}

TEST_CASE("kernels.cpu.map.round_half_to_even") {
  check_all(unary<float>(Op::Round, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999f}), {0, 2, 2, -0.0f, -2, -2, 2});
  check_all(unary<double>(Op::Round, {0.5, 1.5, 2.5, -0.5, 1e300}), {0, 2, 2, -0.0, 1e300});
}

TEST_CASE("kernels.cpu.map.nan_propagation") {
  const float n = kNaN;
  auto mx = binary<float>(Op::Maximum, DType::F32, {n, 1, n}, {1, n, n});
  auto mn = binary<float>(Op::Minimum, DType::F32, {n, 1, 2}, {1, n, 1});
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(std::isnan(mx[2]));
  CHECK(std::isnan(mn[0]));
  CHECK(std::isnan(mn[1]));
  CHECK(mn[2] == 1);
  auto s = unary<float>(Op::Sign, {n, -0.0f, 3, -2});
  CHECK(std::isnan(s[0]));
  CHECK(s[1] == 0);
  CHECK(s[2] == 1);
  CHECK(s[3] == -1);
}

TEST_CASE("kernels.cpu.map.cast") {
  using fn::Cast;
  CHECK(Cast<float, int32_t>{}(2.7f) == 2);
  CHECK(Cast<float, int32_t>{}(-2.7f) == -2);
  CHECK(Cast<float, int32_t>{}(kNaN) == 0);  // numpy gives INT_MIN here (undefined in C)
  CHECK(Cast<float, int32_t>{}(1e20f) == INT32_MAX);
  CHECK(Cast<float, int32_t>{}(-1e20f) == INT32_MIN);
  CHECK(Cast<double, int64_t>{}(-9.3e18) == INT64_MIN);
  CHECK(Cast<float, bool>{}(kNaN) == true);
  CHECK(Cast<double, bool>{}(-0.0) == false);
  CHECK(Cast<bool, float>{}(true) == 1.0f);
  CHECK(Cast<int64_t, int32_t>{}((int64_t(1) << 32) + 5) == 5);
  CHECK(Cast<int32_t, bool>{}(-3) == true);
  CHECK(Cast<int64_t, double>{}(int64_t(1) << 53) == 9007199254740992.0);

  // Through run_map, every pair of dtypes.
  const std::vector<double> xs{-2.5, -1, 0, 1, 2.75, 100};
  auto src = tensor<double>({6}, xs);
  for (DType to : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64}) {
    auto mid = Value::alloc(to, {6});
    cpu::run_map(single(Op::Cast, to, DType::F64, {src->view()}), mid->view());
    auto back = Value::alloc(DType::F64, {6});
    cpu::run_map(single(Op::Cast, DType::F64, to, {mid->view()}), back->view());
    for (int i = 0; i < 6; ++i) {
      double want = to == DType::Bool                        ? double(xs[i] != 0)
                    : (to == DType::I32 || to == DType::I64) ? std::trunc(xs[i])
                                                             : xs[i];
      CAPTURE(dtype_name(to));
      CHECK(back->data<double>()[i] == want);
    }
  }
}

TEST_CASE("kernels.cpu.map.where") {
  for (DType t : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64}) {
    dispatch_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto c = tensor<bool>({4}, {true, false, false, true});
      auto a = tensor<T>({4}, {T(1), T(1), T(0), T(0)});
      auto b = tensor<T>({4}, {T(0), T(1), T(1), T(1)});
      auto out = Value::alloc(t, {4});
      cpu::run_map(single(Op::Where, t, t, {c->view(), a->view(), b->view()}), out->view());
      const T want[4] = {T(1), T(1), T(1), T(0)};
      for (int i = 0; i < 4; ++i) CHECK(out->template data<T>()[i] == want[i]);
    });
  }
}

TEST_CASE("kernels.cpu.map.gelu_and_sigmoid_tails") {
  auto g = unary<float>(Op::Gelu, {-10, 10, 0});
  CHECK(g[0] < 0);
  CHECK(g[0] > -1e-20f);  // erfc keeps the negative tail accurate: -7.6e-23
  CHECK(g[1] == 10);
  CHECK(g[2] == 0);
  auto s = unary<float>(Op::Sigmoid, {-200, 200, 0});
  CHECK(s[0] == 0);
  CHECK(s[1] == 1);
  CHECK(s[2] == 0.5f);
}

// A program with a costly op over large leaves runs each tile's steps in short slices, with a
// prefetch (map.cpp, run_steps); small maps run whole tiles. The results must not depend on
// it: the same program over pieces too small to be sliced gives the same bits, for contiguous,
// broadcast and strided leaves, a padded last tile, plain, streamed and strided outputs.
TEST_CASE("kernels.cpu.map.sliced_tiles_as_whole_tiles") {
  const int64_t n = (int64_t(1) << 18) + 777, piece = 4096;
  std::vector<float> xa(n), xb(2 * n), xc(1, 0.375f);
  for (int64_t i = 0; i < n; ++i) xa[i] = static_cast<float>((i * 7919) % 2001 - 1000) * 0.0061f;
  for (int64_t i = 0; i < 2 * n; ++i) xb[i] = 1.0f + static_cast<float>(i % 13) * 0.125f;
  xa[5] = kNaN, xa[6] = -kInf, xa[7] = -0.0f;
  auto a = tensor<float>({n}, xa), b2 = tensor<float>({2 * n}, xb), c = tensor<float>({1}, xc);
  const View b = b2->view().sliced({1}, {2}, {n});  // stride 2: gathered
  const View cb = c->view().expanded({n});          // a broadcast scalar
  cpu::MapProgram p;
  p.leaves = {a->view(), b, cb};
  p.instrs = {{Op::Mul, DType::F32, DType::F32, 0, 1},
              {Op::Add, DType::F32, DType::F32, 3, 2},
              {Op::Tanh, DType::F32, DType::F32, 4},
              {Op::Exp, DType::F32, DType::F32, 0},
              {Op::Mul, DType::F32, DType::F32, 5, 6}};
  auto want = Value::alloc(DType::F32, {n});
  for (int64_t at = 0; at < n; at += piece) {
    const int64_t len = std::min(piece, n - at);
    cpu::MapProgram q = p;
    for (View& v : q.leaves) v = v.sliced({at}, {1}, {len});
    cpu::run_map(q, want->view().sliced({at}, {1}, {len}));
  }
  auto same = [&](const View& got) {
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float g = got.ptr<float>()[i * got.strides[0]], w = want->data<float>()[i];
      wrong += std::bit_cast<uint32_t>(g) != std::bit_cast<uint32_t>(w);
    }
    return wrong;
  };
  for (bool stream : {false, true}) {
    CAPTURE(stream);
    p.stream_out = stream;
    auto out = Value::alloc(DType::F32, {n});
    cpu::run_map(p, out->view());
    CHECK(same(out->view()) == 0);
    auto wide = Value::alloc(DType::F32, {3 * n});  // every third element: written by scatter
    const View col = wide->view().sliced({2}, {3}, {n});
    cpu::run_map(p, col);
    CHECK(same(col) == 0);
  }
  CHECK(std::isnan(want->data<float>()[5]));
}
