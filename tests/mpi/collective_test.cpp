// Combines as MPI collectives, run under `mpirun -n 2|3|4` (every rank runs every case, in
// the same order): a regular combine runs as one MPI_Ireduce / MPI_Iallreduce, which the
// transport counts, and its result equals the single-rank evaluator's (sums within 1e-5
// relative, max / min / integers / bools exactly, NaN included); an irregular combine and a
// transport with collectives off stay point to point and give the same values.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "engine/comm/collective_plan.hpp"
#include "engine/comm/mpi.hpp"
#include "engine/device/peers_mpi.hpp"
#include "engine/device/sim_backend.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/poly/signature.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/config.hpp"
#include "engine/shard/rank_program.hpp"
#include "kernels/cpu/kernels.hpp"
#include "tests/mpi/collective_support.hpp"

using namespace tapestry;
using plan::Rank;
using plan::ShardedGraph;
using poly::Box;
using namespace tapestry::mpitest;

namespace {

// Collective on and off: same values, and the on run used `n` collectives on every member.
void check_both_paths(const ShardedGraph& g, const NodeRef& y, const std::shared_ptr<const Value>& want,
                      double rel, int64_t started_here) {
  const Outcome on = run(g, y, true), off = run(g, y, false);
  check_value(on, want, rel);
  check_value(off, want, rel);
  CHECK(on.started == started_here);
  CHECK(off.started == 0);
  CHECK(off.collective_combines == 0);
}

Box rows(const Shape& s, int64_t lo, int64_t hi) {
  Box b = Box::of_shape(s);
  b.lo[0] = lo;
  b.hi[0] = hi;
  return b;
}

// y = a @ b with its k dim (index dim 2) split over `holders`, one block each (a rank may repeat).
struct KSplit {
  NodeRef a = source(DType::F32, {12, 40}, 3), b = source(DType::F32, {40, 6}, 4);
  NodeRef y = build::matmul(a, b);
  std::vector<NodeRef> topo{a, b, y};
  std::shared_ptr<const Value> want = reference(y);
  ShardedGraph g{ranks()};
  std::vector<size_t> partials;
  explicit KSplit(const std::vector<Rank>& holders) {
    g.nodes = topo;
    for (Rank r = 0; r < ranks(); ++r) {
      g.hold(a->id, Box::of_shape(a->shape), r);
      g.hold(b->id, Box::of_shape(b->shape), r);
    }
    const int n = static_cast<int>(holders.size());
    for (int i = 0; i < n; ++i) {
      const auto [lo, hi] = part(40, n, i);
      partials.push_back(g.add_block(y->id, Box({0, 0, lo}, {11, 5, hi}), holders[i]));
    }
  }
  void verify() const {
    const plan::VerifyResult v = plan::verify(g, topo);
    REQUIRE_MESSAGE(v.ok(), v.message());
  }
};

std::vector<Rank> all_ranks() {
  std::vector<Rank> r;
  for (Rank i = 0; i < ranks(); ++i) r.push_back(i);
  return r;
}

}  // namespace

TEST_CASE("mpi.collective.k_split_matmul_reduce") {
  KSplit k(all_ranks());
  const Rank dest = ranks() - 1;
  k.g.add_combine(k.y->id, poly::CombineKind::Sum, k.partials, Box::of_shape(k.y->shape), {dest});
  k.g.add_output(k.y->id, Box::of_shape(k.y->shape), dest);
  k.verify();
  const Outcome on = run(k.g, k.y, true), off = run(k.g, k.y, false);
  check_value(on, k.want, 1e-5);
  check_value(off, k.want, 1e-5);
  CHECK(on.collective_combines == 1);
  CHECK(on.started == 1);  // every rank holds a partial: every rank is a member
  CHECK(off.started == 0);
  // Truthful counters: a member sends its partial either way, the root only receives.
  CHECK(on.messages == off.messages);
  CHECK(on.bytes == off.bytes);
}

TEST_CASE("mpi.collective.k_split_matmul_all_reduce") {
  KSplit k(all_ranks());
  k.g.add_combine(k.y->id, poly::CombineKind::Sum, k.partials, Box::of_shape(k.y->shape), all_ranks());
  for (Rank r = 0; r < ranks(); ++r) {
    const auto [lo, hi] = part(12, ranks(), r);
    k.g.add_output(k.y->id, rows(k.y->shape, lo, hi), r);
  }
  k.verify();
  check_both_paths(k.g, k.y, k.want, 1e-5, 1);
}

TEST_CASE("mpi.collective.all_reduce_onto_a_rank_without_a_partial") {
  // The last rank computes nothing and contributes the identity; the others two partials
  // each, merged locally before they go into the collective.
  std::vector<Rank> holders;
  for (Rank r = 0; r + 1 < ranks(); ++r) holders.insert(holders.end(), {r, r});
  KSplit k(holders);
  k.g.add_combine(k.y->id, poly::CombineKind::Sum, k.partials, Box::of_shape(k.y->shape), all_ranks());
  k.g.add_output(k.y->id, rows(k.y->shape, 0, 3), ranks() - 1);
  k.g.add_output(k.y->id, rows(k.y->shape, 4, 11), 0);
  k.verify();
  check_both_paths(k.g, k.y, k.want, 1e-5, 1);
}

TEST_CASE("mpi.collective.reduce_scatter_by_rows") {
  // One combine per rank's rows, each onto that rank: one group, and the combines run as one
  // MPI_Ireduce_scatter (each rank's rows its piece).
  KSplit k(all_ranks());
  for (Rank r = 0; r < ranks(); ++r) {
    const auto [lo, hi] = part(12, ranks(), r);
    k.g.add_combine(k.y->id, poly::CombineKind::Sum, k.partials, rows(k.y->shape, lo, hi), {r});
    k.g.add_output(k.y->id, rows(k.y->shape, lo, hi), r);
  }
  k.verify();
  check_both_paths(k.g, k.y, k.want, 1e-5, 1);
}

TEST_CASE("mpi.collective.irregular_combine_stays_point_to_point") {
  // Partials of different output slices (rows 0-5, rows 6-11, all rows): no collective fits.
  NodeRef a = source(DType::F32, {12, 40}, 5), b = source(DType::F32, {40, 6}, 6);
  NodeRef y = build::matmul(a, b);
  const std::vector<NodeRef> topo{a, b, y};
  auto want = reference(y);
  ShardedGraph g(ranks());
  g.nodes = topo;
  for (Rank r = 0; r < ranks(); ++r) {
    g.hold(a->id, Box::of_shape(a->shape), r);
    g.hold(b->id, Box::of_shape(b->shape), r);
  }
  const size_t p0 = g.add_block(y->id, Box({0, 0, 0}, {5, 5, 19}), 0);
  const size_t p1 = g.add_block(y->id, Box({6, 0, 0}, {11, 5, 19}), 1);
  const size_t p2 = g.add_block(y->id, Box({0, 0, 20}, {11, 5, 39}), ranks() - 1);
  g.add_combine(y->id, poly::CombineKind::Sum, {p0, p1, p2}, Box::of_shape(y->shape), {0});
  g.add_output(y->id, Box::of_shape(y->shape), 0);
  REQUIRE(plan::verify(g, topo).ok());
  const Outcome on = run(g, y, true);
  check_value(on, want, 1e-5);
  CHECK(on.collective_combines == 0);
  CHECK(on.started == 0);
}

TEST_CASE("mpi.collective.lowered_reductions_of_every_kind") {
  // x:op(2) over a split reduced dim, planned by lower(): one reduce onto the first partial's rank.
  struct Kind {
    Op op;
    DType dtype;
    double rel;
  };
  const Kind kinds[] = {{Op::Sum, DType::F32, 1e-5}, {Op::Sum, DType::F64, 1e-12},  {Op::Sum, DType::I32, 0},
                        {Op::Sum, DType::I64, 0},    {Op::Prod, DType::F64, 1e-12}, {Op::Max, DType::F32, 0},
                        {Op::Min, DType::F32, 0},    {Op::Max, DType::I32, 0},      {Op::Min, DType::F64, 0},
                        {Op::All, DType::Bool, 0},   {Op::Any, DType::Bool, 0}};
  for (const Kind& kind : kinds) {
    CAPTURE(op_def(kind.op).name);
    CAPTURE(dtype_name(kind.dtype));
    NodeRef x = source(kind.dtype, {5, 12 * ranks()}, 7);
    if (kind.dtype == DType::F32) {  // a NaN in row 1 on the last rank's part: it must win
      auto v = std::const_pointer_cast<Value>(x->value);
      v->data<float>()[1 * 12 * ranks() + 12 * ranks() - 2] = std::nanf("");
    }
    if (kind.dtype == DType::Bool) {  // row 2 all true, row 3 all false on the first half
      auto v = std::const_pointer_cast<Value>(x->value);
      for (int i = 0; i < 12 * ranks(); ++i) v->data<bool>()[2 * 12 * ranks() + i] = true;
      for (int i = 0; i < 6 * ranks(); ++i) v->data<bool>()[3 * 12 * ranks() + i] = false;
    }
    NodeRef y = build::reduce(kind.op, x, {1}, false);
    const std::vector<NodeRef> topo{x, y};
    auto want = reference(y);
    plan::Assignment a;
    a[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, ranks()}, ranks());
    std::vector<plan::Shard> initial;
    for (Rank r = 0; r < ranks(); ++r) initial.push_back({x->id, Box::of_shape(x->shape), r});
    const ShardedGraph g = plan::lower(topo, a, initial, {y}, ranks());
    REQUIRE(plan::verify(g, topo).ok());
    REQUIRE(g.combines.size() == 1);
    check_both_paths(g, y, want, kind.rel, 1);
  }
}

TEST_CASE("mpi.collective.lowered_matmul_k_split") {
  // The planner's own lowering of a k split (grid {1, 1, ranks} over {i, j, k}).
  NodeRef a = source(DType::F32, {9, 64}, 8), b = source(DType::F32, {64, 7}, 9);
  NodeRef y = build::matmul(a, b);
  const std::vector<NodeRef> topo{a, b, y};
  auto want = reference(y);
  plan::Assignment as;
  as[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 1, ranks()}, ranks());
  std::vector<plan::Shard> initial;
  for (Rank r = 0; r < ranks(); ++r) {
    const auto [lo, hi] = part(64, ranks(), r);
    Box ak = Box::of_shape(a->shape), bk = Box::of_shape(b->shape);
    ak.lo[1] = lo, ak.hi[1] = hi, bk.lo[0] = lo, bk.hi[0] = hi;
    initial.push_back({a->id, ak, r});
    initial.push_back({b->id, bk, r});
  }
  const ShardedGraph g = plan::lower(topo, as, initial, {y}, ranks());
  REQUIRE(plan::verify(g, topo).ok());
  REQUIRE(g.combines.size() == 1);
  CHECK(g.transfers.empty());  // each rank holds its k range of a and b
  check_both_paths(g, y, want, 1e-5, 1);
}

TEST_CASE("mpi.collective.overlapping_groups_are_created_in_order_and_cached") {
  // Three combines over different, overlapping member sets in one plan: the members create
  // each communicator in plan order (no deadlock), and a second run creates none.
  const int n = ranks();
  NodeRef a = source(DType::F32, {6, 24}, 10);
  std::vector<NodeRef> bs, ys, topo{a};
  std::vector<std::shared_ptr<const Value>> wants;
  for (int i = 0; i < 3; ++i) {
    bs.push_back(source(DType::F32, {24, 4}, 11 + i));
    ys.push_back(build::matmul(a, bs.back()));
    topo.push_back(bs.back());
    wants.push_back(reference(ys.back()));
  }
  for (const NodeRef& y : ys) topo.push_back(y);
  const std::vector<std::vector<Rank>> groups = {
      {0, 1}, n > 2 ? std::vector<Rank>{1, 2} : std::vector<Rank>{0, 1}, all_ranks()};
  ShardedGraph g(n);
  g.nodes = topo;
  for (Rank r = 0; r < n; ++r) {
    g.hold(a->id, Box::of_shape(a->shape), r);
    for (const NodeRef& b : bs) g.hold(b->id, Box::of_shape(b->shape), r);
  }
  for (int i = 0; i < 3; ++i) {
    std::vector<size_t> partials;
    const int parts = static_cast<int>(groups[i].size());
    for (int j = 0; j < parts; ++j) {
      const auto [lo, hi] = part(24, parts, j);
      partials.push_back(g.add_block(ys[i]->id, Box({0, 0, lo}, {5, 3, hi}), groups[i][j]));
    }
    g.add_combine(ys[i]->id, poly::CombineKind::Sum, partials, Box::of_shape(ys[i]->shape),
                  {groups[i].back()});
    g.add_output(ys[i]->id, Box::of_shape(ys[i]->shape), groups[i].back());
  }
  REQUIRE(plan::verify(g, topo).ok());
  int64_t mine = 0;
  for (const auto& gr : groups) mine += std::count(gr.begin(), gr.end(), me());
  for (int i = 0; i < 3; ++i) {
    const int64_t before = mpi().groups().created();
    const Outcome o = run(g, ys[i], true);
    check_value(o, wants[i], 1e-5);
    CHECK(o.started == mine);
    CHECK(o.collective_combines == 3);
    if (i > 0) CHECK(mpi().groups().created() == before);  // cached across plans
  }
}

TEST_CASE("mpi.collective.retired_groups_never_match_a_stale_contribution") {
  // A failed run can leave a collective half-started: rank 1 contributed, rank 0 never did.
  // After every rank retires its communicators (as on an abort), the next plan makes fresh
  // ones; on the old one rank 0's next reduce would have merged rank 1's stale 1000s.
  KSplit k({0, 1});
  k.g.add_combine(k.y->id, poly::CombineKind::Sum, k.partials, Box::of_shape(k.y->shape), {0});
  k.g.add_output(k.y->id, Box::of_shape(k.y->shape), 0);
  k.verify();
  const Outcome first = run(k.g, k.y, true);  // creates (or reuses) the group {0, 1}
  check_value(first, k.want, 1e-5);
  if (me() == 1) {
    auto stale = Value::alloc(DType::F32, k.y->shape);
    for (int64_t i = 0; i < numel(k.y->shape); ++i) stale->data<float>()[i] = 1000;
    mpi().groups().start_reduce({{0, 1}, 0, Monoid::Sum, {}}, stale->v, View{});  // dropped unfinished
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const int64_t retired = mpi().groups().retired();
  mpi().groups().retire_all();
  CHECK(mpi().groups().retired() > retired);
  const int64_t created = mpi().groups().created();
  const Outcome second = run(k.g, k.y, true);
  check_value(second, k.want, 1e-5);
  if (me() <= 1) CHECK(mpi().groups().created() == created + 1);
  CHECK(second.started == (me() <= 1 ? 1 : 0));
}

// Every placement and collective kind, each rank lowering and running only its own part (as a
// distributed run does): the values are the single-rank ones, and the bytes the ranks count
// (RunReport's transfer and combine bytes, summed over the job) equal the plan's bytes_moved.
TEST_CASE("mpi.collective.bytes_of_every_kind_equal_the_plans") {
  const int n = ranks();
  struct Case {
    std::string name;
    NodeRef a, b, y;
    std::vector<plan::Shard> initial;
    plan::Candidate choice;
  };
  auto whole = [](const NodeRef& x, Rank r) { return plan::Shard{x->id, Box::of_shape(x->shape), r}; };
  auto rows_of = [n](const NodeRef& x) {
    std::vector<plan::Shard> s;
    for (Rank r = 0; r < n; ++r) {
      const auto [lo, hi] = part(x->shape[0], n, r);
      s.push_back({x->id, rows(x->shape, lo, hi), r});
    }
    return s;
  };
  std::vector<Case> cases;
  {  // replicated: a broadcast tree (point to point on 2 ranks)
    NodeRef a = source(DType::F32, {16, 8}, 1);
    cases.push_back({"replicated",
                     a,
                     nullptr,
                     build::unary(Op::Tanh, a),
                     {whole(a, 0)},
                     plan::Candidate{{1, 1}, 0, plan::CombineMode::Reduce, true}});
  }
  for (plan::CombineMode m :
       {plan::CombineMode::Reduce, plan::CombineMode::AllReduce, plan::CombineMode::ReduceScatter}) {
    NodeRef a = source(DType::F32, {12, 40}, 2), b = source(DType::F32, {40, 6}, 3);
    std::vector<plan::Shard> init;
    for (Rank r = 0; r < n; ++r) init.push_back(whole(a, r)), init.push_back(whole(b, r));
    cases.push_back({cat_str("k split, ", plan::combine_mode_name(m)), a, b, build::matmul(a, b), init,
                     plan::Candidate{{1, 1, n}, 0, m, false}});
    // 3-D: i, j and k in two each (8 blocks: several per rank below 8 ranks)
    cases.push_back({cat_str("3-dim split, ", plan::combine_mode_name(m)),
                     a,
                     b,
                     build::matmul(a, b),
                     {whole(a, 0), whole(b, n - 1)},
                     plan::Candidate{{2, 2, 2}, 0, m, false}});
  }
  {  // rows to a copy on every rank: an all-gather
    NodeRef a = source(DType::F32, {16, 8}, 4);
    cases.push_back({"all-gather", a, nullptr, build::unary(Op::Exp, a), rows_of(a),
                     plan::Candidate{{1, 1}, 0, plan::CombineMode::Reduce, true}});
  }
  {  // rows to columns: an all-to-all
    NodeRef a = source(DType::F32, {16, 16}, 5);
    cases.push_back({"all-to-all", a, nullptr, build::unary(Op::Neg, a), rows_of(a),
                     plan::Candidate{{1, n}, 0, plan::CombineMode::Reduce, false}});
  }
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::vector<NodeRef> topo{c.a};
    if (c.b) topo.push_back(c.b);
    topo.push_back(c.y);
    const std::shared_ptr<const Value> want = reference(c.y);
    plan::LoweringInput in{topo, c.initial, {c.y}, plan::Mesh::modelled(n)};
    const std::map<uint64_t, plan::Candidate> choice{{c.y->id, c.choice}};
    const ShardedGraph g = plan::lower_choice(in, choice);
    const plan::VerifyResult v = plan::verify(g, topo);
    CHECK_MESSAGE(v.ok(), v.message());
    const ShardedGraph mine = plan::lower_choice(in, choice, me());
    comm::MpiTransport t(mpi(), next_epoch());
    int64_t counted[2] = {0, 0};
    std::shared_ptr<Value> got;
    {
      RankProgram p(mine, t);
      got = finish(p, c.y->id);
      counted[0] = p.transfer_bytes();
      counted[1] = p.combine_bytes();
    }
    mpi().flush(30.0);
    int64_t sum[2] = {0, 0};
    MPI_Allreduce(counted, sum, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum[0] + sum[1] == plan::cost_of(g, in.mesh).bytes_moved);
    Outcome o;
    o.value = got;
    check_value(o, want, 1e-5);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

int main(int argc, char** argv) {
  const Config config = Config::from_environment();
  if (config.threads > 0) cpu::set_num_threads(config.threads);  // as a session would
  comm::Mpi* m = comm::Mpi::start(config.mpi_launched);
  if (!m) {
    std::fprintf(stderr, "run me under mpirun (-n 2 or more)\n");
    return 2;
  }
  if (m->size() < 2) {
    std::fprintf(stderr, "needs 2 or more ranks\n");
    comm::Mpi::finish(false);
    return 2;
  }
  doctest::Context ctx(argc, argv);
  if (m->rank() != 0) ctx.setOption("minimal", true);
  int failed = ctx.run();
  // Every rank's verdict: a check failing on a worker fails the job too.
  int any = failed != 0;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  comm::Mpi::finish(false);
  return any ? 1 : 0;
}
