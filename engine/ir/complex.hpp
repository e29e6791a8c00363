// The complex element types c64 (cx<float>) and c128 (cx<double>): two reals, real part first,
// laid out as C's float _Complex, numpy's complex64 and BLAS's c/z matrices.
//   cx<float> z(1, 2), w = z * z;   // (-3, 4)
//   cx<double> d(z);                // widening is explicit, as every conversion of these types
// Arithmetic follows numpy's loops: the schoolbook product and Smith's quotient (the same
// rounding steps, so results match numpy's where the compiler keeps them separate). The
// element functions (exp, log, sqrt, abs, ...) are kernels/functors.hpp's. Host and device code.
#pragma once

#include "engine/ir/half.hpp"  // TP_ELEM_HD

namespace tapestry {

template <class T> struct cx {
  T re, im;
  cx() = default;
  TP_ELEM_HD constexpr cx(T r, T i) : re(r), im(i) {}
  TP_ELEM_HD constexpr explicit cx(T r) : re(r), im(0) {}
  template <class U> TP_ELEM_HD constexpr explicit cx(const cx<U>& o) : re(T(o.re)), im(T(o.im)) {}

  TP_ELEM_HD friend constexpr cx operator+(cx a, cx b) { return {a.re + b.re, a.im + b.im}; }
  TP_ELEM_HD friend constexpr cx operator-(cx a, cx b) { return {a.re - b.re, a.im - b.im}; }
  TP_ELEM_HD friend constexpr cx operator-(cx a) { return {-a.re, -a.im}; }
  TP_ELEM_HD friend constexpr cx operator*(cx a, cx b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
  // numpy's complex divide (Smith's method): scale by the larger part of the divisor; 0 gives
  // the components divided by +0 (inf or NaN).
  TP_ELEM_HD friend constexpr cx operator/(cx a, cx b) {
    const T br = b.re < 0 ? -b.re : b.re, bi = b.im < 0 ? -b.im : b.im;
    if (br >= bi) {
      if (br == 0 && bi == 0) return {a.re / br, a.im / br};
      const T rat = b.im / b.re, scl = T(1) / (b.re + b.im * rat);
      return {(a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl};
    }
    const T rat = b.re / b.im, scl = T(1) / (b.im + b.re * rat);
    return {(a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl};
  }
  TP_ELEM_HD friend constexpr bool operator==(cx a, cx b) { return a.re == b.re && a.im == b.im; }
  TP_ELEM_HD friend constexpr bool operator!=(cx a, cx b) { return !(a == b); }
  TP_ELEM_HD cx& operator+=(cx b) { return *this = *this + b; }
  TP_ELEM_HD cx& operator*=(cx b) { return *this = *this * b; }
};

using c64 = cx<float>;
using c128 = cx<double>;
static_assert(sizeof(c64) == 8 && sizeof(c128) == 16);

template <class T> inline constexpr bool is_cx = false;
template <class T> inline constexpr bool is_cx<cx<T>> = true;

}  // namespace tapestry
