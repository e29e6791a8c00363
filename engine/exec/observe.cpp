#include "engine/exec/observe.hpp"

#include <unordered_set>

#include "engine/exec/coordinator.hpp"
#include "engine/exec/evaluator.hpp"
#include "engine/exec/sharded_eval.hpp"
#include "engine/exec/stats.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/verifier.hpp"

namespace tapestry {

void observe_values(const std::vector<NodeRef>& roots) {
  const plan::Mesh& mesh = plan::current_mesh();
  if (mesh.ranks == 1) {
    evaluate(roots);
    return;
  }
  ++stats().observations;
  std::vector<NodeRef> todo;  // each root once (a plan lists an output once)
  std::unordered_set<const Node*> seen;
  for (const NodeRef& r : roots)
    if (!r->value && seen.insert(r.get()).second) todo.push_back(r);
  if (todo.empty()) return;
  // A short anneal: an interactive observation cannot wait seconds for its plan, and the
  // plan cache makes a loop pay for it once.
  plan::SearchOptions opts;
  opts.steps = 300;
  opts.time_budget_s = 0.05;
  const plan::PlannedGraph pg = plan::plan_observation(todo, mesh, opts);
  for (const auto& [id, origin] : pg.fused_origin) stats().fused_ops += origin.size() - 1;
  // Under mpirun the mesh is the job (rank 0 coordinates); otherwise its ranks are virtual.
  RunReport report;
  if (mpi_job_ranks() == mesh.ranks) {
    if (verify_every_plan()) {
      const plan::VerifyResult v = plan::verify(pg.plan.graph, pg.topo);
      if (!v.ok()) throw InternalError(cat_str("the plan fails verification:\n", v.message()));
    }
    report = run_plan_mpi(pg.plan.graph);
  } else {
    report = run_planned(pg, verify_every_plan());
  }
  stats().blocks_run += static_cast<uint64_t>(report.blocks);
  stats().messages += static_cast<uint64_t>(report.messages);
  stats().bytes_moved += static_cast<uint64_t>(report.bytes);
  for (size_t i = 0; i < pg.observed.size(); ++i)
    if (pg.roots[i] != pg.observed[i]) pg.observed[i]->value = pg.roots[i]->value;
}

}  // namespace tapestry
