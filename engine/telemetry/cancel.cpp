#include "engine/telemetry/cancel.hpp"

#include "engine/telemetry/telemetry.hpp"

namespace tapestry {

void request_cancel() { current_telemetry().request_cancel(); }
void clear_cancel() { current_telemetry().clear_cancel(); }
bool cancel_requested() { return current_telemetry().cancel.load(std::memory_order_relaxed); }

}  // namespace tapestry
