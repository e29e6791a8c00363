// A failure that may not happen again (an I/O error, a missed deadline, an injected fault).
// Blocks are idempotent, so the block that threw it is run again (engine/run/retry.hpp); out of
// attempts, or outside a block, it is an Error like any other.
#pragma once

#include <string>

#include "engine/ir/error.hpp"

namespace tapestry {

class Transient : public Error {
 public:
  explicit Transient(const std::string& msg) : Error(msg) {}
};

}  // namespace tapestry
