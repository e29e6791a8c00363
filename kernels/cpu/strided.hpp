// Walking strided views: dims coalesced across several operands and an odometer.
//   auto dims = coalesce<2>(shape, {&src.strides, &dst.strides});   // fewest, longest dims
//   Odometer<2> it(dims, /*flat=*/start);  it.off[0], it.off[1];  it.advance(run);
//   dtype_of<float>() == DType::F32
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry::cpu {

template <class T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  else if constexpr (std::is_same_v<T, f16>) return DType::F16;
  else if constexpr (std::is_same_v<T, bf16>) return DType::BF16;
  else if constexpr (std::is_same_v<T, float>) return DType::F32;
  else if constexpr (std::is_same_v<T, double>) return DType::F64;
  else if constexpr (std::is_same_v<T, c64>) return DType::C64;
  else if constexpr (std::is_same_v<T, c128>) return DType::C128;
  else static_assert(sizeof(T) == 0, "no dtype for this C++ type");
}

// One loop dimension of K operands: extent and each operand's stride (in elements).
template <int K> struct Dim {
  int64_t n;
  std::array<int64_t, K> s;
};

// Drops extent-1 dims and merges neighbours that every operand walks as one run, so
// a contiguous operand becomes one dim. Keeps row-major order; never empty. Writes into
// `out` (its memory is reused: a loop of small maps coalesces thousands of times a second).
template <int K>
void coalesce(const Shape& shape, const std::array<const Strides*, K>& strides, std::vector<Dim<K>>& out) {
  out.clear();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {
      out.assign(1, Dim<K>{0, {}});
      return;
    }
    if (shape[d] == 1) continue;
    Dim<K> x{shape[d], {}};
    for (int k = 0; k < K; ++k) x.s[k] = (*strides[k])[d];
    if (!out.empty()) {
      Dim<K>& prev = out.back();
      bool merge = true;
      for (int k = 0; k < K; ++k) merge = merge && prev.s[k] == x.s[k] * x.n;
      if (merge) {
        prev.n *= x.n;
        prev.s = x.s;
        continue;
      }
    }
    out.push_back(x);
  }
  if (out.empty()) out.push_back(Dim<K>{1, {}});
}

template <int K>
std::vector<Dim<K>> coalesce(const Shape& shape, const std::array<const Strides*, K>& strides) {
  std::vector<Dim<K>> out;
  coalesce<K>(shape, strides, out);
  return out;
}

// Row-major position in a set of dims, with each operand's element offset. advance()
// moves along the innermost dim and carries into the outer ones.
template <int K> class Odometer {
 public:
  Odometer(const std::vector<Dim<K>>& dims, int64_t flat) : dims_(dims), idx_(dims.size(), 0) {
    off.fill(0);
    for (size_t d = dims_.size(); d-- > 0;) {
      int64_t n = dims_[d].n;
      int64_t i = n > 0 ? flat % n : 0;
      flat = n > 0 ? flat / n : 0;
      idx_[d] = i;
      for (int k = 0; k < K; ++k) off[k] += i * dims_[d].s[k];
    }
  }
  // Elements left in the current innermost run.
  int64_t run_left() const { return dims_.back().n - idx_.back(); }
  int64_t inner_stride(int k) const { return dims_.back().s[k]; }
  // Moves `len` <= run_left() elements on.
  void advance(int64_t len) {
    size_t d = dims_.size() - 1;
    idx_[d] += len;
    for (int k = 0; k < K; ++k) off[k] += len * dims_[d].s[k];
    while (idx_[d] == dims_[d].n && d > 0) {
      for (int k = 0; k < K; ++k) off[k] -= dims_[d].n * dims_[d].s[k];
      idx_[d] = 0;
      --d;
      ++idx_[d];
      for (int k = 0; k < K; ++k) off[k] += dims_[d].s[k];
    }
  }
  std::array<int64_t, K> off;

 private:
  const std::vector<Dim<K>>& dims_;
  std::vector<int64_t> idx_;
};

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace tapestry::cpu
