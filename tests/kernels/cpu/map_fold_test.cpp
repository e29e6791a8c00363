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

// cpu::run_map_fold_rows: each row (the trailing dims) of a map folded from its tiles, the same
// bits as run_map then run_reduce of those dims, which folds each row whole when there are at
// least 32 rows: short rows (one chain), rows of whole lane groups and a tail, rows longer than
// a tile and rows that straddle tiles and tasks, on 1 and 3 threads.
TEST_CASE("kernels.cpu.map_fold.rows_match_map_then_reduce_bit_for_bit") {
  const int before = cpu::num_threads();
  struct Shape2 {
    Shape shape;
    int trailing;  // reduced dims, the last ones
  };
  const std::vector<Shape2> shapes = {
      {{40, 1}, 1},     {{37, 5}, 1},    {{64, 8}, 1},       {{50, 31}, 1},     {{33, 32}, 1},
      {{90, 33}, 1},    {{70, 48}, 1},   {{2000, 100}, 1},   {{40, 512}, 1},    {{41, 513}, 1},
      {{300, 1000}, 1}, {{35, 4103}, 1}, {{6, 7, 9, 11}, 2}, {{3, 20, 300}, 1}, {{5000, 33}, 1}};
  for (const Shape2& sc : shapes) {
    const int64_t n = numel(sc.shape);
    auto a = wave(sc.shape, 2.0, n / 3);  // a NaN in one row
    auto b = wave(sc.shape, 1.5);
    auto k = tensor<float>({}, {0.75f});
    MapProgram p;  // a * b + 0.75: two in-place leaves and a broadcast constant
    p.leaves = {a->view(), b->view(), k->view().expanded(sc.shape)};
    p.instrs = {instr(Op::Mul, 0, 1), instr(Op::Add, 3, 2)};
    // a * b in f64: its sums in f64 depend on the order of the adds (f32 terms summed in f64
    // mostly do not), so a fold in another order shows.
    auto a64 = Value::alloc(DType::F64, sc.shape), b64 = Value::alloc(DType::F64, sc.shape);
    for (int64_t i = 0; i < n; ++i) {
      a64->data<double>()[i] = std::sin(double(i) * 0.37) * 1e3;
      b64->data<double>()[i] = std::cos(double(i) * 0.11) * 1e-2;
    }
    MapProgram p64;
    p64.leaves = {a64->view(), b64->view()};
    p64.instrs = {MapInstr{Op::Mul, DType::F64, DType::F64}};
    p64.instrs[0].a = 0, p64.instrs[0].b = 1;
    MapProgram gt;  // b > 0.75 (a bool map)
    gt.leaves = {b->view(), k->view().expanded(sc.shape)};
    gt.instrs = {instr(Op::Gt, 0, 1, DType::Bool)};
    const int r = static_cast<int>(sc.shape.size());
    std::vector<int> dims;
    Shape out_shape(sc.shape.begin(), sc.shape.end() - sc.trailing);
    int64_t row = 1;
    for (int d = r - sc.trailing; d < r; ++d) dims.push_back(d), row *= sc.shape[static_cast<size_t>(d)];
    struct Run {
      const MapProgram* p;
      Op op;
      DType out;
    };
    for (const Run& run :
         {Run{&p, Op::Sum, DType::F32}, Run{&p, Op::Sum, DType::F64}, Run{&p, Op::Max, DType::F32},
          Run{&p, Op::Min, DType::F32}, Run{&p, Op::Prod, DType::F32}, Run{&p64, Op::Sum, DType::F64},
          Run{&p64, Op::Prod, DType::F64}, Run{&gt, Op::Any, DType::Bool}, Run{&gt, Op::All, DType::Bool}}) {
      auto mapped = Value::alloc(run.p->instrs.back().out, sc.shape);
      cpu::run_map(*run.p, mapped->view());
      auto want = Value::alloc(run.out, out_shape);
      cpu::run_reduce(run.op, mapped->view(), dims, want->view());
      const size_t bytes = static_cast<size_t>(numel(out_shape)) * dtype_size(run.out);
      for (const int threads : {1, 3}) {
        cpu::set_num_threads(threads);
        auto got = Value::alloc(run.out, out_shape);
        std::memset(got->view().byte_ptr(), 0x5a, bytes);
        cpu::run_map_fold_rows(*run.p, sc.shape, run.op, row, got->view());
        CAPTURE(shape_str(sc.shape));
        CAPTURE(op_def(run.op).name);
        CAPTURE(dtype_name(run.out));
        CAPTURE(threads);
        CHECK(std::memcmp(got->view().byte_ptr(), want->view().byte_ptr(), bytes) == 0);
      }
    }
  }
  cpu::set_num_threads(before);
}
