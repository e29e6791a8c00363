// run_fft on the device: cuFFT, as kernels/cpu/fft.cpp does with FFTW (c2c either way, r2c,
// c2r; unnormalized; c64 in single precision, c128 in double). Host C++ (g++): cuFFT is a host
// API, so this needs no nvcc.
// The input is first copied with the transformed dim last and contiguous (it may be a strided
// view, and a c2r transform overwrites it), so each block is one batched call whose layout comes
// from kernels/fft_layout.hpp (tested on the CPU); a result along another dim is copied back into
// place. Plans are cached per thread (a plan is bound to the stream it runs on): a block of the
// same layout reuses one.
#include <cufft.h>

#include <map>
#include <memory>
#include <tuple>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/runtime.hpp"
#include "kernels/fft_layout.hpp"

namespace tapestry::cuda {

namespace {

void check_fft(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) user_error("cuFFT ", what, ": status ", static_cast<int>(r));
}

class FftPlan {
 public:
  FftPlan(const FftLayout& l, cufftType type, cudaStream_t s) {
    int n = static_cast<int>(l.n), in_embed = n, out_embed = n;  // unused for rank 1, but not null
    check_fft(cufftPlanMany(&h_, 1, &n, &in_embed, static_cast<int>(l.stride), static_cast<int>(l.in_dist),
                            &out_embed, static_cast<int>(l.stride), static_cast<int>(l.out_dist), type,
                            static_cast<int>(l.batch)),
              "cufftPlanMany");
    check_fft(cufftSetStream(h_, s), "cufftSetStream");
  }
  ~FftPlan() {
    if (h_) cufftDestroy(h_);
  }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;
  cufftHandle get() const { return h_; }

 private:
  cufftHandle h_ = 0;
};

// The calling thread's plans, by type and layout; at most 64 are kept (each holds device work
// space), past that the cache starts again.
cufftHandle plan_for(const FftLayout& l, cufftType type) {
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t>;
  thread_local std::map<Key, std::unique_ptr<FftPlan>> plans;
  const Key key{static_cast<int>(type), l.n, l.stride, l.batch, l.in_dist, l.out_dist};
  auto it = plans.find(key);
  if (it != plans.end()) return it->second->get();
  if (plans.size() >= 64) plans.clear();
  return plans.emplace(key, std::make_unique<FftPlan>(l, type, context().s())).first->second->get();
}

cufftType type_of(DType in, DType out) {
  if (is_complex(in) && is_complex(out)) return in == DType::C64 ? CUFFT_C2C : CUFFT_Z2Z;
  if (is_complex(out)) return in == DType::F32 ? CUFFT_R2C : CUFFT_D2Z;
  return in == DType::C64 ? CUFFT_C2R : CUFFT_Z2D;
}

}  // namespace

bool fft_supported(DType in, DType out) {
  const bool single = (in == DType::F32 || in == DType::C64) && (out == DType::F32 || out == DType::C64);
  const bool dbl = (in == DType::F64 || in == DType::C128) && (out == DType::F64 || out == DType::C128);
  return (single || dbl) && (is_complex(in) || is_complex(out));
}

namespace {

// v with dim moved last (a view: no copy).
DView dim_last(const DView& v, int dim) {
  DView p = v;
  p.shape.erase(p.shape.begin() + dim);
  p.strides.erase(p.strides.begin() + dim);
  p.shape.push_back(v.shape[static_cast<size_t>(dim)]);
  p.strides.push_back(v.strides[static_cast<size_t>(dim)]);
  return p;
}

}  // namespace

void run_fft(const DView& in, const DView& out, int dim, bool inverse) {
  internal_check(fft_supported(in.dtype, out.dtype) && out.is_contiguous());
  // The lines go contiguous, one after another, in a scratch copy with dim last: then every call
  // starts at the buffer's start. cuFFT refuses a real array that starts between two complex
  // elements (CUFFT_INVALID_VALUE, seen on an H200 for c2r along a middle dim), and contiguous
  // lines are its fastest layout; c2r also overwrites its input, so the copy is needed anyway.
  const int last = in.rank() - 1;
  const DView in_p = dim_last(in, dim), out_p = dim_last(out, dim);
  const FftLayout l = fft_layout(in_p.shape, out_p.shape, last);
  internal_check(l.calls == 1 && l.stride == 1);
  for (int64_t v : {l.n, l.batch, l.in_dist * l.batch, l.out_dist * l.batch})
    user_check(v < (int64_t{1} << 31), "fft: a block with more than 2^31 elements along a dim or batch");
  DeviceBuffer scratch(static_cast<size_t>(in.numel()) * dtype_size(in.dtype));
  const DView x = dview(scratch.get(), in.dtype, in_p.shape);
  copy_view(in_p, x);
  DeviceBuffer result;  // the lines' results, when out's layout is not theirs
  DView y = out;
  if (dim != last) {
    result = DeviceBuffer(static_cast<size_t>(out.numel()) * dtype_size(out.dtype));
    y = dview(result.get(), out.dtype, out_p.shape);
  }
  const cufftType type = type_of(in.dtype, out.dtype);
  const cufftHandle h = plan_for(l, type);
  const int dir = inverse ? CUFFT_INVERSE : CUFFT_FORWARD;
  const size_t isz = dtype_size(in.dtype), osz = dtype_size(out.dtype);
  for (int64_t c = 0; c < l.calls; ++c) {
    void* i = x.byte_ptr() + c * l.in_step * static_cast<int64_t>(isz);
    void* o = y.byte_ptr() + c * l.out_step * static_cast<int64_t>(osz);
    switch (type) {
      case CUFFT_C2C:
        check_fft(cufftExecC2C(h, static_cast<cufftComplex*>(i), static_cast<cufftComplex*>(o), dir), "C2C");
        break;
      case CUFFT_Z2Z:
        check_fft(
            cufftExecZ2Z(h, static_cast<cufftDoubleComplex*>(i), static_cast<cufftDoubleComplex*>(o), dir),
            "Z2Z");
        break;
      case CUFFT_R2C:
        check_fft(cufftExecR2C(h, static_cast<cufftReal*>(i), static_cast<cufftComplex*>(o)), "R2C");
        break;
      case CUFFT_D2Z:
        check_fft(cufftExecD2Z(h, static_cast<cufftDoubleReal*>(i), static_cast<cufftDoubleComplex*>(o)),
                  "D2Z");
        break;
      case CUFFT_C2R:
        check_fft(cufftExecC2R(h, static_cast<cufftComplex*>(i), static_cast<cufftReal*>(o)), "C2R");
        break;
      default:
        check_fft(cufftExecZ2D(h, static_cast<cufftDoubleComplex*>(i), static_cast<cufftDoubleReal*>(o)),
                  "Z2D");
    }
  }
  if (dim != last) copy_view(y, out_p);
  synchronize();  // the scratch buffers are freed on return
}

}  // namespace tapestry::cuda
