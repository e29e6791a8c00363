// Device copies of host values, kept between observations on one rank: a value read again (a
// weight, a loop's state, an input of many expressions) is not uploaded again, and a result
// computed on the device keeps the copy it was computed in.
//   DeviceCopies copies(budget);
//   if (auto d = copies.find(value)) use(*d); else copies.keep(value, upload(value));
// Values are immutable (a node's value is a shared_ptr<const Value>), so a copy stays right while
// its value lives; an entry whose value died is dropped. Past the byte budget the least recently
// used copies go; clear() frees all (the device evaluator does when the device runs out of memory).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>

#include "engine/device/backend.hpp"
#include "engine/ir/value.hpp"

namespace tapestry {

class DeviceCopies {
 public:
  explicit DeviceCopies(uint64_t budget_bytes) : budget_(budget_bytes) {}

  // The device copy of v, if one is kept.
  std::optional<DeviceView> find(const std::shared_ptr<const Value>& v);
  // Keeps d as v's device copy (d holds v's elements in v's shape and dtype, any strides).
  void keep(const std::shared_ptr<const Value>& v, DeviceView d);
  void clear();
  // Drops the copies of values that died (their device memory goes back).
  void sweep();

  uint64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::weak_ptr<const Value> owner;
    DeviceView dev;
    uint64_t bytes = 0;
    uint64_t used = 0;  // tick of the last find or keep
  };
  void drop(std::unordered_map<const Value*, Entry>::iterator it);
  void fit(uint64_t more);  // sweeps, then drops the least recently used until `more` fits

  uint64_t budget_, bytes_ = 0, tick_ = 0;
  std::unordered_map<const Value*, Entry> entries_;
};

}  // namespace tapestry
