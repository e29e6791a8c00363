#include "engine/store/stored_tensor.hpp"

#include <map>
#include <unordered_map>
#include <set>
#include <unordered_set>

#include "engine/ir/error.hpp"
#include "engine/plan/planner.hpp"

namespace tapestry {

namespace {

std::map<uint64_t, StoredLayout>& catalog() {
  static std::map<uint64_t, StoredLayout> c;
  return c;
}

struct Materialized {
  std::weak_ptr<const Node> expr, leaf;
};

std::unordered_map<uint64_t, Materialized>& materialized() {
  static std::unordered_map<uint64_t, Materialized> m;
  return m;
}

}  // namespace

NodeRef make_stored_leaf(const Shape& shape, DType dtype) { return make_source(nullptr, shape, dtype); }

void register_stored(const NodeRef& leaf, std::vector<plan::Shard> shards, int ranks) {
  internal_check(leaf && leaf->op == Op::Source);
  for (plan::Shard& s : shards) s.tensor = leaf->id;
  catalog()[leaf->id] = StoredLayout{std::move(shards), ranks, leaf};
}

const StoredLayout* stored_layout(uint64_t id) {
  auto it = catalog().find(id);
  if (it == catalog().end() || it->second.leaf.expired()) return nullptr;
  return &it->second;
}

std::vector<uint64_t> sweep_stored() {
  std::vector<uint64_t> gone;
  for (auto it = catalog().begin(); it != catalog().end();) {
    if (it->second.leaf.expired()) {
      gone.push_back(it->first);
      it = catalog().erase(it);
      continue;
    }
    ++it;
  }
  for (auto it = materialized().begin(); it != materialized().end();) {
    if (it->second.expr.expired() || it->second.leaf.expired()) {
      it = materialized().erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

void forget_stored(uint64_t id) { catalog().erase(id); }

const StoredLayout* usable_stored(uint64_t id, int ranks) {
  const StoredLayout* s = stored_layout(id);
  return s && ranks > 1 && s->ranks == ranks ? s : nullptr;
}

std::vector<uint64_t> stored_initial_keys(const plan::ShardedGraph& g) {
  std::vector<uint64_t> keys;
  bool any = false;
  for (const plan::Shard& h : g.initial) {
    keys.push_back(usable_stored(h.tensor, g.num_ranks) ? h.tensor : 0);
    any = any || keys.back();
  }
  if (!any) keys.clear();
  return keys;
}

void record_materialized(const NodeRef& expr, const NodeRef& leaf) {
  if (expr == leaf) return;
  materialized()[expr->id] = Materialized{expr, leaf};
}

NodeRef materialized_as(const Node& expr) {
  auto it = materialized().find(expr.id);
  if (it == materialized().end()) return nullptr;
  NodeRef leaf = it->second.leaf.lock();
  if (!leaf || it->second.expr.expired()) materialized().erase(it);
  return leaf;
}

bool any_materialized() { return !materialized().empty(); }

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
  if (g != "whole") return g;
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
