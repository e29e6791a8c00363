// Scans along a split dim: each block's local prefix plus the carry from the blocks before it.
//   std::vector<NodeRef> r = split_scans({y}, 4);   // r[0] computes y = cumsum(x, 1) in 4 chunks
// A pure rewrite over the immutable graph, run by the planner before fusion. A scan (cumsum,
// cumprod, cummax, cummin, logcumsumexp) over a line long enough for the mesh, whose other dims
// cannot give every rank work, becomes a two-phase composition of ops that shard:
//   1. x (padded with the monoid's identity to P·c) reshaped to {..., P, c, ...}, scanned along
//      c: a Line op whose chunk dim P splits freely, so P blocks scan their chunks at once;
//   2. the chunks' totals {..., P, ...} scanned along P (a line of P values, tiny), shifted by
//      one to an exclusive prefix (the identity first): each chunk's carry;
//   3. the carry combined into each chunk (a map: +, *, the running extreme, logaddexp), then
//      reshaped back and the padding dropped.
// The planner costs every part by its own signature: the local scans are split like any map,
// and only the totals and the carries (one value per chunk and line) move.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::plan {

// roots with every eligible scan rewritten (as above) for a mesh of `ranks`; roots[i] of the
// result computes what roots[i] computes (the same node when nothing below it changed).
std::vector<NodeRef> split_scans(const std::vector<NodeRef>& roots, int ranks);

// Whether split_scans rewrites the scan node n for a mesh of `ranks`: a forward scan (or a
// reverse cumsum, cumprod, logcumsumexp), numeric, its line at least 2·ranks long, and its
// other dims holding fewer than `ranks` lines (else whole lines already give every rank work).
bool splits_scan(const Node& n, int ranks);

}  // namespace tapestry::plan
