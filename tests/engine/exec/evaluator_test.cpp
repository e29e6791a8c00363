#include <doctest/doctest.h>

#include <cmath>

#include "engine/exec/evaluator.hpp"
#include "engine/exec/stats.hpp"
#include "engine/ir/builders.hpp"
#include "engine/ir/value.hpp"

using namespace tapestry;
using build::Operand;

static NodeRef vec(std::initializer_list<float> xs) {
  auto v = Value::alloc(DType::F32, {static_cast<int64_t>(xs.size())});
  float* p = v->data<float>();
  for (float x : xs) *p++ = x;
  return make_source(v, {static_cast<int64_t>(xs.size())}, DType::F32);
}

TEST_CASE("engine.exec.evaluator.fuses_a_map_chain") {
  NodeRef a = vec({1, 2, 3}), b = vec({4, 5, 6}), c = vec({-4, -10, -18});
  NodeRef y = build::unary(Op::Tanh, build::binary(Op::Add, build::binary(Op::Mul, a, b), c));
  const Stats before = stats();
  evaluate({y});
  CHECK(stats().kernels == before.kernels + 1);          // one pass over memory
  CHECK(stats().fused_ops >= before.fused_ops + 2);      // mul and add folded into tanh
  const float* out = y->value->data<float>();
  CHECK(out[0] == doctest::Approx(0.0));
  CHECK(out[1] == doctest::Approx(0.0));
}

TEST_CASE("engine.exec.evaluator.runs_only_what_roots_need") {
  NodeRef a = vec({1, 2});
  NodeRef dead = build::unary(Op::Exp, a);
  NodeRef live = build::unary(Op::Neg, a);
  const Stats before = stats();
  evaluate({live});
  CHECK(stats().kernels == before.kernels + 1);
  CHECK(dead->value == nullptr);
  evaluate({live});  // already materialized: nothing runs
  CHECK(stats().kernels == before.kernels + 1);
}

TEST_CASE("engine.exec.evaluator.shared_values_are_computed_once") {
  NodeRef a = vec({1, 2, 3});
  NodeRef e = build::unary(Op::Exp, a);
  NodeRef y = build::binary(Op::Add, build::reduce(Op::Sum, e, {}, false), build::reduce(Op::Max, e, {}, false));
  evaluate({y});
  const double ex = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(3.0);
  CHECK(y->value->data<float>()[0] == doctest::Approx(ex).epsilon(1e-6));
}

TEST_CASE("engine.exec.evaluator.views_and_cat") {
  NodeRef m = build::reshape(build::arange(1, 6, 1, DType::F32), {2, 3});
  NodeRef t = build::transpose(m, 0, 1);                  // {3,2}: 1 4 / 2 5 / 3 6
  NodeRef c = build::cat({t, t}, 1);                      // {3,4}
  evaluate({c});
  const float* p = c->value->data<float>();
  const float expect[] = {1, 4, 1, 4, 2, 5, 2, 5, 3, 6, 3, 6};
  for (int i = 0; i < 12; ++i) CHECK(p[i] == expect[i]);
}

TEST_CASE("engine.exec.evaluator.matmul") {
  NodeRef a = build::reshape(build::arange(1, 6, 1, DType::F64), {2, 3});
  NodeRef b = build::transpose(a, 0, 1);
  NodeRef y = build::matmul(a, b);  // {{14,32},{32,77}}
  evaluate({y});
  const double* p = y->value->data<double>();
  CHECK(p[0] == 14);
  CHECK(p[1] == 32);
  CHECK(p[2] == 32);
  CHECK(p[3] == 77);
}
