#include "engine/device/device_copies.hpp"

#include <algorithm>

namespace tapestry {

std::optional<DeviceView> DeviceCopies::find(const std::shared_ptr<const Value>& v) {
  auto it = entries_.find(v.get());
  if (it == entries_.end()) return std::nullopt;
  // Another value at a freed one's address: the entry's owner is gone.
  if (it->second.owner.lock() != v) {
    drop(it);
    return std::nullopt;
  }
  it->second.used = ++tick_;
  return it->second.dev;
}

void DeviceCopies::keep(const std::shared_ptr<const Value>& v, DeviceView d) {
  const uint64_t bytes = static_cast<uint64_t>(v->v.numel()) * dtype_size(v->v.dtype);
  auto old = entries_.find(v.get());
  if (old != entries_.end()) drop(old);
  if (bytes > budget_) return;
  fit(bytes);
  entries_[v.get()] = Entry{v, std::move(d), bytes, ++tick_};
  bytes_ += bytes;
}

void DeviceCopies::clear() {
  entries_.clear();
  bytes_ = 0;
}

void DeviceCopies::drop(std::unordered_map<const Value*, Entry>::iterator it) {
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

void DeviceCopies::sweep() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (it->second.owner.expired()) drop(it);
    it = next;
  }
}

void DeviceCopies::fit(uint64_t more) {
  sweep();
  while (bytes_ + more > budget_ && !entries_.empty()) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return a.second.used < b.second.used;
    });
    drop(oldest);
  }
}

}  // namespace tapestry
