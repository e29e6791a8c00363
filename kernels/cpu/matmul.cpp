// run_matmul: batched matrix products. f32/f64 (c64/c128 through cgemm/zgemm) go to BLAS (transposed and
// strided operands through its trans/ld arguments, anything else copied first): f32 products of 128^3 and up
// to oneDNN's sgemm (7-12% faster than OpenBLAS's per thread on AVX-512), the rest to OpenBLAS; integers and
// bools use a row-major loop that vectorizes over output columns.
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <climits>
#include <memory>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/strided.hpp"
#include "kernels/cpu/vector_kernels.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cpu {
namespace {

// Strides of one operand: its two matrix dims and the batch dims aligned to out's
// (0 where the operand is broadcast).
struct Operand {
  const char* base;
  int64_t rows, cols, srow, scol;
  Strides batch;
};

Operand operand(const View& v, const View& out) {
  const int r = v.rank(), ob = out.rank() - 2;
  internal_check(r >= 2 && r - 2 <= ob);
  Operand o{v.byte_ptr(), v.shape[r - 2], v.shape[r - 1], v.strides[r - 2], v.strides[r - 1], Strides(ob, 0)};
  for (int i = 0; i < r - 2; ++i) {
    const int d = ob - (r - 2) + i;
    internal_check(v.shape[i] == out.shape[d] || v.shape[i] == 1);
    o.batch[d] = v.shape[i] == 1 ? 0 : v.strides[i];
  }
  return o;
}

// How BLAS can read a rows x cols matrix in place, if it can.
struct BlasMat {
  bool ok;
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};
BlasMat blas_layout(int64_t rows, int64_t cols, int64_t srow, int64_t scol) {
  if ((scol == 1 || cols == 1) && (rows == 1 || srow >= std::max<int64_t>(1, cols)))
    return {true, CblasNoTrans, rows == 1 ? std::max<int64_t>(1, cols) : srow};
  if ((srow == 1 || rows == 1) && (cols == 1 || scol >= std::max<int64_t>(1, rows)))
    return {true, CblasTrans, cols == 1 ? std::max<int64_t>(1, rows) : scol};
  return {false, CblasNoTrans, 0};
}

// A contiguous copy of v when BLAS cannot read its matrices in place. By reference (v, or
// keep's view): a copy of a View is two allocations, and a CG step runs a small product.
const View& blas_ready(const View& v, std::shared_ptr<Value>& keep) {
  const int r = v.rank();
  if (blas_layout(v.shape[r - 2], v.shape[r - 1], v.strides[r - 2], v.strides[r - 1]).ok) return v;
  keep = Value::alloc(v.dtype, v.shape);
  copy_view(v, keep->view());
  return keep->view();
}

// Threads for one large product: the kernels' pool, capped by OPENBLAS_NUM_THREADS (which
// has always set the matmul threads; the tests and one-rank-per-core runs set it to 1).
int matmul_threads() { return std::max(1, std::min(num_threads(), openblas_get_num_threads())); }

// c = a @ b on oneDNN, one thread per piece: the larger of c's row and column ranges is cut
// into pieces run on the pool. (oneDNN's own OpenMP threads spin at barriers, which stalls
// them whenever another process shares the cores; the pool's threads block instead.)
void sgemm_dnnl(const BlasMat& la, const BlasMat& lb, int64_t n, int64_t m, int64_t k, const float* a,
                const float* b, float* c, int threads) {
  const char ta = la.trans == CblasTrans ? 'T' : 'N', tb = lb.trans == CblasTrans ? 'T' : 'N';
  const bool by_rows = n >= m;
  // Column pieces are multiples of 16 floats so that no cache line of c is shared.
  const int64_t unit = by_rows ? 1 : 16, units = ((by_rows ? n : m) + unit - 1) / unit;
  const int64_t pieces = std::min<int64_t>(threads, units);
  auto piece = [&](int64_t lo, int64_t hi, int) {
    omp_set_num_threads(1);  // this thread's OpenMP setting: oneDNN then runs inline
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t u0 = units * p / pieces, u1 = units * (p + 1) / pieces;
      const int64_t i0 = u0 * unit, i1 = std::min(u1 * unit, by_rows ? n : m);
      if (i0 >= i1) continue;
      const float* pa = a;
      const float* pb = b;
      float* pc = c;
      int64_t pn = n, pm = m;
      if (by_rows) {  // rows i0..i1 of op(a) and of c
        pa += ta == 'N' ? i0 * la.ld : i0;
        pc += i0 * m;
        pn = i1 - i0;
      } else {  // columns i0..i1 of op(b) and of c
        pb += tb == 'N' ? i0 : i0 * lb.ld;
        pc += i0;
        pm = i1 - i0;
      }
      const dnnl_status_t st = dnnl_sgemm(ta, tb, pn, pm, k, 1.0f, pa, la.ld, pb, lb.ld, 0.0f, pc, m);
      internal_check(st == dnnl_success);
    }
  };
  if (pieces == 1) piece(0, 1, 0);
  else parallel_for(pieces, 1, piece);
}

// A product with one output column (a matrix-vector product, m == 1) or one output row
// (n == 1) as BLAS's gemv: sgemm with one column copies the whole matrix first (CG's 256^2
// matvec paid that every iteration). Whether it applies; c is contiguous.
template <class T, class Gemv>
bool as_gemv(Gemv gemv, const BlasMat& la, const BlasMat& lb, int64_t n, int64_t m, int64_t k, const T* a,
             const T* b, T* c) {
  if (m == 1) {  // c = op(a) x, with x the k x 1 column of b
    const int incx = lb.trans == CblasNoTrans ? int(lb.ld) : 1;
    if (la.trans == CblasNoTrans)
      gemv(CblasRowMajor, CblasNoTrans, int(n), int(k), T(1), a, int(la.ld), b, incx, T(0), c, 1);
    else gemv(CblasRowMajor, CblasTrans, int(k), int(n), T(1), a, int(la.ld), b, incx, T(0), c, 1);
    return true;
  }
  if (n == 1) {  // c = op(b)^T x, with x the 1 x k row of a
    const int incx = la.trans == CblasNoTrans ? 1 : int(la.ld);
    if (lb.trans == CblasNoTrans)
      gemv(CblasRowMajor, CblasTrans, int(k), int(m), T(1), b, int(lb.ld), a, incx, T(0), c, 1);
    else gemv(CblasRowMajor, CblasNoTrans, int(m), int(k), T(1), b, int(lb.ld), a, incx, T(0), c, 1);
    return true;
  }
  return false;
}

// y = a x for a row-major f32 matrix (rows lda apart) and a contiguous x: the vector kernels'
// gemv (AVX-512 where the CPU has it; OpenBLAS's sgemv is AVX2 and costs more to call: CG's
// 256^2 matvec took 21K instructions there), large matrices over the pool by rows.
void gemv_rows(const float* a, int64_t lda, const float* x, float* y, int64_t n, int64_t k) {
  const auto gemv = vec::table().gemv_f32;
  if (n * k < (int64_t(1) << 18) || n < 128) return gemv(a, lda, x, y, n, k);
  parallel_for(n, grain_for(n, 64),
               [&](int64_t lo, int64_t hi, int) { gemv(a + lo * lda, lda, x, y + lo, hi - lo, k); });
}

void gemm(float, const BlasMat& la, const BlasMat& lb, int64_t n, int64_t m, int64_t k, const char* a,
          const char* b, char* c, int threads) {
  const auto* fa = reinterpret_cast<const float*>(a);
  const auto* fb = reinterpret_cast<const float*>(b);
  auto* fc = reinterpret_cast<float*>(c);
  // A matrix times a contiguous vector, the matrix's rows contiguous.
  if (m == 1 && la.trans == CblasNoTrans && (lb.trans == CblasTrans || lb.ld == 1 || k == 1))
    return gemv_rows(fa, la.ld, fb, fc, n, k);
  if (n == 1 && lb.trans == CblasTrans && (la.trans == CblasNoTrans || la.ld == 1 || k == 1))
    return gemv_rows(fb, lb.ld, fa, fc, m, k);
  if (as_gemv<float>(cblas_sgemv, la, lb, n, m, k, fa, fb, fc)) return;
  // Below 128^3 OpenBLAS's lighter set-up wins (oneDNN takes 2.4x as long at 32^3).
  if (n * m * k >= (int64_t(1) << 21)) return sgemm_dnnl(la, lb, n, m, k, fa, fb, fc, threads);
  cblas_sgemm(CblasRowMajor, la.trans, lb.trans, int(n), int(m), int(k), 1.0f, fa, int(la.ld), fb, int(lb.ld),
              0.0f, fc, int(m));
}
void gemm(double, const BlasMat& la, const BlasMat& lb, int64_t n, int64_t m, int64_t k, const char* a,
          const char* b, char* c, int) {
  if (as_gemv<double>(cblas_dgemv, la, lb, n, m, k, reinterpret_cast<const double*>(a),
                      reinterpret_cast<const double*>(b), reinterpret_cast<double*>(c)))
    return;
  cblas_dgemm(CblasRowMajor, la.trans, lb.trans, int(n), int(m), int(k), 1.0,
              reinterpret_cast<const double*>(a), int(la.ld), reinterpret_cast<const double*>(b), int(lb.ld),
              0.0, reinterpret_cast<double*>(c), int(m));
}

// Complex products: cgemm and zgemm, alpha 1 and beta 0 passed by address.
void gemm(c64, const BlasMat& la, const BlasMat& lb, int64_t n, int64_t m, int64_t k, const char* a,
          const char* b, char* c, int) {
  const c64 one(1.0f, 0.0f), zero(0.0f, 0.0f);
  cblas_cgemm(CblasRowMajor, la.trans, lb.trans, int(n), int(m), int(k), &one, a, int(la.ld), b, int(lb.ld),
              &zero, c, int(m));
}
void gemm(c128, const BlasMat& la, const BlasMat& lb, int64_t n, int64_t m, int64_t k, const char* a,
          const char* b, char* c, int) {
  const c128 one(1.0, 0.0), zero(0.0, 0.0);
  cblas_zgemm(CblasRowMajor, la.trans, lb.trans, int(n), int(m), int(k), &one, a, int(la.ld), b, int(lb.ld),
              &zero, c, int(m));
}

// A contiguous copy of v when its rows are not (the naive loop walks b's rows).
View rows_ready(const View& v, std::shared_ptr<Value>& keep) {
  const int r = v.rank();
  if (v.shape[r - 1] == 1 || v.strides[r - 1] == 1) return v;
  keep = Value::alloc(v.dtype, v.shape);
  copy_view(v, keep->view());
  return keep->view();
}

// c (n x m, contiguous) = a @ b for integer and bool T: sums wrap, bool is OR of ANDs.
template <class T>
void naive(const T* a, int64_t sar, int64_t sac, const T* b, int64_t sbr, int64_t sbc, T* c, int64_t n,
           int64_t m, int64_t k, int64_t i0, int64_t i1) {
  fn::Add<T> add;
  fn::Mul<T> mul;
  internal_check(sbc == 1 || m == 1);
  for (int64_t i = i0; i < i1; ++i) {
    T* ci = c + i * m;
    for (int64_t j = 0; j < m; ++j) ci[j] = T(0);
    for (int64_t p = 0; p < k; ++p) {
      const T av = a[i * sar + p * sac];
      if (av == T(0)) continue;
      const T* bp = b + p * sbr;
      for (int64_t j = 0; j < m; ++j) ci[j] = add(ci[j], mul(av, bp[j]));
    }
  }
}

template <class T> void matmul_typed(const View& a0, const View& b0, const View& out) {
  const int r = out.rank();
  const int64_t n = out.shape[r - 2], m = out.shape[r - 1];
  const int64_t k = a0.shape[a0.rank() - 1];
  internal_check(a0.shape[a0.rank() - 2] == n && b0.shape[b0.rank() - 2] == k &&
                 b0.shape[b0.rank() - 1] == m);
  internal_check(out.is_contiguous());
  T* c = out.ptr<T>();
  const int64_t total = out.numel();
  if (total == 0) return;
  if (k == 0) {
    std::fill(c, c + total, T(0));
    return;
  }
  std::shared_ptr<Value> ka, kb;
  constexpr bool kBlas = std::is_floating_point_v<T> || is_cx<T>;
  View b_rows;  // the integer product's b, when rows_ready copies it
  const View& a = kBlas ? blas_ready(a0, ka) : a0;
  const View& b = kBlas ? blas_ready(b0, kb) : (b_rows = rows_ready(b0, kb));
  const Operand oa = operand(a, out), ob = operand(b, out);
  const Shape bshape(out.shape.begin(), out.shape.end() - 2);
  const int64_t nbatch = numel(bshape);
  const auto bd = coalesce<2>(bshape, {&oa.batch, &ob.batch});
  const int64_t esize = sizeof(T), flops = n * m * k;
  // Many small products share out batches, one thread each; a large one uses all threads.
  const bool by_batch = !(flops >= (int64_t(1) << 18) || nbatch == 1);
  const int threads = by_batch ? 1 : matmul_threads();

  auto one = [&](int64_t lo, int64_t hi, int) {
    Odometer<2> it(bd, lo);
    for (int64_t t = lo; t < hi; ++t, it.advance(1)) {
      const char* pa = oa.base + it.off[0] * esize;
      const char* pb = ob.base + it.off[1] * esize;
      char* pc = reinterpret_cast<char*>(c + t * n * m);
      if constexpr (kBlas) {
        internal_check(n < INT_MAX && m < INT_MAX && k < INT_MAX);
        const BlasMat la = blas_layout(n, k, oa.srow, oa.scol);
        const BlasMat lb = blas_layout(k, m, ob.srow, ob.scol);
        internal_check(la.ok && lb.ok && la.ld < INT_MAX && lb.ld < INT_MAX);
        gemm(T{}, la, lb, n, m, k, pa, pb, pc, threads);
      } else {
        naive<T>(reinterpret_cast<const T*>(pa), oa.srow, oa.scol, reinterpret_cast<const T*>(pb), ob.srow,
                 ob.scol, reinterpret_cast<T*>(pc), n, m, k, 0, n);
      }
    }
  };
  if constexpr (kBlas) {
    if (!by_batch) one(0, nbatch, 0);
    else parallel_for(nbatch, grain_for(nbatch, std::max<int64_t>(1, (int64_t(1) << 16) / flops)), one);
  } else if (nbatch > 1) {
    parallel_for(nbatch, flops * nbatch < (1 << 16) ? nbatch : grain_for(nbatch, 1), one);
  } else {
    // One integer product: share out its rows.
    const T* pa = reinterpret_cast<const T*>(oa.base);
    const T* pb = reinterpret_cast<const T*>(ob.base);
    parallel_for(n, flops < (1 << 16) ? n : grain_for(n, 1), [&](int64_t lo, int64_t hi, int) {
      naive<T>(pa, oa.srow, oa.scol, pb, ob.srow, ob.scol, c, n, m, k, lo, hi);
    });
  }
}

}  // namespace

void run_matmul(const View& a, const View& b, const View& out) {
  internal_check(a.dtype == out.dtype && b.dtype == out.dtype);
  internal_check(out.rank() >= 2 && a.rank() >= 2 && b.rank() >= 2);
  // A contiguous f32 matrix times a contiguous column (CG's matvec, once an iteration): the
  // gemv that matmul_typed and gemm reach for it, without their batch and layout set-up (~1K
  // instructions beside the 15.6K product).
  if (out.dtype == DType::F32 && a.rank() == 2 && b.rank() == 2 && out.rank() == 2 && b.shape[1] == 1 &&
      a.shape[0] > 0 && a.shape[1] > 0 && a.is_contiguous() && b.is_contiguous() && out.is_contiguous()) {
    internal_check(b.shape[0] == a.shape[1] && out.shape[0] == a.shape[0] && out.shape[1] == 1);
    return gemv_rows(a.ptr<float>(), a.shape[1], b.ptr<float>(), out.ptr<float>(), a.shape[0], a.shape[1]);
  }
  if (is_complex(out.dtype)) {
    dispatch_complex(out.dtype, [&](auto tag) { matmul_typed<typename decltype(tag)::type>(a, b, out); });
    return;
  }
  dispatch_dtype(out.dtype, [&](auto tag) { matmul_typed<typename decltype(tag)::type>(a, b, out); });
}

}  // namespace tapestry::cpu
