// run_fft against a naive DFT: r2c (real lines, their n/2+1 frequencies) and c2c, along every
// dim of a strided (permuted) input, in f32 and f64; plans are cached, so a second block of the
// same layout, and one whose arrays are aligned differently, must still transform its own data.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "helpers.hpp"

using namespace tapestry;

namespace {

// The value at multi-index idx of a view, as a complex double (a real view's imaginary part 0).
std::complex<double> at(const View& v, const std::vector<int64_t>& idx) {
  int64_t o = 0;
  for (int d = 0; d < v.rank(); ++d) o += idx[d] * v.strides[d];
  switch (v.dtype) {
    case DType::F32: return v.ptr<float>()[o];
    case DType::F64: return v.ptr<double>()[o];
    case DType::C64: return std::complex<double>(v.ptr<std::complex<float>>()[o]);
    default: return v.ptr<std::complex<double>>()[o];
  }
}

// x's DFT along dim (e^(-i) forward), the first `keep` frequencies, compared with out.
void check_dft(const View& x, const View& out, int dim, bool inverse, double tol) {
  const int64_t n = x.shape[dim];
  std::vector<int64_t> idx(out.rank(), 0);
  const double sign = inverse ? 1 : -1;
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t r = flat;
    for (int d = out.rank() - 1; d >= 0; --d) {
      idx[d] = r % out.shape[d];
      r /= out.shape[d];
    }
    std::complex<double> want = 0;
    std::vector<int64_t> j = idx;
    for (int64_t t = 0; t < n; ++t) {
      j[dim] = t;
      const double ang =
          sign * 2 * std::numbers::pi * static_cast<double>(t * idx[dim] % n) / static_cast<double>(n);
      want += at(x, j) * std::complex<double>(std::cos(ang), std::sin(ang));
    }
    const std::complex<double> got = at(out, idx);
    CHECK_MESSAGE(std::abs(got - want) <= tol * (1 + std::abs(want)), flat, ": ", got.real(), "+", got.imag(),
                  "i vs ", want.real(), "+", want.imag(), "i");
  }
}

// A {4, 6, 5} tensor of type t seen as {5, 4, 6} through a permutation, starting `skew` elements
// into its buffer (so its alignment differs from a fresh allocation's).
View input(DType t, int64_t skew, int seed, std::shared_ptr<Value>& keep) {
  keep = Value::alloc(t, {4 * 6 * 5 + skew});
  const int64_t m = (is_complex(t) ? 2 : 1) * (4 * 6 * 5 + skew);
  for (int64_t i = 0; i < m; ++i) {
    const double v = std::sin(0.37 * static_cast<double>(i + seed)) + static_cast<double>((i * 7) % 5);
    if (t == DType::F32 || t == DType::C64)
      reinterpret_cast<float*>(keep->view().byte_ptr())[i] = static_cast<float>(v);
    else reinterpret_cast<double*>(keep->view().byte_ptr())[i] = v;
  }
  View v = keep->view().sliced({skew}, {1}, {4 * 6 * 5});
  REQUIRE(v.try_reshape({4, 6, 5}, v));
  return v.permuted({2, 0, 1});
}

}  // namespace

TEST_CASE("kernels.cpu.fft.r2c_and_c2c_equal_the_dft_along_every_dim") {
  for (DType t : {DType::F32, DType::F64, DType::C64, DType::C128}) {
    const bool r2c = !is_complex(t);
    const DType ct = t == DType::F32 ? DType::C64 : t == DType::F64 ? DType::C128 : t;
    const double tol = (t == DType::F32 || t == DType::C64) ? 1e-5 : 1e-12;
    for (int dim = 0; dim < 3; ++dim) {
      for (bool inverse : {false, true}) {
        if (r2c && inverse) continue;
        // Three blocks of one layout: a fresh plan, the cached one on new data, and the cached
        // one's key missed by an array one element off (another alignment).
        for (auto [skew, seed] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 3}}) {
          CAPTURE(dtype_name(t));
          CAPTURE(dim);
          CAPTURE(inverse);
          CAPTURE(skew);
          std::shared_ptr<Value> keep;
          const View x = input(t, skew, seed, keep);
          Shape s = x.shape;
          if (r2c) s[dim] = s[dim] / 2 + 1;
          auto out = Value::alloc(ct, s);
          cpu::run_fft(x, out->view(), dim, inverse);
          check_dft(x, out->view(), dim, inverse, tol);
        }
      }
    }
  }
}

// c2r (irfft): a half spectrum X of h = n/2+1 frequencies along dim to n reals,
// y_j = sum_k c_k Re(X_k e^(2 pi i jk/n)) with c_k = 2 for the frequencies that stand for their
// mirror too and 1 for X_0 (and X_(n/2), n even): their imaginary parts are ignored, as numpy's.
TEST_CASE("kernels.cpu.fft.c2r_equals_the_hermitian_inverse_dft_along_every_dim") {
  for (DType t : {DType::C64, DType::C128}) {
    const DType rt = t == DType::C64 ? DType::F32 : DType::F64;
    const double tol = t == DType::C64 ? 1e-5 : 1e-12;
    for (int dim = 0; dim < 3; ++dim) {
      for (int64_t odd : {0, 1}) {
        for (auto [skew, seed] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 3}}) {
          CAPTURE(dtype_name(t));
          CAPTURE(dim);
          CAPTURE(odd);
          CAPTURE(skew);
          std::shared_ptr<Value> keep;
          const View x = input(t, skew, seed, keep);  // {5, 4, 6}, strided
          const int64_t h = x.shape[dim], n = 2 * (h - 1) + odd;
          Shape s = x.shape;
          s[dim] = n;
          auto out = Value::alloc(rt, s);
          cpu::run_fft(x, out->view(), dim, true);
          const View y = out->view();
          std::vector<int64_t> idx(3, 0);
          for (int64_t flat = 0; flat < y.numel(); ++flat) {
            int64_t r = flat;
            for (int d = 2; d >= 0; --d) idx[d] = r % s[d], r /= s[d];
            double want = 0, mag = 0;
            std::vector<int64_t> k = idx;
            for (int64_t f = 0; f < h; ++f) {
              k[dim] = f;
              const double c = (f == 0 || 2 * f == n) ? 1 : 2;
              const double ang =
                  2 * std::numbers::pi * static_cast<double>(f * idx[dim] % n) / static_cast<double>(n);
              want += c * (at(x, k) * std::complex<double>(std::cos(ang), std::sin(ang))).real();
              mag += c * std::abs(at(x, k));
            }
            const double got = at(y, idx).real();
            CHECK_MESSAGE(std::abs(got - want) <= tol * (1 + mag), flat, ": ", got, " vs ", want);
          }
          // The input is a node's value: c2r must leave it as it was.
          std::shared_ptr<Value> again;
          const View x2 = input(t, skew, seed, again);
          for (int64_t i = 0; i < 4 * 6 * 5; ++i) {
            const std::vector<int64_t> j{i % 5, (i / 5) % 4, i / 20};
            CHECK(at(x, j) == at(x2, j));
          }
        }
      }
    }
  }
}
