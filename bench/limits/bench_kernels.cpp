// bench_kernels: W2's and W3's CPU kernels next to the bandwidth loops of bench_limits, in one
// process, interleaved round by round, so their ratio holds on a machine whose speed drifts
// (other work on shared cores moves both alike within a round).
//
//   bench_kernels               # 15 rounds: triad, W2's map, read, W3's moments
//   bench_kernels --rounds 5    # fewer
//   bench_kernels --small       # tiny sizes, one round (ctest: only checks that it runs)
//
// Prints, per kernel, the best and median seconds and the fraction of its limit (the limit's
// time for the same bytes over the kernel's time): of the best of each, and the median of the
// per-round fractions. The kernels are Tapestry's own (cpu::run_map on tanh(a*b + c) over
// Value buffers, cpu::run_moments), on its thread pool; the limits are bench_limits' loops on
// two threads. What is left between them is the kernels' own cost, not Lua's or the planner's.
// Last, W2's program on cache-resident slices: its arithmetic without the memory traffic.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <immintrin.h>

#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"

using namespace tapestry;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds of the whole process (every thread): on cores shared with other work, a pass's
// wall time measures the scheduler, its CPU time still the pass.
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double run_parallel(int threads, const std::function<void(int, int)>& body) {
  std::vector<std::thread> pool;
  double t0 = now();
  for (int t = 1; t < threads; ++t) pool.emplace_back(body, t, threads);
  body(0, threads);
  for (auto& th : pool) th.join();
  return now() - t0;
}

std::pair<size_t, size_t> part(size_t n, int t, int parts) {
  size_t blocks = n / 16;
  return {blocks * t / parts * 16, blocks * (t + 1) / parts * 16};
}

View filled(int64_t n, float v) {
  auto val = Value::alloc(DType::F32, {n});
  View out = val->view();
  cpu::parallel_for(n, 1 << 20, [&](int64_t lo, int64_t hi, int) {
    std::fill(out.ptr<float>() + lo, out.ptr<float>() + hi, v);
  });
  return out;
}

// bench_limits' loops (AVX2 loads, as there), over the same buffers the kernels use.
double read_pass(const float* a, size_t n, int threads) {
  std::vector<float> sink(threads);
  double s = run_parallel(threads, [&](int t, int parts) {
    auto [lo, hi] = part(n, t, parts);
    __m256 acc[8];
    for (auto& v : acc) v = _mm256_setzero_ps();
    for (size_t i = lo; i < hi; i += 64)
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_add_ps(acc[k], _mm256_load_ps(a + i + 8 * k));
    for (int k = 1; k < 8; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
    sink[t] = acc[0][0];
  });
  if (sink[0] == -1) std::puts("");
  return s;
}

double triad_pass(float* a, const float* b, const float* c, size_t n, int threads) {
  return run_parallel(threads, [&](int t, int parts) {
    auto [lo, hi] = part(n, t, parts);
    const __m256 s = _mm256_set1_ps(0.5f);
    for (size_t i = lo; i < hi; i += 8)
      _mm256_stream_ps(a + i, _mm256_add_ps(_mm256_mul_ps(s, _mm256_load_ps(c + i)), _mm256_load_ps(b + i)));
    _mm_sfence();
  });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool small = false;
  int rounds = 15;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--small")) small = true, rounds = 1;
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
  }
  const int threads = cpu::num_threads();
  const int64_t n2 = small ? 1 << 12 : 1 << 25, n3 = small ? 1 << 13 : 1 << 26;
  View a = filled(n2, 0.5f), b = filled(n2, 1.5f), c = filled(n2, -0.25f), out = filled(n2, 0.0f);
  View x = filled(n3, 1.0f);
  x.ptr<float>()[1] = 3.0f;
  cpu::MapProgram w2;
  w2.leaves = {a, b, c};
  w2.instrs = {{Op::Mul, DType::F32, DType::F32, 0, 1},
               {Op::Add, DType::F32, DType::F32, 3, 2},
               {Op::Tanh, DType::F32, DType::F32, 4}};
  // Per pass: wall and CPU seconds of the triad, W2's map, the read loop, W3's moments.
  const char* names[4] = {"triad", "W2 map", "read", "W3 moments"};
  std::vector<double> wall[4], cpu[4];
  double sink = 0;
  for (int r = 0; r <= rounds; ++r) {  // round 0 warms up
    const std::function<void()> pass[4] = {
        [&] { triad_pass(out.ptr<float>(), b.ptr<float>(), c.ptr<float>(), n2, threads); },
        [&] { cpu::run_map(w2, out); }, [&] { read_pass(x.ptr<float>(), n3, threads); },
        [&] {
          cpu::Moments m;
          cpu::run_moments(x, 1, &m);
          sink += m.m2;
        }};
    for (int k = 0; k < 4; ++k) {
      const double w0 = now(), c0 = cpu_now();
      pass[k]();
      const double c1 = cpu_now(), w1 = now();
      if (r > 0 || small) wall[k].push_back(w1 - w0), cpu[k].push_back(c1 - c0);
    }
  }
  // The triad moves 3 streams of n2 floats and W2 4, so W2's limit is 4/3 of a triad pass;
  // W3 reads what the read loop reads.
  const double scale[4] = {1, 4.0 / 3, 1, 1};
  const double bytes[4] = {12.0 * n2, 16.0 * n2, 4.0 * n3, 4.0 * n3};
  std::printf("threads %d, %d rounds%s\n", threads, rounds, sink == 12345 ? " " : "");
  for (int k = 0; k < 4; ++k) {
    const double bw = *std::min_element(wall[k].begin(), wall[k].end());
    const double bc = *std::min_element(cpu[k].begin(), cpu[k].end());
    std::printf("%-11s wall best %.4f s (%5.1f GB/s) median %.4f s | CPU best %.4f s median %.4f s", names[k],
                bw, bytes[k] / 1e9 / bw, median(wall[k]), bc, median(cpu[k]));
    if (k % 2 == 1) {
      std::vector<double> f;
      for (size_t i = 0; i < wall[k].size(); ++i) f.push_back(wall[k - 1][i] * scale[k] / wall[k][i]);
      const double lw = *std::min_element(wall[k - 1].begin(), wall[k - 1].end());
      const double lc = *std::min_element(cpu[k - 1].begin(), cpu[k - 1].end());
      std::printf(
          "\n%11s of limit by wall: best/best %.0f%%, median of rounds %.0f%%; by CPU time: best/best %.0f%%",
          "", 100 * lw * scale[k] / bw, 100 * median(f), 100 * lc * scale[k] / bc);
    }
    std::printf("\n");
  }
  // W2's arithmetic alone: the same program over slices of 2^14 elements (inputs and output in
  // L2, each slice run on this thread) repeated until it covered the 2^25 elements once. Its CPU
  // time against the map's above says how much of W2 is tanh's work rather than memory's.
  if (!small) {
    const int64_t piece = 1 << 14;
    cpu::MapProgram hot = w2;
    View ho = out;
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
      const double c0 = cpu_now();
      for (int64_t done = 0; done < n2; done += piece) {
        for (int l = 0; l < 3; ++l) hot.leaves[l] = w2.leaves[l].sliced({0}, {1}, {piece});
        ho = out.sliced({0}, {1}, {piece});
        cpu::run_map(hot, ho);
      }
      best = std::min(best, cpu_now() - c0);
    }
    std::printf(
        "W2's arithmetic alone (in cache, one thread): CPU %.4f s for %lld elements, %.2f ns an element\n",
        best, static_cast<long long>(n2), best / static_cast<double>(n2) * 1e9);
  }
  return 0;
}
