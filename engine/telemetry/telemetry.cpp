#include "engine/telemetry/telemetry.hpp"

namespace tapestry {

namespace {

// Not a function-local static: a signal handler may be the first to reach it.
Telemetry g_default;
// A relaxed load is enough: a scope opens before the work it covers is handed to other
// threads, and those hand-offs synchronize.
std::atomic<Telemetry*> g_current{&g_default};

}  // namespace

Telemetry& current_telemetry() { return *g_current.load(std::memory_order_relaxed); }

TelemetryScope::TelemetryScope(Telemetry& t) : previous_(g_current.exchange(&t)) {}

TelemetryScope::~TelemetryScope() { g_current.store(previous_); }

}  // namespace tapestry
