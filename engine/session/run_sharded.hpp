// Running an observation sharded, apart from any session: plan on a mesh, verify, run.
//   run_sharded({y}, plan::Mesh::this_machine(4), {}, /*verify_plan=*/true);  // y->value set
//   plan::PlannedGraph pg = plan::plan_observation(planner, {y}, mesh, {});  run_planned(pg, true);
// The tests' and the fuzzer's way to run a graph sharded, apart from any session: the ranks are
// virtual (a loopback transport in this process), and nodes holding a value are the only
// inputs. The result is the single-rank evaluator's, exactly for maps and data movement, up to
// the order of float additions for split reductions. On any throw no root is changed.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"
#include "engine/plan/mesh.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/search.hpp"
#include "engine/shard/rank_program.hpp"

namespace tapestry {

// Plans the subgraph the roots need through plan::plan_observation (fuse, search; nodes holding
// a value are inputs, held whole on rank 0; Constrain nodes fix their layout) with a planner of
// its own, so no cached plan and `opts` (method, seed) always take effect; then verifies and
// runs it over `mesh.ranks` virtual ranks.
// Throws InternalError with the verifier's message when verification fails. Returns what
// ran and moved (zero when every root already had a value). devices: as run_plan's.
RunReport run_sharded(const std::vector<NodeRef>& roots, const plan::Mesh& mesh,
                      const plan::SearchOptions& opts, bool verify_plan,
                      const std::vector<DeviceBackend*>& devices = {});

// Gives each empty root (a size-0 dim) without a value its value, an empty buffer, with no plan:
// the builders fold every op with an empty result into a constant (engine/ir/build/empty.hpp),
// so such a root has nothing to compute and no non-empty input to wait for. Every observation
// calls it first, so no run ever plans an empty tensor.
void resolve_empty_roots(const std::vector<NodeRef>& roots);

// Verifies (when asked) and runs an already planned observation.
RunReport run_planned(const plan::PlannedGraph& pg, bool verify_plan,
                      const std::vector<DeviceBackend*>& devices = {});

}  // namespace tapestry
