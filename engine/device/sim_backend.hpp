// A simulated device for the tests of the device paths (the device evaluator, device blocks of
// rank programs, device peers): its memory is host allocations of its own (so nothing reaches it
// but through upload), its kernels are the CPU's, and it counts what crosses the host boundary.
//   SimDevice sim;  sim.refuse(Op::Matmul);        // matmul then runs on the CPU fallback
//   evaluate_on_device({y}, sim);
//   CHECK(sim.counts().uploads == 2);  CHECK(sim.counts().live_bytes == 0);
// Built with the engine; tapestry makes one only with TAPESTRY_DEVICE=sim (device::attach_backend).
#pragma once

#include <cstdint>
#include <memory>
#include <set>

#include "engine/device/host_backend.hpp"

namespace tapestry {

class SimDevice final : public HostBackend {
 public:
  struct Counts {
    int64_t uploads = 0, upload_bytes = 0;
    int64_t downloads = 0, download_bytes = 0;
    int64_t allocations = 0;
    int64_t live_bytes = 0;  // device memory held now (0 once an evaluation is over)
    int64_t peak_bytes = 0;
  };

  // capacity: device memory in bytes; an allocation past it fails as out of memory does.
  explicit SimDevice(MapLimits limits = {}, int64_t capacity = INT64_MAX)
      : limits_(limits), capacity_(capacity) {}

  // supports() is false for every node of this op.
  void refuse(Op op) { refused_.insert(op); }
  const Counts& counts() const { return *counts_; }

  View view(const DeviceView& d) const override;  // checks d is this device's memory
  std::string name() const override { return "host simulation"; }
  std::shared_ptr<DeviceMemory> allocate(size_t bytes) override;
  void upload(const View& host, const DeviceView& dst) override;
  void download(const DeviceView& src, const View& host) override;
  bool supports(const Node& n) const override { return !refused_.count(n.op); }
  MapLimits map_limits() const override { return limits_; }
  // Under mpirun: NCCL's rules kept over MPI (peers_mpi.hpp).
  bool can_join_peers() const override { return true; }
  std::string make_peer_id() override { return "simulated"; }
  std::unique_ptr<comm::DevicePeers> join_peers(const std::string& id, int rank, int size) override;

 private:
  class Memory;
  MapLimits limits_;
  int64_t capacity_;
  std::set<Op> refused_;
  // Shared with every allocation, which gives its bytes back when freed.
  std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();
};

}  // namespace tapestry
