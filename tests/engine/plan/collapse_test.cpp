#include <doctest/doctest.h>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/collapse.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/verifier.hpp"
#include "tests/engine/plan/plan_test_util.hpp"

using namespace tapestry;
using namespace tapestry::plan;
using tapestry::plan::testing::topo_of;

namespace {
NodeRef src(const Shape& s) { return make_source(nullptr, s, DType::F32); }
}  // namespace

TEST_CASE("engine.plan.collapse.round_trips_a_k_split_matmul") {
  NodeRef a = src({4, 6}), b = src({6, 5});
  NodeRef y = build::unary(Op::Tanh, build::matmul(a, b));
  const std::vector<NodeRef> topo = topo_of({y});
  REQUIRE(topo.size() == 4);
  Assignment asg;
  asg[y->inputs[0]->id] = grid_blocks(poly::signature_of(*y->inputs[0]), {1, 1, 2}, 2);
  asg[y->id] = grid_blocks(poly::signature_of(*y), {2, 1}, 2);
  const ShardedGraph g =
      lower(topo, asg, {{a->id, Box::of_shape({4, 6}), 0}, {b->id, Box::of_shape({6, 5}), 1}}, {y}, 2);
  CHECK_MESSAGE(verify(g, topo).ok(), verify(g, topo).message());
  CHECK(g.combines.size() == 1);
  CHECK(collapse(g) == topo);
}

TEST_CASE("engine.plan.collapse.single_rank_plan") {
  NodeRef x = src({3, 4});
  NodeRef y = build::reduce(Op::Sum, build::unary(Op::Exp, x), {0}, false);
  const std::vector<NodeRef> topo = topo_of({y});
  Assignment asg;
  for (const NodeRef& n : topo)
    if (n->op != Op::Source) asg[n->id] = {{poly::signature_of(*n).space_box(), 0}};
  const ShardedGraph g = lower(topo, asg, {{x->id, Box::of_shape({3, 4}), 0}}, {y}, 1);
  CHECK(verify(g, topo).ok());
  CHECK(g.transfers.empty());
  CHECK(g.combines.empty());
  CHECK(collapse(g) == topo);
}

TEST_CASE("engine.plan.collapse.rejects_a_node_left_incomplete") {
  NodeRef x = src({4});
  NodeRef y = build::unary(Op::Exp, x);
  ShardedGraph g(1);
  g.nodes = {x, y};
  g.hold(x->id, Box::of_shape({4}), 0);
  g.add_block(y->id, Box({0}, {1}), 0);
  CHECK_THROWS_AS(collapse(g), Error);
  g.add_block(y->id, Box({2}, {3}), 0);
  CHECK(collapse(g) == std::vector<NodeRef>{x, y});
  g.nodes = {y};  // x is held but not listed
  CHECK_THROWS_AS(collapse(g), Error);
}
