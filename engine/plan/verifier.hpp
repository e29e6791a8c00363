// The verifier: every sharded graph is checked before it runs, and tests check every plan.
//   VerifyResult r = verify(g, topo);           // topo: the abstract graph g must implement
//   if (!r) std::cerr << r.message();           // one line per problem, naming its check
//   internal_check(verify(g, topo).ok());       // the checked build does this on every plan
// The four checks (docs/planner.md, the verifier), each error prefixed with its name:
//   "partition": the blocks of each op partition its index space (no gap, no overlap, and no
//                split of an unsplittable dim); leaves (sources, held values) have no blocks;
//   "inputs":    every block's input slices are on its rank when it runs, and every transfer
//                sends data its sender has;
//   "combine":   every partial result of a split reduction is combined exactly once;
//   "outputs":   every shard of a root is produced exactly once and lies where the plan says.
// "schedule" errors are malformed plans: bad ranks or indices, steps missing or repeated, or
// a deadlock (a receive or combine that can never complete).
#pragma once

#include <string>
#include <vector>

#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

struct VerifyResult {
  std::vector<std::string> errors;
  size_t dropped = 0;  // errors beyond the first 64 are counted, not kept

  bool ok() const { return errors.empty(); }
  explicit operator bool() const { return ok(); }
  std::string message() const;  // every error on its own line; "" when ok
  // Whether some error contains `text` (for tests).
  bool mentions(const std::string& text) const;
};

// `topo` lists the nodes to compute or read, inputs before consumers (Source nodes and nodes
// held in g.initial are leaves). Inputs of topo nodes outside topo must be held initially.
VerifyResult verify(const ShardedGraph& g, const std::vector<NodeRef>& topo);

}  // namespace tapestry::plan
