// Gather, scatter, scatter_add and nonzero on the device, as kernels/cpu/index.cpp: the same index
// arithmetic (kernels/index.hpp) and the same order. A scatter runs one thread per line along
// dim (every index element but the indexed coordinate), walking the line in order, so repeats
// resolve as on the CPU (the last write wins, adds in row-major order) and no atomics are needed.
// An out-of-range value is recorded on the device and raised after the kernel as the CPU does.
// Nonzero is a count pass and a scan-placed write: each element's flag, their exclusive prefix
// sum (cub) as each true element's slot, then every true element writes its 1-based row-major
// position there, so the order is the CPU's.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/index.hpp"

namespace tapestry::cuda {
namespace {

// The first bad index value seen: {1, value} once set.
struct BadIndex {
  unsigned long long set;
  long long value;
};

__device__ void record(BadIndex* bad, int64_t v) {
  if (atomicCAS(&bad->set, 0ull, 1ull) == 0ull) bad->value = v;
}

// st over index's shape: operand 0 x (dim stride 0), 1 index, 2 out.
template <class T, class I>
__global__ void gather_kernel(const T* x, const I* index, T* out, Strided<3> st, int64_t xs, int64_t size,
                              int64_t n, BadIndex* bad) {
  TP_GRID_LOOP(i, n) {
    const int64_t v = static_cast<int64_t>(index[st.offset(i, 1)]);
    const int64_t p = fn::index_position(v, size);
    if (p < 0) {
      record(bad, v);
      continue;
    }
    out[st.offset(i, 2)] = x[st.offset(i, 0) + p * xs];
  }
}

// st over index's shape with dim 1: operand 0 out (dim stride 0), 1 index, 2 src; each line
// has `len` elements at index/src strides is/ss.
template <class T, class I, class Put>
__global__ void scatter_kernel(const I* index, const T* src, T* out, Strided<3> st, int64_t len, int64_t is,
                               int64_t ss, int64_t os, int64_t size, int64_t lines, BadIndex* bad) {
  TP_GRID_LOOP(i, lines) {
    const int64_t o = st.offset(i, 0), io = st.offset(i, 1), so = st.offset(i, 2);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t v = static_cast<int64_t>(index[io + j * is]);
      const int64_t p = fn::index_position(v, size);
      if (p < 0) {
        record(bad, v);
        return;
      }
      Put{}(out[o + p * os], src[so + j * ss]);
    }
  }
}

// Nonzero: flag[i] = mask's row-major element i is true.
__global__ void nonzero_flags(const bool* mask, Strided<1> st, int64_t* flag, int64_t n) {
  TP_GRID_LOOP(i, n) { flag[i] = mask[st.offset(i, 0)] ? 1 : 0; }
}
// Each true element to its slot; a slot past the observed count is flagged (count > want).
__global__ void nonzero_place(const int64_t* flag, const int64_t* slot, int64_t* out, int64_t want, int64_t n,
                              int* bad) {
  TP_GRID_LOOP(i, n) {
    if (!flag[i]) continue;
    if (slot[i] < want) out[slot[i]] = i + 1;
    else *bad = 1;
  }
}

void run_nonzero(const DView& mask, const DView& out) {
  internal_check(mask.dtype == DType::Bool && out.dtype == DType::I64 && out.is_contiguous());
  const int64_t n = mask.numel(), want = out.numel();
  internal_check(n > 0 || want == 0);
  if (n == 0) return;
  Context& cx = context();
  DeviceBuffer flags(8 * n), slots(8 * n), bad_buf(sizeof(int));
  auto* f = static_cast<int64_t*>(flags.get());
  auto* sl = static_cast<int64_t*>(slots.get());
  const Strided<1> st = make_strided<1>(mask.shape, {&mask.strides});
  nonzero_flags<<<blocks_for(n), kThreads, 0, cx.s()>>>(static_cast<const bool*>(mask.data), st, f, n);
  check_launch("nonzero flags");
  size_t bytes = 0;
  check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, f, sl, n, cx.s()), "cub scan");
  DeviceBuffer temp(bytes);
  check(cub::DeviceScan::ExclusiveSum(temp.get(), bytes, f, sl, n, cx.s()), "cub scan");
  check(cudaMemsetAsync(bad_buf.get(), 0, sizeof(int), cx.s()), "nonzero flag");
  nonzero_place<<<blocks_for(n), kThreads, 0, cx.s()>>>(f, sl, static_cast<int64_t*>(out.data), want, n,
                                                        static_cast<int*>(bad_buf.get()));
  check_launch("nonzero place");
  int64_t last[2] = {0, 0};  // the last slot and flag: their sum is the count
  int bad = 0;
  check(cudaMemcpyAsync(&last[0], sl + n - 1, 8, cudaMemcpyDeviceToHost, cx.s()), "nonzero count");
  check(cudaMemcpyAsync(&last[1], f + n - 1, 8, cudaMemcpyDeviceToHost, cx.s()), "nonzero count");
  check(cudaMemcpyAsync(&bad, bad_buf.get(), sizeof bad, cudaMemcpyDeviceToHost, cx.s()), "nonzero flag");
  cx.stream.synchronize();
  internal_check(bad == 0 && last[0] + last[1] == want);  // the count was observed from this very mask
}

// A 16-byte element (c128) moved whole; 8-byte aligned, as c128 is.
struct Bytes16 {
  uint64_t lo, hi;
};

Strides zero_dim(Strides s, int dim) {
  s[dim] = 0;
  return s;
}

}  // namespace

void run_index(Op op, const Attrs& attrs, const std::vector<DView>& in, const DView& out) {
  if (op == Op::Nonzero) return run_nonzero(in.at(0), out);
  internal_check(op == Op::Gather || op == Op::Scatter || op == Op::ScatterAdd);
  const IndexAttrs a = IndexAttrs::decode(attrs);
  const DView& x = in.at(0);
  const DView& index = in.at(1);
  Context& cx = context();
  DeviceBuffer bad_buf(sizeof(BadIndex));
  BadIndex* bad = static_cast<BadIndex*>(bad_buf.get());
  check(cudaMemsetAsync(bad, 0, sizeof(BadIndex), cx.s()), "index flag");
  const int64_t size = op == Op::Gather ? x.shape[a.dim] : out.shape[a.dim];
  // Gather and scatter move elements: one kernel per element width serves every dtype (f16,
  // bf16, c64, c128 included). scatter_add adds in the element's type, reals and complex (f16
  // and bf16 add in f32: the builders cast them).
  auto body = [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr bool moves = std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t> ||
                           std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t> ||
                           std::is_same_v<T, Bytes16>;
    auto launch = [&](auto itag) {
      using I = decltype(itag);
      const I* ip = static_cast<const I*>(index.data);
      if constexpr (moves) {
        if (op == Op::Gather) {
          const Strides xr = zero_dim(x.strides, a.dim);
          const Strided<3> st = make_strided<3>(index.shape, {&xr, &index.strides, &out.strides});
          const int64_t n = index.numel();
          gather_kernel<<<blocks_for(n), kThreads, 0, cx.s()>>>(static_cast<const T*>(x.data), ip,
                                                                static_cast<T*>(out.data), st,
                                                                x.strides[a.dim], size, n, bad);
          return;
        }
      }
      copy_view(x, out);
      const DView& src = in.at(2);
      Shape lines_shape = index.shape;
      lines_shape[a.dim] = 1;
      const Strides orr = zero_dim(out.strides, a.dim);
      const Strided<3> st = make_strided<3>(lines_shape, {&orr, &index.strides, &src.strides});
      const int64_t lines = numel(lines_shape), len = index.shape[a.dim];
      const T* sp = static_cast<const T*>(src.data);
      T* op_ = static_cast<T*>(out.data);
      if constexpr (moves)
        scatter_kernel<T, I, fn::ScatterSet><<<blocks_for(lines), kThreads, 0, cx.s()>>>(
            ip, sp, op_, st, len, index.strides[a.dim], src.strides[a.dim], out.strides[a.dim], size, lines,
            bad);
      else
        scatter_kernel<T, I, fn::ScatterAccumulate><<<blocks_for(lines), kThreads, 0, cx.s()>>>(
            ip, sp, op_, st, len, index.strides[a.dim], src.strides[a.dim], out.strides[a.dim], size, lines,
            bad);
    };
    if (index.dtype == DType::I32) launch(int32_t{});
    else if (index.dtype == DType::I8) launch(int8_t{});
    else if (index.dtype == DType::U8) launch(uint8_t{});
    else launch(int64_t{});
  };
  if (op == Op::ScatterAdd) {
    if (is_complex(x.dtype)) dispatch_complex(x.dtype, body);
    else dispatch_dtype(x.dtype, body);
  } else {
    switch (dtype_size(x.dtype)) {
      case 1: body(TypeTag<uint8_t>{}); break;
      case 2: body(TypeTag<uint16_t>{}); break;
      case 4: body(TypeTag<uint32_t>{}); break;
      case 8: body(TypeTag<uint64_t>{}); break;
      default: internal_check(dtype_size(x.dtype) == 16); body(TypeTag<Bytes16>{});
    }
  }
  check_launch("index kernel");
  BadIndex h{};
  check(cudaMemcpyAsync(&h, bad, sizeof h, cudaMemcpyDeviceToHost, cx.s()), "index flag");
  cx.stream.synchronize();
  if (h.set)
    user_error(index_fn_name(a.fn), ": index ", static_cast<int64_t>(h.value), " is out of range for dim ",
               a.dim + 1, " of size ", size, " (valid: 1..", size, " or -", size, "..-1; x ",
               shape_str(x.shape), ", index ", shape_str(index.shape), ")");
}

}  // namespace tapestry::cuda
