// tanh for float that GCC vectorizes inline: no call, no table, no branch (both halves are
// computed and one is selected), so a map loop over it runs at AVX2 speed.
//   float y = tapestry::fn::tanh_f32(x);   // within 2 ulp of the correctly rounded tanh(x)
// |x| < 0.625: x + x^3 P(x^2), P a degree-5 fit of (tanh x - x) / x^3 (relative error below
// 2^-26 before rounding). Otherwise (1 - t) / (1 + t) with t = exp(-2|x|) (|x| clamped to 9,
// where tanh rounds to 1 in float); exp is Cody-Waite range reduction, Cephes' degree-6
// polynomial and an exponent add. NaN stays NaN (it takes the first branch), +-inf gives +-1,
// -0 stays -0, subnormals pass through. Checked against double tanh over every float
// (tests/kernels/cpu/tanh_test.cpp). Host code only: CUDA keeps its own tanhf.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tapestry::fn {

inline float tanh_f32(float x) {
  const float a = std::fabs(x);
  // Small |x|: odd polynomial.
  const float z = x * x;
  float p = 0.002138226293027401f;
  p = p * z - 0.008171788416802883f;
  p = p * z + 0.021698210388422012f;
  p = p * z - 0.053946252912282944f;
  p = p * z + 0.1333320140838623f;
  p = p * z - 0.3333333134651184f;
  const float small = x + x * z * p;
  // Large |x|: t = exp(-2|x|) = 2^k e^r, |r| <= ln2 / 2.
  const float y = -2.0f * (a < 9.0f ? a : 9.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float kf = (y * 1.44269504088896341f + kRound) - kRound;
  const float r = (y - kf * 0.693359375f) - kf * -2.12194440e-4f;
  float e = 1.9875691500e-4f;
  e = e * r + 1.3981999507e-3f;
  e = e * r + 8.3334519073e-3f;
  e = e * r + 4.1665795894e-2f;
  e = e * r + 1.6666665459e-1f;
  e = e * r + 5.0000001201e-1f;
  e = e * (r * r) + r + 1.0f;
  const int32_t k = static_cast<int32_t>(kf);  // -26 .. 0: 2^k e is a normal float
  const float t = std::bit_cast<float>(std::bit_cast<int32_t>(e) + k * (int32_t(1) << 23));
  const float large = (1.0f - t) / (1.0f + t);
  return std::copysign(a >= 0.625f ? large : small, x);  // the sign also keeps -0 (x + -0 * p)
}

}  // namespace tapestry::fn
