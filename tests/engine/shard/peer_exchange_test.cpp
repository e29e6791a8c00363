// Exchanges over device peers (engine/shard/rank_peer_exchange.cpp): a plan's broadcasts,
// all-gathers and all-to-alls run as one grouped collective each between the ranks' devices,
// in the one posting order NCCL needs, with the values of the single-rank evaluator, whether
// every rank runs the whole plan or only its own part.
#include <doctest/doctest.h>

#include "engine/comm/loopback.hpp"
#include "engine/device/host_backend.hpp"
#include "engine/device/peers_local.hpp"
#include "engine/device/sim_backend.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/planner.hpp"
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
using test::source;

struct PeerRun {
  int64_t exchanges = 0;  // collectives the peers ran
  int64_t posts = 0;      // operations the ranks posted (transfers' sends and exchanges)
  int64_t transfer_bytes = 0;
};

// Runs every rank of g (or each its own part) on a simulated device of its own, as run_plan
// does, and reports what the peers saw.
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
    REQUIRE_MESSAGE(ranks[static_cast<size_t>(r)]->done(), "rank ", r, " waits at ",
                    ranks[static_cast<size_t>(r)]->waiting_on());
    out.transfer_bytes += ranks[static_cast<size_t>(r)]->transfer_bytes();
  }
  CHECK(peers.pending() == 0);
  out.exchanges = peers.exchanges();
  out.posts = peers.sends();
  return out;
}

int64_t plan_transfer_bytes(const ShardedGraph& g) {
  int64_t b = 0;
  for (const plan::Transfer& t : g.transfers) b += numel(t.slice.extents()) * 4;
  return b;
}

// Runs g on devices: whole on every rank, and as each rank's own part; checks values, that
// each exchange ran as one collective and the bytes the plan says.
void check_on_peers(const ShardedGraph& g, const std::vector<NodeRef>& topo, const NodeRef& y) {
  REQUIRE_MESSAGE(plan::verify(g, topo).ok(), plan::verify(g, topo).message());
  REQUIRE(!g.exchanges.empty());
  size_t exchanged = 0;
  for (const plan::Exchange& x : g.exchanges) exchanged += x.transfers.size();
  const PeerRun whole = run_on_peers({&g});
  CHECK(whole.exchanges == static_cast<int64_t>(g.exchanges.size()));
  // Each member posts each exchange once; only transfers outside exchanges go one by one.
  int64_t posts = static_cast<int64_t>(g.transfers.size() - exchanged);
  for (const plan::Exchange& x : g.exchanges) posts += static_cast<int64_t>(x.members.size());
  CHECK(whole.posts == posts);
  CHECK(whole.transfer_bytes == plan_transfer_bytes(g));
  std::vector<ShardedGraph> parts;
  for (int r = 0; r < g.num_ranks; ++r) parts.push_back(plan::restrict_to_rank(g, r));
  std::vector<const ShardedGraph*> ps;
  for (const ShardedGraph& p : parts) ps.push_back(&p);
  const PeerRun each = run_on_peers(ps);
  CHECK(each.exchanges == whole.exchanges);
  CHECK(each.transfer_bytes == whole.transfer_bytes);
  // Values, through run_plan (its own hub, devices per rank).
  const std::vector<float> want = reference(y);
  std::vector<std::unique_ptr<SimDevice>> devs;
  std::vector<DeviceBackend*> dp;
  for (int r = 0; r < g.num_ranks; ++r)
    devs.push_back(std::make_unique<SimDevice>()), dp.push_back(devs.back().get());
  run_plan(g, {}, dp);
  check_close(y, want, 1e-6);
  set_value(*y, nullptr);
  run_plan_parts(parts, {}, dp);
  check_close(y, want, 1e-6);
  set_value(*y, nullptr);
  for (auto& d : devs) CHECK(d->counts().live_bytes == 0);
}

}  // namespace

TEST_CASE("engine.shard.peer_exchange.a_broadcast_is_one_collective") {
  // w lies on rank 0 and every row block of y = x w reads it whole: a tree broadcast.
  const NodeRef x = source({8, 6}, 1), w = source({6, 5}, 2);
  const NodeRef y = build::matmul(x, w);
  plan::Assignment a;
  a[y->id] = plan::grid_blocks(poly::signature_of(*y), {4, 1, 1}, 4);
  std::vector<plan::Shard> initial{plan::Shard{w->id, Box::of_shape(w->shape), 0}};
  for (int r = 0; r < 4; ++r) initial.push_back(plan::Shard{x->id, Box({2 * r, 0}, {2 * r + 1, 5}), r});
  const ShardedGraph g = plan::lower({x, w, y}, a, initial, {y}, 4);
  REQUIRE(g.exchanges.size() == 1);
  CHECK(g.exchanges[0].kind == plan::Exchange::Kind::Broadcast);
  check_on_peers(g, {x, w, y}, y);
}

TEST_CASE("engine.shard.peer_exchange.an_all_gather_is_one_collective") {
  // Each of 4 ranks makes a row band of y = exp(x); every row block of z = w y reads y whole.
  const NodeRef x = source({8, 4}, 3), w = source({4, 8}, 4);
  const NodeRef y = build::unary(Op::Exp, x);
  const NodeRef z = build::matmul(w, y);
  plan::Assignment a;
  a[y->id] = plan::grid_blocks(poly::signature_of(*y), {4, 1}, 4);
  a[z->id] = plan::grid_blocks(poly::signature_of(*z), {4, 1, 1}, 4);
  std::vector<plan::Shard> initial;
  for (int r = 0; r < 4; ++r) {
    initial.push_back(plan::Shard{x->id, Box({2 * r, 0}, {2 * r + 1, 3}), r});
    initial.push_back(plan::Shard{w->id, Box({r, 0}, {r, 7}), r});
  }
  const ShardedGraph g = plan::lower({x, w, y, z}, a, initial, {z}, 4);
  bool gathered = false;
  for (const plan::Exchange& e : g.exchanges)
    gathered = gathered || e.kind == plan::Exchange::Kind::AllGather;
  CHECK(gathered);
  check_on_peers(g, {x, w, y, z}, z);
}

TEST_CASE("engine.shard.peer_exchange.a_redistribution_is_one_all_to_all") {
  // Rows to columns on 4 ranks, then a second all-to-all back to rows: two collectives in a row
  // on the same group.
  const NodeRef in = source({8, 8}, 5);
  const NodeRef x = build::unary(Op::Exp, in), y = build::unary(Op::Neg, x), z = build::unary(Op::Abs, y);
  plan::Assignment a;
  a[x->id] = plan::grid_blocks(poly::signature_of(*x), {4, 1}, 4);
  a[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 4}, 4);
  a[z->id] = plan::grid_blocks(poly::signature_of(*z), {4, 1}, 4);
  std::vector<plan::Shard> initial;
  for (int r = 0; r < 4; ++r) initial.push_back(plan::Shard{in->id, Box({2 * r, 0}, {2 * r + 1, 7}), r});
  const ShardedGraph g = plan::lower({in, x, y, z}, a, initial, {z}, 4);
  REQUIRE(g.exchanges.size() == 2);
  CHECK(g.exchanges[0].kind == plan::Exchange::Kind::AllToAll);
  check_on_peers(g, {in, x, y, z}, z);
}
