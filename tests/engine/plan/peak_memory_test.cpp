#include <doctest/doctest.h>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/memory_limit.hpp"
#include "engine/plan/peak_memory.hpp"
#include "engine/plan/search.hpp"
#include "tests/engine/plan/plan_test_util.hpp"

using namespace tapestry;
using namespace tapestry::plan;

namespace {
NodeRef src(const Shape& s) { return make_source(nullptr, s, DType::F32); }
}  // namespace

// A chain x -> a -> b -> c by rows on 2 ranks: a is freed after b's block reads it, so a rank
// holds its rows of x, a and b at once at most, never a, b and c together.
TEST_CASE("engine.plan.peak_memory.frees_after_the_last_reader") {
  NodeRef x = src({64, 256});
  NodeRef a = build::unary(Op::Exp, x), b = build::unary(Op::Neg, a), c = build::unary(Op::Abs, b);
  Assignment asg;
  for (const NodeRef& n : {a, b, c}) asg[n->id] = grid_blocks(poly::signature_of(*n), {2, 1}, 2);
  std::vector<Shard> initial{{x->id, Box({0, 0}, {31, 255}), 0}, {x->id, Box({32, 0}, {63, 255}), 1}};
  const ShardedGraph g = lower({x, a, b, c}, asg, initial, {c}, 2);
  const int64_t rows = 32 * 256 * 4;  // one rank's rows of any of them
  const PeakMemory pm = peak_memory(g);
  REQUIRE(pm.bytes.size() == 2);
  CHECK(pm.bytes[0] == 3 * rows);  // x (held), a and b while b runs; then a goes, c comes
  CHECK(pm.bytes[1] == 3 * rows);
  CHECK(pm.op[0] == b->id);
  // The cost model counts the same peak; c, the result, is never freed by the plan.
  CHECK(cost_of(g, Mesh::this_machine(2)).peak_bytes == 3 * rows);
  const auto frees = last_reads(g);
  bool a_freed = false;
  for (const auto& step : frees[0])
    for (uint64_t t : step) {
      a_freed = a_freed || t == a->id;
      CHECK(t != c->id);
    }
  CHECK(a_freed);
}

// Memory per rank is a limit: a plan over it costs more than any plan under it, and running one
// is refused with the rank, the bytes and the op.
TEST_CASE("engine.plan.peak_memory.is_a_limit") {
  NodeRef x = src({512, 512});  // 1 MiB
  NodeRef y = build::unary(Op::Exp, x), z = build::unary(Op::Neg, y);
  const std::vector<NodeRef> topo{x, y, z};
  std::vector<Shard> initial;
  for (Rank r = 0; r < 4; ++r) initial.push_back({x->id, Box({128 * r, 0}, {128 * r + 127, 511}), r});
  Mesh m = Mesh::this_machine(4);
  m.mem_bytes_per_rank = 1.5 * (1 << 20);  // the rows fit; gathering everything on one rank does not
  const Plan split = evaluate(topo, initial, {z}, m, {Candidate{{4, 1}, 0}, Candidate{{4, 1}, 0}});
  const Plan whole = evaluate(topo, initial, {z}, m, {Candidate{{1, 1}, 0}, Candidate{{1, 1}, 0}});
  CHECK(split.cost.memory_penalty == 0);
  CHECK(whole.cost.memory_penalty >= kOverMemory);
  CHECK(whole.cost.total() > split.cost.total());
  const Plan best = search(topo, initial, {z}, m, {SearchOptions::Anneal, 200, 1});
  CHECK(best.cost.memory_penalty == 0);
  CHECK_NOTHROW(check_memory_limit(split, int64_t(1.5 * (1 << 20))));
  try {
    check_memory_limit(whole, int64_t(1.5 * (1 << 20)));
    FAIL("an over-budget plan was not refused");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("on rank 0") != std::string::npos);
    CHECK(msg.find("at its ") != std::string::npos);
    CHECK(msg.find("memory budget") != std::string::npos);
  }
}
