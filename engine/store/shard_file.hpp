// Pieces of stored tensors as bytes: what a rank sends its buddy (a replica of its shards) and
// what the ranks of a lost MPI job leave on disk for the job that replaces it.
//   std::vector<char> m = encode_pieces(store, keys, rank);   // rank's pieces of `keys`
//   decode_pieces_into(m, store, pred);                       // its buddy keeps them as pred's
//   salvage_store(store, dir, me);          // every piece held here: one file per (key, rank)
//   load_salvaged(store, dir, key, old_rank, new_rank);       // the next job's rank takes them
// A replica is a piece of another rank kept in this process's shard store under that rank
// (the store is keyed by (key, rank), and under MPI a process reads only its own rank's), so
// it is freed with the key like the original. Every message and file is checked on read;
// bad bytes throw Error.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/codec.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry {

// The pieces `rank` holds of each of `keys`, with their keys and rank, as one message.
std::vector<char> encode_pieces(const ShardStore& store, const std::vector<uint64_t>& keys, int rank);
// The same appended to `w` (after what it holds: a replica message's epoch), with no copy of
// the whole message made on the way.
void encode_pieces_to(ByteWriter& w, const ShardStore& store, const std::vector<uint64_t>& keys, int rank);
// Puts every piece of such a message into `store` under `as_rank`; returns the bytes kept.
int64_t decode_pieces_into(std::span<const char> bytes, ShardStore& store, int as_rank);

// Writes every piece this process holds (its own and its replicas) into `dir`, one file per
// (key, rank) named k<KEY>-r<RANK>-w<WRITER>, each written aside and renamed; then the marker
// w<WRITER>.done. Throws Error when a file cannot be written.
void salvage_store(const ShardStore& store, const std::string& dir, int writer);
// The (key, rank) pairs some file of `dir` holds, and the writers that finished.
std::set<std::pair<uint64_t, int>> salvaged_pieces(const std::string& dir);
// Loads the pieces of (key, old_rank) from the file of its own writer, else any other, into
// `store` under `new_rank`; false when no file has them.
bool load_salvaged(ShardStore& store, const std::string& dir, uint64_t key, int old_rank, int new_rank);

}  // namespace tapestry
