// A session's device: the selection, and the backend that computes on it (the CUDA plugin, or
// the simulated device).
//   device::Device d = device::open_device(config.device, config.local_rank);
//   if (DeviceBackend* dev = d.backend.get()) evaluate_on_device(roots, *dev);
// The plugin (libtapestry_cuda.so, built beside the tapestry executable when CUDA is on) holds
// the CUDA kernels, cudart and cuBLAS, so the executable links none of them and starts as fast
// on a laptop as on a GPU node. It resolves tapestry's own functions against the executable
// (which exports them), so there is one copy of every global.
#pragma once

#include <memory>
#include <string>

#include "engine/device/backend.hpp"
#include "engine/device/device_copies.hpp"
#include "engine/device/select.hpp"

namespace tapestry::device {

struct Device {
  Selection selection;
  std::unique_ptr<DeviceBackend> backend;  // null: computes on the CPU
  // One rank's device copies of host values (with a backend): declared after it, so freed first.
  std::unique_ptr<DeviceCopies> copies;
};

// Probes the GPUs (probe.hpp) and selects: `want` is TAPESTRY_DEVICE's value ("" for auto),
// `local_rank` the node-local rank. A cuda or sim selection gets its backend (attach_backend).
Device open_device(const std::string& want, int local_rank);

// Where the CUDA plugin is looked for: the directory of the running executable.
std::string cuda_plugin_path();

// Loads the plugin at `path` and makes its backend on GPU `index`. Returns nullptr with `why`
// set when it cannot: no such file, a symbol it needs is missing, another interface version,
// or the device cannot be opened.
std::unique_ptr<DeviceBackend> load_backend_plugin(const std::string& path, int index, std::string& why);

// The backend of a new selection: with kind sim the simulated device, with kind cuda the
// plugin's. When that cannot load the selection falls back to the CPU (nullptr), with `error`
// set when cuda was asked for (TAPESTRY_DEVICE=cuda) and the reason added to `gpu` otherwise.
std::unique_ptr<DeviceBackend> attach_backend(Selection& s, bool cuda_forced);

}  // namespace tapestry::device
