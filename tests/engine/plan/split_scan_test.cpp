#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/split_scan.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/run_sharded.hpp"

using namespace tapestry;

namespace {

// n values with ties and, for floats, a NaN late in the line: the carries' hard cases.
NodeRef line(DType t, int64_t n, int64_t rows = 1) {
  const Shape s = rows == 1 ? Shape{n} : Shape{rows, n};
  auto v = Value::alloc(t, s);
  for (int64_t i = 0; i < rows * n; ++i) {
    const double x = static_cast<double>((i * 7) % 13) - 6 + ((i % 5 == 0) ? 0.25 : 0);
    if (t == DType::F64) v->data<double>()[i] = (i == rows * n - 9) ? NAN : x / 4;
    else v->data<int64_t>()[i] = static_cast<int64_t>(x);
  }
  return make_source(v, s, t);
}

std::vector<double> values(const NodeRef& n) {
  evaluate({n});
  std::vector<double> out;
  const View& v = n->value->view();
  for (int64_t i = 0; i < v.numel(); ++i)
    out.push_back(v.dtype == DType::F64 ? v.ptr<double>()[i] : static_cast<double>(v.ptr<int64_t>()[i]));
  return out;
}

void same(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(b[i])) CHECK(std::isnan(a[i]));
    else CHECK(std::abs(a[i] - b[i]) <= tol * std::max(1.0, std::abs(b[i])));
  }
}

}  // namespace

TEST_CASE("engine.plan.split_scan.which_scans_split") {
  const NodeRef x = line(DType::F64, 40);
  CHECK(plan::splits_scan(*build::scan(Op::Cumsum, x, 0), 4));
  CHECK(!plan::splits_scan(*build::scan(Op::Cumsum, x, 0), 1));   // one rank: nothing to split
  CHECK(!plan::splits_scan(*build::scan(Op::Cumsum, x, 0), 32));  // a line shorter than 2 per rank
  // Enough lines for every rank: whole lines already split without any carry.
  CHECK(!plan::splits_scan(*build::scan(Op::Cumsum, line(DType::F64, 40, 4), 1), 4));
  CHECK(plan::splits_scan(*build::scan(Op::Cumsum, line(DType::F64, 40, 3), 1), 4));
  CHECK(!plan::splits_scan(*build::sort(x, 0, false)[0], 4));  // a sort is not a scan
  const NodeRef y = build::scan(Op::Cumsum, x, 0);
  CHECK(plan::split_scans({y}, 4)[0] != y);
  CHECK(plan::split_scans({y}, 1)[0] == y);
}

TEST_CASE("engine.plan.split_scan.the_rewrite_computes_the_scan") {
  // Every scan, on lines that do and do not divide into the chunks, equals the one-line scan.
  for (int64_t n : {40, 37}) {
    for (int ranks : {2, 3, 5}) {
      CAPTURE(n);
      CAPTURE(ranks);
      const NodeRef f = line(DType::F64, n), i = line(DType::I64, n);
      for (Op op : {Op::Cumsum, Op::Cumprod, Op::Logcumsumexp, Op::Cummax, Op::Cummin}) {
        CAPTURE(op_def(op).name);
        const NodeRef y = build::scan(op, f, 0);
        same(values(plan::split_scans({y}, ranks)[0]), values(y), 1e-12);
      }
      for (Op op : {Op::Cummax, Op::Cummin}) {
        for (const NodeRef& x : {f, i}) {
          const std::vector<NodeRef> vi = build::scan_extreme(op, x, 0);
          same(values(plan::split_scans({vi[1]}, ranks)[0]), values(vi[1]), 0);  // the indices, exactly
          same(values(plan::split_scans({vi[0]}, ranks)[0]), values(vi[0]), 0);
        }
      }
      const NodeRef rev = build::scan(Op::Cumsum, i, 0, /*reverse=*/true);  // the gradients' scan
      same(values(plan::split_scans({rev}, ranks)[0]), values(rev), 0);
      const NodeRef rows = build::scan(Op::Cumsum, line(DType::I64, n, 2), 1);
      same(values(plan::split_scans({rows}, ranks)[0]), values(rows), 0);
    }
  }
}

TEST_CASE("engine.plan.split_scan.sharded_moves_carries_not_lines") {
  // On 4 ranks a generated 1-D line is scanned where it is generated, in 4 blocks on 4 ranks:
  // only the chunks' totals and carries move, never the line.
  const NodeRef y = build::scan(Op::Cumsum, build::rand({20000}, 5, DType::F64), 0);
  plan::PlannerState planner;
  const plan::PlannedGraph pg = plan::plan_observation(planner, {y}, plan::Mesh::modelled(4), {});
  std::set<int> ranks;
  for (const plan::Block& b : pg.plan.graph().blocks)
    if (pg.plan.graph().find(b.node)->op == Op::Cumsum && pg.plan.graph().find(b.node)->shape.size() == 2)
      ranks.insert(b.rank);
  CHECK(ranks.size() == 4);
  int64_t moved = 0;
  for (const plan::Transfer& t : pg.plan.graph().transfers) moved += numel(t.slice.extents()) * 8;
  CHECK(moved < 200);  // 3 totals in, 3 carries out (and nothing of the 160 kB line)
  // And it computes the scan: the same values as one rank's.
  const NodeRef single = build::scan(Op::Cumsum, build::rand({20000}, 6, DType::F64), 0);
  const std::vector<double> want = values(single);
  set_value(*single, nullptr);
  run_sharded({single}, plan::Mesh::modelled(4), {}, /*verify_plan=*/true);
  REQUIRE(single->value);
  same(values(single), want, 1e-12);
}
