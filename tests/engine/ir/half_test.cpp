#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

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
