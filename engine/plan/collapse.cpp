#include "engine/plan/collapse.hpp"

#include <algorithm>
#include <map>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

std::vector<NodeRef> collapse(const ShardedGraph& g) {
  std::map<uint64_t, NodeRef> by_id;
  for (const NodeRef& n : g.nodes) by_id[n->id] = n;
  auto lookup = [&](uint64_t id) -> const NodeRef& {
    auto it = by_id.find(id);
    user_check(it != by_id.end(), "the plan names node %", id, ", which it does not list");
    return it->second;
  };

  // Every node that has blocks must be whole: the union of its blocks is its index space.
  std::map<uint64_t, std::vector<Box>> blocks;
  for (const Block& b : g.blocks) blocks[b.node].push_back(b.box);
  std::map<uint64_t, NodeRef> out;
  for (const auto& [id, boxes] : blocks) {
    const NodeRef& n = lookup(id);
    const Box space = poly::signature_of(*n).space_box();
    const bool ranks_agree =
        std::all_of(boxes.begin(), boxes.end(), [&](const Box& b) { return b.rank() == space.rank(); });
    user_check(ranks_agree && poly::covered_by(space, boxes), "the blocks of node %", id,
               " do not cover its index space ", to_string(space));
    out[id] = n;
  }
  // Leaves: values the plan reads where they lie. The roots are listed even when held.
  for (const Shard& h : g.initial) out[h.tensor] = lookup(h.tensor);
  for (uint64_t r : g.roots) out[r] = lookup(r);
  std::vector<NodeRef> list;
  for (auto& [id, n] : out) list.push_back(n);
  return list;
}

}  // namespace tapestry::plan
