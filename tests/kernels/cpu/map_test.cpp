// Every Map functor, through run_map, against a scalar reference, for every dtype.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

template <class T> std::vector<T> samples() {
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (std::is_floating_point_v<T>) {
    const T inf = std::numeric_limits<T>::infinity();
    return {-100, -7.25,   -3.5, -2.5,     -1.5,
            -1,   -0.75,   -0.5, T(-1e-3), T(-0.0),
            0,    T(1e-3), 0.5,  0.75,     1,
            1.5,  2.5,     3,    3.5,      7.25,
            20,   100,     inf,  -inf,     std::numeric_limits<T>::quiet_NaN()};
  } else {
    using L = std::numeric_limits<T>;
    return {L::min(), T(L::min() + 1), -1000, -7, -3, -2, -1, 0, 1, 2, 3, 7, 1000, L::max()};
  }
}

template <class T> T wrap(__int128 x) {  // two's complement wrap, as numpy
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(x));
}

bool transcendental(Op op) {
  switch (op) {
    case Op::Exp:
    case Op::Log:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::Gelu:
    case Op::Rsqrt:
    case Op::Pow:
    case Op::Atan2: return true;
    default: return false;
  }
}

template <class T> double rtol_for(Op op) {
  if (!transcendental(op)) return 0;
  return std::is_same_v<T, float> ? 4e-6 : 1e-13;  // libmvec: a few ulp
}

// ---- References (long double for floats; explicit wrapping for integers). ----

template <class T> T ref_unary(Op op, T x) {
  using LD = long double;
  if constexpr (std::is_same_v<T, bool>) {
    return op == Op::LogicalNot ? !x : x;
  } else if constexpr (std::is_floating_point_v<T>) {
    LD v = x;
    switch (op) {
      case Op::Neg: return -x;
      case Op::Abs: return std::fabs(x);
      case Op::Exp: return T(std::exp(v));
      case Op::Log: return T(std::log(v));
      case Op::Sqrt: return T(std::sqrt(v));
      case Op::Rsqrt: return T(1 / std::sqrt(v));
      case Op::Sin: return T(std::sin(v));
      case Op::Cos: return T(std::cos(v));
      case Op::Tanh: return T(std::tanh(v));
      case Op::Sigmoid: return T(1 / (1 + std::exp(-v)));
      case Op::Gelu: return T(v * std::erfc(-v / std::sqrt(LD(2))) / 2);
      case Op::Relu: return std::isnan(x) ? x : (x > 0 ? x : T(0));
      case Op::Floor: return std::floor(x);
      case Op::Ceil: return std::ceil(x);
      case Op::Round: return std::nearbyint(x);
      case Op::Sign: return std::isnan(x) ? x : T((x > 0) - (x < 0));
      case Op::Square: return x * x;
      case Op::Reciprocal: return 1 / x;
      case Op::LogicalNot: return x == 0;
      default: break;
    }
  } else {
    __int128 v = x;
    switch (op) {
      case Op::Neg: return wrap<T>(-v);
      case Op::Abs: return wrap<T>(v < 0 ? -v : v);
      case Op::Relu: return x > 0 ? x : 0;
      case Op::Floor:
      case Op::Ceil:
      case Op::Round: return x;
      case Op::Sign: return T((x > 0) - (x < 0));
      case Op::Square: return wrap<T>(v * v);
      case Op::Reciprocal: return x == 1 ? 1 : (x == -1 ? -1 : 0);
      case Op::LogicalNot: return x == 0;
      default: break;
    }
  }
  FAIL("no reference for this op");
  return T{};
}

template <class T> T py_mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return std::numeric_limits<T>::quiet_NaN();
    T r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    if (r == 0) r = std::copysign(T(0), b);
    return r;
  } else {
    if (b == 0) return 0;
    __int128 r = __int128(a) % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return T(r);
  }
}

// Result of a binary op, widened to double for comparison; `skip` when untested here.
template <class T> double ref_binary(Op op, T a, T b, bool& skip) {
  skip = false;
  using LD = long double;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::LogicalAnd: return a != T(0) && b != T(0);
    case Op::LogicalOr: return a != T(0) || b != T(0);
    default: break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case Op::Add:
      case Op::Maximum: return a || b;
      case Op::Sub: return a != b;
      case Op::Mul:
      case Op::Div:
      case Op::FloorDiv:
      case Op::Minimum: return a && b;
      case Op::Mod: return false;
      case Op::Pow: return a || !b;
      default: skip = true; return 0;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Op::Add: return T(a + b);
      case Op::Sub: return T(a - b);
      case Op::Mul: return T(a * b);
      case Op::Div: return T(a / b);
      case Op::Mod: return py_mod(a, b);
      case Op::FloorDiv: {
        // Checked where the quotient is not within rounding of an integer (there the
        // exact rule is numpy's divmod, covered by the edge-case table).
        LD q = LD(a) / LD(b);
        if (!std::isfinite(q) || b == 0 || std::abs(q - std::nearbyint(q)) < 1e-4) skip = true;
        return double(std::floor(q));
      }
      case Op::Pow: return T(std::pow(LD(a), LD(b)));
      case Op::Maximum: return (std::isnan(a) || std::isnan(b)) ? nan : std::max(a, b);
      case Op::Minimum: return (std::isnan(a) || std::isnan(b)) ? nan : std::min(a, b);
      case Op::Atan2: return T(std::atan2(LD(a), LD(b)));
      default: skip = true; return 0;
    }
  } else {
    const __int128 x = a, y = b;
    switch (op) {
      case Op::Add: return wrap<T>(x + y);
      case Op::Sub: return wrap<T>(x - y);
      case Op::Mul: return wrap<T>(x * y);
      case Op::FloorDiv:
      case Op::Div: {
        if (y == 0) return 0;
        __int128 q = x / y;
        if (q * y != x && ((x < 0) != (y < 0))) --q;
        return wrap<T>(q);
      }
      case Op::Mod: return py_mod(a, b);
      case Op::Pow: {
        if (y < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
        if (y > 64) {
          skip = true;
          return 0;
        }
        T r = 1;
        for (int i = 0; i < int(y); ++i) r = wrap<T>(__int128(r) * x);
        return r;
      }
      case Op::Maximum: return std::max(a, b);
      case Op::Minimum: return std::min(a, b);
      default: skip = true; return 0;
    }
  }
}

const Op kUnary[] = {Op::Neg,   Op::Abs,  Op::Exp,     Op::Log,        Op::Sqrt,      Op::Rsqrt, Op::Sin,
                     Op::Cos,   Op::Tanh, Op::Sigmoid, Op::Relu,       Op::Gelu,      Op::Floor, Op::Ceil,
                     Op::Round, Op::Sign, Op::Square,  Op::Reciprocal, Op::LogicalNot};
const Op kBinary[] = {Op::Add, Op::Sub,     Op::Mul,     Op::Div,   Op::FloorDiv,   Op::Mod,
                      Op::Pow, Op::Maximum, Op::Minimum, Op::Atan2, Op::Eq,         Op::Ne,
                      Op::Lt,  Op::Le,      Op::Gt,      Op::Ge,    Op::LogicalAnd, Op::LogicalOr};

bool is_compare(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge ||
         op == Op::LogicalAnd || op == Op::LogicalOr || op == Op::LogicalNot;
}

template <class T> void check_unary() {
  const DType t = cpu::dtype_of<T>();
  const std::vector<T> xs = samples<T>();
  const auto a = tensor<T>({int64_t(xs.size())}, xs);
  for (Op op : kUnary) {
    const bool float_only = !std::is_floating_point_v<T> && (transcendental(op) || op == Op::Sqrt);
    if (float_only) continue;  // builders cast integers to floats first
    const DType rt = is_compare(op) ? DType::Bool : t;
    auto out = Value::alloc(rt, a->view().shape);
    cpu::run_map(single(op, rt, t, {a->view()}), out->view());
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(op_def(op).name);
      CAPTURE(dtype_name(t));
      CAPTURE(double(xs[i]));
      if (rt == DType::Bool) {
        CHECK(out->template data<bool>()[i] == bool(ref_unary<T>(op, xs[i])));
      } else {
        const T got = out->template data<T>()[i], want = ref_unary<T>(op, xs[i]);
        CAPTURE(double(got));
        CAPTURE(double(want));
        CHECK(close<T>(got, want, rtol_for<T>(op)));
      }
    }
  }
}

template <class T> void check_binary() {
  const DType t = cpu::dtype_of<T>();
  const std::vector<T> xs = samples<T>();
  std::vector<T> av, bv;
  for (T x : xs)
    for (T y : xs) av.push_back(x), bv.push_back(y);
  const Shape s{int64_t(av.size())};
  const auto a = tensor<T>(s, av), b = tensor<T>(s, bv);
  for (Op op : kBinary) {
    if (!std::is_floating_point_v<T> && op == Op::Atan2) continue;
    const DType rt = is_compare(op) ? DType::Bool : t;
    auto out = Value::alloc(rt, s);
    cpu::run_map(single(op, rt, t, {a->view(), b->view()}), out->view());
    for (size_t i = 0; i < av.size(); ++i) {
      bool skip = false;
      const double want = ref_binary<T>(op, av[i], bv[i], skip);
      if (skip) continue;
      const double got =
          rt == DType::Bool ? double(out->template data<bool>()[i]) : double(out->template data<T>()[i]);
      CAPTURE(op_def(op).name);
      CAPTURE(dtype_name(t));
      CAPTURE(double(av[i]));
      CAPTURE(double(bv[i]));
      CAPTURE(got);
      CAPTURE(want);
      if (rt == DType::Bool || !std::is_floating_point_v<T>) CHECK(got == want);
      else CHECK(close<T>(T(got), T(want), rtol_for<T>(op)));
    }
  }
}

}  // namespace

TEST_CASE("kernels.cpu.map.unary_functors") {
  for_each_isa([](const char* isa) {
    CAPTURE(isa);
    check_unary<float>();
    check_unary<double>();
    check_unary<int32_t>();
    check_unary<int64_t>();
    check_unary<bool>();
  });
}

TEST_CASE("kernels.cpu.map.binary_functors") {
  for_each_isa([](const char* isa) {
    CAPTURE(isa);
    check_binary<float>();
    check_binary<double>();
    check_binary<int32_t>();
    check_binary<int64_t>();
    check_binary<bool>();
  });
}

TEST_CASE("kernels.cpu.map.float_ops_on_integers_compile_and_run") {
  // Builders never send these, but every functor instantiates for every dtype.
  for (Op op : {Op::Exp, Op::Sqrt, Op::Tanh, Op::Gelu}) {
    const auto a = tensor<int32_t>({3}, {0, 4, 9});
    auto out = Value::alloc(DType::I32, {3});
    cpu::run_map(single(op, DType::I32, DType::I32, {a->view()}), out->view());
  }
  const auto a = tensor<int32_t>({3}, {0, 4, 9});
  auto out = Value::alloc(DType::I32, {3});
  cpu::run_map(single(Op::Sqrt, DType::I32, DType::I32, {a->view()}), out->view());
  CHECK(out->data<int32_t>()[2] == 3);
}
