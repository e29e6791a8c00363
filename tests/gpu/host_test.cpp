// The GPU backend's host-side logic, tested without a GPU: the caching allocator's size classes
// (over a fake raw allocator) and device selection.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>

#include "engine/device/select.hpp"
#include "kernels/cuda/allocator.hpp"

using namespace tapestry;

namespace {
struct FakeRaw final : cuda::RawAllocator {
  size_t capacity = size_t(1) << 30, used = 0;
  std::set<void*> live;
  void* allocate(size_t bytes) override {
    if (used + bytes > capacity) return nullptr;
    used += bytes;
    void* p = std::malloc(bytes);
    live.insert(p);
    sizes[p] = bytes;
    return p;
  }
  void deallocate(void* p) override {
    used -= sizes[p];
    live.erase(p);
    std::free(p);
  }
  std::map<void*, size_t> sizes;
};
}  // namespace

TEST_CASE("gpu.allocator.size_classes") {
  CHECK(cuda::size_class(1) == 512);
  CHECK(cuda::size_class(512) == 512);
  CHECK(cuda::size_class(513) == 1024);
  CHECK(cuda::size_class(1 << 20) == (1 << 20));
  CHECK(cuda::size_class((1 << 20) + 1) == (2 << 20));
  CHECK(cuda::size_class((5 << 20) + 7) == (6 << 20));
  for (size_t b : {1ul, 700ul, 4097ul, 3000000ul}) CHECK(cuda::size_class(b) >= b);
}

TEST_CASE("gpu.allocator.reuse_and_release") {
  FakeRaw raw;
  {
    cuda::CachingAllocator cache(raw);
    void* a = cache.allocate(1000);
    cache.deallocate(a);
    void* b = cache.allocate(900);  // same class (1024): the cached block comes back
    CHECK(a == b);
    CHECK(cache.stats().hits == 1);
    CHECK(cache.stats().raw_allocs == 1);
    void* c = cache.allocate(5000);  // another class: a new raw block
    CHECK(c != b);
    cache.deallocate(b);
    cache.deallocate(c);
    CHECK(cache.stats().in_use == 0);
    CHECK(cache.stats().cached == 1024 + 8192);
    cache.deallocate(reinterpret_cast<void*>(0x1234));  // not ours: ignored
    cache.release_cached();
    CHECK(raw.live.empty());
    void* d = cache.allocate(100);
    (void)d;  // still in use at destruction: only cached blocks are released
  }
  CHECK(raw.live.size() == 1);
  for (void* p : std::set<void*>(raw.live)) raw.deallocate(p);
}

TEST_CASE("gpu.allocator.out_of_memory_empties_the_cache_first") {
  FakeRaw raw;
  raw.capacity = 4 << 20;
  cuda::CachingAllocator cache(raw);
  void* a = cache.allocate(3 << 20);  // 4 MiB class
  cache.deallocate(a);
  void* b = cache.allocate(2 << 20);  // needs the cached 4 MiB back from the free list
  CHECK(b != nullptr);
  CHECK(cache.stats().raw_frees == 1);
  CHECK_THROWS_AS(cache.allocate(8 << 20), std::bad_alloc);
  cache.deallocate(b);
}

TEST_CASE("gpu.select.no_gpu") {
  device::GpuInfo none;
  none.why_none = "no CUDA driver (libcuda.so.1 not found)";
  auto s = device::select_device(nullptr, none, 0);
  CHECK(s.kind == device::Kind::Cpu);
  CHECK(s.error.empty());
  CHECK(s.gpu == "none: no CUDA driver (libcuda.so.1 not found)");
  s = device::select_device("cpu", none, 0);
  CHECK(s.error.empty());
  s = device::select_device("cuda", none, 0);
  CHECK(s.kind == device::Kind::Cpu);
  CHECK(s.error == "TAPESTRY_DEVICE=cuda but no GPU is available: no CUDA driver (libcuda.so.1 not found)");
  s = device::select_device("tpu", none, 0);
  CHECK(s.error.find("must be cpu, cuda, sim or auto, got 'tpu'") != std::string::npos);
  // The simulated device needs no GPU and is never chosen unless asked for.
  s = device::select_device("sim", none, 0);
  CHECK(s.kind == device::Kind::Sim);
  CHECK(s.error.empty());
  CHECK(s.gpu.rfind("none: the simulated device", 0) == 0);
  device::GpuInfo four;
  four.count = 4;
  CHECK(device::select_device("sim", four, 1).kind == device::Kind::Sim);
  CHECK(device::select_device(nullptr, four, 1).kind == device::Kind::Cuda);
}

TEST_CASE("gpu.select.with_gpus") {
  device::GpuInfo g;
  g.count = 4;
  g.name = "NVIDIA H100 80GB HBM3";
  g.cc_major = 9;
  g.sms = 132;
  g.clock_hz = 1.98e9;
  g.mem_clock_hz = 2.619e9;
  g.bus_width_bits = 5120;
  g.mem_bytes = 80e9;
  auto s = device::select_device(nullptr, g, 6);
  CHECK(s.kind == device::Kind::Cuda);
  CHECK(s.index == 2);  // local rank 6 % 4 GPUs
  CHECK(s.gpu == "NVIDIA H100 80GB HBM3 (sm_90), 4 on this node");
  CHECK(device::select_device("cpu", g, 0).kind == device::Kind::Cpu);
  // H100 SXM: ~67 TFLOP/s fp32, ~1000 TFLOP/s dense bf16, ~3.35 TB/s HBM3.
  CHECK(device::peak_fp32_flops(g) == doctest::Approx(66.9e12).epsilon(0.02));
  CHECK(device::peak_bf16_flops(g) == doctest::Approx(1070e12).epsilon(0.1));
  CHECK(device::peak_hbm_bytes(g) == doctest::Approx(3.35e12).epsilon(0.02));
  const plan::Mesh m = device::apply_device(plan::Mesh::this_machine(4), s);
  CHECK(m.flops_per_s > 10e12);
  CHECK(m.mem_bytes_per_rank == 80e9);
  CHECK(m.intra.bandwidth == 450e9);
  CHECK(device::apply_device(plan::Mesh::this_machine(4), device::select_device("cpu", g, 0)) ==
        plan::Mesh::this_machine(4));
}
