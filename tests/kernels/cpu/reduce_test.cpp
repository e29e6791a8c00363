// run_reduce against a naive double reference: every op, every dim subset, strided
// inputs, large sizes, NaN, empty reductions, thread-count independence.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

const Op kOps[] = {Op::Sum, Op::Prod, Op::Max, Op::Min, Op::All, Op::Any};

DType out_dtype(Op op, DType in) {
  if (op == Op::All || op == Op::Any) return DType::Bool;
  if ((op == Op::Sum || op == Op::Prod) && !is_float(in)) return DType::I64;
  return in;
}

// Reduces `x` (row-major values of `shape`) over `dims` in long double.
std::vector<double> reference(Op op, const std::vector<double>& x, const Shape& shape,
                              const std::vector<int>& dims) {
  const int r = static_cast<int>(shape.size());
  std::vector<bool> red(r, false);
  for (int d : dims) red[d] = true;
  Shape os;
  for (int d = 0; d < r; ++d)
    if (!red[d]) os.push_back(shape[d]);
  const int64_t nout = numel(os);
  const double inf = std::numeric_limits<double>::infinity();
  const double init = op == Op::Sum || op == Op::Any ? 0 : op == Op::Max ? -inf : op == Op::Min ? inf : 1;
  std::vector<long double> acc(nout, init);
  std::vector<int64_t> idx(r, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rem = int64_t(i), o = 0;
    for (int d = r - 1; d >= 0; --d) idx[d] = rem % shape[d], rem /= shape[d];
    for (int d = 0; d < r; ++d)
      if (!red[d]) o = o * shape[d] + idx[d];
    long double& a = acc[o];
    const long double v = x[i];
    switch (op) {
      case Op::Sum: a += v; break;
      case Op::Prod: a *= v; break;
      case Op::Max: a = (std::isnan(a) || std::isnan(v)) ? NAN : std::max(a, v); break;
      case Op::Min: a = (std::isnan(a) || std::isnan(v)) ? NAN : std::min(a, v); break;
      case Op::All: a = (a != 0) && (v != 0); break;
      case Op::Any: a = (a != 0) || (v != 0); break;
      default: break;
    }
  }
  return std::vector<double>(acc.begin(), acc.end());
}

template <class T> std::vector<double> widen(const View& v) {
  auto e = values<T>(v);
  std::vector<double> out(e.size());
  for (int64_t i = 0; i < e.size(); ++i) out[i] = double(e[i]);
  return out;
}

std::vector<double> as_doubles(const View& v) {
  return dispatch_dtype(v.dtype, [&](auto tag) { return widen<typename decltype(tag)::type>(v); });
}

Shape kept_shape(const Shape& s, const std::vector<int>& dims) {
  Shape o;
  for (int d = 0; d < int(s.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) o.push_back(s[d]);
  return o;
}

void check_reduce(Op op, const View& in, const std::vector<int>& dims, double rtol) {
  const Shape os = kept_shape(in.shape, dims);
  auto out = Value::alloc(out_dtype(op, in.dtype), os);
  cpu::run_reduce(op, in, dims, out->view());
  const auto want = reference(op, as_doubles(in), in.shape, dims);
  const auto got = as_doubles(out->view());
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // Integer products wrap in i64 (as numpy); the reference does not.
    if (op == Op::Prod && !is_float(in.dtype) && std::abs(want[i]) > 0x1p62) continue;
    CAPTURE(op_def(op).name);
    CAPTURE(dtype_name(in.dtype));
    CAPTURE(shape_str(in.shape));
    CAPTURE(dims.size());
    CAPTURE(i);
    CAPTURE(got[i]);
    CAPTURE(want[i]);
    REQUIRE(close(got[i], want[i], rtol));
  }
}

// Small values so products stay exact in every dtype.
std::shared_ptr<Value> sample(DType t, const Shape& s) {
  auto v = Value::alloc(t, s);
  dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < numel(s); ++i) {
      const int64_t k = (i * 7 + 3) % 5;
      if constexpr (std::is_same_v<T, bool>) v->template data<T>()[i] = k != 0;
      else v->template data<T>()[i] = T(k == 0 ? -1 : k) / T(is_float(t) ? 2 : 1);
    }
  });
  return v;
}

}  // namespace

TEST_CASE("kernels.cpu.reduce.every_op_dtype_and_dim_set") {
  for (const Shape& s : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}, Shape{7, 1, 5, 6}}) {
    const int r = static_cast<int>(s.size());
    for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
      auto v = sample(t, s);
      for (int mask = 0; mask < (1 << r); ++mask) {
        std::vector<int> dims;
        for (int d = 0; d < r; ++d)
          if (mask & (1 << d)) dims.push_back(d);
        for (Op op : kOps) check_reduce(op, v->view(), dims, 1e-6);
      }
    }
  }
}

TEST_CASE("kernels.cpu.reduce.strided_inputs") {
  auto v = sample(DType::F32, {6, 8, 10});
  const View perm = v->view().permuted({2, 0, 1});
  const View sl = v->view().sliced({1, 7, 0}, {2, -2, 3}, {3, 4, 4});
  for (Op op : kOps) {
    for (const std::vector<int>& dims : {std::vector<int>{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}}) {
      check_reduce(op, perm, dims, 1e-6);
      check_reduce(op, sl, dims, 1e-6);
    }
  }
  auto b = sample(DType::F64, {4});  // a broadcast input (stride 0)
  check_reduce(Op::Sum, b->view().expanded({3, 4}), {0}, 1e-12);
}

TEST_CASE("kernels.cpu.reduce.large_f32_accuracy") {
  const int64_t n = (int64_t(1) << 22) + 3;
  auto v = Value::alloc(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) v->data<float>()[i] = 0.1f + float(i % 1000) * 1e-3f;
  check_reduce(Op::Sum, v->view(), {0}, 1e-7);  // the f32 result's own rounding
  check_reduce(Op::Max, v->view(), {0}, 0);
  auto m = Value::alloc(DType::F32, {1000, 3001});
  for (int64_t i = 0; i < m->view().numel(); ++i) m->data<float>()[i] = float((i * 13) % 101) - 50.5f;
  for (const std::vector<int>& dims : {std::vector<int>{0}, {1}, {0, 1}}) {
    check_reduce(Op::Sum, m->view(), dims, 1e-6);
    check_reduce(Op::Min, m->view(), dims, 0);
  }
  check_reduce(Op::Sum, m->view().permuted({1, 0}), {1}, 1e-6);
  auto i32 = sample(DType::I32, {3, 100000});
  check_reduce(Op::Sum, i32->view(), {1}, 0);
  check_reduce(Op::Sum, i32->view(), {0, 1}, 0);
}

TEST_CASE("kernels.cpu.reduce.nan_and_empty") {
  auto v = tensor<float>({2, 3}, {1, NAN, 3, 4, 5, 6});
  auto mx = Value::alloc(DType::F32, {2});
  cpu::run_reduce(Op::Max, v->view(), {1}, mx->view());
  CHECK(std::isnan(mx->data<float>()[0]));
  CHECK(mx->data<float>()[1] == 6);
  cpu::run_reduce(Op::Min, v->view(), {1}, mx->view());
  CHECK(std::isnan(mx->data<float>()[0]));
  CHECK(mx->data<float>()[1] == 4);

  auto e = Value::alloc(DType::F32, {0, 3});
  auto s = Value::alloc(DType::F32, {3});
  cpu::run_reduce(Op::Sum, e->view(), {0}, s->view());
  CHECK(s->data<float>()[2] == 0);
  auto al = Value::alloc(DType::Bool, {3});
  cpu::run_reduce(Op::All, e->view(), {0}, al->view());
  CHECK(al->data<bool>()[0]);
}

TEST_CASE("kernels.cpu.reduce.int32_output_and_overflow") {
  auto v = tensor<int32_t>({3}, {INT32_MAX, INT32_MAX, 2});
  auto s64 = Value::alloc(DType::I64, {});
  cpu::run_reduce(Op::Sum, v->view(), {0}, s64->view());
  CHECK(s64->data<int64_t>()[0] == 2 * int64_t(INT32_MAX) + 2);
  auto s32 = Value::alloc(DType::I32, {});  // another output dtype converts at the end
  cpu::run_reduce(Op::Sum, v->view(), {0}, s32->view());
  CHECK(s32->data<int32_t>()[0] == 0);
}

TEST_CASE("kernels.cpu.reduce.same_result_for_any_thread_count") {
  const int64_t n = (int64_t(1) << 21) + 17;
  auto v = Value::alloc(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) v->data<float>()[i] = std::sin(float(i)) * 1e3f;
  auto a = Value::alloc(DType::F32, {}), b = Value::alloc(DType::F32, {});
  const int before = cpu::num_threads();
  cpu::set_num_threads(1);
  cpu::run_reduce(Op::Sum, v->view(), {0}, a->view());
  cpu::set_num_threads(3);
  cpu::run_reduce(Op::Sum, v->view(), {0}, b->view());
  cpu::set_num_threads(before);
  CHECK(a->data<float>()[0] == b->data<float>()[0]);
}

// Contiguous runs take fold_lanes_contiguous (AVX2 blends for max and min of floats, prefetched
// sums and products); a strided view of the same values takes fold_run's scalar lanes, which
// fold the same elements in the same lanes and order. So the two must agree bit for bit: NaN
// anywhere (the first NaN of its lane wins), ties of +0 and -0 (the later one wins), lengths
// with a tail, sizes cut into chunks. The strided copy's gaps hold NaN, so a stride misread
// shows.
TEST_CASE_TEMPLATE("kernels.cpu.reduce.contiguous_lanes_match_the_scalar_fold", T, float, double) {
  const DType t = cpu::dtype_of<T>();
  for (const int64_t n : {int64_t(47), int64_t(100003), (int64_t(1) << 20) + 5}) {
    for (const int64_t nan_at : {int64_t(-1), int64_t(3), n / 2 + 1, n - 2}) {
      for (const bool zeros : {false, true}) {
        auto dense = Value::alloc(t, {n});
        auto gapped = Value::alloc(t, {2 * n});
        for (int64_t i = 0; i < n; ++i) {
          T x = zeros ? ((i * 7) % 3 == 0 ? T(-0.0) : T(0.0)) : T(std::sin(double(i) * 0.37) * 1e3);
          if (i == nan_at) x = std::numeric_limits<T>::quiet_NaN();
          dense->template data<T>()[i] = x;
          gapped->template data<T>()[2 * i] = x;
          gapped->template data<T>()[2 * i + 1] = std::numeric_limits<T>::quiet_NaN();
        }
        View strided = gapped->view();
        strided.shape = {n};
        strided.strides = {2};
        for (const Op op : {Op::Max, Op::Min, Op::Sum, Op::Prod}) {
          auto a = Value::alloc(t, {}), b = Value::alloc(t, {});
          cpu::run_reduce(op, dense->view(), {0}, a->view());
          cpu::run_reduce(op, strided, {0}, b->view());
          CAPTURE(op_def(op).name);
          CAPTURE(n);
          CAPTURE(nan_at);
          CAPTURE(zeros);
          CAPTURE(a->template data<T>()[0]);
          CAPTURE(b->template data<T>()[0]);
          CHECK(std::memcmp(a->template data<T>(), b->template data<T>(), sizeof(T)) == 0);
          if (op == Op::Max || op == Op::Min) CHECK(std::isnan(a->template data<T>()[0]) == (nan_at >= 0));
        }
      }
    }
  }
}

// Short contiguous rows (fewer than 32 elements) are folded eight rows at a time, element by
// element across the group (Reducer::fold_short_rows); rows read at a stride of 2 take the
// row-by-row fold_run. Each row is the same chain of steps, so the results agree bit for bit:
// rows packed (read ahead) and padded (not), row counts with a tail, 1 and 3 threads, NaN in
// some rows, ties of +0 and -0. The gaps hold NaN (or 99 for integers), so a misread shows.
TEST_CASE_TEMPLATE("kernels.cpu.reduce.short_rows_match_the_row_by_row_fold", T, float, double, int32_t) {
  const DType t = cpu::dtype_of<T>();
  const T gap = std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : T(99);
  const int before = cpu::num_threads();
  for (const int64_t n : {int64_t(1), int64_t(3), int64_t(8), int64_t(31)}) {
    for (const int64_t rows : {int64_t(7), int64_t(1003), int64_t(100003)}) {
      const int64_t pad = 3;
      auto packed = Value::alloc(t, {rows, n});
      auto padded = Value::alloc(t, {rows, n + pad});
      auto gapped = Value::alloc(t, {rows, 2 * n});
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t i = r * n + j;
          T x;
          if constexpr (std::is_floating_point_v<T>) {
            x = r % 5 == 1 ? ((i * 7) % 3 == 0 ? T(-0.0) : T(0.0)) : T(std::sin(double(i) * 0.37) * 1e3);
            if (r % 11 == 4 && j == n / 2) x = std::numeric_limits<T>::quiet_NaN();
          } else {
            x = T((i * 7) % 13 - 6);
          }
          packed->template data<T>()[i] = x;
          padded->template data<T>()[r * (n + pad) + j] = x;
          gapped->template data<T>()[r * 2 * n + 2 * j] = x;
          gapped->template data<T>()[r * 2 * n + 2 * j + 1] = gap;
        }
        for (int64_t j = n; j < n + pad; ++j) padded->template data<T>()[r * (n + pad) + j] = gap;
      }
      View in_padded = padded->view(), strided = gapped->view();
      in_padded.shape = {rows, n};
      strided.shape = {rows, n};
      strided.strides = {2 * n, 2};
      for (const Op op : {Op::Sum, Op::Prod, Op::Max, Op::Min, Op::All, Op::Any}) {
        if (op == Op::Prod && !std::is_floating_point_v<T>) continue;  // (would overflow)
        const DType ot = out_dtype(op, t);
        auto want = Value::alloc(ot, {rows});
        cpu::run_reduce(op, strided, {1}, want->view());
        const size_t bytes = static_cast<size_t>(rows) * dtype_size(ot);
        for (const int threads : {1, 3}) {
          cpu::set_num_threads(threads);
          auto a = Value::alloc(ot, {rows}), b = Value::alloc(ot, {rows});
          cpu::run_reduce(op, packed->view(), {1}, a->view());
          cpu::run_reduce(op, in_padded, {1}, b->view());
          CAPTURE(op_def(op).name);
          CAPTURE(n);
          CAPTURE(rows);
          CAPTURE(threads);
          CHECK(std::memcmp(a->view().byte_ptr(), want->view().byte_ptr(), bytes) == 0);
          CHECK(std::memcmp(b->view().byte_ptr(), want->view().byte_ptr(), bytes) == 0);
        }
      }
    }
  }
  cpu::set_num_threads(before);
}

// A row's 16 lanes are joined pairwise (lanes[j] with lanes[j + w], w = 8, 4, 2, 1); max and
// min do it with vector compares and blends. Against that tree written out here with
// fn::combine, bit for bit: values among +-0, +-1, +-inf and NaNs whose payloads say which one
// won, rows of 32 to 47 elements (lanes only, then a tail), 64 rows.
TEST_CASE_TEMPLATE("kernels.cpu.reduce.lane_tree_matches_the_scalar_joins", T, float, double) {
  const DType t = cpu::dtype_of<T>();
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  auto nan_with = [](Bits payload) {
    T x = std::numeric_limits<T>::quiet_NaN();
    Bits b;
    std::memcpy(&b, &x, sizeof b);
    b |= payload;
    std::memcpy(&x, &b, sizeof b);
    return x;
  };
  const T pool[] = {T(0.0),
                    T(-0.0),
                    T(1),
                    T(-1),
                    std::numeric_limits<T>::infinity(),
                    -std::numeric_limits<T>::infinity(),
                    nan_with(1),
                    nan_with(2),
                    nan_with(3)};
  const int64_t rows = 64;
  uint32_t state = 12345;
  for (const int64_t n : {int64_t(32), int64_t(33), int64_t(40), int64_t(47)}) {
    for (int trial = 0; trial < 20; ++trial) {
      auto x = Value::alloc(t, {rows, n});
      T* p = x->template data<T>();
      for (int64_t i = 0; i < rows * n; ++i) {
        state = state * 1664525u + 1013904223u;
        // Mostly ordinary values, now and then a NaN: the winner depends on the order.
        const uint32_t k = (state >> 8) % 64;
        p[i] = k < 6 ? pool[k] : k < 9 ? pool[k] : T(double(int(k) - 30) * 0.25);
      }
      for (const Op op : {Op::Max, Op::Min}) {
        auto got = Value::alloc(t, {rows});
        cpu::run_reduce(op, x->view(), {1}, got->view());
        for (int64_t r = 0; r < rows; ++r) {
          const T* row = p + r * n;
          auto join = [op](T a, T b) {
            return op == Op::Max ? fn::combine<Monoid::Max>(a, b) : fn::combine<Monoid::Min>(a, b);
          };
          const T init =
              op == Op::Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
          T lanes[16];
          for (int j = 0; j < 16; ++j) lanes[j] = init;
          const int64_t grouped = n / 16 * 16;
          for (int64_t i = 0; i < grouped; ++i) lanes[i % 16] = join(lanes[i % 16], row[i]);
          for (int w = 8; w >= 1; w /= 2)
            for (int j = 0; j < w; ++j) lanes[j] = join(lanes[j], lanes[j + w]);
          T acc = lanes[0];
          for (int64_t i = grouped; i < n; ++i) acc = join(acc, row[i]);
          const T want = join(init, acc);
          CAPTURE(op_def(op).name);
          CAPTURE(n);
          CAPTURE(r);
          CHECK(std::memcmp(&want, got->template data<T>() + r, sizeof(T)) == 0);
        }
      }
    }
  }
}
