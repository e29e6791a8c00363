// The window kernels: n-D correlation (stencils), conv2d and 2-D pooling.
//   run_correlate(x, k, {-1, -1}, out);                  // 3x3 stencil, zero padded
//   run_conv2d(x, w, {1, 1, -1}, {1, 1, -1}, INT64_MAX, 0, out);  // 3x3 conv, padding 1
//   run_pool2d(Op::MaxPool2d, x, 2, 2, {2, 1, 0}, {2, 1, 0}, out);
// Every kernel takes each input as a strided view and an origin per windowed dim, so that the
// same code runs a whole tensor (origin = -padding) and a block's slice (origin = where the
// slice starts relative to the block's first window): a sharded result equals the whole one.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vector_kernels.hpp"

namespace tapestry::cpu {
namespace {

// Accumulators of pooling and integer conv2d: f64 for floats; unsigned 64-bit for integers, so
// that overflow wraps as the other integer kernels do, without signed-overflow UB.
template <class T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <class T> Acc<T> widen(T v) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else return static_cast<uint64_t>(static_cast<int64_t>(v));
}
template <class T> T narrow_to(Acc<T> v) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
  else return static_cast<T>(static_cast<int64_t>(v));
}

// The range of outputs y in [0, n) whose input stride*y + off lies in [0, size).
void valid_range(int64_t n, int64_t stride, int64_t off, int64_t size, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = off >= size ? 0 : std::min(n, (size - 1 - off) / stride + 1);
  if (hi < lo) hi = lo;
}

// --- correlate ---------------------------------------------------------------------------

// A correlation's accumulator: the element type for floats (an f32 window sums in f32, as numpy
// and torch do, by fused multiply-adds), unsigned 64-bit for integers.
template <class T> using CorrAcc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;

// Row by row along the last dim: for each tap of the leading dims whose row exists, each tap of
// the last dim adds x[row, y + r + origin] * k over the valid y. Taps run in row-major order for
// every element, so a block computes bit for bit what the whole tensor does.
template <class T>
void correlate_typed(const View& x, const View& k, const std::vector<int64_t>& origin, const View& out) {
  const int r = out.rank();
  const int64_t ow = out.shape[r - 1], xw = x.shape[r - 1], kw = k.shape[r - 1];
  const int64_t rows = out.numel() / ow, ktaps = k.numel() / kw;
  const T* xp = x.ptr<T>();
  const T* kp = k.ptr<T>();
  T* op = out.ptr<T>();
  parallel_for(rows, grain_for(rows, 4), [&](int64_t lo, int64_t hi, int) {
    std::vector<CorrAcc<T>> acc(static_cast<size_t>(ow));
    std::vector<int64_t> oi(r), ki(r);
    for (int64_t row = lo; row < hi; ++row) {
      std::fill(acc.begin(), acc.end(), CorrAcc<T>(0));
      for (int64_t q = row, d = r - 2; d >= 0; --d) {  // the row's index in the leading dims
        oi[d] = q % out.shape[d];
        q /= out.shape[d];
      }
      for (int64_t tap = 0; tap < ktaps; ++tap) {
        int64_t xoff = 0, koff = 0;
        bool inside = true;
        for (int64_t q = tap, d = r - 2; d >= 0; --d) {
          ki[d] = q % k.shape[d];
          q /= k.shape[d];
          const int64_t c = oi[d] + ki[d] + origin[d];
          inside = inside && c >= 0 && c < x.shape[d];
          xoff += c * x.strides[d];
          koff += ki[d] * k.strides[d];
        }
        if (!inside) continue;
        for (int64_t j = 0; j < kw; ++j) {
          const T kt = kp[koff + j * k.strides[r - 1]];
          if (kt == T(0)) continue;  // a zero weight reads nothing (see run_correlate)
          int64_t y0, y1;
          valid_range(ow, 1, j + origin[r - 1], xw, y0, y1);
          const int64_t sx = x.strides[r - 1], c0 = j + origin[r - 1];
          const T* src = xp + xoff + c0 * sx;
          if constexpr (std::is_floating_point_v<T>) {
            for (int64_t y = y0; y < y1; ++y) acc[y] = std::fma(src[y * sx], kt, acc[y]);
          } else {
            const uint64_t kv = widen<T>(kt);
            for (int64_t y = y0; y < y1; ++y) acc[y] += widen<T>(src[y * sx]) * kv;
          }
        }
      }
      for (int64_t y = 0; y < ow; ++y) {
        if constexpr (std::is_floating_point_v<T>) op[row * ow + y] = acc[y];
        else op[row * ow + y] = narrow_to<T>(acc[y]);
      }
    }
  });
}

// The same sums for a 2-D f32 correlation with a small kernel, blocked for registers: each
// vector of outputs of a row accumulates all its taps in a register (vector_kernels.cpp's
// stencil2d_rows, AVX2 or AVX-512), taps in row-major order with the ones outside x skipped,
// each a fused multiply-add in f32, exactly as correlate_typed: bit for bit its results.
// correlate_typed makes a pass over a row of accumulators per tap (a load and a store per
// output and tap); this keeps them in registers. Columns whose taps all lie inside x run
// vectorized; the few at the edges run scalar.
constexpr int64_t kFastTaps = 64;  // kernels up to this many taps (7 x 7 = 49)

bool correlate2d_f32_fits(const View& x, const View& k, const View& out) {
  return out.rank() == 2 && x.strides[1] == 1 && k.numel() <= kFastTaps && out.shape[1] >= 16;
}

// out = u + c * stencil, rounded as the map program computes it (the stencil to f32, then
// c * s, then u + that, each in f32), applied as each register block of sums is stored.
struct AxpyEpilogue {
  const float* u;  // row-major rows of out's shape
  int64_t u_row;   // u's row stride
  float c;
  bool stream;  // out is far larger than the caches: streaming stores
};

void correlate2d_f32(const View& x, const View& k, const std::vector<int64_t>& origin, const View& out,
                     const AxpyEpilogue* ep = nullptr) {
  const int64_t oh = out.shape[0], ow = out.shape[1], xh = x.shape[0], xw = x.shape[1];
  const int64_t kh = k.shape[0], kw = k.shape[1];
  // Per kernel row, its nonzero taps (column, weight): a 5-point Laplacian in a 3x3 kernel
  // costs 5 multiply-adds an output, not 9.
  float kd[kFastTaps];
  int64_t kcol[kFastTaps], kstart[kFastTaps + 1];
  int64_t nz = 0;
  for (int64_t i = 0; i < kh; ++i) {
    kstart[i] = nz;
    for (int64_t j = 0; j < kw; ++j) {
      const float w = k.ptr<float>()[i * k.strides[0] + j * k.strides[1]];
      if (w == 0.0f) continue;
      kd[nz] = w;
      kcol[nz++] = j;
    }
  }
  kstart[kh] = nz;
  vec::Stencil2d s{x.ptr<float>(),
                   xh,
                   xw,
                   x.strides[0],
                   origin[0],
                   origin[1],
                   kh,
                   kd,
                   kcol,
                   kstart,
                   out.ptr<float>(),
                   ow,
                   0,
                   0};
  // Columns [c0, c1) read only columns inside x for every tap.
  s.c0 = std::min(ow, std::max<int64_t>(0, -s.o1));
  s.c1 = std::max(s.c0, std::min(ow, xw - s.o1 - kw + 1));
  if (ep) {
    s.u = ep->u;
    s.u_row = ep->u_row;
    s.c = ep->c;
    s.axpy = true;
    s.stream = ep->stream;
  }
  const auto rows = vec::table().stencil2d_rows;
  parallel_for(oh, grain_for(oh, 4), [&](int64_t lo, int64_t hi, int) { rows(s, lo, hi); });
}

// --- conv2d ------------------------------------------------------------------------------

struct ConvGeom {
  int64_t N, O, OH, OW, Cg, KH, KW, H, W;
  WindowAxis h, w;
  int64_t out_per_group, o_origin;
  int64_t group_of(int64_t o) const { return (o_origin + o) / out_per_group; }
};

// Input channel base of output channel o within x's view: groups index x's whole channel dim.
int64_t channel_base(const ConvGeom& g, int64_t o) {
  return g.out_per_group == std::numeric_limits<int64_t>::max() ? 0 : g.group_of(o) * g.Cg;
}

// Direct loop for integers (and the reference the BLAS path is tested against).
template <class T> void conv_direct(const View& x, const View& w, const ConvGeom& g, const View& out) {
  const T* xp = x.ptr<T>();
  const T* wp = w.ptr<T>();
  T* op = out.ptr<T>();
  parallel_for(g.N * g.O, 1, [&](int64_t lo, int64_t hi, int) {
    for (int64_t no = lo; no < hi; ++no) {
      const int64_t n = no / g.O, o = no % g.O, cb = channel_base(g, o);
      for (int64_t oy = 0; oy < g.OH; ++oy)
        for (int64_t ox = 0; ox < g.OW; ++ox) {
          Acc<T> acc = 0;
          for (int64_t c = 0; c < g.Cg; ++c)
            for (int64_t i = 0; i < g.KH; ++i) {
              const int64_t iy = g.h.stride * oy + g.h.dilation * i + g.h.origin;
              if (iy < 0 || iy >= g.H) continue;
              for (int64_t j = 0; j < g.KW; ++j) {
                const int64_t ix = g.w.stride * ox + g.w.dilation * j + g.w.origin;
                if (ix < 0 || ix >= g.W) continue;
                const T xv =
                    xp[n * x.strides[0] + (cb + c) * x.strides[1] + iy * x.strides[2] + ix * x.strides[3]];
                const T wv = wp[o * w.strides[0] + c * w.strides[1] + i * w.strides[2] + j * w.strides[3]];
                acc += widen<T>(xv) * widen<T>(wv);
              }
            }
          op[((n * g.O + o) * g.OH + oy) * g.OW + ox] = narrow_to<T>(acc);
        }
    }
  });
}

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c,
                static_cast<int>(ldc));
  else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c,
                static_cast<int>(ldc));
}

// im2col + gemm: per image and group, a [Cg*KH*KW, rows*OW] column matrix of a band of output
// rows (bounded so it stays a few MiB), then out[o-range, band] = w[o-range, :] @ cols.
template <class T> void conv_blas(const View& x, const View& w, const ConvGeom& g, const View& out) {
  std::shared_ptr<Value> wc;  // BLAS reads w as a dense [O, Cg*KH*KW] matrix
  const T* wp = w.ptr<T>();
  if (!w.is_contiguous()) {
    wc = Value::alloc(w.dtype, w.shape);
    copy_view(w, wc->view());
    wp = wc->data<T>();
  }
  const int64_t K = g.Cg * g.KH * g.KW;
  const int64_t band =
      std::max<int64_t>(1, std::min(g.OH, (int64_t{1} << 21) / std::max<int64_t>(1, K * g.OW)));
  std::vector<T> cols(static_cast<size_t>(K * band * g.OW));
  const T* xp = x.ptr<T>();
  T* op = out.ptr<T>();
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t o0 = 0; o0 < g.O;) {
      // The run of output channels that share a group (all of them without groups).
      int64_t o1 = o0 + 1;
      while (o1 < g.O && channel_base(g, o1) == channel_base(g, o0)) ++o1;
      const int64_t cb = channel_base(g, o0);
      for (int64_t y0 = 0; y0 < g.OH; y0 += band) {
        const int64_t ny = std::min(band, g.OH - y0), ncols = ny * g.OW;
        parallel_for(K, grain_for(K, 1), [&](int64_t lo, int64_t hi, int) {
          for (int64_t row = lo; row < hi; ++row) {
            const int64_t c = row / (g.KH * g.KW), i = row / g.KW % g.KH, j = row % g.KW;
            T* dst = cols.data() + row * ncols;
            const T* plane = xp + n * x.strides[0] + (cb + c) * x.strides[1];
            int64_t x0, x1;
            valid_range(g.OW, g.w.stride, g.w.dilation * j + g.w.origin, g.W, x0, x1);
            for (int64_t y = 0; y < ny; ++y) {
              T* d = dst + y * g.OW;
              const int64_t iy = g.h.stride * (y0 + y) + g.h.dilation * i + g.h.origin;
              if (iy < 0 || iy >= g.H) {
                std::fill(d, d + g.OW, T(0));
                continue;
              }
              const T* src = plane + iy * x.strides[2];
              std::fill(d, d + x0, T(0));
              for (int64_t ox = x0; ox < x1; ++ox)
                d[ox] = src[(g.w.stride * ox + g.w.dilation * j + g.w.origin) * x.strides[3]];
              std::fill(d + x1, d + g.OW, T(0));
            }
          }
        });
        gemm<T>(o1 - o0, ncols, K, wp + o0 * K, K, cols.data(), ncols,
                op + (n * g.O + o0) * g.OH * g.OW + y0 * g.OW, g.OH * g.OW);
      }
      o0 = o1;
    }
  }
}

// --- pooling -----------------------------------------------------------------------------

// The larger of two values; NaN wins, as the Max reduction.
template <class T> T max_nan(T best, T v) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(best) || std::isnan(v)) return std::isnan(best) ? best : v;
  return v > best ? v : best;
}

template <class T>
void pool_typed(Op op, const View& x, int64_t kh, int64_t kw, const WindowAxis& h, const WindowAxis& wd,
                const View& out) {
  const int64_t N = out.shape[0], C = out.shape[1], OH = out.shape[2], OW = out.shape[3];
  const int64_t H = x.shape[2], W = x.shape[3];
  const T* xp = x.ptr<T>();
  T* outp = out.ptr<T>();
  const bool is_max = op == Op::MaxPool2d;
  parallel_for(N * C, 1, [&](int64_t lo, int64_t hi, int) {
    for (int64_t nc = lo; nc < hi; ++nc) {
      const T* plane = xp + (nc / C) * x.strides[0] + (nc % C) * x.strides[1];
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          Acc<T> sum = 0;
          T best{};
          bool any = false;
          for (int64_t i = 0; i < kh; ++i) {
            const int64_t iy = h.stride * oy + h.dilation * i + h.origin;
            if (iy < 0 || iy >= H) continue;
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t ix = wd.stride * ox + wd.dilation * j + wd.origin;
              if (ix < 0 || ix >= W) continue;
              const T v = plane[iy * x.strides[2] + ix * x.strides[3]];
              if (!is_max) sum += widen<T>(v);
              else if (!any) best = v;
              else best = max_nan(best, v);
              any = true;
            }
          }
          internal_check(any);  // the builder keeps padding below half a window
          T& dst = outp[(nc * OH + oy) * OW + ox];
          if (is_max) dst = best;
          else if constexpr (std::is_floating_point_v<T>)
            dst = static_cast<T>(sum / static_cast<double>(kh * kw));
          else internal_fail(__FILE__, __LINE__, "avgpool of integers");
        }
    }
  });
}

}  // namespace

bool axpy_form(const MapProgram& p, int s_leaf, int& u_leaf, float& c) {
  const int L = static_cast<int>(p.leaves.size());
  if (L != 2 || p.instrs.size() != 3 || (s_leaf != 0 && s_leaf != 1)) return false;
  for (const MapInstr& in : p.instrs)
    if (in.out != DType::F32 || in.in != DType::F32) return false;
  const MapInstr &k = p.instrs[0], &mul = p.instrs[1], &add = p.instrs[2];
  const int kreg = L, mreg = L + 1;
  u_leaf = 1 - s_leaf;
  auto is = [](const MapInstr& in, int x, int y) {
    return (in.a == x && in.b == y) || (in.a == y && in.b == x);
  };
  if (k.op != Op::Full || mul.op != Op::Mul || add.op != Op::Add) return false;
  if (!is(mul, kreg, s_leaf) || !is(add, u_leaf, mreg)) return false;
  c = static_cast<float>(k.real);
  return true;
}

bool run_correlate_axpy(const View& x, const View& k, const std::vector<int64_t>& origin, const View& u,
                        float c, const View& out, bool stream) {
  if (x.dtype != DType::F32 || k.dtype != DType::F32 || u.dtype != DType::F32 || out.dtype != DType::F32 ||
      out.rank() != 2 || !out.is_contiguous() || static_cast<int>(origin.size()) != 2 ||
      !correlate2d_f32_fits(x, k, out) || u.shape != out.shape || u.strides[1] != 1 || out.numel() == 0)
    return false;
  const AxpyEpilogue ep{u.ptr<float>(), u.strides[0], c, stream};
  correlate2d_f32(x, k, origin, out, &ep);
  return true;
}

void run_correlate(const View& x, const View& k, const std::vector<int64_t>& origin, const View& out) {
  internal_check(x.rank() == out.rank() && k.rank() == out.rank() && out.rank() >= 1 &&
                 static_cast<int>(origin.size()) == out.rank() && out.is_contiguous());
  internal_check(x.dtype == out.dtype && k.dtype == out.dtype);
  if (out.numel() == 0) return;
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) internal_fail(__FILE__, __LINE__, "correlate of bool");
    else if constexpr (std::is_same_v<T, float>) {
      if (correlate2d_f32_fits(x, k, out)) correlate2d_f32(x, k, origin, out);
      else correlate_typed<T>(x, k, origin, out);
    } else {
      correlate_typed<T>(x, k, origin, out);
    }
  });
}

void run_conv2d(const View& x, const View& w, const WindowAxis& h, const WindowAxis& wd,
                int64_t out_per_group, int64_t o_origin, const View& out) {
  internal_check(x.rank() == 4 && w.rank() == 4 && out.rank() == 4 && out.is_contiguous());
  internal_check(x.dtype == out.dtype && w.dtype == out.dtype && w.shape[0] == out.shape[1]);
  const ConvGeom g{out.shape[0], out.shape[1],  out.shape[2], out.shape[3], w.shape[1],
                   w.shape[2],   w.shape[3],    x.shape[2],   x.shape[3],   h,
                   wd,           out_per_group, o_origin};
  if (out.numel() == 0) return;
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) internal_fail(__FILE__, __LINE__, "conv2d of bool");
    else if constexpr (std::is_floating_point_v<T>) conv_blas<T>(x, w, g, out);
    else conv_direct<T>(x, w, g, out);
  });
}

void run_pool2d(Op op, const View& x, int64_t kh, int64_t kw, const WindowAxis& h, const WindowAxis& wd,
                const View& out) {
  internal_check(x.rank() == 4 && out.rank() == 4 && out.is_contiguous() && x.dtype == out.dtype);
  if (out.numel() == 0) return;
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) internal_fail(__FILE__, __LINE__, "pool of bool");
    else pool_typed<T>(op, x, kh, kw, h, wd, out);
  });
}

}  // namespace tapestry::cpu
