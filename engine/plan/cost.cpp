#include "engine/plan/cost.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "engine/ir/error.hpp"
#include "engine/plan/collective_cost.hpp"
#include "engine/plan/peak_memory.hpp"
#include "engine/poly/cost.hpp"

namespace tapestry::plan {

namespace {

double slice_bytes(const Node& n, const Box& b) {
  return static_cast<double>(b.volume()) * dtype_size(n.dtype);
}

// A combine as the collective it is (collective_cost.hpp: the cheaper of tree and ring) over the
// slowest link between its participants: a reduce to one destination, an all-reduce to every
// participant, and the members of a reduce-scatter (`scatter` of them share the participants,
// each to its own destination) as one reduce-scatter of all their bytes: every participant runs
// the members one after another, so each takes its share of the whole.
double combine_time(const Mesh& m, const std::vector<Rank>& who, size_t dests, size_t scatter, double bytes) {
  const size_t p = who.size();
  if (p <= 1) return bytes / m.mem_bytes_per_s;
  const Link* l = &m.link(who[0], who[0]);
  for (Rank r : who)
    if (m.link(who[0], r).time(bytes) > l->time(bytes)) l = &m.link(who[0], r);
  const int n = static_cast<int>(p);
  if (dests > 1) return all_reduce_time(*l, n, bytes, m.mem_bytes_per_s).time;
  if (scatter > 1)
    return reduce_scatter_time(*l, n, bytes * double(scatter), m.mem_bytes_per_s).time / double(scatter);
  return reduce_time(*l, n, bytes, m.mem_bytes_per_s).time;
}

// The slowest link among `who` for a message of `bytes`.
const Link& slowest(const Mesh& m, const std::vector<Rank>& who, double bytes) {
  const Link* l = &m.link(who[0], who[0]);
  for (Rank r : who)
    if (m.link(who[0], r).time(bytes) > l->time(bytes)) l = &m.link(who[0], r);
  return *l;
}

}  // namespace

// An exchange as the collective it is (collective_cost.hpp), over the slowest link among its
// members: a broadcast of its slice (the cheaper of tree and scatter + ring), an all-gather of
// every part (ring or recursive doubling), an all-to-all of the busiest member's bytes.
double exchange_time(const ShardedGraph& g, const Exchange& e, const Mesh& m) {
  const int p = static_cast<int>(e.members.size());
  if (p < 2 || e.transfers.empty()) return 0;
  const Node* n = g.find(e.tensor);
  internal_check(n != nullptr);
  std::map<Rank, double> out, in;
  double all = 0;
  for (size_t t : e.transfers) {
    const double b = slice_bytes(*n, g.transfers[t].slice);
    out[g.transfers[t].from] += b, in[g.transfers[t].to] += b, all += b;
  }
  switch (e.kind) {
    case Exchange::Kind::Broadcast: {
      const double b = slice_bytes(*n, g.transfers[e.transfers[0]].slice);
      return broadcast_time(slowest(m, e.members, b), p, b).time;
    }
    case Exchange::Kind::AllGather: {
      const double b = all / double(p - 1);  // each part reaches p - 1 members
      return all_gather_time(slowest(m, e.members, b / p), p, b).time;
    }
    case Exchange::Kind::AllToAll: {
      double busiest = 0;
      for (const auto* side : {&out, &in})
        for (const auto& [r, b] : *side) busiest = std::max(busiest, b);
      return all_to_all_time(slowest(m, e.members, busiest / (p - 1)), p, busiest).time;
    }
  }
  return 0;
}

// How long a broadcast keeps its root's link busy: the copies it sends down the tree, or its
// scatter, whichever form the collective takes.
double root_time(const ShardedGraph& g, const Exchange& e, const Mesh& m) {
  const int p = static_cast<int>(e.members.size());
  const Node* n = g.find(e.tensor);
  if (p < 2 || e.transfers.empty() || !n) return 0;
  const double b = slice_bytes(*n, g.transfers[e.transfers[0]].slice);
  return broadcast_root_time(slowest(m, e.members, b), p, b);
}

PlanCost cost_of(const ShardedGraph& g, const Mesh& m) {
  internal_check(g.num_ranks <= m.ranks);
  const int R = g.num_ranks;
  PlanCost c;
  c.rank_busy.assign(R, 0.0);
  std::unordered_map<uint64_t, const Node*> node;
  std::unordered_map<uint64_t, poly::Signature> sig;
  for (const NodeRef& n : g.nodes) node[n->id] = n.get();
  auto node_of = [&](uint64_t id) -> const Node& {
    auto it = node.find(id);
    internal_check(it != node.end());
    return *it->second;
  };
  auto sig_of = [&](uint64_t id) -> const poly::Signature& {
    auto it = sig.find(id);
    if (it == sig.end()) it = sig.emplace(id, poly::signature_of(node_of(id))).first;
    return it->second;
  };

  // Block durations and memory, independent of the schedule.
  std::vector<double> block_time(g.blocks.size());
  for (size_t i = 0; i < g.blocks.size(); ++i) {
    const Block& b = g.blocks[i];
    const poly::BlockCost bc = poly::block_cost(sig_of(b.node), b.box);
    block_time[i] = m.compute_time(bc.flops, bc.bytes());
    c.flops += bc.flops;
    c.rank_busy[b.rank] += block_time[i];
  }
  for (const Transfer& t : g.transfers) {
    const double bytes = slice_bytes(node_of(t.tensor), t.slice);
    c.bytes_moved += static_cast<int64_t>(bytes);
  }
  std::vector<std::vector<Rank>> who(g.combines.size());
  std::vector<size_t> scatter(g.combines.size(), 1);  // members of its reduce-scatter
  std::vector<double> combine_bytes(g.combines.size());
  for (size_t i = 0; i < g.combines.size(); ++i) {
    const Combine& k = g.combines[i];
    who[i] = g.participants(k);
    combine_bytes[i] = slice_bytes(node_of(k.node), k.out);
    // Every participant but one destination sends its merged partial once; every other
    // destination receives the result once.
    c.bytes_moved +=
        static_cast<int64_t>(combine_bytes[i] * static_cast<double>(who[i].size() - 1 + k.dest.size() - 1));
  }
  {  // a reduce-scatter: one-destination combines of a node over the same participants
    std::map<std::pair<uint64_t, std::vector<Rank>>, std::vector<size_t>> groups;
    for (size_t i = 0; i < g.combines.size(); ++i)
      if (g.combines[i].dest.size() == 1) groups[{g.combines[i].node, who[i]}].push_back(i);
    for (const auto& [key, members] : groups)
      for (size_t i : members) scatter[i] = members.size();
  }

  // The schedule: advance every rank as far as its dependencies allow, until all are done.
  std::vector<double> clock(R, 0.0);
  std::vector<double> out_free(R, 0.0), in_free(R, 0.0);  // when each rank's link is free again
  std::vector<size_t> pc(R, 0);
  std::vector<double> sent(g.transfers.size(), -1.0);
  std::vector<int> arrived(g.combines.size(), 0);
  std::vector<double> ready(g.combines.size(), 0.0), done(g.combines.size(), -1.0);
  std::vector<bool> waiting(R, false);  // rank r has arrived at the combine it is blocked on
  std::vector<int> joined(g.exchanges.size(), 0);
  std::vector<double> x_ready(g.exchanges.size(), 0.0), x_done(g.exchanges.size(), -1.0);
  size_t remaining = 0;
  for (const auto& s : g.steps) remaining += s.size();
  while (remaining > 0) {
    bool progress = false;
    for (Rank r = 0; r < R; ++r) {
      const std::vector<Step>& steps = g.steps[r];
      while (pc[r] < steps.size()) {
        const Step& st = steps[pc[r]];
        if (st.kind == Step::Kind::Run) {
          clock[r] += block_time[st.index];
        } else if (st.kind == Step::Kind::Send) {
          // Buffered: the sender's program pays only the message overhead, but its link
          // carries one message at a time (a broadcast from one rank to 63 takes 63 times
          // as long as one message, not the same time).
          const Transfer& t = g.transfers[st.index];
          const Link& l = m.link(t.from, t.to);
          const double bytes = slice_bytes(node_of(t.tensor), t.slice);
          clock[r] += l.latency;
          const double start = std::max(clock[r], out_free[r]);
          out_free[r] = start + bytes / l.bandwidth;
          sent[st.index] = out_free[r] + l.latency;
        } else if (st.kind == Step::Kind::Recv) {
          if (sent[st.index] < 0) break;
          // The receiver's link, too, takes one message at a time.
          const Transfer& t = g.transfers[st.index];
          const double bytes = slice_bytes(node_of(t.tensor), t.slice);
          const double in = std::max(sent[st.index], in_free[r] + bytes / m.link(t.from, t.to).bandwidth);
          in_free[r] = in;
          clock[r] = std::max(clock[r], in);
        } else if (st.kind == Step::Kind::Exchange) {
          // Every member arrives; the collective takes its formula's time from the last
          // arrival (its root's, for a broadcast). A broadcast's root
          // only contributes: its program goes on at once, as after a send, but its link
          // sends its broadcasts one after another (rank 0 rooting 256 of them).
          const size_t k = st.index;
          const Exchange& e = g.exchanges[k];
          if (!waiting[r]) {
            waiting[r] = true;
            x_ready[k] = std::max(x_ready[k], clock[r]);
            // A broadcast's data flows from its root: a receiver has it once the root is in it
            // (a late receiver takes it when it arrives); an all-gather or all-to-all needs every
            // member's part.
            const bool bcast = e.kind == Exchange::Kind::Broadcast && e.root >= 0 && e.root < R;
            ++joined[k];
            if (bcast ? r == e.root : joined[k] == static_cast<int>(e.members.size())) {
              const double start = bcast ? std::max(x_ready[k], out_free[e.root]) : x_ready[k];
              x_done[k] = start + exchange_time(g, e, m);
              if (bcast) out_free[e.root] = start + root_time(g, e, m);
            }
            if (e.kind == Exchange::Kind::Broadcast && e.root == r) {
              waiting[r] = false;
              clock[r] += e.members.size() > 1 ? m.link(r, e.members[e.members[0] == r ? 1 : 0]).latency : 0;
              ++pc[r];
              --remaining;
              progress = true;
              continue;
            }
          }
          if (x_done[k] < 0) break;
          waiting[r] = false;
          clock[r] = std::max(clock[r], x_done[k]);
        } else {  // Combine: arrive once, then wait until every participant has arrived
          const size_t k = st.index;
          if (!waiting[r]) {
            waiting[r] = true;
            ready[k] = std::max(ready[k], clock[r]);
            if (++arrived[k] == static_cast<int>(who[k].size()))
              done[k] =
                  ready[k] + combine_time(m, who[k], g.combines[k].dest.size(), scatter[k], combine_bytes[k]);
          }
          if (done[k] < 0) break;
          waiting[r] = false;
          clock[r] = std::max(clock[r], done[k]);
        }
        ++pc[r];
        --remaining;
        progress = true;
      }
    }
    internal_check(progress);  // a deadlock: verify() rejects such plans
  }
  c.time = g.steps.empty() ? 0.0 : *std::max_element(clock.begin(), clock.end());
  // Memory per rank is a limit, not a price: a plan over it costs more than any plan under it
  // (a second per byte-megabyte over, on top of a million seconds), so the search takes one that
  // fits whenever one exists, and check_memory_limit refuses the rest before they run.
  const PeakMemory pm = peak_memory(g, m.spill);
  c.peak_bytes = pm.bytes.empty() ? 0 : pm.bytes[static_cast<size_t>(pm.worst)];
  for (int64_t b : pm.bytes)
    if (double(b) > m.mem_bytes_per_rank) c.memory_penalty += double(b) - m.mem_bytes_per_rank;
  if (c.memory_penalty > 0) c.memory_penalty = kOverMemory + c.memory_penalty * 1e-6;
  return c;
}

std::string to_string(const PlanCost& c) {
  return cat_str(c.estimated ? "estimated: " : "", "time ", c.time * 1e6, " us, ", c.bytes_moved,
                 " bytes moved, ", c.flops, " flops, peak ", c.peak_bytes, " bytes/rank",
                 c.memory_penalty > 0 ? cat_str(", memory penalty ", c.memory_penalty * 1e6, " us") : "");
}

}  // namespace tapestry::plan
