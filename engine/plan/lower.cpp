#include "engine/plan/lower.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"
#include "engine/plan/bands.hpp"
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

// Hashes a box by its bounds, to group blocks that read the same slice.
struct BoxHash {
  size_t operator()(const Box& b) const {
    uint64_t h = 1469598103934665603ull;
    for (int d = 0; d < b.rank(); ++d)
      for (int64_t v : {b.lo[d], b.hi[d]}) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Position i of a binomial tree over a list receives from position i minus its highest set bit:
// the holders double every round, and each rank finds its parent and children by arithmetic.
size_t tree_parent(size_t i) {
  size_t high = 1;
  while (high * 2 <= i) high *= 2;
  return i - high;
}

// The round in which position i of a binomial tree receives: one per set bit (its parent, i
// minus its highest bit, has one fewer).
int tree_round(size_t i) { return __builtin_popcountll(static_cast<unsigned long long>(i)); }

// The combine of one output slice of a split reduction, over block positions of its node.
struct PlannedCombine {
  Box out;
  std::vector<size_t> partials;  // positions in the node's blocks
  std::vector<Rank> dest;
};

// One lowering, of every rank (me = -1) or of one rank's part (lower_rank). Every decision is
// the same in both: the per-rank lowering keeps the cheap bookkeeping of every rank (which block
// reads which slice, where each piece was made) and works out transfers, combines and steps only
// where `me` sends, receives or computes, so its output is the global one restricted to `me`.
class Lowering {
 public:
  Lowering(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
           const std::vector<NodeRef>& roots, int num_ranks, Rank me)
      : g_(num_ranks), me_(me) {
    for (const NodeRef& n : topo) {
      shape_of_[n->id] = n->shape;
      for (const NodeRef& in : n->inputs) shape_of_[in->id] = in->shape;
      if (generated_where_read(*n, initial, roots)) on_demand_.insert(n->id);
    }
    for (const Shard& h : initial) {
      g_.hold(h.tensor, h.box, h.rank);
      produce(h.tensor, h.box, h.rank);
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
    // Every block's inputs are sent before any block runs: a rank that holds what another
    // needs must not compute its own block first (W8: the other rank would wait for it).
    for (size_t i = 0; i < n->inputs.size(); ++i) fetch_input(n->inputs[i]->id, s, i, blocks);
    std::vector<PlannedCombine> combines;
    if (split) combines = plan_combines(n, s, blocks, mode);
    // The blocks this lowering lists: its own, and the partials of the combines it takes part in.
    std::vector<char> listed(blocks.size(), 0);
    for (size_t k = 0; k < blocks.size(); ++k) listed[k] = mine(blocks[k].rank);
    for (const PlannedCombine& c : combines)
      if (involves(c, blocks))
        for (size_t k : c.partials) listed[k] = 1;
    std::vector<size_t> ids(blocks.size(), 0);
    for (size_t k = 0; k < blocks.size(); ++k) {
      const Placement& p = blocks[k];
      if (listed[k] && mine(p.rank)) ids[k] = g_.add_block(n->id, p.box, p.rank);
      else if (listed[k]) g_.blocks.push_back(Block{n->id, p.box, p.rank}), ids[k] = g_.blocks.size() - 1;
      if (!split) produce(n->id, s.output_slice(p.box), p.rank);
    }
    if (blocks.size() > 1 && !split && blocks[0].box == blocks[1].box) replicated_.insert(n->id);
    for (const PlannedCombine& c : combines) {
      for (Rank d : c.dest) produce(n->id, c.out, d);
      if (!involves(c, blocks)) continue;
      std::vector<size_t> partials;
      for (size_t k : c.partials) partials.push_back(ids[k]);
      g_.add_combine(n->id, s.combine(), std::move(partials), c.out, c.dest);
    }
  }

  ShardedGraph finish(const std::vector<NodeRef>& roots) {
    for (const NodeRef& r : roots) {
      // A replicated op's result keeps every copy (a named tensor stays where each rank reads
      // it); leaves may be held several times over: keep one copy of each element.
      PieceIndex taken(r->shape);
      for (const Shard& p : produced_[r->id]) {
        if (replicated_.count(r->id)) {
          g_.add_output(r->id, p.box, p.rank);
          continue;
        }
        std::vector<Box> near;
        for (const PieceIndex::Piece* q : taken.overlapping(p.box)) near.push_back(q->box);
        for (const Box& piece : poly::uncovered(p.box, near)) g_.add_output(r->id, piece, p.rank);
        taken.add(p.box, 0);
      }
      if (produced_[r->id].empty()) g_.roots.push_back(r->id);  // verify reports it
    }
    if (me_ >= 0)  // the peers' halves of this rank's transfers are theirs to schedule
      for (Rank r = 0; r < g_.num_ranks; ++r)
        if (r != me_) g_.steps[static_cast<size_t>(r)].clear();
    send_held_data_first();
    post_sends_before_receives();
    return std::move(g_);
  }

 private:
  bool mine(Rank r) const { return me_ < 0 || r == me_; }

  bool involves(const PlannedCombine& c, const std::vector<Placement>& blocks) const {
    if (me_ < 0) return true;
    for (Rank d : c.dest)
      if (d == me_) return true;
    for (size_t k : c.partials)
      if (blocks[k].rank == me_) return true;
    return false;
  }

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

  // A piece of t made or held on rank r before any transfer: a sender of what others lack.
  void produce(uint64_t t, const Box& box, Rank r) {
    index(t).add(box, r);
    remember(t, box, r);
    if (r == me_) my_sources_[t].push_back(box);
    produced_[t].push_back(Shard{t, box, r});
  }

  // Rank r holds `box` of t from now on (made, held, received or generated there).
  void remember(uint64_t t, const Box& box, Rank r) {
    std::vector<std::vector<Box>>& per_rank = have_[t];
    if (per_rank.empty()) per_rank.resize(static_cast<size_t>(g_.num_ranks));
    std::vector<Box>& v = per_rank[static_cast<size_t>(r)];
    if (std::find(v.begin(), v.end(), box) == v.end()) v.push_back(box);
  }

  std::vector<Box> missing(uint64_t t, const Box& want, Rank r) const {
    auto it = have_.find(t);
    return it == have_.end() ? std::vector<Box>{want}
                             : poly::uncovered(want, it->second[static_cast<size_t>(r)]);
  }

  PieceIndex& index(uint64_t t) {
    auto it = sources_.find(t);
    if (it != sources_.end()) return it->second;
    auto shape = shape_of_.find(t);
    internal_check(shape != shape_of_.end());  // every tensor a plan names is in topo or feeds it
    return sources_.emplace(t, PieceIndex(shape->second)).first->second;
  }

  static bool meet(const Box& a, const Box& b) {
    for (int d = 0; d < a.rank(); ++d)
      if (std::max(a.lo[d], b.lo[d]) > std::min(a.hi[d], b.hi[d])) return false;
    return true;
  }

  // Brings slice i of every block's input t. Blocks reading the same slice form a group, in
  // order of their first block. A group's slice that one piece made or held before the plan
  // contains whole (the lowest rank's such piece) travels down a binomial tree over that holder
  // and the group's ranks in rank order; otherwise so does its part in each such piece, from
  // that piece's rank (one reader fetches the parts it lacks from the lowest rank holding each). A
  // generator's slice is computed by each reader. Either way the senders follow from the slice and the
  // producers' pieces alone, so every rank works out its own transfers without simulating the others'.
  void fetch_input(uint64_t t, const poly::Signature& s, size_t i, const std::vector<Placement>& blocks) {
    std::vector<Box> need;
    need.reserve(blocks.size());
    std::vector<std::vector<size_t>> groups;
    std::unordered_map<Box, size_t, BoxHash> group_of;
    for (size_t k = 0; k < blocks.size(); ++k) {
      need.push_back(s.input_slice(i, blocks[k].box));
      auto [it, fresh] = group_of.emplace(need.back(), groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(k);
    }
    AllToAll a2a;
    a2a.open = g_.num_ranks <= static_cast<int>(kMaxAllToAllMembers);
    for (const std::vector<size_t>& ks : groups) {
      const Box& want = need[ks[0]];
      if (want.empty()) continue;
      if (on_demand_.count(t)) {
        for (size_t k : ks) generate(t, want, blocks[k].rank);
        continue;
      }
      // The kind of move follows from the slice and the pieces alone, so every rank classifies
      // every group alike (the all-to-all below needs every rank's gathers); `involved` only
      // spares a rank the transfers it takes no part in.
      const bool in = involved(t, want, ks, blocks);
      if (!in && !a2a.open) {
        for (size_t k : ks) remember(t, want, blocks[k].rank);
        continue;
      }
      const PieceIndex::Piece* root = whole_source(t, want);
      const bool gather = !root && !several_ranks(ks, blocks);
      std::vector<Gathered> plan;
      bool planned = false;
      if (gather && a2a.open) {
        const Rank to = blocks[ks[0]].rank;
        if (a2a.pos == SIZE_MAX) a2a.pos = pending_.size();
        plan = gather_plan(t, want, to);
        planned = true;
        a2a.readers.insert(to);
        for (const Gathered& x : plan) a2a.pairs.insert({x.from, to}), a2a.members.insert(x.from);
        a2a.members.insert(to);
        a2a.open = a2a.readers.size() <= kMaxAllToAllMembers;
      }
      if (!in) {
        for (size_t k : ks) remember(t, want, blocks[k].rank);
      } else if (root) {
        broadcast(t, want, root->rank, ks, blocks);
      } else if (!gather) {
        broadcast_pieces(t, want, ks, blocks);
      } else {
        const size_t before = pending_.size();
        gather_pieces(t, want, blocks[ks[0]].rank, planned ? &plan : nullptr);
        for (size_t at = before; at < pending_.size(); ++at) a2a.sends.push_back(at);
      }
    }
    close_all_to_all(t, a2a);
    emit_pending();
  }

  // A redistribution among a group of ranks each of which sends a slice to every other (rows
  // to columns) is one all-to-all: the gathers of one input, if dense. Deciding it needs every
  // rank's gathers (each rank computes them all, whether it takes part or not), so it is tried
  // only on meshes of up to kMaxAllToAllMembers ranks; beyond, the slices move point to point.
  static constexpr size_t kMaxAllToAllMembers = 256;
  struct AllToAll {
    bool open = true;
    size_t pos = SIZE_MAX;      // where in pending_ its first gather's transfers went
    std::vector<size_t> sends;  // pending_ entries of the gathers' transfers (this rank's)
    std::set<Rank> readers, members;
    std::set<std::pair<Rank, Rank>> pairs;
  };

  void close_all_to_all(uint64_t t, const AllToAll& a) {
    const size_t p = a.members.size();
    if (!a.open || p < 2 || a.pairs.size() != p * (p - 1)) return;
    std::vector<Rank> members(a.members.begin(), a.members.end());
    const int ex = open_exchange(Exchange::Kind::AllToAll, t, std::move(members), -1);
    if (ex < 0) return;
    for (size_t i : a.sends) pending_[i].exchange = ex;
    Pending marker{t, Box{}, 0, 0, 1, ex, true};
    pending_.insert(pending_.begin() + static_cast<std::ptrdiff_t>(std::min(a.pos, pending_.size())),
                    std::move(marker));
  }

  // An exchange of the input being fetched, made when its marker is emitted (emit_pending).
  // -1 when this lowering is of one rank that is not a member (it then has none of its
  // transfers either).
  int open_exchange(Exchange::Kind kind, uint64_t t, std::vector<Rank> members, Rank root) {
    if (me_ >= 0 && !std::binary_search(members.begin(), members.end(), me_)) return -1;
    open_.push_back(Open{kind, t, std::move(members), root, SIZE_MAX});
    return static_cast<int>(open_.size() - 1);
  }
  // The same, with its marker now: its first transfer goes out in round 1.
  int begin_exchange(Exchange::Kind kind, uint64_t t, std::vector<Rank> members, Rank root) {
    const int ex = open_exchange(kind, t, std::move(members), root);
    if (ex >= 0) pending_.push_back(Pending{t, Box{}, 0, 0, 1, ex, true});
    return ex;
  }

  // Whether none of `ranks` holds any of `want` of t: each then receives all of it.
  bool lack(uint64_t t, const Box& want, const std::vector<Rank>& ranks) const {
    auto it = have_.find(t);
    if (it == have_.end()) return true;
    for (Rank r : ranks)
      for (const Box& b : it->second[static_cast<size_t>(r)])
        if (meet(b, want)) return false;
    return true;
  }

  // The transfers of one input go out round by round over all its trees: a relay's receives of
  // round k all come before its sends of round k + 1 and its receives of round k + 1, so no rank
  // waits for a late piece of one tree before forwarding an early piece of another (tree by tree,
  // the ranks of an all-gather finished in a staircase, one message time apart).
  // An exchange's Exchange step goes where its marker is (before its first transfer), and its
  // transfers are listed in it, without steps of their own.
  void emit_pending() {
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const Pending& a, const Pending& b) { return a.round < b.round; });
    for (const Pending& p : pending_) {
      if (p.exchange < 0) {
        g_.add_transfer(p.tensor, p.slice, p.from, p.to);
        continue;
      }
      Open& o = open_[static_cast<size_t>(p.exchange)];
      if (p.marker) {
        o.at = g_.add_exchange(o.kind, o.tensor, o.members, o.root);
        continue;
      }
      internal_check(o.at != SIZE_MAX);
      g_.exchanges[o.at].transfers.push_back(g_.add_exchanged_transfer(p.tensor, p.slice, p.from, p.to));
    }
    pending_.clear();
    open_.clear();
  }

  void send(uint64_t t, const Box& slice, Rank from, Rank to, int round, int exchange = -1) {
    pending_.push_back(Pending{t, slice, from, to, round, exchange, false});
  }

  // Whether `me` reads the slice, or holds a piece it may be sent from (a tree's root is such).
  bool involved(uint64_t t, const Box& want, const std::vector<size_t>& ks,
                const std::vector<Placement>& blocks) const {
    if (me_ < 0) return true;
    for (size_t k : ks)
      if (blocks[k].rank == me_) return true;
    auto it = my_sources_.find(t);
    if (it != my_sources_.end())
      for (const Box& b : it->second)
        if (meet(b, want)) return true;
    return false;
  }

  const PieceIndex::Piece* whole_source(uint64_t t, const Box& want) {
    for (const PieceIndex::Piece* p : index(t).overlapping(want))
      if (p->box.contains(want)) return p;
    return nullptr;
  }

  // The readers of a slice other than `holder`, in rank order starting after the holder's
  // (cyclically): trees rooted at different ranks then put different ranks next to their roots,
  // so the relaying (most of it by the first positions) is spread over the readers.
  std::vector<Rank> readers_after(Rank holder, const std::vector<size_t>& ks,
                                  const std::vector<Placement>& blocks) const {
    std::vector<Rank> sorted;
    for (size_t k : ks) sorted.push_back(blocks[k].rank);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    return rotated(sorted, holder);
  }

  // `sorted` (distinct ranks in order) without `holder`, starting after it, cyclically.
  static std::vector<Rank> rotated(const std::vector<Rank>& sorted, Rank holder) {
    const auto mid = std::upper_bound(sorted.begin(), sorted.end(), holder);
    std::vector<Rank> out(mid, sorted.end());
    for (auto it = sorted.begin(); it != mid; ++it)
      if (*it != holder) out.push_back(*it);
    return out;
  }

  // Position 0 is the holder, then the readers (readers_after); each receives what it lacks of
  // the slice from its tree parent (tree_parent), which holds all of it by then.
  void broadcast(uint64_t t, const Box& want, Rank holder, const std::vector<size_t>& ks,
                 const std::vector<Placement>& blocks) {
    tree(t, want, holder, readers_after(holder, ks, blocks));
  }

  // A tree to two or more readers that all lack the whole slice is a broadcast: one Exchange
  // step, which a transport may run as its own broadcast (MPI_Ibcast).
  void tree(uint64_t t, const Box& want, Rank holder, const std::vector<Rank>& readers) {
    int ex = -1;
    if (readers.size() >= 2 && lack(t, want, readers)) {
      std::vector<Rank> members = readers;
      members.push_back(holder);
      std::sort(members.begin(), members.end());
      ex = begin_exchange(Exchange::Kind::Broadcast, t, std::move(members), holder);
    }
    for (size_t pos = 1; pos <= readers.size(); ++pos) {
      const Rank to = readers[pos - 1],
                 from = pos == 1 || tree_parent(pos) == 0 ? holder : readers[tree_parent(pos) - 1];
      if (mine(to) || mine(from))
        for (const Box& m : missing(t, want, to)) send(t, m, from, to, tree_round(pos), ex);
      remember(t, want, to);
    }
  }

  static bool several_ranks(const std::vector<size_t>& ks, const std::vector<Placement>& blocks) {
    for (size_t k : ks)
      if (blocks[k].rank != blocks[ks[0]].rank) return true;
    return false;
  }

  // A slice several ranks read that no one piece holds whole, in m distinct parts (each from the
  // lowest rank holding it) read by n ranks. With n <= m (an all-gather: every reader made a
  // part) each part's rank sends it to every reader itself: a holder sends no more than a
  // reader receives, and nothing waits on a relay. With more readers than parts, the readers
  // split into m equal groups in rank order: part g goes down a binomial tree over group g, then
  // each reader takes every other part from the reader at its own place in that part's group
  // (a reader of 64 gathering 4 parts: a tree over 16, then 3 messages, where 4 trees over all
  // 64 had every rank relaying in each of them).
  void broadcast_pieces(uint64_t t, const Box& want, const std::vector<size_t>& ks,
                        const std::vector<Placement>& blocks) {
    std::vector<Box> parts;
    std::vector<Rank> holder;
    {
      std::unordered_set<Box, BoxHash> seen;
      for (const PieceIndex::Piece* p : index(t).overlapping(want)) {
        const Box part = intersect(want, p->box);
        if (seen.insert(part).second) parts.push_back(part), holder.push_back(p->rank);
      }
    }
    std::vector<Rank> readers;
    for (size_t k : ks) readers.push_back(blocks[k].rank);
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    const size_t m = parts.size(), n = readers.size();
    if (n <= m) {
      const int ex = all_gather(t, parts, holder, readers)
                         ? begin_exchange(Exchange::Kind::AllGather, t, readers, -1)
                         : -1;
      for (size_t q = 0; q < m; ++q)
        for (Rank to : rotated(readers, holder[q])) {
          if (mine(to) || mine(holder[q]))
            for (const Box& x : missing(t, parts[q], to)) send(t, x, holder[q], to, 1, ex);
          remember(t, parts[q], to);
        }
    } else {
      std::vector<std::vector<Rank>> group(m);
      std::vector<size_t> group_of(n), place(n);
      for (size_t x = 0; x < n; ++x) {
        group_of[x] = x * m / n;
        place[x] = group[group_of[x]].size();
        group[group_of[x]].push_back(readers[x]);
      }
      for (size_t g = 0; g < m; ++g) {
        std::vector<Rank> rest;
        for (Rank r : group[g])
          if (r != holder[g]) rest.push_back(r);
        tree(t, parts[g], holder[g], rest);
      }
      constexpr int kAfterTrees = 1 << 20;  // the exchange follows every tree's last round
      for (size_t x = 0; x < n; ++x)
        for (size_t g = 0; g < m; ++g) {
          if (g == group_of[x]) continue;
          const Rank to = readers[x], from = group[g][place[x] % group[g].size()];
          if (from != to && (mine(to) || mine(from)))
            for (const Box& y : missing(t, parts[g], to)) send(t, y, from, to, kAfterTrees);
          remember(t, parts[g], to);
        }
    }
    for (size_t k : ks) {
      const Rank to = blocks[k].rank;
      if (mine(to)) {
        const std::vector<Box> left = missing(t, want, to);
        user_check(left.empty(), "slice ", to_string(left.empty() ? want : left[0]), " of node %", t,
                   " lies on no rank");
      }
      remember(t, want, to);
    }
  }

  // Whether the m parts of a slice, read by n <= m ranks, are exactly an all-gather: two or
  // more readers, the parts' holders are the readers, the parts are disjoint, and no reader
  // holds any of a part it does not hold itself (so each receives every other member's parts
  // whole, which MPI_Iallgatherv delivers).
  bool all_gather(uint64_t t, const std::vector<Box>& parts, const std::vector<Rank>& holder,
                  const std::vector<Rank>& readers) {
    if (readers.size() < 2) return false;
    std::vector<Rank> holders = holder;
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    if (holders != readers) return false;
    PieceIndex seen(shape_of_.at(t));
    for (const Box& p : parts) {
      if (!seen.overlapping(p).empty()) return false;
      seen.add(p, 0);
    }
    auto it = have_.find(t);
    if (it == have_.end()) return true;
    for (size_t q = 0; q < parts.size(); ++q)
      for (Rank r : readers)
        if (r != holder[q])
          for (const Box& b : it->second[static_cast<size_t>(r)])
            if (meet(b, parts[q])) return false;
    return true;
  }

  // A part of a gathered slice and the rank it comes from.
  struct Gathered {
    Box part;
    Rank from;
  };
  // The parts of `want` that rank `to` lacks, piece by piece from the lowest rank holding each
  // piece, and `left` what no piece holds. Only the pieces near `want` are visited (PieceIndex):
  // on a big mesh most ranks hold nothing of it.
  std::vector<Gathered> gather_plan(uint64_t t, const Box& want, Rank to,
                                    std::vector<Box>* left_out = nullptr) {
    std::vector<Gathered> out;
    std::vector<Box> left = missing(t, want, to);
    for (const PieceIndex::Piece* p : index(t).overlapping(want)) {
      if (left.empty()) break;
      if (p->rank == to) continue;
      std::vector<Box> still;
      for (const Box& m : left) {
        if (!meet(m, p->box)) {
          still.push_back(m);
          continue;
        }
        const Box part = intersect(m, p->box);
        out.push_back(Gathered{part, p->rank});
        for (const Box& rest : poly::subtract(m, part)) still.push_back(rest);
      }
      left = std::move(still);
    }
    if (left_out) *left_out = std::move(left);
    return out;
  }

  // Brings the parts of `want` that rank `to` lacks (gather_plan; `planned`: computed already).
  void gather_pieces(uint64_t t, const Box& want, Rank to, const std::vector<Gathered>* planned) {
    bool mine_here = mine(to);
    if (!mine_here)
      for (const Box& b : my_sources_[t]) mine_here = mine_here || meet(b, want);
    if (mine_here) {
      std::vector<Box> left;
      std::vector<Gathered> fresh;
      if (!planned || mine(to)) fresh = gather_plan(t, want, to, &left);
      const std::vector<Gathered>& plan = planned ? *planned : fresh;
      for (const Gathered& x : plan)
        if (mine(to) || mine(x.from)) send(t, x.part, x.from, to, 1);
      if (mine(to))
        user_check(left.empty(), "slice ", to_string(left.empty() ? want : left[0]), " of node %", t,
                   " lies on no rank");
    }
    remember(t, want, to);
  }

  void generate(uint64_t t, const Box& want, Rank to) {
    if (mine(to))
      for (const Box& m : missing(t, want, to)) g_.add_block(t, m, to);
    remember(t, want, to);
  }

  // The combines of a split reduction, one per distinct output slice of its blocks (a regular
  // grid gives equal-or-disjoint slices; one combine of the whole output when they overlap
  // irregularly), as its CombineMode says.
  std::vector<PlannedCombine> plan_combines(const NodeRef& n, const poly::Signature& s,
                                            const std::vector<Placement>& blocks, CombineMode mode) {
    std::vector<std::pair<Box, std::vector<size_t>>> groups;
    std::unordered_map<Box, size_t, BoxHash> group_of;
    for (size_t k = 0; k < blocks.size(); ++k) {
      auto [it, fresh] = group_of.emplace(s.output_slice(blocks[k].box), groups.size());
      if (fresh) groups.push_back({it->first, {}});
      groups[it->second].second.push_back(k);
    }
    bool regular = true;
    PieceIndex seen(n->shape);
    for (const auto& gr : groups) {
      regular = regular && seen.overlapping(gr.first).empty();
      seen.add(gr.first, 0);
    }
    if (!regular) {
      std::vector<size_t> all(blocks.size());
      for (size_t k = 0; k < all.size(); ++k) all[k] = k;
      groups = {{Box::of_shape(n->shape), all}};
    }
    std::vector<PlannedCombine> out;
    std::vector<char> seen_rank(static_cast<size_t>(g_.num_ranks), 0);
    for (const auto& [slice, partials] : groups) {
      std::vector<Rank> holders;  // the ranks with a partial of this slice, in block order
      for (size_t k : partials)
        if (!seen_rank[static_cast<size_t>(blocks[k].rank)]++) holders.push_back(blocks[k].rank);
      for (Rank r : holders) seen_rank[static_cast<size_t>(r)] = 0;
      if (mode == CombineMode::AllReduce) {
        out.push_back({slice, partials, holders});
      } else if (mode == CombineMode::ReduceScatter && slice.rank() > 0) {
        int dim = 0;
        for (int d = 1; d < slice.rank(); ++d)
          if (slice.extent(d) > slice.extent(dim)) dim = d;
        const int64_t e = slice.extent(dim), k = std::min<int64_t>(e, static_cast<int64_t>(holders.size()));
        for (int64_t i = 0; i < k; ++i) {
          Box piece = slice;
          piece.lo[dim] = slice.lo[dim] + i * e / k;
          piece.hi[dim] = slice.lo[dim] + (i + 1) * e / k - 1;
          std::vector<size_t> reach;  // regular: every partial covers the whole slice
          for (size_t b : partials)
            if (regular || overlaps(s.output_slice(blocks[b].box), piece)) reach.push_back(b);
          out.push_back({piece, std::move(reach), {holders[static_cast<size_t>(i)]}});
        }
      } else {
        out.push_back({slice, partials, {blocks[partials[0]].rank}});
      }
    }
    return out;
  }

  // The transfers of the input being fetched, with the tree round of each (emit_pending).
  struct Pending {
    uint64_t tensor;
    Box slice;
    Rank from, to;
    int round;
    int exchange = -1;    // into open_: the exchange carrying it
    bool marker = false;  // not a transfer: where the exchange's step goes
  };
  std::vector<Pending> pending_;
  // The exchanges of the input being fetched, made when their marker is emitted.
  struct Open {
    Exchange::Kind kind;
    uint64_t tensor;
    std::vector<Rank> members;
    Rank root;
    size_t at;  // index into g_.exchanges once made
  };
  std::vector<Open> open_;

  ShardedGraph g_;
  Rank me_;  // -1: every rank
  // What each rank holds of each tensor (tensor -> per rank): made, held, received or generated.
  std::unordered_map<uint64_t, std::vector<std::vector<Box>>> have_;
  // The pieces made or held before any transfer, by tensor and box: the senders.
  std::unordered_map<uint64_t, PieceIndex> sources_;
  std::unordered_map<uint64_t, std::vector<Box>> my_sources_;  // those on `me`
  std::unordered_map<uint64_t, Shape> shape_of_;
  std::unordered_set<uint64_t> on_demand_;                     // generated where read (generated_where_read)
  std::unordered_map<uint64_t, std::vector<Shard>> produced_;  // final pieces, in order
  std::unordered_set<uint64_t> listed_;
  std::unordered_set<uint64_t> replicated_;  // ops whose blocks each compute the whole value
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

namespace {
ShardedGraph lower_as(const std::vector<NodeRef>& topo, const Assignment& blocks,
                      const std::vector<Shard>& initial, const std::vector<NodeRef>& roots, int num_ranks,
                      const CombineModes& modes, Rank me) {
  Lowering l(topo, initial, roots, num_ranks, me);
  static const std::vector<Placement> none;
  for (const NodeRef& n : topo) {
    auto it = blocks.find(n->id);
    auto mode = modes.find(n->id);
    l.node(n, it == blocks.end() ? none : it->second,
           mode == modes.end() ? CombineMode::Reduce : mode->second);
  }
  ShardedGraph g = l.finish(roots);
  order_bands(g);
  return g;
}
}  // namespace

ShardedGraph lower(const std::vector<NodeRef>& topo, const Assignment& blocks,
                   const std::vector<Shard>& initial, const std::vector<NodeRef>& roots, int num_ranks,
                   const CombineModes& modes) {
  return lower_as(topo, blocks, initial, roots, num_ranks, modes, -1);
}

ShardedGraph lower_rank(const std::vector<NodeRef>& topo, const Assignment& blocks,
                        const std::vector<Shard>& initial, const std::vector<NodeRef>& roots, int num_ranks,
                        const CombineModes& modes, Rank me) {
  user_check(me >= 0 && me < num_ranks, "lower_rank: rank ", me, " is not one of the mesh's ", num_ranks,
             " ranks");
  ShardedGraph g = lower_as(topo, blocks, initial, roots, num_ranks, modes, me);
  g.part_of = me;
  return g;
}

}  // namespace tapestry::plan
