// kernels/monoid.hpp for every dtype: identities, NaN and tie rules, integer wrap, bools, the
// accumulators; and cpu::combine_into / cpu::fill_identity, which the partial combines use.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "helpers.hpp"
#include "kernels/monoid.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

constexpr Monoid kMonoids[] = {Monoid::Sum, Monoid::Prod, Monoid::Max, Monoid::Min, Monoid::And, Monoid::Or};

template <class T> bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// Values that probe each dtype's edges (NaN and signed zeros for floats).
template <class T> std::vector<T> probes() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {T(0),           -T(0),           T(1),     T(-2.5),     L::infinity(),  -L::infinity(),
            L::quiet_NaN(), -L::quiet_NaN(), L::max(), L::lowest(), L::denorm_min()};
  } else {
    return {T(0), T(1), T(-1), T(7), L::max(), L::lowest()};
  }
}

// Sum's identity is +0, which turns a -0 into +0 (0 + -0): an all -0 sum is +0, as it always was.
template <Monoid M, class T> void check_identity() {
  constexpr T e = fn::identity<M, T>();
  for (T x : probes<T>()) {
    if (M == Monoid::Sum && x == T(0) && std::signbit(double(x))) {
      CHECK(same_bits(fn::combine<M>(e, x), T(0)));
      continue;
    }
    CHECK(same_bits(fn::combine<M>(e, x), M == Monoid::And || M == Monoid::Or ? T(x != T(0)) : x));
    CHECK(same_bits(fn::combine<M>(x, e), M == Monoid::And || M == Monoid::Or ? T(x != T(0)) : x));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("kernels.monoid.identity", T, bool, int32_t, int64_t, float, double) {
  check_identity<Monoid::Sum, T>();
  check_identity<Monoid::Prod, T>();
  check_identity<Monoid::Max, T>();
  check_identity<Monoid::Min, T>();
  check_identity<Monoid::And, T>();
  check_identity<Monoid::Or, T>();
  using L = std::numeric_limits<T>;
  constexpr bool fp = std::is_floating_point_v<T>;
  CHECK(fn::identity<Monoid::Max, T>() == (fp ? -L::infinity() : L::lowest()));
  CHECK(fn::identity<Monoid::Min, T>() == (fp ? L::infinity() : L::max()));
  CHECK(fn::identity<Monoid::Sum, T>() == T(0));
  CHECK(fn::identity<Monoid::Prod, T>() == T(1));
}

TEST_CASE_TEMPLATE("kernels.monoid.nan_and_ties", T, float, double) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), neg_nan = -nan;
  for (Monoid m : {Monoid::Max, Monoid::Min}) {
    dispatch_monoid(m, [&](auto mc) {
      constexpr Monoid M = decltype(mc)::value;
      CHECK(std::isnan(fn::combine<M>(nan, T(1))));
      CHECK(std::isnan(fn::combine<M>(T(1), nan)));
      CHECK(std::isnan(fn::combine<M>(-std::numeric_limits<T>::infinity(), nan)));
      CHECK(std::signbit(fn::combine<M>(neg_nan, nan)));  // the first NaN wins
      CHECK_FALSE(std::signbit(fn::combine<M>(nan, neg_nan)));
      CHECK_FALSE(std::signbit(fn::combine<M>(-T(0), T(0))));  // b on ties, as a fold's next element
      CHECK(std::signbit(fn::combine<M>(T(0), -T(0))));
    });
  }
  CHECK(fn::combine<Monoid::Max>(T(2), T(-3)) == T(2));
  CHECK(fn::combine<Monoid::Min>(T(2), T(-3)) == T(-3));
  CHECK(fn::combine<Monoid::And>(T(2.5), nan) == T(1));  // NaN is true, as numpy's all
  CHECK(fn::combine<Monoid::And>(T(0), nan) == T(0));
  CHECK(fn::combine<Monoid::Or>(-T(0), T(0)) == T(0));
  CHECK(std::isnan(fn::combine<Monoid::Sum>(nan, T(1))));
}

TEST_CASE_TEMPLATE("kernels.monoid.integer_wrap", T, int32_t, int64_t) {
  using L = std::numeric_limits<T>;
  CHECK(fn::combine<Monoid::Sum>(L::max(), T(1)) == L::lowest());
  CHECK(fn::combine<Monoid::Sum>(L::lowest(), T(-1)) == L::max());
  CHECK(fn::combine<Monoid::Prod>(L::lowest(), T(-1)) == L::lowest());
  CHECK(fn::combine<Monoid::Prod>(T(1) << (sizeof(T) * 4), T(1) << (sizeof(T) * 4)) == T(0));
  CHECK(fn::combine<Monoid::Prod>(L::max(), T(2)) == T(-2));
  CHECK(fn::combine<Monoid::Max>(L::lowest(), L::max()) == L::max());
  CHECK(fn::combine<Monoid::Min>(L::lowest(), L::max()) == L::lowest());
  CHECK(fn::combine<Monoid::And>(T(-4), T(3)) == T(1));
  CHECK(fn::combine<Monoid::Or>(T(0), T(0)) == T(0));
}

TEST_CASE("kernels.monoid.bool") {
  for (bool a : {false, true}) {
    for (bool b : {false, true}) {
      CHECK(fn::combine<Monoid::Sum>(a, b) == (a || b));
      CHECK(fn::combine<Monoid::Prod>(a, b) == (a && b));
      CHECK(fn::combine<Monoid::Max>(a, b) == (a || b));
      CHECK(fn::combine<Monoid::Min>(a, b) == (a && b));
      CHECK(fn::combine<Monoid::And>(a, b) == (a && b));
      CHECK(fn::combine<Monoid::Or>(a, b) == (a || b));
    }
  }
  CHECK(fn::identity<Monoid::Max, bool>() == false);
  CHECK(fn::identity<Monoid::Min, bool>() == true);
}

TEST_CASE("kernels.monoid.fold") {
  static_assert(std::is_same_v<fn::acc_t<Monoid::Sum, float>, double>);
  static_assert(std::is_same_v<fn::acc_t<Monoid::Prod, int32_t>, int64_t>);
  static_assert(std::is_same_v<fn::acc_t<Monoid::Sum, bool>, int64_t>);
  static_assert(std::is_same_v<fn::acc_t<Monoid::Max, int32_t>, int32_t>);
  static_assert(std::is_same_v<fn::acc_t<Monoid::Min, float>, float>);
  static_assert(std::is_same_v<fn::acc_t<Monoid::And, double>, bool>);
  static_assert(std::is_same_v<fn::acc_t<Monoid::Or, int64_t>, bool>);
  using SumB = fn::Fold<Monoid::Sum, bool>;  // a bool sum counts
  CHECK(SumB::step(SumB::step(SumB::init(), true), true) == 2);
  using SumF = fn::Fold<Monoid::Sum, float>;  // 2^24 + 1 is exact in the f64 accumulator
  CHECK(SumF::step(SumF::step(SumF::init(), 16777216.f), 1.f) == 16777217.0);
  using SumI = fn::Fold<Monoid::Sum, int32_t>;  // no wrap at i32 in the i64 accumulator
  CHECK(SumI::step(SumI::init(), std::numeric_limits<int32_t>::max()) + 1 == int64_t(1) << 31);
  using All = fn::Fold<Monoid::And, float>;
  CHECK(All::step(All::init(), NAN));
  CHECK_FALSE(All::step(All::init(), -0.f));
  using Any = fn::Fold<Monoid::Or, int32_t>;
  CHECK_FALSE(Any::init());
  CHECK(Any::join(Any::init(), Any::step(Any::init(), -3)));
}

TEST_CASE("kernels.monoid.names") {
  CHECK(monoid_of(Op::Sum) == Monoid::Sum);
  CHECK(monoid_of(Op::Prod) == Monoid::Prod);
  CHECK(monoid_of(Op::Max) == Monoid::Max);
  CHECK(monoid_of(Op::Min) == Monoid::Min);
  CHECK(monoid_of(Op::All) == Monoid::And);
  CHECK(monoid_of(Op::Any) == Monoid::Or);
  CHECK_FALSE(monoid_of(Op::Add).has_value());
  CHECK_FALSE(monoid_of(Op::ArgMax).has_value());
  CHECK(monoid_name(Monoid::And) == "and");
  CHECK(monoid_name(Monoid::Or) == "or");
  for (Monoid m : kMonoids) CHECK(dispatch_monoid(m, [](auto mc) { return decltype(mc)::value; }) == m);
}

// combine_into merges like the reduction kernels fold: a reduction cut in two and merged gives
// the whole reduction's bits (signed zeros and NaN included), for every monoid and dtype.
TEST_CASE_TEMPLATE("kernels.monoid.combine_into", T, bool, int32_t, int64_t, float, double) {
  const std::vector<T> p = probes<T>();
  const int64_t n = 40;
  std::vector<T> xs(2 * n);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = p[(i * 7 + i / 5) % p.size()];
  auto x = tensor<T>({2, n}, xs);
  for (Monoid m : kMonoids) {
    for (Op op : {Op::Sum, Op::Prod, Op::Max, Op::Min, Op::All, Op::Any}) {
      if (monoid_of(op) != m) continue;
      const DType ot = m == Monoid::And || m == Monoid::Or ? DType::Bool : cpu::dtype_of<T>();
      auto whole = Value::alloc(ot, {n}), half = Value::alloc(ot, {n}), rest = Value::alloc(ot, {n});
      cpu::run_reduce(op, x->view(), {0}, whole->view());
      cpu::run_reduce(op, x->view().sliced({0, 0}, {1, 1}, {1, n}), {0}, half->view());
      cpu::run_reduce(op, x->view().sliced({1, 0}, {1, 1}, {1, n}), {0}, rest->view());
      cpu::combine_into(m, half->view(), rest->view());
      CHECK(std::memcmp(half->v.byte_ptr(), whole->v.byte_ptr(), n * dtype_size(ot)) == 0);
    }
  }
  // A strided accumulator (a column of a matrix) with a broadcast partial.
  auto mat = tensor<T>({3, 2}, {T(1), T(0), T(1), T(1), T(0), T(1)});
  auto one = tensor<T>({1, 1}, {T(1)});
  cpu::combine_into(Monoid::Max, mat->view().sliced({0, 1}, {1, 1}, {3, 1}), one->view().expanded({3, 1}));
  CHECK(values<T>(mat->view())[1] == T(1));
  CHECK(values<T>(mat->view())[4] == T(0));
  // fill_identity: what a rank without a partial contributes.
  auto v = Value::alloc(cpu::dtype_of<T>(), {5});
  for (Monoid m : kMonoids) {
    cpu::fill_identity(m, v->view());
    const T e = dispatch_monoid(m, [](auto mc) { return fn::identity<decltype(mc)::value, T>(); });
    for (int i = 0; i < 5; ++i) CHECK(same_bits(v->template data<T>()[i], e));
  }
}
