#include "engine/session/run_sharded.hpp"

#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/shard/rank_program.hpp"

namespace tapestry {

RunReport run_planned(const plan::PlannedGraph& pg, bool verify_plan,
                      const std::vector<DeviceBackend*>& devices) {
  if (verify_plan) {
    const plan::VerifyResult r = plan::verify(pg.plan.graph(), pg.topo);
    if (!r.ok()) throw InternalError(cat_str("the plan fails verification:\n", r.message()));
  }
  return run_plan(pg.plan.graph(), {}, devices);
}

void resolve_empty_roots(const std::vector<NodeRef>& roots) {
  for (const NodeRef& r : roots)
    if (!r->value && numel(r->shape) == 0) set_value(*r, Value::alloc(r->dtype, r->shape));
}

RunReport run_sharded(const std::vector<NodeRef>& given, const plan::Mesh& mesh,
                      const plan::SearchOptions& opts, bool verify_plan,
                      const std::vector<DeviceBackend*>& devices) {
  resolve_empty_roots(given);
  std::vector<NodeRef> roots;  // a root holding a value already is not planned again
  for (const NodeRef& r : given)
    if (!r->value) roots.push_back(r);
  if (roots.empty()) return {};
  // A planner of its own, with no cached plan, so `opts` (method, seed) always take effect.
  plan::PlannerState planner;
  const plan::PlannedGraph pg = plan::plan_observation(planner, roots, mesh, opts);
  const RunReport report = run_planned(pg, verify_plan, devices);
  // Publish on the roots as given; a fused stand-in keeps no copy.
  for (size_t k = 0; k < pg.observed.size(); ++k) {
    const Node& observed = *pg.observed[k];
    const Node& ran = *pg.roots[k];
    if (observed.value) continue;
    set_value(observed, ran.value);
    if (&ran != &observed) set_value(ran, nullptr);
  }
  return report;
}

}  // namespace tapestry
