#include "engine/plan/peak_memory.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"
#include "engine/plan/step_slices.hpp"

namespace tapestry::plan {

namespace {

int64_t bytes_of(const Node& n, const Box& box) {
  int64_t e = box.empty() ? 0 : box.volume();
  for (size_t d = static_cast<size_t>(box.rank()); d < n.shape.size(); ++d)
    e *= n.shape[d];  // partials' extra dims
  return e * static_cast<int64_t>(dtype_size(n.dtype));
}

// A split reduction's partials, apart from the value they combine into (which stays for its
// readers after the combine frees the partials).
uint64_t partials_of(uint64_t t) { return t | (uint64_t(1) << 63); }

// The tensors step `st` of rank r reads on that rank.
template <class F> void reads(const ShardedGraph& g, const Step& st, Rank r, F&& f) {
  switch (st.kind) {
    case Step::Kind::Run: {
      const Node* n = g.find(g.blocks[st.index].node);
      if (n)
        for (const NodeRef& in : n->inputs) f(in->id);
      return;
    }
    case Step::Kind::Send: f(g.transfers[st.index].tensor); return;
    case Step::Kind::Recv: return;
    case Step::Kind::Combine: f(partials_of(g.combines[st.index].node)); return;
    case Step::Kind::Exchange: {  // what this rank sends of it
      const Exchange& e = g.exchanges[st.index];
      for (size_t t : e.transfers)
        if (g.transfers[t].from == r) return f(e.tensor);
      return;
    }
  }
}

}  // namespace

uint64_t partials_key(uint64_t t) { return partials_of(t); }

std::vector<std::vector<std::vector<uint64_t>>> last_reads(const ShardedGraph& g) {
  std::vector<std::vector<std::vector<uint64_t>>> out(static_cast<size_t>(g.num_ranks));
  std::vector<std::unordered_set<uint64_t>> results(static_cast<size_t>(g.num_ranks));
  for (const Shard& o : g.outputs) results[static_cast<size_t>(o.rank)].insert(o.tensor);
  for (Rank r = 0; r < g.num_ranks; ++r) {
    const std::vector<Step>& steps = g.steps[static_cast<size_t>(r)];
    std::unordered_map<uint64_t, size_t> last;
    for (size_t i = 0; i < steps.size(); ++i) reads(g, steps[i], r, [&](uint64_t t) { last[t] = i; });
    out[static_cast<size_t>(r)].resize(steps.size());
    for (const auto& [t, i] : last)
      if (!results[static_cast<size_t>(r)].count(t)) out[static_cast<size_t>(r)][i].push_back(t);
    for (auto& v : out[static_cast<size_t>(r)]) std::sort(v.begin(), v.end());
  }
  return out;
}

namespace {

// peak_memory(g, true): pieces live from their first to their last step (step_slices.hpp).
PeakMemory peak_out_of_core(const ShardedGraph& g) {
  const auto R = static_cast<size_t>(g.num_ranks);
  PeakMemory pm;
  pm.bytes.assign(R, 0);
  pm.op.assign(R, 0);
  StepSlices io(g);
  const auto frees = last_reads(g);
  for (size_t r = 0; r < R; ++r) {
    const std::vector<Step>& steps = g.steps[r];
    const size_t n = steps.size();
    std::vector<int64_t> add(n, 0), sub(n, 0);
    std::vector<uint64_t> what(n, 0);
    std::unordered_set<uint64_t> roots;
    for (const Shard& o : g.outputs)
      if (o.rank == static_cast<Rank>(r)) roots.insert(o.tensor);
    std::unordered_set<int> lazy;
    for (const PieceLife& l : piece_lives(g, static_cast<Rank>(r))) {
      const int64_t b = bytes_of(io.node(l.tensor), l.box);
      add[l.first] += b;
      if (!what[l.first] || l.initial < 0) what[l.first] = l.tensor;
      if (l.initial >= 0) lazy.insert(l.initial);
      // A root's piece that is no result shard of its own waits for the end (it is assembled
      // into one); a result shard goes to the shard store after its last reader here.
      if (l.initial >= 0 || l.result || !roots.count(l.tensor)) sub[l.last] += b;
    }
    int64_t live = 0;
    for (size_t i = 0; i < g.initial.size(); ++i)
      if (g.initial[i].rank == static_cast<Rank>(r) && !lazy.count(static_cast<int>(i)))
        live += bytes_of(io.node(g.initial[i].tensor), g.initial[i].box);
    pm.bytes[r] = live;
    std::unordered_map<uint64_t, int64_t> partials;  // a split reduction's, until its combine
    for (size_t i = 0; i < n; ++i) {
      if (steps[i].kind == Step::Kind::Run) {
        const Block& b = g.blocks[steps[i].index];
        if (io.sig(b.node).splits_reduction(b.box)) {
          const int64_t p = bytes_of(io.node(b.node), io.sig(b.node).output_slice(b.box));
          partials[partials_of(b.node)] += p;
          add[i] += p;
          what[i] = b.node;
        }
      }
      live += add[i];
      if (live > pm.bytes[r]) pm.bytes[r] = live, pm.op[r] = what[i];
      live -= sub[i];
      for (uint64_t dead : frees[r][i]) {
        auto it = partials.find(dead);
        if (it == partials.end()) continue;
        live -= it->second;
        partials.erase(it);
      }
    }
  }
  pm.worst = static_cast<int>(std::max_element(pm.bytes.begin(), pm.bytes.end()) - pm.bytes.begin());
  return pm;
}

}  // namespace

PeakMemory peak_memory(const ShardedGraph& g, bool out_of_core) {
  if (out_of_core) return peak_out_of_core(g);
  const auto R = static_cast<size_t>(g.num_ranks);
  PeakMemory pm;
  pm.bytes.assign(R, 0);
  pm.op.assign(R, 0);
  std::unordered_map<uint64_t, const Node*> node;
  for (const NodeRef& n : g.nodes) node[n->id] = n.get();
  auto find = [&](uint64_t id) -> const Node& {
    auto it = node.find(id);
    internal_check(it != node.end());
    return *it->second;
  };
  std::vector<int64_t> held(R, 0);  // the shards held before the plan: never freed by it
  for (const Shard& h : g.initial) held[static_cast<size_t>(h.rank)] += bytes_of(find(h.tensor), h.box);
  std::unordered_map<uint64_t, poly::Signature> sigs;
  auto sig = [&](uint64_t id) -> const poly::Signature& {
    auto it = sigs.find(id);
    if (it == sigs.end()) it = sigs.emplace(id, poly::signature_of(find(id))).first;
    return it->second;
  };
  const auto frees = last_reads(g);
  for (size_t r = 0; r < R; ++r) {
    std::unordered_map<uint64_t, int64_t> made;  // per tensor: bytes this rank made or received
    int64_t live = held[r];
    pm.bytes[r] = live;
    const std::vector<Step>& steps = g.steps[r];
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& st = steps[i];
      uint64_t t = 0;
      int64_t add = 0;
      if (st.kind == Step::Kind::Run) {
        const Block& b = g.blocks[st.index];
        t = sig(b.node).splits_reduction(b.box) ? partials_of(b.node) : b.node;
        add = bytes_of(find(b.node), sig(b.node).output_slice(b.box));
      } else if (st.kind == Step::Kind::Recv) {
        const Transfer& x = g.transfers[st.index];
        t = x.tensor;
        add = bytes_of(find(t), x.slice);
      } else if (st.kind == Step::Kind::Exchange) {  // what it receives
        const Exchange& e = g.exchanges[st.index];
        t = e.tensor;
        for (size_t x : e.transfers)
          if (g.transfers[x].to == static_cast<Rank>(r)) add += bytes_of(find(t), g.transfers[x].slice);
      } else if (st.kind == Step::Kind::Combine) {
        const Combine& c = g.combines[st.index];
        if (std::find(c.dest.begin(), c.dest.end(), static_cast<Rank>(r)) != c.dest.end()) {
          t = c.node;
          add = bytes_of(find(t), c.out);
        }
      }
      live += add;
      made[t] += add;
      if (live > pm.bytes[r]) pm.bytes[r] = live, pm.op[r] = t & ~(uint64_t(1) << 63);
      for (uint64_t dead : frees[r][i]) {
        auto it = made.find(dead);
        if (it == made.end()) continue;
        live -= it->second;
        made.erase(it);
      }
    }
  }
  pm.worst = static_cast<int>(std::max_element(pm.bytes.begin(), pm.bytes.end()) - pm.bytes.begin());
  return pm;
}

}  // namespace tapestry::plan
