// RankProgram's combines (rank_program.hpp): merging the partial results of blocks that split a
// reduction dimension, point to point or as one of the transport's collectives.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/ir/error.hpp"
#include "engine/run/run_block.hpp"
#include "engine/shard/rank_program.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

using poly::Box;

namespace {

// A box's extents followed by the trailing dims of `like` beyond the box's rank.
Shape shape_with_tail(const Box& b, const View& like) {
  Shape s = b.extents();
  for (int d = b.rank(); d < like.rank(); ++d) s.push_back(like.shape[d]);
  return s;
}

}  // namespace

View RankProgram::partial_over(size_t c, size_t p) {
  const plan::Combine& m = g_.combines[c];
  const Box slice = sig(m.node).output_slice(g_.blocks[p].box);
  auto it = partials_.find(p);
  if (it == partials_.end())
    throw InternalError(cat_str("combine ", c, " merges the partial of block ", p, ", which has not run"));
  return window(it->second->view(), slice, intersect(slice, m.out));
}

// Point to point, through the combine's first destination (its root): every other participant
// sends it its partials over `out` (merged into one message where they all cover it), the root
// merges them in the combine's partial order and sends the merged value on to every other
// destination. So every copy of an all-reduce is the same value, and the bytes sent are those
// the plan counts (plan::combine_bytes): one `out` per participant but the root, and one per
// further destination.
bool RankProgram::combine(size_t c) {
  internal_check(c < g_.combines.size());
  if (on_peers_combine(c)) return combine_on_peers(c);
  if (coll_.combines[c].collective) return combine_collective(c);
  const plan::Combine& m = g_.combines[c];
  internal_check(!m.dest.empty());
  const poly::Signature& s = sig(m.node);
  const plan::Rank root = m.dest[0];
  auto region = [&](size_t p) { return intersect(s.output_slice(g_.blocks[p].box), m.out); };
  auto local = [&](size_t p) { return partial_over(c, p); };
  // Whose message stands for partial p at the root: none when it comes with its rank's first.
  auto first_of_rank = [&](size_t p) {
    const plan::Rank r = g_.blocks[p].rank;
    if (!sends_merged(c, r)) return true;
    for (size_t q : m.partials)
      if (g_.blocks[q].rank == r) return q == p;
    return true;
  };
  if (me_ != root && combine_started_.insert(c).second) {
    std::vector<size_t> mine;
    for (size_t p : m.partials) {
      internal_check(p < g_.blocks.size());
      if (g_.blocks[p].rank == me_ && !region(p).empty()) mine.push_back(p);
    }
    if (!mine.empty() && sends_merged(c, me_)) {
      const View merged = contribution(c);
      t_.send(root, comm::tag(comm::TagKind::Partial, partial_tag_.at({c, mine[0], root})), merged);
      combine_bytes_ += plan::slice_bytes(g_, m.node, m.out);
    } else {
      for (size_t p : mine) {
        t_.send(root, comm::tag(comm::TagKind::Partial, partial_tag_.at({c, p, root})), local(p));
        combine_bytes_ += plan::slice_bytes(g_, m.node, region(p));
      }
    }
  }
  if (std::find(m.dest.begin(), m.dest.end(), me_) == m.dest.end()) return true;
  if (me_ != root) {  // another destination: the root's merged value
    std::shared_ptr<Value> v = t_.try_recv(root, comm::tag(comm::TagKind::Partial, result_tag_.at({c, me_})));
    if (!v) return false;
    hold(m.node, m.out, v->view());
    return true;
  }
  // The root: wait for every remote partial; keep the ones that came so far.
  bool all = true;
  for (size_t p : m.partials) {
    const plan::Rank from = g_.blocks[p].rank;
    if (from == me_ || region(p).empty() || !first_of_rank(p) || arrived_.count({c, p})) continue;
    if (auto v = t_.try_recv(from, comm::tag(comm::TagKind::Partial, partial_tag_.at({c, p, me_}))))
      arrived_[{c, p}] = std::move(v);
    else all = false;
  }
  if (!all) return false;
  // The first partial to reach a point initializes it; later ones combine into it.
  std::shared_ptr<Value> acc;
  std::vector<Box> filled;  // disjoint
  for (size_t p : m.partials) {
    Box r = region(p);
    if (r.empty() || (g_.blocks[p].rank != me_ && !first_of_rank(p))) continue;
    View part;
    if (g_.blocks[p].rank == me_) {
      part = local(p);
    } else {
      auto it = arrived_.find({c, p});
      part = it->second->view();
      if (sends_merged(c, g_.blocks[p].rank)) r = m.out;  // all of that rank's partials, merged
      arrived_.erase(it);
    }
    if (!acc) acc = Value::alloc(part.dtype, shape_with_tail(m.out, part));
    for (const Box& f : filled) {
      const Box both = intersect(r, f);
      if (!both.empty()) combine_partials(m.kind, window(acc->v, m.out, both), window(part, r, both));
    }
    for (const Box& u : poly::uncovered(r, filled)) {
      cpu::copy_view(window(part, r, u), window(acc->v, m.out, u));
      filled.push_back(u);
    }
  }
  if (!acc || !poly::covered_by(m.out, filled))
    throw InternalError(
        cat_str("combine ", c, " of %", m.node, ": no partial reaches part of ", poly::to_string(m.out)));
  for (size_t i = 1; i < m.dest.size(); ++i)
    if (m.dest[i] != me_) {
      t_.send(m.dest[i], comm::tag(comm::TagKind::Partial, result_tag_.at({c, m.dest[i]})), acc->view());
      combine_bytes_ += plan::slice_bytes(g_, m.node, m.out);
    }
  hold(m.node, m.out, acc->view());
  return true;
}

// As a collective: every participant contributes its partials over `out` (all of them cover
// it), merged by MPI in its own order. The receiving members wait for the result like for a
// receive; a member that only contributes goes on at once, as after a send.
bool RankProgram::combine_collective(size_t c) {
  if (!coll_.combines[c].scatter.empty()) return combine_scatter(c);
  const plan::Combine& m = g_.combines[c];
  const comm::ReduceSpec& spec = coll_.combines[c].spec;
  auto it = running_.find(c);
  if (it == running_.end()) {
    // MPI does not say what its algorithm sent: the collective counts what the plan does, once.
    if (me_ == spec.group.front()) combine_bytes_ += plan::combine_bytes(g_, m);
    const View in = contribution(c);
    const bool receives = spec.root == comm::kAllMembers || spec.root == me_;
    std::shared_ptr<Value> out = receives ? Value::alloc(in.dtype, in.shape) : nullptr;
    std::unique_ptr<comm::Collective> h = t_.start_reduce(spec, in, out ? out->v : View{});
    if (!receives) {
      trailing_.push_back(std::move(h));
      return true;
    }
    it = running_.emplace(c, Running{std::move(h), std::move(out), nullptr}).first;
  }
  if (!it->second.handle->test()) return false;
  hold(m.node, m.out, it->second.out->view());
  running_.erase(it);
  return true;
}

// A reduce-scatter's combines run as one collective: the first of them this rank reaches
// starts it with its partials over every member's `out`, packed in group order; the combine
// whose destination is this rank waits for its piece, the others are done at once.
bool RankProgram::combine_scatter(size_t c) {
  const comm::CombineRoute& route = coll_.combines[c];
  const size_t first = route.scatter.front();
  auto it = scatters_.find(first);
  if (it == scatters_.end()) {
    if (scatter_done_.count(first)) return true;
    const plan::Combine& mine_c = g_.combines[c];
    const Node& n = node(mine_c.node);
    int64_t total = 0;
    for (int64_t k : route.spec.counts) total += k;
    Running run;
    auto in = Value::alloc(n.dtype, {total});
    int64_t at = 0;
    size_t own = route.scatter.size();
    for (size_t i = 0; i < route.scatter.size(); ++i) {
      const size_t member = route.scatter[i];
      const View piece = contribution(member);
      View dst;
      internal_check(in->v.sliced({at}, {1}, {piece.numel()}).try_reshape(piece.shape, dst));
      cpu::copy_view(piece, dst);
      at += piece.numel();
      if (g_.combines[member].dest[0] == me_) own = i;
    }
    internal_check(at == total && own < route.scatter.size());
    // MPI does not say what its algorithm sent: the collective counts what the plan does, once.
    if (me_ == route.spec.group.front())
      for (size_t member : route.scatter) combine_bytes_ += plan::combine_bytes(g_, g_.combines[member]);
    const plan::Combine& mine_out = g_.combines[route.scatter[own]];
    Shape shape = mine_out.out.extents();
    for (size_t d = static_cast<size_t>(mine_out.out.rank()); d < n.shape.size(); ++d)
      shape.push_back(n.shape[d]);
    run.out = Value::alloc(n.dtype, shape);
    run.handle = t_.start_reduce(route.spec, in->v, run.out->v);
    run.in = std::move(in);
    it = scatters_.emplace(first, std::move(run)).first;
  }
  if (g_.combines[c].dest[0] != me_) return true;  // another member's piece
  if (!it->second.handle->test()) return false;
  hold(g_.combines[c].node, g_.combines[c].out, it->second.out->view());
  scatters_.erase(it);
  scatter_done_.insert(first);
  return true;
}

// This rank's partials of combine c over `out`, merged in plan order (the partial itself
// when it is the only one and contiguous); the merge's identity where it holds none (a
// destination that computed no partial).
View RankProgram::contribution(size_t c) {
  const plan::Combine& m = g_.combines[c];
  const Node& n = node(m.node);
  std::vector<View> mine;
  for (size_t p : m.partials)
    if (g_.blocks[p].rank == me_) mine.push_back(partial_over(c, p));
  if (mine.size() == 1 && mine[0].is_contiguous()) return mine[0];
  Shape shape = m.out.extents();
  for (size_t d = static_cast<size_t>(m.out.rank()); d < n.shape.size(); ++d) shape.push_back(n.shape[d]);
  auto acc = Value::alloc(n.dtype, shape);
  if (mine.empty()) {
    cpu::fill_identity(coll_.combines[c].spec.op, acc->v);
    return acc->v;
  }
  cpu::copy_view(mine[0], acc->v);
  for (size_t i = 1; i < mine.size(); ++i) combine_partials(m.kind, acc->v, mine[i]);
  return acc->v;
}

}  // namespace tapestry
