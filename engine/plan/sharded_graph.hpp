// The sharded graph: the blocks, transfers and combines of a plan, in order on every rank.
//   ShardedGraph g(2);  g.nodes = topo;  g.hold(x->id, Box::of_shape(x->shape), 0);
//   g.add_transfer(x->id, bottom, 0, 1);  g.add_block(y->id, top, 0);  g.add_block(y->id, bottom, 1);
//   g.add_output(y->id, top, 0);  g.add_output(y->id, bottom, 1);   // then verify(g, topo)
// Everything is named by node id (the wire format broadcast to ranks); `nodes` keeps those
// nodes alive. Boxes are index-space boxes for blocks and tensor slices for everything else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/poly/box.hpp"
#include "engine/poly/signature.hpp"

namespace tapestry::plan {

using poly::Box;
using Rank = int;

// A sub-box of a node's index space, computed on one rank.
struct Block {
  uint64_t node;
  Box box;  // in the op's index space
  Rank rank;
};

// A slice of a tensor moved from one rank to another.
struct Transfer {
  uint64_t tensor;
  Box slice;  // tensor coordinates
  Rank from, to;
};

// Merges the partial results of blocks that split a reduction dim: over `out` (output tensor
// coordinates) every partial contributes where its output slice overlaps. One destination is
// a reduce, every participant an all-reduce, several combines with disjoint `out` boxes a
// reduce-scatter.
struct Combine {
  uint64_t node;
  poly::CombineKind kind;
  std::vector<size_t> partials;  // indices into ShardedGraph::blocks
  Box out;
  std::vector<Rank> dest;
  // Where it lies in the plan's posting order, as Exchange::after (device peers post a
  // combine they run as a collective there, engine/device/peers.hpp): the transfers made
  // before it, and the exchanges (one placed at the same transfer comes first when it was made
  // first). In a rank's part, of that part's. kUnplaced: not known (a graph built by hand).
  static constexpr size_t kUnplaced = SIZE_MAX;
  size_t after = kUnplaced;
  size_t exchanges_before = 0;
};

// A collective step: transfers of one tensor that run together over a group of ranks, as one
// collective where the transport has it (MPI_Ibcast / MPI_Iallgatherv / MPI_Ialltoallv on a
// communicator of the members, NCCL on devices), else as the transfers themselves.
//   Broadcast  one slice from `root` to every other member; its transfers are lower()'s
//              binomial tree (each the whole slice, relays included), so each member but the
//              root receives the slice once
//   AllGather  every member holds parts of a slice all of them read and receives every other
//              member's parts; its transfers send each part from its holder to every other member
//   AllToAll   every member sends slices it holds to every other member (a redistribution)
// Of an all-gather or all-to-all, every transfer's sender holds its slice before the step (none
// is relayed), and a broadcast's root holds its slice: so a collective needs nothing but the
// members' own data. Its transfers have no Send or Recv steps: each member has one Exchange step.
struct Exchange {
  enum class Kind : uint8_t { Broadcast, AllGather, AllToAll };
  Kind kind = Kind::Broadcast;
  uint64_t tensor = 0;
  std::vector<Rank> members;      // sorted, distinct
  Rank root = -1;                 // Broadcast: the member holding the slice
  std::vector<size_t> transfers;  // into ShardedGraph::transfers, in the plan's order
  // Where it lies in the plan's transfer order: the number of this graph's transfers made
  // before it (its own come after). In a rank's part, of that part's transfers, so every
  // member places it alike among the transfers it shares with the others (device peers post
  // in that order, engine/device/peers.hpp). kUnplaced: not known (a graph built
  // by hand); the plan wire carries it (engine/dist/plan_wire.hpp).
  static constexpr size_t kUnplaced = SIZE_MAX;
  size_t after = kUnplaced;
};
const char* exchange_kind_name(Exchange::Kind k);  // "broadcast", "all-gather", "all-to-all"

// A slice of a tensor lying on a rank: before the plan (inputs) or after it (results).
struct Shard {
  uint64_t tensor;
  Box box;
  Rank rank;
};

// One entry of a rank's program. Sends are buffered: a rank never waits on its own send;
// a receive waits for the matching send; a combine waits for all its participants.
struct Step {
  enum class Kind : uint8_t { Run, Send, Recv, Combine, Exchange };
  Kind kind;
  size_t index;  // into blocks, transfers, transfers, combines or exchanges
  bool operator==(const Step&) const = default;
};

struct ShardedGraph {
  int num_ranks = 1;
  std::vector<NodeRef> nodes;  // every node the plan names, topological
  std::vector<Shard> initial;  // what each rank holds before the plan starts
  std::vector<Block> blocks;
  std::vector<Transfer> transfers;
  std::vector<Combine> combines;
  std::vector<Exchange> exchanges;
  std::vector<std::vector<Step>> steps;  // per rank, in program order
  std::vector<uint64_t> roots;           // observed or named values
  std::vector<Shard> outputs;            // where the roots' shards lie when the plan ends
  // -1: the whole plan. r: rank r's part of it (plan::lower_rank, restrict_to_rank), whose
  // other ranks' steps are not listed: each rank of a distributed run holds only its own.
  Rank part_of = -1;
  // An out-of-core plan (some Candidate::bands > 1, plan/bands.hpp): each rank runs its program
  // in order (RankProgram::advance), as peak_memory(g, true) counts its memory. Running ahead of
  // a step that waits (a halo's exchange) would run every later band while nothing before the
  // waiting step can be freed.
  bool in_bands = false;

  explicit ShardedGraph(int ranks = 1);

  // Builders that also append the steps, so a plan written in program order is scheduled.
  void hold(uint64_t tensor, Box box, Rank rank);
  size_t add_block(uint64_t node, Box box, Rank rank);                  // Run on `rank`
  size_t add_transfer(uint64_t tensor, Box slice, Rank from, Rank to);  // Send, then Recv
  size_t add_combine(uint64_t node, poly::CombineKind kind, std::vector<size_t> partials, Box out,
                     std::vector<Rank> dest);          // a Combine step on every participant
  void add_output(uint64_t root, Box box, Rank rank);  // also lists the root once
  // A transfer without steps, carried by an exchange (add_exchange lists it there).
  size_t add_exchanged_transfer(uint64_t tensor, Box slice, Rank from, Rank to);
  // An Exchange step on every member; its transfers are added to it as they are made.
  size_t add_exchange(Exchange::Kind kind, uint64_t tensor, std::vector<Rank> members, Rank root = -1);
  // Per transfer: the exchange carrying it, or -1 (a point-to-point transfer with its steps).
  std::vector<int> exchange_of_transfers() const;

  // The ranks a combine involves: those of its partials and its destinations, sorted.
  std::vector<Rank> participants(const Combine& c) const;
  // The node with this id among `nodes`, or nullptr.
  const Node* find(uint64_t id) const;
};

// A readable listing, one rank's program after another (for tp.plan and test failures).
std::string to_string(const ShardedGraph& g);

// What rank r needs of a global plan: its blocks and the partials of the combines it takes part
// in, its transfers (sent or received), those combines, its own steps (other ranks' are empty),
// and all of nodes, initial shards, roots and outputs; indices renumbered in the same order.
ShardedGraph restrict_to_rank(const ShardedGraph& g, Rank r);

}  // namespace tapestry::plan
