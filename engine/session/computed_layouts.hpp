// How recent sharded results were split, by node id, for the footer printed under them.
//   layouts.put(y->id, "split(1, 4)");        // engine/session/observe.cpp, after a plan ran
//   std::string l = layouts.find(y->id);      // "" when one rank computed it
// Bounded: only the last results are printed, and node ids are never reused.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

namespace tapestry {

class ComputedLayouts {
 public:
  void put(uint64_t id, std::string layout);
  std::string find(uint64_t id) const;

 private:
  std::unordered_map<uint64_t, std::string> by_id_;
  std::deque<uint64_t> order_;
};

}  // namespace tapestry
