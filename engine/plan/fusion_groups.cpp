#include "engine/plan/fusion_groups.hpp"

namespace tapestry::plan {

namespace {

void order(const std::vector<NodeRef>& roots, FusionGroups& g) {
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const NodeRef& r : roots) {
    g.roots.insert(r.get());
    if (seen.insert(r.get()).second) stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (n->value || next == n->inputs.size()) {
        g.topo.push_back(n);
        stack.pop_back();
        continue;
      }
      const Node* in = n->inputs[next++].get();
      ++g.uses[in];
      if (seen.insert(in).second) stack.push_back({in, 0});
    }
  }
}

}  // namespace

FusionGroups group_fusion(const std::vector<NodeRef>& roots) {
  FusionGroups g;
  order(roots, g);
  std::unordered_map<const Node*, const Node*> sole_consumer;
  std::unordered_set<const Node*> shared, feeds_non_map;
  for (const Node* n : g.topo) {
    if (n->value) continue;
    for (const NodeRef& in : n->inputs) {
      auto [it, fresh] = sole_consumer.emplace(in.get(), n);
      if (!fresh && it->second != n) shared.insert(in.get());
      if (op_kind(n->op) != OpKind::Map) feeds_non_map.insert(in.get());
    }
  }
  std::unordered_map<const Node*, const Node*> group_root;
  std::unordered_map<const Node*, int> depth, group_size;
  // Consumers first (reverse topological order), so a producer knows its consumer's group.
  for (auto it = g.topo.rbegin(); it != g.topo.rend(); ++it) {
    const Node* n = *it;
    if (n->value || g.roots.count(n)) continue;
    const bool is_map = op_kind(n->op) == OpKind::Map;
    const bool is_const = n->op == Op::Full;
    if (!is_map && !is_const) continue;
    auto c = sole_consumer.find(n);
    if (c == sole_consumer.end()) continue;
    const Node* consumer = c->second;
    if (op_kind(consumer->op) == OpKind::Reduce) {
      if (is_map && !shared.count(n)) {
        g.reduce_input[consumer] = n;
        ++g.fused_maps;
      }
      continue;
    }
    if (op_kind(consumer->op) != OpKind::Map) continue;
    if (feeds_non_map.count(n) || (!is_const && shared.count(n))) continue;
    const Node* group = group_root.count(consumer) ? group_root[consumer] : consumer;
    const int d = depth[consumer] + 1;
    if (d > kMaxFusionDepth || group_size[group] >= kMaxFusionSize) continue;
    g.inlined.insert(n);
    group_root[n] = group;
    depth[n] = d;
    ++group_size[group];
    if (is_map) ++g.fused_maps;
  }
  return g;
}

}  // namespace tapestry::plan
