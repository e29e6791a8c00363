// Finding GPUs without linking CUDA: the driver (libcuda.so.1) is dlopen'ed on first use.
//   GpuInfo g = probe_gpus();   // g.count == 0: g.why_none == "no CUDA driver (libcuda.so.1 not found)"
//   Selection s = select_device("auto", g, local_rank);   // plugin.hpp's open_device does both
// Why dlopen: linking cudart/cuBLAS/NCCL adds ~0.1 s to every process start (docs/gpu.md), and
// the tapestry binary must start as fast on a laptop as on a GPU node.
#pragma once

#include "engine/device/select.hpp"

namespace tapestry::device {

// Queries the driver; never throws (a missing driver is count 0 with the reason).
GpuInfo probe_gpus();

}  // namespace tapestry::device
