// Finding GPUs without linking CUDA: the driver (libcuda.so.1) is dlopen'ed on first use.
//   const Selection& s = device::current();   // once per process, TAPESTRY_DEVICE honoured
//   if (s.kind == Kind::Cuda) ...;  s.gpu == "none: no CUDA driver (libcuda.so.1 not found)"
// Why dlopen: linking cudart/cuBLAS/NCCL adds ~0.1 s to every process start (docs/gpu.md), and
// the tapestry binary must start as fast on a laptop as on a GPU node.
#pragma once

#include "engine/device/select.hpp"

namespace tapestry::device {

// Queries the driver; never throws (a missing driver is count 0 with the reason).
GpuInfo probe_gpus();

// This process's selection, decided once (probe + TAPESTRY_DEVICE + local rank); a cuda
// selection loads its backend (plugin.hpp) and falls back to the CPU when that fails.
const Selection& current();

}  // namespace tapestry::device
