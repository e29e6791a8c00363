// run_fft: the discrete Fourier transform of lines along one dim, through FFTW3.
//   run_fft(x, out, /*dim=*/1, /*inverse=*/false);   // out[.., k, ..] = sum_j x[.., j, ..] e^(-2 pi i jk/n)
// Unnormalized both ways (numpy's norms are scalings the builders apply). Complex x and out: the
// complex transform (c2c). Real x (f32, f64) of length n along dim: its n/2+1 non-negative
// frequencies (r2c, half the work of the complex transform of x, which rfft was before). Complex
// x of length n/2+1 and real out of length n, inverse: the c2r transform of the half spectrum of
// a Hermitian line (irfft; the imaginary parts of X[0] and X[n/2] are ignored, as numpy does),
// half the work of the complex transform of the extended spectrum that irfft was before.
//
// One FFTW guru plan covers every line of the block, whatever the strides: the transformed dim
// is the plan's dimension and all others its "howmany" loops. Plans are cached: a plan depends
// only on the sizes, strides, direction, precision, whether it is in place and the arrays'
// SIMD alignment (fftw_alignment_of), so a block of the same layout reuses it through FFTW's
// new-array execute (fftw_execute_dft), which is thread-safe. Planning with FFTW_ESTIMATE reads
// no data; FFTW's planner is not thread-safe, so making and destroying plans holds a lock.
#include <fftw3.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::cpu {

namespace {

std::mutex& planner_lock() {
  static std::mutex m;
  return m;
}

// Whether this thread holds planner_lock(): a plan's deleter runs either inside plan_for (the
// cache starting again) or wherever its last user lets it go, and must hold the lock once.
thread_local bool t_planning = false;
struct Planning {
  std::lock_guard<std::mutex> g{planner_lock()};
  Planning() { t_planning = true; }
  ~Planning() { t_planning = false; }
};

// What a plan depends on: precision and kind (0 c2c forward, 1 c2c inverse, 2 r2c, 3 c2r), the line's
// {n, is, os}, each loop's, in place, and both arrays' alignment.
using PlanKey = std::tuple<bool, int, std::vector<int>, bool, int, int>;
using Plans = std::map<PlanKey, std::shared_ptr<void>>;

// Never destroyed (a process's plans are freed with it): no order to keep with FFTW's own state
// at exit.
Plans& cache() {
  static auto* c = new Plans;
  return *c;
}

// At most this many plans are kept (each a few kB); past it the cache starts again. A plan in use
// by another thread stays alive through its shared_ptr until that thread's execute returns.
constexpr size_t kMaxPlans = 256;

template <class Dim>
void dims_of(const View& in, const View& out, int dim, Dim& line, std::vector<Dim>& loops) {
  for (int d = 0; d < in.rank(); ++d) {
    // Along dim, r2c reads n reals and writes n/2+1 complex values, c2r the other way: the
    // plan's n is the real array's (the logical length), the larger.
    const Dim x{static_cast<int>(std::max(in.shape[d], out.shape[d])), static_cast<int>(in.strides[d]),
                static_cast<int>(out.strides[d])};
    if (d == dim) line = x;
    else if (in.shape[d] > 1) loops.push_back(x);
  }
}

template <class Dim> std::vector<int> key_dims(const Dim& line, const std::vector<Dim>& loops) {
  std::vector<int> k{line.n, line.is, line.os};
  for (const Dim& l : loops) k.insert(k.end(), {l.n, l.is, l.os});
  return k;
}

// The cached plan for key, or a new one from make(), freed by destroy when the cache has let it
// go and no block runs it.
template <class Make, class Destroy>
std::shared_ptr<void> plan_for(const PlanKey& key, Make make, Destroy destroy) {
  Planning lock;
  Plans& c = cache();
  if (auto it = c.find(key); it != c.end()) return it->second;
  void* p = make();
  internal_check(p != nullptr);
  if (c.size() >= kMaxPlans) c.clear();
  std::shared_ptr<void> sp(p, [destroy](void* q) {
    if (t_planning) return destroy(q);
    Planning again;
    destroy(q);
  });
  c.emplace(key, sp);
  return sp;
}

}  // namespace

void run_fft(const View& in, const View& out, int dim, bool inverse) {
  const bool r2c = !is_complex(in.dtype), c2r = !is_complex(out.dtype);
  internal_check(in.rank() == out.rank());
  internal_check(dim >= 0 && dim < in.rank());
  if (r2c || c2r) {
    const View& re = r2c ? in : out;
    const View& cx = r2c ? out : in;
    internal_check(!r2c || !c2r);
    internal_check(inverse == c2r && (re.dtype == DType::F32) == (cx.dtype == DType::C64) &&
                   (re.dtype == DType::F32 || re.dtype == DType::F64) && is_complex(cx.dtype));
    for (int d = 0; d < in.rank(); ++d)
      internal_check(cx.shape[d] == (d == dim ? re.shape[d] / 2 + 1 : re.shape[d]));
  } else {
    internal_check(in.shape == out.shape && in.dtype == out.dtype);
  }
  if (out.numel() == 0 || in.numel() == 0) return;
  for (int d = 0; d < in.rank(); ++d)
    user_check(in.shape[d] < (int64_t{1} << 31) && std::abs(in.strides[d]) < (int64_t{1} << 31) &&
                   std::abs(out.strides[d]) < (int64_t{1} << 31),
               "fft: a block with more than 2^31 elements along a dim or stride");
  const int sign = inverse ? FFTW_BACKWARD : FFTW_FORWARD;
  const int kind = c2r ? 3 : r2c ? 2 : inverse ? 1 : 0;
  // c2r overwrites its input unless told not to (allowed for one-dimensional transforms, which a
  // guru plan of rank 1 is, whatever its loops): the input is a node's stored value.
  const unsigned flags = FFTW_ESTIMATE | FFTW_PRESERVE_INPUT;
  const bool in_place = in.byte_ptr() == out.byte_ptr();
  if (out.dtype == DType::C64 || out.dtype == DType::F32) {
    fftwf_iodim line{};
    std::vector<fftwf_iodim> loops;
    dims_of(in, out, dim, line, loops);
    const PlanKey key{true,
                      kind,
                      key_dims(line, loops),
                      in_place,
                      fftwf_alignment_of(reinterpret_cast<float*>(in.byte_ptr())),
                      fftwf_alignment_of(reinterpret_cast<float*>(out.byte_ptr()))};
    const int h = static_cast<int>(loops.size());
    auto destroy = [](void* p) { fftwf_destroy_plan(static_cast<fftwf_plan>(p)); };
    if (c2r) {
      auto* i = reinterpret_cast<fftwf_complex*>(in.byte_ptr());
      auto* o = reinterpret_cast<float*>(out.byte_ptr());
      auto p = plan_for(
          key,
          [&] { return static_cast<void*>(fftwf_plan_guru_dft_c2r(1, &line, h, loops.data(), i, o, flags)); },
          destroy);
      fftwf_execute_dft_c2r(static_cast<fftwf_plan>(p.get()), i, o);
      return;
    }
    auto* o = reinterpret_cast<fftwf_complex*>(out.byte_ptr());
    if (r2c) {
      auto* i = reinterpret_cast<float*>(in.byte_ptr());
      auto p = plan_for(
          key,
          [&] { return static_cast<void*>(fftwf_plan_guru_dft_r2c(1, &line, h, loops.data(), i, o, flags)); },
          destroy);
      fftwf_execute_dft_r2c(static_cast<fftwf_plan>(p.get()), i, o);
    } else {
      auto* i = reinterpret_cast<fftwf_complex*>(in.byte_ptr());
      auto p = plan_for(
          key,
          [&] {
            return static_cast<void*>(fftwf_plan_guru_dft(1, &line, h, loops.data(), i, o, sign, flags));
          },
          destroy);
      fftwf_execute_dft(static_cast<fftwf_plan>(p.get()), i, o);
    }
    return;
  }
  fftw_iodim line{};
  std::vector<fftw_iodim> loops;
  dims_of(in, out, dim, line, loops);
  const PlanKey key{false,
                    kind,
                    key_dims(line, loops),
                    in_place,
                    fftw_alignment_of(reinterpret_cast<double*>(in.byte_ptr())),
                    fftw_alignment_of(reinterpret_cast<double*>(out.byte_ptr()))};
  const int h = static_cast<int>(loops.size());
  auto destroy = [](void* p) { fftw_destroy_plan(static_cast<fftw_plan>(p)); };
  if (c2r) {
    auto* i = reinterpret_cast<fftw_complex*>(in.byte_ptr());
    auto* o = reinterpret_cast<double*>(out.byte_ptr());
    auto p = plan_for(
        key,
        [&] { return static_cast<void*>(fftw_plan_guru_dft_c2r(1, &line, h, loops.data(), i, o, flags)); },
        destroy);
    fftw_execute_dft_c2r(static_cast<fftw_plan>(p.get()), i, o);
    return;
  }
  auto* o = reinterpret_cast<fftw_complex*>(out.byte_ptr());
  if (r2c) {
    auto* i = reinterpret_cast<double*>(in.byte_ptr());
    auto p = plan_for(
        key,
        [&] { return static_cast<void*>(fftw_plan_guru_dft_r2c(1, &line, h, loops.data(), i, o, flags)); },
        destroy);
    fftw_execute_dft_r2c(static_cast<fftw_plan>(p.get()), i, o);
  } else {
    auto* i = reinterpret_cast<fftw_complex*>(in.byte_ptr());
    auto p = plan_for(
        key,
        [&] { return static_cast<void*>(fftw_plan_guru_dft(1, &line, h, loops.data(), i, o, sign, flags)); },
        destroy);
    fftw_execute_dft(static_cast<fftw_plan>(p.get()), i, o);
  }
}

}  // namespace tapestry::cpu
