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
};

// A slice of a tensor lying on a rank: before the plan (inputs) or after it (results).
struct Shard {
  uint64_t tensor;
  Box box;
  Rank rank;
};

// One entry of a rank's program. Sends are buffered: a rank never waits on its own send;
// a receive waits for the matching send; a combine waits for all its participants.
struct Step {
  enum class Kind : uint8_t { Run, Send, Recv, Combine };
  Kind kind;
  size_t index;  // into blocks, transfers, transfers or combines
  bool operator==(const Step&) const = default;
};

struct ShardedGraph {
  int num_ranks = 1;
  std::vector<NodeRef> nodes;  // every node the plan names, topological
  std::vector<Shard> initial;  // what each rank holds before the plan starts
  std::vector<Block> blocks;
  std::vector<Transfer> transfers;
  std::vector<Combine> combines;
  std::vector<std::vector<Step>> steps;  // per rank, in program order
  std::vector<uint64_t> roots;           // observed or named values
  std::vector<Shard> outputs;            // where the roots' shards lie when the plan ends
  // -1: the whole plan. r: rank r's part of it (plan::lower_rank, restrict_to_rank), whose
  // other ranks' steps are not listed: each rank of a distributed run holds only its own.
  Rank part_of = -1;

  explicit ShardedGraph(int ranks = 1);

  // Builders that also append the steps, so a plan written in program order is scheduled.
  void hold(uint64_t tensor, Box box, Rank rank);
  size_t add_block(uint64_t node, Box box, Rank rank);                  // Run on `rank`
  size_t add_transfer(uint64_t tensor, Box slice, Rank from, Rank to);  // Send, then Recv
  size_t add_combine(uint64_t node, poly::CombineKind kind, std::vector<size_t> partials, Box out,
                     std::vector<Rank> dest);          // a Combine step on every participant
  void add_output(uint64_t root, Box box, Rank rank);  // also lists the root once

  // The ranks a combine involves: those of its partials and its destinations, sorted.
  std::vector<Rank> participants(const Combine& c) const;
  // The node with this id among `nodes`, or nullptr.
  const Node* find(uint64_t id) const;
};

// A readable listing, one rank's program after another (for tp.plan and test failures).
std::string to_string(const ShardedGraph& g);

}  // namespace tapestry::plan
