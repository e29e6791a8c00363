// cpu::run_map_fold: a map's result folded tile by tile into a full reduction. Its sums are
// checked bit for bit against the fold it promises (chunks of 128 tiles of 512, 16 lanes and
// the tail, partials in f64 joined in chunk order), and every op against run_map followed by
// run_reduce, for each path a tile takes: in place, gathered (a transposed leaf), sliced (a
// costly op), padded (a short last tile), broadcast leaves and constants.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;
using cpu::MapProgram;

namespace {

MapInstr instr(Op op, int a, int b = -1, DType out = DType::F32) {
  MapInstr m{op, out, DType::F32};
  m.a = a, m.b = b;
  return m;
}

std::shared_ptr<Value> wave(const Shape& s, double scale, int64_t nan_at = -1) {
  auto v = Value::alloc(DType::F32, s);
  float* p = v->data<float>();
  for (int64_t i = 0; i < v->view().numel(); ++i) p[i] = float(std::sin(double(i) * 0.61) * scale);
  if (nan_at >= 0) p[nan_at] = std::numeric_limits<float>::quiet_NaN();
  return v;
}

// The promised fold of y's elements: chunks of 128 * 512, each 16 lanes in f64 then its tail
// (or one chain under 32 elements), partials joined in chunk order.
double chunked_lane_sum(const std::vector<float>& y) {
  const int64_t n = static_cast<int64_t>(y.size()), chunk = 128 * 512;
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    const int64_t m = std::min(chunk, n - c0);
    double acc = 0;
    int64_t i = 0;
    if (m >= 32) {
      double lanes[16] = {};
      for (; i + 16 <= m; i += 16)
        for (int j = 0; j < 16; ++j) lanes[j] += double(y[c0 + i + j]);
      for (int w = 8; w >= 1; w /= 2)
        for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
      acc = lanes[0];
    }
    for (; i < m; ++i) acc += double(y[c0 + i]);
    total = c0 == 0 ? 0 + acc : total + acc;
  }
  return total;
}

// run_map_fold(p) into one element of `out_dtype`, and run_map then run_reduce.
std::pair<std::shared_ptr<Value>, std::shared_ptr<Value>> both(const MapProgram& p, const Shape& shape, Op op,
                                                               DType out_dtype) {
  auto folded = Value::alloc(out_dtype, {}), want = Value::alloc(out_dtype, {});
  cpu::run_map_fold(p, shape, op, folded->view());
  auto mapped = Value::alloc(p.instrs.back().out, shape);
  cpu::run_map(p, mapped->view());
  std::vector<int> dims;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) dims.push_back(d);
  cpu::run_reduce(op, mapped->view(), dims, want->view());
  return {folded, want};
}

}  // namespace

TEST_CASE("kernels.cpu.map_fold.sum_is_the_chunked_lane_fold_on_any_thread_count") {
  const int before = cpu::num_threads();
  for (const int64_t n : {int64_t(20), int64_t(100), int64_t(5000), (int64_t(1) << 20) + 37}) {
    auto x = wave({n}, 1e3);
    MapProgram p;
    p.leaves = {x->view()};
    p.instrs = {instr(Op::Mul, 0, 0)};  // x * x
    std::vector<float> y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) y[i] = x->data<float>()[i] * x->data<float>()[i];
    const double want = chunked_lane_sum(y);
    for (const int threads : {1, 3}) {
      cpu::set_num_threads(threads);
      auto f32 = Value::alloc(DType::F32, {}), f64 = Value::alloc(DType::F64, {});
      cpu::run_map_fold(p, {n}, Op::Sum, f32->view());
      cpu::run_map_fold(p, {n}, Op::Sum, f64->view());
      CAPTURE(n);
      CAPTURE(threads);
      CHECK(f64->data<double>()[0] == want);  // the partials in f64, not rounded to f32
      CHECK(f32->data<float>()[0] == static_cast<float>(want));
    }
  }
  cpu::set_num_threads(before);
}

TEST_CASE("kernels.cpu.map_fold.matches_map_then_reduce") {
  const int64_t rows = 700, cols = 900;  // 630,000 elements: 10 chunks, a short last tile
  auto a = wave({rows, cols}, 3.0), b = wave({cols, rows}, 2.0), s = tensor<float>({}, {0.5f});
  View bt = b->view().permuted({1, 0});  // a gathered leaf
  View sb = s->view().expanded({rows, cols});
  struct Case {
    const char* what;
    MapProgram p;
  };
  std::vector<Case> cases;
  {
    MapProgram p;  // a * bt + s: in place, gathered and broadcast leaves
    p.leaves = {a->view(), bt, sb};
    p.instrs = {instr(Op::Mul, 0, 1), instr(Op::Add, 3, 2)};
    cases.push_back({"a * b^T + s", p});
  }
  {
    MapProgram p;  // exp(a) * s: a costly op, so exact tiles run in slices
    p.leaves = {a->view(), sb};
    p.instrs = {instr(Op::Exp, 0), instr(Op::Mul, 2, 1)};
    cases.push_back({"exp(a) * s", p});
  }
  for (const Case& c : cases) {
    for (const Op op : {Op::Sum, Op::Max, Op::Min}) {
      auto [got, want] = both(c.p, {rows, cols}, op, DType::F32);
      CAPTURE(c.what);
      CAPTURE(op_def(op).name);
      const float g = got->data<float>()[0], w = want->data<float>()[0];
      if (op == Op::Sum) CHECK(std::abs(g - w) <= 1e-5 * std::abs(w) + 1e-3);
      else CHECK(g == w);
    }
  }
  // A NaN anywhere is the max; any/all of a comparison (a bool map).
  auto x = wave({rows, cols}, 1.0, rows * cols - 3);
  MapProgram nan_max;
  nan_max.leaves = {x->view()};
  nan_max.instrs = {instr(Op::Abs, 0)};
  CHECK(std::isnan(both(nan_max, {rows, cols}, Op::Max, DType::F32).first->data<float>()[0]));
  for (const double limit : {0.999, 2.0}) {
    auto k = tensor<float>({}, {float(limit * 3.0)});
    MapProgram gt;  // a > 3 * limit (a's largest value is under 3)
    gt.leaves = {a->view(), k->view().expanded({rows, cols})};
    gt.instrs = {instr(Op::Gt, 0, 1, DType::Bool)};
    for (const Op op : {Op::Any, Op::All}) {
      auto [got, want] = both(gt, {rows, cols}, op, DType::Bool);
      CAPTURE(limit);
      CAPTURE(op_def(op).name);
      CHECK(got->data<bool>()[0] == want->data<bool>()[0]);
    }
    CHECK(both(gt, {rows, cols}, Op::Any, DType::Bool).first->data<bool>()[0] == (limit < 1));
  }
}
