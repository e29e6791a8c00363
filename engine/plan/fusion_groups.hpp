// Which elementwise ops fold into which consumer: the one set of fusion rules, shared by the
// single-rank evaluator (engine/exec/evaluator.cpp) and the planner's rewrite (plan::fuse).
//   FusionGroups g = group_fusion({y});
//   g.inlined.count(n)        // n's value lives only inside its consumer's map program
//   g.reduce_input.at(sum)    // the map a reduction absorbs (computed chunk by chunk)
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::plan {

struct FusionGroups {
  std::vector<const Node*> topo;                 // post-order from the roots; valued nodes are leaves
  std::unordered_set<const Node*> roots;
  std::unordered_map<const Node*, int> uses;     // input edges pointing at each node
  // A map (or constant) folded into the program of the map that consumes it: no buffer.
  std::unordered_set<const Node*> inlined;
  // A reduction -> the map it absorbs (that map's group is computed into the reduction).
  std::unordered_map<const Node*, const Node*> reduce_input;
  int fused_maps = 0;                            // maps that no longer run as their own kernel
};

// Bounds of one program: its recursion depth and instruction count (its per-instruction tiles).
inline constexpr int kMaxFusionDepth = 48;
inline constexpr int kMaxFusionSize = 96;

// The rules: a map or constant folds into its sole consumer when that consumer is a map and
// nobody else needs the value (a constant may be re-emitted in every map that reads it, but
// not where a non-map needs it in memory); a map whose sole consumer is a reduction is
// absorbed by it. Roots and nodes holding a value never fold.
FusionGroups group_fusion(const std::vector<NodeRef>& roots);

}  // namespace tapestry::plan
