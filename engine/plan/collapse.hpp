// Collapse: a sharded graph back to the abstract graph it computes.
//   std::vector<NodeRef> abstract = collapse(g);   // == topo when g is a plan of topo
//   CHECK(collapse(plan(topo)) == topo);          // abstract -> sharded -> abstract round-trips
// The blocks of each node merge back into the node, its combines into its reduction, and the
// transfers vanish; what remains is each node the plan computes or reads, in creation order
// (ids grow with creation and inputs are created first, so that order is topological).
#pragma once

#include <vector>

#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

// Throws Error when the blocks of a node do not tile its whole index space (a plan that
// does not compute the node) or name a node missing from g.nodes.
std::vector<NodeRef> collapse(const ShardedGraph& g);

}  // namespace tapestry::plan
