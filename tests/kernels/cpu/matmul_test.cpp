// run_matmul against a naive loop: layouts BLAS reads in place, layouts it cannot,
// batch broadcasting, integer and bool products.
#include <doctest/doctest.h>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

template <class T> std::shared_ptr<Value> filled(const Shape& s, int seed) {
  auto v = Value::alloc(cpu::dtype_of<T>(), s);
  for (int64_t i = 0; i < numel(s); ++i) {
    const int64_t k = (i * 31 + seed * 17) % 9;
    if constexpr (std::is_same_v<T, bool>) v->template data<T>()[i] = k < 3;
    else v->template data<T>()[i] = T(k - 4);
  }
  return v;
}

// out[b..., i, j] = sum_p a[b..., i, p] * b[b..., p, j] with a and b expanded to out.
template <class T> void check(const View& a, const View& b, const Shape& out_shape) {
  const int r = static_cast<int>(out_shape.size());
  auto out = Value::alloc(cpu::dtype_of<T>(), out_shape);
  cpu::run_matmul(a, b, out->view());
  const View ae = a.expanded([&] {
    Shape s = out_shape;
    s[r - 1] = a.shape.back();
    return s;
  }());
  const View be = b.expanded([&] {
    Shape s = out_shape;
    s[r - 2] = b.shape[b.rank() - 2];
    return s;
  }());
  const auto av = values<T>(ae), bv = values<T>(be);
  const int64_t n = out_shape[r - 2], m = out_shape[r - 1], k = a.shape.back();
  const int64_t batches = numel(out_shape) / std::max<int64_t>(1, n * m);
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        T want{};
        for (int64_t p = 0; p < k; ++p) {
          const T x = av[(t * n + i) * k + p], y = bv[(t * k + p) * m + j];
          if constexpr (std::is_same_v<T, bool>) want = want || (x && y);
          else want = T(want + x * y);
        }
        CAPTURE(t);
        CAPTURE(i);
        CAPTURE(j);
        REQUIRE(close<T>(out->template data<T>()[(t * n + i) * m + j], want, 1e-5));
      }
}

template <class T> void layouts(int64_t n = 13, int64_t k = 17, int64_t m = 11) {
  // Plain, a transposed, b transposed, both, and a column-sliced (copied) operand.
  auto a = filled<T>({n, k}, 1), b = filled<T>({k, m}, 2);
  auto at = filled<T>({k, n}, 3), bt = filled<T>({m, k}, 4);
  auto wide = filled<T>({n, 2 * k}, 5);
  check<T>(a->view(), b->view(), {n, m});
  check<T>(at->view().permuted({1, 0}), b->view(), {n, m});
  check<T>(a->view(), bt->view().permuted({1, 0}), {n, m});
  check<T>(at->view().permuted({1, 0}), bt->view().permuted({1, 0}), {n, m});
  check<T>(wide->view().sliced({0, 1}, {1, 2}, {n, k}), b->view(), {n, m});
  // Vectors: n = 1 and m = 1.
  auto row = filled<T>({1, k}, 6), col = filled<T>({k, 1}, 7);
  check<T>(row->view(), b->view(), {1, m});
  check<T>(a->view(), col->view(), {n, 1});
  check<T>(row->view(), col->view(), {1, 1});
  // Every layout of a vector product (floats run them as gemv): a transposed against a
  // column, a row against b transposed, a strided column (every m-th element) and a strided
  // row (a row of a transposed matrix).
  check<T>(at->view().permuted({1, 0}), col->view(), {n, 1});
  check<T>(row->view(), bt->view().permuted({1, 0}), {1, m});
  check<T>(a->view(), b->view().sliced({0, 3}, {1, 1}, {k, 1}), {n, 1});
  check<T>(at->view().permuted({1, 0}).sliced({2, 0}, {1, 1}, {1, k}), b->view(), {1, m});
  check<T>(at->view().permuted({1, 0}).sliced({2, 0}, {1, 1}, {1, k}), bt->view().permuted({1, 0}), {1, m});
}

}  // namespace

TEST_CASE("kernels.cpu.matmul.layouts_f32_f64") {
  layouts<float>();
  layouts<double>();
}

TEST_CASE("kernels.cpu.matmul.layouts_int_bool") {
  layouts<int32_t>();
  layouts<int64_t>();
  layouts<bool>();
}

TEST_CASE("kernels.cpu.matmul.batch_broadcast") {
  // [2,1,n,k] @ [3,k,m] -> [2,3,n,m]; a missing batch dim and a size-1 one.
  auto a = filled<float>({2, 1, 5, 4}, 1), b = filled<float>({3, 4, 6}, 2);
  check<float>(a->view(), b->view(), {2, 3, 5, 6});
  auto ai = filled<int64_t>({2, 1, 5, 4}, 1), bi = filled<int64_t>({3, 4, 6}, 2);
  check<int64_t>(ai->view(), bi->view(), {2, 3, 5, 6});
  // Many small products (shared out over threads) and a transposed batched operand.
  auto sa = filled<double>({64, 3, 8}, 3), sb = filled<double>({64, 3, 8}, 4);
  check<double>(sa->view(), sb->view().permuted({0, 2, 1}), {64, 3, 3});
}

TEST_CASE("kernels.cpu.matmul.onednn_pieces") {
  // f32 products of 128^3 and up run on oneDNN, cut into row pieces (n >= m) or 16-column
  // pieces over the threads (at most OPENBLAS_NUM_THREADS); every layout, on 1 and 3 threads.
  const int before = cpu::num_threads();
  for (int threads : {1, 3}) {
    cpu::set_num_threads(threads);
    CAPTURE(threads);
    layouts<float>(150, 120, 130);  // by rows
    layouts<float>(70, 160, 210);   // by columns: 14 units of 16 (the last one 2 short)
  }
  cpu::set_num_threads(before);
}

TEST_CASE("kernels.cpu.matmul.large_and_empty") {
  auto a = filled<float>({300, 200}, 1), b = filled<float>({200, 250}, 2);
  check<float>(a->view(), b->view(), {300, 250});
  auto ai = filled<int32_t>({150, 120}, 1), bi = filled<int32_t>({120, 170}, 2);
  check<int32_t>(ai->view(), bi->view(), {150, 170});
  // k = 0 gives zeros; n = 0 does nothing.
  auto e1 = Value::alloc(DType::F32, {3, 0}), e2 = Value::alloc(DType::F32, {0, 4});
  auto z = Value::alloc(DType::F32, {3, 4});
  cpu::run_matmul(e1->view(), e2->view(), z->view());
  for (int i = 0; i < 12; ++i) CHECK(z->data<float>()[i] == 0);
}
