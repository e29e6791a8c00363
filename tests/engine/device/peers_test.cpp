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
