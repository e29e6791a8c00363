// tp.unique over P ranks without gathering the line: local sort and dedupe, then the sample
// sort's merge with a dedupe in each bucket, in three phases around two observations:
//   build::UniqueChunks c = build::unique_chunks(flat, 4);         // lazy; observe c.stats
//   build::UniqueBuckets b = build::unique_buckets(c, stats);       // lazy; observe b.sizes
//   std::vector<NodeRef> vc = build::unique_join(b, sizes);         // {values, counts}, lazy
// Phase 1 cuts the flat line into P chunks ({P, c}, padded with a value sorting last), sorts
// each (P blocks at once), marks where each run of equal values starts (NaNs are one value, as
// numpy 2), numbers the runs by a running sum and scatters each run's value and length into
// slot r of a per-chunk table ({P, c+1}; padding goes to the spare last slot): the chunk's
// distinct values, ascending, with their counts. Splitters come from samples of the sorted
// chunks, as the sample sort's; per chunk, stats holds its distinct count and, per splitter,
// how many of its distinct values come before it. Those are the only data-dependent sizes.
// Phase 2 is static: bucket q gathers the q-th slot range of each chunk's table (the
// all-to-all, as transfers the planner places and costs), padded to the longest bucket with a
// value sorting last and a count of 0; the {P, L} buckets are sorted along L at once (a value
// now occurs at most once per chunk, and always in one bucket) and deduplicated as the chunks
// were, the counts of equal values added by the scatter. Each bucket's distinct count is the
// second observation. Phase 3 takes each row's first d_q and lays them end to end. parts = 1
// is the same graph on one block.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::build {

struct UniqueChunks {
  NodeRef values;  // {P, c+1}: chunk p's distinct values in slots 0 .. m_p-1, ascending
  NodeRef counts;  // {P, c+1} i64: how often each occurs in the chunk
  NodeRef stats;   // {P, P} i64: m_p, then the distinct values before each of the P-1 splitters
  int64_t parts = 1, chunk = 0;
};

struct UniqueBuckets {
  NodeRef values, counts;  // {P, L+1}: row q holds bucket q's distinct values (and counts) first
  NodeRef sizes;           // {P} i64: each bucket's distinct count (0: an empty bucket)
  // Where no bucket merges two chunks (one rank, or chunks of disjoint values): the buckets'
  // pieces, distinct already, in order; values, counts and sizes are then null.
  std::vector<NodeRef> piece_values, piece_counts;
};

// flat: 1-D, real or bool, at least one element. The stats and sizes arguments: the observed
// values, row-major (sizes: b.sizes's, or empty where b.sizes is null: no second observation).
UniqueChunks unique_chunks(const NodeRef& flat, int64_t parts);
UniqueBuckets unique_buckets(const UniqueChunks& c, const std::vector<int64_t>& stats);
std::vector<NodeRef> unique_join(const UniqueBuckets& b, const std::vector<int64_t>& sizes);

}  // namespace tapestry::build
