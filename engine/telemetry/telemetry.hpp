// One session's telemetry: its counters, its trace, its progress listener and its cancel flag.
//   Telemetry t;                                   // a session's (engine/session/session.hpp)
//   { TelemetryScope in(t);  evaluate(roots); }    // stats(), trace::, Progress, cancel: t's
//   t.request_cancel();                            // async-signal-safe (the shell's SIGINT hook)
// The engine reaches the current one through stats(), trace::..., Progress and
// cancel_requested(). It is current for the whole process, not per thread: the kernels' pool
// threads and a signal handler must see the one the running observation uses, so one session
// works at a time. With no scope open a default one is current: tests of low layers need no
// session.
#pragma once

#include <atomic>

#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

struct Telemetry {
  Stats stats;
  trace::State trace;
  ProgressListener* progress_listener = nullptr;  // nullptr: nobody listens (tests, pipes)
  int progress_depth = 0;                         // open Progress scopes
  Progress* progress_outer = nullptr;             // the outermost open one (it reports)
  std::atomic<int64_t> io_expected{0};            // file I/O the next outermost scope expects
  std::atomic<bool> cancel{false};                // lock-free: set from a signal handler

  void request_cancel() { cancel.store(true); }
  void clear_cancel() { cancel.store(false); }
};

Telemetry& current_telemetry();

// Makes `t` current until the scope ends (then the previous one again); scopes nest.
class TelemetryScope {
 public:
  explicit TelemetryScope(Telemetry& t);
  ~TelemetryScope();
  TelemetryScope(const TelemetryScope&) = delete;
  TelemetryScope& operator=(const TelemetryScope&) = delete;

 private:
  Telemetry* previous_;
};

}  // namespace tapestry
