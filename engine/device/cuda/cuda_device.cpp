// The CUDA device backend: DeviceBackend (engine/device/backend.hpp) over the host API of
// cuda_backend.hpp. Built only as the plugin libtapestry_cuda.so, which tapestry loads when the
// selected device is cuda (engine/device/plugin.cpp); its two C entry points are at the end.
// Host C++ (g++): the kernels it calls are in the .cu files linked into the same plugin.
#include <cstdio>
#include <exception>

#include "engine/device/backend.hpp"
#include "engine/device/cuda/nccl_peers.hpp"
#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"

namespace tapestry::cuda {
namespace {

class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(size_t bytes) : b_(bytes) {}
  void* data() const override { return b_.get(); }
  size_t bytes() const override { return b_.bytes(); }

 private:
  DeviceBuffer b_;  // the caching allocator's block; waits for queued work when freed
};

// A device view as the kernels take it; d must be this backend's memory.
DView dv(const DeviceView& d) {
  internal_check(dynamic_cast<const CudaMemory*>(d.mem.get()) != nullptr);
  return DView{d.first(), d.dtype(), d.shape(), d.layout.strides};
}

// The kernels index with at most 8 coalesced dims; empty tensors stay on the CPU, where
// every kernel is known to handle them.
bool fits(const Shape& s) { return s.size() <= 8 && numel(s) > 0; }

class CudaDevice final : public DeviceBackend {
 public:
  explicit CudaDevice(int index) : index_(index) {
    select_device(index);
    synchronize();  // makes the stream now: a broken device fails here, not in the first kernel
  }

  std::string name() const override { return cat_str("cuda (device ", index_, ")"); }
  std::shared_ptr<DeviceMemory> allocate(size_t bytes) override {
    return std::make_shared<CudaMemory>(bytes);
  }
  void upload(const View& host, const DeviceView& dst) override { to_device(host, dv(dst)); }
  void download(const DeviceView& src, const View& host) override { to_host(dv(src), host); }

  bool supports(const Node& n) const override {
    if (!cuda_supports(n.op, n.dtype) || !fits(n.shape)) return false;
    for (const NodeRef& in : n.inputs)
      if (!fits(in->shape)) return false;
    // A line op's kernel is chosen by its input (a sort's indices are i64 whatever it sorts).
    if (op_def(n.op).kind == OpKind::Line && n.op != Op::Fft)
      return !n.inputs.empty() && line_supported(n.op, n.inputs[0]->dtype);
    return true;
  }
  MapLimits map_limits() const override { return {16, 40}; }  // map.cu's kMaxLeaves, kMaxInstrs

  void copy(const DeviceView& src, const DeviceView& dst) override { copy_view(dv(src), dv(dst)); }
  void map(const DeviceMapProgram& p, const DeviceView& out) override {
    MapProgram mp;
    for (const DeviceView& l : p.leaves) mp.leaves.push_back(dv(l));
    mp.instrs = p.instrs;
    run_map(mp, dv(out));
  }
  void reduce(Op op, const DeviceView& in, const std::vector<int>& dims, const DeviceView& out) override {
    run_reduce(op, dv(in), dims, dv(out));
  }
  void argreduce(Op op, const DeviceView& in, int dim, const DeviceView& out) override {
    run_argreduce(op, dv(in), dim, dv(out));
  }
  void matmul(const DeviceView& a, const DeviceView& b, const DeviceView& out) override {
    run_matmul(dv(a), dv(b), dv(out));
  }
  void generate(Op op, const Attrs& attrs, const Shape& global_shape, const std::vector<int64_t>& origin,
                const DeviceView& out) override {
    run_generate(op, attrs, global_shape, origin, dv(out));
  }
  void correlate(const DeviceView& x, const DeviceView& k, const std::vector<int64_t>& origin,
                 const DeviceView& out) override {
    run_correlate(dv(x), dv(k), origin, dv(out));
  }
  void conv2d(const DeviceView& x, const DeviceView& w, const cpu::WindowAxis& h, const cpu::WindowAxis& wd,
              int64_t out_per_group, int64_t o_origin, const DeviceView& out) override {
    run_conv2d(dv(x), dv(w), h, wd, out_per_group, o_origin, dv(out));
  }
  void pool2d(Op op, const DeviceView& x, int64_t kh, int64_t kw, const cpu::WindowAxis& h,
              const cpu::WindowAxis& wd, const DeviceView& out) override {
    run_pool2d(op, dv(x), kh, kw, h, wd, dv(out));
  }
  void index(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) override {
    std::vector<DView> v;
    for (const DeviceView& d : in) v.push_back(dv(d));
    run_index(op, attrs, v, dv(out));
  }

  // The line ops (line.cu; the FFT through cuFFT); of the linalg ops those of cuSOLVER.
  void line(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) override {
    std::vector<DView> v;
    for (const DeviceView& d : in) v.push_back(dv(d));
    run_line(op, attrs, v, dv(out));
  }
  void linalg(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) override {
    std::vector<DView> v;
    for (const DeviceView& d : in) v.push_back(dv(d));
    run_linalg(op, attrs, v, dv(out));
  }

  // NCCL between the GPUs of an MPI job (nccl_peers.hpp).
  bool can_join_peers() const override { return true; }
  std::string make_peer_id() override { return nccl_peer_id(); }
  std::unique_ptr<comm::DevicePeers> join_peers(const std::string& id, int rank, int size) override {
    return join_nccl_peers(id, rank, size);
  }

 private:
  int index_;
};

}  // namespace
}  // namespace tapestry::cuda

// The plugin's entry points, found by name with dlsym.
extern "C" __attribute__((visibility("default"))) int tapestry_device_backend_abi() {
  return tapestry::kDeviceBackendAbi;
}

// The backend on GPU `index`, or nullptr with the reason in why (no exception crosses dlsym).
extern "C" __attribute__((visibility("default"))) tapestry::DeviceBackend* tapestry_make_cuda_backend(
    int index, char* why, size_t why_size) {
  try {
    if (tapestry::cuda::cuda_device_count() == 0) {
      std::snprintf(why, why_size, "%s", tapestry::cuda::cuda_unavailable_reason().c_str());
      return nullptr;
    }
    return new tapestry::cuda::CudaDevice(index);
  } catch (const std::exception& e) {
    std::snprintf(why, why_size, "%s", e.what());
    return nullptr;
  }
}
