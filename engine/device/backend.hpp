// A compute device for the evaluators and rank programs: its memory, transfers, and one kernel
// per kernel family, over device views.
//   DeviceView x = device_alloc(dev, DType::F32, {n});   // device memory, freed with its last view
//   dev.upload(host_view, x);  dev.map(prog, y);  dev.download(y, host_value->view());
// The entry points mirror kernels/cpu/kernels.hpp one for one, so what a node means (window
// origins, fused programs, cat offsets) is decided once, by run_block (engine/run/run_block.hpp),
// for every backend. Implementations: the CPU (host_backend.hpp), the CUDA plugin
// (engine/device/cuda/cuda_device.cpp, loaded by engine/device/plugin.cpp) and a host
// simulation for the tests and TAPESTRY_DEVICE=sim (sim_backend.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

namespace comm {
class DevicePeers;  // engine/device/peers.hpp
}

// Bump when DeviceBackend or DeviceView changes: a plugin built against another layout is refused.
// 2: device peers (can_join_peers, make_peer_id, join_peers). 3: map_reduce; Memory in ir.
// 4: DevicePeers::has_exchanges / exchange. 5: DevicePeers::can_reduce / reduce.
inline constexpr int kDeviceBackendAbi = 5;

// One device allocation (engine/ir/value.hpp's Memory); the destructor frees it (after any
// queued work that reads it). Host memory is a Buffer, so a host View wraps without a copy.
using DeviceMemory = Memory;

// A strided window onto device memory. `layout` carries dtype, shape, strides and offset (in
// elements) exactly as a host View does, so permute/expand/slice/reshape are View's own
// arithmetic; layout.buf is always null (the data is in `mem`).
struct DeviceView {
  std::shared_ptr<DeviceMemory> mem;
  View layout;

  DType dtype() const { return layout.dtype; }
  const Shape& shape() const { return layout.shape; }
  int64_t numel() const { return layout.numel(); }
  bool is_contiguous() const { return layout.is_contiguous(); }
  // The address of the first element.
  void* first() const {
    return static_cast<char*>(mem->data()) + layout.offset * static_cast<int64_t>(dtype_size(layout.dtype));
  }
  DeviceView with(View geometry) const {
    geometry.buf = nullptr;
    return DeviceView{mem, std::move(geometry)};
  }
};

// A map program (engine/ir/fused.hpp) whose leaves are on the device.
using DeviceMapProgram = MapProgramOf<DeviceView>;

// The largest map program one kernel takes; bigger groups run op by op.
struct MapLimits {
  int leaves = 16;
  int instrs = 40;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // "cuda: NVIDIA H100 (device 0)", "host simulation".
  virtual std::string name() const = 0;
  // Throws Error (a user error) when the device is out of memory.
  virtual std::shared_ptr<DeviceMemory> allocate(size_t bytes) = 0;
  // host (any strides) -> dst (contiguous, same shape and dtype); returns when host may be reused.
  virtual void upload(const View& host, const DeviceView& dst) = 0;
  // src (any strides) -> host (contiguous, same shape and dtype); returns when host holds it.
  virtual void download(const DeviceView& src, const View& host) = 0;

  // Whether this device has a kernel for n (op, dtypes, rank); false runs n on the CPU.
  virtual bool supports(const Node& n) const = 0;
  virtual MapLimits map_limits() const = 0;

  // kernels/cpu/kernels.hpp over device views; outputs contiguous and allocated by the caller.
  virtual void copy(const DeviceView& src, const DeviceView& dst) = 0;  // any strides
  virtual void map(const DeviceMapProgram& p, const DeviceView& out) = 0;
  virtual void reduce(Op op, const DeviceView& in, const std::vector<int>& dims, const DeviceView& out) = 0;
  // reduce(op, map(p) of `shape`, dims) into out. The default maps into a temporary of the
  // program's whole shape and reduces it; the CPU computes it chunk by chunk in cache.
  virtual void map_reduce(const DeviceMapProgram& p, const Shape& shape, Op op, const std::vector<int>& dims,
                          const DeviceView& out);
  virtual void argreduce(Op op, const DeviceView& in, int dim, const DeviceView& out) = 0;
  virtual void matmul(const DeviceView& a, const DeviceView& b, const DeviceView& out) = 0;
  virtual void generate(Op op, const Attrs& attrs, const Shape& global_shape,
                        const std::vector<int64_t>& origin, const DeviceView& out) = 0;
  virtual void correlate(const DeviceView& x, const DeviceView& k, const std::vector<int64_t>& origin,
                         const DeviceView& out) = 0;
  virtual void conv2d(const DeviceView& x, const DeviceView& w, const cpu::WindowAxis& h,
                      const cpu::WindowAxis& wd, int64_t out_per_group, int64_t o_origin,
                      const DeviceView& out) = 0;
  virtual void pool2d(Op op, const DeviceView& x, int64_t kh, int64_t kw, const cpu::WindowAxis& h,
                      const cpu::WindowAxis& wd, const DeviceView& out) = 0;
  // Gather, scatter and nonzero (cpu::run_index). The CPU's; a device without them answers
  // supports() false for these ops, so they run on the CPU (the default is never called then).
  virtual void index(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out);
  // LAPACK on whole matrices (cpu::run_linalg). The CPU's; a device without it answers
  // supports() false for these ops, so they run on the CPU (the default is never called then).
  // Scans, sorts and searchsorted over whole lines (cpu::run_line); as linalg, a device without
  // them answers supports() false.
  virtual void line(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out);
  virtual void linalg(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out);

  // Transfers between the devices of an MPI job's ranks (NCCL on GPUs). Whether this device
  // can join them; on rank 0, the id the others join with (NCCL's unique id); then every rank
  // calls join_peers with it at once (a collective: it returns once all ranks joined). The
  // defaults say "none": slices then cross through the host over MPI.
  virtual bool can_join_peers() const { return false; }
  virtual std::string make_peer_id() { return {}; }
  virtual std::unique_ptr<comm::DevicePeers> join_peers(const std::string& id, int rank, int size);
};

// A contiguous, uninitialised device tensor.
inline DeviceView device_alloc(DeviceBackend& dev, DType t, const Shape& s) {
  View layout;
  layout.dtype = t;
  layout.shape = s;
  layout.strides = contiguous_strides(s);
  const size_t bytes = static_cast<size_t>(numel(s)) * dtype_size(t);
  return DeviceView{dev.allocate(bytes), std::move(layout)};
}

}  // namespace tapestry
