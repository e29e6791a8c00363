#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/reassociate.hpp"
#include "engine/run/evaluator.hpp"

using namespace tapestry;
using namespace tapestry::plan;

namespace {

NodeRef mat(const Shape& s, int seed) {
  auto v = Value::alloc(DType::F32, s);
  const int64_t n = numel(s);
  for (int64_t i = 0; i < n; ++i) v->data<float>()[i] = float((i * 7 + seed * 13) % 17 - 8) / 16.0f;
  return make_source(v, s, DType::F32);
}

double flops_of(const NodeRef& root) {  // of every matmul the root needs
  double f = 0;
  for (const NodeRef& n : observed_subgraph({root}))
    if (n->op == Op::Matmul && !n->value)
      f += 2.0 * double(numel(n->shape)) * double(n->inputs[0]->shape.back());
  return f;
}

// The root's value, computed by the single-rank evaluator on a graph of its own.
std::vector<float> value_of(const NodeRef& root) {
  NodeRef copy = build::unary(Op::Neg, build::unary(Op::Neg, root));  // leaves root itself uncomputed
  evaluate({copy});
  const float* p = copy->value->data<float>();
  return std::vector<float>(p, p + numel(copy->shape));
}

// The sources as a plan finds them: held whole on rank 0.
std::vector<Shard> held(const std::vector<NodeRef>& xs) {
  std::vector<Shard> out;
  for (const NodeRef& x : xs) out.push_back(Shard{x->id, Box::of_shape(x->shape), 0});
  return out;
}

void check_close(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double scale = 0, err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, double(std::fabs(a[i])));
    err = std::max(err, double(std::fabs(a[i] - b[i])));
  }
  CHECK(err <= 1e-5 * std::max(1.0, scale));
}

}  // namespace

TEST_CASE("engine.plan.reassociate.bracketings") {
  CHECK(bracketings(2).size() == 1);
  CHECK(bracketings(3).size() == 2);
  CHECK(bracketings(4).size() == 5);
  CHECK(bracketings(5).size() == 14);
  CHECK(bracketings(6).size() == 42);
  CHECK(bracketing_string({1, 0}, 3) == "((x1 x2) x3)");
  CHECK(bracketing_string({0, 1}, 3) == "(x1 (x2 x3))");
  CHECK(bracketing_string({1, 0, 2}, 4) == "((x1 x2) (x3 x4))");
}

TEST_CASE("engine.plan.reassociate.cheapest_is_the_best_bracketing") {
  // The textbook chain 10x30 . 30x5 . 5x60: ((A1 A2) A3) costs 4,500 multiplications, the other 27,000.
  std::vector<double> dims{10, 30, 5, 60};
  auto mults = [&](int lo, int s, int hi) { return dims[lo] * dims[s + 1] * dims[hi + 1]; };
  CHECK(cheapest(3, mults) == Bracketing{1, 0});
  // Random chains of 6: the dynamic program finds the least sum over all 42 bracketings.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> size(1, 300);
  for (int trial = 0; trial < 50; ++trial) {
    dims.clear();
    for (int i = 0; i < 7; ++i) dims.push_back(size(rng));
    auto sum = [&](const Bracketing& b) {
      std::function<double(size_t&, int, int)> rec = [&](size_t& at, int lo, int hi) -> double {
        if (lo == hi) return 0;
        const int s = b[at++];
        const double l = rec(at, lo, s), r = rec(at, s + 1, hi);
        return l + r + mults(lo, s, hi);
      };
      size_t at = 0;
      return rec(at, 0, 5);
    };
    double least = INFINITY;
    for (const Bracketing& b : bracketings(6)) least = std::min(least, sum(b));
    CHECK(sum(cheapest(6, mults)) == least);
  }
}

TEST_CASE("engine.plan.reassociate.find_chains") {
  const NodeRef a = mat({8, 4}, 1), b = mat({4, 8}, 2), c = mat({8, 4}, 3), d = mat({4, 2}, 4);
  const NodeRef ab = build::matmul(a, b);
  CHECK(!may_have_chains({ab}));
  CHECK(!may_have_chains({build::matmul(build::unary(Op::Relu, ab), c)}));
  CHECK(may_have_chains({build::matmul(ab, c)}));
  SUBCASE("written left to right") {
    const std::vector<Chain> ch = find_chains({build::matmul(ab, c)}, {});
    REQUIRE(ch.size() == 1);
    CHECK(ch[0].leaves.size() == 3);
    CHECK(ch[0].written == Bracketing{1, 0});
  }
  SUBCASE("four operands, nested") {
    const std::vector<Chain> ch = find_chains({build::matmul(ab, build::matmul(c, d))}, {});
    REQUIRE(ch.size() == 1);
    CHECK(ch[0].leaves.size() == 4);
    CHECK(ch[0].written == Bracketing{1, 0, 2});
  }
  SUBCASE("an intermediate that is observed, read twice, constrained or held ends the chain") {
    const NodeRef y = build::matmul(ab, c);
    CHECK(find_chains({y, ab}, {}).empty());
    CHECK(find_chains({build::binary(Op::Add, y, build::matmul(ab, c))}, {}).size() ==
          1);  // y itself: one chain
    CHECK(find_chains(
              {build::binary(Op::Add, build::matmul(ab, c), build::reduce(Op::Sum, ab, {0, 1}, false))}, {})
              .empty());
    CHECK(find_chains({build::matmul(build::constrain(ab, {2, 1}), c)}, {}).empty());
    CHECK(find_chains({y}, {Shard{ab->id, Box::of_shape(ab->shape), 0}}).empty());
  }
}

TEST_CASE("engine.plan.reassociate.cheap_order_whatever_the_parentheses") {
  // (a b) c makes a 2048x2048 product: 268 MFLOP; a (b c) makes a 16x16 one: 2.1 MFLOP.
  const NodeRef a = mat({2048, 16}, 1), b = mat({16, 2048}, 2), c = mat({2048, 16}, 3);
  const NodeRef left = build::matmul(build::matmul(a, b), c), right = build::matmul(a, build::matmul(b, c));
  CHECK(flops_of(left) > 100 * flops_of(right));
  for (int ranks : {1, 8, 64}) {
    CAPTURE(ranks);
    const Mesh m = Mesh::modelled(ranks);
    const Reassociated l = reassociate({left}, held({a, b, c}), m, {}),
                       r = reassociate({right}, held({a, b, c}), m, {});
    CHECK(l.changed == 1);
    CHECK(l.orders[0] == Bracketing{0, 1});
    CHECK(l.roots[0] == right);  // the same nodes as written the cheap way (interned)
    CHECK(r.changed == 0);
    CHECK(r.roots[0] == right);
    REQUIRE(l.report.size() == 1);
    CHECK(l.report[0].find("computed as (x1 (x2 x3))") != std::string::npos);
    // Replayed from the orders, nothing costed: the same graph.
    CHECK(reassociate_as({left}, {}, l.orders).roots[0] == right);
  }
  SearchOptions keep;
  keep.reassociate = false;
  CHECK(reassociate({left}, {}, Mesh::modelled(8), keep).roots[0] == left);
  check_close(value_of(left), value_of(right));
}

TEST_CASE("engine.plan.reassociate.jointly_with_the_sharding") {
  // Generated operands (computed where read) on 64 ranks over a network (tp.plan's {mesh = 64}):
  // (a b) c has 17x fewer flops than a (b c), but its 8x8 product a b is a sum over 64 that must
  // be all-reduced before c's column blocks read it; a (b c) splits both products by columns
  // and moves nothing. One rank takes the fewest flops; 64 ranks the order whose plan is faster.
  const NodeRef a = build::rand({8, 64}, 1, DType::F32), b = build::rand({64, 8}, 2, DType::F32),
                c = build::rand({8, 4096}, 3, DType::F32);
  const NodeRef y = build::matmul(build::matmul(a, b), c);
  CHECK(flops_of(y) * 10 < flops_of(build::matmul(a, build::matmul(b, c))));
  CHECK(reassociate({y}, {}, Mesh::modelled(1), {}).changed == 0);
  const Mesh net = Mesh::of_axes({{"ranks", 64, Mesh{}.inter}});
  PlannerState planner;
  SearchOptions keep;
  keep.reassociate = false;
  const PlannedGraph joint = plan_observation(planner, {y}, net, {});
  const PlannedGraph written = plan_observation(planner, {y}, net, keep);
  CHECK(joint.roots[0] != y);
  REQUIRE(joint.reassociated.size() == 1);
  CHECK(joint.reassociated[0].find(
            "computed as (x1 (x2 x3)) (planned jointly with the sharding by the search") !=
        std::string::npos);
  CHECK(joint.plan.cost.time < 0.5 * written.plan.cost.time);
  CHECK(joint.plan.cost.bytes_moved == 0);
  CHECK(written.plan.cost.bytes_moved > 0);
  // Without the search's plans (the global stage alone) the same order.
  CHECK(reassociate({y}, {}, net, {}).orders[0] == Bracketing{0, 1});
}

TEST_CASE("engine.plan.reassociate.square_chains_keep_their_parentheses") {
  // Every order costs the same: nothing is worth the change of rounding.
  const NodeRef a = mat({64, 64}, 1), b = mat({64, 64}, 2), c = mat({64, 64}, 3);
  const NodeRef y = build::matmul(build::matmul(a, b), c);
  for (int ranks : {1, 4}) CHECK(reassociate({y}, held({a, b, c}), Mesh::modelled(ranks), {}).roots[0] == y);
}

TEST_CASE("engine.plan.reassociate.longer_batched_and_transposed_chains") {
  SUBCASE("five operands: the cheapest of 14 orders") {
    const NodeRef a = mat({512, 8}, 1), b = mat({8, 512}, 2), c = mat({512, 8}, 3), d = mat({8, 512}, 4),
                  e = mat({512, 4}, 5);
    const NodeRef y = build::matmul(build::matmul(build::matmul(build::matmul(a, b), c), d), e);
    for (int ranks : {1, 4}) {
      const Reassociated r = reassociate({y}, held({a, b, c, d, e}), Mesh::modelled(ranks), {});
      CHECK(r.changed == 1);
      CHECK(flops_of(r.roots[0]) * 50 < flops_of(y));
      check_close(value_of(y), value_of(r.roots[0]));
    }
  }
  SUBCASE("a batch with shared weights: w1 w2 multiplied once") {
    const NodeRef x = mat({4, 256, 16}, 1), w1 = mat({16, 256}, 2), w2 = mat({256, 16}, 3);
    const NodeRef y = build::matmul(build::matmul(x, w1), w2);
    const Reassociated r = reassociate({y}, held({x, w1, w2}), Mesh::modelled(1), {});
    REQUIRE(r.changed == 1);
    // A weight shared by the batch folds the batch into the rows (build::matmul), so the chain
    // is x' {1024,16} w1 w2 under a reshape: w1 w2 {16,16} is multiplied first.
    const NodeRef& root = r.roots[0];
    CHECK(root->shape == Shape{4, 256, 16});
    REQUIRE(root->op == Op::Reshape);
    const NodeRef& rows = root->inputs[0];
    REQUIRE(rows->op == Op::Matmul);
    REQUIRE(rows->inputs.size() == 2);
    CHECK(rows->inputs[1]->op == Op::Matmul);
    CHECK(rows->inputs[1]->shape == Shape{16, 16});
    CHECK(flops_of(root) * 20 < flops_of(y));  // 0.66 MFLOP where written 16.8
    check_close(value_of(y), value_of(root));
  }
  SUBCASE("a transposed operand") {
    const NodeRef a = mat({1024, 16}, 1), b = mat({1024, 16}, 2), c = mat({1024, 8}, 3);
    const NodeRef y = build::matmul(build::matmul(a, build::transpose(b, 0, 1)), c);  // a b^T c
    const Reassociated r = reassociate({y}, held({a, b, c}), Mesh::modelled(4), {});
    CHECK(r.changed == 1);
    CHECK(flops_of(r.roots[0]) * 30 < flops_of(y));
    check_close(value_of(y), value_of(r.roots[0]));
  }
}

TEST_CASE("engine.plan.reassociate.in_the_pipeline_and_the_plan_cache") {
  PlannerState planner;
  auto chain = [] {
    const NodeRef a = mat({2048, 16}, 1), b = mat({16, 2048}, 2), c = mat({2048, 16}, 3);
    return build::matmul(build::matmul(a, b), c);
  };
  const NodeRef y = chain();
  const PlannedGraph pg = plan_observation(planner, {y}, Mesh::modelled(4), {});
  CHECK(pg.observed[0] == y);
  CHECK(pg.roots[0] != y);
  CHECK(pg.plan.cost.flops < flops_of(y) / 50);
  REQUIRE(pg.reassociated.size() == 1);
  CHECK(pg.reassociated[0].find("computed as (x1 (x2 x3))") != std::string::npos);
  CHECK(layout_of(pg, y->id).shards.size() >= 1);  // the observed root's value: the rewritten root's
  // The same structure again (new nodes): the orders and the plan come from the cache.
  const NodeRef y2 = chain();
  const PlannedGraph again = plan_observation(planner, {y2}, Mesh::modelled(4), {});
  CHECK(again.cache_hit);
  CHECK(again.plan.cost.flops == pg.plan.cost.flops);
  CHECK(again.reassociated[0].find("as first planned") != std::string::npos);
  // Reassociation off: planned as written, a different cache entry.
  SearchOptions keep;
  keep.reassociate = false;
  const PlannedGraph written = plan_observation(planner, {y2}, Mesh::modelled(4), keep);
  CHECK(!written.cache_hit);
  CHECK(written.roots[0] == y2);
  CHECK(written.plan.cost.flops > flops_of(y) * 0.9);
}
