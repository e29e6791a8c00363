// What each step of a rank's program reads and makes, slice by slice, and from it how long
// each piece a rank holds must stay: what out-of-core plans (bands.hpp) are costed and run by.
//   StepSlices io(g);
//   io.reads(st, r, [](uint64_t t, const Box& b) {...});   // a block's input slices, a send's slice
//   io.makes(st, r, [](uint64_t t, const Box& b) {...});   // a block's output, a received slice
//   for (const PieceLife& p : piece_lives(g, r)) ...       // each piece's first and last step
// A block splitting a reduction makes a partial, not a piece (its combine makes the value), and
// a combine reads partials only: peak_memory.hpp counts those by tensor, as before.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

class StepSlices {
 public:
  explicit StepSlices(const ShardedGraph& g);
  // f(tensor, slice) for each slice step `st` of rank r reads of a tensor's pieces: a block's
  // (non-empty) input slices, a send's slice, what an exchange sends from r.
  template <class F> void reads(const Step& st, Rank r, F&& f);
  // f(tensor, slice) for each piece the step adds on rank r: a block's output (unless partial),
  // a received slice, what an exchange brings to r, a combine's value on its destinations.
  template <class F> void makes(const Step& st, Rank r, F&& f);
  const Node& node(uint64_t id) const;
  const poly::Signature& sig(uint64_t id);

 private:
  const ShardedGraph& g_;
  std::unordered_map<uint64_t, const Node*> nodes_;
  std::unordered_map<uint64_t, poly::Signature> sigs_;
};

// One piece rank r holds during a plan: made at step `first` (or, for a lazily held initial
// shard, first read there) and last read at step `last` (== first when nothing reads it).
struct PieceLife {
  uint64_t tensor = 0;
  Box box;
  size_t first = 0, last = 0;
  int initial = -1;     // index into g.initial: an initial shard held only while read
  bool result = false;  // the box is one of the plan's output shards on r
};

// Rank r's pieces with a lifetime shorter than the plan: every piece its steps make, and each
// initial shard of a node without a value (a stored tensor's piece, which may wait in the shard
// store or on disk until it is read) that some step of r reads and that is not a result there.
// Initial shards of nodes with values and unread ones are held for the whole plan.
std::vector<PieceLife> piece_lives(const ShardedGraph& g, Rank r);

template <class F> void StepSlices::reads(const Step& st, Rank r, F&& f) {
  switch (st.kind) {
    case Step::Kind::Run: {
      const Block& b = g_.blocks[st.index];
      const Node& n = node(b.node);
      const poly::Signature& s = sig(b.node);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const Box in = s.input_slice(i, b.box);
        if (!in.empty()) f(n.inputs[i]->id, in);
      }
      return;
    }
    case Step::Kind::Send: f(g_.transfers[st.index].tensor, g_.transfers[st.index].slice); return;
    case Step::Kind::Exchange: {
      const Exchange& e = g_.exchanges[st.index];
      for (size_t t : e.transfers)
        if (g_.transfers[t].from == r) f(e.tensor, g_.transfers[t].slice);
      return;
    }
    case Step::Kind::Recv:
    case Step::Kind::Combine: return;
  }
}

template <class F> void StepSlices::makes(const Step& st, Rank r, F&& f) {
  switch (st.kind) {
    case Step::Kind::Run: {
      const Block& b = g_.blocks[st.index];
      const poly::Signature& s = sig(b.node);
      if (!s.splits_reduction(b.box)) f(b.node, s.output_slice(b.box));
      return;
    }
    case Step::Kind::Recv: f(g_.transfers[st.index].tensor, g_.transfers[st.index].slice); return;
    case Step::Kind::Exchange: {
      const Exchange& e = g_.exchanges[st.index];
      for (size_t t : e.transfers)
        if (g_.transfers[t].to == r) f(e.tensor, g_.transfers[t].slice);
      return;
    }
    case Step::Kind::Combine: {
      const Combine& c = g_.combines[st.index];
      for (Rank d : c.dest)
        if (d == r) return f(c.node, c.out);
      return;
    }
    case Step::Kind::Send: return;
  }
}

}  // namespace tapestry::plan
