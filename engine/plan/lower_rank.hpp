// Lowering a plan's choices, for every rank or for one: what each rank of a distributed run does.
//   ShardedGraph all = lower_choice(in, plan.choice);          // the global plan (verifier, cost)
//   ShardedGraph mine = lower_choice(in, plan.choice, rank);   // == restrict_to_rank(all, rank)
//   ShardedGraph part = rank_part(planned, rank);              // the same from a PlannedGraph
// Rank 0 sends every rank the choice per op (engine/dist/plan_wire), and each rank lowers only
// its own blocks, transfers and combines (lower_rank in lower.hpp): on 4,096 modelled ranks
// that is a fraction of a second, where rank 0 lowering everyone's took a minute.
#pragma once

#include <map>

#include "engine/plan/planner.hpp"
#include "engine/plan/search.hpp"

namespace tapestry::plan {

// Each placed op's blocks under its chosen candidate (place()), and the combine modes chosen.
Assignment assignment_of_choice(const LoweringInput& in, const std::map<uint64_t, Candidate>& choice);
CombineModes combine_modes_of(const std::map<uint64_t, Candidate>& choice);

// lower() of the choice (me < 0) or lower_rank() for rank `me`. Throws Error naming the op
// when an op to place has no choice.
ShardedGraph lower_choice(const LoweringInput& in, const std::map<uint64_t, Candidate>& choice, Rank me = -1);

// What a planned observation's choices are lowered from: its topo, inputs, roots and mesh.
LoweringInput lowering_input(const PlannedGraph& pg);
// Rank r's part of a planned observation: restricted from the plan's graph when that is lowered
// already (an exact plan), else lowered from the choices alone (an estimated one).
ShardedGraph rank_part(const PlannedGraph& pg, Rank r);

}  // namespace tapestry::plan
