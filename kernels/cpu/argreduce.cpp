// run_argreduce: 1-based index of the first maximum / minimum, along a dim or flat.
// NaN counts as the extreme and its first occurrence wins, as numpy.argmax.
#include <algorithm>
#include <cstdlib>
#include <memory>

#include "engine/ir/error.hpp"
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

template <bool Max, class T> Best<Max, T> scan(const T* p, int64_t n, int64_t s, int64_t first) {
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
