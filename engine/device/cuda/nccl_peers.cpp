#include "engine/device/cuda/nccl_peers.hpp"

#include <nccl.h>

#include <cstring>
#include <vector>

#include "engine/ir/error.hpp"
#include "kernels/cuda/runtime.hpp"

namespace tapestry::cuda {

namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) user_error("NCCL ", what, ": ", ncclGetErrorString(r));
}

// Every dtype moves as bytes: a transfer copies, it never reduces.
size_t bytes_of(const DeviceView& d) { return static_cast<size_t>(d.numel()) * dtype_size(d.dtype()); }

struct Op {
  DeviceView buf;  // kept alive while NCCL may touch it
  Event done;
  bool complete = false;
};

class NcclPeers;

class Handle final : public comm::Collective {
 public:
  Handle(NcclPeers& peers, std::shared_ptr<Op> op) : peers_(peers), op_(std::move(op)) {}
  ~Handle() override;
  bool test() override {
    if (op_->complete) return true;
    const cudaError_t e = cudaEventQuery(op_->done.get());
    if (e == cudaErrorNotReady) return false;
    check(e, "a device transfer");
    return op_->complete = true;
  }

 private:
  NcclPeers& peers_;
  std::shared_ptr<Op> op_;
};

class NcclPeers final : public comm::DevicePeers {
 public:
  NcclPeers(ncclComm_t comm, int rank, int size, int version)
      : comm_(comm), rank_(rank), size_(size), version_(version) {}
  ~NcclPeers() override {
    // An operation left incomplete by a failed run may wait forever for its peer: abort the
    // communicator (which stops its kernels) before its buffers are freed.
    if (unfinished_.empty()) ncclCommDestroy(comm_);
    else ncclCommAbort(comm_);
    unfinished_.clear();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override {
    return cat_str("nccl ", version_ / 10000, ".", version_ / 100 % 100, ".", version_ % 100);
  }
  int64_t sends() const override { return sends_; }
  int64_t bytes_sent() const override { return bytes_; }

  std::unique_ptr<comm::Collective> send(int to, const DeviceView& src, uint64_t) override {
    internal_check(src.is_contiguous() && to != rank_);
    auto op = std::make_shared<Op>();
    op->buf = src;
    Event ready;  // the kernels that computed src, queued before this send on the compute stream
    ready.record(context().s());
    check(cudaStreamWaitEvent(stream_.get(), ready.get(), 0), "cudaStreamWaitEvent");
    check_nccl(ncclSend(src.first(), bytes_of(src), ncclUint8, to, comm_, stream_.get()), "ncclSend");
    op->done.record(stream_.get());
    ++sends_, bytes_ += static_cast<int64_t>(bytes_of(src));
    return std::make_unique<Handle>(*this, std::move(op));
  }

  std::unique_ptr<comm::Collective> recv(int from, const DeviceView& dst, uint64_t) override {
    internal_check(dst.is_contiguous() && from != rank_);
    auto op = std::make_shared<Op>();
    op->buf = dst;
    check_nccl(ncclRecv(dst.first(), bytes_of(dst), ncclUint8, from, comm_, stream_.get()), "ncclRecv");
    op->done.record(stream_.get());
    return std::make_unique<Handle>(*this, std::move(op));
  }

  void keep_until_abort(std::shared_ptr<Op> op) { unfinished_.push_back(std::move(op)); }

 private:
  ncclComm_t comm_;
  int rank_, size_, version_;
  Stream stream_;  // NCCL's operations, in posting order
  std::vector<std::shared_ptr<Op>> unfinished_;
  int64_t sends_ = 0, bytes_ = 0;
};

Handle::~Handle() {
  if (!op_->complete && cudaEventQuery(op_->done.get()) == cudaErrorNotReady) peers_.keep_until_abort(op_);
}

}  // namespace

std::string nccl_peer_id() {
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::string out(sizeof version + sizeof id.internal, '\0');
  std::memcpy(out.data(), &version, sizeof version);
  std::memcpy(out.data() + sizeof version, id.internal, sizeof id.internal);
  return out;
}

std::unique_ptr<comm::DevicePeers> join_nccl_peers(const std::string& id, int rank, int size) {
  int version = 0, theirs = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  ncclUniqueId uid;
  user_check(id.size() == sizeof theirs + sizeof uid.internal, "NCCL peers: a malformed id of ", id.size(),
             " bytes");
  std::memcpy(&theirs, id.data(), sizeof theirs);
  user_check(theirs == version, "NCCL peers: rank 0 runs NCCL ", theirs, ", this rank ", version,
             " (every rank needs the same NCCL)");
  std::memcpy(uid.internal, id.data() + sizeof theirs, sizeof uid.internal);
  context();  // this thread's device is selected before NCCL binds the communicator to it
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, size, uid, rank), "ncclCommInitRank");
  return std::make_unique<NcclPeers>(comm, rank, size, version);
}

}  // namespace tapestry::cuda
