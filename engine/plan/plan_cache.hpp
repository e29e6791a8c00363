// Plans cached by the structure of the graph, where its inputs lie, and the mesh.
//   PlanCache cache;
//   Plan p = cache.plan(topo, initial, roots, mesh, opts);   // searches on a miss
//   cache.hits(), cache.misses()            // a rebuilt identical graph hits, new node ids and all
// The key is structural (ops, attrs, shapes, dtypes, inputs by position in topo, roots, input
// layouts, mesh, search options), never node ids, so re-running a script reuses its plans; a
// hit renames the cached plan's node ids to the new graph's. A plan asked for with other
// search options (another seed, more steps) is searched anew.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/plan/search.hpp"

namespace tapestry::plan {

class PlanCache {
 public:
  std::optional<Plan> find(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                           const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt = {});
  void insert(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
              const std::vector<NodeRef>& roots, const Mesh& m, const Plan& p, const SearchOptions& opt = {});
  // find, else search and insert.
  Plan plan(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
            const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt = {});

  // The chain orders reassociate() chose for a graph (reassociate.hpp), keyed as its plan is:
  // a hit replays them without costing any order again.
  const std::vector<std::vector<int>>* orders(const std::vector<NodeRef>& topo,
                                              const std::vector<Shard>& initial,
                                              const std::vector<NodeRef>& roots, const Mesh& m,
                                              const SearchOptions& opt) const;
  void keep_orders(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                   const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt,
                   std::vector<std::vector<int>> orders);

  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }
  size_t size() const { return entries_.size(); }
  void clear() {
    entries_.clear();
    orders_.clear();
  }

 private:
  struct Entry {
    std::vector<int64_t> key;   // the full structural key (the hash only buckets it)
    std::vector<uint64_t> ids;  // node ids in traversal order (topo, then each one's inputs)
    std::vector<std::pair<uint64_t, uint32_t>> by_id;  // (id, its first traversal index), by id
    std::vector<uint64_t> listed;                      // ids of the graph's nodes
    Plan plan;                                         // choice, cost and candidates; never a graph or a node
    // An exact plan's sharded graph, its nodes cleared so the cache keeps no graph alive;
    // null for an estimated plan, which a hit lowers again only if it is run or drawn.
    std::shared_ptr<const ShardedGraph> graph;
  };
  std::unordered_multimap<size_t, Entry> entries_;
  std::map<std::vector<int64_t>, std::vector<std::vector<int>>> orders_;
  size_t hits_ = 0, misses_ = 0;
};

}  // namespace tapestry::plan
