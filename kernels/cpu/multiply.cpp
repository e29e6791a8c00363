// f32 products that underflow, without the microcode assist. An x86 multiply whose result is a
// subnormal takes a ~50-cycle assist per vector unless the program flushes subnormals to zero
// (which numpy does not, nor we): a 256-element product of values near 1e-20 costs 1.6 us
// instead of 35 ns. A converging f32 iteration meets it every step (conjugate gradient's r * r
// and p * Ap once the residual is ~1e-20). Here each product is formed exactly in f64 (a
// product of two floats fits in a double's 53 bits, and is normal there) where it may be below
// 2^-125, and rounded to f32 by rounding |d| * 2^149 to an integer (ties to even): the bits of
// the subnormal (or of the first normal binade, spaced alike). Elsewhere the multiply itself.
// Either way the IEEE product, bit for bit, with no instruction producing a subnormal.
#include <bit>
#include <cstdint>

#include "kernels/cpu/kernels.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tapestry::cpu {

namespace {

#if defined(__AVX2__)
// The products of four lanes below 2^-125 (as f64, with their f32 sign bits): |d| * 2^149 rounded
// to an integer, ties to even, is the f32's bits below the sign (2^23 and up: the first normal
// binade, whose spacing is the subnormals' 2^-149). No instruction sees a subnormal.
inline __m128i tiny_products(__m128 x, __m128 y) {
  const __m256d d = _mm256_mul_pd(_mm256_cvtps_pd(x), _mm256_cvtps_pd(y));  // exact
  const __m256d ad = _mm256_andnot_pd(_mm256_set1_pd(-0.0), d);
  const __m256d m = _mm256_round_pd(_mm256_mul_pd(ad, _mm256_set1_pd(0x1p149)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_cvtpd_epi32(m);
}

// Eight products. A lane whose biased exponents sum to 128 or more has a product of at least
// 2^-126 (or an inf, a NaN): the multiply itself, no assist. The others are below 2^-125:
// tiny_products. (Zeros and subnormal operands go that way too: exact, just not the fast path.)
inline __m256 products(__m256 x, __m256 y) {
  const __m256i e8 = _mm256_set1_epi32(0xff);
  const __m256i ex = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 23), e8);
  const __m256i ey = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(y), 23), e8);
  const __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(128), _mm256_add_epi32(ex, ey));
  if (_mm256_testz_si256(tiny, tiny)) return _mm256_mul_ps(x, y);
  const __m256i sign = _mm256_and_si256(_mm256_xor_si256(_mm256_castps_si256(x), _mm256_castps_si256(y)),
                                        _mm256_set1_epi32(INT32_MIN));
  const __m256i small = _mm256_or_si256(
      sign, _mm256_setr_m128i(tiny_products(_mm256_castps256_ps128(x), _mm256_castps256_ps128(y)),
                              tiny_products(_mm256_extractf128_ps(x, 1), _mm256_extractf128_ps(y, 1))));
  if (_mm256_movemask_epi8(tiny) == -1) return _mm256_castsi256_ps(small);
  // Mixed: the multiply on the other lanes, with the tiny ones' operands replaced by ones.
  const __m256 one = _mm256_set1_ps(1.0f), t = _mm256_castsi256_ps(tiny);
  const __m256 big = _mm256_mul_ps(_mm256_blendv_ps(x, one, t), _mm256_blendv_ps(y, one, t));
  return _mm256_blendv_ps(big, _mm256_castsi256_ps(small), t);
}
#endif

}  // namespace

void multiply_f32(float* o, const float* a, const float* b, float ca, float cb, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256 va = _mm256_set1_ps(ca), vb = _mm256_set1_ps(cb);
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, products(a ? _mm256_loadu_ps(a + i) : va, b ? _mm256_loadu_ps(b + i) : vb));
#endif
  // The tail (and a build without AVX2): the multiply itself, the same bits.
  for (; i < n; ++i) o[i] = (a ? a[i] : ca) * (b ? b[i] : cb);
}

}  // namespace tapestry::cpu
