// The session's configuration: the mesh observations run on and the per-rank memory limit.
//   set_current_ranks(4);                       // TAPESTRY_RANKS=4: four virtual ranks
//   const plan::Mesh& m = current_mesh();
//   plan::PlannedGraph pg = plan_observed({y}, m, {});   // stored tensors read where they lie
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/plan/planner.hpp"

namespace tapestry {

// The mesh observations run on: TAPESTRY_RANKS virtual ranks (loopback), default 1; the job's
// ranks under MPI; with the selected device's rates.
const plan::Mesh& current_mesh();
void set_current_ranks(int ranks);
// The per-rank memory limit (bytes; 0: none), from --memory-per-rank or
// TAPESTRY_MEMORY_PER_RANK: the mesh's capacity, so the search prefers plans that fit, and
// what engine/plan/memory_limit.hpp refuses plans beyond.
void set_memory_per_rank(int64_t bytes);
int64_t memory_per_rank();

// plan::plan_observation with the stored tensors of this session read where they lie.
plan::PlannedGraph plan_observed(const std::vector<NodeRef>& roots, const plan::Mesh& mesh,
                                 plan::SearchOptions opts);

}  // namespace tapestry
