#include <doctest/doctest.h>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/bands.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/fuse.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/memory_limit.hpp"
#include "engine/plan/peak_memory.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/verifier.hpp"
#include "tests/engine/plan/plan_test_util.hpp"

using namespace tapestry;
using namespace tapestry::plan;
using plan::testing::topo_of;

namespace {

NodeRef stored(const Shape& s) { return make_source(nullptr, s, DType::F32); }  // no value: stored pieces
NodeRef held(const Shape& s) { return make_source(Value::alloc(DType::F32, s), s, DType::F32); }

// One heat step on an n x n grid: u + 0.1 * stencil(u) (a Correlate and a fused map).
struct Heat {
  NodeRef u, k, s, y;
  explicit Heat(int64_t n, bool u_stored = true) {
    u = u_stored ? stored({n, n}) : held({n, n});
    k = held({3, 3});
    s = build::stencil(u, k, build::Boundary::Zero);
    y = fuse({build::binary(Op::Add, u, build::binary(Op::Mul, build::Operand::number(0.1), s))}).roots[0];
  }
};

int64_t grid_bytes(int64_t n) { return n * n * 4; }

}  // namespace

// A candidate's blocks are cut along its first parallel dim that holds them; a full reduction
// has none, and stays as it is.
TEST_CASE("engine.plan.bands.banded_cuts_the_first_parallel_dim") {
  NodeRef x = stored({64, 32});
  const poly::Signature map = poly::signature_of(*build::unary(Op::Exp, x));
  CHECK(band_dim(map, Candidate{{1, 1}, 0}, 4) == 0);
  CHECK(band_dim(map, Candidate{{64, 1}, 0}, 2) == 1);  // rows are all cut: columns
  CHECK(band_dim(map, Candidate{{1, 1}, 0}, 1) == -1);
  CHECK(banded(map, Candidate{{1, 1}, 0}, 1).bands == 1);
  // Split rows over 2 ranks, 4 bands each: rank r's bands are the quarters of its own rows.
  const Candidate c = banded(map, Candidate{{2, 1}, 1}, 4);
  CHECK(c.bands == 4);
  CHECK(c.block_count(2) == 8);
  CHECK(c.name(map).find("in 4 bands") != std::string::npos);
  const std::vector<Placement> p = place(map, c, 2);
  REQUIRE(p.size() == 8);
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].rank == (i < 4 ? 1 : 0));  // from rank 1, as the candidate says
    CHECK(p[i].box == Box({int64_t(i) * 8, 0}, {int64_t(i) * 8 + 7, 31}));
  }
  const poly::Signature all = poly::signature_of(*build::reduce(Op::Sum, x, {0, 1}, false));
  CHECK(banded(all, Candidate{{1, 1}, 0}, 4).bands == 1);
}

// Four bands of a heat step on one rank run band by band: stencil 0, map 0, stencil 1, ...;
// the plan verifies, and out of core it holds about a band of each tensor, not whole grids.
TEST_CASE("engine.plan.bands.run_band_by_band") {
  const int64_t n = 256;
  Heat h(n);
  const std::vector<NodeRef> topo = topo_of({h.y});
  const std::vector<Shard> initial{{h.u->id, Box::of_shape(h.u->shape), 0},
                                   {h.k->id, Box::of_shape({3, 3}), 0}};
  // u stored as four bands of rows, as a banded step before this one left it.
  std::vector<Shard> in_bands{{h.k->id, Box::of_shape({3, 3}), 0}};
  for (int64_t b = 0; b < 4; ++b)
    in_bands.push_back({h.u->id, Box({b * n / 4, 0}, {(b + 1) * n / 4 - 1, n - 1}), 0});
  Assignment a;
  for (const NodeRef& op : {h.s, h.y})
    a[op->id] = place(poly::signature_of(*op), banded(poly::signature_of(*op), Candidate{{1, 1}, 0}, 4), 1);
  const ShardedGraph g = lower(topo, a, in_bands, {h.y}, 1);
  CHECK_MESSAGE(verify(g, topo).ok(), verify(g, topo).message());
  std::vector<uint64_t> runs;
  for (const Step& st : g.steps[0])
    if (st.kind == Step::Kind::Run) runs.push_back(g.blocks[st.index].node);
  REQUIRE(runs.size() == 8);
  for (size_t i = 0; i < runs.size(); ++i) CHECK(runs[i] == (i % 2 == 0 ? h.s->id : h.y->id));
  // Whole: u, its stencil and the result at once; out of core: a band of the stencil, the
  // band of the result, and the bands of u the band reads (its own and its neighbours').
  CHECK(peak_memory(g).bytes[0] >= 3 * grid_bytes(n));
  const int64_t ooc = peak_memory(g, true).bytes[0];
  CHECK(ooc <= 5 * grid_bytes(n) / 4 + 36);
  CHECK(ooc >= 3 * grid_bytes(n) / 4);
  // Unbanded, out of core changes nothing that matters: a step needs its input and output.
  Assignment whole;
  for (const NodeRef& op : {h.s, h.y})
    whole[op->id] = place(poly::signature_of(*op), Candidate{{1, 1}, 0}, 1);
  const ShardedGraph g1 = lower(topo, whole, initial, {h.y}, 1);
  CHECK(peak_memory(g1, true).bytes[0] >= 2 * grid_bytes(n));
}

// The planner bands a plan only on a spilling mesh and only when nothing fits otherwise: the
// fewest bands that fit; a plan that fits in no bands is refused, the message says so.
TEST_CASE("engine.plan.bands.planner_bands_only_under_memory_pressure") {
  const int64_t n = 256;
  Heat h(n);
  const std::vector<Shard> u_whole{{h.u->id, Box::of_shape(h.u->shape), 0}};
  const StoredShards where = [&](uint64_t id) { return id == h.u->id ? &u_whole : nullptr; };
  Mesh m = Mesh::this_machine(1);
  PlannerState planner;
  m.mem_bytes_per_rank = 4.0 * grid_bytes(n);
  CHECK(plan_observation(planner, {h.y}, m, {}, true, where).bands == 1);  // fits
  m.mem_bytes_per_rank = 1.5 * grid_bytes(n);  // below the step's input and output
  const PlannedGraph off = plan_observation(planner, {h.y}, m, {}, true, where);
  CHECK(off.bands == 1);  // no spilling: no bands, and the plan is refused
  CHECK_THROWS_AS(check_memory_limit(off.plan, int64_t(m.mem_bytes_per_rank), false), Error);
  m.spill = true;
  const PlannedGraph pg = plan_observation(planner, {h.y}, m, {}, true, where);
  CHECK(pg.bands >= 2);
  CHECK(pg.plan.cost.peak_bytes <= int64_t(m.mem_bytes_per_rank));
  CHECK_NOTHROW(check_memory_limit(pg.plan, int64_t(m.mem_bytes_per_rank), true));
  CHECK_MESSAGE(verify(pg.plan.graph(), pg.topo).ok(), verify(pg.plan.graph(), pg.topo).message());
  // Fewest: half as many bands do not fit in the headroom the planner keeps.
  if (pg.bands > 2) {
    SearchOptions fewer;
    fewer.bands = pg.bands / 2;
    const Plan p = search(pg.topo, pg.initial, pg.roots, m, fewer);
    CHECK(double(p.cost.peak_bytes) > kBandHeadroom * m.mem_bytes_per_rank);
  }
  // A limit below one band of anything: refused, naming the bands tried.
  m.mem_bytes_per_rank = 1000;
  const PlannedGraph none = plan_observation(planner, {h.y}, m, {}, true, where);
  try {
    check_memory_limit(none.plan, 1000, true);
    FAIL("a plan over the limit ran");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("bands per rank") != std::string::npos);
    CHECK(std::string(e.what()).find("--memory-per-rank") != std::string::npos);
  }
}

// On several ranks each rank runs its own bands: the plan verifies, each rank's program is
// band by band, and its part lowered alone is the same (what an MPI rank runs).
TEST_CASE("engine.plan.bands.on_several_ranks") {
  const int64_t n = 96;
  Heat h(n);
  std::vector<Shard> initial{{h.k->id, Box::of_shape({3, 3}), 0}};
  for (Rank r = 0; r < 3; ++r) initial.push_back({h.u->id, Box({r * 32, 0}, {r * 32 + 31, n - 1}), r});
  const std::vector<NodeRef> topo = topo_of({h.y});
  Assignment a;
  for (const NodeRef& op : {h.s, h.y})
    a[op->id] = place(poly::signature_of(*op), banded(poly::signature_of(*op), Candidate{{3, 1}, 0}, 4), 3);
  const ShardedGraph g = lower(topo, a, initial, {h.y}, 3);
  CHECK_MESSAGE(verify(g, topo).ok(), verify(g, topo).message());
  for (Rank r = 0; r < 3; ++r) {
    CHECK(to_string(lower_rank(topo, a, initial, {h.y}, 3, {}, r)) == to_string(restrict_to_rank(g, r)));
    int blocks = 0;
    for (const Step& st : g.steps[static_cast<size_t>(r)]) blocks += st.kind == Step::Kind::Run;
    CHECK(blocks == 8);  // 4 bands of each op
  }
}

// An out-of-core plan runs each rank's program in order (ShardedGraph::in_bands, read by
// RankProgram::advance): the flag comes with the whole plan, with each rank's part restricted
// from it, and with each part lowered from the choices alone (what an MPI rank runs), and an
// unbanded plan has it off. (Under mpirun -n 2, running ahead of the halo's exchange held every
// band: mpi.np2.spill.bands.)
TEST_CASE("engine.plan.bands.banded_plans_run_in_program_order") {
  const int64_t n = 128;
  Heat h(n);
  const std::vector<Shard> u_rows{{h.u->id, Box({0, 0}, {n / 2 - 1, n - 1}), 0},
                                  {h.u->id, Box({n / 2, 0}, {n - 1, n - 1}), 1}};
  const StoredShards where = [&](uint64_t id) { return id == h.u->id ? &u_rows : nullptr; };
  Mesh m = Mesh::this_machine(2);
  m.spill = true;
  PlannerState planner;
  m.mem_bytes_per_rank = 4.0 * grid_bytes(n);
  const PlannedGraph whole = plan_observation(planner, {h.y}, m, {}, true, where);
  REQUIRE(whole.bands == 1);
  CHECK_FALSE(whole.plan.graph().in_bands);
  CHECK_FALSE(in_bands(whole.plan.choice));
  m.mem_bytes_per_rank = 0.75 * grid_bytes(n);  // below a rank's half of the input and output
  const PlannedGraph pg = plan_observation(planner, {h.y}, m, {}, true, where);
  REQUIRE(pg.bands >= 2);
  CHECK(in_bands(pg.plan.choice));
  CHECK(pg.plan.graph().in_bands);
  for (Rank r = 0; r < 2; ++r) {
    CHECK(rank_part(pg, r).in_bands);
    CHECK(restrict_to_rank(pg.plan.graph(), r).in_bands);
    CHECK(lower_choice(lowering_input(pg), pg.plan.choice, r).in_bands);
    CHECK_FALSE(lower_choice(lowering_input(whole), whole.plan.choice, r).in_bands);
  }
}
