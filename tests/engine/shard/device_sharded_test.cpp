// The sharded executor with a device per rank (simulated: separate memory, the CPU's kernels):
// blocks run on the device, their outputs stay there, and data crosses between host and device
// only where a reader on the other side needs it. Every op's values on devices are checked by
// the consistency harness (consistency_test.cpp); these cases count what moves.
#include <doctest/doctest.h>

#include <cmath>

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
using test::rows;
using test::source;

constexpr int64_t kF32 = 4;

// Each op of `topo` without a value cut into `parts` row blocks over 2 ranks.
plan::Assignment by_rows(const std::vector<NodeRef>& topo, int64_t parts) {
  plan::Assignment a;
  for (const NodeRef& n : topo) {
    if (n->value) continue;
    const poly::Signature s = poly::signature_of(*n);
    std::vector<int64_t> grid(static_cast<size_t>(s.rank()), 1);
    if (!grid.empty()) grid[0] = parts;
    a[n->id] = plan::grid_blocks(s, grid, 2);
  }
  return a;
}

}  // namespace

TEST_CASE("engine.shard.device.row_split_map_copies_each_piece_once") {
  // y = x + z over 2 ranks by rows; x lies whole on rank 0, z is split. Rank 0 uploads x's lower
  // rows to send them device to device, and its upper rows for its block; each rank uploads
  // what it reads once, and downloads only its result shard for the gather to rank 0.
  const NodeRef x = source({11, 7}, 1), z = source({11, 7}, 2);
  const NodeRef y = build::binary(Op::Add, x, z);
  const std::vector<float> want = reference(y);
  ShardedGraph g(2);
  g.nodes = {x, z, y};
  g.hold(x->id, Box::of_shape(x->shape), 0);
  g.hold(z->id, rows(z->shape, 0, 5), 0);
  g.hold(z->id, rows(z->shape, 6, 10), 1);
  g.add_transfer(x->id, rows(x->shape, 6, 10), 0, 1);
  g.add_block(y->id, rows(y->shape, 0, 5), 0);
  g.add_block(y->id, rows(y->shape, 6, 10), 1);
  g.add_output(y->id, rows(y->shape, 0, 5), 0);
  g.add_output(y->id, rows(y->shape, 6, 10), 1);
  REQUIRE(plan::verify(g, {x, z, y}).ok());
  SimDevice d0, d1;
  const RunReport r = run_plan(g, {}, {&d0, &d1});
  check_close(y, want, 0);
  CHECK(r.blocks == 2);
  CHECK(r.device_blocks == 2);
  CHECK(d0.counts().uploads == 3);  // x's lower rows (sent), its upper rows, z's upper rows
  CHECK(d0.counts().upload_bytes == (11 * 7 + 6 * 7) * kF32);
  CHECK(d1.counts().uploads == 1);  // its rows of z: x's rows arrive in device memory
  CHECK(d1.counts().upload_bytes == 5 * 7 * kF32);
  CHECK(d0.counts().download_bytes == 6 * 7 * kF32);  // result shards only
  CHECK(d1.counts().download_bytes == 5 * 7 * kF32);
  CHECK(r.bytes_to_device == (11 * 7 + 6 * 7 + 5 * 7) * kF32);
  CHECK(r.bytes_from_device == 11 * 7 * kF32);
  CHECK(d0.counts().live_bytes == 0);
  CHECK(d1.counts().live_bytes == 0);
  set_value(*y, nullptr);
}

TEST_CASE("engine.shard.device.intermediates_stay_on_the_device") {
  // h = tanh(x @ w), y = h * h by rows: x @ w and h never leave the device, only y's rows
  // come back.
  const NodeRef x = source({12, 6}, 3), w = source({6, 5}, 4);
  const NodeRef h = build::unary(Op::Tanh, build::matmul(x, w));
  const NodeRef y = build::binary(Op::Mul, h, h);
  const std::vector<float> want = reference(y);
  const std::vector<NodeRef> topo = plan::observed_subgraph({y});
  const ShardedGraph g = plan::lower(topo, by_rows(topo, 2),
                                     {{x->id, rows(x->shape, 0, 5), 0},
                                      {x->id, rows(x->shape, 6, 11), 1},
                                      {w->id, Box::of_shape(w->shape), 0},
                                      {w->id, Box::of_shape(w->shape), 1}},
                                     {y}, 2);
  REQUIRE(plan::verify(g, topo).ok());
  SimDevice d0, d1;
  const RunReport r = run_plan(g, {}, {&d0, &d1});
  check_close(y, want, 1e-6);
  CHECK(r.device_blocks == r.blocks);
  CHECK(r.messages == 1);  // rank 1's rows of y to rank 0: no intermediate moves
  CHECK(r.bytes_from_device == 12 * 5 * kF32);
  CHECK(r.bytes_to_device == (12 * 6 + 2 * 6 * 5) * kF32);
  set_value(*y, nullptr);
}

TEST_CASE("engine.shard.device.a_refused_op_runs_on_the_cpu_between_device_blocks") {
  // The device has no kernel for exp: its blocks read the matmul's output from the device
  // (downloaded), and the sum reads exp's output from the host (uploaded).
  const NodeRef x = source({8, 4}, 5), w = source({4, 3}, 6);
  const NodeRef e = build::unary(Op::Exp, build::matmul(x, w));
  const NodeRef y = build::reduce(Op::Sum, e, {1}, false);
  const std::vector<float> want = reference(y);
  const std::vector<NodeRef> topo = plan::observed_subgraph({y});
  const ShardedGraph g = plan::lower(topo, by_rows(topo, 2),
                                     {{x->id, Box::of_shape(x->shape), 0},
                                      {w->id, Box::of_shape(w->shape), 0},
                                      {w->id, Box::of_shape(w->shape), 1}},
                                     {y}, 2);
  SimDevice d0, d1;
  d0.refuse(Op::Exp);
  d1.refuse(Op::Exp);
  const RunReport r = run_plan(g, {}, {&d0, &d1});
  check_close(y, want, 1e-6);
  CHECK(r.blocks == 6);
  CHECK(r.device_blocks == 4);  // matmul and sum on both ranks
  // Downloaded: each rank's matmul rows (4 x 3) for exp, and its 4 sums for the gather.
  CHECK(r.bytes_from_device == 2 * (4 * 3 + 4) * kF32);
  set_value(*y, nullptr);
}

TEST_CASE("engine.shard.device.split_reduction_partials_merge_between_the_devices") {
  // A matmul split along k: the device peers merge the partial products (a reduce between the
  // devices, rank_peer_combine.cpp), so no partial comes to the host; only the result does,
  // gathered from its rank. A max of f32 (no NaN-keeping max on NCCL) merges on the host
  // instead: each rank's partial comes to the host once (point to point here; MPI
  // collectives under mpirun).
  const NodeRef a = source({5, 8}, 7), b = source({8, 3}, 8);
  const NodeRef y = build::matmul(a, b);
  const std::vector<float> want = reference(y);
  const std::vector<NodeRef> topo = plan::observed_subgraph({y});
  plan::Assignment asg;
  asg[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 1, 2}, 2);  // i, j, k
  const ShardedGraph g = plan::lower(
      topo, asg, {{a->id, Box::of_shape(a->shape), 0}, {b->id, Box::of_shape(b->shape), 1}}, {y}, 2);
  REQUIRE(plan::verify(g, topo).ok());
  REQUIRE(g.combines.size() == 1);
  SimDevice d0, d1;
  const RunReport r = run_plan(g, {}, {&d0, &d1});
  check_close(y, want, 1e-6);
  CHECK(r.device_blocks == 2);
  const plan::Rank dest = g.combines[0].dest.at(0);
  CHECK((dest == 0 ? d0 : d1).counts().download_bytes == 5 * 3 * kF32);  // the result, gathered
  CHECK((dest == 0 ? d1 : d0).counts().download_bytes == 0);
  set_value(*y, nullptr);

  const NodeRef m = build::reduce(Op::Max, a, {1}, false);
  const std::vector<float> want_m = reference(m);
  const std::vector<NodeRef> topo_m = plan::observed_subgraph({m});
  plan::Assignment asg_m;
  asg_m[m->id] = plan::grid_blocks(poly::signature_of(*m), {1, 2}, 2);
  const ShardedGraph gm = plan::lower(
      topo_m, asg_m, {{a->id, Box::of_shape(a->shape), 0}, {a->id, Box::of_shape(a->shape), 1}}, {m}, 2);
  REQUIRE(plan::verify(gm, topo_m).ok());
  REQUIRE(gm.combines.size() == 1);
  SimDevice e0, e1;
  const RunReport rm = run_plan(gm, {}, {&e0, &e1});
  check_close(m, want_m, 0);
  CHECK(rm.device_blocks == 2);
  CHECK(e0.counts().download_bytes == 5 * kF32);  // each rank's partial, once
  CHECK(e1.counts().download_bytes == 5 * kF32);
  set_value(*m, nullptr);
}

TEST_CASE("engine.shard.device.out_of_device_memory_changes_nothing") {
  const NodeRef x = source({64, 64}, 9), w = source({64, 64}, 10);
  const NodeRef y = build::matmul(x, w);
  const std::vector<NodeRef> topo = plan::observed_subgraph({y});
  const ShardedGraph g = plan::lower(topo, by_rows(topo, 2),
                                     {{x->id, Box::of_shape(x->shape), 0},
                                      {w->id, Box::of_shape(w->shape), 0},
                                      {w->id, Box::of_shape(w->shape), 1}},
                                     {y}, 2);
  SimDevice d0, d1(MapLimits{}, 64 * 64 * kF32);  // rank 1 holds w, then nothing more fits
  CHECK_THROWS_WITH_AS(run_plan(g, {}, {&d0, &d1}), doctest::Contains("rank 1: out of device memory"), Error);
  CHECK(!y->value);
  CHECK(d0.counts().live_bytes == 0);
  CHECK(d1.counts().live_bytes == 0);
}
