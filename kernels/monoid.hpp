// The reduction monoids, once for the CPU and CUDA kernels, partial combines and collectives.
//   float lo = fn::identity<Monoid::Max, float>();                  // -inf
//   int32_t s = fn::combine<Monoid::Sum>(INT32_MAX, int32_t(1));     // wraps to INT32_MIN
// Semantics are numpy's: NaN propagates through max and min (the first NaN wins); integer sums
// and products wrap (computed unsigned, no UB); on bools sum is or, prod and, max or, min and.
// Light on purpose (no libm declarations): the engine includes it for the enum.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "engine/ir/complex.hpp"
#include "engine/ir/op.hpp"
#include "kernels/hd.hpp"

namespace tapestry {

enum class Monoid : uint8_t { Sum, Prod, Max, Min, And, Or };

// The monoid of a Reduce op (Sum Prod Max Min All Any); nullopt for any other op.
constexpr std::optional<Monoid> monoid_of(Op op) {
  switch (op) {
    case Op::Sum: return Monoid::Sum;
    case Op::Prod: return Monoid::Prod;
    case Op::Max: return Monoid::Max;
    case Op::Min: return Monoid::Min;
    case Op::All: return Monoid::And;
    case Op::Any: return Monoid::Or;
    default: return std::nullopt;
  }
}

constexpr std::string_view monoid_name(Monoid m) {
  constexpr std::string_view names[] = {"sum", "prod", "max", "min", "and", "or"};
  return names[static_cast<int>(m)];
}

// f(MonoidC<M>{}) for a run-time m: kernels are instantiated per monoid.
template <Monoid M> using MonoidC = std::integral_constant<Monoid, M>;
template <class F> decltype(auto) dispatch_monoid(Monoid m, F&& f) {
  switch (m) {
    case Monoid::Sum: return f(MonoidC<Monoid::Sum>{});
    case Monoid::Prod: return f(MonoidC<Monoid::Prod>{});
    case Monoid::Max: return f(MonoidC<Monoid::Max>{});
    case Monoid::Min: return f(MonoidC<Monoid::Min>{});
    case Monoid::And: return f(MonoidC<Monoid::And>{});
    default: return f(MonoidC<Monoid::Or>{});
  }
}

namespace fn {

namespace detail {

template <class T> inline constexpr bool is_fp = std::is_floating_point_v<T>;
template <class T> inline constexpr bool is_bool = std::is_same_v<T, bool>;
template <class T> inline constexpr bool is_int = std::is_integral_v<T> && !is_bool<T>;
template <class T> inline constexpr bool is_cx = tapestry::is_cx<T>;  // c64, c128
template <class T> inline constexpr bool is_half = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

// Integer limits usable in device code (std::numeric_limits is host-only in nvcc).
template <class T> struct Lim;
template <> struct Lim<int8_t> { static constexpr int8_t lo = -128, hi = 127; };
template <> struct Lim<uint8_t> { static constexpr uint8_t lo = 0, hi = 255; };
template <> struct Lim<int32_t> { static constexpr int32_t lo = -2147483647 - 1, hi = 2147483647; };
template <> struct Lim<int64_t> {
  static constexpr int64_t lo = -9223372036854775807LL - 1, hi = 9223372036854775807LL;
};

// Signed overflow wraps (as numpy) without C++ undefined behaviour.
template <class T> TP_HD T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T> TP_HD T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T> TP_HD T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

}  // namespace detail

// e with combine<M>(e, x) == x for every x of T (a NaN included; but Sum's +0 turns -0 into +0,
// as numpy's sum of an empty array is +0): an empty reduction's value and every fold's start.
template <Monoid M, class T> TP_HD constexpr T identity() {
  if constexpr (M == Monoid::Sum || M == Monoid::Or) return T(0);
  else if constexpr (M == Monoid::Prod || M == Monoid::And) return T(1);
  else if constexpr (detail::is_bool<T>) return M == Monoid::Min;
  else if constexpr (detail::is_fp<T>) return M == Monoid::Max ? -T(INFINITY) : T(INFINITY);
  else return M == Monoid::Max ? detail::Lim<T>::lo : detail::Lim<T>::hi;
}

// a M b. Max and min give a when a is NaN, else b unless a is strictly beyond it: b on ties, so
// a fold cut into partials keeps the whole fold's signed zero. And/Or give 0 or 1 in T.
// (fn::Add, Mul, Maximum and Minimum are these.)
template <Monoid M, class T> TP_HD T combine(T a, T b) {
  if constexpr (M == Monoid::Sum) {
    if constexpr (detail::is_bool<T>) return a || b;
    else if constexpr (detail::is_fp<T> || detail::is_cx<T>) return a + b;
    else return detail::wrap_add(a, b);
  } else if constexpr (M == Monoid::Prod) {
    if constexpr (detail::is_bool<T>) return a && b;
    else if constexpr (detail::is_fp<T> || detail::is_cx<T>) return a * b;
    else return detail::wrap_mul(a, b);
  } else if constexpr (M == Monoid::Max) {
    return (a > b || a != a) ? a : b;
  } else if constexpr (M == Monoid::Min) {
    return (a < b || a != a) ? a : b;
  } else if constexpr (M == Monoid::And) {
    if constexpr (detail::is_bool<T>) return a && b;  // the reductions' accumulator
    else return static_cast<T>(a != T(0) && b != T(0));
  } else {
    if constexpr (detail::is_bool<T>) return a || b;
    else return static_cast<T>(a != T(0) || b != T(0));
  }
}

// The accumulator of reducing T by M: sums and products of floats in f64, of complex numbers in
// c128 and of integers and bools in i64 (a bool sum counts); max and min in T; and/or in bool.
// (Complex numbers have only Sum and Prod: numpy's lexicographic max is refused by the builders.)
template <Monoid M, class T>
using acc_t = std::conditional_t<
    M == Monoid::Sum || M == Monoid::Prod,
    std::conditional_t<detail::is_fp<T>, double, std::conditional_t<detail::is_cx<T>, c128, int64_t>>,
    std::conditional_t<M == Monoid::And || M == Monoid::Or, bool, T>>;

// A reduction's fold: A acc = init(); acc = step(acc, x) per element; join(a, b) merges the
// folds of two consecutive runs, a's first.
template <Monoid M, class T> struct Fold {
  static constexpr Monoid kMonoid = M;
  using A = acc_t<M, T>;
  static TP_HD A init() { return identity<M, A>(); }
  static TP_HD A join(A a, A b) { return combine<M>(a, b); }
  static TP_HD A step(A a, T x) {
    if constexpr (detail::is_bool<A>) return join(a, x != T(0));
    else return join(a, static_cast<A>(x));
  }
};

// Argmax/argmin: whether x replaces the best so far. Strictly better, so the first of equals
// stays; NaN is the extreme and the first NaN stays.
template <bool Max, class T> TP_HD bool arg_better(T x, T best) {
  if (best != best) return false;
  if (x != x) return true;
  if constexpr (Max) return x > best;
  else return x < best;
}

}  // namespace fn
}  // namespace tapestry
