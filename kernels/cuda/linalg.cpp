// run_linalg on the device: cuSOLVER for solve, cholesky, eigh, det, slogdet, qr and svd (f32,
// f64), with the packed outputs of kernels/cpu/linalg.cpp (the same order, so
// builders_linalg.cpp unpacks either). Host C++ (g++): cuSOLVER is a host API.
// cuSOLVER is column-major: each matrix of the batch is copied into a column-major scratch by
// copy_view (any strides both sides), factored there, and copied back row-major into the
// output; LAPACK's `info` (singular, not positive definite) is read back per matrix and is the
// same user error as on the CPU.
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/runtime.hpp"

namespace tapestry::cuda {

namespace {

void check_solver(cusolverStatus_t s, const char* what) {
  if (s != CUSOLVER_STATUS_SUCCESS) user_error("cuSOLVER ", what, ": status ", static_cast<int>(s));
}

class SolverHandle {
 public:
  explicit SolverHandle(cudaStream_t s) {
    check_solver(cusolverDnCreate(&h_), "cusolverDnCreate");
    check_solver(cusolverDnSetStream(h_, s), "cusolverDnSetStream");
  }
  ~SolverHandle() {
    if (h_) cusolverDnDestroy(h_);
  }
  SolverHandle(const SolverHandle&) = delete;
  SolverHandle& operator=(const SolverHandle&) = delete;
  cusolverDnHandle_t get() const { return h_; }

 private:
  cusolverDnHandle_t h_ = nullptr;
};

// The calling thread's handle, bound to its stream (made on first use: it costs ~100 ms).
cusolverDnHandle_t solver() {
  thread_local std::unique_ptr<SolverHandle> h;
  if (!h) h = std::make_unique<SolverHandle>(context().s());
  return h->get();
}

// cuSOLVER's S/D routines under one name.
cusolverStatus_t potrf_size(cusolverDnHandle_t h, int n, float* a, int* lw) {
  return cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, n, lw);
}
cusolverStatus_t potrf_size(cusolverDnHandle_t h, int n, double* a, int* lw) {
  return cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, n, lw);
}
cusolverStatus_t potrf(cusolverDnHandle_t h, int n, float* a, float* w, int lw, int* info) {
  return cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, n, w, lw, info);
}
cusolverStatus_t potrf(cusolverDnHandle_t h, int n, double* a, double* w, int lw, int* info) {
  return cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, n, w, lw, info);
}
cusolverStatus_t getrf_size(cusolverDnHandle_t h, int n, float* a, int* lw) {
  return cusolverDnSgetrf_bufferSize(h, n, n, a, n, lw);
}
cusolverStatus_t getrf_size(cusolverDnHandle_t h, int n, double* a, int* lw) {
  return cusolverDnDgetrf_bufferSize(h, n, n, a, n, lw);
}
cusolverStatus_t getrf(cusolverDnHandle_t h, int n, float* a, float* w, int* piv, int* info) {
  return cusolverDnSgetrf(h, n, n, a, n, w, piv, info);
}
cusolverStatus_t getrf(cusolverDnHandle_t h, int n, double* a, double* w, int* piv, int* info) {
  return cusolverDnDgetrf(h, n, n, a, n, w, piv, info);
}
cusolverStatus_t getrs(cusolverDnHandle_t h, int n, int k, const float* a, const int* piv, float* b,
                       int* info) {
  return cusolverDnSgetrs(h, CUBLAS_OP_N, n, k, a, n, piv, b, n, info);
}
cusolverStatus_t getrs(cusolverDnHandle_t h, int n, int k, const double* a, const int* piv, double* b,
                       int* info) {
  return cusolverDnDgetrs(h, CUBLAS_OP_N, n, k, a, n, piv, b, n, info);
}
cusolverStatus_t syevd_size(cusolverDnHandle_t h, cusolverEigMode_t job, int n, const float* a,
                            const float* w, int* lw) {
  return cusolverDnSsyevd_bufferSize(h, job, CUBLAS_FILL_MODE_LOWER, n, a, n, w, lw);
}
cusolverStatus_t syevd_size(cusolverDnHandle_t h, cusolverEigMode_t job, int n, const double* a,
                            const double* w, int* lw) {
  return cusolverDnDsyevd_bufferSize(h, job, CUBLAS_FILL_MODE_LOWER, n, a, n, w, lw);
}
cusolverStatus_t syevd(cusolverDnHandle_t h, cusolverEigMode_t job, int n, float* a, float* w, float* work,
                       int lw, int* info) {
  return cusolverDnSsyevd(h, job, CUBLAS_FILL_MODE_LOWER, n, a, n, w, work, lw, info);
}
cusolverStatus_t syevd(cusolverDnHandle_t h, cusolverEigMode_t job, int n, double* a, double* w, double* work,
                       int lw, int* info) {
  return cusolverDnDsyevd(h, job, CUBLAS_FILL_MODE_LOWER, n, a, n, w, work, lw, info);
}

cusolverStatus_t geqrf_size(cusolverDnHandle_t h, int m, int n, float* a, int* lw) {
  return cusolverDnSgeqrf_bufferSize(h, m, n, a, m, lw);
}
cusolverStatus_t geqrf_size(cusolverDnHandle_t h, int m, int n, double* a, int* lw) {
  return cusolverDnDgeqrf_bufferSize(h, m, n, a, m, lw);
}
cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, float* a, float* tau, float* w, int lw,
                       int* info) {
  return cusolverDnSgeqrf(h, m, n, a, m, tau, w, lw, info);
}
cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, double* a, double* tau, double* w, int lw,
                       int* info) {
  return cusolverDnDgeqrf(h, m, n, a, m, tau, w, lw, info);
}
cusolverStatus_t orgqr_size(cusolverDnHandle_t h, int m, int n, int k, const float* a, const float* tau,
                            int* lw) {
  return cusolverDnSorgqr_bufferSize(h, m, n, k, a, m, tau, lw);
}
cusolverStatus_t orgqr_size(cusolverDnHandle_t h, int m, int n, int k, const double* a, const double* tau,
                            int* lw) {
  return cusolverDnDorgqr_bufferSize(h, m, n, k, a, m, tau, lw);
}
cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, float* a, const float* tau, float* w,
                       int lw, int* info) {
  return cusolverDnSorgqr(h, m, n, k, a, m, tau, w, lw, info);
}
cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, double* a, const double* tau, double* w,
                       int lw, int* info) {
  return cusolverDnDorgqr(h, m, n, k, a, m, tau, w, lw, info);
}
cusolverStatus_t gesvd_size(cusolverDnHandle_t h, int m, int n, float*, int* lw) {
  return cusolverDnSgesvd_bufferSize(h, m, n, lw);
}
cusolverStatus_t gesvd_size(cusolverDnHandle_t h, int m, int n, double*, int* lw) {
  return cusolverDnDgesvd_bufferSize(h, m, n, lw);
}
cusolverStatus_t gesvd(cusolverDnHandle_t h, signed char ju, signed char jv, int m, int n, float* a, float* s,
                       float* u, int ldu, float* vt, int ldvt, float* w, int lw, float* rw, int* info) {
  return cusolverDnSgesvd(h, ju, jv, m, n, a, m, s, u, ldu, vt, ldvt, w, lw, rw, info);
}
cusolverStatus_t gesvd(cusolverDnHandle_t h, signed char ju, signed char jv, int m, int n, double* a,
                       double* s, double* u, int ldu, double* vt, int ldvt, double* w, int lw, double* rw,
                       int* info) {
  return cusolverDnDgesvd(h, ju, jv, m, n, a, m, s, u, ldu, vt, ldvt, w, lw, rw, info);
}

// Matrix b of a batch (its last two dims), as a 2-D view.
DView matrix(const DView& v, int64_t b) {
  const int nb = v.rank() - 2;
  int64_t off = 0;
  for (int d = nb - 1; d >= 0; --d) {
    off += (b % v.shape[d]) * v.strides[d];
    b /= v.shape[d];
  }
  return DView{v.byte_ptr() + off * static_cast<int64_t>(dtype_size(v.dtype)),
               v.dtype,
               {v.shape[nb], v.shape[nb + 1]},
               {v.strides[nb], v.strides[nb + 1]}};
}

// An m x n column-major matrix at p (element (i, j) at j*m + i), and the row-major one.
DView column_major(void* p, DType t, int64_t m, int64_t n) { return DView{p, t, {m, n}, {1, m}}; }
DView row_major(void* p, DType t, int64_t m, int64_t n) { return DView{p, t, {m, n}, {n, 1}}; }

int read_info(const DeviceBuffer& info) {
  int h = 0;
  check(cudaMemcpyAsync(&h, info.get(), sizeof(int), cudaMemcpyDeviceToHost, context().s()), "copy info");
  synchronize();
  internal_check(h >= 0 && "cuSOLVER rejected an argument");
  return h;
}

// QR of one m x n matrix into the CPU's packing: Q (m x kq) then R (kq x n), both row-major,
// kq = min(m, n) reduced or m complete. x: an m x n scratch.
template <class T>
void qr(cusolverDnHandle_t h, int64_t mode, const DView& a, T* x, const DeviceBuffer& info, char* o,
        int64_t b) {
  const int64_t m = a.shape[0], n = a.shape[1], k = std::min(m, n), kq = mode == 1 ? m : k;
  const DType t = a.dtype;
  const size_t es = sizeof(T);
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  copy_view(a, column_major(x, t, m, n));
  DeviceBuffer tau(static_cast<size_t>(std::max<int64_t>(k, 1)) * es), qq(static_cast<size_t>(m * kq) * es);
  int lw = 0;
  check_solver(geqrf_size(h, mi, ni, x, &lw), "geqrf_bufferSize");
  {
    DeviceBuffer work(static_cast<size_t>(lw > 0 ? lw : 1) * es);
    check_solver(geqrf(h, mi, ni, x, static_cast<T*>(tau.get()), static_cast<T*>(work.get()), lw,
                       static_cast<int*>(info.get())),
                 "geqrf");
    if (read_info(info) > 0) user_error("linalg.qr: failed (matrix ", b + 1, " of the batch)");
  }
  const int64_t per = m * kq + kq * n;
  char* q = o + b * per * static_cast<int64_t>(es);
  char* r = q + m * kq * static_cast<int64_t>(es);
  // R: the upper triangle of the factored x's first kq rows (rows past m are zero).
  check(cudaMemsetAsync(r, 0, static_cast<size_t>(kq * n) * es, context().s()), "memset");
  for (int64_t i = 0; i < std::min(kq, m) && i < n; ++i)
    copy_view(DView{x + i * m + i, t, {n - i}, {m}},
              DView{r + (i * n + i) * static_cast<int64_t>(es), t, {n - i}, {1}});
  // Q from the reflectors (x's first min(kq, n) columns, contiguous column-major), kq columns.
  check(cudaMemsetAsync(qq.get(), 0, static_cast<size_t>(m * kq) * es, context().s()), "memset");
  check(cudaMemcpyAsync(qq.get(), x, static_cast<size_t>(m * std::min(kq, n)) * es, cudaMemcpyDeviceToDevice,
                        context().s()),
        "copy reflectors");
  T* qp = static_cast<T*>(qq.get());
  check_solver(orgqr_size(h, mi, static_cast<int>(kq), ki, qp, static_cast<T*>(tau.get()), &lw),
               "orgqr_bufferSize");
  DeviceBuffer work(static_cast<size_t>(lw > 0 ? lw : 1) * es);
  check_solver(orgqr(h, mi, static_cast<int>(kq), ki, qp, static_cast<T*>(tau.get()),
                     static_cast<T*>(work.get()), lw, static_cast<int*>(info.get())),
               "orgqr");
  if (read_info(info) > 0) user_error("linalg.qr: failed (matrix ", b + 1, " of the batch)");
  copy_view(column_major(qp, t, m, kq), row_major(q, t, m, kq));
}

// SVD of one m x n matrix into the CPU's packing: U (m x ucols), s (k), Vt (vrows x n), U and Vt
// only when mode (1 reduced: k columns / rows; 2 full: m, n). gesvd needs rows >= columns, so a
// wide matrix is factored as its transpose (A^T = U' S V'^T, so U = V' and Vt = U'^T).
template <class T>
void svd(cusolverDnHandle_t h, int64_t mode, const DView& a, T* x, const DeviceBuffer& info, char* o,
         int64_t b) {
  const int64_t m = a.shape[0], n = a.shape[1], k = std::min(m, n);
  const int64_t ucols = mode == 2 ? m : k, vrows = mode == 2 ? n : k;
  const DType t = a.dtype;
  const size_t es = sizeof(T);
  const bool wide = m < n;
  const int64_t rows = wide ? n : m, cols = wide ? m : n;  // what gesvd factors: rows >= cols
  const DView at{a.data, t, {n, m}, {a.strides[1], a.strides[0]}};
  copy_view(wide ? at : a, column_major(x, t, rows, cols));
  const signed char job = mode == 0 ? 'N' : mode == 2 ? 'A' : 'S';
  const int64_t lu = mode == 2 ? rows : k, lv = mode == 2 ? cols : k;  // gesvd's U columns, Vt rows
  DeviceBuffer s(static_cast<size_t>(k) * es), u(static_cast<size_t>(mode ? rows * lu : 1) * es),
      vt(static_cast<size_t>(mode ? lv * cols : 1) * es),
      rw(static_cast<size_t>(std::max<int64_t>(k, 1)) * es);
  int lw = 0;
  check_solver(gesvd_size(h, static_cast<int>(rows), static_cast<int>(cols), x, &lw), "gesvd_bufferSize");
  DeviceBuffer work(static_cast<size_t>(lw > 0 ? lw : 1) * es);
  check_solver(gesvd(h, job, job, static_cast<int>(rows), static_cast<int>(cols), x, static_cast<T*>(s.get()),
                     static_cast<T*>(u.get()), static_cast<int>(rows), static_cast<T*>(vt.get()),
                     static_cast<int>(mode ? lv : 1), static_cast<T*>(work.get()), lw,
                     static_cast<T*>(rw.get()), static_cast<int*>(info.get())),
               "gesvd");
  if (read_info(info) > 0) user_error("linalg.svd: did not converge (matrix ", b + 1, " of the batch)");
  const int64_t per = mode ? m * ucols + k + vrows * n : k;
  char* p = o + b * per * static_cast<int64_t>(es);
  if (mode) {
    // Tall: U is gesvd's U (column-major rows x lu). Wide: U(i, j) = V'^T(j, i), at i*lv + j.
    const DView us = wide ? DView{vt.get(), t, {m, ucols}, {lv, 1}} : column_major(u.get(), t, m, ucols);
    copy_view(us, row_major(p, t, m, ucols));
    p += m * ucols * static_cast<int64_t>(es);
  }
  check(cudaMemcpyAsync(p, s.get(), static_cast<size_t>(k) * es, cudaMemcpyDeviceToDevice, context().s()),
        "copy s");
  if (mode) {
    p += k * static_cast<int64_t>(es);
    // Tall: Vt is gesvd's (column-major lv x n). Wide: Vt(i, j) = U'(j, i), at i*rows + j.
    const DView vs = wide ? DView{u.get(), t, {vrows, n}, {rows, 1}} : column_major(vt.get(), t, vrows, n);
    copy_view(vs, row_major(p, t, vrows, n));
  }
  synchronize();  // s, u, vt and work are freed on return
}

template <class T>
void run_typed(Op op, int64_t mode, const std::vector<DView>& in, const DView& out, int64_t batch) {
  const DView& a = in[0];
  const int64_t m = a.shape[a.rank() - 2], n = a.shape[a.rank() - 1];
  user_check(m < (int64_t{1} << 31) && n < (int64_t{1} << 31) && m * n < (int64_t{1} << 31),
             "linalg: a matrix of more than 2^31 elements");
  const int ni = static_cast<int>(n);
  const DType t = a.dtype;
  const size_t es = sizeof(T);
  cusolverDnHandle_t h = solver();
  DeviceBuffer scratch(static_cast<size_t>(m * n) * es), info(sizeof(int)),
      piv(static_cast<size_t>(n) * sizeof(int));
  T* x = static_cast<T*>(scratch.get());
  char* o = out.byte_ptr();
  for (int64_t b = 0; b < batch; ++b) {
    int lw = 0;
    if (op == Op::Qr || op == Op::Svd) {
      (op == Op::Qr ? qr<T> : svd<T>)(h, mode, matrix(a, b), x, info, o, b);
      continue;
    }
    copy_view(matrix(a, b), column_major(x, t, n, n));
    switch (op) {
      case Op::Solve: {
        const int64_t k = in[1].shape.back();
        DeviceBuffer rhs(static_cast<size_t>(n * k) * es);
        copy_view(matrix(in[1], b), column_major(rhs.get(), t, n, k));
        check_solver(getrf_size(h, ni, x, &lw), "getrf_bufferSize");
        DeviceBuffer work(static_cast<size_t>(lw > 0 ? lw : 1) * es);
        check_solver(getrf(h, ni, x, static_cast<T*>(work.get()), static_cast<int*>(piv.get()),
                           static_cast<int*>(info.get())),
                     "getrf");
        if (read_info(info) > 0) user_error("linalg.solve: a is singular (matrix ", b + 1, " of the batch)");
        check_solver(getrs(h, ni, static_cast<int>(k), x, static_cast<const int*>(piv.get()),
                           static_cast<T*>(rhs.get()), static_cast<int*>(info.get())),
                     "getrs");
        copy_view(column_major(rhs.get(), t, n, k),
                  row_major(o + b * n * k * static_cast<int64_t>(es), t, n, k));
        break;
      }
      case Op::Cholesky: {
        check_solver(potrf_size(h, ni, x, &lw), "potrf_bufferSize");
        DeviceBuffer work(static_cast<size_t>(lw > 0 ? lw : 1) * es);
        check_solver(potrf(h, ni, x, static_cast<T*>(work.get()), lw, static_cast<int*>(info.get())),
                     "potrf");
        if (read_info(info) > 0)
          user_error("linalg.cholesky: a is not positive definite (matrix ", b + 1, " of the batch)");
        // L's columns (rows j.. of column j, contiguous in the scratch) into the zeroed output:
        // potrf leaves the upper part as it was.
        char* ob = o + b * n * n * static_cast<int64_t>(es);
        check(cudaMemsetAsync(ob, 0, static_cast<size_t>(n * n) * es, context().s()), "memset");
        for (int64_t j = 0; j < n; ++j)
          copy_view(DView{x + j * n + j, t, {n - j}, {1}},
                    DView{ob + (j * n + j) * static_cast<int64_t>(es), t, {n - j}, {n}});
        break;
      }
      case Op::Eigh: {
        const cusolverEigMode_t job = mode ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
        const int64_t per = mode ? n * (n + 1) : n;
        T* w = reinterpret_cast<T*>(o + b * per * static_cast<int64_t>(es));  // eigenvalues first
        check_solver(syevd_size(h, job, ni, x, w, &lw), "syevd_bufferSize");
        DeviceBuffer work(static_cast<size_t>(lw > 0 ? lw : 1) * es);
        check_solver(syevd(h, job, ni, x, w, static_cast<T*>(work.get()), lw, static_cast<int*>(info.get())),
                     "syevd");
        if (read_info(info) > 0)
          user_error("linalg.eigh: did not converge (matrix ", b + 1, " of the batch)");
        if (mode) copy_view(column_major(x, t, n, n), row_major(w + n, t, n, n));  // eigenvectors in columns
        break;
      }
      case Op::Det:
      case Op::Slogdet: {
        check_solver(getrf_size(h, ni, x, &lw), "getrf_bufferSize");
        DeviceBuffer work(static_cast<size_t>(lw > 0 ? lw : 1) * es), diag(static_cast<size_t>(n) * es);
        check_solver(getrf(h, ni, x, static_cast<T*>(work.get()), static_cast<int*>(piv.get()),
                           static_cast<int*>(info.get())),
                     "getrf");
        const int singular = read_info(info);
        copy_view(DView{x, t, {n}, {n + 1}}, dview(diag.get(), t, {n}));
        std::vector<T> d(static_cast<size_t>(n));
        std::vector<int> p(static_cast<size_t>(n));
        check(cudaMemcpyAsync(d.data(), diag.get(), static_cast<size_t>(n) * es, cudaMemcpyDeviceToHost,
                              context().s()),
              "copy diagonal");
        check(cudaMemcpyAsync(p.data(), piv.get(), static_cast<size_t>(n) * sizeof(int),
                              cudaMemcpyDeviceToHost, context().s()),
              "copy pivots");
        synchronize();
        // As the CPU: det = prod(diag(U)) * (-1)^(row swaps); an exact zero pivot gives 0.
        T swap = 1, sign = 1, logabs = 0, prod = 1;
        for (int64_t i = 0; i < n; ++i) {
          if (p[i] != i + 1) swap = -swap;
          if (d[i] < 0) sign = -sign;
          logabs += std::log(std::abs(d[i]));
          prod *= d[i];
        }
        T r[2];
        const int64_t per = op == Op::Det ? 1 : 2;
        if (op == Op::Det) r[0] = singular > 0 ? T(0) : swap * prod;
        else {
          r[0] = singular > 0 ? T(0) : swap * sign;
          r[1] = singular > 0 ? -std::numeric_limits<T>::infinity() : logabs;
        }
        check(cudaMemcpyAsync(o + b * per * static_cast<int64_t>(es), r, static_cast<size_t>(per) * es,
                              cudaMemcpyHostToDevice, context().s()),
              "copy det");
        synchronize();  // r lives on this stack
        break;
      }
      default: internal_check(false && "cuda run_linalg: not a cuSOLVER op");
    }
  }
}

}  // namespace

bool linalg_supported(Op op, DType dtype) {
  const bool op_ok = op == Op::Solve || op == Op::Cholesky || op == Op::Eigh || op == Op::Det ||
                     op == Op::Slogdet || op == Op::Qr || op == Op::Svd;
  return op_ok && (dtype == DType::F32 || dtype == DType::F64);
}

void run_linalg(Op op, const Attrs& attrs, const std::vector<DView>& in, const DView& out) {
  internal_check(!in.empty() && in[0].rank() >= 2 && out.is_contiguous() && out.dtype == in[0].dtype);
  internal_check(linalg_supported(op, out.dtype));
  int64_t batch = 1;
  for (int d = 0; d < in[0].rank() - 2; ++d) batch *= in[0].shape[d];
  const int64_t mode =
      (op == Op::Qr || op == Op::Svd || op == Op::Eigh) ? attrs_of<LinalgAttrs>(op, attrs).mode : 0;
  if (out.dtype == DType::F32) run_typed<float>(op, mode, in, out, batch);
  else run_typed<double>(op, mode, in, out, batch);
}

}  // namespace tapestry::cuda
