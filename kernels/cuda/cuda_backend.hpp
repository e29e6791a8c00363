// The CUDA backend's host API (built when TAPESTRY_HAVE_CUDA; needs no GPU to link).
//   if (cuda::cuda_device_count() > 0)
//     cuda::map_on_device(Op::Tanh, DType::F32, d_x, nullptr, nullptr, d_y, n);  // device pointers
#pragma once

#include <cstdint>

#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"

namespace tapestry::cuda {

// GPUs usable by this process; 0 without a driver (cudaGetDeviceCount fails then).
int cuda_device_count();

// out[i] = op(a[i], b[i], c[i]) for n elements of device memory, through the same
// functors as the CPU kernels. `in` is the operand dtype (for Cast, the source dtype
// and `out_dtype` the target). Unused operands are null. Synchronous; throws
// tapestry::Error on a CUDA failure and InternalError for a non-Map op.
void map_on_device(Op op, DType in, DType out_dtype, const void* a, const void* b, const void* c,
                   void* out, int64_t n);

// The same on host arrays, copied to and from the device (for tests). False when no
// device is present.
bool map_through_device(Op op, DType in, DType out_dtype, const void* a, const void* b,
                        const void* c, void* out, int64_t n);

}  // namespace tapestry::cuda
