// Which device a rank computes on, decided from TAPESTRY_DEVICE and what the probe found.
//   GpuInfo g = probe_gpus();                             // probe.hpp (dlopen of the driver)
//   Selection s = select_device(config.device.c_str(), g, config.local_rank);   // engine/session/config.hpp
//   if (!s.error.empty()) die(s.error);  mesh = apply_device(mesh, s);
// Pure logic, no CUDA: the whole decision is unit-tested on machines without a GPU.
#pragma once

#include <string>

#include "engine/plan/mesh.hpp"

namespace tapestry::device {

// What the driver reports about GPU 0 (all GPUs of a node are assumed alike).
struct GpuInfo {
  int count = 0;
  std::string why_none;  // "no CUDA driver (libcuda.so.1 not found)" etc. when count == 0
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  double clock_hz = 0, mem_clock_hz = 0;  // 0 when the driver does not say
  int bus_width_bits = 0;
  double mem_bytes = 0;
};

// Sim: the simulated device of the tests (engine/device/sim_backend.hpp), TAPESTRY_DEVICE=sim:
// device memory is separate host memory and kernels are the CPU's, so every path a GPU takes
// (device blocks, uploads and downloads, staging for MPI) runs on machines without one.
enum class Kind { Cpu, Cuda, Sim };

struct Selection {
  Kind kind = Kind::Cpu;
  int index = -1;     // the GPU of this rank: local rank % count (cuda only)
  std::string gpu;    // "NVIDIA H100 (sm_90), 8 on this node" or "none: <why>"
  std::string error;  // set when TAPESTRY_DEVICE asks for what cannot be had
  GpuInfo info;
};

// env: TAPESTRY_DEVICE's value: cpu, cuda (or gpu), sim, or auto (null or "": cuda when a GPU is present).
Selection select_device(const char* env, const GpuInfo& probe, int local_rank);

// Peaks of one GPU (dense, per second): from the SM count and clocks, with per-architecture
// throughput per SM; 0 when unknown.
double peak_fp32_flops(const GpuInfo& g);
double peak_bf16_flops(const GpuInfo& g);  // tensor cores
double peak_hbm_bytes(const GpuInfo& g);

// The mesh with the selected device's rates: flops, memory bandwidth and capacity per rank, and
// NVLink-class links within a node (NCCL's, not MPI's shared memory). Unchanged for the CPU.
plan::Mesh apply_device(plan::Mesh m, const Selection& s);

}  // namespace tapestry::device
