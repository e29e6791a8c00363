// Chunk grids against the shards of a stored tensor: which rank writes each chunk of a chunked
// save, and a default grid whose chunks nest in the shards so that every rank writes its own.
//   std::vector<int64_t> c = chunks_for_shards(shape, DType::F32, shards);   // ~1 MiB chunks
//   ChunkWriters w = chunk_writers(shape, c, shards);
//   // w.owned: each chunk a rank holds whole, with that rank; w.shared: the others
// A compressed chunk is one unit: it cannot be written in parts by two ranks. A chunk that no
// single rank holds whole (it straddles a shard boundary) is gathered to rank 0 and written
// there; with the default grid only uneven splits leave such chunks, at most one chunk row per
// boundary.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/shape.hpp"
#include "engine/plan/sharded_graph.hpp"
#include "engine/poly/box.hpp"

namespace tapestry::io {

// Calls fn with every chunk of the grid (C order of chunk indices), clipped to the shape. A 0-d
// shape has one chunk (the empty box of rank 0).
void for_each_chunk(const Shape& shape, const std::vector<int64_t>& chunks,
                    const std::function<void(const poly::Box&)>& fn);

// A grid for `shards` (distinct boxes; one whole box on one rank): per dimension the largest
// shard extent, then the first dimension cut to about `target_bytes` per chunk, preferring a
// divisor of the shards' row boundaries so the chunks nest in them.
std::vector<int64_t> chunks_for_shards(const Shape& shape, DType dtype,
                                       const std::vector<plan::Shard>& shards,
                                       int64_t target_bytes = int64_t(1) << 20);

struct ChunkWriters {
  std::vector<plan::Shard> owned;  // a chunk box (clipped) and the rank holding all of it
  std::vector<poly::Box> shared;   // chunks no rank holds whole
};
// A chunk held whole by several ranks (replicated) goes to one of them, in turn.
ChunkWriters chunk_writers(const Shape& shape, const std::vector<int64_t>& chunks,
                           const std::vector<plan::Shard>& shards);

// Boxes merged where two differ only along one dimension and touch there: the chunks a rank 0
// gather needs, as few boxes as a row of chunks allows.
std::vector<poly::Box> merge_boxes(std::vector<poly::Box> boxes);

}  // namespace tapestry::io
