// Naming a plan's moves (plan::classify_moves) on hand-built sharded graphs: trees with relays
// are broadcasts, pieces swapped within groups are all-gathers, slices between every pair are
// an all-to-all, combines are named by their destinations, and move_time follows the
// alpha-beta formulas.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/collective_cost.hpp"
#include "engine/plan/moves.hpp"

using namespace tapestry;
using namespace tapestry::plan;
using poly::Box;

namespace {

NodeRef src(const Shape& s) { return make_source(Value::alloc(DType::F32, s), s, DType::F32); }

Box rows(int64_t lo, int64_t hi, int64_t cols) { return Box({lo, 0}, {hi, cols - 1}); }

}  // namespace

TEST_CASE("engine.plan.moves.a_tree_with_relays_is_one_broadcast") {
  NodeRef x = src({8, 4});
  ShardedGraph g(4);
  g.nodes = {x};
  const Box all = Box::of_shape(x->shape);
  g.add_transfer(x->id, all, 0, 1);  // the binomial tree of lower(): 0 -> 1, 0 -> 2, 1 -> 3
  g.add_transfer(x->id, all, 0, 2);
  g.add_transfer(x->id, all, 1, 3);
  const Moves mv = classify_moves(g);
  REQUIRE(mv.groups.size() == 1);
  CHECK(mv.groups[0].kind == MoveKind::Broadcast);
  CHECK(mv.groups[0].ranks == std::vector<Rank>{0, 1, 2, 3});
  CHECK(mv.groups[0].bytes == 3 * 8 * 4 * 4);
  CHECK(mv.groups[0].payload == 8 * 4 * 4);
  CHECK(mv.transfer_group == std::vector<int>{0, 0, 0});
  const Mesh m = Mesh::this_machine(4);
  CHECK(move_time(mv.groups[0], g, m) == doctest::Approx(2 * m.intra.time(128)));  // two rounds
}

TEST_CASE("engine.plan.moves.pieces_swapped_within_groups_are_all_gathers") {
  // Rows of x on 4 ranks; ranks {0, 1} and {2, 3} each gather their two pieces.
  NodeRef x = src({8, 4});
  ShardedGraph g(4);
  g.nodes = {x};
  g.add_transfer(x->id, rows(0, 1, 4), 0, 1);
  g.add_transfer(x->id, rows(2, 3, 4), 1, 0);
  g.add_transfer(x->id, rows(4, 5, 4), 2, 3);
  g.add_transfer(x->id, rows(6, 7, 4), 3, 2);
  const Moves mv = classify_moves(g);
  REQUIRE(mv.groups.size() == 2);
  for (const MoveGroup& c : mv.groups) {
    CHECK(c.kind == MoveKind::AllGather);
    CHECK(c.ranks.size() == 2);
    CHECK(c.payload == 2 * 2 * 4 * 4);  // the two pieces
  }
  const Mesh m = Mesh::this_machine(4);
  CHECK(move_time(mv.groups[0], g, m) == doctest::Approx(m.intra.latency + 32 / m.intra.bandwidth));
}

TEST_CASE("engine.plan.moves.slices_between_every_pair_are_an_all_to_all") {
  NodeRef x = src({6, 6});
  ShardedGraph g(3);
  g.nodes = {x};
  for (Rank a = 0; a < 3; ++a)
    for (Rank b = 0; b < 3; ++b)
      if (a != b) g.add_transfer(x->id, Box({2 * a, 2 * b}, {2 * a + 1, 2 * b + 1}), a, b);
  Moves mv = classify_moves(g);
  REQUIRE(mv.groups.size() == 1);
  CHECK(mv.groups[0].kind == MoveKind::AllToAll);
  const Mesh m = Mesh::this_machine(3);
  // Each rank sends and receives two 16-byte slices: 2 alpha + 32 beta.
  CHECK(move_time(mv.groups[0], g, m) == doctest::Approx(2 * m.intra.latency + 32 / m.intra.bandwidth));
  // A rank's own part sees only its pairs: still an all-to-all from where it stands.
  g.part_of = 1;
  std::erase_if(g.transfers, [](const Transfer& t) { return t.from != 1 && t.to != 1; });
  mv = classify_moves(g);
  REQUIRE(mv.groups.size() == 1);
  CHECK(mv.groups[0].kind == MoveKind::AllToAll);
  // Slices gathered onto one rank: point to point.
  ShardedGraph h(3);
  h.nodes = {x};
  h.add_transfer(x->id, Box({2, 0}, {3, 5}), 1, 0);
  h.add_transfer(x->id, Box({4, 0}, {5, 5}), 2, 0);
  mv = classify_moves(h);
  REQUIRE(mv.groups.size() == 1);
  CHECK(mv.groups[0].kind == MoveKind::PointToPoint);
  CHECK(move_time(mv.groups[0], h, m) == doctest::Approx(2 * m.intra.time(48)));  // rank 0 receives both
}

TEST_CASE("engine.plan.moves.combines_by_their_destinations") {
  // Three products of the same shape, each split along k over 3 ranks, merged three ways.
  NodeRef a = src({4, 8}), b = src({8, 2});
  NodeRef y1 = build::matmul(a, b), y2 = build::matmul(a, src({8, 2})), y3 = build::matmul(a, src({8, 2}));
  ShardedGraph g(3);
  g.nodes = {a, b, y1, y2->inputs[1], y2, y3->inputs[1], y3};
  std::vector<size_t> p[3];
  const NodeRef ys[] = {y1, y2, y3};
  for (int i = 0; i < 3; ++i)
    for (Rank r = 0; r < 3; ++r)
      p[i].push_back(g.add_block(ys[i]->id, Box({0, 0, r * 2}, {3, 1, r * 2 + 1}), r));
  const Box all = Box::of_shape(y1->shape);
  g.add_combine(y1->id, poly::CombineKind::Sum, p[0], all, {1});            // reduce
  g.add_combine(y2->id, poly::CombineKind::Sum, p[1], all, {0, 1, 2});      // all-reduce
  g.add_combine(y3->id, poly::CombineKind::Sum, p[2], rows(0, 1, 2), {0});  // a reduce-scatter
  g.add_combine(y3->id, poly::CombineKind::Sum, p[2], rows(2, 3, 2), {1});  // of two pieces
  g.add_combine(y1->id, poly::CombineKind::Sum, {p[0][0]}, all, {0});       // local: moves nothing
  const Moves mv = classify_moves(g);
  REQUIRE(mv.groups.size() == 4);
  CHECK(mv.groups[0].kind == MoveKind::Reduce);
  CHECK(mv.groups[0].bytes == 2 * 32);
  CHECK(mv.groups[1].kind == MoveKind::AllReduce);
  CHECK(mv.groups[1].bytes == 4 * 32);  // (p-1) + (dests-1) copies
  CHECK(mv.groups[2].kind == MoveKind::ReduceScatter);
  CHECK(mv.groups[2].combines == std::vector<size_t>{2, 3});
  CHECK(mv.groups[2].bytes == 2 * 16 + 2 * 16);
  CHECK(mv.groups[3].local());
  CHECK(mv.combine_group == std::vector<int>{0, 1, 2, 2, 3});
  const Mesh m = Mesh::this_machine(3);
  CHECK(move_time(mv.groups[1], g, m) ==
        doctest::Approx(all_reduce_time(m.intra, 3, 32, m.mem_bytes_per_s).time));
  CHECK(move_time(mv.groups[2], g, m) ==
        doctest::Approx(reduce_scatter_time(m.intra, 3, 32, m.mem_bytes_per_s).time));
}
