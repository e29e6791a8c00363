// Index arithmetic shared by the CPU and CUDA gather/scatter kernels (kernels/cpu/index.cpp),
// so the CPU tests check what a GPU would compute.
//   index_position(3, 5) == 2;  index_position(-1, 5) == 4;  index_position(6, 5) == -1
#pragma once

#include <cstdint>

#include "kernels/hd.hpp"

namespace tapestry::fn {

// The 0-based position of a 1-based index value v along a dim of `size` (a negative v counts
// from the end, -1 the last, as Lua's string.sub), or -1 when v is 0 or out of range.
TP_HD inline int64_t index_position(int64_t v, int64_t size) {
  const int64_t p = v > 0 ? v - 1 : v + size;
  return v != 0 && p >= 0 && p < size ? p : -1;
}

// What a scatter does with the element it lands on: replace it, or add to it.
struct ScatterSet {
  template <class T> TP_HD void operator()(T& dst, T v) const { dst = v; }
};
struct ScatterAccumulate {
  template <class T> TP_HD void operator()(T& dst, T v) const { dst = static_cast<T>(dst + v); }
};

}  // namespace tapestry::fn
