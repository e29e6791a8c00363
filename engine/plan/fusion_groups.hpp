// Which elementwise ops fold into which consumer: the one set of fusion rules, shared by the
// single-rank evaluator (engine/run/evaluator.cpp) and the planner's rewrite (plan::fuse).
//   FusionGroups g;
//   group_fusion({y}, g);            // g's arrays are reused by the next call
//   for (int i : g.order) ...        // every node, inputs first; i indexes the per-node arrays
//   g.inlined[i]                     // its value lives only inside its consumer's map program
//   g.absorbs[i]                     // a reduction: the map it computes chunk by chunk, or -1
// A single-rank observation groups its graph every time (a CG iteration observes five graphs of
// a few nodes each), so the facts are flat arrays indexed by a node's discovery index and one
// probe table finds that index: no hash container per fact, nothing allocated once warm.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::plan {

// Node -> a small index: open addressing over a power-of-two table, cleared without freeing
// (a table grown once for a large graph stays, and clearing it costs only its filled slots).
class NodeIndex {
 public:
  NodeIndex() : slots_(64, {nullptr, 0}) {}
  int find(const Node* n) const;  // the node's index, or -1
  // Inserts n with index size() unless present; returns {index, inserted}.
  std::pair<int, bool> insert(const Node* n);
  int size() const { return count_; }
  void clear();

 private:
  size_t slot(const Node* n) const {
    const uint64_t h = (reinterpret_cast<uintptr_t>(n) >> 4) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
  }
  void grow();
  std::vector<std::pair<const Node*, int>> slots_;
  std::vector<size_t> used_;  // positions of the filled slots, which clear() empties
  int count_ = 0;
};

struct FusionGroups {
  // Per node, by discovery index (0 .. nodes.size()-1):
  std::vector<const Node*> nodes;
  std::vector<int> first_edge;  // its input edges are edges[first_edge[i] .. first_edge[i+1])
  std::vector<int> edges;       // input edges as indices (a node holding a value has none)
  std::vector<int> uses;        // input edges pointing at it
  std::vector<uint8_t> root;
  // A map (or constant) folded into the program of the map that consumes it: no buffer.
  std::vector<uint8_t> inlined;
  // A reduction -> the index of the map it absorbs (computed chunk by chunk), else -1.
  std::vector<int> absorbs;
  std::vector<int> order;  // post-order from the roots (inputs first); valued nodes are leaves
  int fused_maps = 0;      // maps that no longer run as their own kernel
  NodeIndex index;

  // group_fusion's working facts per node, kept here so their memory is reused.
  struct Facts {
    int consumer = -1;    // the first consumer in topological order
    int group = -1;       // the group it was inlined into (its root's index)
    int depth = 0;        // inlining depth below its group's root
    int group_size = 0;   // as a group's root: members inlined into it
    bool shared = false;  // read by more than one consumer
    bool feeds_non_map = false;
  };
  std::vector<Facts> facts;
  std::vector<std::pair<int, size_t>> stack;

  int size() const { return static_cast<int>(nodes.size()); }
  int index_of(const Node* n) const;  // internal error when n is not in the graph
  int input(int i, size_t k) const { return edges[static_cast<size_t>(first_edge[i]) + k]; }
  // Node-keyed questions, for callers that walk nodes (plan::fuse, the device evaluator).
  bool is_inlined(const Node* n) const;
  const Node* absorbed_by(const Node* reduce) const;  // the map a reduction absorbs, or null
  bool is_absorbed(const Node* map) const;            // a map some reduction absorbs
};

// Bounds of one program: its recursion depth and instruction count (its per-instruction tiles).
inline constexpr int kMaxFusionDepth = 48;
inline constexpr int kMaxFusionSize = 96;

// The rules: a map or constant folds into its sole consumer when that consumer is a map and
// nobody else needs the value (a constant may be re-emitted in every map that reads it, but
// not where a non-map needs it in memory); a map whose sole consumer is a reduction is
// absorbed by it. Roots and nodes holding a value never fold.
void group_fusion(const std::vector<NodeRef>& roots, FusionGroups& out);
FusionGroups group_fusion(const std::vector<NodeRef>& roots);
// group_fusion in its two steps, for a caller that may know the decisions of a graph of the
// same structure (engine/run/schedule.hpp): the walk (nodes, edges, uses, root, order), then
// the rules (inlined, absorbs, fused_maps) over what the walk found.
void discover_graph(const std::vector<NodeRef>& roots, FusionGroups& out);
void decide_groups(FusionGroups& g);

}  // namespace tapestry::plan
