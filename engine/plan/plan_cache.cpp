#include "engine/plan/plan_cache.hpp"

#include <bit>
#include <unordered_map>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

namespace {

// Every node the plan may name, in a fixed order: topo, then each topo node's inputs.
std::vector<NodeRef> traversal(const std::vector<NodeRef>& topo) {
  std::vector<NodeRef> out = topo;
  for (const NodeRef& n : topo)
    for (const NodeRef& in : n->inputs) out.push_back(in);
  return out;
}

std::vector<int64_t> structural_key(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                                    const std::vector<NodeRef>& roots, const Mesh& m) {
  std::unordered_map<uint64_t, int64_t> pos;
  for (size_t i = 0; i < topo.size(); ++i) pos.emplace(topo[i]->id, static_cast<int64_t>(i));
  auto where = [&](uint64_t id) {
    auto it = pos.find(id);
    return it == pos.end() ? int64_t{-1} : it->second;
  };
  std::vector<int64_t> k;
  auto push_box = [&](const Box& b) {
    k.push_back(b.rank());
    k.insert(k.end(), b.lo.begin(), b.lo.end());
    k.insert(k.end(), b.hi.begin(), b.hi.end());
  };
  for (const NodeRef& n : topo) {
    k.push_back(static_cast<int64_t>(n->op));
    // What cannot change a plan stays out of the key, so a training loop whose constants
    // (a learning rate, Adam's bias correction) or seeds change every step plans once:
    // a Source's attr is its own id, a generator's ints are its value or seed, and reals are
    // only ever values (constants, arange/linspace ends, fused-program constants) — a
    // signature depends on shapes and on the ops, never on them.
    if (n->op != Op::Source && op_kind(n->op) != OpKind::Generate) {
      k.push_back(static_cast<int64_t>(n->attrs.ints.size()));
      k.insert(k.end(), n->attrs.ints.begin(), n->attrs.ints.end());
    }
    k.push_back(static_cast<int64_t>(n->attrs.dtype));
    k.push_back(static_cast<int64_t>(n->dtype));
    k.push_back(static_cast<int64_t>(n->shape.size()));
    k.insert(k.end(), n->shape.begin(), n->shape.end());
    k.push_back(static_cast<int64_t>(n->inputs.size()));
    for (const NodeRef& in : n->inputs) k.push_back(where(in->id));
  }
  k.push_back(-2);
  for (const NodeRef& r : roots) k.push_back(where(r->id));
  k.push_back(-3);
  for (const Shard& h : initial) {
    k.push_back(where(h.tensor));
    k.push_back(h.rank);
    push_box(h.box);
  }
  k.push_back(-4);
  k.push_back(static_cast<int64_t>(m.hash()));
  return k;
}

size_t hash_of(const std::vector<int64_t>& k) {
  size_t h = k.size();
  for (int64_t v : k) h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

std::optional<Plan> PlanCache::find(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                                    const std::vector<NodeRef>& roots, const Mesh& m) {
  const std::vector<int64_t> key = structural_key(topo, initial, roots, m);
  auto [lo, hi] = entries_.equal_range(hash_of(key));
  for (auto it = lo; it != hi; ++it) {
    const Entry& e = it->second;
    if (e.key != key) continue;
    const std::vector<NodeRef> now = traversal(topo);
    internal_check(now.size() == e.ids.size());
    std::unordered_map<uint64_t, NodeRef> rename;
    for (size_t i = 0; i < now.size(); ++i) rename.emplace(e.ids[i], now[i]);
    auto id = [&](uint64_t old) {
      auto r = rename.find(old);
      internal_check(r != rename.end());
      return r->second->id;
    };
    Plan p = e.plan;
    ShardedGraph& g = p.graph;
    for (uint64_t old : e.listed) g.nodes.push_back(rename.at(old));
    for (Shard& s : g.initial) s.tensor = id(s.tensor);
    for (Block& b : g.blocks) b.node = id(b.node);
    for (Transfer& t : g.transfers) t.tensor = id(t.tensor);
    for (Combine& c : g.combines) c.node = id(c.node);
    for (uint64_t& r : g.roots) r = id(r);
    for (Shard& s : g.outputs) s.tensor = id(s.tensor);
    std::map<uint64_t, Candidate> choice;
    for (auto& [old, c] : p.choice) choice.emplace(id(old), c);
    p.choice = std::move(choice);
    std::map<uint64_t, std::vector<Tried>> tried;
    for (auto& [old, t] : p.tried) tried.emplace(id(old), t);
    p.tried = std::move(tried);
    ++hits_;
    return p;
  }
  ++misses_;
  return std::nullopt;
}

void PlanCache::insert(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                       const std::vector<NodeRef>& roots, const Mesh& m, const Plan& p) {
  Entry e{structural_key(topo, initial, roots, m), {}, {}, p};
  for (const NodeRef& n : traversal(topo)) e.ids.push_back(n->id);
  for (const NodeRef& n : p.graph.nodes) e.listed.push_back(n->id);
  e.plan.graph.nodes.clear();
  const size_t h = hash_of(e.key);
  entries_.emplace(h, std::move(e));
}

Plan PlanCache::plan(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                     const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt) {
  if (std::optional<Plan> hit = find(topo, initial, roots, m)) return std::move(*hit);
  Plan p = search(topo, initial, roots, m, opt);
  insert(topo, initial, roots, m, p);
  return p;
}

}  // namespace tapestry::plan
