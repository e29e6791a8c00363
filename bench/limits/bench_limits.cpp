// bench_limits: this machine's physical limits, measured in the same run as the workloads, so
// bench/run's "of limit" column is a fraction of what this machine can do rather than of the
// reference machine's numbers (docs/benchmarks.md), measured on another one.
//
//   bench_limits            # ~20 s: every limit, 1 and 2 threads
//   bench_limits --small    # tiny sizes, one pass each (ctest: only checks that it runs)
//   bench_limits --only read_2t cg   # just those limits
//
// Each line reads  LIMIT <key> <value> <unit> <what>; each figure is the best of several passes
// (a limit is what the machine reaches, so noise from other work only ever lowers it).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <immintrin.h>
#include <sys/mman.h>

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs body(part, parts) on `threads` threads at once and returns the wall seconds.
double run_parallel(int threads, const std::function<void(int, int)>& body) {
  std::vector<std::thread> pool;
  double t0 = now();
  for (int t = 1; t < threads; ++t) pool.emplace_back(body, t, threads);
  body(0, threads);
  for (auto& th : pool) th.join();
  return now() - t0;
}

double best_of(int passes, const std::function<double()>& pass) {
  double best = 1e30;
  for (int i = 0; i < passes; ++i) best = std::min(best, pass());
  return best;
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Array = std::unique_ptr<float[], FreeDeleter>;

// First touched by the threads that will use each part (pages land near them). Laid out as
// Tapestry lays out its tensors (engine/ir/value.cpp, allocate_block): 64-byte aligned, and
// from 16 MiB on 2 MiB aligned and advised as huge-page backed, so a limit and a workload
// run on the same kind of pages (huge pages alone make a read pass ~8% faster here).
Array make_array(std::size_t n, int threads, float value) {
  constexpr std::size_t kHugePage = std::size_t(2) << 20, kHugeMin = std::size_t(16) << 20;
  const std::size_t bytes = n * sizeof(float);
  const bool huge = bytes >= kHugeMin;
  const std::size_t align = huge ? kHugePage : 64;
  const std::size_t size = (bytes + align - 1) / align * align;
  Array a(static_cast<float*>(std::aligned_alloc(align, size)));
#ifdef MADV_HUGEPAGE
  if (huge && a) madvise(a.get(), size, MADV_HUGEPAGE);
#endif
  run_parallel(threads, [&](int t, int parts) {
    std::size_t lo = n * t / parts, hi = n * (t + 1) / parts;
    std::fill(a.get() + lo, a.get() + hi, value);
  });
  return a;
}

// The range of part t of n elements, aligned to 16 floats so streaming stores stay aligned.
std::pair<std::size_t, std::size_t> part(std::size_t n, int t, int parts) {
  std::size_t blocks = n / 16;
  return {blocks * t / parts * 16, blocks * (t + 1) / parts * 16};
}

// fp32 FMA peak: 12 independent accumulators of the widest vector, operands in registers.
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

double fma_gflops(int threads, long iters) {
  std::vector<float> sink(threads);
  double secs = best_of(3, [&] {
    return run_parallel(threads, [&](int t, int) {
      Vec acc[12], a, b;
      for (int l = 0; l < kLanes; ++l) {
        a[l] = 0.999999f;
        b[l] = 1e-7f * static_cast<float>(l + t);
      }
      for (auto& v : acc) v = b;
      for (long i = 0; i < iters; ++i) {
        for (auto& v : acc) v = v * a + b;
        asm volatile("" : "+v"(a));  // keep the loop from being folded
      }
      float s = 0;
      for (auto& v : acc) s += v[0];
      sink[t] = s;
    });
  });
  return 2.0 * 12 * kLanes * static_cast<double>(iters) * threads / secs / 1e9;
}

// Read bandwidth: sum a 512 MiB array (8 partial sums so the adds do not serialize).
double read_gbs(int threads, std::size_t n, int passes) {
  Array a = make_array(n, threads, 1.0f);
  std::vector<float> sink(threads);
  double secs = best_of(passes, [&] {
    return run_parallel(threads, [&](int t, int parts) {
      auto [lo, hi] = part(n, t, parts);
      __m256 s[8];
      for (auto& v : s) v = _mm256_setzero_ps();
      for (std::size_t i = lo; i < hi; i += 64)
        for (int k = 0; k < 8; ++k) s[k] = _mm256_add_ps(s[k], _mm256_load_ps(a.get() + i + 8 * k));
      for (int k = 1; k < 8; ++k) s[0] = _mm256_add_ps(s[0], s[k]);
      sink[t] = s[0][0];
    });
  });
  return static_cast<double>(n) * sizeof(float) / secs / 1e9;
}

// Streaming-store kernels: triad a = b + s*c (2 reads, 1 write: W2's pattern has 3 and 1) and
// copy-scale a = s*b (1 read, 1 write: a stencil step). Non-temporal stores skip the read of
// the destination a plain store would make, as Tapestry's large outputs do.
double stream_gbs(int threads, std::size_t n, int passes, bool triad) {
  Array a = make_array(n, threads, 0.0f), b = make_array(n, threads, 1.0f), c = make_array(n, threads, 2.0f);
  double secs = best_of(passes, [&] {
    return run_parallel(threads, [&](int t, int parts) {
      auto [lo, hi] = part(n, t, parts);
      const __m256 s = _mm256_set1_ps(0.5f);
      for (std::size_t i = lo; i < hi; i += 8) {
        __m256 v = _mm256_mul_ps(s, _mm256_load_ps((triad ? c : b).get() + i));
        if (triad) v = _mm256_add_ps(v, _mm256_load_ps(b.get() + i));
        _mm256_stream_ps(a.get() + i, v);
      }
      _mm_sfence();
    });
  });
  return static_cast<double>(n) * sizeof(float) * (triad ? 3 : 2) / secs / 1e9;
}

// OpenBLAS sgemm, the library numpy and torch use here: C = A B, all n x n, f32.
double sgemm_gflops(int threads, int n, int passes) {
  openblas_set_num_threads(threads);
  std::vector<float> a(static_cast<std::size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
              c.data(), n);  // warm-up: OpenBLAS starts its threads here
  double secs = best_of(passes, [&] {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                c.data(), n);
    return now() - t0;
  });
  return 2.0 * n * n * static_cast<double>(n) / secs / 1e9;
}

// W6's floor: the same conjugate-gradient loop as bench/w6_cg.lua (A = M M^T / n + I, one
// matvec, two dots, three axpys an iteration) in plain C++ loops, one thread, f32. This file
// is built with -ffast-math so the dot products vectorize, as a hand-tuned loop would.
// 64-byte aligned vectors: a hand-tuned loop aligns its rows (a 256 KiB std::vector comes from
// mmap at a page + 16 bytes, so every other 32-byte load of a row would cross a cache line).
template <class T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U> explicit Aligned64(const Aligned64<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64));
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  friend bool operator==(const Aligned64&, const Aligned64&) { return true; }
};
using Floats = std::vector<float, Aligned64<float>>;

double cg_seconds(int n, int iters, int passes) {
  Floats m(static_cast<std::size_t>(n) * n), A(m.size()), b(n);
  std::uint32_t state = 1;
  auto rnd = [&] {  // uniform in [-1, 1): the values do not matter, only that A is SPD
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  };
  for (auto& v : m) v = rnd();
  for (auto& v : b) v = rnd();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int k = 0; k < n; ++k) s += m[i * n + k] * m[j * n + k];
      A[i * n + j] = s / static_cast<float>(n) + (i == j ? 1.0f : 0.0f);
    }
  auto dot = [n](const float* x, const float* y) {
    float s = 0;
    for (int i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
  };
  Floats x(n), r(n), p(n), Ap(n);
  volatile float sink = 0;
  double secs = best_of(passes, [&] {
    double t0 = now();
    std::fill(x.begin(), x.end(), 0.0f);
    r = b;
    p = b;
    float rr = dot(r.data(), r.data());
    for (int it = 0; it < iters; ++it) {
      for (int i = 0; i < n; ++i) Ap[i] = dot(&A[static_cast<std::size_t>(i) * n], p.data());
      float alpha = rr / std::max(dot(p.data(), Ap.data()), 1e-30f);
      for (int i = 0; i < n; ++i) x[i] += alpha * p[i];
      for (int i = 0; i < n; ++i) r[i] -= alpha * Ap[i];
      float rr_new = dot(r.data(), r.data());
      float beta = rr_new / std::max(rr, 1e-30f);
      for (int i = 0; i < n; ++i) p[i] = r[i] + beta * p[i];
      rr = rr_new;
    }
    sink = x[0];
    return now() - t0;
  });
  return secs;
}

std::string size_text(std::size_t floats) {
  std::size_t bytes = floats * sizeof(float);
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

void report(const char* key, double value, const char* unit, const char* what) {
  std::printf("LIMIT %s %.6g %s %s\n", key, value, unit, what);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // --only KEY...: just those limits (bench/run measures a workload's limit right next to it,
  // so both see the same load from other work on a shared machine).
  bool small = false;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--small") == 0) {
      small = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      while (i + 1 < argc && argv[i + 1][0] != '-') only.emplace_back(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_limits [--small] [--only KEY...]  (keys: fma_1t read_2t ... cg)\n");
      return 2;
    }
  }
  auto wanted = [&](const std::string& key) {
    return only.empty() || std::find(only.begin(), only.end(), key) != only.end();
  };
  if (!__builtin_cpu_supports("avx2")) {
    std::fprintf(stderr, "bench_limits: needs a CPU with AVX2\n");
    return 1;
  }
  const std::size_t big = small ? (1u << 16) : (std::size_t{1} << 27);  // 512 MiB of f32
  const int passes = small ? 1 : 5;
  const long fma_iters = small ? 1000 : 30'000'000;
  for (int t : {1, 2}) {
    std::string sfx = "_" + std::to_string(t) + "t";
    if (wanted("fma" + sfx))
      report(("fma" + sfx).c_str(), fma_gflops(t, fma_iters), "GFLOP/s",
             kLanes == 16 ? "fp32 FMA peak, AVX-512 registers" : "fp32 FMA peak, AVX2 registers");
    if (wanted("read" + sfx))
      report(("read" + sfx).c_str(), read_gbs(t, big, passes), "GB/s",
             ("read bandwidth, sum of " + size_text(big)).c_str());
    if (wanted("triad" + sfx))
      report(("triad" + sfx).c_str(), stream_gbs(t, big / 2, passes, true), "GB/s",
             ("triad a = b + s*c, streaming stores, 3 x " + size_text(big / 2)).c_str());
    if (wanted("copy" + sfx))
      report(("copy" + sfx).c_str(), stream_gbs(t, big / 2, passes, false), "GB/s",
             ("copy a = s*b, streaming stores, 2 x " + size_text(big / 2)).c_str());
    if (wanted("sgemm" + sfx))
      report(("sgemm" + sfx).c_str(), sgemm_gflops(t, small ? 64 : 4096, small ? 1 : 3), "GFLOP/s",
             small ? "OpenBLAS sgemm 64^3" : "OpenBLAS sgemm 4096^3");
  }
  if (wanted("cg"))
    report("cg", cg_seconds(small ? 16 : 256, small ? 10 : 1000, small ? 1 : 7), "s",
           small ? "plain C++ CG loop, 16^2, 10 iterations, 1 thread"
                 : "plain C++ CG loop, 256^2, 1000 iterations, 1 thread");
  return 0;
}
