#include "engine/plan/bands.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

#include "engine/plan/step_slices.hpp"

namespace tapestry::plan {

int band_dim(const poly::Signature& s, const Candidate& c, int bands) {
  if (bands <= 1 || c.replicated || static_cast<int>(c.parts.size()) != s.rank()) return -1;
  for (int j = 0; j < s.rank(); ++j) {
    const poly::IndexDim& d = s.space[static_cast<size_t>(j)];
    if (d.kind == poly::IndexDim::Parallel && d.splittable &&
        c.parts[static_cast<size_t>(j)] * bands <= d.extent)
      return j;
  }
  return -1;
}

bool in_bands(const std::map<uint64_t, Candidate>& choice) {
  for (const auto& [id, c] : choice)
    if (c.bands > 1) return true;
  return false;
}

Candidate banded(const poly::Signature& s, Candidate c, int bands) {
  c.bands = 1;
  if (band_dim(s, c, bands) >= 0) c.bands = bands;
  return c;
}

std::vector<Placement> cut_into_bands(const poly::Signature& s, const Candidate& c,
                                      std::vector<Placement> whole) {
  const int j = band_dim(s, c, c.bands);
  if (j < 0) return whole;
  std::vector<Placement> out;
  out.reserve(whole.size() * static_cast<size_t>(c.bands));
  for (const Placement& p : whole) {
    const int64_t lo = p.box.lo[j], e = p.box.extent(j);
    for (int64_t b = 0; b < c.bands; ++b) {
      Placement q = p;
      q.box.lo[j] = lo + b * e / c.bands;
      q.box.hi[j] = lo + (b + 1) * e / c.bands - 1;
      if (q.box.lo[j] <= q.box.hi[j]) out.push_back(std::move(q));
    }
  }
  return out;
}

namespace {

void order_rank(const ShardedGraph& g, Rank r, std::vector<Step>& steps) {
  const size_t n = steps.size();
  std::map<uint64_t, int> blocks_of;
  std::vector<int> band(n, 0);
  bool several = false;
  for (size_t i = 0; i < n; ++i)
    if (steps[i].kind == Step::Kind::Run) {
      band[i] = blocks_of[g.blocks[steps[i].index].node]++;
      several = several || band[i] > 0;
    }
  if (!several) return;
  // deps[j]: the earlier steps step j waits for.
  StepSlices io(g);
  std::vector<std::vector<size_t>> deps(n);
  std::map<uint64_t, std::vector<std::pair<size_t, Box>>> made;  // tensor -> (step, piece)
  std::map<uint64_t, std::vector<size_t>> partial_runs;          // node -> its partial blocks' steps
  size_t last_message = SIZE_MAX;
  for (size_t j = 0; j < n; ++j) {
    const Step& st = steps[j];
    io.reads(st, r, [&](uint64_t t, const Box& b) {
      auto it = made.find(t);
      if (it == made.end()) return;
      for (const auto& [i, piece] : it->second)
        if (poly::overlaps(piece, b)) deps[j].push_back(i);
    });
    if (st.kind != Step::Kind::Run) {  // messages and collectives keep the plan's order
      if (last_message != SIZE_MAX) deps[j].push_back(last_message);
      last_message = j;
    }
    if (st.kind == Step::Kind::Combine) {
      const uint64_t node = g.combines[st.index].node;
      for (size_t i : partial_runs[node]) deps[j].push_back(i);
    }
    if (st.kind == Step::Kind::Run) {
      const Block& b = g.blocks[st.index];
      if (io.sig(b.node).splits_reduction(b.box)) partial_runs[b.node].push_back(j);
    }
    io.makes(st, r, [&](uint64_t t, const Box& b) { made[t].push_back({j, b}); });
    std::sort(deps[j].begin(), deps[j].end());
    deps[j].erase(std::unique(deps[j].begin(), deps[j].end()), deps[j].end());
  }
  // Priorities: a block's band; a receive's is the first band waiting for it; the others' the
  // last band they wait for.
  std::vector<int> prio(n, 0);
  std::vector<std::vector<size_t>> users(n);
  for (size_t j = 0; j < n; ++j)
    for (size_t i : deps[j]) users[i].push_back(j);
  for (size_t i = 0; i < n; ++i) {
    if (steps[i].kind != Step::Kind::Recv) continue;
    int p = INT32_MAX;
    for (size_t j : users[i])
      if (steps[j].kind == Step::Kind::Run) p = std::min(p, band[j]);
    prio[i] = p == INT32_MAX ? 0 : p;
  }
  for (size_t j = 0; j < n; ++j) {
    if (steps[j].kind == Step::Kind::Run) prio[j] = band[j];
    else if (steps[j].kind != Step::Kind::Recv)
      for (size_t i : deps[j]) prio[j] = std::max(prio[j], prio[i]);
  }
  // List scheduling: of the steps whose dependencies ran, the lowest (priority, plan position).
  std::vector<size_t> waiting(n);
  using Key = std::pair<int, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  for (size_t j = 0; j < n; ++j) {
    waiting[j] = deps[j].size();
    if (!waiting[j]) ready.push({prio[j], j});
  }
  std::vector<Step> out;
  out.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.top().second;
    ready.pop();
    out.push_back(steps[i]);
    for (size_t j : users[i])
      if (--waiting[j] == 0) ready.push({prio[j], j});
  }
  steps = std::move(out);
}

}  // namespace

void order_bands(ShardedGraph& g) {
  for (Rank r = 0; r < g.num_ranks; ++r)
    if (!g.steps[static_cast<size_t>(r)].empty()) order_rank(g, r, g.steps[static_cast<size_t>(r)]);
}

}  // namespace tapestry::plan
