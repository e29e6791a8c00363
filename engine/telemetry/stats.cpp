#include "engine/telemetry/stats.hpp"

namespace tapestry {

Stats& stats() {
  static Stats s;
  return s;
}

void reset_stats() { stats() = Stats{}; }

}  // namespace tapestry
