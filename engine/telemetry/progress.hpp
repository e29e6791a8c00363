// How far the running evaluation has got, told to whoever listens (the shell's progress bar),
// so the executor never prints. An observation opens one Progress scope; nested ones are quiet.
//   session.telemetry().progress_listener = &bar;     // the shell, once (telemetry.hpp)
//   Progress p(total_blocks);  p.advance(1, bytes);   // the executor, per block / transfer
//   // ~Progress: listener->finish()
// File I/O reports bytes: a save expects its total (expect_io) and its writers, like the
// readers of a lazy load inside an observation, report what they did (note_io_progress); the
// bar then shows bytes done of the total and the rate.
#pragma once

#include <cstdint>
#include <mutex>

namespace tapestry {

struct ProgressState {
  double blocks_done = 0;  // may be fractional: an MPI run counts rank 0's share
  int64_t blocks_total = 0;
  int64_t bytes_moved = 0;
  int64_t io_done = 0;   // bytes of file data read or written (this process's ranks)
  int64_t io_total = 0;  // the bytes expected; 0: no file I/O in this scope
};

// Called on the thread that runs the evaluation, between blocks: keep it cheap.
class ProgressListener {
 public:
  virtual ~ProgressListener() = default;
  virtual void start(int64_t blocks_total) = 0;
  virtual void update(const ProgressState& s) = 0;
  virtual void finish() = 0;
};

struct Telemetry;

// Reports to the current telemetry's listener (engine/telemetry/telemetry.hpp).
class Progress {
 public:
  explicit Progress(int64_t blocks_total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void advance(double blocks, int64_t bytes = 0);
  // A scope whose total is known only later (a sharded run after planning).
  void set_total(int64_t blocks_total);
  // File I/O: `bytes` more expected, `bytes` more done (any thread).
  void add_io_total(int64_t bytes);
  void advance_io(int64_t bytes);

 private:
  Telemetry& t_;
  ProgressListener* l_ = nullptr;  // null when nested or nobody listens
  std::mutex mu_;                  // advance_io may come from the kernels' threads
  ProgressState s_;
};

// The current telemetry's outermost open scope gets `bytes` more expected (if none is open, the
// next one to open does: an observation announces the loads it will read before it runs).
void expect_io(int64_t bytes);
// `bytes` of file data read or written: the outermost open scope advances (none: nothing).
void note_io_progress(int64_t bytes);

// expect_io(bytes) for the scope that the work between its construction and its end opens; what
// no scope took is forgotten at its end, so it never leaks into a later evaluation.
class ExpectIo {
 public:
  explicit ExpectIo(int64_t bytes);
  ~ExpectIo();
  ExpectIo(const ExpectIo&) = delete;
  ExpectIo& operator=(const ExpectIo&) = delete;
};

}  // namespace tapestry
