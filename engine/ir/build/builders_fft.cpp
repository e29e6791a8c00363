// Builders for tp.fft: numpy.fft over the Fft op, one dim at a time.
//   NodeRef y = build::fft(x, 1, std::nullopt, FftNorm::Backward, /*inverse=*/false);
//   NodeRef r = build::irfft(build::rfft(x, 0, {}, FftNorm::Ortho), 0, {}, FftNorm::Ortho);  // x again
// The Fft op is a Line op: it reads whole lines along its dim, so along a sharded dim the plan
// moves the lines together first (an all-to-all), and costs that move (engine/poly/signature_of).
// Normalization is a scaling after the unnormalized transform; rfft is the op on the real input
// (r2c: the n/2+1 non-negative frequencies), irfft the op with a real output (c2r: n real values
// from the n/2+1 frequencies of a Hermitian line).
#include <cmath>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

// numpy 2's result types: f64, integers and bools give c128, f32 (and f16, bf16) c64.
DType fft_dtype(DType t) {
  if (is_complex(t)) return t;
  return (t == DType::F64 || !is_inexact(t)) ? DType::C128 : DType::C64;
}

void check_fft_dim(const NodeRef& x, int dim) {
  user_check(!x->shape.empty(), "x must have at least 1 dimension, got a scalar {}");
  internal_check(dim >= 0 && dim < static_cast<int>(x->shape.size()));
}

// x cut or zero-padded at the end of dim to n elements.
NodeRef resized(const NodeRef& x, int dim, int64_t n) {
  const int64_t m = x->shape[dim];
  if (n == m) return x;
  if (n < m) return narrow(x, dim, 0, n);
  std::vector<int64_t> before(x->shape.size(), 0), after(x->shape.size(), 0);
  after[dim] = n - m;
  return pad(x, before, after, PadMode::Constant, 0.0);
}

// r, the unnormalized transform of lines of length len, scaled as norm asks.
NodeRef normalized(const NodeRef& r, int64_t len, FftNorm norm, bool inverse) {
  double scale = 1;
  if (norm == FftNorm::Ortho) scale = 1 / std::sqrt(static_cast<double>(len));
  else if ((norm == FftNorm::Backward) == inverse) scale = 1 / static_cast<double>(len);
  return scale == 1 ? r : binary(Op::Mul, r, Operand::number(scale));
}

}  // namespace

NodeRef fft(const NodeRef& x, int dim, std::optional<int64_t> n, FftNorm norm, bool inverse) {
  check_fft_dim(x, dim);
  const int64_t len = n.value_or(x->shape[dim]);
  user_check(len >= 1, "n must be at least 1, got ", len);
  const DType c = fft_dtype(x->dtype);
  const NodeRef xc = resized(cast(x, c), dim, len);
  NodeRef r = op_node(Op::Fft, {xc}, LineAttrs{dim, inverse, false, false}.encode(), xc->shape, c);
  return normalized(r, len, norm, inverse);
}

NodeRef rfft(const NodeRef& x, int dim, std::optional<int64_t> n, FftNorm norm) {
  check_fft_dim(x, dim);
  user_check(!is_complex(x->dtype), "x is ", dtype_name(x->dtype),
             ": rfft takes real input (use tp.fft.fft)");
  const int64_t len = n.value_or(x->shape[dim]);
  user_check(len >= 1, "n must be at least 1, got ", len);
  // The Fft op of a real input is FFTW's r2c: the n/2+1 non-negative frequencies, half the work
  // of the complex transform.
  const DType c = fft_dtype(x->dtype);
  const NodeRef xr = resized(cast(x, real_dtype(c)), dim, len);
  Shape half = xr->shape;
  half[dim] = len / 2 + 1;
  const NodeRef r = op_node(Op::Fft, {xr}, LineAttrs{dim, false, false, false}.encode(), half, c);
  return normalized(r, len, norm, false);
}

NodeRef irfft(const NodeRef& x, int dim, std::optional<int64_t> n, FftNorm norm) {
  check_fft_dim(x, dim);
  const int64_t m = x->shape[dim];
  const int64_t len = n.value_or(2 * (m - 1));
  user_check(len >= 1, "n must be at least 1, got ", len,
             n ? "" : " (the output length 2 * (m - 1) of an input of length m = 1; pass opts.n)");
  // The half spectrum X[0 .. len/2] (the rest is X[k] = conj(X[len - k])) through FFTW's c2r:
  // the imaginary parts of X[0] (and X[len/2]) are ignored, as numpy's c2r transform does.
  const DType c = fft_dtype(x->dtype);
  const NodeRef half = resized(cast(x, c), dim, len / 2 + 1);
  Shape real_shape = half->shape;
  real_shape[dim] = len;
  const NodeRef r =
      op_node(Op::Fft, {half}, LineAttrs{dim, true, false, false}.encode(), real_shape, real_dtype(c));
  return normalized(r, len, norm, true);
}

NodeRef fftfreq(int64_t n, double d, bool half) {
  user_check(n >= 1, "n must be at least 1, got ", n);
  user_check(std::isfinite(d) && d != 0, "d must be finite and nonzero, got ", d);
  const double scale = 1 / (d * static_cast<double>(n));
  if (half)
    return binary(Op::Mul, cast(arange_int(0, n / 2, 1, DType::I64), DType::F64), Operand::number(scale));
  // 0, 1, ..., (n-1)/2, then -(n/2), ..., -1
  const NodeRef k = arange_int(0, n - 1, 1, DType::I64);
  const NodeRef wrapped = where(binary(Op::Gt, k, Operand::integer_number((n - 1) / 2)),
                                binary(Op::Sub, k, Operand::integer_number(n)), k);
  return binary(Op::Mul, cast(wrapped, DType::F64), Operand::number(scale));
}

NodeRef fftshift(const NodeRef& x, const std::vector<int>& dims, bool inverse) {
  NodeRef y = x;
  for (int d : dims) {
    internal_check(d >= 0 && d < static_cast<int>(x->shape.size()));
    const int64_t s = x->shape[d] / 2;
    y = roll(y, inverse ? -s : s, d);
  }
  return y;
}

}  // namespace tapestry::build
