#include "engine/plan/planner.hpp"

#include <chrono>
#include <cstdio>
#include <set>
#include <unordered_set>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/bands.hpp"
#include "engine/plan/fuse.hpp"
#include "engine/plan/reassociate.hpp"
#include "engine/plan/split_scan.hpp"

namespace tapestry::plan {

std::vector<NodeRef> observed_subgraph(const std::vector<NodeRef>& roots) {
  std::vector<NodeRef> topo;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<NodeRef, size_t>> stack;
  for (const NodeRef& r : roots) {
    if (!seen.insert(r.get()).second) continue;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (n->value || next == n->inputs.size()) {
        topo.push_back(n);
        stack.pop_back();
        continue;
      }
      NodeRef in = n->inputs[next++];
      if (seen.insert(in.get()).second) stack.push_back({std::move(in), 0});
    }
  }
  return topo;
}

namespace {

// TAPESTRY_DEBUG=plan: one line per op of the graph a pass leaves.
void dump_graph(const char* pass, const std::vector<NodeRef>& topo) {
  std::string s = cat_str("[plan] after ", pass, ": ", topo.size(), " nodes\n");
  for (const NodeRef& n : topo) {
    s += cat_str("  #", n->id, " ", op_def(n->op).name, " ", shape_str(n->shape), n->value ? " (held)" : "");
    for (size_t k = 0; k < n->inputs.size(); ++k) s += cat_str(k ? ", #" : " <- #", n->inputs[k]->id);
    s += "\n";
  }
  std::fputs(s.c_str(), stderr);
}

}  // namespace

PlannedGraph plan_observation(PlannerState& planner, const std::vector<NodeRef>& roots, const Mesh& mesh,
                              SearchOptions opts, bool fuse_maps, const StoredShards& stored) {
  const auto t0 = std::chrono::steady_clock::now();
  PlannedGraph pg;
  std::unordered_set<const Node*> listed;  // a plan produces each root once
  for (const NodeRef& r : roots)
    if (listed.insert(r.get()).second) pg.observed.push_back(r);
  // Long scans along a dim the mesh must split become chunked scans with carries (split_scan.hpp).
  const std::vector<NodeRef> todo = split_scans(pg.observed, mesh.ranks);
  if (fuse_maps) {
    FusedGraph fg = fuse(todo);
    pg.roots = std::move(fg.roots);
    pg.fused_origin = std::move(fg.origin);
  } else {
    pg.roots = todo;
  }
  pg.mesh = mesh;
  auto inputs_of = [&](const std::vector<NodeRef>& of, std::vector<NodeRef>& topo,
                       std::vector<Shard>& initial) {
    topo = observed_subgraph(of);  // the subgraph of the roots, and where its inputs lie
    initial.clear();
    for (const NodeRef& n : topo) {
      // A stored tensor is read where it lies: no data moves to rank 0 and back.
      if (const std::vector<Shard>* s = stored ? stored(n->id) : nullptr)
        initial.insert(initial.end(), s->begin(), s->end());
      // An empty tensor (a size-0 dim) has nothing to compute: it is held, whole on rank 0, as a
      // value is. The builders fold every op with an empty result (engine/ir/build/empty.hpp), so
      // no op of a plan ever has an empty index space.
      else if (n->value || numel(n->shape) == 0) initial.push_back(Shard{n->id, Box::of_shape(n->shape), 0});
    }
  };
  auto inputs = [&] { inputs_of(pg.roots, pg.topo, pg.initial); };
  inputs();
  if (planner.dump) dump_graph(fuse_maps ? "fuse" : "observe", pg.topo);
  PlanCache& cache = planner.cache;
  const size_t hits = cache.hits(), misses = cache.misses();
  if (opts.reassociate && may_have_chains(pg.roots) && !find_chains(pg.roots, pg.initial).empty()) {
    // An order's finalists are planned whole, through the cache: the winner's plan is then a hit.
    auto planned = [&](const std::vector<NodeRef>& of) {
      std::vector<NodeRef> topo;
      std::vector<Shard> initial;
      inputs_of(of, topo, initial);
      return cache.plan(topo, initial, of, mesh, constrained(topo, mesh.ranks, opts)).cost.total();
    };
    // The orders are chosen once per graph structure: a hit replays them.
    const std::vector<std::vector<int>>* known = cache.orders(pg.topo, pg.initial, pg.roots, mesh, opts);
    const Reassociated r = known ? reassociate_as(pg.roots, pg.initial, *known)
                                 : reassociate(pg.roots, pg.initial, mesh, opts, planned);
    if (!known && !r.orders.empty()) cache.keep_orders(pg.topo, pg.initial, pg.roots, mesh, opts, r.orders);
    pg.reassociated = r.report;
    if (r.changed) {
      pg.roots = r.roots;
      inputs();
    }
    if (planner.dump) {
      for (const std::string& line : r.report) std::fprintf(stderr, "[plan] %s\n", line.c_str());
      dump_graph("reassociate", pg.topo);
    }
  }
  opts = constrained(pg.topo, mesh.ranks, std::move(opts));
  pg.plan = cache.plan(pg.topo, pg.initial, pg.roots, mesh, opts);
  // Out of core: where no plan fits the memory but stored pieces may wait on disk, the ops run
  // in bands, the fewest that fit in kBandHeadroom of it (bands.hpp); doubling them stops when
  // it saves nothing more.
  if (mesh.spill && double(pg.plan.cost.peak_bytes) > mesh.mem_bytes_per_rank) {
    int64_t best = pg.plan.cost.peak_bytes;
    for (int b = 2; b <= kMaxBands; b *= 2) {
      opts.bands = b;
      Plan p = cache.plan(pg.topo, pg.initial, pg.roots, mesh, opts);
      if (double(p.cost.peak_bytes) <= kBandHeadroom * mesh.mem_bytes_per_rank) {
        pg.plan = std::move(p);
        pg.bands = b;
        break;
      }
      if (p.cost.peak_bytes >= best) break;
      best = p.cost.peak_bytes;
    }
  }
  pg.cache_hit = cache.hits() > hits && cache.misses() == misses;  // nothing was planned anew
  PlannerStats& st = planner.stats;
  ++st.plans;
  if (pg.cache_hit) ++st.cache_hits;
  st.time_plan += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return pg;
}

LayoutInfo layout_of(const PlannedGraph& pg, uint64_t node, const ShardedGraph* part) {
  const ShardedGraph& g = part ? *part : pg.plan.graph();
  LayoutInfo li;
  for (size_t i = 0; i < pg.observed.size(); ++i)  // an observed root may be fused away
    if (pg.observed[i]->id == node) node = pg.roots[i]->id;
  const Node* n = g.find(node);
  internal_check(n != nullptr);
  const size_t r = n->shape.size();
  // Results (outputs) of roots; else the output slices of its blocks or combines; else held.
  for (const Shard& s : g.outputs)
    if (s.tensor == node) li.shards.push_back(s);
  if (li.shards.empty()) {
    bool combined = false;
    for (const Combine& c : g.combines)
      if (c.node == node)
        for (Rank d : c.dest) li.shards.push_back(Shard{node, c.out, d}), combined = true;
    if (!combined) {
      const poly::Signature sig = poly::signature_of(*n);
      for (const Block& b : g.blocks)
        if (b.node == node) li.shards.push_back(Shard{node, sig.output_slice(b.box), b.rank});
    }
  }
  if (li.shards.empty())
    for (const Shard& s : g.initial)
      if (s.tensor == node) li.shards.push_back(s);
  std::vector<std::set<int64_t>> starts(r);
  for (const Shard& s : li.shards)
    for (size_t d = 0; d < r; ++d) starts[d].insert(s.box.lo[d]);
  for (size_t d = 0; d < r; ++d) li.grid.push_back(std::max<int64_t>(1, starts[d].size()));
  return li;
}

std::string grid_string(const std::vector<int64_t>& grid) {
  int split_dims = 0, dim = -1;
  for (size_t d = 0; d < grid.size(); ++d)
    if (grid[d] > 1) ++split_dims, dim = static_cast<int>(d);
  if (split_dims == 0) return "whole";
  if (split_dims == 1) return cat_str("split(", dim + 1, ", ", grid[dim], ")");
  std::string s = "grid{";
  for (size_t d = 0; d < grid.size(); ++d) s += (d ? "," : "") + std::to_string(grid[d]);
  return s + "}";
}

}  // namespace tapestry::plan
