// The CUDA backend: it links and answers without a GPU; with one, every functor on
// the device matches the CPU map.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "../cpu/helpers.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cuda/cuda_backend.hpp"

using namespace tapestry;

TEST_CASE("kernels.cuda.device_count") {
  const int n = cuda::cuda_device_count();
  CHECK(n >= 0);
  if (n == 0) MESSAGE("no CUDA device here: the GPU checks are skipped");
}

TEST_CASE("kernels.cuda.map_matches_cpu") {
  if (cuda::cuda_device_count() == 0) {
    MESSAGE("no CUDA device here: skipped");
    return;
  }
  const int64_t n = 1000;
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    dispatch_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T> av(n), bv(n);
      for (int64_t i = 0; i < n; ++i) {
        av[i] = T((i % 23) - 11) / T(is_float(t) ? 4 : 1);
        bv[i] = T((i % 7) - 3);
      }
      auto a = test::tensor<T>({n}, av), b = test::tensor<T>({n}, bv);
      for (Op op : {Op::Add, Op::Mul, Op::FloorDiv, Op::Mod, Op::Maximum, Op::Pow, Op::Lt}) {
        const DType rt = op == Op::Lt ? DType::Bool : t;
        auto cpu_out = Value::alloc(rt, {n}), gpu_out = Value::alloc(rt, {n});
        cpu::run_map(test::single(op, rt, t, {a->view(), b->view()}), cpu_out->view());
        REQUIRE(cuda::map_through_device(op, t, rt, a->template data<T>(), b->template data<T>(), nullptr,
                                         gpu_out->view().byte_ptr(), n));
        for (int64_t i = 0; i < n; ++i) {
          CAPTURE(op_def(op).name);
          if (rt == DType::Bool) {
            REQUIRE(cpu_out->data<bool>()[i] == gpu_out->data<bool>()[i]);
          } else {
            REQUIRE(test::close<T>(cpu_out->template data<T>()[i], gpu_out->template data<T>()[i], 1e-5));
          }
        }
      }
      for (Op op : {Op::Tanh, Op::Exp, Op::Gelu, Op::Round, Op::Neg, Op::Abs}) {
        if (!is_float(t) && (op == Op::Tanh || op == Op::Exp || op == Op::Gelu)) continue;
        auto cpu_out = Value::alloc(t, {n}), gpu_out = Value::alloc(t, {n});
        cpu::run_map(test::single(op, t, t, {a->view()}), cpu_out->view());
        REQUIRE(cuda::map_through_device(op, t, t, a->template data<T>(), nullptr, nullptr,
                                         gpu_out->view().byte_ptr(), n));
        for (int64_t i = 0; i < n; ++i) {
          CAPTURE(op_def(op).name);
          REQUIRE(test::close<T>(cpu_out->template data<T>()[i], gpu_out->template data<T>()[i], 1e-5));
        }
      }
    });
  }
}

// What the GPU runs (no GPU needed): the line ops in the dtypes line.cu takes, complex sums,
// products and matmul, nonzero, gather/scatter of every dtype, constants of f16/bf16/complex;
// what stays on the CPU says no (complex max, bool cumsum, f16 sorts: the builders cast those).
TEST_CASE("kernels.cuda.supports") {
  for (DType t : {DType::Bool, DType::I8, DType::U8, DType::I32, DType::I64, DType::F32, DType::F64}) {
    CAPTURE(dtype_name(t));
    for (Op op : {Op::Sort, Op::Cummax, Op::Cummin, Op::Searchsorted}) CHECK(cuda::line_supported(op, t));
    CHECK(cuda::line_supported(Op::Cumsum, t) == (t != DType::Bool));
    CHECK(cuda::line_supported(Op::LineScatterAdd, t) == (t != DType::Bool));
    CHECK(cuda::line_supported(Op::Logcumsumexp, t) == is_float(t));
    CHECK(cuda::cuda_supports(Op::Sort, t));
    CHECK(cuda::cuda_supports(Op::Gather, t));
  }
  for (DType t : {DType::F16, DType::BF16, DType::C64, DType::C128}) {
    CAPTURE(dtype_name(t));
    CHECK_FALSE(cuda::line_supported(Op::Sort, t));
    CHECK_FALSE(cuda::cuda_supports(Op::Sort, t));
    CHECK(cuda::cuda_supports(Op::Gather, t));
    CHECK(cuda::cuda_supports(Op::Scatter, t));
    CHECK(cuda::cuda_supports(Op::Full, t));
    CHECK_FALSE(cuda::cuda_supports(Op::Rand, t));
    CHECK(cuda::cuda_supports(Op::Sum, t) == is_complex(t));
    CHECK(cuda::cuda_supports(Op::Prod, t) == is_complex(t));
    CHECK(cuda::cuda_supports(Op::Matmul, t) == is_complex(t));
    CHECK(cuda::cuda_supports(Op::ScatterAdd, t) == is_complex(t));
    CHECK_FALSE(cuda::cuda_supports(Op::Max, t));
  }
  CHECK(cuda::cuda_supports(Op::Nonzero, DType::I64));
  CHECK(cuda::cuda_supports(Op::Cumsum, DType::I64));  // a sort's or cummax's indices are i64
}
