// The tensors a save writes, computed where they will be written from.
//   std::vector<NodeRef> parts = computed_for_save(L, {x, y});
//   // each part is a stored leaf (its ranks write it: is_stored) or holds a value (this process does)
// On one rank every part is observed to a value. On N ranks a part stays sharded where the
// plan computed it (or where it is stored, even when rank 0 holds a gathered copy too), so
// nothing passes through rank 0 but headers.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"
#include "engine/telemetry/progress.hpp"

struct lua_State;

namespace tapestry::lua {

std::vector<NodeRef> computed_for_save(lua_State* L, const std::vector<NodeRef>& xs);
// Whether `part` (from computed_for_save) is written by the ranks that hold it.
bool is_stored(lua_State* L, const NodeRef& part);

// The progress bar of a save this process writes whole: `bytes` of tensor data to write.
class SaveProgress {
 public:
  explicit SaveProgress(int64_t bytes) : p_(0) { p_.add_io_total(bytes); }

 private:
  Progress p_;
};

}  // namespace tapestry::lua
