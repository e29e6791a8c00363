// Hand strategies cost what their analytic formulas say (docs/planner.md, "The cost model"):
// data parallel with replicated weights, Megatron's column-then-row MLP (one all-reduce or one
// reduce-scatter), 2-D SUMMA, forced with x:constrain on modelled meshes, and 3-D matmul as an
// explicit choice (a 3-dim split of i, j and k; constrain fixes an output's layout and cannot
// name a reduction dim's split). Bytes are checked exactly against counts made here from the
// strategy alone; times against the alpha-beta formulas: each move's time is the formula of
// its collective (collective_cost.hpp), and the plan's makespan lies between the busiest
// rank's compute plus its critical move and the sum of every compute and move.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/collective_cost.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/moves.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/poly/signature.hpp"

using namespace tapestry;
using namespace tapestry::plan;

namespace {

NodeRef weight(const Shape& s) {  // a parameter materialized on rank 0
  auto v = Value::alloc(DType::F32, s);
  for (int64_t i = 0; i < numel(s); ++i) v->data<float>()[i] = static_cast<float>(i % 7) / 8;
  return make_source(v, s, DType::F32);
}

NodeRef split_along(const NodeRef& x, int dim, int64_t parts) {
  std::vector<int64_t> grid(x->shape.size(), 1);
  grid[static_cast<size_t>(dim)] = parts;
  return build::constrain(x, grid);
}

struct Planned {
  PlannedGraph pg;
  Moves moves;
  const ShardedGraph& g() const { return pg.plan.graph(); }
};

Planned plan_for(const NodeRef& y, const Mesh& m) {
  PlannerState state;
  Planned p{plan_observation(state, {y}, m, {}), {}};
  REQUIRE_MESSAGE(verify(p.g(), p.pg.topo).ok(), verify(p.g(), p.pg.topo).message());
  p.moves = classify_moves(p.g());
  return p;
}

// The moves of kind k that cross ranks.
std::vector<const MoveGroup*> of_kind(const Moves& mv, MoveKind k) {
  std::vector<const MoveGroup*> out;
  for (const MoveGroup& g : mv.groups)
    if (g.kind == k && !g.local()) out.push_back(&g);
  return out;
}

std::string choice_of(const Planned& p, const NodeRef& n) {
  for (const NodeRef& t : p.pg.topo)
    if (t->op == n->op && t->shape == n->shape && p.pg.plan.choice.count(t->id))
      return p.pg.plan.choice.at(t->id).name(poly::signature_of(*t));
  return "";
}

// The makespan lies between the busiest rank's compute plus the longest move (a move that
// must wait for compute and delays compute after it) and every compute plus every move.
void check_bracket(const Planned& p, const Mesh& m, double critical_move) {
  const PlanCost c = p.pg.plan.cost;
  double busiest = 0, all_compute = 0, all_moves = 0;
  for (double b : c.rank_busy) busiest = std::max(busiest, b), all_compute += b;
  for (const MoveGroup& g : p.moves.groups) all_moves += move_time(g, p.g(), m);
  CHECK(c.time >= std::max(busiest, critical_move) * (1 - 1e-9));
  CHECK(c.time <= all_compute + all_moves + 1e-9);
}

constexpr double kF32 = 4;

}  // namespace

// Data parallel: X split by rows, the weight W (on rank 0) copied to every rank by one broadcast
// (an Exchange step): (p-1)|W| bytes in the cheaper of the binomial tree, ceil(log2 p) rounds of
// alpha + |W| beta, and scatter + ring all-gather.
TEST_CASE("engine.plan.strategies.data_parallel_replicated_weights") {
  for (int p : {4, 8}) {
    CAPTURE(p);
    const Mesh m = Mesh::modelled(p);
    const int64_t B = 4096, K = 512, N = 256;
    NodeRef x = split_along(build::rand({B, K}, 1, DType::F32), 0, p);
    NodeRef w = build::constrain(weight({K, N}), {1, 1}, /*replicated=*/true);
    NodeRef y = build::matmul(x, w);
    const Planned pl = plan_for(y, m);
    CHECK(choice_of(pl, y) == cat_str("i/", p));
    const double W = double(K * N) * kF32;
    CHECK(pl.pg.plan.cost.bytes_moved == int64_t((p - 1) * W));  // exact: each other rank gets W once
    const auto trees = of_kind(pl.moves, MoveKind::Broadcast);
    REQUIRE(trees.size() == 1);
    REQUIRE(trees[0]->exchange >= 0);  // one collective step
    const double tree = std::ceil(std::log2(p)) * (m.intra.latency + W / m.intra.bandwidth);
    const double formula = broadcast_time(m.intra, p, W).time;
    CHECK(move_time(*trees[0], pl.g(), m) == doctest::Approx(formula));
    // At 512 KiB, scatter + ring all-gather beats the tree from 8 ranks on.
    CHECK(formula <= tree);
    if (p == 8) CHECK(formula < tree);
    check_bracket(pl, m, formula);
    // The matmul blocks wait for the broadcast, which starts when the last member reaches it
    // (after copying its rows of X, which the busiest rank's compute counts): the makespan is
    // at most the compute plus the broadcast.
    double busiest = 0;
    for (double b : pl.pg.plan.cost.rank_busy) busiest = std::max(busiest, b);
    CHECK(pl.pg.plan.cost.time - busiest <= formula * (1 + 1e-9));
  }
}

// Column parallel: a large weight W on rank 0 and a small batch X generated where read; each rank
// computes its band of Y's columns from its band of W, so rank 0 sends (p-1)/p |W| and nothing
// else moves. A grid that also splits X's rows (i/2 x j/32) broadcasts each band to two ranks:
// twice the bytes, and, since only rank 0 holds W, no fewer bytes out of rank 0's link, so it is
// never faster (the root was once charged only its scatter, and that grid won by 24% at p = 64).
TEST_CASE("engine.plan.strategies.column_parallel_large_weight") {
  for (int p : {8, 64}) {
    CAPTURE(p);
    const Mesh m = Mesh::modelled(p);
    const int64_t B = 64, K = 1024, N = 4096;
    NodeRef x = build::rand({B, K}, 3, DType::F32);
    NodeRef y = build::matmul(x, weight({K, N}));
    const Planned pl = plan_for(y, m);
    CHECK(choice_of(pl, y) == cat_str("j/", p));
    const double W = double(K * N) * kF32;
    CHECK(pl.pg.plan.cost.bytes_moved == int64_t(W * (p - 1) / p));
    CHECK(of_kind(pl.moves, MoveKind::Broadcast).empty());
  }
}

// Megatron: H = gelu(X W1) by columns (j/p), Y = H W2 by rows of W2 (k/p): one combine of Y.
// All-reduced (Y replicated): 2 (p-1) |Y| bytes, as one all-reduce or as its ring's two halves,
// a reduce-scatter and an all-gather (the same formula and bytes); reduce-scattered (Y by
// rows): (p-1) |Y|.
TEST_CASE("engine.plan.strategies.megatron_column_then_row") {
  for (int p : {4, 8}) {
    for (bool scatter : {false, true}) {
      CAPTURE(p);
      CAPTURE(scatter);
      const Mesh m = Mesh::modelled(p);
      const int64_t B = 1024, D = 512, F = 2048;
      NodeRef x = build::rand({B, D}, 1, DType::F32);  // generated where read: every rank has it
      NodeRef w1 = split_along(build::rand({D, F}, 2, DType::F32), 1, p);
      NodeRef w2 = split_along(build::rand({F, D}, 3, DType::F32), 0, p);
      NodeRef h = build::unary(Op::Gelu, build::matmul(x, w1));
      NodeRef y0 = build::matmul(h, w2);
      NodeRef y = scatter ? split_along(y0, 0, p) : build::constrain(y0, {1, 1}, true);
      const Planned pl = plan_for(y, m);
      const double Y = double(B * D) * kF32;
      CHECK(pl.pg.plan.cost.bytes_moved == int64_t((scatter ? 1 : 2) * (p - 1) * Y));
      auto combines = of_kind(pl.moves, scatter ? MoveKind::ReduceScatter : MoveKind::AllReduce);
      const auto gathers = of_kind(pl.moves, MoveKind::AllGather);
      const bool halves = !scatter && combines.empty();
      if (halves) combines = of_kind(pl.moves, MoveKind::ReduceScatter);
      REQUIRE(combines.size() == 1);
      CHECK(gathers.size() == (halves ? 1u : 0u));
      CHECK(of_kind(pl.moves, MoveKind::Broadcast).empty());
      CHECK(of_kind(pl.moves, MoveKind::PointToPoint).empty());
      const double t = scatter ? reduce_scatter_time(m.intra, p, Y, m.mem_bytes_per_s).time
                               : all_reduce_time(m.intra, p, Y, m.mem_bytes_per_s).time;
      const double moved =
          move_time(*combines[0], pl.g(), m) + (halves ? move_time(*gathers[0], pl.g(), m) : 0);
      CHECK(moved == doctest::Approx(t));
      // Ring all-reduce: 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma at these sizes.
      if (!scatter)
        CHECK(t == doctest::Approx(2 * (p - 1) * m.intra.latency + 2.0 * (p - 1) / p * Y / m.intra.bandwidth +
                                   double(p - 1) / p * Y / m.mem_bytes_per_s));
      // Nothing overlaps the combine: it follows every partial (equal blocks, so the busiest
      // rank's compute) and only the copy of y's constrain (in rank_busy) follows it. The
      // makespan is the compute plus the collective's formula, to rounding.
      double busiest = 0;
      for (double b : pl.pg.plan.cost.rank_busy) busiest = std::max(busiest, b);
      CHECK(pl.pg.plan.cost.time == doctest::Approx(busiest + t).epsilon(halves ? 1e-3 : 1e-6));
      check_bracket(pl, m, t);
    }
  }
}

// SUMMA on a q x q grid: C's block (a, b) needs A's row panel a and B's column panel b; each
// rank receives the q-1 blocks of each panel it lacks: 2 (q-1) n^2 elements in all, and each
// panel is an all-gather among q ranks: (q-1) (alpha + n^2/p beta) per panel round a ring,
// ceil(log2 q) alpha + (q-1) n^2/p beta by recursive doubling.
TEST_CASE("engine.plan.strategies.summa_2d") {
  for (int q : {2, 4}) {
    const int p = q * q;
    CAPTURE(p);
    const Mesh m = Mesh::this_machine(p);  // one node: one link, so the formula has one alpha-beta
    const int64_t n = 1024;
    NodeRef a = build::constrain(build::rand({n, n}, 1, DType::F32), {q, q});
    NodeRef b = build::constrain(build::rand({n, n}, 2, DType::F32), {q, q});
    NodeRef c = build::constrain(build::matmul(a, b), {q, q});
    const Planned pl = plan_for(c, m);
    const double block = double(n * n / p) * kF32;
    CHECK(pl.pg.plan.cost.bytes_moved == int64_t(2.0 * (q - 1) * double(n * n) * kF32));
    const auto gathers = of_kind(pl.moves, MoveKind::AllGather);
    const auto trees = of_kind(pl.moves, MoveKind::Broadcast);
    const double panel = all_gather_time(m.intra, q, q * block).time;
    CHECK(panel <= (q - 1) * (m.intra.latency + block / m.intra.bandwidth));
    // One all-gather per row panel of A and per column panel of B, each over its q ranks.
    CHECK(gathers.size() == size_t(2 * q));
    CHECK(trees.empty());
    for (const MoveGroup* g : gathers) {
      CHECK(g->ranks.size() == size_t(q));
      CHECK(move_time(*g, pl.g(), m) == doctest::Approx(panel));
    }
    // Each rank's link receives both panels: 2 (q-1) blocks.
    check_bracket(pl, m, 2 * panel);
    // Each panel is one collective step, and a rank's collectives run one after another: the
    // compute waits for the two panels' formulas.
    for (const MoveGroup* g : gathers) CHECK(g->exchange >= 0);
    double busiest = 0;
    for (double bz : pl.pg.plan.cost.rank_busy) busiest = std::max(busiest, bz);
    const double waited = pl.pg.plan.cost.time - busiest;
    CHECK(waited == doctest::Approx(2 * panel).epsilon(1e-6));
  }
}

// 3-D matmul on p = q^3 ranks: block (i, j, k) computes A[i,k] B[k,j]; A and B start in q x q
// blocks on ranks 0..q^2-1. Each block's A and B come from their holders (counted here, block
// by block), and the q partials of each C block are reduce-scattered: (q-1) n^2 elements. The
// total is at most 3 q n^2 elements, 3 n^2/q^2 per rank: the 3-D algorithm's bound
// (per-rank communication Omega(n^2 / p^(2/3))), where 2-D SUMMA moves 2 (sqrt p - 1) n^2.
TEST_CASE("engine.plan.strategies.three_d_matmul_and_its_bound") {
  for (int q : {2, 4}) {
    const int p = q * q * q;
    CAPTURE(p);
    const Mesh m = Mesh::this_machine(p);
    const int64_t n = 256, e = n / q;
    auto va = Value::alloc(DType::F32, {n, n}), vb = Value::alloc(DType::F32, {n, n});
    NodeRef A = make_source(va, {n, n}, DType::F32), B = make_source(vb, {n, n}, DType::F32);
    NodeRef y = build::matmul(A, B);
    LoweringInput in;
    in.topo = {A, B, y};
    in.roots = {y};
    in.mesh = m;
    for (int i = 0; i < q; ++i)
      for (int j = 0; j < q; ++j) {
        const poly::Box blk({i * e, j * e}, {(i + 1) * e - 1, (j + 1) * e - 1});
        in.initial.push_back({A->id, blk, i * q + j});
        in.initial.push_back({B->id, blk, i * q + j});
      }
    const std::map<uint64_t, Candidate> choice{{y->id, Candidate{{q, q, q}, 0, CombineMode::ReduceScatter}}};
    const ShardedGraph g = lower_choice(in, choice);
    REQUIRE_MESSAGE(verify(g, in.topo).ok(), verify(g, in.topo).message());
    // Block (i, j, k) runs on rank (i q + j) q + k and reads A[i,k] (held by i q + k) and
    // B[k,j] (held by k q + j): a transfer unless it holds it.
    int64_t moved_blocks = 0;
    for (int i = 0; i < q; ++i)
      for (int j = 0; j < q; ++j)
        for (int k = 0; k < q; ++k) {
          const int r = (i * q + j) * q + k;
          moved_blocks += (r != i * q + k) + (r != k * q + j);
        }
    const double want = (double(moved_blocks) * double(e * e) + double(q - 1) * double(n * n)) * kF32;
    const PlanCost c = cost_of(g, m);
    CHECK(c.bytes_moved == int64_t(want));
    CHECK(want <= 3.0 * q * double(n * n) * kF32);            // the 3-D algorithm's count
    CHECK(want / p <= 3.0 * double(n * n) / (q * q) * kF32);  // per rank: 3 n^2 / p^(2/3)
    const Moves mv = classify_moves(g);
    const auto rs = of_kind(mv, MoveKind::ReduceScatter);
    REQUIRE(rs.size() == size_t(q * q));  // one per C block, over its q k-ranks
    const double piece = double(e * e) * kF32;
    for (const MoveGroup* x : rs) {
      CHECK(x->ranks.size() == size_t(q));
      CHECK(move_time(*x, g, m) ==
            doctest::Approx(reduce_scatter_time(m.intra, q, piece, m.mem_bytes_per_s).time));
    }
    // Makespan: at least every rank's compute (n^3 / p multiply-adds) and the reduce-scatter.
    CHECK(c.time >= 2.0 * double(n * n * n) / p / m.flops_per_s);
    CHECK(c.time >= reduce_scatter_time(m.intra, q, piece, m.mem_bytes_per_s).time);
  }
}
