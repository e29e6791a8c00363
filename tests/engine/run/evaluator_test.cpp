#include <doctest/doctest.h>

#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/telemetry/stats.hpp"

using namespace tapestry;
using build::Operand;

static NodeRef vec(std::initializer_list<float> xs) {
  auto v = Value::alloc(DType::F32, {static_cast<int64_t>(xs.size())});
  float* p = v->data<float>();
  for (float x : xs) *p++ = x;
  return make_source(v, {static_cast<int64_t>(xs.size())}, DType::F32);
}

TEST_CASE("engine.run.evaluator.fuses_a_map_chain") {
  NodeRef a = vec({1, 2, 3}), b = vec({4, 5, 6}), c = vec({-4, -10, -18});
  NodeRef y = build::unary(Op::Tanh, build::binary(Op::Add, build::binary(Op::Mul, a, b), c));
  const Stats before = stats();
  evaluate({y});
  CHECK(stats().kernels == before.kernels + 1);      // one pass over memory
  CHECK(stats().fused_ops >= before.fused_ops + 2);  // mul and add folded into tanh
  const float* out = y->value->data<float>();
  CHECK(out[0] == doctest::Approx(0.0));
  CHECK(out[1] == doctest::Approx(0.0));
}

TEST_CASE("engine.run.evaluator.runs_only_what_roots_need") {
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

TEST_CASE("engine.run.evaluator.shared_values_are_computed_once") {
  NodeRef a = vec({1, 2, 3});
  NodeRef e = build::unary(Op::Exp, a);
  NodeRef y =
      build::binary(Op::Add, build::reduce(Op::Sum, e, {}, false), build::reduce(Op::Max, e, {}, false));
  evaluate({y});
  const double ex = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(3.0);
  CHECK(y->value->data<float>()[0] == doctest::Approx(ex).epsilon(1e-6));
}

TEST_CASE("engine.run.evaluator.views_and_cat") {
  NodeRef m = build::reshape(build::arange(1, 6, 1, DType::F32), {2, 3});
  NodeRef t = build::transpose(m, 0, 1);  // {3,2}: 1 4 / 2 5 / 3 6
  NodeRef c = build::cat({t, t}, 1);      // {3,4}
  evaluate({c});
  const float* p = c->value->data<float>();
  const float expect[] = {1, 4, 1, 4, 2, 5, 2, 5, 3, 6, 3, 6};
  for (int i = 0; i < 12; ++i) CHECK(p[i] == expect[i]);
}

TEST_CASE("engine.run.evaluator.matmul") {
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

// CG's p . Ap, then r - alpha * Ap: the matvec a Lua variable holds is computed once.
TEST_CASE("engine.run.evaluator.held_materialized_node_keeps_its_value") {
  NodeRef a = vec({1, 2, 3});
  HeldNode e = build::unary(Op::Exp, a);  // two consumers: a buffer of its own
  NodeRef y =
      build::reduce(Op::Sum, build::binary(Op::Add, e.get(), build::unary(Op::Neg, e.get())), {}, false);
  evaluate({y});
  REQUIRE(e->value != nullptr);
  CHECK(e->value->data<float>()[2] == doctest::Approx(std::exp(3.0)));
  const Stats before = stats();
  NodeRef z = build::binary(Op::Mul, e.get(), e.get());
  evaluate({z});
  CHECK(stats().kernels == before.kernels + 1);  // the product only, not exp again
  const NodeRef node = e.get();
  e = NodeRef();  // the Lua variable goes: so does the value (the release rule)
  CHECK(node->value == nullptr);
}

// Kept: held, computed into a buffer of its own, recomputable, small (keep_if_held).
TEST_CASE("engine.run.evaluator.other_nodes_are_not_kept") {
  NodeRef a = vec({1, 2, 3});
  HeldNode fused = build::unary(Op::Exp, a);  // folded into the one map that reads it
  NodeRef y = build::binary(Op::Mul, fused.get(), Operand::number(2));
  NodeRef shared = build::unary(Op::Neg, a);  // materialized, but nobody holds it
  NodeRef w = build::binary(Op::Add, build::reduce(Op::Sum, shared, {}, false),
                            build::reduce(Op::Max, shared, {}, false));
  HeldNode big = build::unary(Op::Exp, build::full({1 << 19}, 0.0, DType::F32));  // 2 MiB
  NodeRef v = build::binary(Op::Add, build::reduce(Op::Sum, big.get(), {}, false),
                            build::reduce(Op::Max, big.get(), {}, false));
  HeldNode leaf = build::arange(1, 3, 1, DType::F32);  // no inputs: never released once set
  NodeRef u = build::binary(Op::Add, build::reduce(Op::Sum, leaf.get(), {}, false),
                            build::reduce(Op::Max, leaf.get(), {}, false));
  evaluate({y, w, v, u});
  CHECK(fused->value == nullptr);
  CHECK(shared->value == nullptr);
  CHECK(big->value == nullptr);  // too large to keep past its last use
  CHECK(leaf->value == nullptr);
  CHECK(v->value->data<float>()[0] == doctest::Approx((1 << 19) + 1));
}
