// The GPU versions of the workloads, each as a fraction of this device's peak.
//   bench_gpu            # W1 matmul, W2 fused elementwise, W3 variance, W4 heat; "no GPU" without one
//                        # then the line ops (L*: scans, sorts), nonzero and complex matmul
//   bench_gpu --small    # tiny sizes (the ctest smoke run)
// Peaks come from the driver (engine/device: SMs x clock x per-SM rate, memory clock x bus width).
// W1 runs fp32 sgemm (no TF32), so its fraction is of the fp32 peak; the bf16 peak is printed
// for reference (bf16 tensors are not a Tapestry dtype yet).
#include <cstdio>
#include <cstring>
#include <functional>

#include "engine/device/probe.hpp"
#include "engine/ir/attrs.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/runtime.hpp"

using namespace tapestry;

namespace {

// Best of `reps` timed runs after one warm-up, in seconds (CUDA events on the stream).
double time_best(int reps, const std::function<void()>& f) {
  f();
  cuda::synchronize();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    cuda::Event a, b;
    a.record(cuda::context().s());
    f();
    b.record(cuda::context().s());
    b.wait();
    best = std::min(best, b.since(a) / 1e3);
  }
  return best;
}

void report(const char* w, const char* what, double s, double work, double peak, const char* unit) {
  std::printf("RESULT %s gpu %-28s %9.3f ms  %8.1f %s  %5.1f%% of peak\n", w, what, s * 1e3, work / s / 1e9,
              unit, peak > 0 ? 100.0 * work / s / peak : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  if (cuda::cuda_device_count() == 0) {
    std::printf("bench_gpu: no GPU: %s\n", cuda::cuda_unavailable_reason().c_str());
    return 0;
  }
  const device::GpuInfo g = device::probe_gpus();
  const double fp32 = device::peak_fp32_flops(g), bf16 = device::peak_bf16_flops(g),
               hbm = device::peak_hbm_bytes(g);
  std::printf("device: %s (sm_%d%d), peaks: fp32 %.1f TFLOP/s, bf16 %.1f TFLOP/s, HBM %.0f GB/s\n",
              g.name.c_str(), g.cc_major, g.cc_minor, fp32 / 1e12, bf16 / 1e12, hbm / 1e9);
  const int reps = small ? 1 : 10;
  Attrs seed;
  seed.ints = {1};

  {  // W1: square f32 matmul
    const int64_t n = small ? 256 : 8192;
    cuda::DeviceBuffer a(n * n * 4), b(n * n * 4), c(n * n * 4);
    auto av = cuda::dview(a.get(), DType::F32, {n, n}), bv = cuda::dview(b.get(), DType::F32, {n, n}),
         cv = cuda::dview(c.get(), DType::F32, {n, n});
    cuda::run_generate(Op::Rand, seed, {n, n}, {0, 0}, av);
    cuda::run_generate(Op::Rand, seed, {n, n}, {0, 0}, bv);
    const double s = time_best(reps, [&] { cuda::run_matmul(av, bv, cv); });
    report("W1", "matmul f32 (sgemm)", s, 2.0 * n * n * n, fp32, "GFLOP/s");
  }
  const int64_t n = small ? (1 << 16) : (int64_t(1) << 28);  // 1 GiB of f32
  cuda::DeviceBuffer x(n * 4), y(n * 4), z(n * 4), out(n * 4);
  auto xv = cuda::dview(x.get(), DType::F32, {n}), yv = cuda::dview(y.get(), DType::F32, {n}),
       zv = cuda::dview(z.get(), DType::F32, {n}), ov = cuda::dview(out.get(), DType::F32, {n});
  cuda::run_generate(Op::Randn, seed, {n}, {0}, xv);
  cuda::run_generate(Op::Rand, seed, {n}, {0}, yv);
  cuda::run_generate(Op::Rand, seed, {n}, {0}, zv);
  {  // W2: out = tanh(x * y) + z, fused: 3 reads + 1 write per element
    cuda::MapProgram p{{xv, yv, zv},
                       {{Op::Mul, DType::F32, DType::F32, 0, 1},
                        {Op::Tanh, DType::F32, DType::F32, 3},
                        {Op::Add, DType::F32, DType::F32, 4, 2}}};
    const double s = time_best(reps, [&] { cuda::run_map(p, ov); });
    report("W2", "fused tanh(x*y)+z", s, 16.0 * n, hbm, "GB/s");
  }
  {  // W3: variance = mean(x^2) - mean(x)^2: two reductions over one read each (f64 accumulation)
    cuda::DeviceBuffer r(8);
    auto rv = cuda::dview(r.get(), DType::F32, {});
    cuda::MapProgram sq{{xv}, {{Op::Square, DType::F32, DType::F32, 0}}};
    const double s = time_best(reps, [&] {
      cuda::run_reduce(Op::Sum, xv, {0}, rv);
      cuda::run_map(sq, ov);
      cuda::run_reduce(Op::Sum, ov, {0}, rv);
    });
    report("W3", "variance (sum, square, sum)", s, 16.0 * n, hbm, "GB/s");
  }
  {  // W4: heat, a 5-point stencil step on a square grid
    const int64_t m = small ? 256 : 16384;
    auto grid = cuda::dview(x.get(), DType::F32, {m, m}), next = cuda::dview(out.get(), DType::F32, {m, m});
    cuda::DeviceBuffer k(9 * 4);
    auto kv = cuda::dview(k.get(), DType::F32, {3, 3});
    auto hk = Value::alloc(DType::F32, {3, 3});
    const float taps[9] = {0, 0.25f, 0, 0.25f, 0, 0.25f, 0, 0.25f, 0};
    std::memcpy(hk->data<float>(), taps, sizeof taps);
    cuda::to_device(hk->view(), kv);
    const double s = time_best(reps, [&] { cuda::run_correlate(grid, kv, {-1, -1}, next); });
    report("W4", "heat 3x3 stencil step", s, 8.0 * m * m, hbm, "GB/s");
  }
  // The line ops (line.cu) on 2^26 f32 elements: scans as bytes moved (one read, one write; a
  // chunked scan reads twice), sorts as keys a second (no peak: reported against HBM for scale).
  const int64_t e = small ? (1 << 16) : (int64_t(1) << 26), w = 1024;
  cuda::DeviceBuffer lo(e * 8);  // room for i64 indices
  auto line_op = [&](const char* id, const char* what, Op op, const Shape& shape, int dim, DType out_t,
                     double bytes) {
    const cuda::DView in = cuda::dview(x.get(), DType::F32, shape), o = cuda::dview(lo.get(), out_t, shape);
    const Attrs a = LineAttrs{dim, false, out_t == DType::I64, false}.encode();
    const double s = time_best(reps, [&] { cuda::run_line(op, a, {in}, o); });
    report(id, what, s, bytes, hbm, "GB/s");
  };
  line_op("L1", "cumsum f32, one line", Op::Cumsum, {e}, 0, DType::F32, 8.0 * e);
  line_op("L2", "cumsum f32, lines along last", Op::Cumsum, {e / w, w}, 1, DType::F32, 8.0 * e);
  line_op("L3", "cumsum f32, lines along first", Op::Cumsum, {w, e / w}, 0, DType::F32, 8.0 * e);
  line_op("L4", "cummax idx f32, along last", Op::Cummax, {e / w, w}, 1, DType::I64, 12.0 * e);
  line_op("L5", "sort f32, one line", Op::Sort, {e}, 0, DType::F32, 8.0 * e);
  line_op("L6", "argsort f32, 1024-long lines", Op::Sort, {e / w, w}, 1, DType::I64, 12.0 * e);
  {  // nonzero of a half-true mask: a count pass, a scan, a placed write
    cuda::DeviceBuffer mb(e), mo(e * 8);
    const cuda::DView fv = cuda::dview(x.get(), DType::F32, {e}),
                      mv = cuda::dview(mb.get(), DType::Bool, {e});
    cuda::MapProgram gt{
        {fv}, {{Op::Full, DType::F32, DType::F32, -1, -1, -1, 0.0}, {Op::Gt, DType::Bool, DType::F32, 0, 1}}};
    cuda::run_map(gt, mv);
    auto host = Value::alloc(DType::Bool, {e});
    cuda::to_host(mv, host->view());
    int64_t count = 0;
    for (int64_t i = 0; i < e; ++i) count += host->data<bool>()[i];
    const cuda::DView ov2 = cuda::dview(mo.get(), DType::I64, {count});
    const double s = time_best(reps, [&] { cuda::run_index(Op::Nonzero, Attrs{}, {mv}, ov2); });
    report("L7", "nonzero, half true", s, double(e) + 8.0 * count, hbm, "GB/s");
  }
  {  // complex matmul (cgemm3m): 8 real flops a complex multiply-add
    const int64_t m = small ? 128 : 4096;
    cuda::DeviceBuffer a(m * m * 8), b(m * m * 8), c(m * m * 8);
    auto av = cuda::dview(a.get(), DType::C64, {m, m}), bv = cuda::dview(b.get(), DType::C64, {m, m}),
         cv = cuda::dview(c.get(), DType::C64, {m, m});
    cuda::run_generate(Op::Rand, seed, {2 * m * m}, {0}, cuda::dview(a.get(), DType::F32, {2 * m * m}));
    cuda::run_generate(Op::Rand, seed, {2 * m * m}, {0}, cuda::dview(b.get(), DType::F32, {2 * m * m}));
    const double s = time_best(reps, [&] { cuda::run_matmul(av, bv, cv); });
    report("L8", "matmul c64 (cgemm3m)", s, 8.0 * m * m * m, fp32, "GFLOP/s");
  }
  return 0;
}
