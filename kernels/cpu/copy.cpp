// copy_view: strided to strided copy of one dtype.
#include <algorithm>
#include <cstring>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/strided.hpp"

namespace tapestry::cpu {
namespace {

constexpr int64_t kParallelBytes = int64_t(1) << 20;  // below this one thread copies

template <class E>
void copy_range(const E* src, E* dst, const std::vector<Dim<2>>& dims, int64_t lo, int64_t hi) {
  Odometer<2> it(dims, lo);
  for (int64_t done = lo; done < hi;) {
    int64_t len = std::min(it.run_left(), hi - done);
    const int64_t ss = it.inner_stride(0), ds = it.inner_stride(1);
    const E* s = src + it.off[0];
    E* d = dst + it.off[1];
    if (ss == 1 && ds == 1) {
      std::memcpy(d, s, len * sizeof(E));
    } else if (ds == 1) {
      for (int64_t i = 0; i < len; ++i) d[i] = s[i * ss];
    } else {
      for (int64_t i = 0; i < len; ++i) d[i * ds] = s[i * ss];
    }
    done += len;
    it.advance(len);
  }
}

template <class E>
void copy_typed(const View& src, const View& dst, int64_t n) {
  const auto dims = coalesce<2>(src.shape, {&src.strides, &dst.strides});
  const E* s = reinterpret_cast<const E*>(src.byte_ptr());
  E* d = reinterpret_cast<E*>(dst.byte_ptr());
  const int64_t bytes = n * static_cast<int64_t>(sizeof(E));
  const int64_t grain = bytes < kParallelBytes ? n : grain_for(n, int64_t(1) << 15);
  parallel_for(n, grain, [&](int64_t lo, int64_t hi, int) { copy_range(s, d, dims, lo, hi); });
}

}  // namespace

void copy_view(const View& src, const View& dst) {
  internal_check(src.shape == dst.shape && src.dtype == dst.dtype);
  const int64_t n = src.numel();
  if (n == 0) return;
  switch (dtype_size(src.dtype)) {
    case 1: return copy_typed<uint8_t>(src, dst, n);
    case 4: return copy_typed<uint32_t>(src, dst, n);
    case 8: return copy_typed<uint64_t>(src, dst, n);
  }
  internal_check(!"copy_view: unexpected element size");
}

}  // namespace tapestry::cpu
