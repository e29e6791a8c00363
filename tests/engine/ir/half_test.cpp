#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>

#include "engine/ir/half.hpp"

using namespace tapestry;

namespace {

// The f16 value of a bit pattern, from IEEE 754's definition (not half.hpp's shifts).
double f16_value(uint16_t b) {
  const int sign = b >> 15, exp = (b >> 10) & 31, man = b & 1023;
  const double s = sign ? -1.0 : 1.0;
  if (exp == 31) return man ? NAN : s * INFINITY;
  if (exp == 0) return s * std::ldexp(man, -24);
  return s * std::ldexp(1024 + man, exp - 25);
}

}  // namespace

TEST_CASE("engine.ir.half.f16_every_pattern_round_trips") {
  for (uint32_t b = 0; b < 65536; ++b) {
    const f16 h = f16::from_bits(static_cast<uint16_t>(b));
    const double want = f16_value(static_cast<uint16_t>(b));
    const float got = static_cast<float>(h);
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
      CHECK(f16(got).bits == (b | 0x200));  // NaNs stay NaN (made quiet)
      continue;
    }
    REQUIRE(static_cast<double>(got) == want);
    REQUIRE(f16(got).bits == b);
    REQUIRE(f16(static_cast<double>(got)).bits == b);
  }
}

TEST_CASE("engine.ir.half.f16_rounds_to_nearest_even") {
  CHECK(static_cast<float>(f16(0.1)) == 0.0999755859375f);
  CHECK(f16(65504.0).bits == 0x7bff);
  CHECK(f16(65519.99).bits == 0x7bff);                        // below the halfway point to 65536
  CHECK(f16(65520.0).bits == 0x7c00);                         // the halfway point rounds to even: inf
  CHECK(f16(1.0 + std::ldexp(1.0, -11)).bits == 0x3c00);      // a tie: to the even 1.0
  CHECK(f16(1.0 + 3 * std::ldexp(1.0, -11)).bits == 0x3c02);  // a tie: to the even 1 + 2^-9
  CHECK(f16(std::ldexp(1.0, -25)).bits == 0);                 // half the least subnormal: to even 0
  CHECK(f16(std::ldexp(1.5, -25)).bits == 1);                 // above it: the least subnormal
  CHECK(f16(-0.0).bits == 0x8000);
  CHECK(f16(1e300).bits == 0x7c00);
  CHECK(f16(-1e300).bits == 0xfc00);
  CHECK(f16(1e-300).bits == 0);
  // One rounding from a double, not two through f32: 1 + 2^-11 + 2^-40 is above the tie.
  CHECK(f16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits == 0x3c01);
}

TEST_CASE("engine.ir.half.bf16_is_f32_rounded") {
  CHECK(bf16(1.0f).bits == 0x3f80);
  CHECK(bf16(1.0f / 3).bits == 0x3eab);
  CHECK(bf16(1.00390625f).bits == 0x3f80);  // a tie: to even
  CHECK(bf16(1.01171875f).bits == 0x3f82);  // a tie: to even, upwards
  CHECK(static_cast<float>(bf16::from_bits(0x4049)) == 3.140625f);
  CHECK(bf16(3.4e38f).bits == 0x7f80);  // rounds past the largest finite: inf
  CHECK(std::isnan(static_cast<float>(bf16(NAN))));
  for (uint32_t b = 0; b < 65536; ++b) {  // every finite pattern round trips
    const bf16 h = bf16::from_bits(static_cast<uint16_t>(b));
    const float x = static_cast<float>(h);
    if (std::isnan(x)) continue;
    REQUIRE(bf16(x).bits == b);
  }
}

// The f32 conversions (F16C where the build has it, bf16's integer rounding) against the generic
// rounding from double, on every sign, exponent and top mantissa bits of an f32, each with the
// low bits that decide the rounding: zero, the tie, either side of it, all ones, and a few
// random ones (the dropped bits of a result that is an f16 subnormal reach higher up).
TEST_CASE("engine.ir.half.f32_conversions_match_the_generic_rounding") {
  uint32_t lcg = 12345;
  auto next = [&] { return lcg = lcg * 1664525u + 1013904223u; };
  int64_t checked = 0;
  for (uint32_t top = 0; top < 65536; ++top) {  // sign, exponent, 7 mantissa bits
    for (uint32_t mid = 0; mid < 8; ++mid) {    // the next 3 mantissa bits (f16 keeps 10)
      const uint32_t hi = top << 16 | mid << 13;
      const uint32_t lows[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, next() & 0x1fff, next() & 0x1fff};
      for (uint32_t low : lows) {
        for (uint32_t b16 : {0u, 0x8000u, 0x7fffu, 0x7fffu + (next() & 1u), next() & 0xffffu}) {
          uint32_t u = hi | low;
          float x;
          std::memcpy(&x, &u, 4);
          REQUIRE(half_detail::float_to_half(x) == half_detail::from_double<5, 10>(x));
          u = top << 16 | b16;
          std::memcpy(&x, &u, 4);
          REQUIRE(half_detail::float_to_bf16(x) == half_detail::from_double<8, 7>(x));
          checked += 2;
        }
      }
    }
  }
  CHECK(checked == 2 * 65536 * 8 * 8 * 5);
  // And every f16 widens the same by either path (NaNs apart: the CPU's comes back quiet).
  for (uint32_t b = 0; b < 65536; ++b) {
    const float fast = half_detail::half_to_float(static_cast<uint16_t>(b));
    const float slow = half_detail::half_to_float_bits(static_cast<uint16_t>(b));
    if (std::isnan(slow)) {
      CHECK(std::isnan(fast));
      continue;
    }
    uint32_t fu, su;
    std::memcpy(&fu, &fast, 4);
    std::memcpy(&su, &slow, 4);
    REQUIRE(fu == su);
  }
}
