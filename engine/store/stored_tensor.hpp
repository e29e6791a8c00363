// A session's catalog of stored tensors (rank 0's): a leaf node that stands for a value kept
// sharded on the ranks that computed it, and where its shards lie.
//   NodeRef w = catalog.new_leaf(shape, dtype);                 // its id is the store key
//   catalog.register_stored(w, shards, mesh.ranks);             // after every rank kept its shards
//   if (const StoredLayout* s = catalog.layout(w->id)) ...      // a plan's initial shards
// A stored leaf is a Source without a value on rank 0 until it is observed (gathered). The
// catalog holds it weakly: the shards live while some Tensor, binding or expression still
// refers to that version, and sweep() hands back the keys nobody can read any more. Its leaves
// (new_leaf) report their own end, so a sweep costs what died since the last one, not the
// number of stored tensors: every observation sweeps.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/plan/sharded_graph.hpp"
#include "engine/store/lineage.hpp"

namespace tapestry {

struct StoredLayout {
  std::vector<plan::Shard> shards;  // tensor = the leaf's id (the key)
  int ranks = 1;                    // the mesh it was stored on
  std::weak_ptr<const Node> leaf;
};

// Bytes of every tensor registered as stored on ranks, over the process's life. The Lua side
// charges them to its collector (lang/lua_args.cpp) as it charges local allocations: a driver's
// pieces live in other processes, so without this a loop's dead states piled up on the ranks
// (W4 under tapestry -n 2: memory growing every step, each step 2-4x slower).
uint64_t stored_bytes_registered();

class StoredCatalog {
 public:
  StoredCatalog();
  // A stored leaf (a Source without a value) that tells this catalog when it is gone.
  NodeRef new_leaf(const Shape& shape, DType dtype);
  // `leaf` from new_leaf (again after a lost MPI job: where it was restored or recomputed).
  void register_stored(const NodeRef& leaf, std::vector<plan::Shard> shards, int ranks);
  // nullptr when `id` is not a live stored leaf.
  const StoredLayout* layout(uint64_t id) const;
  // Forgets the leaves no one refers to; their keys, for the ranks to drop.
  std::vector<uint64_t> sweep();
  // The layout of `id` when a plan on `ranks` ranks can read it where it lies; else nullptr.
  const StoredLayout* usable(uint64_t id, int ranks) const;
  // Per initial shard of `g`: the store key it is read from (0: a node's value on rank 0).
  std::vector<uint64_t> initial_keys(const plan::ShardedGraph& g) const;

  // An expression whose value was stored as `leaf` (tp.env.w = expr): later observations read
  // the leaf instead of recomputing it, while the leaf lives. Both are held weakly.
  void record_materialized(const NodeRef& expr, const NodeRef& leaf);
  NodeRef materialized_as(const Node& expr);  // nullptr when none (or no longer stored)
  bool any_materialized() const { return !materialized_.empty(); }

  // Every live stored leaf and its layout, by id (a lost MPI job's restore walks them).
  std::vector<std::pair<uint64_t, StoredLayout>> live() const;
  // A stored tensor no copy of survived: forgotten, and reading it is Error(`why`).
  void mark_lost(uint64_t id, std::string why);
  const std::string* lost(uint64_t id) const;         // nullptr unless marked lost
  void unmark_lost(uint64_t id) { lost_.erase(id); }  // its leaf holds its value again
  bool any_lost() const { return !lost_.empty(); }
  // What each stored tensor was computed from, while its inputs live (engine/store/lineage.hpp).
  Lineage& lineage() { return lineage_; }

 private:
  struct Materialized {
    std::weak_ptr<const Node> expr, leaf;
  };
  // Ids of this catalog's leaves destroyed since the last sweep (any thread adds to it).
  struct Graveyard {
    std::mutex mu;
    std::vector<uint64_t> ids;
    // Set under mu with each id added: every observation sweeps, and on one rank nearly every
    // sweep finds nothing (a leaf added after sweep read it false waits for the next sweep).
    std::atomic<bool> any{false};
  };
  std::shared_ptr<Graveyard> graveyard_ = std::make_shared<Graveyard>();
  std::map<uint64_t, StoredLayout> catalog_;
  std::unordered_map<uint64_t, Materialized> materialized_;
  std::unordered_multimap<uint64_t, uint64_t> materialized_by_leaf_;  // leaf id -> expr ids
  std::unordered_map<uint64_t, std::string> lost_;                    // id -> why
  Lineage lineage_;
};

// "split(1, 4)", "grid{2,2}", "whole on rank 0", "replicated on 4 ranks".
std::string describe_shards(const std::vector<plan::Shard>& shards, size_t rank_of_tensor);
// Payload bytes on each rank (size = ranks).
std::vector<int64_t> bytes_per_rank(const StoredLayout& s, const Node& leaf);

}  // namespace tapestry
