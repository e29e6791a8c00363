// run_argreduce: 1-based, first of ties, NaN wins, along any dim or flat.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

// Naive reference over row-major values.
template <class T> std::vector<int64_t> reference(bool is_max, const Elems<T>& x, const Shape& s, int dim) {
  auto better = [&](T v, T best) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(best)) return false;
      if (std::isnan(v)) return true;
    }
    return is_max ? v > best : v < best;
  };
  if (dim < 0) {
    int64_t b = 0;
    for (int64_t i = 1; i < x.size(); ++i)
      if (better(x[i], x[b])) b = i;
    return {b + 1};
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (size_t d = dim + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t n = s[dim];
  std::vector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t b = 0;
      for (int64_t i = 1; i < n; ++i)
        if (better(x[(o * n + i) * inner + j], x[(o * n + b) * inner + j])) b = i;
      out.push_back(b + 1);
    }
  return out;
}

template <class T> void check(Op op, const View& in, int dim) {
  Shape os;
  if (dim >= 0)
    for (int d = 0; d < in.rank(); ++d)
      if (d != dim) os.push_back(in.shape[d]);
  auto out = Value::alloc(DType::I64, os);
  cpu::run_argreduce(op, in, dim, out->view());
  const auto want = reference<T>(op == Op::ArgMax, values<T>(in), in.shape, dim);
  REQUIRE(out->view().numel() == int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(dim);
    CAPTURE(i);
    REQUIRE(out->data<int64_t>()[i] == want[i]);
  }
}

}  // namespace

TEST_CASE("kernels.cpu.argreduce.small_cases") {
  auto v = tensor<float>({2, 4}, {3, 7, 7, 1, 2, NAN, 9, NAN});
  auto o = Value::alloc(DType::I64, {2});
  cpu::run_argreduce(Op::ArgMax, v->view(), 1, o->view());
  CHECK(o->data<int64_t>()[0] == 2);  // first of the ties
  CHECK(o->data<int64_t>()[1] == 2);  // first NaN wins
  cpu::run_argreduce(Op::ArgMin, v->view(), 1, o->view());
  CHECK(o->data<int64_t>()[0] == 4);
  CHECK(o->data<int64_t>()[1] == 2);
  auto f = Value::alloc(DType::I64, {});
  cpu::run_argreduce(Op::ArgMax, v->view(), -1, f->view());
  CHECK(f->data<int64_t>()[0] == 6);
}

TEST_CASE("kernels.cpu.argreduce.every_dim_dtype_and_layout") {
  const Shape s{5, 6, 7};
  auto f = Value::alloc(DType::F64, s);
  auto i = Value::alloc(DType::I32, s);
  auto b = Value::alloc(DType::Bool, s);
  for (int64_t k = 0; k < numel(s); ++k) {
    f->data<double>()[k] = double((k * 37) % 11);
    i->data<int32_t>()[k] = int32_t((k * 53) % 13) - 6;
    b->data<bool>()[k] = (k * 7) % 5 == 0;
  }
  for (Op op : {Op::ArgMax, Op::ArgMin}) {
    for (int dim = -1; dim < 3; ++dim) {
      check<double>(op, f->view(), dim);
      check<int32_t>(op, i->view(), dim);
      check<bool>(op, b->view(), dim);
      check<double>(op, f->view().permuted({2, 0, 1}), dim);
      check<double>(op, f->view().sliced({4, 0, 1}, {-1, 2, 3}, {5, 3, 2}), dim);
    }
  }
}

TEST_CASE("kernels.cpu.argreduce.large") {
  // Blocked path (a kept dim denser than the reduced one) and chunked flat scans.
  auto v = Value::alloc(DType::F32, {1000, 300});
  for (int64_t k = 0; k < 300000; ++k) v->data<float>()[k] = float((k * 7919) % 100003);
  for (Op op : {Op::ArgMax, Op::ArgMin}) {
    check<float>(op, v->view(), 0);
    check<float>(op, v->view(), 1);
    check<float>(op, v->view(), -1);
    check<float>(op, v->view().permuted({1, 0}), -1);
  }
}

// Contiguous f32 and f64 runs of 64 or more take two passes (the extreme value, then the first
// element equal to it): the first of repeated extremes, +0 and -0 as equals (the first zero
// wins), the first of two NaNs, an extreme in the tail, runs cut into the flat scan's chunks.
TEST_CASE_TEMPLATE("kernels.cpu.argreduce.two_pass_runs", T, float, double) {
  const DType t = cpu::dtype_of<T>();
  for (const int64_t n :
       {int64_t(63), int64_t(64), int64_t(65), int64_t(1000), int64_t(65536 + 7), (int64_t(1) << 20) + 3}) {
    for (int pattern = 0; pattern < 5; ++pattern) {
      auto v = Value::alloc(t, {3, n});
      T* x = v->template data<T>();
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t i = 0; i < n; ++i) {
          T& e = x[r * n + i];
          switch (pattern) {
            case 0: e = T((i * 7919 + r * 31) % 1009); break;  // the extremes repeat
            case 1: e = (i % 3 == 0) ? T(-0.0) : (i % 3 == 1 ? T(0.0) : -T(1 + i % 5)); break;
            case 2: e = (i % 3 == 0) ? T(0.0) : (i % 3 == 1 ? T(-0.0) : T(1 + i % 5)); break;
            case 3: e = T(std::sin(double(i + r)) * 100); break;
            default: e = T(i % 97); break;
          }
        }
      if (pattern == 3) {  // two NaNs per row: the first wins
        for (int64_t r = 0; r < 3; ++r) {
          x[r * n + (n * (r + 1)) / 5] = std::numeric_limits<T>::quiet_NaN();
          x[r * n + (n * (r + 2)) / 5] = -std::numeric_limits<T>::quiet_NaN();
        }
      }
      if (pattern == 4) x[2 * n + n - 1] = T(1e6), x[n - 2] = T(-1e6);  // in a tail
      for (Op op : {Op::ArgMax, Op::ArgMin}) {
        CAPTURE(n);
        CAPTURE(pattern);
        check<T>(op, v->view(), 1);
        check<T>(op, v->view(), -1);
      }
    }
  }
}
