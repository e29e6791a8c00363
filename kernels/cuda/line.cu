// The line ops on the device, as kernels/cpu/line.cpp: scans, stable sort (and topk, its first
// k), searchsorted and the scatter-add of sort's gradient. The element math is the CPU's, from
// kernels/scan.hpp and kernels/line_scan.hpp (TP_HD), which the CPU tests exercise.
// - Scans: one thread a chunk of a line (line_scan.hpp's three passes); short or many lines are
//   one chunk a thread, in the CPU's order, so their results are bitwise the CPU's.
// - Sort: lines of at most 32 elements are insertion-sorted one thread a line (scan::small_sort, per-thread
// memory).
//   Longer ones: every element becomes its order key (scan::order_key, descending flipped) beside its
//   0-based position, and cub's radix sort (stable) sorts the pairs: one device-wide sort for
//   one line, a segmented sort (a block a line) for several. The positions are then the stable
//   sort's order: the indices (+1) or the values gathered. Keys are u64 over the dtype's bits
//   only (one template instantiation, so one compile; the bit range keeps f32 at 4 passes).
// - searchsorted: one thread a value, scan::bound. line_scatter_add: one thread a line, in order.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <type_traits>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/line_scan.hpp"
#include "kernels/scan.hpp"

namespace tapestry::cuda {
namespace {

constexpr int64_t kScanThreads = 1 << 16;  // enough chunks to fill a GPU (line_scan.hpp)

// --- scans -------------------------------------------------------------------------------
template <class Scan, class T>
__global__ void scan_total_kernel(Scan s, const T* x, typename Scan::State* agg, scan::ChunkedLines C) {
  const int64_t count = C.lines.count();
  TP_GRID_LOOP(t, count * (C.chunks - 1)) { agg[t] = scan::chunk_total(s, x, C, t % count, t / count); }
}
template <class Scan>
__global__ void scan_carry_kernel(Scan s, typename Scan::State* agg, scan::ChunkedLines C) {
  TP_GRID_LOOP(l, C.lines.count()) { scan::chunk_carries(s, agg, C, l); }
}
template <class Scan, class T>
__global__ void scan_chunk_kernel(Scan s, const T* x, void* out, const typename Scan::State* agg,
                                  scan::ChunkedLines C) {
  const int64_t count = C.lines.count();
  TP_GRID_LOOP(t, C.threads()) {
    const int64_t c = t / count;
    scan::chunk_scan(s, x, out, C, t % count, c, c > 0 ? agg + t : nullptr);
  }
}

template <class Scan, class T>
void run_scan(const Scan& s, const T* x, void* out, const scan::ChunkedLines& C) {
  cudaStream_t st = context().s();
  DeviceBuffer agg;
  typename Scan::State* ap = nullptr;
  if (C.chunks > 1) {
    const int64_t count = C.lines.count();
    agg = DeviceBuffer(sizeof(typename Scan::State) * count * C.chunks);
    ap = static_cast<typename Scan::State*>(agg.get());
    scan_total_kernel<<<blocks_for(count * (C.chunks - 1)), kThreads, 0, st>>>(s, x, ap, C);
    scan_carry_kernel<<<blocks_for(count), kThreads, 0, st>>>(s, ap, C);
  }
  scan_chunk_kernel<<<blocks_for(C.threads()), kThreads, 0, st>>>(s, x, out, ap, C);
  check_launch("scan kernel");
}

// --- sort --------------------------------------------------------------------------------
// Line l's element i (scan::Lines) to position l * n + i of the key and order arrays.
template <class T>
__global__ void sort_keys_kernel(const T* x, uint64_t* keys, int64_t* order, scan::Lines L, int64_t l0,
                                 int64_t items, bool descending) {
  TP_GRID_LOOP(p, items) {
    const int64_t l = l0 + p / L.n, i = p % L.n;
    const uint64_t k = scan::order_key(x[L.start(l) + i * L.inner]);
    keys[p] = descending ? scan::descending_key<T>(k) : k;
    order[p] = i;
  }
}
__global__ void segment_offsets_kernel(int* offsets, int64_t segments, int64_t n) {
  TP_GRID_LOOP(s, segments + 1) { offsets[s] = static_cast<int>(s * n); }
}
// The first k of each sorted line into out (lines of k along the same dim, Lo).
template <class T>
__global__ void sort_out_kernel(const T* x, const int64_t* order, void* out, scan::Lines L, scan::Lines Lo,
                                int64_t l0, int64_t items, bool indices) {
  TP_GRID_LOOP(p, items) {
    const int64_t l = l0 + p / Lo.n, i = p % Lo.n;
    const int64_t o = order[(l - l0) * L.n + i];
    const int64_t at = Lo.start(l) + i * Lo.inner;
    if (indices) static_cast<int64_t*>(out)[at] = o + 1;
    else static_cast<T*>(out)[at] = x[L.start(l) + o * L.inner];
  }
}

// Short lines: one thread a line, insertion-sorted in per-thread memory (scan::small_sort), no scratch.
template <class T>
__global__ void small_sort_kernel(const T* x, void* out, scan::Lines L, scan::Lines Lo, bool descending,
                                  bool indices) {
  TP_GRID_LOOP(l, L.count()) {
    int order[scan::kSmallSort];
    const int64_t b = L.start(l), bo = Lo.start(l);
    scan::small_sort(x + b, L.inner, static_cast<int>(L.n), descending, order);
    for (int64_t i = 0; i < Lo.n; ++i) {
      if (indices) static_cast<int64_t*>(out)[bo + i * Lo.inner] = order[i] + 1;
      else static_cast<T*>(out)[bo + i * Lo.inner] = x[b + order[i] * L.inner];
    }
  }
}

template <class T>
void run_sort(const T* x, void* out, const scan::Lines& L, const scan::Lines& Lo, bool descending,
              bool indices) {
  cudaStream_t st = context().s();
  if (L.n <= scan::kSmallSort) {
    small_sort_kernel<<<blocks_for(L.count()), kThreads, 0, st>>>(x, out, L, Lo, descending, indices);
    return check_launch("small sort kernel");
  }
  // Lines go in batches of at most 2^27 elements: 32 bytes of scratch an element (keys and
  // positions, in and out) stay within 4 GiB, and cub's segmented sort counts in int.
  const int64_t per_batch = L.n >= (int64_t(1) << 27) ? 1 : (int64_t(1) << 27) / L.n;
  const int64_t batch = per_batch < L.count() ? per_batch : L.count();
  const int64_t most = batch * L.n;
  DeviceBuffer keys(8 * most), keys_out(8 * most), order(8 * most), order_out(8 * most);
  DeviceBuffer offsets(sizeof(int) * (batch + 1));
  auto* kp = static_cast<uint64_t*>(keys.get());
  auto* ko = static_cast<uint64_t*>(keys_out.get());
  auto* op = static_cast<int64_t*>(order.get());
  auto* oo = static_cast<int64_t*>(order_out.get());
  auto* offs = static_cast<int*>(offsets.get());
  const int bits = scan::key_bits<T>();
  DeviceBuffer temp;
  for (int64_t l0 = 0; l0 < L.count(); l0 += batch) {
    const int64_t lines = l0 + batch < L.count() ? batch : L.count() - l0, items = lines * L.n;
    sort_keys_kernel<<<blocks_for(items), kThreads, 0, st>>>(x, kp, op, L, l0, items, descending);
    size_t bytes = 0;
    if (lines == 1) {
      check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kp, ko, op, oo, items, 0, bits, st), "cub sort");
      if (!temp.get() || bytes > temp.bytes()) temp = DeviceBuffer(bytes);  // never null: null asks the size
      check(cub::DeviceRadixSort::SortPairs(temp.get(), bytes, kp, ko, op, oo, items, 0, bits, st),
            "cub sort");
    } else {
      segment_offsets_kernel<<<blocks_for(lines + 1), kThreads, 0, st>>>(offs, lines, L.n);
      check(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, bytes, kp, ko, op, oo, static_cast<int>(items),
                                                     static_cast<int>(lines), offs, offs + 1, 0, bits, st),
            "cub segmented sort");
      if (!temp.get() || bytes > temp.bytes()) temp = DeviceBuffer(bytes);  // never null: null asks the size
      check(
          cub::DeviceSegmentedRadixSort::SortPairs(temp.get(), bytes, kp, ko, op, oo, static_cast<int>(items),
                                                   static_cast<int>(lines), offs, offs + 1, 0, bits, st),
          "cub segmented sort");
    }
    const int64_t out_items = lines * Lo.n;
    sort_out_kernel<<<blocks_for(out_items), kThreads, 0, st>>>(x, oo, out, L, Lo, l0, out_items, indices);
    check_launch("sort kernel");
  }
}

// --- searchsorted, line_scatter_add ------------------------------------------------------
template <class T>
__global__ void searchsorted_kernel(const T* seq, int64_t stride, int64_t n, const T* v, int64_t* out,
                                    int64_t count, bool right) {
  TP_GRID_LOOP(i, count) { out[i] = scan::bound(seq, stride, n, v[i], right) + 1; }
}

// y[.., idx[i] - 1, ..] += g[.., i, ..] along each line, in order; a bad index is flagged.
template <class T>
__global__ void scatter_add_kernel(const T* g, const int64_t* idx, T* y, scan::Lines L, int* bad) {
  TP_GRID_LOOP(l, L.count()) {
    const int64_t b = L.start(l), s = L.inner;
    for (int64_t i = 0; i < L.n; ++i) y[b + i * s] = T(0);
    for (int64_t i = 0; i < L.n; ++i) {
      const int64_t k = idx[b + i * s] - 1;
      if (k < 0 || k >= L.n) {
        *bad = 1;
        continue;
      }
      y[b + k * s] += g[b + i * s];
    }
  }
}

// v itself when contiguous, else a contiguous device copy held by keep.
DView contiguous(const DView& v, DeviceBuffer& keep) {
  if (v.is_contiguous()) return v;
  keep = DeviceBuffer(std::max<int64_t>(1, v.numel()) * dtype_size(v.dtype));
  const DView c = dview(keep.get(), v.dtype, v.shape);
  copy_view(v, c);
  return c;
}

}  // namespace

bool line_supported(Op op, DType in) {
  if (is_half(in) || is_complex(in)) return false;
  switch (op) {
    case Op::Cumsum:
    case Op::Cumprod:
    case Op::LineScatterAdd: return in != DType::Bool;
    case Op::Logcumsumexp: return is_float(in);
    case Op::Cummax:
    case Op::Cummin:
    case Op::Sort:
    case Op::Searchsorted: return true;
    default: return false;
  }
}

void run_line(Op op, const Attrs& attrs, const std::vector<DView>& in, const DView& out) {
  const LineAttrs a = attrs_of<LineAttrs>(op, attrs);
  internal_check(out.is_contiguous() && !in.empty());
  if (op == Op::Fft) return run_fft(in[0], out, static_cast<int>(a.dim), a.reverse);
  internal_check(line_supported(op, in[0].dtype));
  if (out.numel() == 0) return;
  DeviceBuffer keep0, keep1;
  if (op == Op::Searchsorted) {  // the sorted sequence is read in place, at its stride
    const DView& seq = in[0];
    const DView v = contiguous(in.at(1), keep1);
    internal_check(seq.rank() == 1 && v.dtype == seq.dtype && out.shape == v.shape &&
                   out.dtype == DType::I64);
    dispatch_dtype(seq.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t count = v.numel();
      searchsorted_kernel<<<blocks_for(count), kThreads, 0, context().s()>>>(
          static_cast<const T*>(seq.data), seq.strides[0], seq.shape[0], static_cast<const T*>(v.data),
          static_cast<int64_t*>(out.data), count, a.right);
    });
    return check_launch("searchsorted kernel");
  }
  const DView x = contiguous(in[0], keep0);
  internal_check(a.dim >= 0 && a.dim < x.rank() && out.rank() == x.rank());
  const int dim = static_cast<int>(a.dim);
  const scan::Lines L(x.shape, dim);
  if (op == Op::Sort) {  // topk when out's lines are shorter: the first k of the sort
    Shape k_shape = x.shape;
    k_shape[dim] = out.shape[dim];
    internal_check(out.shape == k_shape && out.shape[dim] <= x.shape[dim]);
    return dispatch_dtype(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run_sort(static_cast<const T*>(x.data), out.data, L, scan::Lines(out.shape, dim), a.reverse, a.indices);
    });
  }
  internal_check(out.shape == x.shape);
  if (op == Op::LineScatterAdd) {
    DeviceBuffer keep2, flag(sizeof(int));
    const DView idx = contiguous(in[1], keep2);
    internal_check(idx.dtype == DType::I64 && idx.shape == x.shape);
    Context& cx = context();
    check(cudaMemsetAsync(flag.get(), 0, sizeof(int), cx.s()), "scatter-add flag");
    dispatch_dtype(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>)
        scatter_add_kernel<<<blocks_for(L.count()), kThreads, 0, cx.s()>>>(
            static_cast<const T*>(x.data), static_cast<const int64_t*>(idx.data), static_cast<T*>(out.data),
            L, static_cast<int*>(flag.get()));
    });
    check_launch("line_scatter_add kernel");
    int bad = 0;
    check(cudaMemcpyAsync(&bad, flag.get(), sizeof bad, cudaMemcpyDeviceToHost, cx.s()), "scatter-add flag");
    cx.stream.synchronize();
    internal_check(bad == 0);  // the indices come from sort or cummax
    return;
  }
  // The scans. cummax/cummin run forward, as the CPU's (their gradients do not reverse them).
  const bool forward_only = op == Op::Cummax || op == Op::Cummin;
  const scan::ChunkedLines C = scan::chunk_lines(L, a.reverse && !forward_only, kScanThreads);
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(x.data);
    switch (op) {
      case Op::Cumsum:
        if constexpr (!std::is_same_v<T, bool>) run_scan(scan::ScanOf<Op::Cumsum, T>{}, xp, out.data, C);
        break;
      case Op::Cumprod:
        if constexpr (!std::is_same_v<T, bool>) run_scan(scan::ScanOf<Op::Cumprod, T>{}, xp, out.data, C);
        break;
      case Op::Logcumsumexp:
        if constexpr (std::is_floating_point_v<T>)
          run_scan(scan::ScanOf<Op::Logcumsumexp, T>{}, xp, out.data, C);
        break;
      case Op::Cummax:
      case Op::Cummin: {
        scan::ScanOf<Op::Cummax, T> mx;
        scan::ScanOf<Op::Cummin, T> mn;
        mx.indices = mn.indices = a.indices;
        if (op == Op::Cummax) run_scan(mx, xp, out.data, C);
        else run_scan(mn, xp, out.data, C);
        break;
      }
      default: internal_fail(__FILE__, __LINE__, "run_line: not a line op");
    }
  });
}

}  // namespace tapestry::cuda
