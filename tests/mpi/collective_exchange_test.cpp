// Exchanges under MPI (the MPI collectives they run as, and the device peers' grouped
// collectives), in the same binary as collective_test.cpp (its main runs every case).
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <map>
#include <memory>

#include "engine/device/peers_mpi.hpp"
#include "engine/device/sim_backend.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/poly/signature.hpp"
#include "engine/shard/rank_program.hpp"
#include "tests/mpi/collective_support.hpp"

using namespace tapestry;
using namespace tapestry::mpitest;
using plan::Rank;
using plan::ShardedGraph;
using poly::Box;

// Exchanges (plan::Exchange) under MPI: rows to columns (an all-to-all), a tensor whole on rank 0
// read whole by every rank (a broadcast, from 3 ranks on) and one split by rows read whole (an
// all-gather) run as MPI_Ialltoallv / MPI_Ibcast / MPI_Iallgatherv, started by every member,
// and give the single-rank values; with collectives off, as their transfers, the same values.
TEST_CASE("mpi.collective.exchanges_of_every_kind") {
  const int p = ranks();
  NodeRef x = source(DType::F32, {12, 12}, 5);
  const auto rows_of = [&](const NodeRef& n) {
    std::vector<plan::Shard> s;
    for (Rank r = 0; r < p; ++r) {
      const auto [lo, hi] = part(12, p, r);
      s.push_back({n->id, Box({lo, 0}, {hi, 11}), r});
    }
    return s;
  };
  struct Case {
    std::string name;
    NodeRef y;
    std::vector<int64_t> parts;  // of y's index space
    std::vector<plan::Shard> initial;
    plan::Exchange::Kind kind;
  };
  NodeRef neg = build::unary(Op::Neg, x);
  NodeRef mm = build::matmul(build::unary(Op::Exp, x), x);  // every row block reads x whole
  // Every row block reads x whole, and no rank but 0 holds any of it: a broadcast.
  NodeRef w = source(DType::F32, {static_cast<int64_t>(p), 12}, 6);
  NodeRef wx = build::matmul(w, x);
  std::vector<plan::Shard> whole_x{{x->id, Box::of_shape(x->shape), 0}};
  for (Rank r = 0; r < p; ++r) whole_x.push_back({w->id, Box::of_shape(w->shape), r});
  std::vector<Case> cases{
      {"all-to-all", neg, {1, static_cast<int64_t>(p)}, rows_of(x), plan::Exchange::Kind::AllToAll},
      {"all-gather", mm, {static_cast<int64_t>(p), 1, 1}, rows_of(x), plan::Exchange::Kind::AllGather},
      {"broadcast", wx, {static_cast<int64_t>(p), 1, 1}, whole_x, plan::Exchange::Kind::Broadcast}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::vector<NodeRef> topo = c.y == neg  ? std::vector<NodeRef>{x, neg}
                                      : c.y == mm ? std::vector<NodeRef>{x, mm->inputs[0], mm}
                                                  : std::vector<NodeRef>{w, x, wx};
    std::shared_ptr<const Value> want = reference(c.y);
    plan::Assignment a;
    for (const NodeRef& n : topo)
      if (n->op != Op::Source)
        a[n->id] = plan::grid_blocks(
            poly::signature_of(*n), n == c.y ? c.parts : std::vector<int64_t>{static_cast<int64_t>(p), 1}, p);
    const ShardedGraph g = plan::lower(topo, a, c.initial, {c.y}, p);
    const plan::VerifyResult v = plan::verify(g, topo);
    REQUIRE_MESSAGE(v.ok(), v.message());
    int64_t mine = 0;
    for (const plan::Exchange& e : g.exchanges) {
      CHECK(e.kind == c.kind);
      mine += std::binary_search(e.members.begin(), e.members.end(), me());
    }
    // A broadcast needs two readers besides its root.
    if (p >= (c.kind == plan::Exchange::Kind::Broadcast ? 3 : 2)) CHECK(mine > 0);
    const ShardedGraph part = plan::restrict_to_rank(g, me());
    const Outcome on = run(part, c.y, true), off = run(part, c.y, false);
    check_value(on, want, 1e-5);
    check_value(off, want, 1e-5);
    CHECK(on.started == mine);
    CHECK(off.started == 0);
  }
}

// Device peers under mpirun (the simulated device, engine/device/peers_mpi.hpp): each exchange
// runs as one grouped collective on the members' cached communicator, and each combine that
// can run as a collective as one reduction between the devices, posted in the one order every
// rank derives from the plan; the values are the single-rank evaluator's, and each rank posts
// one operation per collective it is a member of (not one per transfer).
namespace {

comm::DevicePeers& sim_peers() {
  static std::unique_ptr<comm::DevicePeers> peers = comm::mpi_simulated_peers(me(), ranks());  // collective
  return *peers;
}

// Runs this rank's part of g on a simulated device of its own over the peers; `posted`: the
// operations this rank posted to them.
Outcome run_on_peers(const ShardedGraph& g, const NodeRef& y, int64_t& posted) {
  comm::MpiTransport t(mpi(), next_epoch());
  SimDevice dev;
  comm::DevicePeers& peers = sim_peers();
  const int64_t before = peers.sends();
  Outcome o;
  {
    RankProgram p(g, t, StoreKeys{}, &dev);
    p.use_device_peers(&peers);
    o.value = finish(p, y->id);
    o.collective_combines = p.peer_combines();
  }
  posted = peers.sends() - before;
  mpi().flush(30.0);
  MPI_Barrier(MPI_COMM_WORLD);
  return o;
}

// What this rank posts when every exchange and every combine of its part runs grouped: its
// point-to-point sends, one per exchange it is a member of, and `reductions`.
int64_t grouped_posts(const ShardedGraph& part, int64_t reductions) {
  const std::vector<int> of = part.exchange_of_transfers();
  int64_t n = reductions;
  for (size_t t = 0; t < part.transfers.size(); ++t) n += part.transfers[t].from == me() && of[t] < 0;
  for (const plan::Exchange& e : part.exchanges)
    n += std::binary_search(e.members.begin(), e.members.end(), me());
  return n;
}

}  // namespace

TEST_CASE("mpi.collective.device_peers_group_exchanges_and_reductions") {
  const int p = ranks();
  NodeRef x = source(DType::F32, {12, 12}, 5);
  std::vector<plan::Shard> rows_x;
  for (Rank r = 0; r < p; ++r) {
    const auto [lo, hi] = part(12, p, r);
    rows_x.push_back({x->id, Box({lo, 0}, {hi, 11}), r});
  }
  // An all-to-all (rows to columns), then an all-gather (every row block of e x reads x whole).
  NodeRef neg = build::unary(Op::Neg, x);
  NodeRef mm = build::matmul(build::unary(Op::Exp, x), x);
  for (const NodeRef& y : {neg, mm}) {
    const std::vector<NodeRef> topo =
        y == neg ? std::vector<NodeRef>{x, neg} : std::vector<NodeRef>{x, mm->inputs[0], mm};
    std::shared_ptr<const Value> want = reference(y);
    plan::Assignment a;
    for (const NodeRef& n : topo)
      if (n->op != Op::Source)
        a[n->id] = plan::grid_blocks(poly::signature_of(*n),
                                     n == neg  ? std::vector<int64_t>{1, static_cast<int64_t>(p)}
                                     : n == mm ? std::vector<int64_t>{static_cast<int64_t>(p), 1, 1}
                                               : std::vector<int64_t>{static_cast<int64_t>(p), 1},
                                     p);
    const ShardedGraph g = plan::lower(topo, a, rows_x, {y}, p);
    REQUIRE(!g.exchanges.empty());
    const ShardedGraph mine = plan::restrict_to_rank(g, me());
    int64_t posted = 0;
    const Outcome o = run_on_peers(mine, y, posted);
    check_value(o, want, 1e-5);
    CHECK(posted == grouped_posts(mine, 0));
  }
  // y = a b with k split over every rank, its partials reduced onto one rank, all-reduced or
  // reduce-scattered: one reduction on the devices each time, every rank a member.
  NodeRef ka = source(DType::F32, {12, 4 * static_cast<int64_t>(p)}, 3);
  NodeRef kb = source(DType::F32, {4 * static_cast<int64_t>(p), 6}, 4);
  NodeRef ky = build::matmul(ka, kb);
  std::shared_ptr<const Value> want = reference(ky);
  std::vector<plan::Shard> held;
  for (Rank r = 0; r < p; ++r) {
    held.push_back({ka->id, Box({0, 4 * r}, {11, 4 * r + 3}), r});
    held.push_back({kb->id, Box({4 * r, 0}, {4 * r + 3, 5}), r});
  }
  plan::Assignment ak;
  ak[ky->id] = plan::grid_blocks(poly::signature_of(*ky), {1, 1, static_cast<int64_t>(p)}, p);
  for (plan::CombineMode mode :
       {plan::CombineMode::Reduce, plan::CombineMode::AllReduce, plan::CombineMode::ReduceScatter}) {
    CAPTURE(plan::combine_mode_name(mode));
    const ShardedGraph g = plan::lower({ka, kb, ky}, ak, held, {ky}, p, {{ky->id, mode}});
    REQUIRE(!g.combines.empty());
    const ShardedGraph mine = plan::restrict_to_rank(g, me());
    int64_t posted = 0;
    const Outcome o = run_on_peers(mine, ky, posted);
    check_value(o, want, 1e-5);
    CHECK(o.collective_combines == static_cast<int>(mine.combines.size()));
    CHECK(posted == grouped_posts(mine, 1));
  }
}
