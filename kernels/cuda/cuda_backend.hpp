// The CUDA backend's host API: kernels/cpu/kernels.hpp over device memory (needs no GPU to link).
//   if (cuda::cuda_device_count() > 0) {
//     cuda::DeviceBuffer x(n * 4);  cuda::DView xv = cuda::dview(x.get(), DType::F32, {n});
//     cuda::run_map(prog, yv);  cuda::run_matmul(av, bv, cv);  cuda::synchronize(); }
// Every entry point takes device views (DView: a pointer, dtype, shape and element strides,
// as View) and enqueues on the calling thread's stream; outputs are contiguous, allocated by
// the caller, exactly as on the CPU. Failures throw tapestry::Error naming the CUDA call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/shape.hpp"
#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::cuda {

// --- the device (device.cpp) -------------------------------------------------------------
// GPUs usable by this process; 0 without a driver (cudaGetDeviceCount fails then).
int cuda_device_count();
// Why there is no device, as "none: <reason> (<cudaError name>)", or "" when there is one.
std::string cuda_unavailable_reason();
// Picks the device for this rank (local rank % count) once; later calls are no-ops.
void select_device(int local_rank);
// Waits for the calling thread's stream.
void synchronize();

// What run_block would check: which (op, dtype) pairs this backend has a kernel for.
bool cuda_supports(Op op, DType dtype);

// --- device memory (device.cpp) ----------------------------------------------------------
// An allocation from the caching allocator; returned to its free list on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};
// Returns every cached block to the driver (at shutdown, or before a big allocation elsewhere).
void release_cached_memory();

// A strided window onto device memory. Strides are in elements; 0 = broadcast.
struct DView {
  void* data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  Strides strides;
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  bool is_contiguous() const;
  char* byte_ptr() const { return static_cast<char*>(data); }
};
DView dview(void* data, DType t, const Shape& shape);  // contiguous row-major

// --- copies (copy.cu) --------------------------------------------------------------------
void copy_view(const DView& src, const DView& dst);  // same shape and dtype, any strides
void to_device(const View& host, const DView& dst);  // dst contiguous; host any strides
void to_host(const DView& src, const View& host);    // src any strides; host contiguous

// --- kernels, one family per .cu ---------------------------------------------------------
// map.cu: the fused elementwise program of cpu::MapProgram, leaves on the device.
using MapProgram = MapProgramOf<DView>;
void run_map(const MapProgram& p, const DView& out);
// out[i] = op(a[i], b[i], c[i]) over n contiguous elements (a one-instruction program).
void map_on_device(Op op, DType in, DType out_dtype, const void* a, const void* b, const void* c, void* out,
                   int64_t n);
// The same on host arrays, copied to and from the device (for tests). False without a device.
bool map_through_device(Op op, DType in, DType out_dtype, const void* a, const void* b, const void* c,
                        void* out, int64_t n);

// reduce.cu: as cpu::run_reduce (floats accumulate in f64, ints in i64).
void run_reduce(Op op, const DView& in, const std::vector<int>& dims, const DView& out);
void run_argreduce(Op op, const DView& in, int dim, const DView& out);  // ArgMax / ArgMin
// matmul.cu: cuBLAS for f32/f64 (strided batched when the batch is regular); a kernel for ints.
void run_matmul(const DView& a, const DView& b, const DView& out);
// generate.cu: the same Philox streams as the CPU, so a tensor generated on either matches.
void run_generate(Op op, const Attrs& attrs, const Shape& global_shape, const std::vector<int64_t>& origin,
                  const DView& out);
// window.cu: as kernels/cpu/window.cpp.
void run_correlate(const DView& x, const DView& k, const std::vector<int64_t>& origin, const DView& out);
void run_conv2d(const DView& x, const DView& w, const cpu::WindowAxis& h, const cpu::WindowAxis& wd,
                int64_t out_per_group, int64_t o_origin, const DView& out);
void run_pool2d(Op op, const DView& x, int64_t kh, int64_t kw, const cpu::WindowAxis& h,
                const cpu::WindowAxis& wd, const DView& out);

// index.cu: Gather, Scatter, ScatterAdd and Nonzero as cpu::run_index (the same order: bitwise
// the same results); an out-of-range index value is the same user error.
void run_index(Op op, const Attrs& attrs, const std::vector<DView>& in, const DView& out);

// line.cu: the line ops as cpu::run_line (scans, stable sort and topk, searchsorted,
// line_scatter_add; Op::Fft goes to run_fft), for the dtypes line_supported names (the input's).
bool line_supported(Op op, DType in);
void run_line(Op op, const Attrs& attrs, const std::vector<DView>& in, const DView& out);

// fft.cpp: Op::Fft as cpu::run_fft (c2c, r2c, c2r; unnormalized) through cuFFT; out contiguous.
bool fft_supported(DType in, DType out);  // f32/c64 or f64/c128, a complex side
void run_fft(const DView& in, const DView& out, int dim, bool inverse);
// linalg.cpp: solve, cholesky, eigh, det, slogdet, qr, svd as cpu::run_linalg (the same packed
// outputs) through cuSOLVER, f32 and f64.
bool linalg_supported(Op op, DType dtype);
void run_linalg(Op op, const Attrs& attrs, const std::vector<DView>& in, const DView& out);

}  // namespace tapestry::cuda
