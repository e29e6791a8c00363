// Planner quality at scale (issue 3, item 8): SUMMA-level communication for a big matmul, and
// the search by estimate that big graphs on big meshes take. Speed is measured in
// bench/planner, never asserted here.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/estimate.hpp"
#include "engine/plan/plan_cache.hpp"
#include "engine/plan/search.hpp"
#include "engine/plan/verifier.hpp"
#include "tests/engine/plan/plan_test_util.hpp"

using namespace tapestry;
using namespace tapestry::plan;
using tapestry::plan::testing::topo_of;

namespace {
NodeRef src(const Shape& s) { return make_source(nullptr, s, DType::F32); }
}  // namespace

TEST_CASE("engine.plan.scale.grid_block_matches_grid_blocks") {
  NodeRef y = build::matmul(src({11, 7}), src({7, 5}));
  const poly::Signature s = poly::signature_of(*y);
  for (const std::vector<int64_t>& parts : {std::vector<int64_t>{3, 2, 1}, {1, 5, 7}, {11, 1, 2}}) {
    const std::vector<Placement> all = grid_blocks(s, parts, 6);
    for (size_t k = 0; k < all.size(); ++k)
      CHECK(grid_block(s, parts, static_cast<int64_t>(k)) == all[k].box);
  }
}

TEST_CASE("engine.plan.scale.matmul_moves_within_1.5x_of_summa") {
  // C = A B, n x n, on P = 64 modelled ranks with A and B in the same 8 x 8 blocks (rank 8a+b
  // holds block (a, b) of each). 2-D SUMMA on the sqrt(P) x sqrt(P) grid: rank (a, b) needs A's
  // row panel a (n/sqrt(P) x n) and B's column panel b (n x n/sqrt(P)), holds one block of each,
  // so it receives 2 (n^2/sqrt(P) - n^2/P) elements; all ranks together 2 n^2 (sqrt(P) - 1).
  const int P = 64, q = 8;
  const int64_t n = 2048;
  NodeRef a = src({n, n}), b = src({n, n});
  NodeRef c = build::matmul(a, b);
  std::vector<Shard> initial;
  for (int r = 0; r < P; ++r) {
    const int64_t i = r / q, j = r % q;
    const Box blk({i * n / q, j * n / q}, {(i + 1) * n / q - 1, (j + 1) * n / q - 1});
    initial.push_back(Shard{a->id, blk, r});
    initial.push_back(Shard{b->id, blk, r});
  }
  const std::vector<NodeRef> topo = topo_of({c});
  const Plan p = search(topo, initial, {c}, Mesh::modelled(P), {SearchOptions::Anneal, 500, 1});
  const VerifyResult v = verify(p.graph(), topo);
  CHECK_MESSAGE(v.ok(), v.message());
  const double summa = 2.0 * double(n) * double(n) * (q - 1) * 4.0;
  INFO("chose ", p.choice.at(c->id).name(poly::signature_of(*c)), ", ", p.cost.bytes_moved,
       " bytes vs SUMMA ", summa);
  CHECK(double(p.cost.bytes_moved) <= 1.5 * summa);
  CHECK(p.cost.bytes_moved > 0);
}

TEST_CASE("engine.plan.scale.search_by_estimate_gives_a_valid_cheap_plan") {
  // A chain of layers on 64 ranks, searched by estimate (exact_limit 0) and lowered once.
  const int P = 64;
  NodeRef x = src({1024, 256});
  std::vector<Shard> initial;
  for (int r = 0; r < P; ++r) initial.push_back(Shard{x->id, Box({r * 16, 0}, {r * 16 + 15, 255}), r});
  NodeRef h = x;
  for (int l = 0; l < 6; ++l) {
    NodeRef w = src({256, 256}), bias = src({256});
    initial.push_back(Shard{w->id, Box::of_shape(w->shape), 0});
    initial.push_back(Shard{bias->id, Box::of_shape(bias->shape), 0});
    h = build::unary(Op::Tanh, build::binary(Op::Add, build::matmul(h, w), bias));
  }
  const std::vector<NodeRef> topo = topo_of({h});
  const Mesh m = Mesh::modelled(P);
  SearchOptions o{SearchOptions::Anneal, 500, 3};
  o.exact_limit = 0;
  const Plan p = search(topo, initial, {h}, m, o);
  CHECK(p.estimated);
  CHECK(p.cost.estimated);
  CHECK_FALSE(p.lowered());  // planning never builds the blocks
  const VerifyResult v = verify(p.graph(), topo);
  CHECK_MESSAGE(v.ok(), v.message());
  CHECK(p.lowered());
  CHECK(static_cast<int64_t>(p.graph().blocks.size()) == p.blocks);
  CHECK(p.tried.at(h->id)->size() > 1);
  // The estimate is close to the exact simulation of the same plan.
  const PlanCost exact = p.exact_cost(m);
  CHECK_FALSE(exact.estimated);
  INFO("estimated ", to_string(p.cost), "; exact ", to_string(exact));
  CHECK(p.cost.time == doctest::Approx(exact.time).epsilon(0.5));
  CHECK(double(p.cost.bytes_moved) == doctest::Approx(double(exact.bytes_moved)).epsilon(0.25));
  CHECK(p.cost.flops == doctest::Approx(exact.flops).epsilon(0.01));
  // Better than running everything whole on rank 0, and than the exact greedy start.
  std::vector<Candidate> whole;
  for (const NodeRef& n : ops_to_place(topo, initial, {h}))
    whole.push_back(Candidate{std::vector<int64_t>(poly::signature_of(*n).rank(), 1), 0});
  CHECK(exact.total() < evaluate(topo, initial, {h}, m, whole).cost.total());
  const Plan g = search(topo, initial, {h}, m, {SearchOptions::Greedy, 0, 1});
  CHECK(exact.total() <= 1.5 * g.cost.total());
}

TEST_CASE("engine.plan.scale.an_estimated_plan_is_cached_without_its_blocks") {
  // The same chain built twice (new node ids): the hit renames the choice and lowers only on use.
  const int P = 64;
  auto build_chain = [&](std::vector<Shard>& initial) {
    NodeRef x = src({512, 128});
    for (int r = 0; r < P; ++r) initial.push_back(Shard{x->id, Box({r * 8, 0}, {r * 8 + 7, 127}), r});
    NodeRef h = x;
    for (int l = 0; l < 3; ++l) {
      NodeRef w = src({128, 128});
      initial.push_back(Shard{w->id, Box::of_shape(w->shape), 0});
      h = build::unary(Op::Relu, build::matmul(h, w));
    }
    return h;
  };
  SearchOptions o{SearchOptions::Anneal, 200, 5};
  o.exact_limit = 0;
  const Mesh m = Mesh::modelled(P);
  PlanCache cache;
  std::vector<Shard> init1, init2;
  NodeRef h1 = build_chain(init1);
  const std::vector<NodeRef> topo1 = topo_of({h1});
  const Plan first = cache.plan(topo1, init1, {h1}, m, o);
  NodeRef h2 = build_chain(init2);
  const std::vector<NodeRef> topo2 = topo_of({h2});
  const Plan hit = cache.plan(topo2, init2, {h2}, m, o);
  CHECK(cache.hits() == 1);
  CHECK(hit.estimated);
  CHECK_FALSE(hit.lowered());
  CHECK(hit.blocks == first.blocks);
  REQUIRE(hit.choice.size() == first.choice.size());
  CHECK(hit.choice.at(h2->id) == first.choice.at(h1->id));
  CHECK(hit.tried.count(h2->id) == 1);
  const VerifyResult v = verify(hit.graph(), topo2);
  CHECK_MESSAGE(v.ok(), v.message());
  CHECK(hit.graph().blocks.size() == first.graph().blocks.size());
  CHECK(hit.graph().transfers.size() == first.graph().transfers.size());
}

// Memory per rank in the global stage: a candidate whose own blocks pass the limit on one rank
// is out. Here the links are so slow that keeping a 3 MiB chain whole on rank 0, where its
// input lies, is by far the fastest; but its output beside the input passes 4 MiB per rank.
TEST_CASE("engine.plan.scale.global_stage_keeps_to_the_memory_per_rank") {
  NodeRef x = src({768, 1024});  // 3 MiB
  NodeRef h = x;
  for (Op op : {Op::Exp, Op::Neg, Op::Tanh}) h = build::unary(op, h);
  const std::vector<NodeRef> topo = topo_of({h});
  const std::vector<Shard> initial{Shard{x->id, Box::of_shape(x->shape), 0}};
  Mesh m = Mesh::modelled(64);
  m.inter.bandwidth = m.intra.bandwidth = 1e6;
  SearchOptions o;
  o.exact_limit = 0;
  const Plan fast = search(topo, initial, {h}, m, o);
  for (const auto& [id, c] : fast.choice) CHECK(c.block_count(64) == 1);  // whole: nothing moves
  m.mem_bytes_per_rank = 4 << 20;
  const Plan p = search(topo, initial, {h}, m, o);
  CHECK(p.estimated);
  CHECK(p.cost.memory_penalty == 0);
  for (const auto& [id, c] : p.choice) CHECK(c.block_count(64) > 1);
}

// The estimate prices what lower() builds: a 1 MiB weight on rank 0 read in column bands by
// blocks on 8 ranks (every band by 2: two trees' root copies), a row-split activation, and the
// chain's reduce-scatter read whole by every rank (an all-gather of 64 parts). Searched by
// estimate, the winner's estimate is within 25% of its simulation (the old estimate was 0.1-0.3
// of it on such plans; bench/planner's canonical suite measures 10% at scale, and these shapes
// reach 1.2: a row-split activation gathered by 64 readers while rank 0 scatters a weight),
// or below it down to 0.7: an all-gather among 64 ranks is one collective, which starts when
// its last member arrives (here after rank 0's scatter of a weight to all 64), where the
// estimate prices each op's moves alone.
TEST_CASE("engine.plan.scale.the_estimate_is_close_to_the_simulation") {
  for (int ranks : {8, 64}) {
    NodeRef x = src({64, 512}), w = src({512, 512}), b = src({256, 2048}), c = src({2048, 256});
    NodeRef y = build::matmul(x, w);
    NodeRef bc = build::matmul(b, c);
    NodeRef z = build::matmul(build::matmul(src({1024, 256}), bc), src({256, 256}));
    std::vector<Shard> initial{Shard{w->id, Box::of_shape(w->shape), 0}};
    for (NodeRef s : {x, b, c}) initial.push_back(Shard{s->id, Box::of_shape(s->shape), 0});
    for (const std::vector<NodeRef>& roots : {std::vector<NodeRef>{y}, std::vector<NodeRef>{z}}) {
      const std::vector<NodeRef> topo = topo_of(roots);
      std::vector<Shard> held;
      for (const Shard& h : initial)
        for (const NodeRef& n : topo)
          if (n->id == h.tensor) held.push_back(h);
      for (const NodeRef& n : topo)  // the other sources: split by rows over the ranks
        if (n->op == Op::Source &&
            std::none_of(held.begin(), held.end(), [&](const Shard& h) { return h.tensor == n->id; }))
          for (Rank r = 0; r < ranks; ++r)
            held.push_back(Shard{
                n->id,
                Box({r * n->shape[0] / ranks, 0}, {(r + 1) * n->shape[0] / ranks - 1, n->shape[1] - 1}), r});
      SearchOptions o;
      o.exact_limit = 0;
      const Plan p = search(topo, held, roots, Mesh::modelled(ranks), o);
      REQUIRE(p.estimated);
      const PlanCost exact = p.exact_cost(Mesh::modelled(ranks));
      std::string chose;  // the winner's candidates, for the message
      for (const NodeRef& n : topo)
        if (p.choice.count(n->id)) chose += " " + p.choice.at(n->id).name(poly::signature_of(*n));
      INFO(ranks, " ranks,", chose, ": estimated ", p.cost.time * 1e6, " us, simulated ", exact.time * 1e6,
           " us");
      CHECK(p.cost.time >= 0.7 * exact.time);
      CHECK(p.cost.time <= 1.25 * exact.time);
    }
  }
}
