// Element functors of the Map ops, written once for the CPU and CUDA kernels.
//   fn::Add<float> add;  float y = add(1.f, 2.f);          // 3
//   bool lt = fn::Lt<int32_t>{}(1, 2);  int32_t z = fn::Cast<float, int32_t>{}(2.7f);  // 2
// Semantics follow numpy; every functor compiles for all five dtypes (see each comment).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/hd.hpp"
#include "kernels/monoid.hpp"  // is_fp, Lim, wrap_add, ...: shared with the monoids
#if !defined(__CUDACC__)
#include "kernels/tanh_f32.hpp"
#endif

// glibc's libmvec holds vector versions of these functions; declaring them `simd`
// lets GCC vectorize the map loops that call them without -ffast-math (glibc only
// does this itself under __FAST_MATH__). The map kernel keeps every element on the
// vector path (tiles are padded), so results never depend on an element's position.
// A file whose loops must stay scalar defines TP_SCALAR_MATH_ONLY before including this.
#if !defined(TP_SCALAR_MATH_ONLY) && !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__x86_64__) && defined(__GLIBC__) &&                                                         \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define TP_SIMD_DECL __attribute__((simd("notinbranch")))
extern "C" {
TP_SIMD_DECL float expf(float) noexcept;
TP_SIMD_DECL double exp(double) noexcept;
TP_SIMD_DECL float logf(float) noexcept;
TP_SIMD_DECL double log(double) noexcept;
TP_SIMD_DECL float sinf(float) noexcept;
TP_SIMD_DECL double sin(double) noexcept;
TP_SIMD_DECL float cosf(float) noexcept;
TP_SIMD_DECL double cos(double) noexcept;
TP_SIMD_DECL float tanhf(float) noexcept;
TP_SIMD_DECL double tanh(double) noexcept;
TP_SIMD_DECL float erfcf(float) noexcept;
TP_SIMD_DECL double erfc(double) noexcept;
TP_SIMD_DECL float powf(float, float) noexcept;
TP_SIMD_DECL double pow(double, double) noexcept;
TP_SIMD_DECL float atan2f(float, float) noexcept;
TP_SIMD_DECL double atan2(double, double) noexcept;
}
#undef TP_SIMD_DECL
#endif

namespace tapestry::fn {

namespace detail {

// Float to integer truncates toward zero; NaN gives 0 and out-of-range saturates,
// so no input is undefined behaviour.
template <class To, class From> TP_HD To float_to(From x) {
  if constexpr (is_bool<To>) {
    return x != From(0);
  } else if constexpr (is_fp<To>) {
    return static_cast<To>(x);
  } else {
    constexpr From lo = static_cast<From>(Lim<To>::lo);  // -2^(b-1) or 0, exact
    // 2^(b-1) or 2^b: the first value past the top (for i32 and i64 hi + 1 rounds to it).
    constexpr From top = lo < From(0) ? -lo : static_cast<From>(Lim<To>::hi) + From(1);
    if (x != x) return To(0);
    if (x >= top) return Lim<To>::hi;
    if (x < lo) return Lim<To>::lo;
    return static_cast<To>(x);
  }
}

// Libm by precision; integer and bool inputs go through double.
TP_HD inline float m_exp(float x) { return ::expf(x); }
TP_HD inline double m_exp(double x) { return ::exp(x); }
TP_HD inline float m_log(float x) { return ::logf(x); }
TP_HD inline double m_log(double x) { return ::log(x); }
TP_HD inline float m_sqrt(float x) { return ::sqrtf(x); }
TP_HD inline double m_sqrt(double x) { return ::sqrt(x); }
TP_HD inline float m_sin(float x) { return ::sinf(x); }
TP_HD inline double m_sin(double x) { return ::sin(x); }
TP_HD inline float m_cos(float x) { return ::cosf(x); }
TP_HD inline double m_cos(double x) { return ::cos(x); }
#if defined(__CUDACC__)
TP_HD inline float m_tanh(float x) { return ::tanhf(x); }
#else
inline float m_tanh(float x) { return tanh_f32(x); }  // inline and vectorized (tanh_f32.hpp)
#endif
TP_HD inline double m_tanh(double x) { return ::tanh(x); }
TP_HD inline float m_erfc(float x) { return ::erfcf(x); }
TP_HD inline double m_erfc(double x) { return ::erfc(x); }
TP_HD inline float m_floor(float x) { return ::floorf(x); }
TP_HD inline double m_floor(double x) { return ::floor(x); }
TP_HD inline float m_ceil(float x) { return ::ceilf(x); }
TP_HD inline double m_ceil(double x) { return ::ceil(x); }
TP_HD inline float m_rint(float x) { return ::nearbyintf(x); }  // half to even
TP_HD inline double m_rint(double x) { return ::nearbyint(x); }
TP_HD inline float m_fabs(float x) { return ::fabsf(x); }
TP_HD inline double m_fabs(double x) { return ::fabs(x); }
TP_HD inline float m_fmod(float a, float b) { return ::fmodf(a, b); }
TP_HD inline double m_fmod(double a, double b) { return ::fmod(a, b); }
TP_HD inline float m_copysign(float a, float b) { return ::copysignf(a, b); }
TP_HD inline double m_copysign(double a, double b) { return ::copysign(a, b); }
TP_HD inline float m_pow(float a, float b) { return ::powf(a, b); }
TP_HD inline double m_pow(double a, double b) { return ::pow(a, b); }
TP_HD inline float m_atan2(float a, float b) { return ::atan2f(a, b); }
TP_HD inline double m_atan2(double a, double b) { return ::atan2(a, b); }

// Applies a float function to any element type: floats directly, others via double.
template <class T, class F> TP_HD T float_math(T x, F f) {
  if constexpr (is_fp<T>) return f(x);
  else return float_to<T>(f(static_cast<double>(x)));
}

// numpy's npy_divmod for floats: floor division and a modulus with the divisor's sign.
template <class T> TP_HD T py_divmod(T a, T b, T* mod_out) {
  T mod = m_fmod(a, b);
  if (b == T(0)) {
    *mod_out = mod;
    return a / b;
  }
  T div = (a - mod) / b;
  if (mod != T(0)) {
    if ((b < T(0)) != (mod < T(0))) {
      mod += b;
      div -= T(1);
    }
  } else {
    mod = m_copysign(T(0), b);
  }
  T floordiv;
  if (div != T(0)) {
    floordiv = m_floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = m_copysign(T(0), a / b);
  }
  *mod_out = mod;
  return floordiv;
}

// Integer floor division: by zero gives 0; MIN / -1 wraps to MIN instead of trapping.
template <class T> TP_HD T int_floordiv(T a, T b) {
  if constexpr (std::is_unsigned_v<T>) {  // u8
    return b == 0 ? T(0) : T(a / b);
  } else {
    if (b == 0) return 0;
    if (b == -1) return wrap_sub(T(0), a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
}
template <class T> TP_HD T int_mod(T a, T b) {
  if constexpr (std::is_unsigned_v<T>) {  // u8
    return b == 0 ? T(0) : T(a % b);
  } else {
    if (b == 0 || b == -1) return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

// ---- Complex element functions (numpy's results; the special values of C99's Annex G that
// numpy keeps for exp, log and sqrt at zeros and infinities). ----

template <class T> TP_HD T m_hypot(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return ::hypotf(a, b);
  else return ::hypot(a, b);
}
template <class T> TP_HD T m_sinh(T x) {
  if constexpr (std::is_same_v<T, float>) return ::sinhf(x);
  else return ::sinh(x);
}
template <class T> TP_HD T m_cosh(T x) {
  if constexpr (std::is_same_v<T, float>) return ::coshf(x);
  else return ::cosh(x);
}
template <class T> TP_HD bool m_isinf(T x) { return x - x != x - x && x == x; }

template <class T> TP_HD cx<T> c_exp(cx<T> z) {
  const T r = m_exp(z.re);
  if (z.im == T(0)) return {r, z.im};  // exp of a real keeps a signed zero imaginary part
  return {r * m_cos(z.im), r * m_sin(z.im)};
}
template <class T> TP_HD cx<T> c_log(cx<T> z) { return {m_log(m_hypot(z.re, z.im)), m_atan2(z.im, z.re)}; }
// C99's csqrt: the branch cut on the negative real axis, the sign of the imaginary part kept.
template <class T> TP_HD cx<T> c_sqrt(cx<T> z) {
  const T a = z.re, b = z.im;
  if (a == T(0) && b == T(0)) return {T(0), b};
  if (m_isinf(b)) return {T(INFINITY), b};
  if (a != a) return {a, (b - b) / (b - b)};
  if (m_isinf(a)) {
    if (a > T(0)) return {a, b != b ? b : m_copysign(T(0), b)};
    return {m_fabs(b - b), m_copysign(-a, b)};
  }
  const T t = m_sqrt((m_fabs(a) + m_hypot(a, b)) * T(0.5));
  if (a >= T(0)) return {t, b / (T(2) * t)};
  return {m_fabs(b) / (T(2) * t), m_copysign(t, b)};
}
template <class T> TP_HD cx<T> c_sin(cx<T> z) {
  return {m_sin(z.re) * m_cosh(z.im), m_cos(z.re) * m_sinh(z.im)};
}
template <class T> TP_HD cx<T> c_cos(cx<T> z) {
  return {m_cos(z.re) * m_cosh(z.im), -(m_sin(z.re) * m_sinh(z.im))};
}
// numpy's complex reciprocal: Smith's quotient 1 / z.
template <class T> TP_HD cx<T> c_recip(cx<T> z) {
  if (m_fabs(z.im) <= m_fabs(z.re)) {
    const T r = z.im / z.re, d = z.re + z.im * r;
    return {T(1) / d, -r / d};
  }
  const T r = z.re / z.im, d = z.re * r + z.im;
  return {r / d, T(-1) / d};
}
// numpy's npy_cpow: 0 ^ b, small integer exponents by repeated squaring (exact where numpy
// is), the rest exp(b log a).
template <class T> TP_HD cx<T> c_pow(cx<T> a, cx<T> b) {
  if (b.re == T(0) && b.im == T(0)) return {T(1), T(0)};
  if (a.re == T(0) && a.im == T(0)) {
    if (b.re > T(0) && b.im == T(0)) return {T(0), T(0)};
    return {T(NAN), T(NAN)};
  }
  if (b.im == T(0) && b.re == m_floor(b.re) && b.re > T(-100) && b.re < T(100)) {
    const int n = static_cast<int>(b.re);
    if (n == 1) return a;
    if (n == 2) return a * a;
    if (n == 3) return a * (a * a);
    cx<T> r(T(1), T(0)), p = a;
    for (int mask = 1, m = n < 0 ? -n : n; mask <= m; mask <<= 1) {
      if (m & mask) r = r * p;
      p = p * p;
    }
    return n < 0 ? cx<T>(T(1), T(0)) / r : r;
  }
  return c_exp(b * c_log(a));
}

}  // namespace detail

// ---- Unary: the result has the operand's type (LogicalNot gives bool). ----

// Bool: identity (builders reject neg of bool).
template <class T> struct Neg {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_bool<T>) return x;
    else if constexpr (detail::is_fp<T> || detail::is_cx<T>) return -x;
    else return detail::wrap_sub(T(0), x);
  }
};
// Integer MIN stays MIN (wraps), as numpy. A complex number's is its modulus, a real.
template <class T> struct Abs {
  TP_HD auto operator()(T x) const {
    if constexpr (detail::is_cx<T>) return detail::m_hypot(x.re, x.im);
    else return real(x);
  }
  TP_HD static T real(T x) {
    if constexpr (detail::is_bool<T> || std::is_unsigned_v<T>) return x;
    else if constexpr (detail::is_fp<T>) return detail::m_fabs(x);
    else return x < 0 ? detail::wrap_sub(T(0), x) : x;
  }
};
template <class T> struct Exp {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_cx<T>) return detail::c_exp(x);
    else return detail::float_math(x, [](auto v) { return detail::m_exp(v); });
  }
};
template <class T> struct Log {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_cx<T>) return detail::c_log(x);
    else return detail::float_math(x, [](auto v) { return detail::m_log(v); });
  }
};
template <class T> struct Sqrt {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_cx<T>) return detail::c_sqrt(x);
    else return detail::float_math(x, [](auto v) { return detail::m_sqrt(v); });
  }
};
template <class T> struct Rsqrt {
  TP_HD T operator()(T x) const {
    return detail::float_math(x, [](auto v) { return decltype(v)(1) / detail::m_sqrt(v); });
  }
};
template <class T> struct Sin {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_cx<T>) return detail::c_sin(x);
    else return detail::float_math(x, [](auto v) { return detail::m_sin(v); });
  }
};
template <class T> struct Cos {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_cx<T>) return detail::c_cos(x);
    else return detail::float_math(x, [](auto v) { return detail::m_cos(v); });
  }
};
template <class T> struct Tanh {
  TP_HD T operator()(T x) const {
    return detail::float_math(x, [](auto v) { return detail::m_tanh(v); });
  }
};
template <class T> struct Sigmoid {
  TP_HD T operator()(T x) const {
    return detail::float_math(x, [](auto v) {
      using V = decltype(v);
      return V(1) / (V(1) + detail::m_exp(-v));
    });
  }
};
// x * Phi(x) written with erfc, which stays accurate where 1 + erf(x) cancels (x << 0).
template <class T> struct Gelu {
  TP_HD T operator()(T x) const {
    return detail::float_math(x, [](auto v) {
      using V = decltype(v);
      return V(0.5) * v * detail::m_erfc(v * V(-0.70710678118654752440));
    });
  }
};
// NaN propagates, as torch.relu.
template <class T> struct Relu {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_bool<T>) return x;
    else return (x > T(0) || x != x) ? x : T(0);
  }
};
template <class T> struct Floor {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_fp<T>) return detail::m_floor(x);
    else return x;
  }
};
template <class T> struct Ceil {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_fp<T>) return detail::m_ceil(x);
    else return x;
  }
};
// Half to even (the default rounding mode), as numpy.round.
template <class T> struct Round {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_fp<T>) return detail::m_rint(x);
    else return x;
  }
};
// NaN gives NaN; signed zeros stay.
template <class T> struct Sign {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_bool<T>) return x;
    else if constexpr (std::is_unsigned_v<T>) return x > T(0) ? T(1) : T(0);
    else return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
  }
};
template <class T> struct Square {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_bool<T>) return x;
    else if constexpr (detail::is_fp<T> || detail::is_cx<T>) return x * x;
    else return detail::wrap_mul(x, x);
  }
};
// Integers: 1/x truncated, with 1/0 = 0 (numpy's integer rule).
template <class T> struct Reciprocal {
  TP_HD T operator()(T x) const {
    if constexpr (detail::is_cx<T>) return detail::c_recip(x);
    else if constexpr (detail::is_bool<T>) return x;
    else if constexpr (detail::is_fp<T>) return T(1) / x;
    else return x == T(1) ? T(1) : (x == T(-1) ? T(-1) : T(0));
  }
};
template <class T> struct LogicalNot {
  TP_HD bool operator()(T x) const { return !(x != T(0)); }
};

// ---- Binary: both operands share T; arithmetic gives T, comparisons bool. ----

// Bool: or / xor / and (numpy's bool add and multiply). Add and Mul are the Sum and Prod monoids.
template <class T> struct Add {
  TP_HD T operator()(T a, T b) const { return combine<Monoid::Sum>(a, b); }
};
template <class T> struct Sub {
  TP_HD T operator()(T a, T b) const {
    if constexpr (detail::is_bool<T>) return a != b;
    else if constexpr (detail::is_fp<T> || detail::is_cx<T>) return a - b;
    else return detail::wrap_sub(a, b);
  }
};
template <class T> struct Mul {
  TP_HD T operator()(T a, T b) const { return combine<Monoid::Prod>(a, b); }
};
template <class T> struct FloorDiv {
  TP_HD T operator()(T a, T b) const {
    if constexpr (detail::is_bool<T>) {
      return a && b;
    } else if constexpr (detail::is_fp<T>) {
      T mod;
      return detail::py_divmod(a, b, &mod);
    } else {
      return detail::int_floordiv(a, b);
    }
  }
};
// Builders promote integer division to floats; for integers this equals FloorDiv.
template <class T> struct Div {
  TP_HD T operator()(T a, T b) const {
    if constexpr (detail::is_fp<T> || detail::is_cx<T>) return a / b;
    else return FloorDiv<T>{}(a, b);
  }
};
// The divisor's sign (Python, Lua, numpy); x mod 0 is NaN for floats, 0 for integers.
template <class T> struct Mod {
  TP_HD T operator()(T a, T b) const {
    if constexpr (detail::is_bool<T>) {
      return false;
    } else if constexpr (detail::is_fp<T>) {
      if (b == T(0)) return detail::m_fmod(a, b);
      T mod;
      detail::py_divmod(a, b, &mod);
      return mod;
    } else {
      return detail::int_mod(a, b);
    }
  }
};
// Integers by repeated squaring (wrapping); a negative exponent gives 0 except for
// bases 1 and -1.
template <class T> struct Pow {
  TP_HD T operator()(T a, T b) const {
    if constexpr (detail::is_cx<T>) {
      return detail::c_pow(a, b);
    } else if constexpr (detail::is_bool<T>) {
      return a || !b;
    } else if constexpr (detail::is_fp<T>) {
      return detail::m_pow(a, b);
    } else {
      if constexpr (std::is_signed_v<T>)
        if (b < 0) return a == T(1) ? T(1) : (a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0));
      using U = std::make_unsigned_t<T>;
      U r = 1, base = static_cast<U>(a);
      for (T e = b; e != 0; e >>= 1) {
        if (e & 1) r = static_cast<U>(r * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(r);
    }
  }
};
// NaN propagates (numpy's maximum/minimum, not fmax/fmin): the Max and Min monoids.
template <class T> struct Maximum {
  TP_HD T operator()(T a, T b) const { return combine<Monoid::Max>(a, b); }
};
template <class T> struct Minimum {
  TP_HD T operator()(T a, T b) const { return combine<Monoid::Min>(a, b); }
};
template <class T> struct Atan2 {
  TP_HD T operator()(T a, T b) const {
    if constexpr (detail::is_fp<T>) return detail::m_atan2(a, b);
    else return detail::float_to<T>(detail::m_atan2(double(a), double(b)));
  }
};
template <class T> struct Eq {
  TP_HD bool operator()(T a, T b) const { return a == b; }
};
template <class T> struct Ne {
  TP_HD bool operator()(T a, T b) const { return a != b; }
};
template <class T> struct Lt {
  TP_HD bool operator()(T a, T b) const { return a < b; }
};
template <class T> struct Le {
  TP_HD bool operator()(T a, T b) const { return a <= b; }
};
template <class T> struct Gt {
  TP_HD bool operator()(T a, T b) const { return a > b; }
};
template <class T> struct Ge {
  TP_HD bool operator()(T a, T b) const { return a >= b; }
};
template <class T> struct LogicalAnd {
  TP_HD bool operator()(T a, T b) const { return (a != T(0)) && (b != T(0)); }
};
template <class T> struct LogicalOr {
  TP_HD bool operator()(T a, T b) const { return (a != T(0)) || (b != T(0)); }
};

// ---- Ternary and conversion. ----

template <class T> struct Where {
  TP_HD T operator()(bool c, T a, T b) const { return c ? a : b; }
};

// Float to integer truncates toward zero (NaN -> 0, saturating); to bool is x != 0;
// integer narrowing wraps. f16 and bf16 convert through f32 (from f64 and the integers they
// round once, from double); complex to real keeps the real part (numpy's cast, without its
// warning), to bool tests both parts; a real becomes a complex with a +0 imaginary part.
template <class From, class To> struct Cast {
  TP_HD To operator()(From x) const {
    if constexpr (std::is_same_v<From, To>) {
      return x;
    } else if constexpr (detail::is_cx<From>) {
      if constexpr (detail::is_bool<To>) return x.re != decltype(x.re)(0) || x.im != decltype(x.im)(0);
      else if constexpr (detail::is_cx<To>) return To(x);
      else return Cast<decltype(x.re), To>{}(x.re);
    } else if constexpr (detail::is_half<From>) {
      return Cast<float, To>{}(static_cast<float>(x));
    } else if constexpr (detail::is_cx<To>) {
      using R = decltype(To{}.re);
      return To(Cast<From, R>{}(x), R(0));
    } else if constexpr (detail::is_half<To>) {
      if constexpr (detail::is_bool<From>) return To(x ? 1.0 : 0.0);
      else if constexpr (std::is_same_v<From, float>) return To(x);  // the fast f32 rounding
      else return To(static_cast<double>(x));
    } else if constexpr (detail::is_bool<To>) {
      return x != From(0);
    } else if constexpr (detail::is_bool<From>) {
      return x ? To(1) : To(0);
    } else if constexpr (detail::is_fp<From>) {
      return detail::float_to<To>(x);
    } else {
      return static_cast<To>(x);
    }
  }
};

// ---- The parts of a complex number (the builders send only complex operands here). ----

template <class T> struct Real {
  TP_HD auto operator()(T x) const { return x.re; }
};
template <class T> struct Imag {
  TP_HD auto operator()(T x) const { return x.im; }
};
template <class T> struct Conj {
  TP_HD T operator()(T x) const { return T(x.re, -x.im); }
};
template <class T> struct Angle {
  TP_HD auto operator()(T x) const { return detail::m_atan2(x.im, x.re); }
};
// re + i im from two reals of type T (f32 or f64).
template <class T> struct MakeComplex {
  TP_HD cx<T> operator()(T re, T im) const { return cx<T>(re, im); }
};

// The Map ops that have a functor of the same name, by arity (Cast and Where apart).
// clang-format off
#define TAPESTRY_UNARY_FUNCTORS(X)                                                      \
  X(Neg) X(Abs) X(Exp) X(Log) X(Sqrt) X(Rsqrt) X(Sin) X(Cos) X(Tanh) X(Sigmoid) X(Relu) \
  X(Gelu) X(Floor) X(Ceil) X(Round) X(Sign) X(Square) X(Reciprocal) X(LogicalNot)
#define TAPESTRY_BINARY_FUNCTORS(X)                                                    \
  X(Add) X(Sub) X(Mul) X(Div) X(FloorDiv) X(Mod) X(Pow) X(Maximum) X(Minimum) X(Atan2) \
  X(Eq) X(Ne) X(Lt) X(Le) X(Gt) X(Ge) X(LogicalAnd) X(LogicalOr)
// The unary ops defined on complex operands only, and the ops of the lists above that take
// complex operands as well (engine/ir/op.hpp's map_takes_complex says the same to the builders;
// kernels.cpu.map_program checks they agree).
#define TAPESTRY_COMPLEX_PART_FUNCTORS(X) X(Real) X(Imag) X(Conj) X(Angle)
#define TAPESTRY_COMPLEX_UNARY_FUNCTORS(X) \
  X(Neg) X(Abs) X(Exp) X(Log) X(Sqrt) X(Sin) X(Cos) X(Square) X(Reciprocal) X(LogicalNot)
#define TAPESTRY_COMPLEX_BINARY_FUNCTORS(X) X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Eq) X(Ne)
// clang-format on

}  // namespace tapestry::fn
