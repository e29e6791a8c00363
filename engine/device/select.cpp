#include "engine/device/select.hpp"

#include <string_view>

#include "engine/ir/error.hpp"

namespace tapestry::device {

Selection select_device(const char* env, const GpuInfo& probe, int local_rank) {
  Selection s;
  s.info = probe;
  const std::string_view want = env ? env : "";
  if (probe.count > 0)
    s.gpu = cat_str(probe.name.empty() ? "GPU" : probe.name, " (sm_", probe.cc_major, probe.cc_minor, "), ",
                    probe.count, " on this node");
  else s.gpu = "none: " + (probe.why_none.empty() ? std::string("no CUDA device") : probe.why_none);
  if (want.empty() || want == "auto") {
    s.kind = probe.count > 0 ? Kind::Cuda : Kind::Cpu;
  } else if (want == "cpu") {
    s.kind = Kind::Cpu;
  } else if (want == "sim") {
    s.kind = Kind::Sim;
    s.gpu = "none: the simulated device (TAPESTRY_DEVICE=sim; host memory, CPU kernels)";
  } else if (want == "cuda" || want == "gpu") {
    s.kind = Kind::Cuda;
    if (probe.count == 0) {
      s.kind = Kind::Cpu;
      s.error = "TAPESTRY_DEVICE=cuda but no GPU is available: " + s.gpu.substr(6);
    }
  } else {
    s.error = cat_str("TAPESTRY_DEVICE must be cpu, cuda, sim or auto, got '", want, "'");
  }
  if (s.kind == Kind::Cuda) s.index = (local_rank < 0 ? 0 : local_rank) % probe.count;
  return s;
}

namespace {
// FP32 lanes and dense bf16 tensor-core FLOPs per SM per clock, by architecture.
struct PerSm {
  int fp32_lanes;
  int bf16_flops;
};
PerSm per_sm(const GpuInfo& g) {
  switch (g.cc_major) {
    case 8: return g.cc_minor == 0 ? PerSm{64, 2048} : PerSm{128, 1024};  // A100 ; GA10x/AD10x
    case 9: return {128, 4096};                                           // H100/H200
    case 10:
    case 12: return {128, 8192};  // Blackwell
    case 7: return {64, 1024};    // V100/T4 (fp16 rate)
    default: return {0, 0};
  }
}
}  // namespace

double peak_fp32_flops(const GpuInfo& g) { return 2.0 * per_sm(g).fp32_lanes * g.sms * g.clock_hz; }
double peak_bf16_flops(const GpuInfo& g) { return double(per_sm(g).bf16_flops) * g.sms * g.clock_hz; }
// DDR: two transfers per memory clock over the whole bus.
double peak_hbm_bytes(const GpuInfo& g) { return 2.0 * g.mem_clock_hz * g.bus_width_bits / 8.0; }

plan::Mesh apply_device(plan::Mesh m, const Selection& s) {
  if (s.kind != Kind::Cuda) return m;
  const GpuInfo& g = s.info;
  m.devices_per_rank = 1;
  if (const double f = peak_fp32_flops(g); f > 0) m.flops_per_s = 0.7 * f;  // sgemm reaches ~70%
  if (const double b = peak_hbm_bytes(g); b > 0) m.mem_bytes_per_s = 0.8 * b;
  if (g.mem_bytes > 0) m.mem_bytes_per_rank = g.mem_bytes;
  // NCCL over NVLink within a node (A100: 300 GB/s, H100: 450 GB/s per direction, ~10 us per
  // collective step); between nodes one 400 Gb/s NIC per GPU.
  m.intra = plan::Link{g.cc_major >= 9 ? 450e9 : 300e9, 10e-6};
  m.inter = plan::Link{50e9, 15e-6};
  m.ranks_per_node = g.count > 0 ? std::min(m.ranks_per_node, g.count) : m.ranks_per_node;
  return m;
}

}  // namespace tapestry::device
