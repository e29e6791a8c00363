// run_generate on the device: full, arange, linspace, eye, rand, randn from the element's global
// index alone, with the CPU's Philox-4x32-10 (kernels/cpu/philox.hpp, compiled for both), so a
// tensor generated on the GPU equals the CPU's: rand bit for bit, randn to the last ulp of the
// device's log/cos/sin (the CPU uses glibc's; both are within 1 ulp of the true value).
//   cuda::run_generate(Op::Randn, attrs, {1024, 1024}, {512, 0}, block_view);  // a shard
#include <cuda_runtime.h>

#include <cstring>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cuda {
namespace {

using cpu::PhiloxCtr;
using cpu::PhiloxKey;

struct Box {
  int nd;
  int64_t n[kMaxDims];        // the box's extents
  int64_t origin[kMaxDims];   // where it starts in the whole tensor
  int64_t gstride[kMaxDims];  // the whole tensor's row-major strides
};

struct Params {
  Op op;
  PhiloxKey key;
  bool int_args;  // integer arange/full arguments (not floats)
  int64_t i0, i1;
  double r0, r1;
  int64_t total;  // linspace length
};

constexpr uint32_t kStreamRand = 0, kStreamRandn = 1;  // as generate.cpp

__device__ PhiloxCtr ctr_of(uint64_t c, uint32_t stream) {
  return {{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), stream, 0}};
}

template <class T> __device__ T from_double(double x) { return fn::detail::float_to<T>(x); }
template <class T> __device__ T from_int(int64_t x) { return fn::Cast<int64_t, T>{}(x); }

template <class T> __global__ void generate_kernel(T* out, const Box box, const Params p, int64_t n) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  TP_GRID_LOOP(i, n) {
    int64_t q = i, g = 0, gi0 = 0, gi1 = 0;
    for (int d = box.nd - 1; d >= 0; --d) {
      const int64_t gi = box.origin[d] + q % box.n[d];
      q /= box.n[d];
      g += gi * box.gstride[d];
      if (d == 0) gi0 = gi;
      if (d == 1) gi1 = gi;
    }
    T v{};
    switch (p.op) {
      case Op::Full: v = p.int_args ? from_int<T>(p.i0) : from_double<T>(p.r0); break;
      case Op::Arange:
        v = p.int_args ? from_int<T>(fn::detail::wrap_add(p.i0, fn::detail::wrap_mul(p.i1, g)))
                       : from_double<T>(p.r0 + p.r1 * double(g));
        break;
      case Op::Linspace: {
        const double step = p.total > 1 ? (p.r1 - p.r0) / double(p.total - 1) : 0.0;
        v = from_double<T>(g == p.total - 1 && p.total > 1 ? p.r1 : p.r0 + double(g) * step);
        break;
      }
      case Op::Eye: v = from_int<T>(gi0 == gi1 ? 1 : 0); break;
      case Op::Rand:
      case Op::Randn:
        if constexpr (kFloat) {
          constexpr int64_t W = std::is_same_v<T, float> ? 4 : 2;
          uint32_t w[4];
          const int64_t c = g / W, j = g % W;
          if (p.op == Op::Rand) {
            cpu::philox4x32_10(ctr_of(c, kStreamRand), p.key, w);
            if constexpr (W == 4) v = cpu::u01_f32(w[j]);
            else v = static_cast<T>(cpu::u01_f64(w[2 * j], w[2 * j + 1]));
          } else {
            constexpr double kTwoPi = 6.283185307179586476925;
            cpu::philox4x32_10(ctr_of(c, kStreamRandn), p.key, w);
            double u1, u2;
            if constexpr (W == 4) {
              const int pr = static_cast<int>(j / 2);
              u1 = cpu::u01_open0_f32(w[2 * pr]);
              u2 = cpu::u01_f32(w[2 * pr + 1]);
            } else {
              u1 = cpu::u01_open0_f64(w[0], w[1]);
              u2 = cpu::u01_f64(w[2], w[3]);
            }
            const double r = sqrt(-2.0 * log(u1));
            v = static_cast<T>(g % 2 == 0 ? r * cos(kTwoPi * u2) : r * sin(kTwoPi * u2));
          }
        }
        break;
      default: break;
    }
    out[i] = v;
  }
}

// A constant of f16, bf16, c64 or c128 (the only generator made in those dtypes: the builders
// cast the others), filled by its bits.
template <class W> __global__ void fill_kernel(W* out, W v, int64_t n) {
  TP_GRID_LOOP(i, n) { out[i] = v; }
}
struct Bytes16 {
  uint64_t lo, hi;
};
template <class W, class T> void fill_with(const DView& out, T v, int64_t n) {
  static_assert(sizeof(W) == sizeof(T));
  W bits;
  std::memcpy(&bits, &v, sizeof bits);
  fill_kernel<W><<<blocks_for(n), kThreads, 0, context().s()>>>(static_cast<W*>(out.data), bits, n);
}

}  // namespace

void run_generate(Op op, const Attrs& a, const Shape& gshape, const std::vector<int64_t>& origin,
                  const DView& out) {
  const int64_t n = out.numel();
  internal_check(out.is_contiguous() && gshape.size() == out.shape.size() && origin.size() == gshape.size());
  if (n == 0) return;
  if (is_half(out.dtype) || is_complex(out.dtype)) {  // the value as the CPU makes it (generate.cpp)
    internal_check(op == Op::Full && "a generator of f16, bf16 or complex");
    const double r = attrs_of<FullAttrs>(op, a).real;
    switch (out.dtype) {
      case DType::F16: fill_with<uint16_t>(out, f16(r), n); break;
      case DType::BF16: fill_with<uint16_t>(out, bf16(r), n); break;
      case DType::C64: fill_with<uint64_t>(out, c64(static_cast<float>(r)), n); break;
      default: fill_with<Bytes16>(out, c128(r), n); break;
    }
    return check_launch("fill kernel");
  }
  user_check(out.rank() <= kMaxDims, "CUDA generate: rank ", out.rank(), " > ", kMaxDims);
  Box box{};
  box.nd = out.rank();
  const Strides gs = contiguous_strides(gshape);
  for (int d = 0; d < box.nd; ++d) {
    internal_check(origin[d] >= 0 && origin[d] + out.shape[d] <= gshape[d]);
    box.n[d] = out.shape[d];
    box.origin[d] = origin[d];
    box.gstride[d] = gs[d];
  }
  Params p{};
  p.op = op;
  const bool fl = is_float(out.dtype);
  switch (op) {
    case Op::Full: {
      const FullAttrs f = attrs_of<FullAttrs>(op, a);
      p.int_args = !fl;
      p.i0 = f.integer;
      p.r0 = f.real;
      break;
    }
    case Op::Arange: {
      const ArangeAttrs r = attrs_of<ArangeAttrs>(op, a);
      p.int_args = !fl;
      p.i0 = r.int_first, p.i1 = r.int_step;
      p.r0 = r.first, p.r1 = r.step;
      break;
    }
    case Op::Linspace: {
      internal_check(gshape.size() == 1);
      const LinspaceAttrs l = attrs_of<LinspaceAttrs>(op, a);
      p.r0 = l.first, p.r1 = l.last, p.total = gshape[0];
      break;
    }
    case Op::Eye: internal_check(gshape.size() == 2); break;
    case Op::Rand:
    case Op::Randn: {
      internal_check(fl);
      const uint64_t seed = attrs_of<RandAttrs>(op, a).seed;
      p.key = {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
      break;
    }
    default: internal_check(!"run_generate: not a Generate op");
  }
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate_kernel<T><<<blocks_for(n), kThreads, 0, context().s()>>>(static_cast<T*>(out.data), box, p, n);
  });
  check_launch("generate kernel");
}

}  // namespace tapestry::cuda
