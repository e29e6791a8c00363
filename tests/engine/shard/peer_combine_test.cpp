// Combines over device peers that merge (engine/shard/rank_peer_combine.cpp): a plan's reduces,
// all-reduces and reduce-scatters run as one collective each between the ranks' devices, in
// the one posting order NCCL needs, partials never leaving device memory, with the values of
// the single-rank evaluator and the plan's bytes, whether every rank runs the whole plan or
// only its own part.
#include <doctest/doctest.h>

#include "engine/comm/loopback.hpp"
#include "engine/device/host_backend.hpp"
#include "engine/device/peers_local.hpp"
#include "engine/device/sim_backend.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/mesh.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/shard/rank_program.hpp"
#include "tests/engine/run/test_values.hpp"

using namespace tapestry;
using plan::ShardedGraph;
using poly::Box;

namespace {

using test::check_close;
using test::reference;
using test::rows;
using test::source;

struct PeerRun {
  int64_t reductions = 0, exchanges = 0;  // collectives the peers ran
  int64_t moved = 0;                      // transfer and combine bytes, as the ranks counted them
  int64_t peer_combines = 0;              // combines rank 0 runs on the peers
};

// Every rank of g (or each its own part) on a simulated device of its own, as run_plan does.
PeerRun run_on_peers(const std::vector<const ShardedGraph*>& parts) {
  const int n = parts[0]->num_ranks;
  comm::LoopbackHub hub(n);
  HostBackend between;
  comm::LocalPeersHub peers(n, between);
  std::vector<std::unique_ptr<SimDevice>> devs;
  std::vector<std::unique_ptr<RankProgram>> ranks;
  for (int r = 0; r < n; ++r) {
    devs.push_back(std::make_unique<SimDevice>());
    const ShardedGraph& g = *parts[parts.size() == 1 ? 0 : static_cast<size_t>(r)];
    ranks.push_back(std::make_unique<RankProgram>(g, hub.endpoint(r), StoreKeys{}, devs.back().get()));
    ranks.back()->use_device_peers(&peers.endpoint(r));
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (auto& p : ranks) moved = p->advance() || moved;
  }
  PeerRun out;
  for (int r = 0; r < n; ++r) {
    RankProgram& p = *ranks[static_cast<size_t>(r)];
    REQUIRE_MESSAGE(p.done(), "rank ", r, " waits at ", p.waiting_on());
    out.moved += p.transfer_bytes() + p.combine_bytes();
  }
  CHECK(peers.pending() == 0);
  CHECK(hub.undelivered() == 0);
  out.reductions = peers.reductions();
  out.exchanges = peers.exchanges();
  out.peer_combines = ranks[0]->peer_combines();
  return out;
}

// Runs g on simulated devices, whole and as each rank's own part, and through run_plan:
// `reductions` collectives on the peers, the plan's bytes, the evaluator's values, and no
// partial downloaded (the only bytes from the devices are y's result shards, gathered).
void check_on_peers(const ShardedGraph& g, const std::vector<NodeRef>& topo, const NodeRef& y,
                    int64_t reductions) {
  REQUIRE_MESSAGE(plan::verify(g, topo).ok(), plan::verify(g, topo).message());
  const int64_t bytes_moved = plan::cost_of(g, plan::Mesh::modelled(g.num_ranks)).bytes_moved;
  const PeerRun whole = run_on_peers({&g});
  CHECK(whole.reductions == reductions);
  CHECK(whole.moved == bytes_moved);
  std::vector<ShardedGraph> parts;
  for (int r = 0; r < g.num_ranks; ++r) parts.push_back(plan::restrict_to_rank(g, r));
  std::vector<const ShardedGraph*> ps;
  for (const ShardedGraph& p : parts) ps.push_back(&p);
  const PeerRun each = run_on_peers(ps);
  CHECK(each.reductions == reductions);
  CHECK(each.exchanges == whole.exchanges);
  CHECK(each.moved == bytes_moved);
  const std::vector<float> want = reference(y);
  std::vector<std::unique_ptr<SimDevice>> devs;
  std::vector<DeviceBackend*> dp;
  for (int r = 0; r < g.num_ranks; ++r)
    devs.push_back(std::make_unique<SimDevice>()), dp.push_back(devs.back().get());
  const RunReport rep = run_plan(g, {}, dp);
  check_close(y, want, 1e-5);
  CHECK(rep.transfer_bytes + rep.combine_bytes == bytes_moved);
  set_value(*y, nullptr);
  run_plan_parts(parts, {}, dp);
  check_close(y, want, 1e-5);
  set_value(*y, nullptr);
  for (auto& d : devs) CHECK(d->counts().live_bytes == 0);
}

// y = a b with k split over 4 ranks (Megatron's row-parallel step), its partials merged by `mode`.
struct RowParallel {
  NodeRef a = source({12, 8}, 5), b = source({8, 6}, 6);
  NodeRef y = build::matmul(a, b);
  std::vector<plan::Shard> initial;
  plan::Assignment asg;
  RowParallel() {
    for (plan::Rank r = 0; r < 4; ++r) {
      initial.push_back({a->id, Box({0, 2 * r}, {11, 2 * r + 1}), r});  // a by columns
      initial.push_back({b->id, Box({2 * r, 0}, {2 * r + 1, 5}), r});   // b by rows
    }
    asg[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 1, 4}, 4);  // {i, j, k}
  }
};

}  // namespace

TEST_CASE("engine.shard.peer_combine.every_mode_is_one_collective_on_the_devices") {
  for (plan::CombineMode mode :
       {plan::CombineMode::Reduce, plan::CombineMode::AllReduce, plan::CombineMode::ReduceScatter}) {
    CAPTURE(plan::combine_mode_name(mode));
    RowParallel m;
    const ShardedGraph g = plan::lower({m.a, m.b, m.y}, m.asg, m.initial, {m.y}, 4, {{m.y->id, mode}});
    REQUIRE(!g.combines.empty());
    for (const plan::Combine& c : g.combines) CHECK(c.after != plan::Combine::kUnplaced);
    check_on_peers(g, {m.a, m.b, m.y}, m.y, 1);  // a reduce-scatter's four combines: one collective
    // Nothing but the result comes off the devices: the partials merge there.
    std::vector<std::unique_ptr<SimDevice>> devs;
    std::vector<DeviceBackend*> dp;
    for (int r = 0; r < 4; ++r)
      devs.push_back(std::make_unique<SimDevice>()), dp.push_back(devs.back().get());
    const RunReport rep = run_plan(g, {}, dp);
    CHECK(rep.bytes_from_device == 12 * 6 * 4);
    set_value(*m.y, nullptr);
  }
}

TEST_CASE("engine.shard.peer_combine.a_reduce_scatter_then_an_all_gather_keep_the_posting_order") {
  // The reduce-scatter leaves a row block of y on each rank; every row block of z = c y reads y
  // whole: an all-gather on the same four ranks right after the reduce-scatter, which NCCL
  // matches by order on their communicator.
  RowParallel m;
  const NodeRef c = source({4, 12}, 7);
  const NodeRef z = build::matmul(c, m.y);
  plan::Assignment asg = m.asg;
  asg[z->id] = plan::grid_blocks(poly::signature_of(*z), {4, 1, 1}, 4);
  std::vector<plan::Shard> initial = m.initial;
  for (plan::Rank r = 0; r < 4; ++r) initial.push_back({c->id, Box({r, 0}, {r, 11}), r});
  const std::vector<NodeRef> topo{m.a, m.b, c, m.y, z};
  const ShardedGraph g =
      plan::lower(topo, asg, initial, {z}, 4, {{m.y->id, plan::CombineMode::ReduceScatter}});
  REQUIRE(g.combines.size() == 4);
  REQUIRE(!g.exchanges.empty());
  check_on_peers(g, topo, z, 1);
  const PeerRun run = run_on_peers({&g});
  CHECK(run.exchanges == static_cast<int64_t>(g.exchanges.size()));
  CHECK(run.peer_combines == 4);
}

TEST_CASE("engine.shard.peer_combine.merges_the_peers_lack_stay_on_the_host") {
  // A max of f32 (NCCL's float max need not propagate NaN): merged on the host, point to point,
  // still the evaluator's values; no collective on the peers.
  const NodeRef x = source({6, 8}, 9);
  const NodeRef y = build::reduce(Op::Max, x, {1}, false);
  plan::Assignment asg;
  asg[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 4}, 4);
  std::vector<plan::Shard> initial;
  for (plan::Rank r = 0; r < 4; ++r) initial.push_back({x->id, Box({0, 2 * r}, {5, 2 * r + 1}), r});
  const ShardedGraph g = plan::lower({x, y}, asg, initial, {y}, 4, {{y->id, plan::CombineMode::AllReduce}});
  REQUIRE(!g.combines.empty());
  check_on_peers(g, {x, y}, y, 0);
}

TEST_CASE("engine.shard.peer_combine.ranks_outside_a_combine_never_post_it") {
  // k split over ranks 0 and 1 of 4: ranks 2 and 3 run the whole plan too (as virtual ranks
  // do) but take no part in the reduction, so it is not in their posting order.
  const NodeRef a = source({6, 8}, 3), b = source({8, 5}, 4);
  const NodeRef y = build::matmul(a, b);
  plan::Assignment asg;
  asg[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 1, 2}, 2);
  std::vector<plan::Shard> initial;
  for (plan::Rank r = 0; r < 2; ++r) {
    initial.push_back({a->id, Box({0, 4 * r}, {5, 4 * r + 3}), r});
    initial.push_back({b->id, Box({4 * r, 0}, {4 * r + 3, 4}), r});
  }
  const ShardedGraph g =
      plan::lower({a, b, y}, asg, initial, {y}, 4, {{y->id, plan::CombineMode::AllReduce}});
  REQUIRE(g.combines.size() == 1);
  REQUIRE(g.participants(g.combines[0]).size() == 2);
  check_on_peers(g, {a, b, y}, y, 1);
}
