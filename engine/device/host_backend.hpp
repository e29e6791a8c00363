// The CPU as a DeviceBackend: "device" views are host buffers and the kernels are kernels/cpu's.
//   HostBackend cpu;
//   DeviceView x = HostBackend::wrap(host_view);   // the same buffer, no copy
//   cpu.reduce(Op::Sum, x, {0}, y);  View r = cpu.view(y);
// The single-rank evaluator and the rank programs' CPU blocks run on it (cpu_backend(),
// engine/run/run_block.hpp), and the device evaluator runs on it what the device has no kernel
// for (a node's CPU fallback), with the same per-node code as on the device; the simulated
// device (sim_backend.hpp) derives from it.
#pragma once

#include <memory>
#include <string>

#include "engine/device/backend.hpp"

namespace tapestry {

class HostBackend : public DeviceBackend {
 public:
  // The CPU's own entry points, over host views (the single-rank evaluator calls them directly;
  // the DeviceBackend ones below wrap them for device views).
  // prepared: p's registers kept from an earlier run of the same layouts (cpu::PreparedMap).
  void map(const cpu::MapProgram& p, const View& out, cpu::PreparedMap* prepared = nullptr) {
    if (prepared) prepared->run(p, out);
    else cpu::run_map(p, out);
  }
  void reduce(Op op, const View& in, const std::vector<int>& dims, const View& out) {
    cpu::run_reduce(op, in, dims, out);
  }
  void copy(const View& src, const View& dst) { cpu::copy_view(src, dst); }
  // Per row of x (rows = x's element count / the reduced count): its sum and the moments of a
  // variance in one pass (kernels/cpu/moments.cpp). x contiguous.
  void moments(const View& x, int64_t rows, cpu::Moments* out) { cpu::run_moments(x, rows, out); }

  // The CPU's fast paths.
  // reduce(op, map(p) of `shape`, dims): each chunk of rows of the map is computed into a
  // cache-sized buffer and reduced at once, so the map never exists whole; chunks that reduce
  // dim 0 merge as partials, in order (deterministic).
  // prepared: p prepared for an earlier run (cpu::PreparedMap), used when p runs in one piece.
  void map_reduce(const cpu::MapProgram& p, const Shape& shape, Op op, const std::vector<int>& dims,
                  const View& out, cpu::PreparedMap* prepared = nullptr);
  // A stencil read by a map program: leaf `leaf` is correlate(x, k) with its windows starting at
  // `origin` (-pad_before) of x, of the program's shape.
  struct Stencil {
    int leaf;
    View x, k;
    std::vector<int64_t> origin;
  };
  // The program with those leaves computed band by band of rows inside it (each band of a
  // stencil in a per-thread buffer that stays in L2; u + c * stencil straight from the stencil
  // kernel): a step like u + c * stencil(u) reads u and writes its result once.
  void map_banded(const cpu::MapProgram& p, const std::vector<Stencil>& stencils, const View& out);

  // A device view over v's buffer (no copy, no allocation: a Buffer is a Memory).
  static DeviceView wrap(const View& v);
  // The host view of a view this backend made or wrapped.
  virtual View view(const DeviceView& d) const;
  static bool is_host(const DeviceView& d);

  std::string name() const override { return "cpu"; }
  std::shared_ptr<DeviceMemory> allocate(size_t bytes) override;
  void upload(const View& host, const DeviceView& dst) override;
  void download(const DeviceView& src, const View& host) override;
  bool supports(const Node&) const override { return true; }
  MapLimits map_limits() const override;

  void copy(const DeviceView& src, const DeviceView& dst) override;
  void map(const DeviceMapProgram& p, const DeviceView& out) override;
  void reduce(Op op, const DeviceView& in, const std::vector<int>& dims, const DeviceView& out) override;
  void map_reduce(const DeviceMapProgram& p, const Shape& shape, Op op, const std::vector<int>& dims,
                  const DeviceView& out) override;
  void argreduce(Op op, const DeviceView& in, int dim, const DeviceView& out) override;
  void matmul(const DeviceView& a, const DeviceView& b, const DeviceView& out) override;
  void line(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) override;
  void index(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) override;
  void linalg(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) override;
  void generate(Op op, const Attrs& attrs, const Shape& global_shape, const std::vector<int64_t>& origin,
                const DeviceView& out) override;
  void correlate(const DeviceView& x, const DeviceView& k, const std::vector<int64_t>& origin,
                 const DeviceView& out) override;
  void conv2d(const DeviceView& x, const DeviceView& w, const cpu::WindowAxis& h, const cpu::WindowAxis& wd,
              int64_t out_per_group, int64_t o_origin, const DeviceView& out) override;
  void pool2d(Op op, const DeviceView& x, int64_t kh, int64_t kw, const cpu::WindowAxis& h,
              const cpu::WindowAxis& wd, const DeviceView& out) override;
};

}  // namespace tapestry
