// The in-process device peers keep NCCL's rules (order matching, in-order completion, no
// buffering), so what runs here would run on NCCL; and the executor posts in an order that
// meets them even where its program order would deadlock.
#include <doctest/doctest.h>

#include "engine/device/peers_local.hpp"
#include "engine/device/sim_backend.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/shard/rank_program.hpp"

using namespace tapestry;
using poly::Box;

namespace {

DeviceView filled(DeviceBackend& dev, float v, int64_t n = 4) {
  DeviceView d = device_alloc(dev, DType::F32, {n});
  auto h = Value::alloc(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) h->data<float>()[i] = v + static_cast<float>(i);
  dev.upload(h->v, d);
  return d;
}

float first(SimDevice& dev, const DeviceView& d) { return dev.view(d).ptr<float>()[0]; }

}  // namespace

TEST_CASE("engine.device.peers.pairs_meet_in_posting_order") {
  SimDevice dev;
  comm::LocalPeersHub hub(2, dev);
  const DeviceView a = filled(dev, 1), b = filled(dev, 10), x = filled(dev, 0), y = filled(dev, 0);
  auto s1 = hub.endpoint(0).send(1, a, 1);
  auto s2 = hub.endpoint(0).send(1, b, 2);
  CHECK(!s1->test());  // no buffering: a send waits for its receive
  auto r1 = hub.endpoint(1).recv(0, x, 1);
  auto r2 = hub.endpoint(1).recv(0, y, 2);
  CHECK(s1->test());
  CHECK(s2->test());
  CHECK(r2->test());
  CHECK(first(dev, x) == 1);
  CHECK(first(dev, y) == 10);
  CHECK(hub.pending() == 0);
  CHECK(hub.sends() == 2);
  CHECK(hub.bytes_sent() == 2 * 4 * 4);
}

TEST_CASE("engine.device.peers.a_rank_completes_in_order") {
  // Rank 0 waits to receive from rank 2 before its send to rank 1 can run, as a GPU stream does.
  SimDevice dev;
  comm::LocalPeersHub hub(3, dev);
  const DeviceView a = filled(dev, 1), b = filled(dev, 2), x = filled(dev, 0), y = filled(dev, 0);
  auto r0 = hub.endpoint(0).recv(2, x, 1);
  auto s0 = hub.endpoint(0).send(1, a, 2);
  auto r1 = hub.endpoint(1).recv(0, y, 2);
  CHECK(!r1->test());
  auto s2 = hub.endpoint(2).send(0, b, 1);
  CHECK(r1->test());
  CHECK(first(dev, y) == 1);
  CHECK(first(dev, x) == 2);
}

TEST_CASE("engine.device.peers.sends_first_on_both_sides_deadlock") {
  // What NCCL does with two ranks that each send before they receive: neither completes. The
  // executor never posts this way (transfer order), which the next case checks.
  SimDevice dev;
  comm::LocalPeersHub hub(2, dev);
  const DeviceView a = filled(dev, 1), b = filled(dev, 2), x = filled(dev, 0), y = filled(dev, 0);
  auto s0 = hub.endpoint(0).send(1, a, 1);
  auto s1 = hub.endpoint(1).send(0, b, 2);
  auto r0 = hub.endpoint(0).recv(1, x, 2);
  auto r1 = hub.endpoint(1).recv(0, y, 1);
  CHECK(!s0->test());
  CHECK(!r1->test());
  CHECK(hub.pending() == 4);
}

TEST_CASE("engine.device.peers.a_mismatched_pair_is_an_internal_error") {
  SimDevice dev;
  comm::LocalPeersHub hub(2, dev);
  const DeviceView a = filled(dev, 1), x = filled(dev, 0), small = filled(dev, 0, 2);
  auto s = hub.endpoint(0).send(1, a, 1);
  CHECK_THROWS_WITH_AS(hub.endpoint(1).recv(0, x, 2), doctest::Contains("posted in different orders"),
                       InternalError);
  comm::LocalPeersHub other(2, dev);
  auto s2 = other.endpoint(0).send(1, a, 1);
  CHECK_THROWS_AS(other.endpoint(1).recv(0, small, 1), InternalError);  // same label, other shape
}

TEST_CASE("engine.device.peers.transfer_order_not_program_order") {
  // y = a + b on rank 0 and z = b + a on rank 1. Each rank sends its held input to the other;
  // lower() puts sends of held data first in each program, so in program order both ranks would
  // send before receiving (the deadlock above). Posting in transfer order runs it.
  auto src = [](float base) {
    auto v = Value::alloc(DType::F32, {3});
    for (int i = 0; i < 3; ++i) v->data<float>()[i] = base + static_cast<float>(i);
    return make_source(v, {3}, DType::F32);
  };
  const NodeRef a = src(1), b = src(10);
  const NodeRef y = build::binary(Op::Add, a, b), z = build::binary(Op::Mul, b, a);
  plan::ShardedGraph g(2);
  g.nodes = {a, b, y, z};
  g.hold(a->id, Box::of_shape({3}), 0);
  g.hold(b->id, Box::of_shape({3}), 1);
  const size_t to_rank0 = g.add_transfer(b->id, Box::of_shape({3}), 1, 0);  // transfer 0
  const size_t to_rank1 = g.add_transfer(a->id, Box::of_shape({3}), 0, 1);  // transfer 1
  g.add_block(y->id, Box::of_shape({3}), 0);
  g.add_block(z->id, Box::of_shape({3}), 1);
  g.add_output(y->id, Box::of_shape({3}), 0);
  g.add_output(z->id, Box::of_shape({3}), 1);
  // Each rank sends first, as lower() orders held data.
  for (auto& steps : g.steps)
    std::stable_partition(steps.begin(), steps.end(),
                          [](const plan::Step& s) { return s.kind == plan::Step::Kind::Send; });
  REQUIRE(g.steps[0].front() == plan::Step{plan::Step::Kind::Send, to_rank1});
  REQUIRE(g.steps[1].front() == plan::Step{plan::Step::Kind::Send, to_rank0});
  REQUIRE(plan::verify(g, {a, b, y, z}).ok());
  SimDevice d0, d1;
  const RunReport r = run_plan(g, {}, {&d0, &d1});
  REQUIRE(y->value);
  REQUIRE(z->value);
  CHECK(y->value->data<float>()[2] == 3 + 12);
  CHECK(z->value->data<float>()[1] == 11 * 2);
  CHECK(r.device_blocks == 2);
  set_value(*y, nullptr);
  set_value(*z, nullptr);
}

namespace {

DeviceView zeros(DeviceBackend& dev, int64_t n) { return filled(dev, 0, n); }

float at(SimDevice& dev, const DeviceView& d, int64_t i) { return dev.view(d).ptr<float>()[i]; }

comm::ExchangeSpec spec_of(comm::ExchangeKind k, comm::Group g, int root, std::vector<int64_t> counts,
                           std::vector<int64_t> recv = {}) {
  comm::ExchangeSpec s;
  s.kind = k, s.group = std::move(g), s.root = root, s.counts = std::move(counts), s.recv = std::move(recv);
  return s;
}

}  // namespace

TEST_CASE("engine.device.peers.an_exchange_meets_when_every_member_reached_it") {
  // A broadcast among ranks {0, 2, 3} of 4, as NCCL runs one collective: it completes only once
  // it is the next operation of every member, and rank 1 takes no part.
  SimDevice dev;
  comm::LocalPeersHub hub(4, dev);
  const auto s = spec_of(comm::ExchangeKind::Broadcast, {0, 2, 3}, 2, {4 * 4});
  const DeviceView src = filled(dev, 7), none = zeros(dev, 1), y0 = zeros(dev, 4), y3 = zeros(dev, 4);
  auto h0 = hub.endpoint(0).exchange(s, none, y0, 9);
  auto h2 = hub.endpoint(2).exchange(s, src, zeros(dev, 4), 9);
  CHECK(!h0->test());
  CHECK(!h2->test());
  auto h3 = hub.endpoint(3).exchange(s, none, y3, 9);
  CHECK(h0->test());
  CHECK(h3->test());
  CHECK(at(dev, y0, 3) == 10);
  CHECK(at(dev, y3, 0) == 7);
  CHECK(hub.pending() == 0);
  CHECK(hub.exchanges() == 1);
  CHECK(hub.bytes_sent() == 2 * 16);  // the root's slice to each of the two others
}

TEST_CASE("engine.device.peers.all_gather_and_all_to_all_lay_out_as_the_spec_says") {
  SimDevice dev;
  comm::LocalPeersHub hub(3, dev);
  // All-gather of 1, 2 and 1 elements: every member receives all four, in group order.
  const auto g = spec_of(comm::ExchangeKind::AllGather, {0, 1, 2}, -1, {4, 8, 4});
  std::vector<DeviceView> outs{zeros(dev, 4), zeros(dev, 4), zeros(dev, 4)};
  std::vector<std::unique_ptr<comm::Collective>> hs;
  hs.push_back(hub.endpoint(0).exchange(g, filled(dev, 10, 1), outs[0], 1));
  hs.push_back(hub.endpoint(1).exchange(g, filled(dev, 20, 2), outs[1], 1));
  hs.push_back(hub.endpoint(2).exchange(g, filled(dev, 30, 1), outs[2], 1));
  for (auto& h : hs) CHECK(h->test());
  for (const DeviceView& o : outs) {
    CHECK(at(dev, o, 0) == 10);
    CHECK(at(dev, o, 1) == 20);
    CHECK(at(dev, o, 2) == 21);
    CHECK(at(dev, o, 3) == 30);
  }
  // All-to-all between ranks 0 and 2: 0 sends 2 elements to 2, 2 sends 1 to 0.
  const auto a0 = spec_of(comm::ExchangeKind::AllToAll, {0, 2}, -1, {0, 8}, {0, 4});
  const auto a2 = spec_of(comm::ExchangeKind::AllToAll, {0, 2}, -1, {4, 0}, {8, 0});
  const DeviceView r0 = zeros(dev, 1), r2 = zeros(dev, 2);
  auto x0 = hub.endpoint(0).exchange(a0, filled(dev, 5, 2), r0, 2);
  auto x2 = hub.endpoint(2).exchange(a2, filled(dev, 50, 1), r2, 2);
  CHECK(x0->test());
  CHECK(at(dev, r0, 0) == 50);
  CHECK(at(dev, r2, 0) == 5);
  CHECK(at(dev, r2, 1) == 6);
  // Counts that do not pair are the executor's bug, reported, never a silent mix-up.
  const auto bad = spec_of(comm::ExchangeKind::AllToAll, {0, 2}, -1, {4, 0}, {4, 0});
  auto y0 = hub.endpoint(0).exchange(a0, filled(dev, 5, 2), r0, 3);
  CHECK_THROWS_AS(hub.endpoint(2).exchange(bad, filled(dev, 50, 1), r2, 3), InternalError);
}

TEST_CASE("engine.device.peers.an_exchange_keeps_its_place_among_the_transfers") {
  // Rank 0 posts a send to rank 1, then an all-gather with rank 1; rank 1 posts them the other
  // way round: NCCL would hang (each waits in its first operation), and so does the hub. A
  // different exchange where another is expected is reported.
  SimDevice dev;
  comm::LocalPeersHub hub(2, dev);
  const auto g = spec_of(comm::ExchangeKind::AllGather, {0, 1}, -1, {4, 4});
  auto s = hub.endpoint(0).send(1, filled(dev, 1, 1), 1);
  auto e0 = hub.endpoint(0).exchange(g, filled(dev, 2, 1), zeros(dev, 2), 5);
  auto e1 = hub.endpoint(1).exchange(g, filled(dev, 3, 1), zeros(dev, 2), 5);
  auto r = hub.endpoint(1).recv(0, zeros(dev, 1), 1);
  CHECK(!s->test());
  CHECK(!e1->test());
  CHECK(hub.pending() == 4);
  // Rank 1 takes part in two groups' exchanges, {1, 2} first: rank 0 waits in {0, 1}'s for it.
  comm::LocalPeersHub three(3, dev);
  const auto g01 = spec_of(comm::ExchangeKind::Broadcast, {0, 1}, 0, {4});
  const auto g12 = spec_of(comm::ExchangeKind::Broadcast, {1, 2}, 2, {4});
  const DeviceView got1 = zeros(dev, 1), got2 = zeros(dev, 1);
  auto a0 = three.endpoint(0).exchange(g01, filled(dev, 8, 1), zeros(dev, 1), 5);
  auto b1 = three.endpoint(1).exchange(g12, zeros(dev, 1), got1, 5);
  auto a1 = three.endpoint(1).exchange(g01, zeros(dev, 1), got2, 5);
  CHECK(!a0->test());
  auto b2 = three.endpoint(2).exchange(g12, filled(dev, 9, 1), zeros(dev, 1), 5);
  CHECK(a0->test());
  CHECK(a1->test());
  CHECK(at(dev, got1, 0) == 9);
  CHECK(at(dev, got2, 0) == 8);
  comm::LocalPeersHub other(2, dev);
  auto f0 = other.endpoint(0).exchange(g, filled(dev, 2, 1), zeros(dev, 2), 5);
  CHECK_THROWS_WITH_AS(other.endpoint(1).exchange(g, filled(dev, 3, 1), zeros(dev, 2), 6),
                       doctest::Contains("posted in different orders"), InternalError);
}

namespace {

comm::ReduceSpec reduce_of(comm::Group g, int root, Monoid op, std::vector<int64_t> counts = {}) {
  comm::ReduceSpec s;
  s.group = std::move(g), s.root = root, s.op = op, s.counts = std::move(counts);
  return s;
}

}  // namespace

TEST_CASE("engine.device.peers.a_reduction_meets_when_every_member_reached_it") {
  // An all-reduce among {0, 1, 3} of 4 ranks, as NCCL runs one: only once it is every member's
  // next operation, merged in group order, the same value on each; a reduce reaches its root
  // only.
  SimDevice dev;
  comm::LocalPeersHub hub(4, dev);
  const auto all = reduce_of({0, 1, 3}, comm::kAllMembers, Monoid::Sum);
  std::vector<DeviceView> outs{zeros(dev, 4), zeros(dev, 4), zeros(dev, 4)};
  auto h0 = hub.endpoint(0).reduce(all, filled(dev, 1), outs[0], 4);
  auto h1 = hub.endpoint(1).reduce(all, filled(dev, 10), outs[1], 4);
  CHECK(!h0->test());
  CHECK(hub.reductions() == 0);
  auto h3 = hub.endpoint(3).reduce(all, filled(dev, 100), outs[2], 4);
  CHECK(h0->test());
  CHECK(h1->test());
  CHECK(h3->test());
  for (const DeviceView& o : outs) {
    CHECK(at(dev, o, 0) == 111);
    CHECK(at(dev, o, 3) == 120);
  }
  const auto onto1 = reduce_of({0, 1}, 1, Monoid::Prod);
  const DeviceView mine = zeros(dev, 4), theirs = zeros(dev, 4);
  auto p0 = hub.endpoint(0).reduce(onto1, filled(dev, 2), theirs, 5);
  auto p1 = hub.endpoint(1).reduce(onto1, filled(dev, 3), mine, 5);
  CHECK(p0->test());
  CHECK(at(dev, mine, 0) == 6);
  CHECK(at(dev, mine, 1) == 12);
  CHECK(at(dev, theirs, 0) == 0);  // not the root: untouched
  CHECK(hub.reductions() == 2);
  CHECK(hub.pending() == 0);
  CHECK(hub.endpoint(0).can_reduce(Monoid::Sum, DType::F32));
  CHECK(!hub.endpoint(0).can_reduce(Monoid::Max, DType::F32));  // NaN: NCCL's max need not keep it
  CHECK(hub.endpoint(0).can_reduce(Monoid::Max, DType::I32));
  CHECK(!hub.endpoint(0).can_reduce(Monoid::Sum, DType::C64));
}

TEST_CASE("engine.device.peers.a_reduce_scatter_gives_each_member_its_run") {
  // Pieces of 1 and 3 elements (NCCL: one ncclReduce per member in a group): member 0 gets
  // the first element of the sum, member 2 the other three.
  SimDevice dev;
  comm::LocalPeersHub hub(3, dev);
  const auto rs = reduce_of({0, 2}, comm::kAllMembers, Monoid::Sum, {1, 3});
  const DeviceView o0 = zeros(dev, 1), o2 = zeros(dev, 3);
  auto a = hub.endpoint(0).reduce(rs, filled(dev, 1), o0, 7);
  auto b = hub.endpoint(2).reduce(rs, filled(dev, 20), o2, 7);
  CHECK(a->test());
  CHECK(b->test());
  CHECK(at(dev, o0, 0) == 21);
  CHECK(at(dev, o2, 0) == 23);
  CHECK(at(dev, o2, 2) == 27);
  // Integers and bools merge as the kernels do: max of i32, `or` for a sum of bools.
  const auto mx = reduce_of({0, 1}, comm::kAllMembers, Monoid::Max);
  auto ints = [&](std::vector<int32_t> v) {
    auto h = Value::alloc(DType::I32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), h->data<int32_t>());
    DeviceView d = device_alloc(dev, DType::I32, h->v.shape);
    dev.upload(h->v, d);
    return d;
  };
  const DeviceView m0 = ints({0, 0}), m1 = ints({0, 0});
  auto i0 = hub.endpoint(0).reduce(mx, ints({-5, 7}), m0, 8);
  auto i1 = hub.endpoint(1).reduce(mx, ints({3, -9}), m1, 8);
  CHECK(i1->test());
  CHECK(dev.view(m1).ptr<int32_t>()[0] == 3);
  CHECK(dev.view(m0).ptr<int32_t>()[1] == 7);
  auto bools = [&](bool x, bool y) {
    auto h = Value::alloc(DType::Bool, {2});
    h->data<bool>()[0] = x, h->data<bool>()[1] = y;
    DeviceView d = device_alloc(dev, DType::Bool, {2});
    dev.upload(h->v, d);
    return d;
  };
  const auto any = reduce_of({0, 1}, comm::kAllMembers, Monoid::Sum);
  const DeviceView b0 = bools(false, false), b1 = bools(false, false);
  auto c0 = hub.endpoint(0).reduce(any, bools(true, false), b0, 9);
  auto c1 = hub.endpoint(1).reduce(any, bools(false, false), b1, 9);
  CHECK(c0->test());
  CHECK(dev.view(b1).ptr<bool>()[0]);
  CHECK(!dev.view(b1).ptr<bool>()[1]);
}

TEST_CASE("engine.device.peers.a_reduction_keeps_its_place_and_is_checked") {
  // Rank 0 posts an all-gather then an all-reduce on {0, 1}, rank 1 the other way round: on
  // NCCL the collectives of one communicator match by order and would merge an exchange's
  // bytes; the hub reports it. So do members whose reductions differ.
  SimDevice dev;
  comm::LocalPeersHub hub(2, dev);
  const auto g = spec_of(comm::ExchangeKind::AllGather, {0, 1}, -1, {4, 4});
  const auto all = reduce_of({0, 1}, comm::kAllMembers, Monoid::Sum);
  auto e0 = hub.endpoint(0).exchange(g, filled(dev, 2, 1), zeros(dev, 2), 5);
  CHECK_THROWS_WITH_AS(hub.endpoint(1).reduce(all, filled(dev, 1), zeros(dev, 4), 6),
                       doctest::Contains("posted in different orders"), InternalError);
  comm::LocalPeersHub other(2, dev);
  auto r0 = other.endpoint(0).reduce(all, filled(dev, 1), zeros(dev, 4), 6);
  CHECK_THROWS_WITH_AS(
      other.endpoint(1).reduce(reduce_of({0, 1}, 0, Monoid::Sum), filled(dev, 1), zeros(dev, 4), 6),
      doctest::Contains("posted in different orders"), InternalError);
  // A reduction of another group first: the member runs that one first, and this one waits.
  comm::LocalPeersHub three(3, dev);
  const auto g01 = reduce_of({0, 1}, comm::kAllMembers, Monoid::Sum);
  const auto g12 = reduce_of({1, 2}, comm::kAllMembers, Monoid::Sum);
  const DeviceView x0 = zeros(dev, 4), x1 = zeros(dev, 4), y1 = zeros(dev, 4), y2 = zeros(dev, 4);
  auto a0 = three.endpoint(0).reduce(g01, filled(dev, 1), x0, 1);
  auto b1 = three.endpoint(1).reduce(g12, filled(dev, 10), y1, 2);
  auto a1 = three.endpoint(1).reduce(g01, filled(dev, 100), x1, 1);
  CHECK(!a0->test());
  auto b2 = three.endpoint(2).reduce(g12, filled(dev, 1000), y2, 2);
  CHECK(a0->test());
  CHECK(at(dev, x0, 0) == 101);
  CHECK(at(dev, y2, 0) == 1010);
}
