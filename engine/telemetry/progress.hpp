// How far the running evaluation has got, told to whoever listens (the shell's progress bar),
// so the executor never prints. An observation opens one Progress scope; nested ones are quiet.
//   session.telemetry().progress_listener = &bar;     // the shell, once (telemetry.hpp)
//   Progress p(total_blocks);  p.advance(1, bytes);   // the executor, per block / transfer
//   // ~Progress: listener->finish()
#pragma once

#include <cstdint>

namespace tapestry {

struct ProgressState {
  double blocks_done = 0;  // may be fractional: an MPI run counts rank 0's share
  int64_t blocks_total = 0;
  int64_t bytes_moved = 0;
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

 private:
  Telemetry& t_;
  ProgressListener* l_ = nullptr;  // null when nested or nobody listens
  ProgressState s_;
};

}  // namespace tapestry
