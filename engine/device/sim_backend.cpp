#include "engine/device/sim_backend.hpp"

#include <algorithm>

#include "engine/device/peers_mpi.hpp"
#include "engine/ir/error.hpp"

namespace tapestry {

// A separate host allocation that counts itself in and out of the device's live bytes.
class SimDevice::Memory final : public tapestry::Memory {
 public:
  Memory(std::shared_ptr<Buffer> b, std::shared_ptr<Counts> counts)
      : buf_(std::move(b)), counts_(std::move(counts)) {
    counts_->live_bytes += static_cast<int64_t>(bytes());
    counts_->peak_bytes = std::max(counts_->peak_bytes, counts_->live_bytes);
    ++counts_->allocations;
  }
  ~Memory() override { counts_->live_bytes -= static_cast<int64_t>(bytes()); }
  void* data() const override { return buf_->data(); }
  size_t bytes() const override { return buf_->bytes(); }
  const Buffer* host_buffer() const override { return buf_.get(); }
  const Counts* owner() const { return counts_.get(); }

 private:
  std::shared_ptr<Buffer> buf_;
  std::shared_ptr<Counts> counts_;
};

View SimDevice::view(const DeviceView& d) const {
  const auto* m = dynamic_cast<const Memory*>(d.mem.get());
  internal_check(m != nullptr && m->owner() == counts_.get());  // host memory or another device's
  return HostBackend::view(d);
}

std::shared_ptr<DeviceMemory> SimDevice::allocate(size_t bytes) {
  if (static_cast<int64_t>(bytes) > capacity_ - counts_->live_bytes)
    throw OutOfDeviceMemory(cat_str("out of device memory allocating ", bytes, " bytes (simulated device of ",
                                    capacity_, " bytes)"));
  return std::make_shared<Memory>(std::make_shared<Buffer>(bytes), counts_);
}

void SimDevice::upload(const View& host, const DeviceView& dst) {
  internal_check(host.buf != nullptr && host.shape == dst.shape() && host.dtype == dst.dtype());
  HostBackend::upload(host, dst);
  ++counts_->uploads;
  counts_->upload_bytes += host.numel() * static_cast<int64_t>(dtype_size(host.dtype));
}

std::unique_ptr<comm::DevicePeers> SimDevice::join_peers(const std::string& id, int rank, int size) {
  internal_check(id == "simulated");
  return comm::mpi_simulated_peers(rank, size);
}

void SimDevice::download(const DeviceView& src, const View& host) {
  internal_check(host.buf != nullptr && host.shape == src.shape() && host.dtype == src.dtype());
  HostBackend::download(src, host);
  ++counts_->downloads;
  counts_->download_bytes += host.numel() * static_cast<int64_t>(dtype_size(host.dtype));
}

}  // namespace tapestry
