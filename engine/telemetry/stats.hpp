// Counters of what observations ran, for tp.stats() and the tests of laziness.
//   uint64_t before = stats().kernels;  ...;  CHECK(stats().kernels == before + 1);
//   reset_stats();
#pragma once

#include <cstdint>

namespace tapestry {

struct Stats {
  uint64_t observations = 0;     // evaluations started (print, item, eval, ...)
  uint64_t nodes_evaluated = 0;  // graph nodes computed (fused ones included)
  uint64_t kernels = 0;          // kernel launches (a fused map counts once)
  uint64_t fused_ops = 0;        // map ops folded into another kernel (no intermediate)
  uint64_t bytes_allocated = 0;  // intermediate and result buffers
  uint64_t blocks_run = 0;       // sharded blocks run, over all ranks (TAPESTRY_RANKS > 1)
  uint64_t device_blocks = 0;    // of them, run on a device (GPU); rank 0's only under MPI
  uint64_t bytes_to_device = 0;  // host -> device copies of sharded runs (rank 0's under MPI)
  uint64_t bytes_from_device = 0;
  uint64_t messages = 0;         // transfers, partials and gathered outputs between ranks
  uint64_t bytes_moved = 0;      // their payload: the three below
  uint64_t bytes_transfers = 0;  // what plans' transfers carried, as the ranks sent them
  uint64_t bytes_combines = 0;   // what plans' combines carried (a collective: the plan's count)
  uint64_t bytes_gathered = 0;   // result shards gathered to rank 0 after a plan
  // The plans' moves by kind (plan::MoveKind's order: point-to-point, broadcast, all-gather,
  // all-to-all, reduce, all-reduce, reduce-scatter): how many ran, and their bytes as the plan
  // counts them. Transfers and combines above are counted by the ranks that sent them; these by
  // the plan run, so bytes_transfers + bytes_combines == the sum of move_bytes.
  static constexpr int kMoveKinds = 7;
  uint64_t move_count[kMoveKinds] = {};
  uint64_t move_bytes[kMoveKinds] = {};
  uint64_t bytes_read = 0;     // tensor data read from files (engine/io), by this process's ranks
  uint64_t bytes_written = 0;  // tensor data written to files
  double time_schedule = 0;    // seconds spent ordering and fusing
  double time_run = 0;         // seconds in kernels (sharded: running the plan, moves included)
  double time_move = 0;        // of which sends, receives, combines and gathering (sharded)
};

// The current telemetry's counters (engine/telemetry/telemetry.hpp: each session has its own).
Stats& stats();
void reset_stats();

}  // namespace tapestry
