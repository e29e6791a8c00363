// The 16-bit float storage types: IEEE half (f16) and bfloat16 (bf16).
//   f16 h(0.1);  float x = float(h);       // 0.0999755859375: rounded to nearest even, once
//   bf16 b(1.0f / 3);  b.bits == 0x3eab    // the top half of the f32, rounded
// They hold bits and convert, nothing more: Tapestry computes on them in f32 (the builders cast
// at the kernel boundary, docs/dtypes.md), so no arithmetic is defined and a kernel that meets
// one by accident fails to compile instead of computing in the wrong type. Conversions from
// double round once (not through f32), as numpy's astype(float16) does. Host and device code.
// From and to f32, host code uses the CPU's own conversions where the build has them (F16C,
// part of x86-64-v3) and a few integer operations for bf16: the same bits as the generic
// rounding (tests/engine/ir/half_test.cpp compares them), several times faster.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__F16C__) && !defined(__CUDACC__)
#include <immintrin.h>
#define TP_HALF_F16C 1
#endif

#if defined(__CUDACC__)
#define TP_ELEM_HD __host__ __device__
#else
#define TP_ELEM_HD
#endif

namespace tapestry {

namespace half_detail {

template <class To, class From> TP_ELEM_HD inline To bits_as(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  memcpy(&t, &f, sizeof(To));
  return t;
}

// d rounded to nearest even into a binary float of EB exponent and MB mantissa bits (16 in all).
template <int EB, int MB> TP_ELEM_HD inline uint16_t from_double(double d) {
  const uint64_t x = bits_as<uint64_t>(d);
  const uint16_t sign = static_cast<uint16_t>((x >> 63) << 15);
  const uint64_t ax = x & 0x7fffffffffffffffULL;
  constexpr int bias = (1 << (EB - 1)) - 1;
  constexpr uint16_t inf = static_cast<uint16_t>(((1 << EB) - 1) << MB);
  const uint64_t frac = ax & ((uint64_t(1) << 52) - 1);
  if (ax >= 0x7ff0000000000000ULL) {  // inf, or NaN kept quiet with its top payload bits
    if (ax == 0x7ff0000000000000ULL) return sign | inf;
    return static_cast<uint16_t>(sign | inf | (1u << (MB - 1)) | (frac >> (52 - MB)));
  }
  const int e = static_cast<int>(ax >> 52) - 1023;
  if (e > bias) return sign | inf;
  if ((ax >> 52) == 0) return sign;  // a double subnormal is far below the smallest subnormal
  const uint64_t m = frac | (uint64_t(1) << 52);
  constexpr int emin = 1 - bias;
  const int shift = 52 - MB + (e < emin ? emin - e : 0);  // bits dropped from m
  if (shift > 53) return sign;                            // below half the smallest subnormal
  uint64_t q = m >> shift;
  const uint64_t rem = m & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  if (e < emin) return static_cast<uint16_t>(sign | q);  // subnormal (or, rounded up, the least normal)
  int be = e + bias;
  if (q >> (MB + 1)) {
    q >>= 1;
    ++be;
  }
  if (be >= (1 << EB) - 1) return sign | inf;
  return static_cast<uint16_t>(sign | (be << MB) | (q & ((1u << MB) - 1)));
}

// The generic f16 -> f32 (exact: every f16 is an f32).
TP_ELEM_HD inline float half_to_float_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int s = 0;
      while (!(man & 0x400u)) {
        man <<= 1;
        ++s;
      }
      bits = sign | static_cast<uint32_t>(113 - s) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 112) << 23 | man << 13;
  }
  return bits_as<float>(bits);
}

TP_ELEM_HD inline float half_to_float(uint16_t h) {
#if defined(TP_HALF_F16C)
  return _cvtsh_ss(h);  // exact; a signalling NaN comes back quiet, as a NaN through f32 would
#else
  return half_to_float_bits(h);
#endif
}

// x rounded to nearest even into f16; the same bits as from_double<5, 10>(x) (x widens exactly).
TP_ELEM_HD inline uint16_t float_to_half(float x) {
#if defined(TP_HALF_F16C)
  // The immediate's rounding (bit 2 clear), not MXCSR's; a NaN keeps its sign and top payload
  // bits and is made quiet, as from_double does.
  return static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
#else
  return from_double<5, 10>(x);
#endif
}

// x rounded to nearest even into bf16 (f32's top half): add just under half of the dropped
// half's unit, plus the kept half's low bit (ties to even), and keep the top; a carry rounds up
// into the exponent, and the largest finite values round to inf, as from_double<8, 7> does.
// A NaN keeps its sign and top payload bits and is made quiet (it would otherwise round to inf
// or lose its payload). No branches, so loops of it vectorize.
TP_ELEM_HD inline uint16_t float_to_bf16(float x) {
  const uint32_t u = bits_as<uint32_t>(x);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

}  // namespace half_detail

struct f16 {
  uint16_t bits;
  f16() = default;
  TP_ELEM_HD explicit f16(double d) : bits(half_detail::from_double<5, 10>(d)) {}
  TP_ELEM_HD explicit f16(float x) : bits(half_detail::float_to_half(x)) {}
  TP_ELEM_HD explicit operator float() const { return half_detail::half_to_float(bits); }
  TP_ELEM_HD explicit operator double() const { return half_detail::half_to_float(bits); }
  static TP_ELEM_HD f16 from_bits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
};

struct bf16 {
  uint16_t bits;
  bf16() = default;
  TP_ELEM_HD explicit bf16(double d) : bits(half_detail::from_double<8, 7>(d)) {}
  TP_ELEM_HD explicit bf16(float x) : bits(half_detail::float_to_bf16(x)) {}
  TP_ELEM_HD explicit operator float() const { return half_detail::bits_as<float>(uint32_t(bits) << 16); }
  TP_ELEM_HD explicit operator double() const { return static_cast<float>(*this); }
  static TP_ELEM_HD bf16 from_bits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2);

}  // namespace tapestry
