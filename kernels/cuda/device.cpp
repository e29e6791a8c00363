// The device: discovery, the per-thread context, device memory through the caching allocator,
// and which ops this backend runs. Host C++ only (g++, not nvcc: no kernels here).
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

#include "engine/ir/error.hpp"
#include "kernels/cuda/allocator.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/runtime.hpp"

namespace tapestry::cuda {
namespace {

std::atomic<int> g_device{-1};  // the chosen device; -1 until select_device or first use

class CudaMalloc final : public RawAllocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky; clear it so the retry can succeed
      return nullptr;
    }
    return p;
  }
  void deallocate(void* p) override { cudaFree(p); }
};

// Leaked on purpose: the cache must outlive every thread_local Context and static buffer, and
// the driver reclaims device memory at exit anyway. release_cached_memory() frees it earlier.
CachingAllocator& allocator() {
  static CudaMalloc* raw = new CudaMalloc;
  static CachingAllocator* cache = new CachingAllocator(*raw);
  return *cache;
}

}  // namespace

int cuda_device_count() {
  int n = 0;  // left unwritten when the call fails (no driver: cudaErrorInsufficientDriver)
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return n;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) return "";
  cudaGetLastError();
  if (e == cudaSuccess) return "none: the driver reports no CUDA device";
  const char* why = e == cudaErrorInsufficientDriver ? "no CUDA driver"
                    : e == cudaErrorNoDevice         ? "no CUDA device"
                                                     : cudaGetErrorString(e);
  return cat_str("none: ", why, " (", cudaGetErrorName(e), ")");
}

void select_device(int local_rank) {
  if (g_device.load() >= 0) return;
  const int n = cuda_device_count();
  user_check(n > 0, "no CUDA device: ", cuda_unavailable_reason());
  const int d = (local_rank < 0 ? 0 : local_rank) % n;  // one rank per GPU
  check(cudaSetDevice(d), "cudaSetDevice");
  g_device = d;
}

cublasHandle_t Context::blas() {
  if (!blas_) blas_ = std::make_unique<CublasHandle>(stream.get());
  return blas_->get();
}

Context& context() {
  if (g_device.load() < 0) select_device(0);
  // Each host thread selects the device once: cudaSetDevice is per thread.
  thread_local std::unique_ptr<Context> cx = [] {
    check(cudaSetDevice(g_device.load()), "cudaSetDevice");
    auto c = std::make_unique<Context>();
    c->device = g_device.load();
    return c;
  }();
  return *cx;
}

void synchronize() { context().stream.synchronize(); }

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  context();  // the device must be selected before the first cudaMalloc
  try {
    p_ = allocator().allocate(bytes ? bytes : 1);
  } catch (const std::bad_alloc&) {
    throw OutOfDeviceMemory(cat_str("out of device memory allocating ", bytes, " bytes"));
  }
}
DeviceBuffer::~DeviceBuffer() {
  // Work still queued may read this block: wait for it before the block can be reused.
  if (p_) {
    cudaStreamSynchronize(context().s());
    allocator().deallocate(p_);
  }
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    DeviceBuffer tmp(std::move(*this));
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
  }
  return *this;
}

void release_cached_memory() { allocator().release_cached(); }

int64_t DView::numel() const { return tapestry::numel(shape); }
bool DView::is_contiguous() const {
  int64_t expect = 1;
  for (int d = rank() - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}
DView dview(void* data, DType t, const Shape& shape) {
  return DView{data, t, shape, contiguous_strides(shape)};
}

bool cuda_supports(Op op, DType dtype) {
  // f16, bf16 and complex results: the map kernel (every dtype's casts, where and complex math)
  // and data movement; complex sums and products (reduce.cu, in c128) and matmul (cuBLAS c/z
  // gemm). Half reductions and products never reach a kernel: the builders compute them in f32.
  if (op == Op::Fft) return !is_half(dtype);  // fft.cpp: cuFFT (the input's type follows the output's)
  if (is_half(dtype) || is_complex(dtype)) {
    const OpKind k = op_def(op).kind;
    if (is_complex(dtype) && (op == Op::Sum || op == Op::Prod || op == Op::Matmul || op == Op::FusedReduce ||
                              op == Op::ScatterAdd))
      return true;
    if (op == Op::Gather || op == Op::Scatter) return true;  // index.cu moves any element width
    if (op == Op::Full) return true;                         // generate.cu fills by the value's bits
    return k == OpKind::Map || k == OpKind::View || k == OpKind::Cat || k == OpKind::Write ||
           op == Op::FusedMap;
  }
  switch (op_def(op).kind) {
    case OpKind::Map: return true;  // every functor compiles for every dtype it takes (map.cu)
    case OpKind::Reduce:
    case OpKind::ArgReduce:
    case OpKind::Fused:  // a map program, optionally reduced: run_map then run_reduce
    case OpKind::View:   // data movement: copy_view
    case OpKind::Cat:
    case OpKind::Write: return true;
    case OpKind::Generate:  // a file's box is read on the host (engine/ir/load_attrs.hpp)
      return op != Op::Load && ((op != Op::Rand && op != Op::Randn) || is_float(dtype));
    default: break;
  }
  switch (op) {
    case Op::Matmul:
    case Op::Correlate:
    case Op::Conv2d: return dtype != DType::Bool || op == Op::Matmul;
    case Op::MaxPool2d:
    case Op::AvgPool2d: return dtype != DType::Bool;
    case Op::Gather:
    case Op::Scatter:
    case Op::ScatterAdd:
    case Op::Nonzero: return true;  // index.cu
    case Op::Solve:
    case Op::Cholesky:
    case Op::Eigh:
    case Op::Det:
    case Op::Slogdet:
    case Op::Qr:
    case Op::Svd: return linalg_supported(op, dtype);  // linalg.cpp: cuSOLVER
    case Op::Cumsum:
    case Op::Cumprod:
    case Op::Cummax:
    case Op::Cummin:
    case Op::Logcumsumexp:
    case Op::Sort:
    case Op::LineScatterAdd:
    case Op::Searchsorted:  // line.cu; the input's dtype decides too (CudaDevice::supports)
      return line_supported(op, dtype) || (dtype == DType::I64 && op != Op::LineScatterAdd);
    default: return false;  // the block runs on the CPU
  }
}

bool map_through_device(Op op, DType in, DType out_dtype, const void* a, const void* b, const void* c,
                        void* out, int64_t n) {
  if (cuda_device_count() == 0) return false;
  const size_t isz = dtype_size(in), osz = dtype_size(out_dtype);
  const size_t asz = op == Op::Where ? 1 : isz;  // Where's condition is bool
  DeviceBuffer da(asz * n), db(isz * n), dc(isz * n), dout(osz * n);
  Context& cx = context();
  check(cudaMemcpyAsync(da.get(), a, asz * n, cudaMemcpyHostToDevice, cx.s()), "copy a");
  if (b) check(cudaMemcpyAsync(db.get(), b, isz * n, cudaMemcpyHostToDevice, cx.s()), "copy b");
  if (c) check(cudaMemcpyAsync(dc.get(), c, isz * n, cudaMemcpyHostToDevice, cx.s()), "copy c");
  map_on_device(op, in, out_dtype, da.get(), b ? db.get() : nullptr, c ? dc.get() : nullptr, dout.get(), n);
  check(cudaMemcpyAsync(out, dout.get(), osz * n, cudaMemcpyDeviceToHost, cx.s()), "copy out");
  synchronize();
  return true;
}

}  // namespace tapestry::cuda
