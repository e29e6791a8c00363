// Ctrl-C: a flag the shell sets from its signal handler and the engine reads between kernels.
//   request_cancel();                           // async-signal-safe (the shell's SIGINT hook)
//   if (cancel_requested()) throw Cancelled();  // the evaluator, between kernels and steps
//   clear_cancel();                             // before the next chunk runs
#pragma once

namespace tapestry {

void request_cancel();
void clear_cancel();
bool cancel_requested();

}  // namespace tapestry
