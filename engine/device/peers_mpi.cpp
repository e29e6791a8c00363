#include "engine/device/peers_mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <vector>

#include "engine/comm/mpi_collective.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::comm {

namespace {

constexpr int kTag = 1;

struct Op {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<char> message;  // label, then the data
  DeviceView buf;             // a receive's destination; a collective's `out`
  uint64_t label = 0;
  bool send = false;
  int peer = 0;
  bool done = false;
  // A collective: the members' labels (checked first), then the data.
  std::unique_ptr<Collective> labels, data;
  std::shared_ptr<std::vector<char>> label_in, label_out, bytes_out;  // an exchange's bytes
  std::shared_ptr<Value> merged;                                      // a reduction's result
  std::shared_ptr<void> keep;                                         // what MPI reads until done
  int64_t out_bytes = 0;                                              // copied into buf when done
  bool checked = false;
};

int64_t bytes_of(const DeviceView& d) { return d.numel() * static_cast<int64_t>(dtype_size(d.dtype())); }

class MpiSimulatedPeers final : public DevicePeers {
 public:
  MpiSimulatedPeers(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  // Operations still in flight keep their buffers: the communicator is left to MPI_Finalize.
  // The groups' communicators are freed while MPI runs; after MPI_Finalize they are left.
  ~MpiSimulatedPeers() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || !queue_.empty()) static_cast<void>(groups_.release());
  }

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

  bool has_exchanges() const override { return true; }
  bool can_reduce(Monoid op, DType dtype) const override {
    return peers_can_merge(op, dtype) && MpiGroups::supports(op, dtype);
  }

  std::unique_ptr<Collective> exchange(const ExchangeSpec& spec, const DeviceView& in, const DeviceView& out,
                                       uint64_t label) override {
    internal_check(in.mem && out.mem && in.is_contiguous() && out.is_contiguous());
    auto op = start_collective(spec.group, label);
    const int me = spec.member(rank_);
    int64_t in_bytes = 0;
    switch (spec.kind) {
      case ExchangeKind::Broadcast:
        in_bytes = rank_ == spec.root ? spec.counts.at(0) : 0;
        op->out_bytes = rank_ == spec.root ? 0 : spec.counts.at(0);
        break;
      case ExchangeKind::AllGather:
        in_bytes = spec.counts.at(static_cast<size_t>(me));
        for (int64_t n : spec.counts) op->out_bytes += n;
        break;
      case ExchangeKind::AllToAll:
        for (int64_t n : spec.counts) in_bytes += n;
        for (int64_t n : spec.recv) op->out_bytes += n;
        break;
    }
    auto bytes_in = std::make_shared<std::vector<char>>(static_cast<size_t>(in_bytes));
    if (in_bytes > 0) std::memcpy(bytes_in->data(), in.first(), static_cast<size_t>(in_bytes));
    op->bytes_out = std::make_shared<std::vector<char>>(static_cast<size_t>(op->out_bytes));
    op->buf = out;
    op->data = groups_->start_exchange(spec, std::move(bytes_in), op->bytes_out);
    ++sends_, bytes_ += spec.sent(rank_);
    return std::make_unique<Handle>(*this, op);
  }

  std::unique_ptr<Collective> reduce(const ReduceSpec& spec, const DeviceView& in, const DeviceView& out,
                                     uint64_t label) override {
    internal_check(in.mem && in.is_contiguous() && can_reduce(spec.op, in.dtype()));
    auto op = start_collective(spec.group, label);
    const auto me = std::lower_bound(spec.group.begin(), spec.group.end(), rank_);
    const bool receives = !spec.counts.empty() || spec.root == kAllMembers || spec.root == rank_;
    auto mine = Value::alloc(in.dtype(), {in.numel()});
    std::memcpy(mine->v.byte_ptr(), in.first(), static_cast<size_t>(bytes_of(in)));
    if (receives) {
      internal_check(out.mem && out.is_contiguous() && out.dtype() == in.dtype());
      const int64_t n =
          spec.counts.empty() ? in.numel() : spec.counts.at(static_cast<size_t>(me - spec.group.begin()));
      op->merged = Value::alloc(in.dtype(), {n});
      op->buf = out;
      op->out_bytes = n * static_cast<int64_t>(dtype_size(in.dtype()));
    }
    op->data = groups_->start_reduce(spec, mine->v, op->merged ? op->merged->v : View{});
    op->keep = mine;
    ++sends_, bytes_ += bytes_of(in);
    return std::make_unique<Handle>(*this, op);
  }

 private:
  // Queues a collective among `group` and starts the gather of its members' labels; the
  // group's communicator is made first when this is its first collective (every member gets
  // here, in the one posting order).
  std::shared_ptr<Op> start_collective(const Group& group, uint64_t label) {
    internal_check(std::binary_search(group.begin(), group.end(), rank_));
    groups_->join({group}, 0, {});
    auto op = std::make_shared<Op>();
    op->label = label;
    op->label_in = std::make_shared<std::vector<char>>(sizeof label);
    std::memcpy(op->label_in->data(), &label, sizeof label);
    op->label_out = std::make_shared<std::vector<char>>(sizeof label * group.size());
    ExchangeSpec labels{ExchangeKind::AllGather,
                        group,
                        -1,
                        std::vector<int64_t>(group.size(), static_cast<int64_t>(sizeof label)),
                        {}};
    op->labels = groups_->start_exchange(labels, op->label_in, op->label_out);
    queue_.push_back(op);
    return op;
  }

  // A collective at the front: its labels agree (else the ranks posted in different orders),
  // and once its data is in, it is copied to the device.
  bool collective_done(Op& op) {
    if (!op.checked) {
      if (!op.labels->test()) return false;
      for (size_t i = 0; i < op.label_out->size() / sizeof op.label; ++i) {
        uint64_t theirs = 0;
        std::memcpy(&theirs, op.label_out->data() + i * sizeof theirs, sizeof theirs);
        if (theirs != op.label)
          throw InternalError(cat_str("device peers: rank ", rank_, "'s collective ", op.label,
                                      " meets another member's collective ", theirs,
                                      ": the ranks posted in different orders"));
      }
      op.checked = true;
    }
    if (!op.data->test()) return false;
    if (op.out_bytes > 0)
      std::memcpy(op.buf.first(), op.merged ? op.merged->v.byte_ptr() : op.bytes_out->data(),
                  static_cast<size_t>(op.out_bytes));
    return true;
  }

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
      if (op.labels) {
        if (!collective_done(op)) return;
        op.done = true;
        queue_.pop_front();
        continue;
      }
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
  std::unique_ptr<MpiGroups> groups_ = std::make_unique<MpiGroups>();  // collectives' communicators
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
