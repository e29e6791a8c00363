// The scans' combine steps, the sort order and the line geometry, shared by the CPU kernels
// (kernels/cpu/line.cpp) and the CUDA kernels (kernels/cuda/line.cu): one definition of the
// element math for both.
//   T acc = x[0]; for (i = 1..n-1) acc = ScanStep<Op::Cumsum>{}(acc, x[i]);
// Each is associative, which a split line (a carry from the blocks before) relies on: the GPU
// scans long lines in chunks joined by carries, the planner splits lines across ranks.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
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

// A contiguous tensor seen as lines along one dim: `outer` blocks of `n` elements `inner` apart.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  Lines() = default;
  template <class S> Lines(const S& s, int dim) {
    for (int d = 0; d < static_cast<int>(s.size()); ++d) (d < dim ? outer : d == dim ? n : inner) *= s[d];
  }
  TP_HD int64_t count() const { return outer * inner; }
  TP_HD int64_t start(int64_t l) const { return l / inner * n * inner + l % inner; }  // element 0 of line l
};

// The sort order as an unsigned key (for radix sorts): key(a) < key(b) exactly when less(a, b),
// and equal keys exactly for ties (-0 and +0, every NaN), so a stable radix sort of the keys is
// the stable sort by less. Floats: every NaN is the largest key, -0 is +0, negatives have all
// bits flipped, non-negatives the sign bit set. Signed ints: the sign bit flipped.
template <class T> constexpr int key_bits() { return std::is_same_v<T, bool> ? 8 : int(sizeof(T)) * 8; }
template <class T> TP_HD uint64_t order_key(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr U sign = U(1) << (sizeof(T) * 8 - 1);
    if (x != x) return uint64_t(~U(0));
    if (x == T(0)) x = T(0);
    U b;
    std::memcpy(&b, &x, sizeof b);
    return uint64_t((b & sign) ? U(~b) : U(b | sign));
  } else if constexpr (std::is_same_v<T, bool>) {
    return x ? 1 : 0;
  } else if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return uint64_t(U(U(x) ^ (U(1) << (sizeof(T) * 8 - 1))));
  } else {
    return uint64_t(x);
  }
}
// The key of a descending sort: the order reversed, ties (and their stable order) kept.
template <class T> TP_HD uint64_t descending_key(uint64_t key) {
  constexpr uint64_t mask = key_bits<T>() == 64 ? ~uint64_t(0) : (uint64_t(1) << key_bits<T>()) - 1;
  return ~key & mask;
}

// searchsorted: the 0-based insertion point of v into a[0], a[stride], ... (n elements, sorted
// by less): before equal elements (std::lower_bound), or after them when right (upper_bound).
template <class T> TP_HD int64_t bound(const T* a, int64_t stride, int64_t n, T v, bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const T m = a[mid * stride];
    if (right ? !less(v, m) : less(m, v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The stable sort of a short line (n <= kSmallSort) by insertion, one thread a line on the GPU:
// order[0..n) gets the 0-based positions in sorted order (descending: the order reversed, ties
// still in their original order), exactly as std::stable_sort by less.
constexpr int kSmallSort = 32;
template <class T> TP_HD void small_sort(const T* x, int64_t stride, int n, bool descending, int* order) {
  for (int i = 0; i < n; ++i) {
    const T v = x[i * stride];
    int j = i;
    // Move past every element v must precede (strictly): equal ones stay before v.
    while (j > 0 && (descending ? less(x[order[j - 1] * stride], v) : less(v, x[order[j - 1] * stride]))) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = i;
  }
}

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
// Cummax/cummin's running state: the extreme and its 0-based position. join(a, b) is the state
// after a line whose first part ended in a and whose second part alone ends in b (associative).
template <class T> struct Extreme {
  T v;
  int64_t at;
};
template <bool Max, class T> TP_HD Extreme<T> extreme_step(Extreme<T> acc, T x, int64_t i) {
  return takes_over<Max>(acc.v, x) ? Extreme<T>{x, i} : acc;
}
template <bool Max, class T> TP_HD Extreme<T> extreme_join(Extreme<T> a, Extreme<T> b) {
  return takes_over<Max>(a.v, b.v) ? b : a;
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
