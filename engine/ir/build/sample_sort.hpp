// A sort of long lines over P ranks as a sample sort, in two phases around one observation:
//   build::SampleSort s = build::sample_sort_counts(x, 0, 4, false);  // lazy: local sorts, splitters
//   ... observe s.bounds ({B, P, P-1} i64, the only data-dependent sizes) ...
//   std::vector<NodeRef> vi = build::sample_sort_place(s, bounds);  // {values, 1-based indices}
// Phase 1 splits each of the B lines into P chunks, sorts each (a line op over {B, P, c}: B·P
// blocks at once), takes evenly spaced samples of every sorted chunk, sorts those per line (P·s
// values) and keeps P-1 splitters; then counts, per chunk, the values before each splitter. Once
// those counts are known, phase 2 is static: bucket q of a line gathers the q-th run of each of
// its sorted chunks (slices whose bounds are the counts: the all-to-all of a sample sort, as
// transfers the planner places and costs), sorts it, and the buckets laid end to end are the
// sorted line. Stable: equal values land in one bucket in chunk order, each chunk's run in its
// own stable order. NaN sorts last. A descending sort is the ascending one of the line reversed,
// reversed again (equal values then keep their order, and NaN comes first, as sort's kernel).
//
// topk_chunked needs no observation: each chunk's k best, then the k best of those P·k.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::build {

struct SampleSort {
  NodeRef values;   // {B, P, c}: each chunk sorted (padded at the end to P·c with a value sorting last)
  NodeRef indices;  // {B, P, c}: their 1-based positions in the (reversed, if descending) line
  NodeRef bounds;   // {B, P, P-1} i64: per chunk, its values before splitter q (ascending)
  Shape shape;      // x's
  int dim = 0;
  bool descending = false;
  int64_t n = 0, lines = 1, parts = 0, chunk = 0;
};

// Whether a sort (or topk) of x along dim over `ranks` ranks runs in chunks across them: x real
// and not bool, lines of at least `min_len` values and 16 per rank, and fewer lines than ranks
// (with as many lines as ranks, whole lines already give every rank work: they are gathered).
bool sample_sorts(const NodeRef& x, int dim, int ranks, int64_t min_len);
SampleSort sample_sort_counts(const NodeRef& x, int dim, int64_t parts, bool descending);
// bounds: s.bounds's values, row-major. Returns {values, indices} of x's shape, as sort's.
std::vector<NodeRef> sample_sort_place(const SampleSort& s, const std::vector<int64_t>& bounds);
// topk(x, k, dim, largest) as each of P chunks' k best, then the best k of those P·k candidates
// (a line of P·k, whole on one rank): the same values and indices, ties in x's order.
std::vector<NodeRef> topk_chunked(const NodeRef& x, int64_t k, int dim, bool largest, int64_t parts);

// Shared with unique.cpp: a before b in the sort order (NaN after every number), and the rows
// {B, n} padded at the end to P·c with a value sorting last (ascending) and cut into {B, P, c}.
NodeRef sorts_before(const NodeRef& a, const NodeRef& b);
NodeRef line_chunks(const NodeRef& m, int64_t parts, int64_t chunk);

}  // namespace tapestry::build
