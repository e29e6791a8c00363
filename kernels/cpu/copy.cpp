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

// A transpose (the source's unit-stride dim is not the destination's) goes in square
// tiles that fit in L1, so neither side is walked one element per cache line.
// Returns false when the layouts are not of that kind.
template <class E> bool copy_tiled(const E* src, E* dst, const std::vector<Dim<2>>& dims, int64_t n) {
  constexpr int64_t B = 64;
  const size_t r = dims.size();
  if (r < 2 || dims[r - 1].s[1] != 1 || dims[r - 1].s[0] == 1) return false;
  size_t si = r;
  for (size_t k = 0; k + 1 < r; ++k)
    if (dims[k].s[0] == 1) si = k;
  if (si == r || dims[si].n < B / 4 || dims[r - 1].n < B / 4) return false;
  std::vector<Dim<2>> outer;
  for (size_t k = 0; k + 1 < r; ++k)
    if (k != si) outer.push_back(dims[k]);
  if (outer.empty()) outer.push_back(Dim<2>{1, {0, 0}});
  const Dim<2> I = dims[si], J = dims[r - 1];
  const int64_t nbi = (I.n + B - 1) / B, nbj = (J.n + B - 1) / B, per = nbi * nbj;
  const int64_t ntasks = n / (I.n * J.n) * per;
  const int64_t grain = n * int64_t(sizeof(E)) < kParallelBytes ? ntasks : grain_for(ntasks, 4);
  parallel_for(ntasks, grain, [&](int64_t lo, int64_t hi, int) {
    for (int64_t t = lo; t < hi; ++t) {
      Odometer<2> it(outer, t / per);
      const E* s = src + it.off[0];
      E* d = dst + it.off[1];
      const int64_t i0 = (t % per) / nbj * B, j0 = (t % per) % nbj * B;
      const int64_t i1 = std::min(I.n, i0 + B), j1 = std::min(J.n, j0 + B);
      for (int64_t a = i0; a < i1; ++a)
        for (int64_t b = j0; b < j1; ++b) d[a * I.s[1] + b] = s[a + b * J.s[0]];
    }
  });
  return true;
}

template <class E> void copy_typed(const View& src, const View& dst, int64_t n) {
  const auto dims = coalesce<2>(src.shape, {&src.strides, &dst.strides});
  const E* s = reinterpret_cast<const E*>(src.byte_ptr());
  E* d = reinterpret_cast<E*>(dst.byte_ptr());
  if (copy_tiled(s, d, dims, n)) return;
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
    case 2: return copy_typed<uint16_t>(src, dst, n);
    case 4: return copy_typed<uint32_t>(src, dst, n);
    case 8: return copy_typed<uint64_t>(src, dst, n);
    case 16: return copy_typed<c128>(src, dst, n);  // c128: any 16-byte type moves it
  }
  internal_check(!"copy_view: unexpected element size");
}

}  // namespace tapestry::cpu
