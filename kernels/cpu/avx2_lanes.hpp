// AVX2 registers of f32 or f64 lanes under one name, for loops written once for both types
// (reduce.cpp's max and min folds, argreduce.cpp's two-pass scans). Only where __AVX2__ is
// defined (the build's baseline, x86-64-v3).
//   using L = Lanes<float>;  L::V m = L::max(L::load(p), L::splat(0.f));
#pragma once

#if defined(__AVX2__)
#include <immintrin.h>

namespace tapestry::cpu {

template <class T> struct Lanes;
template <> struct Lanes<float> {
  using V = __m256;
  static constexpr int kN = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V a) { _mm256_storeu_ps(p, a); }
  static V splat(float x) { return _mm256_set1_ps(x); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static V lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static V eq(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static V unord(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
  static V bor(V a, V b) { return _mm256_or_ps(a, b); }
  static V select(V mask, V yes, V no) { return _mm256_blendv_ps(no, yes, mask); }
  static int mask(V a) { return _mm256_movemask_ps(a); }
};
template <> struct Lanes<double> {
  using V = __m256d;
  static constexpr int kN = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V a) { _mm256_storeu_pd(p, a); }
  static V splat(double x) { return _mm256_set1_pd(x); }
  static V max(V a, V b) { return _mm256_max_pd(a, b); }
  static V min(V a, V b) { return _mm256_min_pd(a, b); }
  static V gt(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
  static V lt(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
  static V eq(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_EQ_OQ); }
  static V unord(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_UNORD_Q); }
  static V bor(V a, V b) { return _mm256_or_pd(a, b); }
  static V select(V mask, V yes, V no) { return _mm256_blendv_pd(no, yes, mask); }
  static int mask(V a) { return _mm256_movemask_pd(a); }
};

}  // namespace tapestry::cpu
#endif
