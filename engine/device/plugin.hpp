// The device backend of this process: the CUDA plugin, loaded when the selected device is cuda.
//   if (DeviceBackend* dev = device::backend()) evaluate_on_device(roots, *dev);
// The plugin (libtapestry_cuda.so, built beside the tapestry executable when CUDA is on) holds
// the CUDA kernels, cudart and cuBLAS, so the executable links none of them and starts as fast
// on a laptop as on a GPU node. It resolves tapestry's own functions against the executable
// (which exports them), so there is one copy of every global.
#pragma once

#include <memory>
#include <string>

#include "engine/device/select.hpp"
#include "engine/device/backend.hpp"

namespace tapestry::device {

// The backend of the selected device, or nullptr when the process computes on the CPU.
DeviceBackend* backend();

// Tests only: makes b the backend that backend() returns (nullptr: the selected device's
// again), so the observation path runs on the simulated device (device_sim.hpp).
void set_backend_for_testing(DeviceBackend* b);

// Whether this process's device can join device peers (DeviceBackend::can_join_peers) and
// TAPESTRY_DEVICE_PEERS=0 does not turn them off (slices then cross through the host).
bool peers_wanted();

// Where the CUDA plugin is looked for: the directory of the running executable.
std::string cuda_plugin_path();

// Loads the plugin at `path` and makes its backend on GPU `index`. Returns nullptr with `why`
// set when it cannot: no such file, a symbol it needs is missing, another interface version,
// or the device cannot be opened.
std::unique_ptr<DeviceBackend> load_backend_plugin(const std::string& path, int index, std::string& why);

// Called once by current() on its new selection: with kind cuda, loads the backend. When that
// fails the selection falls back to the CPU, with `error` set when cuda was asked for
// (TAPESTRY_DEVICE=cuda) and the reason added to `gpu` otherwise.
void attach_backend(Selection& s, bool cuda_forced);

}  // namespace tapestry::device
