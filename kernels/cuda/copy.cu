// Strided copies on the device and the host<->device transfers (slice pack and unpack).
//   cuda::copy_view(src_slice, dst_block_view);  // pack a slice / unpack into a block, any strides
//   cuda::to_device(host_view, dview);  cuda::to_host(dview, host_value->view());
// A transfer always moves one contiguous run: a strided host view is packed on the host first and
// a strided device view on the device, so PCIe sees a single large copy.
#include <cuda_runtime.h>

#include <cstring>

#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"

namespace tapestry::cuda {
namespace {

// Copies by element size: the dtype only matters for its width.
template <class W> __global__ void copy_kernel(const W* src, W* dst, const Strided<2> st, int64_t n) {
  TP_GRID_LOOP(i, n) {
    if (st.nd == 1) dst[i * st.s[1][0]] = src[i * st.s[0][0]];
    else dst[st.offset(i, 1)] = src[st.offset(i, 0)];
  }
}

}  // namespace

void copy_view(const DView& src, const DView& dst) {
  internal_check(src.shape == dst.shape && src.dtype == dst.dtype);
  const int64_t n = dst.numel();
  if (n == 0) return;
  Context& cx = context();
  const size_t w = dtype_size(dst.dtype);
  if (src.is_contiguous() && dst.is_contiguous()) {
    check(cudaMemcpyAsync(dst.data, src.data, n * w, cudaMemcpyDeviceToDevice, cx.s()), "copy");
    return;
  }
  const Strided<2> st = make_strided<2>(dst.shape, {&src.strides, &dst.strides});
  switch (w) {
    case 1:
      copy_kernel<<<blocks_for(n), kThreads, 0, cx.s()>>>(static_cast<const uint8_t*>(src.data),
                                                          static_cast<uint8_t*>(dst.data), st, n);
      break;
    case 2:
      copy_kernel<<<blocks_for(n), kThreads, 0, cx.s()>>>(static_cast<const uint16_t*>(src.data),
                                                          static_cast<uint16_t*>(dst.data), st, n);
      break;
    case 4:
      copy_kernel<<<blocks_for(n), kThreads, 0, cx.s()>>>(static_cast<const uint32_t*>(src.data),
                                                          static_cast<uint32_t*>(dst.data), st, n);
      break;
    case 16:
      copy_kernel<<<blocks_for(n), kThreads, 0, cx.s()>>>(static_cast<const c128*>(src.data),
                                                          static_cast<c128*>(dst.data), st, n);
      break;
    default:
      copy_kernel<<<blocks_for(n), kThreads, 0, cx.s()>>>(static_cast<const uint64_t*>(src.data),
                                                          static_cast<uint64_t*>(dst.data), st, n);
  }
  check_launch("copy kernel");
}

void to_device(const View& host, const DView& dst) {
  internal_check(host.shape == dst.shape && host.dtype == dst.dtype && dst.is_contiguous());
  const int64_t n = dst.numel();
  if (n == 0) return;
  Context& cx = context();
  const size_t bytes = n * dtype_size(dst.dtype);
  if (host.is_contiguous()) {
    check(cudaMemcpyAsync(dst.data, host.byte_ptr(), bytes, cudaMemcpyHostToDevice, cx.s()), "to_device");
    cx.stream.synchronize();  // the host view may be freed or overwritten when this returns
    return;
  }
  auto packed = Value::alloc(host.dtype, host.shape);
  cpu::copy_view(host, packed->view());
  check(cudaMemcpyAsync(dst.data, packed->view().byte_ptr(), bytes, cudaMemcpyHostToDevice, cx.s()),
        "to_device");
  cx.stream.synchronize();
}

void to_host(const DView& src, const View& host) {
  internal_check(host.shape == src.shape && host.dtype == src.dtype && host.is_contiguous());
  const int64_t n = src.numel();
  if (n == 0) return;
  Context& cx = context();
  const size_t bytes = n * dtype_size(src.dtype);
  if (src.is_contiguous()) {
    check(cudaMemcpyAsync(host.byte_ptr(), src.data, bytes, cudaMemcpyDeviceToHost, cx.s()), "to_host");
  } else {
    DeviceBuffer tmp(bytes);
    const DView packed = dview(tmp.get(), src.dtype, src.shape);
    copy_view(src, packed);
    check(cudaMemcpyAsync(host.byte_ptr(), tmp.get(), bytes, cudaMemcpyDeviceToHost, cx.s()), "to_host");
  }
  cx.stream.synchronize();
}

}  // namespace tapestry::cuda
