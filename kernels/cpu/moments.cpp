// run_moments: count, mean and centred sum of squares of each row, in one read pass.
//
// A row is cut into fixed chunks of kChunk elements. A chunk is summed shifted by its first
// element, d = x - x0, as s = sum d and q = sum d^2 in f64 (16 lanes, vectorized for AVX2 and
// AVX-512 in vector_kernels.cpp); then
// mean = x0 + s/n (kept as the pair), sum = n x0 + s and m2 = q - s^2/n. The shift keeps the
// cancellation in q - s^2/n small (|x0 - mean|^2 <= m2 within a chunk), so a large mean with a
// small spread loses nothing.
// Chunks are merged in order with Chan's pairwise formula. The chunking does not depend on
// the thread count, so neither does the result.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vector_kernels.hpp"

namespace tapestry::cpu {
namespace {

constexpr int64_t kChunk = int64_t(1) << 14;  // 64 KiB of f32: a chunk's merge is noise
// A chunk's sums: vector_kernels.cpp's, for the instruction set in use.
Moments chunk_moments(const float* p, int64_t n) { return vec::table().moments_f32(p, n); }
Moments chunk_moments(const double* p, int64_t n) { return vec::table().moments_f64(p, n); }

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
