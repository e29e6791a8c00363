// The per-rank memory limit (--memory-per-rank, TAPESTRY_MEMORY_PER_RANK): plans that need
// more on some rank are refused before they run.
//   mesh.mem_bytes_per_rank = 8 << 20;          // the planner also prefers plans that fit
//   check_memory_limit(pg.plan, 8 << 20);       // throws Error naming the rank and the bytes
// The need is the cost model's per-rank peak (engine/plan/cost.hpp): the initial shards,
// every received slice, block output and combined value of the rank, none freed before the
// plan ends — what the executor holds today, so a refused plan would really not fit.
#pragma once

#include "engine/plan/search.hpp"

namespace tapestry {

// limit: bytes per rank, 0 for none. out_of_core: stored pieces may be spilled between their
// readers (plan::Mesh::spill), so the plan needs what peak_memory(g, true) counts; the planner
// has tried bands already (plan/bands.hpp), so a plan refused then fits in no bands either.
void check_memory_limit(const plan::Plan& p, int64_t limit, bool out_of_core = false);

}  // namespace tapestry
