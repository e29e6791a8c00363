// Out-of-core plans: an op's blocks cut into several bands per rank, run one after another, so
// that a step whose inputs and output do not fit in a rank's memory at once still runs (issue
// 23). Each band's inputs and output fit; a finished band goes to the shard store, which may
// spill it (engine/session/spill.hpp), and the next step reads the bands back one by one.
//   Candidate c = banded(sig, cand, 8);   // cand's blocks, each cut into 8 along a parallel dim
//   order_bands(g);                       // each rank's program band by band (lower() calls it)
// The planner asks for bands (SearchOptions::bands) only when no plan fits the memory limit
// otherwise (planner.hpp); peak_memory(g, true) is the memory such a plan needs.
#pragma once

#include "engine/plan/search.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

// c with every block cut into `bands` (Candidate::bands) near-equal pieces along the first
// parallel, splittable index dim that holds them (c's parts there times `bands` within its
// extent), each on its block's rank; c itself when bands <= 1, for a replicated candidate, or
// when no dim holds them (a full reduction: a split of a reduction dim would add partials, not
// save memory).
Candidate banded(const poly::Signature& s, Candidate c, int bands);
// Whether any op of the choice runs in bands (ShardedGraph::in_bands of its lowering).
bool in_bands(const std::map<uint64_t, Candidate>& choice);
// The dim banded() cuts, or -1.
int band_dim(const poly::Signature& s, const Candidate& c, int bands);
// place()'s blocks of c without bands, each cut into c.bands along band_dim (place() calls it).
std::vector<Placement> cut_into_bands(const poly::Signature& s, const Candidate& c,
                                      std::vector<Placement> whole);
// The planner tries 2, 4, ... bands up to this many, and takes the fewest whose peak (as
// peak_memory(g, true) counts it) is within kBandHeadroom of the limit: the rest is for what
// that count leaves out and a banded step holds briefly: a band's input assembled from the
// pieces it spans, halo buffers of exchanges (and, on virtual ranks, every rank at its peak at
// once). Such a plan runs each rank's program in order (ShardedGraph::in_bands), so no rank
// holds steps run ahead of one that waits: before, each rank of mpirun -n 2 ran every band of
// a heat step ahead of its halo's exchange and ran out of memory (tests/lua/spill/bands.lua).
inline constexpr int kMaxBands = 1024;
inline constexpr double kBandHeadroom = 0.75;

// Where a rank runs several blocks of one op (its bands), its program runs them band by band:
// band k of every op, then band k + 1, as far as dependencies allow (a band reading a
// neighbour's halo waits for it), instead of every band of one op before the next op. Only
// blocks move: sends, receives, combines and exchanges keep the plan's order among themselves
// (so every rank meets its messages and collectives as before, and a plan that cannot deadlock
// still cannot), and ranks with one block per op are untouched. The band of a block is its position among its
// op's blocks on the rank; a receive goes with the first band reading it, other steps with the last band they
// wait for.
void order_bands(ShardedGraph& g);

}  // namespace tapestry::plan
