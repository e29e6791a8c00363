// Loading the CUDA backend plugin (engine/device/plugin.hpp), tested without a GPU: every way
// it can fail gives the reason, and a cuda selection whose backend cannot load falls back to
// the CPU (with an error when cuda was asked for).
#include <doctest/doctest.h>

#include <string>

#include "engine/device/plugin.hpp"

using namespace tapestry;
using namespace tapestry::device;

TEST_CASE("gpu.plugin.load_failures_say_why") {
  std::string why;
  CHECK(load_backend_plugin("/nonexistent/libtapestry_cuda.so", 0, why) == nullptr);
  CHECK(why.find("cannot load /nonexistent/libtapestry_cuda.so") == 0);
  why.clear();
  CHECK(load_backend_plugin("libm.so.6", 0, why) == nullptr);  // a library, not a plugin
  CHECK(why == "libm.so.6 is not a tapestry device plugin (no tapestry_make_cuda_backend)");
}

TEST_CASE("gpu.plugin.path_is_beside_the_executable") {
  const std::string p = cuda_plugin_path();
  CHECK(p.find("/tests/gpu/libtapestry_cuda.so") != std::string::npos);
}

TEST_CASE("gpu.plugin.a_cuda_selection_without_its_backend_falls_back") {
  GpuInfo g;
  g.count = 2;
  g.name = "NVIDIA H100";
  g.cc_major = 9;
  // No plugin beside this test binary: attach_backend cannot load one.
  Selection forced = select_device("cuda", g, 0);
  REQUIRE(forced.kind == Kind::Cuda);
  CHECK(attach_backend(forced, true) == nullptr);
  CHECK(forced.kind == Kind::Cpu);
  CHECK(forced.error.find("TAPESTRY_DEVICE=cuda but the CUDA backend cannot be used: cannot load ") == 0);
  Selection automatic = select_device(nullptr, g, 0);
  CHECK(attach_backend(automatic, false) == nullptr);
  CHECK(automatic.kind == Kind::Cpu);
  CHECK(automatic.error.empty());
  CHECK(automatic.gpu.find("NVIDIA H100 (sm_90), 2 on this node (not used: cannot load ") == 0);
  Selection cpu = select_device("cpu", g, 0);
  CHECK(attach_backend(cpu, false) == nullptr);
  CHECK(cpu.kind == Kind::Cpu);
  CHECK(cpu.error.empty());
  CHECK(cpu.gpu == "NVIDIA H100 (sm_90), 2 on this node");
}
