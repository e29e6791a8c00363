// RAII for the CUDA runtime and cuBLAS objects, and the calling thread's execution context.
//   Context& cx = context();                      // device chosen, stream and cuBLAS handle made
//   kernel<<<g, b, 0, cx.stream.get()>>>(...);  check_launch("map");
//   Event e; e.record(cx.stream.get()); e.wait();
// Every handle is owned by exactly one object whose destructor releases it, so an exception
// thrown between creation and use (a failed launch, a bad shape) leaks nothing.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>

#include "engine/ir/error.hpp"

namespace tapestry::cuda {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    user_error("CUDA ", what, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}
inline void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) user_error("cuBLAS ", what, ": status ", static_cast<int>(s));
}
// After a launch: a bad configuration surfaces here, a fault inside the kernel at the next sync.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

class Stream {
 public:
  Stream() { check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void synchronize() const { check(cudaStreamSynchronize(s_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { check(cudaEventCreate(&e_), "cudaEventCreate"); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { check(cudaEventRecord(e_, s), "cudaEventRecord"); }
  void wait() const { check(cudaEventSynchronize(e_), "cudaEventSynchronize"); }
  // Milliseconds from `start` to this event (both recorded and complete).
  float since(const Event& start) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.e_, e_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t s) {
    check(cublasCreate(&h_), "cublasCreate");
    cublasSetStream(h_, s);
  }
  ~CublasHandle() {
    if (h_) cublasDestroy(h_);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// One per host thread: a stream (so threads never serialise on the legacy default stream) and
// a cuBLAS handle bound to it, created lazily (cuBLAS costs ~100 ms to initialise).
struct Context {
  int device = 0;
  Stream stream;
  cudaStream_t s() const { return stream.get(); }
  cublasHandle_t blas();

 private:
  std::unique_ptr<CublasHandle> blas_;
};
Context& context();

}  // namespace tapestry::cuda
