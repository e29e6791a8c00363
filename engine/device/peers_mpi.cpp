#include "engine/device/peers_mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "engine/comm/mpi_collective.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::comm {

namespace {

constexpr int kTag = 1;
constexpr int kTagNote = 2;  // "this rank posted its first collective of a group"

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
  // Not started yet: its group's communicator is still to be made (progress() starts it).
  Group group;
  std::function<std::unique_ptr<Collective>()> start;
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
    if (!finalized && !notes_.empty()) {  // MPI may still read them: kept, the process goes on
      static auto* kept = new std::vector<Note>();
      for (Note& n : notes_) MPI_Request_free(&n.req), kept->push_back(std::move(n));
    }
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
    Op* o = op.get();
    op->start = [this, spec, bytes_in, o] { return groups_->start_exchange(spec, bytes_in, o->bytes_out); };
    ++sends_, bytes_ += spec.sent(rank_);
    progress();
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
    op->keep = mine;
    Op* o = op.get();
    op->start = [this, spec, mine, o] {
      return groups_->start_reduce(spec, mine->v, o->merged ? o->merged->v : View{});
    };
    ++sends_, bytes_ += bytes_of(in);
    progress();
    return std::make_unique<Handle>(*this, op);
  }

 private:
  // Queues a collective among `group`. Its group's communicator is made when every member has
  // posted a collective of it (notes on the peers' communicator say so), so a member whose run
  // failed before it got there leaves the others waiting in progress(), never inside MPI.
  std::shared_ptr<Op> start_collective(const Group& group, uint64_t label) {
    internal_check(std::binary_search(group.begin(), group.end(), rank_));
    auto op = std::make_shared<Op>();
    op->label = label;
    op->group = group;
    op->label_in = std::make_shared<std::vector<char>>(sizeof label);
    std::memcpy(op->label_in->data(), &label, sizeof label);
    op->label_out = std::make_shared<std::vector<char>>(sizeof label * group.size());
    if (!joined_.count(group) && !heard_.count(group)) {  // the first of this group: tell its members
      heard_[group].assign(group.size(), false);
      auto note = std::make_shared<std::vector<uint64_t>>(group.begin(), group.end());
      for (int m : group) {
        if (m == rank_) continue;
        MPI_Request req;
        MPI_Isend(note->data(), static_cast<int>(note->size()), MPI_UINT64_T, m, kTagNote, comm_, &req);
        notes_.push_back({req, note});
      }
    }
    queue_.push_back(op);
    return op;
  }

  // Whether every other member of `group` has noted it (polls for their notes).
  bool everyone_noted(const Group& group) {
    std::vector<bool>& heard = heard_.at(group);
    bool all = true;
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] == rank_ || heard[i]) continue;
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(group[i], kTagNote, comm_, &flag, &st);
      if (!flag) {
        all = false;
        continue;
      }
      int count = 0;
      MPI_Get_count(&st, MPI_UINT64_T, &count);
      std::vector<uint64_t> theirs(static_cast<size_t>(std::max(count, 0)));
      MPI_Recv(theirs.data(), count, MPI_UINT64_T, group[i], kTagNote, comm_, MPI_STATUS_IGNORE);
      if (theirs != std::vector<uint64_t>(group.begin(), group.end()))
        throw InternalError(cat_str("device peers: rank ", rank_, " meets a group of ", group.size(),
                                    " ranks, rank ", group[i], " another of ", theirs.size(),
                                    ": the ranks posted in different orders"));
      heard[i] = true;
    }
    return all;
  }

  // Starts the collectives posted so far whose groups are ready, in posting order (each
  // group's collectives match by order on its communicator): the labels' gather, then the data.
  void start_ready() {
    std::erase_if(notes_, [](Note& n) {
      int done = 0;
      MPI_Test(&n.req, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    for (const std::shared_ptr<Op>& op : queue_) {
      if (!op->start) continue;
      if (!joined_.count(op->group)) {
        if (!everyone_noted(op->group)) return;
        groups_->join({op->group}, 0, {});  // every member is here or on its way: brief
        joined_.insert(op->group);
        heard_.erase(op->group);
      }
      ExchangeSpec labels{ExchangeKind::AllGather,
                          op->group,
                          -1,
                          std::vector<int64_t>(op->group.size(), static_cast<int64_t>(sizeof op->label)),
                          {}};
      op->labels = groups_->start_exchange(labels, op->label_in, op->label_out);
      op->data = op->start();
      op->start = nullptr;
    }
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
    start_ready();
    while (!queue_.empty()) {
      Op& op = *queue_.front();
      if (op.start) return;  // its group is not ready yet
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
  std::set<Group> joined_;                                             // groups with a communicator
  std::map<Group, std::vector<bool>> heard_;  // groups noted, not joined: which members' notes came
  struct Note {
    MPI_Request req;
    std::shared_ptr<std::vector<uint64_t>> body;
  };
  std::vector<Note> notes_;  // notes still being sent
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
