#include "engine/device/probe.hpp"

#include <dlfcn.h>

#include "engine/ir/error.hpp"

namespace tapestry::device {
namespace {

// The few driver entry points used, by their stable C ABI (cuda.h is not needed to build).
using CuInit = int (*)(unsigned);
using CuCount = int (*)(int*);
using CuGet = int (*)(int*, int);
using CuName = int (*)(char*, int, int);
using CuAttr = int (*)(int*, int, int);
using CuMem = int (*)(size_t*, int);
using CuErr = int (*)(int, const char**);
constexpr int kSms = 16, kClock = 13, kMemClock = 36, kBus = 37, kMajor = 75, kMinor = 76;

std::string err_name(CuErr f, int e) {
  const char* s = nullptr;
  if (f && f(e, &s) == 0 && s) return s;
  return cat_str("CUresult ", e);
}

}  // namespace

GpuInfo probe_gpus() {
  GpuInfo g;
#ifndef TAPESTRY_HAVE_CUDA
  g.why_none = "built without CUDA (TAPESTRY_CUDA=OFF or no nvcc at build time)";
  return g;
#else
  // Kept open for the process: the driver stays loaded once a context may exist.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    g.why_none = "no CUDA driver (libcuda.so.1 not found)";
    return g;
  }
  auto sym = [&](const char* n) { return dlsym(lib, n); };
  auto init = reinterpret_cast<CuInit>(sym("cuInit"));
  auto count = reinterpret_cast<CuCount>(sym("cuDeviceGetCount"));
  auto get = reinterpret_cast<CuGet>(sym("cuDeviceGet"));
  auto name = reinterpret_cast<CuName>(sym("cuDeviceGetName"));
  auto attr = reinterpret_cast<CuAttr>(sym("cuDeviceGetAttribute"));
  auto mem = reinterpret_cast<CuMem>(sym("cuDeviceTotalMem_v2"));
  auto errn = reinterpret_cast<CuErr>(sym("cuGetErrorName"));
  if (!init || !count || !get || !name || !attr) {
    g.why_none = "the CUDA driver lacks cuInit/cuDeviceGet* (too old?)";
    return g;
  }
  if (const int e = init(0); e != 0) {
    g.why_none = cat_str(e == 100  ? "no CUDA device"
                         : e == 35 ? "CUDA driver too old"
                                   : "cuInit failed",
                         " (", err_name(errn, e), ")");
    return g;
  }
  int n = 0;
  if (const int e = count(&n); e != 0 || n <= 0) {
    g.why_none = e ? cat_str("cuDeviceGetCount failed (", err_name(errn, e), ")")
                   : "the driver reports no CUDA device";
    return g;
  }
  int dev = 0;
  if (get(&dev, 0) != 0) {
    g.why_none = "cuDeviceGet(0) failed";
    return g;
  }
  g.count = n;
  char buf[256] = {0};
  if (name(buf, sizeof buf - 1, dev) == 0) g.name = buf;
  auto a = [&](int which) {
    int v = 0;
    return attr(&v, which, dev) == 0 ? v : 0;
  };
  g.sms = a(kSms);
  g.cc_major = a(kMajor);
  g.cc_minor = a(kMinor);
  g.clock_hz = a(kClock) * 1e3;
  g.mem_clock_hz = a(kMemClock) * 1e3;
  g.bus_width_bits = a(kBus);
  size_t bytes = 0;
  if (mem && mem(&bytes, dev) == 0) g.mem_bytes = double(bytes);
  return g;
#endif
}

}  // namespace tapestry::device
