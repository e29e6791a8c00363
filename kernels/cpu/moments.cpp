// run_moments: count, mean and centred sum of squares of each row, in one read pass.
//
// A row is cut into fixed chunks of kChunk elements. A chunk is summed shifted by its first
// element, d = x - x0, as s = sum d and q = sum d^2 in f64 (16 lanes, vectorized); then
// mean = x0 + s/n (kept as the pair), sum = n x0 + s and m2 = q - s^2/n. The shift keeps the
// cancellation in q - s^2/n small (|x0 - mean|^2 <= m2 within a chunk), so a large mean with a
// small spread loses nothing.
// Chunks are merged in order with Chan's pairwise formula. The chunking does not depend on
// the thread count, so neither does the result.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"

namespace tapestry::cpu {
namespace {

constexpr int64_t kChunk = int64_t(1) << 14;  // 64 KiB of f32: a chunk's merge is noise
constexpr int kLanes = 16;

template <class T> Moments chunk_moments(const T* p, int64_t n) {
  const double x0 = static_cast<double>(p[0]);
  // Two sums a lane (s, q) in 16 lanes: eight AVX2 registers.
  double s[kLanes] = {}, q[kLanes] = {};
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (std::is_same_v<T, float>) {  // GCC's own vectorization of this mixes widths
    static_assert(kLanes == 16);
    const __m256d c = _mm256_set1_pd(x0);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
    for (; i + 16 <= n; i += 16) {
      const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i)), c);
      const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i + 4)), c);
      const __m256d d2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i + 8)), c);
      const __m256d d3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i + 12)), c);
      s0 = _mm256_add_pd(s0, d0);
      s1 = _mm256_add_pd(s1, d1);
      s2 = _mm256_add_pd(s2, d2);
      s3 = _mm256_add_pd(s3, d3);
      q0 = _mm256_fmadd_pd(d0, d0, q0);
      q1 = _mm256_fmadd_pd(d1, d1, q1);
      q2 = _mm256_fmadd_pd(d2, d2, q2);
      q3 = _mm256_fmadd_pd(d3, d3, q3);
    }
    _mm256_storeu_pd(s, s0), _mm256_storeu_pd(s + 4, s1), _mm256_storeu_pd(s + 8, s2),
        _mm256_storeu_pd(s + 12, s3);
    _mm256_storeu_pd(q, q0), _mm256_storeu_pd(q + 4, q1), _mm256_storeu_pd(q + 8, q2),
        _mm256_storeu_pd(q + 12, q3);
  }
#endif
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const double d = static_cast<double>(p[i + j]) - x0;
      s[j] += d;
      q[j] += d * d;
    }
  }
  for (int j = 0; i < n; ++i, ++j) {
    const double d = static_cast<double>(p[i]) - x0;
    s[j] += d;
    q[j] += d * d;
  }
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) {
      s[j] += s[j + w];
      q[j] += q[j + w];
    }
  }
  Moments m;
  m.count = n;
  const double nd = static_cast<double>(n);
  m.shift = x0;
  m.dmean = s[0] / nd;
  m.m2 = q[0] - s[0] * (s[0] / nd);
  if (m.m2 < 0) m.m2 = 0;  // rounding; NaN stays NaN
  // The sum is n x0 + s, exact enough; where x0 itself is inf or NaN that is NaN, so such a
  // (rare) chunk sums again as is (an inf among finite values sums to inf).
  if (std::isfinite(x0)) {
    m.sum = nd * x0 + s[0];
  } else {
    double t = 0;
    for (int64_t k = 0; k < n; ++k) t += static_cast<double>(p[k]);
    m.sum = t;
  }
  return m;
}

template <class T> Moments row_moments(const T* p, int64_t n) {
  Moments acc;
  for (int64_t c = 0; c < n; c += kChunk) merge_moments(acc, chunk_moments(p + c, std::min(kChunk, n - c)));
  return acc;
}

template <class T> void moments_typed(const T* p, int64_t rows, int64_t len, Moments* out) {
  if (rows == 1) {  // one row: its chunks in parallel, merged in order
    const int64_t nchunks = (len + kChunk - 1) / kChunk;
    std::vector<Moments> part(static_cast<size_t>(nchunks));
    parallel_for(nchunks, grain_for(nchunks, 4), [&](int64_t lo, int64_t hi, int) {
      for (int64_t c = lo; c < hi; ++c)
        part[c] = chunk_moments(p + c * kChunk, std::min(kChunk, len - c * kChunk));
    });
    Moments acc;
    for (const Moments& m : part) merge_moments(acc, m);
    out[0] = acc;
    return;
  }
  const int64_t min_rows = std::max<int64_t>(1, kChunk / std::max<int64_t>(len, 1));
  parallel_for(rows, grain_for(rows, min_rows), [&](int64_t lo, int64_t hi, int) {
    for (int64_t r = lo; r < hi; ++r) out[r] = row_moments(p + r * len, len);
  });
}

}  // namespace

void merge_moments(Moments& a, const Moments& b) {
  if (b.count == 0) return;
  if (a.count == 0) {
    a = b;
    return;
  }
  const double na = static_cast<double>(a.count), nb = static_cast<double>(b.count);
  const double n = na + nb;
  const double delta = (b.shift - a.shift) + (b.dmean - a.dmean);
  a.dmean += delta * (nb / n);
  a.m2 += b.m2 + delta * delta * (na * nb / n);
  a.count += b.count;
  a.sum += b.sum;
}

void run_moments(const View& x, int64_t rows, Moments* out) {
  internal_check(x.is_contiguous() && rows >= 1 && x.numel() % rows == 0);
  const int64_t len = x.numel() / rows;
  if (len == 0) {
    for (int64_t r = 0; r < rows; ++r) out[r] = Moments{};
    return;
  }
  switch (x.dtype) {
    case DType::F32: return moments_typed(x.ptr<float>(), rows, len, out);
    case DType::F64: return moments_typed(x.ptr<double>(), rows, len, out);
    default: internal_check(!"run_moments: f32 or f64 only");
  }
}

}  // namespace tapestry::cpu
