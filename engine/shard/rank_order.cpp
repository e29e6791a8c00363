// RankProgram's order (rank_program.hpp): which earlier steps each step of a rank waits for,
// running every step as soon as they have run, and what a rank that cannot go on waits at.
#include <algorithm>
#include <unordered_map>

#include "engine/ir/error.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/telemetry/cancel.hpp"

namespace tapestry {

using plan::Step;
using poly::Box;

void RankProgram::find_dependencies() {
  const std::vector<Step>& st = steps();
  ran_.assign(st.size(), false);
  deps_.assign(st.size(), {});
  struct Made {
    Box box;
    size_t step;
  };
  std::unordered_map<uint64_t, std::vector<Made>> made;  // tensor -> the slices steps so far make
  std::unordered_map<size_t, size_t> run_of;             // block -> the step running it
  size_t last_collective = st.size();
  auto after_makers = [&](size_t i, uint64_t tensor, const Box& need) {
    const auto it = made.find(tensor);
    if (it == made.end() || need.empty()) return;
    for (const Made& m : it->second)
      if (m.box.rank() != need.rank() || overlaps(m.box, need)) deps_[i].push_back(m.step);
  };
  for (size_t i = 0; i < st.size(); ++i) {
    const Step& s = st[i];
    switch (s.kind) {
      case Step::Kind::Run: {
        const plan::Block& k = g_.blocks[s.index];
        const Node& n = node(k.node);
        const poly::Signature& sg = sig(k.node);
        for (size_t j = 0; j < n.inputs.size(); ++j)
          after_makers(i, n.inputs[j]->id, sg.input_slice(j, k.box));
        run_of[s.index] = i;
        made[k.node].push_back({sg.output_slice(k.box), i});
        break;
      }
      case Step::Kind::Send:
        after_makers(i, g_.transfers[s.index].tensor, g_.transfers[s.index].slice);
        break;
      case Step::Kind::Recv:
        made[g_.transfers[s.index].tensor].push_back({g_.transfers[s.index].slice, i});
        break;
      case Step::Kind::Exchange: {
        // After what makes the slices this rank sends (a tree's relay sends what it receives
        // in the step itself), and, run as a collective, after this rank's previous one.
        const plan::Exchange& x = g_.exchanges[s.index];
        for (size_t t : x.transfers)
          if (g_.transfers[t].from == me_) after_makers(i, x.tensor, g_.transfers[t].slice);
        if (s.index < coll_.exchanges.size() && coll_.exchanges[s.index].collective) {
          if (last_collective < st.size()) deps_[i].push_back(last_collective);
          last_collective = i;
        }
        for (size_t t : x.transfers)
          if (g_.transfers[t].to == me_) made[x.tensor].push_back({g_.transfers[t].slice, i});
        break;
      }
      case Step::Kind::Combine: {
        const plan::Combine& m = g_.combines[s.index];
        for (size_t p : m.partials) {
          const auto r = run_of.find(p);
          if (r != run_of.end()) deps_[i].push_back(r->second);
        }
        if (s.index < coll_.combines.size() && coll_.combines[s.index].collective) {
          if (last_collective < st.size()) deps_[i].push_back(last_collective);
          last_collective = i;
        }
        if (std::find(m.dest.begin(), m.dest.end(), me_) != m.dest.end()) made[m.node].push_back({m.out, i});
        break;
      }
    }
    std::sort(deps_[i].begin(), deps_[i].end());
    deps_[i].erase(std::unique(deps_[i].begin(), deps_[i].end()), deps_[i].end());
  }
}

bool RankProgram::ready(size_t i) const {
  for (size_t d : deps_[i])
    if (!ran_[d]) return false;
  return true;
}

bool RankProgram::advance() {
  bool ran = false;
  try {
    const std::vector<Step>& st = steps();
    // Device peers post their transfers in plan order: the program runs in order then. So does
    // an out-of-core plan, whose memory is counted in program order: a step run ahead of one
    // that waits is freed only once that one has run (under mpirun -n 2 each rank ran every
    // band of a heat step ahead of the halo's exchange, holding them all).
    const bool in_order = peers_ != nullptr || g_.in_bands;
    for (size_t i = pc_; i < st.size() && i < pc_ + kLookahead; ++i) {
      if (ran_[i]) continue;
      if (!ready(i)) {
        if (in_order) break;
        continue;
      }
      if (cancel_requested() || (stop_ && stop_())) throw Cancelled();
      if (!lazy_.empty()) hold_lazy(i);
      if (!step(st[i])) {
        if (in_order) break;
        continue;
      }
      ran_[i] = true;
      ++steps_run_;
      ran = true;
      // What the steps up to the first one not run were the last to read is freed now (a step
      // that ran early may still be followed by an earlier reader).
      while (pc_ < st.size() && ran_[pc_]) release_after(pc_++);
    }
    if (peers_ && (!peer_exchange_.empty() || !peer_exchanging_.empty())) {  // what is left of exchanges
      const size_t before = peer_exchange_.size() + peer_exchanging_.size();
      settle_exchanges(Step{Step::Kind::Combine, 0});
      ran = ran || peer_exchange_.size() + peer_exchanging_.size() != before;
    }
    ran = reap_trailing() || ran;
    if (!peer_combining_.empty() || !combine_reached_.empty()) ran = reap_peer_combines() || ran;
  } catch (const std::exception&) {  // no Lua runs here; rethrown, tagged with the rank
    rethrow(current_failure(me_));
  }
  return ran;
}

std::string RankProgram::waiting_on() const {
  if (done()) return "nothing";
  // With device peers, what holds up this rank's posting order says most.
  std::string next;
  if (peers_ && peer_next_ < peer_order_.size()) {
    const size_t t = peer_order_[peer_next_];
    next = (t & kExchangeEntry)
               ? cat_str(" (next to post on the device peers: exchange ", t & ~kExchangeEntry, ")")
           : (t & kCombineEntry)
               ? cat_str(" (next to post on the device peers: combine ", t & ~kCombineEntry, ")")
               : cat_str(" (next to post on the device peers: transfer ", t, ")");
  }
  return waiting_step() + next;
}

std::string RankProgram::waiting_step() const {
  if (pc_ == steps().size())
    return cat_str("the end, for ", trailing_.size(), " collective(s) it contributed to, ",
                   peer_sends_.size(), " device send(s), ", peer_exchange_.size(),
                   " device transfer(s) of exchanges, ", peer_exchanging_.size(), " device exchange(s) and ",
                   peer_combining_.size(), " device reduction(s)");
  // The first step not run that could run: what it waits for holds up everything after it
  // that depends on it.
  size_t at = pc_;
  while (at < steps().size() && (ran_[at] || !ready(at))) ++at;
  if (at == steps().size()) at = pc_;
  const Step& s = steps()[at];
  if (s.kind == Step::Kind::Recv)
    return cat_str("step ", at, ", the receive of transfer ", s.index, " from rank ",
                   g_.transfers[s.index].from);
  if (s.kind == Step::Kind::Combine)
    return cat_str("step ", at, ", combine ", s.index, " (a partial is missing)");
  if (s.kind == Step::Kind::Exchange)
    return cat_str("step ", at, ", ", plan::exchange_kind_name(g_.exchanges[s.index].kind), " ", s.index,
                   " over ", g_.exchanges[s.index].members.size(), " ranks");
  return cat_str("step ", at);
}

}  // namespace tapestry
