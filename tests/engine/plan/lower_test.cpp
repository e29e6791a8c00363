#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/collapse.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/search.hpp"
#include "engine/plan/verifier.hpp"
#include "tests/engine/plan/plan_test_util.hpp"

using namespace tapestry;
using namespace tapestry::plan;
using tapestry::plan::testing::erase_transfer;
using tapestry::plan::testing::topo_of;

namespace {

NodeRef src(const Shape& s) { return make_source(nullptr, s, DType::F32); }

// A small network touching every kind of op: matmul, broadcast, maps, reductions, keepdim
// reshapes, transpose, slices, cat, generators.
std::vector<NodeRef> network() {
  using build::Operand;
  NodeRef x = src({8, 6}), w1 = src({6, 10}), b1 = src({10}), w2 = src({10, 4});
  NodeRef h = build::unary(Op::Relu, build::binary(Op::Add, build::matmul(x, w1), b1));
  NodeRef z = build::matmul(h, w2);                  // {8,4}
  NodeRef m = build::reduce(Op::Max, z, {1}, true);  // {8,1} via reshape
  NodeRef e = build::unary(Op::Exp, build::binary(Op::Sub, z, m));
  NodeRef p = build::binary(Op::Div, e, build::reduce(Op::Sum, e, {1}, true));
  NodeRef t = build::transpose(p, 0, 1);                                              // {4,8}
  NodeRef c = build::cat({build::narrow(t, 1, 0, 3), build::narrow(t, 1, 5, 3)}, 1);  // {4,6}
  NodeRef r = build::reshape(build::binary(Op::Mul, c, Operand::number(2)), {2, 12});
  NodeRef a = build::argreduce(Op::ArgMax, p, 1, false);  // {8}
  NodeRef n = build::binary(Op::Add, build::rand({2, 12}, 7, DType::F32), r);
  NodeRef s = build::reduce(Op::Sum, h, {}, false);  // a scalar
  return {n, a, s};
}

// Random parts per index dim: splittable dims in 1..3 pieces (never more than the extent).
std::vector<int64_t> random_parts(const poly::Signature& s, std::mt19937& rng) {
  std::vector<int64_t> parts;
  for (const poly::IndexDim& d : s.space) {
    const int64_t most = d.splittable ? std::min<int64_t>(3, d.extent) : 1;
    parts.push_back(std::uniform_int_distribution<int64_t>(1, most)(rng));
  }
  return parts;
}

}  // namespace

TEST_CASE("engine.plan.lower.grid_blocks") {
  NodeRef y = build::matmul(src({5, 4}), src({4, 3}));
  const poly::Signature s = poly::signature_of(*y);
  const std::vector<Placement> p = grid_blocks(s, {2, 1, 2}, 3);
  REQUIRE(p.size() == 4);
  CHECK(p[0].box == Box({0, 0, 0}, {1, 2, 1}));
  CHECK(p[1].box == Box({0, 0, 2}, {1, 2, 3}));
  CHECK(p[2].box == Box({2, 0, 0}, {4, 2, 1}));
  CHECK(p[3].rank == 0);  // round-robin over 3 ranks
}

TEST_CASE("engine.plan.lower.a_row_split_needs_only_the_halo") {
  NodeRef x = src({10});
  NodeRef y = build::binary(Op::Add, build::narrow(x, 0, 0, 8), build::narrow(x, 0, 2, 8));
  const std::vector<NodeRef> topo = topo_of({y});
  Assignment a;
  for (const NodeRef& n : topo)
    if (n->op != Op::Source) a[n->id] = {{Box({0}, {3}), 0}, {Box({4}, {7}), 1}};
  const ShardedGraph g = lower(topo, a, {{x->id, Box({0}, {4}), 0}, {x->id, Box({5}, {9}), 1}}, {y}, 2);
  CHECK_MESSAGE(verify(g, topo).ok(), verify(g, topo).message());
  // Rank 0's second slice reads x[2..5]: one row moves; rank 1's first reads x[4..7]: one row.
  REQUIRE(g.transfers.size() == 2);
  CHECK(g.transfers[0].slice.volume() + g.transfers[1].slice.volume() == 2);
}

TEST_CASE("engine.plan.lower.random_plans_verify_and_collapse") {
  const std::vector<NodeRef> roots = network();
  const std::vector<NodeRef> topo = topo_of(roots);
  std::mt19937 rng(1234);
  int rejected_mutants = 0, mutants = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int ranks = std::uniform_int_distribution<int>(1, 4)(rng);
    Assignment a;
    std::vector<Shard> initial;
    for (const NodeRef& n : topo) {
      const poly::Signature s = poly::signature_of(*n);
      std::vector<Placement> p = grid_blocks(s, random_parts(s, rng), ranks);
      const int shift = std::uniform_int_distribution<int>(0, ranks - 1)(rng);
      for (Placement& q : p) q.rank = (q.rank + shift) % ranks;
      if (n->op == Op::Source) {
        for (const Placement& q : p) initial.push_back(Shard{n->id, s.output_slice(q.box), q.rank});
      } else {
        a[n->id] = std::move(p);
      }
    }
    ShardedGraph g = lower(topo, a, initial, roots, ranks);
    const VerifyResult r = verify(g, topo);
    REQUIRE_MESSAGE(r.ok(), r.message(), to_string(g));
    CHECK(collapse(g) == topo);  // abstract -> sharded -> abstract
    if (!g.transfers.empty()) {
      ++mutants;
      erase_transfer(g, std::uniform_int_distribution<size_t>(0, g.transfers.size() - 1)(rng));
      const VerifyResult m = verify(g, topo);
      rejected_mutants += !m.ok();
      CHECK_MESSAGE(m.mentions("inputs: "), m.message());
    }
  }
  CHECK(mutants > 20);
  CHECK(rejected_mutants == mutants);
}

TEST_CASE("engine.plan.lower.reports_data_that_lies_nowhere") {
  NodeRef x = src({4});
  NodeRef y = build::unary(Op::Exp, x);
  Assignment a;
  a[y->id] = {{Box({0}, {3}), 0}};
  CHECK_THROWS_AS(lower({x, y}, a, {{x->id, Box({0}, {1}), 0}}, {y}, 1), Error);
  CHECK_THROWS_AS(lower({x, y}, {}, {{x->id, Box({0}, {3}), 0}}, {y}, 1), Error);
}

// Rows to columns on 4 ranks: an all-to-all of computed data, one Exchange step on every rank
// between its two blocks (a collective: no rank waits on another's receive before it sends;
// receive then send passed the redistribution down a chain of ranks).
TEST_CASE("engine.plan.lower.redistribution_is_one_all_to_all") {
  NodeRef in = src({8, 8});
  NodeRef x = build::unary(Op::Exp, in), y = build::unary(Op::Neg, x);
  Assignment a;
  a[x->id] = grid_blocks(poly::signature_of(*x), {4, 1}, 4);  // rows
  a[y->id] = grid_blocks(poly::signature_of(*y), {1, 4}, 4);  // columns
  std::vector<Shard> initial;
  for (Rank r = 0; r < 4; ++r) initial.push_back(Shard{in->id, Box({2 * r, 0}, {2 * r + 1, 7}), r});
  const ShardedGraph g = lower({in, x, y}, a, initial, {y}, 4);
  CHECK(verify(g, {in, x, y}).ok());
  CHECK(g.transfers.size() == 12);
  REQUIRE(g.exchanges.size() == 1);
  CHECK(g.exchanges[0].kind == Exchange::Kind::AllToAll);
  CHECK(g.exchanges[0].members == std::vector<Rank>{0, 1, 2, 3});
  CHECK(g.exchanges[0].transfers.size() == 12);
  for (Rank r = 0; r < 4; ++r) {
    const std::vector<Step>& st = g.steps[static_cast<size_t>(r)];
    REQUIRE(st.size() == 3);  // x's block, the all-to-all, y's block
    CHECK(st[0].kind == Step::Kind::Run);
    CHECK(st[1].kind == Step::Kind::Exchange);
    CHECK(st[2].kind == Step::Kind::Run);
  }
  for (Rank r = 0; r < 4; ++r) CHECK(restrict_to_rank(g, r).exchanges[0].transfers.size() == 6);
}

// A tensor held on rank 0 that every one of 16 ranks reads whole: a binomial tree, not a star.
// Rank 0 sends log2(16) = 4 copies, every other rank receives one, and the plan verifies.
TEST_CASE("engine.plan.lower.broadcast_is_a_tree") {
  NodeRef x = src({16, 8}), w = src({8, 8});
  NodeRef y = build::matmul(x, w);
  Assignment a;
  a[y->id] = grid_blocks(poly::signature_of(*y), {16, 1, 1}, 16);  // rows: every block reads all of w
  std::vector<Shard> initial{Shard{w->id, Box::of_shape(w->shape), 0}};
  for (Rank r = 0; r < 16; ++r) initial.push_back(Shard{x->id, Box({r, 0}, {r, 7}), r});
  const ShardedGraph g = lower({x, w, y}, a, initial, {y}, 16);
  CHECK(verify(g, {x, w, y}).ok());
  std::vector<int> sent(16, 0), received(16, 0);
  for (const Transfer& t : g.transfers) {
    CHECK(t.tensor == w->id);
    ++sent[static_cast<size_t>(t.from)];
    ++received[static_cast<size_t>(t.to)];
  }
  CHECK(sent[0] == 4);
  CHECK(received[0] == 0);
  for (Rank r = 1; r < 16; ++r) CHECK(received[static_cast<size_t>(r)] == 1);
  CHECK(*std::max_element(sent.begin(), sent.end()) == 4);
}

namespace {

// The first difference between two sharded graphs, or "" when they are the same plan.
std::string first_difference(const ShardedGraph& a, const ShardedGraph& b) {
  const auto box_eq = [](const Box& x, const Box& y) { return x == y; };
  if (a.num_ranks != b.num_ranks) return "num_ranks";
  if (a.nodes.size() != b.nodes.size()) return "nodes";
  for (size_t i = 0; i < a.nodes.size(); ++i)
    if (a.nodes[i]->id != b.nodes[i]->id) return cat_str("node ", i);
  if (a.roots != b.roots) return "roots";
  const auto shards_eq = [&](const std::vector<Shard>& x, const std::vector<Shard>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].tensor != y[i].tensor || !box_eq(x[i].box, y[i].box) || x[i].rank != y[i].rank) return false;
    return true;
  };
  if (!shards_eq(a.initial, b.initial)) return "initial";
  if (!shards_eq(a.outputs, b.outputs)) return "outputs";
  if (a.blocks.size() != b.blocks.size())
    return cat_str("blocks: ", a.blocks.size(), " vs ", b.blocks.size());
  for (size_t i = 0; i < a.blocks.size(); ++i)
    if (a.blocks[i].node != b.blocks[i].node || !box_eq(a.blocks[i].box, b.blocks[i].box) ||
        a.blocks[i].rank != b.blocks[i].rank)
      return cat_str("block ", i);
  if (a.transfers.size() != b.transfers.size())
    return cat_str("transfers: ", a.transfers.size(), " vs ", b.transfers.size());
  for (size_t i = 0; i < a.transfers.size(); ++i) {
    const Transfer &x = a.transfers[i], &y = b.transfers[i];
    if (x.tensor != y.tensor || !box_eq(x.slice, y.slice) || x.from != y.from || x.to != y.to)
      return cat_str("transfer ", i);
  }
  if (a.combines.size() != b.combines.size())
    return cat_str("combines: ", a.combines.size(), " vs ", b.combines.size());
  for (size_t i = 0; i < a.combines.size(); ++i) {
    const Combine &x = a.combines[i], &y = b.combines[i];
    if (x.node != y.node || x.kind != y.kind || x.partials != y.partials || !box_eq(x.out, y.out) ||
        x.dest != y.dest)
      return cat_str("combine ", i);
    if (x.after != y.after || x.exchanges_before != y.exchanges_before)
      return cat_str("combine ", i, " placed after transfer ", x.after, " and exchange ", x.exchanges_before,
                     " vs ", y.after, " and ", y.exchanges_before);
  }
  if (a.exchanges.size() != b.exchanges.size())
    return cat_str("exchanges: ", a.exchanges.size(), " vs ", b.exchanges.size());
  for (size_t i = 0; i < a.exchanges.size(); ++i) {
    const Exchange &x = a.exchanges[i], &y = b.exchanges[i];
    if (x.kind != y.kind || x.tensor != y.tensor || x.members != y.members || x.root != y.root ||
        x.transfers != y.transfers)
      return cat_str("exchange ", i);
    if (x.after != y.after)
      return cat_str("exchange ", i, " placed after transfer ", x.after, " vs ", y.after);
  }
  for (size_t r = 0; r < a.steps.size(); ++r)
    if (a.steps[r] != b.steps[r]) return cat_str("steps of rank ", r);
  return "";
}

// Graphs for the per-rank lowering: the network above (generators, reductions, cat, slices),
// a stencil chain (halos) and a matmul chain whose reductions the candidates split.
std::vector<std::vector<NodeRef>> rank_lowering_graphs() {
  NodeRef x = src({12, 10}), k = src({3, 3});
  NodeRef st = build::unary(
      Op::Tanh, build::stencil(build::stencil(x, k, build::Boundary::Zero), k, build::Boundary::Zero));
  NodeRef a = src({6, 8}), w = src({8, 8});
  NodeRef h = build::matmul(build::unary(Op::Relu, build::matmul(a, w)), w);
  NodeRef s = build::reduce(Op::Sum, build::binary(Op::Mul, h, h), {0}, false);
  return {network(), {st}, {h, s}};
}

}  // namespace

// The key property of lower_rank: for random graphs, meshes and choices (replicated ops,
// reduction splits with each combine mode, uneven grids, generators, stencil halos, inputs held
// whole, split or in copies), every rank's own lowering is the global plan restricted to it.
TEST_CASE("engine.plan.lower.each_rank_lowers_its_own_part") {
  std::mt19937 rng(77);
  int compared = 0, with_transfers = 0, with_combines = 0;
  std::set<Exchange::Kind> exchanged;
  for (const std::vector<NodeRef>& roots : rank_lowering_graphs()) {
    const std::vector<NodeRef> topo = topo_of(roots);
    for (int trial = 0; trial < 25; ++trial) {
      const int ranks = std::uniform_int_distribution<int>(1, 9)(rng);
      Assignment a;
      CombineModes modes;
      std::vector<Shard> initial;
      for (const NodeRef& n : topo) {
        const poly::Signature s = poly::signature_of(*n);
        if (n->op == Op::Source) {
          // Split over the ranks, whole on one, or whole on one with a copy on another.
          const int how = std::uniform_int_distribution<int>(0, 2)(rng);
          std::vector<Placement> p =
              how == 0 ? grid_blocks(s, random_parts(s, rng), ranks)
                       : std::vector<Placement>{
                             {s.space_box(), std::uniform_int_distribution<int>(0, ranks - 1)(rng)}};
          for (const Placement& q : p) initial.push_back(Shard{n->id, s.output_slice(q.box), q.rank});
          if (how == 2 && p[0].rank != ranks - 1)  // a second copy
            initial.push_back(Shard{n->id, Box::of_shape(n->shape), ranks - 1});
          continue;
        }
        if (op_kind(n->op) == OpKind::Generate && std::uniform_int_distribution<int>(0, 1)(rng)) continue;
        const std::vector<Candidate> cands = candidates(s, ranks, true);
        if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
          std::vector<Placement> p = grid_blocks(s, random_parts(s, rng), ranks);
          const int shift = std::uniform_int_distribution<int>(0, ranks - 1)(rng);
          for (Placement& q : p) q.rank = (q.rank + shift) % ranks;
          a[n->id] = std::move(p);
          modes[n->id] = static_cast<CombineMode>(std::uniform_int_distribution<int>(0, 2)(rng));
        } else {
          const Candidate& c = cands[std::uniform_int_distribution<size_t>(0, cands.size() - 1)(rng)];
          a[n->id] = place(s, c, ranks);
          modes[n->id] = c.combine;
        }
      }
      const ShardedGraph g = lower(topo, a, initial, roots, ranks, modes);
      REQUIRE_MESSAGE(verify(g, topo).ok(), verify(g, topo).message());
      with_transfers += !g.transfers.empty();
      with_combines += !g.combines.empty();
      for (const Exchange& e : g.exchanges) exchanged.insert(e.kind);
      for (Rank r = 0; r < ranks; ++r) {
        const std::string diff =
            first_difference(lower_rank(topo, a, initial, roots, ranks, modes, r), restrict_to_rank(g, r));
        REQUIRE_MESSAGE(diff.empty(), "rank ", r, " of ", ranks, ": ", diff, "\n", to_string(g));
        ++compared;
      }
    }
  }
  CHECK(compared > 200);
  CHECK(with_transfers > 30);
  CHECK(with_combines > 10);
  CHECK(exchanged.size() == 3);  // broadcasts, all-gathers and all-to-alls were compared
}

TEST_CASE("engine.plan.lower.lower_rank_names_a_rank_off_the_mesh") {
  NodeRef x = src({4});
  NodeRef y = build::unary(Op::Relu, x);
  Assignment a;
  a[y->id] = grid_blocks(poly::signature_of(*y), {2}, 2);
  const std::vector<Shard> initial{{x->id, Box::of_shape(x->shape), 0}};
  CHECK_THROWS_WITH_AS(lower_rank({x, y}, a, initial, {y}, 2, {}, 2),
                       doctest::Contains("lower_rank: rank 2 is not one of the mesh's 2 ranks"), Error);
}

// An estimated plan (as on a big mesh): the choices the search keeps, lowered for one rank at a
// time, give every rank its part of the plan the run or the verifier lowers as a whole.
TEST_CASE("engine.plan.lower.an_estimated_plan_lowers_per_rank_as_a_whole") {
  const int P = 48;
  NodeRef x = src({96 * 4, 64});
  NodeRef h = x;
  std::vector<NodeRef> weights;
  for (int l = 0; l < 3; ++l) {
    NodeRef w = src({64, 64}), b = src({64});
    weights.push_back(w), weights.push_back(b);
    h = build::unary(Op::Tanh, build::binary(Op::Add, build::matmul(h, w), b));
  }
  NodeRef s = build::reduce(Op::Sum, h, {0}, false);
  const std::vector<NodeRef> topo = topo_of({h, s});
  std::vector<Shard> initial;
  for (Rank r = 0; r < P; ++r) initial.push_back({x->id, Box({r * 8, 0}, {r * 8 + 7, 63}), r});
  for (const NodeRef& w : weights) initial.push_back({w->id, Box::of_shape(w->shape), 0});
  SearchOptions opt;
  opt.exact_limit = 1;  // estimate, as past 4,096 ops x ranks
  const Plan p = search(topo, initial, {h, s}, Mesh::modelled(P), opt);
  REQUIRE(p.estimated);
  REQUIRE(!p.lowered());
  const LoweringInput in{topo, initial, {h, s}, Mesh::modelled(P)};
  const ShardedGraph& whole = p.graph();
  REQUIRE(verify(whole, topo).ok());
  CHECK(!whole.transfers.empty());
  for (Rank r = 0; r < P; ++r) {
    const std::string diff = first_difference(lower_choice(in, p.choice, r), restrict_to_rank(whole, r));
    REQUIRE_MESSAGE(diff.empty(), "rank ", r, ": ", diff);
  }
}

// An all-gather: each of 8 ranks made one row band of y and every block of z = w y reads y
// whole. Each band goes from its maker straight to the other 7 (no relay: a rank sends no more
// than it receives), and the plan verifies.
TEST_CASE("engine.plan.lower.an_all_gather_sends_each_part_directly") {
  NodeRef x = src({16, 8}), w = src({8, 16});
  NodeRef y = build::unary(Op::Exp, x);
  NodeRef z = build::matmul(w, y);  // {8,8}, k = 16: rows of z each read all of y
  const std::vector<NodeRef> topo{x, w, y, z};
  Assignment a;
  a[y->id] = grid_blocks(poly::signature_of(*y), {8, 1}, 8);
  a[z->id] = grid_blocks(poly::signature_of(*z), {8, 1, 1}, 8);
  std::vector<Shard> initial;
  for (Rank r = 0; r < 8; ++r) {
    initial.push_back(Shard{x->id, Box({2 * r, 0}, {2 * r + 1, 7}), r});
    initial.push_back(Shard{w->id, Box({r, 0}, {r, 15}), r});
  }
  const ShardedGraph g = lower(topo, a, initial, {z}, 8);
  CHECK_MESSAGE(verify(g, topo).ok(), verify(g, topo).message());
  std::vector<int> sent(8, 0), received(8, 0);
  for (const Transfer& t : g.transfers) {
    CHECK(t.tensor == y->id);
    ++sent[static_cast<size_t>(t.from)];
    ++received[static_cast<size_t>(t.to)];
    CHECK(t.slice.lo[0] / 2 == t.from);  // straight from the rank that made those rows
  }
  for (Rank r = 0; r < 8; ++r) {
    CHECK(sent[static_cast<size_t>(r)] == 7);
    CHECK(received[static_cast<size_t>(r)] == 7);
  }
}

// Two parts read by 16 ranks: a tree per group of 8 readers, then one exchange each. No rank
// sends more than log2(8) + 1 tree copies plus its exchange, and every reader gets each part once.
TEST_CASE("engine.plan.lower.few_parts_to_many_readers_go_down_a_tree_per_group") {
  NodeRef x = src({16, 8}), w = src({8, 8});
  NodeRef z = build::matmul(x, w);  // every row block reads w whole
  Assignment a;
  a[z->id] = grid_blocks(poly::signature_of(*z), {16, 1, 1}, 16);
  std::vector<Shard> initial{Shard{w->id, Box({0, 0}, {3, 7}), 3}, Shard{w->id, Box({4, 0}, {7, 7}), 12}};
  for (Rank r = 0; r < 16; ++r) initial.push_back(Shard{x->id, Box({r, 0}, {r, 7}), r});
  const std::vector<NodeRef> topo{x, w, z};
  const ShardedGraph g = lower(topo, a, initial, {z}, 16);
  CHECK_MESSAGE(verify(g, topo).ok(), verify(g, topo).message());
  std::vector<int> sent(16, 0), got_top(16, 0), got_bottom(16, 0);
  for (const Transfer& t : g.transfers) {
    ++sent[static_cast<size_t>(t.from)];
    (t.slice.lo[0] == 0 ? got_top : got_bottom)[static_cast<size_t>(t.to)] += 1;
  }
  for (Rank r = 0; r < 16; ++r) {
    CHECK(got_top[static_cast<size_t>(r)] == (r == 3 ? 0 : 1));
    CHECK(got_bottom[static_cast<size_t>(r)] == (r == 12 ? 0 : 1));
    CHECK(sent[static_cast<size_t>(r)] <= 4);
  }
  for (Rank r = 0; r < 16; ++r)  // lower_rank agrees with the whole plan
    CHECK(lower_rank(topo, a, initial, {z}, 16, {}, r).transfers.size() ==
          restrict_to_rank(g, r).transfers.size());
}
