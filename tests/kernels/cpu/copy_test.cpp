// copy_view, views (value.cpp) and the thread pool.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>

#include "helpers.hpp"
#include "kernels/cpu/parallel.hpp"

using namespace tapestry;
using namespace tapestry::test;

TEST_CASE("kernels.cpu.copy.layouts_and_dtypes") {
  auto src = Value::alloc(DType::I64, {40, 50});
  for (int64_t i = 0; i < 2000; ++i) src->data<int64_t>()[i] = i;
  // Contiguous, transposed, reversed slice, and broadcast sources.
  auto dst = Value::alloc(DType::I64, {50, 40});
  cpu::copy_view(src->view().permuted({1, 0}), dst->view());
  CHECK(dst->data<int64_t>()[1] == 50);
  auto rev = Value::alloc(DType::I64, {20, 50});
  cpu::copy_view(src->view().sliced({39, 0}, {-2, 1}, {20, 50}), rev->view());
  CHECK(rev->data<int64_t>()[50] == 37 * 50);
  auto row = tensor<bool>({3}, {true, false, true});
  auto bc = Value::alloc(DType::Bool, {4, 3});
  cpu::copy_view(row->view().expanded({4, 3}), bc->view());
  CHECK(bc->data<bool>()[10] == false);
  CHECK(bc->data<bool>()[11] == true);
  // Into a strided destination.
  auto big = Value::alloc(DType::F32, {1 << 20});
  for (int64_t i = 0; i < (1 << 20); ++i) big->data<float>()[i] = float(i);
  auto half = Value::alloc(DType::F32, {1 << 21});
  cpu::copy_view(big->view(), half->view().sliced({1}, {2}, {1 << 20}));
  CHECK(half->data<float>()[2 * 777 + 1] == 777.0f);
  auto same = Value::alloc(DType::F32, {1 << 20});
  cpu::copy_view(big->view(), same->view());
  CHECK(same->data<float>()[(1 << 20) - 1] == float((1 << 20) - 1));
}

TEST_CASE("kernels.cpu.copy.tiled_transposes") {
  // Batched transposes of odd sizes, in every element size (the tiled path).
  for (DType t : {DType::Bool, DType::F32, DType::I64}) {
    dispatch_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t b = 3, n = 130, m = 77;
      auto src = Value::alloc(t, {b, n, m});
      for (int64_t i = 0; i < b * n * m; ++i) src->template data<T>()[i] = T(i % 101);
      auto dst = Value::alloc(t, {m, b, n});
      cpu::copy_view(src->view().permuted({2, 0, 1}), dst->view());
      for (int64_t x = 0; x < m; ++x)
        for (int64_t y = 0; y < b; ++y)
          for (int64_t z = 0; z < n; ++z)
            REQUIRE(dst->template data<T>()[(x * b + y) * n + z] ==
                    src->template data<T>()[(y * n + z) * m + x]);
    });
  }
  auto big = Value::alloc(DType::F32, {1000, 1500});
  for (int64_t i = 0; i < 1500000; ++i) big->data<float>()[i] = float(i);
  auto bt = Value::alloc(DType::F32, {1500, 1000});
  cpu::copy_view(big->view().permuted({1, 0}), bt->view());
  CHECK(bt->data<float>()[1499 * 1000 + 999] == float(999 * 1500 + 1499));
  CHECK(bt->data<float>()[3 * 1000 + 7] == float(7 * 1500 + 3));
}

TEST_CASE("kernels.cpu.copy.views") {
  auto v = Value::alloc(DType::F32, {2, 3, 4});
  CHECK(v->view().is_contiguous());
  CHECK(!v->view().permuted({1, 0, 2}).is_contiguous());
  View r;
  REQUIRE(v->view().try_reshape({6, 4}, r));
  CHECK(r.strides == Strides{4, 1});
  // A transposed view splits along its groups but cannot merge across them.
  const View t = v->view().permuted({2, 0, 1});  // shape {4,2,3}, strides {1,12,4}
  CHECK(t.try_reshape({4, 6}, r));
  CHECK(r.strides == Strides{1, 4});
  CHECK(!t.try_reshape({8, 3}, r));
  CHECK(t.try_reshape({2, 2, 1, 2, 3}, r));
  CHECK(r.strides[0] == 2);
  CHECK(r.strides[1] == 1);
  const View e = v->view().expanded({5, 2, 3, 4});
  CHECK(e.strides[0] == 0);
  CHECK(reinterpret_cast<uintptr_t>(v->view().buf->data()) % 64 == 0);
}

TEST_CASE("kernels.cpu.parallel.pool") {
  std::atomic<int64_t> sum{0};
  cpu::parallel_for(1000, 7, [&](int64_t lo, int64_t hi, int w) {
    REQUIRE(w < cpu::pool_width());
    for (int64_t i = lo; i < hi; ++i) sum += i;
    // Nested calls run inline on the calling worker.
    cpu::parallel_for(10, 1, [&](int64_t, int64_t, int) {});
  });
  CHECK(sum == 999 * 1000 / 2);
  CHECK_THROWS_AS(cpu::parallel_for(100, 1,
                                    [&](int64_t lo, int64_t, int) {
                                      if (lo == 50) throw std::runtime_error("boom");
                                    }),
                  std::runtime_error);
  const int before = cpu::num_threads();
  cpu::set_num_threads(3);
  CHECK(cpu::num_threads() == 3);
  sum = 0;
  cpu::parallel_for(100, 1, [&](int64_t lo, int64_t hi, int) { sum += hi - lo; });
  CHECK(sum == 100);
  cpu::set_num_threads(before);
}
