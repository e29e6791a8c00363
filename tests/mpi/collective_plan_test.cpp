// Which combines run as collectives (comm::plan_collectives), without MPI: a transport that
// says it can reduce, and hand-built plans. Regular reduces and all-reduces qualify; irregular
// combines, partial destination sets, arg-reductions, unsupported dtypes and groups whose
// members meet their combines in different orders stay point to point.
#include <doctest/doctest.h>

#include "engine/comm/collective_plan.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"

using namespace tapestry;
using plan::ShardedGraph;
using plan::Step;
using poly::Box;

namespace {

// Answers like MPI for everything but f64 (to see an unsupported dtype stay point to point).
class Reducing final : public comm::Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 4; }
  void send(int, comm::Tag, const View&) override {}
  std::shared_ptr<Value> try_recv(int, comm::Tag) override { return nullptr; }
  int64_t messages_sent() const override { return 0; }
  int64_t bytes_sent() const override { return 0; }
  bool can_reduce(Monoid, DType t) const override { return t != DType::F64; }
  bool can_reduce_scatter() const override { return scatter; }
  bool scatter = false;
};

NodeRef src(const Shape& s, DType t = DType::F32) { return make_source(Value::alloc(t, s), s, t); }

// y = a @ b ({6, 4} from k = 8) over 4 ranks, blocks split along k on `holders`.
struct Mm {
  NodeRef a, b, y;
  ShardedGraph g{4};
  std::vector<size_t> parts;
  explicit Mm(std::vector<int> holders, DType t = DType::F32) {
    a = src({6, 8}, t), b = src({8, 4}, t), y = build::matmul(a, b);
    g.nodes = {a, b, y};
    const int n = static_cast<int>(holders.size());
    for (int i = 0; i < n; ++i)
      parts.push_back(g.add_block(y->id, Box({0, 0, 8 * i / n}, {5, 3, 8 * (i + 1) / n - 1}), holders[i]));
  }
  Box all() const { return Box::of_shape(y->shape); }
};

}  // namespace

TEST_CASE("engine.comm.collective_plan.reduce_and_all_reduce_qualify") {
  Reducing t;
  Mm m({0, 1, 2});
  m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, m.all(), {2});
  m.g.add_combine(m.y->id, poly::CombineKind::Max, m.parts, m.all(), {0, 1, 2});
  const comm::CollectivePlan cp = comm::plan_collectives(m.g, t);
  REQUIRE(cp.combines.size() == 2);
  CHECK(cp.combines[0].collective);
  CHECK(cp.combines[0].spec.root == 2);
  CHECK(cp.combines[0].spec.op == Monoid::Sum);
  CHECK(cp.combines[0].spec.group == comm::Group{0, 1, 2});
  CHECK(cp.combines[1].collective);
  CHECK(cp.combines[1].spec.root == comm::kAllMembers);
  CHECK(cp.combines[1].spec.op == Monoid::Max);
  CHECK(cp.groups == std::vector<comm::Group>{{0, 1, 2}});
  CHECK(cp.count() == 2);
}

TEST_CASE("engine.comm.collective_plan.a_destination_without_a_partial_joins_the_group") {
  Reducing t;
  Mm m({0, 1});
  m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, m.all(), {3});
  const comm::CollectivePlan cp = comm::plan_collectives(m.g, t);
  CHECK(cp.combines[0].collective);
  CHECK(cp.combines[0].spec.group == comm::Group{0, 1, 3});
}

TEST_CASE("engine.comm.collective_plan.what_stays_point_to_point") {
  Reducing t;
  SUBCASE("some destinations, not all") {
    Mm m({0, 1, 2});
    m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, m.all(), {0, 1});
    CHECK_FALSE(comm::plan_collectives(m.g, t).combines[0].collective);
  }
  SUBCASE("a partial that does not cover out") {
    NodeRef a = src({6, 8}), b = src({8, 4}), y = build::matmul(a, b);
    ShardedGraph g(4);
    g.nodes = {a, b, y};
    const size_t p0 = g.add_block(y->id, Box({0, 0, 0}, {2, 3, 3}), 0);
    const size_t p1 = g.add_block(y->id, Box({3, 0, 0}, {5, 3, 3}), 1);
    const size_t p2 = g.add_block(y->id, Box({0, 0, 4}, {5, 3, 7}), 2);
    g.add_combine(y->id, poly::CombineKind::Sum, {p0, p1, p2}, Box::of_shape(y->shape), {0});
    CHECK_FALSE(comm::plan_collectives(g, t).combines[0].collective);
  }
  SUBCASE("a dtype the transport cannot reduce") {
    Mm m({0, 1}, DType::F64);
    m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, m.all(), {0});
    CHECK_FALSE(comm::plan_collectives(m.g, t).combines[0].collective);
  }
  SUBCASE("arg-reductions and a single participant") {
    CHECK_FALSE(poly::monoid_of(poly::CombineKind::ArgMax).has_value());
    CHECK_FALSE(poly::monoid_of(poly::CombineKind::ArgMin).has_value());
    Mm m({1, 1});
    m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, m.all(), {1});
    CHECK_FALSE(comm::plan_collectives(m.g, t).combines[0].collective);
  }
  SUBCASE("members meeting a group's combines in different orders") {
    Mm m({0, 1});
    m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, Box({0, 0}, {2, 3}), {0});
    m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, Box({3, 0}, {5, 3}), {1});
    CHECK(comm::plan_collectives(m.g, t).count() == 2);
    std::vector<Step>& r1 = m.g.steps[1];
    std::swap(r1[r1.size() - 1], r1[r1.size() - 2]);  // rank 1 meets combine 1 first
    const comm::CollectivePlan cp = comm::plan_collectives(m.g, t);
    CHECK(cp.count() == 0);
    CHECK(cp.groups.empty());
  }
  SUBCASE("a transport without collectives") {
    class Plain final : public comm::Transport {
     public:
      int rank() const override { return 0; }
      int size() const override { return 4; }
      void send(int, comm::Tag, const View&) override {}
      std::shared_ptr<Value> try_recv(int, comm::Tag) override { return nullptr; }
      int64_t messages_sent() const override { return 0; }
      int64_t bytes_sent() const override { return 0; }
    } plain;
    Mm m({0, 1});
    m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, m.all(), {0});
    CHECK(comm::plan_collectives(m.g, plain).count() == 0);
  }
}

// The one-destination combines of a node over the same ranks, one to each with a piece of
// what every partial covers, are one reduce-scatter where the transport has them; a set that
// misses a member stays separate reduces.
TEST_CASE("engine.comm.collective_plan.row_pieces_to_each_rank_are_one_reduce_scatter") {
  for (bool scatter : {false, true}) {
    CAPTURE(scatter);
    Reducing t;
    t.scatter = scatter;
    Mm m({0, 1, 2});
    const Box rows[] = {Box({0, 0}, {1, 3}), Box({2, 0}, {3, 3}), Box({4, 0}, {5, 3})};
    for (int r : {2, 0, 1}) m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, rows[r], {r});
    const comm::CollectivePlan cp = comm::plan_collectives(m.g, t);
    REQUIRE(cp.combines.size() == 3);
    for (size_t c = 0; c < 3; ++c) {
      CHECK(cp.combines[c].collective);
      CHECK(cp.combines[c].scatter.size() == (scatter ? 3u : 0u));
      if (!scatter) continue;
      CHECK(cp.combines[c].scatter == std::vector<size_t>{1, 2, 0});  // by destination rank
      CHECK(cp.combines[c].spec.counts == std::vector<int64_t>{8, 8, 8});
    }
    CHECK(cp.groups == std::vector<comm::Group>{{0, 1, 2}});
  }
  Reducing t;
  t.scatter = true;
  Mm m({0, 1, 2});
  m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, Box({0, 0}, {2, 3}), {0});
  m.g.add_combine(m.y->id, poly::CombineKind::Sum, m.parts, Box({3, 0}, {5, 3}), {1});  // none to 2
  const comm::CollectivePlan cp = comm::plan_collectives(m.g, t);
  for (const comm::CombineRoute& r : cp.combines) {
    CHECK(r.collective);
    CHECK(r.scatter.empty());
    CHECK(r.spec.counts.empty());
  }
}
