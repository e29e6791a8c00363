#include <doctest/doctest.h>

#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/run/schedule.hpp"

using namespace tapestry;
using build::Operand;

static NodeRef vec(std::vector<float> xs) {
  const int64_t n = static_cast<int64_t>(xs.size());
  auto v = Value::alloc(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) v->data<float>()[i] = xs[static_cast<size_t>(i)];
  return make_source(v, {n}, DType::F32);
}

static std::vector<float> values(const NodeRef& y) {
  REQUIRE(y->value);
  const float* p = y->value->data<float>();
  return std::vector<float>(p, p + numel(y->shape));
}

// x + c * p, CG's update: one fused program with a constant.
static NodeRef axpy(const NodeRef& x, double c, const NodeRef& p) {
  return build::binary(Op::Add, x, build::binary(Op::Mul, Operand::number(c), p));
}

static std::unique_ptr<Schedule> schedule_of(const std::vector<NodeRef>& roots) {
  plan::FusionGroups g;
  plan::group_fusion(roots, g);
  return make_schedule(g, roots);
}

TEST_CASE("engine.run.schedule.a_graph_like_an_earlier_one_binds_and_reads_its_own_constants") {
  const size_t before = cached_schedules();
  NodeRef y1 = axpy(vec({1, 2, 3}), 2, vec({10, 20, 30}));
  evaluate({y1});
  CHECK(values(y1) == std::vector<float>{21, 42, 63});
  const size_t kept = cached_schedules();
  CHECK(kept >= std::min(before + 1, kScheduleCacheSize));
  // New leaves and another constant: the same structure, so the same schedule, re-bound.
  NodeRef y2 = axpy(vec({-1, 0, 1}), 0.5, vec({4, 8, 16}));
  evaluate({y2});
  CHECK(values(y2) == std::vector<float>{1, 4, 9});
  CHECK(cached_schedules() == kept);
}

TEST_CASE("engine.run.schedule.binds_only_the_same_structure") {
  NodeRef a = vec({1, 2}), b = vec({3, 4});
  std::unique_ptr<Schedule> s = schedule_of({axpy(a, 2, b)});
  REQUIRE(s);
  std::vector<const Node*> nodes;
  CHECK(bind_schedule(*s, {axpy(b, 7, a)}, nodes));  // other leaves, other constant
  CHECK(nodes.size() == s->keys.size());
  // Another op, dtype, shape, or a root in place of a leaf: no.
  CHECK_FALSE(
      bind_schedule(*s, {build::binary(Op::Sub, a, build::binary(Op::Mul, Operand::number(2), b))}, nodes));
  CHECK_FALSE(bind_schedule(*s, {axpy(vec({1, 2, 3}), 2, vec({1, 2, 3}))}, nodes));
  CHECK_FALSE(bind_schedule(*s, {axpy(a, 2, b), a}, nodes));
  // A leaf read twice binds a schedule whose slots read it once each, never the reverse: the
  // edges of the schedule of x * x point to one slot.
  NodeRef xx = build::binary(Op::Mul, a, a);
  std::unique_ptr<Schedule> sq = schedule_of({xx});
  CHECK_FALSE(bind_schedule(*sq, {build::binary(Op::Mul, a, b)}, nodes));
  std::unique_ptr<Schedule> ab = schedule_of({build::binary(Op::Mul, a, b)});
  CHECK(bind_schedule(*ab, {build::binary(Op::Mul, b, b)}, nodes));
}

TEST_CASE("engine.run.schedule.a_node_that_now_holds_a_value_is_a_leaf") {
  NodeRef p = vec({1, 2, 3});
  NodeRef e = build::unary(Op::Exp, p);
  NodeRef y = build::binary(Op::Add, e, p);
  std::unique_ptr<Schedule> s = schedule_of({y});
  evaluate({e});
  std::vector<const Node*> nodes;
  CHECK_FALSE(bind_schedule(*s, {y}, nodes));  // e is computed now: read, not recomputed
  evaluate({y});
  const std::vector<float> got = values(y);
  const std::vector<float> pv = values(p), ev = values(e);
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == ev[i] + pv[i]);
}

TEST_CASE("engine.run.schedule.two_slots_on_one_node_give_the_same_values") {
  // Evaluated first with two leaves, then with one tensor in both places: the kept schedule
  // binds, each slot reads the one node, and the result is the fresh evaluation's.
  NodeRef a = vec({1, 2, 3}), b = vec({4, 5, 6});
  NodeRef y1 = build::unary(Op::Tanh, build::binary(Op::Mul, a, b));
  evaluate({y1});
  NodeRef c = vec({0.5f, -1, 2});
  NodeRef y2 = build::unary(Op::Tanh, build::binary(Op::Mul, c, c));
  evaluate({y2});
  NodeRef y3 = build::unary(Op::Tanh, build::unary(Op::Square, c));  // the same numbers
  evaluate({y3});
  CHECK(values(y2) == values(y3));
}

TEST_CASE("engine.run.schedule.kept_programs_hold_no_buffers") {
  NodeRef x = vec(std::vector<float>(1000, 1.0f));
  std::weak_ptr<Buffer> held = x->value->view().buf;
  {
    NodeRef y = axpy(x, 3, x);
    evaluate({y});
    CHECK(values(y)[999] == 4);
  }
  x = nullptr;
  CHECK(held.expired());  // the schedule kept y's program, not x's data
}
