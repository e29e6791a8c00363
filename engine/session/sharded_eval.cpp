#include "engine/session/sharded_eval.hpp"

#include <algorithm>

#include "engine/ir/attrs.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/fuse.hpp"
#include "engine/plan/verifier.hpp"

namespace tapestry {

RunReport run_planned(const plan::PlannedGraph& pg, bool verify_plan, const std::vector<DeviceBackend*>& devices) {
  if (verify_plan) {
    const plan::VerifyResult r = plan::verify(pg.plan.graph(), pg.topo);
    if (!r.ok()) throw InternalError(cat_str("the plan fails verification:\n", r.message()));
  }
  return run_plan(pg.plan.graph(), {}, devices);
}

RunReport evaluate_sharded(const std::vector<NodeRef>& roots, const plan::Mesh& mesh,
                           const plan::SearchOptions& opts, bool verify_plan,
                           const std::vector<DeviceBackend*>& devices) {
  bool all_done = true;
  for (const NodeRef& r : roots) all_done = all_done && r->value;
  if (all_done) return {};
  // Fusion first: a map chain runs as one block per rank, so no intermediate is stored or
  // moved, and the planner weighs the group as one op.
  const plan::FusedGraph fused = plan::fuse(roots);
  plan::PlannedGraph pg;
  pg.topo = plan::observed_subgraph(fused.roots);
  // Each root once: lower() lists a repeated root's result shards twice, which the verifier
  // rightly rejects as produced twice.
  for (const NodeRef& r : fused.roots)
    if (std::find(pg.roots.begin(), pg.roots.end(), r) == pg.roots.end()) pg.roots.push_back(r);
  pg.mesh = mesh;
  plan::SearchOptions o = opts;
  for (const NodeRef& n : pg.topo) {
    if (n->value) pg.initial.push_back(plan::Shard{n->id, poly::Box::of_shape(n->shape), 0});
    else if (n->op == Op::Constrain) o.output_grid[n->id] = attrs_of<ConstrainAttrs>(*n).parts;
  }
  pg.plan = plan::search(pg.topo, pg.initial, pg.roots, mesh, o);
  const RunReport report = run_planned(pg, verify_plan, devices);
  // Publish on the original roots; a fused stand-in keeps no copy.
  for (size_t i = 0; i < roots.size(); ++i) {
    if (roots[i]->value) continue;
    set_value(*roots[i], fused.roots[i]->value);
    if (fused.roots[i] != roots[i]) set_value(*fused.roots[i], nullptr);
  }
  return report;
}

}  // namespace tapestry
