#include "engine/comm/loopback.hpp"

#include <algorithm>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::comm {

int LoopbackTransport::size() const { return hub_.size(); }

void LoopbackTransport::send(int to, Tag tag, const View& slice) {
  internal_check(to >= 0 && to < hub_.size() && to != rank_);
  // Copy now: the sender may overwrite or free its buffer as soon as send returns.
  auto copy = Value::alloc(slice.dtype, slice.shape);
  if (slice.numel() > 0) cpu::copy_view(slice, copy->v);
  bytes_ += slice.numel() * static_cast<int64_t>(dtype_size(slice.dtype));
  ++messages_;
  hub_.post({rank_, to, tag}, std::move(copy));
}

std::shared_ptr<Value> LoopbackTransport::try_recv(int from, Tag tag) {
  internal_check(from >= 0 && from < hub_.size() && from != rank_);
  return hub_.take({from, rank_, tag});
}

// A started exchange of one virtual rank: test() takes its part once the members it receives
// from have started theirs.
class LoopbackExchange final : public Collective {
 public:
  LoopbackExchange(LoopbackHub& hub, LoopbackHub::MeetingKey key, int rank,
                   std::shared_ptr<std::vector<char>> out)
      : hub_(hub), key_(std::move(key)), rank_(rank), out_(std::move(out)) {}
  bool test() override { return done_ || (done_ = hub_.finish(key_, rank_, out_.get())); }

 private:
  LoopbackHub& hub_;
  LoopbackHub::MeetingKey key_;
  int rank_;
  std::shared_ptr<std::vector<char>> out_;
  bool done_ = false;
};

std::unique_ptr<Collective> LoopbackTransport::start_exchange(const ExchangeSpec& spec,
                                                              std::shared_ptr<std::vector<char>> in,
                                                              std::shared_ptr<std::vector<char>> out) {
  internal_check(spec.group.size() >= 2 && std::is_sorted(spec.group.begin(), spec.group.end()));
  const LoopbackHub::MeetingKey key{spec.group, next_[spec.group]++};
  // Copy now, as MPI may read `in` until the end but the hub's readers outlive this call.
  hub_.start(key, rank_, spec, std::make_shared<std::vector<char>>(in ? *in : std::vector<char>{}));
  ++messages_, ++collectives_;
  bytes_ += spec.sent(rank_);
  return std::make_unique<LoopbackExchange>(hub_, key, rank_, std::move(out));
}

void LoopbackHub::start(const MeetingKey& key, int rank, const ExchangeSpec& spec,
                        std::shared_ptr<std::vector<char>> in) {
  std::lock_guard<std::mutex> lock(mu_);
  Meeting& m = meetings_[key];
  internal_check(m.started.emplace(rank, std::make_pair(spec, std::move(in))).second);
}

bool LoopbackHub::finish(const MeetingKey& key, int rank, std::vector<char>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = meetings_.find(key);
  internal_check(it != meetings_.end());
  Meeting& m = it->second;
  const ExchangeSpec& mine = m.started.at(rank).first;
  const Group& group = key.first;
  const int me = mine.member(rank);
  const auto disagree = [&](int other, const char* what) {
    throw InternalError(cat_str("loopback: rank ", rank, "'s ", exchange_name(mine.kind), " #", key.second,
                                " over ", group.size(), " ranks meets rank ", other, "'s ",
                                exchange_name(m.started.at(other).first.kind), ": the ", what, " differ"));
  };
  // The members this rank receives from: a broadcast's root, every other member otherwise.
  std::vector<int> from;
  for (int r : group)
    if (r != rank && (mine.kind != ExchangeKind::Broadcast || r == mine.root)) from.push_back(r);
  if (mine.received(rank) == 0) from.clear();
  for (int r : from)
    if (!m.started.count(r)) return false;
  for (int r : from) {
    const auto& [theirs, data] = m.started.at(r);
    if (theirs.kind != mine.kind || theirs.root != mine.root) disagree(r, "kinds or roots");
    const size_t i = static_cast<size_t>(theirs.member(r));
    switch (mine.kind) {
      case ExchangeKind::Broadcast:
        if (theirs.counts != mine.counts) disagree(r, "sizes");
        internal_check(out && out->size() == static_cast<size_t>(mine.counts[0]));
        std::copy(data->begin(), data->end(), out->begin());
        break;
      case ExchangeKind::AllGather: {
        if (theirs.counts != mine.counts) disagree(r, "contributions");
        int64_t at = 0;
        for (size_t k = 0; k < i; ++k) at += mine.counts[k];
        internal_check(out && static_cast<int64_t>(data->size()) == mine.counts[i]);
        std::copy(data->begin(), data->end(), out->begin() + at);
        break;
      }
      case ExchangeKind::AllToAll: {
        // What r sends this rank: its run for member `me`, placed at this rank's run for r.
        int64_t src = 0, dst = 0;
        for (int k = 0; k < me; ++k) src += theirs.counts[static_cast<size_t>(k)];
        for (size_t k = 0; k < i; ++k) dst += mine.recv[k];
        if (theirs.counts[static_cast<size_t>(me)] != mine.recv[i]) disagree(r, "counts");
        const int64_t n = mine.recv[i];
        std::copy(data->begin() + src, data->begin() + src + n, out->begin() + dst);
        break;
      }
    }
  }
  if (mine.kind == ExchangeKind::AllGather && out) {  // its own run too, as MPI_Iallgatherv writes it
    int64_t at = 0;
    for (int k = 0; k < me; ++k) at += mine.counts[static_cast<size_t>(k)];
    const auto& own = *m.started.at(rank).second;
    std::copy(own.begin(), own.end(), out->begin() + at);
  }
  m.finished.insert(rank);
  // Over once every member finished and no member still needs a contribution kept here.
  if (m.finished.size() == group.size()) meetings_.erase(it);
  return true;
}

LoopbackHub::LoopbackHub(int ranks) {
  internal_check(ranks >= 1);
  for (int r = 0; r < ranks; ++r) endpoints_.push_back(std::make_unique<LoopbackTransport>(*this, r));
}

Transport& LoopbackHub::endpoint(int rank) {
  internal_check(rank >= 0 && rank < size());
  return *endpoints_[rank];
}

void LoopbackHub::post(Key key, std::shared_ptr<Value> v) {
  std::lock_guard<std::mutex> lock(mu_);
  // A tag names one message: a second one under the same name is a plan bug.
  internal_check(mailbox_.emplace(std::move(key), std::move(v)).second);
}

std::shared_ptr<Value> LoopbackHub::take(const Key& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = mailbox_.find(key);
  if (it == mailbox_.end()) return nullptr;
  auto v = std::move(it->second);
  mailbox_.erase(it);
  return v;
}

size_t LoopbackHub::undelivered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mailbox_.size() + meetings_.size();
}

int64_t LoopbackHub::messages_sent() const {
  int64_t n = 0;
  for (const auto& e : endpoints_) n += e->messages_sent();
  return n;
}

int64_t LoopbackHub::bytes_sent() const {
  int64_t n = 0;
  for (const auto& e : endpoints_) n += e->bytes_sent();
  return n;
}

}  // namespace tapestry::comm
