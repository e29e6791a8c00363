// run_matmul on the device: cuBLAS sgemm/dgemm/cgemm3m/zgemm (strided batched) for floats and
// complex numbers, a kernel for ints.
//   cuda::run_matmul(av, bv, outv);   // out[..., n, m] = a[..., n, k] @ b[..., k, m]
// cuBLAS is column-major; a row-major C = A B is the column-major C^T = B^T A^T, so the operands
// are passed swapped with no copy. An operand whose last two dims are neither row- nor
// column-major (a strided slice) is packed first; broadcast batch dims keep stride 0 and cost
// nothing. The default math mode is kept (no TF32): results stay comparable with the CPU's BLAS.
#include <cuda_runtime.h>

#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cuda {
namespace {

// Integers wrap (as every integer kernel); bool is OR of ANDs.
template <class T>
__global__ void int_matmul(const T* a, const T* b, T* c, const Strided<3> batch, int64_t n, int64_t k,
                           int64_t m, int64_t as0, int64_t as1, int64_t bs0, int64_t bs1, int64_t total) {
  TP_GRID_LOOP(i, total) {
    const int64_t bt = i / (n * m), r = (i / m) % n, col = i % m;
    const T* ap = a + batch.offset(bt, 0) + r * as0;
    const T* bp = b + batch.offset(bt, 1) + col * bs1;
    T acc = T(0);
    for (int64_t j = 0; j < k; ++j) {
      if constexpr (std::is_same_v<T, bool>) acc = acc || (ap[j * as1] && bp[j * bs0]);
      else acc = fn::detail::wrap_add(acc, fn::detail::wrap_mul(ap[j * as1], bp[j * bs0]));
    }
    c[batch.offset(bt, 2) + r * m + col] = acc;
  }
}

// How cuBLAS reads a rows x cols matrix with strides (sr, sc): its transpose flag and leading dim.
struct Layout {
  bool ok, trans;  // trans: column-major storage (the row-major reading needs op T)
  int64_t ld;
};
Layout layout_of(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  if ((sc == 1 || cols == 1) && (rows == 1 || sr >= cols)) return {true, false, rows == 1 ? cols : sr};
  if ((sr == 1 || rows == 1) && (cols == 1 || sc >= rows)) return {true, true, cols == 1 ? rows : sc};
  return {false, false, 0};
}

// c64 and c128 are laid out as cuComplex and cuDoubleComplex (real part first). c64 uses the
// 3-multiplication gemm (Gauss's trick: ~25% fewer flops, a slightly different rounding).
template <class T>
cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const T* A, int lda, long long sa, const T* B, int ldb, long long sb, T* C,
                            int ldc, long long sc, int count) {
  if constexpr (std::is_same_v<T, c64>) {
    const cuComplex one = make_cuComplex(1, 0), zero = make_cuComplex(0, 0);
    return cublasCgemm3mStridedBatched(h, ta, tb, m, n, k, &one, reinterpret_cast<const cuComplex*>(A), lda,
                                       sa, reinterpret_cast<const cuComplex*>(B), ldb, sb, &zero,
                                       reinterpret_cast<cuComplex*>(C), ldc, sc, count);
  } else if constexpr (std::is_same_v<T, c128>) {
    const cuDoubleComplex one = make_cuDoubleComplex(1, 0), zero = make_cuDoubleComplex(0, 0);
    return cublasZgemmStridedBatched(h, ta, tb, m, n, k, &one, reinterpret_cast<const cuDoubleComplex*>(A),
                                     lda, sa, reinterpret_cast<const cuDoubleComplex*>(B), ldb, sb, &zero,
                                     reinterpret_cast<cuDoubleComplex*>(C), ldc, sc, count);
  } else {
    const T one = 1, zero = 0;
    if constexpr (std::is_same_v<T, float>)
      return cublasSgemmStridedBatched(h, ta, tb, m, n, k, &one, A, lda, sa, B, ldb, sb, &zero, C, ldc, sc,
                                       count);
    else
      return cublasDgemmStridedBatched(h, ta, tb, m, n, k, &one, A, lda, sa, B, ldb, sb, &zero, C, ldc, sc,
                                       count);
  }
}

template <class T> void blas_matmul(DView a, DView b, const DView& out) {
  const int r = out.rank();
  const int64_t n = out.shape[r - 2], m = out.shape[r - 1], k = a.shape[r - 1];
  Context& cx = context();
  DeviceBuffer pa, pb;  // packed copies of operands cuBLAS cannot read as they are
  Layout la = layout_of(n, k, a.strides[r - 2], a.strides[r - 1]);
  if (!la.ok) {
    pa = DeviceBuffer(a.numel() * sizeof(T));
    const DView packed = dview(pa.get(), a.dtype, a.shape);
    copy_view(a, packed);
    a = packed;
    la = layout_of(n, k, a.strides[r - 2], a.strides[r - 1]);
  }
  Layout lb = layout_of(k, m, b.strides[r - 2], b.strides[r - 1]);
  if (!lb.ok) {
    pb = DeviceBuffer(b.numel() * sizeof(T));
    const DView packed = dview(pb.get(), b.dtype, b.shape);
    copy_view(b, packed);
    b = packed;
    lb = layout_of(k, m, b.strides[r - 2], b.strides[r - 1]);
  }
  // Batch dims: all but the innermost coalesced one are looped here; that one is cuBLAS's batch.
  const Shape bshape(out.shape.begin(), out.shape.end() - 2);
  const Strides sa(a.strides.begin(), a.strides.end() - 2), sb(b.strides.begin(), b.strides.end() - 2),
      so(out.strides.begin(), out.strides.end() - 2);
  const auto dims = cpu::coalesce<3>(bshape, {&sa, &sb, &so});
  const int64_t inner = dims.back().n, outer = numel(bshape) / (inner ? inner : 1);
  const auto& is = dims.back().s;
  std::vector<cpu::Dim<3>> outer_dims(dims.begin(), dims.end() - 1);
  if (outer_dims.empty()) outer_dims.push_back(cpu::Dim<3>{1, {0, 0, 0}});
  cpu::Odometer<3> it(outer_dims, 0);
  const T* A = static_cast<const T*>(a.data);
  const T* B = static_cast<const T*>(b.data);
  T* C = static_cast<T*>(out.data);
  for (int64_t o = 0; o < outer; ++o) {
    check(
        gemm_batched<T>(cx.blas(), lb.trans ? CUBLAS_OP_T : CUBLAS_OP_N, la.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
                        int(m), int(n), int(k), B + it.off[1], int(lb.ld), is[1], A + it.off[0], int(la.ld),
                        is[0], C + it.off[2], int(m), is[2], int(inner)),
        "gemm");
    if (o + 1 < outer) it.advance(1);
  }
  if (pa.get() || pb.get()) synchronize();  // the packed copies are freed on return
}

}  // namespace

void run_matmul(const DView& a, const DView& b, const DView& out) {
  const int r = out.rank();
  internal_check(r >= 2 && a.rank() == r && b.rank() == r && out.is_contiguous() && a.dtype == out.dtype &&
                 b.dtype == out.dtype);
  if (out.numel() == 0) return;
  const int64_t n = out.shape[r - 2], m = out.shape[r - 1], k = a.shape[r - 1];
  if (k == 0) {  // an empty sum: zeros
    check(cudaMemsetAsync(out.data, 0, out.numel() * dtype_size(out.dtype), context().s()), "memset");
    return;
  }
  if (is_complex(out.dtype)) {
    user_check(n < (int64_t(1) << 31) && m < (int64_t(1) << 31) && k < (int64_t(1) << 31),
               "CUDA matmul: a matrix dim exceeds 2^31");
    return dispatch_complex(out.dtype,
                            [&](auto tag) { blas_matmul<typename decltype(tag)::type>(a, b, out); });
  }
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      user_check(n < (int64_t(1) << 31) && m < (int64_t(1) << 31) && k < (int64_t(1) << 31),
                 "CUDA matmul: a matrix dim exceeds 2^31");
      blas_matmul<T>(a, b, out);
    } else {
      const Shape bshape(out.shape.begin(), out.shape.end() - 2);
      const Strides sa(a.strides.begin(), a.strides.end() - 2), sb(b.strides.begin(), b.strides.end() - 2),
          so(out.strides.begin(), out.strides.end() - 2);
      const Strided<3> batch = make_strided<3>(bshape, {&sa, &sb, &so});
      const int64_t total = out.numel();
      int_matmul<T><<<blocks_for(total), kThreads, 0, context().s()>>>(
          static_cast<const T*>(a.data), static_cast<const T*>(b.data), static_cast<T*>(out.data), batch, n,
          k, m, a.strides[r - 2], a.strides[r - 1], b.strides[r - 2], b.strides[r - 1], total);
      check_launch("int matmul kernel");
    }
  });
}

}  // namespace tapestry::cuda
