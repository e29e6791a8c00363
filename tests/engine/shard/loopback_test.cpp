// The loopback transport and the sharded executor on hand-built plans: each gives the
// single-rank evaluator's result, and a broken plan fails loudly instead of computing garbage.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

#include "engine/comm/loopback.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/run_sharded.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/telemetry/cancel.hpp"
#include "tests/engine/run/test_values.hpp"

using namespace tapestry;
using plan::Rank;
using plan::ShardedGraph;
using poly::Box;

namespace {

using test::check_close;
using test::reference;
using test::rows;
using test::source;

// y = x + z over 2 ranks by rows: x lies whole on rank 0, z already split.
struct RowSplit {
  NodeRef x = source({11, 7}, 1), z = source({11, 7}, 2);
  NodeRef y = build::binary(Op::Add, x, z);
  std::vector<NodeRef> topo{x, z, y};
  ShardedGraph g{2};
  RowSplit() {
    g.nodes = topo;
    g.hold(x->id, Box::of_shape(x->shape), 0);
    g.hold(z->id, rows(z->shape, 0, 5), 0);
    g.hold(z->id, rows(z->shape, 6, 10), 1);
    g.add_transfer(x->id, rows(x->shape, 6, 10), 0, 1);
    g.add_block(y->id, rows(y->shape, 0, 5), 0);
    g.add_block(y->id, rows(y->shape, 6, 10), 1);
    g.add_output(y->id, rows(y->shape, 0, 5), 0);
    g.add_output(y->id, rows(y->shape, 6, 10), 1);
  }
};

}  // namespace

TEST_CASE("engine.comm.loopback.delivers_a_strided_slice_once") {
  comm::LoopbackHub hub(3);
  auto v = Value::alloc(DType::I32, {3, 4});
  for (int i = 0; i < 12; ++i) v->data<int32_t>()[i] = i;
  const comm::Tag tag = comm::tag(comm::TagKind::Transfer, 5);
  hub.endpoint(0).send(2, tag, v->view().sliced({0, 1}, {2, 2}, {2, 2}));  // elements 1 3 9 11
  v->data<int32_t>()[1] = -1;  // the send copied: later writes do not travel
  CHECK(hub.undelivered() == 1);
  CHECK(hub.endpoint(2).try_recv(1, tag) == nullptr);  // wrong sender
  auto got = hub.endpoint(2).try_recv(0, tag);
  REQUIRE(got);
  CHECK(got->view().shape == Shape{2, 2});
  CHECK(std::vector<int32_t>(got->data<int32_t>(), got->data<int32_t>() + 4) ==
        std::vector<int32_t>{1, 3, 9, 11});
  CHECK(hub.endpoint(2).try_recv(0, tag) == nullptr);  // received once
  CHECK(hub.undelivered() == 0);
  CHECK(hub.messages_sent() == 1);
  CHECK(hub.bytes_sent() == 16);
  CHECK_THROWS_AS(hub.endpoint(1).send(1, tag, v->view()), InternalError);  // to itself
}

TEST_CASE("engine.shard.rank_program.row_split_map") {
  RowSplit p;
  const std::vector<float> want = reference(p.y);
  REQUIRE(plan::verify(p.g, p.topo).ok());
  const RunReport r = run_plan(p.g);
  check_close(p.y, want, 0);
  CHECK(r.blocks == 2);
  CHECK(r.messages == 2);  // the transfer of x, rank 1's result shard to rank 0
  CHECK(r.bytes == 2 * 5 * 7 * 4);
  set_value(*p.y, nullptr);
}

TEST_CASE("engine.shard.rank_program.k_split_matmul_with_sum_combines") {
  NodeRef a = source({11, 7}, 3), b = source({7, 5}, 4);
  NodeRef y = build::matmul(a, b);
  const std::vector<float> want = reference(y);
  const std::vector<NodeRef> topo{a, b, y};
  // Space {i:11, j:5, k:7}: k split over 2 ranks leaves two partials of the whole output.
  auto plan_with = [&](int ranks, auto&& combines) {
    ShardedGraph g(ranks);
    g.nodes = topo;
    for (Rank r = 0; r < ranks; ++r) {
      g.hold(a->id, Box::of_shape(a->shape), r);
      g.hold(b->id, Box::of_shape(b->shape), r);
    }
    g.add_block(y->id, Box({0, 0, 0}, {10, 4, 3}), 0);
    g.add_block(y->id, Box({0, 0, 4}, {10, 4, 6}), 1);
    combines(g);
    REQUIRE_MESSAGE(plan::verify(g, topo).ok(), plan::verify(g, topo).message());
    return g;
  };
  SUBCASE("reduce to one rank") {
    ShardedGraph g = plan_with(2, [&](ShardedGraph& h) {
      h.add_combine(y->id, poly::CombineKind::Sum, {0, 1}, Box::of_shape(y->shape), {1});
      h.add_output(y->id, Box::of_shape(y->shape), 1);
    });
    run_plan(g);
  }
  SUBCASE("all-reduce onto three ranks, one without a partial") {
    ShardedGraph g = plan_with(3, [&](ShardedGraph& h) {
      h.add_combine(y->id, poly::CombineKind::Sum, {0, 1}, Box::of_shape(y->shape), {0, 1, 2});
      h.add_output(y->id, rows(y->shape, 0, 3), 2);
      h.add_output(y->id, rows(y->shape, 4, 10), 1);
    });
    run_plan(g);
  }
  SUBCASE("reduce-scatter by rows") {
    ShardedGraph g = plan_with(2, [&](ShardedGraph& h) {
      h.add_combine(y->id, poly::CombineKind::Sum, {0, 1}, rows(y->shape, 0, 5), {0});
      h.add_combine(y->id, poly::CombineKind::Sum, {0, 1}, rows(y->shape, 6, 10), {1});
      h.add_output(y->id, rows(y->shape, 0, 5), 0);
      h.add_output(y->id, rows(y->shape, 6, 10), 1);
    });
    run_plan(g);
  }
  check_close(y, want, 1e-5);
  set_value(*y, nullptr);
}

TEST_CASE("engine.shard.rank_program.halo_exchange_of_a_row_split_difference") {
  // y[i] = x[i+1] - x[i]: a block of rows reads one row past its own, which the
  // neighbouring rank holds; lower() derives that one-row transfer.
  NodeRef x = source({11, 7}, 5);
  NodeRef y = build::binary(Op::Sub, build::narrow(x, 0, 1, 10), build::narrow(x, 0, 0, 10));
  const std::vector<float> want = reference(y);
  std::vector<NodeRef> topo{x, y->inputs[0], y->inputs[1], y};
  plan::Assignment a;
  for (size_t i = 1; i < topo.size(); ++i)
    a[topo[i]->id] = plan::grid_blocks(poly::signature_of(*topo[i]), {2, 1}, 2);
  const ShardedGraph g =
      plan::lower(topo, a, {{x->id, rows(x->shape, 0, 5), 0}, {x->id, rows(x->shape, 6, 10), 1}}, {y}, 2);
  REQUIRE(plan::verify(g, topo).ok());
  REQUIRE(g.transfers.size() == 1);
  CHECK(g.transfers[0].slice == rows(x->shape, 5, 5));  // the halo: x's row 5 moves to rank 1
  const RunReport r = run_plan(g);
  CHECK(r.bytes == 7 * 4 + 5 * 7 * 4);  // the halo row, then rank 1's half of y to rank 0
  check_close(y, want, 0);
  set_value(*y, nullptr);
}

TEST_CASE("engine.shard.rank_program.a_missing_transfer_throws_and_changes_nothing") {
  RowSplit p;
  p.g.transfers.clear();
  for (auto& steps : p.g.steps)
    std::erase_if(steps, [](const plan::Step& s) { return s.kind != plan::Step::Kind::Run; });
  const plan::VerifyResult v = plan::verify(p.g, p.topo);
  CHECK_FALSE(v.ok());
  CHECK(v.mentions("lacks"));
  CHECK_THROWS_WITH_AS(run_plan(p.g), doctest::Contains("rank 1"), InternalError);
  CHECK(p.y->value == nullptr);
}

TEST_CASE("engine.shard.rank_program.a_receive_without_its_send_deadlocks") {
  RowSplit p;
  std::erase_if(p.g.steps[0], [](const plan::Step& s) { return s.kind == plan::Step::Kind::Send; });
  CHECK_FALSE(plan::verify(p.g, p.topo).ok());  // a transfer without its send step
  CHECK_THROWS_WITH_AS(run_plan(p.g), doctest::Contains("deadlock"), InternalError);
  CHECK(p.y->value == nullptr);
}

// A rank runs each step as soon as the steps it depends on have run: a block that does not
// read a pending receive runs before it arrives.
TEST_CASE("engine.shard.rank_program.a_block_runs_before_a_receive_it_does_not_read") {
  NodeRef x = source({6, 4}, 1), z = source({6, 4}, 2);
  NodeRef y = build::unary(Op::Neg, z);  // from z, which rank 1 holds
  NodeRef w = build::unary(Op::Exp, x);  // from x, which rank 0 sends
  const std::vector<float> want_y = reference(y), want_w = reference(w);
  ShardedGraph g(2);
  g.nodes = {x, z, y, w};
  g.hold(x->id, Box::of_shape(x->shape), 0);
  g.hold(z->id, Box::of_shape(z->shape), 1);
  g.add_transfer(x->id, Box::of_shape(x->shape), 0, 1);  // rank 1: the receive comes first
  g.add_block(y->id, Box::of_shape(y->shape), 1);
  g.add_block(w->id, Box::of_shape(w->shape), 1);
  g.add_output(y->id, Box::of_shape(y->shape), 1);
  g.add_output(w->id, Box::of_shape(w->shape), 1);
  REQUIRE(plan::verify(g, g.nodes).ok());
  comm::LoopbackHub hub(2);
  RankProgram r1(g, hub.endpoint(1));
  CHECK(r1.advance());  // y ran, though x has not come
  CHECK(r1.blocks_run() == 1);
  CHECK_FALSE(r1.done());
  CHECK_FALSE(r1.advance());  // w still waits for x
  RankProgram r0(g, hub.endpoint(0));
  CHECK(r0.advance());  // sends x
  CHECK(r0.done());
  CHECK(r1.advance());
  CHECK(r1.blocks_run() == 2);
  CHECK(r1.done());
  CHECK(run_plan(g).blocks == 2);
  check_close(y, want_y, 0);
  check_close(w, want_w, 1e-6);
  set_value(*y, nullptr);
  set_value(*w, nullptr);
}

// A send does not wait for a receive it does not need: each rank's program receives the
// other's value before sending its own, which in program order would wait forever.
TEST_CASE("engine.shard.rank_program.a_send_does_not_wait_for_an_unrelated_receive") {
  NodeRef a = source({4, 3}, 3), b = source({4, 3}, 4);
  NodeRef y = build::binary(Op::Add, a, b);
  const std::vector<float> want = reference(y);
  ShardedGraph g(2);
  g.nodes = {a, b, y};
  g.hold(a->id, Box::of_shape(a->shape), 0);
  g.hold(b->id, Box::of_shape(b->shape), 1);
  g.transfers = {{a->id, rows(a->shape, 2, 3), 0, 1}, {b->id, rows(b->shape, 0, 1), 1, 0}};
  using K = plan::Step::Kind;
  g.steps[0] = {{K::Recv, 1}, {K::Send, 0}};
  g.steps[1] = {{K::Recv, 0}, {K::Send, 1}};
  g.add_block(y->id, rows(y->shape, 0, 1), 0);
  g.add_block(y->id, rows(y->shape, 2, 3), 1);
  g.add_output(y->id, rows(y->shape, 0, 1), 0);
  g.add_output(y->id, rows(y->shape, 2, 3), 1);
  const RunReport r = run_plan(g);
  CHECK(r.transfer_bytes == 2 * 2 * 3 * 4);
  CHECK(r.gathered_bytes == 2 * 3 * 4);
  check_close(y, want, 0);
  set_value(*y, nullptr);
}

TEST_CASE("engine.shard.rank_program.cancel_stops_between_steps") {
  RowSplit p;
  request_cancel();
  CHECK_THROWS_AS(run_plan(p.g), Cancelled);
  clear_cancel();
  CHECK(p.y->value == nullptr);
}

TEST_CASE("engine.shard.run_sharded.plans_verifies_and_runs") {
  NodeRef a = source({11, 7}, 6), b = source({7, 9}, 7);
  NodeRef y = build::unary(Op::Tanh, build::matmul(a, b));
  const std::vector<float> want = reference(y);
  for (int ranks : {1, 3, 4}) {
    run_sharded({y}, plan::Mesh::modelled(ranks), {}, /*verify_plan=*/true);
    check_close(y, want, 1e-5);
    set_value(*y, nullptr);
  }
}

TEST_CASE("engine.shard.run_sharded.mixed_and_repeated_roots") {
  NodeRef a = source({11, 7}, 8);
  NodeRef b = build::unary(Op::Exp, build::binary(Op::Mul, a, a));  // fused into one map
  NodeRef s = build::reduce(Op::Sum, b, {1}, false);
  const std::vector<float> want_b = reference(b), want_s = reference(s);
  evaluate({b});  // b is already known: an input of this observation and a root
  const auto b_before = b->value;
  run_sharded({b, s, s}, plan::Mesh::modelled(3), {}, true);
  CHECK(b->value == b_before);
  check_close(s, want_s, 1e-5);
  set_value(*b, nullptr);
  set_value(*s, nullptr);
}

TEST_CASE("engine.shard.run_sharded.a_plan_failing_verification_is_not_run") {
  RowSplit p;
  plan::PlannedGraph pg;
  pg.topo = p.topo;
  pg.roots = {p.y};
  plan::ShardedGraph broken = p.g;
  broken.transfers.clear();
  for (auto& steps : broken.steps)
    std::erase_if(steps, [](const plan::Step& s) { return s.kind != plan::Step::Kind::Run; });
  pg.plan.set_graph(std::move(broken));
  CHECK_THROWS_WITH_AS(run_planned(pg, true), doctest::Contains("fails verification"), InternalError);
  CHECK(p.y->value == nullptr);
  // Unverified, the executor still refuses it: a rank lacks a slice its block needs.
  CHECK_THROWS_WITH_AS(run_planned(pg, false), doctest::Contains("lacks"), InternalError);
  CHECK(p.y->value == nullptr);
}

// Megatron's row-parallel step as lower() emits it: y = a @ b with k split over 4 ranks, the
// partials reduced onto one rank, all-reduced (y whole on every rank) or reduce-scattered (a
// row block each). Every mode verifies and gives the single-rank values.
TEST_CASE("engine.shard.rank_program.combine_modes_from_lower") {
  NodeRef a = source({12, 8}, 5), b = source({8, 6}, 6);
  NodeRef y = build::matmul(a, b);
  const std::vector<float> want = reference(y);
  const std::vector<NodeRef> topo{a, b, y};
  std::vector<plan::Shard> initial;
  for (Rank r = 0; r < 4; ++r) {
    initial.push_back({a->id, Box({0, 2 * r}, {11, 2 * r + 1}), r});  // a by columns
    initial.push_back({b->id, Box({2 * r, 0}, {2 * r + 1, 5}), r});   // b by rows
  }
  plan::Assignment asg;
  asg[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 1, 4}, 4);  // {i, j, k}
  for (plan::CombineMode mode :
       {plan::CombineMode::Reduce, plan::CombineMode::AllReduce, plan::CombineMode::ReduceScatter}) {
    CAPTURE(plan::combine_mode_name(mode));
    const ShardedGraph g = plan::lower(topo, asg, initial, {y}, 4, {{y->id, mode}});
    REQUIRE_MESSAGE(plan::verify(g, topo).ok(), plan::verify(g, topo).message());
    CHECK(g.transfers.empty());  // every block reads only what its rank holds
    if (mode == plan::CombineMode::Reduce) {
      REQUIRE(g.combines.size() == 1);
      CHECK(g.combines[0].dest.size() == 1);
    } else if (mode == plan::CombineMode::AllReduce) {
      REQUIRE(g.combines.size() == 1);
      CHECK(g.combines[0].dest == std::vector<Rank>{0, 1, 2, 3});
    } else {
      REQUIRE(g.combines.size() == 4);  // 12 rows in 4 pieces of 3, one to each rank
      for (Rank r = 0; r < 4; ++r) {
        CHECK(g.combines[static_cast<size_t>(r)].out == rows(y->shape, 3 * r, 3 * r + 2));
        CHECK(g.combines[static_cast<size_t>(r)].dest == std::vector<Rank>{r});
      }
    }
    const RunReport whole = run_plan(g);
    CHECK(whole.transfer_bytes + whole.combine_bytes ==
          plan::cost_of(g, plan::Mesh::modelled(4)).bytes_moved);
    check_close(y, want, 1e-5);
    set_value(*y, nullptr);
    // Each rank with only its own part: partials are tagged alike on both ends.
    std::vector<ShardedGraph> parts;
    for (Rank r = 0; r < 4; ++r)
      parts.push_back(plan::lower_rank(topo, asg, initial, {y}, 4, {{y->id, mode}}, r));
    run_plan_parts(parts);
    check_close(y, want, 1e-5);
    set_value(*y, nullptr);
  }
}

// Each rank of a distributed run lowers and runs only its own part of the plan (lower_rank).
// Over loopback: every part equals the global plan restricted to its rank, the parts run
// together give the single-rank values, and they move exactly the global plan's bytes.
TEST_CASE("engine.shard.run_sharded.each_rank_runs_its_own_part") {
  NodeRef a = source({24, 16}, 3), w = source({16, 16}, 4), c = source({16}, 5);
  NodeRef h = build::unary(Op::Tanh, build::binary(Op::Add, build::matmul(a, w), c));
  NodeRef y = build::matmul(h, w);
  NodeRef s = build::reduce(Op::Sum, build::binary(Op::Mul, y, y), {0}, false);
  const std::vector<float> want_y = reference(y), want_s = reference(s);
  for (int ranks : {2, 3, 4, 6}) {
    CAPTURE(ranks);
    plan::PlannerState planner;
    const plan::PlannedGraph pg = plan::plan_observation(planner, {y, s}, plan::Mesh::modelled(ranks), {});
    std::vector<ShardedGraph> parts;
    for (Rank r = 0; r < ranks; ++r) {
      parts.push_back(plan::lower_choice(plan::lowering_input(pg), pg.plan.choice, r));
      CHECK(parts.back().part_of == r);
      CHECK(plan::to_string(parts.back()) == plan::to_string(plan::restrict_to_rank(pg.plan.graph(), r)));
    }
    // The plan's roots stand for y and s (fusion may have replaced them).
    const NodeRef &py = pg.roots[0], &ps = pg.roots[1];
    const RunReport whole = run_plan(pg.plan.graph());
    set_value(*py, nullptr);
    set_value(*ps, nullptr);
    const RunReport each = run_plan_parts(parts);
    CHECK(each.bytes == whole.bytes);
    CHECK(each.messages == whole.messages);
    CHECK(each.blocks == whole.blocks);
    check_close(py, want_y, 1e-4);
    check_close(ps, want_s, 1e-3);
    set_value(*py, nullptr);
    set_value(*ps, nullptr);
  }
}
