#include "engine/comm/loopback.hpp"

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
  return mailbox_.size();
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
