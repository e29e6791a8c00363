#include "engine/device/peers_local.hpp"

#include "engine/ir/error.hpp"

namespace tapestry::comm {

struct LocalPeersHub::Op {
  bool send;
  int rank, peer;
  DeviceView buf;
  uint64_t label;
  bool done = false;
};

namespace {

class Handle final : public Collective {
 public:
  Handle(LocalPeersHub& hub, std::shared_ptr<LocalPeersHub::Op> op) : hub_(hub), op_(std::move(op)) {}
  bool test() override;

 private:
  LocalPeersHub& hub_;
  std::shared_ptr<LocalPeersHub::Op> op_;
};

}  // namespace

class LocalPeersHub::Endpoint final : public DevicePeers {
 public:
  Endpoint(LocalPeersHub& hub, int rank, int size) : hub_(hub), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "in-process device copies"; }
  std::unique_ptr<Collective> send(int to, const DeviceView& src, uint64_t label) override {
    return std::make_unique<Handle>(hub_, hub_.post(rank_, true, to, src, label));
  }
  std::unique_ptr<Collective> recv(int from, const DeviceView& dst, uint64_t label) override {
    return std::make_unique<Handle>(hub_, hub_.post(rank_, false, from, dst, label));
  }
  int64_t sends() const override { return sends_; }
  int64_t bytes_sent() const override { return bytes_; }
  int64_t sends_ = 0, bytes_ = 0;

 private:
  LocalPeersHub& hub_;
  int rank_, size_;
};

namespace {

bool Handle::test() {
  hub_.progress();
  return op_->done;
}

}  // namespace

LocalPeersHub::LocalPeersHub(int ranks, DeviceBackend& copier)
    : copier_(copier), queues_(static_cast<size_t>(ranks)) {
  for (int r = 0; r < ranks; ++r) endpoints_.push_back(std::make_unique<Endpoint>(*this, r, ranks));
}

LocalPeersHub::~LocalPeersHub() = default;

DevicePeers& LocalPeersHub::endpoint(int rank) {
  internal_check(rank >= 0 && rank < static_cast<int>(endpoints_.size()));
  return *endpoints_[static_cast<size_t>(rank)];
}

std::shared_ptr<LocalPeersHub::Op> LocalPeersHub::post(int rank, bool send, int peer, const DeviceView& buf,
                                                       uint64_t label) {
  internal_check(peer != rank && peer >= 0 && peer < static_cast<int>(queues_.size()));
  internal_check(buf.mem != nullptr && buf.is_contiguous());
  auto op = std::make_shared<Op>(Op{send, rank, peer, buf, label});
  queues_[static_cast<size_t>(rank)].push_back(op);
  if (send) {
    const int64_t bytes = buf.numel() * static_cast<int64_t>(dtype_size(buf.dtype()));
    ++sends_, bytes_ += bytes;
    auto& e = static_cast<Endpoint&>(endpoint(rank));
    ++e.sends_, e.bytes_ += bytes;
  }
  progress();
  return op;
}

void LocalPeersHub::progress() {
  for (bool moved = true; moved;) {
    moved = false;
    for (auto& q : queues_) {
      if (q.empty() || !q.front()->send) continue;
      Op& s = *q.front();
      auto& peer_q = queues_[static_cast<size_t>(s.peer)];
      if (peer_q.empty()) continue;
      Op& r = *peer_q.front();
      if (r.send || r.peer != s.rank) continue;  // the receiver's next operation is another one
      if (r.label != s.label || r.buf.dtype() != s.buf.dtype() || r.buf.shape() != s.buf.shape())
        throw InternalError(cat_str("device peers: rank ", s.rank, "'s send of transfer ", s.label, " (",
                                    dtype_name(s.buf.dtype()), " ", shape_str(s.buf.shape()), ") meets rank ",
                                    r.rank, "'s receive of transfer ", r.label, " (",
                                    dtype_name(r.buf.dtype()), " ", shape_str(r.buf.shape()),
                                    "): the ranks posted in different orders"));
      copier_.copy(s.buf, r.buf);
      s.done = r.done = true;
      q.pop_front();
      peer_q.pop_front();
      moved = true;
    }
  }
}

int64_t LocalPeersHub::pending() const {
  int64_t n = 0;
  for (const auto& q : queues_) n += static_cast<int64_t>(q.size());
  return n;
}

int64_t LocalPeersHub::sends() const { return sends_; }
int64_t LocalPeersHub::bytes_sent() const { return bytes_; }

}  // namespace tapestry::comm
