// The per-op estimate behind search by estimate (estimate.hpp): an op as one candidate, priced
// from a sample of its blocks given where its producers' picks put its inputs.
//   op_estimate::Model md(mesh);  /* fill ops, sigs, cands, in, pick */
//   const op_estimate::Model::OpEstimate e = md.detail(i, c);   // e.time, e.moved, e.compute
// The comm side prices the moves lower() builds (lower.hpp) as cost_of() does: broadcast
// exchanges by their collective's formula, queued on their root's link and waiting on the
// trees their roots read first; direct all-gathers, grouped trees and their exchange, gathers
// and halos, where each missing box counts a message per source piece and a holder's messages
// queue on its link.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/plan/cost.hpp"
#include "engine/plan/estimate.hpp"
#include "engine/plan/search.hpp"

namespace tapestry::plan {

namespace op_estimate {

// Blocks sampled per candidate: the first and last few carry the uneven pieces and the ranks
// at the ends of the mesh; the rest are spread evenly between them.
constexpr int64_t kSamples = 24;
// The greedy start's lookahead prices every candidate of every user for every candidate of
// each op (about 20 x 20 per edge on a big mesh): it takes fewer samples, the ends and two
// between, enough to rank the users' responses.
constexpr int64_t kLookaheadSamples = 4;
// Joint moves in a row without a gain before the refinement on the estimate gives up.
constexpr size_t kPatience = 32;

// Where an op's input comes from: an earlier op (its chosen candidate) or a tensor held in `initial`.
struct Source {
  int op = -1;
  uint64_t tensor = 0;
  double generate_flops = -1;  // >= 0: generated where read (flops per element), never moved
};

struct Model {
  const Mesh& m;
  const Link& link;  // of a typical pair of ranks: the network once the mesh spans nodes
  std::vector<NodeRef> ops;
  std::vector<poly::Signature> sigs;
  std::vector<std::vector<Candidate>> cands;
  std::vector<std::vector<Source>> in;  // per op, per input
  std::vector<std::vector<int>> users;  // per op: the later ops reading it, each once
  std::vector<char> after_an_op;        // per op: whether it reads an earlier op's output
  std::unordered_map<uint64_t, std::vector<std::pair<Rank, Box>>> held;  // initial, by rank
  std::unordered_map<uint64_t, int> holders;                             // distinct ranks
  std::vector<int> pick;
  double held_peak = 0;  // the largest bytes of `initial` on one rank
  // Per op: the first op with the same signature, input and output shapes and dtypes and
  // candidates, whose sampled blocks, copies and cuts it reads (they depend on nothing else):
  // the 1,000 ops of a repeated layer compute 5 ops' worth. Empty: every op its own.
  std::vector<int> shares;
  std::vector<std::string> keys;  // per op: what its global-stage tables depend on (estimate.cpp)
  size_t shared(size_t i) const { return shares.empty() ? i : static_cast<size_t>(shares[i]); }

  explicit Model(const Mesh& mesh)
      : m(mesh), link(mesh.ranks > mesh.ranks_per_node ? mesh.inter : mesh.intra) {}

  int64_t blocks(const Candidate& c) const { return c.block_count(m.ranks); }

  // The pieces of `s` that rank r holds once its producer has run, as lower() leaves them: a
  // split reduction's combined slices on the rank of their first partial (reduce), on every rank
  // of a partial (all-reduce), or in equal pieces along the slice's longest dim, one per such
  // rank in block order (reduce-scatter).
  void held_by(const Source& s, Rank r, std::vector<Box>& out) const;

  // The ranks holding a source once its producer has run (held_by's pieces).
  int holder_count(const Source& s) const;

  // Op i run as its candidate c, given its producers' picks: the estimated time (what the
  // search minimizes) and, scaled from the sampled blocks to all of them, its flops, the bytes
  // it moves, and what its blocks leave on a rank.
  struct OpEstimate {
    double time = 0, flops = 0, moved = 0;
    double block_bytes = 0;  // per block on average: its output plus the slices it received
    double compute = 0;      // the busiest sampled block's compute (its inputs generated included)
    // What of `time` is a held tensor's sends from its holder (as if they started with the op),
    // the holder program's per-message overhead among them, and how much of that the time would
    // lose without them, less the overhead (none where a block's own receives take longer):
    // totals() starts them with the plan instead, queued on the holder's link.
    double held_sends = 0, held_slack = 0, held_overhead = 0;
    bool moves_outputs = false;  // it moves an earlier op's output between ranks
    int64_t blocks = 0;
  };

  // A sampled block of op i as candidate c: what does not depend on the other ops' picks,
  // computed once, since the greedy lookahead prices the same candidates over and over.
  struct Sample {
    Rank rank;
    double compute, flops, output_bytes;
    bool partial;           // it splits a reduction dim
    std::vector<Box> need;  // per input: the slice it reads
  };
  mutable std::vector<std::vector<std::vector<Sample>>> samples_full, samples_ahead;  // [op][candidate]
  mutable std::vector<std::vector<std::vector<double>>> copies_cache;  // [op][candidate][input]

  // Where a source's pieces start along each of its dims (sorted), as held_by cuts it: a box
  // spans as many pieces as the product of the pieces it meets along each dim, and lower()
  // sends one message per piece (an all-gather of 64 pieces is 63 messages to each reader).
  using Cuts = std::vector<std::vector<int64_t>>;
  mutable std::vector<std::vector<Cuts>> cuts_cache;  // [op][candidate]
  mutable std::unordered_map<uint64_t, Cuts> held_cuts;
  const Cuts& cuts_of(const Source& src) const;

  // How many pieces of `src` the box meets (cuts_of).
  double pieces_in(const Source& src, const Box& box) const;

  // Per input of op i as candidate c: how many blocks read each distinct slice of it (the
  // product of the parts of the index dims it does not depend on: a weight every row block
  // reads whole has as many readers as row blocks).
  const std::vector<double>& copies(size_t i, size_t c) const;
  // Per input of op i as candidate c: the least distance in rank between two blocks reading the
  // same slice of it (the block-index stride of the innermost such index dim; 0 if none).
  mutable std::vector<std::vector<std::vector<int64_t>>> strides_cache;  // [op][candidate][input]
  const std::vector<int64_t>& reader_strides(size_t i, size_t c) const;
  // The link an exchange of input j's slices runs over, as cost_of() takes it: the slowest
  // between its members for a message of `bytes`. Readers a stride under a node apart share a
  // node, so the node-local link is among them (slower than the network at 5 GB/s for all
  // but the smallest messages).
  const Link& exchange_link(size_t i, size_t c, size_t j, double bytes) const;

  // The ranks holding the pieces of an earlier op's output that `need` meets, in row-major
  // order (a reduction's on its first partial's rank), as lower() roots trees at them; empty for
  // a held tensor, a replicated op or a reduce-scatter.
  void pieces_of(const Source& src, const Box& need, std::vector<Rank>& out) const;
  // An op's pieces as its pick cuts them: per index dim, the output dim its pieces move along
  // and where each piece starts there (pieces_of's lookups).
  struct Grid {
    struct Dim {
      int out_dim = -1;
      std::vector<int64_t> starts;
    };
    std::vector<Dim> dims;
    bool usable = true;  // not replicated, not reduce-scattered, pieces in order
  };
  mutable std::unordered_map<uint64_t, Grid> grids_cache;  // by shared op and pick
  const Grid& grid_of(size_t o) const;
  mutable std::vector<int64_t> range_, at_;  // pieces_of's scratch
  // How many broadcasts deep the longest wait runs among the trees of input j of op i as
  // candidate c: lower() emits an input's trees in the order of their first readers, and a
  // rank is a member of its exchanges in that order, so a tree whose root reads an earlier
  // tree of the same input starts when that one is done (a chain of them, when the source is
  // an earlier op's output spread over the same ranks that read it). 0 for held tensors.
  double tree_chain(size_t i, size_t c, size_t j) const;
  mutable std::map<std::array<uint64_t, 5>, double> chain_cache;  // by op, candidate, input, source, its pick

  const std::vector<Sample>& sampled(size_t i, size_t c, int64_t samples) const;

  // The objective of op i as candidate c: its time, plus its bytes at bytes_weight (weigh()).
  double bytes_weight = 0;
  double estimate(size_t i, size_t c, int64_t samples = kSamples) const {
    const OpEstimate e = detail(i, c, samples);
    return e.time + bytes_weight * e.moved;
  }

  // When the last of q messages of `bytes` in all, sent one after another by one rank, has
  // arrived, as cost_of() simulates it: the sender's program pays each message's overhead, its
  // link carries one message at a time, and the last then crosses the wire.
  double sender_time(double q, double bytes) const;

  OpEstimate detail(size_t i, size_t c, int64_t samples = kSamples) const;

  // Scratch of detail(), kept between calls (it runs millions of times on a big graph).
  mutable std::vector<double> per_input_;
  mutable std::vector<Box> mine_;

  // The plan's cost as estimated for the current picks: the time is the search's objective
  // (ops one after another), the peak the held inputs plus every op's blocks on the busiest
  // rank, nothing freed -- the same upper bound cost_of() computes exactly.
  PlanCost totals() const;
  // The same from each op's detail(i, pick[i]), already at hand.
  PlanCost totals(const std::vector<OpEstimate>& per_op) const;
};

}  // namespace op_estimate
}  // namespace tapestry::plan
