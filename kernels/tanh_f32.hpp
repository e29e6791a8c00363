// tanh for float that GCC vectorizes inline: no call, no table, no branch, so a map loop over
// it runs at AVX2 or AVX-512 speed.
//   float y = tapestry::fn::tanh_f32(x);   // within 2 ulp of the correctly rounded tanh(x)
// One formula for every x: tanh|x| = (1 - e^y) / (1 + e^y) with y = -2|x| (|x| clamped to 9,
// where tanh rounds to 1 in float) and e^y = 2^k (1 + q), q = e^r - 1, |r| <= ln2 / 2: Cody-Waite
// range reduction and Cephes' degree-6 polynomial in the expm1 form r + r^2 P(r). Numerator and
// denominator are each rounded once, from the exact 1 -+ 2^k and the product 2^k q, so the
// cancellation in 1 - e^y for small |x| costs nothing (k = 0 there: 1 - 2^k is 0 and the
// numerator is -q itself). It replaced a polynomial for |x| < 0.625 blended with the exp
// formula: both halves were computed for every element, ~35 vector operations against ~23
// (W2, docs/performance.md). NaN stays NaN (the clamp keeps it), +-inf gives +-1, -0 stays -0,
// subnormals pass through. Checked against double tanh over every float (worst 1.91 ulp;
// tests/kernels/cpu/tanh_test.cpp samples them). Host code only: CUDA keeps its own tanhf.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tapestry::fn {

inline float tanh_f32(float x) {
  const float a = std::fabs(x);
  const float y = -2.0f * (9.0f < a ? 9.0f : a);  // this order keeps a NaN (vminps takes its second)
  // y = k ln2 + r. t holds 1.5 * 2^23 + k, so k sits in its low mantissa bits.
  constexpr float kRound = 12582912.0f;
  const float t = y * 1.44269504088896341f + kRound;
  const float kf = t - kRound;
  const float r = (y - kf * 0.693359375f) - kf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float q = p * (r * r) + r;  // e^r - 1
  // 2^k (k = -26 .. 0): t's bits shifted up by 23 leave k << 23 (1.5 * 2^23's bits shift out).
  const float p2 = std::bit_cast<float>((std::bit_cast<uint32_t>(t) << 23) + 0x3F800000u);
  const float m = ((1.0f - p2) - p2 * q) / ((1.0f + p2) + p2 * q);
  return std::copysign(m, x);
}

}  // namespace tapestry::fn
