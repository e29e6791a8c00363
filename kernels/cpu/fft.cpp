// run_fft: the discrete Fourier transform of complex lines along one dim, through FFTW3.
//   run_fft(x, out, /*dim=*/1, /*inverse=*/false);   // out[.., k, ..] = sum_j x[.., j, ..] e^(-2 pi i jk/n)
// Unnormalized both ways (numpy's norms are scalings the builders apply). One FFTW guru plan
// covers every line of the block, whatever the strides: the transformed dim is the plan's
// dimension and all others its "howmany" loops. Planning with FFTW_ESTIMATE reads no data, so a
// plan made for these very arrays is run once and destroyed; FFTW's planner is not
// thread-safe, so planning holds a lock (execution does not).
#include <fftw3.h>

#include <mutex>
#include <vector>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::cpu {

namespace {

std::mutex& planner_lock() {
  static std::mutex m;
  return m;
}

template <class Dim>
void dims_of(const View& in, const View& out, int dim, Dim& line, std::vector<Dim>& loops) {
  for (int d = 0; d < in.rank(); ++d) {
    const Dim x{static_cast<int>(in.shape[d]), static_cast<int>(in.strides[d]),
                static_cast<int>(out.strides[d])};
    if (d == dim) line = x;
    else if (in.shape[d] > 1) loops.push_back(x);
  }
}

}  // namespace

void run_fft(const View& in, const View& out, int dim, bool inverse) {
  internal_check(in.shape == out.shape && in.dtype == out.dtype && is_complex(in.dtype));
  internal_check(dim >= 0 && dim < in.rank());
  if (out.numel() == 0) return;
  for (int d = 0; d < in.rank(); ++d)
    user_check(in.shape[d] < (int64_t{1} << 31) && std::abs(in.strides[d]) < (int64_t{1} << 31) &&
                   std::abs(out.strides[d]) < (int64_t{1} << 31),
               "fft: a block with more than 2^31 elements along a dim or stride");
  const int sign = inverse ? FFTW_BACKWARD : FFTW_FORWARD;
  if (in.dtype == DType::C64) {
    fftwf_iodim line{};
    std::vector<fftwf_iodim> loops;
    dims_of(in, out, dim, line, loops);
    auto* i = reinterpret_cast<fftwf_complex*>(in.byte_ptr());
    auto* o = reinterpret_cast<fftwf_complex*>(out.byte_ptr());
    fftwf_plan p;
    {
      std::lock_guard<std::mutex> g(planner_lock());
      p = fftwf_plan_guru_dft(1, &line, static_cast<int>(loops.size()), loops.data(), i, o, sign,
                              FFTW_ESTIMATE | FFTW_PRESERVE_INPUT);
    }
    internal_check(p != nullptr);
    fftwf_execute(p);
    std::lock_guard<std::mutex> g(planner_lock());
    fftwf_destroy_plan(p);
    return;
  }
  fftw_iodim line{};
  std::vector<fftw_iodim> loops;
  dims_of(in, out, dim, line, loops);
  auto* i = reinterpret_cast<fftw_complex*>(in.byte_ptr());
  auto* o = reinterpret_cast<fftw_complex*>(out.byte_ptr());
  fftw_plan p;
  {
    std::lock_guard<std::mutex> g(planner_lock());
    p = fftw_plan_guru_dft(1, &line, static_cast<int>(loops.size()), loops.data(), i, o, sign,
                           FFTW_ESTIMATE | FFTW_PRESERVE_INPUT);
  }
  internal_check(p != nullptr);
  fftw_execute(p);
  std::lock_guard<std::mutex> g(planner_lock());
  fftw_destroy_plan(p);
}

}  // namespace tapestry::cpu
