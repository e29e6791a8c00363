// Ctrl-C: a flag the shell sets from its signal handler and the engine reads between kernels:
// the current telemetry's (engine/telemetry/telemetry.hpp; the shell sets its session's).
//   request_cancel();                           // async-signal-safe
//   if (cancel_requested()) throw Cancelled();  // the evaluator, between kernels and steps
//   clear_cancel();                             // before the next chunk runs
#pragma once

namespace tapestry {

void request_cancel();
void clear_cancel();
bool cancel_requested();

}  // namespace tapestry
