// Search by estimate: for graphs and meshes too large to lower every candidate plan.
//   Plan p = search_estimated(topo, initial, roots, Mesh::modelled(1024), opt);
//   p.estimated == true;  p.cost   // estimated;  p.graph()  lowers the winner on first use
// A full lower() + cost_of() is about ops x ranks work, so on 1,024 ranks one evaluation of a
// 1,000-op graph takes longer than the whole planning budget. Here each op's cost is estimated
// on its own, from a sample of its blocks: the busiest sampled block's compute, plus the input
// slices its rank lacks given where the producers' chosen candidates put them, plus the
// senders' message overheads and a split reduction's combine. The objective is the sum over
// ops (a chain runs its ops one after another), so changing one op's candidate re-estimates only
// that op and its consumers. The global stage's tables (global_search.hpp) come from the
// estimate, joint moves refine its optimum on the estimate itself, and the plan
// keeps only the choice per op: its million blocks are lowered when the plan runs or is drawn
// (Plan::graph), and Plan::exact_cost simulates them.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "engine/plan/global_search.hpp"
#include "engine/plan/search.hpp"

namespace tapestry::plan {

// Block k of the grid that grid_blocks(s, parts, ...) cuts, without building the others.
Box grid_block(const poly::Signature& s, const poly::Coords& parts, int64_t k);

// The global stage on the estimate, for ops_to_place(topo, initial, roots): node and edge costs
// over each op's allowed candidates (candidates() filtered by opt's constraints, in that order)
// and their optimum, the start of both searches.
struct GlobalStart {
  CostGraph graph;          // the objective: time + bytes_weight x bytes
  double bytes_weight = 0;  // seconds per byte moved (SearchOptions::bytes_weight)
  GlobalChoice choice;
};
// The tables by what each op's depend on (its signature, sources, candidates), kept between global
// stages on one mesh of graphs that share most ops: reassociate.hpp plans each order of a matmul
// chain with the rest of the graph, whose tables do not change.
struct StageTables {
  std::unordered_map<std::string, std::vector<double>> nodes, edges, computes, node_bytes, edge_bytes;
};
GlobalStart global_start(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                         const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt,
                         StageTables* keep = nullptr);

// What op n costs by itself on m: its least estimated time over its candidates, every input
// already wherever a block reads it (the global stage's node cost). reassociate.hpp orders a
// matmul chain by it where nothing moves between the orders' products (one rank).
double alone_time(const NodeRef& n, const Mesh& m);

Plan search_estimated(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                      const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt);

}  // namespace tapestry::plan
