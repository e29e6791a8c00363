#include "engine/plan/step_slices.hpp"

#include <map>

#include "engine/ir/error.hpp"
#include "engine/poly/signature.hpp"

namespace tapestry::plan {

StepSlices::StepSlices(const ShardedGraph& g) : g_(g) {
  for (const NodeRef& n : g.nodes) nodes_[n->id] = n.get();
}

const Node& StepSlices::node(uint64_t id) const {
  auto it = nodes_.find(id);
  internal_check(it != nodes_.end());
  return *it->second;
}

const poly::Signature& StepSlices::sig(uint64_t id) {
  auto it = sigs_.find(id);
  if (it == sigs_.end()) it = sigs_.emplace(id, poly::signature_of(node(id))).first;
  return it->second;
}

std::vector<PieceLife> piece_lives(const ShardedGraph& g, Rank r) {
  StepSlices io(g);
  const std::vector<Step>& steps = g.steps[static_cast<size_t>(r)];
  std::vector<PieceLife> lives;
  std::map<uint64_t, std::vector<size_t>> of;  // tensor -> its pieces in `lives`
  std::map<uint64_t, std::vector<Box>> results;
  for (const Shard& o : g.outputs)
    if (o.rank == r) results[o.tensor].push_back(o.box);
  auto is_result = [&](uint64_t t, const Box& b) {
    auto it = results.find(t);
    if (it == results.end()) return false;
    for (const Box& o : it->second)
      if (o == b) return true;
    return false;
  };
  constexpr size_t kUnread = SIZE_MAX;
  for (size_t i = 0; i < g.initial.size(); ++i) {
    const Shard& h = g.initial[i];
    if (h.rank != r || io.node(h.tensor).value || results.count(h.tensor)) continue;
    of[h.tensor].push_back(lives.size());
    lives.push_back({h.tensor, h.box, kUnread, 0, static_cast<int>(i), false});
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    io.reads(steps[i], r, [&](uint64_t t, const Box& b) {
      auto it = of.find(t);
      if (it == of.end()) return;
      for (size_t p : it->second) {
        PieceLife& l = lives[p];
        if (!poly::overlaps(l.box, b)) continue;
        if (l.first == kUnread) l.first = i;
        l.last = i;
      }
    });
    io.makes(steps[i], r, [&](uint64_t t, const Box& b) {
      of[t].push_back(lives.size());
      lives.push_back({t, b, i, i, -1, is_result(t, b)});
    });
  }
  std::vector<PieceLife> out;
  for (PieceLife& l : lives)
    if (l.first != kUnread) out.push_back(std::move(l));  // an unread initial shard stays whole
  return out;
}

}  // namespace tapestry::plan
