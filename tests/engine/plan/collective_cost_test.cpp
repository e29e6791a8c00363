#include <doctest/doctest.h>

#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/collective_cost.hpp"
#include "engine/plan/cost.hpp"
#include "engine/poly/signature.hpp"

using namespace tapestry;
using namespace tapestry::plan;

namespace {
const Link kLink{1e9, 1e-6};  // 1 GB/s, 1 us
const double kMerge = 1e10;   // merging partials at 10 GB/s
}  // namespace

// The textbook alpha-beta formulas, worked by hand (collective_cost.hpp), and the choice by size.
TEST_CASE("engine.plan.collective_cost.ring_all_reduce") {
  // p = 8, 8 MB: ring 2*7 alpha + 2*7/8 n beta + 7/8 n gamma beats the tree's 3 (alpha + n beta + n gamma).
  const Collective big = all_reduce_time(kLink, 8, 8e6, kMerge);
  CHECK(std::string(big.algorithm) == "ring");
  CHECK(big.time == doctest::Approx(14e-6 + 0.014 + 0.0007).epsilon(1e-12));
  // 8 bytes: latency rules, the tree's 3 rounds beat the ring's 14 steps.
  const Collective small = all_reduce_time(kLink, 8, 8, kMerge);
  CHECK(std::string(small.algorithm) == "tree");
  CHECK(small.time == doctest::Approx(3 * (1e-6 + 8e-9 + 8e-10)).epsilon(1e-12));
  CHECK(all_reduce_time(kLink, 1, 8e6, kMerge).time == 0);
}

TEST_CASE("engine.plan.collective_cost.tree_broadcast") {
  // p = 64: 6 rounds of one message for 1 KiB; 64 MiB goes scatter + ring allgather.
  const Collective small = broadcast_time(kLink, 64, 1024);
  CHECK(std::string(small.algorithm) == "tree");
  CHECK(small.time == doctest::Approx(6 * (1e-6 + 1024e-9)).epsilon(1e-12));
  const double n = 64.0 * 1024 * 1024;
  const Collective big = broadcast_time(kLink, 64, n);
  CHECK(std::string(big.algorithm) == "ring");
  CHECK(big.time == doctest::Approx((6 + 63) * 1e-6 + 2.0 * 63 / 64 * n * 1e-9).epsilon(1e-12));
  // Not a power of two: ceil(log2 5) = 3 rounds.
  CHECK(broadcast_time(kLink, 5, 8).time == doctest::Approx(3 * (1e-6 + 8e-9)).epsilon(1e-12));
}

TEST_CASE("engine.plan.collective_cost.reduce_scatter") {
  // p = 6 (not a power of two): the ring, (p-1)(alpha + n/p (beta + gamma)).
  const Collective six = reduce_scatter_time(kLink, 6, 6e6, kMerge);
  CHECK(std::string(six.algorithm) == "ring");
  CHECK(six.time == doctest::Approx(5 * (1e-6 + 1e6 * 1.1e-9)).epsilon(1e-12));
  // p = 8: recursive halving sends the same bytes in 3 rounds instead of 7.
  const Collective eight = reduce_scatter_time(kLink, 8, 8e6, kMerge);
  CHECK(std::string(eight.algorithm) == "halving");
  CHECK(eight.time == doctest::Approx(3e-6 + 7.0 / 8 * 8e6 * 1.1e-9).epsilon(1e-12));
  // A reduce to one rank: the tree when small, Rabenseifner's scatter + gather when large.
  CHECK(std::string(reduce_time(kLink, 8, 8, kMerge).algorithm) == "tree");
  CHECK(std::string(reduce_time(kLink, 8, 8e6, kMerge).algorithm) == "rabenseifner");
}

// cost_of prices a plan's combines with these formulas: the same partial sums of a matmul whose
// reduction dim is split over 4 ranks, merged as an all-reduce and as a reduce-scatter.
TEST_CASE("engine.plan.cost.combines_are_priced_as_their_collective") {
  const NodeRef a = make_source(nullptr, {64, 4096}, DType::F32);
  const NodeRef b = make_source(nullptr, {4096, 64}, DType::F32);
  const NodeRef y = build::matmul(a, b);
  const poly::Signature s = poly::signature_of(*y);
  int k = -1;
  for (int j = 0; j < s.rank(); ++j)
    if (s.space[j].kind == poly::IndexDim::Reduction) k = j;
  REQUIRE(k >= 0);
  const Mesh m = Mesh::this_machine(4);
  auto partials = [&](ShardedGraph& g) {
    std::vector<size_t> out;
    for (int r = 0; r < 4; ++r) {
      Box box = s.space_box();
      box.lo[k] = r * 1024;
      box.hi[k] = (r + 1) * 1024 - 1;
      out.push_back(g.add_block(y->id, box, r));
    }
    return out;
  };
  auto graph = [&]() {
    ShardedGraph g(4);
    g.nodes = {a, b, y};
    return g;
  };
  ShardedGraph none = graph();
  partials(none);
  const double blocks = cost_of(none, m).time;
  const double n = 64 * 64 * 4;  // the output's bytes

  ShardedGraph all = graph();
  all.add_combine(y->id, poly::CombineKind::Sum, partials(all), Box::of_shape(y->shape), {0, 1, 2, 3});
  CHECK(cost_of(all, m).time - blocks ==
        doctest::Approx(all_reduce_time(m.intra, 4, n, m.mem_bytes_per_s).time).epsilon(1e-9));

  ShardedGraph rs = graph();
  const std::vector<size_t> p = partials(rs);
  for (int r = 0; r < 4; ++r)
    rs.add_combine(y->id, poly::CombineKind::Sum, p, Box({r * 16, 0}, {r * 16 + 15, 63}), {r});
  CHECK(cost_of(rs, m).time - blocks ==
        doctest::Approx(reduce_scatter_time(m.intra, 4, n, m.mem_bytes_per_s).time).epsilon(1e-9));
  CHECK(cost_of(rs, m).time < cost_of(all, m).time);
}
