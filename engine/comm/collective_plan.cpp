#include "engine/comm/collective_plan.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "engine/poly/signature.hpp"

namespace tapestry::comm {

using plan::Step;

int CollectivePlan::count() const {
  return static_cast<int>(
      std::count_if(combines.begin(), combines.end(), [](const CombineRoute& r) { return r.collective; }));
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
                       const poly::Signature& s, const Transport& t) {
  CombineRoute r;
  // No merge for arg-reductions: their partials carry an index next to the value, which no MPI
  // reduction op merges the way the kernels do.
  const std::optional<Monoid> op = poly::monoid_of(c.kind);
  if (!op || !t.can_reduce(*op, n.dtype) || c.out.empty() || c.partials.empty() || c.dest.empty()) return r;
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

}  // namespace

CollectivePlan plan_collectives(const plan::ShardedGraph& g, const Transport& t) {
  CollectivePlan cp;
  cp.combines.resize(g.combines.size());
  if (g.combines.empty() || !t.can_reduce(Monoid::Sum, DType::F32)) return cp;  // no collectives at all
  std::unordered_map<uint64_t, const Node*> nodes;
  for (const NodeRef& n : g.nodes) nodes[n->id] = n.get();
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
  if (t.can_reduce_scatter()) {
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
  // A rank's part of a plan lists only its own program: the other members' are taken as
  // lower() makes them, each meeting every combine once and all in the plan's combine order.
  const auto listed = [&](int r) { return g.part_of < 0 || r == g.part_of; };
  // Where each rank meets each combine in its program; a member must meet it exactly once.
  std::vector<std::unordered_map<size_t, size_t>> at(g.steps.size());
  std::vector<bool> bad(g.combines.size(), false);
  for (size_t r = 0; r < g.steps.size(); ++r)
    for (size_t i = 0; i < g.steps[r].size(); ++i) {
      const Step& st = g.steps[r][i];
      if (st.kind != Step::Kind::Combine || st.index >= g.combines.size()) continue;
      if (!at[r].emplace(st.index, i).second) bad[st.index] = true;
    }
  std::map<Group, std::vector<size_t>> by_group;
  for (size_t c = 0; c < cp.combines.size(); ++c) {
    if (!cp.combines[c].collective) continue;
    for (int r : cp.combines[c].spec.group)
      if (static_cast<size_t>(r) >= at.size() || (!at[r].count(c) && listed(r))) bad[c] = true;
    if (bad[c]) cp.combines[c] = {};
    else by_group[cp.combines[c].spec.group].push_back(c);
  }
  // Collectives on one communicator match by the order the members start them: a group whose
  // members meet its combines in different orders keeps them all point to point.
  for (auto& [group, list] : by_group) {
    std::vector<size_t> first;
    bool same = true;
    for (int r : group) {
      if (!listed(r)) continue;
      std::vector<size_t> order = list;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[r].at(a) < at[r].at(b); });
      if (first.empty()) first = order;
      else same = same && order == first;
    }
    if (!same)
      for (size_t c : list) cp.combines[c] = {};
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
  for (const CombineRoute& r : cp.combines)
    if (r.collective && std::find(cp.groups.begin(), cp.groups.end(), r.spec.group) == cp.groups.end())
      cp.groups.push_back(r.spec.group);
  return cp;
}

}  // namespace tapestry::comm
