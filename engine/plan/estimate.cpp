#include "engine/plan/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>

#include "engine/ir/error.hpp"
#include "engine/plan/collective_cost.hpp"
#include "engine/plan/op_estimate.hpp"
#include "engine/poly/cost.hpp"

namespace tapestry::plan {

namespace {

using namespace op_estimate;

std::vector<Candidate> allowed(const poly::Signature& s, const NodeRef& n, const Mesh& m,
                               const SearchOptions& opt) {
  std::vector<Candidate> all = candidates_of(s, *n, m.ranks, opt);
  if (!opt.output_grid.count(n->id) && !opt.replicated.count(n->id)) return all;
  std::vector<Candidate> kept;
  for (const Candidate& c : all)
    if (meets_constraint(n->id, s, c, place(s, c, m.ranks), opt)) kept.push_back(c);
  user_check(!kept.empty(), "no plan on ", m.ranks, " ranks gives the requested layout to a ",
             op_def(n->op).name, " of shape ", shape_str(n->shape));
  return kept;
}

std::string key_of(const Model& md, size_t i, const SearchOptions& opt);

// Builds the model of ops_to_place(topo, initial, roots) on md's mesh: signatures, allowed
// candidates, where each input comes from and who reads each op.
void build_model(Model& md, const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                 const std::vector<NodeRef>& roots, const SearchOptions& opt) {
  const Mesh& m = md.m;
  md.ops = ops_to_place(topo, initial, roots);
  const size_t n_ops = md.ops.size();
  std::unordered_map<uint64_t, int> index;
  for (size_t i = 0; i < n_ops; ++i) index.emplace(md.ops[i]->id, static_cast<int>(i));
  for (const Shard& h : initial) md.held[h.tensor].push_back({h.rank, h.box});
  {
    std::unordered_map<uint64_t, double> elem;  // bytes per element of each held tensor
    for (const NodeRef& n : topo) elem[n->id] = double(dtype_size(n->dtype));
    std::unordered_map<Rank, double> on;
    for (const Shard& h : initial) on[h.rank] += double(h.box.volume()) * elem[h.tensor];
    for (const auto& [r, b] : on) md.held_peak = std::max(md.held_peak, b);
  }
  for (auto& [t, v] : md.held) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    int distinct = 0;
    for (size_t k = 0; k < v.size(); ++k) distinct += k == 0 || v[k].first != v[k - 1].first;
    md.holders[t] = distinct;
  }
  md.users.resize(n_ops);
  for (size_t i = 0; i < n_ops; ++i) {
    const NodeRef& n = md.ops[i];
    md.sigs.push_back(poly::signature_of(*n));
    md.cands.push_back(allowed(md.sigs.back(), n, m, opt));
    std::vector<Source> src;
    for (const NodeRef& x : n->inputs) {
      auto it = index.find(x->id);
      Source from = it == index.end() ? Source{-1, x->id} : Source{it->second, x->id};
      if (it == index.end() && generated_where_read(*x, initial, roots))
        from.generate_flops = poly::signature_of(*x).flops_per_point;
      src.push_back(from);
      if (it != index.end() && (md.users[it->second].empty() || md.users[it->second].back() != int(i)))
        md.users[it->second].push_back(static_cast<int>(i));
    }
    md.after_an_op.push_back(std::any_of(src.begin(), src.end(), [](const Source& x) { return x.op >= 0; }));
    md.in.push_back(std::move(src));
  }
  std::unordered_map<std::string, int> first;  // an op's samples, copies and cuts: its class's
  for (size_t i = 0; i < n_ops; ++i) {
    md.keys.push_back(key_of(md, i, opt));
    const NodeRef& n = md.ops[i];
    const std::string k = cat_str(md.keys.back(), "|o", shape_str(n->shape), dtype_size(n->dtype));
    md.shares.push_back(first.try_emplace(k, static_cast<int>(i)).first->second);
  }
}

// Inputs read as if every rank held them whole (a stand-in tensor per tensor rank), so that an
// op's estimate leaves out what its producers' layouts cost it.
Source everywhere(Model& md, size_t dims) {
  const uint64_t id = ~uint64_t(0) - dims;
  std::vector<std::pair<Rank, Box>>& v = md.held[id];
  if (v.empty()) {
    for (Rank r = 0; r < md.m.ranks; ++r)
      v.push_back(
          {r, Box(poly::Coords(dims, 0), poly::Coords(dims, std::numeric_limits<int64_t>::max() / 4))});
    md.holders[id] = md.m.ranks;
  }
  return Source{-1, id};
}

// Where a held tensor lies, as a hash: two weights loaded the same way cost the same to read.
uint64_t layout_hash(const Model& md, uint64_t tensor) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int64_t v) { h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull; };
  auto it = md.held.find(tensor);
  if (it == md.held.end()) return h;
  for (const auto& [r, box] : it->second) {
    mix(r);
    for (int64_t v : box.lo) mix(v);
    for (int64_t v : box.hi) mix(v);
  }
  return h;
}

// What an op's estimate depends on besides its producers' picks: its signature, where its
// other inputs come from, its allowed candidates. Ops with equal keys have equal tables (the
// 1,000 ops of a repeated layer cost 5 ops' worth).
std::string key_of(const Model& md, size_t i, const SearchOptions& opt) {
  std::string k = poly::to_string(md.sigs[i]);
  for (size_t j = 0; j < md.in[i].size(); ++j) {
    const Source& s = md.in[i][j];
    k += cat_str("|", shape_str(md.sigs[i].inputs[j].shape), dtype_size(md.sigs[i].inputs[j].dtype),
                 s.op >= 0               ? std::string("op")
                 : s.generate_flops >= 0 ? cat_str("g", s.generate_flops)
                                         : cat_str("h", layout_hash(md, s.tensor)));
  }
  const uint64_t id = md.ops[i]->id;
  if (opt.output_grid.count(id) || opt.replicated.count(id)) k += cat_str("|c", id);
  return k;
}

// The estimate as node and edge costs for the global stage: an op's node cost is its estimate
// with every producer's output already where it reads it; the edge from producer p is what p's
// candidate adds to that (its estimate with p's input moved, the others in place, minus the
// node cost; exact for an op with one producer, the sum of the parts for more).
struct Pairwise {
  CostGraph graph;  // time (the objective's tables: time + bytes_weight x bytes, see weigh())
  CostGraph bytes;  // the bytes each node and edge moves, in the same layout
  std::vector<std::vector<double>> compute;  // [op][candidate]: its busiest sampled block's compute
};
Pairwise pairwise(Model& md, const SearchOptions& opt, StageTables& t) {
  const size_t n = md.ops.size();
  Pairwise out;
  CostGraph& g = out.graph;
  g.node.resize(n);
  out.bytes.node.resize(n);
  out.compute.resize(n);
  auto& [nodes, edges, computes, node_bytes, edge_bytes] = t;
  const std::vector<int> saved = md.pick;
  md.pick.assign(n, 0);
  for (size_t u = 0; u < n; ++u) {
    const std::vector<Source> from = md.in[u];
    std::vector<int> producers;
    for (const Source& s : from)
      if (s.op >= 0 && std::find(producers.begin(), producers.end(), s.op) == producers.end())
        producers.push_back(s.op);
    const std::string& key = md.keys[u];
    for (size_t j = 0; j < from.size(); ++j)
      if (from[j].op >= 0) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
    const size_t cu_n = md.cands[u].size();
    auto [nit, fresh] = nodes.try_emplace(key);
    std::vector<double>& comp = computes[key];
    std::vector<double>& nb = node_bytes[key];
    if (fresh)
      for (size_t cu = 0; cu < cu_n; ++cu) {
        const Model::OpEstimate e = md.detail(u, cu);
        // A candidate whose own blocks on one rank, beside the held inputs, pass the memory per
        // rank is out whatever the others do: the limit's penalty, as cost_of charges it.
        const double mine = double((e.blocks + md.m.ranks - 1) / md.m.ranks) * e.block_bytes + md.held_peak;
        nit->second.push_back(e.time + (mine > md.m.mem_bytes_per_rank ? kOverMemory : 0.0));
        comp.push_back(e.compute);
        nb.push_back(e.moved);
      }
    g.node[u] = nit->second;
    out.bytes.node[u] = nb;
    out.compute[u] = comp;
    std::vector<Model::OpEstimate> base;  // with the edges' samples
    for (int p : producers) {
      std::string ekey = key + "<-" + md.keys[static_cast<size_t>(p)];
      for (size_t j = 0; j < from.size(); ++j)
        if (from[j].op == p) md.in[u][j] = from[j], ekey += cat_str(",", j);
      auto [eit, new_edge] = edges.try_emplace(ekey);
      std::vector<double>& eb = edge_bytes[ekey];
      if (new_edge) {
        if (base.empty()) {
          std::vector<Source> moved = md.in[u];
          for (size_t j = 0; j < from.size(); ++j)
            if (from[j].op >= 0) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
          for (size_t cu = 0; cu < cu_n; ++cu) base.push_back(md.detail(u, cu, kLookaheadSamples));
          md.in[u] = moved;
        }
        for (size_t cp = 0; cp < md.cands[p].size(); ++cp) {
          md.pick[p] = static_cast<int>(cp);
          for (size_t cu = 0; cu < cu_n; ++cu) {
            const Model::OpEstimate e = md.detail(u, cu, kLookaheadSamples);
            eit->second.push_back(e.time - base[cu].time);
            eb.push_back(e.moved - base[cu].moved);
          }
        }
        md.pick[p] = 0;
      }
      g.edges.push_back(CostGraph::Edge{p, static_cast<int>(u), eit->second});
      out.bytes.edges.push_back(CostGraph::Edge{p, static_cast<int>(u), eb});
      for (size_t j = 0; j < from.size(); ++j)
        if (from[j].op == p) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
    }
    md.in[u] = from;
  }
  md.pick = saved;
  return out;
}

// The objective's tables: time plus bytes at bytes_weight seconds each, the weight set from the
// time tables' optimum so that moving nothing at all would be worth opt.bytes_weight of its
// time (search.hpp). None when that optimum moves nothing or is over the memory limit.
std::pair<CostGraph, double> weigh(const Pairwise& t, const SearchOptions& opt) {
  const std::vector<int> fastest = solve(t.graph).pick;
  const double time = total(t.graph, fastest), bytes = total(t.bytes, fastest);
  const double w = bytes > 0 && time < kOverMemory ? opt.bytes_weight * time / bytes : 0.0;
  CostGraph g = t.graph;
  for (size_t i = 0; i < g.node.size(); ++i)
    for (size_t c = 0; c < g.node[i].size(); ++c) g.node[i][c] += w * t.bytes.node[i][c];
  for (size_t e = 0; e < g.edges.size(); ++e)
    for (size_t k = 0; k < g.edges[e].cost.size(); ++k) g.edges[e].cost[k] += w * t.bytes.edges[e].cost[k];
  return {std::move(g), w};
}

}  // namespace

GlobalStart global_start(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                         const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt,
                         StageTables* keep) {
  Model md(m);
  build_model(md, topo, initial, roots, opt);
  GlobalStart s;
  StageTables fresh;
  std::tie(s.graph, s.bytes_weight) = weigh(pairwise(md, opt, keep ? *keep : fresh), opt);
  s.choice = solve(s.graph);
  return s;
}

double alone_time(const NodeRef& n, const Mesh& m) {
  Model md(m);
  md.ops = {n};
  md.sigs.push_back(poly::signature_of(*n));
  md.cands.push_back(candidates(md.sigs[0], m.ranks));
  md.users.resize(1);
  md.after_an_op.push_back(0);
  std::vector<Source> src;
  for (const poly::Access& a : md.sigs[0].inputs) src.push_back(everywhere(md, a.shape.size()));
  md.in.push_back(std::move(src));
  md.pick = {0};
  double best = INFINITY;
  for (size_t c = 0; c < md.cands[0].size(); ++c) best = std::min(best, md.detail(0, c).time);
  return best;
}

Plan search_estimated(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                      const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt) {
  Model md(m);
  build_model(md, topo, initial, roots, opt);
  const size_t n_ops = md.ops.size();

  // The start: the global optimum of the estimate as node and edge costs (global_search.hpp);
  // SearchOptions::Greedy takes the greedy one with a step of lookahead instead: in order, each
  // op takes the candidate that minimizes its own estimate plus its users' best responses to it,
  // so a cheap op (a broadcast bias) does not pick a layout every op after it would move away from.
  md.pick.assign(n_ops, 0);
  Pairwise tables;
  CostGraph objective;  // tables.graph with the bytes weighed in (weigh())
  if (opt.method == SearchOptions::Greedy) {
    for (size_t i = 0; i < n_ops; ++i) {
      double best = INFINITY;
      for (size_t c = 0; c < md.cands[i].size(); ++c) {
        double ahead = md.estimate(i, c);
        for (int u : md.users[i]) {
          double r = INFINITY;
          for (size_t cu = 0; cu < md.cands[u].size(); ++cu)
            r = std::min(r, md.estimate(u, cu, kLookaheadSamples));
          ahead += r;
        }
        if (ahead < best * (1 - 1e-9)) best = ahead, md.pick[i] = static_cast<int>(c);
      }
    }
  } else {
    StageTables fresh;
    tables = pairwise(md, opt, fresh);
    std::tie(objective, md.bytes_weight) = weigh(tables, opt);
    md.pick = solve(objective).pick;
  }
  // Joint moves refine the start on the estimate itself (the sum over ops), for at most
  // opt.steps of them; a move re-estimates only the ops it changes and their readers.
  int evaluations = 1;  // joint choices costed: the start, then each move
  if (opt.method == SearchOptions::Anneal && n_ops > 0) {
    std::vector<int> best = md.pick, base = md.pick;
    std::vector<double> at_base(n_ops);  // each op's estimate with `base` picked
    double best_cost = 0;
    for (size_t i = 0; i < n_ops; ++i)
      best_cost += at_base[i] = md.estimate(i, static_cast<size_t>(md.pick[i]));
    std::vector<int> touched;
    auto changed = [&](const std::vector<int>& st) {  // ops whose estimate differs from base's
      touched.clear();
      for (size_t i = 0; i < n_ops; ++i)
        if (st[i] != base[i]) {
          touched.push_back(static_cast<int>(i));
          touched.insert(touched.end(), md.users[i].begin(), md.users[i].end());
        }
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    };
    auto cost = [&](const std::vector<int>& st) {
      if (base != best) {  // the refinement kept a move: estimates follow it
        changed(best);
        md.pick = best;
        for (int i : touched) at_base[i] = md.estimate(i, static_cast<size_t>(best[i]));
        base = best;
      }
      ++evaluations;
      changed(st);
      md.pick = st;
      double t = best_cost;
      for (int i : touched) t += md.estimate(i, static_cast<size_t>(st[i])) - at_base[i];
      md.pick = base;
      return t;
    };
    refine(
        objective, best, best_cost, cost, [&] { return evaluations <= opt.steps; }, kPatience);
    md.pick = best;
  }
  std::vector<int> best = md.pick;

  double cur = 0, cur_compute = 0;
  std::vector<double> est(n_ops), est_compute(n_ops);  // of each op's pick: its users' picks leave compute be
  std::vector<Model::OpEstimate> picked;               // the same, whole: the plan's totals
  for (size_t i = 0; i < n_ops; ++i) {
    const Model::OpEstimate& e = picked.emplace_back(md.detail(i, static_cast<size_t>(md.pick[i])));
    est[i] = e.time, est_compute[i] = e.compute;
    cur += est[i], cur_compute += est_compute[i];
  }
  // For tp.explain, every other candidate of an op with the rest as picked: by the global stage's
  // node and edge costs where it ran (no estimate per candidate), else by the estimate.
  std::vector<std::vector<Tried>> seen(n_ops);  // [op][candidate]: the best plan with it
  std::vector<std::vector<int>> at(n_ops);      // the global stage's edges per op
  for (size_t e = 0; e < tables.graph.edges.size(); ++e) {
    at[tables.graph.edges[e].a].push_back(static_cast<int>(e));
    at[tables.graph.edges[e].b].push_back(static_cast<int>(e));
  }
  auto modelled = [&](size_t i, size_t c) {
    double t = tables.graph.node[i][c];
    for (int e : at[i]) {
      const CostGraph::Edge& ed = tables.graph.edges[e];
      const size_t a = ed.a == int(i) ? c : md.pick[ed.a], b = ed.b == int(i) ? c : md.pick[ed.b];
      t += ed.cost[a * tables.graph.node[ed.b].size() + b];
    }
    return t;
  };
  for (size_t i = 0; i < n_ops; ++i) {
    const size_t own = static_cast<size_t>(md.pick[i]);
    for (size_t c = 0; c < md.cands[i].size(); ++c) {
      double t = est[i], comp = est_compute[i];
      if (c != own && tables.graph.node.empty()) {
        const Model::OpEstimate e = md.detail(i, c);
        t = e.time, comp = e.compute;
      } else if (c != own) {
        t = est[i] + modelled(i, c) - modelled(i, own);
        comp = tables.compute[i][c];
      }
      seen[i].push_back(Tried{md.cands[i][c], cur - est[i] + t, cur_compute - est_compute[i] + comp});
    }
  }

  Plan p;
  p.estimated = true;
  p.evaluations = evaluations;
  md.pick = best;
  for (size_t i = 0; i < n_ops; ++i) {
    const Candidate& c = md.cands[i][best[i]];
    p.choice[md.ops[i]->id] = c;
    p.blocks += c.block_count(m.ranks);
    std::vector<Tried> tried;
    for (size_t k = 0; k < md.cands[i].size(); ++k)
      if (std::isfinite(seen[i][k].best_total)) tried.push_back(seen[i][k]);
    if (!tried.empty()) p.tried[md.ops[i]->id] = std::make_shared<const std::vector<Tried>>(std::move(tried));
  }
  p.cost = md.totals(picked);
  p.cost.estimated = true;
  p.defer_lowering(LoweringInput{topo, initial, roots, m});
  return p;
}

}  // namespace tapestry::plan
