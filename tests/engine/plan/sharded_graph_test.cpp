#include <doctest/doctest.h>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/sharded_graph.hpp"

using namespace tapestry;
using namespace tapestry::plan;

TEST_CASE("engine.plan.sharded_graph.builders_append_steps") {
  NodeRef a = make_source(nullptr, {4, 6}, DType::F32), b = make_source(nullptr, {6, 5}, DType::F32);
  NodeRef y = build::matmul(a, b);
  ShardedGraph g(3);
  g.nodes = {a, b, y};
  g.hold(a->id, Box::of_shape({4, 6}), 0);
  const size_t t = g.add_transfer(a->id, Box({0, 3}, {3, 5}), 0, 1);
  const size_t b0 = g.add_block(y->id, Box({0, 0, 0}, {3, 4, 2}), 0);
  const size_t b1 = g.add_block(y->id, Box({0, 0, 3}, {3, 4, 5}), 1);
  const size_t c = g.add_combine(y->id, poly::CombineKind::Sum, {b0, b1}, Box::of_shape({4, 5}), {2});
  g.add_output(y->id, Box::of_shape({4, 5}), 2);
  CHECK(g.participants(g.combines[c]) == std::vector<Rank>{0, 1, 2});
  CHECK(g.steps[0] ==
        std::vector<Step>{{Step::Kind::Send, t}, {Step::Kind::Run, b0}, {Step::Kind::Combine, c}});
  CHECK(g.steps[1] ==
        std::vector<Step>{{Step::Kind::Recv, t}, {Step::Kind::Run, b1}, {Step::Kind::Combine, c}});
  CHECK(g.steps[2] == std::vector<Step>{{Step::Kind::Combine, c}});
  CHECK(g.roots == std::vector<uint64_t>{y->id});
  CHECK(g.find(y->id) == y.get());
  CHECK(g.find(999999) == nullptr);
  const std::string s = to_string(g);
  CHECK(s.find("run   block 1: %") != std::string::npos);
  CHECK(s.find("sum   %") != std::string::npos);
  CHECK(s.find("result %") != std::string::npos);
}
