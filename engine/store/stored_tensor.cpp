#include "engine/store/stored_tensor.hpp"

#include <atomic>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"
#include "engine/plan/planner.hpp"

namespace tapestry {

namespace {
std::atomic<uint64_t> g_stored_bytes{0};
}  // namespace

uint64_t stored_bytes_registered() { return g_stored_bytes.load(std::memory_order_relaxed); }

StoredCatalog::StoredCatalog() = default;

NodeRef StoredCatalog::new_leaf(const Shape& shape, DType dtype) {
  // Weak: a leaf may outlive the catalog (a Lua Tensor after its session).
  return make_source(nullptr, shape, dtype, [weak = std::weak_ptr<Graveyard>(graveyard_)](uint64_t id) {
    if (auto g = weak.lock()) {
      std::lock_guard lock(g->mu);
      g->ids.push_back(id);
      g->any.store(true, std::memory_order_release);
    }
  });
}

void StoredCatalog::register_stored(const NodeRef& leaf, std::vector<plan::Shard> shards, int ranks) {
  internal_check(leaf && leaf->op == Op::Source);
  for (plan::Shard& s : shards) s.tensor = leaf->id;
  g_stored_bytes.fetch_add(static_cast<uint64_t>(numel(leaf->shape)) * dtype_size(leaf->dtype),
                           std::memory_order_relaxed);
  lost_.erase(leaf->id);
  catalog_[leaf->id] = StoredLayout{std::move(shards), ranks, leaf};
}

const StoredLayout* StoredCatalog::layout(uint64_t id) const {
  auto it = catalog_.find(id);
  if (it == catalog_.end() || it->second.leaf.expired()) return nullptr;
  return &it->second;
}

std::vector<uint64_t> StoredCatalog::sweep() {
  std::vector<uint64_t> dead;
  if (!graveyard_->any.load(std::memory_order_acquire)) return dead;
  {
    std::lock_guard lock(graveyard_->mu);
    dead.swap(graveyard_->ids);
    graveyard_->any.store(false, std::memory_order_relaxed);
  }
  std::vector<uint64_t> gone;
  for (uint64_t id : dead) {
    if (catalog_.erase(id)) gone.push_back(id);
    lost_.erase(id);
    auto [b, e] = materialized_by_leaf_.equal_range(id);
    for (auto it = b; it != e; ++it) {
      auto m = materialized_.find(it->second);
      if (m != materialized_.end() && m->second.leaf.expired()) materialized_.erase(m);
    }
    materialized_by_leaf_.erase(id);
  }
  lineage_.forget(dead);
  return gone;
}

const StoredLayout* StoredCatalog::usable(uint64_t id, int ranks) const {
  const StoredLayout* s = layout(id);
  return s && s->ranks == ranks ? s : nullptr;
}

std::vector<uint64_t> StoredCatalog::initial_keys(const plan::ShardedGraph& g) const {
  std::vector<uint64_t> keys;
  bool any = false;
  for (const plan::Shard& h : g.initial) {
    keys.push_back(usable(h.tensor, g.num_ranks) ? h.tensor : 0);
    any = any || keys.back();
  }
  if (!any) keys.clear();
  return keys;
}

void StoredCatalog::record_materialized(const NodeRef& expr, const NodeRef& leaf) {
  if (expr == leaf) return;
  materialized_[expr->id] = Materialized{expr, leaf};
  materialized_by_leaf_.emplace(leaf->id, expr->id);
}

NodeRef StoredCatalog::materialized_as(const Node& expr) {
  auto it = materialized_.find(expr.id);
  if (it == materialized_.end()) return nullptr;
  NodeRef leaf = it->second.leaf.lock();
  if (!leaf || it->second.expr.expired()) materialized_.erase(it);
  return leaf;
}

std::vector<std::pair<uint64_t, StoredLayout>> StoredCatalog::live() const {
  std::vector<std::pair<uint64_t, StoredLayout>> out;
  for (const auto& [id, s] : catalog_)
    if (!s.leaf.expired()) out.emplace_back(id, s);
  return out;
}

void StoredCatalog::mark_lost(uint64_t id, std::string why) {
  catalog_.erase(id);
  lost_[id] = std::move(why);
}

const std::string* StoredCatalog::lost(uint64_t id) const {
  auto it = lost_.find(id);
  return it == lost_.end() ? nullptr : &it->second;
}

std::string describe_shards(const std::vector<plan::Shard>& shards, size_t rank_of_tensor) {
  std::vector<std::set<int64_t>> starts(rank_of_tensor);
  std::unordered_set<int> ranks;
  for (const plan::Shard& s : shards) {
    ranks.insert(s.rank);
    for (size_t d = 0; d < rank_of_tensor && d < s.box.lo.size(); ++d) starts[d].insert(s.box.lo[d]);
  }
  std::vector<int64_t> grid;
  for (const auto& st : starts) grid.push_back(std::max<int64_t>(1, static_cast<int64_t>(st.size())));
  const std::string g = plan::grid_string(grid);
  if (g != "whole") {
    // Replicas of a split value (an all-reduce over some of the ranks): say how many copies.
    std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, int> copies;
    for (const plan::Shard& s : shards) ++copies[{s.box.lo, s.box.hi}];
    int lo = INT32_MAX, hi = 0;
    for (const auto& [box, n] : copies) lo = std::min(lo, n), hi = std::max(hi, n);
    if (hi <= 1) return g;
    return lo == hi ? cat_str(g, ", ", hi, " copies of each piece")
                    : cat_str(g, ", up to ", hi, " copies of a piece");
  }
  if (ranks.size() == 1) return cat_str("whole on rank ", *ranks.begin());
  return cat_str("replicated on ", ranks.size(), " ranks");
}

std::vector<int64_t> bytes_per_rank(const StoredLayout& s, const Node& leaf) {
  std::vector<int64_t> out(static_cast<size_t>(s.ranks), 0);
  for (const plan::Shard& sh : s.shards) {
    int64_t e = sh.box.empty() ? 0 : numel(sh.box.extents());
    for (size_t d = sh.box.lo.size(); d < leaf.shape.size(); ++d) e *= leaf.shape[d];
    if (sh.rank >= 0 && sh.rank < s.ranks) out[sh.rank] += e * static_cast<int64_t>(dtype_size(leaf.dtype));
  }
  return out;
}

}  // namespace tapestry
