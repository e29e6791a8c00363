// Lowering a block assignment to a complete sharded graph: the data movement follows from it.
//   Assignment a;  a[y->id] = grid_blocks(signature_of(*y), {2, 1}, 2);   // rows over 2 ranks
//   ShardedGraph g = lower(topo, a, {{x->id, Box::of_shape(x->shape), 0}}, {y}, 2);
//   verify(g, topo).ok()       // transfers, combines, steps and result shards are all derived
// The search decides only where blocks run; every transfer is an exact slice intersection
// between where data lies and where a block needs it, so nothing moves to where it already is.
#pragma once

#include <map>
#include <vector>

#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

struct Placement {
  Box box;  // in the node's index space
  Rank rank;
};
using Assignment = std::map<uint64_t, std::vector<Placement>>;  // node id -> its blocks

// Where the partials of a split reduction are merged, per output slice: on the rank of its first
// partial (a reduce), on every rank holding a partial of it (an all-reduce: the value is then
// replicated there), or in equal pieces along the slice's longest dim, one per such rank (a
// reduce-scatter: Megatron's row-parallel step).
enum class CombineMode : uint8_t { Reduce, AllReduce, ReduceScatter };
using CombineModes = std::map<uint64_t, CombineMode>;  // node id -> its mode (absent: Reduce)
const char* combine_mode_name(CombineMode m);

// The blocks of a regular grid: parts[j] near-equal pieces along index dim j (1 = whole),
// assigned to ranks round-robin in row-major order.
std::vector<Placement> grid_blocks(const poly::Signature& s, const std::vector<int64_t>& parts,
                                   int num_ranks);

// Whether n is generated where it is read: a generator (full, arange, rand, ...: values from the
// element index alone) that is not a root and not held. Every rank reading a slice of it computes
// that slice itself (lower()), which costs a few flops per element where moving it would cost a
// transfer, so it has no placement of its own.
bool generated_where_read(const Node& n, const std::vector<Shard>& initial,
                          const std::vector<NodeRef>& roots);

// Emits, in topological order, for each op: the transfers that bring its blocks' missing input
// slices (a slice several ranks read whole travels down a binomial tree: the lowest rank whose
// own piece contains it, then the readers in rank order), then the blocks; after the
// blocks of a node that split a reduction, the combines of each distinct partial output slice as
// its CombineMode says (one combine of the whole output when those slices overlap irregularly).
// Result shards are where the roots' producers put them. Nodes of `topo` without blocks must be
// leaves held in `initial`, or generated where read: those have no blocks of their own, and a
// block reading one is preceded by a block of it computing exactly the slice its rank lacks.
// Throws Error when a needed slice lies nowhere.
ShardedGraph lower(const std::vector<NodeRef>& topo, const Assignment& blocks,
                   const std::vector<Shard>& initial, const std::vector<NodeRef>& roots, int num_ranks,
                   const CombineModes& modes = {});

// Rank `me`'s part of lower()'s graph, equal to restrict_to_rank(lower(...), me), worked out
// without lowering the other ranks: each sender and tree parent follows from the slice and the
// producers' pieces, so `me` computes transfers, combines and steps only where it takes part
// and keeps just the cheap bookkeeping (which block reads which slice) of the rest. Each rank
// of a distributed run lowers its own part from the plan's choices (engine/dist).
ShardedGraph lower_rank(const std::vector<NodeRef>& topo, const Assignment& blocks,
                        const std::vector<Shard>& initial, const std::vector<NodeRef>& roots, int num_ranks,
                        const CombineModes& modes, Rank me);

}  // namespace tapestry::plan
