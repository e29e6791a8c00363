#include "engine/plan/verifier.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

std::string VerifyResult::message() const {
  std::string s;
  for (const std::string& e : errors) s += e + "\n";
  if (dropped) s += cat_str("... and ", dropped, " more\n");
  return s;
}

bool VerifyResult::mentions(const std::string& text) const {
  for (const std::string& e : errors)
    if (e.find(text) != std::string::npos) return true;
  return false;
}

namespace {

using poly::Signature;
using Have = std::unordered_map<uint64_t, std::vector<Box>>;  // tensor -> slices on a rank

class Verifier {
 public:
  Verifier(const ShardedGraph& g, const std::vector<NodeRef>& topo, VerifyResult& r) : g_(g), r_(r) {
    for (const NodeRef& n : topo) {
      in_topo_.insert(n->id);
      known_[n->id] = n.get();
      for (const NodeRef& in : n->inputs) known_.emplace(in->id, in.get());
      sig_.emplace(n->id, poly::signature_of(*n));
    }
    topo_ = topo;
    for (const Shard& h : g.initial) held_.insert(h.tensor);
  }

  void run() {
    const bool structure_ok = check_structure();
    check_partitions();
    check_combines();
    if (!structure_ok) return;  // a malformed schedule cannot be simulated
    simulate();
    check_exchange_kinds();
    check_outputs();
  }

 private:
  template <class... A> void error(const char* check, const A&... a) {
    if (r_.errors.size() >= 64) {
      ++r_.dropped;
      return;
    }
    r_.errors.push_back(cat_str(check, ": ", a...));
  }

  std::string node_str(uint64_t id) const {
    auto it = known_.find(id);
    if (it == known_.end()) return cat_str("%", id);
    return cat_str("%", id, " ", op_def(it->second->op).name, " ", shape_str(it->second->shape));
  }
  std::string block_str(size_t b) const {
    const Block& k = g_.blocks[b];
    return cat_str("block ", b, " (", node_str(k.node), " ", to_string(k.box), " on rank ", k.rank, ")");
  }
  bool is_leaf(const Node& n) const { return n.op == Op::Source || held_.count(n.id); }
  bool rank_ok(Rank r) const { return r >= 0 && r < g_.num_ranks; }
  const Signature& sig(uint64_t id) const { return sig_.at(id); }
  Box tensor_box(uint64_t id) const { return Box::of_shape(known_.at(id)->shape); }

  // Whether a shard's box is a non-empty slice of a known tensor, or all of an empty one (a
  // tensor with a size-0 dim is held whole on rank 0 and never computed: planner.cpp).
  bool slice_ok(const char* what, uint64_t tensor, const Box& box) {
    if (!known_.count(tensor)) {
      error("schedule", what, " names ", node_str(tensor), ", which the graph does not use");
      return false;
    }
    const Box full = tensor_box(tensor);
    if (full.empty() && box.lo == full.lo && box.hi == full.hi) return true;
    if (box.rank() != full.rank() || box.empty() || !full.contains(box)) {
      error("schedule", what, " ", to_string(box), " is not a non-empty slice of ", node_str(tensor));
      return false;
    }
    return true;
  }

  // --- structure: ranks, indices, and one step per action --------------------------------
  bool check_structure() {
    const size_t before = r_.errors.size() + r_.dropped;
    if (static_cast<int>(g_.steps.size()) != g_.num_ranks) {
      error("schedule", "the plan has ", g_.steps.size(), " step lists for ", g_.num_ranks, " ranks");
      return false;
    }
    block_ok_.assign(g_.blocks.size(), false);
    for (const Shard& h : g_.initial) {
      if (!rank_ok(h.rank)) error("schedule", "an initial shard lies on rank ", h.rank);
      else if (known_.count(h.tensor)) slice_ok("an initial shard", h.tensor, h.box);
    }
    for (size_t b = 0; b < g_.blocks.size(); ++b) {
      const Block& k = g_.blocks[b];
      if (!rank_ok(k.rank)) error("schedule", "block ", b, " runs on rank ", k.rank);
      if (!in_topo_.count(k.node)) {
        error("partition", "block ", b, " computes ", node_str(k.node), ", which is not in the graph");
      } else if (k.box.rank() != sig(k.node).rank()) {
        error("partition", block_str(b), " has rank ", k.box.rank(), ", the space has ", sig(k.node).rank());
      } else {
        block_ok_[b] = rank_ok(k.rank);
        blocks_of_[k.node].push_back(b);
      }
    }
    for (size_t t = 0; t < g_.transfers.size(); ++t) {
      const Transfer& x = g_.transfers[t];
      if (!rank_ok(x.from) || !rank_ok(x.to) || x.from == x.to)
        error("schedule", "transfer ", t, " goes from rank ", x.from, " to rank ", x.to);
      slice_ok(cat_str("transfer ", t).c_str(), x.tensor, x.slice);
    }
    for (size_t c = 0; c < g_.combines.size(); ++c) {
      const Combine& m = g_.combines[c];
      if (m.dest.empty()) error("schedule", "combine ", c, " has no destination");
      for (Rank d : m.dest)
        if (!rank_ok(d)) error("schedule", "combine ", c, " delivers to rank ", d);
      for (size_t p : m.partials)
        if (p >= g_.blocks.size())
          error("schedule", "combine ", c, " lists block ", p, ", which does not exist");
    }
    check_exchanges();
    for (const Shard& o : g_.outputs) {
      if (!rank_ok(o.rank)) error("schedule", "a result shard lies on rank ", o.rank);
      else slice_ok("a result shard", o.tensor, o.box);
    }
    if (r_.errors.size() + r_.dropped != before) return false;
    check_step_counts();
    return r_.errors.size() + r_.dropped == before;
  }

  // An exchange's members are distinct ranks in order, its transfers move its tensor among
  // them and belong to no other exchange, and it is the collective its kind says: a broadcast
  // brings its root's one slice to every other member once; in an all-gather every member
  // sends its parts to every other member; in an all-to-all every member sends to every other.
  void check_exchanges() {
    exchanged_.assign(g_.transfers.size(), -1);
    for (size_t e = 0; e < g_.exchanges.size(); ++e) {
      const Exchange& x = g_.exchanges[e];
      const std::string name = cat_str(exchange_kind_name(x.kind), " ", e, " of ", node_str(x.tensor));
      bool ok = x.members.size() >= 2;
      for (size_t i = 0; i < x.members.size(); ++i)
        ok = ok && rank_ok(x.members[i]) && (i == 0 || x.members[i - 1] < x.members[i]);
      if (!ok) {
        error("schedule", name, " has members that are not two or more distinct ranks in order");
        continue;
      }
      const auto member = [&](Rank r) { return std::binary_search(x.members.begin(), x.members.end(), r); };
      if (x.kind == Exchange::Kind::Broadcast && !member(x.root))
        error("schedule", name, " is rooted at rank ", x.root, ", not one of its members");
      for (size_t t : x.transfers) {
        if (t >= g_.transfers.size()) {
          error("schedule", name, " lists transfer ", t, ", which does not exist");
          continue;
        }
        const Transfer& tr = g_.transfers[t];
        if (exchanged_[t] >= 0) error("schedule", "transfer ", t, " is part of two exchanges");
        exchanged_[t] = static_cast<int>(e);
        if (tr.tensor != x.tensor || !member(tr.from) || !member(tr.to))
          error("schedule", name, " lists transfer ", t, ", which moves ", node_str(tr.tensor), " from rank ",
                tr.from, " to rank ", tr.to);
      }
    }
  }

  // After the simulation (a kind's shape is no obstacle to running the plan's transfers, and
  // what it leaves missing is reported as such first).
  void check_exchange_kinds() {
    for (size_t e = 0; e < g_.exchanges.size(); ++e) {
      const Exchange& x = g_.exchanges[e];
      const std::string name = cat_str(exchange_kind_name(x.kind), " ", e, " of ", node_str(x.tensor));
      if (x.transfers.empty()) error("schedule", name, " moves nothing");
      std::map<std::pair<Rank, Rank>, std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>>> moved;
      std::map<Rank, int> received;
      for (size_t t : x.transfers) {
        const Transfer& tr = g_.transfers[t];
        moved[{tr.from, tr.to}].insert({tr.slice.lo, tr.slice.hi});
        ++received[tr.to];
        if (x.kind == Exchange::Kind::Broadcast && !(tr.slice == g_.transfers[x.transfers[0]].slice))
          error("schedule", name, " moves two slices, ", to_string(g_.transfers[x.transfers[0]].slice),
                " and ", to_string(tr.slice), ": a broadcast moves one");
      }
      if (x.kind == Exchange::Kind::Broadcast) {
        for (Rank r : x.members)
          if (received[r] != (r == x.root ? 0 : 1))
            error("schedule", name, ": rank ", r, " receives its slice ", received[r], " times, expected ",
                  r == x.root ? 0 : 1);
        continue;
      }
      for (Rank a : x.members)
        for (Rank b : x.members) {
          if (a == b) continue;
          const auto it = moved.find({a, b});
          if (it == moved.end()) {
            error("schedule", name, ": rank ", a, " sends rank ", b,
                  " nothing, but every member sends every other");
            continue;
          }
          if (x.kind != Exchange::Kind::AllGather) continue;
          const auto first = moved.find({a, b == x.members[0] ? x.members[1] : x.members[0]});
          if (first != moved.end() && first->second != it->second)
            error("schedule", name, ": rank ", a, " sends different parts to different members");
        }
    }
  }

  // Each block runs once on its rank, each transfer is sent and received once by its two
  // ranks (an exchange's transfers not at all: each member runs its Exchange step once), each
  // combine appears once on each participant.
  void check_step_counts() {
    std::vector<std::vector<int>> runs(g_.blocks.size(), std::vector<int>(g_.num_ranks));
    std::vector<std::vector<int>> sends(g_.transfers.size(), std::vector<int>(g_.num_ranks));
    std::vector<std::vector<int>> recvs = sends;
    std::vector<std::vector<int>> joins(g_.combines.size(), std::vector<int>(g_.num_ranks));
    std::vector<std::vector<int>> takes(g_.exchanges.size(), std::vector<int>(g_.num_ranks));
    for (Rank r = 0; r < g_.num_ranks; ++r) {
      for (const Step& s : g_.steps[r]) {
        const size_t n = s.kind == Step::Kind::Run        ? g_.blocks.size()
                         : s.kind == Step::Kind::Combine  ? g_.combines.size()
                         : s.kind == Step::Kind::Exchange ? g_.exchanges.size()
                                                          : g_.transfers.size();
        if (s.index >= n) {
          error("schedule", "rank ", r, " has a step naming index ", s.index, " of ", n);
          continue;
        }
        auto& count = s.kind == Step::Kind::Run        ? runs
                      : s.kind == Step::Kind::Send     ? sends
                      : s.kind == Step::Kind::Recv     ? recvs
                      : s.kind == Step::Kind::Exchange ? takes
                                                       : joins;
        ++count[s.index][r];
      }
    }
    auto expect = [&](const std::vector<int>& per_rank, const std::vector<Rank>& where,
                      const std::string& what) {
      for (Rank r = 0; r < g_.num_ranks; ++r) {
        const bool want = std::find(where.begin(), where.end(), r) != where.end();
        if (per_rank[r] != (want ? 1 : 0))
          error("schedule", what, " appears ", per_rank[r], " times in rank ", r, "'s steps, expected ",
                want ? 1 : 0);
      }
    };
    for (size_t b = 0; b < g_.blocks.size(); ++b) expect(runs[b], {g_.blocks[b].rank}, cat_str("block ", b));
    for (size_t t = 0; t < g_.transfers.size(); ++t) {
      if (exchanged_[t] >= 0) {
        expect(sends[t], {}, cat_str("the send of transfer ", t, " (part of exchange ", exchanged_[t], ")"));
        expect(recvs[t], {},
               cat_str("the receive of transfer ", t, " (part of exchange ", exchanged_[t], ")"));
        continue;
      }
      expect(sends[t], {g_.transfers[t].from}, cat_str("the send of transfer ", t));
      expect(recvs[t], {g_.transfers[t].to}, cat_str("the receive of transfer ", t));
    }
    for (size_t e = 0; e < g_.exchanges.size(); ++e)
      expect(takes[e], g_.exchanges[e].members, cat_str(exchange_kind_name(g_.exchanges[e].kind), " ", e));
    for (size_t c = 0; c < g_.combines.size(); ++c)
      expect(joins[c], g_.participants(g_.combines[c]), cat_str("combine ", c));
  }

  // --- check 1: the blocks of each op partition its index space ---------------------------
  void check_partitions() {
    for (const NodeRef& n : topo_) {
      const std::vector<size_t>& bl = blocks_of_[n->id];
      if (is_leaf(*n)) {
        if (!bl.empty())
          error("partition", node_str(n->id), " is a leaf (a source, or held before the plan) but ",
                block_str(bl[0]), " computes it");
        continue;
      }
      const Signature& s = sig(n->id);
      const Box space = s.space_box();
      // A generator may be computed where it is read (lower()): its blocks may repeat a slice on
      // several ranks and need cover only what is read, which checks 2 and 4 see to.
      const bool generated = op_kind(n->op) == OpKind::Generate;
      if (bl.empty()) {
        if (!generated)
          error("partition", node_str(n->id), " has no blocks: nothing computes ", to_string(space));
        continue;
      }
      int64_t volume = 0;
      bool bad = false;
      for (size_t b : bl) {
        const Box& box = g_.blocks[b].box;
        if (box.empty() || !space.contains(box)) {
          error("partition", block_str(b), " is empty or leaves the index space ", to_string(space));
          bad = true;
          continue;
        }
        for (int j = 0; j < s.rank(); ++j)
          if (!s.space[j].splittable && box.extent(j) != s.space[j].extent)
            error("partition", block_str(b), " splits index dim ", s.space[j].name,
                  ", which every block must span whole");
        volume += box.volume();
        if (s.splits_reduction(box)) split_.insert(n->id);
      }
      if (bad || replicas(bl, space) || generated) continue;
      const bool overlap = report_overlaps(n->id, bl);
      if (overlap || volume != space.volume()) {
        std::vector<Box> boxes;
        for (size_t b : bl) boxes.push_back(g_.blocks[b].box);
        const std::vector<Box> gap = poly::uncovered(space, boxes);
        if (!gap.empty())
          error("partition", "no block of ", node_str(n->id), " covers ", to_string(gap[0]),
                gap.size() > 1 ? cat_str(" (and ", gap.size() - 1, " more gaps)") : "");
        if (!overlap && gap.empty())
          error("partition", "the blocks of ", node_str(n->id), " hold ", volume, " points, the space ",
                space.volume());
      }
    }
  }

  // A replicated op: every block computes the whole space, each on a rank of its own, so no
  // point is computed twice on one rank and no partial is left (every copy the same value).
  bool replicas(const std::vector<size_t>& bl, const Box& space) {
    if (bl.size() < 2) return false;
    std::unordered_set<Rank> ranks;
    for (size_t b : bl)
      if (!(g_.blocks[b].box == space) || !ranks.insert(g_.blocks[b].rank).second) return false;
    replicated_.insert(g_.blocks[bl[0]].node);
    return true;
  }

  // Pairwise disjointness, sweeping blocks sorted by their first coordinate.
  bool report_overlaps(uint64_t node, std::vector<size_t> bl) {
    bool any = false;
    const auto lo0 = [&](size_t b) { return g_.blocks[b].box.rank() ? g_.blocks[b].box.lo[0] : 0; };
    const auto hi0 = [&](size_t b) { return g_.blocks[b].box.rank() ? g_.blocks[b].box.hi[0] : 0; };
    std::sort(bl.begin(), bl.end(), [&](size_t a, size_t b) { return lo0(a) < lo0(b); });
    for (size_t i = 0; i < bl.size(); ++i) {
      for (size_t k = i + 1; k < bl.size() && lo0(bl[k]) <= hi0(bl[i]); ++k) {
        const Box common = intersect(g_.blocks[bl[i]].box, g_.blocks[bl[k]].box);
        if (common.empty()) continue;
        error("partition", "blocks ", std::min(bl[i], bl[k]), " and ", std::max(bl[i], bl[k]), " of ",
              node_str(node), " overlap in ", to_string(common), ": those points would be computed twice");
        any = true;
      }
    }
    return any;
  }

  // --- check 3: every partial result is combined exactly once -----------------------------
  void check_combines() {
    std::unordered_map<uint64_t, std::vector<size_t>> combines_of;
    std::vector<int> times_combined(g_.blocks.size(), 0);
    for (size_t c = 0; c < g_.combines.size(); ++c) {
      const Combine& m = g_.combines[c];
      if (!in_topo_.count(m.node)) {
        error("combine", "combine ", c, " merges ", node_str(m.node), ", which is not in the graph");
        continue;
      }
      if (!split_.count(m.node)) {
        error("combine", "combine ", c, " merges ", node_str(m.node),
              ", whose blocks split no reduction: there is nothing to combine");
        continue;
      }
      const Signature& s = sig(m.node);
      if (m.kind != s.combine())
        error("combine", "combine ", c, " of ", node_str(m.node), " is a ", poly::combine_name(m.kind),
              ", the reduction needs ", poly::combine_name(s.combine()));
      const Box full = Box::of_shape(s.output.shape);
      if (m.out.rank() != full.rank() || m.out.empty() || !full.contains(m.out)) {
        error("combine", "combine ", c, " writes ", to_string(m.out), ", not a slice of ", node_str(m.node));
        continue;
      }
      combines_of[m.node].push_back(c);
      std::set<size_t> listed;
      for (size_t p : m.partials) {
        if (p >= g_.blocks.size()) continue;
        if (g_.blocks[p].node != m.node) {
          error("combine", "combine ", c, " of ", node_str(m.node), " lists ", block_str(p));
          continue;
        }
        ++times_combined[p];
        if (!listed.insert(p).second)
          error("combine", "the partial of ", block_str(p), " is combined twice: combine ", c,
                " lists it twice");
        else if (!overlaps(s.output_slice(g_.blocks[p].box), m.out))
          error("combine", "combine ", c, " lists ", block_str(p), ", whose partial does not reach ",
                to_string(m.out));
      }
      for (size_t b : blocks_of_[m.node]) {
        const Box part = intersect(s.output_slice(g_.blocks[b].box), m.out);
        if (!part.empty() && !listed.count(b))
          error("combine", "combine ", c, " misses the partial of ", block_str(b), " over ", to_string(part),
                ": that reduction would be incomplete");
      }
    }
    for (uint64_t n : split_) {
      const std::vector<size_t>& cs = combines_of[n];
      const Signature& s = sig(n);
      for (size_t i = 0; i < cs.size(); ++i)
        for (size_t k = i + 1; k < cs.size(); ++k) {
          const Box common = intersect(g_.combines[cs[i]].out, g_.combines[cs[k]].out);
          if (!common.empty())
            error("combine", "combines ", cs[i], " and ", cs[k], " both write ", to_string(common), " of ",
                  node_str(n), ": its partials would be combined twice");
        }
      for (size_t b : blocks_of_[n])
        if (times_combined[b] == 0) error("combine", "the partial of ", block_str(b), " is never combined");
      std::vector<Box> outs;
      for (size_t c : cs) outs.push_back(g_.combines[c].out);
      const std::vector<Box> gap = poly::uncovered(Box::of_shape(s.output.shape), outs);
      if (!gap.empty())
        error("combine", "no combine produces ", to_string(gap[0]), " of ", node_str(n),
              ": its partial results are never combined");
    }
  }

  // --- check 2: run every rank's program in a causal order --------------------------------
  void simulate() {
    have_.assign(g_.num_ranks, Have{});
    for (const Shard& h : g_.initial) have_[h.rank][h.tensor].push_back(h.box);
    std::vector<size_t> pc(g_.num_ranks, 0);
    std::vector<bool> sent(g_.transfers.size(), false), ran(g_.blocks.size(), false);
    std::vector<bool> done(g_.combines.size(), false);
    std::vector<size_t> arrived(g_.combines.size(), 0);
    std::set<std::pair<size_t, Rank>> waiting;  // (combine, rank) already counted
    std::vector<bool> taken(g_.exchanges.size(), false);
    std::vector<size_t> joined(g_.exchanges.size(), 0);
    std::set<std::pair<size_t, Rank>> in_exchange;  // (exchange, rank) already counted
    for (bool progress = true; progress;) {
      progress = false;
      for (Rank r = 0; r < g_.num_ranks; ++r) {
        while (pc[r] < g_.steps[r].size()) {
          const Step& s = g_.steps[r][pc[r]];
          if (s.kind == Step::Kind::Recv && !sent[s.index]) break;
          if (s.kind == Step::Kind::Combine && !done[s.index]) {
            if (waiting.insert({s.index, r}).second) ++arrived[s.index];
            if (arrived[s.index] < g_.participants(g_.combines[s.index]).size()) break;
            complete(s.index, ran);
            done[s.index] = true;
          }
          if (s.kind == Step::Kind::Exchange && !taken[s.index]) {
            // A collective: it completes once every member has reached it.
            if (in_exchange.insert({s.index, r}).second) ++joined[s.index];
            if (joined[s.index] < g_.exchanges[s.index].members.size()) break;
            exchange(s.index);
            taken[s.index] = true;
          }
          if (s.kind == Step::Kind::Run) run_block(s.index, ran);
          if (s.kind == Step::Kind::Send) send(s.index, sent);
          if (s.kind == Step::Kind::Recv) {
            const Transfer& t = g_.transfers[s.index];
            have_[t.to][t.tensor].push_back(t.slice);
          }
          ++pc[r];
          progress = true;
        }
      }
    }
    for (Rank r = 0; r < g_.num_ranks; ++r) {
      if (pc[r] == g_.steps[r].size()) continue;
      const Step& s = g_.steps[r][pc[r]];
      error("schedule", "deadlock: rank ", r, " waits forever at step ", pc[r], " (",
            s.kind == Step::Kind::Recv
                ? cat_str("receive of transfer ", s.index, " from rank ", g_.transfers[s.index].from)
            : s.kind == Step::Kind::Exchange ? cat_str(exchange_kind_name(g_.exchanges[s.index].kind), " ",
                                                       s.index, ", which a member never reaches")
                                             : cat_str("combine ", s.index),
            ")");
    }
  }

  void run_block(size_t b, std::vector<bool>& ran) {
    ran[b] = true;
    if (!block_ok_[b]) return;
    const Block& k = g_.blocks[b];
    const Node& n = *known_.at(k.node);
    const Signature& s = sig(k.node);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Box need = s.input_slice(i, k.box);
      if (need.empty()) continue;
      const uint64_t t = n.inputs[i]->id;
      const std::vector<Box> missing = poly::uncovered(need, have_[k.rank][t]);
      if (!missing.empty())
        error("inputs", block_str(b), " reads ", to_string(need), " of ", node_str(t), " but rank ", k.rank,
              " lacks ", to_string(missing[0]), missing.size() > 1 ? " and more" : "",
              " when it runs (neither held, computed there, nor received before)");
    }
    // A partial is no value yet: consumers wait for the combine.
    if (!split_.count(k.node)) have_[k.rank][k.node].push_back(s.output_slice(k.box));
  }

  void send(size_t t, std::vector<bool>& sent) {
    const Transfer& x = g_.transfers[t];
    const std::vector<Box> missing = poly::uncovered(x.slice, have_[x.from][x.tensor]);
    if (!missing.empty())
      error("inputs", "transfer ", t, " sends ", to_string(x.slice), " of ", node_str(x.tensor),
            " from rank ", x.from, ", which lacks ", to_string(missing[0]), " at that point");
    sent[t] = true;
  }

  // An exchange once every member is in it: a broadcast's root holds its slice, the senders of
  // an all-gather or all-to-all hold what they send (a collective relays nothing), and then
  // its transfers deliver in order (a tree's relays send what they received before).
  void exchange(size_t e) {
    const Exchange& x = g_.exchanges[e];
    for (size_t t : x.transfers) {
      const Transfer& tr = g_.transfers[t];
      if (x.kind == Exchange::Kind::Broadcast && tr.from != x.root) continue;
      const std::vector<Box> missing = poly::uncovered(tr.slice, have_[tr.from][tr.tensor]);
      if (!missing.empty())
        error("inputs", exchange_kind_name(x.kind), " ", e, " of ", node_str(x.tensor), " has rank ", tr.from,
              " send ", to_string(tr.slice), ", but it lacks ", to_string(missing[0]),
              " when the exchange starts");
    }
    std::vector<bool> sent(g_.transfers.size(), false);
    for (size_t t : x.transfers) {
      send(t, sent);
      const Transfer& tr = g_.transfers[t];
      have_[tr.to][tr.tensor].push_back(tr.slice);
    }
  }

  void complete(size_t c, const std::vector<bool>& ran) {
    const Combine& m = g_.combines[c];
    for (size_t p : m.partials)
      if (p < g_.blocks.size() && !ran[p])
        error("combine", "combine ", c, " merges the partial of ", block_str(p), " before it runs");
    for (Rank d : m.dest) have_[d][m.node].push_back(m.out);
  }

  // --- check 4: every root shard is produced exactly once and lies where promised ---------
  void check_outputs() {
    std::unordered_map<uint64_t, std::vector<size_t>> shards_of;
    for (size_t i = 0; i < g_.outputs.size(); ++i) shards_of[g_.outputs[i].tensor].push_back(i);
    for (const auto& [t, list] : shards_of)
      if (std::find(g_.roots.begin(), g_.roots.end(), t) == g_.roots.end())
        error("outputs", "a result shard of ", node_str(t), " is listed, but it is not a root");
    for (uint64_t root : g_.roots) {
      if (!known_.count(root)) {
        error("outputs", "root ", node_str(root), " is not in the graph");
        continue;
      }
      const std::vector<size_t>& list = shards_of[root];
      std::vector<Box> boxes;
      for (size_t i = 0; i < list.size(); ++i) {
        const Shard& a = g_.outputs[list[i]];
        for (size_t k = i + 1; k < list.size(); ++k) {
          const Shard& b = g_.outputs[list[k]];
          const Box common = intersect(a.box, b.box);
          // Copies of a replicated op's result on distinct ranks are the same value.
          if (replicated_.count(root) && a.box == b.box && a.rank != b.rank) continue;
          if (!common.empty())
            error("outputs", to_string(common), " of ", node_str(root), " is produced twice (on rank ",
                  a.rank, " and on rank ", b.rank, ")");
        }
        boxes.push_back(a.box);
        const std::vector<Box> missing = poly::uncovered(a.box, have_[a.rank][root]);
        if (!missing.empty())
          error("outputs", "rank ", a.rank, " should end with ", to_string(a.box), " of ", node_str(root),
                " but lacks ", to_string(missing[0]));
      }
      const std::vector<Box> gap = poly::uncovered(tensor_box(root), boxes);
      if (!gap.empty())
        error("outputs", to_string(gap[0]), " of ", node_str(root), " is never produced as a result");
    }
  }

  const ShardedGraph& g_;
  VerifyResult& r_;
  std::vector<NodeRef> topo_;
  std::unordered_map<uint64_t, const Node*> known_;  // topo nodes and their inputs
  std::unordered_map<uint64_t, Signature> sig_;      // topo nodes
  std::unordered_set<uint64_t> in_topo_, held_;
  std::unordered_map<uint64_t, std::vector<size_t>> blocks_of_;  // well-formed blocks per node
  std::unordered_set<uint64_t> split_;       // nodes some block of which splits a reduction
  std::unordered_set<uint64_t> replicated_;  // ops computed whole on several ranks
  std::vector<bool> block_ok_;
  std::vector<int> exchanged_;  // per transfer: its exchange, or -1
  std::vector<Have> have_;      // per rank, during and after the simulation
};

}  // namespace

VerifyResult verify(const ShardedGraph& g, const std::vector<NodeRef>& topo) {
  VerifyResult r;
  Verifier(g, topo, r).run();
  return r;
}

}  // namespace tapestry::plan
