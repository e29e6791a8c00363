#include "engine/telemetry/stats.hpp"

#include "engine/telemetry/telemetry.hpp"

namespace tapestry {

Stats& stats() { return current_telemetry().stats; }

void reset_stats() { stats() = Stats{}; }

}  // namespace tapestry
