// The window kernels on the device: n-D correlation (stencils), conv2d and 2-D pooling, with the
// CPU's conventions (kernels/cpu/window.cpp): an origin per windowed dim, zeros outside the view.
//   cuda::run_correlate(xv, kv, {-1, -1}, outv);                   // 3x3 stencil, zero padded
//   cuda::run_conv2d(xv, wv, {1, 1, -1}, {1, 1, -1}, INT64_MAX, 0, outv);
// Correlation and pooling are one thread per output; a correlation sums its nonzero taps in
// row-major order, in the element type by fused multiply-adds for floats, so a stencil matches
// the CPU bit for bit (pooling sums in f64, as the CPU's); float conv2d is im2col + cuBLAS gemm per image and
// group (the tensor cores' path), integer conv2d a direct loop that wraps as the CPU's does.
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>

#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cuda {
namespace {

template <class T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
template <class T> __device__ Acc<T> widen(T v) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else return static_cast<uint64_t>(static_cast<int64_t>(v));
}
template <class T> __device__ T narrow_to(Acc<T> v) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
  else return static_cast<T>(static_cast<int64_t>(v));
}

// A correlation's accumulator: the element type for floats (the CPU's, kernels/cpu/window.cpp).
template <class T> using CorrAcc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;

struct Geo {  // correlate: shapes and strides of x, k, out and the origin
  int nd;
  int64_t xn[kMaxDims], xs[kMaxDims], kn[kMaxDims], ks[kMaxDims], on[kMaxDims], org[kMaxDims];
  int64_t ktaps;
};

template <class T> __global__ void correlate_kernel(const T* x, const T* k, T* out, const Geo g, int64_t n) {
  TP_GRID_LOOP(i, n) {
    int64_t oi[kMaxDims];
    for (int64_t q = i, d = g.nd - 1; d >= 0; --d) {
      oi[d] = q % g.on[d];
      q /= g.on[d];
    }
    CorrAcc<T> acc = 0;
    for (int64_t tap = 0; tap < g.ktaps; ++tap) {  // row-major taps: the CPU's order
      int64_t xoff = 0, koff = 0;
      bool inside = true;
      for (int64_t q = tap, d = g.nd - 1; d >= 0; --d) {
        const int64_t kd = q % g.kn[d];
        q /= g.kn[d];
        const int64_t c = oi[d] + kd + g.org[d];
        inside = inside && c >= 0 && c < g.xn[d];
        xoff += c * g.xs[d];
        koff += kd * g.ks[d];
      }
      if (!inside || k[koff] == T(0)) continue;  // a zero weight reads nothing, as on the CPU
      if constexpr (std::is_floating_point_v<T>) acc = fma(x[xoff], k[koff], acc);
      else acc += widen<T>(x[xoff]) * widen<T>(k[koff]);
    }
    if constexpr (std::is_floating_point_v<T>) out[i] = acc;
    else out[i] = narrow_to<T>(acc);
  }
}

// The 2-D case (the common stencil), which the general kernel's 64-bit divisions per tap made
// instruction-bound (10% of HBM bandwidth on an H200): each block takes the weights' nonzero taps
// once, in row-major order (so the sums are the general kernel's bit for bit), and covers a run
// of columns down a stride of rows, so no thread divides.
constexpr int kMaxTaps2d = 256;
template <class T> __global__ void correlate2d_kernel(const T* x, const T* k, T* out, const Geo g) {
  __shared__ T w[kMaxTaps2d];
  __shared__ int dy[kMaxTaps2d], dx[kMaxTaps2d];
  __shared__ int taps;
  const int kh = static_cast<int>(g.kn[0]), kw = static_cast<int>(g.kn[1]);
  for (int t = threadIdx.x; t < kh * kw; t += blockDim.x) w[t] = k[(t / kw) * g.ks[0] + (t % kw) * g.ks[1]];
  __syncthreads();
  if (threadIdx.x == 0) {  // compacted in place, in order: slot c <= t is written after t is read
    int c = 0;
    for (int t = 0; t < kh * kw; ++t)
      if (w[t] != T(0)) {
        w[c] = w[t];
        dy[c] = t / kw + static_cast<int>(g.org[0]);
        dx[c] = t % kw + static_cast<int>(g.org[1]);
        ++c;
      }
    taps = c;
  }
  __syncthreads();
  const int64_t ox = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ox >= g.on[1]) return;
  for (int64_t oy = blockIdx.y; oy < g.on[0]; oy += gridDim.y) {
    CorrAcc<T> acc = 0;
    for (int t = 0; t < taps; ++t) {
      const int64_t cy = oy + dy[t], cx = ox + dx[t];
      if (cy < 0 || cy >= g.xn[0] || cx < 0 || cx >= g.xn[1]) continue;
      const T v = x[cy * g.xs[0] + cx * g.xs[1]];
      if constexpr (std::is_floating_point_v<T>) acc = fma(v, w[t], acc);
      else acc += widen<T>(v) * widen<T>(w[t]);
    }
    if constexpr (std::is_floating_point_v<T>) out[oy * g.on[1] + ox] = acc;
    else out[oy * g.on[1] + ox] = narrow_to<T>(acc);
  }
}

struct Conv {
  int64_t N, O, OH, OW, Cg, KH, KW, H, W;
  int64_t xs[4], ws[4];
  cpu::WindowAxis h, w;
  int64_t out_per_group, o_origin;
  __host__ __device__ int64_t cbase(int64_t o) const {
    return out_per_group == std::numeric_limits<int64_t>::max() ? 0 : (o_origin + o) / out_per_group * Cg;
  }
};

template <class T> __global__ void conv_direct(const T* x, const T* w, T* out, const Conv g, int64_t n) {
  TP_GRID_LOOP(i, n) {
    const int64_t ox = i % g.OW, oy = (i / g.OW) % g.OH, o = (i / (g.OW * g.OH)) % g.O,
                  b = i / (g.OW * g.OH * g.O);
    const int64_t cb = g.cbase(o);
    Acc<T> acc = 0;
    for (int64_t c = 0; c < g.Cg; ++c)
      for (int64_t r = 0; r < g.KH; ++r) {
        const int64_t iy = g.h.stride * oy + g.h.dilation * r + g.h.origin;
        if (iy < 0 || iy >= g.H) continue;
        for (int64_t s = 0; s < g.KW; ++s) {
          const int64_t ix = g.w.stride * ox + g.w.dilation * s + g.w.origin;
          if (ix < 0 || ix >= g.W) continue;
          acc += widen<T>(x[b * g.xs[0] + (cb + c) * g.xs[1] + iy * g.xs[2] + ix * g.xs[3]]) *
                 widen<T>(w[o * g.ws[0] + c * g.ws[1] + r * g.ws[2] + s * g.ws[3]]);
        }
      }
    out[i] = narrow_to<T>(acc);
  }
}

// cols[ck, p] for image b and channel base cb: ck = (c, r, s), p = (oy, ox); zeros outside x.
template <class T>
__global__ void im2col(const T* x, T* cols, const Conv g, int64_t b, int64_t cb, int64_t n) {
  TP_GRID_LOOP(i, n) {
    const int64_t P = g.OH * g.OW, p = i % P, ck = i / P;
    const int64_t s = ck % g.KW, r = (ck / g.KW) % g.KH, c = ck / (g.KW * g.KH);
    const int64_t iy = g.h.stride * (p / g.OW) + g.h.dilation * r + g.h.origin;
    const int64_t ix = g.w.stride * (p % g.OW) + g.w.dilation * s + g.w.origin;
    const bool in = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
    cols[i] = in ? x[b * g.xs[0] + (cb + c) * g.xs[1] + iy * g.xs[2] + ix * g.xs[3]] : T(0);
  }
}

template <class T>
cublasStatus_t gemm(cublasHandle_t h, int m, int n, int k, const T* A, int lda, const T* B, int ldb, T* C,
                    int ldc) {
  const T one = 1, zero = 0;
  if constexpr (std::is_same_v<T, float>)
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc);
  else return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc);
}

// Per image and group: out[b, o0:o1] (rows x P) = W[o0:o1] (rows x CK) @ cols (CK x P), i.e. in
// cuBLAS's column-major terms C^T = cols^T W^T with no transposes.
template <class T> void conv_gemm(const DView& x, DView w, const Conv& g, const DView& out) {
  Context& cx = context();
  DeviceBuffer packed;
  if (!w.is_contiguous()) {
    packed = DeviceBuffer(w.numel() * sizeof(T));
    const DView pw = dview(packed.get(), w.dtype, w.shape);
    copy_view(w, pw);
    w = pw;
  }
  const int64_t CK = g.Cg * g.KH * g.KW, P = g.OH * g.OW;
  DeviceBuffer cols(CK * P * sizeof(T));
  T* cp = static_cast<T*>(cols.get());
  for (int64_t b = 0; b < g.N; ++b)
    for (int64_t o0 = 0; o0 < g.O;) {
      int64_t o1 = o0 + 1;
      while (o1 < g.O && g.cbase(o1) == g.cbase(o0)) ++o1;
      im2col<T><<<blocks_for(CK * P), kThreads, 0, cx.s()>>>(static_cast<const T*>(x.data), cp, g, b,
                                                             g.cbase(o0), CK * P);
      check_launch("im2col kernel");
      check(gemm<T>(cx.blas(), int(P), int(o1 - o0), int(CK), cp, int(P),
                    static_cast<const T*>(w.data) + o0 * CK, int(CK),
                    static_cast<T*>(out.data) + (b * g.O + o0) * P, int(P)),
            "conv gemm");
      o0 = o1;
    }
  synchronize();  // cols and the packed weights are freed on return
}

template <class T>
__global__ void pool_kernel(const T* x, T* out, bool is_max, const Conv g, int64_t kh, int64_t kw,
                            int64_t n) {
  TP_GRID_LOOP(i, n) {
    const int64_t ox = i % g.OW, oy = (i / g.OW) % g.OH, nc = i / (g.OW * g.OH);
    const T* plane = x + (nc / g.O) * g.xs[0] + (nc % g.O) * g.xs[1];
    Acc<T> sum = 0;
    T best{};
    bool any = false;
    for (int64_t r = 0; r < kh; ++r) {
      const int64_t iy = g.h.stride * oy + g.h.dilation * r + g.h.origin;
      if (iy < 0 || iy >= g.H) continue;
      for (int64_t s = 0; s < kw; ++s) {
        const int64_t ix = g.w.stride * ox + g.w.dilation * s + g.w.origin;
        if (ix < 0 || ix >= g.W) continue;
        const T v = plane[iy * g.xs[2] + ix * g.xs[3]];
        if (!is_max) sum += widen<T>(v);
        else best = any ? fn::Maximum<T>{}(best, v) : v;
        any = true;
      }
    }
    if (is_max) out[i] = best;
    else if constexpr (std::is_floating_point_v<T>)
      out[i] = static_cast<T>(sum / static_cast<double>(kh * kw));
  }
}

}  // namespace

void run_correlate(const DView& x, const DView& k, const std::vector<int64_t>& origin, const DView& out) {
  const int r = out.rank();
  internal_check(x.rank() == r && k.rank() == r && r >= 1 && int(origin.size()) == r && out.is_contiguous() &&
                 x.dtype == out.dtype && k.dtype == out.dtype);
  user_check(r <= kMaxDims, "CUDA correlate: rank ", r, " > ", kMaxDims);
  const int64_t n = out.numel();
  if (n == 0) return;
  Geo g{};
  g.nd = r;
  g.ktaps = k.numel();
  for (int d = 0; d < r; ++d) {
    g.xn[d] = x.shape[d], g.xs[d] = x.strides[d], g.kn[d] = k.shape[d], g.ks[d] = k.strides[d];
    g.on[d] = out.shape[d], g.org[d] = origin[d];
  }
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const auto* xp = static_cast<const T*>(x.data);
      const auto* kp = static_cast<const T*>(k.data);
      auto* op = static_cast<T*>(out.data);
      if (r == 2 && k.numel() <= kMaxTaps2d) {
        // ~8 blocks an SM, each down a stride of rows: its taps are read once for many rows.
        const int64_t across = (out.shape[1] + kThreads - 1) / kThreads;
        const int64_t down = std::min<int64_t>(out.shape[0], std::max<int64_t>(1, 8192 / across));
        correlate2d_kernel<T>
            <<<dim3(static_cast<unsigned>(across), static_cast<unsigned>(std::min<int64_t>(down, 65535))),
               kThreads, 0, context().s()>>>(xp, kp, op, g);
      } else correlate_kernel<T><<<blocks_for(n), kThreads, 0, context().s()>>>(xp, kp, op, g, n);
    } else {
      internal_check(!"correlate of bool");
    }
  });
  check_launch("correlate kernel");
}

void run_conv2d(const DView& x, const DView& w, const cpu::WindowAxis& h, const cpu::WindowAxis& wd,
                int64_t out_per_group, int64_t o_origin, const DView& out) {
  internal_check(x.rank() == 4 && w.rank() == 4 && out.rank() == 4 && out.is_contiguous() &&
                 x.dtype == out.dtype && w.dtype == out.dtype);
  const int64_t n = out.numel();
  if (n == 0) return;
  Conv g{out.shape[0], out.shape[1],  out.shape[2], out.shape[3], w.shape[1], w.shape[2],
         w.shape[3],   x.shape[2],    x.shape[3],   {},           {},         h,
         wd,           out_per_group, o_origin};
  for (int d = 0; d < 4; ++d) g.xs[d] = x.strides[d], g.ws[d] = w.strides[d];
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      conv_gemm<T>(x, w, g, out);
    } else if constexpr (!std::is_same_v<T, bool>) {
      conv_direct<T><<<blocks_for(n), kThreads, 0, context().s()>>>(
          static_cast<const T*>(x.data), static_cast<const T*>(w.data), static_cast<T*>(out.data), g, n);
      check_launch("conv2d kernel");
    } else {
      internal_check(!"conv2d of bool");
    }
  });
}

void run_pool2d(Op op, const DView& x, int64_t kh, int64_t kw, const cpu::WindowAxis& h,
                const cpu::WindowAxis& wd, const DView& out) {
  internal_check(x.rank() == 4 && out.rank() == 4 && out.is_contiguous() && x.dtype == out.dtype);
  const int64_t n = out.numel();
  if (n == 0) return;
  const bool is_max = op == Op::MaxPool2d;
  Conv g{out.shape[0],
         out.shape[1],
         out.shape[2],
         out.shape[3],
         0,
         kh,
         kw,
         x.shape[2],
         x.shape[3],
         {},
         {},
         h,
         wd,
         0,
         0};
  for (int d = 0; d < 4; ++d) g.xs[d] = x.strides[d];
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      internal_check(is_max || std::is_floating_point_v<T>);
      pool_kernel<T><<<blocks_for(n), kThreads, 0, context().s()>>>(
          static_cast<const T*>(x.data), static_cast<T*>(out.data), is_max, g, kh, kw, n);
    } else {
      internal_check(!"pool of bool");
    }
  });
  check_launch("pool kernel");
}

}  // namespace tapestry::cuda
