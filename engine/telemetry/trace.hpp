// A Chrome/Perfetto trace (JSON trace-event format) of what the engine runs: every block,
// transfer and combine on every rank, single-rank kernels, and the plan/run phases.
//   trace::start(session.telemetry().trace, "run.json");   // tp.trace("run.json")
//   if (trace::enabled())
//     trace::record({"block", "matmul", 2, trace::kCompute, t0, trace::now_us() - t0, args});
//   trace::stop(session.telemetry().trace);                 // tp.trace(nil): closes the JSON
// Each session has its trace; enabled() and record() use the current one
// (engine/telemetry/telemetry.hpp). Events stream to the file as they happen (so a long session
// keeps little in memory); the closing "]}" is written by stop(), when the session ends and at
// exit, so the file is valid JSON however the session ends normally. MPI workers capture their
// events instead and send them to rank 0 with their status (engine/dist/worker.cpp); rank 0
// records them under the worker's pid.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace tapestry::trace {

// Lanes (the trace's tid) of one rank (its pid).
inline constexpr int kPhases = 0;   // plan, run: the observation as a whole
inline constexpr int kCompute = 1;  // blocks and single-rank kernels
inline constexpr int kComm = 2;     // sends, receives, combines, gathered outputs

struct Event {
  std::string cat;   // "block", "send", "recv", "combine", "kernel", "phase", "output"
  std::string name;  // the op name, or the phase
  int pid = 0;       // rank
  int tid = kCompute;
  double ts_us = 0;  // now_us() at the start
  double dur_us = 0;
  std::string args;  // JSON object members, without braces: "\"box\":\"[0:4)\",\"bytes\":64"
};

// One session's trace: the file being written, or a worker's capture buffer. Only the
// functions below touch it.
struct State {
  std::mutex mu;
  FILE* file = nullptr;
  std::string path;
  double origin_us = 0;
  bool first = true;
  std::set<int> named;  // pids whose names were written
  bool capturing = false;
  std::vector<Event> captured;
  std::atomic<bool> enabled{false};  // a file is open or a capture runs
  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State();  // finishes the file
};

// Microseconds on the steady clock (the same clock for every process of one host).
double now_us();

// Whether the current trace wants events: a file is open, or this worker captures for rank 0.
bool enabled();

// Starts a trace into `path` (stops the one running first). Throws Error when the file
// cannot be written.
void start(State& s, const std::string& path);
// Finishes the file (valid JSON) and returns its path; "" when no trace ran.
std::string stop(State& s);
std::string path(State& s);  // the file being written, or ""

// Adds an event to the current trace: to the file, or to the capture buffer on a worker.
void record(Event e);

// Workers: collect events of the current trace in memory for the run in progress (started by
// a traced Run command), then take them to send with the status.
void begin_capture();
std::vector<Event> end_capture();

// Events on the wire (worker -> rank 0), timestamps relative to `origin_us`.
std::vector<char> encode_events(const std::vector<Event>& events, double origin_us);
// Timestamps get `origin_us` added. Throws Error ("trace message rejected: ...") on bad bytes.
std::vector<Event> decode_events(std::span<const char> bytes, double origin_us);

// JSON string escaping, for args.
std::string json_string(std::string_view s);

}  // namespace tapestry::trace
