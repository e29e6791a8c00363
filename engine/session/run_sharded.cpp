#include "engine/session/run_sharded.hpp"

#include "engine/ir/error.hpp"
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

RunReport run_sharded(const std::vector<NodeRef>& roots, const plan::Mesh& mesh,
                      const plan::SearchOptions& opts, bool verify_plan,
                      const std::vector<DeviceBackend*>& devices) {
  bool all_done = true;
  for (const NodeRef& r : roots) all_done = all_done && r->value;
  if (all_done) return {};
  // A planner of its own, with no cached plan, so `opts` (method, seed) always take effect.
  plan::PlannerState planner;
  const plan::PlannedGraph pg = plan::plan_observation(planner, roots, mesh, opts);
  const RunReport report = run_planned(pg, verify_plan, devices);
  // Publish on the roots as given; a fused stand-in keeps no copy.
  for (size_t k = 0; k < pg.observed.size(); ++k) {
    const Node& given = *pg.observed[k];
    const Node& ran = *pg.roots[k];
    if (given.value) continue;
    set_value(given, ran.value);
    if (&ran != &given) set_value(ran, nullptr);
  }
  return report;
}

}  // namespace tapestry
