// Elementwise kernels over the shared functors (kernels/functors.hpp), one per
// (functor, dtype): the same math as the CPU map, so CPU tests check it.
#include <cuda_runtime.h>

#include "engine/ir/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cuda {
namespace {

template <class F, class T, class R>
__global__ void unary_kernel(R* out, const T* a, int64_t n) {
  F f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = f(a[i]);
}

template <class F, class T, class R>
__global__ void binary_kernel(R* out, const T* a, const T* b, int64_t n) {
  F f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = f(a[i], b[i]);
}

template <class T>
__global__ void where_kernel(T* out, const bool* c, const T* a, const T* b, int64_t n) {
  fn::Where<T> f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = f(c[i], a[i], b[i]);
}

struct Launch {
  int blocks, threads;
};
Launch launch_for(int64_t n) {
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  return {static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), threads};
}

void check_launch() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) user_error("CUDA map kernel: ", cudaGetErrorString(e));
}

template <template <class> class F, class T>
void unary(const void* a, void* out, int64_t n) {
  using R = decltype(F<T>{}(T{}));
  const Launch l = launch_for(n);
  unary_kernel<F<T>, T, R><<<l.blocks, l.threads>>>(static_cast<R*>(out), static_cast<const T*>(a), n);
}

template <template <class> class F, class T>
void binary(const void* a, const void* b, void* out, int64_t n) {
  using R = decltype(F<T>{}(T{}, T{}));
  const Launch l = launch_for(n);
  binary_kernel<F<T>, T, R><<<l.blocks, l.threads>>>(static_cast<R*>(out), static_cast<const T*>(a),
                                                     static_cast<const T*>(b), n);
}

}  // namespace

void map_on_device(Op op, DType in, DType out_dtype, const void* a, const void* b, const void* c,
                   void* out, int64_t n) {
  if (n <= 0) return;
  dispatch_dtype(in, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Launch l = launch_for(n);
    switch (op) {
#define TP_CASE(name)                  \
  case Op::name:                       \
    unary<fn::name, T>(a, out, n);     \
    break;
      TAPESTRY_UNARY_FUNCTORS(TP_CASE)
#undef TP_CASE
#define TP_CASE(name)                  \
  case Op::name:                       \
    binary<fn::name, T>(a, b, out, n); \
    break;
      TAPESTRY_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
      case Op::Where:
        where_kernel<T><<<l.blocks, l.threads>>>(static_cast<T*>(out), static_cast<const bool*>(a),
                                                  static_cast<const T*>(b), static_cast<const T*>(c), n);
        break;
      case Op::Cast:
        dispatch_dtype(out_dtype, [&](auto otag) {
          using O = typename decltype(otag)::type;
          unary_kernel<fn::Cast<T, O>, T, O>
              <<<l.blocks, l.threads>>>(static_cast<O*>(out), static_cast<const T*>(a), n);
        });
        break;
      default:
        internal_check(!"map_on_device: not a Map op");
    }
  });
  check_launch();
}

}  // namespace tapestry::cuda
