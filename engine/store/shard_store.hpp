// The shard store: the pieces of stored (named) tensors that this process holds, per rank.
//   shard_store().put(rank, key, box, view);              // a result shard kept where computed
//   std::optional<View> v = shard_store().find(rank, key, box);   // a later plan's initial shard
//   shard_store().drop(key);                              // a rebind or drop frees the old version
// A key is rank 0's node id of the stored tensor's leaf (engine/store/stored_tensor.hpp), so
// every version has its own key and a rebind never overwrites the pieces readers still use.
// Under MPI each process holds its own rank; over loopback this process holds every rank.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"

namespace tapestry {

class ShardStore {
 public:
  // Keeps `v` (the data of `box` of the tensor) on `rank`. A window on a larger buffer is
  // copied out, so a kept shard never pins the block output it came from.
  void put(int rank, uint64_t key, const poly::Box& box, const View& v);
  // A view of `box` when one piece on `rank` covers it; nullopt otherwise.
  std::optional<View> find(int rank, uint64_t key, const poly::Box& box) const;
  void drop(uint64_t key);                        // every rank's pieces of it
  int64_t bytes(int rank, uint64_t key) const;    // payload of its pieces on `rank`
  int64_t total_bytes() const;                    // everything this process keeps
  bool has(uint64_t key) const;

 private:
  struct Piece {
    poly::Box box;
    View view;
  };
  mutable std::mutex mu_;
  std::map<std::pair<uint64_t, int>, std::vector<Piece>> pieces_;  // (key, rank)
};

ShardStore& shard_store();

}  // namespace tapestry
