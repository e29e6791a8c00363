// Fusion as a graph rewrite: map chains become one FusedMap node, a map group feeding a
// reduction folds into one FusedReduce node.
//   FusedGraph f = fuse({y});                  // f.roots[0] computes what y computes
//   describe_fused(*f.roots[0]) == "tanh(x0 * x1 + x2)"
//   f.origin.at(f.roots[0]->id)                 // the original nodes it stands for, for tp.plan
// A pure function over the immutable graph: the original nodes are untouched, and the planner
// sees fused nodes through their signatures only (engine/poly/signature_of.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/ir/fused.hpp"
#include "engine/ir/node.hpp"

namespace tapestry::plan {

struct FusedGraph {
  // roots[i] computes the value of the original roots[i]; it is the original node when
  // nothing fused into it. The caller publishes roots[i]'s result on the original root.
  std::vector<NodeRef> roots;
  // Per fused node id: the original nodes it replaces, inputs before consumers, its group's
  // root map (and then the reduce) last. A constant read by several groups is in each.
  std::map<uint64_t, std::vector<NodeRef>> origin;
  int fused_ops = 0;  // map nodes that no longer run as their own op
};

// Same rules as the evaluator: a Map (or Full constant) folds into its sole consumer when that
// consumer is a map and nobody else needs the value (a constant may feed several maps: it is
// re-emitted in each); a map whose only consumer is a Sum/Prod/Max/Min/All/Any reduction folds
// into it with its group. Roots and nodes holding a value are never fused away. Groups are
// bounded (depth 48, 96 instructions) so a long loop body cannot build an unbounded program.
FusedGraph fuse(const std::vector<NodeRef>& roots);

}  // namespace tapestry::plan
