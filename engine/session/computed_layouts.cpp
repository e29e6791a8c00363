#include "engine/session/computed_layouts.hpp"

namespace tapestry {

void ComputedLayouts::put(uint64_t id, std::string layout) {
  if (by_id_.insert_or_assign(id, std::move(layout)).second) order_.push_back(id);
  while (order_.size() > 4096) by_id_.erase(order_.front()), order_.pop_front();
}

std::string ComputedLayouts::find(uint64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? std::string() : it->second;
}

}  // namespace tapestry
