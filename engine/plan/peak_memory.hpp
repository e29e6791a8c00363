// What a plan holds at once on each rank, with values freed after their last reader.
//   const PeakMemory pm = peak_memory(g);   // pm.bytes[r]: rank r's peak, pm.worst its rank
//   pm.op[pm.worst]                          // the op running on the worst rank at its peak
// Each rank runs its steps in order: the shards it held before the plan stay; a block's output,
// a received slice and a combined value are added when made; every piece of a tensor the rank
// made or received is freed after the rank's last step that reads that tensor (a block's
// input, a send, a combine of its partials), unless it is one of the plan's results there.
// The executor frees the same pieces at the same steps (engine/shard/rank_program.cpp), so a
// plan under the memory budget by this count stays under it when it runs.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

struct PeakMemory {
  std::vector<int64_t> bytes;  // per rank
  std::vector<uint64_t> op;    // per rank: the node whose step made its peak (0: its initial shards)
  int worst = 0;               // the rank with the largest peak
};

// out_of_core: as the executor runs a plan whose stored pieces may wait on disk (Mesh::spill,
// bands.hpp): every piece lives from the step that makes it to the last step of its rank that
// reads an overlapping slice, a stored input's piece (an initial shard of a node without a
// value) from its first reader to its last, and a result shard goes to the shard store after its
// last reader there; a split reduction's partials and everything else as above.
PeakMemory peak_memory(const ShardedGraph& g, bool out_of_core = false);

// Per rank: the tensors each step is the last reader of on that rank (frees after that step).
// last_reads[r][i] lists the tensors whose pieces rank r may free after its step i; a split
// reduction's partials are listed (at their combine) as partials_key(t).
uint64_t partials_key(uint64_t t);
std::vector<std::vector<std::vector<uint64_t>>> last_reads(const ShardedGraph& g);

}  // namespace tapestry::plan
