#include "engine/exec/observe.hpp"

#include <chrono>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "engine/exec/coordinator.hpp"
#include "engine/exec/evaluator.hpp"
#include "engine/exec/sharded_eval.hpp"
#include "engine/exec/stats.hpp"
#include "engine/exec/trace.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/verifier.hpp"

namespace tapestry {

namespace {

// How recent sharded results were split, by node id, for the printed footer. Bounded: only
// the last results are printed, and ids are never reused.
struct Layouts {
  std::unordered_map<uint64_t, std::string> by_id;
  std::deque<uint64_t> order;
  void put(uint64_t id, std::string layout) {
    if (by_id.insert_or_assign(id, std::move(layout)).second) order.push_back(id);
    while (order.size() > 4096) by_id.erase(order.front()), order.pop_front();
  }
};

Layouts& layouts() {
  static Layouts l;
  return l;
}

double seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// "split(1, 4)", "grid{2,2}", "whole on rank 0", "replicated on 4 ranks".
std::string describe_layout(const plan::PlannedGraph& pg, size_t i) {
  try {
    const plan::LayoutInfo li = plan::layout_of(pg, pg.roots[i]->id);
    const std::string g = plan::grid_string(li.grid);
    if (g != "whole") return g;
    std::unordered_set<int> ranks;
    for (const plan::Shard& s : li.shards) ranks.insert(s.rank);
    if (ranks.size() == 1) return cat_str("whole on rank ", *ranks.begin());
    return cat_str("replicated on ", ranks.size(), " ranks");
  } catch (const InternalError&) {  // a note in a footer is not worth failing an observation
    return {};
  }
}

}  // namespace

std::string computed_layout(uint64_t node_id) {
  auto it = layouts().by_id.find(node_id);
  return it == layouts().by_id.end() ? std::string() : it->second;
}

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
  const double t_plan = seconds();
  const plan::PlannedGraph pg = plan::plan_observation(todo, mesh, opts);
  const double t_run = seconds();
  if (trace::enabled())
    trace::record({"phase", "plan", 0, trace::kPhases, t_plan * 1e6, (t_run - t_plan) * 1e6,
                   cat_str("\"blocks\":", pg.plan.graph.blocks.size(), ",\"cache_hit\":", pg.cache_hit ? "true" : "false")});
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
  const double t_end = seconds();
  stats().time_run += t_end - t_run;
  stats().time_move += report.move_s;
  if (trace::enabled())
    trace::record({"phase", "run", 0, trace::kPhases, t_run * 1e6, (t_end - t_run) * 1e6,
                   cat_str("\"blocks\":", report.blocks, ",\"messages\":", report.messages, ",\"bytes\":", report.bytes)});
  for (size_t i = 0; i < pg.observed.size(); ++i) layouts().put(pg.observed[i]->id, describe_layout(pg, i));
  stats().blocks_run += static_cast<uint64_t>(report.blocks);
  stats().messages += static_cast<uint64_t>(report.messages);
  stats().bytes_moved += static_cast<uint64_t>(report.bytes);
  for (size_t i = 0; i < pg.observed.size(); ++i)
    if (pg.roots[i] != pg.observed[i]) pg.observed[i]->value = pg.roots[i]->value;
}

}  // namespace tapestry
