// Planning one observation: the observed subgraph, where its inputs lie, and the plan.
//   PlannerState planner;                  // a session's: its plan cache and counts
//   PlannedGraph pg = plan_observation(planner, {y}, mesh, {});
//   print(to_string(pg.plan.graph()));  pg.plan.cost.time;  layout_of(pg, y->id)
// Nodes that already hold a value are inputs held whole on rank 0, stored tensors
// (engine/store/stored_tensor.hpp) inputs where their shards lie; Constrain nodes fix the
// layout of their value; plans are cached by structure, so a loop plans once.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/plan/plan_cache.hpp"
#include "engine/plan/search.hpp"

namespace tapestry::plan {

struct PlannedGraph {
  std::vector<NodeRef> topo;      // the observed subgraph (after fusion), inputs first
  std::vector<Shard> initial;     // where its inputs lie
  std::vector<NodeRef> roots;     // what the plan computes: observed[i]'s value is roots[i]'s
  std::vector<NodeRef> observed;  // the roots as the user gave them (each once)
  std::map<uint64_t, std::vector<NodeRef>> fused_origin;  // fused node id -> what it replaces
  std::vector<std::string> reassociated;  // per matmul chain: the order written and the one computed
  Mesh mesh;
  Plan plan;
  bool cache_hit = false;
  int bands = 1;  // bands per rank (bands.hpp): > 1 when no plan fit the memory otherwise
};

// Post-order from the roots, stopping at nodes that hold a value (they are inputs).
std::vector<NodeRef> observed_subgraph(const std::vector<NodeRef>& roots);

// Where stored tensors lie (engine/store/stored_tensor.hpp): the shards of node `id` when a
// plan on this mesh can read them in place, else nullptr (the node is then computed, or held
// whole on rank 0 when it has a value).
using StoredShards = std::function<const std::vector<Shard>*(uint64_t id)>;

struct PlannerStats {
  uint64_t plans = 0, cache_hits = 0;
  double time_plan = 0;
};

// What planning keeps between observations: the plans made, by structure, and the counts.
struct PlannerState {
  PlanCache cache;
  PlannerStats stats;
  bool dump = false;  // TAPESTRY_DEBUG=plan: the graph after each pass, on standard error
};

// The pipeline: fuses maps (plan::fuse, unless fuse_maps is false), orders matmul chains by
// cost (plan::reassociate, unless opts.reassociate is false), then searches the sharding on
// `mesh`; the chains' orders and the plan go through the planner's cache.
PlannedGraph plan_observation(PlannerState& planner, const std::vector<NodeRef>& roots, const Mesh& mesh,
                              SearchOptions opts, bool fuse_maps = true, const StoredShards& stored = {});

// How a planned value is split: parts per dim and which rank holds which box.
struct LayoutInfo {
  std::vector<int64_t> grid;  // parts per dim
  std::vector<Shard> shards;  // tensor boxes per rank
};
// part: rank 0's part of the plan (lower_rank.hpp) to read instead of the whole plan; it lists
// every output, so it serves for the roots without lowering every rank's blocks.
LayoutInfo layout_of(const PlannedGraph& pg, uint64_t node, const ShardedGraph* part = nullptr);
std::string grid_string(const std::vector<int64_t>& grid);  // "replicated" / "split(1, 4)" / "grid{2,2}"

}  // namespace tapestry::plan
