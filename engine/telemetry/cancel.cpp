#include "engine/telemetry/cancel.hpp"

#include <atomic>

namespace tapestry {

namespace {
std::atomic<bool> g_cancel{false};  // lock-free: set from a signal handler
}  // namespace

void request_cancel() { g_cancel.store(true); }
void clear_cancel() { g_cancel.store(false); }
bool cancel_requested() { return g_cancel.load(std::memory_order_relaxed); }

}  // namespace tapestry
