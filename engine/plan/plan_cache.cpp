#include "engine/plan/plan_cache.hpp"

#include <algorithm>
#include <bit>
#include <climits>
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
                                    const std::vector<NodeRef>& roots, const Mesh& m,
                                    const SearchOptions& opt) {
  // Positions by id, sorted: one allocation instead of a hash node per op (a hit is < 1 ms).
  std::vector<std::pair<uint64_t, int64_t>> pos;
  pos.reserve(topo.size());
  for (size_t i = 0; i < topo.size(); ++i) pos.emplace_back(topo[i]->id, static_cast<int64_t>(i));
  std::sort(pos.begin(), pos.end());
  auto where = [&](uint64_t id) {
    auto it = std::lower_bound(pos.begin(), pos.end(), std::pair<uint64_t, int64_t>{id, INT64_MIN});
    return it == pos.end() || it->first != id ? int64_t{-1} : it->second;
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
  k.push_back(-5);
  for (int64_t v : opt.key()) k.push_back(v);
  return k;
}

size_t hash_of(const std::vector<int64_t>& k) {
  size_t h = k.size();
  for (int64_t v : k) h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

std::optional<Plan> PlanCache::find(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                                    const std::vector<NodeRef>& roots, const Mesh& m,
                                    const SearchOptions& opt) {
  const std::vector<int64_t> key = structural_key(topo, initial, roots, m, opt);
  auto [lo, hi] = entries_.equal_range(hash_of(key));
  for (auto it = lo; it != hi; ++it) {
    const Entry& e = it->second;
    if (e.key != key) continue;
    // Old id -> its traversal index -> the node now there. The traversal past `topo` (the
    // inputs of each node) is built only when the plan names such a node.
    std::vector<NodeRef> now;
    auto node = [&](uint64_t old) -> const NodeRef& {
      auto r = std::lower_bound(e.by_id.begin(), e.by_id.end(), std::pair<uint64_t, uint32_t>{old, 0});
      internal_check(r != e.by_id.end() && r->first == old);
      if (r->second < topo.size()) return topo[r->second];
      if (now.empty()) now = traversal(topo);
      internal_check(now.size() == e.ids.size());
      return now[r->second];
    };
    auto id = [&](uint64_t old) { return node(old)->id; };
    // The entry's choice copied once, straight under the new ids, and its candidate lists
    // shared (copying the whole plan first and re-keying the copy was half of a hit's time).
    Plan p;
    p.cost = e.plan.cost;
    p.evaluations = e.plan.evaluations;
    p.estimated = e.plan.estimated;
    p.blocks = e.plan.blocks;
    for (const auto& [old, c] : e.plan.choice) p.choice.emplace_hint(p.choice.end(), id(old), c);
    for (const auto& [old, t] : e.plan.tried) p.tried.emplace_hint(p.tried.end(), id(old), t);
    if (!e.graph) {  // estimated: lowered from the choice if the plan is ever run or drawn
      p.defer_lowering(LoweringInput{topo, initial, roots, m});
    } else {
      ShardedGraph g = *e.graph;
      for (uint64_t old : e.listed) g.nodes.push_back(node(old));
      for (Shard& s : g.initial) s.tensor = id(s.tensor);
      for (Block& b : g.blocks) b.node = id(b.node);
      for (Transfer& t : g.transfers) t.tensor = id(t.tensor);
      for (Combine& c : g.combines) c.node = id(c.node);
      for (Exchange& x : g.exchanges) x.tensor = id(x.tensor);
      for (uint64_t& r : g.roots) r = id(r);
      for (Shard& s : g.outputs) s.tensor = id(s.tensor);
      p.set_graph(std::move(g));
    }
    ++hits_;
    return p;
  }
  ++misses_;
  return std::nullopt;
}

void PlanCache::insert(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                       const std::vector<NodeRef>& roots, const Mesh& m, const Plan& p,
                       const SearchOptions& opt) {
  Entry e{structural_key(topo, initial, roots, m, opt), {}, {}, {}, Plan{}, nullptr};
  for (const NodeRef& n : traversal(topo)) e.ids.push_back(n->id);
  for (size_t i = 0; i < e.ids.size(); ++i) e.by_id.emplace_back(e.ids[i], static_cast<uint32_t>(i));
  std::sort(e.by_id.begin(), e.by_id.end());  // an id listed twice: its first index first
  e.plan.cost = p.cost;
  e.plan.choice = p.choice;
  e.plan.tried = p.tried;
  e.plan.evaluations = p.evaluations;
  e.plan.estimated = p.estimated;
  e.plan.blocks = p.blocks;
  if (!p.estimated) {
    ShardedGraph g = p.graph();
    for (const NodeRef& n : g.nodes) e.listed.push_back(n->id);
    g.nodes.clear();
    e.graph = std::make_shared<const ShardedGraph>(std::move(g));
  }
  const size_t h = hash_of(e.key);
  entries_.emplace(h, std::move(e));
}

const std::vector<std::vector<int>>* PlanCache::orders(const std::vector<NodeRef>& topo,
                                                       const std::vector<Shard>& initial,
                                                       const std::vector<NodeRef>& roots, const Mesh& m,
                                                       const SearchOptions& opt) const {
  auto it = orders_.find(structural_key(topo, initial, roots, m, opt));
  return it == orders_.end() ? nullptr : &it->second;
}

void PlanCache::keep_orders(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                            const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt,
                            std::vector<std::vector<int>> orders) {
  orders_[structural_key(topo, initial, roots, m, opt)] = std::move(orders);
}

Plan PlanCache::plan(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                     const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt) {
  if (std::optional<Plan> hit = find(topo, initial, roots, m, opt)) return std::move(*hit);
  Plan p = search(topo, initial, roots, m, opt);
  insert(topo, initial, roots, m, p, opt);
  return p;
}

}  // namespace tapestry::plan
