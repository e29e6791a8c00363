#include "engine/plan/fusion_groups.hpp"

#include <cstdint>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

namespace {

// Node -> its index in discovery order: open addressing over a power-of-two table. Every
// single-rank observation groups its graph (a CG iteration: five graphs of a few nodes), so
// the bookkeeping here is flat arrays and one probe table, not a hash container per fact.
class NodeIndex {
 public:
  NodeIndex() : slots_(64, {nullptr, 0}) {}
  // The node's index, or -1.
  int find(const Node* n) const {
    for (size_t i = slot(n);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].first == n) return slots_[i].second;
      if (!slots_[i].first) return -1;
    }
  }
  // Inserts n with index `size()` unless present; returns {index, inserted}.
  std::pair<int, bool> insert(const Node* n) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    size_t i = slot(n);
    for (; slots_[i].first; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i].first == n) return {slots_[i].second, false};
    slots_[i] = {n, count_};
    return {count_++, true};
  }
  int size() const { return count_; }

 private:
  size_t slot(const Node* n) const {
    const uint64_t h = (reinterpret_cast<uintptr_t>(n) >> 4) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
  }
  void grow() {
    std::vector<std::pair<const Node*, int>> old(slots_.size() * 2, {nullptr, 0});
    old.swap(slots_);
    for (const auto& [n, i] : old) {
      if (!n) continue;
      size_t s = slot(n);
      while (slots_[s].first) s = (s + 1) & (slots_.size() - 1);
      slots_[s] = {n, i};
    }
  }
  std::vector<std::pair<const Node*, int>> slots_;
  int count_ = 0;
};

// Per node (by discovery index): what the rules need.
struct Facts {
  const Node* node = nullptr;
  int uses = 0;           // input edges pointing at it
  int consumer = -1;      // the first consumer in topological order
  int group = -1;         // the group it was inlined into (its root's index)
  int depth = 0;          // inlining depth below its group's root
  int group_size = 0;     // as a group's root: members inlined into it
  bool root = false;
  bool shared = false;    // read by more than one consumer
  bool feeds_non_map = false;
};

}  // namespace

FusionGroups group_fusion(const std::vector<NodeRef>& roots) {
  FusionGroups g;
  NodeIndex index;
  std::vector<Facts> f;
  std::vector<int> topo;  // indices, post-order from the roots
  f.reserve(32);
  topo.reserve(32);
  auto discover = [&](const Node* n) {
    const auto [i, fresh] = index.insert(n);
    if (fresh) f.push_back(Facts{n});
    return std::pair<int, bool>{i, fresh};
  };
  std::vector<std::pair<int, size_t>> stack;
  stack.reserve(32);
  for (const NodeRef& r : roots) {
    const auto [ri, fresh] = discover(r.get());
    f[ri].root = true;
    if (fresh) stack.push_back({ri, 0});
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const Node* n = f[i].node;
      if (n->value || next == n->inputs.size()) {
        topo.push_back(i);
        stack.pop_back();
        continue;
      }
      const Node* in = n->inputs[next++].get();
      const auto [ii, in_fresh] = discover(in);  // may reallocate f, not the stack
      ++f[ii].uses;
      if (in_fresh) stack.push_back({ii, 0});
    }
  }

  // Consumers, in topological order (the first one found is the one that counts).
  for (int i : topo) {
    const Node* n = f[i].node;
    if (n->value) continue;
    const bool map = op_kind(n->op) == OpKind::Map;
    for (const NodeRef& in : n->inputs) {
      const int ii = index.find(in.get());
      internal_check(ii >= 0);
      Facts& x = f[ii];
      if (x.consumer < 0) x.consumer = i;
      else if (x.consumer != i) x.shared = true;
      if (!map) x.feeds_non_map = true;
    }
  }

  // Consumers first (reverse topological order), so a producer knows its consumer's group.
  std::vector<int> inlined;
  std::vector<std::pair<int, int>> reduce_input;  // {reduction, map}
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    Facts& x = f[*it];
    const Node* n = x.node;
    if (n->value || x.root) continue;
    const bool is_map = op_kind(n->op) == OpKind::Map;
    const bool is_const = n->op == Op::Full;
    if ((!is_map && !is_const) || x.consumer < 0) continue;
    Facts& c = f[x.consumer];
    if (op_kind(c.node->op) == OpKind::Reduce) {
      if (is_map && !x.shared) {
        reduce_input.push_back({x.consumer, *it});
        ++g.fused_maps;
      }
      continue;
    }
    if (op_kind(c.node->op) != OpKind::Map) continue;
    if (x.feeds_non_map || (!is_const && x.shared)) continue;
    const int group = c.group >= 0 ? c.group : x.consumer;
    const int d = c.depth + 1;
    if (d > kMaxFusionDepth || f[group].group_size >= kMaxFusionSize) continue;
    inlined.push_back(*it);
    x.group = group;
    x.depth = d;
    ++f[group].group_size;
    if (is_map) ++g.fused_maps;
  }

  g.topo.reserve(topo.size());
  for (int i : topo) g.topo.push_back(f[i].node);
  g.roots.reserve(roots.size());
  for (const NodeRef& r : roots) g.roots.insert(r.get());
  g.uses.reserve(f.size());
  for (const Facts& x : f)
    if (x.uses > 0) g.uses.emplace(x.node, x.uses);
  g.inlined.reserve(inlined.size());
  for (int i : inlined) g.inlined.insert(f[i].node);
  for (const auto& [r, m] : reduce_input) g.reduce_input[f[r].node] = f[m].node;
  return g;
}

}  // namespace tapestry::plan
