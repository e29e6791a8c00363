// The scans' combine steps and the sort order, shared by the CPU kernels (kernels/cpu/line.cpp)
// and any device kernel: plain functors over one element type.
//   T acc = x[0]; for (i = 1..n-1) acc = ScanStep<Op::Cumsum>{}(acc, x[i]);
// Each is associative, which a split line (a carry from the blocks before) would rely on.
#pragma once

#include <cmath>
#include <type_traits>

#include "engine/ir/op.hpp"
#include "kernels/hd.hpp"

namespace tapestry::scan {

template <class T> TP_HD bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// The sort order: ascending, NaN after every number (numpy's); stable sorts keep ties in order.
template <class T> TP_HD bool less(T a, T b) { return !is_nan(a) && (is_nan(b) || a < b); }

template <Op op> struct ScanStep;
template <> struct ScanStep<Op::Cumsum> {
  template <class T> TP_HD T operator()(T acc, T x) const { return acc + x; }
};
template <> struct ScanStep<Op::Cumprod> {
  template <class T> TP_HD T operator()(T acc, T x) const { return acc * x; }
};
// Cummax/cummin: whether x takes over the running extreme. As torch: a tie moves to the later
// element, and the first NaN stays (NaN propagates).
template <bool Max, class T> TP_HD bool takes_over(T acc, T x) {
  if (is_nan(acc)) return false;
  return is_nan(x) || (Max ? x >= acc : x <= acc);
}
// log(e^a + e^b) without overflow; -inf is the identity, and NaN propagates.
template <> struct ScanStep<Op::Logcumsumexp> {
  TP_HD double operator()(double a, double b) const {
    if (a != a || b != b) return a + b;
    if (a == b) return a + 0.69314718055994530942;  // also inf + inf and -inf + -inf
    const double m = a > b ? a : b, d = a > b ? b - a : a - b;
    return m + std::log1p(std::exp(d));
  }
};

}  // namespace tapestry::scan
