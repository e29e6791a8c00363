#include "engine/comm/collective_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "engine/ir/error.hpp"
#include "engine/poly/signature.hpp"

namespace tapestry::comm {

using plan::Step;

const char* exchange_name(ExchangeKind k) {
  switch (k) {
    case ExchangeKind::Broadcast: return "broadcast";
    case ExchangeKind::AllGather: return "all-gather";
    case ExchangeKind::AllToAll: return "all-to-all";
  }
  return "?";
}

namespace {
int64_t sum(const std::vector<int64_t>& v) {
  int64_t n = 0;
  for (int64_t x : v) n += x;
  return n;
}
}  // namespace

int ExchangeSpec::member(int rank) const {
  const auto at = std::lower_bound(group.begin(), group.end(), rank);
  internal_check(at != group.end() && *at == rank);
  return static_cast<int>(at - group.begin());
}

int64_t ExchangeSpec::sent(int rank) const {
  const size_t i = static_cast<size_t>(member(rank)), p = group.size();
  switch (kind) {
    case ExchangeKind::Broadcast: return rank == root ? counts.at(0) * static_cast<int64_t>(p - 1) : 0;
    case ExchangeKind::AllGather: return counts.at(i) * static_cast<int64_t>(p - 1);
    case ExchangeKind::AllToAll: return sum(counts) - counts.at(i);
  }
  return 0;
}

int64_t ExchangeSpec::received(int rank) const {
  const size_t i = static_cast<size_t>(member(rank));
  switch (kind) {
    case ExchangeKind::Broadcast: return rank == root ? 0 : counts.at(0);
    case ExchangeKind::AllGather: return sum(counts) - counts.at(i);
    case ExchangeKind::AllToAll: return sum(recv) - recv.at(i);
  }
  return 0;
}

int CollectivePlan::count() const {
  return static_cast<int>(
      std::count_if(combines.begin(), combines.end(), [](const CombineRoute& r) { return r.collective; }));
}

int CollectivePlan::exchange_count() const {
  return static_cast<int>(
      std::count_if(exchanges.begin(), exchanges.end(), [](const ExchangeRoute& r) { return r.collective; }));
}

namespace {

// Elements of `out` with the node's trailing dims beyond the box (as the executor counts them).
int64_t elements(const Node& n, const poly::Box& out) {
  int64_t e = numel(out.extents());
  for (size_t d = static_cast<size_t>(out.rank()); d < n.shape.size(); ++d) e *= n.shape[d];
  return e;
}

// The route of combine c alone, before the order of its group's collectives is checked.
CombineRoute route_one(const plan::ShardedGraph& g, const plan::Combine& c, const Node& n,
                       const poly::Signature& s, const Capabilities& t) {
  CombineRoute r;
  // No merge for arg-reductions: their partials carry an index next to the value, which no MPI
  // reduction op merges the way the kernels do.
  const std::optional<Monoid> op = poly::monoid_of(c.kind);
  if (!op || !t.reduce || !t.reduce(*op, n.dtype) || c.out.empty() || c.partials.empty() || c.dest.empty())
    return r;
  if (elements(n, c.out) > kMaxCollectiveElements) return r;
  for (size_t p : c.partials)
    if (p >= g.blocks.size() || !s.output_slice(g.blocks[p].box).contains(c.out)) return r;
  const std::vector<plan::Rank> members = g.participants(c);
  if (members.size() < 2) return r;  // all local: nothing to communicate
  std::vector<plan::Rank> dest = c.dest;
  std::sort(dest.begin(), dest.end());
  dest.erase(std::unique(dest.begin(), dest.end()), dest.end());
  if (dest.size() == 1) r.spec.root = dest[0];
  else if (dest == members) r.spec.root = kAllMembers;
  else return r;  // some but not all: point to point sends each destination only what it needs
  r.spec.group.assign(members.begin(), members.end());
  r.spec.op = *op;
  r.collective = true;
  return r;
}

// The exchanges that can run as the transport's collectives (their order is checked after).
// Measured under mpirun -n 8 on the 2-core machine (docs/planner.md): a 1 MiB broadcast as
// MPI_Ibcast took 8 ms (MPI_Bcast's time) where its tree of point-to-point messages took 85, but
// a 64 MiB one 0.83 s where the tree took 0.54 (and an all-gather of 64 MiB 1.1 s against 0.31):
// Open MPI's non-blocking collectives move a large message only as fast as every member polls
// them, and 8 ranks share 2 cores. So exchanges of tensors past 16 MiB stay point to point.
void route_exchanges(const plan::ShardedGraph& g, const Capabilities& t,
                     const std::unordered_map<uint64_t, const Node*>& nodes, CollectivePlan& cp) {
  cp.exchanges.resize(g.exchanges.size());
  if (!t.exchange) return;
  for (size_t e = 0; e < g.exchanges.size(); ++e) {
    const plan::Exchange& x = g.exchanges[e];
    const auto n = nodes.find(x.tensor);
    if (n == nodes.end() || x.members.size() < 2 || x.transfers.empty()) continue;
    const int64_t bytes = numel(n->second->shape) * static_cast<int64_t>(dtype_size(n->second->dtype));
    if (bytes > kMaxExchangeBytes / static_cast<int64_t>(x.members.size())) continue;
    if (bytes > kMaxCollectiveExchangeBytes) continue;
    cp.exchanges[e].collective = true;
    cp.exchanges[e].group.assign(x.members.begin(), x.members.end());
  }
}

}  // namespace

namespace {

void route_combines(const plan::ShardedGraph& g, const Capabilities& t,
                    const std::unordered_map<uint64_t, const Node*>& nodes, CollectivePlan& cp) {
  std::unordered_map<uint64_t, poly::Signature> sigs;
  for (size_t c = 0; c < g.combines.size(); ++c) {
    const plan::Combine& m = g.combines[c];
    const auto n = nodes.find(m.node);
    if (n == nodes.end()) continue;  // the executor reports the bad plan
    auto s = sigs.find(m.node);
    if (s == sigs.end()) s = sigs.emplace(m.node, poly::signature_of(*n->second)).first;
    cp.combines[c] = route_one(g, m, *n->second, s->second, t);
  }
  // Reduce-scatters: the one-destination collective combines of a node over the same group,
  // one to each member, become one collective (their outs are disjoint pieces of what every
  // partial covers, as lower() makes them; route_one checked the covering).
  if (t.reduce_scatter) {
    std::map<std::pair<uint64_t, Group>, std::vector<size_t>> pieces;
    for (size_t c = 0; c < cp.combines.size(); ++c)
      if (cp.combines[c].collective && cp.combines[c].spec.root != kAllMembers)
        pieces[{g.combines[c].node, cp.combines[c].spec.group}].push_back(c);
    for (auto& [key, list] : pieces) {
      const Group& group = key.second;
      if (list.size() != group.size()) continue;
      std::vector<size_t> by_member(group.size(), g.combines.size());
      bool ok = true;
      for (size_t c : list) {
        const auto at = std::lower_bound(group.begin(), group.end(), cp.combines[c].spec.root);
        const size_t i = static_cast<size_t>(at - group.begin());
        ok = ok && at != group.end() && *at == cp.combines[c].spec.root && by_member[i] == g.combines.size();
        if (ok) by_member[i] = c;
      }
      for (size_t a = 0; ok && a < list.size(); ++a)
        for (size_t b = a + 1; ok && b < list.size(); ++b)
          ok = !poly::overlaps(g.combines[list[a]].out, g.combines[list[b]].out);
      if (!ok) continue;
      std::vector<int64_t> counts;
      for (size_t c : by_member) counts.push_back(elements(*nodes.at(g.combines[c].node), g.combines[c].out));
      for (size_t c : list) {
        cp.combines[c].spec.counts = counts;
        cp.combines[c].scatter = by_member;
      }
    }
  }
}

// A collective runs on every member of its group or on none (point to point), and the members
// of a group meet its collectives, combines and exchanges, in one order (collectives on a
// communicator match by the order the members start them). A rank's part of a plan lists only
// its own program: the other members' are taken as lower() makes them, each meeting every
// collective once and all in the plan's order.
void check_order(const plan::ShardedGraph& g, CollectivePlan& cp) {
  const auto listed = [&](int r) { return g.part_of < 0 || r == g.part_of; };
  // A collective: a combine (false, index) or an exchange (true, index).
  using Item = std::pair<bool, size_t>;
  // Where each rank meets each collective in its program; a member must meet it exactly once.
  std::vector<std::map<Item, size_t>> at(g.steps.size());
  std::set<Item> bad;
  for (size_t r = 0; r < g.steps.size(); ++r)
    for (size_t i = 0; i < g.steps[r].size(); ++i) {
      const Step& st = g.steps[r][i];
      if (st.kind == Step::Kind::Combine && st.index < g.combines.size()) {
        if (!at[r].emplace(Item{false, st.index}, i).second) bad.insert({false, st.index});
      } else if (st.kind == Step::Kind::Exchange && st.index < g.exchanges.size()) {
        if (!at[r].emplace(Item{true, st.index}, i).second) bad.insert({true, st.index});
      }
    }
  const auto group_of = [&](const Item& it) -> const Group& {
    return it.first ? cp.exchanges[it.second].group : cp.combines[it.second].spec.group;
  };
  const auto drop = [&](const Item& it) {
    if (it.first) cp.exchanges[it.second] = {};
    else cp.combines[it.second] = {};
  };
  std::map<Group, std::vector<Item>> by_group;
  std::vector<Item> all;
  for (size_t c = 0; c < cp.combines.size(); ++c)
    if (cp.combines[c].collective) all.push_back({false, c});
  for (size_t e = 0; e < cp.exchanges.size(); ++e)
    if (cp.exchanges[e].collective) all.push_back({true, e});
  for (const Item& it : all) {
    bool wrong = bad.count(it) > 0;
    for (int r : group_of(it))
      if (static_cast<size_t>(r) >= at.size() || (!at[r].count(it) && listed(r))) wrong = true;
    if (wrong) drop(it);
    else by_group[group_of(it)].push_back(it);
  }
  for (auto& [group, list] : by_group) {
    std::vector<Item> first;
    bool same = true;
    for (int r : group) {
      if (!listed(r)) continue;
      std::vector<Item> order = list;
      std::sort(order.begin(), order.end(),
                [&](const Item& a, const Item& b) { return at[r].at(a) < at[r].at(b); });
      if (first.empty()) first = order;
      else same = same && order == first;
    }
    if (!same)
      for (const Item& it : list) drop(it);
  }
  // A reduce-scatter runs whole or not at all: one whose member fell back to point to point
  // leaves the others as separate reduces.
  for (size_t c = 0; c < cp.combines.size(); ++c) {
    const std::vector<size_t> members = cp.combines[c].scatter;
    bool whole = true;
    for (size_t m : members) whole = whole && cp.combines[m].collective && cp.combines[m].scatter == members;
    if (whole) continue;
    for (size_t m : members)
      if (cp.combines[m].scatter == members)
        cp.combines[m].scatter.clear(), cp.combines[m].spec.counts.clear();
  }
}

}  // namespace

Capabilities Capabilities::of(const Transport& t) {
  Capabilities c;
  if (t.can_reduce(Monoid::Sum, DType::F32))
    c.reduce = [&t](Monoid op, DType dtype) { return t.can_reduce(op, dtype); };
  c.reduce_scatter = t.can_reduce_scatter();
  c.exchange = t.can_exchange();
  return c;
}

CollectivePlan plan_collectives(const plan::ShardedGraph& g, const Transport& t) {
  return plan_collectives(g, Capabilities::of(t));
}

CollectivePlan plan_collectives(const plan::ShardedGraph& g, const Capabilities& t) {
  CollectivePlan cp;
  cp.combines.resize(g.combines.size());
  std::unordered_map<uint64_t, const Node*> nodes;
  for (const NodeRef& n : g.nodes) nodes[n->id] = n.get();
  route_exchanges(g, t, nodes, cp);
  if (!g.combines.empty() && t.reduce) route_combines(g, t, nodes, cp);
  check_order(g, cp);
  for (const CombineRoute& r : cp.combines)
    if (r.collective && std::find(cp.groups.begin(), cp.groups.end(), r.spec.group) == cp.groups.end())
      cp.groups.push_back(r.spec.group);
  for (const ExchangeRoute& r : cp.exchanges)
    if (r.collective && std::find(cp.groups.begin(), cp.groups.end(), r.group) == cp.groups.end())
      cp.groups.push_back(r.group);
  return cp;
}

}  // namespace tapestry::comm
