#include "engine/device/plugin.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>

#include "engine/device/probe.hpp"
#include "engine/device/sim_backend.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::device {

namespace {

// The plugin's entry points (engine/device/cuda/cuda_device.cpp).
using AbiFn = int (*)();
using MakeFn = DeviceBackend* (*)(int index, char* why, size_t why_size);

}  // namespace

std::string cuda_plugin_path() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = ".";
  if (n > 0) {
    dir.assign(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.find_last_of('/'));
  }
  return dir + "/libtapestry_cuda.so";
}

std::unique_ptr<DeviceBackend> load_backend_plugin(const std::string& path, int index, std::string& why) {
  // Never closed: the backend's code and the CUDA runtime must outlive every device buffer.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    why = cat_str("cannot load ", path, ": ", e ? e : "unknown error");
    return nullptr;
  }
  auto abi = reinterpret_cast<AbiFn>(dlsym(lib, "tapestry_device_backend_abi"));
  auto make = reinterpret_cast<MakeFn>(dlsym(lib, "tapestry_make_cuda_backend"));
  if (!abi || !make) {
    why = cat_str(path, " is not a tapestry device plugin (no tapestry_make_cuda_backend)");
    return nullptr;
  }
  if (abi() != kDeviceBackendAbi) {
    why = cat_str(path, " was built for device interface ", abi(), ", this tapestry has ", kDeviceBackendAbi,
                  " (rebuild both together)");
    return nullptr;
  }
  char msg[512] = {0};
  std::unique_ptr<DeviceBackend> b(make(index, msg, sizeof msg));
  if (!b) why = msg[0] ? msg : "the CUDA backend could not be created";
  return b;
}

std::unique_ptr<DeviceBackend> attach_backend(Selection& s, bool cuda_forced) {
  if (s.kind == Kind::Sim) return std::make_unique<SimDevice>();
  if (s.kind != Kind::Cuda) return nullptr;
  std::string why;
  std::unique_ptr<DeviceBackend> b = load_backend_plugin(cuda_plugin_path(), s.index, why);
  if (b) return b;
  s.kind = Kind::Cpu;
  s.index = -1;
  if (cuda_forced) s.error = "TAPESTRY_DEVICE=cuda but the CUDA backend cannot be used: " + why;
  else s.gpu += " (not used: " + why + ")";
  return nullptr;
}

Device open_device(const std::string& want, int local_rank) {
  Device d;
  d.selection = select_device(want.c_str(), probe_gpus(), local_rank);
  d.backend = attach_backend(d.selection, want == "cuda" || want == "gpu");
  // Up to half the device's memory for kept copies (1 GiB where it is not known: the simulation).
  const double mem = d.selection.info.mem_bytes;
  if (d.backend)
    d.copies = std::make_unique<DeviceCopies>(mem > 0 ? static_cast<uint64_t>(mem / 2) : uint64_t{1} << 30);
  return d;
}

}  // namespace tapestry::device
