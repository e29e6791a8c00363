// Device-side helpers shared by the kernel files: strided indexing and launch shapes.
//   Strided<2> s = make_strided<2>(out.shape, {&a.strides, &out.strides});  // coalesced dims
//   kernel<<<blocks_for(n), kThreads, 0, context().s()>>>(s, ...);  s.offset(i, 0) in the kernel
// A view's shape and strides travel to the kernel by value (kernel parameters, no copies), so a
// strided leaf costs no host-to-device transfer.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "engine/ir/error.hpp"
#include "engine/ir/shape.hpp"
#include "kernels/cpu/strided.hpp"
#include "kernels/cuda/runtime.hpp"

namespace tapestry::cuda {

constexpr int kMaxDims = 8;  // coalesced dims; views of higher rank are rare and checked
constexpr int kThreads = 256;

// Row-major dims and K operands' strides; offset(i, k) is operand k's element offset of flat i.
template <int K> struct Strided {
  int nd = 0;
  int64_t n[kMaxDims];
  int64_t s[K][kMaxDims];
  __host__ __device__ int64_t offset(int64_t flat, int k) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t i = flat % n[d];
      flat /= n[d];
      off += i * s[k][d];
    }
    return off;
  }
};

template <int K> Strided<K> make_strided(const Shape& shape, const std::array<const Strides*, K>& strides) {
  const auto dims = cpu::coalesce<K>(shape, strides);
  user_check(dims.size() <= size_t(kMaxDims), "CUDA kernels take views of at most ", kMaxDims,
             " non-mergeable dims, got ", dims.size());
  Strided<K> st;
  st.nd = static_cast<int>(dims.size());
  for (int d = 0; d < st.nd; ++d) {
    st.n[d] = dims[d].n;
    for (int k = 0; k < K; ++k) st.s[k][d] = dims[d].s[k];
  }
  return st;
}

// A grid-stride loop covers any n; the grid is capped so huge tensors do not need huge grids.
inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 * 4 ? 65535 * 4 : b));
}
#define TP_GRID_LOOP(i, n)                                                  \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

}  // namespace tapestry::cuda
