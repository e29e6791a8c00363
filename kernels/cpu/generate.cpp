// run_generate: tensors computed from the element index alone (full, arange, linspace,
// eye, rand, randn). Every value depends on the element's global index only, never
// on the box being filled, so shards agree with the whole tensor. This file keeps to
// scalar libm calls on purpose (no vector math), so an element's value cannot depend
// on where a vector loop's tail fell.
#define TP_SCALAR_MATH_ONLY
#include <cmath>
#include <type_traits>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/strided.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cpu {
namespace {

constexpr int64_t kSerialElems = 1 << 15;

// Calls f(global flat index, global index of the row's first element, dst, len) for
// each innermost row of the box `out` of a tensor of `gshape` placed at `origin`.
template <class T, class F>
void for_rows(const View& out, const Shape& gshape, const std::vector<int64_t>& origin, F&& f) {
  const int rank = out.rank();
  internal_check(static_cast<int>(gshape.size()) == rank && static_cast<int>(origin.size()) == rank);
  internal_check(out.is_contiguous());
  for (int d = 0; d < rank; ++d) internal_check(origin[d] >= 0 && origin[d] + out.shape[d] <= gshape[d]);
  const int64_t n = out.numel();
  if (n == 0) return;
  T* base = out.ptr<T>();
  if (rank == 0) {
    std::vector<int64_t> gi;
    f(int64_t(0), gi, base, int64_t(1));
    return;
  }
  const int64_t len = out.shape.back(), rows = n / len;
  const Strides gs = contiguous_strides(gshape);
  const int64_t grain = n < kSerialElems ? rows : grain_for(rows, std::max<int64_t>(1, 4096 / len));
  parallel_for(rows, grain, [&](int64_t lo, int64_t hi, int) {
    std::vector<int64_t> gi(rank);
    for (int64_t row = lo; row < hi; ++row) {
      int64_t r = row, g = 0;
      for (int d = rank - 2; d >= 0; --d) {
        gi[d] = origin[d] + r % out.shape[d];
        r /= out.shape[d];
      }
      gi[rank - 1] = origin[rank - 1];
      for (int d = 0; d < rank; ++d) g += gi[d] * gs[d];
      f(g, gi, base + row * len, len);
    }
  });
}

template <class T> T from_double(double x) { return fn::detail::float_to<T>(x); }
template <class T> T from_int(int64_t x) { return fn::Cast<int64_t, T>{}(x); }

PhiloxKey key_of(uint64_t seed) { return {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}}; }

// The third counter word separates the streams of rand and randn with one seed.
constexpr uint32_t kStreamRand = 0, kStreamRandn = 1;

PhiloxCtr ctr_of(uint64_t c, uint32_t stream) {
  return {{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), stream, 0}};
}

// Element g of rand takes word g % W of counter g / W (W = 4 words per f32, 2 per f64).
template <class T> void rand_row(PhiloxKey key, int64_t g, T* dst, int64_t len) {
  constexpr int64_t W = std::is_same_v<T, float> ? 4 : 2;
  uint32_t w[4] = {0, 0, 0, 0};
  int64_t have = -1;
  for (int64_t i = 0; i < len; ++i) {
    const int64_t e = g + i, c = e / W, j = e % W;
    if (c != have) philox4x32_10(ctr_of(c, kStreamRand), key, w), have = c;
    if constexpr (W == 4) dst[i] = u01_f32(w[j]);
    else dst[i] = static_cast<T>(u01_f64(w[2 * j], w[2 * j + 1]));
  }
}

// Box-Muller: elements 2p and 2p+1 share one pair of uniforms (cos and sin parts).
template <class T> void randn_row(PhiloxKey key, int64_t g, T* dst, int64_t len) {
  constexpr double kTwoPi = 6.283185307179586476925;
  constexpr int64_t W = std::is_same_v<T, float> ? 4 : 2;  // elements per counter
  uint32_t w[4] = {0, 0, 0, 0};
  int64_t have = -1;
  for (int64_t i = 0; i < len; ++i) {
    const int64_t e = g + i, c = e / W, j = e % W;
    if (c != have) philox4x32_10(ctr_of(c, kStreamRandn), key, w), have = c;
    double u1, u2;
    if constexpr (W == 4) {
      const int p = static_cast<int>(j / 2);
      u1 = u01_open0_f32(w[2 * p]);
      u2 = u01_f32(w[2 * p + 1]);
    } else {
      u1 = u01_open0_f64(w[0], w[1]);
      u2 = u01_f64(w[2], w[3]);
    }
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double z = (e % 2 == 0) ? r * std::cos(kTwoPi * u2) : r * std::sin(kTwoPi * u2);
    dst[i] = static_cast<T>(z);
  }
}

template <class T>
void generate_typed(Op op, const Attrs& a, const Shape& gshape, const std::vector<int64_t>& origin,
                    const View& out) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  using Gi = const std::vector<int64_t>&;
  if constexpr (is_cx<T> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    // Only constants are made in these dtypes; the builders cast every other generator.
    internal_check(op == Op::Full && "a generator of f16, bf16 or complex");
    T v;
    if constexpr (is_cx<T>) v = T(static_cast<decltype(v.re)>(attrs_of<FullAttrs>(op, a).real));
    else v = T(attrs_of<FullAttrs>(op, a).real);
    for_rows<T>(out, gshape, origin, [&](int64_t, Gi, T* d, int64_t n) {
      for (int64_t i = 0; i < n; ++i) d[i] = v;
    });
    return;
  } else {
    switch (op) {
      case Op::Full: {
        const FullAttrs f = attrs_of<FullAttrs>(op, a);
        const T v = kFloat ? from_double<T>(f.real) : from_int<T>(f.integer);
        for_rows<T>(out, gshape, origin, [&](int64_t, Gi, T* d, int64_t n) {
          for (int64_t i = 0; i < n; ++i) d[i] = v;
        });
        return;
      }
      case Op::Arange: {
        internal_check(gshape.size() == 1);
        const ArangeAttrs r = attrs_of<ArangeAttrs>(op, a);
        if constexpr (!kFloat) {
          const int64_t first = r.int_first, step = r.int_step;
          for_rows<T>(out, gshape, origin, [&](int64_t g, Gi, T* d, int64_t n) {
            for (int64_t i = 0; i < n; ++i)
              d[i] = from_int<T>(fn::detail::wrap_add(first, fn::detail::wrap_mul(step, g + i)));
          });
        } else {
          const double first = r.first, step = r.step;
          for_rows<T>(out, gshape, origin, [&](int64_t g, Gi, T* d, int64_t n) {
            for (int64_t i = 0; i < n; ++i) d[i] = from_double<T>(first + step * double(g + i));
          });
        }
        return;
      }
      case Op::Linspace: {
        internal_check(gshape.size() == 1);
        const LinspaceAttrs l = attrs_of<LinspaceAttrs>(op, a);
        const double lo = l.first, hi = l.last;
        const int64_t total = gshape[0];
        const double step = total > 1 ? (hi - lo) / double(total - 1) : 0.0;
        for_rows<T>(out, gshape, origin, [&](int64_t g, Gi, T* d, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            const int64_t e = g + i;
            d[i] = from_double<T>(e == total - 1 && total > 1 ? hi : lo + double(e) * step);
          }
        });
        return;
      }
      case Op::Eye: {
        internal_check(gshape.size() == 2);
        for_rows<T>(out, gshape, origin, [&](int64_t, Gi gi, T* d, int64_t n) {
          for (int64_t i = 0; i < n; ++i) d[i] = from_int<T>(gi[0] == gi[1] + i ? 1 : 0);
        });
        return;
      }
      case Op::Rand:
      case Op::Randn: {
        if constexpr (kFloat) {
          const PhiloxKey key = key_of(attrs_of<RandAttrs>(op, a).seed);
          const bool normal = op == Op::Randn;
          for_rows<T>(out, gshape, origin, [&](int64_t g, Gi, T* d, int64_t n) {
            if (normal) randn_row(key, g, d, n);
            else rand_row(key, g, d, n);
          });
        } else {
          internal_check(!"rand/randn of a non-float dtype");
        }
        return;
      }
      default: internal_check(!"run_generate: not a Generate op");
    }
  }
}

}  // namespace

void run_generate(Op op, const Attrs& attrs, const Shape& global_shape, const std::vector<int64_t>& origin,
                  const View& out) {
  dispatch_any_dtype(out.dtype, [&](auto tag) {
    generate_typed<typename decltype(tag)::type>(op, attrs, global_shape, origin, out);
  });
}

}  // namespace tapestry::cpu
