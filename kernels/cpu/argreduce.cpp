// run_argreduce: 1-based index of the first maximum / minimum, along a dim or flat.
// NaN counts as the extreme and its first occurrence wins, as numpy.argmax.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>
#include <memory>
#include <type_traits>

#include "engine/ir/error.hpp"
#include "kernels/cpu/avx2_lanes.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/strided.hpp"
#include "kernels/monoid.hpp"

namespace tapestry::cpu {
namespace {

constexpr int64_t kBlock = 256;
constexpr int64_t kSerialWork = 1 << 15;
constexpr int64_t kChunk = 1 << 16;  // flat scans: elements per partial result

template <bool Max, class T> struct Best {
  T v;
  int64_t i;  // 0-based
};

#if defined(__AVX2__)
// A contiguous f32 or f64 run in two passes, at about a read pass's speed (one compare and
// branch per element ran 4.6 times slower): its extreme value, or NaN if it holds one (only
// the value: which of +0 and -0 came first, or which NaN, the second pass settles), then the
// first element equal to it (the first NaN). The same element as the scalar scan: the first
// strictly better than all before it is the first equal to the extreme, +0 and -0 being equal.
constexpr int64_t kAheadBytes = 16 << 10;  // the first pass's prefetch distance, as reduce.cpp's

template <bool Max, class T> T extreme_value(const T* p, int64_t n) {
  using A = Lanes<T>;
  constexpr int kN = A::kN;
  const T start = Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  typename A::V m0 = A::splat(start), m1 = m0, nan = A::splat(0);
  const char* ahead = reinterpret_cast<const char*>(p) + kAheadBytes;
  int64_t i = 0;
  for (; i + 2 * kN <= n; i += 2 * kN) {
    __builtin_prefetch(ahead + i * sizeof(T));
    const typename A::V x0 = A::load(p + i), x1 = A::load(p + i + kN);
    m0 = Max ? A::max(m0, x0) : A::min(m0, x0);
    m1 = Max ? A::max(m1, x1) : A::min(m1, x1);
    nan = A::bor(nan, A::unord(x0, x1));
  }
  if (A::mask(nan)) return std::numeric_limits<T>::quiet_NaN();
  alignas(32) T lanes[2 * kN];
  A::store(lanes, m0);
  A::store(lanes + kN, m1);
  T m = start;
  for (T x : lanes) m = Max ? std::max(m, x) : std::min(m, x);
  for (; i < n; ++i) {
    if (p[i] != p[i]) return p[i];
    m = Max ? std::max(m, p[i]) : std::min(m, p[i]);
  }
  return m;
}

template <class T> int64_t first_equal(const T* p, int64_t n, T m) {
  using A = Lanes<T>;
  const bool want_nan = m != m;
  const typename A::V target = A::splat(m);
  int64_t i = 0;
  for (; i + A::kN <= n; i += A::kN) {
    const typename A::V x = A::load(p + i);
    if (const int k = A::mask(want_nan ? A::unord(x, x) : A::eq(x, target)))
      return i + std::countr_zero(unsigned(k));
  }
  for (; i < n; ++i)
    if (want_nan ? p[i] != p[i] : p[i] == m) return i;
  internal_fail(__FILE__, __LINE__, "argreduce: the extreme value is not in its run");
}
#endif

constexpr int64_t kTwoPassMin = 64;  // shorter runs: the scalar scan

template <bool Max, class T> Best<Max, T> scan(const T* p, int64_t n, int64_t s, int64_t first) {
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (s == 1 && n >= kTwoPassMin) {
      const int64_t i = first_equal(p, n, extreme_value<Max>(p, n));
      return {p[i], first + i};
    }
  }
#endif
  Best<Max, T> b{p[0], first};
  for (int64_t i = 1; i < n; ++i) {
    T x = p[i * s];
    if (fn::arg_better<Max>(x, b.v)) b = {x, first + i};
  }
  return b;
}

// Over the flattened tensor: chunks of a contiguous copy, combined in order.
template <bool Max, class T> void flat(const View& in, int64_t* out) {
  const int64_t n = in.numel();
  const T* p = in.ptr<T>();
  std::shared_ptr<Value> tmp;
  auto dims = coalesce<1>(in.shape, {&in.strides});
  int64_t stride = dims[0].s[0];
  if (dims.size() != 1) {
    tmp = Value::alloc(in.dtype, in.shape);
    copy_view(in, tmp->view());
    p = tmp->data<T>();
    stride = 1;
  }
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
  std::vector<Best<Max, T>> part(nchunks);
  parallel_for(nchunks, nchunks < 4 ? nchunks : grain_for(nchunks, 1), [&](int64_t lo, int64_t hi, int) {
    for (int64_t c = lo; c < hi; ++c) {
      int64_t b = c * kChunk, len = std::min(kChunk, n - b);
      part[c] = scan<Max>(p + b * stride, len, stride, b);
    }
  });
  Best<Max, T> b = part[0];
  for (int64_t c = 1; c < nchunks; ++c)
    if (fn::arg_better<Max>(part[c].v, b.v)) b = part[c];
  *out = b.i + 1;
}

// Along `dim`: per output a strided scan, or, when a kept dim is denser than `dim`,
// a block of outputs advanced together one slice of `dim` at a time.
template <bool Max, class T> void along(const View& in, int dim, const View& out) {
  Shape ks;
  Strides kin, kout;
  for (int d = 0, k = 0; d < in.rank(); ++d) {
    if (d == dim) continue;
    ks.push_back(in.shape[d]);
    kin.push_back(in.strides[d]);
    kout.push_back(out.strides[k++]);
  }
  auto kd = coalesce<2>(ks, {&kin, &kout});
  const int64_t n = in.shape[dim], s = in.strides[dim];
  const int64_t nout = out.numel();
  const T* p = in.ptr<T>();
  int64_t* o = out.ptr<int64_t>();
  const Dim<2> last = kd.back();
  const bool blocked = last.n > 1 && std::abs(last.s[0]) < std::abs(s);
  if (!blocked) {
    const int64_t grain =
        nout * n < kSerialWork ? nout : grain_for(nout, std::max<int64_t>(1, kSerialWork / n));
    parallel_for(nout, grain, [&](int64_t lo, int64_t hi, int) {
      Odometer<2> k(kd, lo);
      for (int64_t i = lo; i < hi; ++i, k.advance(1)) o[k.off[1]] = scan<Max>(p + k.off[0], n, s, 0).i + 1;
    });
    return;
  }
  kd.pop_back();
  if (kd.empty()) kd.push_back(Dim<2>{1, {0, 0}});
  const int64_t nblocks = (last.n + kBlock - 1) / kBlock, ntasks = nout / last.n * nblocks;
  const int64_t grain = nout * n < kSerialWork ? ntasks : grain_for(ntasks, 1);
  parallel_for(ntasks, grain, [&](int64_t lo, int64_t hi, int) {
    T best[kBlock];
    int64_t idx[kBlock];
    for (int64_t t = lo; t < hi; ++t) {
      Odometer<2> k(kd, t / nblocks);
      const int64_t j0 = (t % nblocks) * kBlock, b = std::min(kBlock, last.n - j0);
      const T* base = p + k.off[0] + j0 * last.s[0];
      for (int64_t j = 0; j < b; ++j) best[j] = base[j * last.s[0]], idx[j] = 0;
      for (int64_t i = 1; i < n; ++i) {
        const T* row = base + i * s;
        for (int64_t j = 0; j < b; ++j) {
          T x = row[j * last.s[0]];
          if (fn::arg_better<Max>(x, best[j])) best[j] = x, idx[j] = i;
        }
      }
      int64_t* dst = o + k.off[1] + j0 * last.s[1];
      for (int64_t j = 0; j < b; ++j) dst[j * last.s[1]] = idx[j] + 1;
    }
  });
}

template <bool Max> void arg_op(const View& in, int dim, const View& out) {
  dispatch_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dim < 0) flat<Max, T>(in, out.ptr<int64_t>());
    else along<Max, T>(in, dim, out);
  });
}

}  // namespace

void run_argreduce(Op op, const View& in, int dim, const View& out) {
  internal_check(op == Op::ArgMax || op == Op::ArgMin);
  internal_check(out.dtype == DType::I64);
  internal_check(in.numel() > 0 || out.numel() == 0);
  if (out.numel() == 0) return;
  if (dim >= 0) {
    internal_check(dim < in.rank() && out.rank() == in.rank() - 1 && in.shape[dim] > 0);
  } else {
    internal_check(out.numel() == 1);
  }
  if (op == Op::ArgMax) arg_op<true>(in, dim, out);
  else arg_op<false>(in, dim, out);
}

}  // namespace tapestry::cpu
