#include <doctest/doctest.h>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/verifier.hpp"

using namespace tapestry;
using namespace tapestry::plan;
using poly::CombineKind;

namespace {

NodeRef src(const Shape& s) { return make_source(nullptr, s, DType::F32); }

Box rows(int64_t lo, int64_t hi, int64_t cols) { return Box({lo, 0}, {hi, cols - 1}); }

void expect_ok(const ShardedGraph& g, const std::vector<NodeRef>& topo) {
  const VerifyResult r = verify(g, topo);
  CHECK_MESSAGE(r.ok(), r.message(), to_string(g));
}

// Rejected, with an error of `check` that contains `text`.
void expect_rejected(const ShardedGraph& g, const std::vector<NodeRef>& topo, const std::string& check,
                     const std::string& text) {
  const VerifyResult r = verify(g, topo);
  CHECK_FALSE(r.ok());
  CHECK_MESSAGE(r.mentions(check + ": "), r.message());
  CHECK_MESSAGE(r.mentions(text), r.message());
}

// y = exp(x) over a 4x4 x; rank 0 holds rows 0..1 and rank 1 rows 2..3.
struct RowMap {
  NodeRef x = src({4, 4});
  NodeRef y = build::unary(Op::Exp, x);
  std::vector<NodeRef> topo{x, y};
  ShardedGraph g{2};
  RowMap() {
    g.nodes = topo;
    g.hold(x->id, rows(0, 1, 4), 0);
    g.hold(x->id, rows(2, 3, 4), 1);
  }
};

// y = a @ b with a {4,6}, b {6,5}; rank r holds a[:, 3r..3r+2] and b[3r..3r+2, :].
struct KSplit {
  NodeRef a = src({4, 6});
  NodeRef b = src({6, 5});
  NodeRef y = build::matmul(a, b);
  std::vector<NodeRef> topo{a, b, y};
  ShardedGraph g{2};
  KSplit() {
    g.nodes = topo;
    for (int r = 0; r < 2; ++r) {
      g.hold(a->id, Box({0, 3 * r}, {3, 3 * r + 2}), r);
      g.hold(b->id, Box({3 * r, 0}, {3 * r + 2, 4}), r);
      g.add_block(y->id, Box({0, 0, 3 * r}, {3, 4, 3 * r + 2}), r);  // space {i, j, k}
    }
  }
};

}  // namespace

TEST_CASE("engine.plan.verifier.accepts_row_split_of_a_map") {
  RowMap m;
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  m.g.add_output(m.y->id, rows(0, 1, 4), 0);
  m.g.add_output(m.y->id, rows(2, 3, 4), 1);
  expect_ok(m.g, m.topo);
}

TEST_CASE("engine.plan.verifier.rejects_overlapping_blocks") {
  RowMap m;
  m.g.add_transfer(m.x->id, rows(2, 2, 4), 1, 0);
  m.g.add_block(m.y->id, rows(0, 2, 4), 0);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  expect_rejected(m.g, m.topo, "partition", "blocks 0 and 1 of %");
  CHECK(verify(m.g, m.topo).mentions("overlap in [3..3]x[1..4]"));
}

TEST_CASE("engine.plan.verifier.accepts_replicas_on_distinct_ranks_only") {
  // Each rank computes the whole of y from its whole copy of x: a replicated op, two results.
  NodeRef x = src({4, 4});
  NodeRef y = build::unary(Op::Exp, x);
  ShardedGraph g(2);
  g.nodes = {x, y};
  g.hold(x->id, Box::of_shape({4, 4}), 0);
  g.hold(x->id, Box::of_shape({4, 4}), 1);
  g.add_block(y->id, Box::of_shape({4, 4}), 0);
  g.add_block(y->id, Box::of_shape({4, 4}), 1);
  g.add_output(y->id, Box::of_shape({4, 4}), 0);
  g.add_output(y->id, Box::of_shape({4, 4}), 1);
  expect_ok(g, {x, y});
  // Two whole blocks on one rank compute every point twice there: no replica.
  ShardedGraph twice(2);
  twice.nodes = {x, y};
  twice.hold(x->id, Box::of_shape({4, 4}), 0);
  twice.add_block(y->id, Box::of_shape({4, 4}), 0);
  twice.add_block(y->id, Box::of_shape({4, 4}), 0);
  twice.add_output(y->id, Box::of_shape({4, 4}), 0);
  expect_rejected(twice, {x, y}, "partition", "overlap");
  // A result listed twice is still an error where the op is not replicated.
  RowMap m;
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  m.g.add_output(m.y->id, rows(0, 1, 4), 0);
  m.g.add_output(m.y->id, rows(2, 3, 4), 1);
  m.g.add_transfer(m.y->id, rows(0, 1, 4), 0, 1);
  m.g.add_output(m.y->id, rows(0, 1, 4), 1);
  expect_rejected(m.g, m.topo, "outputs", "is produced twice");
}

TEST_CASE("engine.plan.verifier.rejects_a_gap") {
  RowMap m;
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_block(m.y->id, rows(3, 3, 4), 1);
  expect_rejected(m.g, m.topo, "partition", "covers [3..3]x[1..4]");
}

TEST_CASE("engine.plan.verifier.rejects_row_and_column_of_a_2x2") {
  // Row 0 and column 0: 2 + 2 points, the full bounding box, yet (0,0) twice and (1,1) never.
  NodeRef x = src({2, 2});
  NodeRef y = build::unary(Op::Exp, x);
  ShardedGraph g(2);
  g.nodes = {x, y};
  g.hold(x->id, Box::of_shape({2, 2}), 0);
  g.hold(x->id, Box::of_shape({2, 2}), 1);
  g.add_block(y->id, Box({0, 0}, {0, 1}), 0);
  g.add_block(y->id, Box({0, 0}, {1, 0}), 1);
  expect_rejected(g, {x, y}, "partition", "overlap in [1..1]x[1..1]");
  CHECK(verify(g, {x, y}).mentions("covers [2..2]x[2..2]"));
}

TEST_CASE("engine.plan.verifier.rejects_a_split_of_an_unsplittable_dim") {
  NodeRef x = src({2, 3});
  NodeRef y = build::reshape(x, {3, 2});  // one index dim that no block may split
  ShardedGraph g(1);
  g.nodes = {x, y};
  g.hold(x->id, Box::of_shape({2, 3}), 0);
  g.add_block(y->id, Box({0}, {2}), 0);
  g.add_block(y->id, Box({3}, {5}), 0);
  expect_rejected(g, {x, y}, "partition", "must span whole");
}

TEST_CASE("engine.plan.verifier.rejects_a_missing_input_slice") {
  RowMap m;
  m.g.initial.pop_back();  // rank 1 holds nothing of x
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  expect_rejected(m.g, m.topo, "inputs", "rank 1 lacks [3..4]x[1..4]");
}

TEST_CASE("engine.plan.verifier.input_must_arrive_before_the_block_runs") {
  RowMap m;
  m.g.initial = {Shard{m.x->id, Box::of_shape({4, 4}), 0}};
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_transfer(m.x->id, rows(2, 3, 4), 0, 1);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  m.g.add_output(m.y->id, rows(0, 1, 4), 0);
  m.g.add_output(m.y->id, rows(2, 3, 4), 1);
  expect_ok(m.g, m.topo);
  std::swap(m.g.steps[1][0], m.g.steps[1][1]);  // run, then receive: too late
  expect_rejected(m.g, m.topo, "inputs", "rank 1 lacks");
}

TEST_CASE("engine.plan.verifier.rejects_sending_data_the_sender_lacks") {
  RowMap m;
  m.g.add_transfer(m.x->id, rows(0, 0, 4), 1, 0);  // rank 1 holds rows 2..3 only
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  expect_rejected(m.g, m.topo, "inputs", "transfer 0 sends [1..1]x[1..4]");
}

TEST_CASE("engine.plan.verifier.accepts_k_split_matmul_with_a_sum_combine") {
  SUBCASE("reduce to one rank") {
    KSplit k;
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1}, Box::of_shape({4, 5}), {0});
    k.g.add_output(k.y->id, Box::of_shape({4, 5}), 0);
    expect_ok(k.g, k.topo);
  }
  SUBCASE("all-reduce") {
    KSplit k;
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1}, Box::of_shape({4, 5}), {0, 1});
    k.g.add_output(k.y->id, Box::of_shape({4, 5}), 1);
    expect_ok(k.g, k.topo);
  }
  SUBCASE("reduce-scatter") {
    KSplit k;
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1}, rows(0, 1, 5), {0});
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1}, rows(2, 3, 5), {1});
    k.g.add_output(k.y->id, rows(0, 1, 5), 0);
    k.g.add_output(k.y->id, rows(2, 3, 5), 1);
    expect_ok(k.g, k.topo);
  }
}

TEST_CASE("engine.plan.verifier.rejects_a_partial_combined_twice") {
  SUBCASE("two combines over the same rows") {
    KSplit k;
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1}, Box::of_shape({4, 5}), {0});
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1}, rows(2, 3, 5), {1});
    expect_rejected(k.g, k.topo, "combine", "would be combined twice");
  }
  SUBCASE("one combine listing a partial twice") {
    KSplit k;
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1, 1}, Box::of_shape({4, 5}), {0});
    expect_rejected(k.g, k.topo, "combine", "lists it twice");
  }
}

TEST_CASE("engine.plan.verifier.rejects_a_partial_never_combined") {
  SUBCASE("no combine at all") {
    KSplit k;
    k.g.add_output(k.y->id, Box::of_shape({4, 5}), 0);
    expect_rejected(k.g, k.topo, "combine", "is never combined");
    // The unmerged partials are not values: the result is not there either.
    CHECK(verify(k.g, k.topo).mentions("outputs: rank 0 should end with"));
  }
  SUBCASE("a combine that leaves out a partial") {
    KSplit k;
    k.g.add_combine(k.y->id, CombineKind::Sum, {0}, Box::of_shape({4, 5}), {0});
    expect_rejected(k.g, k.topo, "combine", "misses the partial of block 1");
  }
  SUBCASE("rows no combine writes") {
    KSplit k;
    k.g.add_combine(k.y->id, CombineKind::Sum, {0, 1}, rows(0, 1, 5), {0});
    expect_rejected(k.g, k.topo, "combine", "no combine produces [3..4]x[1..5]");
  }
}

TEST_CASE("engine.plan.verifier.rejects_a_combine_of_the_wrong_kind_or_too_early") {
  KSplit k;
  k.g.add_combine(k.y->id, CombineKind::Max, {0, 1}, Box::of_shape({4, 5}), {0});
  expect_rejected(k.g, k.topo, "combine", "is a max, the reduction needs sum");

  KSplit early;
  early.g.steps[1].clear();  // rank 1 joins the combine, then computes its partial
  early.g.add_combine(early.y->id, CombineKind::Sum, {0, 1}, Box::of_shape({4, 5}), {0});
  early.g.steps[1].push_back(Step{Step::Kind::Run, 1});
  expect_rejected(early.g, early.topo, "combine", "before it runs");
}

TEST_CASE("engine.plan.verifier.rejects_an_output_shard_produced_twice") {
  RowMap m;
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  m.g.add_transfer(m.y->id, rows(0, 1, 4), 0, 1);
  m.g.add_output(m.y->id, rows(0, 1, 4), 0);
  m.g.add_output(m.y->id, rows(0, 3, 4), 1);
  expect_rejected(m.g, m.topo, "outputs", "[1..2]x[1..4] of %");
  CHECK(verify(m.g, m.topo).mentions("is produced twice (on rank 0 and on rank 1)"));
}

TEST_CASE("engine.plan.verifier.rejects_an_output_never_produced_or_not_there") {
  RowMap m;
  m.g.add_block(m.y->id, rows(0, 1, 4), 0);
  m.g.add_block(m.y->id, rows(2, 3, 4), 1);
  m.g.add_output(m.y->id, rows(0, 1, 4), 0);
  expect_rejected(m.g, m.topo, "outputs", "[3..4]x[1..4] of %");
  m.g.add_output(m.y->id, rows(2, 3, 4), 0);  // but rank 1 computed those rows
  expect_rejected(m.g, m.topo, "outputs", "rank 0 should end with [3..4]x[1..4]");
}

TEST_CASE("engine.plan.verifier.accepts_a_stencil_halo_transfer") {
  // y[i] = x[i] + x[i+1] + x[i+2] for i in 0..7, from three slices of a 10-element x.
  // Rank 0 holds x[0..4] and computes y[0..3]; rank 1 holds x[5..9] and computes y[4..7].
  NodeRef x = src({10});
  NodeRef s0 = build::narrow(x, 0, 0, 8), s1 = build::narrow(x, 0, 1, 8), s2 = build::narrow(x, 0, 2, 8);
  NodeRef y = build::binary(Op::Add, build::binary(Op::Add, s0, s1), s2);
  NodeRef t = y->inputs[0];
  const std::vector<NodeRef> topo{x, s0, s1, s2, t, y};
  auto plan = [&](bool with_halo) {
    ShardedGraph g(2);
    g.nodes = topo;
    g.hold(x->id, Box({0}, {4}), 0);
    g.hold(x->id, Box({5}, {9}), 1);
    if (with_halo) {  // the 2 = kernel - 1 boundary rows, one each way
      g.add_transfer(x->id, Box({5}, {5}), 1, 0);
      g.add_transfer(x->id, Box({4}, {4}), 0, 1);
    }
    for (const NodeRef& n : {s0, s1, s2, t, y}) {
      g.add_block(n->id, Box({0}, {3}), 0);
      g.add_block(n->id, Box({4}, {7}), 1);
    }
    g.add_output(y->id, Box({0}, {3}), 0);
    g.add_output(y->id, Box({4}, {7}), 1);
    return g;
  };
  expect_ok(plan(true), topo);
  expect_rejected(plan(false), topo, "inputs", "reads [3..6] of %");
}

TEST_CASE("engine.plan.verifier.cat_blocks_read_clipped_slices") {
  NodeRef a = src({2, 4}), b = src({3, 4});
  NodeRef c = build::cat({a, b}, 0);
  ShardedGraph g(2);
  g.nodes = {a, b, c};
  g.hold(a->id, Box::of_shape({2, 4}), 0);
  g.hold(b->id, Box::of_shape({3, 4}), 1);
  g.add_transfer(b->id, rows(0, 0, 4), 1, 0);  // rows 0..2 of c need row 0 of b
  g.add_block(c->id, rows(0, 2, 4), 0);
  g.add_block(c->id, rows(3, 4, 4), 1);  // rows 3..4 need no row of a
  g.add_output(c->id, rows(0, 2, 4), 0);
  g.add_output(c->id, rows(3, 4, 4), 1);
  expect_ok(g, {a, b, c});
}

TEST_CASE("engine.plan.verifier.rejects_malformed_schedules") {
  SUBCASE("deadlock: each rank receives before it sends") {
    RowMap m;
    m.g.add_transfer(m.x->id, rows(0, 1, 4), 0, 1);
    m.g.add_transfer(m.x->id, rows(2, 3, 4), 1, 0);
    std::swap(m.g.steps[0][0], m.g.steps[0][1]);  // rank 0: recv, send
    expect_rejected(m.g, m.topo, "schedule", "deadlock");
  }
  SUBCASE("a block with no step") {
    RowMap m;
    m.g.blocks.push_back(Block{m.y->id, rows(0, 3, 4), 0});
    expect_rejected(m.g, m.topo, "schedule", "block 0 appears 0 times in rank 0's steps");
  }
  SUBCASE("a leaf computed") {
    RowMap m;
    m.g.add_block(m.x->id, rows(0, 3, 4), 0);
    expect_rejected(m.g, m.topo, "partition", "is a leaf");
  }
  SUBCASE("an op with no blocks") {
    RowMap m;
    expect_rejected(m.g, m.topo, "partition", "has no blocks");
  }
}

TEST_CASE("engine.plan.verifier.an_empty_tensor_is_held_whole") {
  // A tensor with a size-0 dim is held whole on rank 0 and is its own result (planner.cpp);
  // an empty box of a tensor with elements is still no slice of it.
  const NodeRef e = build::full({0, 3}, 0, DType::F32);
  ShardedGraph g{2};
  g.nodes = {e};
  g.hold(e->id, Box::of_shape(e->shape), 0);
  g.add_output(e->id, Box::of_shape(e->shape), 0);
  expect_ok(g, {e});
  RowMap m;
  m.g.hold(m.x->id, rows(2, 1, 4), 0);
  expect_rejected(m.g, m.topo, "schedule", "is not a non-empty slice");
}

namespace {

// w (4x4) read whole by the blocks of y = x @ w on 3 ranks: w is on rank 0 (a broadcast) or
// split by rows over the 3 ranks... here over ranks 0 and 1, each holding half (an all-gather
// between them, with rank 2 taking both halves point to point).
struct ReadWhole {
  NodeRef x = src({3, 4}), w = src({4, 4});
  NodeRef y = build::matmul(x, w);
  std::vector<NodeRef> topo{x, w, y};
  ShardedGraph g{3};
  ReadWhole() {
    g.nodes = topo;
    for (Rank r = 0; r < 3; ++r) g.hold(x->id, Box({r, 0}, {r, 3}), r);
  }
  void blocks() {
    for (Rank r = 0; r < 3; ++r) g.add_block(y->id, Box({r, 0, 0}, {r, 3, 3}), r);
    for (Rank r = 0; r < 3; ++r) g.add_output(y->id, Box({r, 0}, {r, 3}), r);
  }
};

}  // namespace

// A broadcast as one Exchange step on each member: its tree's transfers have no steps.
TEST_CASE("engine.plan.verifier.checks_a_broadcast_exchange") {
  ReadWhole b;
  b.g.hold(b.w->id, Box::of_shape(b.w->shape), 0);
  const Box all = Box::of_shape(b.w->shape);
  const size_t e = b.g.add_exchange(Exchange::Kind::Broadcast, b.w->id, {0, 1, 2}, 0);
  b.g.exchanges[e].transfers = {b.g.add_exchanged_transfer(b.w->id, all, 0, 1),
                                b.g.add_exchanged_transfer(b.w->id, all, 1, 2)};  // a relay
  b.blocks();
  expect_ok(b.g, b.topo);
  {  // a member that never takes part: the others wait forever
    ShardedGraph g = b.g;
    std::erase_if(g.steps[2], [](const Step& s) { return s.kind == Step::Kind::Exchange; });
    expect_rejected(g, b.topo, "schedule", "broadcast 0 appears 0 times in rank 2's steps");
  }
  {  // a root without the slice
    ShardedGraph g = b.g;
    g.initial[3].rank = 1;
    g.exchanges[e].root = 0;
    expect_rejected(g, b.topo, "inputs", "lacks");
  }
  {  // a member left without it: rank 2's block reads what never arrives
    ShardedGraph g = b.g;
    g.exchanges[e].transfers.pop_back();
    g.transfers.pop_back();
    expect_rejected(g, b.topo, "inputs", "rank 2 lacks");
    CHECK(verify(g, b.topo).mentions("rank 2 receives its slice 0 times"));
  }
  {  // a transfer of no exchange and with no steps
    ShardedGraph g = b.g;
    g.exchanges[e].transfers.pop_back();
    expect_rejected(g, b.topo, "schedule", "the send of transfer 1 appears 0 times in rank 1's steps");
  }
  {  // a transfer both in the exchange and with steps of its own
    ShardedGraph g = b.g;
    g.steps[0].push_back(Step{Step::Kind::Send, 0});
    expect_rejected(g, b.topo, "schedule", "part of exchange 0");
  }
}

// An all-gather: every member sends its parts to every other member, all at the step.
TEST_CASE("engine.plan.verifier.checks_an_all_gather_exchange") {
  ReadWhole b;
  const Box top({0, 0}, {1, 3}), bottom({2, 0}, {3, 3});
  b.g.hold(b.w->id, top, 0);
  b.g.hold(b.w->id, bottom, 1);
  b.g.hold(b.w->id, Box::of_shape(b.w->shape), 2);
  const size_t e = b.g.add_exchange(Exchange::Kind::AllGather, b.w->id, {0, 1});
  b.g.exchanges[e].transfers = {b.g.add_exchanged_transfer(b.w->id, top, 0, 1),
                                b.g.add_exchanged_transfer(b.w->id, bottom, 1, 0)};
  b.blocks();
  expect_ok(b.g, b.topo);
  ShardedGraph g = b.g;  // one direction missing: not an all-gather, and rank 0 lacks the bottom
  g.exchanges[e].transfers.pop_back();
  g.transfers.pop_back();
  expect_rejected(g, b.topo, "schedule", "rank 1 sends rank 0 nothing");
  CHECK(verify(g, b.topo).mentions("inputs: "));
  ShardedGraph h = b.g;  // a member that never takes part, nor sends or receives
  h.exchanges[e].members = {0, 1, 2};
  expect_rejected(h, b.topo, "schedule", "all-gather 0 appears 0 times in rank 2's steps");
}
