#include "engine/plan/fusion_groups.hpp"

#include <algorithm>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

int NodeIndex::find(const Node* n) const {
  for (size_t i = slot(n);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].first == n) return slots_[i].second;
    if (!slots_[i].first) return -1;
  }
}

std::pair<int, bool> NodeIndex::insert(const Node* n) {
  if (2 * (static_cast<size_t>(count_) + 1) > slots_.size()) grow();
  size_t i = slot(n);
  for (; slots_[i].first; i = (i + 1) & (slots_.size() - 1))
    if (slots_[i].first == n) return {slots_[i].second, false};
  slots_[i] = {n, count_};
  used_.push_back(i);
  return {count_++, true};
}

void NodeIndex::clear() {
  for (size_t i : used_) slots_[i] = {nullptr, 0};  // only the slots in use: a few per graph
  used_.clear();
  count_ = 0;
}

void NodeIndex::grow() {
  std::vector<std::pair<const Node*, int>> old(slots_.size() * 2, {nullptr, 0});
  old.swap(slots_);
  used_.clear();
  for (const auto& [n, i] : old) {
    if (!n) continue;
    size_t s = slot(n);
    while (slots_[s].first) s = (s + 1) & (slots_.size() - 1);
    slots_[s] = {n, i};
    used_.push_back(s);
  }
}

int FusionGroups::index_of(const Node* n) const {
  const int i = index.find(n);
  internal_check(i >= 0);
  return i;
}

bool FusionGroups::is_inlined(const Node* n) const {
  const int i = index.find(n);
  return i >= 0 && inlined[static_cast<size_t>(i)];
}

const Node* FusionGroups::absorbed_by(const Node* reduce) const {
  const int i = index.find(reduce);
  if (i < 0 || absorbs[static_cast<size_t>(i)] < 0) return nullptr;
  return nodes[static_cast<size_t>(absorbs[static_cast<size_t>(i)])];
}

bool FusionGroups::is_absorbed(const Node* map) const {
  const int m = index.find(map);
  return m >= 0 && std::find(absorbs.begin(), absorbs.end(), m) != absorbs.end();
}

void discover_graph(const std::vector<NodeRef>& roots, FusionGroups& g) {
  g.nodes.clear();
  g.first_edge.clear();
  g.edges.clear();
  g.uses.clear();
  g.root.clear();
  g.inlined.clear();
  g.absorbs.clear();
  g.order.clear();
  g.facts.clear();
  g.fused_maps = 0;
  g.index.clear();

  // Discovery: a node's input edges are laid out when it is found (it holds a value: none).
  auto discover = [&](const Node* n) {
    const auto [i, fresh] = g.index.insert(n);
    if (fresh) {
      g.nodes.push_back(n);
      g.first_edge.push_back(static_cast<int>(g.edges.size()));
      if (!n->value) g.edges.resize(g.edges.size() + n->inputs.size(), -1);
      g.uses.push_back(0);
      g.root.push_back(0);
    }
    return std::pair<int, bool>{i, fresh};
  };
  auto& stack = g.stack;
  stack.clear();
  for (const NodeRef& r : roots) {
    const auto [ri, fresh] = discover(r.get());
    g.root[static_cast<size_t>(ri)] = 1;
    if (fresh) stack.push_back({ri, 0});
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const Node* n = g.nodes[static_cast<size_t>(i)];
      if (n->value || next == n->inputs.size()) {
        g.order.push_back(i);
        stack.pop_back();
        continue;
      }
      const size_t k = next++;
      const int at = g.first_edge[static_cast<size_t>(i)] + static_cast<int>(k);
      const auto [ii, in_fresh] = discover(n->inputs[k].get());  // may reallocate g's arrays
      g.edges[static_cast<size_t>(at)] = ii;
      ++g.uses[static_cast<size_t>(ii)];
      if (in_fresh) stack.push_back({ii, 0});
    }
  }
  g.first_edge.push_back(static_cast<int>(g.edges.size()));
}

void decide_groups(FusionGroups& g) {
  const size_t count = g.nodes.size();
  g.inlined.assign(count, 0);
  g.absorbs.assign(count, -1);
  g.facts.assign(count, FusionGroups::Facts{});

  // Consumers, in topological order (the first one found is the one that counts).
  for (int i : g.order) {
    const Node* n = g.nodes[static_cast<size_t>(i)];
    if (n->value) continue;
    const bool map = op_kind(n->op) == OpKind::Map;
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      FusionGroups::Facts& x = g.facts[static_cast<size_t>(g.input(i, k))];
      if (x.consumer < 0) x.consumer = i;
      else if (x.consumer != i) x.shared = true;
      if (!map) x.feeds_non_map = true;
    }
  }

  // Consumers first (reverse topological order), so a producer knows its consumer's group.
  for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {
    const size_t i = static_cast<size_t>(*it);
    FusionGroups::Facts& x = g.facts[i];
    const Node* n = g.nodes[i];
    if (n->value || g.root[i]) continue;
    const bool is_map = op_kind(n->op) == OpKind::Map;
    const bool is_const = n->op == Op::Full;
    if ((!is_map && !is_const) || x.consumer < 0) continue;
    const size_t ci = static_cast<size_t>(x.consumer);
    FusionGroups::Facts& c = g.facts[ci];
    const OpKind consumer_kind = op_kind(g.nodes[ci]->op);
    if (consumer_kind == OpKind::Reduce) {
      if (is_map && !x.shared) {
        g.absorbs[ci] = *it;
        ++g.fused_maps;
      }
      continue;
    }
    if (consumer_kind != OpKind::Map) continue;
    if (x.feeds_non_map || (!is_const && x.shared)) continue;
    const int group = c.group >= 0 ? c.group : x.consumer;
    const int d = c.depth + 1;
    if (d > kMaxFusionDepth || g.facts[static_cast<size_t>(group)].group_size >= kMaxFusionSize) continue;
    g.inlined[i] = 1;
    x.group = group;
    x.depth = d;
    ++g.facts[static_cast<size_t>(group)].group_size;
    if (is_map) ++g.fused_maps;
  }
}

void group_fusion(const std::vector<NodeRef>& roots, FusionGroups& g) {
  discover_graph(roots, g);
  decide_groups(g);
}

FusionGroups group_fusion(const std::vector<NodeRef>& roots) {
  FusionGroups g;
  group_fusion(roots, g);
  return g;
}

}  // namespace tapestry::plan
