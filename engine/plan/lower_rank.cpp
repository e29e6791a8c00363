#include "engine/plan/lower_rank.hpp"

#include "engine/ir/error.hpp"
#include "engine/plan/bands.hpp"

namespace tapestry::plan {

Assignment assignment_of_choice(const LoweringInput& in, const std::map<uint64_t, Candidate>& choice) {
  Assignment a;
  for (const NodeRef& n : ops_to_place(in.topo, in.initial, in.roots)) {
    auto c = choice.find(n->id);
    user_check(c != choice.end(), "lower_choice: op %", n->id, " (", op_def(n->op).name, ") has no choice");
    a[n->id] = place(poly::signature_of(*n), c->second, in.mesh.ranks);
  }
  return a;
}

CombineModes combine_modes_of(const std::map<uint64_t, Candidate>& choice) {
  CombineModes m;
  for (const auto& [id, c] : choice)
    if (c.combine != CombineMode::Reduce) m[id] = c.combine;
  return m;
}

ShardedGraph lower_choice(const LoweringInput& in, const std::map<uint64_t, Candidate>& choice, Rank me) {
  const Assignment a = assignment_of_choice(in, choice);
  const CombineModes modes = combine_modes_of(choice);
  ShardedGraph g = me < 0 ? lower(in.topo, a, in.initial, in.roots, in.mesh.ranks, modes)
                          : lower_rank(in.topo, a, in.initial, in.roots, in.mesh.ranks, modes, me);
  g.in_bands = in_bands(choice);
  return g;
}

LoweringInput lowering_input(const PlannedGraph& pg) { return {pg.topo, pg.initial, pg.roots, pg.mesh}; }

ShardedGraph rank_part(const PlannedGraph& pg, Rank r) {
  if (pg.plan.lowered()) return restrict_to_rank(pg.plan.graph(), r);
  return lower_choice(lowering_input(pg), pg.plan.choice, r);
}

}  // namespace tapestry::plan
