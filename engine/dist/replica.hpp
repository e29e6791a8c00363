// One rank's part of the jobs that keep stored tensors safe on an MPI job (issue 23):
// replicating its shards to its buddy, and restoring the shards a lost job left on disk.
//   replicate_part(mpi, store, keys, epoch, stop);   // every rank at once: rank r's pieces of
//                                                   // `keys` go to rank r+1 (mod N), kept there
//   restore_part(store, decode_restore(bytes), me);  // the next job's rank `me` loads its pieces
// A replica is kept in the buddy's shard store under the rank it stands for (shard_file.hpp),
// so the loss of any one rank leaves a copy of each of its pieces on another. The MPI job is
// the unit of failure (Open MPI 4.1 has no ULFM): on a loss every surviving rank writes what
// it holds, replicas included, to the salvage folder (salvage_store), and the job that
// replaces it loads those files (restore_part), each new rank the pieces of one old rank.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/comm/mpi.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry {

// The MPI tag of replica messages (beside engine/comm/mpi.hpp's).
inline constexpr int kTagReplica = 21;

// Sends this rank's pieces of `keys` to its buddy and keeps its predecessor's, waiting for
// them; `stop` is asked while waiting and ends the wait with Error("replication stopped")
// when it returns true. A job of one rank has no buddy: nothing happens.
void replicate_part(comm::Mpi& mpi, ShardStore& store, const std::vector<uint64_t>& keys, uint64_t epoch,
                    const std::function<bool()>& stop);

// Which old rank's pieces of each key a rank of the next job loads from `dir`.
struct RestoreJob {
  struct Entry {
    uint64_t key = 0;
    int old_rank = 0, new_rank = 0;
  };
  std::string dir;
  std::vector<Entry> entries;
};
std::vector<char> encode_restore(const RestoreJob& job);
RestoreJob decode_restore(std::span<const char> bytes);  // throws Error on bad bytes
// Rank `me`'s entries; Error naming the key and rank when a piece file is missing.
void restore_part(ShardStore& store, const RestoreJob& job, int me);

}  // namespace tapestry
