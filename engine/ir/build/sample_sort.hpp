// A sort of one long line over P ranks as a sample sort, in two phases around one observation:
//   build::SampleSort s = build::sample_sort_counts(x, 0, 4);   // lazy: local sorts, splitters
//   ... observe s.bounds ({P, P-1} i64, the only data-dependent sizes) ...
//   std::vector<NodeRef> vi = build::sample_sort_place(s, bounds);  // {values, 1-based indices}
// Phase 1 splits the line into P chunks, sorts each (a line op over {P, c}: P blocks at once),
// takes evenly spaced samples of every sorted chunk, sorts those (P·s values) and keeps P-1
// splitters; then counts, per chunk, the values before each splitter. Once those counts are
// known, phase 2 is static: bucket q gathers the q-th run of every sorted chunk (slices whose
// bounds are the counts: the all-to-all of a sample sort, as transfers the planner places and
// costs), sorts it, and the buckets laid end to end are the sorted line. Stable: equal values
// land in one bucket in chunk order, each chunk's run in its own stable order. NaN sorts last.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::build {

struct SampleSort {
  NodeRef values;   // {P, c}: each chunk sorted (padded at the end to P·c with a value sorting last)
  NodeRef indices;  // {P, c}: their 1-based positions in the line
  NodeRef bounds;   // {P, P-1} i64: per chunk, its values before splitter q (ascending)
  Shape shape;      // x's
  int64_t n = 0, parts = 0, chunk = 0;
};

// Whether a sort of x along dim (ascending) over `ranks` ranks is a sample sort: x numeric, one
// line (every other dim of size 1) of at least `min_len` values and 16 per rank.
bool sample_sorts(const NodeRef& x, int dim, bool descending, int ranks, int64_t min_len);
SampleSort sample_sort_counts(const NodeRef& x, int dim, int64_t parts);
// bounds: s.bounds's values, row-major. Returns {values, indices} of x's shape, as sort's.
std::vector<NodeRef> sample_sort_place(const SampleSort& s, const std::vector<int64_t>& bounds);

}  // namespace tapestry::build
