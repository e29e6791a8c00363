// run_reduce (Sum Prod Max Min All Any over any dims) and run_argreduce on the device.
//   cuda::run_reduce(Op::Sum, xv, {0, 2}, outv);     // floats accumulate in f64, ints in i64
//   cuda::run_argreduce(Op::ArgMax, xv, 1, outv);    // 1-based i64 indices, as the CPU
// Three shapes of launch: one thread per output when each output folds few elements or there
// are many outputs (the kept dims are then usually the dense ones, so loads coalesce); chunks of
// long folds, one block each, then a join, when there are too few outputs to fill the GPU (a
// whole-tensor sum ran on one block, 0.1% of HBM bandwidth, on an H200); else one block per
// output whose threads fold strided slices and then combine in shared memory. The
// monoids are the CPU's (kernels/monoid.hpp: NaN propagates through max exactly as there); f32
// sums accumulate in f64, so the GPU's different summation order moves results by ~1 ulp of f32;
// complex sums and products accumulate in c128, as on the CPU.
#include <cuda_runtime.h>

#include <optional>

#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"
#include "kernels/monoid.hpp"

namespace tapestry::cuda {
namespace {

// A monoid's fold (kernels/monoid.hpp, as on the CPU); step also takes the position, for ArgR.
template <Monoid M, class T> struct MonoidR : fn::Fold<M, T> {
  using A = typename fn::Fold<M, T>::A;
  static __device__ A step(A a, T x, int64_t) { return fn::Fold<M, T>::step(a, x); }
};

// The first extreme (NaN wins, as numpy): the index breaks ties, so any fold order agrees.
template <class T> struct Cand {
  T v;
  int64_t i;  // 0-based; -1 = none yet
};
template <bool Max, class T> struct ArgR {
  using A = Cand<T>;
  static __device__ A init() { return {T{}, -1}; }
  static __device__ A join(A a, A b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (fn::arg_better<Max>(b.v, a.v)) return b;
    if (fn::arg_better<Max>(a.v, b.v)) return a;
    return a.i < b.i ? a : b;
  }
  static __device__ A step(A a, T x, int64_t i) { return join(a, A{x, i}); }
};

// M outputs, each folding K inputs; `kept` maps an output to its input offset (operand 0) and
// output offset (operand 1); `red` maps a fold position to its input offset.
struct Geometry {
  Strided<2> kept;
  Strided<1> red;
  int64_t M, K;
  bool red_unit;  // the fold positions are one contiguous run: offset k is k (no div/mod)
  __device__ int64_t red_offset(int64_t k) const { return red_unit ? k : red.offset(k, 0); }
};

// The output dtype is a runtime switch, not a template parameter: 5x fewer kernels to compile.
template <class A> __device__ void store_as(void* out, DType t, int64_t off, A a) {
  switch (t) {
    case DType::Bool: static_cast<bool*>(out)[off] = fn::Cast<A, bool>{}(a); break;
    case DType::I8: static_cast<int8_t*>(out)[off] = fn::Cast<A, int8_t>{}(a); break;
    case DType::U8: static_cast<uint8_t*>(out)[off] = fn::Cast<A, uint8_t>{}(a); break;
    case DType::I32: static_cast<int32_t*>(out)[off] = fn::Cast<A, int32_t>{}(a); break;
    case DType::I64: static_cast<int64_t*>(out)[off] = fn::Cast<A, int64_t>{}(a); break;
    case DType::F32: static_cast<float*>(out)[off] = fn::Cast<A, float>{}(a); break;
    default: static_cast<double*>(out)[off] = fn::Cast<A, double>{}(a); break;
  }
}
template <class R, class T> __device__ void write(void* out, DType t, int64_t off, typename R::A acc) {
  if constexpr (std::is_same_v<typename R::A, Cand<T>>) static_cast<int64_t*>(out)[off] = acc.i + 1;
  else if constexpr (std::is_same_v<typename R::A, c128>) {  // complex sums and products: c64 or c128
    if (t == DType::C64) static_cast<c64*>(out)[off] = c64(acc);
    else static_cast<c128*>(out)[off] = acc;
  } else store_as(out, t, off, acc);
}

template <class R, class T>
__global__ void thread_per_output(const T* in, void* out, DType ot, const Geometry g) {
  TP_GRID_LOOP(m, g.M) {
    const T* base = in + g.kept.offset(m, 0);
    typename R::A acc = R::init();
    for (int64_t k = 0; k < g.K; ++k) acc = R::step(acc, base[g.red_offset(k)], k);
    write<R, T>(out, ot, g.kept.offset(m, 1), acc);
  }
}

// The block's accumulators joined by a fixed tree (so the result is reproducible); thread 0
// gets the total.
template <class R> __device__ typename R::A block_join(typename R::A acc) {
  __shared__ typename R::A part[kThreads];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] = R::join(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  const typename R::A total = part[0];
  __syncthreads();  // part is reused by the block's next output
  return total;
}

template <class R, class T>
__global__ void block_per_output(const T* in, void* out, DType ot, const Geometry g) {
  using A = typename R::A;
  for (int64_t m = blockIdx.x; m < g.M; m += gridDim.x) {
    const T* base = in + g.kept.offset(m, 0);
    A acc = R::init();
    for (int64_t k = threadIdx.x; k < g.K; k += blockDim.x) acc = R::step(acc, base[g.red_offset(k)], k);
    acc = block_join<R>(acc);
    if (threadIdx.x == 0) write<R, T>(out, ot, g.kept.offset(m, 1), acc);
  }
}

// Few outputs of long folds (a whole-tensor sum): each output's fold is cut into S chunks of
// `chunk` positions, one block a chunk, whose totals land in part[m * S + s]; a second kernel
// joins each output's S partials in order. The cut depends on the shape alone: reproducible.
template <class R, class T>
__global__ void block_per_chunk(const T* in, typename R::A* part, const Geometry g, int64_t S,
                                int64_t chunk) {
  using A = typename R::A;
  const int64_t m = blockIdx.x / S, c = blockIdx.x % S;
  const T* base = in + g.kept.offset(m, 0);
  const int64_t end = (c + 1) * chunk < g.K ? (c + 1) * chunk : g.K;
  A acc = R::init();
  for (int64_t k = c * chunk + threadIdx.x; k < end; k += blockDim.x)
    acc = R::step(acc, base[g.red_offset(k)], k);
  acc = block_join<R>(acc);
  if (threadIdx.x == 0) part[blockIdx.x] = acc;
}
template <class R, class T>
__global__ void join_chunks(const typename R::A* part, void* out, DType ot, const Geometry g, int64_t S) {
  using A = typename R::A;
  const int64_t m = blockIdx.x;
  A acc = R::init();
  for (int64_t c = threadIdx.x; c < S; c += blockDim.x) acc = R::join(acc, part[m * S + c]);
  acc = block_join<R>(acc);
  if (threadIdx.x == 0) write<R, T>(out, ot, g.kept.offset(m, 1), acc);
}

template <class R, class T> void launch(const DView& in, const DView& out, const Geometry& g) {
  const T* ip = static_cast<const T*>(in.data);
  cudaStream_t s = context().s();
  // Split the folds when the outputs alone would leave most of the GPU idle (~2048 blocks fill
  // an H100's 132 SMs); each chunk is at least 16 positions a thread.
  constexpr int64_t kFillBlocks = 2048, kMinChunk = 16 * kThreads;
  if (g.M < kFillBlocks / 4 && g.K >= 2 * kMinChunk) {
    const int64_t want = (kFillBlocks + g.M - 1) / g.M, most = g.K / kMinChunk;
    const int64_t S = want < most ? want : most, chunk = (g.K + S - 1) / S;
    DeviceBuffer part(static_cast<size_t>(g.M * S) * sizeof(typename R::A));
    auto* pp = static_cast<typename R::A*>(part.get());
    block_per_chunk<R, T><<<static_cast<int>(g.M * S), kThreads, 0, s>>>(ip, pp, g, S, chunk);
    check_launch("reduce kernel (chunks)");
    join_chunks<R, T><<<static_cast<int>(g.M), kThreads, 0, s>>>(pp, out.data, out.dtype, g, S);
    check_launch("reduce kernel (join)");
    synchronize();  // part is freed on return
    return;
  }
  if (g.K <= 64 || g.M >= 65536)
    thread_per_output<R, T><<<blocks_for(g.M), kThreads, 0, s>>>(ip, out.data, out.dtype, g);
  else
    block_per_output<R, T>
        <<<static_cast<int>(g.M < 65535 ? g.M : 65535), kThreads, 0, s>>>(ip, out.data, out.dtype, g);
  check_launch("reduce kernel");
}

// Splits in's dims into kept (matched in order with out's dims) and reduced.
Geometry geometry(const DView& in, const std::vector<int>& dims, const DView& out) {
  Shape ks, rs;
  Strides kin, kout, rin;
  size_t j = 0, o = 0;
  for (int d = 0; d < in.rank(); ++d) {
    if (j < dims.size() && dims[j] == d) {
      rs.push_back(in.shape[d]);
      rin.push_back(in.strides[d]);
      ++j;
    } else {
      internal_check(o < out.shape.size() && out.shape[o] == in.shape[d]);
      ks.push_back(in.shape[d]);
      kin.push_back(in.strides[d]);
      kout.push_back(out.strides[o++]);
    }
  }
  internal_check(j == dims.size() && o == out.shape.size());
  Geometry g;
  g.M = numel(ks);
  g.K = numel(rs);
  g.kept = make_strided<2>(ks, {&kin, &kout});
  g.red = make_strided<1>(rs, {&rin});
  g.red_unit = g.red.nd == 0 || (g.red.nd == 1 && g.red.s[0][0] == 1);
  return g;
}

}  // namespace

void run_reduce(Op op, const DView& in, const std::vector<int>& dims, const DView& out) {
  const std::optional<Monoid> m = monoid_of(op);
  internal_check(m.has_value() && "run_reduce: not a Reduce op");
  if (out.numel() == 0) return;
  const Geometry g = geometry(in, dims, out);
  dispatch_monoid(*m, [&](auto mc) {
    constexpr Monoid M = decltype(mc)::value;
    if (is_complex(in.dtype)) {  // sums and products only (the builders refuse complex max/min)
      if constexpr (M == Monoid::Sum || M == Monoid::Prod) {
        dispatch_complex(in.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch<MonoidR<M, T>, T>(in, out, g);
        });
        return;
      }
      internal_fail(__FILE__, __LINE__, "run_reduce: complex numbers have only sum and prod");
    }
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch<MonoidR<M, T>, T>(in, out, g);
    });
  });
}

void run_argreduce(Op op, const DView& in, int dim, const DView& out) {
  internal_check(op == Op::ArgMax || op == Op::ArgMin);
  if (out.numel() == 0) return;
  DView src = in;
  std::vector<int> dims;
  if (dim < 0) {  // over the flattened tensor: row-major order is the fold order
    for (int d = 0; d < in.rank(); ++d) dims.push_back(d);
  } else {
    dims.push_back(dim);
  }
  // Fold positions must be row-major flat indices: a multi-dim fold is made contiguous first.
  DeviceBuffer tmp;
  if (dims.size() > 1 && !in.is_contiguous()) {
    tmp = DeviceBuffer(in.numel() * dtype_size(in.dtype));
    src = dview(tmp.get(), in.dtype, in.shape);
    copy_view(in, src);
  }
  const Geometry g = geometry(src, dims, out);
  dispatch_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (op == Op::ArgMax) launch<ArgR<true, T>, T>(src, out, g);
    else launch<ArgR<false, T>, T>(src, out, g);
  });
  if (tmp.get()) synchronize();  // tmp is freed on return
}

}  // namespace tapestry::cuda
