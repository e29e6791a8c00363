// Device discovery and the host-array round trip of cuda_backend.hpp.
#include <cuda_runtime.h>

#include "engine/ir/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"

namespace tapestry::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) user_error("CUDA ", what, ": ", cudaGetErrorString(e));
}

// Device memory released on every path (an exception included).
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

int cuda_device_count() {
  int n = 0;  // left unwritten when the call fails (no driver: cudaErrorInsufficientDriver)
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return n;
}

bool map_through_device(Op op, DType in, DType out_dtype, const void* a, const void* b,
                        const void* c, void* out, int64_t n) {
  if (cuda_device_count() == 0) return false;
  const size_t isz = dtype_size(in), osz = dtype_size(out_dtype);
  // Where's condition is bool; the other operands have dtype `in`.
  const size_t asz = op == Op::Where ? 1 : isz;
  DeviceBuffer da(asz * n), db(isz * n), dc(isz * n), dout(osz * n);
  check(cudaMemcpy(da.p, a, asz * n, cudaMemcpyHostToDevice), "copy a");
  if (b) check(cudaMemcpy(db.p, b, isz * n, cudaMemcpyHostToDevice), "copy b");
  if (c) check(cudaMemcpy(dc.p, c, isz * n, cudaMemcpyHostToDevice), "copy c");
  map_on_device(op, in, out_dtype, da.p, b ? db.p : nullptr, c ? dc.p : nullptr, dout.p, n);
  check(cudaMemcpy(out, dout.p, osz * n, cudaMemcpyDeviceToHost), "copy out");
  return true;
}

}  // namespace tapestry::cuda
