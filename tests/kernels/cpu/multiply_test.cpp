// multiply_f32 against the plain f32 multiply, bit for bit: products that underflow to
// subnormals (rounded to nearest, ties to even, at the 2^-126 boundary and to zero), normal
// ones, zeros of both signs, infinities, NaNs with payloads, constants on either side, tails.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/kernels.hpp"

using namespace tapestry;

namespace {

// The hardware's product, at run time (volatile: not folded by the compiler).
float plain(float a, float b) {
  volatile float x = a, y = b;
  return x * y;
}

void check_same(const std::vector<float>& a, const std::vector<float>& b) {
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<float> got(a.size()), got_ca(a.size()), got_cb(a.size());
  cpu::multiply_f32(got.data(), a.data(), b.data(), 0, 0, n);
  const float c = b.empty() ? 1.0f : b[0];
  cpu::multiply_f32(got_ca.data(), nullptr, a.data(), c, 0, n);  // c * a[i]
  cpu::multiply_f32(got_cb.data(), a.data(), nullptr, 0, c, n);  // a[i] * c
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t want = std::bit_cast<uint32_t>(plain(a[i], b[i]));
    INFO("a = " << a[i] << " (" << std::hexfloat << a[i] << "), b = " << b[i] << std::defaultfloat);
    CHECK(std::bit_cast<uint32_t>(got[i]) == want);
    CHECK(std::bit_cast<uint32_t>(got_ca[i]) == std::bit_cast<uint32_t>(plain(c, a[i])));
    CHECK(std::bit_cast<uint32_t>(got_cb[i]) == std::bit_cast<uint32_t>(plain(a[i], c)));
  }
}

}  // namespace

TEST_CASE("kernels.cpu.multiply.products_that_underflow_match_the_plain_multiply") {
  std::mt19937 rng(11);
  std::vector<float> a, b;
  // Exponents whose sum lands from far below the subnormals to well above 2^-126.
  std::uniform_int_distribution<int> e(-100, -20);
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  for (int i = 0; i < 20000; ++i) {
    const int ea = e(rng), eb = -126 - ea + static_cast<int>(rng() % 40) - 30;
    a.push_back(std::ldexp(m(rng), ea) * (rng() % 2 ? 1.0f : -1.0f));
    b.push_back(std::ldexp(m(rng), eb) * (rng() % 2 ? 1.0f : -1.0f));
  }
  check_same(a, b);
}

TEST_CASE("kernels.cpu.multiply.ties_boundaries_and_special_values") {
  const float inf = INFINITY, nan = std::bit_cast<float>(0x7fc01234u),
              snan = std::bit_cast<float>(0xff812345u);
  const float min_normal = 0x1p-126f, min_sub = 0x1p-149f;
  std::vector<float> a = {// ties in the subnormal grid: 1.5 and 2.5 units of 2^-149, and just off them
                          0x1.8p-75f, 0x1.4p-74f, 0x1.800002p-75f, 0x1.7ffffep-75f,
                          // just below, at and above 2^-126 (rounding up into the normals)
                          0x1.fffffep-64f, 0x1p-63f, 0x1.000002p-63f, 0x1.ffffffp-64f,
                          // to zero, and half the smallest subnormal (a tie to even: zero) and a bit more
                          0x1p-80f, 0x1p-75f, 0x1.000002p-75f, 0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, snan,
                          min_normal, min_sub, -min_sub, 3.0f, 1e30f, 1e-30f};
  std::vector<float> b = {0x1p-74f, 0x1p-75f, 0x1p-74f, 0x1p-74f, 0x1p-62f, 0x1p-63f, 0x1p-63f,
                          0x1p-62f, 0x1p-80f, 0x1p-75f, 0x1p-75f, -0.0f,    5.0f,     -0.0f,
                          min_sub,  0.0f,     2.0f,     1.0f,     2.0f,     0.5f,     0.5f,
                          0.75f,    min_sub,  1e10f,    1e-10f};
  REQUIRE(a.size() == b.size());
  // Every value against every other, so each sits in the vector lanes and in the tail.
  std::vector<float> all_a, all_b;
  for (float x : a)
    for (float y : b) all_a.push_back(x), all_b.push_back(y);
  all_a.insert(all_a.end(), a.begin(), a.end());
  all_b.insert(all_b.end(), b.begin(), b.end());
  check_same(all_a, all_b);
}

TEST_CASE("kernels.cpu.multiply.any_length") {
  std::mt19937 rng(12);
  for (int n = 0; n <= 67; ++n) {
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      a[static_cast<size_t>(i)] = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // any bits
      b[static_cast<size_t>(i)] = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    }
    check_same(a, b);
  }
}
