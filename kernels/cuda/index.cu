// Gather, scatter and scatter_add on the device, as kernels/cpu/index.cpp: the same index
// arithmetic (kernels/index.hpp) and the same order. A scatter runs one thread per line along
// dim (every index element but the indexed coordinate), walking the line in order, so repeats
// resolve as on the CPU (the last write wins, adds in row-major order) and no atomics are needed.
// An out-of-range value is recorded on the device and raised after the kernel as the CPU does.
#include <cuda_runtime.h>

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

Strides zero_dim(Strides s, int dim) {
  s[dim] = 0;
  return s;
}

}  // namespace

void run_index(Op op, const Attrs& attrs, const std::vector<DView>& in, const DView& out) {
  internal_check(op == Op::Gather || op == Op::Scatter || op == Op::ScatterAdd);
  const IndexAttrs a = IndexAttrs::decode(attrs);
  const DView& x = in.at(0);
  const DView& index = in.at(1);
  Context& cx = context();
  DeviceBuffer bad_buf(sizeof(BadIndex));
  BadIndex* bad = static_cast<BadIndex*>(bad_buf.get());
  check(cudaMemsetAsync(bad, 0, sizeof(BadIndex), cx.s()), "index flag");
  const int64_t size = op == Op::Gather ? x.shape[a.dim] : out.shape[a.dim];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto launch = [&](auto itag) {
      using I = decltype(itag);
      const I* ip = static_cast<const I*>(index.data);
      if (op == Op::Gather) {
        const Strides xr = zero_dim(x.strides, a.dim);
        const Strided<3> st = make_strided<3>(index.shape, {&xr, &index.strides, &out.strides});
        const int64_t n = index.numel();
        gather_kernel<<<blocks_for(n), kThreads, 0, cx.s()>>>(
            static_cast<const T*>(x.data), ip, static_cast<T*>(out.data), st, x.strides[a.dim], size, n, bad);
        return;
      }
      copy_view(x, out);
      const DView& src = in.at(2);
      Shape lines_shape = index.shape;
      lines_shape[a.dim] = 1;
      const Strides orr = zero_dim(out.strides, a.dim);
      const Strided<3> st = make_strided<3>(lines_shape, {&orr, &index.strides, &src.strides});
      const int64_t lines = numel(lines_shape), len = index.shape[a.dim];
      const I* iptr = ip;
      const T* sp = static_cast<const T*>(src.data);
      T* op_ = static_cast<T*>(out.data);
      if (op == Op::Scatter)
        scatter_kernel<T, I, fn::ScatterSet><<<blocks_for(lines), kThreads, 0, cx.s()>>>(
            iptr, sp, op_, st, len, index.strides[a.dim], src.strides[a.dim], out.strides[a.dim], size, lines,
            bad);
      else
        scatter_kernel<T, I, fn::ScatterAccumulate><<<blocks_for(lines), kThreads, 0, cx.s()>>>(
            iptr, sp, op_, st, len, index.strides[a.dim], src.strides[a.dim], out.strides[a.dim], size, lines,
            bad);
    };
    if (index.dtype == DType::I32) launch(int32_t{});
    else if (index.dtype == DType::I8) launch(int8_t{});
    else if (index.dtype == DType::U8) launch(uint8_t{});
    else launch(int64_t{});
  });
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
