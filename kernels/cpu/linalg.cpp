// run_linalg: LAPACK (LAPACKE over OpenBLAS) on each matrix of a batch.
//   run_linalg(Op::Solve, 0, {a, b}, out);   // out[..] = solve(a[..], b[..]) per batch element
// Every matrix is copied into a contiguous row-major scratch first: inputs may be strided views,
// and LAPACK overwrites what it factors. The output's last dim packs the parts of a
// factorization in the order engine/ir/build/builders_linalg.cpp unpacks them.
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::cpu {

namespace {

using Lint = lapack_int;

// LAPACKE's s/d routines under one name.
inline Lint gesv(Lint n, Lint k, float* a, Lint* p, float* b) {
  return LAPACKE_sgesv(LAPACK_ROW_MAJOR, n, k, a, n, p, b, k);
}
inline Lint gesv(Lint n, Lint k, double* a, Lint* p, double* b) {
  return LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, k, a, n, p, b, k);
}
inline Lint potrf(Lint n, float* a) { return LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', n, a, n); }
inline Lint potrf(Lint n, double* a) { return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n); }
inline Lint getrf(Lint n, float* a, Lint* p) { return LAPACKE_sgetrf(LAPACK_ROW_MAJOR, n, n, a, n, p); }
inline Lint getrf(Lint n, double* a, Lint* p) { return LAPACKE_dgetrf(LAPACK_ROW_MAJOR, n, n, a, n, p); }
inline Lint geqrf(Lint m, Lint n, float* a, Lint lda, float* tau) {
  return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
}
inline Lint geqrf(Lint m, Lint n, double* a, Lint lda, double* tau) {
  return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
}
inline Lint orgqr(Lint m, Lint n, Lint k, float* a, Lint lda, const float* tau) {
  return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
}
inline Lint orgqr(Lint m, Lint n, Lint k, double* a, Lint lda, const double* tau) {
  return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
}
inline Lint gesdd(char job, Lint m, Lint n, float* a, float* s, float* u, Lint ldu, float* vt, Lint ldvt) {
  return LAPACKE_sgesdd(LAPACK_ROW_MAJOR, job, m, n, a, n, s, u, ldu, vt, ldvt);
}
inline Lint gesdd(char job, Lint m, Lint n, double* a, double* s, double* u, Lint ldu, double* vt,
                  Lint ldvt) {
  return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, job, m, n, a, n, s, u, ldu, vt, ldvt);
}
inline Lint syevd(char job, Lint n, float* a, float* w) {
  return LAPACKE_ssyevd(LAPACK_ROW_MAJOR, job, 'L', n, a, n, w);
}
inline Lint syevd(char job, Lint n, double* a, double* w) {
  return LAPACKE_dsyevd(LAPACK_ROW_MAJOR, job, 'L', n, a, n, w);
}

// Batch element `b` of a view whose last two dims are a matrix, copied row-major.
template <class T> std::vector<T> load(const View& v, int64_t b) {
  const int nb = v.rank() - 2;
  int64_t off = 0;
  for (int d = nb - 1; d >= 0; --d) {
    off += (b % v.shape[d]) * v.strides[d];
    b /= v.shape[d];
  }
  const int64_t m = v.shape[nb], n = v.shape[nb + 1];
  std::vector<T> out(static_cast<size_t>(m * n));
  const T* p = v.ptr<T>() + off;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) out[i * n + j] = p[i * v.strides[nb] + j * v.strides[nb + 1]];
  return out;
}

void check_info(Lint info, const char* what, int64_t b) {
  internal_check(info >= 0 && "LAPACK rejected an argument");
  if (info > 0) user_error(what, " (matrix ", b + 1, " of the batch)");
}

template <class T> void run_typed(Op op, int64_t mode, const std::vector<View>& in, T* out, int64_t batch) {
  const View& a = in[0];
  const int nb = a.rank() - 2;
  const Lint m = static_cast<Lint>(a.shape[nb]), n = static_cast<Lint>(a.shape[nb + 1]);
  const Lint k = std::min(m, n);
  int64_t per = 0;  // output elements per batch element
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<T> x = load<T>(a, b);
    switch (op) {
      case Op::Solve: {
        const Lint cols = static_cast<Lint>(in[1].shape.back());
        std::vector<T> rhs = load<T>(in[1], b);
        std::vector<Lint> piv(n);
        check_info(gesv(n, cols, x.data(), piv.data(), rhs.data()), "linalg.solve: a is singular", b);
        per = static_cast<int64_t>(n) * cols;
        std::copy(rhs.begin(), rhs.end(), out + b * per);
        break;
      }
      case Op::Cholesky: {
        check_info(potrf(n, x.data()), "linalg.cholesky: a is not positive definite", b);
        for (Lint i = 0; i < n; ++i)
          for (Lint j = i + 1; j < n; ++j) x[i * n + j] = 0;  // potrf leaves the upper part as it was
        per = static_cast<int64_t>(n) * n;
        std::copy(x.begin(), x.end(), out + b * per);
        break;
      }
      case Op::Det:
      case Op::Slogdet: {
        std::vector<Lint> piv(n);
        const Lint info = getrf(n, x.data(), piv.data());
        internal_check(info >= 0);
        // det = prod(diag(U)) * (-1)^(row swaps); an exact zero pivot (info > 0) gives 0.
        T swap = 1, sign = 1, logabs = 0, prod = 1;
        for (Lint i = 0; i < n; ++i) {
          const T d = x[i * n + i];
          if (piv[i] != i + 1) swap = -swap;
          if (d < 0) sign = -sign;
          logabs += std::log(std::abs(d));
          prod *= d;
        }
        if (op == Op::Det) {
          per = 1;
          out[b] = info > 0 ? T(0) : swap * prod;
        } else {
          per = 2;
          out[2 * b] = info > 0 ? T(0) : swap * sign;
          out[2 * b + 1] = info > 0 ? -std::numeric_limits<T>::infinity() : logabs;
        }
        break;
      }
      case Op::Qr: {
        const Lint kq = mode == 1 ? m : k;  // Q's columns
        std::vector<T> tau(k);
        check_info(geqrf(m, n, x.data(), n, tau.data()), "linalg.qr: failed", b);
        per = static_cast<int64_t>(m) * kq + static_cast<int64_t>(kq) * n;
        T* q = out + b * per;
        T* r = q + static_cast<int64_t>(m) * kq;
        for (Lint i = 0; i < kq; ++i)
          for (Lint j = 0; j < n; ++j) r[i * n + j] = (j >= i && i < m) ? x[i * n + j] : T(0);
        std::vector<T> qq(static_cast<size_t>(m) * kq, T(0));
        for (Lint i = 0; i < m; ++i)
          for (Lint j = 0; j < std::min(kq, n); ++j) qq[i * kq + j] = x[i * n + j];
        check_info(orgqr(m, kq, k, qq.data(), kq, tau.data()), "linalg.qr: failed", b);
        std::copy(qq.begin(), qq.end(), q);
        break;
      }
      case Op::Svd: {
        const Lint ucols = mode == 2 ? m : k, vrows = mode == 2 ? n : k;
        const char job = mode == 0 ? 'N' : (mode == 2 ? 'A' : 'S');
        std::vector<T> s(k), u(mode ? static_cast<size_t>(m) * ucols : 1),
            vt(mode ? static_cast<size_t>(vrows) * n : 1);
        // With job 'N', u and vt are never touched, but LAPACKE still checks ldu/ldvt.
        check_info(gesdd(job, m, n, x.data(), s.data(), u.data(), mode ? ucols : m, vt.data(), n),
                   "linalg.svd: did not converge", b);
        per = mode ? static_cast<int64_t>(u.size() + s.size() + vt.size()) : k;
        T* o = out + b * per;
        if (mode) o = std::copy(u.begin(), u.end(), o);
        o = std::copy(s.begin(), s.end(), o);
        if (mode) std::copy(vt.begin(), vt.end(), o);
        break;
      }
      case Op::Eigh: {
        std::vector<T> w(n);
        check_info(syevd(mode ? 'V' : 'N', n, x.data(), w.data()), "linalg.eigh: did not converge", b);
        per = mode ? static_cast<int64_t>(n) * (n + 1) : n;
        T* o = std::copy(w.begin(), w.end(), out + b * per);
        if (mode) std::copy(x.begin(), x.end(), o);
        break;
      }
      default: internal_check(false && "run_linalg: not a linalg op");
    }
  }
}

}  // namespace

void run_linalg(Op op, const Attrs& attrs, const std::vector<View>& in, const View& out) {
  if (op == Op::CheckDeclared) return run_check_declared(attrs, in.at(0), out);
  internal_check(!in.empty() && in[0].rank() >= 2 && out.is_contiguous() && out.dtype == in[0].dtype);
  int64_t batch = 1;
  for (int d = 0; d < in[0].rank() - 2; ++d) batch *= in[0].shape[d];
  const int64_t mode =
      (op == Op::Qr || op == Op::Svd || op == Op::Eigh) ? attrs_of<LinalgAttrs>(op, attrs).mode : 0;
  if (out.dtype == DType::F32) run_typed<float>(op, mode, in, out.ptr<float>(), batch);
  else if (out.dtype == DType::F64) run_typed<double>(op, mode, in, out.ptr<double>(), batch);
  else internal_check(false && "run_linalg: f32 or f64 only");
}

}  // namespace tapestry::cpu
