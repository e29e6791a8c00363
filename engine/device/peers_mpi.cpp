#include "engine/device/peers_mpi.hpp"

#include <mpi.h>

#include <climits>
#include <cstring>
#include <deque>
#include <vector>

#include "engine/ir/error.hpp"

namespace tapestry::comm {

namespace {

constexpr int kTag = 1;

struct Op {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<char> message;  // label, then the data
  DeviceView buf;             // a receive's destination
  uint64_t label = 0;
  bool send = false;
  int peer = 0;
  bool done = false;
};

int64_t bytes_of(const DeviceView& d) { return d.numel() * static_cast<int64_t>(dtype_size(d.dtype())); }

class MpiSimulatedPeers final : public DevicePeers {
 public:
  MpiSimulatedPeers(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  // Operations still in flight keep their buffers: the communicator is left to MPI_Finalize.
  ~MpiSimulatedPeers() override = default;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "simulated device peers over MPI"; }
  int64_t sends() const override { return sends_; }
  int64_t bytes_sent() const override { return bytes_; }

  std::unique_ptr<Collective> send(int to, const DeviceView& src, uint64_t label) override {
    auto op = start(true, to, src, label);
    std::memcpy(op->message.data() + sizeof label, src.first(), static_cast<size_t>(bytes_of(src)));
    MPI_Issend(op->message.data(), static_cast<int>(op->message.size()), MPI_BYTE, to, kTag, comm_,
               &op->request);
    ++sends_, bytes_ += bytes_of(src);
    return std::make_unique<Handle>(*this, op);
  }

  std::unique_ptr<Collective> recv(int from, const DeviceView& dst, uint64_t label) override {
    auto op = start(false, from, dst, label);
    MPI_Irecv(op->message.data(), static_cast<int>(op->message.size()), MPI_BYTE, from, kTag, comm_,
              &op->request);
    return std::make_unique<Handle>(*this, op);
  }

 private:
  class Handle final : public Collective {
   public:
    Handle(MpiSimulatedPeers& p, std::shared_ptr<Op> op) : p_(p), op_(std::move(op)) {}
    bool test() override {
      p_.progress();
      return op_->done;
    }

   private:
    MpiSimulatedPeers& p_;
    std::shared_ptr<Op> op_;
  };

  std::shared_ptr<Op> start(bool send, int peer, const DeviceView& buf, uint64_t label) {
    internal_check(peer != rank_ && peer >= 0 && peer < size_ && buf.mem && buf.is_contiguous());
    const int64_t bytes = bytes_of(buf) + static_cast<int64_t>(sizeof label);
    user_check(bytes <= INT_MAX, "the simulated device sends at most 2 GiB at once, not ", bytes, " bytes");
    auto op = std::make_shared<Op>();
    op->send = send, op->peer = peer, op->buf = buf, op->label = label;
    op->message.resize(static_cast<size_t>(bytes));
    std::memcpy(op->message.data(), &label, sizeof label);
    queue_.push_back(op);
    return op;
  }

  // Completes operations in posting order: the first one still in flight holds up the rest.
  void progress() {
    while (!queue_.empty()) {
      Op& op = *queue_.front();
      int flag = 0;
      MPI_Test(&op.request, &flag, MPI_STATUS_IGNORE);
      if (!flag) return;
      if (!op.send) {
        uint64_t label = 0;
        std::memcpy(&label, op.message.data(), sizeof label);
        if (label != op.label)
          throw InternalError(cat_str("device peers: rank ", rank_, "'s receive of transfer ", op.label,
                                      " from rank ", op.peer, " met transfer ", label,
                                      ": the ranks posted in different orders"));
        std::memcpy(op.buf.first(), op.message.data() + sizeof label, op.message.size() - sizeof label);
      }
      op.done = true;
      queue_.pop_front();
    }
  }

  MPI_Comm comm_;
  int rank_, size_;
  std::deque<std::shared_ptr<Op>> queue_;
  int64_t sends_ = 0, bytes_ = 0;
};

}  // namespace

std::unique_ptr<DevicePeers> mpi_simulated_peers(int rank, int size) {
  int inited = 0, world_rank = -1, world_size = 0;
  MPI_Initialized(&inited);
  internal_check(inited != 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  internal_check(world_rank == rank && world_size == size);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);  // collective; never freed (MPI_Finalize does)
  return std::make_unique<MpiSimulatedPeers>(comm, rank, size);
}

}  // namespace tapestry::comm
