// Helpers shared by the plan tests: graphs, topological order, plan surgery.
//   std::vector<NodeRef> topo = topo_of({y});        // reachable nodes, leaves included
//   erase_transfer(g, 3);                             // a plan missing one transfer
#pragma once

#include <algorithm>
#include <functional>
#include <map>

#include "engine/ir/node.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan::testing {

// Every node the roots reach, in id (= creation, hence topological) order.
inline std::vector<NodeRef> topo_of(const std::vector<NodeRef>& roots) {
  std::map<uint64_t, NodeRef> seen;
  std::function<void(const NodeRef&)> visit = [&](const NodeRef& n) {
    if (!seen.emplace(n->id, n).second) return;
    for (const NodeRef& in : n->inputs) visit(in);
  };
  for (const NodeRef& r : roots) visit(r);
  std::vector<NodeRef> out;
  for (auto& [id, n] : seen) out.push_back(n);
  return out;
}

// Removes transfer t and its two steps (or its place in an exchange), renumbering the later
// transfers.
inline void erase_transfer(ShardedGraph& g, size_t t) {
  g.transfers.erase(g.transfers.begin() + static_cast<std::ptrdiff_t>(t));
  for (Exchange& e : g.exchanges) {
    std::erase(e.transfers, t);
    for (size_t& x : e.transfers)
      if (x > t) --x;
    if (e.after != Exchange::kUnplaced && e.after > t) --e.after;
  }
  for (Combine& c : g.combines)
    if (c.after != Combine::kUnplaced && c.after > t) --c.after;
  for (auto& steps : g.steps) {
    std::erase_if(steps, [&](const Step& s) {
      return (s.kind == Step::Kind::Send || s.kind == Step::Kind::Recv) && s.index == t;
    });
    for (Step& s : steps)
      if ((s.kind == Step::Kind::Send || s.kind == Step::Kind::Recv) && s.index > t) --s.index;
  }
}

}  // namespace tapestry::plan::testing
