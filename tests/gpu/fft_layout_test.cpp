// kernels/fft_layout.hpp, the host logic of the cuFFT path (kernels/cuda/fft.cpp), without a
// GPU: a naive DFT run line by line through the layout's calls, batches and strides must write
// every output element once and equal cpu::run_fft (FFTW) on the same contiguous blocks, for
// c2c, r2c and c2r along every dim, blocks of many short rows and of few long ones.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/fft_layout.hpp"

using namespace tapestry;

namespace {

using C = std::complex<double>;

C get(const View& v, int64_t i) {
  if (v.dtype == DType::F64) return v.ptr<double>()[i];
  return v.ptr<C>()[i];
}

// The layout's lines of in, each transformed naively into out's lines (kind: 0 c2c, 1 r2c, 2 c2r).
void through_layout(const View& in, const View& out, int dim, bool inverse, std::vector<int>& written) {
  const FftLayout l = fft_layout(in.shape, out.shape, dim);
  const int64_t li = in.shape[dim], lo = out.shape[dim], n = l.n;
  const double sign = inverse ? 1 : -1;
  for (int64_t c = 0; c < l.calls; ++c) {
    for (int64_t b = 0; b < l.batch; ++b) {
      const int64_t ib = c * l.in_step + b * l.in_dist, ob = c * l.out_step + b * l.out_dist;
      std::vector<C> x(static_cast<size_t>(n));  // the full line: a c2r input extended by symmetry
      for (int64_t j = 0; j < n; ++j) {
        if (j < li) x[j] = get(in, ib + j * l.stride);
        else x[j] = std::conj(get(in, ib + (n - j) * l.stride));
      }
      if (out.dtype == DType::F64) {  // c2r: the imaginary parts of X_0 (and X_n/2) are ignored
        x[0] = x[0].real();
        if (n % 2 == 0) x[n / 2] = x[n / 2].real();
      }
      for (int64_t k = 0; k < lo; ++k) {
        C acc = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double ang =
              sign * 2 * std::numbers::pi * static_cast<double>(j * k % n) / static_cast<double>(n);
          acc += x[j] * C(std::cos(ang), std::sin(ang));
        }
        const int64_t at = ob + k * l.stride;
        REQUIRE(at >= 0);
        REQUIRE(at < out.numel());
        ++written[at];
        if (out.dtype == DType::F64) out.ptr<double>()[at] = acc.real();
        else out.ptr<C>()[at] = acc;
      }
    }
  }
}

}  // namespace

TEST_CASE("gpu.fft_layout.lines_through_the_layout_equal_fftw") {
  const std::vector<Shape> shapes{{3, 5, 4}, {1, 6, 1}, {7, 2}, {2, 3, 8, 3}, {9}, {4, 1, 6}};
  for (const Shape& s : shapes) {
    for (int dim = 0; dim < static_cast<int>(s.size()); ++dim) {
      for (int kind = 0; kind < 3; ++kind) {
        for (bool inverse : {false, true}) {
          if ((kind == 1 && inverse) || (kind == 2 && !inverse)) continue;
          for (int64_t odd : {0, 1}) {
            if (kind != 2 && odd) continue;
            CAPTURE(shape_str(s));
            CAPTURE(dim);
            CAPTURE(kind);
            CAPTURE(inverse);
            Shape in_shape = s, out_shape = s;
            if (kind == 1) out_shape[dim] = s[dim] / 2 + 1;
            if (kind == 2) out_shape[dim] = 2 * (s[dim] - 1) + odd;
            if (out_shape[dim] < 1) continue;
            const DType it = kind == 1 ? DType::F64 : DType::C128, ot = kind == 2 ? DType::F64 : DType::C128;
            auto in = Value::alloc(it, in_shape);
            const int64_t m = numel(in_shape) * (it == DType::C128 ? 2 : 1);
            for (int64_t i = 0; i < m; ++i)
              reinterpret_cast<double*>(in->view().byte_ptr())[i] =
                  std::sin(0.7 * static_cast<double>(i)) + 0.1 * static_cast<double>(i % 3);
            auto want = Value::alloc(ot, out_shape), got = Value::alloc(ot, out_shape);
            cpu::run_fft(in->view(), want->view(), dim, inverse);
            std::vector<int> written(static_cast<size_t>(numel(out_shape)), 0);
            through_layout(in->view(), got->view(), dim, inverse, written);
            for (int64_t i = 0; i < numel(out_shape); ++i) {
              CAPTURE(i);
              CHECK(written[i] == 1);
              CHECK(std::abs(get(got->view(), i) - get(want->view(), i)) <=
                    1e-9 * (1 + std::abs(get(want->view(), i))));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("gpu.fft_layout.the_larger_batch_is_one_call") {
  const FftLayout rows = fft_layout({1000, 8}, {1000, 8}, 1);  // many short rows: one call
  CHECK(rows.calls == 1);
  CHECK(rows.batch == 1000);
  CHECK(rows.in_dist == 8);
  const FftLayout cols = fft_layout({8, 1000}, {8, 1000}, 0);  // columns side by side: one call
  CHECK(cols.calls == 1);
  CHECK(cols.batch == 1000);
  CHECK(cols.stride == 1000);
  const FftLayout r2c = fft_layout({3, 10, 4}, {3, 6, 4}, 1);
  CHECK(r2c.n == 10);
  CHECK(r2c.calls * r2c.batch == 12);
}
