// The hot loops of run_map, the 2-D f32 stencil and run_moments, compiled once per instruction
// set: TAPESTRY_VEC_NS names the variant (base: the build's flags; avx512: x86-64-v4, see
// cmake/native_flags.cmake), and isa.cpp picks one at run time.
//
// One rule keeps the variants apart in one binary: this file defines nothing outside its own
// namespace. An inline function of a header that is instantiated here and not inlined would be
// a weak symbol shared with the other variant, and the linker could keep the AVX-512 copy for
// an AVX2 machine; so every entry point is [[gnu::flatten]] (everything it calls is inlined)
// and the test kernels.cpu.isa.symbols checks the objects' symbol tables.
#include "kernels/cpu/vector_kernels.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "kernels/cpu/strided.hpp"
#include "kernels/functors.hpp"

#if !defined(TAPESTRY_VEC_NS)
#error "vector_kernels.cpp is compiled per instruction set with TAPESTRY_VEC_NS defined"
#endif

#define TP_FLAT [[gnu::flatten]]

namespace tapestry::cpu::vec::TAPESTRY_VEC_NS {
namespace {

// ---- run_map: one loop per (functor, dtype); restrict lets GCC vectorize without checks. ----

template <class F, class T, class R>
TP_FLAT void unary_loop(R* __restrict o, const T* __restrict a, int64_t n) {
  F f;
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
}
template <class F, class T, class R>
TP_FLAT void binary_loop(R* __restrict o, const T* __restrict a, const T* __restrict b, int64_t n) {
  F f;
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}
template <class T>
TP_FLAT void where_loop(T* __restrict o, const bool* __restrict c, const T* __restrict a,
                        const T* __restrict b, int64_t n) {
  // Read the mask as bytes and both values first: GCC then vectorizes the select (a
  // blend), where a bool load kept the loop scalar, with an unpredictable branch.
  fn::Where<T> f;
  const auto* m = reinterpret_cast<const unsigned char*>(c);
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[i], y = b[i];
    o[i] = f(m[i] != 0, x, y);
  }
}

template <template <class> class F, class T>
TP_FLAT void unary_kernel(void* o, const void* a, const void*, const void*, int64_t n) {
  using R = decltype(F<T>{}(T{}));
  unary_loop<F<T>, T, R>(static_cast<R*>(o), static_cast<const T*>(a), n);
}
template <template <class> class F, class T>
TP_FLAT void binary_kernel(void* o, const void* a, const void* b, const void*, int64_t n) {
  using R = decltype(F<T>{}(T{}, T{}));
  binary_loop<F<T>, T, R>(static_cast<R*>(o), static_cast<const T*>(a), static_cast<const T*>(b), n);
}
template <class T>
TP_FLAT void where_kernel(void* o, const void* c, const void* a, const void* b, int64_t n) {
  where_loop<T>(static_cast<T*>(o), static_cast<const bool*>(c), static_cast<const T*>(a),
                static_cast<const T*>(b), n);
}
template <class From, class To>
TP_FLAT void cast_kernel(void* o, const void* a, const void*, const void*, int64_t n) {
  unary_loop<fn::Cast<From, To>, From, To>(static_cast<To*>(o), static_cast<const From*>(a), n);
}

// f32 <-> f16 eight or sixteen at a time by the F16C instructions (x86-64-v3 has them; the
// AVX-512 variant's 512-bit forms): the same bits as half.hpp's scalar conversions, which
// use the same instructions one at a time (GCC does not vectorize those). n is a multiple of 64.
#if defined(__F16C__)
// GCC 12's avx512fintrin.h builds these conversions' results from a deliberately undefined
// vector (_mm512_undefined_*), which -Wmaybe-uninitialized reports once inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <>
TP_FLAT void cast_kernel<float, f16>(void* o, const void* a, const void*, const void*, int64_t n) {
  auto* out = static_cast<uint16_t*>(o);
  const auto* in = static_cast<const float*>(a);
#if defined(__AVX512F__)
  for (int64_t i = 0; i < n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#else
  for (int64_t i = 0; i < n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
}
template <>
TP_FLAT void cast_kernel<f16, float>(void* o, const void* a, const void*, const void*, int64_t n) {
  auto* out = static_cast<float*>(o);
  const auto* in = static_cast<const uint16_t*>(a);
#if defined(__AVX512F__)
  for (int64_t i = 0; i < n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
#else
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
}
#pragma GCC diagnostic pop
#endif
// bf16 <-> f32 are a shift and half.hpp's branchless rounding: plain loops GCC vectorizes.
template <>
TP_FLAT void cast_kernel<float, bf16>(void* o, const void* a, const void*, const void*, int64_t n) {
  auto* __restrict out = static_cast<uint16_t*>(o);
  const auto* __restrict in = static_cast<const float*>(a);
  for (int64_t i = 0; i < n; ++i) out[i] = half_detail::float_to_bf16(in[i]);
}
template <>
TP_FLAT void cast_kernel<bf16, float>(void* o, const void* a, const void*, const void*, int64_t n) {
  auto* __restrict out = static_cast<uint32_t*>(o);
  const auto* __restrict in = static_cast<const uint16_t*>(a);
  for (int64_t i = 0; i < n; ++i) out[i] = uint32_t(in[i]) << 16;
}

template <template <class> class F, int Arity> MapResolved pick(DType t) {
  return dispatch_dtype(t, [](auto tag) -> MapResolved {
    using T = typename decltype(tag)::type;
    if constexpr (Arity == 1) {
      return {&unary_kernel<F, T>, dtype_of<decltype(F<T>{}(T{}))>()};
    } else {
      return {&binary_kernel<F, T>, dtype_of<decltype(F<T>{}(T{}, T{}))>()};
    }
  });
}

// The same for a complex operand (c64 or c128), for the ops that take one.
template <template <class> class F, int Arity> MapResolved pick_cx(DType t) {
  return dispatch_complex(t, [](auto tag) -> MapResolved {
    using T = typename decltype(tag)::type;
    if constexpr (Arity == 1) {
      return {&unary_kernel<F, T>, dtype_of<decltype(F<T>{}(T{}))>()};
    } else {
      return {&binary_kernel<F, T>, dtype_of<decltype(F<T>{}(T{}, T{}))>()};
    }
  });
}

MapResolved pick_cast(DType from, DType to) {
  return dispatch_any_dtype(from, [&](auto ftag) {
    return dispatch_any_dtype(to, [&](auto ttag) -> MapResolved {
      using F = typename decltype(ftag)::type;
      using T = typename decltype(ttag)::type;
      return {&cast_kernel<F, T>, to};
    });
  });
}

MapResolved pick_where(DType t) {
  return dispatch_any_dtype(t, [&](auto tag) -> MapResolved {
    using T = typename decltype(tag)::type;
    return {&where_kernel<T>, t};
  });
}

MapResolved pick_make_complex(DType t) {
  if (t == DType::F32) return {&binary_kernel<fn::MakeComplex, float>, DType::C64};
  if (t == DType::F64) return {&binary_kernel<fn::MakeComplex, double>, DType::C128};
  return {};
}

// {nullptr, ...} for an op without a kernel (run_map checks every Map op has one) or an operand
// dtype the op does not take (the builders refuse those first).
TP_FLAT MapResolved map_kernel(const MapInstr& ins) {
  if (is_complex(ins.in)) {
    switch (ins.op) {
#define TP_CASE(name) \
  case Op::name: return pick_cx<fn::name, 1>(ins.in);
      TAPESTRY_COMPLEX_UNARY_FUNCTORS(TP_CASE)
      TAPESTRY_COMPLEX_PART_FUNCTORS(TP_CASE)
#undef TP_CASE
#define TP_CASE(name) \
  case Op::name: return pick_cx<fn::name, 2>(ins.in);
      TAPESTRY_COMPLEX_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
      case Op::Cast: return pick_cast(ins.in, ins.out);
      case Op::Where: return pick_where(ins.in);
      default: return {};
    }
  }
  if (is_half(ins.in) && ins.op != Op::Cast && ins.op != Op::Where) return {};  // computed in f32
  switch (ins.op) {
#define TP_CASE(name) \
  case Op::name: return pick<fn::name, 1>(ins.in);
    TAPESTRY_UNARY_FUNCTORS(TP_CASE)
#undef TP_CASE
#define TP_CASE(name) \
  case Op::name: return pick<fn::name, 2>(ins.in);
    TAPESTRY_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
    case Op::Cast: return pick_cast(ins.in, ins.out);
    case Op::Where: return pick_where(ins.in);
    case Op::Complex: return pick_make_complex(ins.in);
    default: return {};
  }
}

// ---- Vectors of f32 and f64 for the hand-written loops. ----

#if defined(__AVX512F__)
constexpr int kW = 16;  // f32 lanes
using VF = __m512;
using VD = __m512d;
inline VF vload(const float* p) { return _mm512_loadu_ps(p); }
inline VF vset(float v) { return _mm512_set1_ps(v); }
inline VF vzero() { return _mm512_setzero_ps(); }
inline VF vfma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
inline VF vadd(VF a, VF b) { return _mm512_add_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm512_mul_ps(a, b); }
inline void vstore(float* p, VF v) { _mm512_storeu_ps(p, v); }
inline void vstream(float* p, VF v) { _mm512_stream_ps(p, v); }
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kW = 8;
using VF = __m256;
inline VF vload(const float* p) { return _mm256_loadu_ps(p); }
inline VF vset(float v) { return _mm256_set1_ps(v); }
inline VF vzero() { return _mm256_setzero_ps(); }
inline VF vfma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VF vadd(VF a, VF b) { return _mm256_add_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm256_mul_ps(a, b); }
inline void vstore(float* p, VF v) { _mm256_storeu_ps(p, v); }
inline void vstream(float* p, VF v) { _mm256_stream_ps(p, v); }
#else
constexpr int kW = 0;  // scalar loops only
#endif

// c * s rounded on its own, then u + that: the map's separate Mul and Add. The empty asm makes
// the product opaque, so GCC cannot contract the pair into one fused multiply-add.
template <class V> inline V opaque(V v) {
  asm("" : "+v"(v));
  return v;
}
inline float axpy_one(float u, float c, float s) { return u + opaque(c * s); }

// ---- The 2-D f32 stencil (window.cpp's correlate2d_f32). ----

constexpr int kMaxRows = 64;  // kernel rows: window.cpp sends kernels of at most 64 taps

// Output rows computed together, and vectors of a row: kRows * kVecs sums in registers (16 of
// AVX-512's 32, 8 of AVX2's 16).
constexpr int kRows = 4;
constexpr int kVecs = kW == 16 ? 4 : 2;

// Output rows y .. y+R-1, whose input rows are rows[r] + q * sx for row q (R > 1 only where
// every row reads every kernel row). Rows together load each input row from memory once for
// all of them: one row at a time, an input row left the L1 cache (16 KiB rows of a 4096-wide
// grid) before the next output row read it again (W4: 57% of the copy rate on one thread,
// 4 rows: 80-95%).
template <int R>
inline void stencil_block(const Stencil2d& s, int64_t y, const float* const* rows, const int64_t* krow,
                          int nr) {
  float* orow[R];
  const float* urow[R];
  for (int q = 0; q < R; ++q) {
    orow[q] = s.out + (y + q) * s.ow;
    urow[q] = s.axpy ? s.u + (y + q) * s.u_row : nullptr;
  }
  auto scalar = [&](int64_t col) {
    for (int q = 0; q < R; ++q) {
      float acc = 0;
      for (int r = 0; r < nr; ++r)
        for (int64_t t = s.kstart[krow[r]]; t < s.kstart[krow[r] + 1]; ++t) {
          const int64_t j = s.kcol[t], xc = col + j + s.o1;
          if (xc >= 0 && xc < s.xw) acc = std::fma(rows[r][q * s.sx + col + j], s.kw[t], acc);
        }
      orow[q][col] = s.axpy ? axpy_one(urow[q][col], s.c, acc) : acc;
    }
  };
  int64_t col = 0;
  for (; col < s.c0; ++col) scalar(col);
#if defined(__AVX2__) || defined(__AVX512F__)
  // Streaming stores need aligned addresses: a few scalar columns first (the same number for
  // every row: the caller pairs rows only when their starts align alike).
  if (s.stream)
    for (; col < s.c1 && (reinterpret_cast<uintptr_t>(orow[0] + col) & (sizeof(VF) - 1)) != 0; ++col)
      scalar(col);
  const VF cv = vset(s.c);
  auto store = [&](int q, int64_t at, VF sum) {
    if (!s.axpy) return vstore(orow[q] + at, sum);
    const VF v = vadd(vload(urow[q] + at), opaque(vmul(cv, sum)));
    if (s.stream) vstream(orow[q] + at, v);
    else vstore(orow[q] + at, v);
  };
  for (; col + kVecs * kW <= s.c1; col += kVecs * kW) {  // kVecs independent sums a row
    VF a[R][kVecs];
#pragma GCC unroll 16
    for (int q = 0; q < R; ++q)
      for (int v = 0; v < kVecs; ++v) a[q][v] = vzero();
    for (int r = 0; r < nr; ++r) {
      const float* src = rows[r] + col;
      for (int64_t t = s.kstart[krow[r]]; t < s.kstart[krow[r] + 1]; ++t) {
        const float* p = src + s.kcol[t];
        const VF kv = vset(s.kw[t]);
#pragma GCC unroll 16
        for (int q = 0; q < R; ++q)
          for (int v = 0; v < kVecs; ++v) a[q][v] = vfma(vload(p + q * s.sx + v * kW), kv, a[q][v]);
      }
    }
#pragma GCC unroll 16
    for (int q = 0; q < R; ++q)
      for (int v = 0; v < kVecs; ++v) store(q, col + v * kW, a[q][v]);
  }
  for (; col + kW <= s.c1; col += kW) {
    VF a[R];
    for (int q = 0; q < R; ++q) a[q] = vzero();
    for (int r = 0; r < nr; ++r)
      for (int64_t t = s.kstart[krow[r]]; t < s.kstart[krow[r] + 1]; ++t) {
        const VF kv = vset(s.kw[t]);
        for (int q = 0; q < R; ++q) a[q] = vfma(vload(rows[r] + q * s.sx + col + s.kcol[t]), kv, a[q]);
      }
    for (int q = 0; q < R; ++q) store(q, col, a[q]);
  }
#endif
  for (; col < s.ow; ++col) scalar(col);
}

TP_FLAT void stencil2d_rows(const Stencil2d& s, int64_t lo, int64_t hi) {
  const float* rows[kMaxRows];
  int64_t krow[kMaxRows];  // the kernel row of each input row
  // Rows whose starts are equally aligned (streamed rows start with the same scalar columns).
  const bool pairs_align = !s.stream || (s.ow * sizeof(float)) % 64 == 0;
  for (int64_t y = lo; y < hi;) {
    int nr = 0;  // the kernel rows whose input row exists, in order
    for (int64_t i = 0; i < s.kh; ++i) {
      const int64_t c = y + i + s.o0;
      if (c < 0 || c >= s.xh) continue;
      rows[nr] = s.x + c * s.sx + s.o1;  // + column col + j reads x[c, col + j + o1]
      krow[nr++] = i;
    }
    // Rows y + 1 .. y + kRows - 1 read every kernel row too: they go together.
    if (pairs_align && nr == s.kh && y + kRows <= hi && y + kRows - 1 + s.kh - 1 + s.o0 < s.xh) {
      stencil_block<kRows>(s, y, rows, krow, nr);
      y += kRows;
    } else if (pairs_align && nr == s.kh && y + 2 <= hi && y + 1 + s.kh - 1 + s.o0 < s.xh) {
      stencil_block<2>(s, y, rows, krow, nr);
      y += 2;
    } else {
      stencil_block<1>(s, y, rows, krow, nr);
      y += 1;
    }
  }
#if defined(__AVX2__) || defined(__AVX512F__)
  if (s.stream) _mm_sfence();  // streamed rows visible before the caller returns
#endif
}

// ---- A small f32 matrix-vector product. ----

// A row's 16 partial sums as vectors (AVX-512: one of 16 lanes; AVX2: two of 8), and their sum
// by the same tree in every variant: halving the 16 lanes down to one. Rows go together so that
// each load of x serves several (8 sums in flight either way), and four rows' trees run side by
// side in one set of 128-bit vectors (a row's tree alone took ~15 instructions and spilled its
// accumulators; the W6 matvec's 64 blocks of rows spent a quarter of its instructions there).
constexpr int kGemvLanes = 16;
#if defined(__AVX512F__)
constexpr int kGemvVecs = 1, kGemvRows = 8;
// Lanes j + (j + 8).
inline __m256 gemv_half(const VF* acc) {
  typedef float F16 __attribute__((vector_size(64)));
  const F16 v = (F16)acc[0];
  // The halves by shuffles: GCC 12's extract intrinsics warn about their undefined operand.
  return _mm256_add_ps((__m256)__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7),
                       (__m256)__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kGemvVecs = 2, kGemvRows = 4;
inline __m256 gemv_half(const VF* acc) { return _mm256_add_ps(acc[0], acc[1]); }  // j + (j + 8)
#endif

#if defined(__AVX2__) || defined(__AVX512F__)
// The rest of the tree from a row's 8 lanes h: j + (j + 4), then j + (j + 2), then 0 + 1.
inline float gemv_total(__m256 h) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));  // j + (j + 4)
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));                                         // j + (j + 2)
  q = _mm_add_ss(q, _mm_movehdup_ps(q));                                          // 0 + 1
  return _mm_cvtss_f32(q);
}
// The same tree for four rows at once, their sums in the four lanes of the result: after
// j + (j + 4), lanes 0 and 2 of each row are paired across rows by unpacking, so that each
// addition below is one of gemv_total's (the same operands, so the same bits).
inline __m128 gemv_total4(__m256 h0, __m256 h1, __m256 h2, __m256 h3) {
  auto quarter = [](__m256 h) { return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)); };
  const __m128 q0 = quarter(h0), q1 = quarter(h1), q2 = quarter(h2), q3 = quarter(h3);
  // [r0: 0+2, r1: 0+2, r0: 1+3, r1: 1+3] and the same for rows 2 and 3.
  const __m128 s01 = _mm_add_ps(_mm_unpacklo_ps(q0, q1), _mm_unpackhi_ps(q0, q1));
  const __m128 s23 = _mm_add_ps(_mm_unpacklo_ps(q2, q3), _mm_unpackhi_ps(q2, q3));
  // (0+2) + (1+3) per row: gemv_total's last step with its operands swapped (exact either way).
  return _mm_add_ps(_mm_movelh_ps(s01, s23), _mm_movehl_ps(s23, s01));
}
#endif

TP_FLAT void gemv_f32(const float* a, int64_t lda, const float* x, float* y, int64_t n, int64_t k) {
  const int64_t kv = k / kGemvLanes * kGemvLanes;  // the vectorized part of each row
  auto tail = [&](const float* row, float sum) {
    for (int64_t p = kv; p < k; ++p) sum = std::fma(row[p], x[p], sum);
    return sum;
  };
  int64_t i = 0;
#if defined(__AVX2__) || defined(__AVX512F__)
  if (kv > 0) {
    auto rows = [&](auto nrows) {  // rows i .. i + nrows - 1
      constexpr int R = decltype(nrows)::value;
      VF acc[R][kGemvVecs];
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < kGemvVecs; ++v) acc[r][v] = vzero();
#pragma GCC unroll 2
      for (int64_t p = 0; p < kv; p += kGemvLanes) {
#pragma GCC unroll 8
        for (int v = 0; v < kGemvVecs; ++v) {
          const VF xv = vload(x + p + v * kW);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) acc[r][v] = vfma(vload(a + (i + r) * lda + p + v * kW), xv, acc[r][v]);
        }
      }
      if constexpr (R % 4 == 0) {
        for (int r = 0; r < R; r += 4) {
          const __m128 t4 = gemv_total4(gemv_half(acc[r]), gemv_half(acc[r + 1]), gemv_half(acc[r + 2]),
                                        gemv_half(acc[r + 3]));
          if (kv == k) {  // no tails: the four sums are the results
            _mm_storeu_ps(y + i + r, t4);
            continue;
          }
          alignas(16) float t[4];
          _mm_store_ps(t, t4);
          for (int j = 0; j < 4; ++j) y[i + r + j] = tail(a + (i + r + j) * lda, t[j]);
        }
      } else {
        for (int r = 0; r < R; ++r) y[i + r] = tail(a + (i + r) * lda, gemv_total(gemv_half(acc[r])));
      }
    };
    for (; i + kGemvRows <= n; i += kGemvRows) rows(std::integral_constant<int, kGemvRows>{});
    for (; i < n; ++i) rows(std::integral_constant<int, 1>{});
  }
#endif
  for (; i < n; ++i) {  // rows shorter than 16: no vectors, every variant alike
    float sum = 0;
    for (int64_t p = 0; p < k; ++p) sum = std::fma(a[i * lda + p], x[p], sum);
    y[i] = sum;
  }
}

// ---- One chunk of run_moments. ----

// Sixteen lanes of f64 sums (s, q) of d = x - x0, lane j taking the elements j mod 16; the
// lanes are then added pairwise. Every variant keeps these lanes, so every one sums the same
// numbers in the same order.
constexpr int kLanes = 16;

#if defined(__AVX512F__)
// Eight floats widened by one vcvtps2pd. __builtin_convertvector compiled to two 256-bit
// converts, two extracts and an insert (19 instructions per 16 floats instead of 10: W3 was
// bound by them rather than by memory), and GCC 12 warns about the undefined register
// _mm512_cvtps_pd passes for the mask's sake; the zero-masked form with every lane on is the
// same instruction without the warning.
inline __m512d widen8(const float* p) { return _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(p)); }
#endif

// Lines prefetched this far ahead (16 KiB). The hardware prefetcher alone left the loops at
// 69% of a plain read loop's speed over 256 MiB on two threads (Sapphire Rapids, process CPU
// time: bench/limits/bench_kernels.cpp); with it, 93-95%. (Summing in f32 within short blocks
// reached 98%, but changes the results.) A prefetch past the end of the data does not fault.
constexpr int64_t kAheadBytes = 16 << 10;

template <class T> TP_FLAT Moments chunk_moments(const T* p, int64_t n) {
  const char* ahead = reinterpret_cast<const char*>(p) + kAheadBytes;
  const double x0 = static_cast<double>(p[0]);
  alignas(64) double s[kLanes] = {}, q[kLanes] = {};
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
    const __m512d c = _mm512_set1_pd(x0);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, q0 = s0, q1 = s0;
    for (; i + 16 <= n; i += 16) {
      __builtin_prefetch(ahead + i * 4);
      const __m512d d0 = _mm512_sub_pd(widen8(p + i), c);
      const __m512d d1 = _mm512_sub_pd(widen8(p + i + 8), c);
      s0 = _mm512_add_pd(s0, d0);
      s1 = _mm512_add_pd(s1, d1);
      q0 = _mm512_fmadd_pd(d0, d0, q0);
      q1 = _mm512_fmadd_pd(d1, d1, q1);
    }
    _mm512_store_pd(s, s0), _mm512_store_pd(s + 8, s1);
    _mm512_store_pd(q, q0), _mm512_store_pd(q + 8, q1);
#elif defined(__AVX2__) && defined(__FMA__)
    const __m256d c = _mm256_set1_pd(x0);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
    for (; i + 16 <= n; i += 16) {
      __builtin_prefetch(ahead + i * 4);
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
    _mm256_store_pd(s, s0), _mm256_store_pd(s + 4, s1), _mm256_store_pd(s + 8, s2),
        _mm256_store_pd(s + 12, s3);
    _mm256_store_pd(q, q0), _mm256_store_pd(q + 4, q1), _mm256_store_pd(q + 8, q2),
        _mm256_store_pd(q + 12, q3);
#endif
  }
  for (; i + kLanes <= n; i += kLanes) {
    if constexpr (std::is_same_v<T, double>) {  // 16 doubles: two lines
      __builtin_prefetch(ahead + i * 8);
      __builtin_prefetch(ahead + i * 8 + 64);
    }
    for (int j = 0; j < kLanes; ++j) {
      const double d = static_cast<double>(p[i + j]) - x0;
      s[j] += d;
      q[j] = std::fma(d, d, q[j]);
    }
  }
  for (int j = 0; i < n; ++i, ++j) {
    const double d = static_cast<double>(p[i]) - x0;
    s[j] += d;
    q[j] = std::fma(d, d, q[j]);
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

TP_FLAT Moments moments_f32(const float* p, int64_t n) { return chunk_moments(p, n); }
TP_FLAT Moments moments_f64(const double* p, int64_t n) { return chunk_moments(p, n); }

#if defined(__AVX512F__)
constexpr const char* kName = "avx512";
#elif defined(__AVX2__)
constexpr const char* kName = "avx2";
#else
constexpr const char* kName = "x86-64";
#endif

}  // namespace

const Table table{kName, &map_kernel, &stencil2d_rows, &gemv_f32, &moments_f32, &moments_f64};

}  // namespace tapestry::cpu::vec::TAPESTRY_VEC_NS
