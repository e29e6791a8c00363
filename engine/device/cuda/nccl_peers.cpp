#include "engine/device/cuda/nccl_peers.hpp"

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
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

// How a merge of comm::peers_can_merge maps onto NCCL. Sums and products of integers run
// unsigned (they wrap as the kernels' do); bools are bytes 0 or 1, whose `or` is max and
// whose `and` is min.
struct NcclMerge {
  ncclDataType_t type;
  ncclRedOp_t op;
};
NcclMerge nccl_merge(Monoid m, DType t) {
  internal_check(comm::peers_can_merge(m, t));
  const bool wraps = m == Monoid::Sum || m == Monoid::Prod;
  const ncclRedOp_t op = m == Monoid::Sum    ? ncclSum
                         : m == Monoid::Prod ? ncclProd
                         : m == Monoid::Max  ? ncclMax
                                             : ncclMin;
  switch (t) {
    case DType::Bool:
      return {ncclUint8, m == Monoid::Sum || m == Monoid::Max || m == Monoid::Or ? ncclMax : ncclMin};
    case DType::I8: return {wraps ? ncclUint8 : ncclInt8, op};
    case DType::U8: return {ncclUint8, op};
    case DType::I32: return {wraps ? ncclUint32 : ncclInt32, op};
    case DType::I64: return {wraps ? ncclUint64 : ncclInt64, op};
    case DType::F32: return {ncclFloat32, op};
    case DType::F64: return {ncclFloat64, op};
    default: internal_fail(__FILE__, __LINE__, "a merge NCCL does not take");
  }
}

struct Op {
  DeviceView buf;  // kept alive while NCCL may touch it
  DeviceView in;   // an exchange's contribution, likewise
  Event done;
  bool launched = false;  // on the stream (operations launch in posting order, see pump())
  bool complete = false;
};

// A communicator over one group's members (an exchange's), created on first use from a
// unique id its lowest member sends the others over the world communicator, in non-blocking
// mode so the host never waits on a member that has not reached the exchange yet.
struct GroupComm {
  ncclComm_t comm = nullptr;
  bool ready = false;
};

class NcclPeers;

class Handle final : public comm::Collective {
 public:
  Handle(NcclPeers& peers, std::shared_ptr<Op> op) : peers_(peers), op_(std::move(op)) {}
  ~Handle() override;
  bool test() override;
  bool test_launched() {
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
    // communicators (which stops their kernels) before its buffers are freed.
    const bool abort = !unfinished_.empty() || !waiting_.empty();
    for (auto& [group, g] : groups_)
      if (g.comm) abort || !g.ready ? ncclCommAbort(g.comm) : ncclCommDestroy(g.comm);
    if (abort) ncclCommAbort(comm_);
    else ncclCommDestroy(comm_);
    waiting_.clear();
    unfinished_.clear();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override {
    return cat_str("nccl ", version_ / 10000, ".", version_ / 100 % 100, ".", version_ % 100);
  }
  int64_t sends() const override { return sends_; }
  int64_t bytes_sent() const override { return bytes_; }

  // Sends and receives launch on the stream in posting order, after any exchange posted
  // before them (whose communicator may still be forming): NCCL's order across ranks is the
  // order of the stream.
  std::unique_ptr<comm::Collective> send(int to, const DeviceView& src, uint64_t) override {
    internal_check(src.is_contiguous() && to != rank_);
    auto op = std::make_shared<Op>();
    op->buf = src;
    // The kernels that computed src, queued before this send on the compute stream.
    auto ready_shared = std::make_shared<Event>();
    ready_shared->record(context().s());
    ++sends_, bytes_ += static_cast<int64_t>(bytes_of(src));
    return queue(op, [this, op, to, ready_shared] {
      check(cudaStreamWaitEvent(stream_.get(), ready_shared->get(), 0), "cudaStreamWaitEvent");
      check_nccl(ncclSend(op->buf.first(), bytes_of(op->buf), ncclUint8, to, comm_, stream_.get()),
                 "ncclSend");
      return true;
    });
  }

  std::unique_ptr<comm::Collective> recv(int from, const DeviceView& dst, uint64_t) override {
    internal_check(dst.is_contiguous() && from != rank_);
    auto op = std::make_shared<Op>();
    op->buf = dst;
    return queue(op, [this, op, from] {
      check_nccl(ncclRecv(op->buf.first(), bytes_of(op->buf), ncclUint8, from, comm_, stream_.get()),
                 "ncclRecv");
      return true;
    });
  }

  bool has_exchanges() const override { return true; }

  // One grouped collective on the group's communicator (ncclBroadcast; ncclAllGather, or one
  // ncclBroadcast per member inside a group when their counts differ; ncclSend/ncclRecv pairs
  // for an all-to-all), launched on the same stream as the transfers, at its turn.
  std::unique_ptr<comm::Collective> exchange(const comm::ExchangeSpec& spec, const DeviceView& in,
                                             const DeviceView& out, uint64_t) override {
    internal_check(in.is_contiguous() && out.is_contiguous() && spec.member(rank_) >= 0);
    auto op = std::make_shared<Op>();
    op->in = in, op->buf = out;
    auto ready = std::make_shared<Event>();
    ready->record(context().s());
    auto stage = std::make_shared<IdStage>();
    ++sends_, bytes_ += spec.sent(rank_);
    return queue(op, [this, op, spec, ready, stage] {
      GroupComm& g = groups_[spec.group];
      if (!g.ready && !form(spec.group, g, *stage)) return false;
      check(cudaStreamWaitEvent(stream_.get(), ready->get(), 0), "cudaStreamWaitEvent");
      launch(spec, g.comm, *op);
      return true;
    });
  }

  bool can_reduce(Monoid op, DType dtype) const override { return comm::peers_can_merge(op, dtype); }

  // One reduce, all-reduce or reduce-scatter on the group's communicator, at its turn on the
  // same stream: ncclReduce, ncclAllReduce, ncclReduceScatter (even pieces) or one ncclReduce
  // per member onto it inside one group (uneven pieces).
  std::unique_ptr<comm::Collective> reduce(const comm::ReduceSpec& spec, const DeviceView& in,
                                           const DeviceView& out, uint64_t) override {
    internal_check(in.is_contiguous() && std::binary_search(spec.group.begin(), spec.group.end(), rank_));
    const bool receives = !spec.counts.empty() || spec.root == comm::kAllMembers || spec.root == rank_;
    internal_check(!receives || (out.is_contiguous() && out.dtype() == in.dtype()));
    auto op = std::make_shared<Op>();
    op->in = in;
    if (receives) op->buf = out;
    auto ready = std::make_shared<Event>();
    ready->record(context().s());
    auto stage = std::make_shared<IdStage>();
    ++sends_, bytes_ += static_cast<int64_t>(bytes_of(in));
    return queue(op, [this, op, spec, ready, stage] {
      GroupComm& g = groups_[spec.group];
      if (!g.ready && !form(spec.group, g, *stage)) return false;
      check(cudaStreamWaitEvent(stream_.get(), ready->get(), 0), "cudaStreamWaitEvent");
      launch_reduce(spec, g.comm, *op);
      return true;
    });
  }

  void keep_until_abort(std::shared_ptr<Op> op) { unfinished_.push_back(std::move(op)); }

  // Launches waiting operations in posting order, up to the first that cannot launch yet.
  void pump() {
    while (!waiting_.empty()) {
      Waiting& w = waiting_.front();
      if (!w.launch()) return;
      w.op->done.record(stream_.get());
      w.op->launched = true;
      waiting_.pop_front();
    }
  }

 private:
  struct Waiting {
    std::shared_ptr<Op> op;
    std::function<bool()> launch;  // false: not yet (a communicator still forming)
  };
  // Forming a group's communicator: the id sent over the world communicator, then a
  // non-blocking ncclCommInitRankConfig, polled.
  struct IdStage {
    int step = 0;            // 0: nothing yet; 1: id moving; 2: initializing
    void* id_dev = nullptr;  // 128 bytes of device memory
    Event id_moved;
    IdStage() = default;
    IdStage(const IdStage&) = delete;
    IdStage& operator=(const IdStage&) = delete;
    ~IdStage() {
      if (id_dev) cudaFree(id_dev);
    }
  };

  std::unique_ptr<comm::Collective> queue(std::shared_ptr<Op> op, std::function<bool()> launch) {
    waiting_.push_back({op, std::move(launch)});
    pump();
    return std::make_unique<Handle>(*this, std::move(op));
  }

  // Whether g's communicator is ready; advances its forming by one poll otherwise.
  bool form(const comm::Group& group, GroupComm& g, IdStage& st) {
    const int me = static_cast<int>(std::lower_bound(group.begin(), group.end(), rank_) - group.begin());
    const int n = static_cast<int>(group.size());
    ncclUniqueId id;
    if (st.step == 0) {
      check(cudaMalloc(&st.id_dev, sizeof id.internal), "cudaMalloc");
      if (me == 0) {
        check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        check(cudaMemcpy(st.id_dev, id.internal, sizeof id.internal, cudaMemcpyHostToDevice), "cudaMemcpy");
      }
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int m = 1; m < n; ++m)
        if (me == 0)
          check_nccl(ncclSend(st.id_dev, sizeof id.internal, ncclUint8, group[static_cast<size_t>(m)], comm_,
                              stream_.get()),
                     "ncclSend");
      if (me != 0)
        check_nccl(ncclRecv(st.id_dev, sizeof id.internal, ncclUint8, group[0], comm_, stream_.get()),
                   "ncclRecv");
      check_nccl(ncclGroupEnd(), "ncclGroupEnd");
      st.id_moved.record(stream_.get());
      st.step = 1;
    }
    if (st.step == 1) {
      const cudaError_t e = cudaEventQuery(st.id_moved.get());
      if (e == cudaErrorNotReady) return false;
      check(e, "the id of a group's NCCL communicator");
      check(cudaMemcpy(id.internal, st.id_dev, sizeof id.internal, cudaMemcpyDeviceToHost), "cudaMemcpy");
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      const ncclResult_t r = ncclCommInitRankConfig(&g.comm, n, id, me, &config);
      if (r != ncclInProgress) check_nccl(r, "ncclCommInitRankConfig");
      st.step = 2;
    }
    ncclResult_t state = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(g.comm, &state), "ncclCommGetAsyncError");
    if (state == ncclInProgress) return false;
    check_nccl(state, "creating a group's communicator");
    g.ready = true;
    return true;
  }

  // The collective itself; returns once it is on the stream (a non-blocking communicator may
  // answer ncclInProgress while it enqueues: polled here, briefly, so that nothing posted
  // after it reaches the stream before it).
  void launch(const comm::ExchangeSpec& spec, ncclComm_t c, const Op& op) {
    const size_t p = spec.group.size();
    const int me = spec.member(rank_);
    char* in = static_cast<char*>(op.in.first());
    char* out = static_cast<char*>(op.buf.first());
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    switch (spec.kind) {
      case comm::ExchangeKind::Broadcast: {
        const int root = spec.member(spec.root);
        const auto n = static_cast<size_t>(spec.counts.at(0));
        check_nccl(ncclBroadcast(in, me == root ? in : out, n, ncclUint8, root, c, stream_.get()),
                   "ncclBroadcast");
        break;
      }
      case comm::ExchangeKind::AllGather: {
        const bool even = std::all_of(spec.counts.begin(), spec.counts.end(),
                                      [&](int64_t n) { return n == spec.counts[0]; });
        if (even) {
          check_nccl(ncclAllGather(in, out, static_cast<size_t>(spec.counts[0]), ncclUint8, c, stream_.get()),
                     "ncclAllGather");
          break;
        }
        int64_t at = 0;
        for (size_t j = 0; j < p; ++j) {
          const auto n = static_cast<size_t>(spec.counts[j]);
          if (n > 0)
            check_nccl(ncclBroadcast(static_cast<int>(j) == me ? in : out + at, out + at, n, ncclUint8,
                                     static_cast<int>(j), c, stream_.get()),
                       "ncclBroadcast");
          at += spec.counts[j];
        }
        break;
      }
      case comm::ExchangeKind::AllToAll: {
        int64_t sent = 0, got = 0;
        for (size_t j = 0; j < p; ++j) {
          if (static_cast<int>(j) != me && spec.counts[j] > 0)
            check_nccl(ncclSend(in + sent, static_cast<size_t>(spec.counts[j]), ncclUint8,
                                static_cast<int>(j), c, stream_.get()),
                       "ncclSend");
          if (static_cast<int>(j) != me && spec.recv[j] > 0)
            check_nccl(ncclRecv(out + got, static_cast<size_t>(spec.recv[j]), ncclUint8, static_cast<int>(j),
                                c, stream_.get()),
                       "ncclRecv");
          sent += spec.counts[j], got += spec.recv[j];
        }
        break;
      }
    }
    const ncclResult_t r = ncclGroupEnd();
    if (r != ncclInProgress) check_nccl(r, "ncclGroupEnd");
    for (ncclResult_t state = r; state == ncclInProgress;)
      check_nccl(ncclCommGetAsyncError(c, &state), "ncclCommGetAsyncError");
  }

  void launch_reduce(const comm::ReduceSpec& spec, ncclComm_t c, const Op& op) {
    const NcclMerge m = nccl_merge(spec.op, op.in.dtype());
    const size_t es = dtype_size(op.in.dtype());
    const auto me =
        static_cast<int>(std::lower_bound(spec.group.begin(), spec.group.end(), rank_) - spec.group.begin());
    char* in = static_cast<char*>(op.in.first());
    // NCCL reads recvbuff on the root only: elsewhere any valid pointer will do.
    char* out = op.buf.mem ? static_cast<char*>(op.buf.first()) : in;
    const auto n = static_cast<size_t>(op.in.numel());
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    if (!spec.counts.empty()) {
      const bool even =
          std::all_of(spec.counts.begin(), spec.counts.end(), [&](int64_t k) { return k == spec.counts[0]; });
      if (even) {
        check_nccl(
            ncclReduceScatter(in, out, static_cast<size_t>(spec.counts[0]), m.type, m.op, c, stream_.get()),
            "ncclReduceScatter");
      } else {
        size_t at = 0;
        for (size_t j = 0; j < spec.counts.size(); ++j) {
          const auto k = static_cast<size_t>(spec.counts[j]);
          if (k > 0)
            check_nccl(ncclReduce(in + at * es, static_cast<int>(j) == me ? out : in + at * es, k, m.type,
                                  m.op, static_cast<int>(j), c, stream_.get()),
                       "ncclReduce");
          at += k;
        }
      }
    } else if (spec.root == comm::kAllMembers) {
      check_nccl(ncclAllReduce(in, out, n, m.type, m.op, c, stream_.get()), "ncclAllReduce");
    } else {
      const int root = static_cast<int>(std::lower_bound(spec.group.begin(), spec.group.end(), spec.root) -
                                        spec.group.begin());
      check_nccl(ncclReduce(in, out, n, m.type, m.op, root, c, stream_.get()), "ncclReduce");
    }
    const ncclResult_t r = ncclGroupEnd();
    if (r != ncclInProgress) check_nccl(r, "ncclGroupEnd");
    for (ncclResult_t state = r; state == ncclInProgress;)
      check_nccl(ncclCommGetAsyncError(c, &state), "ncclCommGetAsyncError");
  }

  ncclComm_t comm_;
  int rank_, size_, version_;
  Stream stream_;                            // NCCL's operations, in posting order
  std::deque<Waiting> waiting_;              // posted, not on the stream yet
  std::map<comm::Group, GroupComm> groups_;  // exchanges' communicators, by members
  std::vector<std::shared_ptr<Op>> unfinished_;
  int64_t sends_ = 0, bytes_ = 0;
};

bool Handle::test() {
  peers_.pump();
  return op_->launched && test_launched();
}

Handle::~Handle() {
  if (op_->launched && !op_->complete && cudaEventQuery(op_->done.get()) == cudaErrorNotReady)
    peers_.keep_until_abort(op_);
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
