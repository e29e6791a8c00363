#include "engine/device/peers_local.hpp"

#include "engine/ir/error.hpp"

namespace tapestry::comm {

struct LocalPeersHub::Op {
  bool send;
  int rank, peer;  // peer -1: an exchange
  DeviceView buf;  // an exchange's `out`
  uint64_t label;
  bool done = false;
  std::shared_ptr<const ExchangeSpec> spec = {};  // an exchange's
  DeviceView in = {};
  std::shared_ptr<const ReduceSpec> reduce = {};  // a reduction's
  bool collective() const { return spec || reduce; }
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
  bool has_exchanges() const override { return true; }
  std::unique_ptr<Collective> exchange(const ExchangeSpec& spec, const DeviceView& in, const DeviceView& out,
                                       uint64_t label) override {
    return std::make_unique<Handle>(hub_, hub_.post_exchange(rank_, spec, in, out, label));
  }
  bool can_reduce(Monoid op, DType dtype) const override { return peers_can_merge(op, dtype); }
  std::unique_ptr<Collective> reduce(const ReduceSpec& spec, const DeviceView& in, const DeviceView& out,
                                     uint64_t label) override {
    return std::make_unique<Handle>(hub_, hub_.post_reduce(rank_, spec, in, out, label));
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

std::shared_ptr<LocalPeersHub::Op> LocalPeersHub::post_exchange(int rank, const ExchangeSpec& spec,
                                                                const DeviceView& in, const DeviceView& out,
                                                                uint64_t label) {
  internal_check(spec.member(rank) >= 0 && in.mem && out.mem && in.is_contiguous() && out.is_contiguous());
  auto op = std::make_shared<Op>(Op{false, rank, -1, out, label});
  op->spec = std::make_shared<const ExchangeSpec>(spec);
  op->in = in;
  queues_[static_cast<size_t>(rank)].push_back(op);
  count_post(rank, spec.sent(rank));
  progress();
  return op;
}

void LocalPeersHub::count_post(int rank, int64_t bytes) {
  ++sends_, bytes_ += bytes;
  auto& e = static_cast<Endpoint&>(endpoint(rank));
  ++e.sends_, e.bytes_ += bytes;
}

std::shared_ptr<LocalPeersHub::Op> LocalPeersHub::post_reduce(int rank, const ReduceSpec& spec,
                                                              const DeviceView& in, const DeviceView& out,
                                                              uint64_t label) {
  const auto me = std::lower_bound(spec.group.begin(), spec.group.end(), rank);
  internal_check(me != spec.group.end() && *me == rank && in.mem && in.is_contiguous());
  internal_check(peers_can_merge(spec.op, in.dtype()));
  const bool receives = !spec.counts.empty() || spec.root == kAllMembers || spec.root == rank;
  internal_check(!receives || (out.mem && out.is_contiguous() && out.dtype() == in.dtype()));
  auto op = std::make_shared<Op>(Op{false, rank, -1, receives ? out : DeviceView{}, label});
  op->reduce = std::make_shared<const ReduceSpec>(spec);
  op->in = in;
  queues_[static_cast<size_t>(rank)].push_back(op);
  // What it contributes, as a reduce's non-root members send it (tp.stats counts the plan's).
  count_post(rank, in.numel() * static_cast<int64_t>(dtype_size(in.dtype())));
  progress();
  return op;
}

namespace {

// `bytes` of d from byte `at`, as a run of d's elements.
DeviceView run_of(const DeviceView& d, int64_t at, int64_t bytes) {
  const auto es = static_cast<int64_t>(dtype_size(d.dtype()));
  internal_check(at % es == 0 && bytes % es == 0 && at + bytes <= d.numel() * es);
  View v = d.layout;
  v.shape = {bytes / es};
  v.strides = {1};
  v.offset = d.layout.offset + at / es;
  return d.with(std::move(v));
}

int64_t sum_before(const std::vector<int64_t>& v, size_t i) {
  int64_t s = 0;
  for (size_t j = 0; j < i; ++j) s += v[j];
  return s;
}

}  // namespace

bool LocalPeersHub::meet_exchange(int rank) {
  const Op& mine = *queues_[static_cast<size_t>(rank)].front();
  const ExchangeSpec& spec = *mine.spec;
  std::vector<Op*> at;  // each member's exchange, in group order
  for (int m : spec.group) {
    auto& q = queues_[static_cast<size_t>(m)];
    if (q.empty() || !q.front()->collective()) return false;  // that member's next operation is another one
    Op& o = *q.front();
    if (!o.spec) {
      if (o.reduce->group == spec.group)
        throw InternalError(cat_str("device peers: rank ", rank, "'s ", exchange_name(spec.kind), " ",
                                    mine.label, " meets rank ", m, "'s reduction ", o.label,
                                    ": the ranks posted in different orders"));
      return false;  // another group's collective first
    }
    const ExchangeSpec& s = *o.spec;
    // Another group's exchange first: that member runs it first (on NCCL another communicator),
    // and this one waits. On one group, exchanges match by order: a mismatch is a bug.
    if (s.group != spec.group) return false;
    const bool counts_agree =
        spec.kind == ExchangeKind::AllToAll ? s.counts.size() == spec.group.size() : s.counts == spec.counts;
    if (o.label != mine.label || s.kind != spec.kind || s.root != spec.root || !counts_agree ||
        o.buf.dtype() != mine.buf.dtype())
      throw InternalError(cat_str("device peers: rank ", rank, "'s ", exchange_name(spec.kind), " ",
                                  mine.label, " meets rank ", m, "'s ", exchange_name(s.kind), " ", o.label,
                                  ": the ranks posted in different orders"));
    at.push_back(&o);
  }
  const size_t p = spec.group.size();
  switch (spec.kind) {
    case ExchangeKind::Broadcast: {
      const Op& root = *at.at(static_cast<size_t>(spec.member(spec.root)));
      for (size_t i = 0; i < p; ++i)
        if (at[i] != &root && spec.counts[0] > 0)
          copier_.copy(run_of(root.in, 0, spec.counts[0]), run_of(at[i]->buf, 0, spec.counts[0]));
      break;
    }
    case ExchangeKind::AllGather:
      for (size_t i = 0; i < p; ++i) {
        if (spec.counts[i] == 0) continue;
        const DeviceView part = run_of(at[i]->in, 0, spec.counts[i]);
        for (size_t j = 0; j < p; ++j)
          copier_.copy(part, run_of(at[j]->buf, sum_before(spec.counts, i), spec.counts[i]));
      }
      break;
    case ExchangeKind::AllToAll:
      for (size_t i = 0; i < p; ++i)
        for (size_t j = 0; j < p; ++j) {
          const ExchangeSpec &from = *at[i]->spec, &to = *at[j]->spec;
          const int64_t n = from.counts[j];
          if (n != to.recv.at(i))
            throw InternalError(cat_str("device peers: in all-to-all ", mine.label, " rank ", spec.group[i],
                                        " sends ", n, " bytes to rank ", spec.group[j], ", which expects ",
                                        to.recv.at(i)));
          if (i == j || n == 0) continue;
          copier_.copy(run_of(at[i]->in, sum_before(from.counts, j), n),
                       run_of(at[j]->buf, sum_before(to.recv, i), n));
        }
      break;
  }
  for (int m : spec.group) {
    queues_[static_cast<size_t>(m)].front()->done = true;
    queues_[static_cast<size_t>(m)].pop_front();
  }
  ++exchanges_;
  return true;
}

int64_t LocalPeersHub::exchanges() const { return exchanges_; }
int64_t LocalPeersHub::reductions() const { return reductions_; }

bool LocalPeersHub::meet_reduce(int rank) {
  const Op& mine = *queues_[static_cast<size_t>(rank)].front();
  const ReduceSpec& spec = *mine.reduce;
  std::vector<Op*> at;  // each member's reduction, in group order
  for (int m : spec.group) {
    auto& q = queues_[static_cast<size_t>(m)];
    if (q.empty() || !q.front()->collective()) return false;  // its next operation is another one
    Op& o = *q.front();
    if (!o.reduce || o.reduce->group != spec.group) {
      if (o.spec && o.spec->group == spec.group)
        throw InternalError(cat_str("device peers: rank ", rank, "'s reduction ", mine.label, " meets rank ",
                                    m, "'s ", exchange_name(o.spec->kind), " ", o.label,
                                    ": the ranks posted in different orders"));
      return false;  // another group's collective first (on NCCL another communicator)
    }
    const ReduceSpec& s = *o.reduce;
    if (o.label != mine.label || s.op != spec.op || s.root != spec.root || s.counts != spec.counts ||
        o.in.dtype() != mine.in.dtype() || o.in.numel() != mine.in.numel())
      throw InternalError(cat_str("device peers: rank ", rank, "'s reduction ", mine.label, " (",
                                  monoid_name(spec.op), " of ", mine.in.numel(), " ",
                                  dtype_name(mine.in.dtype()), ") meets rank ", m, "'s reduction ", o.label,
                                  " (", monoid_name(s.op), " of ", o.in.numel(), " ",
                                  dtype_name(o.in.dtype()), "): the ranks posted in different orders"));
    at.push_back(&o);
  }
  // The merge, member by member in group order.
  const DeviceView& first = at[0]->in;
  DeviceView acc = device_alloc(copier_, first.dtype(), {first.numel()});
  copier_.copy(run_of(first, 0, first.numel() * static_cast<int64_t>(dtype_size(first.dtype()))), acc);
  for (size_t i = 1; i < at.size(); ++i) {
    DeviceView next = device_alloc(copier_, first.dtype(), {first.numel()});
    merge_on_device(copier_, spec.op, acc,
                    run_of(at[i]->in, 0, first.numel() * static_cast<int64_t>(dtype_size(first.dtype()))),
                    next);
    acc = std::move(next);
  }
  const auto es = static_cast<int64_t>(dtype_size(first.dtype()));
  int64_t from = 0;
  for (size_t i = 0; i < at.size(); ++i) {
    const int m = spec.group[i];
    if (!spec.counts.empty()) {  // member i's run
      const int64_t n = spec.counts[i];
      internal_check(at[i]->buf.numel() == n);
      if (n > 0) copier_.copy(run_of(acc, from * es, n * es), run_of(at[i]->buf, 0, n * es));
      from += n;
    } else if (spec.root == kAllMembers || spec.root == m) {
      internal_check(at[i]->buf.numel() == first.numel());
      copier_.copy(acc, run_of(at[i]->buf, 0, first.numel() * es));
    }
  }
  internal_check(spec.counts.empty() || from == first.numel());
  for (int m : spec.group) {
    queues_[static_cast<size_t>(m)].front()->done = true;
    queues_[static_cast<size_t>(m)].pop_front();
  }
  ++reductions_;
  return true;
}

void LocalPeersHub::progress() {
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t rank = 0; rank < queues_.size(); ++rank) {
      auto& q = queues_[rank];
      if (!q.empty() && q.front()->spec) {
        moved = meet_exchange(static_cast<int>(rank)) || moved;
        continue;
      }
      if (!q.empty() && q.front()->reduce) {
        moved = meet_reduce(static_cast<int>(rank)) || moved;
        continue;
      }
      if (q.empty() || !q.front()->send) continue;
      Op& s = *q.front();
      auto& peer_q = queues_[static_cast<size_t>(s.peer)];
      if (peer_q.empty()) continue;
      Op& r = *peer_q.front();
      if (r.send || r.collective() || r.peer != s.rank)
        continue;  // the receiver's next operation is another one
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
