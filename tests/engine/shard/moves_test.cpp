// Every placement and collective on virtual ranks, forced by an explicit choice per op: the
// plan names its moves (plan::classify_moves), the run gives the single-rank values, and the
// bytes the ranks count equal the plan's bytes_moved (cost_of), whether each rank runs the
// whole plan or only its own part (lower_rank).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/moves.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/poly/signature.hpp"
#include "engine/shard/rank_program.hpp"
#include "tests/engine/run/test_values.hpp"

using namespace tapestry;
using plan::CombineMode;
using plan::MoveKind;
using plan::Rank;
using poly::Box;

namespace {

using test::check_close;
using test::reference;
using test::source;

plan::Candidate split(const NodeRef& n, std::vector<int64_t> parts, CombineMode m = CombineMode::Reduce) {
  REQUIRE(static_cast<int>(parts.size()) == poly::signature_of(*n).rank());
  return plan::Candidate{std::move(parts), 0, m, false};
}

plan::Candidate replicated(const NodeRef& n) {
  return plan::Candidate{std::vector<int64_t>(static_cast<size_t>(poly::signature_of(*n).rank()), 1), 0,
                         CombineMode::Reduce, true};
}

std::vector<plan::Shard> rows_over(const NodeRef& x, int ranks) {
  std::vector<plan::Shard> s;
  const int64_t n = x->shape[0];
  for (int r = 0; r < ranks; ++r) {
    Box b = Box::of_shape(x->shape);
    b.lo[0] = r * n / ranks;
    b.hi[0] = (r + 1) * n / ranks - 1;
    s.push_back({x->id, b, r});
  }
  return s;
}

bool has(const plan::Moves& mv, MoveKind k) {
  return std::any_of(mv.groups.begin(), mv.groups.end(),
                     [k](const plan::MoveGroup& g) { return g.kind == k && !g.local(); });
}

// Runs the choice on `ranks` virtual ranks, whole and as each rank's own part; checks y's
// values, that the plan has a move of kind `want`, and the bytes.
void check_run(const std::vector<NodeRef>& topo, const std::vector<plan::Shard>& initial, const NodeRef& y,
               const std::map<uint64_t, plan::Candidate>& choice, int ranks, MoveKind want, double tol) {
  const std::vector<float> expect = reference(y);
  plan::LoweringInput in{topo, initial, {y}, plan::Mesh::modelled(ranks)};
  const plan::ShardedGraph g = plan::lower_choice(in, choice);
  REQUIRE_MESSAGE(plan::verify(g, topo).ok(), plan::verify(g, topo).message());
  const plan::Moves mv = plan::classify_moves(g);
  CHECK_MESSAGE(has(mv, want), plan::to_string(g));
  const int64_t planned = plan::cost_of(g, in.mesh).bytes_moved;
  int64_t by_kind = 0;
  for (const plan::MoveGroup& m : mv.groups) by_kind += m.bytes;
  CHECK(by_kind == planned);  // every transfer and combine is in exactly one group
  const RunReport whole = run_plan(g);
  check_close(y, expect, tol);
  set_value(*y, nullptr);
  CHECK(whole.transfer_bytes + whole.combine_bytes == planned);
  std::vector<plan::ShardedGraph> parts;
  for (Rank r = 0; r < ranks; ++r) parts.push_back(plan::lower_choice(in, choice, r));
  const RunReport each = run_plan_parts(parts);
  check_close(y, expect, tol);
  set_value(*y, nullptr);
  CHECK(each.transfer_bytes + each.combine_bytes == planned);
}

}  // namespace

TEST_CASE("engine.shard.moves.replicated_value_comes_down_a_broadcast_tree") {
  for (int ranks : {2, 4, 7}) {
    CAPTURE(ranks);
    NodeRef a = source({9, 5}, 1);
    NodeRef y = build::unary(Op::Tanh, a);
    check_run({a, y}, {{a->id, Box::of_shape(a->shape), 0}}, y, {{y->id, replicated(y)}}, ranks,
              ranks > 2 ? MoveKind::Broadcast : MoveKind::PointToPoint, 1e-6);
  }
}

TEST_CASE("engine.shard.moves.split_reductions_in_each_combine_mode") {
  const std::pair<CombineMode, MoveKind> modes[] = {{CombineMode::Reduce, MoveKind::Reduce},
                                                    {CombineMode::AllReduce, MoveKind::AllReduce},
                                                    {CombineMode::ReduceScatter, MoveKind::ReduceScatter}};
  for (int ranks : {2, 3, 4}) {
    for (auto [mode, kind] : modes) {
      CAPTURE(ranks);
      CAPTURE(plan::combine_mode_name(mode));
      NodeRef a = source({12, 8}, 2), b = source({8, 6}, 3);
      NodeRef y = build::matmul(a, b);
      std::vector<plan::Shard> initial;
      for (Rank r = 0; r < ranks; ++r) {
        initial.push_back({a->id, Box::of_shape(a->shape), r});
        initial.push_back({b->id, Box::of_shape(b->shape), r});
      }
      check_run({a, b, y}, initial, y, {{y->id, split(y, {1, 1, ranks}, mode)}}, ranks, kind, 1e-5);
    }
  }
}

// 3-D matmul: i, j and k each in two over 8 ranks; the k pairs merge in each mode.
TEST_CASE("engine.shard.moves.three_dim_split_matmul") {
  for (CombineMode mode : {CombineMode::Reduce, CombineMode::AllReduce, CombineMode::ReduceScatter}) {
    CAPTURE(plan::combine_mode_name(mode));
    NodeRef a = source({8, 6}, 4), b = source({6, 10}, 5);
    NodeRef y = build::matmul(a, b);
    const MoveKind kind = mode == CombineMode::Reduce      ? MoveKind::Reduce
                          : mode == CombineMode::AllReduce ? MoveKind::AllReduce
                                                           : MoveKind::ReduceScatter;
    check_run({a, b, y}, {{a->id, Box::of_shape(a->shape), 0}, {b->id, Box::of_shape(b->shape), 0}}, y,
              {{y->id, split(y, {2, 2, 2}, mode)}}, 8, kind, 1e-5);
  }
}

// Rows on every rank, wanted whole on every rank: each piece goes to every other rank.
TEST_CASE("engine.shard.moves.rows_to_replicated_is_an_all_gather") {
  for (int ranks : {2, 4, 5}) {
    CAPTURE(ranks);
    NodeRef x = source({10, 3}, 6);
    NodeRef y = build::unary(Op::Exp, x);
    check_run({x, y}, rows_over(x, ranks), y, {{y->id, replicated(y)}}, ranks, MoveKind::AllGather, 1e-6);
  }
}

// Rows to columns: every rank sends every other a distinct slice (on 2 ranks too: a swap is an
// all-to-all of two, one collective).
TEST_CASE("engine.shard.moves.rows_to_columns_is_an_all_to_all") {
  for (int ranks : {2, 3, 4}) {
    CAPTURE(ranks);
    NodeRef x = source({12, 12}, 7);
    NodeRef y = build::unary(Op::Neg, x);
    check_run({x, y}, rows_over(x, ranks), y, {{y->id, split(y, {1, ranks})}}, ranks, MoveKind::AllToAll, 0);
  }
}

TEST_CASE("engine.shard.moves.an_op_on_one_rank_fetches_point_to_point") {
  NodeRef x = source({12, 4}, 8);
  NodeRef y = build::unary(Op::Abs, x);
  check_run({x, y}, rows_over(x, 3), y, {{y->id, split(y, {1, 1})}}, 3, MoveKind::PointToPoint, 0);
}
