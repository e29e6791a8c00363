#include "engine/plan/search.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/bands.hpp"
#include "engine/plan/estimate.hpp"
#include "engine/plan/global_search.hpp"
#include "engine/poly/cost.hpp"
#include "engine/telemetry/cancel.hpp"

namespace tapestry::plan {

std::string Candidate::name(const poly::Signature& s) const {
  if (replicated) return "replicated";
  std::string out;
  for (int j = 0; j < s.rank(); ++j)
    if (parts[j] > 1) out += cat_str(out.empty() ? "" : " x ", s.space[j].name, "/", parts[j]);
  const std::string in_bands = bands > 1 ? cat_str(" in ", bands, " bands") : "";
  if (out.empty()) return cat_str("whole on rank ", rank, in_bands);
  if (combine != CombineMode::Reduce) out += cat_str(" + ", combine_mode_name(combine));
  return (rank == 0 ? out : cat_str(out, " from rank ", rank)) + in_bands;
}

int64_t Candidate::block_count(int ranks) const {
  if (replicated) return ranks;
  int64_t n = 1;
  for (int64_t p : parts) n *= p;
  return n * std::max(1, bands);
}

std::vector<int64_t> SearchOptions::key() const {
  return {int64_t(method),
          steps,
          static_cast<int64_t>(seed),
          work_budget,
          exact_limit,
          exact_ranks,
          std::llround(bytes_weight * 1e6),
          int64_t(reassociate),
          bands};
}

SearchOptions constrained(const std::vector<NodeRef>& topo, int ranks, SearchOptions opt) {
  for (const NodeRef& n : topo)
    if (n->op == Op::Constrain && !n->value) {
      const ConstrainAttrs a = attrs_of<ConstrainAttrs>(*n);
      if (a.replicated) opt.replicated.insert(n->id);
      else opt.output_grid[n->id] = a.on(ranks, n->shape);
    }
  return opt;
}

std::string lost_on(const Tried& rejected, const Tried& winner) {
  if (rejected.best_total <= winner.best_total * (1 + 1e-9))
    return "nothing (a tie: the first found is kept)";
  if (rejected.memory_penalty > 0 && winner.memory_penalty <= 0) return "memory";
  const double compute = rejected.compute - winner.compute;
  const double comm = rejected.communication() - winner.communication();
  return compute >= comm ? "compute" : "communication";
}

bool splits_reduction(const poly::Signature& s, const Candidate& c) {
  for (int j = 0; j < s.rank(); ++j)
    if (c.parts[j] > 1 && s.space[j].kind == poly::IndexDim::Reduction) return true;
  return false;
}

std::vector<Candidate> candidates(const poly::Signature& s, int ranks, bool replicated) {
  const int d = s.rank();
  std::vector<Candidate> out;
  for (int r = 0; r < std::min(ranks, 8); ++r) out.push_back({std::vector<int64_t>(d, 1), r});
  if (ranks == 1) {  // the one whole block is every rank's copy
    out[0].replicated = replicated;
    return out;
  }
  // Recomputing a cheap value on every rank can beat moving it; on bigger meshes each such
  // candidate lowers ranks x inputs whole fetches, and a replica there comes from relays anyway.
  bool cheap = s.flops_per_point <= kCheapFlopsPerPoint && ranks <= kReplicatedRanks;
  for (int j = 0; j < d; ++j) cheap = cheap && s.space[j].kind != poly::IndexDim::Reduction;
  if (cheap || replicated) out.push_back({std::vector<int64_t>(d, 1), 0, CombineMode::Reduce, true});
  std::vector<int> dims;  // splittable dims with room for 2 pieces
  for (int j = 0; j < d; ++j)
    if (s.space[j].splittable && s.space[j].extent >= 2) dims.push_back(j);
  for (int j : dims) {
    // The largest divisor of `ranks` the dim can hold: a short dim leaves ranks idle.
    int64_t f = ranks;
    while (f > 1 && (ranks % f != 0 || f > s.space[j].extent)) --f;
    if (f < 2) continue;
    Candidate c{std::vector<int64_t>(d, 1), 0};
    c.parts[j] = f;
    out.push_back(c);
  }
  for (size_t a = 0; a < dims.size(); ++a)
    for (size_t b = a + 1; b < dims.size(); ++b)
      for (int64_t f = 2; f * 2 <= ranks; ++f) {
        if (ranks % f != 0) continue;
        const int64_t g = ranks / f;
        if (f > s.space[dims[a]].extent || g > s.space[dims[b]].extent) continue;
        if (f > 32 * g || g > 32 * f) continue;
        Candidate c{std::vector<int64_t>(d, 1), 0};
        c.parts[dims[a]] = f;
        c.parts[dims[b]] = g;
        out.push_back(c);
      }
  // On big meshes a 2-D grid's pieces get thin: three dims over a*b*c == ranks, each factor
  // within 8 of the others (3-D matmul; batch x head x rows for attention on 1,024 ranks).
  if (ranks >= kThreeDimRanks)
    for (size_t a = 0; a < dims.size(); ++a)
      for (size_t b = a + 1; b < dims.size(); ++b)
        for (size_t e = b + 1; e < dims.size(); ++e)
          for (int64_t f = 2; f * 4 <= ranks; ++f)
            for (int64_t g = 2; ranks % f == 0 && f * g * 2 <= ranks; ++g) {
              if ((ranks / f) % g != 0) continue;
              const int64_t h = ranks / f / g;
              if (f > s.space[dims[a]].extent || g > s.space[dims[b]].extent || h > s.space[dims[e]].extent)
                continue;
              const int64_t lo = std::min({f, g, h}), hi = std::max({f, g, h});
              if (hi > 8 * lo) continue;
              Candidate c{std::vector<int64_t>(d, 1), 0};
              c.parts[dims[a]] = f;
              c.parts[dims[b]] = g;
              c.parts[dims[e]] = h;
              out.push_back(c);
            }
  const size_t listed = out.size();
  for (size_t i = 0; i < listed; ++i)
    if (splits_reduction(s, out[i]))
      for (CombineMode m : {CombineMode::AllReduce, CombineMode::ReduceScatter}) {
        Candidate c = out[i];
        c.combine = m;
        out.push_back(c);
      }
  return out;
}

std::vector<Candidate> candidates_of(const poly::Signature& s, const Node& n, int ranks,
                                     const SearchOptions& opt) {
  std::vector<Candidate> out = candidates(s, ranks, opt.replicated.count(n.id) > 0);
  if (opt.bands > 1) {  // each cut into bands; two that band alike are one
    std::vector<Candidate> cut;
    for (const Candidate& c : out) {
      const Candidate b = banded(s, c, opt.bands);
      if (std::find(cut.begin(), cut.end(), b) == cut.end()) cut.push_back(b);
    }
    out = std::move(cut);
  }
  const auto grid = opt.output_grid.find(n.id);
  if (n.op != Op::Constrain || grid == opt.output_grid.end() || grid->second.size() != size_t(s.rank()))
    return out;
  int64_t blocks = 1;
  for (int j = 0; j < s.rank(); ++j) {
    if (grid->second[j] > 1 && (!s.space[j].splittable || grid->second[j] > s.space[j].extent)) return out;
    blocks *= grid->second[j];
  }
  const Candidate asked{grid->second, 0};
  if (blocks >= 2 && std::find(out.begin(), out.end(), asked) == out.end()) out.push_back(asked);
  return out;
}

std::vector<Placement> place(const poly::Signature& s, const Candidate& c, int ranks) {
  if (c.replicated) {
    std::vector<Placement> p;
    for (Rank r = 0; r < ranks; ++r) p.push_back(Placement{s.space_box(), r});
    return p;
  }
  std::vector<Placement> p = grid_blocks(s, c.parts, ranks);
  for (Placement& q : p) q.rank = (q.rank + c.rank) % ranks;
  return c.bands > 1 ? cut_into_bands(s, c, std::move(p)) : p;
}

std::vector<NodeRef> ops_to_place(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                                  const std::vector<NodeRef>& roots) {
  std::unordered_set<uint64_t> held, root;
  for (const Shard& h : initial) held.insert(h.tensor);
  for (const NodeRef& r : roots) root.insert(r->id);
  std::vector<NodeRef> ops;
  for (const NodeRef& n : topo)
    if (!held.count(n->id) && (op_kind(n->op) != OpKind::Generate || root.count(n->id))) ops.push_back(n);
  return ops;
}

namespace {
Assignment assignment_of(const std::vector<NodeRef>& ops, const std::map<uint64_t, Candidate>& choice,
                         int ranks) {
  Assignment a;
  for (const NodeRef& n : ops) a[n->id] = place(poly::signature_of(*n), choice.at(n->id), ranks);
  return a;
}

CombineModes modes_of(const std::map<uint64_t, Candidate>& choice) {
  CombineModes m;
  for (const auto& [id, c] : choice)
    if (c.combine != CombineMode::Reduce) m[id] = c.combine;
  return m;
}
}  // namespace

const ShardedGraph& Plan::graph() const {
  if (!graph_) {
    internal_check(input_ != nullptr);  // a plan is either lowered or knows how to lower
    const LoweringInput& in = *input_;
    const Assignment a = assignment_of(ops_to_place(in.topo, in.initial, in.roots), choice, in.mesh.ranks);
    ShardedGraph g = lower(in.topo, a, in.initial, in.roots, in.mesh.ranks, modes_of(choice));
    g.in_bands = in_bands(choice);
    graph_ = std::make_shared<const ShardedGraph>(std::move(g));
  }
  return *graph_;
}

void Plan::set_graph(ShardedGraph g) {
  blocks = static_cast<int64_t>(g.blocks.size());
  graph_ = std::make_shared<const ShardedGraph>(std::move(g));
  input_.reset();
}

void Plan::defer_lowering(LoweringInput in) {
  graph_.reset();
  input_ = std::make_shared<const LoweringInput>(std::move(in));
}

PlanCost Plan::exact_cost(const Mesh& m) const { return estimated ? cost_of(graph(), m) : cost; }

Plan evaluate(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
              const std::vector<NodeRef>& roots, const Mesh& m, const std::vector<Candidate>& choice) {
  const std::vector<NodeRef> ops = ops_to_place(topo, initial, roots);
  internal_check(ops.size() == choice.size());
  Plan p;
  p.evaluations = 1;
  for (size_t i = 0; i < ops.size(); ++i) p.choice[ops[i]->id] = choice[i];
  ShardedGraph g =
      lower(topo, assignment_of(ops, p.choice, m.ranks), initial, roots, m.ranks, modes_of(p.choice));
  g.in_bands = in_bands(p.choice);
  p.set_graph(std::move(g));
  p.cost = cost_of(p.graph(), m);
  return p;
}

namespace {

// The search state: one candidate index per op, with everything precomputed per op.
struct Space {
  std::vector<NodeRef> ops;
  std::vector<poly::Signature> sigs;
  std::vector<std::vector<Candidate>> cands;
  std::vector<std::vector<std::vector<Placement>>> placed;  // [op][candidate]
};

// Where a tensor lies after its producer runs (as lower() puts it, roughly: a split reduction's
// partials combine onto the rank of the first partial of each output slice, onto every rank
// holding one (all-reduce), or a piece onto each of them (reduce-scatter: approximated here by
// the whole slice on the first, as the greedy start only needs where most of the data is).
std::vector<Shard> layout_of(uint64_t id, const poly::Signature& s, const std::vector<Placement>& p,
                             CombineMode mode) {
  std::vector<Shard> out;
  for (const Placement& q : p) {
    const Box o = s.output_slice(q.box);
    const bool same_rank =
        std::any_of(out.begin(), out.end(), [&](const Shard& h) { return h.box == o && h.rank == q.rank; });
    const bool listed = std::any_of(out.begin(), out.end(), [&](const Shard& h) { return h.box == o; });
    // An all-reduce's merged slices, and a replicated op's copies, lie on every rank that made one.
    const bool copies = mode == CombineMode::AllReduce || !s.splits_reduction(q.box);
    if (!listed || (copies && !same_rank)) out.push_back(Shard{id, o, q.rank});
  }
  return out;
}

// Owner-computes: each op, in order, takes the candidate with the least local time — the
// busiest rank's compute plus the slices it must receive given where its inputs already lie —
// so an op follows its largest input's layout whenever that moves nothing.
std::vector<int> greedy(const Space& sp, const std::vector<Shard>& initial, const Mesh& m) {
  std::unordered_map<uint64_t, std::vector<Shard>> where;
  for (const Shard& h : initial) where[h.tensor].push_back(h);
  std::vector<int> pick(sp.ops.size(), 0);
  for (size_t i = 0; i < sp.ops.size(); ++i) {
    const NodeRef& n = sp.ops[i];
    const poly::Signature& s = sp.sigs[i];
    double best = INFINITY;
    for (size_t c = 0; c < sp.cands[i].size(); ++c) {
      std::vector<double> busy(m.ranks, 0.0);
      bool partial = false;
      for (const Placement& q : sp.placed[i][c]) {
        const poly::BlockCost bc = poly::block_cost(s, q.box);
        busy[q.rank] += m.compute_time(bc.flops, bc.bytes());
        partial = partial || s.splits_reduction(q.box);
        for (size_t k = 0; k < n->inputs.size(); ++k) {
          const Box need = s.input_slice(k, q.box);
          if (need.empty()) continue;
          std::vector<Box> mine;
          const std::vector<Shard>& lies = where[n->inputs[k]->id];
          for (const Shard& h : lies)
            if (h.rank == q.rank) mine.push_back(h.box);
          for (const Box& miss : poly::uncovered(need, mine)) {
            const Rank from = lies.empty() ? 0 : lies.front().rank;
            busy[q.rank] +=
                m.transfer_time(from, q.rank, double(miss.volume()) * dtype_size(s.inputs[k].dtype));
          }
        }
      }
      double t = *std::max_element(busy.begin(), busy.end());
      if (partial) {  // one reduction round of the output per doubling of partials
        const double parts = double(sp.placed[i][c].size()) /
                             double(layout_of(n->id, s, sp.placed[i][c], CombineMode::Reduce).size());
        const double rounds = sp.cands[i][c].combine == CombineMode::AllReduce ? 2 : 1;  // + the broadcast
        t += rounds * std::ceil(std::log2(parts)) *
             m.inter.time(s.output.bytes() / double(sp.placed[i][c].size()) * parts);
      }
      if (t < best * (1 - 1e-9)) best = t, pick[i] = static_cast<int>(c);
    }
    where[n->id] = layout_of(n->id, s, sp.placed[i][pick[i]], sp.cands[i][pick[i]].combine);
  }
  return pick;
}

}  // namespace

namespace {
std::string grid_str(const std::vector<int64_t>& g) {
  std::string out = "grid{";
  for (size_t i = 0; i < g.size(); ++i) out += (i ? "," : "") + std::to_string(g[i]);
  return out + "}";
}
}  // namespace

std::vector<int64_t> output_grid_of(const poly::Signature& s, const std::vector<Placement>& blocks) {
  const size_t r = s.output.shape.size();
  std::vector<std::set<int64_t>> starts(r);
  for (const Placement& b : blocks) {
    const Box o = s.output_slice(b.box);
    for (size_t d = 0; d < r; ++d) starts[d].insert(o.lo[d]);
  }
  std::vector<int64_t> g(r);
  for (size_t d = 0; d < r; ++d) g[d] = static_cast<int64_t>(starts[d].size());
  return g;
}

bool meets_constraint(uint64_t id, const poly::Signature& s, const Candidate& c,
                      const std::vector<Placement>& placed, const SearchOptions& opt) {
  if (opt.replicated.count(id)) return c.replicated;
  const auto grid = opt.output_grid.find(id);
  if (grid == opt.output_grid.end()) return true;
  if (c.replicated) return false;
  for (const Placement& b : placed)
    if (s.splits_reduction(b.box)) return false;
  return output_grid_of(s, placed) == grid->second;
}

// Joint moves costed exactly in a row without a gain before the refinement gives up: the tables
// come from the estimate, which can rank the exact best far down the list (the einsum chain's
// on 64 ranks is its 27th).
constexpr size_t kPatience = 64;

Plan search(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
            const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt) {
  Space sp;
  sp.ops = ops_to_place(topo, initial, roots);
  if (static_cast<int64_t>(sp.ops.size()) * m.ranks > opt.exact_limit || m.ranks > opt.exact_ranks)
    return search_estimated(topo, initial, roots, m, opt);
  for (const NodeRef& n : sp.ops) {
    sp.sigs.push_back(poly::signature_of(*n));
    std::vector<Candidate> all = candidates_of(sp.sigs.back(), *n, m.ranks, opt);
    std::vector<Candidate> kept;
    std::vector<std::vector<Placement>> per;
    for (const Candidate& c : all) {
      std::vector<Placement> blocks = place(sp.sigs.back(), c, m.ranks);
      if (!meets_constraint(n->id, sp.sigs.back(), c, blocks, opt)) continue;
      kept.push_back(c);
      per.push_back(std::move(blocks));
    }
    if (kept.empty()) {  // only possible under a constraint
      const auto grid = opt.output_grid.find(n->id);
      user_error("no plan on ", m.ranks, " ranks gives the requested layout ",
                 grid == opt.output_grid.end() ? std::string("replicated") : grid_str(grid->second), " to a ",
                 op_def(n->op).name, " of shape ", shape_str(n->shape));
    }
    sp.cands.push_back(std::move(kept));
    sp.placed.push_back(std::move(per));
  }
  const size_t n_ops = sp.ops.size();
  std::vector<std::vector<Tried>> seen(n_ops);  // [op][candidate]: the best plan with it
  for (size_t i = 0; i < n_ops; ++i)
    for (const Candidate& c : sp.cands[i]) seen[i].push_back(Tried{c, INFINITY});
  std::map<std::vector<int>, std::pair<double, int64_t>> memo;  // time, bytes moved
  int evaluations = 0;
  int64_t work = 0;         // blocks and transfers lowered so far (SearchOptions::work_budget)
  double bytes_weight = 0;  // the objective: time + bytes_weight x bytes (SearchOptions::bytes_weight)
  auto simulate = [&](const std::vector<int>& st) {  // the exact time and bytes, memoized
    auto it = memo.find(st);
    if (it != memo.end()) return it->second;
    Assignment a;
    CombineModes modes;
    for (size_t i = 0; i < n_ops; ++i) {
      a[sp.ops[i]->id] = sp.placed[i][st[i]];
      if (sp.cands[i][st[i]].combine != CombineMode::Reduce)
        modes[sp.ops[i]->id] = sp.cands[i][st[i]].combine;
    }
    if (cancel_requested()) throw Cancelled();  // Ctrl-C reaches a long search too
    const ShardedGraph g = lower(topo, a, initial, roots, m.ranks, modes);
    const PlanCost pc = cost_of(g, m);
    const double t = pc.total();
    ++evaluations;
    work += static_cast<int64_t>(g.blocks.size() + g.transfers.size());
    const double busiest =
        pc.rank_busy.empty() ? 0 : *std::max_element(pc.rank_busy.begin(), pc.rank_busy.end());
    for (size_t i = 0; i < n_ops; ++i)
      if (t < seen[i][st[i]].best_total)
        seen[i][st[i]] = Tried{sp.cands[i][st[i]], t, busiest, pc.memory_penalty};
    return memo.emplace(st, std::make_pair(t, pc.bytes_moved)).first->second;
  };
  auto cost = [&](const std::vector<int>& st) {
    const auto [t, bytes] = simulate(st);
    return t + bytes_weight * double(bytes);
  };

  std::vector<int> best;
  double best_cost = INFINITY;
  int64_t best_bytes = 0;
  auto consider = [&](const std::vector<int>& st) {  // the better plan; of two as good, fewer bytes
    const double c = cost(st);
    const int64_t bytes = memo.at(st).second;
    if (c < best_cost * (1 - 1e-9) || (c <= best_cost * (1 + 1e-9) && bytes < best_bytes))
      best = st, best_cost = c, best_bytes = bytes;
  };
  double joint = 1;
  for (const auto& c : sp.cands) joint = std::min(joint * double(c.size()), 1e18);
  if (opt.method == SearchOptions::Greedy || n_ops == 0) {
    consider(greedy(sp, initial, m));
  } else if (joint <= std::max(opt.steps, 1)) {
    // A joint space no larger than the move budget is searched whole: the best joint choice by
    // the exact cost, whatever the seed or the machine's load. The bytes' weight comes from the
    // fastest of them, as weigh() takes it from the time tables' optimum.
    std::vector<std::vector<int>> all;
    std::vector<int> st(n_ops, 0);
    while (true) {
      all.push_back(st);
      size_t i = n_ops;
      while (i > 0 && st[i - 1] == int(sp.cands[i - 1].size()) - 1) st[--i] = 0;
      if (i == 0) break;
      ++st[i - 1];
    }
    std::pair<double, int64_t> fastest{INFINITY, 0};
    for (const std::vector<int>& x : all)
      if (simulate(x).first < fastest.first * (1 - 1e-9)) fastest = simulate(x);
    if (fastest.second > 0 && fastest.first < kOverMemory)
      bytes_weight = opt.bytes_weight * fastest.first / double(fastest.second);
    for (const std::vector<int>& x : all) consider(x);
  } else {
    // The global optimum of the estimate's node and edge costs (global_search.hpp), and the
    // owner-computes greedy as a second start while the budget allows; then joint moves refine.
    const GlobalStart gs = global_start(topo, initial, roots, m, opt);
    bytes_weight = gs.bytes_weight;
    consider(gs.choice.pick);
    if (work < opt.work_budget) consider(greedy(sp, initial, m));
    refine(
        gs.graph, best, best_cost, cost, [&] { return evaluations < opt.steps && work < opt.work_budget; },
        kPatience);
  }

  std::vector<Candidate> choice;
  for (size_t i = 0; i < n_ops; ++i) choice.push_back(sp.cands[i][best[i]]);
  Plan p = evaluate(topo, initial, roots, m, choice);
  p.evaluations = evaluations;
  for (size_t i = 0; i < n_ops; ++i) {
    std::vector<Tried> tried;
    for (size_t c = 0; c < sp.cands[i].size(); ++c)
      if (std::isfinite(seen[i][c].best_total)) tried.push_back(seen[i][c]);
    if (!tried.empty()) p.tried[sp.ops[i]->id] = std::make_shared<const std::vector<Tried>>(std::move(tried));
  }
  return p;
}

}  // namespace tapestry::plan
