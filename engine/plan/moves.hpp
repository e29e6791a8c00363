// How a plan's data moves, named: its transfers and combines grouped into the collectives they
// form (broadcast, all-gather, all-to-all, reduce, all-reduce, reduce-scatter) or left point to
// point, each with the bytes the cost model counts and its alpha-beta time alone.
//   Moves mv = classify_moves(g);
//   for (const MoveGroup& c : mv.groups) print(move_kind_name(c.kind), c.bytes, move_time(c, g, mesh));
//   mv.transfer_group[t], mv.combine_group[c]   // what transfer t / combine c is part of
// A plan's exchanges (ShardedGraph::exchanges: the broadcasts, all-gathers and all-to-alls
// lower() made collective steps) are each one group of their kind; the other transfers are
// grouped by the rules below. The groups follow from the plan alone, so print(plan), the trace and tp.stats()
// name a move alike on every rank (a rank's part of a plan names its own moves as the whole plan does, but
// for groups of transfers it sees only in part: those may be named point to point there).
//   broadcast       one slice reaching two or more ranks (lower()'s binomial trees, relays
//                   included: a relay forwards what it received)
//   all-gather      the trees of one tensor's pieces over the same group of ranks, every
//                   member of which roots one: each holds a piece and receives the others'
//   all-to-all      a tensor's point-to-point slices among a group whose every member sends a
//                   slice to every other member (a redistribution: rows to columns)
//   reduce / all-reduce / reduce-scatter   a combine by its destinations (cost.cpp's rule: the
//                   one-destination combines of a node over the same participants together
//                   are a reduce-scatter)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/mesh.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

enum class MoveKind : uint8_t {
  PointToPoint,
  Broadcast,
  AllGather,
  AllToAll,
  Reduce,
  AllReduce,
  ReduceScatter
};
inline constexpr int kMoveKinds = 7;
const char* move_kind_name(MoveKind k);  // "point-to-point", "broadcast", "all-gather", ...

struct MoveGroup {
  MoveKind kind = MoveKind::PointToPoint;
  uint64_t tensor = 0;            // the value it moves (a combine's node)
  std::vector<Rank> ranks;        // every rank taking part, sorted
  std::vector<size_t> transfers;  // indices into ShardedGraph::transfers
  std::vector<size_t> combines;   // indices into ShardedGraph::combines
  int64_t bytes = 0;              // as cost_of counts them (combine_bytes for combines)
  // The data it is about: a broadcast's slice, the pieces an all-gather gathers, the slices
  // of an all-to-all or point-to-point group, the combined values of its combines.
  int64_t payload = 0;
  int exchange = -1;  // the Exchange step it is (a collective step of the plan), or -1
  bool local() const { return ranks.size() < 2; }  // a merge within one rank moves nothing
};

struct Moves {
  std::vector<MoveGroup> groups;    // in order of their first transfer or combine
  std::vector<int> transfer_group;  // per transfer: its group
  std::vector<int> combine_group;   // per combine: its group
};

Moves classify_moves(const ShardedGraph& g);

// What cost_of counts for combine c: every participant but one destination sends the merged
// value once, every other destination receives it once: (participants - 1 + dests - 1) x out.
int64_t combine_bytes(const ShardedGraph& g, const Combine& c);
// The payload of a slice of tensor `id` (its dtype; trailing dims beyond the box whole).
int64_t slice_bytes(const ShardedGraph& g, uint64_t id, const Box& b);

// The group's alpha-beta time alone (an exchange: cost.hpp's exchange_time) (no contention with other moves,
// no waiting for data), over the slowest link among its ranks: a broadcast as the binomial tree lower()
// builds, ceil(log2 p) (alpha + n beta), the reductions by collective_cost.hpp's formulas (the cheaper of
// tree and ring, as the cost model charges combines), an all-gather as a ring, (p-1)(alpha + n/p beta), an
// all-to-all as pairwise exchanges, (p-1) alpha + max per-rank bytes x beta, point to point as the busiest
// rank's link: its messages x alpha + bytes x beta.
double move_time(const MoveGroup& c, const ShardedGraph& g, const Mesh& m);

}  // namespace tapestry::plan
