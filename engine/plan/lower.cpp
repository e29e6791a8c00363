#include "engine/plan/lower.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"
#include "engine/plan/piece_index.hpp"

namespace tapestry::plan {

std::vector<Placement> grid_blocks(const poly::Signature& s, const std::vector<int64_t>& parts,
                                   int num_ranks) {
  internal_check(static_cast<int>(parts.size()) == s.rank() && num_ranks >= 1);
  // Piece p of n along an extent e: [p*e/n, (p+1)*e/n - 1], sizes differ by at most one.
  std::vector<Placement> out;
  std::vector<int64_t> idx(parts.size(), 0);
  int next = 0;
  while (true) {
    Box b = s.space_box();
    for (int j = 0; j < s.rank(); ++j) {
      const int64_t e = s.space[j].extent, n = parts[j];
      internal_check(n >= 1 && n <= e);
      b.lo[j] = idx[j] * e / n;
      b.hi[j] = (idx[j] + 1) * e / n - 1;
    }
    out.push_back(Placement{b, next});
    next = (next + 1) % num_ranks;
    int j = s.rank() - 1;
    while (j >= 0 && idx[j] == parts[j] - 1) idx[j--] = 0;
    if (j < 0) break;
    ++idx[j];
  }
  return out;
}

namespace {

class Lowering {
 public:
  Lowering(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
           const std::vector<NodeRef>& roots, int num_ranks)
      : g_(num_ranks), have_(num_ranks), link_busy_(static_cast<size_t>(num_ranks), 0.0) {
    for (const NodeRef& n : topo) {
      shape_of_[n->id] = n->shape;
      for (const NodeRef& in : n->inputs) shape_of_[in->id] = in->shape;
      if (generated_where_read(*n, initial, roots)) on_demand_.insert(n->id);
    }
    for (const Shard& h : initial) {
      g_.hold(h.tensor, h.box, h.rank);
      add_held(h.tensor, h.box, h.rank);
      produced_[h.tensor].push_back(h);
    }
  }

  void node(const NodeRef& n, const std::vector<Placement>& blocks, CombineMode mode) {
    for (const NodeRef& in : n->inputs) list(in);  // leaves outside topo: named, kept alive
    list(n);
    if (blocks.empty()) {
      user_check(produced_.count(n->id) || on_demand_.count(n->id), "node %", n->id, " (", op_def(n->op).name,
                 ") has no blocks and is not held anywhere");
      return;
    }
    const poly::Signature s = poly::signature_of(*n);
    bool split = false;
    for (const Placement& p : blocks) split = split || s.splits_reduction(p.box);
    std::vector<size_t> ids;
    // Every block's inputs are sent before any block runs: a rank that holds what another
    // needs must not compute its own block first (W8: the other rank would wait for it).
    for (const Placement& p : blocks)
      for (size_t i = 0; i < n->inputs.size(); ++i) fetch(n->inputs[i]->id, s.input_slice(i, p.box), p.rank);
    for (const Placement& p : blocks) {
      ids.push_back(g_.add_block(n->id, p.box, p.rank));
      if (!split) produce(n->id, s.output_slice(p.box), p.rank);
    }
    if (split) combine(n, s, ids, mode);
  }

  ShardedGraph finish(const std::vector<NodeRef>& roots) {
    for (const NodeRef& r : roots) {
      // Leaves may be held several times over: keep one copy of each element.
      std::vector<Box> taken;
      for (const Shard& p : produced_[r->id]) {
        for (const Box& piece : poly::uncovered(p.box, taken)) g_.add_output(r->id, piece, p.rank);
        taken.push_back(p.box);
      }
      if (produced_[r->id].empty()) g_.roots.push_back(r->id);  // verify reports it
    }
    send_held_data_first();
    post_sends_before_receives();
    return std::move(g_);
  }

 private:
  // A send of data its rank held before the plan started depends on nothing, and sends are
  // buffered, so it moves to the front of the sender's program: the receiver need not wait
  // for the sender's earlier blocks (W8: a bias sent after rank 0's whole matmul). The order
  // of everything else, receives included, is unchanged.
  void send_held_data_first() {
    std::unordered_map<uint64_t, std::vector<const Shard*>> initial;
    for (const Shard& h : g_.initial) initial[h.tensor].push_back(&h);
    auto held_from_start = [&](const Transfer& t) {
      auto it = initial.find(t.tensor);
      if (it == initial.end()) return false;
      for (const Shard* h : it->second)
        if (h->rank == t.from && h->box.contains(t.slice)) return true;
      return false;
    };
    for (std::vector<Step>& steps : g_.steps)
      std::stable_partition(steps.begin(), steps.end(), [&](const Step& st) {
        return st.kind == Step::Kind::Send && held_from_start(g_.transfers[st.index]);
      });
  }

  // Within each run of transfers between two computations of a rank, its sends go before its
  // receives (sends are buffered, so they never wait): a redistribution then proceeds on every
  // rank at once, where receive-then-send would pass it down a chain of ranks (an all-to-all
  // among p ranks took p rounds). A send of data received in the same run (a relay) stays
  // after that receive.
  void post_sends_before_receives() {
    for (Rank r = 0; r < g_.num_ranks; ++r) {
      std::vector<Step>& steps = g_.steps[static_cast<size_t>(r)];
      const auto is_comm = [](const Step& st) {
        return st.kind == Step::Kind::Send || st.kind == Step::Kind::Recv;
      };
      for (auto begin = steps.begin(); begin != steps.end();) {
        if (!is_comm(*begin)) {
          ++begin;
          continue;
        }
        auto end = std::find_if_not(begin, steps.end(), is_comm);
        std::vector<const Transfer*> received;  // receives of this run before the step looked at
        std::vector<Step> early, late;
        for (auto it = begin; it != end; ++it) {
          const Transfer& t = g_.transfers[it->index];
          if (it->kind == Step::Kind::Recv) {
            received.push_back(&t);
            late.push_back(*it);
            continue;
          }
          const bool relay = std::any_of(received.begin(), received.end(), [&](const Transfer* u) {
            return u->tensor == t.tensor && meet(u->slice, t.slice);
          });
          (relay ? late : early).push_back(*it);
        }
        std::copy(late.begin(), late.end(), std::copy(early.begin(), early.end(), begin));
        begin = end;
      }
    }
  }

  void list(const NodeRef& n) {
    if (listed_.insert(n->id).second) g_.nodes.push_back(n);
  }

  void produce(uint64_t t, const Box& box, Rank r) {
    add_held(t, box, r);
    produced_[t].push_back(Shard{t, box, r});
  }

  void add_held(uint64_t t, const Box& box, Rank r) {
    have_[r][t].push_back(box);
    index(t).add(box, r);
  }

  PieceIndex& index(uint64_t t) {
    auto it = where_.find(t);
    if (it != where_.end()) return it->second;
    auto shape = shape_of_.find(t);
    internal_check(shape != shape_of_.end());  // every tensor a plan names is in topo or feeds it
    return where_.emplace(t, PieceIndex(shape->second)).first->second;
  }

  static bool meet(const Box& a, const Box& b) {
    for (int d = 0; d < a.rank(); ++d)
      if (std::max(a.lo[d], b.lo[d]) > std::min(a.hi[d], b.hi[d])) return false;
    return true;
  }

  // A slice some ranks hold whole comes from the holder that can start sending it first: the
  // holders it was made or held on, and the ranks it already reached, whose links each send one
  // message at a time. Many ranks fetching the same slice then form a binomial tree (the number
  // of holders doubles every round) instead of a star whose root sends every copy.
  bool relay(uint64_t t, const Box& m, Rank to) {
    const double bytes = static_cast<double>(m.volume());
    Rank best = -1;
    double best_start = 0;
    for (const PieceIndex::Piece* p : index(t).overlapping(m)) {
      if (p->rank == to || p->rank == best || !p->box.contains(m)) continue;
      auto r = ready_[t].find(p->rank);
      const double start = std::max(r == ready_[t].end() ? 0.0 : r->second, link_busy_[p->rank]);
      if (best < 0 || start < best_start) best = p->rank, best_start = start;
    }
    if (best < 0) return false;
    g_.add_transfer(t, m, best, to);
    link_busy_[best] = best_start + bytes;
    ready_[t][to] = best_start + bytes;
    add_held(t, m, to);
    return true;
  }

  // Brings the parts of `need` that rank `to` lacks, piece by piece from the lowest rank
  // holding each piece. Only the pieces near `need` are visited (PieceIndex): on a big mesh
  // most ranks hold nothing of it.
  void fetch(uint64_t t, const Box& need, Rank to) {
    if (need.empty()) return;
    auto mine = have_[to].find(t);
    std::vector<Box> missing =
        mine == have_[to].end() ? std::vector<Box>{need} : poly::uncovered(need, mine->second);
    if (missing.empty()) return;
    if (on_demand_.count(t)) {  // a generator: the reader computes what it lacks
      for (const Box& m : missing) {
        g_.add_block(t, m, to);
        add_held(t, m, to);
      }
      return;
    }
    if (missing.size() == 1 && relay(t, missing[0], to)) return;
    std::vector<Box> arrived;  // added once the scan is over: `to` is skipped by it anyway
    for (const PieceIndex::Piece* p : index(t).overlapping(need)) {
      if (missing.empty()) break;
      if (p->rank == to) continue;
      const Box& h = p->box;
      bool any = false;
      for (const Box& m : missing) any = any || meet(m, h);
      if (!any) continue;
      std::vector<Box> still;
      for (const Box& m : missing) {
        if (!meet(m, h)) {
          still.push_back(m);
          continue;
        }
        const Box part = intersect(m, h);
        g_.add_transfer(t, part, p->rank, to);
        arrived.push_back(part);
        for (const Box& rest : poly::subtract(m, part)) still.push_back(rest);
      }
      missing = std::move(still);
    }
    for (const Box& b : arrived) add_held(t, b, to);
    user_check(missing.empty(), "slice ", to_string(missing.empty() ? need : missing[0]), " of node %", t,
               " lies on no rank");
  }

  void combine(const NodeRef& n, const poly::Signature& s, const std::vector<size_t>& ids, CombineMode mode) {
    // Group the partials by output slice; a regular grid gives equal-or-disjoint slices.
    std::vector<std::pair<Box, std::vector<size_t>>> groups;
    for (size_t b : ids) {
      const Box out = s.output_slice(g_.blocks[b].box);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& gr) { return gr.first == out; });
      if (it == groups.end()) groups.push_back({out, {b}});
      else it->second.push_back(b);
    }
    bool regular = true;
    for (size_t i = 0; i < groups.size(); ++i)
      for (size_t k = i + 1; k < groups.size(); ++k)
        regular = regular && !overlaps(groups[i].first, groups[k].first);
    if (!regular) groups = {{Box::of_shape(n->shape), ids}};
    for (const auto& [out, partials] : groups) {
      std::vector<Rank> holders;  // the ranks with a partial of this slice, in block order
      for (size_t b : partials)
        if (std::find(holders.begin(), holders.end(), g_.blocks[b].rank) == holders.end())
          holders.push_back(g_.blocks[b].rank);
      if (mode == CombineMode::AllReduce) {
        g_.add_combine(n->id, s.combine(), partials, out, holders);
        for (Rank d : holders) produce(n->id, out, d);
      } else if (mode == CombineMode::ReduceScatter && out.rank() > 0) {
        int dim = 0;
        for (int d = 1; d < out.rank(); ++d)
          if (out.extent(d) > out.extent(dim)) dim = d;
        const int64_t e = out.extent(dim), k = std::min<int64_t>(e, static_cast<int64_t>(holders.size()));
        for (int64_t i = 0; i < k; ++i) {
          Box piece = out;
          piece.lo[dim] = out.lo[dim] + i * e / k;
          piece.hi[dim] = out.lo[dim] + (i + 1) * e / k - 1;
          std::vector<size_t> reach;  // the partials this piece needs: all of them, as they cover `out`
          for (size_t b : partials)
            if (overlaps(s.output_slice(g_.blocks[b].box), piece)) reach.push_back(b);
          g_.add_combine(n->id, s.combine(), reach, piece, {holders[static_cast<size_t>(i)]});
          produce(n->id, piece, holders[static_cast<size_t>(i)]);
        }
      } else {
        const Rank dest = g_.blocks[partials[0]].rank;
        g_.add_combine(n->id, s.combine(), partials, out, {dest});
        produce(n->id, out, dest);
      }
    }
  }

  ShardedGraph g_;
  std::vector<std::unordered_map<uint64_t, std::vector<Box>>> have_;
  // have_ again, by tensor and box: a fetch visits only the pieces near the slice it needs.
  std::unordered_map<uint64_t, PieceIndex> where_;
  std::unordered_map<uint64_t, Shape> shape_of_;
  std::unordered_set<uint64_t> on_demand_;  // generated where read (generated_where_read)
  // relay(): when a rank that received a tensor's slice has it (in bytes sent before, a proxy
  // for time), and how many bytes each rank's link has been given to send.
  std::unordered_map<uint64_t, std::unordered_map<Rank, double>> ready_;
  std::vector<double> link_busy_;
  std::unordered_map<uint64_t, std::vector<Shard>> produced_;  // final pieces, in order
  std::unordered_set<uint64_t> listed_;
};

}  // namespace

bool generated_where_read(const Node& n, const std::vector<Shard>& initial,
                          const std::vector<NodeRef>& roots) {
  if (op_kind(n.op) != OpKind::Generate) return false;
  for (const NodeRef& r : roots)
    if (r->id == n.id) return false;
  for (const Shard& h : initial)
    if (h.tensor == n.id) return false;
  return true;
}

const char* combine_mode_name(CombineMode m) {
  switch (m) {
    case CombineMode::Reduce: return "reduce";
    case CombineMode::AllReduce: return "all-reduce";
    case CombineMode::ReduceScatter: return "reduce-scatter";
  }
  return "?";
}

ShardedGraph lower(const std::vector<NodeRef>& topo, const Assignment& blocks,
                   const std::vector<Shard>& initial, const std::vector<NodeRef>& roots, int num_ranks,
                   const CombineModes& modes) {
  Lowering l(topo, initial, roots, num_ranks);
  static const std::vector<Placement> none;
  for (const NodeRef& n : topo) {
    auto it = blocks.find(n->id);
    auto mode = modes.find(n->id);
    l.node(n, it == blocks.end() ? none : it->second,
           mode == modes.end() ? CombineMode::Reduce : mode->second);
  }
  return l.finish(roots);
}

}  // namespace tapestry::plan
